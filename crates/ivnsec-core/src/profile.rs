//! The one typed name of what protects a unit: every IVN-AE suite at its level, the MACsec cipher
//! suites (confidentiality or integrity only), the ESP transforms, the SecOC MACs and the SOME/IP
//! security levels. Parsed once at the edge (command line, plan, key file), passed typed
//! everywhere after that.
//!
//! The stable names are those `ivnsec suites` lists:
//!
//! | family | names |
//! | --- | --- |
//! | IVN-AE | `plain`, `crc32`, `aes128-gcm[/auth\|/conf]`, `hmac-sha256`, `aes128-cbc-hmac-sha256`, … |
//! | MACsec | `macsec-gcm-aes-{128,256}`, `macsec-gcm-aes-xpn-{128,256}`, each `[/auth\|/conf]` |
//! | ESP | `esp-aes128-gcm`, `esp-null-hmac-sha256`, … |
//! | SecOC | `secoc-cmac-aes128`, `secoc-hmac-sha256` |
//! | SOME/IP | `someip-nosec`, `someip-SUITE[/auth\|/conf]` |
//!
//! [`Display`](fmt::Display) prints the canonical spelling; two spellings of one profile parse to
//! equal values (`aes128-gcm` = `aes128-gcm/conf`).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;
use core::str::FromStr;

use crate::crypto::{AeadAlg, Primitive};
use crate::sa::esp::EspAlg;
use crate::sa::macsec::CipherSuite;
use crate::sa::secoc::SecocAlg;
use crate::sa::someip::{self as sip};
use crate::suite::{IvnAeProfile, Level, Suite};

/// EtherType of MACsec frames (IEEE 802.1AE).
pub const ETHERTYPE_MACSEC: u16 = 0x88E5;
/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// UDP port of SecOC PDUs in the experiments (both ends, on a testbed).
pub const SECOC_PORT: u16 = 30_600;
/// UDP port of SOME/IP messages in the experiments (both ends, on a testbed).
pub const SOMEIP_PORT: u16 = 30_509;

/// A MACsec profile: a cipher suite, sent with confidentiality (`/conf`, the default: E = C = 1)
/// or integrity only (`/auth`: E = C = 0, user data in clear, as seed 002 configured it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MacsecProfile {
    pub suite: CipherSuite,
    pub confidentiality: bool,
}

/// A secured SOME/IP profile: `someip-nosec`, or `someip-<aead>[/auth|/conf]` (conf by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SomeipProfile {
    pub level: sip::Level,
    /// Unused under `nosec` (kept at AES-128-GCM there, so equal profiles compare equal).
    pub alg: AeadAlg,
}

impl SomeipProfile {
    /// The `nosec` profile.
    pub const NOSEC: SomeipProfile = SomeipProfile {
        level: sip::Level::NoSec,
        alg: AeadAlg::Aes128Gcm,
    };

    /// Every profile: nosec, then each AEAD at auth and conf.
    pub fn all() -> impl Iterator<Item = SomeipProfile> {
        core::iter::once(SomeipProfile::NOSEC).chain(AeadAlg::ALL.into_iter().flat_map(|alg| {
            [sip::Level::Auth, sip::Level::Conf]
                .into_iter()
                .map(move |level| SomeipProfile { level, alg })
        }))
    }

    fn parse(s: &str) -> Option<SomeipProfile> {
        let rest = s.strip_prefix("someip-")?;
        if rest == "nosec" {
            return Some(SomeipProfile::NOSEC);
        }
        let (suite, level) = match rest.split_once('/') {
            None => (rest, sip::Level::Conf),
            Some((suite, "auth")) => (suite, sip::Level::Auth),
            Some((suite, "conf")) => (suite, sip::Level::Conf),
            Some(_) => return None,
        };
        let alg = sip::suite_from_name(suite)?;
        Some(SomeipProfile { level, alg })
    }
}

impl fmt::Display for SomeipProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.level {
            sip::Level::NoSec => f.write_str("someip-nosec"),
            l => write!(f, "someip-{}/{}", self.alg.name(), l.name()),
        }
    }
}

/// The protocol family of a [`Profile`]: the one family enum, derived from the profile
/// ([`Profile::family`]), that every dispatch on the family uses (the SA factory of
/// [`crate::sa::any`], the [`crate::channel::Channel`], the frame tools of the node).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// IVN-AE, our raw-Ethernet format (docs/wire-ivnae.md).
    IvnAe,
    /// MACsec (IEEE 802.1AE).
    Macsec,
    /// IPsec ESP (RFC 4303).
    Esp,
    /// AUTOSAR SecOC.
    Secoc,
    /// Secured SOME/IP (docs/wire-someip-sec.md).
    Someip,
}

