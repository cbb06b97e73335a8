//! IVN-AE security associations: protect (transmit) and verify (receive).
//!
//! One SA protects one direction. The nonce (IVN-AE version 2, docs/wire-ivnae.md §3) is
//! `iv XOR (0x000000 ‖ key id ‖ seq)`: every key id under one key has a nonce space of its own,
//! so two senders under one key (or one sender restarted under another key id) never share a
//! nonce as long as their key ids differ. Two nodes talking both ways use two SAs with
//! different keys, different key ids or different IVs.
//!
//! Receive order (docs/wire-ivnae.md): parse → key id → version → replay check → tag check
//! (constant time) → mark the sequence number → decrypt → strip and check padding. A version 1
//! frame (nonce without the key id, the previous release) is taken only by an SA configured to
//! ([`IvnAeRx::set_accept_v1`]); otherwise it is dropped as `bad_version`.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ops::Range;

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::replay::{ReplayError, ReplayWindow};
use super::{DropCounters, DropReason, ProtectError, RxCounters, SaError, TxCounters};
use crate::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadKey, BLOCK_LEN, CipherKey, CryptoProvider, MAX_MAC_LEN,
    MacKey,
};
use crate::suite::{CipherMode, IvnAeProfile, Level, Suite};
use crate::wire::ethernet;
use crate::wire::ivnae::{self as wire, HEADER_LEN};

/// CRC-32/ISO-HDLC, the checksum of zlib.crc32 and Ethernet.
const CRC32: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// What an SA is made from. Keys are borrowed; the SA keeps only scheduled keys.
#[derive(Clone, Copy, Debug)]
pub struct SaParams<'a> {
    pub profile: IvnAeProfile,
    /// Cipher key (AEAD and Encrypt-then-MAC suites); empty otherwise.
    pub key: &'a [u8],
    /// HMAC key (HMAC and Encrypt-then-MAC suites), any length ≥ 1; empty otherwise.
    pub mac_key: &'a [u8],
    /// Per-SA IV mixed into the nonce.
    pub iv: [u8; AEAD_NONCE_LEN],
    /// Key id carried in byte 16 and XORed into nonce byte 3: every key id under one key has a
    /// nonce space of its own.
    pub key_id: u8,
    /// HMAC tag truncation (leftmost bytes); `None` = full length.
    pub tag_len: Option<usize>,
}

impl<'a> SaParams<'a> {
    /// Parameters with a zero IV, key id 0 and a full-length tag.
    pub fn new(profile: IvnAeProfile, key: &'a [u8], mac_key: &'a [u8]) -> SaParams<'a> {
        SaParams {
            profile,
            key,
            mac_key,
            iv: [0; AEAD_NONCE_LEN],
            key_id: 0,
            tag_len: None,
        }
    }
}

enum Engine {
    Plain,
    Crc32,
    Aead(Box<dyn AeadKey>),
    Hmac(Box<dyn MacKey>),
    EncThenMac {
        cipher: Box<dyn CipherKey>,
        mode: CipherMode,
        mac: Box<dyn MacKey>,
    },
}

/// Scheduled keys and fixed parameters shared by the transmit and receive sides.
struct Keys {
    profile: IvnAeProfile,
    key_id: u8,
    iv: Zeroizing<[u8; AEAD_NONCE_LEN]>,
    tag_len: usize,
    engine: Engine,
}

impl Keys {
    fn new(provider: &CryptoProvider, p: &SaParams<'_>) -> Result<Keys, SaError> {
        let suite = p.profile.suite;
        if !suite.levels().contains(&p.profile.level) {
            return Err(SaError::BadLevel {
                suite,
                level: p.profile.level,
            });
        }
        match suite.key_len() {
            Some(expected) if p.key.is_empty() => {
                let _ = expected;
                return Err(SaError::MissingKey { suite });
            }
            Some(expected) if p.key.len() != expected => {
                return Err(SaError::BadKeyLength {
                    suite,
                    expected,
                    got: p.key.len(),
                });
            }
            None if !p.key.is_empty() => {
                return Err(SaError::KeyNotUsed {
                    suite,
                    which: "cipher key",
                });
            }
            _ => {}
        }
        if suite.needs_mac_key() && p.mac_key.is_empty() {
            return Err(SaError::MissingMacKey { suite });
        }
        if !suite.needs_mac_key() && !p.mac_key.is_empty() {
            return Err(SaError::KeyNotUsed {
                suite,
                which: "HMAC key",
            });
        }
        let (min, max) = (suite.min_tag_len(), suite.full_tag_len());
        let tag_len = p.tag_len.unwrap_or(max);
        if tag_len < min || tag_len > max {
            return Err(SaError::BadTagLength {
                suite,
                min,
                max,
                got: tag_len,
            });
        }
        let keys = provider.keys;
        let engine = match suite {
            Suite::Plain => Engine::Plain,
            Suite::Crc32 => Engine::Crc32,
            Suite::Aead(alg) => Engine::Aead(keys.aead(alg, p.key)?),
            Suite::Hmac(h) => Engine::Hmac(keys.mac(h.mac(), p.mac_key)?),
            Suite::EncThenMac { aes, mode, hash } => Engine::EncThenMac {
                cipher: keys.cipher(aes, p.key)?,
                mode,
                mac: keys.mac(hash.mac(), p.mac_key)?,
            },
        };
        Ok(Keys {
            profile: p.profile,
            key_id: p.key_id,
            iv: Zeroizing::new(p.iv),
            tag_len,
            engine,
        })
    }

