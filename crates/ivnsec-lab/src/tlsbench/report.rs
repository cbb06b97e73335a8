//! `ivnsec tls-bench`'s tables: every measured case, and the comparison beside seed 004
//! Table 5.2 (connections per minute and CPU; [`crate::seed004`]).

use crate::experiment::{Experiment, Holds, Tables};
use crate::seed004;
use crate::table::{Table, html_section, markdown_section};
use crate::tlsbench::{Algo, Kx, Outcome, Row};

fn f0(x: f64) -> String {
    format!("{x:.0}")
}

fn f1(x: f64) -> String {
    format!("{x:.1}")
}

fn on(b: bool) -> &'static str {
    if b { "on" } else { "off" }
}

/// One line per measured case: ours, OpenSSL's, the ratio.
pub fn results(o: &Outcome) -> Table {
    let head = [
        "algo",
        "kx",
        "client auth",
        "resumption",
        "handshakes/s",
        "handshakes/min",
        "CPU %",
        "server CPU %",
        "CPU µs/conn",
        "failures",
        "OpenSSL handshakes/s",
        "OpenSSL server CPU %",
        "OpenSSL CPU µs/conn",
        "ratio",
    ];
    let rows = o
        .results
        .iter()
        .map(|r| {
            let m = r.openssl.measured.as_ref();
            vec![
                r.algo.to_string(),
                r.kx.name().to_string(),
                on(r.client_auth).to_string(),
                on(r.resumption).to_string(),
                f0(r.handshakes_per_s),
                f0(r.handshakes_per_min),
                f1(r.cpu_pct),
                f1(r.server_cpu_pct),
                r.cpu_us_per_handshake.map_or("—".into(), f0),
                (r.failures + m.map_or(0, |m| m.failures)).to_string(),
                r.openssl.handshakes_per_s.map_or("—".into(), f0),
                m.map_or("—".into(), |m| f1(m.server_cpu_pct)),
                m.and_then(|m| m.cpu_us_per_handshake)
                    .map_or("—".into(), f0),
                r.ratio.map_or("—".into(), |x| format!("{x:.2}×")),
            ]
        })
        .collect();
    Table {
        head: head.iter().map(|s| s.to_string()).collect(),
        rows,
    }
}

/// The row of `algo` that stands for it beside the seed: X25519, no resumption, and client
/// certificates when measured (OpenVPN authenticates both sides).
fn representative(o: &Outcome, algo: Algo) -> Option<&Row> {
    let mut c: Vec<&Row> = o
        .results
        .iter()
        .filter(|r| r.algo == algo && r.kx == Kx::X25519 && !r.resumption)
        .collect();
    c.sort_by_key(|r| !r.client_auth);
    c.first().copied()
}

/// Seed 004 Table 5.2 beside today's figures, one line per certificate: connections per
/// minute and server CPU % (here: % of the whole machine, all cores).
pub fn beside_seed004(o: &Outcome) -> Table {
    let head = [
        "certificate",
        "seed 004 soft conn/min",
        "seed 004 soft CPU %",
        "seed 004 BA414E conn/min",
        "seed 004 BA414E CPU %",
        "OpenSSL TLS 1.2 DHE-RSA conn/min",
        "its server CPU %",
        "rustls TLS 1.3 conn/min",
        "its server CPU %",
        "OpenSSL TLS 1.3 conn/min",
        "its server CPU %",
        "rustls / OpenSSL",
    ];
    let dash = || "—".to_string();
    let mut rows = Vec::new();
    let names = [
        ("rsa-1024", Some(1024), None),
        ("rsa-2048", Some(2048), Some(Algo::Rsa2048)),
        ("rsa-3072", None, Some(Algo::Rsa3072)),
        ("rsa-4096", Some(4096), Some(Algo::Rsa4096)),
        ("ecdsa-p256", None, Some(Algo::EcdsaP256)),
        ("ed25519", None, Some(Algo::Ed25519)),
    ];
    for (name, seed_bits, algo) in names {
        let seed = seed_bits.and_then(seed004::row);
        let dhe = o.openssl_only.iter().find(|d| d.algo == name);
        let ours = algo.and_then(|a| representative(o, a));
        if seed.is_none() && dhe.is_none() && ours.is_none() {
            continue;
        }
        let ossl = ours.and_then(|r| r.openssl.measured.as_ref());
        rows.push(vec![
            name.to_string(),
            seed.map_or_else(dash, |s| f1(s.soft_per_min)),
            seed.map_or_else(dash, |s| format!("{:.2}", s.soft_cpu_pct)),
            seed.map_or_else(dash, |s| f1(s.hw_per_min)),
            seed.map_or_else(dash, |s| format!("{:.2}", s.hw_cpu_pct)),
            dhe.map_or_else(dash, |d| f0(d.measured.handshakes_per_min)),
            dhe.map_or_else(dash, |d| f1(d.measured.server_cpu_pct)),
            ours.map_or_else(
                || {
                    if seed_bits == Some(1024) {
                        "not possible: rustls has no RSA-1024".to_string()
                    } else {
                        dash()
                    }
                },
                |r| f0(r.handshakes_per_min),
            ),
            ours.map_or_else(dash, |r| f1(r.server_cpu_pct)),
            ossl.map_or_else(dash, |m| f0(m.handshakes_per_min)),
            ossl.map_or_else(dash, |m| f1(m.server_cpu_pct)),
            ours.and_then(|r| r.ratio)
                .map_or_else(dash, |x| format!("{x:.2}×")),
        ]);
    }
    Table {
        head: head.iter().map(|s| s.to_string()).collect(),
        rows,
    }
}

