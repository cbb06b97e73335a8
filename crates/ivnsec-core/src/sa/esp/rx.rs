//! The inbound side of ESP: one SA ([`EspRx`]), the SAs of a host selected by SPI
//! ([`EspReceiver`]), and [`spi_of`]. Order of the checks: see the parent module.

use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use super::{Dir, Engine, EspAlg, EspConfigError, EspParams, ICV_LEN, Keys, wire};
use crate::crypto::{BLOCK_LEN, CryptoProvider};
use crate::sa::replay::{ReplayError, ReplayWindow};
use crate::sa::{DropCounters, DropReason, RxCounters};
use crate::wire::bytes::tail;
use crate::wire::esp::{EspError, HEADER_LEN, TRAILER_LEN};
use crate::wire::ip::{self, IpError, IpInfo, protocol};

/// Inbound ESP SA. The mode follows from the next header: 4 (IPv4) or 41 (IPv6) is tunnel mode
/// and yields the inner packet; anything else is transport mode and yields the original packet.
pub struct EspRx {
    keys: Keys,
    replay: ReplayWindow,
    counters: RxCounters,
}

impl EspRx {
    /// An SA accepting packets with a replay window of `replay_window` sequence numbers
    /// (0: strictly increasing only).
    pub fn new(
        provider: &CryptoProvider,
        params: &EspParams<'_>,
        replay_window: u32,
    ) -> Result<EspRx, EspConfigError> {
        Ok(EspRx {
            keys: Keys::new(provider, params)?,
            replay: ReplayWindow::new(replay_window).map_err(EspConfigError::WindowTooLarge)?,
            counters: RxCounters::default(),
        })
    }

    pub fn alg(&self) -> EspAlg {
        self.keys.alg
    }

    pub fn spi(&self) -> u32 {
        self.keys.spi
    }

    pub fn counters(&self) -> &RxCounters {
        &self.counters
    }

    /// Highest (full) sequence number accepted so far; 0 when none.
    pub fn highest_seq(&self) -> u64 {
        self.replay.highest()
    }

    /// Restores receive state: marks `seq` as accepted, as if a packet carrying it had verified.
    /// For a receiver resumed from persisted state (with ESN, the high half of later sequence
    /// numbers is inferred from the highest one seen).
    pub fn restore_seen(&mut self, seq: u64) {
        if self.replay.check(seq).is_ok() {
            self.replay.insert(seq);
        }
    }

    /// Restores a receiver's persisted acceptance mark: every sequence number ≤ `m` counts as
    /// seen (refused as a replay, counted in `below_restored` too); with ESN the high half of
    /// later numbers is inferred from `m`.
    pub fn restore_floor(&mut self, m: u64) {
        self.replay.restore_floor(m);
    }

    /// Verifies `packet` into `out` and writes the recovered IP packet to its front.
    pub fn verify(&mut self, packet: &[u8], out: &mut [u8]) -> Result<usize, DropReason> {
        let Some(buf) = out.get_mut(..packet.len()) else {
            self.counters.drops.bump(DropReason::Oversize);
            return Err(DropReason::Oversize);
        };
        buf.copy_from_slice(packet);
        let r = self.verify_in_place(buf)?;
        out.copy_within(r.clone(), 0);
        Ok(r.len())
    }

    /// Verifies the IP packet in `buf` in place. On success the recovered packet is `buf[range]`;
    /// on failure the buffer's content is unspecified. Every outcome is counted.
    ///
    /// The same as [`EspRx::check`], [`EspRx::open`] and [`EspRx::commit`] one after the other,
    /// which is how it is done.
    pub fn verify_in_place(&mut self, buf: &mut [u8]) -> Result<Range<usize>, DropReason> {
        match self.check(buf) {
            EspCheck::Done(r) => r,
            EspCheck::Validate(c) => {
                let o = self.open(buf, &c);
                self.commit(buf, &c, o)
            }
        }
    }

    fn count(&mut self, r: &Result<Range<usize>, DropReason>) {
        match r {
            Ok(range) => {
                self.counters.ok_frames += 1;
                self.counters.ok_bytes += range.len() as u64;
            }
            Err(reason) => self.counters.drops.bump(*reason),
        }
    }

