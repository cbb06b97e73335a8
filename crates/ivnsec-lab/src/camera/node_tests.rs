use super::*;

fn spec(transport: Transport, level: &str, frame_bytes: usize) -> CameraSpec {
    CameraSpec {
        role: CameraRole::Cameras,
        transport,
        level: level.into(),
        suite: "aes128-gcm".into(),
        provider: ProviderChoice::Auto,
        fps: 60,
        frame_bytes,
        frames: 3,
        phase: Phase::Spread,
        streams: vec![Stream {
            service: 0x4301,
            key: if level == "nosec" {
                DirectionKeys::default()
            } else {
                DirectionKeys::new(
                    &hex::decode("000102030405060708090a0b0c0d0e0f").unwrap(),
                    &[],
                    [0; 12],
                )
            },
        }],
        local_ip: Ipv4Addr::LOCALHOST,
        consumer_ip: Ipv4Addr::LOCALHOST,
        ports: vec![],
        capture: None,
        l2: None,
        stamp_clock: Default::default(),
    }
}

fn frame(sa: &mut ServiceSa, spec: &CameraSpec, seq: u64) -> Vec<u8> {
    let mut image = vec![7u8; spec.frame_bytes];
    FrameStamp {
        seq,
        sent_ns: monotonic_ns(),
        due_ns: 0,
    }
    .write(&mut image)
    .unwrap();
    let hdr = frame_header(0x4301, 1);
    let mut out = vec![0u8; spec.message_bytes().unwrap()];
    let n = sa.protect(&hdr, &image, &mut out).unwrap();
    assert_eq!(n, out.len());
    out
}

/// What the camera sends, the consumer accepts once; a replay, a wrong-length frame and a
/// tampered one are counted and not recorded.
#[test]
fn consumer_records_each_frame_once() {
    for level in ["nosec", "auth", "conf"] {
        let spec = spec(Transport::Tcp, level, 3000);
        let mut tx = spec.sa(0).unwrap();
        let mut rx = spec.sa(0).unwrap();
        let mut f = Frames::new(&spec);
        let m0 = frame(&mut tx, &spec, 0);
        let mut m1 = frame(&mut tx, &spec, 1);
        f.message(&mut rx, &mut m0.clone());
        // Replay (nosec: the same frame number again).
        f.message(&mut rx, &mut m0.clone());
        if level != "nosec" {
            let last = m1.len() - 1;
            m1[last] ^= 1;
        }
        f.message(&mut rx, &mut m1);
        let log = f.finish(Some(&rx));
        assert_eq!(
            log.received,
            if level == "nosec" { 2 } else { 1 },
            "{level}"
        );
        let dropped: u64 = log.drops.values().sum();
        assert_eq!(
            dropped,
            if level == "nosec" { 1 } else { 2 },
            "{level}: {:?}",
            log.drops
        );
        assert_eq!(log.delay_ns.len() as u64, log.received);
    }
}

/// A frame cut into SOME/IP-TP segments and batched comes back whole through the shared
/// datagram splitter, and the capture of both transports holds the same message bytes.
#[test]
fn tp_segments_and_capture_round_trip() {
    let dir = std::env::temp_dir().join(format!("ivnsec-camera-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for transport in [Transport::UdpTp, Transport::Tcp] {
        let mut spec = spec(transport, "conf", 10_000);
        let mut tx = spec.sa(0).unwrap();
        let msg = frame(&mut tx, &spec, 0);
        let path = dir.join(format!("{}.pcap", transport.name()));
        let cs = CaptureSpec {
            path: path.clone(),
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
        };
        spec.capture = Some(cs.clone());
        let c = Captured {
            seq: 0,
            units: Vec::new(),
            at_ns: monotonic_ns(),
            src: "10.0.0.1:4000".parse().unwrap(),
            dst: "10.0.0.2:5000".parse().unwrap(),
            message: msg.clone(),
        };
        write_capture(&spec, &cs, &[c]).unwrap();
        let parts = capture_payloads(&path);
        match transport {
            Transport::Tcp => {
                assert_eq!(parts.len(), msg.len().div_ceil(CAPTURE_MSS));
                assert_eq!(parts.concat(), msg);
            }
            Transport::L2 => unreachable!("not in this loop"),
            Transport::UdpTp => {
                assert_eq!(
                    parts.len(),
                    (msg.len() - HEADER_LEN).div_ceil(MAX_SEGMENT_DATA)
                );
                let mut rx = spec.sa(0).unwrap();
                let mut f = Frames::new(&spec);
                let mut reasm = Reassembler::new(ReassemblyLimits {
                    max_message: msg.len(),
                    max_pending: 8,
                    max_total: 2 * msg.len(),
                });
                let mut drops = DropCounters::default();
                for p in &parts {
                    datagram_messages(&mut reasm, &mut drops, 0, p, |mut m| {
                        f.message(&mut rx, &mut m)
                    });
                }
                assert_eq!(f.finish(Some(&rx)).received, 1);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The capture's checksums verify (a correct checksum sums to 0 with the pseudo-header).
#[test]
fn capture_checksums_verify() {
    let cs = CaptureSpec {
        path: PathBuf::new(),
        src_mac: [0; 6],
        dst_mac: [0; 6],
    };
    let src: SocketAddrV4 = "10.0.0.1:4000".parse().unwrap();
    let dst: SocketAddrV4 = "10.0.0.2:5000".parse().unwrap();
    let mut f = Vec::new();
    for tcp in [false, true] {
        if tcp {
            tcp_frame(&cs, src, dst, 77, b"some payload", &mut f);
        } else {
            udp_frame(&cs, src, dst, b"some payload", &mut f);
        }
        let ip = &f[14..34];
        assert_eq!(internet_checksum(ip), 0);
        let proto = if tcp { protocol::TCP } else { protocol::UDP };
        assert_eq!(l4_checksum(&src, &dst, proto, &f[34..]), 0, "tcp {tcp}");
    }
}

/// The level picks the IVN-AE profile of the l2 channel, and the l2 message is a plain
/// SOME/IP notification whose Length covers the frame.
#[test]
fn l2_profiles_and_message() {
    use ivnsec_core::sa::someip::Level;
    assert_eq!(
        l2_profile(Level::NoSec, AeadAlg::Aes128Gcm).to_string(),
        "plain"
    );
    assert_eq!(
        l2_profile(Level::Auth, AeadAlg::ChaCha20Poly1305).to_string(),
        "chacha20-poly1305/auth"
    );
    assert_eq!(
        l2_profile(Level::Conf, AeadAlg::Aes256Ccm).to_string(),
        "aes256-ccm/conf"
    );
    for l in Level::ALL {
        for a in AeadAlg::ALL {
            let p = l2_profile(l, a);
            assert_eq!(p.to_string().parse::<Profile>().unwrap(), p);
        }
    }
    let image = [9u8; 100];
    let mut out = [0u8; 116];
    assert_eq!(l2_message(0x4302, 7, &image, &mut out), 116);
    let p = ivnsec_core::wire::someip::Packet::new_checked(&out[..]).unwrap();
    assert_eq!(
        (p.service_id(), p.method_id(), p.session_id()),
        (0x4302, FRAME_EVENT, 7)
    );
    assert_eq!(p.length(), 8 + 100);
    assert_eq!(p.payload(), &image[..]);
}
