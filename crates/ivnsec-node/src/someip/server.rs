//! The threads of `ivnsec someip serve`: each reads one socket the command bound and feeds the
//! core's state machines (the service core, the SD server, the event timer) with what arrived
//! and the time since the server started, and sends what they return.
//!
//! - the UDP endpoint verifies each message (TP reassembled) and answers requests;
//! - the TCP listener starts a thread per connection that deframes, verifies and answers;
//! - the SD thread offers cyclically, answers FindService and SubscribeEventgroup;
//! - the event thread sends each due event to the SD server's current subscribers.

use std::io::Write;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::{Result, anyhow};
use ivnsec_core::someip::sd::SdServer;
use ivnsec_core::someip::service::{EventSpec, EventTimer, event_body};
use ivnsec_core::wire::someip::StreamDeframer;
use ivnsec_net::someip as net;

use super::capture::Capture;
use super::{Config, Core, lock, protect_error, recv_sd, send_sd, send_udp, unix_ns};

/// The sockets a server runs on, bound by the caller (the UDP endpoint, the TCP listener when
/// node.tcp_port is set, the SD socket when sd.enabled). The UDP and SD sockets have a read
/// timeout; the listener is non-blocking.
#[derive(Debug)]
pub struct Sockets {
    pub udp: UdpSocket,
    pub tcp: Option<TcpListener>,
    pub sd: Option<UdpSocket>,
}

/// What the server's threads share.
#[derive(Clone)]
struct Shared {
    cfg: Arc<Config>,
    core: Arc<Mutex<Core>>,
    /// The SD server (with sd.enabled); its subscribers are the event targets.
    sd: Option<Arc<Mutex<SdServer>>>,
    udp: Arc<UdpSocket>,
    cap: Capture,
    stop: Arc<AtomicBool>,
    /// The origin of the state machines' time.
    epoch: Instant,
}

/// A server whose threads run.
pub struct Running {
    shared: Shared,
    handles: Vec<JoinHandle<Result<()>>>,
}

/// A server whose threads ended: its counters.
pub struct Stopped {
    shared: Shared,
}

/// Reads the configuration of a server: it must offer a service.
pub fn load(path: &std::path::Path) -> Result<Config> {
    let cfg = super::config::load(path)?;
    if cfg.services.is_empty() {
        return Err(crate::error::usage(format!(
            "{}: service: no [[service]] to offer",
            cfg.path.display()
        )));
    }
    Ok(cfg)
}

/// Starts the threads on `sockets`.
pub fn start(cfg: Arc<Config>, core: Core, sockets: Sockets, cap: Capture) -> Result<Running> {
    let epoch = Instant::now();
    let udp_port = sockets.udp.local_addr()?.port();
    let tcp_port = match &sockets.tcp {
        Some(l) => Some(l.local_addr()?.port()),
        None => None,
    };
    let sd = sockets.sd.as_ref().map(|_| {
        let c = super::sd_server_config(&cfg, udp_port, tcp_port);
        Arc::new(Mutex::new(SdServer::new(c, epoch.elapsed())))
    });
    let shared = Shared {
        cfg,
        core: Arc::new(Mutex::new(core)),
        sd,
        udp: Arc::new(sockets.udp),
        cap,
        stop: Arc::new(AtomicBool::new(false)),
        epoch,
    };
    let mut handles = Vec::new();
    let s = shared.clone();
    handles.push(thread::spawn(move || s.udp_loop()));
    if let Some(l) = sockets.tcp {
        let s = shared.clone();
        handles.push(thread::spawn(move || s.tcp_loop(l)));
    }
    if let (Some(sock), Some(sd)) = (sockets.sd, shared.sd.clone()) {
        let s = shared.clone();
        handles.push(thread::spawn(move || s.sd_loop(&sd, sock)));
    }
    let specs = super::event_specs(&shared.cfg);
    if !specs.is_empty() {
        let s = shared.clone();
        handles.push(thread::spawn(move || s.event_loop(&specs)));
    }
    Ok(Running { shared, handles })
}

impl Running {
    /// Runs until `duration` passed (`None`: until a thread ends), then stops every thread;
    /// the first error a thread met.
    pub fn wait(self, duration: Option<Duration>) -> Result<Stopped> {
        let end = duration.map(|d| Instant::now() + d);
        let nap = Duration::from_millis(if end.is_some() { 20 } else { 100 });
        while end.is_none_or(|e| Instant::now() < e)
            && !self.handles.iter().any(|h| h.is_finished())
        {
            thread::sleep(nap);
        }
        self.shared.stop.store(true, Ordering::Relaxed);
        let mut first_err = None;
        for h in self.handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(anyhow!("a server thread panicked")));
            if let Err(e) = r {
                first_err.get_or_insert(e);
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(Stopped {
                shared: self.shared,
            }),
        }
    }
}

impl Stopped {
    pub fn core(&self) -> MutexGuard<'_, Core> {
        lock(&self.shared.core)
    }

    /// The SD server, when SD was enabled.
    pub fn sd(&self) -> Option<MutexGuard<'_, SdServer>> {
        self.shared.sd.as_deref().map(lock)
    }
}

