//! Per-service security for SOME/IP (docs/wire-someip-sec.md): levels `nosec`, `auth`, `conf`
//! with an AEAD per service (AES-128/256-GCM, AES-128/256-CCM, ChaCha20-Poly1305).
//!
//! ```text
//! | SOME/IP header (16, Length covers all) | key id (1) | counter (8, BE) | body | tag (16) |
//!  \_______________________ AAD (conf) _____________________________/
//!  \_______________________ AAD (auth) ____________________________________/
//! ```
//! `conf` encrypts the body with the header ‖ key id ‖ counter as AAD; `auth` leaves the body in
//! clear and authenticates header ‖ key id ‖ counter ‖ body (AEAD with an empty plaintext).
//!
//! Nonce (12 bytes) = salt (4) XOR sender (4) ‖ counter (8, BE), where the sender is
//! `0x01 0x00 client-id` for requests (a client sends them) and `0x02 0x00 0x00 0x00` for
//! responses, errors and notifications (the server sends them). Each sender keeps its own
//! counter, starting at 1, and never reuses one under a key: after 2^64 − 1 the service stops
//! sending. The receiver keeps a replay window per (service, sender), checks it before the tag
//! and marks it only after the tag verified.
//!
//! Client IDs must be unique among the clients of a key (SOME/IP requires them to be unique in
//! the vehicle); one server per key.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;
use core::ops::Range;

use super::replay::{ReplayError, ReplayWindow, WindowTooLarge};
use super::{DropCounters, DropReason, RxCounters, TxCounters};
use crate::crypto::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, AeadKey, AeadOp, CryptoError, CryptoProvider, Primitive,
};
use crate::wire::bytes::{be64, byte, put, put_byte};
use crate::wire::someip::{HEADER_LEN, MessageType, Packet, Repr, SomeIpError};

/// Key id and counter.
pub const SEC_HEADER_LEN: usize = 9;
/// Tag length.
pub const TAG_LEN: usize = AEAD_TAG_LEN;
/// Bytes a secured level adds to the payload.
pub const OVERHEAD: usize = SEC_HEADER_LEN + TAG_LEN;
/// Salt length.
pub const SALT_LEN: usize = 4;
/// Default replay window.
pub const DEFAULT_WINDOW: u32 = 64;
/// Default bound on the senders one service tracks.
pub const DEFAULT_MAX_SENDERS: usize = 256;

/// A service's protection level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// No protection: the payload is the body.
    NoSec,
    /// Body in clear, authenticated with the header, key id and counter.
    Auth,
    /// Body encrypted; header, key id and counter authenticated.
    Conf,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::NoSec, Level::Auth, Level::Conf];

    pub const fn name(self) -> &'static str {
        match self {
            Level::NoSec => "nosec",
            Level::Auth => "auth",
            Level::Conf => "conf",
        }
    }

    pub fn from_name(s: &str) -> Option<Level> {
        Level::ALL.into_iter().find(|l| l.name() == s)
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a suite name (`aes128-gcm`, …, `chacha20-poly1305`).
pub fn suite_from_name(s: &str) -> Option<AeadAlg> {
    AeadAlg::ALL.into_iter().find(|a| a.name() == s)
}

/// Who sent a message, as the nonce and the replay windows see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Sender {
    /// The client with this client ID (requests).
    Client(u16),
    /// The server (responses, errors, notifications).
    Server,
}

impl Sender {
    /// The sender of a message with this header.
    pub fn of(r: &Repr) -> Sender {
        if r.message_type.from_client() {
            Sender::Client(r.client_id)
        } else {
            Sender::Server
        }
    }

    fn nonce_prefix(self) -> [u8; 4] {
        match self {
            Sender::Client(c) => {
                let c = c.to_be_bytes();
                [0x01, 0x00, c[0], c[1]]
            }
            Sender::Server => [0x02, 0, 0, 0],
        }
    }
}

/// What a service's security association is made from.
#[derive(Clone, Copy, Debug)]
pub struct ServiceParams<'a> {
    pub service_id: u16,
    pub level: Level,
    /// Ignored under `nosec`.
    pub alg: AeadAlg,
    pub key_id: u8,
    /// Empty under `nosec`.
    pub key: &'a [u8],
    pub salt: [u8; SALT_LEN],
    /// Replay window per sender (0 = strictly increasing).
    pub replay_window: u32,
    /// Senders tracked at most; a new one past the bound is dropped (`too_many_senders`).
    pub max_senders: usize,
    /// First counter this side sends (≥ 1). A restart under the same key must start above every
    /// counter sent before.
    pub first_counter: u64,
}