    /// The full sequence number of a packet carrying `seql`: with ESN, the high half is inferred
    /// from the window as RFC 4303 Appendix A2.2 specifies. `None` when it would fall below 0.
    //= https://www.rfc-editor.org/rfc/rfc4303#appendix-A.2.2
    //# Case A: Tl >= (W - 1). If Seql >= Tl - W + 1 then Seqh = Th, else Seqh = Th + 1.
    //# Case B: Tl < (W - 1). If Seql >= Tl - W + 1 (mod 2^32) then Seqh = Th - 1, else Seqh = Th.
    fn full_seq(&self, seql: u32) -> Option<u64> {
        if !self.keys.esn {
            return Some(u64::from(seql));
        }
        super::esn_full_seq(self.replay.highest(), self.replay.window(), seql)
    }

    /// The first of a verification's three stages: the packet's IP and ESP headers, its SA
    /// and lengths. A packet to validate comes back as [`EspCheck::Validate`], anything else is
    /// decided and counted here.
    ///
    /// The packets of a batch may be checked in their order of arrival, opened in any order or
    /// on several threads at once ([`EspRx::open`] takes `&self`), and committed in their order
    /// of arrival ([`EspRx::commit`]): the sequence number and the replay check are judged at
    /// the commit against the window as the packets before left it, so each packet's outcome
    /// and every counter are those of [`EspRx::verify_in_place`] one packet after the other, a
    /// packet that came twice delivered once. A packet the window refuses already at the check
    /// is not opened.
    pub fn check(&mut self, buf: &mut [u8]) -> EspCheck {
        match self.check_inner(buf) {
            Ok(c) => EspCheck::Validate(c),
            Err(reason) => {
                self.counters.drops.bump(reason);
                EspCheck::Done(Err(reason))
            }
        }
    }

    fn check_inner(&self, buf: &[u8]) -> Result<EspChecked, DropReason> {
        let info = ip::parse(buf).map_err(ip_drop)?;
        if info.next != protocol::ESP {
            return Err(DropReason::NotEsp);
        }
        let buf = buf.get(..info.total_len).ok_or(DropReason::Truncated)?;
        let esp = info.header_len;
        let repr =
            wire::Repr::parse(&wire::Packet::new_unchecked(tail(buf, esp))).map_err(esp_drop)?;
        if repr.spi != self.keys.spi {
            return Err(DropReason::UnknownSa);
        }
        let alg = self.keys.alg;
        let data_start = esp + HEADER_LEN + alg.iv_len();
        let ct_len = buf
            .len()
            .checked_sub(data_start + ICV_LEN)
            .filter(|&n| n >= TRAILER_LEN)
            .ok_or(DropReason::Truncated)?;
        if alg.align() == BLOCK_LEN && ct_len % BLOCK_LEN != 0 {
            return Err(DropReason::BadLength);
        }
        let mut c = EspChecked {
            info,
            seql: repr.seq,
            seq: 0,
            data_start,
            ct_len,
            refused: false,
        };
        match self.judge(repr.seq) {
            Ok(seq) => c.seq = seq,
            Err(_) => c.refused = true,
        }
        Ok(c)
    }

    /// The full sequence number of `seql` and the replay check, against the window as it is
    /// now (RFC 4303 §3.4.3: before the ICV). Counts nothing.
    fn judge(&self, seql: u32) -> Result<u64, DropReason> {
        let seq = self.full_seq(seql).ok_or(DropReason::ReplayTooOld)?;
        if seq == 0 {
            return Err(DropReason::BadSeq);
        }
        //= https://www.rfc-editor.org/rfc/rfc4303#section-3.4.3
        //# If the received packet falls within the window and is new, or if the packet is to the
        //# right of the window, then the receiver proceeds to ICV verification. [...] The receive
        //# window is updated only if the ICV verification succeeds.
        match self.replay.check(seq) {
            Ok(()) => Ok(seq),
            Err(ReplayError::Duplicate) => Err(DropReason::ReplayDuplicate),
            Err(ReplayError::TooOld) => Err(DropReason::ReplayTooOld),
        }
    }

    /// The second stage: the ICV verified under the sequence number of the check, the data
    /// decrypted and the packet recovered in place. Reads the keys only, so the packets of a
    /// batch may be opened on several threads at once; counts nothing (the commit does).
    pub fn open(&self, buf: &mut [u8], c: &EspChecked) -> EspOpened {
        if c.refused {
            return EspOpened::Skipped;
        }
        let Some(buf) = buf.get_mut(..c.info.total_len) else {
            return EspOpened::IcvFailed(DropReason::Truncated);
        };
        let esp = c.info.header_len;
        let icv_end = buf.len();
        if let Err(r) = self.keys.icv(buf, esp, icv_end, c.seq, Dir::Open) {
            return EspOpened::IcvFailed(r);
        }
        EspOpened::Verified(self.recover(buf, c))
    }

