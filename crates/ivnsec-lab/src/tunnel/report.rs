//! Seed 004's tunnel experiments' report section: `[[tunnel_ping]]` (ping round trip by size,
//! plain / ESP tunnel / MACsec) and `[[tunnel_bulk]]` (iperf3 TCP and scp), with what seed 004
//! (Q. Delhaye, ULB 2015, chapters 4 and 5) reports beside them. The seed's latency and
//! file-transfer results are bar charts (Figures 5.2 to 5.8) whose values the text we hold
//! does not carry, so the seed column says they are missing instead of inventing figures.

use std::fmt::Write as _;

use crate::experiment::{Experiment, Holds, Tables};
use crate::table::{Table, note};
use crate::tunnel::{BulkReport, PingReport};

/// The seed's column for every ping row.
pub const SEED_PING: &str = "missing (Fig. 5.3, 5.4: values not in the text)";

/// The seed's column for every bulk row.
pub const SEED_BULK: &str = "missing (Fig. 5.5-5.8: values not in the text)";

/// Under the ping table.
pub const PING_NOTE: &str = "Round trips of `ping -s SIZE` from ecu1 to ecu2 of a `pair` \
testbed (veth and a Linux bridge, MTU 1500), plain, through `ivnsec esp up` (TUN, ESP tunnel \
mode over IPv4) and through `ivnsec macsec up` (TAP, static keys), for each size \
the paths in turn, `count` pings each; sizes above the path MTU fragment. Seed 004 pinged 1000 times per \
size in flood mode (Fig. 5.3) from an x86 VM to a dual Cortex-A9 at 800 MHz with its cipher on \
a Cyclone V FPGA (BA411E), across 100 Mb/s switches (§4.1), through strongSwan (kernel XFRM) \
and OpenVPN; ours is userspace ESP with AES-NI on a shared 2-CPU VM, both ends on one \
machine, so a crossing costs wake-ups, not wire time. Seed 004's Fig. 5.3 (IPsec ping min/avg/max by size) \
and Fig. 5.4 (averages of IPsec and OpenVPN, aes-256-cbc with sha-256) are charts whose values \
the text we hold does not carry: the seed column says missing, and only the shape (latency \
growing with size, fragments costing more) can be compared.";

/// Under the bulk table.
pub const BULK_NOTE: &str = "iperf3 TCP goodput (what the receiver got) and a file of random \
bytes copied with scp (`scp -O`, OpenSSH's default cipher: file bytes / wall time including \
the SSH handshake), plain and through `ivnsec esp up`; scp over plain is OpenSSH's own \
encryption, scp over esp both. CPU is the whole machine's busy % during the transfer (sender, \
receiver and both tunnels share it; other load on the machine counts too). Seed 004 copied a 128 MB random file (§4.3) over SSH, FTP \
over OpenVPN and FTP over IPsec (ESP tunnel mode, also null/null to see the encapsulation \
alone) at 100 Mb/s with the board's CPU (Fig. 5.5 SSH, 5.6 FTP over OpenVPN, 5.7 FTP \
over IPsec, 5.8 the comparison); those charts' values are not in the text we hold, so the \
seed column says missing. Our path \
has no 100 Mb/s cap, so goodput here is CPU-bound, as the seed's GCM runs were (§5.3.3).";

fn path_label(path: &str, esp_profile: &str) -> String {
    match path {
        "esp" => format!("esp ({esp_profile})"),
        "macsec" => "macsec (macsec-gcm-aes-128)".to_string(),
        p => p.to_string(),
    }
}