/// The notes printed under [`beside_seed004`].
pub fn seed004_notes(o: &Outcome) -> Vec<String> {
    let mut n = vec![
        format!(
            "seed 004: §5.1 Table 5.2, OpenVPN server on an ARM board, {} clients renegotiating \
once a second (at most {:.0} connections/min: the seed's rates are bounded by its clients, ours \
by this machine), TLS with DHE-RSA; CPU is the board's.",
            seed004::CLIENTS,
            seed004::CEILING_PER_MIN
        ),
        format!(
            "here: {} clients and {} servers on this host over loopback ({} cores, {}), for {} s \
each; server CPU % is of the whole machine (all cores = 100 %).",
            o.meta.concurrency,
            o.meta.concurrency,
            o.meta.cores,
            o.meta.cpu_model.as_deref().unwrap_or("unknown CPU"),
            o.meta.seconds
        ),
    ];
    if !o.openssl_only.is_empty() {
        n.push(
            "OpenSSL TLS 1.2 DHE-RSA is seed 004's configuration (TLS-DHE-RSA-WITH-AES-256-CBC-SHA, \
DH group of the RSA size), which rustls cannot do: it has no DHE and refuses RSA keys under 2048 \
bits."
                .into(),
        );
    } else {
        n.push(
            "seed 004's TLS 1.2 DHE-RSA configuration was not measured (--dhe off or no OpenSSL)."
                .into(),
        );
    }
    n
}

/// The `[[tls_bench]]` tables of a report: (title, table, notes) per outcome, in order.
fn sections(outcomes: &[Outcome]) -> Vec<(String, Table, Vec<String>)> {
    let mut out = Vec::new();
    for o in outcomes {
        out.push((
            "TLS handshakes (ivnsec tls-bench)".to_string(),
            results(o),
            Vec::new(),
        ));
        out.push((
            "TLS connections per minute beside seed 004 (Tables 5.1, 5.2)".to_string(),
            beside_seed004(o),
            seed004_notes(o),
        ));
    }
    out
}

/// `[[tls_bench]]`: TLS handshakes per minute in the plan's own process, beside seed 004
/// Tables 5.1 and 5.2.
pub struct TlsBenchExperiment;

impl Tables for TlsBenchExperiment {
    fn tables(&self) -> &'static [&'static str] {
        &["tls_bench"]
    }
}

impl<P: Holds<Outcome>> Experiment<P> for TlsBenchExperiment {
    fn markdown(&self, page: &P, s: &mut String) {
        for (title, t, notes) in sections(page.results()) {
            markdown_section(s, &title, &t, &notes);
        }
    }

    fn html(&self, page: &P, s: &mut String) {
        for (title, t, notes) in sections(page.results()) {
            html_section(s, &title, &t, &notes);
        }
    }
}
