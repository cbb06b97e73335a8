//! Messages larger than one link MTU over a [`Channel`]: each message is cut into fragments
//! (`ivnsec_core::wire::frag`, format in `docs/fragmentation.md`) and every fragment is protected
//! as its own unit — its own sequence number, its own tag/ICV — as MACsec protects every frame.
//! The receiver verifies each unit first and only then hands the fragment to a bounded
//! reassembler. The same code serves every family (IVN-AE suites, MACsec, ESP over raw IPv4, and
//! the UDP loopback fallback), so a profile's cost per message is always "N protected units".
//!
//! Sender side: [`FragSender`] picks the largest fragment whose protected unit fits the MTU and
//! protects fragments batch by batch into a flat buffer, ready for `Link::send_batch`
//! ([`FragSender::send`] does the whole message). Receiver side: [`FragReceiver::accept`] takes
//! one received unit and returns the message once its last fragment verified. Nothing is
//! allocated per fragment on either side; the reassembler reuses its message buffers.

use std::collections::BTreeMap;

use anyhow::{Context, Result, anyhow, bail};
use ivnsec_core::sa::{DropCounters, DropReason};
use ivnsec_core::wire::ethernet;
pub use ivnsec_core::wire::frag::{FragDrop, Limits, Message, ReassemblyStats};
use ivnsec_core::wire::frag::{Fragmenter, HEADER_LEN, Reassembler, fragment_count};

use ivnsec_core::channel::Channel;
use ivnsec_net::link::Link;

/// The largest payload (fragment header and data) one protected unit of `ch` carries when
/// what follows the Ethernet header may be at most `mtu` bytes: the IVN-AE or MACsec frame, or
/// the IPv4 header and the ESP packet.
pub fn max_unit_payload(ch: &Channel, mtu: usize) -> Result<usize> {
    let fits = |p: usize| ch.frame_bytes(p) - ethernet::HEADER_LEN <= mtu;
    // Frame lengths grow with the payload (by padding steps at most a block), so walk down from
    // the MTU to the first payload that fits.
    let mut p = mtu;
    while p > HEADER_LEN && !fits(p) {
        p -= 1;
    }
    if p <= HEADER_LEN || !fits(p) {
        bail!("a {mtu}-byte MTU leaves no room for fragment data after the protection overhead");
    }
    Ok(p)
}

/// Cuts messages into fragments and protects each with the sender's channel. Owns a batch
/// buffer for [`send`](Self::send); [`start`](Self::start) lets a caller use its own.
#[derive(Debug)]
pub struct FragSender {
    max_unit: usize,
    next_id: u32,
    scratch: Vec<u8>,
    stride: usize,
    buf: Vec<u8>,
    lens: Vec<usize>,
}

impl FragSender {
    /// A sender for `ch` on a link of `mtu` bytes that hands the kernel up to `batch` units per
    /// `sendmmsg` (1..=64). Message ids start at `first_id` and count up (ids must not repeat
    /// toward one receiver within its memory of [`RECENT`] messages).
    ///
    /// [`RECENT`]: ivnsec_core::wire::frag::RECENT
    pub fn new(ch: &Channel, mtu: usize, first_id: u32, batch: usize) -> Result<FragSender> {
        if !(1..=ivnsec_net::sys::MAX_BATCH).contains(&batch) {
            bail!("batch must be 1..={}", ivnsec_net::sys::MAX_BATCH);
        }
        let max_unit = max_unit_payload(ch, mtu)?;
        let stride = slot_len(max_unit);
        Ok(FragSender {
            max_unit,
            next_id: first_id,
            scratch: vec![0u8; max_unit],
            stride,
            buf: vec![0u8; stride * batch],
            lens: vec![0; batch],
        })
    }

    /// The largest fragment (header and data) one unit carries.
    pub fn max_unit(&self) -> usize {
        self.max_unit
    }

    /// Protected units a `len`-byte message takes.
    pub fn fragments(&self, len: usize) -> usize {
        fragment_count(len, self.max_unit)
    }

    /// Room one protected unit needs in a buffer slot (send and receive), cache-line aligned.
    pub fn slot_len(&self) -> usize {
        self.stride
    }

    #[allow(dead_code)] // for callers with buffers of their own (tests use it)
    /// Starts sending `msg` from the caller's own buffers: its fragments are then protected
    /// batch by batch with [`Outgoing::protect_batch`]. Takes the next message id.
    pub fn start<'s, 'm>(&'s mut self, msg: &'m [u8]) -> Result<Outgoing<'s, 'm>> {
        let frag = Fragmenter::new(self.next_id, msg, self.max_unit)
            .map_err(|e| anyhow!("message of {} bytes: {e}", msg.len()))?;
        self.next_id = self.next_id.wrapping_add(1);
        Ok(Outgoing {
            frag,
            scratch: &mut self.scratch,
        })
    }