    /// After a good ICV: the data decrypted (CBC), the trailer read, the packet recovered.
    fn recover(&self, buf: &mut [u8], c: &EspChecked) -> Result<Range<usize>, DropReason> {
        let (info, data_start, ct_len) = (&c.info, c.data_start, c.ct_len);
        let esp = info.header_len;
        let ct_end = data_start + ct_len;
        if let Engine::CbcHmac { cipher, .. } = &self.keys.engine {
            let (head, data) = buf.split_at_mut(data_start);
            let iv: &[u8; BLOCK_LEN] = tail(head, esp + HEADER_LEN)
                .try_into()
                .map_err(|_| DropReason::Malformed)?;
            let data = data.get_mut(..ct_len).ok_or(DropReason::Truncated)?;
            cipher
                .cbc_decrypt(iv, data)
                .map_err(|_| DropReason::Crypto)?;
        }
        let (payload_len, nh) =
            wire::parse_trailer(buf.get(data_start..ct_end).ok_or(DropReason::Truncated)?)
                .map_err(esp_drop)?;
        let payload_end = data_start + payload_len;
        match nh {
            protocol::NO_NEXT_HEADER => Err(DropReason::DummyPacket),
            protocol::IPV4 | protocol::IPV6 => {
                // Tunnel mode: the inner packet, without any TFC padding after it (§2.7).
                // Fragments included (RFC 4301 §7): the host reassembles them.
                let inner = buf
                    .get(data_start..payload_end)
                    .ok_or(DropReason::Malformed)
                    .and_then(|b| ip::parse_inner(b).map_err(|_| DropReason::Malformed))?;
                if (inner.version == 4) != (nh == protocol::IPV4) {
                    return Err(DropReason::Malformed);
                }
                Ok(data_start..data_start + inner.total_len)
            }
            _ => {
                // Transport mode: put the IP header back in front of the payload.
                let hdr = info.header_len;
                let start = data_start - hdr;
                if info.version == 4 && hdr == ip::IPV4_HEADER_LEN {
                    // hdr + payload_len ≤ the packet's total length, a 16-bit field.
                    ip::move_ipv4_header(buf, 0, start, nh, (hdr + payload_len) as u16);
                } else {
                    buf.copy_within(0..hdr, start);
                    let restored = buf
                        .get_mut(start..payload_end)
                        .ok_or(DropReason::Malformed)?;
                    *restored
                        .get_mut(info.nh_offset)
                        .ok_or(DropReason::Malformed)? = nh;
                    ip::set_total_len(restored, info, hdr + payload_len);
                }
                Ok(start..payload_end)
            }
        }
    }

    /// The third stage, in the packets' order of arrival: the sequence number and the replay
    /// check judged again against the window as the packets committed before left it (a
    /// duplicate within a batch is refused as one by one), then the ICV's verdict, the window
    /// moved by a good ICV, and the packet's counters. On success the recovered packet is
    /// `buf[range]`.
    pub fn commit(
        &mut self,
        buf: &mut [u8],
        c: &EspChecked,
        o: EspOpened,
    ) -> Result<Range<usize>, DropReason> {
        let r = self.commit_inner(buf, c, o);
        self.count(&r);
        r
    }

    fn commit_inner(
        &mut self,
        buf: &mut [u8],
        c: &EspChecked,
        mut o: EspOpened,
    ) -> Result<Range<usize>, DropReason> {
        let seq = match self.judge(c.seql) {
            Ok(seq) => seq,
            Err(r) => {
                if matches!(r, DropReason::ReplayDuplicate | DropReason::ReplayTooOld)
                    && self
                        .full_seq(c.seql)
                        .is_some_and(|s| self.replay.below_floor(s))
                {
                    self.counters.below_restored += 1;
                }
                return Err(r);
            }
        };
        if matches!(o, EspOpened::Skipped) {
            // Refused at the check, passed now: opened here.
            o = self.open(
                buf,
                &EspChecked {
                    seq,
                    refused: false,
                    ..*c
                },
            );
        } else if seq != c.seq {
            // With ESN, the window moved across a 2^32 boundary since the check: one by one
            // the ICV would have been computed over the other high half, and not matched.
            o = EspOpened::IcvFailed(DropReason::BadTag);
        }
        match o {
            EspOpened::Verified(r) => {
                self.replay.insert(seq);
                r
            }
            EspOpened::IcvFailed(r) => Err(r),
            EspOpened::Skipped => Err(DropReason::Crypto),
        }
    }
}

