//! SOME/IP service logic without I/O: what a node does with the datagrams and messages its
//! sockets carry (splitting, SOME/IP-TP segmentation and reassembly, drop accounting), the
//! SOME/IP-SD server and client ([`sd`]) and the service itself ([`service`]: verify, answer
//! the echo method, protect, periodic events, the caller's side).
//!
//! Like the other protocols here, these are state machines in the style of `quinn-proto`: they
//! never read a clock or touch a socket. The caller passes `now` (a monotonic
//! [`Duration`](core::time::Duration) since an origin of its choosing), the bytes it received
//! and from whom ([`SocketAddr`]), and sends what `poll_transmit` returns; `poll_timeout` says
//! when to call again.

pub mod sd;
pub mod service;

use alloc::vec::Vec;
use core::net::SocketAddr;

use crate::sa::someip::header_drop_reason;
use crate::sa::{DropCounters, DropReason};
use crate::wire::someip::{HEADER_LEN, Messages, Packet, Repr, SomeIpError};
use crate::wire::someip_sd::SD_SERVICE_ID;
use crate::wire::someip_tp::{Reassembler, Segmenter, TpError};

/// Splits a UDP datagram from `peer` into SOME/IP messages and hands each whole message to
/// `whole`: unsegmented ones as they are, SOME/IP-TP segments once `reassembler` completed their
/// message. SD messages are skipped; framing and TP errors are counted in `drops` (a bad header
/// ends the datagram, since the next message's position is unknown).
pub fn datagram_messages(
    reassembler: &mut Reassembler,
    drops: &mut DropCounters,
    peer: u64,
    data: &[u8],
    mut whole: impl FnMut(Vec<u8>),
) {
    for m in Messages::new(data) {
        let p = match m {
            Ok(p) => p,
            Err(e) => {
                drops.bump(header_drop_reason(e));
                break;
            }
        };
        if p.service_id() == SD_SERVICE_ID {
            continue;
        }
        if p.tp() {
            match reassembler.push(peer, p.message()) {
                Ok(Some(full)) => whole(full),
                Ok(None) => {}
                Err(e) => drops.bump(tp_drop_reason(e)),
            }
        } else {
            whole(p.message().to_vec());
        }
    }
}

pub fn tp_drop_reason(e: TpError) -> DropReason {
    match e {
        TpError::Truncated => DropReason::Truncated,
        TpError::Header(h) => header_drop_reason(h),
        TpError::BadSegment => DropReason::TpBadSegment,
        TpError::TooLarge => DropReason::TpTooLarge,
        _ => DropReason::Malformed,
    }
}

/// The key a [`Reassembler`] files the segments of `peer` under (IPv4: address and port; IPv6:
/// the low 64 bits of the address mixed with the port).
pub fn peer_key(a: SocketAddr) -> u64 {
    match a {
        SocketAddr::V4(v) => (u64::from(u32::from(*v.ip())) << 16) | u64::from(v.port()),
        SocketAddr::V6(v) => {
            let o = v.ip().octets();
            u64::from_be_bytes([o[8], o[9], o[10], o[11], o[12], o[13], o[14], o[15]])
                ^ u64::from(v.port())
        }
    }
}

/// The next session ID of a counter: 1, 2, … 0xFFFF, then 1 again (0 is never used).
pub fn next_session(s: &mut u16) -> u16 {
    *s = s.wrapping_add(1);
    if *s == 0 {
        *s = 1;
    }
    *s
}

/// Why a message could not be sent over UDP.
#[derive(Debug)]
pub enum UdpSendError<E> {
    /// The message does not start with a valid SOME/IP header.
    Header(SomeIpError),
    /// Sending the first datagram (`segment == false`) or a TP segment failed.
    Send { segment: bool, error: E },
}

