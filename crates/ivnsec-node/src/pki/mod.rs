//! The vehicle PKI (`ivnsec pki`, docs/keys.md): a vehicle root CA (optionally with an
//! intermediate that issues), one device certificate per ECU, and a certificate revocation list
//! that is always present. Certificates and CRLs are made by rcgen; nothing here writes ASN.1.
//!
//! The directory layout is fixed so that other tools (OpenSSL, the key server) can use it:
//!
//! ```text
//! D/ca.pem  D/ca.key        the issuing CA (the root; with --intermediate the intermediate)
//! D/root.pem D/root.key     with --intermediate only: the root that signed ca.pem
//! D/ecu/NAME.pem            the ECU's certificate (SAN dNSName NAME, serverAuth + clientAuth)
//! D/ecu/NAME.key            its private key (PKCS#8 PEM)
//! D/crl.pem                 the CRL of the issuing CA (an empty list at first)
//! D/revoked/NAME-SERIAL.pem the certificate of a revoked ECU once NAME was enrolled again
//! ```
//!
//! Every private key is written with mode 0600, never over an existing file, never printed;
//! keys and certificates are read with a size bound. ECU names are DNS labels (they name
//! files and go into the SAN) and VINs follow ISO 3779, so no name can reach outside `D`.

pub mod freeradius;
pub mod keyserver;

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams, DistinguishedName,
    DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyIdMethod, KeyPair, KeyUsagePurpose,
    RevocationReason, RevokedCertParams, RsaKeySize, SanType, SerialNumber,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer};
use serde::Serialize;
use time::{Duration, OffsetDateTime};
use zeroize::Zeroizing;

use crate::error::usage;
use crate::keys::keyfile;

/// Largest certificate, CRL or key file read (an RSA-4096 key is about 3.3 KB in PEM; a CRL
/// grows by about 40 bytes per revoked certificate).
pub const MAX_PEM_FILE: u64 = 1 << 20;
/// Validity of a CA certificate made by `init` (years).
pub const CA_YEARS: i64 = 20;
/// Default validity of an ECU certificate (`issue --days`).
pub const DEFAULT_DAYS: u32 = 365;
/// The CRL's nextUpdate: this long after each `init` or `revoke` (re-signed by every revoke).
pub const CRL_DAYS: i64 = 365;
/// The name of the key server's own certificate when it is issued into the PKI.
pub const KEYSERVER_NAME: &str = "keyserver";

/// The key algorithms of `--algo`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    EcdsaP256,
    Ed25519,
    Rsa2048,
    Rsa3072,
    Rsa4096,
}

impl Algo {
    pub const ALL: [Algo; 5] = [
        Algo::EcdsaP256,
        Algo::Ed25519,
        Algo::Rsa2048,
        Algo::Rsa3072,
        Algo::Rsa4096,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algo::EcdsaP256 => "ecdsa-p256",
            Algo::Ed25519 => "ed25519",
            Algo::Rsa2048 => "rsa-2048",
            Algo::Rsa3072 => "rsa-3072",
            Algo::Rsa4096 => "rsa-4096",
        }
    }

    /// Parses `--algo`; an unknown name is a usage error listing the known ones.
    pub fn parse(s: &str) -> Result<Algo> {
        Algo::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                usage(format!(
                    "--algo {s}: unknown; choose one of {}",
                    Algo::ALL.map(Algo::name).join(", ")
                ))
            })
    }

    fn generate(self) -> Result<KeyPair> {
        let k = match self {
            Algo::EcdsaP256 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
            Algo::Ed25519 => KeyPair::generate_for(&rcgen::PKCS_ED25519),
            Algo::Rsa2048 => KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, RsaKeySize::_2048),
            Algo::Rsa3072 => KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, RsaKeySize::_3072),
            Algo::Rsa4096 => KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, RsaKeySize::_4096),
        };
        k.with_context(|| format!("generating a {} key", self.name()))
    }

    fn is_rsa(self) -> bool {
        matches!(self, Algo::Rsa2048 | Algo::Rsa3072 | Algo::Rsa4096)
    }
}

/// Checks an ECU name: a DNS label of lowercase letters, digits and `-` (1 to 63, not starting
/// or ending with `-`). It names files under `D/ecu/` and is the certificate's dNSName, so it
/// can hold no `/`, `.` or anything else that could lead out of the directory.
pub fn check_ecu_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "ECU name {name:?}: must be 1 to 63 lowercase letters, digits and '-' (a DNS label, \
             not starting or ending with '-'), e.g. `brake-ecu1`; it names the ECU's files and \
             goes into its certificate"
        )))
    }
}

