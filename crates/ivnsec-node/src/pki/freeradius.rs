//! `ivnsec pki freeradius`: a FreeRADIUS 3 EAP-TLS module for the vehicle PKI.
//!
//! The server certificate is issued like an ECU's (`pki issue`: SAN dNSName NAME, TLS server and
//! client auth) and lives in the PKI as `D/ecu/NAME.pem|key`. FreeRADIUS 3.2 hands `ca_file` to
//! OpenSSL's `SSL_CTX_load_verify_locations`, which loads certificates *and* CRLs from a PEM
//! file; with `check_crl = yes` OpenSSL then refuses a client whose serial the CRL lists. So
//! `OUT/ca.pem` holds the CA chain followed by `D/crl.pem` — a copy: after `pki revoke`, run this
//! command again and restart (or HUP) FreeRADIUS.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::{Algo, DEFAULT_DAYS, Layout, check_ecu_name, issue, read_pem, write_atomic};
use crate::error::usage;

/// What `pki freeradius` wrote.
#[derive(Debug, Serialize)]
pub struct FreeradiusReport {
    /// The server certificate's name.
    pub server_name: String,
    /// Whether the server certificate was issued now (false: it existed).
    pub issued: bool,
    pub cert: PathBuf,
    pub key: PathBuf,
    /// CA chain and CRL, for `ca_file`.
    pub ca_file: PathBuf,
    /// The module snippet.
    pub eap_conf: PathBuf,
}

/// Writes `out/eap-tls.conf` and `out/ca.pem` for the PKI in `dir`, issuing the server
/// certificate `server_name` first when the PKI has none.
pub fn write(dir: &Path, out: &Path, server_name: &str) -> Result<FreeradiusReport> {
    check_ecu_name(server_name)
        .map_err(|e| usage(format!("--server-name {server_name}: {e:#}")))?;
    let l = Layout::new(dir);
    if !l.ca_pem().exists() {
        return Err(usage(format!(
            "{} has no CA ({} missing); create one with `ivnsec pki init --dir {} --vehicle VIN`",
            dir.display(),
            l.ca_pem().display(),
            dir.display()
        )));
    }
    let mut issued = false;
    if !l.ecu_pem(server_name).exists() {
        issue(dir, server_name, Algo::EcdsaP256, DEFAULT_DAYS)?;
        issued = true;
    }
    std::fs::create_dir_all(out)
        .map_err(|e| usage(format!("cannot create {}: {e}", out.display())))?;
    let abs = |p: PathBuf| -> Result<PathBuf> {
        std::fs::canonicalize(&p).with_context(|| format!("cannot resolve {}", p.display()))
    };
    let mut chain = String::new();
    if l.root_pem().exists() {
        chain.push_str(&read_pem(&l.root_pem(), "root certificate")?);
    }
    chain.push_str(&read_pem(&l.ca_pem(), "CA certificate")?);
    chain.push_str(&read_pem(&l.crl_pem(), "CRL")?);
    let ca_file = out.join("ca.pem");
    write_atomic(&ca_file, chain.as_bytes(), 0o644)?;
    let ca_file = abs(ca_file)?;
    let cert = abs(l.ecu_pem(server_name))?;
    let key = abs(l.ecu_key(server_name))?;
    let conf = render(&cert, &key, &ca_file);
    let eap_conf = out.join("eap-tls.conf");
    write_atomic(&eap_conf, conf.as_bytes(), 0o644)?;
    Ok(FreeradiusReport {
        server_name: server_name.to_string(),
        issued,
        cert,
        key,
        ca_file,
        eap_conf: abs(eap_conf)?,
    })
}

fn q(p: &Path) -> String {
    // FreeRADIUS double-quoted strings: escape backslashes and quotes.
    p.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

/// The `eap` module of FreeRADIUS 3 for EAP-TLS with the given files.
pub fn render(cert: &Path, key: &Path, ca_file: &Path) -> String {
    format!(
        r#"# FreeRADIUS 3 EAP-TLS module for the vehicle PKI, written by `ivnsec pki freeradius`.
# Install it as mods-enabled/eap. ca_file holds the CA chain and the CRL: after
# `ivnsec pki revoke`, run `ivnsec pki freeradius` again and restart FreeRADIUS.
eap {{
	default_eap_type = tls
	timer_expire = 60
	ignore_unknown_eap_types = no
	max_sessions = ${{max_requests}}

	tls-config tls-common {{
		certificate_file = "{cert}"
		private_key_file = "{key}"
		ca_file = "{ca}"
		check_crl = yes
		check_all_crl = yes
		cipher_list = "DEFAULT"
		cipher_server_preference = no
		tls_min_version = "1.2"
		tls_max_version = "1.3"
		ecdh_curve = ""
		cache {{
			enable = no
		}}
		verify {{
		}}
		ocsp {{
			enable = no
		}}
	}}

	tls {{
		tls = tls-common
	}}
}}
"#,
        cert = q(cert),
        key = q(key),
        ca = q(ca_file),
    )
}
