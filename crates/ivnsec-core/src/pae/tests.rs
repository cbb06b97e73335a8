//! Supplicant ↔ authenticator ↔ scripted EAP server on a virtual clock, with a fake TLS engine
//! that "handshakes" by exchanging fixed messages and returns fixed keys.

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;
use zeroize::Zeroizing;

use super::eap_tls::{Fragmenter, Reassembled, Reassembler};
use super::supplicant::SECOND;
use super::*;
use crate::wire::eap::{self, TlsRepr, code, eap_type, tls_flags};
use crate::wire::eapol::{FrameRepr, PAE_GROUP_ADDR, Repr as EapolRepr, packet_types};
use crate::wire::ethernet::MacAddr;

const SUP: [u8; 6] = [2, 0, 0, 0, 0, 0x11];
const AUTH: [u8; 6] = [2, 0, 0, 0, 0, 0xAA];
const EVIL: [u8; 6] = [2, 0, 0, 0, 0, 0xEE];
const CLIENT_RANDOM: [u8; 32] = [0xC1; 32];
const SERVER_RANDOM: [u8; 32] = [0x5E; 32];
const SERVER_FLIGHT_LEN: usize = 3000;
const CLIENT_FLIGHT_LEN: usize = 1500;
const SERVER_FINISHED_LEN: usize = 50;
const MSK: [u8; 64] = [0x4D; 64];

/// A TLS record holding one hello of `msg_type` with `random`, padded to `total` octets.
fn hello(msg_type: u8, random: &[u8; 32], total: usize) -> Vec<u8> {
    let mut hs = vec![msg_type, 0, 0, 0, 3, 3];
    hs.extend_from_slice(random);
    hs.resize(total - 5, 0x33);
    let n = hs.len() - 4;
    hs[1..4].copy_from_slice(&(n as u32).to_be_bytes()[1..]);
    let mut rec = vec![22, 3, 3];
    rec.extend_from_slice(&(hs.len() as u16).to_be_bytes());
    rec.extend(hs);
    rec
}

#[derive(Clone, Copy, PartialEq)]
enum Fail {
    None,
    OnServerFlight,
}

struct FakeClient {
    step: u8,
    server_random: Option<[u8; 32]>,
    fail: Fail,
}

impl TlsEngine for FakeClient {
    fn read_tls(&mut self, data: &[u8]) -> Result<(), TlsFailure> {
        match self.step {
            1 => {
                if self.fail == Fail::OnServerFlight {
                    return Err(TlsFailure::Handshake("certificate not trusted".into()));
                }
                assert_eq!(data.len(), SERVER_FLIGHT_LEN);
                self.server_random = hello_random(data, SERVER_HELLO);
                assert!(self.server_random.is_some());
                self.step = 2;
                Ok(())
            }
            3 => {
                assert_eq!(data, &[0xF1; SERVER_FINISHED_LEN][..]);
                self.step = 4;
                Ok(())
            }
            _ => Err(TlsFailure::Alert("unexpected message".into())),
        }
    }

    fn write_tls(&mut self, out: &mut Vec<u8>) -> Result<(), TlsFailure> {
        match self.step {
            0 => {
                out.extend(hello(CLIENT_HELLO, &CLIENT_RANDOM, 200));
                self.step = 1;
            }
            2 => {
                out.extend((0..CLIENT_FLIGHT_LEN).map(|i| i as u8));
                self.step = 3;
            }
            _ => {}
        }
        Ok(())
    }

    fn is_finished(&self) -> bool {
        self.step == 4
    }

    fn keys(&mut self) -> Result<EapKeys, TlsFailure> {
        if !self.is_finished() {
            return Err(TlsFailure::NotFinished);
        }
        Ok(EapKeys {
            msk: Zeroizing::new(MSK),
            emsk: Zeroizing::new([0x45; 64]),
            session_id: tls12_session_id(&CLIENT_RANDOM, &self.server_random.unwrap()),
            version: TlsVersion::Tls12,
        })
    }
}

fn factory(fail: Fail) -> EngineFactory {
    Box::new(move || {
        Ok(Box::new(FakeClient {
            step: 0,
            server_random: None,
            fail,
        }) as Box<dyn TlsEngine>)
    })
}

