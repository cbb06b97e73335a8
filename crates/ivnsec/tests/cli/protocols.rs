//! `ivnsec frame protect|verify` for the standard protocols (MACsec, IPsec ESP, AUTOSAR SecOC)
//! as a user runs it: the published known answers of `ivnsec_conformance::vectors` through the
//! binary in both directions (once per provider that has the transform, where the command takes
//! `--provider`), batch mode keeping SA state across stdin lines, drops with their reasons, and
//! usage errors (exit 2).
//!
//! The same vectors run through the API, once per provider, in `crates/ivnsec-conformance`.

use crate::common::run_outcome;

use ivnsec_conformance::packets::{ipv4, ipv6, udp_payload};
use ivnsec_conformance::{providers, unhex};

mod macsec {
    use super::*;
    use ivnsec_conformance::vectors::macsec::{KATS, SALT, SSCI};

    #[test]
    fn cli_annex_c_vectors_both_directions() {
        for k in KATS {
            let pn = k.pn.to_string();
            let sci = format!("{:016x}", k.sci);
            let an = k.an.to_string();
            let mut args = vec![
                "frame",
                "protect",
                "--profile",
                k.suite.profile(),
                "--key",
                k.key,
                "--sci",
                &sci,
                "--an",
                &an,
                "--pn",
                &pn,
            ];
            let ssci = format!("{SSCI:08x}");
            if k.suite.is_xpn() {
                args.extend(["--ssci", &ssci, "--salt", SALT]);
            }
            if !k.conf {
                args.push("--integrity-only");
            }
            if !k.include_sci {
                args.push("--es");
            }
            let plain = format!("{}{}", k.addrs, k.user);
            let (rc, out, err) = run_outcome(&[&args[..], &[plain.as_str()]].concat(), None);
            assert_eq!(rc, 0, "{}: {err}", k.name);
            assert_eq!(out, hex::encode(k.protected()), "{}", k.name);

            let mut vargs = vec![
                "frame",
                "verify",
                "--profile",
                k.suite.profile(),
                "--key",
                k.key,
                "--sci",
                &sci,
                "--an",
                &an,
                "--lowest-pn",
                &pn,
            ];
            if k.suite.is_xpn() {
                vargs.extend(["--ssci", &ssci, "--salt", SALT]);
            }
            let frame = hex::encode(k.protected());
            let (rc, out, err) = run_outcome(&[&vargs[..], &[frame.as_str()]].concat(), None);
            assert_eq!(rc, 0, "{}: {err}", k.name);
            assert_eq!(out, hex::encode(k.plain()), "{}", k.name);
        }
    }

