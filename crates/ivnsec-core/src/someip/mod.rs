//! SOME/IP service logic without I/O: what a node does with the datagrams and messages its
//! sockets carry (splitting, SOME/IP-TP reassembly, drop accounting).

use alloc::vec::Vec;

use crate::sa::someip::header_drop_reason;
use crate::sa::{DropCounters, DropReason};
use crate::wire::someip::Messages;
use crate::wire::someip_sd::SD_SERVICE_ID;
use crate::wire::someip_tp::{Reassembler, TpError};

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