#[derive(Clone, Copy, PartialEq)]
enum ServerMode {
    Accept,
    /// Accept with the EAP-Key-Name given by the server.
    AcceptWithId,
    Reject,
    Unreachable,
    Silent,
}

/// A scripted EAP-TLS server behind the authenticator.
struct FakeServer {
    mode: ServerMode,
    id: u8,
    out: Fragmenter,
    reasm: Reassembler,
    step: u8,
    identities: Vec<Vec<u8>>,
}

impl FakeServer {
    fn new(mode: ServerMode) -> Self {
        FakeServer {
            mode,
            id: 100,
            out: Fragmenter::new(),
            reasm: Reassembler::new(),
            step: 0,
            identities: Vec::new(),
        }
    }

    fn request(&mut self, type_data: Vec<u8>) -> ServerAnswer {
        self.id = self.id.wrapping_add(1);
        ServerAnswer::Challenge {
            eap: eap::Repr {
                code: code::REQUEST,
                identifier: self.id,
                eap_type: Some(eap_type::TLS),
                data: &type_data,
            }
            .to_vec()
            .unwrap(),
        }
    }

    fn answer(&mut self, response: &[u8], identity: &[u8]) -> Option<ServerAnswer> {
        match self.mode {
            ServerMode::Unreachable => return Some(ServerAnswer::Unreachable),
            ServerMode::Silent => return None,
            _ => {}
        }
        let e = eap::Repr::parse(response).unwrap();
        assert_eq!(e.code, code::RESPONSE);
        if e.eap_type == Some(eap_type::IDENTITY) {
            self.identities.push(identity.to_vec());
            self.step = 0;
            self.reasm.reset();
            return Some(self.request(vec![tls_flags::S]));
        }
        assert_eq!(e.eap_type, Some(eap_type::TLS));
        assert_eq!(e.identifier, self.id);
        let t = TlsRepr::parse(e.data).unwrap();
        if t.data.is_empty() && !t.more() && !self.reasm.in_progress() {
            // An acknowledgement.
            if let Some(f) = self.out.next_fragment(1000) {
                return Some(self.request(f));
            }
            assert_eq!(self.step, 2);
            return Some(match self.mode {
                ServerMode::Reject => ServerAnswer::Reject { eap: None },
                _ => ServerAnswer::Accept {
                    eap: None,
                    msk: Zeroizing::new(MSK),
                    session_id: (self.mode == ServerMode::AcceptWithId)
                        .then(|| tls12_session_id(&CLIENT_RANDOM, &SERVER_RANDOM)),
                },
            });
        }
        match self.reasm.push(&t).unwrap() {
            Reassembled::NeedMore => Some(self.request(vec![0])),
            Reassembled::Complete(m) => {
                match self.step {
                    0 => {
                        assert_eq!(hello_random(&m, CLIENT_HELLO), Some(CLIENT_RANDOM));
                        self.out
                            .set(hello(SERVER_HELLO, &SERVER_RANDOM, SERVER_FLIGHT_LEN));
                    }
                    1 => {
                        assert_eq!(m.len(), CLIENT_FLIGHT_LEN);
                        self.out.set(vec![0xF1; SERVER_FINISHED_LEN]);
                    }
                    _ => panic!("unexpected message"),
                }
                self.step += 1;
                let f = self.out.next_fragment(1000).unwrap();
                Some(self.request(f))
            }
        }
    }
}

struct Net {
    sup: Supplicant,
    auth: Authenticator,
    server: FakeServer,
    now: u64,
    sup_events: Vec<SupplicantEvent>,
    auth_events: Vec<AuthenticatorEvent>,
    /// Frames to the supplicant are lost.
    cut_to_sup: bool,
    /// Frames to the authenticator are lost.
    cut_to_auth: bool,
    sent_by_sup: usize,
}

impl Net {
    fn new(mode: ServerMode, fail: Fail) -> Net {
        let cfg = SupplicantConfig::new(SUP, b"ecu-17".to_vec());
        let mut acfg = AuthenticatorConfig::new(AUTH);
        acfg.reauth_period_ns = Some(3600 * SECOND);
        Net {
            sup: Supplicant::new(cfg, factory(fail), 0),
            auth: Authenticator::new(acfg, 0),
            server: FakeServer::new(mode),
            now: 0,
            sup_events: Vec::new(),
            auth_events: Vec::new(),
            cut_to_sup: false,
            cut_to_auth: false,
            sent_by_sup: 0,
        }
    }

