//! `--provider auto`: the fastest provider per primitive, and per size where the measured
//! break-even differs, from the active [`table`]: the built-in [`MEASURED`], or the calibration
//! of this machine that `ivnsec suites --calibrate` wrote ([`crate::cache`]).
//!
//! For a profile whose every primitive goes to one provider at every size, `auto` is simply
//! that provider (its name shows in reports). Otherwise it is [`AUTO`], a provider that makes
//! each key with the provider the table names for that primitive; where the table splits by
//! size, the key is made once with each provider named (key schedules stay once per SA) and each
//! call goes to the one whose range holds its length. A primitive the table does not name goes
//! to the first provider of [`PROVIDERS`] that has it.

use ivnsec_core::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, CipherAlg, CipherKey, CryptoError,
    CryptoProvider, KeyFactory, KeyWrapKey, MAX_MAC_LEN, MacAlg, MacKey, NoProvider, Primitive,
    ProviderChoice, SecureRandom,
};

use std::sync::OnceLock;

use crate::PROVIDERS;

/// One measured choice: inputs of up to `up_to` bytes go to `provider` (the last pick of a
/// primitive has `usize::MAX`). The length is that of the AEAD's plaintext or the MAC's message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    pub up_to: usize,
    pub provider: &'static str,
}

/// The measured choices for one primitive, smallest sizes first.
#[derive(Clone, Copy, Debug)]
pub struct Measured {
    pub primitive: Primitive,
    pub picks: &'static [Pick],
}

/// The `up_to` of a primitive's last pick: every larger size.
pub const ALL: usize = usize::MAX;

/// One provider at every size.
pub const fn only(provider: &'static str) -> Pick {
    Pick {
        up_to: ALL,
        provider,
    }
}

/// AES-CCM, either key size: RustCrypto for small frames, OpenSSL above.
const CCM: &[Pick] = &[
    Pick {
        up_to: 256,
        provider: "portable",
    },
    only("openssl"),
];

/// What `auto` runs, per primitive and size, unless this machine was calibrated (`ivnsec suites
/// --calibrate`, [`crate::calibrate`]; its table then replaces this one whole, see [`table`]).
/// Measured on the project's benchmark machine (docs/benchmarks.md, "`--provider auto`":
/// machine, date, the figures of both runs) with
///
/// ```text
/// cargo build --release
/// nice -n -15 target/release/ivnsec crypto-bench --provider all --batches 15 \
///     --suite aes128-gcm,aes256-gcm,aes128-ccm,aes256-ccm,chacha20-poly1305 \
///     --suite hmac-sha1,hmac-sha224,hmac-sha256 --sizes 16,64,256,736,1440,2048,4096,8192,16384
/// nice -n -15 target/release/ivnsec crypto-bench --provider all \
///     --suite chacha20-poly1305,aes128-ccm,aes256-ccm \
///     --sizes 256,512,736,1024,1440,2048,3072,4096,8192      # twice
/// ```
///
/// The AEADs are judged by the bare seal plus open of each size (`bare_aead_ns` +
/// `bare_aead_open_ns`, the lower of the runs), the HMACs by protect plus verify. Where two
/// providers are within the noise of each other (HMAC-SHA-1/224/256 from 4 KiB up), the one that
/// wins at the smaller sizes keeps the range, so that a key is not split for nothing.
///
/// - AES-GCM: aws-lc-rs at every size (OpenSSL's EVP path costs ~120 ns more per message).
/// - AES-CCM: RustCrypto up to 256 B (no EVP overhead), OpenSSL from 512 B (its AES-NI CBC-MAC
///   and CTR are ~1.4× faster per byte); aws-lc-rs has no CCM.
/// - ChaCha20-Poly1305: aws-lc-rs up to 2 KiB (912 ns against OpenSSL's 1006 at 2048 B; at 64 B
///   160 against ~600), OpenSSL from 3 KiB (its AVX-512 code: 2329 ns against 3214 at 8 KiB).
/// - HMAC-SHA-1/224/256: RustCrypto (SHA-NI; 165 ns against aws-lc-rs' 212 at 64 B).
///
/// Primitives not listed (AES-CBC/CTR, CMAC, key wrap, HMAC-SHA-384/512, HMAC-MD5, HMAC-SHA3)
/// were not measured per primitive: they go to the first provider of [`PROVIDERS`] that has
/// them.
pub static MEASURED: &[Measured] = &[
    Measured {
        primitive: Primitive::Aead(AeadAlg::Aes128Gcm),
        picks: &[only("fast")],
    },
    Measured {
        primitive: Primitive::Aead(AeadAlg::Aes256Gcm),
        picks: &[only("fast")],
    },
    Measured {
        primitive: Primitive::Aead(AeadAlg::Aes128Ccm),
        picks: CCM,
    },
    Measured {
        primitive: Primitive::Aead(AeadAlg::Aes256Ccm),
        picks: CCM,
    },
    Measured {
        primitive: Primitive::Aead(AeadAlg::ChaCha20Poly1305),
        picks: &[
            Pick {
                up_to: 2048,
                provider: "fast",
            },
            only("openssl"),
        ],
    },
    Measured {
        primitive: Primitive::Mac(MacAlg::HmacSha1),
        picks: &[only("portable")],
    },
    Measured {
        primitive: Primitive::Mac(MacAlg::HmacSha224),
        picks: &[only("portable")],
    },
    Measured {
        primitive: Primitive::Mac(MacAlg::HmacSha256),
        picks: &[only("portable")],
    },
];