    /// The nonce of the frame with sequence number `seq` under IVN-AE `version`:
    /// version 2: N = iv XOR (0x00 0x00 0x00 ‖ key id ‖ seq as u64 BE);
    /// version 1: N = iv XOR (0x00000000 ‖ seq as u64 BE) (receive only).
    fn nonce(&self, version: u8, seq: u64) -> [u8; AEAD_NONCE_LEN] {
        let mut n = *self.iv;
        if version != wire::VERSION_1 {
            n[3] ^= self.key_id;
        }
        for (b, s) in n[4..].iter_mut().zip(seq.to_be_bytes()) {
            *b ^= s;
        }
        n
    }

    /// Length of the body on the wire for a plain body of `body_len` bytes.
    fn wire_body_len(&self, body_len: usize) -> usize {
        match self.engine {
            Engine::EncThenMac {
                mode: CipherMode::Cbc,
                ..
            } => (body_len / BLOCK_LEN + 1) * BLOCK_LEN,
            _ => body_len,
        }
    }

    /// CBC IV = AES_key(N ‖ 00000000) (SP 800-38A Appendix C, method 1).
    fn cbc_iv(
        cipher: &dyn CipherKey,
        nonce: &[u8; AEAD_NONCE_LEN],
    ) -> Result<[u8; BLOCK_LEN], DropReason> {
        let mut iv = [0u8; BLOCK_LEN];
        iv[..AEAD_NONCE_LEN].copy_from_slice(nonce);
        cipher
            .encrypt_block(&mut iv)
            .map_err(|_| DropReason::Crypto)?;
        Ok(iv)
    }

    /// CTR initial counter block N ‖ 00000001.
    fn ctr_block(nonce: &[u8; AEAD_NONCE_LEN]) -> [u8; BLOCK_LEN] {
        let mut c = [0u8; BLOCK_LEN];
        c[..AEAD_NONCE_LEN].copy_from_slice(nonce);
        c[BLOCK_LEN - 1] = 1;
        c
    }
}

/// Transmit side of an IVN-AE SA.
pub struct IvnAeTx {
    keys: Keys,
    /// Next sequence number to use; `None` once `u64::MAX` has been used.
    next_seq: Option<u64>,
    counters: TxCounters,
}

impl IvnAeTx {
    /// An SA whose first frame carries `first_seq` (≥ 1). A restarted sender must start above
    /// every sequence number it used before under the same key.
    pub fn new(
        provider: &CryptoProvider,
        params: &SaParams<'_>,
        first_seq: u64,
    ) -> Result<IvnAeTx, SaError> {
        if first_seq == 0 {
            return Err(SaError::BadFirstSeq);
        }
        Ok(IvnAeTx {
            keys: Keys::new(provider, params)?,
            next_seq: Some(first_seq),
            counters: TxCounters::default(),
        })
    }

    pub fn profile(&self) -> IvnAeProfile {
        self.keys.profile
    }

    pub fn key_id(&self) -> u8 {
        self.keys.key_id
    }

    pub fn tag_len(&self) -> usize {
        self.keys.tag_len
    }

    /// The sequence number the next frame will carry.
    pub fn next_seq(&self) -> Option<u64> {
        self.next_seq
    }

    pub fn counters(&self) -> TxCounters {
        self.counters
    }

