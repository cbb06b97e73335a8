//! The handshake stage: accepted connections whose TLS handshake is under way, polled on
//! non-blocking sockets with limits on how many are pending (in all and per source address),
//! the oldest evicted first; an authenticated connection is handed to a thread of its own.

use super::*;

/// How long a pending connection may stay silent before eviction takes it for an idle one.
const SILENT_GRACE: Duration = Duration::from_millis(200);

/// One connection whose TLS handshake is under way, on a non-blocking socket.
pub(super) struct Pending {
    sock: TcpStream,
    conn: ServerConnection,
    peer: SocketAddr,
    source: std::net::IpAddr,
    since: Instant,
    /// The client sent bytes: evicted after the silent ones.
    received: bool,
    /// The client sent a whole ClientHello (the server answered it): evicted last.
    answered: bool,
    /// Refused after its handshake, the answer sent: read until the client closes (or
    /// [`Limits::handshake_timeout`]), then dropped without a word; evicted first.
    closing: bool,
}

/// What a turn of the handshake stage did with one connection.
pub(super) enum Step {
    Wait,
    /// A closing connection is done.
    Closed,
    Authenticated,
    Refused(&'static str, String),
}

/// The source a connection counts against: its IPv4 address, or the /64 of its IPv6 address.
pub(super) fn source_of(ip: std::net::IpAddr) -> std::net::IpAddr {
    match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.into(),
            None => {
                let mut o = v6.octets();
                o[8..].fill(0);
                std::net::Ipv6Addr::from(o).into()
            }
        },
        v4 => v4,
    }
}

/// The pre-handshake stage: every connection not yet authenticated, in order of arrival, each
/// driven without blocking under one `poll`.
#[derive(Default)]
pub(super) struct Handshakes {
    pending: BTreeMap<u64, Pending>,
    per_source: std::collections::HashMap<std::net::IpAddr, usize>,
    next: u64,
    last_accept_error: Option<Instant>,
}

impl Handshakes {
    /// Waits (100 ms at most) for the listener or a pending connection, accepts, drives the
    /// handshakes that can move, hands authenticated connections to threads of their own and
    /// closes the ones past their time.
    pub(super) fn turn(&mut self, sh: &Arc<Shared>, listener: &TcpListener) {
        use std::os::fd::AsFd;
        let now = Instant::now();
        let timeout = self
            .pending
            .values()
            .next()
            .map(|p| (p.since + sh.limits.handshake_timeout).saturating_duration_since(now))
            .unwrap_or(Duration::MAX)
            .min(Duration::from_millis(100));
        let (listener_ready, ready) = {
            let mut entries = Vec::with_capacity(self.pending.len() + 1);
            entries.push(ivnsec_net::sys::PollEntry {
                fd: listener.as_fd(),
                read: true,
                write: false,
                ready: false,
            });
            for p in self.pending.values() {
                entries.push(ivnsec_net::sys::PollEntry {
                    fd: p.sock.as_fd(),
                    read: true,
                    write: !p.closing && p.conn.wants_write(),
                    ready: false,
                });
            }
            if let Err(e) = ivnsec_net::sys::poll_many(&mut entries, Some(timeout)) {
                log("poll_error", json!({"error": e.to_string()}));
                std::thread::sleep(Duration::from_millis(50));
                return;
            }
            let ready: Vec<u64> = entries[1..]
                .iter()
                .zip(self.pending.keys())
                .filter(|(e, _)| e.ready)
                .map(|(_, k)| *k)
                .collect();
            (entries[0].ready, ready)
        };
        for id in ready {
            self.step(sh, id);
        }
        if listener_ready {
            self.accept(sh, listener);
        }
        // Past their time, oldest first.
        let now = Instant::now();
        while let Some((&id, p)) = self.pending.first_key_value() {
            if now.duration_since(p.since) < sh.limits.handshake_timeout {
                break;
            }
            let p = self.remove(id).expect("present");
            if p.closing {
                continue; // refused already
            }
            sh.refuse(
                p.peer,
                "handshake_timeout",
                &format!(
                    "no TLS handshake within {} s",
                    sh.limits.handshake_timeout.as_secs_f64()
                ),
                None,
            );
        }
    }

    fn insert(&mut self, p: Pending) -> u64 {
        let id = self.next;
        self.next += 1;
        *self.per_source.entry(p.source).or_default() += 1;
        self.pending.insert(id, p);
        id
    }