impl<'a> ServiceParams<'a> {
    /// `nosec` parameters for a service.
    pub fn nosec(service_id: u16) -> ServiceParams<'a> {
        ServiceParams {
            service_id,
            level: Level::NoSec,
            alg: AeadAlg::Aes128Gcm,
            key_id: 0,
            key: &[],
            salt: [0; SALT_LEN],
            replay_window: DEFAULT_WINDOW,
            max_senders: DEFAULT_MAX_SENDERS,
            first_counter: 1,
        }
    }
}

/// Errors making a service SA.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SomeipConfigError {
    BadKeyLength {
        alg: AeadAlg,
        expected: usize,
        got: usize,
    },
    /// A key given to a `nosec` service.
    KeyNotUsed,
    /// The provider lacks the suite.
    Unsupported(AeadAlg),
    /// Counters start at 1.
    BadFirstCounter,
    WindowTooLarge(WindowTooLarge),
    Crypto(CryptoError),
}

impl fmt::Display for SomeipConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SomeipConfigError::BadKeyLength { alg, expected, got } => {
                write!(
                    f,
                    "suite {} needs a {expected}-byte key, got {got} bytes",
                    alg.name()
                )
            }
            SomeipConfigError::KeyNotUsed => f.write_str("level nosec takes no key"),
            SomeipConfigError::Unsupported(a) => {
                write!(f, "the crypto provider has no {}", a.name())
            }
            SomeipConfigError::BadFirstCounter => f.write_str("counters start at 1"),
            SomeipConfigError::WindowTooLarge(e) => write!(f, "{e}"),
            SomeipConfigError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for SomeipConfigError {}

/// Errors protecting a message: the sender's problems.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SomeipProtectError {
    /// The header names another service than the SA's.
    WrongService {
        expected: u16,
        got: u16,
    },
    BufferTooSmall {
        needed: usize,
    },
    /// The message would not fit the 32-bit Length.
    TooLong,
    /// Every counter of this key has been used: the service needs a new key.
    CounterExhausted,
    Crypto(CryptoError),
}

impl fmt::Display for SomeipProtectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SomeipProtectError::WrongService { expected, got } => {
                write!(
                    f,
                    "message for service 0x{got:04x} given to the SA of 0x{expected:04x}"
                )
            }
            SomeipProtectError::BufferTooSmall { needed } => {
                write!(f, "output buffer too small: {needed} bytes needed")
            }
            SomeipProtectError::TooLong => f.write_str("message longer than SOME/IP allows"),
            SomeipProtectError::CounterExhausted => {
                f.write_str("freshness counters exhausted: the service needs a new key")
            }
            SomeipProtectError::Crypto(e) => write!(f, "{e}"),
        }
    }
}

impl core::error::Error for SomeipProtectError {}

/// Maps a header error to its drop reason.
pub fn header_drop_reason(e: SomeIpError) -> DropReason {
    match e {
        SomeIpError::Truncated => DropReason::Truncated,
        SomeIpError::BadLength => DropReason::BadLength,
        SomeIpError::BadProtocolVersion => DropReason::BadVersion,
        SomeIpError::BadMessageType => DropReason::BadMessageType,
        SomeIpError::TooLong => DropReason::Oversize,
    }
}

/// The security association of one service: its key, this side's counter and the receive
/// windows of the senders it heard from.
pub struct ServiceSa {
    service_id: u16,
    level: Level,
    alg: AeadAlg,
    key_id: u8,
    key: Option<Box<dyn AeadKey>>,
    salt: [u8; SALT_LEN],
    /// Next counter to send; `None` once exhausted.
    next: Option<u64>,
    window: u32,
    max_senders: usize,
    windows: BTreeMap<Sender, ReplayWindow>,
    tx: TxCounters,
    rx: RxCounters,
}

impl fmt::Debug for ServiceSa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceSa")
            .field("service_id", &self.service_id)
            .field("level", &self.level)
            .field("alg", &self.alg)
            .field("key_id", &self.key_id)
            .field("next", &self.next)
            .field("senders", &self.windows.len())
            .finish_non_exhaustive()
    }
}

