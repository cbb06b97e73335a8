//! The forged frames of every attack class, built without any I/O, so the unit tests can feed
//! them straight into a receiving [`Channel`]; and the choice of captured frames to replay.
//! The attacker node process ([`super::node::run`]) captures legitimate frames off the switch
//! and injects these through an AF_PACKET socket (for SecOC and SOME/IP: whole
//! Ethernet/IPv4/UDP frames with right checksums, spoofed sources included).
//!
//! Where frames that were never delivered come from. Tampering, length, downgrade and
//! unknown-identifier attacks model a man in the middle that intercepts a frame before the
//! receiver sees it and forwards an altered copy. On a switch the original is always delivered,
//! and a copy of a frame the receiver has already accepted is dropped as a replay before its tag
//! is ever checked — which would test the replay window, not the tag. So those classes alter
//! *intercepted* frames: frames the legitimate sender's SA produces for the attacker from a
//! sequence-number range of their own ([`INTERCEPT_FIRST_SEQ`] up, far above anything the
//! legitimate sender reaches in a run, so no (key, nonce) pair is ever used twice). The attacker
//! never uses that SA to make a tag for anything it forges; unmodified, such a frame verifies,
//! which the tests check as the positive control.

use std::collections::VecDeque;
use std::net::Ipv4Addr;

use anyhow::{Result, bail};
use ivnsec_core::sa::someip::Level as SomeipLevel;
use ivnsec_core::suite::Level;
use ivnsec_core::wire::secoc::PDU_HEADER_LEN as PDU_HDR;

use ivnsec_core::channel::{
    Channel, ChannelOptions, DirectionKeys, Ends, IPV4_HLEN, SECOC_DATA_ID, SECOC_FV_BITS,
    SECOC_MAC_BITS, SOMEIP_KEY_ID, SOMEIP_SERVICE, UDP_AT, fix_udp_frame, write_udp_frame,
};
use ivnsec_core::profile::Profile;
use ivnsec_crypto::ProviderChoice;

use super::Attack;
use ivnsec_node::channel::{open, random_keys};

/// First sequence number / PN of the intercepted frames (see the module documentation); below
/// the 32-bit limit of MACsec without XPN and ESP without ESN.
pub const INTERCEPT_FIRST_SEQ: u64 = 1 << 31;
/// First sequence number of the frames the attacker protects under keys of its own: fresh to
/// the receiver, and apart from the intercepted ones.
const ROGUE_FIRST_SEQ: u64 = INTERCEPT_FIRST_SEQ + (1 << 30);

/// Ethernet header length.
const ETH: usize = 14;
/// Where the ESP header starts in an Ethernet frame (after the 20-byte IPv4 header).
const ESP_AT: usize = ETH + IPV4_HLEN;

/// A small, fast generator for bit positions, lengths and garbage (xorshift64*). Not for keys.
struct Rng(u64);

