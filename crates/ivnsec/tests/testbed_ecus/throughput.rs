//! `ivnsec throughput` on a `sensors:N` testbed of its own with a shaped link, and ESP senders
//! writing whole frames (root). Loopback and bad input: `cli/throughput.rs`.

use crate::common::throughput::check_common;
use crate::common::{TempDir, ivnsec, json};

#[test]
fn testbed_three_senders_shaped() {
    require_root!();
    let d = TempDir::new("tb");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "testbed",
            "--profile",
            "macsec-gcm-aes-128",
            "--payload",
            "1440",
            "--seconds",
            "1",
            "--rate",
            "100M",
            "--senders",
            "3",
            "--json",
        ],
    );
    let v = json::with_codes("throughput", &o, &[0]);
    check_common(&v, "macsec-gcm-aes-128", 1440);
    assert_eq!(v["senders"], 3);
    assert!(v["transport"].as_str().unwrap().contains("sensors:3"));
    let e = v["efficiency"].as_f64().unwrap();
    assert!(e > 0.0 && e <= 1.02, "efficiency {e}: {v}");
    // Our MACsec frame carries the payload straight at layer 2: 12 + SecTAG 16 + EtherType 2 +
    // 1440 + ICV 16 = 1486, + FCS 4 + preamble 8 + IFG 12 = 1510 byte times:
    // 3 × 1440 / 1510 × 100 Mb/s.
    let t = v["theoretical_mbps"].as_f64().unwrap();
    assert!((t - 3.0 * 1440.0 / 1510.0 * 100.0).abs() < 0.01, "{t}");
    // CPU per role: the consumer, the three sensors, their pacing and the switch (the rest of
    // the machine), adding up to the machine's share (the switch is never below 0), each per
    // Gb/s through it.
    let roles = v["cpu"]["roles"].as_array().unwrap();
    let names: Vec<&str> = roles.iter().map(|r| r["role"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "consumer", "sensor1", "sensor2", "sensor3", "pacing", "switch"
        ]
    );
    let sum: f64 = roles.iter().map(|r| r["pct"].as_f64().unwrap()).sum();
    let machine = v["cpu"]["system_pct"].as_f64().unwrap();
    assert!(sum >= machine - 1e-9, "{sum} vs {machine}: {v}");
    let goodput = v["goodput_mbps"].as_f64().unwrap() / 1e3;
    for r in roles {
        let (pct, gbps) = (r["pct"].as_f64().unwrap(), r["gbps"].as_f64().unwrap());
        assert!(pct >= 0.0 && gbps > 0.0, "{r}");
        let per = r["pct_per_gbps"].as_f64().unwrap();
        assert!((per - pct / gbps).abs() < 1e-9, "{r}");
    }
    assert!((roles[0]["gbps"].as_f64().unwrap() - goodput).abs() < 1e-9);
    assert_eq!(roles[0]["pct"], v["cpu"]["receiver_pct"]);
    // The run's testbed is gone: no state file, no namespace of its prefix.
    let left: Vec<_> = std::fs::read_dir(d.state())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
        .collect();
    assert!(left.is_empty(), "testbed state left behind: {left:?}");
    let prefix = v["transport"]
        .as_str()
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string();
    assert!(
        ivnsec_net::testbed::live_namespaces(&prefix)
            .unwrap()
            .is_empty()
    );
}

/// ESP on a testbed: the senders write whole frames (Ethernet ‖ IPv4 ‖ ESP) on a raw Ethernet
/// link, the consumer takes them through its IP layer; every frame the consumer gets verifies,
/// and the capture of sender 1 holds those frames: EtherType IPv4, a valid IPv4 header of
/// protocol 50 from sensor1 to the consumer, the sender's SPI, the run's frame length. The
/// pacing spin is reported apart from protecting and sending.
#[test]
fn testbed_esp_senders_write_whole_frames() {
    require_root!();
    let d = TempDir::new("tb-esp");
    let pcap = d.path("esp.pcap");
    let o = ivnsec(
        &d,
        &[
            "throughput",
            "--on",
            "testbed",
            "--profile",
            "esp-null-hmac-sha256",
            "--payload",
            "1000",
            "--seconds",
            "1",
            "--rate",
            "100M",
            "--senders",
            "2",
            "--no-baseline",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let v = json::with_codes("throughput", &o, &[0]);
    check_common(&v, "esp-null-hmac-sha256", 1000);
    assert_eq!(v["rejected"], serde_json::json!({}), "{v}");
    assert!(v["transport"].as_str().unwrap().contains("whole frames"));
    assert!(v["cpu"]["sender_pacing_ns"].as_u64().is_some(), "{v}");
    let frame_bytes = v["frame_bytes"].as_u64().unwrap() as usize;
    let frames: Vec<Vec<u8>> = ivnsec_net::pcap::PcapReader::open(&pcap)
        .unwrap()
        .map(|r| r.unwrap().data)
        .collect();
    assert_eq!(frames.len(), 1000);
    for f in &frames {
        assert_eq!(f.len(), frame_bytes);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        let ip = &f[14..];
        assert_eq!((ip[0], ip[9]), (0x45, 50));
        assert_eq!(usize::from(u16::from_be_bytes([ip[2], ip[3]])), ip.len());
        let mut sum: u32 = ip[..20]
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        assert_eq!(sum, 0xffff, "IPv4 header checksum");
        // sensor1's SPI: the pair's forward SPI (0x1001).
        assert_eq!(&ip[20..24], &[0, 0, 0x10, 0x01]);
    }
}
