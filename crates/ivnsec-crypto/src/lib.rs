//! The crypto providers ivnsec links and the one selection every caller uses.
//!
//! [`PROVIDERS`] lists them; [`select`] picks one for a profile under a `--provider` choice.
//! A named choice (`portable`, `fast`, `openssl`) is that provider, if it has every primitive of
//! the profile. `auto` (the default) is the fastest provider per primitive, and per size where
//! the break-even differs, from the measured table [`table::MEASURED`] or, where `ivnsec suites
//! --calibrate` measured this machine, from its calibration ([`cache`], [`calibrate`]); see
//! [`auto`]. The rule for named choices is [`ivnsec_core::crypto::select`]; this crate supplies
//! the list and the table, so core stays free of any crypto library.
#![forbid(unsafe_code)]

pub mod auto;
pub mod cache;
pub mod calibrate;
pub mod providers;
pub mod table;

use ivnsec_core::crypto::{self, CryptoProvider, NoProvider, Primitive};
use ivnsec_core::profile::Profile;
use ivnsec_core::suite::Suite;

pub use auto::AUTO;
pub use ivnsec_core::crypto::ProviderChoice;
pub use providers::{PORTABLE, PROVIDERS, openssl_version};

/// The provider that runs `profile` under `choice`.
pub fn select(
    choice: ProviderChoice,
    profile: Profile,
) -> Result<&'static CryptoProvider, NoProvider> {
    select_primitives(choice, &profile.primitives(), &profile)
}

/// The provider that runs the IVN-AE `suite` under `choice` (the error says "suite …").
pub fn select_suite(
    choice: ProviderChoice,
    suite: Suite,
) -> Result<&'static CryptoProvider, NoProvider> {
    select_primitives(
        choice,
        &suite_primitives(suite),
        &format_args!("suite {suite}"),
    )
}

/// The provider for a set of primitives under `choice`; `what` names them in the error.
pub fn select_primitives(
    choice: ProviderChoice,
    needs: &[Primitive],
    what: &dyn std::fmt::Display,
) -> Result<&'static CryptoProvider, NoProvider> {
    match choice {
        ProviderChoice::Auto => auto::select(needs, what),
        named => crypto::select(named, needs, &PROVIDERS, what),
    }
}

/// The primitives of an IVN-AE suite.
pub fn suite_primitives(suite: Suite) -> Vec<Primitive> {
    let (prims, n) = suite.primitives();
    prims[..n].iter().flatten().copied().collect()
}

/// Which provider runs each primitive of `needs` under `choice`, for reports and `ivnsec
/// suites`: e.g. `chacha20-poly1305: openssl` (`auto`), `aes128-gcm: fast` (named), several
/// joined with `; `, or `none` when nothing is needed (plain, crc32).
pub fn describe_choice(
    choice: ProviderChoice,
    needs: &[Primitive],
    what: &dyn std::fmt::Display,
) -> Result<String, NoProvider> {
    let picked = select_primitives(choice, needs, what)?;
    if needs.is_empty() {
        return Ok("none".into());
    }
    Ok(needs
        .iter()
        .map(|&p| match choice {
            ProviderChoice::Auto => auto::describe_picks(p),
            _ => format!("{}: {}", table::primitive_name(p), picked.name),
        })
        .collect::<Vec<_>>()
        .join("; "))
}

/// The whole `auto` table as one line (`aes128-gcm: fast; …`), for report environments.
pub fn describe_auto_table() -> String {
    auto::table()
        .entries
        .iter()
        .map(|m| auto::describe_picks(m.primitive))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Which table `auto` reads, for `--version` and report environments: the built-in measured
/// one, or a calibration of this machine (`ivnsec suites --calibrate`).
pub fn auto_table_source() -> String {
    auto::table_source()
}

/// Names of the providers that implement every primitive of `needs`.
pub fn providers_with(needs: &[Primitive]) -> Vec<&'static str> {
    PROVIDERS
        .iter()
        .filter(|p| crypto::has_all(p, needs))
        .map(|p| p.name)
        .collect()
}

