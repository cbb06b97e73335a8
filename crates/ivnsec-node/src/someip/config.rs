//! The TOML configuration of `ivnsec someip serve|call` (docs/someip.md). Every error names the
//! file, the key and the problem, and maps to exit code 2. The file holds keys: it is read with a
//! size bound, and the keys are kept in buffers that are wiped when dropped and never printed.

use std::fmt;
use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use anyhow::Result;
use ivnsec_core::crypto::AeadAlg;
use ivnsec_core::sa::someip::{
    DEFAULT_MAX_SENDERS, DEFAULT_WINDOW, Level, SALT_LEN, suite_from_name,
};
use ivnsec_core::wire::someip_sd::SD_PORT;
use ivnsec_core::wire::someip_tp::MAX_SEGMENT_DATA;
use serde::Deserialize;

use crate::error::usage;
use ivnsec_crypto::ProviderChoice;
use zeroize::Zeroizing;

/// Largest configuration file read (a configuration is a few kilobytes).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    node: RawNode,
    #[serde(default)]
    sd: Option<RawSd>,
    #[serde(default, rename = "service")]
    services: Vec<RawService>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNode {
    address: String,
    #[serde(default)]
    udp_port: u16,
    #[serde(default)]
    tcp_port: Option<u16>,
    #[serde(default = "default_client_id")]
    client_id: u16,
    #[serde(default = "default_max_message")]
    max_message: usize,
    #[serde(default = "default_segment")]
    tp_segment: usize,
    #[serde(default = "default_udp_max")]
    udp_max_payload: usize,
    #[serde(default)]
    provider: Option<String>,
}

fn default_client_id() -> u16 {
    0x0101
}
fn default_max_message() -> usize {
    1 << 20
}
fn default_segment() -> usize {
    MAX_SEGMENT_DATA
}
fn default_udp_max() -> usize {
    1400
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSd {
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    multicast: Option<String>,
    #[serde(default = "default_sd_port")]
    port: u16,
    #[serde(default)]
    peers: Vec<String>,
    #[serde(default = "default_offer_ms")]
    offer_interval_ms: u64,
    #[serde(default = "default_ttl")]
    ttl: u32,
    #[serde(default = "default_find_ms")]
    find_timeout_ms: u64,
}

fn yes() -> bool {
    true
}
fn default_sd_port() -> u16 {
    SD_PORT
}
fn default_offer_ms() -> u64 {
    1000
}
fn default_ttl() -> u32 {
    3
}
fn default_find_ms() -> u64 {
    5000
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawService {
    id: u16,
    #[serde(default = "one16")]
    instance: u16,
    #[serde(default = "one8")]
    major: u8,
    #[serde(default)]
    minor: u32,
    #[serde(default = "default_level")]
    level: String,
    #[serde(default)]
    suite: Option<String>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default = "one8")]
    key_id: u8,
    #[serde(default)]
    salt: Option<String>,
    #[serde(default = "default_window")]
    replay_window: u32,
    #[serde(default = "default_senders")]
    max_senders: usize,
    #[serde(default)]
    echo_method: Option<u16>,
    #[serde(default)]
    event: Option<u16>,
    #[serde(default = "one16")]
    eventgroup: u16,
    #[serde(default = "default_period")]
    event_period_ms: u64,
    #[serde(default = "default_event_size")]
    event_payload_size: usize,
}

fn one16() -> u16 {
    1
}
fn one8() -> u8 {
    1
}
fn default_level() -> String {
    "nosec".into()
}
fn default_window() -> u32 {
    DEFAULT_WINDOW
}
fn default_senders() -> usize {
    DEFAULT_MAX_SENDERS
}
fn default_period() -> u64 {
    100
}
fn default_event_size() -> usize {
    64
}

/// The node: where this side listens and how big messages may get.
#[derive(Clone, Debug)]
pub struct Node {
    pub address: Ipv4Addr,
    pub udp_port: u16,
    pub tcp_port: Option<u16>,
    pub client_id: u16,
    /// Largest message (TCP framing and TP reassembly bound).
    pub max_message: usize,
    /// Data bytes per SOME/IP-TP segment (multiple of 16).
    pub tp_segment: usize,
    /// Largest SOME/IP payload sent in one datagram without TP.
    pub udp_max_payload: usize,
    pub provider: ProviderChoice,
}