/// What the built-in table's source says of it.
pub const BUILTIN_SOURCE: &str =
    "built-in (measured on the project's benchmark machine, docs/benchmarks.md)";

/// One primitive's picks in the table `auto` reads, smallest sizes first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub primitive: Primitive,
    pub picks: Vec<Pick>,
}

/// The table `auto` reads: the built-in [`MEASURED`], or a calibration of this machine.
#[derive(Clone, Debug)]
pub struct Table {
    pub entries: Vec<Entry>,
    /// Where it comes from, for `--version`, `ivnsec suites` and report environments.
    pub source: String,
    /// True for a calibration of this machine, false for the built-in table.
    pub calibrated: bool,
}

impl Table {
    /// The built-in [`MEASURED`] table; `note` (why no calibration is read, when that is worth
    /// saying) goes into its source.
    pub fn builtin(note: Option<&str>) -> Table {
        Table {
            entries: MEASURED
                .iter()
                .map(|m| Entry {
                    primitive: m.primitive,
                    picks: m.picks.to_vec(),
                })
                .collect(),
            source: match note {
                Some(n) => format!("{BUILTIN_SOURCE}; {n}"),
                None => BUILTIN_SOURCE.to_string(),
            },
            calibrated: false,
        }
    }

    /// The picks of `primitive`, if the table names it.
    pub fn picks_of(&self, primitive: Primitive) -> Option<&[Pick]> {
        self.entries
            .iter()
            .find(|e| e.primitive == primitive)
            .map(|e| e.picks.as_slice())
    }
}

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

/// The primitives a table must name: those of [`MEASURED`], the ones calibrated.
pub fn tabled_primitives() -> impl Iterator<Item = Primitive> {
    MEASURED.iter().map(|m| m.primitive)
}

/// Why `entries` cannot be `auto`'s table, if it cannot: a primitive missing, unknown to the
/// built-in table or listed twice, a provider unknown or without the primitive, sizes that do not
/// grow, two neighbouring picks with one provider, or a last pick that does not cover every size.
pub fn check_table(entries: &[Entry]) -> Result<(), String> {
    for (i, e) in entries.iter().enumerate() {
        let name = primitive_name(e.primitive);
        if !tabled_primitives().any(|p| p == e.primitive) {
            return Err(format!("{name}: not a primitive auto's table holds"));
        }
        if entries[i + 1..].iter().any(|o| o.primitive == e.primitive) {
            return Err(format!("{name} is listed twice"));
        }
        let Some(last) = e.picks.last() else {
            return Err(format!("{name}: no pick"));
        };
        if last.up_to != ALL {
            return Err(format!(
                "{name}: the last pick must cover every larger size (no up_to)"
            ));
        }
        for w in e.picks.windows(2) {
            if w[0].up_to >= w[1].up_to {
                return Err(format!("{name}: the sizes of the picks must grow"));
            }
            if w[0].provider == w[1].provider {
                return Err(format!(
                    "{name}: two neighbouring picks name {}",
                    w[0].provider
                ));
            }
        }
        for pk in &e.picks {
            match by_name(pk.provider) {
                None => return Err(format!("{name}: unknown provider {:?}", pk.provider)),
                Some(p) if !p.supports(e.primitive) => {
                    return Err(format!("{name}: provider {} does not implement it", p.name));
                }
                Some(_) => {}
            }
        }
    }
    if let Some(p) = tabled_primitives().find(|p| entries.iter().all(|e| e.primitive != *p)) {
        return Err(format!("{} is missing", primitive_name(p)));
    }
    Ok(())
}

