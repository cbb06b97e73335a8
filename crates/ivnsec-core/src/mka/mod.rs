//! MKA, the MACsec Key Agreement protocol of IEEE Std 802.1X-2020 (clauses 9 and 11.11), as a
//! state machine without I/O, clock or randomness of its own (the quinn-proto shape).
//!
//! - [`kdf`]: the key hierarchy — the AES-CMAC counter-mode KDF, ICK and KEK from the CAK and
//!   CKN, the key server's SAK derivation, the ICV, AES Key Wrap of SAKs.
//! - [`participant`]: [`Participant`], one member of one connectivity association (CA).
//! - The MKPDU format itself is [`crate::wire::mkpdu`].
//!
//! # Driving a participant
//!
//! Time is CLOCK_MONOTONIC in nanoseconds (`now: u64`), passed into every call; randomness
//! (the Member Identifier, KS-nonces) comes from the [`SecureRandom`](crate::crypto::SecureRandom)
//! given to [`Participant::new`]; crypto from a [`CryptoProvider`](crate::crypto::CryptoProvider)
//! that implements [`kdf::primitives`] (CMAC-AES-128/256 and AES Key Wrap: both of ivnsec's
//! providers do). A caller (the `macsec up` daemon) runs this loop:
//!
//! ```text
//! let mut p = Participant::new(Config::new(suite), &cak, &ckn, sci, provider, rng, now)?;
//! loop {
//!     while let Some(n) = p.poll_transmit(now, &mut buf) { send(&buf[..n]) }   // whole frames
//!     while let Some(ev) = p.poll_event() { apply(ev) }                      // SecY, log
//!     wait until p.poll_timeout() or an EtherType-0x888E frame or a PN report arrives
//!     on frame:   let _ = p.handle_pdu(now, &frame);        // Err(MkaDrop) is counted
//!     on timeout: p.handle_timeout(now);
//!     on PN:      p.report_tx_pn(now, an, next_pn);         // from the transmit SA
//! }
//! ```
//!
//! [`Participant::handle_pdu`] takes the whole Ethernet frame (the ICV covers the addresses).
//! It returns `Err(MkaDrop)` for a dropped MKPDU; every reason is counted in
//! [`Counters::drops`] (names in [`MkaDrop::ALL`]): malformed, not for us, unsupported version
//! or algorithm, unknown CKN, bad ICV (also an [`Event::IcvFailure`]), our own PDU, stale MN,
//! too many peers, a Distributed SAK not from the elected key server, a SAK that does not
//! unwrap, a Distributed CAK not from the elected key server, a CAK that does not unwrap. [`Participant::snapshot`] is the snapshot `macsec status` prints.
//!
//! # Events: what the data plane does
//!
//! - [`Event::InstallRx`]: create one receive SA with association number `an` for each SC in
//!   `scs` (`(peer SCI, SSCI)`), key `sak`, `salt` for XPN suites, lowest PN `lowest_pn`. A
//!   key already installed may come again with the SC of a peer that became live since
//!   (GCM-AES suites): add that SC's SA.
//! - [`Event::InstallTx`]: transmit with this SA from now on (SCI and SSCI in `scs`, first PN
//!   `lowest_pn`). The SA it replaces gets an [`Event::RetireTx`] right after.
//! - [`Event::RetireRx`] / [`Event::RetireTx`]: delete the SAs of that key and zero it.
//! - [`Event::PeerLive`], [`Event::PeerLost`], [`Event::KeyServerElected`],
//!   [`Event::SakDistributed`], [`Event::IcvFailure`]: for the log (`--events`) and status.
//! - [`Event::CakDistributed`]: the key server distributed a group CAK; start a participant
//!   for its CA (`cak`, `ckn`) next to this one.
//!
//! Report the transmit SA's next PN with [`Participant::report_tx_pn`] (every few thousand
//! frames is plenty): the key server rekeys at [`Config::pn_threshold`] (75 % of the PN space by
//! default), long before the SA is exhausted, and stops nothing itself — the data plane still
//! refuses to send past the last PN.
//!
//! # The protocol as implemented
//!
//! **Liveness (9.4).** Each participant draws a random 96-bit MI and numbers its MKPDUs (MN 1,
//! 2, …). A peer is *potential* once an MKPDU of it verified; it becomes *live* when one of its
//! MKPDUs lists our MI with an MN we sent within the MKA life time. A peer not confirmed live
//! (or, if potential, not heard) for a life time is removed. An MN not above the last one
//! accepted from that MI is a replay (`stale_mn`). A new MI of a known SCI replaces the old
//! one. MKPDUs go out every hello time (bounded hello time with delay protection), right away
//! when there is news (a new peer, a SAK, a SAK in use), and faster at start with the optional
//! [`RampUp`].
//!
//! **Key server (9.5).** Among this participant and its live peers whose priority is not 0xFF:
//! the lowest Key Server Priority, then the lowest SCI. Only its Distributed SAK is accepted.
//!
//! **SAK distribution (9.8).** The key server derives a SAK from a fresh KS-nonce (`SAK =
//! KDF(CAK, "IEEE8021 SAK", KS-nonce ‖ MIs ‖ KN)`), gives it the next Key Number and the next
//! free AN, wraps it under the KEK and repeats it in every MKPDU until every live peer reports
//! it installed for receive. For XPN suites every member's SSCI is its rank in descending SCI
//! order (802.1AE 10.7.13) and the salt is the key server's MI with the KN folded in; the key
//! server's SSCI travels in the Live Peer List (802.1X-2020 11.11.3) and a member whose view
//! differs waits for the views to converge.
//!
//! **Make-before-break.** Receive first, then transmit, then retire: every member installs a
//! new SAK for receive as soon as it has it (the key server when it distributes). The key
//! server transmits with it once every live peer reports receiving with it; the others once
//! they see the key server transmit with it. The old SAK stays installed for receive until
//! every live peer reports transmitting with the new one, plus the SAK retire time (so frames
//! in flight are still accepted), and at most a life time plus the retire time after our own
//! switch. No member ever transmits under a SAK another live member has not installed.
//!
//! **Rekeys** (one at a time: a new SAK only after the previous old one retired): when a key
//! server is elected; when a live peer joins or leaves (configurable; always on a join for XPN
//! suites); every [`Config::rekey_interval_ns`]; when a transmit PN of the latest SAK — ours,
//! or the Lowest Acceptable PN a peer reports in its SAK Use set (with the XPN set's high 32
//! bits) — reaches [`Config::pn_threshold`]. A member that joins while a SAK is being
//! distributed makes the key server distribute a fresh one to all.
//!
//! **Distributed CAK (9.8).** The key server of a pairwise CA (an authenticator and one
//! supplicant, its CAK from EAP) hands the live members a group CAK, so that the supplicants
//! behind one authenticator port and the authenticator share one CA and one SAK.
//! [`Participant::distribute_cak`] wraps the CAK under this CA's KEK (24 octets for a 128-bit
//! CAK, 40 for a 256-bit one) and puts it, followed by its CKN, in a Distributed CAK parameter
//! set (Figure 11-13) of every MKPDU while this participant is the elected key server (a
//! participant not elected yet keeps it until it is), until
//! [`Participant::stop_distributing_cak`]; a new call replaces it. The standard has no
//! acknowledgement for it, hence the repetition. A member accepts it only from the elected key
//! server (else `dcak_not_from_key_server`) once that one is live, unwraps it under the KEK
//! (else `dcak_unwrap`; the length of the wrapped CAK is not encoded, so a body that reads
//! both ways is decided by the key wrap's integrity check) and announces it as
//! [`Event::CakDistributed`] once, not again while the key server repeats it. The CAK is kept
//! only in that event's zeroizing [`Cak`]; the participant holds its wrapped form.

pub mod kdf;
pub mod participant;

pub use participant::{
    Cak, Config, Counters, Event, KeyStatus, MkaDrop, MkaError, Participant, PeerStatus, RampUp,
    RekeyReason, SaInstall, Sak, Status,
};
