//! Arbitrary bytes as EAPOL frames to the wire parsers (`wire::eapol`, `wire::eap`, the EAP-TLS
//! header), a `pae::Supplicant` (with a fake TLS engine that accepts anything and finishes
//! after two messages) and a `pae::Authenticator` (server answers made from the input).
//!
//! Invariants: nothing panics; a parsed EAPOL frame and EAP packet emit back to what parses to
//! the same values; frames the machines send fit `max_frame_len()`; the authenticator's
//! session table never exceeds `max_sessions`.
#![no_main]

use ivnsec_core::pae::{
    Authenticator, AuthenticatorConfig, EapKeys, ServerAnswer, Supplicant, SupplicantConfig,
    TlsEngine, TlsFailure, TlsVersion,
};
use ivnsec_core::wire::{eap, eapol};
use libfuzzer_sys::fuzz_target;
use zeroize::Zeroizing;

const SUP: [u8; 6] = [2, 0, 0, 0, 0, 0x11];
const AUTH: [u8; 6] = [2, 0, 0, 0, 0, 0xAA];

struct AnyEngine(u8);

impl TlsEngine for AnyEngine {
    fn read_tls(&mut self, data: &[u8]) -> Result<(), TlsFailure> {
        if data.first() == Some(&0xFF) {
            return Err(TlsFailure::Alert("fuzz".into()));
        }
        self.0 += 1;
        Ok(())
    }
    fn write_tls(&mut self, out: &mut Vec<u8>) -> Result<(), TlsFailure> {
        out.extend(std::iter::repeat_n(0x16, usize::from(self.0) * 700));
        Ok(())
    }
    fn is_finished(&self) -> bool {
        self.0 >= 2
    }
    fn keys(&mut self) -> Result<EapKeys, TlsFailure> {
        Ok(EapKeys {
            msk: Zeroizing::new([1; 64]),
            emsk: Zeroizing::new([2; 64]),
            session_id: vec![13; 65],
            version: TlsVersion::Tls12,
        })
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(f) = eapol::FrameRepr::parse(data) {
        let v = f.to_vec().unwrap();
        assert_eq!(eapol::FrameRepr::parse(&v).unwrap(), f);
        assert_eq!(eapol::packet_type(data), Some(f.eapol.packet_type));
        if let Ok(e) = eap::Repr::parse(f.eapol.body) {
            let v = e.to_vec().unwrap();
            assert_eq!(eap::Repr::parse(&v).unwrap(), e);
            let _ = eap::TlsRepr::parse(e.data);
        }
    }
    let mut cfg = SupplicantConfig::new(SUP, b"fuzz".to_vec());
    cfg.fragment_len = 300;
    let mut s = Supplicant::new(cfg, Box::new(|| Ok(Box::new(AnyEngine(0)) as Box<dyn TlsEngine>)), 0);
    let mut acfg = AuthenticatorConfig::new(AUTH);
    acfg.max_sessions = 4;
    let mut a = Authenticator::new(acfg, 0);
    let mut buf = vec![0u8; 2048];
    let mut now = 0u64;
    // The input is a sequence of length-prefixed frames.
    let mut rest = data;
    while let Some((&len, tail)) = rest.split_first() {
        let n = usize::from(len).min(tail.len());
        let (frame, tail) = tail.split_at(n);
        rest = tail;
        let _ = s.handle_frame(now, frame);
        let _ = a.handle_frame(now, frame);
        while let Some(n) = s.poll_transmit(now, &mut buf) {
            assert!(n <= s.max_frame_len());
            let _ = a.handle_frame(now, &buf[..n]);
        }
        while let Some(n) = a.poll_transmit(now, &mut buf) {
            assert!(n <= a.max_frame_len());
            let _ = s.handle_frame(now, &buf[..n]);
        }
        while let Some(ev) = a.poll_event() {
            if let ivnsec_core::pae::AuthenticatorEvent::ToServer { supplicant, .. } = ev {
                let answer = match len % 4 {
                    0 => ServerAnswer::Challenge { eap: frame.to_vec() },
                    1 => ServerAnswer::Accept {
                        eap: None,
                        msk: Zeroizing::new([3; 64]),
                        session_id: None,
                    },
                    2 => ServerAnswer::Reject { eap: Some(frame.to_vec()) },
                    _ => ServerAnswer::Unreachable,
                };
                a.server_answer(now, supplicant, answer);
            }
        }
        while s.poll_event().is_some() {}
        assert!(a.sessions().len() <= 4);
        now += u64::from(len) * 1_000_000_000;
        s.handle_timeout(now);
        a.handle_timeout(now);
    }
});
