//! The throughput roles over TCP (seed 003 Fig. 5c and 6: secured SOME/IP with 64 kB payloads
//! on a TCP connection): each sender opens one connection to the receiver and writes protected
//! SOME/IP messages back to back; the kernel segments them. The receiver cuts each stream into
//! messages by the SOME/IP `length` field ([`StreamDeframer`]: one buffer of a fixed size,
//! allocated once; a length past the bound or a corrupt header is skipped and counted as
//! `stream_resync`, never allocated for) and verifies every message with the sender's SA.
//!
//! The protocol with the orchestrator is that of [`super::node`]: the receiver prints `READY
//! <tcp port>`, then `RECV`/`DROP`/`CPU`/`END` on stdin EOF; a sender connects, waits for the
//! start line, sends for the given time, closes its side and prints `SENT …` and `END`. The
//! spec's `link` must be a UDP link: its addresses are the TCP ones (receiver: where to listen;
//! sender: whom to connect to). Socket buffers are left to the kernel's TCP autotuning (as
//! iperf3 leaves them).

use std::io::{BufRead, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::channel::{Channel, SOMEIP_CLIENT};
use ivnsec_core::profile::Profile;
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_core::wire::someip::{Deframed, StreamDeframer};
use ivnsec_net::link::LinkSpec;
use ivnsec_net::sys::{monotonic_ns, rusage_self};

use super::node::{TputSpec, receiver_channel, sender_channel, spi_offset, wait_until};
use super::{TokenBucket, tcp_wire_bytes};
use crate::process::stop_on_stdin_eof;

/// Largest SOME/IP payload a TCP throughput run sends (and so the bound of the receiver's
/// message buffer): 1 MiB.
pub const MAX_TCP_PAYLOAD: usize = 1 << 20;
/// Bytes one sender hands to the kernel per `write` at most (small messages are coalesced).
/// 256 KiB: with 1 MiB writes (15 messages of 64 KiB protected, then written) the stream ran at
/// half the rate on the testbed (3.8–4.9 Gb/s against 8.5–10 with 2–8 messages per write,
/// AES-128-GCM conf, docs/benchmarks.md): the connection idles while a large batch is
/// protected.
const MAX_WRITE: usize = 256 << 10;
/// Wire bytes a shaped TCP sender may catch up by after being descheduled (8.4 ms at 1 Gb/s):
/// what a NIC with TCP segmentation offload holds in a few descriptors. With only the three
/// 64 KiB messages of one write, a sender on a loaded machine fell to 0.89–0.97 of the shaped
/// rate; with 1 MiB, 0.99–1.00 (docs/benchmarks.md).
const BUCKET_BYTES: usize = 1 << 20;
/// How long the receiver waits for every sender to connect.
const ACCEPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest protected message of a `payload`-byte payload: the bound the receiver's
/// deframer holds (header, payload and any security overhead).
pub fn max_message(payload: usize) -> usize {
    Channel::buffer_len(payload)
}

fn tcp_addr(link: &LinkSpec, sender: bool) -> Result<SocketAddr> {
    match (link, sender) {
        (LinkSpec::Udp { peer: Some(p), .. }, true) => Ok(*p),
        (LinkSpec::Udp { local, .. }, false) => Ok(*local),
        _ => bail!("a TCP throughput node needs the IP addresses of a UDP link spec"),
    }
}

fn check_family(spec: &TputSpec) -> Result<()> {
    if !matches!(spec.profile, Profile::Someip(_)) {
        bail!("TCP throughput runs carry SOME/IP profiles only (someip-…)");
    }
    if spec.payload == 0 || spec.payload > MAX_TCP_PAYLOAD {
        bail!("TCP payload must be 1..={MAX_TCP_PAYLOAD} bytes");
    }
    Ok(())
}

/// Sender `index` over TCP.
pub(super) fn sender(spec: &TputSpec, index: usize) -> Result<()> {
    check_family(spec)?;
    let peer = spec
        .peers
        .get(index)
        .ok_or_else(|| anyhow!("no peer entry for sender {index}"))?;
    let mut ch = sender_channel(spec.profile, spec.provider, peer, index)?;
    let addr = tcp_addr(&spec.link, true)?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))
        .with_context(|| format!("connecting to the receiver at {addr}"))?;
    let unit = max_message(spec.payload);
    // Coalesce small messages into one write (as the datagram roles batch), at most MAX_WRITE.
    let per_write = spec.batch.clamp(1, (MAX_WRITE / unit).max(1));
    let mut buf = vec![0u8; unit * per_write];
    let mut payload = vec![0u8; spec.payload];
    getrandom::fill(&mut payload).map_err(|e| anyhow!("random payload: {e}"))?;
    let message = ch.frame_bytes(spec.payload) - ivnsec_core::channel::UDP_AT;
    let wire = tcp_wire_bytes(message);

    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;

    let (u0, s0) = rusage_self();
    let start = monotonic_ns();
    let deadline = start + spec.seconds_ns;
    let mut bucket = spec
        .rate_bps
        .map(|r| TokenBucket::new(r, (wire * per_write.max(2)).max(BUCKET_BYTES), start));
    let mut sent = 0u64;
    let mut pacing = 0u64;
    let mut last = start;
    while monotonic_ns() < deadline {
        let mut k = 0;
        let mut pos = 0;
        while k < per_write && ch.next_seq().is_some() {
            pos += ch.protect(&payload, &mut buf[pos..pos + unit])?;
            k += 1;
        }
        if k == 0 {
            eprintln!("sender {index}: sequence numbers exhausted; stopping");
            break;
        }
        if let Some(b) = bucket.as_mut() {
            let wait = b.take(monotonic_ns(), wire * k);
            if wait > 0 {
                pacing += wait_until(monotonic_ns() + wait);
            }
        }
        stream
            .write_all(&buf[..pos])
            .context("writing to the TCP connection")?;
        last = monotonic_ns();
        sent += k as u64;
    }
    let (u1, s1) = rusage_self();
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let out = std::io::stdout();
    let mut out = out.lock();
    writeln!(
        out,
        "SENT {sent} {start} {last} {} {} {pacing}",
        u1 - u0,
        s1 - s0
    )?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

