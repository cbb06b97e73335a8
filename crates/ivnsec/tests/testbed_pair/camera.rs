//! `ivnsec camera` on a `pair` testbed of its own with a capture (root). The loopback runs and
//! bad input: `cli/camera.rs`.

use crate::common::camera::check_report;
use crate::common::{TempDir, ivnsec};

/// A `pair` testbed of its own: ecu1 is the camera ECU, ecu2 the consumer; the capture holds
/// the first frames as IPv4/TCP packets from ecu1 to ecu2 carrying SOME/IP notifications of the
/// camera services; the testbed is gone afterwards.
#[test]
fn testbed_run_with_capture() {
    require_root!();
    let d = TempDir::new("cam-tb");
    let pcap = d.path("cam.pcap");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "testbed",
            "--cameras",
            "3",
            "--level",
            "nosec,auth",
            "--seconds",
            "1",
            "--frame-bytes",
            "30000",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    let v = check_report(&o, &[3], &["nosec", "auth"], 60, true);
    assert!(v["site"].as_str().unwrap().starts_with("testbed"), "{v}");
    assert!(
        d.leftover_testbeds().is_empty(),
        "{:?}",
        d.leftover_testbeds()
    );

    // Two runs, 4 frames each, 30,016 / 30,041-byte messages in 1448-byte TCP segments.
    let mut r = ivnsec_net::pcap::PcapReader::open(&pcap).unwrap();
    let mut payload = Vec::new();
    let mut records = 0;
    while let Some(rec) = r.next_record() {
        let rec = rec.unwrap();
        records += 1;
        let f = rec.data;
        assert_eq!(&f[12..14], &[0x08, 0x00], "IPv4");
        assert_eq!(f[14 + 9], 6, "TCP");
        assert_eq!(&f[14 + 12..14 + 14], &[10, 77], "testbed addresses");
        payload.extend_from_slice(&f[14 + 20 + 20..]);
    }
    let per_run = [30_016usize, 30_041];
    let expect: usize = per_run.iter().map(|m| 4 * m.div_ceil(1448)).sum();
    assert_eq!(records, expect);
    assert_eq!(payload.len(), per_run.iter().map(|m| 4 * m).sum::<usize>());
    // The first message: a SOME/IP notification (type 0x02) of event 0x8001 of a camera service.
    let service = u16::from_be_bytes([payload[0], payload[1]]);
    assert!((0x4301..=0x4303).contains(&service), "{service:#x}");
    assert_eq!(&payload[2..4], &[0x80, 0x01]);
    assert_eq!(
        u32::from_be_bytes(payload[4..8].try_into().unwrap()),
        8 + 30_000
    );
    assert_eq!(payload[14], 0x02);

    // l2 on the same kind of testbed: the capture holds IVN-AE frames (EtherType 0x88B5)
    // from ecu1 to ecu2, none larger than the 1500-byte MTU allows.
    let pcap = d.path("l2.pcap");
    let o = ivnsec(
        &d,
        &[
            "camera",
            "--on",
            "testbed",
            "--cameras",
            "2",
            "--level",
            "conf",
            "--transport",
            "l2",
            "--seconds",
            "0.5",
            "--frame-bytes",
            "30000",
            "--json",
            "--pcap",
            pcap.to_str().unwrap(),
        ],
    );
    check_report(&o, &[2], &["conf"], 30, false);
    assert!(d.leftover_testbeds().is_empty());
    let mut r = ivnsec_net::pcap::PcapReader::open(&pcap).unwrap();
    let mut n = 0;
    while let Some(rec) = r.next_record() {
        let f = rec.unwrap().data;
        assert_eq!(&f[12..14], &[0x88, 0xB5]);
        assert!(f.len() <= 1514, "{}", f.len());
        n += 1;
    }
    // 4 frames of 30,016 bytes, each in fragments of less than 1,500 bytes.
    assert!(n >= 4 * 30_016 / 1500, "{n} units");
}