/// True when `provider` has every primitive of the IVN-AE `suite`.
pub fn has_suite(provider: &CryptoProvider, suite: Suite) -> bool {
    crypto::has_all(provider, &suite_primitives(suite))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ivnsec_core::crypto::{AeadAlg, CipherAlg, MacAlg};

    #[test]
    fn auto_prefers_the_measured_provider_and_falls_back() {
        let gcm: Suite = "aes128-gcm".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, gcm).unwrap().name,
            "fast"
        );
        // HMAC-SHA-256 alone: the portable provider (SHA-NI) measured fastest.
        let hmac: Suite = "hmac-sha256".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, hmac).unwrap().name,
            "portable"
        );
        // CCM: portable for small frames, OpenSSL for large ones, so the per-size provider.
        let ccm: Suite = "aes128-ccm".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, ccm).unwrap().name,
            "auto"
        );
        let e = select_suite(ProviderChoice::Fast, ccm).unwrap_err();
        assert_eq!(
            e.to_string(),
            "provider 'fast' does not implement suite aes128-ccm; use --provider portable or auto"
        );
        assert_eq!(
            select_suite(ProviderChoice::OpenSsl, ccm).unwrap().name,
            "openssl"
        );
        let e = select_suite(ProviderChoice::OpenSsl, hmac).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("provider 'openssl' does not implement")
        );
        // CBC from the first provider that has it, HMAC-MD5 only from the portable one.
        let md5: Suite = "aes128-cbc-hmac-md5".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, md5).unwrap().name,
            "auto"
        );
        let md5_only: Suite = "hmac-md5".parse().unwrap();
        assert_eq!(
            select_suite(ProviderChoice::Auto, md5_only).unwrap().name,
            "portable"
        );
        for s in Suite::all() {
            assert!(select_suite(ProviderChoice::Portable, s).is_ok(), "{s}");
            assert!(select_suite(ProviderChoice::Auto, s).is_ok(), "{s}");
        }
    }

    /// The portable provider runs every profile of every family, and `auto` always finds one
    /// that has every primitive.
    #[test]
    fn every_profile_has_a_provider() {
        for p in Profile::all() {
            assert_eq!(
                select(ProviderChoice::Portable, p).unwrap().name,
                "portable",
                "{p}"
            );
            let auto = select(ProviderChoice::Auto, p).unwrap();
            assert!(crypto::has_all(auto, &p.primitives()), "{p}");
        }
        let gcm: Profile = "esp-aes128-gcm".parse().unwrap();
        assert_eq!(select(ProviderChoice::Auto, gcm).unwrap().name, "fast");
    }

    /// Every pick names a provider of [`PROVIDERS`] that has the primitive, the sizes grow, the
    /// last pick covers every size, no primitive is listed twice, and block ciphers and key wrap
    /// (whose keys are not split) have a single pick.
    #[test]
    fn the_measured_table_is_consistent() {
        // The rule a calibration's table is checked with holds for the built-in one.
        table::check_table(&table::Table::builtin(None).entries).unwrap();
        for (i, m) in table::MEASURED.iter().enumerate() {
            assert!(!m.picks.is_empty(), "{:?}", m.primitive);
            assert_eq!(
                m.picks.last().unwrap().up_to,
                usize::MAX,
                "{:?}",
                m.primitive
            );
            for w in m.picks.windows(2) {
                assert!(w[0].up_to < w[1].up_to, "{:?}", m.primitive);
                assert_ne!(w[0].provider, w[1].provider, "{:?}", m.primitive);
            }
            for pick in m.picks {
                let p = PROVIDERS
                    .iter()
                    .find(|p| p.name == pick.provider)
                    .unwrap_or_else(|| panic!("{:?}: no provider {}", m.primitive, pick.provider));
                assert!(
                    p.supports(m.primitive),
                    "{} lacks {:?}",
                    p.name,
                    m.primitive
                );
            }
            assert!(
                table::MEASURED[i + 1..]
                    .iter()
                    .all(|n| n.primitive != m.primitive),
                "{:?} twice",
                m.primitive
            );
            assert!(
                matches!(m.primitive, Primitive::Aead(_) | Primitive::Mac(_)),
                "{:?}: only AEAD and MAC keys are split by size",
                m.primitive
            );
            // What the table says is what `picks` returns.
            let got: Vec<(usize, &str)> = auto::picks(m.primitive)
                .into_iter()
                .map(|(n, p)| (n, p.name))
                .collect();
            let want: Vec<(usize, &str)> = m.picks.iter().map(|p| (p.up_to, p.provider)).collect();
            assert_eq!(got, want);
        }
    }

    /// What `ivnsec suites` and the reports print.
    #[test]
    fn the_choice_is_described_per_primitive() {
        let d = |choice, name: &str| {
            let p: Profile = name.parse().unwrap();
            describe_choice(choice, &p.primitives(), &p).unwrap()
        };
        assert_eq!(d(ProviderChoice::Auto, "aes128-gcm"), "aes128-gcm: fast");
        assert_eq!(
            d(ProviderChoice::Auto, "chacha20-poly1305"),
            "chacha20-poly1305: fast up to 2048 B, openssl above 2048 B"
        );
        assert_eq!(
            d(ProviderChoice::Auto, "aes128-cbc-hmac-sha256"),
            "aes128: fast; hmac-sha256: portable"
        );
        assert_eq!(
            d(ProviderChoice::Portable, "aes128-cbc-hmac-sha256"),
            "aes128: portable; hmac-sha256: portable"
        );
        assert_eq!(d(ProviderChoice::Auto, "plain"), "none");
        let ccm: Profile = "aes128-ccm".parse().unwrap();
        assert!(describe_choice(ProviderChoice::Fast, &ccm.primitives(), &ccm).is_err());
        let table = describe_auto_table();
        assert!(
            table.starts_with("aes128-gcm: fast; aes256-gcm: fast; "),
            "{table}"
        );
        assert!(table.contains("hmac-sha256: portable"), "{table}");
    }

    /// A key of the per-size provider seals each length with the provider the table names for
    /// it: the frames are those of each provider alone (every provider gives the same bytes) and
    /// each provider opens them, on both sides of every split.
    #[test]
    fn the_per_size_key_agrees_with_each_provider() {
        for alg in [
            AeadAlg::ChaCha20Poly1305,
            AeadAlg::Aes128Ccm,
            AeadAlg::Aes256Ccm,
        ] {
            let key: Vec<u8> = (0..alg.key_len() as u8).collect();
            let auto_key = AUTO.keys.aead(alg, &key).unwrap();
            let split = auto::picks(Primitive::Aead(alg))[0].0;
            for len in [0, 1, 64, split, split + 1, 4096] {
                let nonce = [len as u8; 12];
                let aad = [0xa5u8; 12];
                let plain: Vec<u8> = (0..len).map(|i| i as u8).collect();
                let mut sealed = plain.clone();
                let mut tag = [0u8; 16];
                auto_key
                    .seal_in_place(&nonce, &aad, &mut sealed, &mut tag)
                    .unwrap();
                for p in PROVIDERS
                    .iter()
                    .filter(|p| p.supports(Primitive::Aead(alg)))
                {
                    let k = p.keys.aead(alg, &key).unwrap();
                    let (mut again, mut t2) = (plain.clone(), [0u8; 16]);
                    k.seal_in_place(&nonce, &aad, &mut again, &mut t2).unwrap();
                    assert_eq!((&again, t2), (&sealed, tag), "{alg:?} {len} on {}", p.name);
                    let mut opened = sealed.clone();
                    k.open_in_place(&nonce, &aad, &mut opened, &tag).unwrap();
                    assert_eq!(opened, plain, "{alg:?} {len} on {}", p.name);
                }
                let mut opened = sealed.clone();
                auto_key
                    .open_in_place(&nonce, &aad, &mut opened, &tag)
                    .unwrap();
                assert_eq!(opened, plain);
                let mut bad = tag;
                bad[0] ^= 1;
                let mut opened = sealed.clone();
                assert_eq!(
                    auto_key.open_in_place(&nonce, &aad, &mut opened, &bad),
                    Err(crypto::CryptoError::AuthFailed),
                    "{alg:?} {len}"
                );
            }
        }
    }

    /// The per-primitive provider makes every key kind from the provider its table names.
    #[test]
    fn the_per_primitive_provider_makes_every_kind_of_key() {
        assert!(AUTO.supports(Primitive::Mac(MacAlg::HmacSha3_256)));
        assert!(AUTO.keys.mac(MacAlg::HmacSha256, b"key").is_ok());
        assert!(AUTO.keys.cipher(CipherAlg::Aes192, &[0u8; 24]).is_ok());
        assert!(AUTO.keys.key_wrap(CipherAlg::Aes192, &[0u8; 24]).is_ok());
        assert!(AUTO.keys.aead(AeadAlg::Aes128Gcm, &[0u8; 5]).is_err());
        let mut r = [0u8; 32];
        AUTO.rng.fill(&mut r).unwrap();
        assert_ne!(r, [0u8; 32]);
    }
}