    /// Length of the protected frame for a plain frame of `plain_len` bytes (≥ 14).
    pub fn protected_len(&self, plain_len: usize) -> usize {
        let body = plain_len.saturating_sub(ethernet::HEADER_LEN - 2);
        HEADER_LEN + self.keys.wire_body_len(body) + self.keys.tag_len
    }

    /// Protects `plain` (dst ‖ src ‖ EtherType ‖ payload) into `out`; returns the frame length.
    pub fn protect(&mut self, plain: &[u8], out: &mut [u8]) -> Result<usize, ProtectError> {
        if plain.len() < ethernet::HEADER_LEN {
            return Err(ProtectError::FrameTooShort);
        }
        let needed = self.protected_len(plain.len());
        if out.len() < needed {
            return Err(ProtectError::BufferTooSmall { needed });
        }
        if self.next_seq.is_none() {
            // Refuse before touching the caller's buffer.
            return Err(ProtectError::SeqExhausted);
        }
        // Copied once, to where the body stays.
        let at = self.headroom();
        out.get_mut(at..at + plain.len())
            .ok_or(ProtectError::BufferTooSmall { needed })?
            .copy_from_slice(plain);
        self.protect_in_place_at(out, at, plain.len())
    }

    /// Bytes to leave in front of a plain frame so that
    /// [`protect_in_place_at`](Self::protect_in_place_at) need not move its body: the outer
    /// EtherType and the IVN-AE fields (14).
    pub fn headroom(&self) -> usize {
        HEADER_LEN - (ethernet::HEADER_LEN - 2)
    }

    /// Protects the plain frame in `buf[..plain_len]` in place; `buf` must have room for
    /// [`protected_len`](Self::protected_len) bytes. Returns the frame length.
    pub fn protect_in_place(
        &mut self,
        buf: &mut [u8],
        plain_len: usize,
    ) -> Result<usize, ProtectError> {
        self.protect_in_place_at(buf, 0, plain_len)
    }

    /// Protects the plain frame in `buf[at..at + plain_len]` in place and writes the protected
    /// frame to the front of `buf`, which must have room for
    /// [`protected_len`](Self::protected_len) bytes. Returns the frame length. With `at` =
    /// [`headroom`](Self::headroom) only the 12 address bytes move; any other `at` moves the
    /// body too.
    pub fn protect_in_place_at(
        &mut self,
        buf: &mut [u8],
        at: usize,
        plain_len: usize,
    ) -> Result<usize, ProtectError> {
        let end = super::plain_frame_end(buf, at, plain_len)?;
        let needed = self.protected_len(plain_len);
        if buf.len() < needed {
            return Err(ProtectError::BufferTooSmall { needed });
        }
        let seq = self.next_seq.ok_or(ProtectError::SeqExhausted)?;
        // The number is spent whatever happens next: never reuse a nonce.
        self.next_seq = seq.checked_add(1);

        let body_len = plain_len - (ethernet::HEADER_LEN - 2);
        super::make_header_room(buf, at, end, HEADER_LEN);
        let keys = &self.keys;
        let repr = wire::Repr {
            version: wire::VERSION,
            suite_id: keys.profile.suite.id(),
            key_id: keys.key_id,
            conf: keys.profile.level.conf_flag(),
            seq,
        };
        let too_small = ProtectError::BufferTooSmall { needed };
        repr.emit(&mut wire::Frame::new_unchecked(
            buf.get_mut(..HEADER_LEN).ok_or(too_small)?,
        ));

        let nonce = keys.nonce(wire::VERSION, seq);
        let wire_body = keys.wire_body_len(body_len);
        let body_end = HEADER_LEN + wire_body;
        // `needed` = `body_end` + the tag length: the tag is everything after the body.
        let (head, tag_out) = buf
            .get_mut(..needed)
            .and_then(|b| b.split_at_mut_checked(body_end))
            .ok_or(too_small)?;
        match &keys.engine {
            Engine::Plain => {}
            Engine::Crc32 => tag_out.copy_from_slice(&CRC32.checksum(head).to_be_bytes()),
            Engine::Aead(aead) => {
                // The tag goes straight into the frame.
                let tag: &mut [u8; AEAD_TAG_LEN] = tag_out
                    .try_into()
                    .map_err(|_| ProtectError::BufferTooSmall { needed })?;
                if keys.profile.level == Level::Conf {
                    let (a, body) = head.split_at_mut(HEADER_LEN);
                    aead.seal_in_place(&nonce, a, body, tag)?;
                } else {
                    aead.seal_in_place(&nonce, head, &mut [], tag)?;
                }
            }
            Engine::Hmac(mac) => write_mac(mac.as_ref(), head, tag_out)?,
            Engine::EncThenMac { cipher, mode, mac } => {
                let body = head.get_mut(HEADER_LEN..).ok_or(too_small)?;
                match mode {
                    CipherMode::Cbc => {
                        // PKCS#7: 1..=16 bytes of value p.
                        let p = wire_body - body_len;
                        body.get_mut(body_len..).ok_or(too_small)?.fill(p as u8);
                        let iv = Keys::cbc_iv(cipher.as_ref(), &nonce).map_err(|_| {
                            ProtectError::Crypto(crate::crypto::CryptoError::Internal)
                        })?;
                        cipher.cbc_encrypt(&iv, body)?;
                    }
                    CipherMode::Ctr => cipher.ctr_apply(&Keys::ctr_block(&nonce), body)?,
                }
                write_mac(mac.as_ref(), head, tag_out)?;
            }
        }
        self.counters.frames += 1;
        self.counters.bytes += needed as u64;
        Ok(needed)
    }
}