/// Checks a VIN (ISO 3779): 17 characters of 0-9 and A-Z without I, O and Q.
pub fn check_vin(vin: &str) -> Result<()> {
    let ok = vin.len() == 17
        && vin
            .bytes()
            .all(|b| b.is_ascii_digit() || (b.is_ascii_uppercase() && !b"IOQ".contains(&b)));
    if ok {
        Ok(())
    } else {
        Err(usage(format!(
            "--vehicle {vin:?}: a VIN (ISO 3779) is 17 characters of 0-9 and A-Z without I, O \
             and Q, e.g. WVWZZZ1JZXW000001"
        )))
    }
}

/// The paths of a PKI directory.
#[derive(Clone, Debug)]
pub struct Layout {
    pub dir: PathBuf,
}

impl Layout {
    pub fn new(dir: &Path) -> Layout {
        Layout {
            dir: dir.to_path_buf(),
        }
    }
    pub fn ca_pem(&self) -> PathBuf {
        self.dir.join("ca.pem")
    }
    pub fn ca_key(&self) -> PathBuf {
        self.dir.join("ca.key")
    }
    pub fn root_pem(&self) -> PathBuf {
        self.dir.join("root.pem")
    }
    pub fn root_key(&self) -> PathBuf {
        self.dir.join("root.key")
    }
    pub fn crl_pem(&self) -> PathBuf {
        self.dir.join("crl.pem")
    }
    pub fn ecu_dir(&self) -> PathBuf {
        self.dir.join("ecu")
    }
    pub fn revoked_dir(&self) -> PathBuf {
        self.dir.join("revoked")
    }
    /// `D/ecu/NAME.pem` (the name must have passed [`check_ecu_name`]).
    pub fn ecu_pem(&self, name: &str) -> PathBuf {
        self.ecu_dir().join(format!("{name}.pem"))
    }
    pub fn ecu_key(&self, name: &str) -> PathBuf {
        self.ecu_dir().join(format!("{name}.key"))
    }
}

/// Reads a public PEM file (certificate, CRL) with the size bound.
pub fn read_pem(path: &Path, what: &str) -> Result<String> {
    let (text, _) = keyfile::read_secret(path, what, MAX_PEM_FILE, "see `ivnsec pki --help`")?;
    Ok(text.to_string())
}

/// Reads a private key file: bounded, a regular file, not readable by group or others.
pub fn read_key(path: &Path) -> Result<KeyPair> {
    let (text, mode) = keyfile::read_secret(
        path,
        "private key file",
        MAX_PEM_FILE,
        "see `ivnsec pki --help`",
    )?;
    if mode & 0o077 != 0 {
        return Err(usage(format!(
            "private key file {} is readable by group or others (mode {:o}); refusing it: \
             `chmod 600 {}`",
            path.display(),
            mode & 0o777,
            path.display()
        )));
    }
    KeyPair::from_pem(&text).map_err(|e| {
        usage(format!(
            "private key file {}: not a PKCS#8, SEC1 or PKCS#1 PEM private key ({e})",
            path.display()
        ))
    })
}

/// Writes a public file atomically (temporary file, fsync, rename); `mode` its permissions.
pub fn write_atomic(path: &Path, body: &[u8], mode: u32) -> Result<()> {
    use std::io::Write;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent.join(format!(".{name}.tmp{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| usage(format!("cannot create {}: {e}", tmp.display())))?;
    let r = f
        .write_all(body)
        .and_then(|_| f.sync_all())
        .and_then(|_| std::fs::rename(&tmp, path))
        .and_then(|_| std::fs::File::open(parent)?.sync_all());
    if let Err(e) = r {
        let _ = std::fs::remove_file(&tmp);
        return Err(anyhow::anyhow!("writing {}: {e}", path.display()));
    }
    Ok(())
}

fn write_key(path: &Path, key: &KeyPair) -> Result<()> {
    let pem = Zeroizing::new(key.serialize_pem());
    keyfile::write_secret(path, &pem)
}

fn write_new_public(path: &Path, body: &str) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(path)
        .map_err(|e| usage(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(body.as_bytes())
        .and_then(|_| f.sync_all())
        .with_context(|| format!("writing {}", path.display()))
}

/// A fresh random serial: 16 bytes, the top bit clear (a positive INTEGER, RFC 5280 4.1.2.2).
fn random_serial() -> Result<SerialNumber> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b).map_err(|e| anyhow::anyhow!("random generator: {e}"))?;
    b[0] &= 0x7f;
    b[0] |= 0x01;
    Ok(SerialNumber::from_slice(&b))
}

fn ca_params(cn: &str, vin: &str, path_len: u8, years: i64) -> Result<CertificateParams> {
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    dn.push(DnType::OrganizationName, vin);
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(path_len));
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let now = OffsetDateTime::now_utc();
    p.not_before = now - Duration::minutes(5);
    p.not_after = now + Duration::days(365 * years);
    p.serial_number = Some(random_serial()?);
    p.use_authority_key_identifier_extension = true;
    p.key_identifier_method = KeyIdMethod::Sha256;
    Ok(p)
}