    #[test]
    fn cli_batch_keeps_state_and_reports_drops() {
        let common = [
            "--profile",
            "macsec-gcm-aes-xpn-128",
            "--key",
            "000102030405060708090a0b0c0d0e0f",
            "--sci",
            "0200000000010001",
            "--an",
            "1",
            "--ssci",
            "00000001",
            "--salt",
            "0102030405060708090a0b0c",
        ];
        let frames = "0200000000020200000000010800aabbcc\n020000000002020000000001080011\n";
        let (rc, out, err) = run_outcome(
            &[
                &["frame", "protect"][..],
                &common,
                &["--pn", "4294967295", "-"],
            ]
            .concat(),
            Some(frames),
        );
        assert_eq!(rc, 0, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        // First frame replayed at the end; a garbage frame in the middle.
        let batch = format!(
            "{}\n{}\n{}\n0200000000020200000000010800\n",
            lines[0], lines[1], lines[0]
        );
        let (rc, got, err) = run_outcome(
            &[
                &["frame", "verify"][..],
                &common,
                &["--lowest-pn", "4294967290", "--replay-window", "8", "-"],
            ]
            .concat(),
            Some(&batch),
        );
        assert_eq!(rc, 1);
        let got: Vec<&str> = got.lines().collect();
        assert_eq!(
            got,
            [
                "0200000000020200000000010800aabbcc",
                "020000000002020000000001080011",
                "DROP replay_duplicate",
                "DROP untagged"
            ]
        );
        assert!(err.contains("InPktsOK=2"), "{err}");
        assert!(err.contains("InPktsNoTag=1"), "{err}");
    }

    /// What each command gets wrong, and the arguments after `frame`.
    const USAGE_ERRORS: &[(&str, &[&str])] = &[
        (
            "missing --sci",
            &[
                "protect",
                "--profile",
                "macsec-gcm-aes-128",
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "--an",
                "0",
                "--pn",
                "1",
                "0200000000020200000000010800",
            ],
        ),
        (
            "short --sci",
            &[
                "protect",
                "--profile",
                "macsec-gcm-aes-128",
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "--sci",
                "01",
                "--an",
                "0",
                "--pn",
                "1",
                "0200000000020200000000010800",
            ],
        ),
        (
            "PN too large for a non-XPN suite",
            &[
                "protect",
                "--profile",
                "macsec-gcm-aes-128",
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "--sci",
                "0200000000010001",
                "--an",
                "0",
                "--pn",
                "4294967296",
                "0200000000020200000000010800",
            ],
        ),
        (
            "XPN without --ssci/--salt",
            &[
                "protect",
                "--profile",
                "macsec-gcm-aes-xpn-128",
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "--sci",
                "0200000000010001",
                "--an",
                "0",
                "--pn",
                "1",
                "0200000000020200000000010800",
            ],
        ),
        (
            "bad --validate",
            &[
                "verify",
                "--profile",
                "macsec-gcm-aes-128",
                "--key",
                "000102030405060708090a0b0c0d0e0f",
                "--sci",
                "0200000000010001",
                "--an",
                "0",
                "--validate",
                "sometimes",
                "00",
            ],
        ),
    ];

    #[test]
    fn cli_usage_errors_exit_2() {
        for (why, args) in USAGE_ERRORS {
            let (rc, _, err) = run_outcome(&[&["frame"][..], args].concat(), None);
            assert_eq!(rc, 2, "{why}: {err}");
        }
    }
}

mod esp {
    use super::*;
    use ivnsec_conformance::vectors::esp::rfc7634_appendix_a;

    #[test]
    fn cli_rfc7634_appendix_a_both_directions() {
        let v = rfc7634_appendix_a();
        let key = hex::encode(unhex(v.key));
        let inner = hex::encode(v.payload_and_nh().0);
        let mut ran = 0;
        for provider in providers(v.alg).map(|p| p.name) {
            let common = [
                "--profile",
                "esp-chacha20-poly1305",
                "--key",
                &key,
                "--spi",
                "0x01020304",
            ];
            let mut args = vec!["frame", "protect", "--provider", provider];
            args.extend(common);
            args.extend(["--seq", "5", "--iv", "1011121314151617", "--mode", "tunnel"]);
            args.extend([
                "--tunnel-src",
                "203.0.113.153",
                "--tunnel-dst",
                "203.0.113.5",
                &inner,
            ]);
            let (rc, out, err) = run_outcome(&args, None);
            assert_eq!(rc, 0, "{err}");
            assert_eq!(&out[40..], hex::encode(unhex(v.packet)), "{provider}");
            let mut args = vec!["frame", "verify", "--provider", provider];
            args.extend(common);
            args.push(&out);
            let (rc, got, err) = run_outcome(&args, None);
            assert_eq!((rc, got.as_str()), (0, inner.as_str()), "{err}");
            ran += 1;
        }
        // portable, fast, openssl and auto all have ChaCha20-Poly1305.
        assert_eq!(ran, 4, "every provider has ChaCha20-Poly1305");
    }

    #[test]
    fn cli_batch_keeps_state_and_reports_drops() {
        let key = "000102030405060708090a0b0c0d0e0f10111213";
        let sa = ["--profile", "esp-aes128-gcm", "--key", key, "--spi", "4096"];
        let pkts = [ipv4(17, &udp_payload(12)), ipv6(6, &udp_payload(33))];
        let input: String = pkts.iter().map(|p| hex::encode(p) + "\n").collect();
        let mut args = vec!["frame", "protect", "--seq", "1"];
        args.extend(sa);
        args.push("-");
        let (rc, out, err) = run_outcome(&args, Some(&input));
        assert_eq!(rc, 0, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 2);
        // Sequence numbers 1 and 2; the default IV is the sequence number.
        assert_eq!(&lines[0][40..56], "0000100000000001");
        assert_eq!(&lines[1][80..96], "0000100000000002");
        assert_eq!(&lines[1][96..112], "0000000000000002");
        let replayed = format!("{}\n{}\n{}\n", lines[1], lines[0], lines[1]);
        let mut args = vec!["frame", "verify", "--replay-window", "0"];
        args.extend(sa);
        args.push("-");
        let (rc, out, err) = run_outcome(&args, Some(&replayed));
        assert_eq!(rc, 1);
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(
            got,
            [
                hex::encode(&pkts[1]).as_str(),
                "DROP replay_too_old",
                "DROP replay_duplicate"
            ]
        );
        assert!(err.contains("verified 1 dropped 2"), "{err}");
    }