    /// Moves frames and answers until nothing moves.
    fn pump(&mut self) {
        let mut buf = vec![0u8; 2000];
        for _ in 0..1000 {
            let mut moved = false;
            while let Some(n) = self.sup.poll_transmit(self.now, &mut buf) {
                assert!(n <= self.sup.max_frame_len());
                moved = true;
                self.sent_by_sup += 1;
                if !self.cut_to_auth {
                    let _ = self.auth.handle_frame(self.now, &buf[..n]);
                }
            }
            while let Some(n) = self.auth.poll_transmit(self.now, &mut buf) {
                assert!(n <= self.auth.max_frame_len());
                moved = true;
                if !self.cut_to_sup {
                    let _ = self.sup.handle_frame(self.now, &buf[..n]);
                }
            }
            while let Some(e) = self.auth.poll_event() {
                moved = true;
                if let AuthenticatorEvent::ToServer {
                    supplicant,
                    eap,
                    identity,
                } = &e
                {
                    if let Some(a) = self.server.answer(eap, identity) {
                        self.auth.server_answer(self.now, *supplicant, a);
                    }
                }
                self.auth_events.push(e);
            }
            while let Some(e) = self.sup.poll_event() {
                moved = true;
                self.sup_events.push(e);
            }
            if !moved {
                return;
            }
        }
        panic!("no quiescence");
    }

