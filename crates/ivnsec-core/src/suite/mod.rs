//! IVN-AE cipher suites and protection levels (docs/wire-ivnae.md).
//!
//! An [`IvnAeProfile`] is a suite plus a level; its textual form is the stable name used by configs,
//! plans and the CLI: `aes128-gcm/auth`, `aes256-cbc-hmac-sha256`, `plain`, ...

use core::fmt;
use core::str::FromStr;

use crate::crypto::{AeadAlg, CipherAlg, MacAlg, Primitive};

/// Hash function of an HMAC suite; the discriminant is `h` in the suite id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum HashFn {
    Md5 = 0,
    Sha1 = 1,
    Sha224 = 2,
    Sha256 = 3,
    Sha3_256 = 4,
}

impl HashFn {
    pub const ALL: [HashFn; 5] = [
        HashFn::Md5,
        HashFn::Sha1,
        HashFn::Sha224,
        HashFn::Sha256,
        HashFn::Sha3_256,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            HashFn::Md5 => "md5",
            HashFn::Sha1 => "sha1",
            HashFn::Sha224 => "sha224",
            HashFn::Sha256 => "sha256",
            HashFn::Sha3_256 => "sha3-256",
        }
    }

    pub const fn mac(self) -> MacAlg {
        match self {
            HashFn::Md5 => MacAlg::HmacMd5,
            HashFn::Sha1 => MacAlg::HmacSha1,
            HashFn::Sha224 => MacAlg::HmacSha224,
            HashFn::Sha256 => MacAlg::HmacSha256,
            HashFn::Sha3_256 => MacAlg::HmacSha3_256,
        }
    }

    const fn from_index(i: u8) -> Option<HashFn> {
        match i {
            0 => Some(HashFn::Md5),
            1 => Some(HashFn::Sha1),
            2 => Some(HashFn::Sha224),
            3 => Some(HashFn::Sha256),
            4 => Some(HashFn::Sha3_256),
            _ => None,
        }
    }

    fn from_name(s: &str) -> Option<HashFn> {
        HashFn::ALL.into_iter().find(|h| h.name() == s)
    }
}

/// Block cipher mode of an Encrypt-then-MAC suite; the discriminant is `m` in the suite id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CipherMode {
    Cbc = 0,
    Ctr = 1,
}

impl CipherMode {
    pub const fn name(self) -> &'static str {
        match self {
            CipherMode::Cbc => "cbc",
            CipherMode::Ctr => "ctr",
        }
    }
}

/// An IVN-AE suite (the `suite id` byte of the frame).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Suite {
    /// 0x00: body in clear, no tag.
    Plain,
    /// 0x01: CRC-32 over header and body: detects errors, not attacks.
    Crc32,
    /// 0x10..=0x14: an AEAD.
    Aead(AeadAlg),
    /// 0x30 + h: HMAC over header and body, body in clear.
    Hmac(HashFn),
    /// 0x40 + 0x10·k + 0x08·m + h: AES-CBC/CTR, then HMAC over header and ciphertext.
    EncThenMac {
        aes: CipherAlg,
        mode: CipherMode,
        hash: HashFn,
    },
}

impl Suite {
    /// Every suite, in id order.
    pub fn all() -> impl Iterator<Item = Suite> {
        (0u8..=0xff).filter_map(Suite::from_id)
    }

    pub const fn id(self) -> u8 {
        match self {
            Suite::Plain => 0x00,
            Suite::Crc32 => 0x01,
            Suite::Aead(a) => match a {
                AeadAlg::Aes128Gcm => 0x10,
                AeadAlg::Aes256Gcm => 0x11,
                AeadAlg::Aes128Ccm => 0x12,
                AeadAlg::Aes256Ccm => 0x13,
                AeadAlg::ChaCha20Poly1305 => 0x14,
            },
            Suite::Hmac(h) => 0x30 + h as u8,
            Suite::EncThenMac { aes, mode, hash } => {
                let k = match aes {
                    CipherAlg::Aes128 => 0,
                    CipherAlg::Aes192 => 1,
                    CipherAlg::Aes256 => 2,
                };
                0x40 + 0x10 * k + 0x08 * mode as u8 + hash as u8
            }
        }
    }

    pub const fn from_id(id: u8) -> Option<Suite> {
        Some(match id {
            0x00 => Suite::Plain,
            0x01 => Suite::Crc32,
            0x10 => Suite::Aead(AeadAlg::Aes128Gcm),
            0x11 => Suite::Aead(AeadAlg::Aes256Gcm),
            0x12 => Suite::Aead(AeadAlg::Aes128Ccm),
            0x13 => Suite::Aead(AeadAlg::Aes256Ccm),
            0x14 => Suite::Aead(AeadAlg::ChaCha20Poly1305),
            0x30..=0x34 => match HashFn::from_index(id - 0x30) {
                Some(h) => Suite::Hmac(h),
                None => return None,
            },
            0x40..=0x6f => {
                let rel = id - 0x40;
                let aes = match rel >> 4 {
                    0 => CipherAlg::Aes128,
                    1 => CipherAlg::Aes192,
                    2 => CipherAlg::Aes256,
                    _ => return None,
                };
                let mode = if rel & 0x08 == 0 {
                    CipherMode::Cbc
                } else {
                    CipherMode::Ctr
                };
                match HashFn::from_index(rel & 0x07) {
                    Some(hash) => Suite::EncThenMac { aes, mode, hash },
                    None => return None,
                }
            }
            _ => return None,
        })
    }

