//! The errors every command shares and the exit-code convention: 0 success, 1 a verification or
//! verdict failed, 2 usage or configuration error, 3 environment problem (missing privilege or
//! tool). Library code returns [`anyhow::Error`]s that carry a [`UsageError`] or an
//! [`EnvError`] where the cause is the user's input or the machine; the binary turns them into
//! exit codes with [`exit_code`].

use std::fmt;

/// An error that maps to exit code 2 (bad usage or configuration).
#[derive(Debug)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// An error that maps to exit code 3 (the environment lacks a privilege, a tool or room).
#[derive(Debug)]
pub struct EnvError(pub String);

impl fmt::Display for EnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EnvError {}

/// A bad value in a table of a plan: the key within the table (`frames`, `profiles[2]`) and
/// why. The plan adds the file and the table's place (`tdma[0].frames`) and makes it a usage
/// error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyError {
    pub key: String,
    pub why: String,
}

impl KeyError {
    pub fn new(key: impl Into<String>, why: impl Into<String>) -> KeyError {
        KeyError {
            key: key.into(),
            why: why.into(),
        }
    }
}

/// Shorthand for a usage error.
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(UsageError(msg.into()))
}

/// Shorthand for an environment error.
pub fn env_error(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(EnvError(msg.into()))
}

/// The net crate's error with its exit-code class kept (environment 3, usage 2); any other by
/// its message.
pub fn net_err(e: ivnsec_net::Error) -> anyhow::Error {
    match e {
        ivnsec_net::Error::Env(m) => env_error(m),
        ivnsec_net::Error::Usage(m) => usage(m),
        other => anyhow::anyhow!("{other}"),
    }
}

/// Exit code of an error: 2 for usage, 3 for environment, 1 otherwise.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.is::<UsageError>()) {
        2
    } else if e.chain().any(|c| c.is::<EnvError>()) {
        3
    } else {
        1
    }
}

/// The error of binding a listening socket at `addr` (given as `flag ADDR`): every failure of a
/// well-formed address is the host's, an environment problem (exit 3) with what to do — the
/// address in use, not an address of this host, or a privileged port. A malformed address never
/// gets here (the option's parser refuses it: exit 2). The one rule for `keyserver --listen`,
/// `--metrics`, `receive --udp` and the ESP tunnel's sockets.
pub fn bind_error(flag: &str, addr: &str, e: &std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    let fix = match e.kind() {
        ErrorKind::AddrInUse => {
            "another process listens there: stop it (`ss -lpn` shows it) or choose another port"
        }
        ErrorKind::AddrNotAvailable => {
            "that is not an address of this host: give one it has (`ip addr` lists them; \
             127.0.0.1 for this host only)"
        }
        ErrorKind::PermissionDenied => {
            "a port below 1024 needs root (CAP_NET_BIND_SERVICE): choose a port above 1023 or \
             run it as root"
        }
        _ => "choose another address or port",
    };
    env_error(format!("{flag} {addr}: {e}; {fix}"))
}

/// Parses hex (optionally `0x`-prefixed; `:`, `-`, `_` and whitespace ignored); `what` names
/// the value in the usage error.
pub fn parse_hex(what: &str, s: &str) -> anyhow::Result<Vec<u8>> {
    let s = s.trim();
    let s = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let clean: String = s
        .chars()
        .filter(|c| !matches!(c, ':' | '-' | '_') && !c.is_whitespace())
        .collect();
    if clean.len() % 2 != 0 {
        return Err(usage(format!(
            "{what}: odd number of hex digits ({})",
            clean.len()
        )));
    }
    hex::decode(&clean).map_err(|e| usage(format!("{what}: not hex: {e}")))
}

/// Parses a MAC address `aa:bb:cc:dd:ee:ff` (surrounding whitespace ignored); `what` names the
/// option in the usage error.
pub fn parse_mac(what: &str, s: &str) -> anyhow::Result<[u8; 6]> {
    ivnsec_net::topology::parse_mac(s.trim()).ok_or_else(|| {
        usage(format!(
            "{what}: `{s}` is not a MAC address (write aa:bb:cc:dd:ee:ff)"
        ))
    })
}

/// A profile name parsed at the edge (a plan table, a key file), with the name as given; an
/// unknown name is a usage error in the words of [`ivnsec_core::profile::ProfileError`].
pub fn parse_profile(name: &str) -> anyhow::Result<ivnsec_core::profile::NamedProfile> {
    name.parse()
        .map_err(|e: ivnsec_core::profile::ProfileError| usage(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_forms() {
        assert_eq!(parse_hex("k", "0x0a0B").unwrap(), vec![10, 11]);
        assert_eq!(parse_hex("k", "0a:0b 0c").unwrap(), vec![10, 11, 12]);
        assert_eq!(exit_code(&parse_hex("k", "abc").unwrap_err()), 2);
        assert_eq!(exit_code(&parse_hex("k", "zz").unwrap_err()), 2);
    }

    #[test]
    fn exit_codes_follow_the_cause() {
        assert_eq!(exit_code(&usage("x")), 2);
        assert_eq!(exit_code(&env_error("x")), 3);
        assert_eq!(exit_code(&anyhow::anyhow!("x")), 1);
        assert_eq!(exit_code(&usage("x").context("while y")), 2);
        assert_eq!(exit_code(&parse_profile("nope").unwrap_err()), 2);
    }
}