    /// A 20-byte AES-128-GCM key ‖ salt.
    const GCM: &str = "000102030405060708090a0b0c0d0e0f10111213";
    /// The packet every usage-error case protects or verifies (written in by the test).
    const PKT: &str = "PKT";

    /// What each `frame protect|verify` gets wrong, and its arguments after `frame`.
    const USAGE_ERRORS: &[(&str, &[&str])] = &[
        (
            "missing --spi",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--seq",
                "1",
                PKT,
            ],
        ),
        (
            "--spi 0 is for local use (protect)",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "0",
                "--seq",
                "1",
                PKT,
            ],
        ),
        (
            "--spi 0 is for local use (verify)",
            &[
                "verify",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "0x0",
                PKT,
            ],
        ),
        (
            "key too short",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                "0001",
                "--spi",
                "300",
                "--seq",
                "1",
                PKT,
            ],
        ),
        (
            "protect without --seq",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "300",
                PKT,
            ],
        ),
        (
            "HMAC profile without a key",
            &[
                "protect",
                "--profile",
                "esp-null-hmac-sha256",
                "--spi",
                "300",
                "--seq",
                "1",
                PKT,
            ],
        ),
        (
            "tunnel mode without tunnel addresses",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "300",
                "--seq",
                "1",
                "--mode",
                "tunnel",
                PKT,
            ],
        ),
        (
            "a 33-bit sequence number without ESN",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "300",
                "--seq",
                "4294967296",
                PKT,
            ],
        ),
        (
            "an IV of the wrong length",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "300",
                "--seq",
                "1",
                "--iv",
                "00",
                PKT,
            ],
        ),
        (
            "not an IP packet",
            &[
                "protect",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "300",
                "--seq",
                "1",
                "0102",
            ],
        ),
        (
            "unknown profile",
            &[
                "verify",
                "--profile",
                "esp-aes999-gcm",
                "--key",
                GCM,
                "--spi",
                "300",
                PKT,
            ],
        ),
    ];

    #[test]
    fn cli_usage_errors_exit_2() {
        let pkt = hex::encode(ipv4(17, &[1, 2, 3, 4]));
        for (why, args) in USAGE_ERRORS {
            let mut full = vec!["frame"];
            full.extend(
                args.iter()
                    .map(|&a| if a == PKT { pkt.as_str() } else { a }),
            );
            let (rc, _, err) = run_outcome(&full, None);
            assert_eq!(rc, 2, "{why}: {full:?}: {err}");
        }
        // A packet that does not verify: exit 1 with the reason.
        let (rc, _, err) = run_outcome(
            &[
                "frame",
                "verify",
                "--profile",
                "esp-aes128-gcm",
                "--key",
                GCM,
                "--spi",
                "300",
                &pkt,
            ],
            None,
        );
        assert_eq!((rc, err.as_str()), (1, "DROP not_esp"));
    }
}

/// DPDK's ESP known answers with SPI 52 (`app/test/test_cryptodev_security_ipsec_test_vectors.h`,
/// `pkt_aes_256_gcm_v6` and `pkt_aes_128_cbc_hmac_sha256`, both tunnel mode, sequence number 1),
/// typed in from that file: an SPI in 1-255, which RFC 4303 §2.1 reserves for IANA but does not
/// forbid on the wire. Verify accepts them; protect reproduces them and warns on stderr; SPI 0
/// stays refused both ways (exit 2).
mod esp_spi_52 {
    use super::*;
    use ivnsec_core::sa::esp::EspAlg;

