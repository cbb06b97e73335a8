//! `ivnsec tls-bench`: TLS 1.3 handshakes per second and per minute of rustls (aws-lc-rs)
//! client and server on this host, beside OpenSSL on the same certificates and beside seed
//! 004 Table 5.2. The measurement is `ivnsec_lab::tlsbench`; this command takes the options
//! and prints the tables or the JSON.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use ivnsec_lab::tlsbench::report::{beside_seed004, results, seed004_notes};
use ivnsec_lab::tlsbench::{self, Algo, Kx, Outcome, Row, Settings};

use crate::output::Json;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "One connection = TCP connect, a full TLS 1.3 handshake (or a resumed one), a \
18-byte request and the 47-byte answer `openssl s_server -WWW` gives, close. OpenSSL runs the \
same with N pairs of `openssl s_server` + `openssl s_time` on the same certificate files.\n\
Exit codes: 0 every handshake succeeded, 1 some handshake failed (counted in `failures`), \
2 bad options, 3 OpenSSL missing.\n\
Examples:\n  \
ivnsec tls-bench --algo rsa-2048 --algo ecdsa-p256 --seconds 5\n  \
ivnsec tls-bench --kx both --client-auth both --resumption both --concurrency 10 --json\n\
Seed 004 Table 5.2 beside today's figures (ten clients, mutual TLS, DHE-RSA with OpenSSL):\n  \
ivnsec tls-bench --algo rsa-2048 --algo rsa-4096 --client-auth on --concurrency 10 --seconds 10\n\
What is measured and how it compares with seed 004: docs/tls-bench.md"
)]
pub struct Args {
    /// Server and client certificate algorithm (CA, server and client keys all of it);
    /// repeatable or comma-separated. Default: all five.
    #[arg(long = "algo", value_name = "A", value_delimiter = ',',
          value_parser = ["ecdsa-p256", "ed25519", "rsa-2048", "rsa-3072", "rsa-4096"])]
    algos: Vec<String>,
    /// Clients present a certificate that the server checks (mutual TLS): on, off or both.
    #[arg(long, default_value = "off", value_name = "on|off|both",
          value_parser = ["on", "off", "both"])]
    client_auth: String,
    /// Resume sessions with TLS 1.3 tickets (stateless, 2 per connection; OpenSSL: `s_time
    /// -reuse`) instead of full handshakes: on, off or both.
    #[arg(long, default_value = "off", value_name = "on|off|both",
          value_parser = ["on", "off", "both"])]
    resumption: String,
    /// Key exchange: x25519, x25519mlkem768 (the post-quantum hybrid) or both.
    #[arg(long, default_value = "x25519", value_name = "KX",
          value_parser = ["x25519", "x25519mlkem768", "both"])]
    kx: String,
    /// Parallel clients (and server workers; OpenSSL: N s_server + s_time pairs). Seed 004
    /// used ten clients. 1-256.
    #[arg(long, default_value_t = 10, value_name = "N")]
    concurrency: usize,
    /// Seconds per measurement, each of ours and OpenSSL's (whole seconds, 1-3600).
    #[arg(long, default_value_t = 5, value_name = "S")]
    seconds: u32,
    /// Measure OpenSSL (s_server + s_time) on the same certificates and print the ratio.
    #[arg(long, default_value = "on", value_name = "on|off", value_parser = ["on", "off"])]
    openssl: String,
    /// Also measure seed 004's configuration with OpenSSL (TLS 1.2 DHE-RSA-AES256-SHA over
    /// RSA-1024, and RSA-2048 / RSA-4096 when those are selected), which rustls cannot do.
    #[arg(long, default_value = "on", value_name = "on|off", value_parser = ["on", "off"])]
    dhe: String,
    /// Failure check: clients present a certificate of another CA. Every handshake with
    /// --client-auth on must then fail; failures are counted and the exit code is 1.
    #[arg(long)]
    foreign_client_cert: bool,
    /// Print `{"results": […], "openssl_only": […], "meta": {…}}` instead of tables.
    #[arg(long)]
    json: bool,
}