    /// Protects and sends all of `msg` on `link`, a batch of units per `sendmmsg`. `on_unit`
    /// sees every protected unit right after its batch was sent (to record a capture). Returns
    /// the message id and the number of units sent.
    pub fn send(
        &mut self,
        ch: &mut Channel,
        link: &Link,
        msg: &[u8],
        mut on_unit: impl FnMut(&[u8]),
    ) -> Result<(u32, usize)> {
        let mut frag = Fragmenter::new(self.next_id, msg, self.max_unit)
            .map_err(|e| anyhow!("message of {} bytes: {e}", msg.len()))?;
        self.next_id = self.next_id.wrapping_add(1);
        let id = frag.msg_id();
        let stride = self.stride;
        let mut units = 0;
        loop {
            let k = protect_into(
                &mut frag,
                &mut self.scratch,
                ch,
                &mut self.buf,
                stride,
                &mut self.lens,
            )?;
            if k == 0 {
                break;
            }
            link.send_batch(&self.buf, stride, &self.lens[..k])
                .context("sending fragments")?;
            for (i, &len) in self.lens[..k].iter().enumerate() {
                on_unit(&self.buf[i * stride..i * stride + len]);
            }
            units += k;
        }
        Ok((id, units))
    }
}

/// Room a unit carrying `max_unit` payload bytes needs in a buffer slot, cache-line aligned.
pub fn slot_len(max_unit: usize) -> usize {
    Channel::buffer_len(max_unit).next_multiple_of(64)
}

/// Protects up to `lens.len()` next fragments of `frag` into the slots of `buf`.
fn protect_into(
    frag: &mut Fragmenter<'_>,
    scratch: &mut [u8],
    ch: &mut Channel,
    buf: &mut [u8],
    stride: usize,
    lens: &mut [usize],
) -> Result<usize> {
    let mut k = 0;
    while k < lens.len() {
        if ch.next_seq().is_none() {
            bail!("sequence numbers exhausted");
        }
        let Some(n) = frag.next_into(scratch) else {
            break;
        };
        let slot = buf
            .get_mut(k * stride..(k + 1) * stride)
            .ok_or_else(|| anyhow!("fragment buffer too small"))?;
        lens[k] = ch.protect(&scratch[..n], slot)?;
        k += 1;
    }
    Ok(k)
}

/// One message being fragmented and protected.
#[derive(Debug)]
#[allow(dead_code)] // for callers with buffers of their own (tests use it)
pub struct Outgoing<'s, 'm> {
    frag: Fragmenter<'m>,
    scratch: &'s mut [u8],
}

#[allow(dead_code)] // for callers with buffers of their own (tests use it)
impl Outgoing<'_, '_> {
    pub fn msg_id(&self) -> u32 {
        self.frag.msg_id()
    }

    /// Fragments still to protect.
    pub fn remaining(&self) -> usize {
        self.frag.remaining()
    }

    /// Protects up to `lens.len()` next fragments with `ch`, fragment `i` into
    /// `buf[i * stride..(i + 1) * stride]` (its length in `lens[i]`); returns how many (0 when
    /// the message is done). Fails when the channel's sequence numbers are exhausted.
    pub fn protect_batch(
        &mut self,
        ch: &mut Channel,
        buf: &mut [u8],
        stride: usize,
        lens: &mut [usize],
    ) -> Result<usize> {
        protect_into(&mut self.frag, self.scratch, ch, buf, stride, lens)
    }
}

/// Why a received unit did not (yet) make a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reject {
    /// The unit did not verify.
    Verify(DropReason),
    /// It verified, but the reassembler did not take its fragment.
    Frag(FragDrop),
}

/// Verifies received units and reassembles their fragments, counting every drop.
#[derive(Debug)]
pub struct FragReceiver {
    reasm: Reassembler,
    verify: DropCounters,
}

impl FragReceiver {
    pub fn new(limits: Limits) -> FragReceiver {
        FragReceiver {
            reasm: Reassembler::new(limits),
            verify: DropCounters::default(),
        }
    }