    struct Dpdk {
        name: &'static str,
        profile: &'static str,
        alg: EspAlg,
        /// `--key` (key ‖ salt for GCM) and `--auth-key` if any.
        keys: &'static [&'static str],
        iv: &'static str,
        tunnel: [&'static str; 2],
        inner: &'static str,
        /// The whole published packet, outer IP header included.
        packet: &'static str,
        /// Bytes at the front that are the outer IP header's choice (its ID), not ESP's.
        outer_len: usize,
    }

    const VECTORS: &[Dpdk] = &[
        Dpdk {
            name: "pkt_aes_256_gcm_v6",
            profile: "esp-aes256-gcm",
            alg: EspAlg::Aes256Gcm,
            keys: &[
                "--key",
                "de12be56deadbeefdeadbeefdeadbeef1278be3401020307aabbccf108070605 11223344",
            ],
            iv: "45adfe2378561200",
            tunnel: [
                "1234:1221:1745:1134:11fc:8971:df22:5678",
                "1234:1221:1745:1134:11fc:8971:df22:3456",
            ],
            inner: "60000000002006382607f8b0400c0c03000000000000001a20010470e5bfdead
                    49572174e82c48870019f9c79563979c03a088318012a7d6258300000204056a
                    0101040201030307",
            packet: "60000000006c3240123412211745113411fc8971df225678123412211745113411
                     fc8971df2234560000003400000001 45adfe2378561200e7dfc47e21bdec1b745a
                     e47e2e94210a9b0e59be062adab86b487f0b883aa9fd3cfe9fb18c67d2f8afb5ad
                     16dbff8d50d348f56c3c0c27342b65c8ffeb5fb8ff12001c9fb785dd7d4019cb18
                     eb15c488e1c291c7b165c32716068ff2",
            // IPv6 has no ID: the whole packet is known.
            outer_len: 0,
        },
        Dpdk {
            name: "pkt_aes_128_cbc_hmac_sha256",
            profile: "esp-aes128-cbc-hmac-sha256",
            alg: EspAlg::Aes128CbcHmacSha256,
            keys: &[
                "--key",
                "000405012300000000000a0b0c0f0000",
                "--auth-key",
                "de34560000007800001000000000000210304000010203040a0b0c0d05060708",
            ],
            iv: "34126745ffff000020bfe83900000000",
            tunnel: ["20.0.0.1", "20.0.0.2"],
            inner: "45000032000100001f11178bc0a8016fc0a8017000090009001e0000be9be955
                    000000210000000000000000000000000000",
            packet: "4500007c000100004032524d1400000114000002 0000003400000001
                     34126745ffff000020bfe83900000000 67b5466e7817d35aac626262b0579b09
                     194f0659c8b030651f455741721728e9ad50be441d2d9ad048750d1c8d24a86f
                     6b24b65d431e55f0f7141ff261d4e03016be1b5cccb7661c47ad076cd5cbce6c",
            // The outer IPv4 header (DPDK's ID 1, ours 0).
            outer_len: 20,
        },
    ];

    fn args<'a>(cmd: &'a str, provider: &'a str, v: &'a Dpdk, keys: &'a [String]) -> Vec<&'a str> {
        let mut a = vec!["frame", cmd, "--provider", provider, "--profile", v.profile];
        a.extend(keys.iter().map(String::as_str));
        a.extend(["--spi", "52"]);
        a
    }

    #[test]
    fn cli_dpdk_vectors_with_spi_52_both_directions() {
        for v in VECTORS {
            let keys: Vec<String> = v.keys.iter().map(|k| k.replace(' ', "")).collect();
            let inner = hex::encode(unhex(v.inner));
            let packet = hex::encode(unhex(v.packet));
            let mut ran = 0;
            for provider in providers(v.alg).map(|p| p.name) {
                let mut a = args("verify", provider, v, &keys);
                a.push(&packet);
                let (rc, out, err) = run_outcome(&a, None);
                assert_eq!(
                    (rc, out.as_str()),
                    (0, inner.as_str()),
                    "{} {provider}: {err}",
                    v.name
                );
                assert_eq!(err, "", "{}: verify has nothing to warn about", v.name);

                let mut a = args("protect", provider, v, &keys);
                a.extend(["--seq", "1", "--iv", v.iv, "--mode", "tunnel"]);
                a.extend([
                    "--tunnel-src",
                    v.tunnel[0],
                    "--tunnel-dst",
                    v.tunnel[1],
                    &inner,
                ]);
                let (rc, out, err) = run_outcome(&a, None);
                assert_eq!(rc, 0, "{} {provider}: {err}", v.name);
                let from = 2 * v.outer_len;
                assert_eq!(out.get(from..), packet.get(from..), "{} {provider}", v.name);
                assert_eq!(out.len(), packet.len(), "{} {provider}", v.name);
                assert!(
                    err.contains("warning: SPI 52 is in 1-255") && err.contains("RFC 4303 §2.1"),
                    "{}: {err}",
                    v.name
                );
                ran += 1;
            }
            assert!(ran >= 1, "{}: no provider has {}", v.name, v.profile);
        }
    }

