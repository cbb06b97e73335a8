//! `ivnsec keygen`: fresh random keys for one direction of a profile, as a key file for
//! `ivnsec send` and `ivnsec receive`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use ivnsec_lab::channel::random_keys;
use ivnsec_lab::keys::keyfile;

use crate::error::parse_profile;

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

Examples:
  ivnsec keygen --profile aes128-gcm --out ecu1-to-ecu2.toml
  ivnsec keygen --profile macsec-gcm-aes-xpn-256")]
pub struct Args {
    /// Profile (`ivnsec suites` lists them): the key lengths follow from it.
    #[arg(long)]
    pub profile: String,
    /// Write the key file here (mode 0600; refuses to overwrite). Default: print to stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

pub fn run(a: Args) -> Result<ExitCode> {
    let keys = random_keys(parse_profile(&a.profile)?)?;
    match &a.out {
        Some(p) => {
            keyfile::write_new(p, &a.profile, &keys)?;
            eprintln!(
                "keys for {} written to {} (mode 0600)",
                a.profile,
                p.display()
            );
        }
        None => print!("{}", *keyfile::render(&a.profile, &keys)),
    }
    Ok(ExitCode::SUCCESS)
}
