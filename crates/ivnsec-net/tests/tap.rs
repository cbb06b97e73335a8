//! TAP interfaces in-process: one named with a random prefix in this namespace (as the veth
//! pairs of raw_socket.rs), frames both ways through it checked with an AF_PACKET socket bound
//! to it, its settings, refusal of a name in use, and removal when dropped; a socket of
//! protocol 0 sends and receives nothing. Needs root; skipped with a printed reason otherwise.

mod common;

use std::time::{Duration, Instant};

use ivnsec_net::sys::{RawSocket, interface_index};
use ivnsec_net::tap::Tap;
use ivnsec_net::testbed::random_prefix;

/// IEEE 802 local experimental EtherType 1.
const ETYPE: u16 = 0x88B5;

fn frame(dst: [u8; 6], src: [u8; 6], tag: u8, len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ETYPE.to_be_bytes());
    f.resize(len, tag);
    f
}

/// The next frame of EtherType [`ETYPE`] read from `tap`, skipping whatever else the host sends
/// on a new interface (e.g. IPv6 router solicitations); fails after 2 s without one.
fn read_ours(tap: &Tap, buf: &mut [u8]) -> Vec<u8> {
    let t0 = Instant::now();
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "nothing read from the TAP"
        );
        if !tap.wait_readable(Some(Duration::from_millis(100))).unwrap() {
            continue;
        }
        match tap.recv(buf).unwrap() {
            Some(n) if buf[12..14] == ETYPE.to_be_bytes() => return buf[..n].to_vec(),
            _ => continue,
        }
    }
}

#[test]
fn tap_carries_frames_both_ways_and_disappears_when_dropped() {
    require_root!();
    let name = format!("{}t", random_prefix().unwrap());
    let tap = Tap::create(&name).unwrap();
    assert_eq!(tap.name(), name);
    assert!(interface_index(&name).is_ok());
    // A second TAP under the same name is refused, and the first is untouched.
    let e = Tap::create(&name).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");
    assert!(interface_index(&name).is_ok());
    assert_eq!(
        Tap::create("no/such name").unwrap_err().kind(),
        std::io::ErrorKind::InvalidInput
    );

    let mac = [0x02, 0x11, 0x22, 0x33, 0x44, 0x55];
    tap.set_mac(mac).unwrap();
    assert_eq!(tap.mac().unwrap(), mac);
    tap.set_mtu(1468).unwrap();
    assert_eq!(tap.mtu().unwrap(), 1468);
    assert!(!tap.is_up().unwrap());
    tap.set_up(true).unwrap();
    assert!(tap.is_up().unwrap());

    let sock = RawSocket::open(&name, ETYPE).unwrap();
    assert_eq!(sock.mac_address().unwrap(), mac);
    // Written to the TAP: received on the interface as if from a wire.
    let peer = [0x02, 0, 0, 0, 0, 0x99];
    let f = frame(mac, peer, 0xA5, 1482);
    tap.send(&f).unwrap();
    let mut buf = vec![0u8; 2048];
    let m = sock
        .recv(&mut buf, Some(Duration::from_secs(2)))
        .unwrap()
        .expect("the frame written to the TAP arrives on the interface");
    assert_eq!(&buf[..m.len], &f[..]);

    // Sent on the interface: read from the TAP.
    let g = frame(peer, mac, 0x5A, 100);
    sock.send(&g).unwrap();
    let got = read_ours(&tap, &mut buf);
    assert_eq!(got, g);
    // Nothing queued: recv does not block.
    let t0 = Instant::now();
    while tap.recv(&mut buf).unwrap().is_some() {}
    assert!(t0.elapsed() < Duration::from_secs(1));

    drop(sock);
    drop(tap);
    // Removed by the kernel when the descriptor closed.
    let t0 = Instant::now();
    while interface_index(&name).is_ok() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "{name} still exists after the Tap was dropped"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A socket bound with protocol 0 (the data planes' sending socket,
/// `ivnsec_node::macsec::dataplane::open_send`) sends whole frames out of its interface and
/// receives none: frames that arrive on the interface reach a socket of their EtherType and not
/// it, and its drop counter stays at zero.
#[test]
fn a_socket_of_protocol_0_sends_and_receives_nothing() {
    require_root!();
    let name = format!("{}t", random_prefix().unwrap());
    let tap = Tap::create(&name).unwrap();
    let mac = [0x02, 0x11, 0x22, 0x33, 0x44, 0x56];
    tap.set_mac(mac).unwrap();
    tap.set_up(true).unwrap();
    let out = RawSocket::open(&name, 0).unwrap();
    let sock = RawSocket::open(&name, ETYPE).unwrap();
    let peer = [0x02, 0, 0, 0, 0, 0x98];
    let mut buf = vec![0u8; 2048];
    for i in 0..20u8 {
        let f = frame(mac, peer, i, 200);
        tap.send(&f).unwrap();
        let m = sock
            .recv(&mut buf, Some(Duration::from_secs(2)))
            .unwrap()
            .expect("the frame written to the TAP arrives on the interface");
        assert_eq!(&buf[..m.len], &f[..]);
    }
    assert!(out.try_recv_any(&mut buf).unwrap().is_none());
    let st = out.take_statistics().unwrap();
    assert_eq!((st.packets, st.drops), (0, 0));

    // Sent on the protocol-0 socket: read from the TAP, byte for byte.
    let g = frame(peer, mac, 0x5B, 300);
    out.send(&g).unwrap();
    let got = read_ours(&tap, &mut buf);
    assert_eq!(got, g);
}