    /// SPI 1 and 255, the edges of the reserved range, round-trip through a batch; 0 is refused
    /// with the reason and how to fix it.
    #[test]
    fn cli_spi_edges_round_trip_and_0_is_refused() {
        let gcm = "000102030405060708090a0b0c0d0e0f10111213";
        let pkt = hex::encode(ipv4(17, &udp_payload(20)));
        for spi in ["1", "255", "0xff"] {
            let sa = ["--profile", "esp-aes128-gcm", "--key", gcm, "--spi", spi];
            let (rc, out, err) = run_outcome(
                &[&["frame", "protect", "--seq", "1"], &sa[..], &["-"]].concat(),
                Some(&format!("{pkt}\n{pkt}\n")),
            );
            assert_eq!(rc, 0, "{spi}: {err}");
            assert_eq!(
                err.matches("warning: SPI").count(),
                1,
                "once per run: {err}"
            );
            let (rc, got, err) = run_outcome(
                &[&["frame", "verify"], &sa[..], &["-"]].concat(),
                Some(&format!("{out}\n")),
            );
            assert_eq!((rc, got), (0, format!("{pkt}\n{pkt}")), "{spi}: {err}");
        }
        for cmd in ["protect", "verify"] {
            let mut a = vec!["frame", cmd, "--profile", "esp-aes128-gcm", "--key", gcm];
            a.extend(["--spi", "0"]);
            if cmd == "protect" {
                a.extend(["--seq", "1"]);
            }
            a.push(&pkt);
            let (rc, out, err) = run_outcome(&a, None);
            assert_eq!((rc, out.as_str()), (2, ""), "{cmd}: {err}");
            assert!(
                err.contains("--spi 0 is reserved for local use"),
                "{cmd}: {err}"
            );
            assert!(
                err.contains("256 or above"),
                "{cmd}: says how to fix it: {err}"
            );
        }
    }
}

mod secoc {
    use super::*;
    use ivnsec_conformance::vectors::secoc::{KATS, RFC4493_KEY};

    #[test]
    fn cli_known_answers_both_directions() {
        for v in KATS {
            let mut ran = 0;
            for provider in providers(v.alg).map(|p| p.name) {
                let key = hex::encode(unhex(v.key));
                let lengths = [
                    "--fv-bits".to_string(),
                    v.fv_bits.to_string(),
                    "--mac-bits".into(),
                    v.mac_bits.to_string(),
                    "--full-fv-bits".into(),
                    v.full_fv_bits.to_string(),
                ];
                let lengths: Vec<&str> = lengths.iter().map(String::as_str).collect();
                let data_id = format!("{:#06x}", v.data_id);
                let fv = format!("{:#x}", v.fv);
                let pdu = hex::encode(unhex(v.pdu));
                let mut args = vec![
                    "frame",
                    "protect",
                    "--profile",
                    v.alg.name(),
                    "--provider",
                    provider,
                    "--key",
                    &key,
                    "--data-id",
                    &data_id,
                    "--freshness",
                    &fv,
                ];
                args.extend(&lengths);
                args.push(&pdu);
                let (rc, out, err) = run_outcome(&args, None);
                assert_eq!(rc, 0, "{}: {err}", v.source);
                assert_eq!(
                    out,
                    hex::encode(unhex(v.secured)),
                    "{} {provider}",
                    v.source
                );

                let last = (v.fv - 1).to_string();
                let mut args = vec![
                    "frame",
                    "verify",
                    "--profile",
                    v.alg.name(),
                    "--provider",
                    provider,
                    "--key",
                    &key,
                    "--data-id",
                    &data_id,
                    "--last-freshness",
                    &last,
                ];
                args.extend(&lengths);
                args.push(&out);
                let (rc, got, err) = run_outcome(&args, None);
                assert_eq!((rc, got.as_str()), (0, pdu.as_str()), "{}: {err}", v.source);
                assert_eq!(err, format!("freshness {}", v.fv));
                ran += 1;
            }
            // portable, fast and auto; the OpenSSL provider has no MAC.
            assert_eq!(ran, 3, "{}: every provider with the MAC", v.source);
        }
    }

