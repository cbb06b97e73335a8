//! Known-answer tests (KATs) for every primitive a provider can implement.
//!
//! Every expected value below was typed in from the published document named in its comment and
//! in the vector's name (NIST SP 800-38A/B/D, FIPS 197, the McGrew–Viega GCM specification,
//! RFC 2202, RFC 4231, RFC 4493, RFC 8439, NIST's HMAC-SHA3-256 example values) — never produced
//! with this project's code. AES-CCM is the one exception: RFC 3610 and SP 800-38C have no example
//! with a 12-byte nonce and a 16-byte tag, so its vectors come from Project Wycheproof (an
//! independent test-vector collection; see the comment on the `CCM` table).
//!
//! [`run`] runs every vector whose primitive the provider implements and returns a [`KatReport`];
//! primitives the provider does not implement (`KeyFactory::supports` is false) are counted as
//! skipped. For each AEAD vector it seals and compares ciphertext and tag, opens the published
//! ciphertext, and checks that a tampered tag (and, when there is one, a tampered ciphertext) is
//! rejected. For CBC it encrypts and decrypts; for CTR it applies the keystream both ways and on a
//! partial block; for MACs it computes over the message in one part and split in two.
//!
//! The provider test suites (`crates/ivnsec-crypto-*/tests/kat.rs`) call this per family and assert
//! that nothing failed.

use alloc::vec::Vec;
use core::fmt;

use super::{AEAD_NONCE_LEN, AEAD_TAG_LEN, BLOCK_LEN, CryptoProvider, MAX_MAC_LEN, Primitive};

mod aead;
mod cipher;
mod data;
mod mac;

use aead::{CCM, CHACHA20_POLY1305, GCM};
use cipher::{AES_BLOCK, CBC, CTR};
use data::{AeadVector, BlockVector, MacVector, ModeVector, array};
use mac::{CMAC, HMAC};

/// A group of vectors, so tests can run and report them separately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// The raw AES permutation (FIPS 197 Appendix C).
    AesBlock,
    /// AES-CBC (SP 800-38A F.2).
    AesCbc,
    /// AES-CTR (SP 800-38A F.5).
    AesCtr,
    /// AES-GCM (SP 800-38D / McGrew–Viega).
    AesGcm,
    /// AES-CCM, 12-byte nonce, 16-byte tag (Wycheproof).
    AesCcm,
    /// ChaCha20-Poly1305 (RFC 8439).
    ChaCha20Poly1305,
    /// HMAC (RFC 2202, RFC 4231, NIST HMAC-SHA3-256 examples).
    Hmac,
    /// CMAC-AES-128 (RFC 4493).
    Cmac,
}

impl Family {
    pub const ALL: [Family; 8] = [
        Family::AesBlock,
        Family::AesCbc,
        Family::AesCtr,
        Family::AesGcm,
        Family::AesCcm,
        Family::ChaCha20Poly1305,
        Family::Hmac,
        Family::Cmac,
    ];
}

/// What happened to one vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    /// The provider does not implement the primitive.
    Skipped,
    /// The vector failed; the text says which step.
    Failed(&'static str),
}

/// The result of one vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KatResult {
    /// Source document and test case.
    pub name: &'static str,
    pub family: Family,
    pub primitive: Primitive,
    pub outcome: Outcome,
}

/// The results of a KAT run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KatReport {
    pub results: Vec<KatResult>,
}

impl KatReport {
    fn count(&self, f: impl Fn(&KatResult) -> bool) -> usize {
        self.results.iter().filter(|r| f(r)).count()
    }

    pub fn passed(&self) -> usize {
        self.count(|r| r.outcome == Outcome::Passed)
    }

    pub fn skipped(&self) -> usize {
        self.count(|r| r.outcome == Outcome::Skipped)
    }

    pub fn failed(&self) -> usize {
        self.count(|r| matches!(r.outcome, Outcome::Failed(_)))
    }

    /// The first failed vector, if any.
    pub fn first_failure(&self) -> Option<&KatResult> {
        self.results
            .iter()
            .find(|r| matches!(r.outcome, Outcome::Failed(_)))
    }

    /// Vectors of a family that passed.
    pub fn passed_in(&self, family: Family) -> usize {
        self.count(|r| r.family == family && r.outcome == Outcome::Passed)
    }