impl ServiceSa {
    pub fn new(
        provider: &CryptoProvider,
        p: &ServiceParams<'_>,
    ) -> Result<ServiceSa, SomeipConfigError> {
        if p.first_counter == 0 {
            return Err(SomeipConfigError::BadFirstCounter);
        }
        // Validate the window size once, here.
        ReplayWindow::new(p.replay_window).map_err(SomeipConfigError::WindowTooLarge)?;
        let key = match p.level {
            Level::NoSec => {
                if !p.key.is_empty() {
                    return Err(SomeipConfigError::KeyNotUsed);
                }
                None
            }
            Level::Auth | Level::Conf => {
                if p.key.len() != p.alg.key_len() {
                    return Err(SomeipConfigError::BadKeyLength {
                        alg: p.alg,
                        expected: p.alg.key_len(),
                        got: p.key.len(),
                    });
                }
                if !provider.supports(Primitive::Aead(p.alg)) {
                    return Err(SomeipConfigError::Unsupported(p.alg));
                }
                Some(
                    provider
                        .keys
                        .aead(p.alg, p.key)
                        .map_err(SomeipConfigError::Crypto)?,
                )
            }
        };
        Ok(ServiceSa {
            service_id: p.service_id,
            level: p.level,
            alg: p.alg,
            key_id: p.key_id,
            key,
            salt: p.salt,
            next: Some(p.first_counter),
            window: p.replay_window,
            max_senders: p.max_senders,
            windows: BTreeMap::new(),
            tx: TxCounters::default(),
            rx: RxCounters::default(),
        })
    }

    pub fn service_id(&self) -> u16 {
        self.service_id
    }

    pub fn level(&self) -> Level {
        self.level
    }

    pub fn alg(&self) -> AeadAlg {
        self.alg
    }

    pub fn key_id(&self) -> u8 {
        self.key_id
    }

    /// Bytes this level adds to a body.
    pub fn overhead(&self) -> usize {
        match self.level {
            Level::NoSec => 0,
            Level::Auth | Level::Conf => OVERHEAD,
        }
    }

    /// The next counter this side will send (`None` once exhausted).
    pub fn next_counter(&self) -> Option<u64> {
        self.next
    }

    pub fn tx_counters(&self) -> TxCounters {
        self.tx
    }

    pub fn rx_counters(&self) -> &RxCounters {
        &self.rx
    }

    /// Senders with a replay window.
    pub fn senders(&self) -> usize {
        self.windows.len()
    }

    fn nonce(&self, sender: Sender, counter: u64) -> [u8; AEAD_NONCE_LEN] {
        let mut n = [0u8; AEAD_NONCE_LEN];
        let p = sender.nonce_prefix();
        for ((n, s), p) in n.iter_mut().zip(self.salt.iter()).zip(p) {
            *n = s ^ p;
        }
        n[SALT_LEN..].copy_from_slice(&counter.to_be_bytes());
        n
    }