    #[test]
    fn cli_batch_keeps_freshness_state_across_roll_overs() {
        let sa = [
            "--profile",
            "secoc-cmac-aes128",
            "--key",
            RFC4493_KEY,
            "--data-id",
            "77",
            "--fv-bits",
            "3",
            "--mac-bits",
            "28",
            "--full-fv-bits",
            "40",
        ];
        let pdus: Vec<String> = (0..20u8).map(|i| hex::encode([i, 0xaa, i])).collect();
        let input: String = pdus.iter().map(|p| p.clone() + "\n").collect();
        let mut args = vec!["frame", "protect", "--freshness", "5"];
        args.extend(sa);
        args.push("-");
        let (rc, out, err) = run_outcome(&args, Some(&input));
        assert_eq!(rc, 0, "{err}");
        let secured: Vec<&str> = out.lines().collect();
        assert_eq!(secured.len(), 20);
        for (s, p) in secured.iter().zip(&pdus) {
            // 3 + 28 bits: 4 bytes after the 3-byte PDU.
            assert_eq!(s.len(), 14);
            assert!(s.starts_with(p.as_str()));
        }
        // FVs 5..=24 with a 3-bit truncated FV: the low bits roll over at 8, 16 and 24.
        let fv_low = |s: &str| u8::from_str_radix(&s[6..8], 16).unwrap() >> 5;
        let lows: Vec<u8> = secured.iter().map(|s| fv_low(s)).collect();
        let want: Vec<u8> = (5..25u8).map(|fv| fv & 7).collect();
        assert_eq!(lows, want);

        // All of them in order; then a replay, a tampered one, and one past the window.
        let mut stream: Vec<String> = secured.iter().map(|s| s.to_string()).collect();
        stream.push(secured[19].to_string());
        let mut t = hex::decode(secured[3]).unwrap();
        t[1] ^= 0x10;
        stream.push(hex::encode(t));
        stream.push("00".into());
        let input: String = stream.iter().map(|s| s.clone() + "\n").collect();
        let mut args = vec!["frame", "verify", "--last-freshness", "4"];
        args.extend(sa);
        args.push("-");
        let (rc, out, err) = run_outcome(&args, Some(&input));
        assert_eq!(rc, 1, "{err}");
        let got: Vec<&str> = out.lines().collect();
        assert_eq!(
            &got[..20],
            &pdus.iter().map(String::as_str).collect::<Vec<_>>()[..]
        );
        assert_eq!(
            &got[20..],
            ["DROP bad_tag", "DROP bad_tag", "DROP truncated"]
        );
        assert!(
            err.contains("verified 20 dropped 3: truncated=1 bad_tag=2"),
            "{err}"
        );
        assert!(err.contains("last freshness 24"), "{err}");

        // A receiver with a narrow window drops a PDU 3 ahead.
        let mut args = vec![
            "frame",
            "verify",
            "--last-freshness",
            "4",
            "--acceptance-window",
            "2",
        ];
        args.extend(sa);
        args.push(secured[2]);
        let (rc, out, err) = run_outcome(&args, None);
        assert_eq!(
            (rc, out.as_str(), err.as_str()),
            (1, "", "DROP freshness_window")
        );
    }