    /// The levels this suite can run at, the first being its default.
    pub const fn levels(self) -> &'static [Level] {
        match self {
            Suite::Plain | Suite::Crc32 => &[Level::None],
            Suite::Aead(_) => &[Level::Conf, Level::Auth],
            Suite::Hmac(_) => &[Level::Auth],
            Suite::EncThenMac { .. } => &[Level::Conf],
        }
    }

    pub const fn default_level(self) -> Level {
        // Every suite has at least one level; its first is the default.
        match self.levels() {
            [first, ..] => *first,
            [] => Level::Auth,
        }
    }

    /// True when the suite has a cipher key (`key`).
    pub const fn needs_key(self) -> bool {
        matches!(self, Suite::Aead(_) | Suite::EncThenMac { .. })
    }

    /// True when the suite has an HMAC key (`mac_key`).
    pub const fn needs_mac_key(self) -> bool {
        matches!(self, Suite::Hmac(_) | Suite::EncThenMac { .. })
    }

    /// Cipher key length, when the suite has a cipher key.
    pub const fn key_len(self) -> Option<usize> {
        match self {
            Suite::Aead(a) => Some(a.key_len()),
            Suite::EncThenMac { aes, .. } => Some(aes.key_len()),
            _ => None,
        }
    }

    /// Full tag length (before any HMAC truncation).
    pub const fn full_tag_len(self) -> usize {
        match self {
            Suite::Plain => 0,
            Suite::Crc32 => 4,
            Suite::Aead(_) => 16,
            Suite::Hmac(h) | Suite::EncThenMac { hash: h, .. } => h.mac().output_len(),
        }
    }

    /// Smallest allowed tag length: HMAC tags may be truncated to max(10, digest/2) bytes.
    pub const fn min_tag_len(self) -> usize {
        match self {
            Suite::Hmac(h) | Suite::EncThenMac { hash: h, .. } => {
                let half = h.mac().output_len() / 2;
                if half > 10 { half } else { 10 }
            }
            other => other.full_tag_len(),
        }
    }

    /// The primitives a provider must have to run this suite.
    pub fn primitives(self) -> ([Option<Primitive>; 2], usize) {
        match self {
            Suite::Plain | Suite::Crc32 => ([None, None], 0),
            Suite::Aead(a) => ([Some(Primitive::Aead(a)), None], 1),
            Suite::Hmac(h) => ([Some(Primitive::Mac(h.mac())), None], 1),
            Suite::EncThenMac { aes, hash, .. } => (
                [
                    Some(Primitive::Cipher(aes)),
                    Some(Primitive::Mac(hash.mac())),
                ],
                2,
            ),
        }
    }
}

impl fmt::Display for Suite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Suite::Plain => f.write_str("plain"),
            Suite::Crc32 => f.write_str("crc32"),
            Suite::Aead(a) => f.write_str(a.name()),
            Suite::Hmac(h) => write!(f, "hmac-{}", h.name()),
            Suite::EncThenMac { aes, mode, hash } => {
                write!(f, "{}-{}-hmac-{}", aes.name(), mode.name(), hash.name())
            }
        }
    }
}

/// Error parsing a suite or profile name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProfileError {
    UnknownSuite,
    UnknownLevel,
    /// The suite cannot run at that level (e.g. `hmac-sha256/conf`).
    LevelNotSupported {
        suite: Suite,
        level: Level,
    },
}

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProfileError::UnknownSuite => f.write_str("unknown suite"),
            ProfileError::UnknownLevel => f.write_str("unknown level (expected auth or conf)"),
            ProfileError::LevelNotSupported { suite, level } => {
                write!(f, "suite {suite} cannot run at level {level}")
            }
        }
    }
}

impl core::error::Error for ProfileError {}

impl FromStr for Suite {
    type Err = ProfileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim();
        match s {
            "plain" => return Ok(Suite::Plain),
            "crc32" => return Ok(Suite::Crc32),
            _ => {}
        }
        if let Some(a) = AeadAlg::ALL.into_iter().find(|a| a.name() == s) {
            return Ok(Suite::Aead(a));
        }
        if let Some(h) = s.strip_prefix("hmac-").and_then(HashFn::from_name) {
            return Ok(Suite::Hmac(h));
        }
        // aes{128,192,256}-{cbc,ctr}-hmac-<hash>
        let (aes, rest) = s.split_once('-').ok_or(ProfileError::UnknownSuite)?;
        let aes = CipherAlg::ALL
            .into_iter()
            .find(|c| c.name() == aes)
            .ok_or(ProfileError::UnknownSuite)?;
        let (mode, rest) = rest.split_once('-').ok_or(ProfileError::UnknownSuite)?;
        let mode = match mode {
            "cbc" => CipherMode::Cbc,
            "ctr" => CipherMode::Ctr,
            _ => return Err(ProfileError::UnknownSuite),
        };
        let hash = rest
            .strip_prefix("hmac-")
            .and_then(HashFn::from_name)
            .ok_or(ProfileError::UnknownSuite)?;
        Ok(Suite::EncThenMac { aes, mode, hash })
    }
}

