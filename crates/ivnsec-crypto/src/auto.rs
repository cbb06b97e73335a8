//! `--provider auto`: the fastest provider per primitive, and per size where the measured
//! break-even differs, from the active [`table`]: the built-in [`MEASURED`](crate::table::MEASURED), or the calibration
//! of this machine that `ivnsec suites --calibrate` wrote ([`crate::cache`]).
//!
//! For a profile whose every primitive goes to one provider at every size, `auto` is simply
//! that provider (its name shows in reports). Otherwise it is [`AUTO`], a provider that makes
//! each key with the provider the table names for that primitive; where the table splits by
//! size, the key is made once with each provider named (key schedules stay once per SA) and each
//! call goes to the one whose range holds its length. A primitive the table does not name goes
//! to the first provider of [`PROVIDERS`] that has it.

use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, AeadOp, CipherAlg, CipherKey, CryptoError,
    CryptoProvider, KeyFactory, KeyWrapKey, MAX_MAC_LEN, MacAlg, MacKey, NoProvider, Primitive,
    ProviderChoice, SecureRandom, open_each, seal_each,
};

use std::sync::OnceLock;

use crate::providers::PROVIDERS;
use crate::table::{Table, describe_picks_in, picks_in};

/// The table `auto` reads in this process, loaded once: the calibration at
/// [`crate::cache::location`] when there is a valid one for this CPU, else the built-in one
/// (with one warning on stderr when a calibration was there but could not be used). Unit tests
/// of this crate always read the built-in table.
pub fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        if cfg!(test) {
            Table::builtin(None)
        } else {
            crate::cache::load_active()
        }
    })
}

/// Which table `auto` reads (see [`crate::auto_table_source`]).
pub fn table_source() -> String {
    table().source.clone()
}

/// Where `auto` sends `primitive`: (up to this many bytes, provider), smallest first; empty when
/// no provider has it.
pub fn picks(primitive: Primitive) -> Vec<(usize, &'static CryptoProvider)> {
    picks_in(table(), primitive)
}

/// The one provider `auto` runs `needs` on when that is a single provider for every primitive
/// and size; [`AUTO`] when the choices differ; an error when some primitive has no provider.
pub fn select(
    needs: &[Primitive],
    what: &dyn core::fmt::Display,
) -> Result<&'static CryptoProvider, NoProvider> {
    let mut one: Option<&'static CryptoProvider> = None;
    let mut mixed = false;
    for &p in needs {
        let picks = picks(p);
        if picks.is_empty() {
            return Err(NoProvider {
                choice: ProviderChoice::Auto,
                what: what.to_string(),
            });
        }
        for (_, prov) in picks {
            match one {
                None => one = Some(prov),
                Some(o) if core::ptr::eq(o, prov) => {}
                Some(_) => mixed = true,
            }
        }
    }
    Ok(match one {
        Some(p) if !mixed => p,
        // Mixed, or nothing needed (plain, crc32): the table-driven provider serves either.
        Some(_) => &AUTO,
        None => PROVIDERS[0],
    })
}

/// One size split of `auto`: `primitive` goes to `below` up to `up_to` bytes and to `above`
/// past it (the break-even of the two providers, read from their measured costs with
/// [`break_even`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Split {
    pub primitive: Primitive,
    pub up_to: usize,
    pub below: &'static str,
    pub above: &'static str,
}

/// Every size split of the active [`table`], in table order.
pub fn splits() -> Vec<Split> {
    table()
        .entries
        .iter()
        .flat_map(|m| {
            m.picks.windows(2).map(|w| Split {
                primitive: m.primitive,
                up_to: w[0].up_to,
                below: w[0].provider,
                above: w[1].provider,
            })
        })
        .collect()
}

/// What runs each primitive under `auto`, e.g. `chacha20-poly1305: openssl` or
/// `aes128-gcm: fast up to 256 B, openssl above`.
pub fn describe_picks(primitive: Primitive) -> String {
    describe_picks_in(table(), primitive)
}

/// The table-driven provider `auto` uses where a profile's primitives go to different
/// providers.
pub static AUTO: CryptoProvider = CryptoProvider {
    name: "auto",
    library: "per primitive and size (the table `ivnsec suites` shows)",
    keys: &AutoKeys,
    rng: &AutoRandom,
};

struct AutoKeys;

fn unsupported(p: Primitive) -> CryptoError {
    CryptoError::Unsupported(p)
}

/// Keys made with each provider of a size split, and the split points.
struct BySize<K: ?Sized> {
    keys: Vec<(usize, Box<K>)>,
}

impl<K: ?Sized> BySize<K> {
    fn for_len(&self, len: usize) -> &K {
        // The last key's range is unbounded (`picks` guarantees it), so `find` succeeds; the
        // fallback keeps this total.
        self.keys
            .iter()
            .find(|(up_to, _)| len <= *up_to)
            .or(self.keys.last())
            .map(|(_, k)| &**k)
            .expect("a size split has at least one key")
    }
}