/// Cuts a whole message for the UDP binding: one datagram when its payload is at most
/// `udp_max_payload` bytes, else SOME/IP-TP segments of `tp_segment` data bytes each. `send`
/// gets each datagram and whether it is a TP segment; the first error ends it.
pub fn udp_datagrams<E>(
    wire: &[u8],
    udp_max_payload: usize,
    tp_segment: usize,
    mut send: impl FnMut(&[u8], bool) -> Result<(), E>,
) -> Result<(), UdpSendError<E>> {
    let packet = Packet::new_checked(wire).map_err(UdpSendError::Header)?;
    if wire.len().saturating_sub(HEADER_LEN) <= udp_max_payload {
        return send(wire, false).map_err(|error| UdpSendError::Send {
            segment: false,
            error,
        });
    }
    let hdr = Repr::parse(&packet).map_err(UdpSendError::Header)?;
    let mut seg = Segmenter::new(hdr, packet.payload(), tp_segment);
    let mut buf = alloc::vec![0u8; seg.max_segment_len()];
    while let Some(n) = seg.next_into(&mut buf) {
        send(buf.get(..n).unwrap_or_default(), true).map_err(|error| UdpSendError::Send {
            segment: true,
            error,
        })?;
    }
    Ok(())
}

/// Hex to bytes, for the known answers of this module's tests.
#[cfg(test)]
fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::someip::{MessageType, ReturnCode};
    use crate::wire::someip_tp::{ReassemblyLimits, TpHeader};
    use alloc::vec;

    fn message(payload: usize) -> Vec<u8> {
        let r = Repr {
            service_id: 0x1234,
            method_id: 1,
            client_id: 0x0101,
            session_id: 7,
            interface_version: 1,
            message_type: MessageType::Request,
            tp: false,
            return_code: ReturnCode::E_OK,
            payload_len: payload,
        };
        let mut m = vec![0u8; r.buffer_len()];
        r.emit_header(&mut m);
        for (i, b) in m[HEADER_LEN..].iter_mut().enumerate() {
            *b = i as u8;
        }
        m
    }

    #[test]
    fn small_messages_go_whole_large_ones_in_tp_segments_that_reassemble() {
        let small = message(100);
        let mut out: Vec<(Vec<u8>, bool)> = Vec::new();
        udp_datagrams(&small, 100, 32, |d, s| {
            out.push((d.to_vec(), s));
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(out, vec![(small.clone(), false)]);

        let big = message(101);
        out.clear();
        udp_datagrams(&big, 100, 32, |d, s| {
            out.push((d.to_vec(), s));
            Ok::<(), ()>(())
        })
        .unwrap();
        // 101 bytes in 32-byte segments: 4 segments (32, 32, 32, 5), TP flag 0x20 set, offsets
        // in 16-byte units, M set on all but the last (PRS_SOMEIP_00724ff).
        assert_eq!(out.len(), 4);
        for (i, (d, seg)) in out.iter().enumerate() {
            assert!(seg);
            assert_eq!(d[14], 0x20, "REQUEST with the TP flag");
            let tp = TpHeader::parse(&d[HEADER_LEN..]).unwrap();
            assert_eq!(tp.offset as usize, i * 32);
            assert_eq!(tp.more, i < 3);
        }
        let mut r = Reassembler::new(ReassemblyLimits::default());
        let mut drops = DropCounters::default();
        let mut whole = Vec::new();
        for (d, _) in &out {
            datagram_messages(&mut r, &mut drops, 1, d, |m| whole.push(m));
        }
        assert_eq!(whole, vec![big]);
        assert_eq!(drops.total(), 0);
    }

    #[test]
    fn udp_datagrams_refuses_a_short_header_and_reports_send_errors() {
        assert!(matches!(
            udp_datagrams(&[0u8; 5], 100, 32, |_, _| Ok::<(), ()>(())),
            Err(UdpSendError::Header(_))
        ));
        let r = udp_datagrams(&message(200), 100, 32, |_, _| Err("down"));
        assert!(matches!(
            r,
            Err(UdpSendError::Send {
                segment: true,
                error: "down"
            })
        ));
    }

    #[test]
    fn sessions_skip_zero() {
        let mut s = 0xFFFE;
        assert_eq!(next_session(&mut s), 0xFFFF);
        assert_eq!(next_session(&mut s), 1);
    }

    #[test]
    fn peer_keys_differ_by_address_and_port() {
        let a: SocketAddr = "10.0.0.1:30509".parse().unwrap();
        let b: SocketAddr = "10.0.0.1:30510".parse().unwrap();
        let c: SocketAddr = "10.0.0.2:30509".parse().unwrap();
        assert_eq!(peer_key(a), (0x0a00_0001 << 16) | 30509);
        assert_ne!(peer_key(a), peer_key(b));
        assert_ne!(peer_key(a), peer_key(c));
    }
}