    /// Advances the clock to `t`, firing timers on the way.
    fn run_until(&mut self, t: u64) {
        loop {
            self.pump();
            let next = [self.sup.poll_timeout(), self.auth.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            match next {
                Some(d) if d <= t => {
                    self.now = self.now.max(d);
                    self.sup.handle_timeout(self.now);
                    self.auth.handle_timeout(self.now);
                }
                _ => {
                    self.now = t;
                    self.pump();
                    return;
                }
            }
        }
    }

    fn sup_authenticated(&self) -> usize {
        self.sup_events
            .iter()
            .filter(|e| matches!(e, SupplicantEvent::Authenticated { .. }))
            .count()
    }

    fn auth_authenticated(&self) -> Vec<(Zeroizing<[u8; 64]>, Vec<u8>)> {
        self.auth_events
            .iter()
            .filter_map(|e| match e {
                AuthenticatorEvent::Authenticated {
                    supplicant,
                    msk,
                    session_id,
                } => {
                    assert_eq!(*supplicant, SUP);
                    Some((msk.clone(), session_id.clone()))
                }
                _ => None,
            })
            .collect()
    }
}

fn eap_frame(src: [u8; 6], dst: [u8; 6], e: &eap::Repr<'_>) -> Vec<u8> {
    let body = e.to_vec().unwrap();
    FrameRepr {
        dst: MacAddr(dst),
        src: MacAddr(src),
        eapol: EapolRepr::new(packet_types::EAP_PACKET, &body),
    }
    .to_vec()
    .unwrap()
}

fn eapol_frame(src: [u8; 6], dst: [u8; 6], ptype: u8) -> Vec<u8> {
    FrameRepr {
        dst: MacAddr(dst),
        src: MacAddr(src),
        eapol: EapolRepr::new(ptype, &[]),
    }
    .to_vec()
    .unwrap()
}

#[test]
fn full_exchange_session_id_from_sniffed_hellos_equals_the_supplicants() {
    let mut net = Net::new(ServerMode::Accept, Fail::None);
    net.pump();
    assert_eq!(net.sup_authenticated(), 1);
    let keys = net
        .sup_events
        .iter()
        .find_map(|e| match e {
            SupplicantEvent::Authenticated {
                authenticator,
                keys,
            } => {
                assert_eq!(*authenticator, AUTH);
                Some(keys)
            }
            _ => None,
        })
        .unwrap();
    let got = net.auth_authenticated();
    assert_eq!(got.len(), 1);
    assert_eq!(*got[0].0, *keys.msk);
    assert_eq!(got[0].1.len(), 65);
    assert_eq!(got[0].1, keys.session_id);
    assert_eq!(net.server.identities, vec![b"ecu-17".to_vec()]);
    let st = net.sup.snapshot();
    assert_eq!(st.state, SupplicantState::Authenticated);
    assert_eq!(st.authenticator, Some(AUTH));
    assert_eq!(st.successes, 1);
    let sessions = net.auth.sessions();
    assert_eq!(sessions.len(), 1);
    assert!(sessions[0].authenticated);
    assert_eq!(sessions[0].identity, b"ecu-17");
    assert_eq!(net.sup.counters().total_drops(), 0);
    assert_eq!(net.auth.counters().total_drops(), 0);
    // The Debug of keys and events prints no key bytes.
    let dbg = alloc::format!("{keys:?} {:?}", net.auth_events);
    assert!(!dbg.contains("77"), "{dbg}");
    assert!(dbg.contains("<secret>"));

    // The server's EAP-Key-Name is used when given.
    let mut net = Net::new(ServerMode::AcceptWithId, Fail::None);
    net.pump();
    assert_eq!(
        net.auth_authenticated()[0].1,
        tls12_session_id(&CLIENT_RANDOM, &SERVER_RANDOM)
    );
}

#[test]
fn reject_fails_both_then_held_then_start_again() {
    let mut net = Net::new(ServerMode::Reject, Fail::None);
    net.pump();
    assert_eq!(net.sup_authenticated(), 0);
    assert!(net.sup_events.iter().any(|e| matches!(
        e,
        SupplicantEvent::Failed {
            authenticator: Some(AUTH),
            reason: AuthFailure::EapFailure
        }
    )));
    assert!(net.auth_events.iter().any(|e| matches!(
        e,
        AuthenticatorEvent::Failed {
            reason: AuthFailure::EapFailure,
            ..
        }
    )));
    assert_eq!(net.sup.snapshot().state, SupplicantState::Held);
    assert_eq!(
        net.sup.snapshot().last_failure,
        Some(AuthFailure::EapFailure)
    );
    // A Start during the quiet period is refused by the authenticator.
    let before = net.auth.counters().dropped(PaeDrop::Quiet);
    net.auth
        .handle_frame(
            net.now,
            &eapol_frame(SUP, PAE_GROUP_ADDR.0, packet_types::START),
        )
        .unwrap_err();
    assert_eq!(net.auth.counters().dropped(PaeDrop::Quiet), before + 1);
    let restarted = net
        .sup_events
        .iter()
        .filter(|e| matches!(e, SupplicantEvent::Restarted))
        .count();
    net.run_until(61 * SECOND);
    let now_restarted = net
        .sup_events
        .iter()
        .filter(|e| matches!(e, SupplicantEvent::Restarted))
        .count();
    assert!(now_restarted > restarted);
    // The server now accepts: the retry authenticates.
    net.server.mode = ServerMode::Accept;
    net.run_until(200 * SECOND);
    assert_eq!(net.sup_authenticated(), 1);
}

#[test]
fn unreachable_server() {
    let mut net = Net::new(ServerMode::Unreachable, Fail::None);
    net.pump();
    assert!(net.auth_events.iter().any(|e| matches!(
        e,
        AuthenticatorEvent::Failed {
            reason: AuthFailure::ServerUnreachable,
            ..
        }
    )));
    assert!(net.sup_events.iter().any(|e| matches!(
        e,
        SupplicantEvent::Failed {
            reason: AuthFailure::EapFailure,
            ..
        }
    )));
    // A silent server times out the same way.
    let mut net = Net::new(ServerMode::Silent, Fail::None);
    net.run_until(31 * SECOND);
    assert!(net.auth_events.iter().any(|e| matches!(
        e,
        AuthenticatorEvent::Failed {
            reason: AuthFailure::ServerUnreachable,
            ..
        }
    )));
}

#[test]
fn starts_then_quiet_then_starts_again_without_an_authenticator() {
    let mut net = Net::new(ServerMode::Accept, Fail::None);
    net.cut_to_auth = true;
    net.run_until(0);
    assert_eq!(net.sent_by_sup, 1);
    net.run_until(30 * SECOND);
    assert_eq!(net.sent_by_sup, 2);
    net.run_until(60 * SECOND);
    assert_eq!(net.sent_by_sup, 3);
    // maxStart reached: quiet for one period.
    net.run_until(90 * SECOND + 1);
    assert_eq!(net.sent_by_sup, 3);
    net.run_until(120 * SECOND + 1);
    assert_eq!(net.sent_by_sup, 4);
    // Still listening: an authenticator that starts with Request/Identity is answered.
    net.cut_to_auth = false;
    net.auth.reauthenticate(net.now, SUP); // no session: nothing
    net.auth
        .handle_frame(net.now, &eapol_frame(SUP, AUTH, packet_types::START))
        .unwrap();
    net.pump();
    assert_eq!(net.sup_authenticated(), 1);
}

#[test]
fn authenticator_retransmits_identity_then_forgets_a_silent_supplicant() {
    let mut a = Authenticator::new(AuthenticatorConfig::new(AUTH), 0);
    a.handle_frame(0, &eapol_frame(SUP, PAE_GROUP_ADDR.0, packet_types::START))
        .unwrap();
    let mut buf = [0u8; 1600];
    let mut ids = Vec::new();
    let mut now = 0;
    loop {
        while let Some(n) = a.poll_transmit(now, &mut buf) {
            let f = FrameRepr::parse(&buf[..n]).unwrap();
            assert_eq!(f.dst.0, SUP);
            let e = eap::Repr::parse(f.eapol.body).unwrap();
            assert_eq!(e.eap_type, Some(eap_type::IDENTITY));
            ids.push(e.identifier);
        }
        let Some(t) = a.poll_timeout() else { break };
        now = t;
        a.handle_timeout(now);
    }
    // The Request and max_req (2) retransmissions, same identifier.
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|i| *i == ids[0]));
    assert_eq!(a.counters().retransmissions, 2);
    assert!(a.sessions().is_empty());
    assert_eq!(now, 90 * SECOND);
}

