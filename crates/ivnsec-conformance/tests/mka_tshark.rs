//! Wireshark dissects the MKPDUs of `ivnsec_core::mka` as EAPOL-MKA with no malformed or
//! undecoded marks, and reads back the fields we meant: three members agree on a key server,
//! distribute a SAK (GCM-AES-128 without, XPN-256 with the cipher suite field and the XPN
//! parameter set) and report it in use; with GCM-AES-128 the key server also distributes a
//! 128-bit group CAK (Wireshark reads the Distributed CAK with a 24-octet key wrap only); the
//! frames go to a pcap through `ivnsec_net::pcap` and tshark reads them. Skips with a printed reason when tshark is not installed.

use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

use ivnsec_core::crypto::{CryptoError, SecureRandom};
use ivnsec_core::mka::kdf::CaKeys;
use ivnsec_core::mka::participant::SECOND;
use ivnsec_core::mka::{Config, Participant};
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::wire::ethernet::MacAddr;
use ivnsec_core::wire::macsec::Sci;
use ivnsec_net::pcap::PcapWriter;

struct Rng(AtomicU64);

impl SecureRandom for Rng {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        // splitmix64
        for c in buf.chunks_mut(8) {
            let mut z = self.0.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            c.copy_from_slice(&z.to_le_bytes()[..c.len()]);
        }
        Ok(())
    }
}

const CKN: &[u8] = b"ivnsec tshark ckn";
const GROUP_CAK: [u8; 16] = [0x77; 16];
const GROUP_CKN: &[u8] = b"ivnsec group ckn";

/// Runs three members for 5 s of virtual time (member 0, the key server, distributing the group
/// CAK when `dcak`); returns every frame sent.
fn session(suite: CipherSuite, dcak: bool) -> Vec<Vec<u8>> {
    let p = ivnsec_conformance::provider("portable");
    let mut m: Vec<Participant> = (0..3u8)
        .map(|i| {
            let sci = Sci::end_station(MacAddr([2, 0, 0, 0, 0x10, i + 1]));
            Participant::new(
                Config::new(suite),
                &[0x5a; 16],
                CKN,
                sci,
                p,
                Rng(AtomicU64::new(u64::from(i) << 40)),
                0,
            )
            .unwrap()
        })
        .collect();
    if dcak {
        m[0].distribute_cak(0, &GROUP_CAK, GROUP_CKN).unwrap();
    }
    let mut wire = Vec::new();
    let mut buf = vec![0u8; 2048];
    let mut now = 0;
    while now < 5 * SECOND {
        for _ in 0..20 {
            let mut sent = Vec::new();
            for (i, p) in m.iter_mut().enumerate() {
                while let Some(n) = p.poll_transmit(now, &mut buf) {
                    sent.push((i, buf[..n].to_vec()));
                }
                while p.poll_event().is_some() {}
            }
            if sent.is_empty() {
                break;
            }
            for (i, f) in &sent {
                for (j, p) in m.iter_mut().enumerate() {
                    if j != *i {
                        p.handle_pdu(now, f).unwrap();
                    }
                }
            }
            wire.extend(sent.into_iter().map(|(_, f)| f));
        }
        now = m
            .iter()
            .filter_map(|p| p.poll_timeout())
            .min()
            .unwrap()
            .max(now + 1);
        for p in m.iter_mut() {
            p.handle_timeout(now);
        }
    }
    assert!(m.iter().all(|p| p.snapshot().latest.is_some_and(|k| k.tx)));
    wire
}

fn tshark(args: &[&str]) -> Option<String> {
    let o = Command::new("tshark").args(args).output().ok()?;
    assert!(
        o.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    Some(String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn tshark_dissects_our_mkpdus_without_complaint() {
    if Command::new("tshark").arg("-v").output().is_err() {
        eprintln!("SKIP: tshark is not installed (bash scripts/setup installs it)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("ivnsec-mka-tshark-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for suite in [CipherSuite::GcmAes128, CipherSuite::GcmAesXpn256] {
        let dcak = suite == CipherSuite::GcmAes128;
        let frames = session(suite, dcak);
        let path = dir.join(format!("{suite}.pcap"));
        let mut w = PcapWriter::create(&path).unwrap();
        for f in &frames {
            w.write_frame_now(f).unwrap();
        }
        w.flush().unwrap();
        drop(w);
        let file = path.to_str().unwrap();
        let fields = tshark(&[
            "-r",
            file,
            "-T",
            "fields",
            "-E",
            "separator=|",
            "-e",
            "frame.protocols",
            "-e",
            "mka.cak_name",
            "-e",
            "mka.key_number",
            "-e",
            "mka.macsec_cipher_suite",
            "-e",
            "mka.xpn_set",
            "-e",
            "mka.latest_key_tx",
            "-e",
            "mka.aes_key_wrap_cak",
        ])
        .expect("tshark ran above");
        let rows: Vec<Vec<&str>> = fields.lines().map(|l| l.split('|').collect()).collect();
        assert_eq!(rows.len(), frames.len(), "{suite}");
        // tshark 4.0 names the frames eth:ethertype:eapol; the MKA fields show its MKA dissector ran.
        assert!(
            rows.iter().all(|r| r[0].starts_with("eth:ethertype:eapol")),
            "{suite}: {rows:?}"
        );
        // The CKN of the Basic Parameter Set, then that of a Distributed CAK.
        assert!(
            rows.iter()
                .all(|r| r[1].split(',').next() == Some(&hex::encode(CKN)[..])),
            "{suite}: {rows:?}"
        );
        let with_cak: Vec<&Vec<&str>> = rows.iter().filter(|r| !r[6].is_empty()).collect();
        assert_eq!(with_cak.is_empty(), !dcak, "{suite}: {rows:?}");
        let p = ivnsec_conformance::provider("portable");
        let wrapped = CaKeys::new(p, &[0x5a; 16], CKN)
            .unwrap()
            .wrap_sak(&GROUP_CAK)
            .unwrap();
        for r in &with_cak {
            assert_eq!(r[6], hex::encode(&wrapped), "{suite}: {r:?}");
            assert_eq!(
                r[1],
                format!("{},{}", hex::encode(CKN), hex::encode(GROUP_CKN))
            );
        }
        // A distributed key, the cipher suite field only for the non-default suite.
        let dist: Vec<&Vec<&str>> = rows.iter().filter(|r| !r[2].is_empty()).collect();
        assert!(!dist.is_empty(), "{suite}: no Distributed SAK dissected");
        for r in &dist {
            let want = if suite == CipherSuite::GcmAes128 {
                String::new()
            } else {
                suite.identifier().to_string() // tshark prints it in decimal
            };
            assert_eq!(r[3], want, "{suite}: {r:?}");
        }
        assert_eq!(
            rows.iter().any(|r| !r[4].is_empty()),
            suite.is_xpn(),
            "{suite}"
        );
        assert!(
            rows.iter().any(|r| r[5] == "1" || r[5] == "True"),
            "{suite}: nobody transmits: {rows:?}"
        );
        // No malformed, undecoded or unexpected-data marks.
        let bad = tshark(&[
            "-r",
            file,
            "-Y",
            "_ws.malformed || _ws.expert.severity >= warning",
        ])
        .unwrap();
        assert!(bad.trim().is_empty(), "{suite}: tshark complains:\n{bad}");
        let verbose = tshark(&["-r", file, "-V"]).unwrap();
        assert!(
            !verbose.contains("Malformed") && !verbose.contains("Undecoded"),
            "{suite}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
