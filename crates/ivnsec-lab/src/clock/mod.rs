//! The clock state of the hosts an experiment runs on, read from linuxptp.
//!
//! A one-way delay is a receive time minus a send time taken on two clocks; it means something
//! only when the two clocks agree. ivnsec does not synchronise clocks itself: `ptp4l` (IEEE 1588,
//! linuxptp) does, and its management client `pmc` tells how well. [`probe`] runs
//!
//! ```text
//! pmc -u -b 0 -s UDS 'GET TIME_STATUS_NP' 'GET CURRENT_DATA_SET' 'GET PORT_DATA_SET'
//! ```
//!
//! on one host through a [`HostRunner`] (this host, `ip netns exec NS`, `ssh HOST`, or any
//! closure that runs an argv somewhere and returns its output), parses the answers
//! ([`parse_pmc`]; pmc's output is treated as hostile input: bounded, never a panic) and
//! classifies them ([`classify`]) as [`PtpState::Synchronised`] (within a bound),
//! [`PtpState::Unsynchronised`], [`PtpState::NoPtp4l`], [`PtpState::PmcMissing`] or
//! [`PtpState::Unreachable`], always with the reason.
//!
//! Network namespaces of one host share that host's system clock (Linux has no per-namespace
//! `CLOCK_REALTIME`): a set of hosts that all live on this machine ([`ClockSet::shared_clock`])
//! measures one-way delays on one clock whatever PTP says.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ivnsec_net::sys::die_with_parent;
use serde::Serialize;

pub mod testbed_ptp;

/// The default bound on |offset from master| for [`PtpState::Synchronised`]: 10 µs. The one-way
/// delays ivnsec measures are tens of microseconds and more (seed 000's requirement is 2.5 ms);
/// an offset within 10 µs moves them by at most that. Software timestamping (`ptp4l -S`)
/// typically holds a few microseconds on a quiet link, hardware timestamping well under one.
pub const DEFAULT_MAX_OFFSET_NS: u64 = 10_000;

/// Where ptp4l listens for management messages unless configured otherwise (`uds_address`).
pub const DEFAULT_UDS: &str = "/var/run/ptp4l";

/// Most bytes read from a probe's stdout and stderr each; pmc answers three GETs in about 1.5 KiB.
pub const MAX_PROBE_OUTPUT: usize = 64 * 1024;

/// How long one probe may take (ssh connection included) before it is killed.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// The longest identity or port-state word kept from pmc's output.
const MAX_WORD: usize = 64;

/// What running an argv on a host returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOutput {
    /// The exit code (None when killed by a signal).
    pub code: Option<i32>,
    /// At most [`MAX_PROBE_OUTPUT`] bytes of stdout.
    pub stdout: Vec<u8>,
    /// At most [`MAX_PROBE_OUTPUT`] bytes of stderr.
    pub stderr: Vec<u8>,
}

/// A way to run an argv on one host and get its output. Implemented by [`Target`] (this host,
/// a network namespace, an ssh destination) and by [`FnRunner`] around any closure, so the
/// multi-host placement's `Host` can be plugged in without this module knowing it.
pub trait HostRunner {
    /// The host's name in tables and reports.
    fn name(&self) -> String;
    /// How it is reached (`local`, `netns`, `ssh`, …).
    fn via(&self) -> &'static str;
    /// Whether it runs on this machine, i.e. on this machine's system clock.
    fn on_this_host(&self) -> bool;
    /// Runs `argv` there. `Err` when it could not be run at all (the reason as a sentence).
    fn run(&self, argv: &[String]) -> Result<RunOutput, String>;
}

/// A [`HostRunner`] around a closure.
pub struct FnRunner<F> {
    pub name: String,
    pub via: &'static str,
    pub on_this_host: bool,
    pub run: F,
}