#[test]
fn supplicant_times_out_a_silent_conversation_and_starts_again() {
    let mut net = Net::new(ServerMode::Silent, Fail::None);
    // Only the Request/Identity arrives; the server never answers and the authenticator's
    // Failure is lost.
    net.pump();
    net.cut_to_sup = true;
    assert_eq!(net.sup.snapshot().state, SupplicantState::Authenticating);
    let sent = net.sent_by_sup;
    net.run_until(30 * SECOND + 1);
    assert!(net.sup_events.iter().any(|e| matches!(
        e,
        SupplicantEvent::Failed {
            reason: AuthFailure::Timeout,
            ..
        }
    )));
    assert!(net.sent_by_sup > sent, "an EAPOL-Start went out");
    assert_eq!(net.sup.snapshot().state, SupplicantState::Connecting);
}

#[test]
fn retransmitted_request_gets_the_same_response() {
    let mut s = Supplicant::new(
        SupplicantConfig::new(SUP, b"id".to_vec()),
        factory(Fail::None),
        0,
    );
    let mut buf = [0u8; 1600];
    while s.poll_transmit(0, &mut buf).is_some() {}
    let req = eap_frame(
        AUTH,
        SUP,
        &eap::Repr {
            code: code::REQUEST,
            identifier: 7,
            eap_type: Some(eap_type::IDENTITY),
            data: &[],
        },
    );
    s.handle_frame(1, &req).unwrap();
    let n = s.poll_transmit(1, &mut buf).unwrap();
    let first = buf[..n].to_vec();
    s.handle_frame(2, &req).unwrap();
    let n = s.poll_transmit(2, &mut buf).unwrap();
    assert_eq!(&buf[..n], &first[..]);
    assert_eq!(s.counters().retransmissions, 1);
    let f = FrameRepr::parse(&first).unwrap();
    assert_eq!(f.dst.0, AUTH);
    let e = eap::Repr::parse(f.eapol.body).unwrap();
    assert_eq!(
        (e.code, e.identifier, e.data),
        (code::RESPONSE, 7, &b"id"[..])
    );
    // Another method is Nak'ed, proposing EAP-TLS.
    let md5 = eap_frame(
        AUTH,
        SUP,
        &eap::Repr {
            code: code::REQUEST,
            identifier: 8,
            eap_type: Some(4),
            data: &[1, 2],
        },
    );
    s.handle_frame(3, &md5).unwrap();
    let n = s.poll_transmit(3, &mut buf).unwrap();
    let f = FrameRepr::parse(&buf[..n]).unwrap();
    let e = eap::Repr::parse(f.eapol.body).unwrap();
    assert_eq!(e.eap_type, Some(eap_type::NAK));
    assert_eq!(e.data, &[eap_type::TLS]);
    // Frames for another station and from another authenticator are dropped.
    let other = eap_frame(AUTH, EVIL, &eap::Repr::failure(8));
    assert_eq!(s.handle_frame(4, &other), Err(PaeDrop::NotForUs));
    let spoof = eap_frame(EVIL, SUP, &eap::Repr::failure(8));
    assert_eq!(s.handle_frame(4, &spoof), Err(PaeDrop::WrongSource));
    assert_eq!(s.handle_frame(4, &[0u8; 10]), Err(PaeDrop::Malformed));
    let names: Vec<_> = s.counters().named_drops().filter(|d| d.1 > 0).collect();
    assert_eq!(
        names,
        vec![("malformed", 1), ("not_for_us", 1), ("wrong_source", 1)]
    );
}