/// Protection level. On the wire, flag 0x01 is set exactly for [`Level::Conf`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// `plain` and `crc32`: no cryptographic protection.
    None,
    /// Authenticated, body in clear.
    Auth,
    /// Authenticated and encrypted.
    Conf,
}

impl Level {
    pub const fn name(self) -> &'static str {
        match self {
            Level::None => "none",
            Level::Auth => "auth",
            Level::Conf => "conf",
        }
    }

    pub const fn conf_flag(self) -> bool {
        matches!(self, Level::Conf)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A suite at a level: what an SA is configured with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IvnAeProfile {
    pub suite: Suite,
    pub level: Level,
}

impl IvnAeProfile {
    pub fn new(suite: Suite, level: Level) -> Result<IvnAeProfile, ProfileError> {
        if suite.levels().contains(&level) {
            Ok(IvnAeProfile { suite, level })
        } else {
            Err(ProfileError::LevelNotSupported { suite, level })
        }
    }

    /// Every profile: each suite at each of its levels.
    pub fn all() -> impl Iterator<Item = IvnAeProfile> {
        Suite::all().flat_map(|suite| {
            suite
                .levels()
                .iter()
                .map(move |&level| IvnAeProfile { suite, level })
        })
    }
}

impl From<Suite> for IvnAeProfile {
    fn from(suite: Suite) -> IvnAeProfile {
        IvnAeProfile {
            suite,
            level: suite.default_level(),
        }
    }
}

impl fmt::Display for IvnAeProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.suite.levels().len() > 1 {
            write!(f, "{}/{}", self.suite, self.level)
        } else {
            write!(f, "{}", self.suite)
        }
    }
}

impl FromStr for IvnAeProfile {
    type Err = ProfileError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().split_once('/') {
            None => Ok(IvnAeProfile::from(s.parse::<Suite>()?)),
            Some((suite, level)) => {
                let suite: Suite = suite.parse()?;
                let level = match level {
                    "auth" => Level::Auth,
                    "conf" => Level::Conf,
                    "none" => Level::None,
                    _ => return Err(ProfileError::UnknownLevel),
                };
                IvnAeProfile::new(suite, level)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn ids_round_trip_and_names_parse() {
        let mut n = 0;
        for s in Suite::all() {
            assert_eq!(Suite::from_id(s.id()), Some(s));
            assert_eq!(s.to_string().parse::<Suite>(), Ok(s));
            n += 1;
        }
        // plain, crc32, 5 AEAD, 5 HMAC, 3 key sizes × 2 modes × 5 hashes.
        assert_eq!(n, 2 + 5 + 5 + 30);
    }

    #[test]
    fn id_formula_from_the_spec() {
        // 0x40 + 0x10·k + 0x08·m + h
        let s: Suite = "aes256-ctr-hmac-sha3-256".parse().unwrap();
        assert_eq!(s.id(), 0x40 + 0x20 + 0x08 + 4);
        let s: Suite = "aes128-cbc-hmac-md5".parse().unwrap();
        assert_eq!(s.id(), 0x40);
        assert_eq!("hmac-sha256".parse::<Suite>().unwrap().id(), 0x33);
        assert_eq!(Suite::from_id(0x35), None);
        assert_eq!(Suite::from_id(0x45), None);
        assert_eq!(Suite::from_id(0x70), None);
    }

    #[test]
    fn profiles_parse_with_levels() {
        let p: IvnAeProfile = "aes128-gcm/auth".parse().unwrap();
        assert_eq!(p.level, Level::Auth);
        assert_eq!(
            "aes128-gcm".parse::<IvnAeProfile>().unwrap().level,
            Level::Conf
        );
        assert!(matches!(
            "hmac-sha1/conf".parse::<IvnAeProfile>(),
            Err(ProfileError::LevelNotSupported { .. })
        ));
        assert_eq!(
            "aes512-gcm".parse::<IvnAeProfile>(),
            Err(ProfileError::UnknownSuite)
        );
        assert_eq!(
            "aes128-gcm/x".parse::<IvnAeProfile>(),
            Err(ProfileError::UnknownLevel)
        );
        for p in IvnAeProfile::all() {
            assert_eq!(p.to_string().parse::<IvnAeProfile>(), Ok(p));
        }
    }

    #[test]
    fn truncation_bounds() {
        assert_eq!(Suite::Hmac(HashFn::Md5).min_tag_len(), 10);
        assert_eq!(Suite::Hmac(HashFn::Sha1).min_tag_len(), 10);
        assert_eq!(Suite::Hmac(HashFn::Sha256).min_tag_len(), 16);
        assert_eq!(Suite::Aead(AeadAlg::Aes128Gcm).min_tag_len(), 16);
    }
}
