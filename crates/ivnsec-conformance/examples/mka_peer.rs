//! A line-driven MKA participant for the cross-check against the independent Python
//! implementation (`tests/interop/mka_crosscheck.py`). Test tool only: it prints the SAKs it
//! installs and the CAKs distributed to it (the test's random keys) so the reference can compare
//! them.
//!
//! Usage: mka_peer --cak HEX --ckn HEX --suite PROFILE --sci HEX16 [--priority N]
//!                 [--provider portable|fast]
//!        mka_peer --session PROFILE
//!
//! `--session` runs three members (CAK 5a…5a, CKN `fuzz-ckn`, member 0 configured and seeded
//! exactly as the participant of `fuzz/fuzz_targets/mka_participant.rs`) for 8 s of virtual
//! time with a rekey every 3 s and prints every frame as `frame MEMBER T_NS HEX` (the fuzz
//! seeds of `fuzz/seed.sh`).
//!
//! Commands on stdin, one per line (T: virtual time in ns):
//!   rx T HEX        hand a received frame to the participant; prints `ok` or `drop REASON`
//!   tick T          advance the clock
//!   pn T AN PN      the data plane's next transmit PN
//!   dcak T CAK CKN  distribute this CAK (hex) named CKN (hex) while key server
//!   nodcak T        stop distributing it
//! After the start and after each command it prints the frames due (`tx HEX`), the events
//! (`install_rx KS_MI KN AN SAK SALT SCI:SSCI,…`, `install_tx KS_MI KN AN SSCI`, `retire_rx …`,
//! `retire_tx …`, `peer_live SCI MI`, `peer_lost SCI MI`, `key_server SCI self|peer|none`,
//! `sak_distributed KS_MI KN AN REASON`, `icv_failure SRC`, `cak_distributed CAK CKN`) and
//! `done`.

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use ivnsec_core::crypto::{CryptoError, SecureRandom};
use ivnsec_core::mka::{Config, Event, Participant};
use ivnsec_core::sa::macsec::CipherSuite;
use ivnsec_core::wire::macsec::Sci;

/// Random keys for a test tool: counter-based, seeded per run by the caller's SCI.
struct Rng(AtomicU64);