#[test]
fn reauthentication_keeps_the_session_until_it_fails() {
    let mut net = Net::new(ServerMode::Accept, Fail::None);
    net.pump();
    assert_eq!(net.auth_authenticated().len(), 1);
    // Operator-triggered re-authentication.
    net.now += SECOND;
    net.auth.reauthenticate(net.now, SUP);
    net.pump();
    assert_eq!(net.sup_authenticated(), 2);
    assert_eq!(net.auth_authenticated().len(), 2);
    assert_eq!(net.server.identities.len(), 2);
    // Periodic re-authentication (reauth_period 1 h).
    net.run_until(3602 * SECOND);
    assert_eq!(net.auth_authenticated().len(), 3);
    // A re-authentication the server rejects ends the session.
    net.server.mode = ServerMode::Reject;
    net.auth.reauthenticate(net.now, SUP);
    net.pump();
    assert!(net.auth_events.iter().any(
        |e| matches!(e, AuthenticatorEvent::SessionEnded { supplicant } if *supplicant == SUP)
    ));
    assert!(!net.auth.sessions()[0].authenticated);
    assert_eq!(net.sup.snapshot().state, SupplicantState::Held);
    assert!(!net.sup.snapshot().authenticated);
}

#[test]
fn spoofed_failure_and_logoff_change_nothing() {
    let mut net = Net::new(ServerMode::Accept, Fail::None);
    net.pump();
    assert_eq!(net.sup.snapshot().state, SupplicantState::Authenticated);
    // A Failure from another MAC.
    let spoof = eap_frame(EVIL, SUP, &eap::Repr::failure(0));
    assert_eq!(
        net.sup.handle_frame(net.now, &spoof),
        Err(PaeDrop::WrongSource)
    );
    // A Failure or Success with the authenticator's MAC but outside a conversation.
    for id in 0..=255u8 {
        let f = eap_frame(AUTH, SUP, &eap::Repr::failure(id));
        assert_eq!(net.sup.handle_frame(net.now, &f), Err(PaeDrop::Unexpected));
    }
    let s = eap_frame(AUTH, SUP, &eap::Repr::success(1));
    assert_eq!(net.sup.handle_frame(net.now, &s), Err(PaeDrop::Unexpected));
    assert_eq!(net.sup.snapshot().state, SupplicantState::Authenticated);
    assert!(net.sup.poll_event().is_none());
    // A Logoff from another MAC at the authenticator ends nothing.
    let logoff = eapol_frame(EVIL, PAE_GROUP_ADDR.0, packet_types::LOGOFF);
    assert_eq!(
        net.auth.handle_frame(net.now, &logoff),
        Err(PaeDrop::Unexpected)
    );
    assert!(net.auth.sessions()[0].authenticated);
    // The supplicant's own Logoff ends its session only.
    net.sup.logoff(net.now);
    net.pump();
    assert!(net.auth.sessions().is_empty());
    assert!(
        net.auth_events
            .iter()
            .any(|e| matches!(e, AuthenticatorEvent::LoggedOff { .. }))
    );
    assert!(
        net.sup_events
            .iter()
            .any(|e| matches!(e, SupplicantEvent::LoggedOff))
    );
    assert_eq!(net.sup.snapshot().state, SupplicantState::LoggedOff);
    net.sup.restart(net.now);
    net.pump();
    assert_eq!(net.sup_authenticated(), 2);
}