/// What `init` made.
#[derive(Debug, Serialize)]
pub struct InitReport {
    pub dir: PathBuf,
    pub vehicle: String,
    pub ca: PathBuf,
    pub root: Option<PathBuf>,
    pub crl: PathBuf,
}

/// `pki init`: a vehicle root CA for `vin` in `dir` (created, or an empty existing directory),
/// with `intermediate` a root in `root.pem` and an intermediate that issues in `ca.pem`, and an
/// empty CRL.
pub fn init(dir: &Path, vin: &str, intermediate: bool, algo: Algo) -> Result<InitReport> {
    check_vin(vin)?;
    let l = Layout::new(dir);
    if l.ca_pem().exists() || l.ca_key().exists() {
        return Err(usage(format!(
            "{} already holds a CA ({}); not overwriting it. Choose another --dir",
            dir.display(),
            l.ca_pem().display()
        )));
    }
    std::fs::create_dir_all(l.ecu_dir())
        .map_err(|e| usage(format!("cannot create {}: {e}", l.ecu_dir().display())))?;
    let root_key = algo.generate()?;
    let root_params = ca_params(
        &format!("ivnsec vehicle root CA {vin}"),
        vin,
        if intermediate { 1 } else { 0 },
        CA_YEARS,
    )?;
    let root_cert = root_params.self_signed(&root_key)?;
    let (ca_cert_pem, ca_key, ca_params_) = if intermediate {
        write_key(&l.root_key(), &root_key)?;
        write_new_public(&l.root_pem(), &root_cert.pem())?;
        let key = algo.generate()?;
        let params = ca_params(
            &format!("ivnsec vehicle issuing CA {vin}"),
            vin,
            0,
            CA_YEARS - 1,
        )?;
        let root_issuer = Issuer::from_params(&root_params, &root_key);
        let cert = params.signed_by(&key, &root_issuer)?;
        (cert.pem(), key, params)
    } else {
        (root_cert.pem(), root_key, root_params)
    };
    write_key(&l.ca_key(), &ca_key)?;
    write_new_public(&l.ca_pem(), &ca_cert_pem)?;
    let issuer = Issuer::new(ca_params_, ca_key);
    write_crl(&l, &issuer, 1, Vec::new())?;
    Ok(InitReport {
        dir: dir.to_path_buf(),
        vehicle: vin.to_string(),
        ca: l.ca_pem(),
        root: intermediate.then(|| l.root_pem()),
        crl: l.crl_pem(),
    })
}

/// The issuing CA: its certificate (DER), the issuer rcgen signs with, and the VIN.
pub struct Ca {
    pub cert: CertificateDer<'static>,
    pub issuer: Issuer<'static, KeyPair>,
    pub vin: String,
}

/// Loads the issuing CA of `dir` (certificate and key).
pub fn load_ca(l: &Layout) -> Result<Ca> {
    if !l.ca_pem().exists() {
        return Err(usage(format!(
            "{}: no CA here ({} is missing); make one with `ivnsec pki init --dir {} --vehicle VIN`",
            l.dir.display(),
            l.ca_pem().display(),
            l.dir.display()
        )));
    }
    let pem = read_pem(&l.ca_pem(), "CA certificate")?;
    let cert = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| {
        usage(format!(
            "CA certificate {}: no PEM certificate ({e})",
            l.ca_pem().display()
        ))
    })?;
    let key = read_key(&l.ca_key())?;
    let vin = {
        let (_, x) = x509_parser::parse_x509_certificate(&cert).map_err(|e| {
            usage(format!(
                "CA certificate {}: not a certificate ({e})",
                l.ca_pem().display()
            ))
        })?;
        x.subject()
            .iter_organization()
            .next()
            .and_then(|o| o.as_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let issuer = Issuer::from_ca_cert_der(&cert, key).map_err(|e| {
        usage(format!(
            "CA certificate {} and key {}: {e}",
            l.ca_pem().display(),
            l.ca_key().display()
        ))
    })?;
    Ok(Ca { cert, issuer, vin })
}

/// One revoked certificate in the CRL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revoked {
    pub serial: Vec<u8>,
    pub time: OffsetDateTime,
}

