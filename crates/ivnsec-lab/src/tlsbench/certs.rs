//! The benchmark's certificates: a CA, a server and a client certificate per algorithm (rcgen),
//! and on request a client certificate of another CA (the handshake-failure check). They live
//! in a private temporary directory (mode 0700, files 0600) that OpenSSL reads the same files
//! from, and that is removed when the [`CertDir`] is dropped. Private keys are also held in
//! memory as zeroizing bytes for rustls; they are never printed.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, RsaKeySize, SignatureAlgorithm,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use zeroize::Zeroizing;

use super::Algo;

/// A private temporary directory, removed (with everything in it) on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates `$TMPDIR/ivnsec-tls-bench-<16 hex>` with mode 0700.
    pub fn new() -> Result<TempDir> {
        let mut r = [0u8; 8];
        getrandom::fill(&mut r).map_err(|e| anyhow!("no randomness for a directory name: {e}"))?;
        let p = std::env::temp_dir().join(format!("ivnsec-tls-bench-{}", hex::encode(r)));
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&p)
            .with_context(|| format!("creating {}", p.display()))?;
        Ok(TempDir(p))
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `name` in the directory with mode 0600 (created new: never an existing file).
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let p = self.0.join(name);
        let mut f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&p)
            .with_context(|| format!("creating {}", p.display()))?;
        f.write_all(bytes)
            .with_context(|| format!("writing {}", p.display()))?;
        Ok(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// One certificate and its private key: in memory (DER, the key zeroizing) and as PEM files.
pub struct Identity {
    pub cert: CertificateDer<'static>,
    key_pkcs8: Zeroizing<Vec<u8>>,
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl Identity {
    /// The private key for rustls (a copy, which rustls keeps for the configuration's life).
    pub fn key(&self) -> PrivateKeyDer<'static> {
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key_pkcs8.to_vec()))
    }
}

/// The certificates of one algorithm.
pub struct CertSet {
    pub algo: Algo,
    pub ca: CertificateDer<'static>,
    pub ca_file: PathBuf,
    pub server: Identity,
    pub client: Identity,
    /// A client certificate issued by another CA (`Some` when asked for).
    pub rogue_client: Option<Identity>,
}

fn sig_alg(algo: Algo) -> &'static SignatureAlgorithm {
    match algo {
        Algo::EcdsaP256 => &rcgen::PKCS_ECDSA_P256_SHA256,
        Algo::Ed25519 => &rcgen::PKCS_ED25519,
        Algo::Rsa2048 | Algo::Rsa3072 | Algo::Rsa4096 => &rcgen::PKCS_RSA_SHA256,
    }
}

fn key_pair(algo: Algo) -> Result<KeyPair> {
    let alg = sig_alg(algo);
    let kp = match algo {
        Algo::Rsa2048 => KeyPair::generate_rsa_for(alg, RsaKeySize::_2048),
        Algo::Rsa3072 => KeyPair::generate_rsa_for(alg, RsaKeySize::_3072),
        Algo::Rsa4096 => KeyPair::generate_rsa_for(alg, RsaKeySize::_4096),
        Algo::EcdsaP256 | Algo::Ed25519 => KeyPair::generate_for(alg),
    };
    kp.with_context(|| format!("generating a {} key", algo.name()))
}

fn ca_params(name: &str) -> Result<CertificateParams> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name.push(DnType::CommonName, name);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(p)
}

fn leaf(
    dir: &TempDir,
    file_stem: &str,
    algo: Algo,
    name: &str,
    issuer: &Issuer<'_, KeyPair>,
) -> Result<Identity> {
    let key = key_pair(algo)?;
    let mut p = CertificateParams::new(vec![name.to_string()])?;
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    if matches!(algo, Algo::Rsa2048 | Algo::Rsa3072 | Algo::Rsa4096) {
        // TLS 1.2 RSA key exchange is not offered; DHE-RSA and TLS 1.3 only sign.
        p.key_usages.push(KeyUsagePurpose::KeyEncipherment);
    }
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    let cert = p
        .signed_by(&key, issuer)
        .with_context(|| format!("issuing the {file_stem} certificate"))?;
    let key_pkcs8 = Zeroizing::new(key.serialize_der());
    let key_pem = match algo {
        Algo::Ed25519 => ed25519_v1_pem(&key_pkcs8)?,
        _ => Zeroizing::new(key.serialize_pem()),
    };
    let cert_file = dir.write(&format!("{file_stem}.pem"), cert.pem().as_bytes())?;
    let key_file = dir.write(&format!("{file_stem}.key"), key_pem.as_bytes())?;
    Ok(Identity {
        cert: cert.der().clone(),
        key_pkcs8,
        cert_file,
        key_file,
    })
}

