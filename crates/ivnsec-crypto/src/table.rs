//! `auto`'s table: which provider runs each primitive, per size where the measured break-even
//! differs. The built-in [`MEASURED`] table, the [`Table`] type a calibration of this machine
//! also fills ([`crate::calibrate`], [`crate::cache`]), its check, the break-even rule both read
//! their splits with, and how a table is described. Which table is active, and the provider that
//! runs it, are [`crate::auto`]'s.

use ivnsec_core::crypto::{AeadAlg, CryptoProvider, MacAlg, Primitive};

use crate::providers::PROVIDERS;

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
}