/// Receive side of an IVN-AE SA.
pub struct IvnAeRx {
    keys: Keys,
    replay: ReplayWindow,
    counters: RxCounters,
    /// Take version 1 frames (the previous release's nonce) too.
    accept_v1: bool,
}

impl IvnAeRx {
    /// An SA accepting frames with the given replay window (see [`ReplayWindow`]).
    pub fn new(
        provider: &CryptoProvider,
        params: &SaParams<'_>,
        replay_window: u32,
    ) -> Result<IvnAeRx, SaError> {
        Ok(IvnAeRx {
            keys: Keys::new(provider, params)?,
            replay: ReplayWindow::new(replay_window).map_err(SaError::WindowTooLarge)?,
            counters: RxCounters::default(),
            accept_v1: false,
        })
    }

    /// Whether this SA also takes IVN-AE version 1 frames (default: no), verified with the
    /// version 1 nonce `iv XOR (0^4 ‖ seq)`: for a peer that still runs the previous release.
    /// Version 1 and 2 frames share the SA's replay window. Without it a version 1 frame is
    /// dropped as [`DropReason::BadVersion`] (and counted). Only the receiver is affected:
    /// senders always write version 2.
    pub fn set_accept_v1(&mut self, accept: bool) {
        self.accept_v1 = accept;
    }

    /// See [`set_accept_v1`](Self::set_accept_v1).
    pub fn accepts_v1(&self) -> bool {
        self.accept_v1
    }

    pub fn profile(&self) -> IvnAeProfile {
        self.keys.profile
    }

    pub fn key_id(&self) -> u8 {
        self.keys.key_id
    }

    pub fn counters(&self) -> &RxCounters {
        &self.counters
    }

    /// Highest sequence number accepted so far (0 when none).
    pub fn highest_seq(&self) -> u64 {
        self.replay.highest()
    }

    /// Restores a receiver's persisted acceptance mark: every sequence number ≤ `m` counts as
    /// seen (refused as a replay, counted in `below_restored` too).
    pub fn restore_floor(&mut self, m: u64) {
        self.replay.restore_floor(m);
    }

    /// Verifies `frame` into `out` and writes the recovered plain frame (dst ‖ src ‖ EtherType
    /// ‖ payload) to the front of `out`. Returns its length.
    pub fn verify(&mut self, frame: &[u8], out: &mut [u8]) -> Result<usize, DropReason> {
        if out.len() < frame.len() {
            self.counters.drops.bump(DropReason::Oversize);
            return Err(DropReason::Oversize);
        }
        let Some(buf) = out.get_mut(..frame.len()) else {
            self.counters.drops.bump(DropReason::Oversize);
            return Err(DropReason::Oversize);
        };
        buf.copy_from_slice(frame);
        let r = self.verify_in_place(buf)?;
        out.copy_within(r.clone(), 0);
        Ok(r.len())
    }

    /// Verifies the frame in place. On success the plain frame is `frame[range]`. On failure the
    /// buffer's content is unspecified. Every outcome is counted.
    pub fn verify_in_place(&mut self, frame: &mut [u8]) -> Result<Range<usize>, DropReason> {
        let r = self.verify_inner(frame);
        match &r {
            Ok(range) => {
                self.counters.ok_frames += 1;
                self.counters.ok_bytes += range.len() as u64;
            }
            Err(reason) => self.counters.drops.bump(*reason),
        }
        r
    }