/// The CRL of `dir`: its number and its entries (read with the size bound; a CRL that does
/// not parse is a usage error naming the file).
pub fn read_crl(l: &Layout) -> Result<(u64, Vec<Revoked>)> {
    let pem = read_pem(&l.crl_pem(), "CRL")?;
    parse_crl_pem(pem.as_bytes()).map_err(|e| usage(format!("CRL {}: {e}", l.crl_pem().display())))
}

/// Parses a PEM CRL into its number and entries.
pub fn parse_crl_pem(pem: &[u8]) -> std::result::Result<(u64, Vec<Revoked>), String> {
    let der = CertificateRevocationListDer::from_pem_slice(pem)
        .map_err(|e| format!("no PEM CRL ({e})"))?;
    let (_, crl) = x509_parser::parse_x509_crl(&der).map_err(|e| format!("not a CRL ({e})"))?;
    let number = crl
        .crl_number()
        .and_then(|n| u64::try_from(n).ok())
        .unwrap_or(0);
    let entries = crl
        .iter_revoked_certificates()
        .map(|r| Revoked {
            serial: strip_zeros(r.raw_serial()),
            time: r.revocation_date.to_datetime(),
        })
        .collect();
    Ok((number, entries))
}

fn strip_zeros(b: &[u8]) -> Vec<u8> {
    let i = b.iter().position(|&x| x != 0).unwrap_or(b.len());
    b[i..].to_vec()
}

fn write_crl(
    l: &Layout,
    issuer: &Issuer<'_, KeyPair>,
    number: u64,
    revoked: Vec<Revoked>,
) -> Result<()> {
    let now = OffsetDateTime::now_utc();
    let params = CertificateRevocationListParams {
        this_update: now - Duration::minutes(1),
        next_update: now + Duration::days(CRL_DAYS),
        crl_number: SerialNumber::from(number),
        issuing_distribution_point: None,
        revoked_certs: revoked
            .into_iter()
            .map(|r| RevokedCertParams {
                serial_number: SerialNumber::from_slice(&r.serial),
                revocation_time: r.time,
                reason_code: Some(RevocationReason::KeyCompromise),
                invalidity_date: None,
            })
            .collect(),
        key_identifier_method: KeyIdMethod::Sha256,
    };
    let crl = params.signed_by(issuer).context("signing the CRL")?;
    write_atomic(&l.crl_pem(), crl.pem()?.as_bytes(), 0o644)
}