impl Family {
    /// The family's name, for tables and messages (`IVN-AE`, `MACsec`, `ESP`, `SecOC`,
    /// `SOME/IP`).
    pub const fn name(self) -> &'static str {
        match self {
            Family::IvnAe => "IVN-AE",
            Family::Macsec => "MACsec",
            Family::Esp => "ESP",
            Family::Secoc => "SecOC",
            Family::Someip => "SOME/IP",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A profile of any family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Profile {
    /// IVN-AE, our raw-Ethernet format (docs/wire-ivnae.md).
    IvnAe(IvnAeProfile),
    /// MACsec (IEEE 802.1AE).
    Macsec(MacsecProfile),
    /// IPsec ESP (RFC 4303).
    Esp(EspAlg),
    /// AUTOSAR SecOC.
    Secoc(SecocAlg),
    /// Secured SOME/IP (docs/wire-someip-sec.md).
    Someip(SomeipProfile),
}

/// How the units of a profile travel between two nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Carrier {
    /// Whole Ethernet frames (IVN-AE, MACsec).
    Ethernet,
    /// IPv4 packets (ESP: protocol 50).
    Ipv4,
    /// UDP datagrams (SecOC, SOME/IP).
    Udp,
}

/// Why a profile name did not parse. Its text names the profile and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileError {
    name: String,
    kind: ProfileErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ProfileErrorKind {
    /// A `secoc-`, `esp-` or `macsec-` name that is not one of the family's.
    Unknown(Family),
    /// A `someip-` name that is not one of SOME/IP's.
    UnknownSomeip,
    /// An IVN-AE name that did not parse.
    IvnAe(crate::suite::ProfileError),
}

impl ProfileError {
    /// The name that did not parse.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The family whose names the name was read as (by its prefix: `macsec-`, `esp-`,
    /// `secoc-`, `someip-`; any other name is read as IVN-AE).
    pub fn family(&self) -> Family {
        match &self.kind {
            ProfileErrorKind::Unknown(family) => *family,
            ProfileErrorKind::UnknownSomeip => Family::Someip,
            ProfileErrorKind::IvnAe(_) => Family::IvnAe,
        }
    }

    /// What the IVN-AE parser said, for a name read as IVN-AE.
    pub fn ivnae(&self) -> Option<&crate::suite::ProfileError> {
        match &self.kind {
            ProfileErrorKind::IvnAe(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.name;
        match &self.kind {
            ProfileErrorKind::Unknown(what) => write!(
                f,
                "profile `{p}`: unknown {what} profile (see `ivnsec suites`)"
            ),
            ProfileErrorKind::UnknownSomeip => write!(
                f,
                "profile `{p}`: unknown SOME/IP profile (someip-nosec, or \
                 someip-SUITE[/auth|/conf] with SUITE aes128-gcm, aes256-gcm, \
                 aes128-ccm, aes256-ccm or chacha20-poly1305)"
            ),
            ProfileErrorKind::IvnAe(e) => {
                write!(f, "profile `{p}`: {e} (see `ivnsec suites`)")
            }
        }
    }
}

impl core::error::Error for ProfileError {}

impl FromStr for Profile {
    type Err = ProfileError;

    fn from_str(profile: &str) -> Result<Profile, ProfileError> {
        let err = |kind| ProfileError {
            name: profile.into(),
            kind,
        };
        if profile.starts_with("secoc-") {
            return SecocAlg::from_name(profile)
                .map(Profile::Secoc)
                .ok_or_else(|| err(ProfileErrorKind::Unknown(Family::Secoc)));
        }
        if profile.starts_with("someip-") {
            return SomeipProfile::parse(profile)
                .map(Profile::Someip)
                .ok_or_else(|| err(ProfileErrorKind::UnknownSomeip));
        }
        if profile.starts_with("esp-") {
            return EspAlg::from_name(profile)
                .map(Profile::Esp)
                .ok_or_else(|| err(ProfileErrorKind::Unknown(Family::Esp)));
        }
        if profile.starts_with("macsec-") {
            let (suite, confidentiality) = match profile.rsplit_once('/') {
                None => (profile, true),
                Some((s, "conf")) => (s, true),
                Some((s, "auth")) => (s, false),
                Some(_) => return Err(err(ProfileErrorKind::Unknown(Family::Macsec))),
            };
            return CipherSuite::from_profile(suite)
                .map(|suite| {
                    Profile::Macsec(MacsecProfile {
                        suite,
                        confidentiality,
                    })
                })
                .ok_or_else(|| err(ProfileErrorKind::Unknown(Family::Macsec)));
        }
        profile
            .parse::<IvnAeProfile>()
            .map(Profile::IvnAe)
            .map_err(|e| err(ProfileErrorKind::IvnAe(e)))
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Profile::IvnAe(p) => write!(f, "{p}"),
            Profile::Macsec(m) => f.write_str(m.suite.profile()).and_then(|_| {
                if m.confidentiality {
                    Ok(())
                } else {
                    f.write_str("/auth")
                }
            }),
            Profile::Esp(a) => f.write_str(a.name()),
            Profile::Secoc(a) => f.write_str(a.name()),
            Profile::Someip(s) => write!(f, "{s}"),
        }
    }
}

impl Profile {
    /// `plain`: no protection, the baseline of every experiment.
    pub const PLAIN: Profile = Profile::IvnAe(IvnAeProfile {
        suite: Suite::Plain,
        level: Level::None,
    });