#[test]
fn premature_success_is_refused() {
    let mut net = Net::new(ServerMode::Silent, Fail::None);
    net.pump();
    // The identity went to the (silent) server; a Success echoing the identity Response's
    // identifier arrives from the authenticator's MAC before any TLS.
    let st = net.auth.sessions();
    assert_eq!(st[0].phase, SessionPhase::Server);
    for id in 0..=255u8 {
        let f = eap_frame(AUTH, SUP, &eap::Repr::success(id));
        let r = net.sup.handle_frame(net.now, &f);
        assert!(
            matches!(
                r,
                Err(PaeDrop::PrematureSuccess) | Err(PaeDrop::BadIdentifier)
            ),
            "{r:?}"
        );
    }
    assert_eq!(net.sup.counters().dropped(PaeDrop::PrematureSuccess), 1);
    assert_eq!(net.sup_authenticated(), 0);
    assert!(
        !net.sup_events
            .iter()
            .any(|e| matches!(e, SupplicantEvent::Authenticated { .. }))
    );
}

#[test]
fn tls_failure_sends_nothing_more() {
    let mut net = Net::new(ServerMode::Accept, Fail::OnServerFlight);
    net.cut_to_auth = false;
    net.pump();
    assert!(net.sup_events.iter().any(|e| matches!(
        e,
        SupplicantEvent::Failed {
            reason: AuthFailure::TlsFailure(TlsFailure::Handshake(_)),
            ..
        }
    )));
    let sent = net.sent_by_sup;
    // The authenticator retransmits its last Request; the supplicant stays silent.
    net.run_until(29 * SECOND);
    assert_eq!(net.sent_by_sup, sent);
    assert_eq!(net.sup_authenticated(), 0);
}

#[test]
fn start_flood_stays_bounded() {
    let mut a = Authenticator::new(AuthenticatorConfig::new(AUTH), 0);
    let mut buf = [0u8; 1600];
    for i in 0..10_000u32 {
        let b = i.to_be_bytes();
        let mac = [2, 0x77, b[0], b[1], b[2], b[3]];
        let _ = a.handle_frame(
            u64::from(i),
            &eapol_frame(mac, PAE_GROUP_ADDR.0, packet_types::START),
        );
        while a.poll_transmit(0, &mut buf).is_some() {}
        assert!(a.sessions().len() <= 64);
    }
    assert_eq!(a.sessions().len(), 64);
    assert_eq!(a.counters().dropped(PaeDrop::TooManySessions), 10_000 - 64);
    // A repeated Start from a MAC with a session is rate limited.
    let mac = [2, 0x77, 0, 0, 0, 1];
    let start = eapol_frame(mac, PAE_GROUP_ADDR.0, packet_types::START);
    assert_eq!(a.handle_frame(500, &start), Err(PaeDrop::RateLimited));
    assert!(a.handle_frame(2 * SECOND, &start).is_ok());
    // The silent sessions go away after the retries.
    let mut now = 2 * SECOND;
    while let Some(t) = a.poll_timeout() {
        now = t;
        a.handle_timeout(now);
        while a.poll_transmit(now, &mut buf).is_some() {}
    }
    assert!(a.sessions().is_empty());
    assert!(now < 200 * SECOND);
}

#[test]
fn bad_identifier_and_wrong_direction_at_the_authenticator() {
    let mut a = Authenticator::new(AuthenticatorConfig::new(AUTH), 0);
    a.handle_frame(0, &eapol_frame(SUP, PAE_GROUP_ADDR.0, packet_types::START))
        .unwrap();
    let mut buf = [0u8; 1600];
    let n = a.poll_transmit(0, &mut buf).unwrap();
    let f = FrameRepr::parse(&buf[..n]).unwrap();
    let id = eap::Repr::parse(f.eapol.body).unwrap().identifier;
    let resp = |i: u8| {
        eap_frame(
            SUP,
            AUTH,
            &eap::Repr {
                code: code::RESPONSE,
                identifier: i,
                eap_type: Some(eap_type::IDENTITY),
                data: b"x",
            },
        )
    };
    assert_eq!(
        a.handle_frame(1, &resp(id.wrapping_add(1))),
        Err(PaeDrop::BadIdentifier)
    );
    let req = eap_frame(
        SUP,
        AUTH,
        &eap::Repr {
            code: code::REQUEST,
            identifier: id,
            eap_type: Some(eap_type::IDENTITY),
            data: b"",
        },
    );
    assert_eq!(a.handle_frame(1, &req), Err(PaeDrop::Unexpected));
    a.handle_frame(1, &resp(id)).unwrap();
    assert!(matches!(
        a.poll_event(),
        Some(AuthenticatorEvent::ToServer { identity, .. }) if identity == b"x"
    ));
    // A Response while the server has the turn.
    assert_eq!(a.handle_frame(1, &resp(id)), Err(PaeDrop::Unexpected));
    // An answer for a MAC without a pending request.
    a.server_answer(1, EVIL, ServerAnswer::Unreachable);
    assert_eq!(a.counters().dropped(PaeDrop::Unexpected), 3);
    let mka = eapol_frame(SUP, AUTH, packet_types::MKA);
    assert_eq!(a.handle_frame(1, &mka), Err(PaeDrop::UnsupportedType));
}

