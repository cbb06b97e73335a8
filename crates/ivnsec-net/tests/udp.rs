//! The UDP transport over loopback (no root needed): the no-root fallback path.

use std::time::{Duration, Instant};

use ivnsec_net::udp::UdpTransport;

#[test]
fn loopback_round_trip_in_both_receive_modes() {
    let a = UdpTransport::bind_loopback().unwrap();
    let b = UdpTransport::bind_loopback().unwrap();
    let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
    assert!(aa.ip().is_loopback() && ba.ip().is_loopback());
    a.connect(ba).unwrap();
    let mut buf = [0u8; 2048];
    for round in 0..50u8 {
        let msg = vec![round; 1 + round as usize * 20];
        a.send(&msg).unwrap();
        let got = if round % 2 == 0 {
            b.recv(&mut buf, Some(Duration::from_secs(2))).unwrap()
        } else {
            b.recv_busy_poll(&mut buf, Duration::from_secs(2)).unwrap()
        };
        let (n, from) = got.expect("datagram");
        assert_eq!((&buf[..n], from), (&msg[..], aa));
        b.send_to(&buf[..n], from).unwrap();
        let (n, _) = a
            .recv(&mut buf, Some(Duration::from_secs(2)))
            .unwrap()
            .expect("reply");
        assert_eq!(&buf[..n], &msg[..]);
    }
}

#[test]
fn timeouts_return_none() {
    let s = UdpTransport::bind_loopback().unwrap();
    let mut buf = [0u8; 16];
    let t = Duration::from_millis(30);
    let start = Instant::now();
    assert_eq!(s.recv(&mut buf, Some(t)).unwrap(), None);
    assert!(start.elapsed() >= t);
    let start = Instant::now();
    assert_eq!(s.recv_busy_poll(&mut buf, t).unwrap(), None);
    assert!(start.elapsed() >= t);
    assert_eq!(s.recv(&mut buf, Some(Duration::ZERO)).unwrap(), None);
    assert_eq!(s.try_recv(&mut buf).unwrap(), None);
}
