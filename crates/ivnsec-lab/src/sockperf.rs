//! sockperf's latency summary, as its ping-pong, under-load and playback clients print it: the
//! baselines `ivnsec validate`, `underload` and `playback` run on the same path beside ours.

use std::process::{Command, Stdio};
use std::time::Duration;

use ivnsec_net::sys::die_with_parent;
use ivnsec_net::testbed::netns_command;
use serde_json::{Map, Value, json};

use crate::pingpong::run::Mode;
use crate::site::{OpenSite, Site};

/// Strips ANSI escape sequences (sockperf colours some lines).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if d.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Reads sockperf's latency summary (ping-pong, under-load, playback): `avg-latency=X`,
/// `percentile P = X`, `<MAX>`/`<MIN> observation = X` (µs, half round trip), the observation
/// count, the `[Valid Duration]` run time and message counts, and the dropped / duplicated /
/// out-of-order message counts.
pub fn parse_sockperf(text: &str) -> Option<Value> {
    let text = strip_ansi(text);
    let mut m = Map::new();
    let num = |s: &str| s.trim().parse::<f64>().ok();
    for line in text.lines() {
        let line = line.trim_start_matches("sockperf:").trim();
        if let Some(rest) = line.strip_prefix("====> avg-latency=") {
            if let Some(v) = num(rest.split_whitespace().next().unwrap_or("")) {
                m.insert("half_rtt_mean_us".into(), json!(v));
            }
        } else if let Some(rest) = line.strip_prefix("---> percentile ") {
            let (p, v) = rest.split_once('=')?;
            let key = match p.trim() {
                "25.000" => "half_rtt_p25_us",
                "50.000" => "half_rtt_p50_us",
                "75.000" => "half_rtt_p75_us",
                "90.000" => "half_rtt_p90_us",
                "99.000" => "half_rtt_p99_us",
                "99.900" => "half_rtt_p999_us",
                "99.990" => "half_rtt_p9999_us",
                "99.999" => "half_rtt_p99999_us",
                _ => continue,
            };
            m.insert(key.into(), json!(num(v)?));
        } else if let Some(rest) = line.strip_prefix("---> <MAX> observation =") {
            m.insert("half_rtt_max_us".into(), json!(num(rest)?));
        } else if let Some(rest) = line.strip_prefix("---> <MIN> observation =") {
            m.insert("half_rtt_min_us".into(), json!(num(rest)?));
        } else if let Some(rest) = line.strip_prefix("[Valid Duration] ") {
            // `RunTime=1.991 sec; SentMessages=1901; ReceivedMessages=14`
            for part in rest.split(';') {
                let Some((k, v)) = part.split_once('=') else {
                    continue;
                };
                let v = v.trim().trim_end_matches("sec").trim();
                let key = match k.trim() {
                    "RunTime" => "valid_runtime_s",
                    "SentMessages" => "sent_messages",
                    "ReceivedMessages" => "received_messages",
                    _ => continue,
                };
                if let Some(x) = num(v) {
                    m.insert(key.into(), json!(x));
                }
            }
        } else if line.starts_with("# dropped messages") {
            // `# dropped messages = 6; # duplicated messages = 0; # out-of-order messages = 0`
            for part in line.split(';') {
                let Some((k, v)) = part.split_once('=') else {
                    continue;
                };
                let key = match k.trim().trim_start_matches('#').trim() {
                    "dropped messages" => "dropped_messages",
                    "duplicated messages" => "duplicated_messages",
                    "out-of-order messages" => "out_of_order_messages",
                    _ => continue,
                };
                if let Ok(x) = v.trim().parse::<u64>() {
                    m.insert(key.into(), json!(x));
                }
            }
        } else if let Some(rest) = line.strip_prefix("Total ") {
            if let Some(n) = rest
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
            {
                m.insert("observations".into(), json!(n));
            }
        }
    }
    m.contains_key("half_rtt_p50_us")
        .then_some(Value::Object(m))
}

/// Port of the sockperf server.
const SOCKPERF_PORT: u16 = 11111;

