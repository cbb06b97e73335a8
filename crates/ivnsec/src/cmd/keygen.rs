//! `ivnsec keygen`: fresh random keys for one direction of a profile, as a key file for
//! `ivnsec send` and `ivnsec receive`; or with `--mka`, a pre-shared CAK for `ivnsec macsec up
//! --psk`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use ivnsec_node::channel::random_keys;
use ivnsec_node::keys::{keyfile, psk};

use crate::error::{parse_hex, usage};
use ivnsec_core::profile::NamedProfile;

#[derive(clap::Args, Debug)]
#[command(after_help = "\
The file is TOML: `profile`, then `key`, `mac_key` and `iv` in hex (empty where the profile takes \
none), written with mode 0600 and never over an existing file. One file is one direction: give \
the sender and the receiver the same file, and the other direction a file of its own.

The `profile` line binds the key to one suite: `ivnsec send` refuses a key file without it, or \
with another suite than --profile (another level of the same suite is fine), and refuses a file \
that group or others may read. The first send under the key records the SA in FILE.used beside \
the key file (docs/nonce-safety.md); keep that record with the key.

A new key is the way out of sequence-number exhaustion (`ivnsec send` exit code 1): install the \
new file on both ends; the sender's nonce state for the old key can then be deleted (entries of \
the old key in FILE.used match no other key and may stay).

With --mka the file is an MKA pre-shared key instead (IEEE 802.1X-2020): TOML with `cak` (the \
Connectivity Association Key, 128 or 256 random bits) and `ckn` (its name, which every MKPDU \
carries), mode 0600, never over an existing file. Copy it to every member of the CA; `ivnsec \
macsec up --psk FILE` refuses a copy that group or others may read. The SAKs are agreed and \
rotated by MKA from it (docs/mka.md).

Examples:
  ivnsec keygen --profile aes128-gcm --out ecu1-to-ecu2.toml
  ivnsec keygen --profile macsec-gcm-aes-xpn-256
  ivnsec keygen --mka --out ca.psk
  ivnsec keygen --mka --cak-bits 256 --ckn 0102030405060708 --out ca256.psk")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): the key lengths follow from it.
    #[arg(long, required_unless_present = "mka", conflicts_with = "mka",
          value_parser = super::profile_arg)]
    pub profile: Option<NamedProfile>,
    /// Write an MKA pre-shared key (CAK and CKN) for `ivnsec macsec up --psk` instead.
    #[arg(long)]
    pub mka: bool,
    /// With --mka: the size of the CAK, 128 or 256 bits.
    #[arg(long, default_value_t = 128, value_name = "BITS")]
    pub cak_bits: u32,
    /// With --mka: the CAK's name (CKN), 1 to 32 bytes in hex. Default: 16 random bytes.
    #[arg(long, value_name = "HEX")]
    pub ckn: Option<String>,
    /// Write the key file here (mode 0600; refuses to overwrite). Default: print to stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    if a.mka {
        return mka(&a);
    }
    if a.ckn.is_some() || a.cak_bits != 128 {
        return Err(usage(
            "--ckn and --cak-bits describe an MKA pre-shared key: add --mka (and no --profile)",
        ));
    }
    let Some(profile) = &a.profile else {
        return Err(usage("give --profile PROFILE (or --mka)"));
    };
    let keys = random_keys(profile.profile())?;
    match &a.out {
        Some(p) => {
            keyfile::write_new(p, profile.name(), &keys)?;
            eprintln!("keys for {profile} written to {} (mode 0600)", p.display());
        }
        None => print!("{}", *keyfile::render(profile.name(), &keys)),
    }
    Ok(ExitCode::SUCCESS)
}

fn mka(a: &Args) -> Result<ExitCode> {
    let ckn = a
        .ckn
        .as_deref()
        .map(|c| parse_hex("--ckn", c))
        .transpose()?;
    let key = psk::Psk::generate(a.cak_bits, ckn.as_deref())?;
    match &a.out {
        Some(p) => {
            psk::write_new(p, &key)?;
            eprintln!(
                "MKA pre-shared key (CAK of {} bits, CKN {}) written to {} (mode 0600)",
                a.cak_bits,
                hex::encode(key.ckn()),
                p.display()
            );
        }
        None => print!("{}", *psk::render(&key)),
    }
    Ok(ExitCode::SUCCESS)
}