    /// Every profile of every family, each once (canonical spelling).
    pub fn all() -> impl Iterator<Item = Profile> {
        IvnAeProfile::all()
            .map(Profile::IvnAe)
            .chain(CipherSuite::ALL.into_iter().flat_map(|suite| {
                [true, false].into_iter().map(move |confidentiality| {
                    Profile::Macsec(MacsecProfile {
                        suite,
                        confidentiality,
                    })
                })
            }))
            .chain(EspAlg::ALL.into_iter().map(Profile::Esp))
            .chain(SecocAlg::ALL.into_iter().map(Profile::Secoc))
            .chain(SomeipProfile::all().map(Profile::Someip))
    }

    /// The profile's family.
    pub fn family(self) -> Family {
        match self {
            Profile::IvnAe(_) => Family::IvnAe,
            Profile::Macsec(_) => Family::Macsec,
            Profile::Esp(_) => Family::Esp,
            Profile::Secoc(_) => Family::Secoc,
            Profile::Someip(_) => Family::Someip,
        }
    }

    /// The family's name, for tables (`IVN-AE`, `MACsec`, `ESP`, `SecOC`, `SOME/IP`).
    pub fn family_name(self) -> &'static str {
        self.family().name()
    }

    /// How the units travel.
    pub fn carrier(self) -> Carrier {
        match self {
            Profile::IvnAe(_) | Profile::Macsec(_) => Carrier::Ethernet,
            Profile::Esp(_) => Carrier::Ipv4,
            Profile::Secoc(_) | Profile::Someip(_) => Carrier::Udp,
        }
    }

    /// Whether the units travel in raw IPv4 packets (ESP) rather than raw Ethernet frames.
    pub fn is_ip(self) -> bool {
        self.carrier() == Carrier::Ipv4
    }

    /// Whether the units travel in UDP datagrams (SecOC, SOME/IP).
    pub fn is_udp(self) -> bool {
        self.carrier() == Carrier::Udp
    }

    /// The UDP port of a UDP family in the experiments (0 for the others).
    pub fn udp_port(self) -> u16 {
        match self {
            Profile::Secoc(_) => SECOC_PORT,
            Profile::Someip(_) => SOMEIP_PORT,
            _ => 0,
        }
    }

    /// The EtherType of the frames on the link (raw Ethernet families; IPv4 for the others).
    pub fn ethertype(self) -> u16 {
        match self {
            Profile::IvnAe(_) => crate::wire::ivnae::ETHERTYPE,
            Profile::Macsec(_) => ETHERTYPE_MACSEC,
            Profile::Esp(_) | Profile::Secoc(_) | Profile::Someip(_) => ETHERTYPE_IPV4,
        }
    }

    /// Highest sequence number / PN / freshness value an outbound SA of the experiments can
    /// carry: 2^32 − 1 for MACsec without XPN and for ESP without ESN, 2^64 − 1 otherwise.
    pub fn max_seq(self) -> u64 {
        match self {
            Profile::Macsec(m) => m.suite.max_pn(),
            Profile::Esp(_) => u64::from(u32::MAX),
            Profile::IvnAe(_) | Profile::Secoc(_) | Profile::Someip(_) => u64::MAX,
        }
    }

