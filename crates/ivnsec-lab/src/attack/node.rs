//! The attacker node role of `ivnsec attack` (`ivnsec node attack`): a device plugged into the
//! vehicle network, or a replaced sensor, that captures legitimate frames off the switch and
//! injects forged, replayed or altered ones ([`super::forger`]) through an AF_PACKET socket.

use std::io::Write;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use ivnsec_core::channel::fill_udp_checksum;
use ivnsec_net::sys::RawSocket;

use super::forger::{Forger, ReplayPicker, is_legit_forward, switch_refuses};
use super::{Attack, AttackSpec};
use crate::process::{Control, read_control, read_spec};

/// Frames sent back to back before the attacker pauses, outside the flood, so the receiver's
/// socket never overflows and every frame is judged.
const BURST: u64 = 32;
/// errno of a full interface queue (Linux).
const ENOBUFS: i32 = 105;
const BURST_PAUSE: Duration = Duration::from_micros(400);
/// How long a replay attack waits for legitimate frames to capture.
const CAPTURE_PATIENCE: Duration = Duration::from_secs(10);

/// `ETH_P_ALL`: a packet socket of this protocol sees every frame of its interface, the frames
/// its own host sends included (a socket of one EtherType sees only what arrives).
const ETH_P_ALL: u16 = 0x0003;

/// Runs the attacker whose spec arrives on stdin ([`crate::process`]): per class, prints
/// `INJECTED <n>`, `SECONDS <s>`, `REFUSED <n>` (injected frames the switch refuses by rule: a
/// group or zero source address, [`switch_refuses`]), `CAPTURED <n>` (legitimate frames a
/// replay class captured; 0 for the others) and `END`, then runs the next class
/// (`NEXT` and its spec, [`crate::process::Control`]) on the same socket, until stdin ends.
pub fn run() -> Result<()> {
    let mut spec: AttackSpec = read_spec()?;
    let (control, stop) = watch_end(read_control::<AttackSpec>());
    let sock = RawSocket::open(&spec.ifname, spec.profile.ethertype())
        .with_context(|| format!("opening a raw socket on {}", spec.ifname))?;
    sock.set_recv_buffer(8 << 20)?;
    // Across hosts the replays capture on a socket of every EtherType in promiscuous mode: what
    // reaches the attacker's interface, and, on the sender's host, what that host sends.
    let capture = if spec.capture_all {
        let c = RawSocket::open(&spec.ifname, ETH_P_ALL)
            .with_context(|| format!("opening a capture socket on {}", spec.ifname))?;
        c.set_recv_buffer(8 << 20)?;
        c.keep_outgoing()
            .with_context(|| format!("capturing the egress of {}", spec.ifname))?;
        c.set_promiscuous()
            .with_context(|| format!("setting {} promiscuous", spec.ifname))?;
        Some(c)
    } else {
        None
    };
    let mut rx = vec![0u8; 65536];
    loop {
        let (injected, seconds, refused, captured) = attack(
            &spec,
            &sock,
            capture.as_ref().unwrap_or(&sock),
            &mut rx,
            &stop,
        )?;
        if stop.load(Ordering::Relaxed) {
            // The orchestrator is gone (its end of stdin closed: it ended, or across hosts the
            // SSH connection was lost): stop now, whatever the class had left to inject.
            return Ok(());
        }
        let out = std::io::stdout();
        let mut out = out.lock();
        writeln!(out, "INJECTED {injected}")?;
        writeln!(out, "SECONDS {seconds:.6}")?;
        writeln!(out, "REFUSED {refused}")?;
        writeln!(out, "CAPTURED {captured}")?;
        writeln!(out, "END")?;
        out.flush()?;
        let next = loop {
            match control.recv() {
                Ok(Control::Next(next)) => break *next,
                Ok(Control::Expect(_)) => {}
                Ok(Control::End) | Err(_) => return Ok(()),
            }
        };
        if (&next.ifname, next.profile.ethertype()) != (&spec.ifname, spec.profile.ethertype()) {
            bail!("the next class must keep the interface and the EtherType");
        }
        spec = next;
        // What the sockets captured so far was protected under the keys of earlier classes:
        // never replay it.
        while sock.try_recv(&mut rx)?.is_some() {}
        if let Some(c) = &capture {
            while c.try_recv_any(&mut rx)?.is_some() {}
        }
    }
}