impl<F: Fn(&[String]) -> Result<RunOutput, String>> HostRunner for FnRunner<F> {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn via(&self) -> &'static str {
        self.via
    }
    fn on_this_host(&self) -> bool {
        self.on_this_host
    }
    fn run(&self, argv: &[String]) -> Result<RunOutput, String> {
        (self.run)(argv)
    }
}

/// The hosts `ivnsec clock check` can ask. The plan's `[[host]]` tables will add a variant (or
/// hand their `Host` in as a [`HostRunner`]); the probe needs nothing else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// This machine.
    Local,
    /// A network namespace of this machine (`ip netns exec NS …`).
    Netns(String),
    /// Another machine over OpenSSH (`[user@]host`), with options passed to ssh as they are.
    Ssh {
        destination: String,
        options: Vec<String>,
    },
}

impl HostRunner for Target {
    fn name(&self) -> String {
        match self {
            Target::Local => "local".into(),
            Target::Netns(ns) => ns.clone(),
            Target::Ssh { destination, .. } => destination.clone(),
        }
    }
    fn via(&self) -> &'static str {
        match self {
            Target::Local => "local",
            Target::Netns(_) => "netns",
            Target::Ssh { .. } => "ssh",
        }
    }
    fn on_this_host(&self) -> bool {
        !matches!(self, Target::Ssh { .. })
    }
    fn run(&self, argv: &[String]) -> Result<RunOutput, String> {
        let Some((program, args)) = argv.split_first() else {
            return Err("nothing to run".into());
        };
        let mut cmd = match self {
            Target::Local => {
                let mut c = Command::new(program);
                c.args(args);
                c
            }
            Target::Netns(ns) => {
                let mut c = ivnsec_net::testbed::netns_command(ns, program);
                c.args(args);
                c
            }
            Target::Ssh {
                destination,
                options,
            } => {
                // ssh hands the remote shell one string: quote every word for it.
                let remote: Vec<String> = argv.iter().map(|a| shell_quote(a)).collect();
                let mut c = Command::new("ssh");
                c.args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=10"])
                    .args(options)
                    .arg("--")
                    .arg(destination)
                    .arg(remote.join(" "));
                c
            }
        };
        let launcher = match self {
            Target::Local => program.as_str(),
            Target::Netns(_) => "ip",
            Target::Ssh { .. } => "ssh",
        };
        run_bounded(&mut cmd, PROBE_TIMEOUT).map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!("`{launcher}` is not installed on this machine")
            } else {
                format!("running `{launcher}`: {e}")
            }
        })
    }
}

/// Quotes one word for a POSIX shell.
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:@%+,".contains(&b))
    {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs `cmd` (dying with this process) with stdout and stderr read up to
/// [`MAX_PROBE_OUTPUT`] bytes each; kills it after `timeout`.
pub fn run_bounded(cmd: &mut Command, timeout: Duration) -> std::io::Result<RunOutput> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = die_with_parent(cmd).spawn()?;
    let out = child.stdout.take();
    let err = child.stderr.take();
    let read = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(r) = r {
                let mut r = r.take(MAX_PROBE_OUTPUT as u64);
                let _ = r.read_to_end(&mut buf);
                // Drain what is left so the child never blocks on a full pipe.
                let _ = std::io::copy(r.get_mut(), &mut std::io::sink());
            }
            buf
        })
    };
    let out = read(out.map(|o| Box::new(o) as Box<dyn Read + Send>));
    let err = read(err.map(|e| Box::new(e) as Box<dyn Read + Send>));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        if start.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    match status {
        Some(s) => Ok(RunOutput {
            code: s.code(),
            stdout,
            stderr,
        }),
        None => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within {} s", timeout.as_secs()),
        )),
    }
}

/// pmc's TIME_STATUS_NP answer (linuxptp's own management ID).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeStatus {
    /// Offset of this clock from its master, ns.
    pub master_offset_ns: i64,
    /// Whether a grand master other than this clock is present.
    pub gm_present: bool,
    /// The grand master's clock identity.
    pub gm_identity: String,
}