    /// Whether the profile uses the 12-byte IV of a key set (IVN-AE: the per-SA IV; MACsec XPN:
    /// the salt).
    pub fn uses_iv(self) -> bool {
        match self {
            Profile::IvnAe(_) => true,
            Profile::Macsec(m) => m.suite.is_xpn(),
            Profile::Esp(_) | Profile::Secoc(_) | Profile::Someip(_) => false,
        }
    }

    /// Cipher key and MAC key lengths in bytes (HMAC keys: 32 bytes, where the MAC takes any
    /// length; ESP GCM/GMAC/ChaCha keys include the 4-byte salt).
    pub fn key_lengths(self) -> (usize, usize) {
        match self {
            Profile::IvnAe(p) => (
                p.suite.key_len().unwrap_or(0),
                if p.suite.needs_mac_key() { 32 } else { 0 },
            ),
            Profile::Macsec(m) => (m.suite.key_len(), 0),
            Profile::Esp(a) => (a.key_len(), a.auth_key_len().unwrap_or(0)),
            Profile::Secoc(a) => (a.key_len().unwrap_or(32), 0),
            Profile::Someip(p) if p.level == sip::Level::NoSec => (0, 0),
            Profile::Someip(p) => (p.alg.key_len(), 0),
        }
    }

    /// Whether a unit carries cryptographic protection at all (`plain`, `crc32` and
    /// `someip-nosec` do not).
    pub fn is_cryptographic(self) -> bool {
        match self {
            Profile::IvnAe(p) => p.level != Level::None,
            Profile::Someip(p) => p.level != sip::Level::NoSec,
            _ => true,
        }
    }

    /// The primitives a provider must implement to run this profile.
    pub fn primitives(self) -> Vec<Primitive> {
        let from = |(prims, n): ([Option<Primitive>; 2], usize)| -> Vec<Primitive> {
            prims.iter().take(n).flatten().copied().collect()
        };
        match self {
            Profile::IvnAe(p) => from(p.suite.primitives()),
            Profile::Macsec(m) => alloc::vec![Primitive::Aead(m.suite.aead())],
            Profile::Esp(a) => from(a.primitives()),
            Profile::Secoc(a) => alloc::vec![Primitive::Mac(a.mac_alg())],
            Profile::Someip(p) if p.level == sip::Level::NoSec => Vec::new(),
            Profile::Someip(p) => alloc::vec![Primitive::Aead(p.alg)],
        }
    }

    /// What determines the nonces of this profile's outbound SAs, spelled one way: two profiles
    /// with the same nonce domain, under one key and one SA identity, draw from one sequence
    /// number space (so one nonce state must serve both). The protection level does not change
    /// how an IVN-AE, MACsec or SOME/IP nonce is built, so it is not part of the domain. The
    /// domain is the suite's canonical name (`aes128-gcm`, `macsec-gcm-aes-128`,
    /// `someip-aes128-gcm`, …), which parses back to a profile of the same domain; nonce state
    /// files are keyed by it (docs/nonce-safety.md), so these strings must never change.
    pub fn nonce_domain(self) -> String {
        use alloc::format;
        use alloc::string::ToString;
        match self {
            Profile::IvnAe(p) => p.suite.to_string(),
            Profile::Macsec(m) => m.suite.profile().to_string(),
            Profile::Esp(a) => a.name().to_string(),
            Profile::Secoc(a) => a.name().to_string(),
            Profile::Someip(p) if p.level == sip::Level::NoSec => "someip-nosec".to_string(),
            Profile::Someip(p) => format!("someip-{}", p.alg.name()),
        }
    }
}

/// A [`Profile`] and the name it was given by at the edge (command line, plan, key file).
///
/// One profile has several spellings (`aes128-gcm` = `aes128-gcm/conf`, `macsec-gcm-aes-128`
/// = `macsec-gcm-aes-128/conf`, `plain` = `plain/none`), and what the reports, tables and
/// messages print is the name as the user gave it, not [`Profile`]'s canonical `Display`
/// (which spells the level of every AEAD suite: `aes128-gcm/conf`). So settings hold this:
/// the typed profile, parsed once, and the name to echo. Its `Display` is the name; two values
/// are equal when profile and name are. [`From<Profile>`] names a profile canonically.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NamedProfile {
    profile: Profile,
    name: String,
}