/// What `issue` made.
#[derive(Debug, Serialize)]
pub struct Issued {
    pub ecu: String,
    pub serial: String,
    pub algo: &'static str,
    pub not_after: String,
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// `pki issue` with a validity of `days` from now.
pub fn issue(dir: &Path, ecu: &str, algo: Algo, days: u32) -> Result<Issued> {
    if days == 0 || days > 365 * 30 {
        return Err(usage(format!(
            "--days {days}: must be 1 to {} (30 years)",
            365 * 30
        )));
    }
    let now = OffsetDateTime::now_utc();
    issue_valid(
        dir,
        ecu,
        algo,
        now - Duration::minutes(5),
        now + Duration::days(i64::from(days)),
    )
}

/// Issues the device certificate of `ecu` valid from `not_before` to `not_after` (tests use
/// it for expired certificates). Refuses an ECU that has a certificate that is not revoked; the
/// revoked one of an ECU enrolled again is kept as `D/revoked/NAME-SERIAL.pem`.
pub fn issue_valid(
    dir: &Path,
    ecu: &str,
    algo: Algo,
    not_before: OffsetDateTime,
    not_after: OffsetDateTime,
) -> Result<Issued> {
    check_ecu_name(ecu)?;
    let l = Layout::new(dir);
    let ca = load_ca(&l)?;
    let (_, revoked) = read_crl(&l)?;
    let pem_path = l.ecu_pem(ecu);
    if pem_path.exists() {
        let old = read_cert_info(&pem_path)?;
        if !revoked.iter().any(|r| r.serial == old.serial) {
            return Err(usage(format!(
                "ECU {ecu} already has a certificate (serial {}, {}); revoke it first with \
                 `ivnsec pki revoke --dir {} --ecu {ecu}`",
                hex::encode(&old.serial),
                pem_path.display(),
                dir.display()
            )));
        }
        std::fs::create_dir_all(l.revoked_dir())
            .map_err(|e| usage(format!("cannot create {}: {e}", l.revoked_dir().display())))?;
        let dest = l
            .revoked_dir()
            .join(format!("{ecu}-{}.pem", hex::encode(&old.serial)));
        std::fs::rename(&pem_path, &dest)
            .with_context(|| format!("moving {} to {}", pem_path.display(), dest.display()))?;
        let _ = std::fs::remove_file(l.ecu_key(ecu));
    }
    if l.ecu_key(ecu).exists() {
        return Err(usage(format!(
            "{} exists without its certificate; remove it first (it is a private key)",
            l.ecu_key(ecu).display()
        )));
    }
    let key = algo.generate()?;
    let mut p = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, ecu);
    dn.push(DnType::OrganizationName, ca.vin.as_str());
    p.distinguished_name = dn;
    p.subject_alt_names = vec![SanType::DnsName(ecu.try_into()?)];
    p.is_ca = IsCa::ExplicitNoCa;
    p.key_usages = if algo.is_rsa() {
        vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ]
    } else {
        vec![KeyUsagePurpose::DigitalSignature]
    };
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ClientAuth,
        ExtendedKeyUsagePurpose::ServerAuth,
    ];
    p.not_before = not_before;
    p.not_after = not_after;
    let serial = random_serial()?;
    p.serial_number = Some(serial.clone());
    p.use_authority_key_identifier_extension = true;
    p.key_identifier_method = KeyIdMethod::Sha256;
    let cert = p.signed_by(&key, &ca.issuer)?;
    write_key(&l.ecu_key(ecu), &key)?;
    write_new_public(&pem_path, &cert.pem())?;
    Ok(Issued {
        ecu: ecu.to_string(),
        serial: hex::encode(strip_zeros(serial.as_ref())),
        algo: algo.name(),
        not_after: fmt_time(not_after),
        cert: pem_path,
        key: l.ecu_key(ecu),
    })
}

/// What `revoke` did.
#[derive(Debug, Serialize)]
pub struct RevokeReport {
    pub ecu: String,
    pub serial: String,
    pub already: bool,
    pub crl_number: u64,
}

/// `pki revoke`: adds the certificate of `ecu` to the CRL and signs it again (a revoked one
/// stays revoked: `already`).
pub fn revoke(dir: &Path, ecu: &str) -> Result<RevokeReport> {
    check_ecu_name(ecu)?;
    let l = Layout::new(dir);
    let ca = load_ca(&l)?;
    let pem_path = l.ecu_pem(ecu);
    if !pem_path.exists() {
        return Err(usage(format!(
            "ECU {ecu} has no certificate in {} (`ivnsec pki list --dir {}` shows the ECUs)",
            l.ecu_dir().display(),
            dir.display()
        )));
    }
    let info = read_cert_info(&pem_path)?;
    let (number, mut revoked) = read_crl(&l)?;
    if revoked.iter().any(|r| r.serial == info.serial) {
        return Ok(RevokeReport {
            ecu: ecu.to_string(),
            serial: hex::encode(&info.serial),
            already: true,
            crl_number: number,
        });
    }
    revoked.push(Revoked {
        serial: info.serial.clone(),
        time: OffsetDateTime::now_utc(),
    });
    write_crl(&l, &ca.issuer, number + 1, revoked)?;
    Ok(RevokeReport {
        ecu: ecu.to_string(),
        serial: hex::encode(&info.serial),
        already: false,
        crl_number: number + 1,
    })
}

/// The facts of a certificate `list` shows.
#[derive(Clone, Debug)]
pub struct CertInfo {
    pub serial: Vec<u8>,
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
    pub dns_names: Vec<String>,
    pub key_algo: String,
}

