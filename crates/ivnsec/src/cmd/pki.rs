//! `ivnsec pki`: the vehicle's certificates (a root CA, one device certificate per ECU, the
//! CRL) and `ivnsec keyserver`, which hands each ECU the CAKs of its network segments after
//! mutual TLS. The work is in `ivnsec_node::pki`; docs/keys.md.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_node::pki::{self, Algo, keyserver};

use crate::output::Json;

#[derive(clap::Subcommand, Debug)]
#[command(after_help = "\
The directory layout, for other tools to use as it is:
  D/ca.pem, D/ca.key      the issuing CA (the root; with --intermediate, an intermediate)
  D/root.pem, D/root.key  with --intermediate: the root that signed ca.pem
  D/ecu/NAME.pem          the ECU's certificate: SAN dNSName NAME, TLS client and server auth
  D/ecu/NAME.key          its private key (PKCS#8 PEM, mode 0600, never printed)
  D/crl.pem               the CRL of the issuing CA (always present; an empty list at first)
  D/revoked/NAME-SERIAL.pem  a revoked certificate once NAME was enrolled again

OpenSSL takes them as they are:
  openssl verify -CAfile D/ca.pem D/ecu/ecu1.pem
  openssl verify -CAfile D/root.pem -untrusted D/ca.pem D/ecu/ecu1.pem   (--intermediate)
  openssl crl -in D/crl.pem -noout -text

The key hierarchy (CA → device certificate → CAK → SAK), enrolment and revocation: docs/keys.md.

Examples:
  ivnsec pki init --dir pki --vehicle WVWZZZ1JZXW000001
  ivnsec pki issue --dir pki --ecu keyserver
  ivnsec pki issue --dir pki --ecu brake1 --algo ed25519 --days 730
  ivnsec pki revoke --dir pki --ecu brake1
  ivnsec pki list --dir pki --json")]
pub enum Args {
    /// Create the vehicle's root CA (and optionally an intermediate) and an empty CRL.
    Init(InitArgs),
    /// Issue a device certificate and private key for an ECU.
    Issue(IssueArgs),
    /// Revoke an ECU's certificate: add its serial to D/crl.pem and sign the CRL again.
    Revoke(RevokeArgs),
    /// Show every certificate with its serial, key, expiry and status.
    List(ListArgs),
    /// Write a FreeRADIUS 3 EAP-TLS module (eap-tls.conf) for this PKI, issuing the server
    /// certificate when missing.
    Freeradius(FreeradiusArgs),
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Writes OUT/eap-tls.conf, a FreeRADIUS 3 `eap` module for EAP-TLS (TLS 1.2 and 1.3) that trusts \
the vehicle CA and checks its CRL, and OUT/ca.pem (the CA chain followed by D/crl.pem, as \
FreeRADIUS's ca_file with check_crl needs it). The server certificate is D/ecu/NAME.pem with its \
key D/ecu/NAME.key, issued now if missing. OUT/ca.pem is a copy of the CRL: after \
`ivnsec pki revoke`, run this again and restart FreeRADIUS.

Example:
  ivnsec pki freeradius --dir pki --out /etc/freeradius/3.0/ivnsec
  ln -sf /etc/freeradius/3.0/ivnsec/eap-tls.conf /etc/freeradius/3.0/mods-enabled/eap")]
pub struct FreeradiusArgs {
    /// The PKI directory (from `ivnsec pki init`).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Where to write eap-tls.conf and ca.pem (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The server certificate's name (a DNS label).
    #[arg(long, default_value = "radius", value_name = "NAME")]
    pub server_name: String,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Example:
  ivnsec pki init --dir pki --vehicle WVWZZZ1JZXW000001 --intermediate")]
pub struct InitArgs {
    /// The PKI directory (created; must not hold a CA yet).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The vehicle identification number (ISO 3779: 17 characters of 0-9, A-Z without I, O, Q);
    /// it is the organization of every certificate.
    #[arg(long, value_name = "VIN")]
    pub vehicle: String,
    /// Keep the root offline: write it as root.pem/root.key and let an intermediate
    /// (ca.pem/ca.key) issue the ECU certificates and the CRL.
    #[arg(long)]
    pub intermediate: bool,
    /// Key algorithm of the CA: ecdsa-p256, ed25519, rsa-2048, rsa-3072 or rsa-4096.
    #[arg(long, default_value = "ecdsa-p256", value_name = "ALGO")]
    pub algo: String,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
The ECU name is a DNS label (lowercase letters, digits, '-'); it is the certificate's subject \
alternative name, by which the key server knows the ECU. An ECU whose certificate is revoked can \
be enrolled again (the old certificate moves to D/revoked/); one with a valid certificate cannot.

Examples:
  ivnsec pki issue --dir pki --ecu brake1
  ivnsec pki issue --dir pki --ecu camera-front --algo rsa-3072 --days 3650")]
pub struct IssueArgs {
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// The ECU's name (a DNS label, e.g. brake1).
    #[arg(long, value_name = "NAME")]
    pub ecu: String,
    /// Key algorithm: ecdsa-p256, ed25519, rsa-2048, rsa-3072 or rsa-4096.
    #[arg(long, default_value = "ecdsa-p256", value_name = "ALGO")]
    pub algo: String,
    /// Validity in days from now (1 to 10950).
    #[arg(long, default_value_t = pki::DEFAULT_DAYS, value_name = "N")]
    pub days: u32,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
A running `ivnsec keyserver --pki DIR` sees the new CRL within a second: it closes the ECU's \
connections, refuses its handshakes, and gives every segment the ECU was in a new CAK.

Example:
  ivnsec pki revoke --dir pki --ecu brake1")]
pub struct RevokeArgs {
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    #[arg(long, value_name = "NAME")]
    pub ecu: String,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
Status is valid, expired, not_yet_valid or revoked (its serial is in D/crl.pem).

Example:
  ivnsec pki list --dir pki --json")]
pub struct ListArgs {
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Print one JSON document: {dir, vehicle, ca, crl_number, revoked_serials, ecus: [{ecu,
    /// serial, algo, not_before, not_after, status, revoked_at, cert}]}.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: Args) -> Result<ExitCode> {
    match a {
        Args::Init(a) => {
            let algo = Algo::parse(&a.algo)?;
            let r = pki::init(&a.dir, &a.vehicle, a.intermediate, algo)?;
            println!(
                "vehicle {} CA in {}: {}{} and an empty CRL {}",
                r.vehicle,
                r.dir.display(),
                r.ca.display(),
                match &r.root {
                    Some(p) => format!(" (intermediate; root {})", p.display()),
                    None => String::new(),
                },
                r.crl.display()
            );
        }
        Args::Issue(a) => {
            let algo = Algo::parse(&a.algo)?;
            let r = pki::issue(&a.dir, &a.ecu, algo, a.days)?;
            println!(
                "ECU {}: certificate {} (serial {}, {}, valid until {}), private key {} (mode 0600)",
                r.ecu,
                r.cert.display(),
                r.serial,
                r.algo,
                r.not_after,
                r.key.display()
            );
        }
        Args::Freeradius(a) => {
            let r = pki::freeradius::write(&a.dir, &a.out, &a.server_name)?;
            println!(
                "FreeRADIUS EAP-TLS module {} (server certificate {} {}, key {}, CA and CRL {})",
                r.eap_conf.display(),
                r.cert.display(),
                if r.issued { "issued now" } else { "kept" },
                r.key.display(),
                r.ca_file.display()
            );
        }
        Args::Revoke(a) => {
            let r = pki::revoke(&a.dir, &a.ecu)?;
            if r.already {
                println!(
                    "ECU {}: certificate serial {} was already revoked (CRL number {})",
                    r.ecu, r.serial, r.crl_number
                );
            } else {
                println!(
                    "ECU {}: certificate serial {} revoked; CRL number {} written to {}",
                    r.ecu,
                    r.serial,
                    r.crl_number,
                    pki::Layout::new(&a.dir).crl_pem().display()
                );
            }
        }
        Args::List(a) => {
            let mut json = Json::claim(a.json)?;
            let l = pki::list(&a.dir)?;
            if json.claimed() {
                json.print(&l)?;
            } else {
                println!(
                    "vehicle {}  CA serial {} ({}, until {}{})  CRL number {}",
                    l.vehicle,
                    l.ca.serial,
                    l.ca.algo,
                    l.ca.not_after,
                    if l.ca.intermediate {
                        ", intermediate"
                    } else {
                        ""
                    },
                    l.crl_number
                );
                println!(
                    "{:<20} {:<34} {:<11} {:<21} status",
                    "ecu", "serial", "algo", "not after"
                );
                for e in &l.ecus {
                    println!(
                        "{:<20} {:<34} {:<11} {:<21} {}",
                        e.ecu, e.serial, e.algo, e.not_after, e.status
                    );
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
TLS 1.3 only (rustls with aws-lc-rs), key exchange X25519MLKEM768 preferred then X25519. Every \
client must present a certificate of the PKI's CA that is neither expired nor in D/crl.pem; its \
dNSName is the ECU (a certificate with several dNSNames is refused: ambiguous_identity), which \
gets the CAK, CKN and CAK number of each segment it is listed in. Refused connections are counted \
by reason and logged on stderr (never a key), at most 5 lines a second: the rest of a second's \
refusals are one `refused_summary` line with their counts by reason.

Under a flood (connections that never authenticate): one thread drives every TLS handshake \
without blocking; a handshake must complete within --handshake-timeout; at most --max-pending \
connections are in their handshake, at most --max-per-address of them from one source; a new \
connection beyond either limit evicts the oldest that has not sent a whole ClientHello (else \
the oldest). Connections that completed mutual TLS hold separate slots (--max-authenticated), so \
idle or slow clients never keep an ECU out.

One server per state file: the server holds an exclusive lock on STATE.lock (beside the state \
file) while it runs; a second server on the same state file exits 2 naming the first one's pid \
and listen address. A --listen address this host cannot bind (in use, not one of its \
addresses, a port below 1024 without root) is an environment problem: exit 3 with what to do.

The key server's own certificate is by default the PKI's ECU named `keyserver` \
(D/ecu/keyserver.pem and .key: `ivnsec pki issue --dir D --ecu keyserver`); clients verify it \
under that name. The server needs D/ca.pem and D/crl.pem, not the CA's private key.

Segments file (TOML):
  [[segment]]
  name = \"chassis\"
  ecus = [\"brake1\", \"steering\"]

State (--state, default D/keyserver-state.json, mode 0600): every segment's current CAK and \
number, written atomically before a new CAK is handed out; a restart hands out the same CAKs, \
and a CAK's number only grows.

Revocation: D/crl.pem is read again within 250 ms of `ivnsec pki revoke`; the revoked ECU's \
connections are closed, and every segment it was in gets a fresh CAK (number + 1), pushed to \
the remaining members that watch.

Protocol (one JSON object per line, at most 4096 bytes): {\"op\":\"get\"} or {\"op\":\"watch\"} \
(optionally \"segment\":\"NAME\"); see docs/keys.md. ECUs use it with `ivnsec macsec up \
--keyserver ADDR --cert C --key K --ca D/ca.pem`.

Example:
  ivnsec keyserver --pki pki --listen 127.0.0.1:8443 --segments segments.toml

Example with the flood limits set (defaults: 2 s, 1024, 8, 64):
  ivnsec keyserver --pki pki --listen 10.0.0.1:8443 --segments segments.toml \\
      --handshake-timeout 1.5 --max-pending 4096 --max-per-address 4 --max-authenticated 256")]
pub struct KeyserverArgs {
    /// The PKI directory (D/ca.pem, D/crl.pem, D/ecu/).
    #[arg(long, value_name = "DIR")]
    pub pki: PathBuf,
    /// Address and port to listen on, e.g. 127.0.0.1:8443 or [::]:8443.
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// The segments file (TOML: [[segment]] with name and ecus).
    #[arg(long, value_name = "FILE")]
    pub segments: PathBuf,
    /// The state file (CAKs and their numbers; mode 0600). Default: D/keyserver-state.json.
    #[arg(long, value_name = "FILE")]
    pub state: Option<PathBuf>,
    /// The server's certificate (PEM; default D/ecu/keyserver.pem).
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The server's private key (PEM, mode 0600; default D/ecu/keyserver.key).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// A client must complete its TLS handshake within this many seconds of connecting (0.1 to
    /// 60), e.g. --handshake-timeout 1.5.
    #[arg(long, value_name = "SECONDS", default_value_t = keyserver::HANDSHAKE_TIMEOUT.as_secs_f64())]
    pub handshake_timeout: f64,
    /// Connections in their TLS handshake at once, all sources together (pre-handshake slots;
    /// beyond them the oldest is evicted), e.g. --max-pending 4096.
    #[arg(long, value_name = "N", default_value_t = keyserver::MAX_PENDING)]
    pub max_pending: usize,
    /// Of those, at most N from one source address (an IPv6 /64 is one source; beyond them
    /// the source's oldest is evicted), e.g. --max-per-address 4.
    #[arg(long, value_name = "N", default_value_t = keyserver::MAX_PER_ADDRESS)]
    pub max_per_address: usize,
    /// Connections that completed mutual TLS at once (each watching ECU holds one; beyond
    /// them an ECU is refused: too_many_connections), e.g. --max-authenticated 256.
    #[arg(long, value_name = "N", default_value_t = keyserver::MAX_CONNECTIONS)]
    pub max_authenticated: usize,
    #[command(flatten)]
    pub daemon: crate::daemon::DaemonArgs,
}

/// `--handshake-timeout` as a duration (a number of seconds; the range is checked by
/// `Limits::check`).
fn seconds(s: f64) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(s).map_err(|_| {
        crate::error::usage(format!("--handshake-timeout {s}: choose 0.1 to 60 seconds"))
    })
}

pub fn keyserver(a: KeyserverArgs) -> Result<ExitCode> {
    let stop = super::common::stop_on_signal()?;
    let stop_flag = stop.clone();
    let cfg = keyserver::Config {
        pki: a.pki,
        listen: a.listen,
        segments: a.segments,
        state: a.state,
        cert: a.cert,
        key: a.key,
        limits: keyserver::Limits {
            handshake_timeout: seconds(a.handshake_timeout)?,
            max_pending: a.max_pending,
            max_per_address: a.max_per_address,
            max_authenticated: a.max_authenticated,
        },
    };
    let server = keyserver::KeyServer::bind(&cfg, stop)?;
    let listening = server.local_addr()?;
    eprintln!(
        "keyserver: listening on {listening} (TLS 1.3, client certificates of {}); until \
         SIGINT/SIGTERM",
        cfg.pki.display()
    );
    let counters = std::thread::scope(|s| -> Result<serde_json::Value> {
        if let Some(addr) = a.daemon.metrics {
            // The responder renders the latest snapshot, which a thread of this scope
            // refreshes from the server's counters four times a second while it runs.
            let latest = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
            let cert = cfg
                .cert
                .clone()
                .unwrap_or_else(|| pki::Layout::new(&cfg.pki).ecu_pem(pki::KEYSERVER_NAME));
            let refresh = {
                let latest = latest.clone();
                let server = &server;
                move || {
                    let text = ivnsec_node::metrics::render_keyserver(
                        &server.counters(),
                        &server.numbers(),
                        Some(&cert),
                    );
                    *latest.lock().unwrap_or_else(|e| e.into_inner()) = text;
                }
            };
            refresh();
            let render = std::sync::Arc::new(move || {
                latest.lock().unwrap_or_else(|e| e.into_inner()).clone()
            });
            let local = ivnsec_node::metrics::serve(addr, render)?;
            eprintln!("metrics: http://{local}/metrics");
            let stop = &stop_flag;
            s.spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(250));
                    refresh();
                }
            });
        }
        crate::daemon::notify_ready(&format!("keyserver listening on {listening}"));
        server.run()
    })?;
    eprintln!("keyserver: stopped: {counters}");
    Ok(ExitCode::SUCCESS)
}