proptest! {
    #[test]
    fn machines_never_panic_on_arbitrary_frames(
        frames in proptest::collection::vec(
            (any::<u8>(), any::<u8>(), any::<u8>(), proptest::collection::vec(any::<u8>(), 0..40)),
            0..20),
    ) {
        let mut net = Net::new(ServerMode::Accept, Fail::None);
        net.pump();
        let mut buf = [0u8; 1600];
        for (i, (ptype, code_, id, body)) in frames.iter().enumerate() {
            // Half raw, half shaped like EAPOL with an EAP header.
            let mut payload = vec![*code_, *id];
            payload.extend_from_slice(&((body.len() + 4) as u16).to_be_bytes());
            payload.extend_from_slice(body);
            let f = FrameRepr {
                dst: MacAddr(if i % 2 == 0 { SUP } else { AUTH }),
                src: MacAddr(if i % 3 == 0 { AUTH } else { SUP }),
                eapol: EapolRepr::new(*ptype % 8, &payload),
            }
            .to_vec()
            .unwrap();
            let _ = net.sup.handle_frame(net.now, &f);
            let _ = net.auth.handle_frame(net.now, &f);
            let _ = net.sup.handle_frame(net.now, body);
            let _ = net.auth.handle_frame(net.now, body);
            while net.sup.poll_transmit(net.now, &mut buf).is_some() {}
            while net.auth.poll_transmit(net.now, &mut buf).is_some() {}
            net.now += SECOND;
            net.sup.handle_timeout(net.now);
            net.auth.handle_timeout(net.now);
        }
    }
}

#[test]
fn supplicant_refuses_oversized_tls_messages() {
    let mut s = Supplicant::new(
        SupplicantConfig::new(SUP, b"id".to_vec()),
        factory(Fail::None),
        0,
    );
    let req = |id: u8, td: &[u8]| {
        eap_frame(
            AUTH,
            SUP,
            &eap::Repr {
                code: code::REQUEST,
                identifier: id,
                eap_type: Some(eap_type::TLS),
                data: td,
            },
        )
    };
    s.handle_frame(1, &req(1, &[tls_flags::S])).unwrap();
    let mut big = vec![tls_flags::L | tls_flags::M];
    big.extend(70_000u32.to_be_bytes());
    big.extend([0u8; 100]);
    assert_eq!(s.handle_frame(2, &req(2, &big)), Err(PaeDrop::TooLong));
    // Announced 150, sent 200.
    let mut first = vec![tls_flags::L | tls_flags::M];
    first.extend(150u32.to_be_bytes());
    first.extend([0u8; 100]);
    s.handle_frame(3, &req(3, &first)).unwrap();
    let mut second = vec![0u8];
    second.extend([0u8; 100]);
    assert_eq!(s.handle_frame(4, &req(4, &second)), Err(PaeDrop::TooLong));
    assert_eq!(s.counters().dropped(PaeDrop::TooLong), 2);
    // An EAP-TLS Request without a Start in this conversation is unexpected.
    let mut t = Supplicant::new(
        SupplicantConfig::new(SUP, b"id".to_vec()),
        factory(Fail::None),
        0,
    );
    assert_eq!(t.handle_frame(1, &req(1, &[0])), Err(PaeDrop::Unexpected));
}
