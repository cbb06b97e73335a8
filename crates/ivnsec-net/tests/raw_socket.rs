//! AF_PACKET sockets in-process: a veth pair named with a random prefix in this namespace, one
//! socket on each end. The guard deletes the pair even when a test fails. Needs root; skipped
//! with a printed reason otherwise.

mod common;

use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use std::os::fd::AsFd;

use ivnsec_core::wire::ivnae::ETHERTYPE as ETH_P_IVNAE;
use ivnsec_net::sys::{ETH_HLEN, PacketStatistics, PacketType, RawSocket, RecvMeta};
use ivnsec_net::testbed::random_prefix;
use ivnsec_net::topology::check_ifname;

/// A veth pair `<prefix>a` / `<prefix>b` (e.g. `ivn-3fa9c1a`, 11 bytes), deleted on drop.
struct Veth {
    a: String,
    b: String,
}

impl Veth {
    fn new() -> Veth {
        let p = random_prefix().unwrap();
        let v = Veth {
            a: format!("{p}a"),
            b: format!("{p}b"),
        };
        check_ifname(&v.a).unwrap();
        let ip = |args: &[&str]| {
            let o = Command::new("ip").args(args).output().unwrap();
            assert!(
                o.status.success(),
                "ip {args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        };
        ip(&[
            "link", "add", &v.a, "mtu", "1500", "type", "veth", "peer", "name", &v.b, "mtu", "1500",
        ]);
        // From here the guard owns the pair (dropped on a panic below too).
        for dev in [&v.a, &v.b] {
            // No IPv6 link-local address: no DAD or router solicitation frames on the pair.
            let _ = Command::new("ip")
                .args(["link", "set", dev, "addrgenmode", "none"])
                .status();
            ip(&["link", "set", dev, "up"]);
        }
        v
    }

    /// A pair with carrier on both ends, and the MACs of its two ends.
    fn up() -> (Veth, [u8; 6], [u8; 6]) {
        let v = Veth::new();
        wait_carrier(&v.a);
        wait_carrier(&v.b);
        let (ma, mb) = (v.mac(&v.a), v.mac(&v.b));
        (v, ma, mb)
    }

    fn mac(&self, dev: &str) -> [u8; 6] {
        let s = std::fs::read_to_string(format!("/sys/class/net/{dev}/address")).unwrap();
        ivnsec_net::topology::parse_mac(s.trim()).unwrap()
    }
}

impl Drop for Veth {
    fn drop(&mut self) {
        // Deleting one end deletes both.
        let _ = Command::new("ip").args(["link", "del", &self.a]).output();
    }
}

fn frame(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload_len: usize, tag: u8) -> Vec<u8> {
    let mut f = Vec::with_capacity(ETH_HLEN + payload_len);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend((0..payload_len).map(|i| (i as u8).wrapping_add(tag)));
    f
}

/// Waits until the veth carrier is up (a frame sent before that is dropped).
fn wait_carrier(dev: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if std::fs::read_to_string(format!("/sys/class/net/{dev}/carrier"))
            .is_ok_and(|s| s.trim() == "1")
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("{dev}: no carrier");
}

#[test]
fn send_receive_timestamps_and_filters() {
    require_root!();
    let (v, ma, mb) = Veth::up();
    let a = RawSocket::open(&v.a, ETH_P_IVNAE).unwrap();
    let b = RawSocket::open(&v.b, ETH_P_IVNAE).unwrap();
    b.enable_timestamps().unwrap();
    assert_eq!(a.mac_address().unwrap(), ma);
    assert_eq!(b.ethertype(), ETH_P_IVNAE);

    // Blocking receive with a timeout: a frame of another EtherType is not delivered, ours is.
    let other = frame(mb, ma, 0x88B6, 46, 1);
    let ours = frame(mb, ma, ETH_P_IVNAE, 1440, 2);
    let before = SystemTime::now();
    a.send(&other).unwrap();
    a.send(&ours).unwrap();
    let mut buf = [0u8; 2048];
    let m = b
        .recv(&mut buf, Some(Duration::from_secs(2)))
        .unwrap()
        .expect("frame");
    assert_eq!(&buf[..m.len], &ours[..]);
    assert_eq!(m.packet_type, PacketType::Host);
    assert!(!m.truncated());
    let ts = m.timestamp.expect("SO_TIMESTAMPNS timestamp");
    assert!(
        ts >= before - Duration::from_millis(1) && ts <= SystemTime::now(),
        "{ts:?}"
    );

    // The sender does not see its own frame; nothing else is queued.
    assert_eq!(a.try_recv(&mut buf).unwrap(), None);
    assert_eq!(b.try_recv(&mut buf).unwrap(), None);

    // Busy-poll receive, in the other direction, without timestamps.
    let back = frame(ma, mb, ETH_P_IVNAE, 64, 3);
    b.send(&back).unwrap();
    let m = a
        .recv_busy_poll(&mut buf, Duration::from_secs(2))
        .unwrap()
        .expect("frame");
    assert_eq!(&buf[..m.len], &back[..]);
    assert_eq!(m.timestamp, None);

    // A broadcast frame is marked as such.
    let bc = frame([0xff; 6], ma, ETH_P_IVNAE, 46, 4);
    a.send(&bc).unwrap();
    let m = b
        .recv(&mut buf, Some(Duration::from_secs(2)))
        .unwrap()
        .expect("frame");
    assert_eq!(m.packet_type, PacketType::Broadcast);

    // Too small a buffer: the frame is cut and the wire length told.
    a.send(&ours).unwrap();
    let mut small = [0u8; 100];
    let m = b
        .recv(&mut small, Some(Duration::from_secs(2)))
        .unwrap()
        .expect("frame");
    assert_eq!((m.len, m.wire_len), (100, ours.len()));
    assert!(m.truncated());
    assert_eq!(&small[..], &ours[..100]);
}

#[test]
fn timeouts_return_none() {
    require_root!();
    let v = Veth::new();
    let s = RawSocket::open(&v.b, ETH_P_IVNAE).unwrap();
    let mut buf = [0u8; 64];
    for (busy, t) in [(false, 30u64), (true, 30)] {
        let start = Instant::now();
        let r = if busy {
            s.recv_busy_poll(&mut buf, Duration::from_millis(t))
        } else {
            s.recv(&mut buf, Some(Duration::from_millis(t)))
        };
        assert_eq!(r.unwrap(), None);
        // Correctness, not speed: it waited at least the timeout and then returned.
        assert!(start.elapsed() >= Duration::from_millis(t));
    }
    assert_eq!(s.recv(&mut buf, Some(Duration::ZERO)).unwrap(), None);
}

#[test]
fn many_frames_in_order() {
    require_root!();
    let (v, ma, mb) = Veth::up();
    let a = RawSocket::open(&v.a, ETH_P_IVNAE).unwrap();
    let b = RawSocket::open(&v.b, ETH_P_IVNAE).unwrap();
    b.set_recv_buffer(1 << 20).unwrap();
    let mut buf = [0u8; 1600];
    for i in 0..200u32 {
        let mut f = frame(mb, ma, ETH_P_IVNAE, 60, 0);
        f[ETH_HLEN..ETH_HLEN + 4].copy_from_slice(&i.to_be_bytes());
        a.send(&f).unwrap();
        let m = b
            .recv(&mut buf, Some(Duration::from_secs(2)))
            .unwrap()
            .expect("frame");
        assert_eq!(&buf[ETH_HLEN..ETH_HLEN + 4], &i.to_be_bytes(), "frame {i}");
        assert_eq!(m.len, f.len());
    }
}

/// The kernel filter drops frames for another host before they are queued (and counted); a
/// batch receive returns frames with their destination kind and cut length; a full queue's
/// drops show in `PACKET_STATISTICS` (reset on read) and in `SO_MEMINFO` (never reset).
#[test]
fn other_host_filter_batches_and_queue_drops() {
    require_root!();
    let (v, ma, mb) = Veth::up();
    let a = RawSocket::open(&v.a, ETH_P_IVNAE).unwrap();
    let filtered = RawSocket::open(&v.b, ETH_P_IVNAE).unwrap();
    filtered.drop_other_host().unwrap();
    let all = RawSocket::open(&v.b, ETH_P_IVNAE).unwrap();
    let elsewhere = [0x02, 0x49, 0x56, 0x7f, 0x7f, 0x7f];
    a.send(&frame(elsewhere, ma, ETH_P_IVNAE, 60, 1)).unwrap();
    a.send(&frame(mb, ma, ETH_P_IVNAE, 300, 2)).unwrap();

    let stride = 128;
    let mut buf = vec![0u8; 4 * stride];
    let mut metas = [RecvMeta {
        len: 0,
        wire_len: 0,
        packet_type: PacketType::Other(0),
        timestamp: None,
    }; 4];
    let got = |s: &RawSocket, buf: &mut [u8], metas: &mut [RecvMeta], want: usize| {
        let mut n = 0;
        let deadline = Instant::now() + Duration::from_secs(2);
        while n < want && Instant::now() < deadline {
            n += s
                .recv_batch(&mut buf[n * stride..], stride, 4, &mut metas[n..])
                .unwrap();
        }
        n
    };
    assert_eq!(got(&all, &mut buf, &mut metas, 2), 2);
    assert_eq!(metas[0].packet_type, PacketType::OtherHost);
    assert_eq!((metas[0].len, metas[0].wire_len), (74, 74));
    assert_eq!(&buf[4 + ETH_HLEN..4 + ETH_HLEN + 3], &[1, 2, 3]);
    assert_eq!(metas[1].packet_type, PacketType::Host);
    assert!(metas[1].truncated(), "{:?}", metas[1]);
    assert_eq!((metas[1].len, metas[1].wire_len), (stride - 4, 314));
    assert_eq!(got(&filtered, &mut buf, &mut metas, 1), 1);
    assert_eq!(metas[0].packet_type, PacketType::Host);
    assert_eq!(metas[0].wire_len, 314);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        filtered
            .recv_batch(&mut buf, stride, 4, &mut metas)
            .unwrap(),
        0
    );
    let st = filtered.take_statistics().unwrap();
    assert_eq!(
        (st.packets, st.drops),
        (1, 0),
        "the filtered frame is not counted"
    );
    assert_eq!(
        filtered.take_statistics().unwrap(),
        PacketStatistics::default()
    );

    // A queue of a few kilobytes overflows: every frame is either queued or counted as dropped.
    let small = RawSocket::open(&v.b, ETH_P_IVNAE).unwrap();
    small.set_recv_buffer(1).unwrap();
    let sent = 300u64;
    for i in 0..sent {
        a.send(&frame(mb, ma, ETH_P_IVNAE, 1000, i as u8)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    let mut queued = 0u64;
    let mut big = vec![0u8; 4 * 2048];
    loop {
        let n = small.recv_batch(&mut big, 2048, 0, &mut metas).unwrap();
        if n == 0 {
            break;
        }
        queued += n as u64;
    }
    let st = small.take_statistics().unwrap();
    assert!(st.drops > 0, "{st:?}");
    assert_eq!(st.packets, sent, "{st:?}");
    assert_eq!(queued + st.drops, sent, "{st:?}");
    let total = ivnsec_net::sys::socket_drops(small.as_fd()).unwrap();
    assert_eq!(total, st.drops);
    assert_eq!(small.take_statistics().unwrap().drops, 0, "reset on read");
    assert_eq!(ivnsec_net::sys::socket_drops(small.as_fd()).unwrap(), total);
}

/// A receive ring delivers what a batch receive would: the frames of the socket's EtherType
/// only, in order, with their destination kind, a frame longer than the ring's slots cut
/// (its wire length kept), `poll()` readiness while a frame waits and not after it was taken,
/// the other-host filter, drops of a full ring counted, and the slots reused after the ring
/// wrapped around.
#[test]
fn receive_ring_takes_frames_as_a_batch_receive_does() {
    require_root!();
    let (v, ma, mb) = Veth::up();
    let a = RawSocket::open(&v.a, ETH_P_IVNAE).unwrap();
    let (b, mut ring) = RawSocket::open_with_rx_ring(&v.b, ETH_P_IVNAE, 1518, 0).unwrap();
    b.drop_other_host().unwrap();
    assert!(ring.slots() >= 64, "{} slots", ring.slots());
    let stride = 1536;
    let mut buf = vec![0u8; 64 * stride];
    let empty = RecvMeta {
        len: 0,
        wire_len: 0,
        packet_type: PacketType::Other(0),
        timestamp: None,
    };
    let mut metas = [empty; 64];
    let take = |ring: &mut ivnsec_net::sys::RxRing,
                buf: &mut [u8],
                metas: &mut [RecvMeta],
                want: usize| {
        let mut n = 0;
        let deadline = Instant::now() + Duration::from_secs(2);
        while n < want && Instant::now() < deadline {
            if !ivnsec_net::sys::wait_readable(b.as_fd(), Some(Duration::from_millis(100))).unwrap()
            {
                continue;
            }
            n += ring.recv_batch(&mut buf[n * stride..], stride, 2, &mut metas[n..want]);
        }
        n
    };

    // Nothing yet: not readable, nothing taken.
    assert!(!ivnsec_net::sys::wait_readable(b.as_fd(), Some(Duration::from_millis(20))).unwrap());
    assert_eq!(ring.recv_batch(&mut buf, stride, 2, &mut metas), 0);
    assert!(!ring.ready());

    let elsewhere = [0x02, 0x49, 0x56, 0x7f, 0x7f, 0x7f];
    a.send(&frame(mb, ma, 0x88B6, 100, 9)).unwrap(); // another EtherType
    a.send(&frame(elsewhere, ma, ETH_P_IVNAE, 60, 8)).unwrap(); // another host
    let sent: Vec<Vec<u8>> = [46usize, 1500, 300, 1]
        .iter()
        .enumerate()
        .map(|(i, &n)| frame(mb, ma, ETH_P_IVNAE, n, i as u8))
        .collect();
    for f in &sent {
        a.send(f).unwrap();
    }
    // Frames in the ring: it says so before anything is taken, and not once all are.
    assert!(ivnsec_net::sys::wait_readable(b.as_fd(), Some(Duration::from_secs(2))).unwrap());
    assert!(ring.ready());
    assert_eq!(take(&mut ring, &mut buf, &mut metas, 4), 4);
    assert!(!ring.ready());
    for (i, f) in sent.iter().enumerate() {
        let m = metas[i];
        assert_eq!(m.packet_type, PacketType::Host);
        // A frame under the minimum comes padded by nobody on a veth: its own length.
        assert_eq!((m.len, m.wire_len), (f.len(), f.len()), "frame {i}");
        assert!(!m.truncated());
        assert_eq!(
            &buf[i * stride + 2..i * stride + 2 + m.len],
            &f[..],
            "frame {i}"
        );
    }
    assert!(!ivnsec_net::sys::wait_readable(b.as_fd(), Some(Duration::from_millis(20))).unwrap());

    // A frame longer than the room given: cut, its wire length kept.
    a.send(&frame(mb, ma, ETH_P_IVNAE, 700, 3)).unwrap();
    let short = 256;
    let mut small = vec![0u8; 4 * short];
    let mut n = 0;
    let deadline = Instant::now() + Duration::from_secs(2);
    while n == 0 && Instant::now() < deadline {
        n = ring.recv_batch(&mut small, short, 0, &mut metas[..1]);
    }
    assert_eq!(n, 1);
    assert!(metas[0].truncated());
    assert_eq!((metas[0].len, metas[0].wire_len), (short, ETH_HLEN + 700));

    // A full ring drops (counted) and keeps what it holds; after it is emptied, and after the
    // ring wrapped around, frames arrive in order again.
    let _ = b.take_statistics().unwrap();
    let slots = ring.slots();
    let extra = 50;
    for i in 0..slots + extra {
        let mut f = frame(mb, ma, ETH_P_IVNAE, 60, 0);
        f[ETH_HLEN..ETH_HLEN + 4].copy_from_slice(&(i as u32).to_be_bytes());
        a.send(&f).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    let st = b.take_statistics().unwrap();
    assert_eq!(
        (st.packets, st.drops),
        ((slots + extra) as u64, extra as u64)
    );
    let mut next = 0u32;
    loop {
        let waiting = ring.ready();
        let n = ring.recv_batch(&mut buf, stride, 0, &mut metas);
        assert_eq!(waiting, n > 0, "ready() before a batch of {n}");
        if n == 0 {
            break;
        }
        for i in 0..n {
            let at = i * stride + ETH_HLEN;
            assert_eq!(&buf[at..at + 4], &next.to_be_bytes());
            next += 1;
        }
    }
    assert_eq!(next as usize, slots);
    for round in 0..3u32 {
        for i in 0..40u32 {
            let mut f = frame(mb, ma, ETH_P_IVNAE, 60, 0);
            f[ETH_HLEN..ETH_HLEN + 4].copy_from_slice(&(round * 1000 + i).to_be_bytes());
            a.send(&f).unwrap();
        }
        assert_eq!(take(&mut ring, &mut buf, &mut metas, 40), 40);
        for i in 0..40 {
            let at = i * stride + 2 + ETH_HLEN;
            assert_eq!(&buf[at..at + 4], &(round * 1000 + i as u32).to_be_bytes());
        }
    }
}
