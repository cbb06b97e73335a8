//! What recording a frame with `--pcap` costs a sender, per record: `PcapWriter` flushing each
//! record (the default: one `write` system call, so a killed sender leaves a readable capture),
//! buffered (one `write` per 64 KiB), and — for comparison only, not done — an `fsync` per
//! record; beside the `sendto` of the same frame over UDP on loopback, which every unit costs
//! anyway.
//!
//!     cargo run --release -p ivnsec-net --example pcap_write_cost [FRAMES] [DIR]
//!
//! FRAMES records per case (default 200000; the fsync case writes a tenth of them), written to a
//! file in DIR (default the temporary directory), removed afterwards. The numbers go to
//! docs/pcap.md.

use std::net::UdpSocket;
use std::time::{Instant, SystemTime};

use ivnsec_net::pcap::PcapWriter;

fn per_record(n: u64, f: impl FnOnce() -> std::io::Result<()>) -> f64 {
    let t = Instant::now();
    f().expect("case");
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().map_or(200_000, |s| s.parse().expect("FRAMES"));
    let dir = args.next().map_or_else(std::env::temp_dir, Into::into);
    let path = dir.join(format!("pcap-write-cost-{}.pcap", std::process::id()));
    let sink = UdpSocket::bind("127.0.0.1:0")?;
    let tx = UdpSocket::bind("127.0.0.1:0")?;
    tx.connect(sink.local_addr()?)?;
    let now = SystemTime::now();
    println!(
        "frame bytes | sendto ns | pcap buffered ns | pcap flushed per record ns | + fsync ns"
    );
    for len in [100usize, 1514] {
        let frame = vec![0xa5u8; len];
        // The receiver's queue fills and the kernel drops: sendto's cost is what counts.
        let send = per_record(n, || {
            for _ in 0..n {
                let _ = tx.send(&frame);
            }
            Ok(())
        });
        let write = |flush_each: bool, sync: bool, n: u64| {
            per_record(n, || {
                let mut w = PcapWriter::create(&path)?;
                w.set_flush_each_record(flush_each);
                for _ in 0..n {
                    w.write_frame(now, &frame)?;
                    if sync {
                        w.get_ref().get_ref().sync_data()?;
                    }
                }
                w.flush()
            })
        };
        let buffered = write(false, false, n);
        let flushed = write(true, false, n);
        let synced = write(true, true, (n / 10).max(1));
        println!("{len} | {send:.0} | {buffered:.0} | {flushed:.0} | {synced:.0}");
    }
    std::fs::remove_file(&path)?;
    Ok(())
}