    /// Writes the message `header` ‖ protected `body` into `out` and returns its length.
    /// `header.payload_len` is ignored (the Length is computed); `header.tp` must be false:
    /// protect first, then segment.
    pub fn protect(
        &mut self,
        header: &Repr,
        body: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SomeipProtectError> {
        if header.service_id != self.service_id {
            return Err(SomeipProtectError::WrongService {
                expected: self.service_id,
                got: header.service_id,
            });
        }
        let payload_len = body
            .len()
            .checked_add(self.overhead())
            .ok_or(SomeipProtectError::TooLong)?;
        if payload_len as u64 + 8 > u64::from(u32::MAX) {
            return Err(SomeipProtectError::TooLong);
        }
        let total = HEADER_LEN + payload_len;
        let too_small = SomeipProtectError::BufferTooSmall { needed: total };
        let out = out.get_mut(..total).ok_or(too_small)?;
        let mut r = *header;
        r.payload_len = payload_len;
        r.tp = false;
        r.emit_header(out);
        let Some(key) = &self.key else {
            put(out, HEADER_LEN, body);
            self.count_tx(total);
            return Ok(total);
        };
        let counter = self.next.ok_or(SomeipProtectError::CounterExhausted)?;
        let sender = Sender::of(&r);
        let nonce = self.nonce(sender, counter);
        put_byte(out, HEADER_LEN, self.key_id);
        put(out, HEADER_LEN + 1, &counter.to_be_bytes());
        let body_at = HEADER_LEN + SEC_HEADER_LEN;
        let body_end = body_at + body.len();
        put(out, body_at, body);
        let (head, tag) = out.split_at_mut_checked(body_end).ok_or(too_small)?;
        let tag: &mut [u8; TAG_LEN] = tag.try_into().map_err(|_| too_small)?;
        match self.level {
            Level::Conf => {
                let (aad, data) = head.split_at_mut(body_at);
                key.seal_in_place(&nonce, aad, data, tag)
            }
            _ => key.seal_in_place(&nonce, head, &mut [], tag),
        }
        .map_err(SomeipProtectError::Crypto)?;
        // Only a counter that was used is retired: a failed seal does not burn one.
        self.next = counter.checked_add(1);
        self.count_tx(total);
        Ok(total)
    }

    fn count_tx(&mut self, n: usize) {
        self.tx.frames += 1;
        self.tx.bytes += n as u64;
    }

    /// Verifies one whole message in place (decrypting under `conf`). Returns the range of the
    /// body inside `msg`. Every drop bumps its counter.
    pub fn verify(&mut self, msg: &mut [u8]) -> Result<Range<usize>, DropReason> {
        let r = self.verify_inner(msg);
        match &r {
            Ok(b) => {
                self.rx.ok_frames += 1;
                self.rx.ok_bytes += b.len() as u64;
            }
            Err(d) => self.rx.drops.bump(*d),
        }
        r
    }

    fn verify_inner(&mut self, msg: &mut [u8]) -> Result<Range<usize>, DropReason> {
        let c = match self.check(msg)? {
            Checked::Plain(body) => return Ok(body),
            Checked::Secured(c) => c,
        };
        self.check_window(&c)?;
        let key = self.key.as_ref().ok_or(DropReason::Crypto)?;
        let mut op = self.op(&c, msg)?;
        key.open_batch(core::slice::from_mut(&mut op));
        self.commit(&c, op.result)
    }

    /// Verifies several messages with the verdicts and counters [`verify`](Self::verify) gives
    /// them one by one, in order, their tags checked together in groups of eight
    /// ([`AeadKey::open_batch`]: multi-buffer where the key has it, as AES-CCM does). `msgs[i]` is
    /// one whole message; `out[i]` gets its verdict (extra entries of either are left alone).
    ///
    /// Each message's replay window is checked before the tag and checked again, and marked,
    /// after it, in order: a message repeated inside a batch is refused as a duplicate, as it
    /// would be one by one.
    pub fn verify_batch(
        &mut self,
        msgs: &mut [&mut [u8]],
        out: &mut [Result<Range<usize>, DropReason>],
    ) {
        for (group, res) in msgs.chunks_mut(GROUP).zip(out.chunks_mut(GROUP)) {
            self.verify_group(group, res);
        }
    }

    fn verify_group(
        &mut self,
        msgs: &mut [&mut [u8]],
        out: &mut [Result<Range<usize>, DropReason>],
    ) {
        // Before the tags: the checks of each message and the windows as they stand.
        let mut stage = [Stage::Done; GROUP];
        for ((msg, res), st) in msgs.iter().zip(out.iter_mut()).zip(stage.iter_mut()) {
            match self.check(msg) {
                Ok(Checked::Plain(body)) => *res = Ok(body),
                Ok(Checked::Secured(c)) => match self.check_window(&c) {
                    Ok(()) => *st = Stage::Tag(c, 0),
                    // Judged again below, in order: the messages before it may move the window.
                    Err(d) => *st = Stage::Window(c, d),
                },
                Err(d) => *res = Err(d),
            }
        }
        // The tags, together. Slot `j` of `ops` is the message whose stage is `Tag(_, j)`; the
        // rest are empty.
        let mut ops: [AeadOp<'_>; GROUP] =
            core::array::from_fn(|_| AeadOp::new([0; AEAD_NONCE_LEN], &[], &mut [], [0; TAG_LEN]));
        let mut n = 0;
        for ((msg, st), res) in msgs.iter_mut().zip(stage.iter_mut()).zip(out.iter_mut()) {
            let Stage::Tag(c, j) = st else { continue };
            let Some(op) = ops.get_mut(n) else { break };
            match self.op(c, msg) {
                Ok(o) => {
                    *op = o;
                    *j = n;
                    n += 1;
                }
                Err(d) => {
                    *res = Err(d);
                    *st = Stage::Done;
                }
            }
        }
        if let (Some(key), Some(ops)) = (self.key.as_ref(), ops.get_mut(..n)) {
            key.open_batch(ops);
        }
        let mut tags: [Result<(), CryptoError>; GROUP] = [Err(CryptoError::Internal); GROUP];
        for (t, op) in tags.iter_mut().zip(&ops).take(n) {
            *t = op.result;
        }
        // After the tags, in order: the windows again, then the marks.
        for (st, res) in stage.iter().zip(out.iter_mut()) {
            match *st {
                Stage::Done => {}
                Stage::Tag(c, j) => {
                    let tag = tags.get(j).copied().unwrap_or(Err(CryptoError::Internal));
                    *res = self.commit(&c, tag);
                }
                // Windows only move forward: refused before, refused now, perhaps for a
                // different reason (a repeat that has since fallen left of the window).
                Stage::Window(c, d) => *res = Err(self.check_window(&c).err().unwrap_or(d)),
            }
        }
        for res in out.iter().take(msgs.len()) {
            match res {
                Ok(b) => {
                    self.rx.ok_frames += 1;
                    self.rx.ok_bytes += b.len() as u64;
                }
                Err(d) => self.rx.drops.bump(*d),
            }
        }
    }

    /// The checks of the message alone: the header, the service, the level, the key id and the
    /// counter (the window is [`check_window`](Self::check_window)).
    fn check(&self, msg: &[u8]) -> Result<Checked, DropReason> {
        let p = Packet::new_checked(msg).map_err(header_drop_reason)?;
        let r = Repr::parse(&p).map_err(header_drop_reason)?;
        let total = p.total_len();
        if total != msg.len() {
            return Err(DropReason::BadLength);
        }
        if r.service_id != self.service_id {
            return Err(DropReason::UnknownService);
        }
        if r.tp {
            // Segments are verified after reassembly.
            return Err(DropReason::Fragment);
        }
        if self.key.is_none() {
            return Ok(Checked::Plain(HEADER_LEN..total));
        }
        if r.payload_len < OVERHEAD {
            // Too short to carry the security fields: a plain message sent to a secured service.
            return Err(DropReason::LevelMismatch);
        }
        // `payload_len ≥ OVERHEAD`: the key id and the counter are inside `msg`.
        if byte(msg, HEADER_LEN) != self.key_id {
            return Err(DropReason::UnknownSa);
        }
        let counter = be64(msg, HEADER_LEN + 1);
        if counter == 0 {
            return Err(DropReason::BadSeq);
        }
        Ok(Checked::Secured(Check {
            sender: Sender::of(&r),
            counter,
            total,
        }))
    }

    fn check_window(&self, c: &Check) -> Result<(), DropReason> {
        match self.windows.get(&c.sender) {
            Some(w) => w.check(c.counter).map_err(|e| match e {
                ReplayError::Duplicate => DropReason::ReplayDuplicate,
                ReplayError::TooOld => DropReason::ReplayTooOld,
            }),
            None if self.windows.len() >= self.max_senders => Err(DropReason::TooManySenders),
            None => Ok(()),
        }
    }

    /// The AEAD work of a checked message: its nonce, AAD, data and tag as its level splits it.
    fn op<'m>(&self, c: &Check, msg: &'m mut [u8]) -> Result<AeadOp<'m>, DropReason> {
        let nonce = self.nonce(c.sender, c.counter);
        let body_at = HEADER_LEN + SEC_HEADER_LEN;
        let body_end = c.total - TAG_LEN;
        let msg = msg.get_mut(..c.total).ok_or(DropReason::Truncated)?;
        let (head, tag) = msg
            .split_at_mut_checked(body_end)
            .ok_or(DropReason::Truncated)?;
        let tag: [u8; TAG_LEN] = (&*tag).try_into().map_err(|_| DropReason::Truncated)?;
        Ok(match self.level {
            Level::Conf => {
                let (aad, data) = head
                    .split_at_mut_checked(body_at)
                    .ok_or(DropReason::Truncated)?;
                AeadOp::new(nonce, aad, data, tag)
            }
            _ => AeadOp::new(nonce, head, &mut [], tag),
        })
    }