    fn remove(&mut self, id: u64) -> Option<Pending> {
        let p = self.pending.remove(&id)?;
        if let Some(n) = self.per_source.get_mut(&p.source) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&p.source);
            }
        }
        Some(p)
    }

    /// Drives one pending connection and acts on the outcome; `true` if it is still pending.
    fn step(&mut self, sh: &Arc<Shared>, id: u64) -> bool {
        let Some(p) = self.pending.get_mut(&id) else {
            return false;
        };
        match drive(p) {
            Step::Wait => true,
            Step::Closed => {
                self.remove(id);
                false
            }
            Step::Authenticated => {
                let p = self.remove(id).expect("present");
                if let Some(p) = authenticated(sh, p) {
                    self.insert(p);
                }
                false
            }
            Step::Refused(reason, detail) => {
                let p = self.remove(id).expect("present");
                sh.refuse(p.peer, reason, &detail, None);
                false
            }
        }
    }

    /// Frees one pre-handshake slot (of `source` only, if given) for a newer connection. The
    /// victim is the oldest connection that has sent nothing for [`SILENT_GRACE`] (each
    /// candidate is read once before it is judged silent), else the oldest that has not sent a
    /// whole ClientHello (read once too before it is judged), else the oldest: idle and slow clients go before an ECU in the middle
    /// of its handshake, and before one that connected a moment ago.
    fn make_room(&mut self, sh: &Arc<Shared>, source: Option<std::net::IpAddr>, why: &str) {
        let mine: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, p)| source.is_none_or(|s| p.source == s))
            .map(|(id, _)| *id)
            .collect();
        // A connection already refused goes first, without a word.
        if let Some(id) = mine
            .iter()
            .copied()
            .find(|id| self.pending.get(id).is_some_and(|p| p.closing))
        {
            self.remove(id);
            return;
        }
        let mut victim = None;
        for &id in &mine {
            // A connection just accepted has had no time to speak: silence counts only after
            // a grace period, or the newest client (an ECU about to send its ClientHello)
            // would be the first victim of a flood from its own address.
            let silent = self
                .pending
                .get(&id)
                .is_some_and(|p| !p.received && p.since.elapsed() >= SILENT_GRACE);
            if !silent {
                continue;
            }
            if !self.step(sh, id) {
                return; // done or refused: a slot is free
            }
            if self.pending.get(&id).is_some_and(|p| !p.received) {
                victim = Some(id);
                break;
            }
        }
        if victim.is_none() {
            for &id in &mine {
                if self.pending.get(&id).is_none_or(|p| p.answered) {
                    continue;
                }
                // Its ClientHello may be waiting in the socket: an ECU that connected during a
                // burst of reconnections from its own address, each of which evicts one, is
                // soon the oldest that has not been answered. Read it before judging.
                if !self.step(sh, id) {
                    return; // done or refused: a slot is free
                }
                if self.pending.get(&id).is_some_and(|p| !p.answered) {
                    victim = Some(id);
                    break;
                }
            }
        }
        let victim = victim.or_else(|| {
            mine.iter()
                .copied()
                .find(|id| self.pending.contains_key(id))
        });
        let Some(p) = victim.and_then(|id| self.remove(id)) else {
            return;
        };
        let reason = if source.is_some() {
            "address_limit"
        } else {
            "evicted"
        };
        sh.refuse(p.peer, reason, why, None);
    }

    /// Accepts what is waiting (a bounded number per turn, so that handshakes move too).
    fn accept(&mut self, sh: &Arc<Shared>, listener: &TcpListener) {
        for _ in 0..256 {
            let (sock, peer) = match listener.accept() {
                Ok(x) => x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors: a pending connection makes room for the new one.
                    let out_of_fds = matches!(e.raw_os_error(), Some(23 | 24)); // ENFILE, EMFILE
                    if out_of_fds && !self.pending.is_empty() {
                        self.make_room(sh, None, "no descriptor left");
                        continue;
                    }
                    if self
                        .last_accept_error
                        .is_none_or(|t| t.elapsed() >= Duration::from_secs(1))
                    {
                        self.last_accept_error = Some(Instant::now());
                        log("accept_error", json!({"error": e.to_string()}));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    return;
                }
            };
            let source = source_of(peer.ip());
            if self.per_source.get(&source).copied().unwrap_or(0) >= sh.limits.max_per_address {
                let why = format!(
                    "{} pending connections from this source (--max-per-address)",
                    sh.limits.max_per_address
                );
                self.make_room(sh, Some(source), &why);
            }
            if self.pending.len() >= sh.limits.max_pending {
                let why = format!(
                    "{} pending connections (--max-pending)",
                    sh.limits.max_pending
                );
                self.make_room(sh, None, &why);
            }
            let tls = sh.tls.read().unwrap_or_else(|e| e.into_inner()).clone();
            let conn = match ServerConnection::new(tls) {
                Ok(c) => c,
                Err(e) => {
                    sh.refuse(peer, "tls_error", &e.to_string(), None);
                    continue;
                }
            };
            if sock.set_nonblocking(true).is_err() {
                continue;
            }
            let _ = sock.set_nodelay(true);
            let id = self.insert(Pending {
                sock,
                conn,
                peer,
                source,
                since: Instant::now(),
                received: false,
                answered: false,
                closing: false,
            });
            // A client sends its ClientHello at once: read it now if it is there, so that the
            // connection counts as live before the next eviction looks at it.
            self.step(sh, id);
        }
    }
}