/// What one connection delivered.
#[derive(Debug, Default)]
pub(crate) struct StreamLog {
    /// The sender the connection's first message named (by its SOME/IP client ID).
    pub who: Option<usize>,
    pub delivered: u64,
    pub drops: DropCounters,
}

/// The receiver's side of one connection: cuts `input` into messages, binds the connection to
/// the sender its first message names (`clients[i]` = sender i's client ID), takes that
/// sender's channel out of `slots` and verifies each message with it. Ends at end of stream,
/// on `stop`, or on a read error. A message naming another sender than the connection's, or a
/// sender whose channel another connection holds, counts as `unknown_sa`.
pub(crate) fn receive_stream(
    input: &mut impl std::io::Read,
    slots: &Mutex<Vec<Option<Channel>>>,
    clients: &[[u8; 2]],
    payload: usize,
    stop: &AtomicBool,
) -> StreamLog {
    let bound = max_message(payload);
    let mut log = StreamLog::default();
    let mut ch: Option<Channel> = None;
    // Room for a few messages per read; messages longer than one are refused by the
    // deframer's bound or by verify.
    let mut d = StreamDeframer::new(4 * bound);
    while !stop.load(Ordering::Relaxed) {
        match input.read(d.space()) {
            Ok(0) => break,
            Ok(k) => d.commit(k),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(_) => break,
        }
        loop {
            let named = match d.poll() {
                Deframed::NeedMore => break,
                Deframed::Resync(_) => {
                    log.drops.bump(DropReason::StreamResync);
                    continue;
                }
                Deframed::Message(m) => m
                    .get(8..10)
                    .and_then(|c| clients.iter().position(|x| x == c)),
            };
            if ch.is_none()
                && let Some(i) = named
            {
                ch = slots
                    .lock()
                    .ok()
                    .and_then(|mut s| s.get_mut(i).and_then(Option::take));
                if ch.is_some() {
                    log.who = Some(i);
                }
            }
            let Some(c) = ch.as_mut().filter(|_| named.is_some() && named == log.who) else {
                log.drops.bump(DropReason::UnknownSa);
                continue;
            };
            let m = d.message_mut();
            let len = m.len();
            match c.verify(m, len) {
                Ok(r) if r.len() == payload => log.delivered += 1,
                Ok(_) => log.drops.bump(DropReason::Malformed),
                Err(reason) => log.drops.bump(reason),
            }
        }
    }
    if let (Some(c), Some(i)) = (ch, log.who)
        && let Ok(mut s) = slots.lock()
        && let Some(slot) = s.get_mut(i)
    {
        *slot = Some(c);
    }
    log
}

