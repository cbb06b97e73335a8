//! Arbitrary bytes as a line of the key server's protocol (`ivnsec keyserver`, docs/keys.md):
//! to `pki::keyserver::parse_request` (what the server reads from an authenticated ECU) and
//! `pki::keyserver::parse_answer` (what `macsec up --keyserver` reads from the server).
//!
//! Invariants: nothing panics; a request longer than `MAX_LINE` is refused; an accepted
//! request names a segment only when it is a valid name (a DNS label, so never a path), and is
//! the same request once written out again the canonical way; an accepted answer carries only
//! CAKs of 16 or 32 bytes and CKNs of 1 to 32 bytes.
#![no_main]

use ivnsec_node::pki::check_ecu_name;
use ivnsec_node::pki::keyserver::{Answer, MAX_LINE, Request, parse_answer, parse_request};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_request(data) {
        Ok(req) => {
            assert!(data.len() <= MAX_LINE);
            let (op, segment) = match &req {
                Request::Get { segment } => ("get", segment),
                Request::Watch { segment } => ("watch", segment),
            };
            if let Some(s) = segment {
                assert!(check_ecu_name(s).is_ok(), "{s:?}");
            }
            let mut v = serde_json::json!({ "op": op });
            if let Some(s) = segment {
                v["segment"] = serde_json::json!(s);
            }
            let again = parse_request(v.to_string().as_bytes()).expect("canonical form parses");
            assert_eq!(again, req);
        }
        Err(_) => {}
    }
    if let Ok(Answer::Keys(keys)) = parse_answer(data) {
        for k in keys {
            assert!(k.key.cak.len() == 16 || k.key.cak.len() == 32);
            assert!((1..=32).contains(&k.key.ckn.len()));
        }
    }
});