/// Moves one handshake on as far as the socket allows, without blocking.
pub(super) fn drive(p: &mut Pending) -> Step {
    use std::io::ErrorKind::{Interrupted, WouldBlock};
    if p.closing {
        let mut scratch = [0u8; 4096];
        loop {
            match std::io::Read::read(&mut p.sock, &mut scratch) {
                Ok(0) => return Step::Closed,
                Ok(_) => {}
                Err(e) if e.kind() == WouldBlock => return Step::Wait,
                Err(e) if e.kind() == Interrupted => {}
                Err(_) => return Step::Closed,
            }
        }
    }
    let mut closed = false;
    while p.conn.is_handshaking() {
        match p.conn.read_tls(&mut p.sock) {
            Ok(0) => {
                closed = true;
                break;
            }
            Ok(_) => {
                p.received = true;
                if let Err(e) = p.conn.process_new_packets() {
                    // The alert rustls queued, if the socket takes it.
                    let _ = p.conn.write_tls(&mut p.sock);
                    return Step::Refused(classify_tls(&e), e.to_string());
                }
            }
            Err(e) if e.kind() == WouldBlock => break,
            Err(e) if e.kind() == Interrupted => {}
            Err(e) => return Step::Refused("tls_error", e.to_string()),
        }
    }
    while p.conn.wants_write() {
        match p.conn.write_tls(&mut p.sock) {
            Ok(_) => p.answered = true,
            Err(e) if e.kind() == WouldBlock => break,
            Err(e) if e.kind() == Interrupted => {}
            Err(e) => return Step::Refused("tls_error", e.to_string()),
        }
    }
    if !p.conn.is_handshaking() {
        Step::Authenticated
    } else if closed {
        Step::Refused(
            "tls_error",
            "closed before the handshake completed".to_string(),
        )
    } else {
        Step::Wait
    }
}

/// A connection that completed mutual TLS: its identity checked, then a thread of its own in
/// an authenticated slot, or refused: then it is returned, closing, for the pending stage to
/// drain until the client closes too.
pub(super) fn authenticated(sh: &Arc<Shared>, mut p: Pending) -> Option<Pending> {
    let peer = p.peer;
    // A refusal after the handshake tells the client why, inside TLS, then closes.
    let refuse = |p: &mut Pending, reason: &'static str, detail: &str, ecu: Option<&str>| {
        let _ = p.conn.writer().write_all(error_line(reason).as_bytes());
        p.conn.send_close_notify();
        while p.conn.wants_write() {
            if p.conn.write_tls(&mut p.sock).is_err() {
                break;
            }
        }
        // No more from us; what the client still sends is read and dropped (a close with
        // unread input would reset the connection before the client read why).
        let _ = p.sock.shutdown(std::net::Shutdown::Write);
        p.closing = true;
        p.since = Instant::now();
        sh.refuse(peer, reason, detail, ecu);
    };
    let Some(cert) = p.conn.peer_certificates().and_then(|c| c.first()) else {
        refuse(&mut p, "no_certificate", "", None);
        return Some(p);
    };
    let info = match crate::pki::cert_info(cert) {
        Ok(i) => i,
        Err(e) => {
            refuse(&mut p, "bad_certificate", &e, None);
            return Some(p);
        }
    };
    let ecu = match info.dns_names.as_slice() {
        [one] => one.clone(),
        [] => {
            refuse(
                &mut p,
                "bad_certificate",
                "no dNSName in the certificate",
                None,
            );
            return Some(p);
        }
        several => {
            // The CA issues one name per certificate: one with several is forged or foreign,
            // and must not choose which ECU it is.
            let detail = format!(
                "{} dNSNames in the certificate ({}); an ECU's has one",
                several.len(),
                several.join(", ")
            );
            refuse(&mut p, "ambiguous_identity", &detail, None);
            return Some(p);
        }
    };
    if check_ecu_name(&ecu).is_err() {
        refuse(
            &mut p,
            "bad_certificate",
            "its dNSName is no ECU name",
            None,
        );
        return Some(p);
    }
    if sh.conns.load(Ordering::Relaxed) >= sh.limits.max_authenticated {
        let detail = format!(
            "{} authenticated connections (--max-authenticated)",
            sh.limits.max_authenticated
        );
        refuse(&mut p, "too_many_connections", &detail, Some(&ecu));
        return Some(p);
    }
    sh.conns.fetch_add(1, Ordering::Relaxed);
    let sh2 = sh.clone();
    let serial = info.serial;
    let spawned = std::thread::Builder::new()
        .name("keyserver-conn".into())
        .spawn(move || {
            serve(&sh2, p.conn, p.sock, peer, &ecu, serial);
            sh2.conns.fetch_sub(1, Ordering::Relaxed);
        });
    if let Err(e) = spawned {
        sh.conns.fetch_sub(1, Ordering::Relaxed);
        log("thread_error", json!({"error": e.to_string()}));
    }
    None
}