/// sockperf UDP ping-pong (64-byte messages) on the site's path; `None` (with a note) when
/// sockperf is missing or fails. Figures are half round trips in µs, as sockperf reports them.
pub fn pingpong_baseline(open: &OpenSite, mode: Mode, pause_ns: u64) -> Option<Value> {
    if !crate::site::baseline_tool_installed("validate", "sockperf") {
        return None;
    }
    let (server_ip, mut server, mut client) = match &open.site {
        Site::Testbed {
            state,
            initiator,
            responder,
        } => {
            let ip = state.ipv4_of(responder)?.to_string();
            (
                ip,
                netns_command(state.namespace_of(responder).ok()?, "sockperf"),
                netns_command(state.namespace_of(initiator).ok()?, "sockperf"),
            )
        }
        Site::Hosts { .. } => return None,
        Site::Loopback => (
            "127.0.0.1".to_string(),
            Command::new("sockperf"),
            Command::new("sockperf"),
        ),
    };
    let port = SOCKPERF_PORT.to_string();
    let mut srv = crate::interrupt::spawn(
        die_with_parent(&mut server)
            .args(["server", "-i", &server_ip, "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
    .ok()?;
    std::thread::sleep(Duration::from_millis(300));
    // Same pacing as our exchanges: at most one message per pause.
    let mps = 1_000_000_000u64
        .checked_div(pause_ns)
        .map_or_else(|| "max".to_string(), |m| m.max(1).to_string());
    let mut args: Vec<String> = [
        "ping-pong",
        "-i",
        &server_ip,
        "-p",
        &port,
        "-m",
        "64",
        "-t",
        "5",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(format!("--mps={mps}"));
    if mode == Mode::BusyPoll {
        args.push("--nonblocked".into());
    }
    let out = crate::interrupt::output(die_with_parent(&mut client).args(&args));
    let _ = srv.kill();
    let _ = srv.wait();
    let out = match out {
        Ok(o) if o.status.success() => o,
        Ok(o) => {
            eprintln!(
                "ivnsec validate: sockperf ping-pong failed ({}); no baseline",
                o.status
            );
            return None;
        }
        Err(e) => {
            eprintln!("ivnsec validate: sockperf ping-pong: {e}; no baseline");
            return None;
        }
    };
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let mut v = parse_sockperf(&text)?;
    if let Value::Object(m) = &mut v {
        m.insert(
            "command".into(),
            json!(format!("sockperf {}", args.join(" "))),
        );
        m.insert("path".into(), json!(open.site.transport()));
        m.insert("mode".into(), json!(mode.as_str()));
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sockperf_3_7_output() {
        // The summary block as sockperf 3.7 prints it (colour codes included).
        let text = "sockperf: \u{1b}[2;35m====> avg-latency=15.323 (std-dev=152.640)\u{1b}[0m\n\
sockperf: \u{1b}[2;35mTotal 50331 observations\u{1b}[0m; each percentile contains 503.31 observations\n\
sockperf: ---> <MAX> observation = 14931.183\n\
sockperf: ---> percentile 99.999 = 8326.162\n\
sockperf: ---> percentile 99.990 = 4753.560\n\
sockperf: ---> percentile 99.900 = 2495.313\n\
sockperf: ---> percentile 99.000 =   27.375\n\
sockperf: ---> percentile 90.000 =    7.771\n\
sockperf: ---> percentile 75.000 =    7.030\n\
sockperf: ---> percentile 50.000 =    5.898\n\
sockperf: ---> percentile 25.000 =    5.588\n\
sockperf: ---> <MIN> observation =    5.438\n";
        let v = parse_sockperf(text).unwrap();
        assert_eq!(v["half_rtt_p50_us"], json!(5.898));
        assert_eq!(v["half_rtt_p999_us"], json!(2495.313));
        assert_eq!(v["half_rtt_max_us"], json!(14931.183));
        assert_eq!(v["half_rtt_min_us"], json!(5.438));
        assert_eq!(v["half_rtt_mean_us"], json!(15.323));
        assert_eq!(v["observations"], json!(50331));
        assert!(parse_sockperf("no summary here").is_none());
    }

    /// sockperf 3.7's own under-load and playback output (tests/data/README.md says how it
    /// was made) parses into the figures it prints.
    #[test]
    fn reads_sockperf_under_load_and_playback_output() {
        let ul = include_str!("../tests/data/sockperf-3.7-under-load.txt");
        let v = parse_sockperf(ul).unwrap();
        assert_eq!(v["observations"], json!(14));
        assert_eq!(v["half_rtt_mean_us"], json!(579.593));
        assert_eq!(v["half_rtt_p50_us"], json!(12.633));
        assert_eq!(v["half_rtt_p25_us"], json!(11.782));
        assert_eq!(v["half_rtt_p75_us"], json!(51.085));
        assert_eq!(v["half_rtt_p90_us"], json!(1826.22));
        assert_eq!(v["half_rtt_p999_us"], json!(4713.349));
        assert_eq!(v["half_rtt_p99999_us"], json!(4713.349));
        assert_eq!(v["half_rtt_max_us"], json!(4713.349));
        assert_eq!(v["half_rtt_min_us"], json!(7.28));
        assert_eq!(v["valid_runtime_s"], json!(1.991));
        assert_eq!(v["sent_messages"], json!(1901.0));
        assert_eq!(v["received_messages"], json!(14.0));
        assert_eq!(v["dropped_messages"], json!(6));
        assert_eq!(v["duplicated_messages"], json!(0));
        assert_eq!(v["out_of_order_messages"], json!(0));
        let pb = include_str!("../tests/data/sockperf-3.7-playback.txt");
        let v = parse_sockperf(pb).unwrap();
        assert_eq!(v["observations"], json!(177));
        assert_eq!(v["half_rtt_p50_us"], json!(11.421));
        assert_eq!(v["half_rtt_p99_us"], json!(36180.206));
        assert_eq!(v["sent_messages"], json!(1991.0));
        assert_eq!(v["dropped_messages"], json!(23));
        // Cut before the percentiles: no summary.
        let cut = &ul[..ul.find("Total 14").unwrap()];
        assert!(parse_sockperf(cut).is_none());
    }
}