/// Service discovery settings.
#[derive(Clone, Debug)]
pub struct Sd {
    pub enabled: bool,
    pub multicast: Option<Ipv4Addr>,
    pub port: u16,
    pub peers: Vec<Ipv4Addr>,
    pub offer_interval_ms: u64,
    pub ttl: u32,
    pub find_timeout_ms: u64,
}

impl Default for Sd {
    fn default() -> Self {
        Sd {
            enabled: false,
            multicast: None,
            port: SD_PORT,
            peers: Vec::new(),
            offer_interval_ms: default_offer_ms(),
            ttl: default_ttl(),
            find_timeout_ms: default_find_ms(),
        }
    }
}

/// One service and its security.
#[derive(Clone)]
pub struct Service {
    pub id: u16,
    pub instance: u16,
    pub major: u8,
    pub minor: u32,
    pub level: Level,
    pub suite: AeadAlg,
    /// Empty under `nosec`; wiped when dropped, never printed.
    pub key: Zeroizing<Vec<u8>>,
    pub key_id: u8,
    pub salt: [u8; SALT_LEN],
    pub replay_window: u32,
    pub max_senders: usize,
    pub echo_method: Option<u16>,
    pub event: Option<u16>,
    pub eventgroup: u16,
    pub event_period_ms: u64,
    pub event_payload_size: usize,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("id", &self.id)
            .field("instance", &self.instance)
            .field("major", &self.major)
            .field("minor", &self.minor)
            .field("level", &self.level)
            .field("suite", &self.suite)
            .field("key", &format_args!("<{} bytes>", self.key.len()))
            .field("key_id", &self.key_id)
            .field("echo_method", &self.echo_method)
            .field("event", &self.event)
            .field("eventgroup", &self.eventgroup)
            .finish_non_exhaustive()
    }
}

/// A checked configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub path: PathBuf,
    pub node: Node,
    pub sd: Sd,
    pub services: Vec<Service>,
}

impl Config {
    pub fn service(&self, id: u16) -> Option<&Service> {
        self.services.iter().find(|s| s.id == id)
    }
}

/// Reads and checks a configuration file (at most [`MAX_CONFIG_BYTES`]).
pub fn load(path: &Path) -> Result<Config> {
    let file = path.display();
    let cannot = |e: std::io::Error| usage(format!("{file}: cannot read: {e}"));
    let f = std::fs::File::open(path).map_err(cannot)?;
    let mut text = Zeroizing::new(String::new());
    f.take(MAX_CONFIG_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() as u64 > MAX_CONFIG_BYTES {
        return Err(usage(format!(
            "{file}: more than {MAX_CONFIG_BYTES} bytes; is this the right file?"
        )));
    }
    parse(path, &text)
}

fn hex_bytes(file: &str, key: &str, s: &str) -> Result<Zeroizing<Vec<u8>>> {
    let clean: Zeroizing<String> = Zeroizing::new(
        s.chars()
            .filter(|c| !c.is_whitespace() && *c != ':')
            .collect(),
    );
    let clean = clean.strip_prefix("0x").unwrap_or(&clean);
    hex::decode(clean)
        .map(Zeroizing::new)
        .map_err(|e| usage(format!("{file}: {key}: not hex: {e}")))
}

/// Parses configuration text; `path` is only used in messages.
pub fn parse(path: &Path, text: &str) -> Result<Config> {
    let file = path.display().to_string();
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let msg = e.message().trim().to_string();
        let at = e
            .span()
            .map(|s| {
                let line = text[..s.start.min(text.len())].matches('\n').count() + 1;
                format!(" (line {line})")
            })
            .unwrap_or_default();
        usage(format!("{file}{at}: {msg}"))
    })?;
    let err = |key: &str, problem: String| usage(format!("{file}: {key}: {problem}"));

    let node = parse_node(raw.node, &err)?;
    let sd = parse_sd(raw.sd, &err)?;
    let mut services = Vec::new();
    for (i, s) in raw.services.into_iter().enumerate() {
        let service = parse_service(i, s, &services, &node, &file, &err)?;
        services.push(service);
    }
    Ok(Config {
        path: path.to_path_buf(),
        node,
        sd,
        services,
    })
}

/// How `parse` words a problem: the file, the key, the problem (a usage error).
type KeyErr<'a> = dyn Fn(&str, String) -> anyhow::Error + 'a;