impl SecureRandom for Rng {
    fn fill(&self, buf: &mut [u8]) -> Result<(), CryptoError> {
        for c in buf.chunks_mut(8) {
            // splitmix64, the same stream as fuzz_targets/mka_participant.rs.
            let mut z = self.0.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            c.copy_from_slice(&z.to_le_bytes()[..c.len()]);
        }
        Ok(())
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn hexs(b: &[u8]) -> String {
    hex::encode(b)
}

fn print_events(p: &mut Participant, out: &mut impl Write) -> std::io::Result<()> {
    while let Some(e) = p.poll_event() {
        match e {
            Event::InstallRx(sa) => {
                let scs: Vec<String> = sa
                    .scs
                    .iter()
                    .map(|(s, ssci)| {
                        format!(
                            "{}:{}",
                            hexs(&s.0),
                            ssci.map_or("-".into(), |v| v.to_string())
                        )
                    })
                    .collect();
                writeln!(
                    out,
                    "install_rx {} {} {} {} {} {}",
                    hexs(&sa.key.mi),
                    sa.key.kn,
                    sa.an,
                    hexs(sa.sak.as_bytes()),
                    sa.salt.map_or("-".into(), |s| hexs(&s)),
                    if scs.is_empty() {
                        "-".into()
                    } else {
                        scs.join(",")
                    }
                )?;
            }
            Event::InstallTx(sa) => writeln!(
                out,
                "install_tx {} {} {} {}",
                hexs(&sa.key.mi),
                sa.key.kn,
                sa.an,
                sa.scs[0].1.map_or("-".into(), |v| v.to_string())
            )?,
            Event::RetireRx { key, an } => {
                writeln!(out, "retire_rx {} {} {an}", hexs(&key.mi), key.kn)?
            }
            Event::RetireTx { key, an } => {
                writeln!(out, "retire_tx {} {} {an}", hexs(&key.mi), key.kn)?
            }
            Event::PeerLive { sci, mi } => {
                writeln!(out, "peer_live {} {}", hexs(&sci.0), hexs(&mi))?
            }
            Event::PeerLost { sci, mi } => {
                writeln!(out, "peer_lost {} {}", hexs(&sci.0), hexs(&mi))?
            }
            Event::KeyServerElected { sci, is_self } => writeln!(
                out,
                "key_server {} {}",
                sci.map_or("-".into(), |s| hexs(&s.0)),
                match (sci, is_self) {
                    (None, _) => "none",
                    (_, true) => "self",
                    _ => "peer",
                }
            )?,
            Event::SakDistributed { key, an, reason } => writeln!(
                out,
                "sak_distributed {} {} {an} {}",
                hexs(&key.mi),
                key.kn,
                reason.name()
            )?,
            Event::IcvFailure { src } => writeln!(out, "icv_failure {src}")?,
            Event::CakDistributed { cak, ckn } => writeln!(
                out,
                "cak_distributed {} {}",
                hexs(cak.as_bytes()),
                hexs(&ckn)
            )?,
            other => writeln!(out, "other {other:?}")?,
        }
    }
    Ok(())
}

fn flush(p: &mut Participant, now: u64, out: &mut impl Write) -> std::io::Result<()> {
    let mut buf = vec![0u8; p.max_frame_len()];
    while let Some(n) = p.poll_transmit(now, &mut buf) {
        writeln!(out, "tx {}", hexs(&buf[..n]))?;
    }
    print_events(p, out)?;
    writeln!(out, "done")?;
    out.flush()
}

fn session(suite: CipherSuite) -> Result<(), Box<dyn std::error::Error>> {
    let provider = ivnsec_conformance::provider("portable");
    let mut cfg = Config::new(suite);
    cfg.max_peers = 4;
    cfg.rekey_interval_ns = Some(3_000_000_000);
    let mut m = Vec::new();
    for i in 0..3u8 {
        let sci = Sci::end_station(ivnsec_core::wire::ethernet::MacAddr([
            2,
            0,
            0,
            0,
            0,
            1 + 0x10 * i,
        ]));
        let rng = Rng(AtomicU64::new(1 + 1000 * u64::from(i)));
        m.push(
            Participant::new(cfg, &[0x5a; 16], b"fuzz-ckn", sci, provider, rng, 0)
                .map_err(|e| e.to_string())?,
        );
    }
    let mut buf = vec![0u8; 2048];
    let mut now = 0u64;
    while now < 8_000_000_000 {
        for _ in 0..50 {
            let mut sent = Vec::new();
            for (i, p) in m.iter_mut().enumerate() {
                while let Some(n) = p.poll_transmit(now, &mut buf) {
                    println!("frame {i} {now} {}", hexs(&buf[..n]));
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
                        let _ = p.handle_pdu(now, f);
                    }
                }
            }
        }
        now = m
            .iter()
            .filter_map(|p| p.poll_timeout())
            .min()
            .unwrap_or(now)
            .max(now + 1);
        for p in m.iter_mut() {
            p.handle_timeout(now);
        }
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(s) = arg(&args, "--session") {
        return session(CipherSuite::from_profile(&s).ok_or("unknown --session suite")?);
    }
    let need = |n: &str| arg(&args, n).ok_or_else(|| format!("missing {n}; see the file's usage"));
    let cak = hex::decode(need("--cak")?)?;
    let ckn = hex::decode(need("--ckn")?)?;
    let suite = CipherSuite::from_profile(&need("--suite")?).ok_or("unknown --suite")?;
    let sci_bytes: [u8; 8] = hex::decode(need("--sci")?)?
        .try_into()
        .map_err(|_| "--sci takes 8 bytes")?;
    let provider =
        ivnsec_conformance::provider(&arg(&args, "--provider").unwrap_or("portable".into()));
    let mut cfg = Config::new(suite);
    if let Some(p) = arg(&args, "--priority") {
        cfg.key_server_priority = p.parse()?;
    }
    let sci = Sci(sci_bytes);
    let seed = sci.to_u64() ^ 0x5eed;
    let mut p = Participant::new(cfg, &cak, &ckn, sci, provider, Rng(AtomicU64::new(seed)), 0)
        .map_err(|e| e.to_string())?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    flush(&mut p, 0, &mut out)?;
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        let w: Vec<&str> = line.split_whitespace().collect();
        let now: u64 = w.get(1).ok_or("missing time")?.parse()?;
        match w[0] {
            "rx" => match p.handle_pdu(now, &hex::decode(w.get(2).ok_or("missing frame")?)?) {
                Ok(()) => writeln!(out, "ok")?,
                Err(d) => writeln!(out, "drop {}", d.name())?,
            },
            "tick" => p.handle_timeout(now),
            "pn" => p.report_tx_pn(now, w[2].parse()?, w[3].parse()?),
            "dcak" => {
                let hex_arg = |i: usize| hex::decode(w.get(i).copied().unwrap_or_default());
                p.distribute_cak(now, &hex_arg(2)?, &hex_arg(3)?)
                    .map_err(|e| e.to_string())?
            }
            "nodcak" => p.stop_distributing_cak(),
            other => return Err(format!("unknown command {other}").into()),
        }
        flush(&mut p, now, &mut out)?;
    }
    Ok(())
}