/// pmc's CURRENT_DATA_SET answer (IEEE 1588 currentDS).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurrentDataSet {
    pub steps_removed: u16,
    /// ns
    pub offset_from_master_ns: f64,
    /// ns
    pub mean_path_delay_ns: f64,
}

/// One PORT_DATA_SET answer (IEEE 1588 portDS), one per port.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortDataSet {
    pub port_identity: String,
    pub port_state: String,
}

/// Everything parsed from one pmc run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PmcAnswers {
    /// The answering clock's identity (from the response header, without the port number).
    pub clock_identity: Option<String>,
    pub time_status: Option<TimeStatus>,
    pub current: Option<CurrentDataSet>,
    pub ports: Vec<PortDataSet>,
    /// Responses seen (any management ID).
    pub responses: usize,
}

/// Why pmc's output could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn word(s: &str, what: &str) -> Result<String, ParseError> {
    if s.is_empty()
        || s.len() > MAX_WORD
        || !s
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-:".contains(&b))
    {
        return Err(ParseError(format!(
            "pmc printed an unexpected {what}: {:?}",
            s.chars().take(MAX_WORD).collect::<String>()
        )));
    }
    Ok(s.to_string())
}

fn number<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, ParseError> {
    s.parse().map_err(|_| {
        ParseError(format!(
            "pmc printed {what} {:?}, not a number",
            s.chars().take(MAX_WORD).collect::<String>()
        ))
    })
}

fn nanoseconds(s: &str, what: &str) -> Result<f64, ParseError> {
    let v: f64 = number(s, what)?;
    if !v.is_finite() {
        return Err(ParseError(format!("pmc printed {what} {s:?}, not finite")));
    }
    Ok(v)
}

/// Parses pmc's answers to GET TIME_STATUS_NP, CURRENT_DATA_SET and PORT_DATA_SET as linuxptp
/// prints them (a header line `ID-PORT seq N RESPONSE MANAGEMENT MGMT_ID` and indented
/// `name value` lines). Other management IDs and `sending:` echo lines are skipped. Never
/// panics; a malformed value is an error naming it. An answer without a field this module needs
/// leaves that part `None`.
pub fn parse_pmc(text: &str) -> Result<PmcAnswers, ParseError> {
    #[derive(PartialEq)]
    enum Section {
        None,
        Time,
        Current,
        Port,
        Other,
    }
    let mut a = PmcAnswers::default();
    let mut section = Section::None;
    let mut ts: (Option<i64>, Option<bool>, Option<String>) = (None, None, None);
    let mut cur: (Option<u16>, Option<f64>, Option<f64>) = (None, None, None);
    let mut port: (Option<String>, Option<String>) = (None, None);
    let flush = |section: &Section,
                 a: &mut PmcAnswers,
                 ts: &mut (Option<i64>, Option<bool>, Option<String>),
                 cur: &mut (Option<u16>, Option<f64>, Option<f64>),
                 port: &mut (Option<String>, Option<String>)| {
        match section {
            Section::Time => {
                if let (Some(o), Some(p), Some(g)) = (ts.0.take(), ts.1.take(), ts.2.take()) {
                    a.time_status = Some(TimeStatus {
                        master_offset_ns: o,
                        gm_present: p,
                        gm_identity: g,
                    });
                }
            }
            Section::Current => {
                if let (Some(s), Some(o), Some(d)) = (cur.0.take(), cur.1.take(), cur.2.take()) {
                    a.current = Some(CurrentDataSet {
                        steps_removed: s,
                        offset_from_master_ns: o,
                        mean_path_delay_ns: d,
                    });
                }
            }
            Section::Port => {
                if let (Some(i), Some(s)) = (port.0.take(), port.1.take()) {
                    if a.ports.len() < 256 {
                        a.ports.push(PortDataSet {
                            port_identity: i,
                            port_state: s,
                        });
                    }
                }
            }
            Section::None | Section::Other => {}
        }
        *ts = (None, None, None);
        *cur = (None, None, None);
        *port = (None, None);
    };
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with("sending:") {
            continue;
        }
        let f: Vec<&str> = t.split_whitespace().take(8).collect();
        // A response header: `3623e4.fffe.dc27d6-0 seq 1 RESPONSE MANAGEMENT CURRENT_DATA_SET`.
        if f.len() >= 6 && f[1] == "seq" && f[3] == "RESPONSE" && f[4] == "MANAGEMENT" {
            flush(&section, &mut a, &mut ts, &mut cur, &mut port);
            a.responses += 1;
            let id = f[0].rsplit_once('-').map_or(f[0], |(id, _)| id);
            let id = word(id, "clock identity")?;
            if a.clock_identity.is_none() {
                a.clock_identity = Some(id);
            }
            section = match f[5] {
                "TIME_STATUS_NP" => Section::Time,
                "CURRENT_DATA_SET" => Section::Current,
                "PORT_DATA_SET" => Section::Port,
                _ => Section::Other,
            };
            continue;
        }
        let (Some(&key), Some(&value)) = (f.first(), f.get(1)) else {
            continue;
        };
        match (&section, key) {
            (Section::Time, "master_offset") => ts.0 = Some(number(value, "master_offset")?),
            (Section::Time, "gmPresent") => {
                ts.1 = Some(match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(ParseError(format!("pmc printed gmPresent {value:?}"))),
                })
            }
            (Section::Time, "gmIdentity") => ts.2 = Some(word(value, "gmIdentity")?),
            (Section::Current, "stepsRemoved") => cur.0 = Some(number(value, "stepsRemoved")?),
            (Section::Current, "offsetFromMaster") => {
                cur.1 = Some(nanoseconds(value, "offsetFromMaster")?)
            }
            (Section::Current, "meanPathDelay") => {
                cur.2 = Some(nanoseconds(value, "meanPathDelay")?)
            }
            (Section::Port, "portIdentity") => port.0 = Some(word(value, "portIdentity")?),
            (Section::Port, "portState") => port.1 = Some(word(value, "portState")?),
            _ => {}
        }
    }
    flush(&section, &mut a, &mut ts, &mut cur, &mut port);
    Ok(a)
}