/// A packet [`EspRx::check`] found to validate: what its [`EspRx::open`] and [`EspRx::commit`]
/// need.
#[derive(Clone, Copy, Debug)]
pub struct EspChecked {
    info: IpInfo,
    seql: u32,
    /// The full sequence number at the check.
    seq: u64,
    data_start: usize,
    ct_len: usize,
    /// Refused by the window at the check: not opened, judged again at the commit.
    refused: bool,
}

impl EspChecked {
    /// The full sequence number inferred at the check.
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// Refused by the window at the check (not opened; the commit gives the reason).
    pub fn replay_refused(&self) -> bool {
        self.refused
    }
}

/// What [`EspRx::check`] made of a packet.
#[derive(Clone, Debug)]
pub enum EspCheck {
    /// To be opened and committed.
    Validate(EspChecked),
    /// Decided and counted: dropped.
    Done(Result<Range<usize>, DropReason>),
}

/// What [`EspRx::open`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EspOpened {
    /// The ICV matched; the packet's recovery (`buf[range]`, or why it is dropped).
    Verified(Result<Range<usize>, DropReason>),
    /// The ICV did not match (or could not be computed).
    IcvFailed(DropReason),
    /// Not opened: the window refused it at the check.
    Skipped,
}

fn ip_drop(e: IpError) -> DropReason {
    match e {
        IpError::Truncated => DropReason::Truncated,
        IpError::BadVersion => DropReason::BadVersion,
        IpError::BadHeader => DropReason::Malformed,
        IpError::Fragment => DropReason::Fragment,
    }
}

fn esp_drop(e: EspError) -> DropReason {
    match e {
        EspError::Truncated => DropReason::Truncated,
        EspError::BadPadding => DropReason::BadPadding,
    }
}

/// Inbound SAs of one host, selected by SPI.
#[derive(Default)]
pub struct EspReceiver {
    sas: Vec<EspRx>,
    /// Drops that happened before an SA was selected (malformed IP, not ESP, unknown SPI).
    unassigned: DropCounters,
}

impl EspReceiver {
    pub fn new() -> EspReceiver {
        EspReceiver::default()
    }

    /// Installs an SA, replacing any with the same SPI.
    pub fn install(&mut self, sa: EspRx) {
        self.sas.retain(|s| s.spi() != sa.spi());
        self.sas.push(sa);
    }

    pub fn sa(&self, spi: u32) -> Option<&EspRx> {
        self.sas.iter().find(|s| s.spi() == spi)
    }

    pub fn unassigned_drops(&self) -> &DropCounters {
        &self.unassigned
    }

    /// Verifies in place, selecting the SA by SPI.
    pub fn verify_in_place(&mut self, buf: &mut [u8]) -> Result<Range<usize>, DropReason> {
        let spi = match spi_of(buf) {
            Ok(spi) => spi,
            Err(r) => {
                self.unassigned.bump(r);
                return Err(r);
            }
        };
        match self.sas.iter_mut().find(|s| s.spi() == spi) {
            Some(sa) => sa.verify_in_place(buf),
            None => {
                self.unassigned.bump(DropReason::UnknownSa);
                Err(DropReason::UnknownSa)
            }
        }
    }
}

/// The SPI of an ESP-in-IP packet.
pub fn spi_of(buf: &[u8]) -> Result<u32, DropReason> {
    let info: IpInfo = ip::parse(buf).map_err(ip_drop)?;
    if info.next != protocol::ESP {
        return Err(DropReason::NotEsp);
    }
    let esp = buf
        .get(info.header_len..info.total_len)
        .ok_or(DropReason::Truncated)?;
    let p = wire::Packet::new_checked(esp).map_err(esp_drop)?;
    Ok(p.spi())
}

impl fmt::Debug for EspRx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EspRx")
            .field("keys", &self.keys)
            .field("highest_seq", &self.replay.highest())
            .field("window", &self.replay.window())
            .field("counters", &self.counters)
            .finish()
    }
}

impl fmt::Debug for EspReceiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EspReceiver")
            .field("sas", &self.sas)
            .field("unassigned", &self.unassigned)
            .finish()
    }
}