/// The receiver over TCP: one connection per sender, each read by a thread of its own.
pub(super) fn receiver(spec: &TputSpec) -> Result<()> {
    check_family(spec)?;
    let chans: Vec<Option<Channel>> = spec
        .peers
        .iter()
        .enumerate()
        .map(|(i, p)| receiver_channel(spec.profile, spec.provider, p, i).map(Some))
        .collect::<Result<_>>()?;
    let n = chans.len();
    let clients: Arc<Vec<[u8; 2]>> = Arc::new(
        (0..n)
            .map(|i| {
                SOMEIP_CLIENT
                    .wrapping_add(spi_offset(i) as u16)
                    .to_be_bytes()
            })
            .collect(),
    );
    let slots = Arc::new(Mutex::new(chans));
    let addr = tcp_addr(&spec.link, false)?;
    let listener = TcpListener::bind(addr).with_context(|| format!("listening on {addr}"))?;
    listener.set_nonblocking(true)?;
    let stop = stop_on_stdin_eof();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    writeln!(out, "READY {}", listener.local_addr()?.port())?;
    out.flush()?;

    let (u0, s0) = rusage_self();
    let t0 = monotonic_ns();
    let mut workers = Vec::new();
    while workers.len() < n && !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false)?;
                s.set_read_timeout(Some(Duration::from_millis(100)))?;
                let (slots, clients, stop) = (slots.clone(), clients.clone(), stop.clone());
                let payload = spec.payload;
                workers.push(std::thread::spawn(move || {
                    let mut s = s;
                    receive_stream(&mut s, &slots, &clients, payload, &stop)
                }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if monotonic_ns() - t0 > ACCEPT_TIMEOUT.as_nanos() as u64 {
                    eprintln!(
                        "receiver: {} of {n} sender(s) connected within {} s",
                        workers.len(),
                        ACCEPT_TIMEOUT.as_secs()
                    );
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e).context("accepting a sender's connection"),
        }
    }
    let mut delivered = vec![0u64; n];
    let mut drops = DropCounters::default();
    for w in workers {
        let log = w
            .join()
            .map_err(|_| anyhow!("a receiving thread panicked"))?;
        if let Some(i) = log.who {
            delivered[i] += log.delivered;
        }
        drops.merge(&log.drops);
    }
    // The channels' own counters are not needed: every verify outcome was counted above.
    let (u1, s1) = rusage_self();
    for (i, d) in delivered.iter().enumerate() {
        writeln!(out, "RECV {i} {d}")?;
    }
    for (reason, k) in drops.iter() {
        writeln!(out, "DROP {reason} {k}")?;
    }
    writeln!(out, "CPU {} {}", u1 - u0, s1 - s0)?;
    writeln!(out, "END")?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::throughput::node::Peer;
    use ivnsec_core::channel::Ends;
    use ivnsec_crypto::ProviderChoice;
    use ivnsec_node::channel::random_keys;
    use std::net::Ipv4Addr;

    const PAYLOAD: usize = 65_536;

    fn profile(p: &str) -> Profile {
        p.parse().unwrap()
    }

    fn peers(p: Profile, n: usize) -> Vec<Peer> {
        (0..n)
            .map(|i| Peer {
                keys: random_keys(p).unwrap(),
                ends: Ends {
                    local_mac: [2, 0, 0, 0, 1, i as u8 + 1],
                    peer_mac: [2, 0, 0, 0, 0, 1],
                    local_ip: Ipv4Addr::new(10, 0, 1, i as u8 + 1),
                    peer_ip: Ipv4Addr::new(10, 0, 0, 1),
                },
            })
            .collect()
    }

    fn clients(n: usize) -> Vec<[u8; 2]> {
        (0..n)
            .map(|i| {
                SOMEIP_CLIENT
                    .wrapping_add(spi_offset(i) as u16)
                    .to_be_bytes()
            })
            .collect()
    }

    fn slots(p: Profile, peers: &[Peer]) -> Mutex<Vec<Option<Channel>>> {
        Mutex::new(
            peers
                .iter()
                .enumerate()
                .map(|(i, x)| Some(receiver_channel(p, ProviderChoice::Portable, x, i).unwrap()))
                .collect(),
        )
    }

    /// `n` protected messages of sender `index`, back to back as they go on the stream.
    fn stream_of(p: Profile, peers: &[Peer], index: usize, n: usize) -> Vec<u8> {
        let mut ch = sender_channel(p, ProviderChoice::Portable, &peers[index], index).unwrap();
        let payload: Vec<u8> = (0..PAYLOAD).map(|i| (i * 7) as u8).collect();
        let mut buf = vec![0u8; max_message(PAYLOAD)];
        let mut out = Vec::new();
        for _ in 0..n {
            let k = ch.protect(&payload, &mut buf).unwrap();
            out.extend_from_slice(&buf[..k]);
        }
        out
    }

    /// Reads at most `step` bytes per call, as a TCP socket hands a stream over in pieces.
    struct Trickle<'a>(&'a [u8], usize);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(buf.len()).min(self.1);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn receive(
        bytes: &[u8],
        step: usize,
        slots: &Mutex<Vec<Option<Channel>>>,
        n: usize,
    ) -> StreamLog {
        let stop = AtomicBool::new(false);
        receive_stream(
            &mut Trickle(bytes, step),
            slots,
            &clients(n),
            PAYLOAD,
            &stop,
        )
    }

    /// Every 64 kB message of every level arrives and verifies, whatever the pieces the stream
    /// comes in; the message carries the SOME/IP header (16), the key id (1) and the counter
    /// (8) before the payload and the 16-byte tag after it (docs/wire-someip-sec.md), or the
    /// header alone without security. The channel goes back to its slot at the end.
    #[test]
    fn whole_messages_verify_in_any_pieces() {
        for (name, overhead) in [
            ("someip-nosec", 16),
            ("someip-aes128-gcm/auth", 16 + 1 + 8 + 16),
            ("someip-chacha20-poly1305/conf", 16 + 1 + 8 + 16),
        ] {
            let p = profile(name);
            let peers = peers(p, 2);
            let bytes = stream_of(p, &peers, 1, 5);
            assert_eq!(bytes.len(), 5 * (PAYLOAD + overhead), "{name}");
            for step in [1 << 20, 1448, 7] {
                let s = slots(p, &peers);
                let log = receive(&bytes, step, &s, 2);
                assert_eq!((log.who, log.delivered), (Some(1), 5), "{name} {step}");
                assert_eq!(log.drops.iter().filter(|(_, n)| *n > 0).count(), 0);
                assert!(s.lock().unwrap().iter().all(Option::is_some));
            }
        }
    }

    fn drops(log: &StreamLog, r: DropReason) -> u64 {
        log.drops
            .iter()
            .find(|(x, _)| *x == r)
            .map_or(0, |(_, n)| n)
    }

    /// Hostile streams: a length field of 4 GiB, or past the bound, is never allocated for:
    /// the deframer skips to the next plausible header (`stream_resync`) and the messages
    /// after it still verify; a flipped ciphertext bit is `bad_tag`; a replayed message is a
    /// replay; a message naming a sender that is not the connection's is `unknown_sa`; a
    /// stream cut mid-message delivers what was whole.
    #[test]
    fn hostile_streams_are_counted_not_followed() {
        let p = profile("someip-aes128-gcm/conf");
        let peers = peers(p, 2);
        let good = stream_of(p, &peers, 0, 3);
        let one = good.len() / 3;

        let mut huge = good[..16].to_vec();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        huge.extend_from_slice(&good);
        let s = slots(p, &peers);
        let log = receive(&huge, 4096, &s, 2);
        assert_eq!(log.delivered, 3);
        assert!(drops(&log, DropReason::StreamResync) > 0);

        let mut past = good[..16].to_vec();
        past[4..8].copy_from_slice(&((4 * max_message(PAYLOAD)) as u32).to_be_bytes());
        past.extend_from_slice(&good);
        let log = receive(&past, 4096, &slots(p, &peers), 2);
        assert_eq!(log.delivered, 3);

        let mut flipped = good.clone();
        flipped[one + 100] ^= 1;
        let log = receive(&flipped, 1 << 16, &slots(p, &peers), 2);
        assert_eq!(log.delivered, 2);
        assert_eq!(drops(&log, DropReason::BadTag), 1);

        let mut replayed = good.clone();
        replayed.extend_from_slice(&good[..one]);
        let log = receive(&replayed, 1 << 16, &slots(p, &peers), 2);
        assert_eq!(log.delivered, 3);
        let replays =
            drops(&log, DropReason::ReplayDuplicate) + drops(&log, DropReason::ReplayTooOld);
        assert_eq!(replays, 1, "{:?}", log.drops);

        let mut mixed = good.clone();
        mixed.extend_from_slice(&stream_of(p, &peers, 1, 1));
        let log = receive(&mixed, 1 << 16, &slots(p, &peers), 2);
        assert_eq!((log.who, log.delivered), (Some(0), 3));
        assert_eq!(drops(&log, DropReason::UnknownSa), 1);

        let log = receive(&good[..good.len() - 10], 1 << 16, &slots(p, &peers), 2);
        assert_eq!(log.delivered, 2);

        // Two connections claiming one sender: the second gets no channel.
        let s = slots(p, &peers);
        let stop = AtomicBool::new(false);
        let c = clients(2);
        let held = s.lock().unwrap()[0].take();
        let log = receive_stream(&mut Trickle(&good, 1 << 16), &s, &c, PAYLOAD, &stop);
        assert_eq!((log.who, log.delivered), (None, 0));
        assert_eq!(drops(&log, DropReason::UnknownSa), 3);
        drop(held);

        // Garbage only: nothing delivered, nothing held beyond the deframer's buffer.
        let noise: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let log = receive(&noise, 1 << 16, &slots(p, &peers), 2);
        assert_eq!(log.delivered, 0);
    }
}