/// PKCS#8 v1 prefix of an Ed25519 private key (RFC 8410 §7): SEQUENCE, version 0, the
/// algorithm id-Ed25519, OCTET STRING { OCTET STRING (32 bytes) }.
const ED25519_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// The same Ed25519 key as PKCS#8 v1 PEM: aws-lc writes v2 (with the public key, RFC 8410
/// §7 and RFC 5958), which OpenSSL 3.0 cannot load.
fn ed25519_v1_pem(v2: &[u8]) -> Result<Zeroizing<String>> {
    // v2: 30 53 02 01 01 30 05 06 03 2b 65 70 04 22 04 20 <seed 32> a1 23 03 21 00 <public 32>
    let seed = v2
        .get(16..48)
        .filter(|_| v2.get(5..16) == Some(&ED25519_V1_PREFIX[5..]))
        .ok_or_else(|| anyhow!("unexpected Ed25519 PKCS#8 layout"))?;
    let mut v1 = Zeroizing::new(ED25519_V1_PREFIX.to_vec());
    v1.extend_from_slice(seed);
    let kp = KeyPair::try_from(v1.as_slice()).context("re-reading the Ed25519 key")?;
    Ok(Zeroizing::new(kp.serialize_pem()))
}

/// The server's name in its certificate (and what clients ask for).
pub const SERVER_NAME: &str = "server.tls-bench.ivnsec";

impl CertSet {
    /// A CA of `algo`, a server and a client certificate of `algo` signed by it, and with
    /// `rogue` a client certificate of another (ECDSA P-256) CA, written into `dir`.
    pub fn generate(dir: &TempDir, algo: Algo, rogue: bool) -> Result<CertSet> {
        let n = algo.name();
        let ca_key = key_pair(algo)?;
        let params = ca_params(&format!("ivnsec tls-bench CA {n}"))?;
        let ca = params.self_signed(&ca_key).context("self-signing the CA")?;
        let ca_file = dir.write(&format!("{n}-ca.pem"), ca.pem().as_bytes())?;
        let issuer = Issuer::new(params, ca_key);
        let server = leaf(dir, &format!("{n}-server"), algo, SERVER_NAME, &issuer)?;
        let client = leaf(
            dir,
            &format!("{n}-client"),
            algo,
            "client.tls-bench.ivnsec",
            &issuer,
        )?;
        let rogue_client = if rogue {
            let key = key_pair(Algo::EcdsaP256)?;
            let params = ca_params("another CA (tls-bench failure check)")?;
            let issuer = Issuer::new(params, key);
            Some(leaf(
                dir,
                &format!("{n}-rogue-client"),
                Algo::EcdsaP256,
                "client.tls-bench.ivnsec",
                &issuer,
            )?)
        } else {
            None
        };
        Ok(CertSet {
            algo,
            ca: ca.der().clone(),
            ca_file,
            server,
            client,
            rogue_client,
        })
    }

    /// The client identity the benchmark's clients present.
    pub fn client_identity(&self) -> &Identity {
        self.rogue_client.as_ref().unwrap_or(&self.client)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn files_are_private_and_removed() {
        let dir = TempDir::new().unwrap();
        let root = dir.path().to_path_buf();
        let set = CertSet::generate(&dir, Algo::EcdsaP256, true).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&root), 0o700);
        for p in [&set.server.key_file, &set.client.key_file, &set.ca_file] {
            assert_eq!(mode(p), 0o600, "{}", p.display());
        }
        let pem = fs::read_to_string(&set.server.key_file).unwrap();
        assert!(pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{pem}");
        assert!(set.rogue_client.is_some());
        drop(dir);
        assert!(!root.exists());
    }

    /// The v1 form written for OpenSSL is the same key (same public key), and RFC 8410 §10.3's
    /// example private key (v1) has §10.1's public key.
    #[test]
    fn ed25519_v1_is_the_same_key() {
        let kp = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let v1 = ed25519_v1_pem(&kp.serialize_der()).unwrap();
        assert!(v1.starts_with("-----BEGIN PRIVATE KEY-----"));
        let back = KeyPair::from_pem(&v1).unwrap();
        assert_eq!(back.public_key_raw(), kp.public_key_raw());
        assert_eq!(back.serialize_der().len(), 48);
        let rfc = KeyPair::from_pem(
            "-----BEGIN PRIVATE KEY-----\n\
MC4CAQAwBQYDK2VwBCIEINTuctv5E1hK1bbY8fdp+K06/nwoy/HU++CXqI9EdVhC\n\
-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        assert_eq!(rfc.serialize_der()[..16], ED25519_V1_PREFIX);
        // RFC 8410 §10.1: MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=
        assert_eq!(
            hex::encode(rfc.public_key_raw()),
            "19bf44096984cdfe8541bac167dc3b96c85086aa30b6b6cb0c5c38ad703166e1"
        );
        assert!(ed25519_v1_pem(b"not a key").is_err());
    }
}