/// Forwards the control messages and raises the flag when the end of stdin (or an `END`, which
/// the orchestrator sends an attacker only by closing its stdin) comes: the attacker stops in
/// the middle of a class then.
fn watch_end(
    control: Receiver<Control<AttackSpec>>,
) -> (Receiver<Control<AttackSpec>>, Arc<AtomicBool>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for msg in control {
            if matches!(msg, Control::End) {
                flag.store(true, Ordering::Relaxed);
            }
            if tx.send(msg).is_err() {
                return;
            }
        }
        flag.store(true, Ordering::Relaxed);
    });
    (rx, stop)
}

/// Runs one class, injecting on `sock` and capturing the frames to replay on `capture`, until
/// done or `stop`; returns (frames injected, seconds it took, frames the switch refuses, frames
/// captured).
fn attack(
    spec: &AttackSpec,
    sock: &RawSocket,
    capture: &RawSocket,
    rx: &mut [u8],
    stop: &AtomicBool,
) -> Result<(u64, f64, u64, u64)> {
    let provider = spec.provider;
    let family = spec.profile;
    let mut forger = Forger::new(
        spec.profile,
        provider,
        spec.sender,
        &spec.forward,
        spec.attacker_mac,
        spec.attacker_ip,
        spec.payload,
    )?;
    let mut pcap = match &spec.pcap {
        Some(p) => Some(
            ivnsec_net::pcap::PcapWriter::create(p)
                .with_context(|| format!("creating {}", p.display()))?,
        ),
        None => None,
    };
    let mut frame = Vec::with_capacity(2048);
    let mut injected = 0u64;
    let mut refused = 0u64;
    let started = Instant::now();
    let mut captured = 0;
    let mut record = |frame: &[u8], injected: u64| -> Result<()> {
        refused += u64::from(switch_refuses(frame));
        if let Some(w) = pcap.as_mut()
            && injected < spec.pcap_limit
        {
            w.write_frame_now(frame)?;
        }
        Ok(())
    };
    if spec.attack.is_replay() {
        let mut picker = ReplayPicker::new(spec.attack.replay_window());
        let legit = |f: &[u8]| is_legit_forward(family, &spec.sender, f);
        let mut last_capture = Instant::now();
        while injected < spec.count && !stop.load(Ordering::Relaxed) {
            // Take every captured frame first, so the choice sees the newest.
            while let Some(m) = capture.try_recv_any(rx)? {
                if !m.truncated() && legit(&rx[..m.len]) {
                    if family.is_udp() {
                        // As the wire has it: veth leaves the checksum to the "hardware".
                        fill_udp_checksum(&mut rx[..m.len]);
                    }
                    if picker.push(&rx[..m.len]) {
                        last_capture = Instant::now();
                    }
                }
            }
            match picker.pick(injected) {
                Some(f) => {
                    sock.send(f).context("injecting a replay")?;
                    record(f, injected)?;
                    injected += 1;
                    if injected % BURST == 0 {
                        std::thread::sleep(BURST_PAUSE);
                    }
                }
                None => {
                    if last_capture.elapsed() > CAPTURE_PATIENCE && spec.capture_all {
                        // Across hosts: the orchestrator reports the class as not run.
                        break;
                    }
                    if last_capture.elapsed() > CAPTURE_PATIENCE {
                        bail!(
                            "no legitimate frames to replay: captured {} in {:?} (the switch \
                             must flood frames to the attacker's port)",
                            picker.captured(),
                            CAPTURE_PATIENCE
                        );
                    }
                    ivnsec_net::sys::wait_readable(
                        capture.as_fd(),
                        Some(Duration::from_millis(5)),
                    )?;
                }
            }
        }
        captured = picker.captured();
    } else if spec.attack == Attack::Flood {
        let until = Duration::from_nanos(spec.flood_ns);
        while started.elapsed() < until && !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                forger.forge(Attack::Flood, injected, &mut frame)?;
                match sock.send(&frame) {
                    Ok(_) => {
                        record(&frame, injected)?;
                        injected += 1;
                    }
                    // The interface queue is full: the flood is as fast as it gets.
                    Err(e) if e.raw_os_error() == Some(ENOBUFS) => {}
                    Err(e) => return Err(e).context("injecting"),
                }
            }
        }
    } else {
        while injected < spec.count && !stop.load(Ordering::Relaxed) {
            forger.forge(spec.attack, injected, &mut frame)?;
            sock.send(&frame).context("injecting")?;
            record(&frame, injected)?;
            injected += 1;
            if injected % BURST == 0 {
                std::thread::sleep(BURST_PAUSE);
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    if let Some(mut w) = pcap {
        w.flush()?;
    }
    Ok((injected, seconds, refused, captured))
}