    /// Vectors of a family that were skipped.
    pub fn skipped_in(&self, family: Family) -> usize {
        self.count(|r| r.family == family && r.outcome == Outcome::Skipped)
    }

    /// Vectors of a primitive that passed (e.g. to check that HMAC-SHA-256 really ran).
    pub fn passed_for(&self, primitive: Primitive) -> usize {
        self.count(|r| r.primitive == primitive && r.outcome == Outcome::Passed)
    }

    /// Vectors of a family and primitive that passed (e.g. AES-128 in CBC, not CTR).
    pub fn passed_in_for(&self, family: Family, primitive: Primitive) -> usize {
        self.count(|r| {
            r.family == family && r.primitive == primitive && r.outcome == Outcome::Passed
        })
    }
}

impl fmt::Display for KatReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} passed, {} skipped, {} failed",
            self.passed(),
            self.skipped(),
            self.failed()
        )?;
        for r in &self.results {
            if let Outcome::Failed(why) = r.outcome {
                write!(f, "\n  FAILED {}: {}", r.name, why)?;
            }
        }
        Ok(())
    }
}

/// Runs every vector of every family.
pub fn run(provider: &CryptoProvider) -> KatReport {
    let mut report = KatReport::default();
    for family in Family::ALL {
        run_into(provider, family, &mut report);
    }
    report
}

/// Runs the vectors of one family.
pub fn run_family(provider: &CryptoProvider, family: Family) -> KatReport {
    let mut report = KatReport::default();
    run_into(provider, family, &mut report);
    report
}