/// Where two cost curves measured at the same sizes cross: the break-even size of two
/// providers (or of two ways of using one), from which `auto`'s size splits are read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BreakEven {
    /// The first curve costs less (or the same) at every measured size.
    FirstEverywhere,
    /// The second curve costs less at every measured size.
    SecondEverywhere,
    /// One curve costs less up to `last_below` bytes (a measured size), the other from
    /// `first_above` (the next measured size) to the largest measured size; `at` is where the
    /// straight line between those two measurements crosses. `first_below` says which curve
    /// wins below. The crossing taken is the last one: above it the same curve wins at every
    /// measured size, as a size split of `auto` needs.
    At {
        first_below: bool,
        last_below: usize,
        first_above: usize,
        at: f64,
    },
}

impl BreakEven {
    /// The pick list this break-even makes of providers `first` and `second`: the winner below
    /// up to the last measured size it wins, the other above, as [`MEASURED`] writes a split.
    pub fn picks(self, first: &'static str, second: &'static str) -> [Option<Pick>; 2] {
        match self {
            BreakEven::FirstEverywhere => [Some(only(first)), None],
            BreakEven::SecondEverywhere => [Some(only(second)), None],
            BreakEven::At {
                first_below,
                last_below,
                ..
            } => {
                let (lo, hi) = if first_below {
                    (first, second)
                } else {
                    (second, first)
                };
                [
                    Some(Pick {
                        up_to: last_below,
                        provider: lo,
                    }),
                    Some(only(hi)),
                ]
            }
        }
    }
}

/// The break-even of two cost curves (ns per operation, or anything where less is better)
/// measured at `sizes` (ascending); `None` when the lengths differ, nothing is measured, the
/// sizes do not grow or a cost is not a finite number.
pub fn break_even(sizes: &[usize], first: &[f64], second: &[f64]) -> Option<BreakEven> {
    if sizes.is_empty() || sizes.len() != first.len() || sizes.len() != second.len() {
        return None;
    }
    if sizes.windows(2).any(|w| w[0] >= w[1]) || first.iter().chain(second).any(|c| !c.is_finite())
    {
        return None;
    }
    // `true` where the first curve wins (ties go to it).
    let wins: Vec<bool> = first.iter().zip(second).map(|(a, b)| a <= b).collect();
    let last = *wins.last()?;
    let Some(i) = wins.iter().rposition(|&w| w != last) else {
        return Some(if last {
            BreakEven::FirstEverywhere
        } else {
            BreakEven::SecondEverywhere
        });
    };
    let (d0, d1) = (first[i] - second[i], first[i + 1] - second[i + 1]);
    let (s0, s1) = (sizes[i] as f64, sizes[i + 1] as f64);
    let at = if d0 == d1 {
        s0
    } else {
        s0 + (s1 - s0) * d0 / (d0 - d1)
    };
    Some(BreakEven::At {
        first_below: !last,
        last_below: sizes[i],
        first_above: sizes[i + 1],
        at,
    })
}

/// The provider called `name` in [`PROVIDERS`].
pub fn by_name(name: &str) -> Option<&'static CryptoProvider> {
    PROVIDERS.iter().copied().find(|p| p.name == name)
}

/// Where `auto` sends `primitive`: (up to this many bytes, provider), smallest first; empty when
/// no provider has it.
pub fn picks(primitive: Primitive) -> Vec<(usize, &'static CryptoProvider)> {
    picks_in(table(), primitive)
}

