//! The checks of `ivnsec pingpong`, `run` and `validate` reports shared by their loopback runs
//! (cli) and their testbed runs (testbed_pair, testbed_ecus): frame lengths by the wire specs,
//! every scenario's figures, the samples CSV.

use std::path::Path;

use serde_json::Value;

/// Frame length by the wire specs (docs/wire-ivnae.md, IEEE 802.1AE, RFC 4303), not by the code:
/// IVN-AE = 26-byte header + 2-byte inner EtherType + payload + tag; MACsec = addresses 12 +
/// SecTAG 16 (EtherType, TCI/AN, SL, PN, SCI) + inner EtherType 2 + payload + ICV 16; ESP transport over IPv4 = 14 + 20 + SPI/seq
/// 8 + IV 8 + payload padded with the 2-byte trailer to 4 + ICV 16. The UDP families travel in
/// Ethernet 14 + IPv4 20 + UDP 8: SecOC (docs/secoc.md) = PDU header (id, length) 8 + Authentic
/// I-PDU + 32-bit truncated FV and 64-bit truncated MAC 12; secured SOME/IP
/// (docs/wire-someip-sec.md) = header 16 + key id 1 + counter 8 + payload + tag 16.
pub fn spec_frame_bytes(profile: &str, payload: usize) -> usize {
    match profile {
        "plain" => 26 + 2 + payload,
        "crc32" => 26 + 2 + payload + 4,
        "aes128-gcm" | "chacha20-poly1305" => 26 + 2 + payload + 16,
        "macsec-gcm-aes-128" => 12 + 16 + 2 + payload + 16,
        "esp-aes128-gcm" => 14 + 20 + 8 + 8 + (payload + 2).div_ceil(4) * 4 + 16,
        "secoc-cmac-aes128" | "secoc-hmac-sha256" => 14 + 20 + 8 + 8 + payload + 12,
        "someip-aes128-gcm/conf" | "someip-chacha20-poly1305/auth" => {
            14 + 20 + 8 + 16 + 1 + 8 + payload + 16
        }
        "someip-nosec" => 14 + 20 + 8 + 16 + payload,
        other => panic!("no spec length for {other}"),
    }
}

/// Checks one scenario object of `--json` / summary.json.
pub fn check_scenario(s: &Value, profile: &str, payload: usize, count: u64) {
    assert_eq!(s["profile"], profile);
    assert_eq!(s["payload"], payload as u64);
    assert_eq!(
        s["frame_bytes"].as_u64().unwrap() as usize,
        spec_frame_bytes(profile, payload),
        "{profile}"
    );
    let eff = s["efficiency"].as_f64().unwrap();
    assert!((eff - payload as f64 / spec_frame_bytes(profile, payload) as f64).abs() < 1e-9);
    assert_eq!(s["count"], count);
    assert_eq!(s["lost"], 0, "{s}");
    for sec in [
        "owd_forward",
        "owd_backward",
        "rtt",
        "protect",
        "verify",
        "responder",
        "wire_one_way",
        "owd_direct",
    ] {
        let st = &s["sections"][sec];
        assert_eq!(st["count"], count, "{profile} {sec}: {st}");
        for k in [
            "mean_us",
            "min_us",
            "max_us",
            "median_us",
            "p90_us",
            "p99_us",
            "p999_us",
        ] {
            let v = st[k].as_f64().unwrap_or(-1.0);
            assert!(v > 0.0, "{profile} {sec} {k} = {v}");
        }
        assert!(st["min_us"].as_f64() <= st["median_us"].as_f64());
        assert!(st["median_us"].as_f64() <= st["max_us"].as_f64());
    }
    // Fig. 16: RTT = 1 + 2 + 3 + 4 covers both one-way delays.
    let med = |k: &str| s["sections"][k]["median_us"].as_f64().unwrap();
    assert!(med("rtt") >= med("wire_one_way") * 2.0);
    assert!(s["verdicts"]["control_2500us"].is_boolean());
    assert!(s["verdicts"]["sensor_p999_2ms"].is_boolean());
}

/// Physical consistency of every sample: the request reached the responder (directly measured
/// forward delay) before the reply was back at the initiator, and the responder's time fits
/// inside the initiator's wait.
pub fn check_samples_csv(path: &Path, rows_expected: usize) {
    let csv = std::fs::read_to_string(path).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (p1, p2, p3) = (col("payload_ns"), col("protect_ns"), col("round_trip_ns"));
    let (rv, rp, direct) = (
        col("resp_verify_ns"),
        col("resp_protect_ns"),
        col("owd_direct_ns"),
    );
    let mut rows = 0;
    for line in lines {
        let f: Vec<&str> = line.split(',').collect();
        let n = |i: usize| f[i].parse::<u64>().unwrap();
        assert!(
            n(rv) + n(rp) <= n(p3),
            "responder time exceeds the wait: {line}"
        );
        assert!(
            n(direct) <= n(p1) + n(p2) + n(p3),
            "arrived after the reply: {line}"
        );
        rows += 1;
    }
    assert_eq!(rows, rows_expected);
}