    fn verify_inner(&mut self, frame: &mut [u8]) -> Result<Range<usize>, DropReason> {
        let repr = wire::Repr::parse(&wire::Frame::new_unchecked(&*frame))?;
        let keys = &self.keys;
        if repr.key_id != keys.key_id {
            return Err(DropReason::UnknownSa);
        }
        if repr.version == wire::VERSION_1 && !self.accept_v1 {
            return Err(DropReason::BadVersion);
        }
        check_suite(repr.suite_id, keys.profile.suite)?;
        if repr.conf != keys.profile.level.conf_flag() {
            return Err(DropReason::LevelMismatch);
        }
        let tag_len = keys.tag_len;
        if frame.len() < HEADER_LEN + 2 + tag_len {
            return Err(DropReason::Truncated);
        }
        let body_end = frame.len() - tag_len;
        let wire_body_len = body_end - HEADER_LEN;
        if let Engine::EncThenMac {
            mode: CipherMode::Cbc,
            ..
        } = keys.engine
            && (wire_body_len % BLOCK_LEN != 0)
        {
            return Err(DropReason::BadLength);
        }
        if repr.seq == 0 {
            return Err(DropReason::BadSeq);
        }
        if let Err(e) = self.replay.check(repr.seq) {
            if self.replay.below_floor(repr.seq) {
                self.counters.below_restored += 1;
            }
            return Err(match e {
                ReplayError::Duplicate => DropReason::ReplayDuplicate,
                ReplayError::TooOld => DropReason::ReplayTooOld,
            });
        }

        let nonce = keys.nonce(repr.version, repr.seq);
        let (head, tag) = frame
            .split_at_mut_checked(body_end)
            .ok_or(DropReason::Truncated)?;
        let mut body_len = wire_body_len;
        match &keys.engine {
            Engine::Plain => {}
            Engine::Crc32 => {
                let crc = CRC32.checksum(head).to_be_bytes();
                if !bool::from(crc.ct_eq(tag)) {
                    return Err(DropReason::BadTag);
                }
            }
            Engine::Aead(aead) => {
                let tag: &[u8; AEAD_TAG_LEN] =
                    (&*tag).try_into().map_err(|_| DropReason::Truncated)?;
                let r = if keys.profile.level == Level::Conf {
                    let (a, body) = head.split_at_mut(HEADER_LEN);
                    aead.open_in_place(&nonce, a, body, tag)
                } else {
                    aead.open_in_place(&nonce, head, &mut [], tag)
                };
                r.map_err(|_| DropReason::BadTag)?;
            }
            Engine::Hmac(mac) => check_mac(mac.as_ref(), head, tag)?,
            Engine::EncThenMac { mac, .. } => check_mac(mac.as_ref(), head, tag)?,
        }
        // Authenticated: only now does the sequence number count as seen.
        self.replay.insert(repr.seq);

        if let Engine::EncThenMac { cipher, mode, .. } = &keys.engine {
            let body = head.get_mut(HEADER_LEN..).ok_or(DropReason::Truncated)?;
            match mode {
                CipherMode::Cbc => {
                    let iv = Keys::cbc_iv(cipher.as_ref(), &nonce)?;
                    cipher
                        .cbc_decrypt(&iv, body)
                        .map_err(|_| DropReason::Crypto)?;
                    body_len = strip_pkcs7(body)?;
                }
                CipherMode::Ctr => {
                    cipher
                        .ctr_apply(&Keys::ctr_block(&nonce), body)
                        .map_err(|_| DropReason::Crypto)?;
                }
            }
        }
        if body_len < 2 {
            return Err(DropReason::Truncated);
        }
        // Plain frame = dst ‖ src ‖ body: move the addresses next to the body.
        let start = HEADER_LEN - ethernet::HEADER_LEN + 2;
        frame.copy_within(0..12, start);
        Ok(start..HEADER_LEN + body_len)
    }
}

fn check_suite(id: u8, expected: Suite) -> Result<(), DropReason> {
    match Suite::from_id(id) {
        None => Err(DropReason::UnknownSuite),
        Some(s) if s != expected => Err(DropReason::SuiteMismatch),
        Some(_) => Ok(()),
    }
}

/// Writes the leftmost `tag_out.len()` bytes of the MAC of `data` to `tag_out`.
fn write_mac(mac: &dyn MacKey, data: &[u8], tag_out: &mut [u8]) -> Result<(), ProtectError> {
    let mut full = [0u8; MAX_MAC_LEN];
    mac.compute(&[data], &mut full);
    // The SA's tag length is at most the suite's full MAC length (checked in `Keys::new`).
    let tag = full
        .get(..tag_out.len())
        .ok_or(ProtectError::Crypto(crate::crypto::CryptoError::Internal))?;
    tag_out.copy_from_slice(tag);
    Ok(())
}

