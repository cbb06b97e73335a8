//! Arbitrary bytes as a RADIUS packet to `wire::radius::Packet::new_checked`, its attribute and
//! vendor iterators, and the RADIUS client's response check (`dot1x::radius::check_response`).
//!
//! Invariants: nothing panics; a checked packet is 20..=4096 octets and its attributes tile the
//! attribute octets exactly; the EAP-Message concatenation is the sum of its attributes; a
//! response the check accepts has the Response Authenticator computed over it.
#![no_main]

use ivnsec_core::wire::radius::{self, Packet};
use ivnsec_node::dot1x::radius::{check_response, response_authenticator};
use libfuzzer_sys::fuzz_target;

const SECRET: &[u8] = b"fuzz-secret";
const REQ_AUTH: [u8; 16] = [0x5A; 16];

fuzz_target!(|data: &[u8]| {
    let _ = radius::Attributes::new(data).count();
    let _ = check_response(data, &REQ_AUTH, SECRET);
    let Ok(p) = Packet::new_checked(data) else {
        return;
    };
    let n = p.as_bytes().len();
    assert!((radius::MIN_LEN..=radius::MAX_LEN).contains(&n));
    let tiled: usize = p.attributes().map(|a| a.value.len() + 2).sum();
    assert_eq!(tiled + radius::HEADER_LEN, n);
    let eap_len: usize = p
        .attributes()
        .filter(|a| a.ty == radius::ATTR_EAP_MESSAGE)
        .map(|a| a.value.len())
        .sum();
    assert_eq!(p.eap_message().map_or(0, |e| e.len()), eap_len);
    let _ = p.vendor_attributes().count();
    if check_response(data, &REQ_AUTH, SECRET).is_ok() {
        assert_eq!(response_authenticator(&p, &REQ_AUTH, SECRET), p.authenticator());
    }
});