    /// Verifies the unit received into `buf[ch.rx_offset()..][..len]` with `ch` (in place) and
    /// gives its fragment to the reassembler as coming from `peer` at `now_ns`
    /// (CLOCK_MONOTONIC). Returns the message its last fragment completed; every reject is
    /// counted.
    pub fn accept(
        &mut self,
        ch: &mut Channel,
        peer: u64,
        buf: &mut [u8],
        len: usize,
        now_ns: u64,
    ) -> Result<Option<Message<'_>>, Reject> {
        let range = match ch.verify(buf, len) {
            Ok(r) => r,
            Err(r) => {
                self.verify.bump(r);
                return Err(Reject::Verify(r));
            }
        };
        self.reasm
            .push(peer, &buf[range], now_ns)
            .map_err(Reject::Frag)
    }

    #[allow(dead_code)] // for receivers of several peers and for reports (tests use it)
    /// Counts a unit dropped before verification (e.g. from no known sender).
    pub fn count_drop(&mut self, r: DropReason) {
        self.verify.bump(r);
    }

    /// Gives up incomplete messages older than the timeout.
    pub fn expire(&mut self, now_ns: u64) {
        self.reasm.expire(now_ns);
    }

    #[allow(dead_code)] // for receivers of several peers and for reports (tests use it)
    pub fn stats(&self) -> &ReassemblyStats {
        self.reasm.stats()
    }

    #[allow(dead_code)] // for receivers of several peers and for reports (tests use it)
    pub fn verify_drops(&self) -> &DropCounters {
        &self.verify
    }

    #[allow(dead_code)] // for receivers of several peers and for reports (tests use it)
    /// Messages in progress.
    pub fn pending(&self) -> usize {
        self.reasm.pending()
    }

    /// Every non-zero counter by its stable name: verify drop reasons (`bad_tag`, …),
    /// reassembly drop reasons (`frag_overlap`, …) and messages given up (`frag_evicted_timeout`,
    /// `frag_evicted_pending`, `frag_evicted_memory`).
    pub fn drop_counts(&self) -> BTreeMap<String, u64> {
        let mut m: BTreeMap<String, u64> = self
            .verify
            .iter()
            .map(|(r, n)| (r.name().to_string(), n))
            .collect();
        let s = self.reasm.stats();
        m.extend(s.drops().map(|(r, n)| (r.name().to_string(), n)));
        for (k, n) in [
            ("frag_evicted_timeout", s.evicted_timeout),
            ("frag_evicted_pending", s.evicted_pending),
            ("frag_evicted_memory", s.evicted_memory),
        ] {
            if n > 0 {
                m.insert(k.to_string(), n);
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use ivnsec_core::channel::{ChannelOptions, Ends, IPV4_HLEN};
    use ivnsec_core::profile::Profile;
    use ivnsec_crypto::ProviderChoice;

    use ivnsec_node::channel::{open, random_keys};

    fn ends() -> Ends {
        Ends {
            local_mac: [2, 0, 0, 0, 0, 1],
            peer_mac: [2, 0, 0, 0, 0, 2],
            local_ip: Ipv4Addr::new(10, 0, 0, 1),
            peer_ip: Ipv4Addr::new(10, 0, 0, 2),
        }
    }

    fn pair(profile: &str) -> (Channel, Channel) {
        let profile: Profile = profile.parse().unwrap();
        let (f, b) = (random_keys(profile).unwrap(), random_keys(profile).unwrap());
        let p = ProviderChoice::Auto;
        let tx = open(profile, p, &f, &b, ends(), 0, ChannelOptions::default()).unwrap();
        let opts = ChannelOptions {
            replay_window: 1024,
            ..ChannelOptions::default()
        };
        let rx = open(profile, p, &b, &f, ends().reversed(), 1, opts).unwrap();
        (tx, rx)
    }

    const PROFILES: [&str; 11] = [
        "plain",
        "crc32",
        "aes128-gcm",
        "aes256-cbc-hmac-sha256",
        "macsec-gcm-aes-128",
        "macsec-gcm-aes-128/auth",
        "esp-aes128-gcm",
        "esp-null-hmac-sha256",
        "secoc-cmac-aes128",
        "someip-aes128-gcm/conf",
        "someip-nosec",
    ];

    /// What the link would carry after the Ethernet header for a unit of `len` bytes.
    fn l2_len(ch: &Channel, len: usize) -> usize {
        match ch.profile() {
            Profile::Esp(_) => IPV4_HLEN + len,
            // SecOC and SOME/IP units are UDP payloads.
            f if f.is_udp() => IPV4_HLEN + 8 + len,
            _ => len - ethernet::HEADER_LEN,
        }
    }

    /// A 24,938-byte lidar message crosses every family in units that each fit the 1500-byte
    /// MTU, each verified on its own, and comes out whole.
    #[test]
    fn lidar_message_through_every_family() {
        let msg: Vec<u8> = (0..24_938u32).map(|i| (i * 13 + 5) as u8).collect();
        for profile in PROFILES {
            let (mut tx, mut rx) = pair(profile);
            let mut s = FragSender::new(&tx, 1500, 1, 8).unwrap();
            let max = s.max_unit();
            // The largest payload really is the largest: one more byte would not fit.
            assert!(tx.frame_bytes(max) - 14 <= 1500, "{profile}");
            assert!(tx.frame_bytes(max + 1) - 14 > 1500, "{profile}");
            let n = s.fragments(msg.len());
            let stride = s.slot_len();
            let mut buf = vec![0u8; stride * 8];
            let mut lens = [0usize; 8];
            let mut out = s.start(&msg).unwrap();
            assert_eq!(out.remaining(), n);
            let mut units = Vec::new();
            loop {
                let k = out
                    .protect_batch(&mut tx, &mut buf, stride, &mut lens)
                    .unwrap();
                if k == 0 {
                    break;
                }
                for (i, &len) in lens.iter().enumerate().take(k) {
                    assert!(l2_len(&tx, len) <= 1500, "{profile}: {len}");
                    units.push(buf[i * stride..i * stride + len].to_vec());
                }
            }
            assert_eq!(units.len(), n, "{profile}");
            let mut r = FragReceiver::new(Limits::default());
            let off = rx.rx_offset();
            let mut got = None;
            for (k, u) in units.iter().enumerate() {
                let mut b = vec![0u8; stride];
                b[off..off + u.len()].copy_from_slice(u);
                let m = r.accept(&mut rx, 7, &mut b, u.len(), 0).unwrap();
                if k + 1 < units.len() {
                    assert!(m.is_none());
                } else {
                    got = m.map(|m| (m.msg_id, m.data.to_vec()));
                }
            }
            assert_eq!(got, Some((1, msg.clone())), "{profile}");
            assert!(r.drop_counts().is_empty(), "{profile}");
        }
    }

    /// A tampered fragment is a verify drop (not a reassembly matter), so the message never
    /// completes and the late fragments of it are not a new message.
    #[test]
    fn tampered_fragment_is_dropped_before_reassembly() {
        for profile in ["aes128-gcm", "macsec-gcm-aes-128", "esp-null-hmac-sha256"] {
            let (mut tx, mut rx) = pair(profile);
            let mut s = FragSender::new(&tx, 1500, 40, 4).unwrap();
            let msg = vec![0x5Au8; 4000];
            let stride = s.slot_len();
            let mut buf = vec![0u8; stride * 4];
            let mut lens = [0usize; 4];
            let k = s
                .start(&msg)
                .unwrap()
                .protect_batch(&mut tx, &mut buf, stride, &mut lens)
                .unwrap();
            assert_eq!(k, 3);
            let mut r = FragReceiver::new(Limits::default());
            let off = rx.rx_offset();
            for i in 0..k {
                let mut b = vec![0u8; stride];
                b[off..off + lens[i]].copy_from_slice(&buf[i * stride..i * stride + lens[i]]);
                if i == 1 {
                    b[off + lens[i] - 20] ^= 1;
                    let e = r.accept(&mut rx, 1, &mut b, lens[i], 0).unwrap_err();
                    assert!(matches!(e, Reject::Verify(_)), "{profile}: {e:?}");
                } else {
                    assert!(r.accept(&mut rx, 1, &mut b, lens[i], 0).unwrap().is_none());
                }
            }
            assert_eq!(r.pending(), 1);
            r.expire(10_000_000_000);
            let d = r.drop_counts();
            assert_eq!(d.get("frag_evicted_timeout"), Some(&1), "{profile}: {d:?}");
            assert_eq!(d.values().sum::<u64>(), 2, "{profile}: {d:?}");
        }
    }

    #[test]
    fn tiny_mtu_is_an_error() {
        for profile in PROFILES {
            let (tx, _) = pair(profile);
            // What the family puts around a payload after the Ethernet header.
            let overhead = tx.frame_bytes(0) - ethernet::HEADER_LEN;
            let mtu = overhead + HEADER_LEN;
            assert!(max_unit_payload(&tx, mtu - 1).is_err(), "{profile}");
            // Room for the fragment header only: no data, no fragment (CBC pads a short
            // payload up to a block, so there the room may suffice).
            if !profile.contains("cbc") {
                assert!(FragSender::new(&tx, mtu, 0, 1).is_err(), "{profile}");
            }
            assert!(
                max_unit_payload(&tx, mtu + 16).unwrap() > HEADER_LEN,
                "{profile}"
            );
        }
        let (tx, _) = pair("macsec-gcm-aes-128");
        // MACsec with an SCI: 12 addresses + SecTAG 16 + inner EtherType 2 + ICV 16 − 14.
        assert_eq!(max_unit_payload(&tx, 1500).unwrap(), 1500 - 32);
        assert!(FragSender::new(&tx, 1500, 0, 65).is_err());
        assert!(FragSender::new(&tx, 1500, 0, 0).is_err());
    }
}