fn run_into(provider: &CryptoProvider, family: Family, report: &mut KatReport) {
    let mut push = |name, primitive, outcome| {
        report.results.push(KatResult {
            name,
            family,
            primitive,
            outcome,
        })
    };
    let outcome = |primitive, check: &dyn Fn() -> Result<(), &'static str>| {
        if !provider.supports(primitive) {
            Outcome::Skipped
        } else {
            match check() {
                Ok(()) => Outcome::Passed,
                Err(why) => Outcome::Failed(why),
            }
        }
    };
    match family {
        Family::AesBlock => {
            for v in AES_BLOCK {
                let p = Primitive::Cipher(v.alg);
                push(v.name, p, outcome(p, &|| check_block(provider, v)));
            }
        }
        Family::AesCbc => {
            for v in CBC {
                let p = Primitive::Cipher(v.alg);
                push(v.name, p, outcome(p, &|| check_cbc(provider, v)));
            }
        }
        Family::AesCtr => {
            for v in CTR {
                let p = Primitive::Cipher(v.alg);
                push(v.name, p, outcome(p, &|| check_ctr(provider, v)));
            }
        }
        Family::AesGcm | Family::AesCcm | Family::ChaCha20Poly1305 => {
            let table = match family {
                Family::AesGcm => GCM,
                Family::AesCcm => CCM,
                _ => CHACHA20_POLY1305,
            };
            for v in table {
                let p = Primitive::Aead(v.alg);
                push(v.name, p, outcome(p, &|| check_aead(provider, v)));
            }
        }
        Family::Hmac | Family::Cmac => {
            let table = if family == Family::Hmac { HMAC } else { CMAC };
            for v in table {
                let p = Primitive::Mac(v.alg);
                push(v.name, p, outcome(p, &|| check_mac(provider, v)));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Vector data
// ---------------------------------------------------------------------------------------------

// The tables themselves live in `kat/cipher.rs`, `kat/aead.rs` and `kat/mac.rs`, one file per
// kind of primitive.

// ---------------------------------------------------------------------------------------------
// Checks
// ---------------------------------------------------------------------------------------------

fn check_block(p: &CryptoProvider, v: &BlockVector) -> Result<(), &'static str> {
    let key = p
        .keys
        .cipher(v.alg, &v.key.bytes()?)
        .map_err(|_| "key setup failed")?;
    let mut block: [u8; BLOCK_LEN] = array(v.pt)?;
    key.encrypt_block(&mut block)
        .map_err(|_| "encrypt_block returned an error")?;
    if block != array::<BLOCK_LEN>(v.ct)? {
        return Err("encrypt_block: ciphertext differs");
    }
    Ok(())
}

fn check_cbc(p: &CryptoProvider, v: &ModeVector) -> Result<(), &'static str> {
    let key = p
        .keys
        .cipher(v.alg, &v.key.bytes()?)
        .map_err(|_| "key setup failed")?;
    let iv: [u8; BLOCK_LEN] = array(v.iv)?;
    let (pt, ct) = (v.pt.bytes()?, v.ct.bytes()?);
    let mut buf = pt.clone();
    key.cbc_encrypt(&iv, &mut buf)
        .map_err(|_| "cbc_encrypt returned an error")?;
    if buf != ct {
        return Err("cbc_encrypt: ciphertext differs");
    }
    let mut buf = ct.clone();
    key.cbc_decrypt(&iv, &mut buf)
        .map_err(|_| "cbc_decrypt returned an error")?;
    if buf != pt {
        return Err("cbc_decrypt: plaintext differs");
    }
    // The key is reusable: a second call with the same IV gives the same result (no state kept
    // between calls).
    let mut buf = pt.clone();
    key.cbc_encrypt(&iv, &mut buf)
        .map_err(|_| "cbc_encrypt returned an error")?;
    if buf != ct {
        return Err("cbc_encrypt (second call): ciphertext differs");
    }
    // A length that is not a multiple of the block is refused, not padded.
    let mut odd = [0u8; BLOCK_LEN + 1];
    if key.cbc_encrypt(&iv, &mut odd).is_ok() || key.cbc_decrypt(&iv, &mut odd).is_ok() {
        return Err("cbc accepted a length that is not a multiple of 16");
    }
    Ok(())
}

fn check_ctr(p: &CryptoProvider, v: &ModeVector) -> Result<(), &'static str> {
    let key = p
        .keys
        .cipher(v.alg, &v.key.bytes()?)
        .map_err(|_| "key setup failed")?;
    let ctr: [u8; BLOCK_LEN] = array(v.iv)?;
    let (pt, ct) = (v.pt.bytes()?, v.ct.bytes()?);
    let mut buf = pt.clone();
    key.ctr_apply(&ctr, &mut buf)
        .map_err(|_| "ctr_apply returned an error")?;
    if buf != ct {
        return Err("ctr_apply (encrypt): ciphertext differs");
    }
    let mut buf = ct.clone();
    key.ctr_apply(&ctr, &mut buf)
        .map_err(|_| "ctr_apply returned an error")?;
    if buf != pt {
        return Err("ctr_apply (decrypt): plaintext differs");
    }
    // A partial final block: the first 37 bytes encrypt to the first 37 bytes of the example.
    let n = 37.min(pt.len());
    let mut buf = pt.get(..n).unwrap_or_default().to_vec();
    key.ctr_apply(&ctr, &mut buf)
        .map_err(|_| "ctr_apply returned an error")?;
    if Some(&buf[..]) != ct.get(..n) {
        return Err("ctr_apply on a partial block: ciphertext differs");
    }
    Ok(())
}

fn check_aead(p: &CryptoProvider, v: &AeadVector) -> Result<(), &'static str> {
    let key = p
        .keys
        .aead(v.alg, &v.key.bytes()?)
        .map_err(|_| "key setup failed")?;
    let nonce: [u8; AEAD_NONCE_LEN] = array(v.nonce)?;
    let tag: [u8; AEAD_TAG_LEN] = array(v.tag)?;
    let (aad, pt, ct) = (v.aad.bytes()?, v.pt.bytes()?, v.ct.bytes()?);

    let mut buf = pt.clone();
    let mut t = [0u8; AEAD_TAG_LEN];
    key.seal_in_place(&nonce, &aad, &mut buf, &mut t)
        .map_err(|_| "seal returned an error")?;
    if buf != ct {
        return Err("seal: ciphertext differs");
    }
    if t != tag {
        return Err("seal: tag differs");
    }

    let mut buf = ct.clone();
    key.open_in_place(&nonce, &aad, &mut buf, &tag)
        .map_err(|_| "open rejected the published tag")?;
    if buf != pt {
        return Err("open: plaintext differs");
    }

    // One flipped tag bit must be rejected.
    let mut bad = tag;
    bad[AEAD_TAG_LEN - 1] ^= 0x01;
    let mut buf = ct.clone();
    if key.open_in_place(&nonce, &aad, &mut buf, &bad).is_ok() {
        return Err("open accepted a tampered tag");
    }
    // So must one flipped ciphertext bit, and one flipped AAD bit.
    if !ct.is_empty() {
        let mut buf = ct.clone();
        if let Some(b) = buf.first_mut() {
            *b ^= 0x80;
        }
        if key.open_in_place(&nonce, &aad, &mut buf, &tag).is_ok() {
            return Err("open accepted a tampered ciphertext");
        }
    }
    if !aad.is_empty() {
        let mut bad_aad = aad.clone();
        if let Some(b) = bad_aad.first_mut() {
            *b ^= 0x01;
        }
        let mut buf = ct.clone();
        if key.open_in_place(&nonce, &bad_aad, &mut buf, &tag).is_ok() {
            return Err("open accepted a tampered AAD");
        }
    }
    check_aead_batch(&*key, &nonce, &aad, &pt, &ct, &tag)
}