/// `[node]`, checked.
fn parse_node(n: RawNode, err: &KeyErr<'_>) -> Result<Node> {
    let address: Ipv4Addr = n.address.parse().map_err(|_| {
        err(
            "node.address",
            format!("'{}' is not an IPv4 address", n.address),
        )
    })?;
    if n.max_message < 64 || n.max_message > 64 << 20 {
        return Err(err(
            "node.max_message",
            format!("{} is outside 64..=67108864 bytes", n.max_message),
        ));
    }
    if n.tp_segment < 16 || n.tp_segment % 16 != 0 || n.tp_segment > 1424 {
        return Err(err(
            "node.tp_segment",
            format!("{} must be a multiple of 16 in 16..=1424", n.tp_segment),
        ));
    }
    if n.udp_max_payload < 32 || n.udp_max_payload > 65_000 {
        return Err(err(
            "node.udp_max_payload",
            format!("{} is outside 32..=65000", n.udp_max_payload),
        ));
    }
    let provider = match &n.provider {
        None => ProviderChoice::Auto,
        Some(p) => p.parse().map_err(|e: String| err("node.provider", e))?,
    };
    Ok(Node {
        address,
        udp_port: n.udp_port,
        tcp_port: n.tcp_port,
        client_id: n.client_id,
        max_message: n.max_message,
        tp_segment: n.tp_segment,
        udp_max_payload: n.udp_max_payload,
        provider,
    })
}

