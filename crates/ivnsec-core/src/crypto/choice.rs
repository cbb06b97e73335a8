//! Which provider runs a profile: the one selection every caller uses.
//!
//! `portable`, `fast` and `openssl` name a provider; `auto` (the default) is the caller's
//! choice per primitive: [`select`] here takes the first provider of the caller's preference
//! list that implements every primitive the profile needs, and `ivnsec-crypto` refines that with
//! its table of measured choices per primitive and size. The list itself (which providers exist)
//! belongs to the crate that links them, `ivnsec-crypto`.

use alloc::format;
use alloc::string::String;
use core::fmt;
use core::str::FromStr;

use super::{CryptoProvider, Primitive};

/// The `--provider` choice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub enum ProviderChoice {
    /// The provider named `portable` (RustCrypto: every primitive).
    Portable,
    /// The provider named `fast`.
    Fast,
    /// The provider named `openssl` (the system's libcrypto).
    OpenSsl,
    /// The first provider of the preference list that has every primitive.
    #[default]
    Auto,
}

impl ProviderChoice {
    /// The stable name (`portable`, `fast`, `openssl`, `auto`).
    pub const fn name(self) -> &'static str {
        match self {
            ProviderChoice::Portable => "portable",
            ProviderChoice::Fast => "fast",
            ProviderChoice::OpenSsl => "openssl",
            ProviderChoice::Auto => "auto",
        }
    }
}

impl FromStr for ProviderChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "portable" => Ok(ProviderChoice::Portable),
            "fast" => Ok(ProviderChoice::Fast),
            "openssl" => Ok(ProviderChoice::OpenSsl),
            "auto" => Ok(ProviderChoice::Auto),
            _ => Err(format!(
                "unknown provider '{s}' (expected portable, fast, openssl or auto)"
            )),
        }
    }
}

impl fmt::Display for ProviderChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl serde::Serialize for ProviderChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for ProviderChoice {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ProviderChoice, D::Error> {
        let s = <alloc::string::String as serde::Deserialize>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Why no provider was selected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoProvider {
    /// The provider asked for (or `auto`).
    pub choice: ProviderChoice,
    /// What it was asked to run (a profile or suite name).
    pub what: String,
}

impl fmt::Display for NoProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.choice {
            ProviderChoice::Auto => write!(f, "no provider implements {}", self.what),
            c => write!(
                f,
                "provider '{c}' does not implement {}; use --provider portable or auto",
                self.what
            ),
        }
    }
}

impl core::error::Error for NoProvider {}

/// True when `provider` implements every primitive of `needs`.
pub fn has_all(provider: &CryptoProvider, needs: &[Primitive]) -> bool {
    needs.iter().all(|p| provider.supports(*p))
}

/// The provider for `needs` under `choice`, from `candidates` in order of preference (a named
/// choice takes the candidate of that name). `what` names the profile or suite in the error.
pub fn select(
    choice: ProviderChoice,
    needs: &[Primitive],
    candidates: &[&'static CryptoProvider],
    what: &dyn fmt::Display,
) -> Result<&'static CryptoProvider, NoProvider> {
    let found = match choice {
        ProviderChoice::Auto => candidates.iter().find(|p| has_all(p, needs)),
        named => candidates
            .iter()
            .find(|p| p.name == named.name())
            .filter(|p| has_all(p, needs)),
    };
    found.copied().ok_or_else(|| NoProvider {
        choice,
        what: format!("{what}"),
    })
}