struct AeadBySize {
    alg: AeadAlg,
    by: BySize<dyn AeadKey>,
}

impl AeadKey for AeadBySize {
    fn alg(&self) -> AeadAlg {
        self.alg
    }

    fn seal_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &mut [u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError> {
        self.by
            .for_len(in_out.len())
            .seal_in_place(nonce, aad, in_out, tag)
    }

    fn open_in_place(
        &self,
        nonce: &[u8; AEAD_NONCE_LEN],
        aad: &[u8],
        in_out: &mut [u8],
        tag: &[u8; AEAD_TAG_LEN],
    ) -> Result<(), CryptoError> {
        self.by
            .for_len(in_out.len())
            .open_in_place(nonce, aad, in_out, tag)
    }

    /// A batch of [`MIN_LANES`] or more goes whole to a provider's multi-buffer key where the
    /// split has one (CCM: the portable provider's lanes); a smaller one, or a split without
    /// one, goes message by message to each size's key.
    fn seal_batch(&self, ops: &mut [AeadOp<'_>]) {
        match self.multi() {
            Some(k) if ops.len() >= MIN_LANES => k.seal_batch(ops),
            _ => seal_each(self, ops),
        }
    }

    fn open_batch(&self, ops: &mut [AeadOp<'_>]) {
        match self.multi() {
            Some(k) if ops.len() >= MIN_LANES => k.open_batch(ops),
            _ => open_each(self, ops),
        }
    }

    fn multi_buffer(&self) -> bool {
        self.multi().is_some()
    }
}

/// The smallest batch `auto` hands to multi-buffer CCM. A step of the lanes costs what a step
/// of eight messages costs (idle lanes carry dummy blocks): 1,400-byte messages cost about
/// 540 ns each in full groups of eight against OpenSSL's 970 ns one at a time (same machine),
/// so the lanes pay from about three messages on.
pub const MIN_LANES: usize = 3;

/// The AEADs whose `auto` keys take batches in multi-buffer lanes (from [`MIN_LANES`]
/// messages), as the active table splits them; for `ivnsec suites`.
pub fn multi_buffer_aeads() -> Vec<AeadAlg> {
    AeadAlg::ALL
        .into_iter()
        .filter(|&a| {
            // A throwaway all-zero key: only asked whether it batches, never used.
            AUTO.keys
                .aead(a, &vec![0; a.key_len()])
                .is_ok_and(|k| k.multi_buffer())
        })
        .collect()
}

impl AeadBySize {
    fn multi(&self) -> Option<&dyn AeadKey> {
        self.by
            .keys
            .iter()
            .map(|(_, k)| &**k)
            .find(|k| k.multi_buffer())
    }
}

struct MacBySize {
    alg: MacAlg,
    by: BySize<dyn MacKey>,
}

impl MacKey for MacBySize {
    fn alg(&self) -> MacAlg {
        self.alg
    }

    fn compute(&self, parts: &[&[u8]], out: &mut [u8; MAX_MAC_LEN]) -> usize {
        let len = parts.iter().map(|p| p.len()).sum();
        self.by.for_len(len).compute(parts, out)
    }
}

/// A key made as the table says: with its one provider, or once with each provider of a size
/// split.
enum Made<K: ?Sized> {
    One(Box<K>),
    BySize(BySize<K>),
}

fn made<K: ?Sized>(
    p: Primitive,
    make: impl Fn(&'static CryptoProvider) -> Result<Box<K>, CryptoError>,
) -> Result<Made<K>, CryptoError> {
    match picks(p).as_slice() {
        [] => Err(unsupported(p)),
        [(_, one)] => Ok(Made::One(make(one)?)),
        many => Ok(Made::BySize(BySize {
            keys: many
                .iter()
                .map(|(up_to, prov)| Ok((*up_to, make(prov)?)))
                .collect::<Result<_, CryptoError>>()?,
        })),
    }
}

impl KeyFactory for AutoKeys {
    fn supports(&self, p: Primitive) -> bool {
        PROVIDERS.iter().any(|x| x.supports(p))
    }

    fn aead(&self, alg: AeadAlg, key: &[u8]) -> Result<Box<dyn AeadKey>, CryptoError> {
        Ok(
            match made(Primitive::Aead(alg), |p| p.keys.aead(alg, key))? {
                Made::One(k) => k,
                Made::BySize(by) => Box::new(AeadBySize { alg, by }),
            },
        )
    }

    fn mac(&self, alg: MacAlg, key: &[u8]) -> Result<Box<dyn MacKey>, CryptoError> {
        Ok(match made(Primitive::Mac(alg), |p| p.keys.mac(alg, key))? {
            Made::One(k) => k,
            Made::BySize(by) => Box::new(MacBySize { alg, by }),
        })
    }

    /// Block-cipher keys are not split by size (the table has no such entry; a test checks).
    fn cipher(&self, alg: CipherAlg, key: &[u8]) -> Result<Box<dyn CipherKey>, CryptoError> {
        let p = Primitive::Cipher(alg);
        let picks = picks(p);
        let (_, prov) = picks.last().ok_or(unsupported(p))?;
        prov.keys.cipher(alg, key)
    }

    fn key_wrap(&self, alg: CipherAlg, kek: &[u8]) -> Result<Box<dyn KeyWrapKey>, CryptoError> {
        let p = Primitive::KeyWrap(alg);
        let picks = picks(p);
        let (_, prov) = picks.last().ok_or(unsupported(p))?;
        prov.keys.key_wrap(alg, kek)
    }
}

/// The portable provider's source (the OS's, through `getrandom`).
struct AutoRandom;

impl SecureRandom for AutoRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        crate::providers::PORTABLE.rng.fill(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::*;

    /// The splits are the table's: CCM at 256 B (portable → openssl), ChaCha20-Poly1305 at
    /// 2048 B (fast → openssl), nothing else.
    #[test]
    fn splits_list_the_size_splits() {
        let s: Vec<(String, usize, &str, &str)> = splits()
            .into_iter()
            .map(|s| (primitive_name(s.primitive), s.up_to, s.below, s.above))
            .collect();
        assert_eq!(
            s,
            [
                ("aes128-ccm".to_string(), 256, "portable", "openssl"),
                ("aes256-ccm".to_string(), 256, "portable", "openssl"),
                ("chacha20-poly1305".to_string(), 2048, "fast", "openssl"),
            ]
        );
    }

    /// CCM under `auto` is split by size (portable, OpenSSL), and its batches go to the
    /// portable provider's multi-buffer lanes: the Wycheproof vectors pass one by one and in
    /// batches (`kat::check_aead` runs both), and the key says it batches.
    #[test]
    fn ccm_batches_go_to_the_lanes_and_pass_the_vectors() {
        use ivnsec_core::crypto::kat::{self, Family};
        let report = kat::run_family(&AUTO, Family::AesCcm);
        assert_eq!(report.failed(), 0, "{report}");
        assert!(report.passed() > 0, "{report}");
        for (alg, len) in [(AeadAlg::Aes128Ccm, 16), (AeadAlg::Aes256Ccm, 32)] {
            let key = AUTO.keys.aead(alg, &vec![7u8; len]).unwrap();
            assert!(key.multi_buffer(), "{alg:?}");
        }
        let gcm = AUTO.keys.aead(AeadAlg::Aes128Gcm, &[7u8; 16]).unwrap();
        assert!(!gcm.multi_buffer());
        assert_eq!(
            multi_buffer_aeads(),
            [AeadAlg::Aes128Ccm, AeadAlg::Aes256Ccm]
        );
    }

    /// The size splits of [`MEASURED`](crate::table::MEASURED) are what `break_even` makes of the figures they were
    /// read from (docs/benchmarks.md, "`--provider auto`": bare seal + open, ns, the lower of
    /// the runs): AES-128-CCM portable up to 256 B, OpenSSL above; ChaCha20-Poly1305 aws-lc-rs
    /// up to 2048 B, OpenSSL above; AES-128-GCM aws-lc-rs at every size.
    #[test]
    fn the_table_splits_follow_from_its_measurements() {
        let table = |p: Primitive| -> Vec<(usize, &'static str)> {
            let m = MEASURED.iter().find(|m| m.primitive == p).unwrap();
            m.picks.iter().map(|k| (k.up_to, k.provider)).collect()
        };
        let of = |b: Option<BreakEven>, first, second| -> Vec<(usize, &'static str)> {
            b.unwrap()
                .picks(first, second)
                .into_iter()
                .flatten()
                .map(|k| (k.up_to, k.provider))
                .collect()
        };
        let ccm = break_even(
            &[256, 512, 8192],
            &[231.0 + 265.0, 423.0 + 452.0, 6090.0 + 6085.0],
            &[282.0 + 312.0, 410.0 + 438.0, 4212.0 + 4219.0],
        );
        assert_eq!(
            of(ccm, "portable", "openssl"),
            table(Primitive::Aead(AeadAlg::Aes128Ccm))
        );
        let chacha = break_even(
            &[64, 2048, 3072, 8192],
            &[
                160.0 + 156.0,
                912.0 + 888.0,
                1295.0 + 1266.0,
                3214.0 + 3182.0,
            ],
            &[
                600.0 + 571.0,
                1006.0 + 1009.0,
                1231.0 + 1227.0,
                2329.0 + 2345.0,
            ],
        );
        assert_eq!(
            of(chacha, "fast", "openssl"),
            table(Primitive::Aead(AeadAlg::ChaCha20Poly1305))
        );
        let gcm = break_even(
            &[64, 16384],
            &[77.0 + 74.0, 877.0 + 870.0],
            &[203.0 + 194.0, 2240.0 + 2234.0],
        );
        assert_eq!(
            of(gcm, "fast", "openssl"),
            table(Primitive::Aead(AeadAlg::Aes128Gcm))
        );
    }
}