/// Reads the first certificate of a PEM file.
pub fn read_cert_info(path: &Path) -> Result<CertInfo> {
    let pem = read_pem(path, "certificate")?;
    let der = CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| {
        usage(format!(
            "certificate {}: no PEM certificate ({e})",
            path.display()
        ))
    })?;
    cert_info(&der).map_err(|e| usage(format!("certificate {}: {e}", path.display())))
}

/// The facts of a DER certificate.
pub fn cert_info(der: &[u8]) -> std::result::Result<CertInfo, String> {
    let (_, x) =
        x509_parser::parse_x509_certificate(der).map_err(|e| format!("not a certificate ({e})"))?;
    let dns_names = x
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|san| {
            san.value
                .general_names
                .iter()
                .filter_map(|g| match g {
                    x509_parser::extensions::GeneralName::DNSName(n) => Some(n.to_string()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let oid = x.public_key().algorithm.algorithm.to_id_string();
    let key_algo = match oid.as_str() {
        "1.2.840.10045.2.1" => "ecdsa-p256".to_string(),
        "1.3.101.112" => "ed25519".to_string(),
        "1.2.840.113549.1.1.1" => match x.public_key().parsed() {
            Ok(x509_parser::public_key::PublicKey::RSA(r)) => format!("rsa-{}", r.key_size()),
            _ => "rsa".to_string(),
        },
        other => other.to_string(),
    };
    Ok(CertInfo {
        serial: strip_zeros(x.raw_serial()),
        not_before: x.validity().not_before.to_datetime(),
        not_after: x.validity().not_after.to_datetime(),
        dns_names,
        key_algo,
    })
}

/// RFC 3339 UTC, seconds.
pub fn fmt_time(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// One row of `pki list`.
#[derive(Clone, Debug, Serialize)]
pub struct Entry {
    pub ecu: String,
    pub serial: String,
    pub algo: String,
    pub not_before: String,
    pub not_after: String,
    /// `valid`, `expired`, `not_yet_valid` or `revoked`.
    pub status: &'static str,
    pub revoked_at: Option<String>,
    pub cert: PathBuf,
}

/// `pki list --json`.
#[derive(Debug, Serialize)]
pub struct Listing {
    pub dir: PathBuf,
    pub vehicle: String,
    pub ca: CaEntry,
    pub crl_number: u64,
    pub revoked_serials: Vec<String>,
    pub ecus: Vec<Entry>,
}

#[derive(Debug, Serialize)]
pub struct CaEntry {
    pub serial: String,
    pub algo: String,
    pub not_after: String,
    pub intermediate: bool,
}

/// `pki list`: every certificate under `D/ecu/` and `D/revoked/`, with its status.
pub fn list(dir: &Path) -> Result<Listing> {
    let l = Layout::new(dir);
    if !l.ca_pem().exists() {
        return Err(usage(format!(
            "{}: no CA here ({} is missing); make one with `ivnsec pki init --dir {} --vehicle VIN`",
            dir.display(),
            l.ca_pem().display(),
            dir.display()
        )));
    }
    let ca = read_cert_info(&l.ca_pem())?;
    let vin = {
        let pem = read_pem(&l.ca_pem(), "CA certificate")?;
        let der = CertificateDer::from_pem_slice(pem.as_bytes())
            .map_err(|e| usage(format!("{}: {e}", l.ca_pem().display())))?;
        x509_parser::parse_x509_certificate(&der)
            .ok()
            .and_then(|(_, x)| {
                x.subject()
                    .iter_organization()
                    .next()
                    .and_then(|o| o.as_str().ok().map(str::to_string))
            })
            .unwrap_or_default()
    };
    let (crl_number, revoked) = read_crl(&l)?;
    let revoked_at: BTreeMap<Vec<u8>, OffsetDateTime> =
        revoked.iter().map(|r| (r.serial.clone(), r.time)).collect();
    let now = OffsetDateTime::now_utc();
    let mut ecus = Vec::new();
    for (d, archived) in [(l.ecu_dir(), false), (l.revoked_dir(), true)] {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        let mut files: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pem"))
            .collect();
        files.sort();
        for p in files.into_iter().take(100_000) {
            let stem = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let info = read_cert_info(&p)?;
            let name = if archived {
                info.dns_names.first().cloned().unwrap_or(stem)
            } else {
                stem
            };
            let r = revoked_at.get(&info.serial);
            let status = if r.is_some() {
                "revoked"
            } else if now > info.not_after {
                "expired"
            } else if now < info.not_before {
                "not_yet_valid"
            } else {
                "valid"
            };
            ecus.push(Entry {
                ecu: name,
                serial: hex::encode(&info.serial),
                algo: info.key_algo,
                not_before: fmt_time(info.not_before),
                not_after: fmt_time(info.not_after),
                status,
                revoked_at: r.map(|t| fmt_time(*t)),
                cert: p,
            });
        }
    }
    Ok(Listing {
        dir: dir.to_path_buf(),
        vehicle: vin,
        ca: CaEntry {
            serial: hex::encode(&ca.serial),
            algo: ca.key_algo,
            not_after: fmt_time(ca.not_after),
            intermediate: l.root_pem().exists(),
        },
        crl_number,
        revoked_serials: revoked.iter().map(|r| hex::encode(&r.serial)).collect(),
        ecus,
    })
}

/// The serials (no leading zeros) and ECU names of every certificate under `D/ecu/` and
/// `D/revoked/` (the key server maps a revoked serial to the ECU whose segments it rolls).
pub fn serial_names(l: &Layout) -> BTreeMap<Vec<u8>, String> {
    let mut out = BTreeMap::new();
    for d in [l.ecu_dir(), l.revoked_dir()] {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten().take(100_000) {
            let p = e.path();
            if p.extension().is_none_or(|x| x != "pem") {
                continue;
            }
            if let Ok(info) = read_cert_info(&p)
                && let Some(n) = info.dns_names.first()
            {
                out.insert(info.serial, n.clone());
            }
        }
    }
    out
}

/// Mode bits of a file (tests and checks).
pub fn mode_of(path: &Path) -> Option<u32> {
    std::fs::metadata(path).ok().map(|m| m.mode() & 0o7777)
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn tmp(tag: &str) -> PathBuf {
        let mut r = [0u8; 6];
        getrandom::fill(&mut r).unwrap();
        let d = std::env::temp_dir().join(format!("ivnsec-pki-{tag}-{}", hex::encode(r)));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn names_and_vins_are_checked() {
        for ok in ["ecu1", "brake-ecu-2", "a", &"x".repeat(63)] {
            check_ecu_name(ok).unwrap();
        }
        for bad in [
            "",
            "-a",
            "a-",
            "../x",
            "a/b",
            "a.b",
            "ECU1",
            "a b",
            "é",
            &"x".repeat(64),
        ] {
            let e = check_ecu_name(bad).unwrap_err();
            assert_eq!(crate::error::exit_code(&e), 2, "{bad:?}");
        }
        check_vin("WVWZZZ1JZXW000001").unwrap();
        for bad in [
            "",
            "WVWZZZ1JZXW00000",
            "WVWZZZ1JZXW0000011",
            "WVWZZZ1JZXW00000O",
            "wvwzzz1jzxw000001",
            "../../etc/passwd",
        ] {
            assert!(check_vin(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn crl_round_trips_its_entries() {
        let d = tmp("crl");
        init(&d, "WVWZZZ1JZXW000001", false, Algo::EcdsaP256).unwrap();
        let l = Layout::new(&d);
        assert_eq!(read_crl(&l).unwrap(), (1, vec![]));
        let a = issue(&d, "ecu1", Algo::Ed25519, 10).unwrap();
        issue(&d, "ecu2", Algo::EcdsaP256, 10).unwrap();
        let r = revoke(&d, "ecu1").unwrap();
        assert_eq!(
            (r.serial.as_str(), r.already, r.crl_number),
            (a.serial.as_str(), false, 2)
        );
        let (n, e) = read_crl(&l).unwrap();
        assert_eq!(n, 2);
        assert_eq!(e.len(), 1);
        assert_eq!(hex::encode(&e[0].serial), a.serial);
        assert!(revoke(&d, "ecu1").unwrap().already);
        let listing = list(&d).unwrap();
        let st: Vec<_> = listing
            .ecus
            .iter()
            .map(|e| (e.ecu.as_str(), e.status))
            .collect();
        assert_eq!(st, [("ecu1", "revoked"), ("ecu2", "valid")]);
        // Enrolled again: the revoked certificate moves aside and stays listed as revoked.
        let b = issue(&d, "ecu1", Algo::EcdsaP256, 10).unwrap();
        assert_ne!(a.serial, b.serial);
        let listing = list(&d).unwrap();
        assert_eq!(listing.ecus.len(), 3);
        assert_eq!(serial_names(&l).len(), 3);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