/// The PTP state of one host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum PtpState {
    /// A port is SLAVE with a grand master present and |offset| within the bound, or the host
    /// is the grand master itself.
    #[serde(rename = "synchronised")]
    Synchronised,
    /// ptp4l answers, but the host is not (yet) synchronised: the reason says why.
    #[serde(rename = "unsynchronised")]
    Unsynchronised,
    /// pmc ran but nothing answered on the management socket.
    #[serde(rename = "no ptp4l")]
    NoPtp4l,
    /// pmc (linuxptp) is not installed there.
    #[serde(rename = "pmc missing")]
    PmcMissing,
    /// The host could not be asked (ssh failed, namespace missing, timeout).
    #[serde(rename = "unreachable")]
    Unreachable,
}

impl PtpState {
    pub fn as_str(self) -> &'static str {
        match self {
            PtpState::Synchronised => "synchronised",
            PtpState::Unsynchronised => "unsynchronised",
            PtpState::NoPtp4l => "no ptp4l",
            PtpState::PmcMissing => "pmc missing",
            PtpState::Unreachable => "unreachable",
        }
    }
    /// Whether the host could not be asked at all (exit code 3 of `clock check`).
    pub fn cannot_ask(self) -> bool {
        matches!(self, PtpState::PmcMissing | PtpState::Unreachable)
    }
}

/// The clock of one host as `clock check` and reports show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HostClock {
    pub host: String,
    pub via: String,
    /// On this machine, i.e. on this machine's system clock.
    pub this_host: bool,
    pub state: PtpState,
    pub reason: String,
    pub clock_identity: Option<String>,
    /// The port state of the port that decides (SLAVE if any, else the first).
    pub port_state: Option<String>,
    /// Offset from master, ns (CURRENT_DATA_SET, else TIME_STATUS_NP).
    pub offset_ns: Option<f64>,
    pub mean_path_delay_ns: Option<f64>,
    pub steps_removed: Option<u16>,
    pub gm_present: Option<bool>,
    pub gm_identity: Option<String>,
}