    /// After the tag: the window checked again (a message before this one may have moved it)
    /// and, when the tag verified, marked. Returns the body.
    fn commit(
        &mut self,
        c: &Check,
        tag: Result<(), CryptoError>,
    ) -> Result<Range<usize>, DropReason> {
        self.check_window(c)?;
        tag.map_err(|e| match e {
            CryptoError::AuthFailed => DropReason::BadTag,
            _ => DropReason::Crypto,
        })?;
        match self.windows.get_mut(&c.sender) {
            Some(w) => w.insert(c.counter),
            None => {
                let mut w = ReplayWindow::new(self.window).map_err(|_| DropReason::Crypto)?;
                w.insert(c.counter);
                self.windows.insert(c.sender, w);
            }
        }
        Ok(HEADER_LEN + SEC_HEADER_LEN..c.total - TAG_LEN)
    }
}

/// Messages whose tags [`ServiceSa::verify_batch`] checks together: the width of the
/// multi-buffer AES-CCM lanes.
const GROUP: usize = 8;

/// A secured message that passed the checks before its tag.
#[derive(Clone, Copy)]
struct Check {
    sender: Sender,
    counter: u64,
    total: usize,
}

/// Where a message of a [`ServiceSa::verify_batch`] group stands.
#[derive(Clone, Copy)]
enum Stage {
    /// Its verdict is written.
    Done,
    /// Its tag is op `j` of the group.
    Tag(Check, usize),
    /// Refused by its window before the tags (with this reason).
    Window(Check, DropReason),
}

