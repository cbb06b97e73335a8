//! Drop reasons, failure reasons and counters shared by the supplicant and the authenticator.

use core::fmt;

use super::tls::TlsFailure;

/// Why the PAE dropped a received frame (every reason is counted in [`PaeCounters::drops`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PaeDrop {
    /// Not a well-formed EAPOL frame or EAP packet.
    Malformed,
    /// Addressed to neither this port nor the PAE group address, or sent by this port.
    NotForUs,
    /// EAP from a MAC that is not the authenticator of the current conversation.
    WrongSource,
    /// A packet this state does not expect (a Success or Failure outside a conversation, a
    /// Request at an authenticator, a server answer for no pending request).
    Unexpected,
    /// An EAP-Success before the TLS handshake finished.
    PrematureSuccess,
    /// An EAP Identifier that does not match the outstanding Request.
    BadIdentifier,
    /// A message over the bounds (EAP-TLS message over 64 KiB, more data than announced, a
    /// frame larger than the port sends).
    TooLong,
    /// The authenticator's session table is full.
    TooManySessions,
    /// A repeated EAPOL-Start within a second.
    RateLimited,
    /// An EAPOL packet type or EAP method this PAE does not handle.
    UnsupportedType,
    /// A frame from a MAC in its quiet period after a failure.
    Quiet,
}

impl PaeDrop {
    /// Every reason, in counter order.
    pub const ALL: [&'static str; 11] = [
        "malformed",
        "not_for_us",
        "wrong_source",
        "unexpected",
        "premature_success",
        "bad_identifier",
        "too_long",
        "too_many_sessions",
        "rate_limited",
        "unsupported_type",
        "quiet",
    ];

    pub fn name(self) -> &'static str {
        Self::ALL.get(self.index()).copied().unwrap_or("unknown")
    }

    pub(crate) fn index(self) -> usize {
        match self {
            PaeDrop::Malformed => 0,
            PaeDrop::NotForUs => 1,
            PaeDrop::WrongSource => 2,
            PaeDrop::Unexpected => 3,
            PaeDrop::PrematureSuccess => 4,
            PaeDrop::BadIdentifier => 5,
            PaeDrop::TooLong => 6,
            PaeDrop::TooManySessions => 7,
            PaeDrop::RateLimited => 8,
            PaeDrop::UnsupportedType => 9,
            PaeDrop::Quiet => 10,
        }
    }
}

impl fmt::Display for PaeDrop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl core::error::Error for PaeDrop {}

/// Why an authentication failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthFailure {
    /// The authenticator (or the server) sent EAP-Failure / Access-Reject.
    EapFailure,
    /// The TLS engine failed.
    TlsFailure(TlsFailure),
    /// No answer within the period.
    Timeout,
    /// The authentication server did not answer.
    ServerUnreachable,
    /// The port logged off.
    Logoff,
}

impl fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuthFailure::EapFailure => f.write_str("EAP failure"),
            AuthFailure::TlsFailure(e) => write!(f, "{e}"),
            AuthFailure::Timeout => f.write_str("timed out"),
            AuthFailure::ServerUnreachable => f.write_str("authentication server unreachable"),
            AuthFailure::Logoff => f.write_str("logged off"),
        }
    }
}

impl core::error::Error for AuthFailure {}

/// Counters of a PAE.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaeCounters {
    pub frames_received: u64,
    pub frames_sent: u64,
    /// Per [`PaeDrop::ALL`] entry.
    pub drops: [u64; 11],
    pub successes: u64,
    pub failures: u64,
    /// Frames sent again (retransmitted Requests, repeated Responses).
    pub retransmissions: u64,
    /// Frames not queued because the transmit queue was full or the frame larger than a
    /// caller's buffer.
    pub tx_dropped: u64,
}

impl PaeCounters {
    pub fn named_drops(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        PaeDrop::ALL.iter().copied().zip(self.drops.iter().copied())
    }

    /// All drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }

    pub(crate) fn drop(&mut self, d: PaeDrop) -> PaeDrop {
        if let Some(c) = self.drops.get_mut(d.index()) {
            *c += 1;
        }
        d
    }

    /// The counter of one reason.
    pub fn dropped(&self, d: PaeDrop) -> u64 {
        self.drops.get(d.index()).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_indexed() {
        let all = [
            PaeDrop::Malformed,
            PaeDrop::NotForUs,
            PaeDrop::WrongSource,
            PaeDrop::Unexpected,
            PaeDrop::PrematureSuccess,
            PaeDrop::BadIdentifier,
            PaeDrop::TooLong,
            PaeDrop::TooManySessions,
            PaeDrop::RateLimited,
            PaeDrop::UnsupportedType,
            PaeDrop::Quiet,
        ];
        for (i, d) in all.iter().enumerate() {
            assert_eq!(d.index(), i);
            assert_eq!(d.name(), PaeDrop::ALL[i]);
        }
    }
}