fn toggle(s: &str) -> Vec<bool> {
    match s {
        "on" => vec![true],
        "off" => vec![false],
        _ => vec![false, true],
    }
}

impl Args {
    fn settings(&self) -> Result<Settings> {
        let algos = if self.algos.is_empty() {
            Algo::ALL.to_vec()
        } else {
            self.algos
                .iter()
                .map(|a| a.parse())
                .collect::<Result<Vec<Algo>>>()?
        };
        let kx = match self.kx.as_str() {
            "both" => vec![Kx::X25519, Kx::X25519Mlkem768],
            k => vec![k.parse()?],
        };
        let s = Settings {
            algos,
            client_auth: toggle(&self.client_auth),
            resumption: toggle(&self.resumption),
            kx,
            concurrency: self.concurrency,
            seconds: self.seconds,
            openssl: self.openssl == "on",
            dhe: self.dhe == "on",
            foreign_client_cert: self.foreign_client_cert,
        };
        s.check()?;
        Ok(s)
    }
}

pub fn run(args: Args) -> Result<ExitCode> {
    let settings = args.settings()?;
    let mut json = Json::claim(args.json)?;
    let quiet = args.json;
    let mut progress = |r: &Row| {
        if !quiet {
            eprintln!(
                "{} {} client-auth {} resumption {}: {:.0}/s{}",
                r.algo,
                r.kx.name(),
                if r.client_auth { "on" } else { "off" },
                if r.resumption { "on" } else { "off" },
                r.handshakes_per_s,
                r.openssl
                    .handshakes_per_s
                    .map_or(String::new(), |o| format!(", OpenSSL {o:.0}/s"))
            );
        }
    };
    let outcome = tlsbench::run(&settings, &mut progress)?;
    if args.json {
        json.print(&outcome)?;
    } else {
        print_text(&outcome)?;
    }
    Ok(if outcome.failures() > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_text(o: &Outcome) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "TLS handshakes on this host: {} ({} clients, {} s each; OpenSSL: {})\n",
        o.meta.rustls,
        o.meta.concurrency,
        o.meta.seconds,
        o.meta.openssl_version.as_deref().unwrap_or("not run")
    )?;
    write!(out, "{}", results(o).markdown())?;
    let mut notes: Vec<&str> = o
        .results
        .iter()
        .filter_map(|r| r.openssl.note.as_deref())
        .collect();
    notes.dedup();
    for n in notes {
        writeln!(out, "\nOpenSSL: {n}")?;
    }
    if let Some(r) = o.results.iter().find(|r| r.openssl.command.is_some()) {
        writeln!(
            out,
            "\nOpenSSL command ({} {}): {}",
            r.algo,
            r.kx.name(),
            r.openssl.command.as_deref().unwrap_or("")
        )?;
    }
    for d in &o.openssl_only {
        writeln!(
            out,
            "\nOpenSSL only, {} {} {} DH-{}: {:.0} connections/min ({:.1}/s), server CPU {:.1} %, \
failures {}; {}.\n  command: {}",
            d.protocol,
            d.cipher,
            d.algo,
            d.dh_bits,
            d.measured.handshakes_per_min,
            d.measured.handshakes_per_s,
            d.measured.server_cpu_pct,
            d.measured.failures,
            d.why,
            d.command
        )?;
    }
    writeln!(
        out,
        "\nBeside seed 004 Table 5.2 (connections per minute and CPU):\n"
    )?;
    write!(out, "{}", beside_seed004(o).markdown())?;
    for n in seed004_notes(o) {
        writeln!(out, "\n- {n}")?;
    }
    let failures = o.failures();
    if failures > 0 {
        writeln!(
            out,
            "\n{failures} handshake(s) failed (see `failures`): exit code 1."
        )?;
    }
    out.flush()?;
    Ok(())
}