enum Checked {
    /// `nosec`: the body, nothing more to check.
    Plain(Range<usize>),
    Secured(Check),
}

/// The SAs of every configured service, looked up by service ID.
#[derive(Debug, Default)]
pub struct SomeipSecurity {
    services: Vec<ServiceSa>,
    /// Drops of messages for services without an SA.
    unknown: DropCounters,
}

impl SomeipSecurity {
    pub fn new(services: Vec<ServiceSa>) -> SomeipSecurity {
        SomeipSecurity {
            services,
            unknown: DropCounters::default(),
        }
    }

    pub fn service(&self, id: u16) -> Option<&ServiceSa> {
        self.services.iter().find(|s| s.service_id == id)
    }

    pub fn service_mut(&mut self, id: u16) -> Option<&mut ServiceSa> {
        self.services.iter_mut().find(|s| s.service_id == id)
    }

    pub fn services(&self) -> &[ServiceSa] {
        &self.services
    }

    /// Protects with the SA of `header.service_id`.
    pub fn protect(
        &mut self,
        header: &Repr,
        body: &[u8],
        out: &mut [u8],
    ) -> Result<usize, SomeipProtectError> {
        match self.service_mut(header.service_id) {
            Some(s) => s.protect(header, body, out),
            None => Err(SomeipProtectError::WrongService {
                expected: 0,
                got: header.service_id,
            }),
        }
    }

    /// Verifies with the SA of the message's service; `unknown_service` when there is none.
    pub fn verify(&mut self, msg: &mut [u8]) -> Result<Range<usize>, DropReason> {
        let id = match Packet::new_checked(&*msg) {
            Ok(p) => p.service_id(),
            Err(e) => {
                let d = header_drop_reason(e);
                self.unknown.bump(d);
                return Err(d);
            }
        };
        match self.service_mut(id) {
            Some(s) => s.verify(msg),
            None => {
                self.unknown.bump(DropReason::UnknownService);
                Err(DropReason::UnknownService)
            }
        }
    }

    /// Every drop counter, summed over the services and the unknown ones.
    pub fn drops(&self) -> DropCounters {
        let mut d = self.unknown.clone();
        for s in &self.services {
            d.merge(&s.rx.drops);
        }
        d
    }

    /// The drops counted for messages without a service.
    pub fn unknown_drops(&self) -> &DropCounters {
        &self.unknown
    }
}

/// The message type of a reply to `t` (RESPONSE for a REQUEST).
pub fn reply_type(t: MessageType) -> MessageType {
    match t {
        MessageType::Request => MessageType::Response,
        other => other,
    }
}