impl Rng {
    fn seeded() -> Rng {
        let mut b = [0u8; 8];
        let _ = getrandom::fill(&mut b);
        Rng(u64::from_le_bytes(b) | 1)
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..hi` (`hi > lo`).
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() % (hi - lo) as u64) as usize
    }

    fn fill(&mut self, out: &mut [u8]) {
        for chunk in out.chunks_mut(8) {
            let v = self.next().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

/// Byte ranges of a protected Ethernet frame of one family.
struct Layout {
    /// Identity and header fields an attacker may alter (never the destination MAC or the
    /// EtherType, which would only send the frame elsewhere).
    header: &'static [std::ops::Range<usize>],
    /// Sequence number / PN.
    seq: std::ops::Range<usize>,
    /// First byte of the (possibly encrypted) body.
    body: usize,
}

fn layout(family: Profile) -> Layout {
    match family {
        Profile::IvnAe(_) => Layout {
            header: &[6..12, 14..18],
            seq: 18..26,
            body: 26,
        },
        Profile::Macsec(_) => Layout {
            header: &[6..12, 14..16, 20..28],
            seq: 16..20,
            body: 28,
        },
        Profile::Esp(_) => Layout {
            // The SPI (the IPv4 header is checked by the stack before ESP sees anything).
            #[allow(clippy::single_range_in_vec_init)]
            header: &[ESP_AT..ESP_AT + 4],
            seq: ESP_AT + 4..ESP_AT + 8,
            body: ESP_AT + 8,
        },
        // Where their fields are depends on the payload length: `Forger::alter_udp`.
        Profile::Secoc(_) | Profile::Someip(_) => Layout {
            header: &[],
            seq: UDP_AT..UDP_AT,
            body: UDP_AT,
        },
    }
}

/// Makes the forged frames of every non-replay class.
pub struct Forger {
    family: Profile,
    /// The legitimate sender's SA, for intercepted frames only (module documentation).
    intercept: Channel,
    /// The sender's addresses and identity under a key the receiver does not have.
    rogue: Channel,
    /// The attacker's own addresses and identity under its own key.
    foreign: Channel,
    /// A `crc32` IVN-AE channel with the sender's identity (a downgrade to a suite without a
    /// key), for IVN-AE authentication-only profiles.
    crc32: Option<Channel>,
    payload: Vec<u8>,
    unit: Vec<u8>,
    rng: Rng,
    attacker_mac: [u8; 6],
}

impl Forger {
    /// `sender`: the legitimate sender's view of the link (local = sender, peer = receiver);
    /// `forward`: the sender → receiver keys (for intercepted frames).
    pub fn new(
        profile: Profile,
        provider: ProviderChoice,
        sender: Ends,
        forward: &DirectionKeys,
        attacker_mac: [u8; 6],
        attacker_ip: Ipv4Addr,
        payload: usize,
    ) -> Result<Forger> {
        let family = profile;
        let opts = ChannelOptions {
            first_seq: INTERCEPT_FIRST_SEQ,
            ..ChannelOptions::default()
        };
        let rogue_opts = ChannelOptions {
            first_seq: ROGUE_FIRST_SEQ,
            ..opts
        };
        let intercept = open(profile, provider, forward, forward, sender, 0, opts)?;
        let chan = |keys: &DirectionKeys, ends: Ends, profile: Profile| {
            open(profile, provider, keys, keys, ends, 0, rogue_opts)
        };
        let rogue = chan(&random_keys(profile)?, sender, profile)?;
        let foreign_ends = Ends {
            local_mac: attacker_mac,
            local_ip: attacker_ip,
            ..sender
        };
        // The attacker's own identity: UDP families also get another SOME/IP client ID /
        // SecOC Data ID (ESP keeps its SPI: the receiver refuses the address first).
        let foreign_opts = ChannelOptions {
            spi_offset: if family.is_udp() { 0x100 } else { 0 },
            ..rogue_opts
        };
        let fk = random_keys(profile)?;
        let foreign = open(profile, provider, &fk, &fk, foreign_ends, 0, foreign_opts)?;
        let crc32 = match family {
            Profile::IvnAe(p) if p.level != Level::Conf => {
                let crc32 = Profile::IvnAe(ivnsec_core::suite::Suite::Crc32.into());
                Some(chan(&random_keys(crc32)?, sender, crc32)?)
            }
            _ => None,
        };
        let mut rng = Rng::seeded();
        let mut pl = vec![0u8; payload.max(8)];
        rng.fill(&mut pl);
        Ok(Forger {
            family,
            intercept,
            rogue,
            foreign,
            crc32,
            payload: pl,
            unit: vec![0u8; Channel::buffer_len(payload.max(8))],
            rng,
            attacker_mac,
        })
    }

    /// A fresh random payload whose first 8 bytes mark it as forged (exchange ids of the
    /// legitimate ping-pong never have the top bit set).
    fn next_payload(&mut self, i: u64) {
        self.rng.fill(&mut self.payload);
        self.payload[..8].copy_from_slice(&(i | 1 << 63).to_be_bytes());
    }

    /// `ch` protects the current payload; the whole Ethernet frame goes to `out`.
    fn protect_with(
        ch: &mut Channel,
        payload: &[u8],
        unit: &mut [u8],
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let n = ch.protect(payload, unit)?;
        ch.capture_frame(&unit[..n], true, out);
        Ok(())
    }

    fn intercepted(&mut self, i: u64, out: &mut Vec<u8>) -> Result<()> {
        self.next_payload(i);
        Self::protect_with(&mut self.intercept, &self.payload, &mut self.unit, out)
    }

    /// An intercepted frame, unaltered: what the receiver must accept (the positive control of
    /// the tests; never injected by `ivnsec attack`).
    #[cfg(test)]
    pub fn intercepted_frame(&mut self, i: u64, out: &mut Vec<u8>) -> Result<()> {
        self.intercepted(i, out)
    }

    /// Forged frame number `i` of class `attack` (not a replay class) into `out`.
    pub fn forge(&mut self, attack: Attack, i: u64, out: &mut Vec<u8>) -> Result<()> {
        if self.family.is_udp()
            && matches!(
                attack,
                Attack::BitFlip | Attack::Length | Attack::Downgrade | Attack::UnknownId
            )
        {
            return self.forge_udp(attack, i, out);
        }
        let tag = self.intercept.tag_len();
        let lay = layout(self.intercept.profile());
        match attack {
            Attack::ForeignSource => {
                self.next_payload(i);
                Self::protect_with(&mut self.foreign, &self.payload, &mut self.unit, out)
            }
            Attack::NoKey => {
                self.next_payload(i);
                Self::protect_with(&mut self.rogue, &self.payload, &mut self.unit, out)
            }
            Attack::BitFlip => {
                self.intercepted(i, out)?;
                let len = out.len();
                let region = match i % 4 {
                    0 => {
                        let k = self.rng.range(0, lay.header.len());
                        lay.header[k].clone()
                    }
                    1 => lay.seq.clone(),
                    2 => lay.body..len - tag,
                    _ => len - tag..len,
                };
                let byte = self.rng.range(region.start, region.end);
                out[byte] ^= 1 << self.rng.range(0, 8);
                Ok(())
            }
            Attack::Length => {
                self.intercepted(i, out)?;
                let min = if self.family.is_ip() {
                    ESP_AT + 1
                } else {
                    ETH + 1
                };
                match i % 3 {
                    0 => {
                        let n = self.rng.range(min, out.len());
                        out.truncate(n);
                    }
                    1 => {
                        let extra = self.rng.range(1, 33);
                        let at = out.len();
                        out.resize(at + extra, 0);
                        self.rng.fill(&mut out[at..]);
                    }
                    _ => {
                        self.wrong_length_field(out);
                        return Ok(());
                    }
                }
                if self.family.is_ip() {
                    // The IPv4 length follows the cut or the extension, so the ESP receive
                    // path sees it (with the old length, the stack would trim an extension
                    // away as Ethernet padding and deliver the intact packet).
                    let total = out.len() - ETH;
                    set_ipv4_len(out, total);
                }
                Ok(())
            }
            Attack::Downgrade => self.downgrade(i, out),
            Attack::UnknownId => {
                self.intercepted(i, out)?;
                match self.family {
                    Profile::IvnAe(_) => out[16] ^= 0x80,
                    Profile::Macsec(_) if i % 2 == 0 => {
                        out[14] = (out[14] & !0x03) | ((out[14] + 1) & 0x03);
                    }
                    // Another port of the same station: an SCI the receiver has no SC for.
                    Profile::Macsec(_) => out[27] ^= 0x02,
                    Profile::Esp(_) => out[ESP_AT + 1] ^= 0xA5,
                    Profile::Secoc(_) | Profile::Someip(_) => {} // forge_udp
                }
                Ok(())
            }
            Attack::Garbage => {
                self.garbage(i, out);
                Ok(())
            }
            Attack::Flood => {
                // Alternate the costliest invalid frame (identity right, fresh sequence number:
                // the receiver runs its crypto before it can refuse) with cheap garbage.
                if i % 2 == 0 {
                    self.forge(Attack::NoKey, i, out)
                } else {
                    self.garbage(i, out);
                    Ok(())
                }
            }
            Attack::ReplayW1 | Attack::ReplayW1024 => {
                bail!("replays are made from captured frames, not forged")
            }
        }
    }

    /// MACsec: SL claiming another secure-data length; ESP: an IPv4 total length shorter than
    /// the packet (the receiving stack trims the packet to it); IVN-AE, which has no length
    /// field: the last tag byte cut off.
    fn wrong_length_field(&mut self, out: &mut Vec<u8>) {
        match self.family {
            Profile::Macsec(_) => {
                let secure = out.len() - 28 - 16;
                let mut sl = self.rng.range(1, 48) as u8;
                if usize::from(sl) == secure {
                    sl = sl % 47 + 1;
                }
                out[15] = (out[15] & !0x3f) | sl;
            }
            Profile::Esp(_) => {
                // Shorter than the packet: the receiving stack trims the packet to it.
                let short = self.rng.range(ESP_AT + 1, out.len()) - ETH;
                set_ipv4_len(out, short);
            }
            Profile::IvnAe(_) => {
                out.pop();
            }
            Profile::Secoc(_) | Profile::Someip(_) => {} // forge_udp
        }
    }

    fn downgrade(&mut self, i: u64, out: &mut Vec<u8>) -> Result<()> {
        let conf = match self.family {
            Profile::IvnAe(p) => p.level == Level::Conf,
            Profile::Macsec(_) => true,
            Profile::Esp(a) => a.iv_len() > 0 && !a.name().contains("gmac"),
            Profile::Secoc(_) | Profile::Someip(_) => false, // forge_udp
        };
        if i % 2 == 0 || (!conf && self.crc32.is_none()) {
            // The payload without any protection.
            self.next_payload(i);
            self.intercept.unprotected_frame(&self.payload, out);
            return Ok(());
        }
        if let Some(crc) = self.crc32.as_mut() {
            // Authentication-only IVN-AE profile: the payload under `crc32`, whose check value
            // anyone can compute.
            self.rng.fill(&mut self.payload);
            self.payload[..8].copy_from_slice(&(i | 1 << 63).to_be_bytes());
            return Self::protect_with(crc, &self.payload, &mut self.unit, out);
        }
        match self.family {
            Profile::IvnAe(_) => {
                // Confidentiality profile: the conf flag cleared and the payload in clear over
                // the ciphertext, original tag.
                self.intercepted(i, out)?;
                out[17] &= !ivnsec_core::wire::ivnae::FLAG_CONF;
                self.plain_over_body(26 + 2, out);
                Ok(())
            }
            Profile::Macsec(_) => {
                // Integrity only (E = C = 0) with the user data in clear, original ICV.
                self.intercepted(i, out)?;
                out[14] &= !(0x08 | 0x04);
                self.plain_over_body(28 + 2, out);
                Ok(())
            }
            Profile::Esp(a) => {
                // The payload in clear where the ciphertext was (as ESP-NULL carries it).
                self.intercepted(i, out)?;
                self.plain_over_body(ESP_AT + 8 + a.iv_len(), out);
                Ok(())
            }
            Profile::Secoc(_) | Profile::Someip(_) => self.forge_udp(Attack::Downgrade, i, out),
        }
    }

    /// Writes the current payload over the frame from `at`, leaving the tag in place.
    fn plain_over_body(&self, at: usize, out: &mut [u8]) {
        let tag = self.intercept.tag_len();
        let end = (at + self.payload.len()).min(out.len().saturating_sub(tag));
        if end > at {
            out[at..end].copy_from_slice(&self.payload[..end - at]);
        }
    }

    fn garbage(&mut self, _i: u64, out: &mut Vec<u8>) {
        let ends = self.intercept.ends();
        if self.family.is_udp() {
            // A datagram from the sender's address and port, so it reaches the receive path.
            let port = self.family.udp_port();
            let mut junk = [0u8; 200];
            let n = self.rng.range(1, 201);
            self.rng.fill(&mut junk[..n]);
            write_udp_frame(
                out,
                (self.attacker_mac, ends.local_ip, port),
                (ends.peer_mac, ends.peer_ip, port),
                &junk[..n],
            );
            return;
        }
        out.clear();
        out.extend_from_slice(&ends.peer_mac);
        out.extend_from_slice(&self.attacker_mac);
        let n = self.rng.range(1, 201);
        match self.family {
            Profile::Esp(_) => {
                // From the sender's address, so it reaches the ESP receive path.
                out.extend_from_slice(&0x0800u16.to_be_bytes());
                let mut ip = [0u8; IPV4_HLEN];
                ivnsec_core::channel::write_ipv4_header(
                    &mut ip,
                    IPV4_HLEN + n,
                    ivnsec_core::wire::ip::protocol::ESP,
                    ends.local_ip,
                    ends.peer_ip,
                );
                out.extend_from_slice(&ip);
            }
            f => out.extend_from_slice(&f.ethertype().to_be_bytes()),
        }
        let at = out.len();
        out.resize(at + n, 0);
        self.rng.fill(&mut out[at..]);
    }
}

/// SecOC authentication information on the wire (truncated FV ‖ truncated MAC), and its MAC.
const SECOC_AUTH: usize = (SECOC_FV_BITS as usize + SECOC_MAC_BITS as usize) / 8;
const SECOC_MAC: usize = SECOC_MAC_BITS as usize / 8;
/// The shorter authenticator of the SecOC downgrade: 24 bits, AUTOSAR's CAN profile 1.
const SECOC_SHORT_MAC: usize = 3;
/// SOME/IP: header, and where key id, counter and body start in a secured message.
const SIP_HDR: usize = ivnsec_core::wire::someip::HEADER_LEN;
const SIP_BODY: usize = SIP_HDR + ivnsec_core::sa::someip::SEC_HEADER_LEN;

impl Forger {
    /// Bit-flip, length, downgrade and unknown-id for the UDP families: the change is made to
    /// the UDP payload of an intercepted datagram (or a downgraded one), then the IPv4 and UDP
    /// lengths and checksums are made right again, as a man in the middle does so that the
    /// receiving stack hands the datagram to the receiver (which checks nothing of them).
    fn forge_udp(&mut self, attack: Attack, i: u64, out: &mut Vec<u8>) -> Result<()> {
        let ends = self.intercept.ends();
        if attack == Attack::Downgrade {
            self.downgrade_udp(i, out)?;
        } else {
            self.intercepted(i, out)?;
            match attack {
                Attack::BitFlip => self.flip_udp(i, out),
                Attack::Length => self.length_udp(i, out),
                _ => self.unknown_id_udp(i, out),
            }
        }
        fix_udp_frame(out, ends.local_ip, ends.peer_ip);
        Ok(())
    }

    /// One bit flipped, in turn in each part of the datagram. SecOC: the PDU header (PDU id =
    /// Data ID, length), the truncated freshness value, the Authentic I-PDU, the truncated MAC.
    /// SOME/IP: the message ID (service, method), the rest of the header (Length, client,
    /// session, versions, type, return code), key id and counter, the body, the tag.
    fn flip_udp(&mut self, i: u64, out: &mut [u8]) {
        let (u, len) = (UDP_AT, out.len());
        let tag = self.intercept.tag_len();
        let region = match self.family {
            Profile::Secoc(_) => match i % 4 {
                0 => u..u + PDU_HDR,
                1 => len - SECOC_AUTH..len - SECOC_MAC,
                2 => u + PDU_HDR..len - SECOC_AUTH,
                _ => len - SECOC_MAC..len,
            },
            // someip-nosec (no key id, counter or tag): the body instead.
            _ => match i % 5 {
                0 => u..u + 4,
                1 => u + 4..u + SIP_HDR,
                2 if tag > 0 => u + SIP_HDR..u + SIP_BODY,
                4 if tag > 0 => len - tag..len,
                _ if tag > 0 => u + SIP_BODY..len - tag,
                _ => u + SIP_HDR..len,
            },
        };
        if region.is_empty() {
            return;
        }
        let byte = self.rng.range(region.start, region.end);
        out[byte] ^= 1 << self.rng.range(0, 8);
    }

    /// The datagram cut short; extended by 1–32 random bytes; with a wrong length field (SecOC:
    /// the PDU header's, SOME/IP: the Length); or cut by 1–24 bytes with the length field
    /// following the cut (a consistent but shorter unit).
    fn length_udp(&mut self, i: u64, out: &mut Vec<u8>) {
        let u = UDP_AT;
        // The length field and the bytes it counts from (both families: offset 4, counting from 8).
        let set_len =
            |out: &mut Vec<u8>, v: u32| out[u + 4..u + 8].copy_from_slice(&v.to_be_bytes());
        match i % 4 {
            0 => {
                let n = self.rng.range(u, out.len());
                out.truncate(n);
            }
            1 => {
                let extra = self.rng.range(1, 33);
                let at = out.len();
                out.resize(at + extra, 0);
                self.rng.fill(&mut out[at..]);
            }
            2 => {
                let actual = out.len() - u - 8;
                let mut v = self.rng.range(0, 2 * actual + 2);
                if v == actual {
                    v += 1;
                }
                set_len(out, v as u32);
            }
            _ => {
                let keep = match self.family {
                    Profile::Secoc(_) => u + PDU_HDR,
                    _ => u + SIP_HDR,
                };
                let cut = self.rng.range(1, 25).min(out.len() - keep);
                out.truncate(out.len() - cut);
                let v = (out.len() - u - 8) as u32;
                set_len(out, v);
            }
        }
    }

    /// SecOC: another PDU id — alternately the id of the receiver's own outbound I-PDU (one it
    /// knows, but does not receive on) and an unused one. SOME/IP: alternately another service
    /// ID and another key id.
    fn unknown_id_udp(&mut self, i: u64, out: &mut [u8]) {
        let u = UDP_AT;
        match self.family {
            Profile::Secoc(_) => {
                let ours = u32::from_be_bytes([out[u], out[u + 1], out[u + 2], out[u + 3]]);
                let id = if i % 2 == 0 {
                    u32::from(SECOC_DATA_ID[1])
                } else {
                    let mut id = self.rng.next() as u32;
                    while id == ours || id == u32::from(SECOC_DATA_ID[1]) {
                        id = id.wrapping_add(1);
                    }
                    id
                };
                out[u..u + 4].copy_from_slice(&id.to_be_bytes());
            }
            _ if i % 2 == 0 || self.intercept.tag_len() == 0 => {
                let mut sid = self.rng.next() as u16;
                if sid == SOMEIP_SERVICE {
                    sid ^= 0x8000;
                }
                out[u..u + 2].copy_from_slice(&sid.to_be_bytes());
            }
            _ => {
                let mut kid = self.rng.next() as u8;
                if kid == SOMEIP_KEY_ID {
                    kid ^= 0x80;
                }
                out[u + SIP_HDR] = kid;
            }
        }
    }

    /// SecOC: the Authentic I-PDU without authentication information under the sender's PDU id,
    /// or an intercepted PDU whose authenticator is cut to 24 bits. SOME/IP: the payload as a
    /// `nosec` message, short (8–24 bytes, less than the security fields take) or whole; and,
    /// for `conf`, an intercepted message with the body in clear where the ciphertext was (what
    /// `auth` carries), original tag.
    fn downgrade_udp(&mut self, i: u64, out: &mut Vec<u8>) -> Result<()> {
        let u = UDP_AT;
        let conf = matches!(self.family, Profile::Someip(p) if p.level == SomeipLevel::Conf);
        let variant = match self.family {
            Profile::Secoc(_) => i % 2,
            _ if conf => i % 3,
            _ => i % 2,
        };
        match (self.family, variant) {
            (Profile::Secoc(_), 0) | (Profile::Someip(_), 1) => {
                self.next_payload(i);
                self.intercept.unprotected_frame(&self.payload, out);
            }
            (Profile::Secoc(_), _) => {
                self.intercepted(i, out)?;
                out.truncate(out.len() - (SECOC_MAC - SECOC_SHORT_MAC));
                let v = (out.len() - u - PDU_HDR) as u32;
                out[u + 4..u + 8].copy_from_slice(&v.to_be_bytes());
            }
            (_, 0) => {
                self.next_payload(i);
                let n = self.rng.range(8, 25).min(self.payload.len());
                self.intercept.unprotected_frame(&self.payload[..n], out);
            }
            _ => {
                self.intercepted(i, out)?;
                let tag = self.intercept.tag_len();
                let end = (u + SIP_BODY + self.payload.len()).min(out.len() - tag);
                out[u + SIP_BODY..end].copy_from_slice(&self.payload[..end - u - SIP_BODY]);
            }
        }
        Ok(())
    }
}

/// Sets the IPv4 total length of an Ethernet/IPv4 frame and recomputes the header checksum.
fn set_ipv4_len(frame: &mut [u8], total: usize) {
    if frame.len() < ESP_AT {
        return;
    }
    let ip = &mut frame[ETH..ESP_AT];
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ivnsec_core::wire::ip::fill_ipv4_checksum(ip);
}

/// Captured legitimate frames and the choice of what to replay.
pub struct ReplayPicker {
    ring: VecDeque<Vec<u8>>,
    window: u32,
    captured: u64,
    /// Hashes of the frames pushed so far (bounded by [`SEEN_LIMIT`]): a legitimate frame never
    /// repeats (its sequence number / PN / freshness value does not), so a frame seen again is
    /// a replay coming back, e.g. the attacker's own injection seen by a capture socket of every
    /// EtherType on its host.
    seen: std::collections::HashSet<u64>,
}

/// Most hashes a [`ReplayPicker`] remembers before it forgets them all.
const SEEN_LIMIT: usize = 1 << 20;

impl ReplayPicker {
    pub fn new(window: u32) -> ReplayPicker {
        ReplayPicker {
            ring: VecDeque::with_capacity(window as usize + 8),
            window,
            captured: 0,
            seen: std::collections::HashSet::new(),
        }
    }

    /// Records a captured legitimate frame (the newest last), unless it was captured before
    /// (a replay seen again); returns whether it was recorded.
    pub fn push(&mut self, frame: &[u8]) -> bool {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        frame.hash(&mut h);
        if self.seen.len() >= SEEN_LIMIT {
            self.seen.clear();
        }
        if !self.seen.insert(h.finish()) {
            return false;
        }
        if self.ring.len() == self.window as usize + 4 {
            let mut old = self.ring.pop_front().expect("non-empty");
            old.clear();
            old.extend_from_slice(frame);
            self.ring.push_back(old);
        } else {
            self.ring.push_back(frame.to_vec());
        }
        self.captured += 1;
        true
    }

    pub fn captured(&self) -> u64 {
        self.captured
    }

    /// Replay `i`: even — the newest captured frame (accepted already or about to be: a
    /// duplicate inside the window); odd — a frame `window + 2` frames older than the newest
    /// (left of the window). `None` until enough frames were captured.
    pub fn pick(&self, i: u64) -> Option<&[u8]> {
        if i % 2 == 0 {
            return self.ring.back().map(Vec::as_slice);
        }
        let back = self.window as usize + 2;
        (self.ring.len() > back).then(|| self.ring[self.ring.len() - 1 - back].as_slice())
    }
}

/// Whether `f` is a legitimate sender → receiver frame of `family`.
pub(crate) fn is_legit_forward(family: Profile, sender: &Ends, f: &[u8]) -> bool {
    if f.len() < ETH || f[0..6] != sender.peer_mac || f[6..12] != sender.local_mac {
        return false;
    }
    match family {
        Profile::Esp(_) => {
            f.len() > ESP_AT
                && f[12..14] == [0x08, 0x00]
                && f[ETH + 9] == ivnsec_core::wire::ip::protocol::ESP
                && f[ETH + 12..ETH + 16] == sender.local_ip.octets()
                && f[ETH + 16..ETH + 20] == sender.peer_ip.octets()
        }
        Profile::Secoc(_) | Profile::Someip(_) => {
            let port = family.udp_port().to_be_bytes();
            f.len() >= UDP_AT
                && f[12..14] == [0x08, 0x00]
                && f[ETH] == 0x45
                && f[ETH + 9] == ivnsec_core::wire::ip::protocol::UDP
                && f[ETH + 12..ETH + 16] == sender.local_ip.octets()
                && f[ETH + 16..ETH + 20] == sender.peer_ip.octets()
                && f[ESP_AT..ESP_AT + 2] == port
                && f[ESP_AT + 2..ESP_AT + 4] == port
        }
        f2 => f[12..14] == f2.ethertype().to_be_bytes(),
    }
}

/// Whether a switch refuses `frame` whatever its table says: a bridge does not forward a frame
/// whose source address is a group address (the I/G bit, the least significant bit of the first
/// octet, set) or all zeros (Linux: `br_handle_frame` drops a frame whose source fails
/// `is_valid_ether_addr`). A flipped source-address bit can make such a frame; the receiver
/// never sees it.
pub fn switch_refuses(frame: &[u8]) -> bool {
    match frame.get(6..12) {
        Some(src) => src[0] & 1 == 1 || src == [0; 6],
        None => false,
    }
}

#[cfg(test)]
#[path = "forger_tests.rs"]
mod tests;