/// `[sd]`, checked (the defaults without one).
fn parse_sd(sd: Option<RawSd>, err: &KeyErr<'_>) -> Result<Sd> {
    Ok(match sd {
        None => Sd::default(),
        Some(s) => {
            let multicast = match &s.multicast {
                None => None,
                Some(m) => {
                    let a: Ipv4Addr = m.parse().map_err(|_| {
                        err("sd.multicast", format!("'{m}' is not an IPv4 address"))
                    })?;
                    if !a.is_multicast() {
                        return Err(err(
                            "sd.multicast",
                            format!("{a} is not a multicast address"),
                        ));
                    }
                    Some(a)
                }
            };
            let peers = s
                .peers
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    p.parse::<Ipv4Addr>().map_err(|_| {
                        err(
                            &format!("sd.peers[{i}]"),
                            format!("'{p}' is not an IPv4 address"),
                        )
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            if s.ttl == 0 || s.ttl > 0xFF_FFFF {
                return Err(err(
                    "sd.ttl",
                    format!("{} is outside 1..=16777215 seconds", s.ttl),
                ));
            }
            if s.offer_interval_ms == 0 {
                return Err(err("sd.offer_interval_ms", "must be at least 1".into()));
            }
            Sd {
                enabled: s.enabled,
                multicast,
                port: s.port,
                peers,
                offer_interval_ms: s.offer_interval_ms,
                ttl: s.ttl,
                find_timeout_ms: s.find_timeout_ms,
            }
        }
    })
}

/// `[[service]]` number `i`, checked against the services before it (`before`) and the node.
fn parse_service(
    i: usize,
    s: RawService,
    before: &[Service],
    node: &Node,
    file: &str,
    err: &KeyErr<'_>,
) -> Result<Service> {
    let k = |f: &str| format!("service[{i}].{f}");
    if before.iter().any(|o: &Service| o.id == s.id) {
        return Err(err(
            &k("id"),
            format!("service 0x{:04x} is configured twice", s.id),
        ));
    }
    if s.id == 0xFFFF || s.id == 0 {
        return Err(err(&k("id"), format!("0x{:04x} is reserved", s.id)));
    }
    let level = Level::from_name(&s.level).ok_or_else(|| {
        err(
            &k("level"),
            format!("unknown level '{}' (expected nosec, auth or conf)", s.level),
        )
    })?;
    let suite = match &s.suite {
        None => AeadAlg::Aes128Gcm,
        Some(name) => suite_from_name(name).ok_or_else(|| {
            err(
                &k("suite"),
                format!(
                    "unknown suite '{name}' (expected aes128-gcm, aes256-gcm, aes128-ccm, aes256-ccm or chacha20-poly1305)"
                ),
            )
        })?,
    };
    let key = service_key(
        s.key.map(Zeroizing::new),
        level,
        suite,
        file,
        &k("key"),
        err,
    )?;
    let mut salt = [0u8; SALT_LEN];
    if let Some(h) = &s.salt {
        let b = hex_bytes(file, &k("salt"), h)?;
        if b.len() != SALT_LEN {
            return Err(err(
                &k("salt"),
                format!("needs {SALT_LEN} bytes, got {}", b.len()),
            ));
        }
        salt.copy_from_slice(&b);
    }
    // The SOME/IP nonce is (salt XOR sender) ‖ counter: no service ID, no key id. Two
    // services of one side under one suite, key and salt would count separately in one nonce
    // space (docs/nonce-safety.md, "the one rule").
    if level != Level::NoSec
        && let Some((j, o)) = before.iter().enumerate().find(|(_, o)| {
            o.level != Level::NoSec && o.suite == suite && o.salt == salt && *o.key == *key
        })
    {
        return Err(err(
            &k("key"),
            format!(
                "the same suite, key and salt as service[{j}] (0x{:04x}): the SOME/IP nonce \
                 is (salt XOR sender) ‖ counter, without the service ID, so the two services \
                 would send the same nonces under this key; give each service its own key",
                o.id
            ),
        ));
    }
    if s.replay_window > ivnsec_core::sa::replay::MAX_WINDOW {
        return Err(err(
            &k("replay_window"),
            format!(
                "{} exceeds {}",
                s.replay_window,
                ivnsec_core::sa::replay::MAX_WINDOW
            ),
        ));
    }
    if s.max_senders == 0 {
        return Err(err(&k("max_senders"), "must be at least 1".into()));
    }
    if s.event_period_ms == 0 {
        return Err(err(&k("event_period_ms"), "must be at least 1".into()));
    }
    if s.event_payload_size > node.max_message.saturating_sub(64) {
        return Err(err(
            &k("event_payload_size"),
            format!(
                "{} exceeds node.max_message minus headers",
                s.event_payload_size
            ),
        ));
    }
    if let Some(e) = s.event
        && e & 0x8000 == 0
    {
        return Err(err(
            &k("event"),
            format!("event IDs have the top bit set (0x8000..), got 0x{e:04x}"),
        ));
    }
    if let Some(m) = s.echo_method
        && m & 0x8000 != 0
    {
        return Err(err(
            &k("echo_method"),
            format!("method IDs are below 0x8000, got 0x{m:04x}"),
        ));
    }
    Ok(Service {
        id: s.id,
        instance: s.instance,
        major: s.major,
        minor: s.minor,
        level,
        suite,
        key,
        key_id: s.key_id,
        salt,
        replay_window: s.replay_window,
        max_senders: s.max_senders,
        echo_method: s.echo_method,
        event: s.event,
        eventgroup: s.eventgroup,
        event_period_ms: s.event_period_ms,
        event_payload_size: s.event_payload_size,
    })
}

/// A service's key: none for `nosec`, else hex of exactly the suite's key length.
fn service_key(
    key_hex: Option<Zeroizing<String>>,
    level: Level,
    suite: AeadAlg,
    file: &str,
    key_name: &str,
    err: &KeyErr<'_>,
) -> Result<Zeroizing<Vec<u8>>> {
    Ok(match (&key_hex, level) {
        (None, Level::NoSec) => Zeroizing::new(Vec::new()),
        (Some(_), Level::NoSec) => {
            return Err(err(key_name, "level nosec takes no key".into()));
        }
        (None, _) => {
            return Err(err(
                key_name,
                format!(
                    "level {level} needs a {}-byte key (hex) for {}",
                    suite.key_len(),
                    suite.name()
                ),
            ));
        }
        (Some(h), _) => {
            let key = hex_bytes(file, key_name, h)?;
            if key.len() != suite.key_len() {
                return Err(err(
                    key_name,
                    format!(
                        "{} needs a {}-byte key, got {} bytes",
                        suite.name(),
                        suite.key_len(),
                        key.len()
                    ),
                ));
            }
            key
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit_code;

    fn p(text: &str) -> Result<Config> {
        parse(Path::new("t.toml"), text)
    }

    fn msg(text: &str) -> String {
        let e = p(text).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        e.to_string()
    }

    const OK: &str = r#"
[node]
address = "127.0.0.1"
udp_port = 30509
[sd]
multicast = "224.224.224.245"
[[service]]
id = 0x1234
level = "conf"
suite = "aes256-gcm"
key = "000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f"
echo_method = 1
event = 0x8001
"#;

    #[test]
    fn good_config() {
        let c = p(OK).unwrap();
        assert_eq!(c.services[0].id, 0x1234);
        assert_eq!(c.services[0].level, Level::Conf);
        assert_eq!(c.services[0].suite, AeadAlg::Aes256Gcm);
        assert_eq!(c.sd.multicast, Some(Ipv4Addr::new(224, 224, 224, 245)));
        assert!(c.sd.enabled);
    }

    #[test]
    fn errors_name_file_key_and_problem() {
        assert_eq!(
            msg(&OK.replace("aes256-gcm", "aes128-gcm")),
            "t.toml: service[0].key: aes128-gcm needs a 16-byte key, got 32 bytes"
        );
        assert_eq!(
            msg(&OK.replace("\"conf\"", "\"secret\"")),
            "t.toml: service[0].level: unknown level 'secret' (expected nosec, auth or conf)"
        );
        assert_eq!(
            msg(&OK.replace("127.0.0.1", "localhost")),
            "t.toml: node.address: 'localhost' is not an IPv4 address"
        );
        assert_eq!(
            msg(&OK.replace("event = 0x8001", "event = 1")),
            "t.toml: service[0].event: event IDs have the top bit set (0x8000..), got 0x0001"
        );
        assert_eq!(
            msg(&OK.replace("224.224.224.245", "10.0.0.1")),
            "t.toml: sd.multicast: 10.0.0.1 is not a multicast address"
        );
        let m = msg(&OK.replace("udp_port", "udp_prot"));
        assert!(
            m.starts_with("t.toml (line 4): unknown field `udp_prot`"),
            "{m}"
        );
        let m = msg(&OK.replace("id = 0x1234", "id = 0x12345"));
        assert!(m.starts_with("t.toml (line 8)"), "{m}");
        assert_eq!(
            msg(&format!("{OK}\n[[service]]\nid = 0x1234\n")),
            "t.toml: service[1].id: service 0x1234 is configured twice"
        );
        assert_eq!(
            msg(&OK.replace("key = ", "salt = \"01\"\nkey = ")),
            "t.toml: service[0].salt: needs 4 bytes, got 1"
        );
    }

    /// Two secured services under one suite, key and salt would share a nonce space (the nonce
    /// has no service ID): refused. Another suite, salt or key, or a `nosec` service, is fine.
    #[test]
    fn two_services_under_one_key_and_salt_are_refused() {
        let second = |extra: &str| {
            format!(
                "{OK}[[service]]\nid = 0x1235\nlevel = \"auth\"\nsuite = \"aes256-gcm\"\n\
                 key = \"000102030405060708090a0b0c0d0e0f000102030405060708090a0b0c0d0e0f\"\n{extra}"
            )
        };
        assert_eq!(
            msg(&second("")),
            "t.toml: service[1].key: the same suite, key and salt as service[0] (0x1234): the \
             SOME/IP nonce is (salt XOR sender) ‖ counter, without the service ID, so the two \
             services would send the same nonces under this key; give each service its own key"
        );
        assert_eq!(
            p(&second("salt = \"00000001\"\n")).unwrap().services.len(),
            2
        );
        let other_suite = second("").replace(
            "level = \"auth\"\nsuite = \"aes256-gcm\"",
            "level = \"auth\"\nsuite = \"chacha20-poly1305\"",
        );
        assert_eq!(p(&other_suite).unwrap().services.len(), 2);
        // The first service's key changed (the two key strings are the same text).
        let other_key = second("").replacen("0e0f\"\n", "0e0e\"\n", 1);
        assert_eq!(p(&other_key).unwrap().services.len(), 2);
    }

    #[test]
    fn keys_are_not_printed() {
        let c = p(OK).unwrap();
        assert_eq!(c.services[0].key.len(), 32);
        let debug = format!("{c:?}");
        assert!(debug.contains("<32 bytes>"), "{debug}");
        assert!(
            !debug.contains("0, 1, 2, 3") && !debug.contains("000102"),
            "{debug}"
        );
    }

    #[test]
    fn files_are_read_with_a_bound() {
        let dir = std::env::temp_dir().join(format!("ivnsec-someip-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ok = dir.join("ok.toml");
        std::fs::write(&ok, OK).unwrap();
        assert_eq!(load(&ok).unwrap().services.len(), 1);
        let big = dir.join("big.toml");
        let mut text = OK.to_string();
        text.push_str(&"#".repeat(MAX_CONFIG_BYTES as usize));
        std::fs::write(&big, text).unwrap();
        let e = load(&big).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("more than 1048576 bytes"), "{e}");
        let e = load(&dir.join("missing.toml")).unwrap_err();
        assert_eq!(exit_code(&e), 2);
        assert!(e.to_string().contains("missing.toml: cannot read"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