    /// Options after `frame protect|verify --profile secoc-hmac-sha256 --key 0102 --data-id 1`,
    /// whether the command is `verify`, and what the message must say.
    const USAGE_ERRORS: &[(&[&str], bool, &str)] = &[
        (
            &[
                "--freshness",
                "1",
                "--fv-bits",
                "9",
                "--full-fv-bits",
                "8",
                "01",
            ],
            false,
            "--fv-bits 9 out of range 0..=8",
        ),
        (
            &["--freshness", "1", "--mac-bits", "257", "01"],
            false,
            "--mac-bits 257 out of range 1..=256",
        ),
        (
            &["--freshness", "1", "--mac-bits", "0", "01"],
            false,
            "--mac-bits 0",
        ),
        (
            &["--freshness", "1", "--full-fv-bits", "65", "01"],
            false,
            "--full-fv-bits 65",
        ),
        (
            &["--freshness", "0", "01"],
            false,
            "--freshness 0 out of range",
        ),
        (
            &[
                "--freshness",
                "16",
                "--full-fv-bits",
                "4",
                "--fv-bits",
                "4",
                "01",
            ],
            false,
            "--freshness 16 out of range 1..=15",
        ),
        (&["01"], false, "--freshness"),
        (&["--seq", "1", "01"], false, "not --seq"),
        (
            &["--freshness", "1", "--tag-len", "4", "01"],
            false,
            "--tag-len",
        ),
        (&["--freshness", "0x1g", "01"], false, "not a number"),
        (
            &["--acceptance-window", "0", "01"],
            true,
            "--acceptance-window must be at least 1",
        ),
        (
            &["--last-freshness", "300", "--full-fv-bits", "8", "01"],
            true,
            "--last-freshness 300",
        ),
    ];

    #[test]
    fn cli_exhaustion_and_usage_errors_exit_2() {
        let base = [
            "--profile",
            "secoc-hmac-sha256",
            "--key",
            "0102",
            "--data-id",
            "1",
        ];
        let run = |extra: &[&str], verify: bool| {
            let mut args = vec!["frame", if verify { "verify" } else { "protect" }];
            args.extend(base);
            args.extend(extra);
            // Only a batch reads stdin (the others fail before reading: no broken pipe).
            let stdin = extra.contains(&"-").then_some("01\n02\n");
            run_outcome(&args, stdin)
        };
        // 2-bit FVs: 3 is the last one; the second line has none left.
        let (rc, _, err) = run(
            &[
                "--full-fv-bits",
                "2",
                "--fv-bits",
                "2",
                "--freshness",
                "3",
                "-",
            ],
            false,
        );
        assert_eq!(rc, 2);
        assert!(
            err.contains("stdin line 2") && err.contains("exhausted"),
            "{err}"
        );

        for (extra, verify, needle) in USAGE_ERRORS {
            let (rc, _, err) = run(extra, *verify);
            assert_eq!(rc, 2, "{extra:?}: {err}");
            assert!(err.contains(needle), "{extra:?}: {err}");
        }
        // Missing --data-id; a CMAC key of the wrong length; an unknown profile; a Data ID
        // beyond 16 bits.
        for args in [
            vec![
                "frame",
                "protect",
                "--profile",
                "secoc-cmac-aes128",
                "--key",
                RFC4493_KEY,
                "--freshness",
                "1",
                "01",
            ],
            vec![
                "frame",
                "protect",
                "--profile",
                "secoc-cmac-aes128",
                "--key",
                "00",
                "--data-id",
                "1",
                "--freshness",
                "1",
                "01",
            ],
            vec![
                "frame",
                "verify",
                "--profile",
                "secoc-cmac-aes256",
                "--key",
                RFC4493_KEY,
                "--data-id",
                "1",
                "01",
            ],
            vec![
                "frame",
                "verify",
                "--profile",
                "secoc-cmac-aes128",
                "--key",
                RFC4493_KEY,
                "--data-id",
                "65536",
                "01",
            ],
        ] {
            let (rc, _, err) = run_outcome(&args, None);
            assert_eq!(rc, 2, "{args:?}: {err}");
        }
    }

    #[test]
    fn cli_suites_list_the_secoc_profiles() {
        let (rc, out, err) = run_outcome(&["suites", "--json"], None);
        assert_eq!(rc, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let rows: Vec<&serde_json::Value> = v["profiles"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["protocol"] == "secoc")
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["profile"], "secoc-cmac-aes128");
        assert_eq!(rows[0]["key_len"], 16);
        assert_eq!(rows[0]["tag_len"], 16);
        assert_eq!(rows[1]["profile"], "secoc-hmac-sha256");
        assert_eq!(rows[1]["key_len"], serde_json::Value::Null);
        assert_eq!(rows[1]["tag_len"], 32);
        for r in rows {
            assert_eq!(r["level"], "auth");
            assert_eq!(r["providers"], serde_json::json!(["fast", "portable"]));
        }
    }
}