impl Shared {
    fn running(&self) -> bool {
        !self.stop.load(Ordering::Relaxed)
    }

    /// The UDP service endpoint: verify, answer.
    fn udp_loop(&self) -> Result<()> {
        let mut buf = vec![0u8; net::MAX_DATAGRAM];
        while self.running() {
            let Some((n, src)) = net::recv_from(&self.udp, &mut buf)? else {
                continue;
            };
            self.cap.received(&self.udp, src, &buf[..n]);
            let mut c = lock(&self.core);
            for m in c.handle_datagram(src, &buf[..n]) {
                if let Some(wire) = c.answer(&m).map_err(protect_error)? {
                    send_udp(&self.udp, src, &wire, &self.cfg.node, &self.cap)?;
                }
            }
        }
        Ok(())
    }

    /// The TCP service endpoint: a thread per connection.
    fn tcp_loop(&self, listener: TcpListener) -> Result<()> {
        let mut conns = Vec::new();
        while self.running() {
            match listener.accept() {
                Ok((stream, _)) => {
                    let s = self.clone();
                    conns.push(thread::spawn(move || s.tcp_connection(stream)));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e.into()),
            }
        }
        for c in conns {
            let _ = c.join();
        }
        Ok(())
    }

    fn tcp_connection(&self, mut stream: TcpStream) -> Result<()> {
        stream.set_read_timeout(Some(Duration::from_millis(100)))?;
        stream.set_nodelay(true)?;
        let mut flow = match (stream.peer_addr(), stream.local_addr()) {
            (Ok(client), Ok(server)) => Some(self.cap.tcp(client, server)),
            _ => None,
        };
        let mut d = StreamDeframer::new(self.cfg.node.max_message);
        while self.running() {
            let space = d.space();
            match net::read_some(&mut stream, space) {
                Ok(Some(0)) | Err(_) => return Ok(()),
                Ok(Some(n)) => {
                    if let Some(f) = flow.as_mut() {
                        f.data(true, &space[..n]);
                    }
                    d.commit(n)
                }
                Ok(None) => continue,
            }
            let mut answers = Vec::new();
            let mut c = lock(&self.core);
            for m in c.handle_stream(&mut d) {
                answers.extend(c.answer(&m).map_err(protect_error)?);
            }
            drop(c);
            for wire in answers {
                if stream.write_all(&wire).is_err() {
                    return Ok(());
                }
                if let Some(f) = flow.as_mut() {
                    f.data(false, &wire);
                }
            }
        }
        Ok(())
    }

    /// SD: the core's server, fed from the SD socket and the clock.
    fn sd_loop(&self, sd: &Mutex<SdServer>, sock: UdpSocket) -> Result<()> {
        let mut buf = vec![0u8; net::MAX_DATAGRAM];
        let own = super::sd_own(&self.cfg);
        while self.running() {
            lock(sd).handle_timeout(self.epoch.elapsed());
            self.flush_sd(sd, &sock);
            recv_sd(&sock, &mut buf, &self.cap, own, |src, data| {
                lock(sd).handle(self.epoch.elapsed(), src, data)
            })?;
            self.flush_sd(sd, &sock);
        }
        Ok(())
    }

    /// Sends what the SD server queued. A failed send is reported and the server goes on (a
    /// peer's address need not be reachable); a cyclic offer that left is counted.
    fn flush_sd(&self, sd: &Mutex<SdServer>, sock: &UdpSocket) {
        loop {
            // Not `while let`: its guard would live through the body, which locks again.
            let next = lock(sd).poll_transmit();
            let Some(t) = next else {
                break;
            };
            match send_sd(sock, &t, &self.cap) {
                Ok(()) if t.cyclic => lock(sd).offer_sent(),
                Ok(()) => {}
                Err(e) => eprintln!("ivnsec someip serve: {e:#}"),
            }
        }
    }

    /// The periodic events, to the SD server's current subscribers.
    fn event_loop(&self, specs: &[EventSpec]) -> Result<()> {
        let mut timer = EventTimer::new(specs, self.epoch.elapsed());
        while self.running() {
            let now = self.epoch.elapsed();
            let mut targets = |service, eventgroup| match &self.sd {
                Some(sd) => lock(sd).targets(now, service, eventgroup),
                None => Vec::new(),
            };
            while let Some(ev) = timer.poll_event(now, &mut targets) {
                let body = event_body(ev.seq, ev.payload_size, unix_ns());
                let wire = lock(&self.core)
                    .protect(&ev.header, &body)
                    .map_err(protect_error)?;
                for t in ev.targets {
                    if send_udp(&self.udp, t, &wire, &self.cfg.node, &self.cap).is_ok() {
                        lock(&self.core).event_sent();
                    }
                }
            }
            let wake = timer
                .poll_timeout()
                .unwrap_or(now + Duration::from_millis(10));
            let nap = wake.saturating_sub(self.epoch.elapsed());
            thread::sleep(nap.min(Duration::from_millis(20)));
        }
        Ok(())
    }
}