/// The batch calls on nine copies of a vector (one whole group of eight messages and one more,
/// for keys that work on eight at a time), one of them with a tampered tag.
fn check_aead_batch(
    key: &dyn super::AeadKey,
    nonce: &[u8; AEAD_NONCE_LEN],
    aad: &[u8],
    pt: &[u8],
    ct: &[u8],
    tag: &[u8; AEAD_TAG_LEN],
) -> Result<(), &'static str> {
    const N: usize = 9;
    const TAMPERED: usize = 4;
    let mut bufs: Vec<Vec<u8>> = (0..N).map(|_| pt.to_vec()).collect();
    let mut ops: Vec<super::AeadOp<'_>> = bufs
        .iter_mut()
        .map(|b| super::AeadOp::new(*nonce, aad, b, [0; AEAD_TAG_LEN]))
        .collect();
    key.seal_batch(&mut ops);
    for op in &ops {
        op.result.map_err(|_| "seal_batch returned an error")?;
        if op.tag != *tag {
            return Err("seal_batch: tag differs");
        }
        if &op.in_out[..] != ct {
            return Err("seal_batch: ciphertext differs");
        }
    }
    let mut bufs: Vec<Vec<u8>> = (0..N).map(|_| ct.to_vec()).collect();
    let mut ops: Vec<super::AeadOp<'_>> = bufs
        .iter_mut()
        .map(|b| super::AeadOp::new(*nonce, aad, b, *tag))
        .collect();
    if let Some(t) = ops.get_mut(TAMPERED) {
        t.tag[0] ^= 0x01;
    }
    key.open_batch(&mut ops);
    for (i, op) in ops.iter().enumerate() {
        match (i == TAMPERED, op.result) {
            (true, Ok(())) => return Err("open_batch accepted a tampered tag"),
            (true, Err(_)) => {}
            (false, Err(_)) => return Err("open_batch rejected the published tag"),
            (false, Ok(())) if &op.in_out[..] != pt => {
                return Err("open_batch: plaintext differs");
            }
            (false, Ok(())) => {}
        }
    }
    Ok(())
}

fn check_mac(p: &CryptoProvider, v: &MacVector) -> Result<(), &'static str> {
    let key = p
        .keys
        .mac(v.alg, &v.key.bytes()?)
        .map_err(|_| "key setup failed")?;
    let (msg, expected) = (v.msg.bytes()?, v.mac.bytes()?);
    let mut out = [0u8; MAX_MAC_LEN];
    let n = key.compute(&[&msg], &mut out);
    if n != v.alg.output_len() {
        return Err("compute returned the wrong output length");
    }
    let out = out
        .get(..n)
        .ok_or("compute returned a length past its buffer")?;
    if out.get(..expected.len()) != Some(&expected[..]) {
        return Err("compute: MAC differs");
    }
    // The same MAC over the message given in two parts (split in the middle), and with an empty
    // first part.
    let (a, b) = msg.split_at(msg.len() / 2);
    let mut out2 = [0u8; MAX_MAC_LEN];
    if key.compute(&[a, b], &mut out2) != n || out2.get(..n) != Some(out) {
        return Err("compute over two parts differs from one part");
    }
    let mut out3 = [0u8; MAX_MAC_LEN];
    if key.compute(&[&[], &msg], &mut out3) != n || out3.get(..n) != Some(out) {
        return Err("compute with an empty first part differs");
    }
    Ok(())
}

#[cfg(test)]
#[path = "kat_tests.rs"]
mod tests;