impl NamedProfile {
    /// The typed profile.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The name as given (what reports print).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The profile's family.
    pub fn family(&self) -> Family {
        self.profile.family()
    }

    /// The names of `profiles`, joined by `sep` (`plain, aes128-gcm`).
    pub fn join(profiles: &[NamedProfile], sep: &str) -> String {
        let mut s = String::new();
        for (i, p) in profiles.iter().enumerate() {
            if i > 0 {
                s.push_str(sep);
            }
            s.push_str(&p.name);
        }
        s
    }
}

impl From<Profile> for NamedProfile {
    fn from(profile: Profile) -> NamedProfile {
        use alloc::string::ToString;
        NamedProfile {
            profile,
            name: profile.to_string(),
        }
    }
}

impl FromStr for NamedProfile {
    type Err = ProfileError;

    fn from_str(name: &str) -> Result<NamedProfile, ProfileError> {
        Ok(NamedProfile {
            profile: name.parse()?,
            name: name.into(),
        })
    }
}

/// The name as given, formatted as a `str` is (width, fill and alignment apply: `{:<32}`).
impl fmt::Display for NamedProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.name)
    }
}

/// Compares the name as given (`profiles.iter().any(|p| p == "plain")`).
impl PartialEq<str> for NamedProfile {
    fn eq(&self, other: &str) -> bool {
        self.name == other
    }
}

/// Compares the name as given.
impl PartialEq<&str> for NamedProfile {
    fn eq(&self, other: &&str) -> bool {
        self.name == *other
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for NamedProfile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name)
    }
}

/// Parses a profile's name inside the deserializer's visit of the string, so that a format
/// that knows where each value is (toml's span) places an unknown profile's error on the
/// string itself, not on what holds it (a plan's `profiles[1]`, not `profiles`).
#[cfg(feature = "serde")]
struct NameVisitor<T>(core::marker::PhantomData<T>);