impl HostClock {
    fn bare(runner: &dyn HostRunner, state: PtpState, reason: String) -> HostClock {
        HostClock {
            host: runner.name(),
            via: runner.via().to_string(),
            this_host: runner.on_this_host(),
            state,
            reason,
            clock_identity: None,
            port_state: None,
            offset_ns: None,
            mean_path_delay_ns: None,
            steps_removed: None,
            gm_present: None,
            gm_identity: None,
        }
    }
}

/// Exit code of the probe when pmc itself could not start (its own 255, which ssh uses too).
pub const PMC_FAILED: i32 = 70;

/// The argv of the probe: pmc through `sh` so that a missing pmc is exit code 127 on every
/// kind of host, pmc's own failure (255, e.g. a non-root user cannot bind its socket) is
/// [`PMC_FAILED`] and not mistaken for ssh's 255, and `/usr/sbin` is searched for users whose
/// PATH lacks it (ssh as non-root).
pub fn probe_argv(uds: &str) -> Vec<String> {
    [
        "sh",
        "-c",
        "PATH=\"$PATH:/usr/sbin:/sbin\"; command -v pmc >/dev/null 2>&1 || exit 127; \
         pmc \"$@\"; rc=$?; [ \"$rc\" = 255 ] && exit 70; exit \"$rc\"",
        "pmc",
        "-u",
        "-b",
        "0",
        "-s",
        uds,
        "GET TIME_STATUS_NP",
        "GET CURRENT_DATA_SET",
        "GET PORT_DATA_SET",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn first_line(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(b);
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// Asks one host's ptp4l (management socket `uds`) and classifies the answer.
pub fn probe(runner: &dyn HostRunner, uds: &str, max_offset_ns: u64) -> HostClock {
    let out = match runner.run(&probe_argv(uds)) {
        Ok(o) => o,
        Err(why) => {
            return HostClock::bare(runner, PtpState::Unreachable, why);
        }
    };
    let err = first_line(&out.stderr);
    let unreachable = |what: String| HostClock::bare(runner, PtpState::Unreachable, what);
    match (runner.via(), out.code) {
        (_, Some(127)) => {
            return HostClock::bare(
                runner,
                PtpState::PmcMissing,
                "pmc is not installed there: install linuxptp (Debian: apt-get install linuxptp)"
                    .into(),
            );
        }
        (_, Some(PMC_FAILED)) => {
            return unreachable(format!(
                "pmc could not ask ptp4l: {}; ptp4l's socket is root's: ask as root (e.g. --ssh \
                 root@HOST)",
                if err.is_empty() {
                    "no reason given"
                } else {
                    &err
                }
            ));
        }
        ("ssh", Some(255)) => {
            return unreachable(format!(
                "ssh could not reach the host: {}",
                if err.is_empty() {
                    "no reason given"
                } else {
                    &err
                }
            ));
        }
        ("netns", Some(c)) if c != 0 && err.starts_with("Cannot open network namespace") => {
            return unreachable(err);
        }
        (_, None) => return unreachable("pmc was killed by a signal".into()),
        (_, Some(0)) => {}
        (_, Some(c)) => {
            return unreachable(format!("pmc exited with code {c}: {err}"));
        }
    }
    let text = String::from_utf8_lossy(&out.stdout);
    match parse_pmc(&text) {
        Ok(a) => {
            let mut h = classify(&a, max_offset_ns);
            h.host = runner.name();
            h.via = runner.via().to_string();
            h.this_host = runner.on_this_host();
            if h.state == PtpState::NoPtp4l {
                h.reason = format!(
                    "no answer from ptp4l on its management socket {uds}: start ptp4l there \
                     (or pass the socket its uds_address names with --uds){}",
                    if err.is_empty() {
                        String::new()
                    } else {
                        format!(" (pmc: {err})")
                    }
                );
            }
            h
        }
        Err(e) => HostClock::bare(
            runner,
            PtpState::Unsynchronised,
            format!("pmc's answer could not be read: {e}"),
        ),
    }
}

/// Classifies parsed pmc answers (host fields left empty for the caller).
///
/// - no response at all: [`PtpState::NoPtp4l`];
/// - a port in SLAVE: synchronised when a grand master is present and |offset from master| ≤
///   `max_offset_ns`, else unsynchronised with the offset;
/// - every port MASTER (or GRAND_MASTER) and the grand master is this clock: synchronised (it is
///   the reference of its domain);
/// - anything else (LISTENING, UNCALIBRATED, FAULTY, PASSIVE, DISABLED, …): unsynchronised,
///   with the port state.
pub fn classify(a: &PmcAnswers, max_offset_ns: u64) -> HostClock {
    let mut h = HostClock {
        host: String::new(),
        via: String::new(),
        this_host: false,
        state: PtpState::Unsynchronised,
        reason: String::new(),
        clock_identity: a.clock_identity.clone(),
        port_state: None,
        offset_ns: a
            .current
            .as_ref()
            .map(|c| c.offset_from_master_ns)
            .or(a.time_status.as_ref().map(|t| t.master_offset_ns as f64)),
        mean_path_delay_ns: a.current.as_ref().map(|c| c.mean_path_delay_ns),
        steps_removed: a.current.as_ref().map(|c| c.steps_removed),
        gm_present: a.time_status.as_ref().map(|t| t.gm_present),
        gm_identity: a.time_status.as_ref().map(|t| t.gm_identity.clone()),
    };
    if a.responses == 0 {
        h.state = PtpState::NoPtp4l;
        h.reason = "no answer from ptp4l".into();
        return h;
    }
    let slave = a.ports.iter().find(|p| p.port_state == "SLAVE");
    let decisive = slave.or(a.ports.first());
    h.port_state = decisive.map(|p| p.port_state.clone());
    let bound = max_offset_ns as f64;
    if slave.is_some() {
        match (h.gm_present, h.offset_ns) {
            (Some(true), Some(o)) if o.abs() <= bound => {
                h.state = PtpState::Synchronised;
                h.reason = format!(
                    "port SLAVE of grand master {}, offset {o:.0} ns within ±{max_offset_ns} ns",
                    h.gm_identity.as_deref().unwrap_or("?")
                );
            }
            (Some(true), Some(o)) => {
                h.reason = format!(
                    "port SLAVE, but offset from master {o:.0} ns exceeds ±{max_offset_ns} ns"
                );
            }
            (Some(false), _) => {
                h.reason = "port SLAVE, but ptp4l reports no grand master present".into();
            }
            _ => h.reason = "port SLAVE, but pmc gave no offset from master".into(),
        }
        return h;
    }
    let is_master = |s: &str| s == "MASTER" || s == "GRAND_MASTER";
    let own_gm = matches!((&h.gm_identity, &h.clock_identity), (Some(g), Some(c)) if g == c);
    if !a.ports.is_empty() && a.ports.iter().all(|p| is_master(&p.port_state)) && own_gm {
        h.state = PtpState::Synchronised;
        h.reason = "grand master: this clock is the reference of its PTP domain".into();
        return h;
    }
    h.reason = match h.port_state.as_deref() {
        None => "ptp4l answered without a port state".into(),
        Some("UNCALIBRATED") => "port UNCALIBRATED: a master is selected but the servo has not \
                                 locked (a free-running ptp4l, which never steers its clock, stays here)"
            .into(),
        Some("LISTENING") => "port LISTENING: no master heard yet".into(),
        Some(s) if is_master(s) => "port MASTER, but the grand master is another clock and no \
                                    port follows it"
            .into(),
        Some(s) => format!("port {s}"),
    };
    h
}

/// The clock state of a set of hosts.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClockSet {
    /// The bound on |offset from master| used, ns.
    pub max_offset_ns: u64,
    /// Two or more hosts, every one on this machine, so all share its system clock: one-way
    /// delays between them are measured on one clock whatever PTP says. (A single host is
    /// judged by its PTP state: it is asked because it is to meet other clocks.)
    pub shared_clock: bool,
    pub hosts: Vec<HostClock>,
}

/// What one-way delays measured across a set of hosts are worth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum OwdTrust {
    /// One clock (namespaces of one machine).
    #[serde(rename = "shared clock")]
    SharedClock,
    /// Every host PTP-synchronised within the bound.
    #[serde(rename = "synchronised")]
    Synchronised,
    /// At least one host not synchronised (or not asked): one-way delays carry the clocks'
    /// offset and are flagged; use round trips.
    #[serde(rename = "unsynchronised")]
    Unsynchronised,
}

impl ClockSet {
    /// Probes every host.
    pub fn probe(
        runners: &[&dyn HostRunner],
        uds_of: impl Fn(&dyn HostRunner) -> String,
        max_offset_ns: u64,
    ) -> ClockSet {
        let hosts: Vec<HostClock> = runners
            .iter()
            .map(|r| probe(*r, &uds_of(*r), max_offset_ns))
            .collect();
        ClockSet {
            max_offset_ns,
            shared_clock: hosts.len() >= 2 && hosts.iter().all(|h| h.this_host),
            hosts,
        }
    }

    pub fn owd_trust(&self) -> OwdTrust {
        if self.shared_clock {
            OwdTrust::SharedClock
        } else if self.hosts.iter().all(|h| h.state == PtpState::Synchronised) {
            OwdTrust::Synchronised
        } else {
            OwdTrust::Unsynchronised
        }
    }

    /// `clock check`'s exit code: 3 when a host could not be asked, 1 when one is not
    /// synchronised (hosts that share this machine's clock are), else 0.
    pub fn exit_code(&self) -> u8 {
        if self.hosts.iter().any(|h| h.state.cannot_ask()) {
            3
        } else if self.owd_trust() == OwdTrust::Unsynchronised {
            1
        } else {
            0
        }
    }

    /// One sentence for reports and the end of the table.
    pub fn verdict(&self) -> String {
        match self.owd_trust() {
            OwdTrust::SharedClock => "shared clock: every host is on this machine and reads its \
                                      system clock, so one-way delays are measured on one clock"
                .into(),
            OwdTrust::Synchronised => format!(
                "synchronised: every host follows one PTP grand master within ±{} ns",
                self.max_offset_ns
            ),
            OwdTrust::Unsynchronised => {
                let bad: Vec<String> = self
                    .hosts
                    .iter()
                    .filter(|h| h.state != PtpState::Synchronised)
                    .map(|h| format!("{} ({})", h.host, h.state.as_str()))
                    .collect();
                format!(
                    "unsynchronised: {}; one-way delays across these hosts carry the clocks' \
                     offset, only round trips (RTT/2) are trustworthy",
                    bad.join(", ")
                )
            }
        }
    }
}

/// The management socket the testbed's ptp4l of namespace `ns` listens on, under the testbed
/// state directory (`testbed up --ptp`); ptp4l's sockets are file-system paths, shared by all
/// namespaces, so each testbed node gets its own.
pub fn testbed_uds(state_dir: &std::path::Path, ns: &str) -> std::path::PathBuf {
    state_dir.join("ptp").join(format!("{ns}.sock"))
}

/// The report environment's key for what one-way delays were measured on: `shared clock`,
/// `synchronised` or `unsynchronised` ([`OwdTrust`]). Reports flag directly measured one-way
/// delays when it says `unsynchronised`.
pub const OWD_CLOCK_KEY: &str = "owd_clock";
/// The report environment's key for each node's clock state (one line).
pub const CLOCK_STATE_KEY: &str = "clock_state";

fn host_line(h: &HostClock) -> String {
    let mut s = format!("{} {}", h.host, h.state.as_str());
    if let Some(p) = &h.port_state {
        s.push_str(&format!(", port {p}"));
    }
    if let Some(o) = h.offset_ns {
        if h.port_state.as_deref() != Some("MASTER") {
            s.push_str(&format!(", offset {o:.0} ns"));
        }
    }
    s
}

/// The clock entries of a report's environment for a set of hosts on several machines (the
/// multi-host placement calls this with the [`ClockSet`] it probed before the run).
pub fn record_environment(env: &mut serde_json::Map<String, serde_json::Value>, set: &ClockSet) {
    let lines: Vec<String> = set.hosts.iter().map(host_line).collect();
    env.insert(
        CLOCK_STATE_KEY.into(),
        serde_json::json!(format!("{}: {}", set.verdict(), lines.join("; "))),
    );
    env.insert(OWD_CLOCK_KEY.into(), serde_json::json!(set.owd_trust()));
}

/// The clock entries of a report's environment for nodes that all run on this machine
/// (`(node, namespace)`; no namespace: this host itself, e.g. loopback): one shared clock.
/// Where the testbed runs ptp4l (`testbed up --ptp`, its socket under `state_dir`), the PTP
/// state each node's ptp4l reports is added.
pub fn record_this_host(
    env: &mut serde_json::Map<String, serde_json::Value>,
    nodes: &[(&str, Option<&str>)],
    state_dir: &std::path::Path,
) {
    let names: Vec<&str> = nodes.iter().map(|(n, _)| *n).collect();
    let mut line = format!(
        "shared clock: {} on this machine's one system clock (namespaces of one host)",
        names.join(", ")
    );
    let ptp: Vec<String> = nodes
        .iter()
        .filter_map(|(name, ns)| {
            let ns = (*ns)?;
            let uds = testbed_uds(state_dir, ns);
            if !uds.exists() {
                return None;
            }
            let mut h = probe(
                &Target::Netns(ns.to_string()),
                &uds.to_string_lossy(),
                DEFAULT_MAX_OFFSET_NS,
            );
            h.host = name.to_string();
            Some(host_line(&h))
        })
        .collect();
    if !ptp.is_empty() {
        line.push_str(&format!("; PTP (ptp4l): {}", ptp.join("; ")));
    }
    env.insert(CLOCK_STATE_KEY.into(), serde_json::json!(line));
    env.insert(
        OWD_CLOCK_KEY.into(),
        serde_json::json!(OwdTrust::SharedClock),
    );
}

/// The note a report puts beside directly measured one-way delays when its environment says
/// they were measured on unsynchronised clocks; `None` otherwise.
pub fn owd_flag(env: &serde_json::Map<String, serde_json::Value>) -> Option<String> {
    if env.get(OWD_CLOCK_KEY)?.as_str()? != "unsynchronised" {
        return None;
    }
    Some(format!(
        "FLAGGED: the directly measured one-way delays were taken on clocks that were not \
         synchronised ({}), so each carries the clocks' offset and is not a delay. Seed 000's \
         estimate beside them is built from round trips timed on the initiator's clock alone \
         (RTT/2 less the responder's time) and needs no shared clock; the verdicts use it.",
        env.get(CLOCK_STATE_KEY)
            .and_then(|v| v.as_str())
            .unwrap_or("clock state not recorded")
    ))
}

/// Removes the ptp4l sockets and logs of testbed `prefix` (`<prefix>-*.sock`, `.log`) from
/// `state_dir/ptp`, and the directory when it is left empty; touches nothing else.
pub fn remove_testbed_files(state_dir: &std::path::Path, prefix: &str) {
    let dir = state_dir.join("ptp");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let start = format!("{prefix}-");
    for e in entries.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with(&start) && (name.ends_with(".sock") || name.ends_with(".log")) {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let _ = std::fs::remove_dir(&dir);
}

#[cfg(test)]
mod tests;