/// One row per size × path.
pub fn ping_table(reports: &[PingReport]) -> Table {
    let mut t = Table {
        head: [
            "bytes",
            "path",
            "sent",
            "received",
            "p50 µs",
            "p99 µs",
            "p99.9 µs",
            "max µs",
            "seed 004",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: Vec::new(),
    };
    for r in reports {
        for row in &r.rows {
            t.rows.push(vec![
                row.size.to_string(),
                path_label(&row.path, r.config.esp_profile.name()),
                row.sent.to_string(),
                row.received.to_string(),
                format!("{:.1}", row.p50_us),
                format!("{:.1}", row.p99_us),
                format!("{:.1}", row.p999_us),
                format!("{:.1}", row.max_us),
                SEED_PING.to_string(),
            ]);
        }
    }
    t
}

/// One row per tool × path, with goodput against the same tool's plain run.
pub fn bulk_table(reports: &[BulkReport]) -> Table {
    let mut t = Table {
        head: [
            "tool",
            "path",
            "goodput Mb/s",
            "× plain",
            "CPU %",
            "MiB",
            "s",
            "seed 004",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
        rows: Vec::new(),
    };
    for r in reports {
        for row in &r.rows {
            let plain = r
                .rows
                .iter()
                .find(|p| p.tool == row.tool && p.path == "plain")
                .map(|p| p.goodput_mbps);
            let ratio = match plain {
                Some(p) if p > 0.0 => format!("{:.2}", row.goodput_mbps / p),
                _ => "—".to_string(),
            };
            t.rows.push(vec![
                row.tool.clone(),
                path_label(&row.path, r.config.esp_profile.name()),
                format!("{:.1}", row.goodput_mbps),
                ratio,
                format!("{:.1}", row.cpu_pct),
                format!("{:.1}", row.bytes as f64 / 1048576.0),
                format!("{:.2}", row.seconds),
                SEED_BULK.to_string(),
            ]);
        }
    }
    t
}

/// `[[tunnel_ping]]` and `[[tunnel_bulk]]`: ping by size and bulk transfer through the
/// tunnels, beside seed 004 §5.2 and §5.3.
pub struct TunnelExperiment;

impl Tables for TunnelExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["tunnel_ping", "tunnel_bulk"]
    }
}

impl<P: Holds<PingReport> + Holds<BulkReport>> Experiment<P> for TunnelExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        let ping: &[PingReport] = page.results();
        if !ping.is_empty() {
            s.push_str("\n## Ping through tunnels by packet size (seed 004 §5.2)\n\n");
            s.push_str(&ping_table(ping).markdown());
            let _ = writeln!(s, "\n{PING_NOTE}");
        }
        let bulk: &[BulkReport] = page.results();
        if !bulk.is_empty() {
            s.push_str("\n## Bulk transfer through tunnels (seed 004 §5.3)\n\n");
            s.push_str(&bulk_table(bulk).markdown());
            let _ = writeln!(s, "\n{BULK_NOTE}");
        }
    }

    fn html(&self, page: &P, s: &mut String) {
        let ping: &[PingReport] = page.results();
        if !ping.is_empty() {
            s.push_str(
                "<h2 id=\"tunnel-ping\">Ping through tunnels by packet size (seed 004 §5.2)</h2>\n",
            );
            s.push_str(&ping_table(ping).html());
            note(s, PING_NOTE);
        }
        let bulk: &[BulkReport] = page.results();
        if !bulk.is_empty() {
            s.push_str(
                "<h2 id=\"tunnel-bulk\">Bulk transfer through tunnels (seed 004 §5.3)</h2>\n",
            );
            s.push_str(&bulk_table(bulk).html());
            note(s, BULK_NOTE);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tunnel::{BulkConfig, BulkRow, PingConfig, PingRow};

    #[test]
    fn tables_carry_the_rows_and_the_seed_column() {
        let cfg: PingConfig = toml::from_str("").unwrap();
        let p = PingReport {
            config: cfg,
            rows: vec![PingRow {
                path: "esp".into(),
                size: 2000,
                sent: 10,
                received: 10,
                p50_us: 80.5,
                p99_us: 120.0,
                p999_us: 130.0,
                max_us: 130.0,
            }],
        };
        let t = ping_table(&[p]);
        assert_eq!(t.rows[0][1], "esp (esp-aes128-gcm)");
        assert_eq!(t.rows[0][4], "80.5");
        assert!(t.rows[0][8].contains("Fig. 5.3"));
        let b = BulkReport {
            config: toml::from_str::<BulkConfig>("").unwrap(),
            rows: vec![
                BulkRow {
                    tool: "iperf3".into(),
                    path: "plain".into(),
                    goodput_mbps: 1000.0,
                    cpu_pct: 50.0,
                    bytes: 1 << 20,
                    seconds: 1.0,
                },
                BulkRow {
                    tool: "iperf3".into(),
                    path: "esp".into(),
                    goodput_mbps: 250.0,
                    cpu_pct: 90.0,
                    bytes: 1 << 20,
                    seconds: 1.0,
                },
            ],
        };
        let t = bulk_table(&[b]);
        assert_eq!(t.rows[1][3], "0.25");
        assert!(t.rows[1][7].contains("Fig. 5.5"));
    }
}