#[cfg(feature = "serde")]
impl<T: FromStr<Err = ProfileError>> serde::de::Visitor<'_> for NameVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a profile name (`ivnsec suites` lists them)")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<T, E> {
        name.parse().map_err(E::custom)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for NamedProfile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NamedProfile, D::Error> {
        d.deserialize_str(NameVisitor(core::marker::PhantomData))
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for Profile {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Profile {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Profile, D::Error> {
        d.deserialize_str(NameVisitor(core::marker::PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn every_profile_round_trips_through_its_name() {
        let mut n = 0;
        for p in Profile::all() {
            let s = p.to_string();
            assert_eq!(s.parse::<Profile>(), Ok(p), "{s}");
            n += 1;
        }
        // IVN-AE: plain, crc32, 5 AEADs × 2 levels, 5 HMACs, 30 CBC/CTR+HMAC; MACsec 4 × 2;
        // ESP 8; SecOC 2; SOME/IP 1 + 5 × 2.
        assert_eq!(n, 2 + 10 + 5 + 30 + 8 + 8 + 2 + 11);
    }

    #[test]
    fn spellings_of_one_profile_are_equal() {
        let p = |s: &str| s.parse::<Profile>().unwrap();
        assert_eq!(p("aes128-gcm"), p("aes128-gcm/conf"));
        assert_ne!(p("aes128-gcm"), p("aes128-gcm/auth"));
        assert_eq!(p("macsec-gcm-aes-128"), p("macsec-gcm-aes-128/conf"));
        assert_ne!(p("macsec-gcm-aes-128"), p("macsec-gcm-aes-128/auth"));
        assert_eq!(p("someip-aes128-gcm"), p("someip-aes128-gcm/conf"));
        // The level never changes the nonce domain.
        assert_eq!(
            p("aes128-gcm/auth").nonce_domain(),
            p("aes128-gcm").nonce_domain()
        );
        assert_eq!(
            p("macsec-gcm-aes-128/auth").nonce_domain(),
            p("macsec-gcm-aes-128").nonce_domain()
        );
        assert_ne!(
            p("aes128-gcm").nonce_domain(),
            p("someip-aes128-gcm").nonce_domain()
        );
        // Every domain is the canonical name of a profile of the same domain.
        for q in Profile::all() {
            let d = q.nonce_domain();
            assert_eq!(p(&d).nonce_domain(), d, "{q}");
        }
        assert_eq!(p("aes128-gcm/auth").nonce_domain(), "aes128-gcm");
        assert_eq!(
            p("macsec-gcm-aes-xpn-256/auth").nonce_domain(),
            "macsec-gcm-aes-xpn-256"
        );
        assert_eq!(
            p("someip-chacha20-poly1305/auth").nonce_domain(),
            "someip-chacha20-poly1305"
        );
    }

    #[test]
    fn errors_name_the_profile_and_the_family() {
        let e = |s: &str| s.parse::<Profile>().unwrap_err().to_string();
        assert_eq!(
            e("esp-foo"),
            "profile `esp-foo`: unknown ESP profile (see `ivnsec suites`)"
        );
        assert!(e("macsec-gcm-aes-128/none").contains("unknown MACsec profile"));
        assert!(e("secoc-x").contains("unknown SecOC profile"));
        assert!(e("someip-aes128-gcm/x").contains("someip-nosec"));
        assert_eq!(
            e("aes512-gcm"),
            "profile `aes512-gcm`: unknown suite (see `ivnsec suites`)"
        );
    }

    #[test]
    fn a_named_profile_keeps_the_name_it_was_given() {
        let p = |s: &str| s.parse::<NamedProfile>().unwrap();
        assert_eq!(p("aes128-gcm").profile(), p("aes128-gcm/conf").profile());
        assert_ne!(p("aes128-gcm"), p("aes128-gcm/conf"));
        assert_eq!(p("aes128-gcm").to_string(), "aes128-gcm");
        assert_eq!(p("aes128-gcm/conf").to_string(), "aes128-gcm/conf");
        assert_eq!(p("aes128-gcm").profile().to_string(), "aes128-gcm/conf");
        assert!(p("plain") == "plain");
        assert_eq!(
            NamedProfile::from(p("macsec-gcm-aes-128/conf").profile()).name(),
            "macsec-gcm-aes-128"
        );
        assert_eq!(p("esp-aes128-gcm").family(), Family::Esp);
        // Formatted as its name would be: tables pad it.
        assert_eq!(alloc::format!("[{:<12}]", p("plain")), "[plain       ]");
        assert_eq!(alloc::format!("[{:>12}]", p("crc32")), "[       crc32]");
        let e = "aes512-gcm".parse::<NamedProfile>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "profile `aes512-gcm`: unknown suite (see `ivnsec suites`)"
        );
    }

    #[test]
    fn errors_say_which_family_the_name_was_read_as() {
        let e = |s: &str| s.parse::<Profile>().unwrap_err();
        assert_eq!(e("macsec-x").family(), Family::Macsec);
        assert_eq!(e("esp-x").family(), Family::Esp);
        assert_eq!(e("secoc-x").family(), Family::Secoc);
        assert_eq!(e("someip-x").family(), Family::Someip);
        assert_eq!(e("aes512-gcm").family(), Family::IvnAe);
        assert_eq!(
            e("aes128-gcm/x").ivnae(),
            Some(&crate::suite::ProfileError::UnknownLevel)
        );
        assert_eq!(e("esp-x").ivnae(), None);
        for p in Profile::all() {
            assert_eq!(p.family().name(), p.family_name());
        }
    }

    #[test]
    fn facts_per_family() {
        let p = |s: &str| s.parse::<Profile>().unwrap();
        assert_eq!(p("macsec-gcm-aes-128").max_seq(), u64::from(u32::MAX));
        assert_eq!(p("macsec-gcm-aes-xpn-128").max_seq(), u64::MAX);
        assert!(p("macsec-gcm-aes-xpn-256").uses_iv());
        assert!(!p("macsec-gcm-aes-256").uses_iv());
        assert_eq!(p("esp-aes128-gcm").key_lengths(), (20, 0));
        assert_eq!(p("aes128-cbc-hmac-sha256").key_lengths(), (16, 32));
        assert_eq!(p("someip-nosec").key_lengths(), (0, 0));
        assert_eq!(p("esp-null-hmac-sha256").carrier(), Carrier::Ipv4);
        assert_eq!(p("secoc-cmac-aes128").udp_port(), SECOC_PORT);
        assert_eq!(p("plain").ethertype(), 0x88B5);
        assert!(p("someip-nosec").primitives().is_empty());
        assert!(!p("crc32").is_cryptographic());
        assert_eq!(p("plain"), Profile::PLAIN);
        assert_eq!(Profile::PLAIN.to_string(), "plain");
    }
}