/// [`picks`] from `table`.
pub fn picks_in(table: &Table, primitive: Primitive) -> Vec<(usize, &'static CryptoProvider)> {
    if let Some(m) = table.picks_of(primitive) {
        let v: Vec<(usize, &'static CryptoProvider)> = m
            .iter()
            .filter_map(|pk| by_name(pk.provider).map(|p| (pk.up_to, p)))
            .filter(|(_, p)| p.supports(primitive))
            .collect();
        // A table entry whose provider lacks the primitive would be a table error (a test
        // checks there is none); fall through to the preference order rather than fail.
        if v.last().is_some_and(|(up_to, _)| *up_to == ALL) {
            return v;
        }
    }
    PROVIDERS
        .iter()
        .copied()
        .find(|p| p.supports(primitive))
        .map(|p| vec![(ALL, p)])
        .unwrap_or_default()
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

/// A primitive's name as the suites spell it (`aes128-gcm`, `hmac-sha256`, `aes128`,
/// `aes128-kw`).
pub fn primitive_name(p: Primitive) -> String {
    match p {
        Primitive::Aead(a) => a.name().to_string(),
        Primitive::Mac(m) => m.name().to_string(),
        Primitive::Cipher(c) => c.name().to_string(),
        Primitive::KeyWrap(c) => format!("{}-kw", c.name()),
    }
}

/// What runs each primitive under `auto`, e.g. `chacha20-poly1305: openssl` or
/// `aes128-gcm: fast up to 256 B, openssl above`.
pub fn describe_picks(primitive: Primitive) -> String {
    describe_picks_in(table(), primitive)
}

/// [`describe_picks`] from `table`.
pub fn describe_picks_in(table: &Table, primitive: Primitive) -> String {
    let picks: Vec<Pick> = picks_in(table, primitive)
        .into_iter()
        .map(|(up_to, p)| Pick {
            up_to,
            provider: p.name,
        })
        .collect();
    describe_pick_list(primitive, &picks)
}

/// [`describe_picks`] of a given pick list.
pub fn describe_pick_list(primitive: Primitive, picks: &[Pick]) -> String {
    let mut s = format!("{}: ", primitive_name(primitive));
    match picks {
        [] => s.push_str("none"),
        [p] => s.push_str(p.provider),
        many => {
            let mut lo = 0;
            for (i, p) in many.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                if p.up_to == ALL {
                    s.push_str(&format!("{} above {lo} B", p.provider));
                } else {
                    s.push_str(&format!("{} up to {} B", p.provider, p.up_to));
                    lo = p.up_to;
                }
            }
        }
    }
    s
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
        crate::PORTABLE.rng.fill(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(b: Option<BreakEven>) -> (bool, usize, usize, f64) {
        match b {
            Some(BreakEven::At {
                first_below,
                last_below,
                first_above,
                at,
            }) => (first_below, last_below, first_above, at),
            other => panic!("no crossing: {other:?}"),
        }
    }

    /// Two straight lines, t = 100 + 1·s and t = 20 + 2·s, cross at s = 80: the first is
    /// cheaper from there on; measured at 16, 64, 256 the crossing lies between 64 and 256,
    /// where the straight line between the measurements meets it exactly.
    #[test]
    fn straight_lines_cross_where_they_meet() {
        let sizes = [16, 64, 256, 1024];
        let a: Vec<f64> = sizes.iter().map(|&s| 100.0 + s as f64).collect();
        let b: Vec<f64> = sizes.iter().map(|&s| 20.0 + 2.0 * s as f64).collect();
        let (first_below, lo, hi, x) = at(break_even(&sizes, &a, &b));
        assert!(!first_below);
        assert_eq!((lo, hi), (64, 256));
        assert!((x - 80.0).abs() < 1e-9, "{x}");
        // Swapped, the same size with the other side below.
        let (first_below, ..) = at(break_even(&sizes, &b, &a));
        assert!(first_below);
        let picks = break_even(&sizes, &b, &a).unwrap().picks("fast", "openssl");
        assert_eq!(
            picks,
            [
                Some(Pick {
                    up_to: 64,
                    provider: "fast"
                }),
                Some(only("openssl"))
            ]
        );
    }

    /// One curve below at every size: no crossing; noise crossing back and forth: the last
    /// crossing counts; bad input: `None`.
    #[test]
    fn everywhere_noise_and_bad_input() {
        let s = [64, 256, 1024];
        assert_eq!(
            break_even(&s, &[1.0, 2.0, 3.0], &[2.0, 3.0, 4.0]),
            Some(BreakEven::FirstEverywhere)
        );
        assert_eq!(
            break_even(&s, &[5.0, 5.0, 5.0], &[2.0, 3.0, 4.0]),
            Some(BreakEven::SecondEverywhere)
        );
        let (_, lo, hi, _) = at(break_even(
            &[1, 2, 3, 4],
            &[1.0, 3.0, 1.0, 3.0],
            &[2.0, 2.0, 2.0, 2.0],
        ));
        assert_eq!((lo, hi), (3, 4));
        assert_eq!(break_even(&[], &[], &[]), None);
        assert_eq!(break_even(&[1, 2], &[1.0], &[1.0, 2.0]), None);
        assert_eq!(break_even(&[2, 1], &[1.0, 2.0], &[1.0, 2.0]), None);
        assert_eq!(break_even(&[1, 2], &[1.0, f64::NAN], &[1.0, 2.0]), None);
    }

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

    /// The size splits of [`MEASURED`] are what `break_even` makes of the figures they were
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