/// Compares the leftmost `tag.len()` bytes of the MAC in constant time.
fn check_mac(mac: &dyn MacKey, data: &[u8], tag: &[u8]) -> Result<(), DropReason> {
    let mut full = [0u8; MAX_MAC_LEN];
    let n = mac.compute(&[data], &mut full);
    match full.get(..tag.len()) {
        Some(expected) if tag.len() <= n && bool::from(expected.ct_eq(tag)) => Ok(()),
        _ => Err(DropReason::BadTag),
    }
}

/// Checks PKCS#7 padding and returns the unpadded length.
fn strip_pkcs7(body: &[u8]) -> Result<usize, DropReason> {
    let p = *body.last().ok_or(DropReason::BadPadding)? as usize;
    if p == 0 || p > BLOCK_LEN || p > body.len() {
        return Err(DropReason::BadPadding);
    }
    let unpadded = body.len() - p;
    let padding = body.get(unpadded..).ok_or(DropReason::BadPadding)?;
    if padding.iter().any(|&b| b as usize != p) {
        return Err(DropReason::BadPadding);
    }
    Ok(unpadded)
}

/// A receiver holding the SAs of one link, selected by key id (key roll-over: the old and the
/// new key are installed side by side for a while).
#[derive(Default)]
pub struct IvnAeReceiver {
    sas: Vec<IvnAeRx>,
    /// Drops that happened before an SA was selected.
    unassigned: DropCounters,
}

impl IvnAeReceiver {
    pub fn new() -> IvnAeReceiver {
        IvnAeReceiver::default()
    }

    /// Installs an SA, replacing any with the same key id.
    pub fn install(&mut self, sa: IvnAeRx) {
        self.sas.retain(|s| s.key_id() != sa.key_id());
        self.sas.push(sa);
    }

    /// Removes the SA with this key id.
    pub fn remove(&mut self, key_id: u8) -> Option<IvnAeRx> {
        let i = self.sas.iter().position(|s| s.key_id() == key_id)?;
        Some(self.sas.remove(i))
    }

    pub fn sa(&self, key_id: u8) -> Option<&IvnAeRx> {
        self.sas.iter().find(|s| s.key_id() == key_id)
    }

    /// Drops counted before an SA was selected (malformed headers, unknown key ids).
    pub fn unassigned_drops(&self) -> &DropCounters {
        &self.unassigned
    }

    /// All drops: unassigned and per SA.
    pub fn total_drops(&self) -> DropCounters {
        let mut d = self.unassigned.clone();
        for s in &self.sas {
            d.merge(&s.counters.drops);
        }
        d
    }

    /// Verifies in place, selecting the SA by key id.
    pub fn verify_in_place(&mut self, frame: &mut [u8]) -> Result<Range<usize>, DropReason> {
        let key_id = match wire::Frame::new_checked(&*frame) {
            Ok(f) => f.key_id(),
            Err(e) => {
                let r = DropReason::from(e);
                self.unassigned.bump(r);
                return Err(r);
            }
        };
        match self.sas.iter_mut().find(|s| s.key_id() == key_id) {
            Some(sa) => sa.verify_in_place(frame),
            None => {
                self.unassigned.bump(DropReason::UnknownSa);
                Err(DropReason::UnknownSa)
            }
        }
    }
}

impl core::fmt::Debug for Keys {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // Never print key material.
        f.debug_struct("Keys")
            .field("profile", &self.profile)
            .field("key_id", &self.key_id)
            .field("tag_len", &self.tag_len)
            .finish_non_exhaustive()
    }
}

impl core::fmt::Debug for IvnAeTx {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IvnAeTx")
            .field("keys", &self.keys)
            .field("next_seq", &self.next_seq)
            .field("counters", &self.counters)
            .finish()
    }
}

impl core::fmt::Debug for IvnAeRx {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IvnAeRx")
            .field("keys", &self.keys)
            .field("highest_seq", &self.replay.highest())
            .field("window", &self.replay.window())
            .field("accept_v1", &self.accept_v1)
            .field("counters", &self.counters)
            .finish()
    }
}

impl core::fmt::Debug for IvnAeReceiver {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("IvnAeReceiver")
            .field("sas", &self.sas)
            .field("unassigned", &self.unassigned)
            .finish()
    }
}
