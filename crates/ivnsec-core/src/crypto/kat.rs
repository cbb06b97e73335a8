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

use super::{
    AEAD_NONCE_LEN, AEAD_TAG_LEN, AeadAlg, BLOCK_LEN, CipherAlg, CryptoProvider, MAX_MAC_LEN,
    MacAlg, Primitive,
};

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

/// Bytes of a vector, written the way the source document writes them.
#[derive(Clone, Copy, Debug)]
enum Data {
    /// Hex digits; whitespace is ignored.
    Hex(&'static str),
    /// ASCII text (the RFCs give some messages as strings).
    Text(&'static str),
    /// `n` copies of a byte (e.g. RFC 2202's `0xaa` repeated 80 times).
    Rep(u8, usize),
    /// `n` bytes counting up from a start value (e.g. `0x01 0x02 ... 0x19`).
    Count(u8, usize),
}

impl Data {
    fn bytes(self) -> Result<Vec<u8>, &'static str> {
        match self {
            Data::Hex(s) => hex(s),
            Data::Text(s) => Ok(s.as_bytes().to_vec()),
            Data::Rep(b, n) => Ok(alloc::vec![b; n]),
            Data::Count(start, n) => Ok((0..n).map(|i| start.wrapping_add(i as u8)).collect()),
        }
    }
}

/// A small hex decoder: pairs of hex digits, whitespace ignored.
fn hex(s: &str) -> Result<Vec<u8>, &'static str> {
    fn nibble(c: u8) -> Result<u8, &'static str> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => Err("vector table: bad hex digit"),
        }
    }
    let digits: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return Err("vector table: odd number of hex digits");
    }
    digits
        .chunks_exact(2)
        .map(|p| match p {
            [hi, lo] => Ok(nibble(*hi)? << 4 | nibble(*lo)?),
            _ => Err("vector table: odd number of hex digits"),
        })
        .collect()
}

fn array<const N: usize>(d: Data) -> Result<[u8; N], &'static str> {
    d.bytes()?
        .try_into()
        .map_err(|_| "vector table: field has the wrong length")
}

struct BlockVector {
    name: &'static str,
    alg: CipherAlg,
    key: Data,
    pt: Data,
    ct: Data,
}

struct ModeVector {
    name: &'static str,
    alg: CipherAlg,
    key: Data,
    /// CBC: the IV. CTR: the initial counter block.
    iv: Data,
    pt: Data,
    ct: Data,
}

struct AeadVector {
    name: &'static str,
    alg: AeadAlg,
    key: Data,
    nonce: Data,
    aad: Data,
    pt: Data,
    ct: Data,
    tag: Data,
}

struct MacVector {
    name: &'static str,
    alg: MacAlg,
    key: Data,
    msg: Data,
    /// The expected MAC; when shorter than the full output (a truncated test case), it is
    /// compared with the leftmost bytes.
    mac: Data,
}

/// The plaintext of every SP 800-38A Appendix F example (four blocks).
const SP800_38A_PT: Data = Data::Hex(
    "6bc1bee22e409f96e93d7e117393172a\
     ae2d8a571e03ac9c9eb76fac45af8e51\
     30c81c46a35ce411e5fbc1191a0a52ef\
     f69f2445df4f9b17ad2b417be66c3710",
);

// FIPS 197 Appendix C (C.1, C.2, C.3): PLAINTEXT 00112233445566778899aabbccddeeff, key
// 000102... of the key size.
static AES_BLOCK: &[BlockVector] = &[
    BlockVector {
        name: "FIPS 197 Appendix C.1 AES-128",
        alg: CipherAlg::Aes128,
        key: Data::Count(0, 16),
        pt: Data::Hex("00112233445566778899aabbccddeeff"),
        ct: Data::Hex("69c4e0d86a7b0430d8cdb78070b4c55a"),
    },
    BlockVector {
        name: "FIPS 197 Appendix C.2 AES-192",
        alg: CipherAlg::Aes192,
        key: Data::Count(0, 24),
        pt: Data::Hex("00112233445566778899aabbccddeeff"),
        ct: Data::Hex("dda97ca4864cdfe06eaf70a0ec0d7191"),
    },
    BlockVector {
        name: "FIPS 197 Appendix C.3 AES-256",
        alg: CipherAlg::Aes256,
        key: Data::Count(0, 32),
        pt: Data::Hex("00112233445566778899aabbccddeeff"),
        ct: Data::Hex("8ea2b7ca516745bfeafc49904b496089"),
    },
];

// NIST SP 800-38A Appendix F.2: CBC-AES128/192/256.Encrypt (F.2.1, F.2.3, F.2.5); the Decrypt
// examples (F.2.2, F.2.4, F.2.6) are the same vectors read backwards.
static CBC: &[ModeVector] = &[
    // SP 800-38A F.2.1 CBC-AES128.Encrypt
    ModeVector {
        name: "SP 800-38A F.2.1/F.2.2 CBC-AES128",
        alg: CipherAlg::Aes128,
        key: Data::Hex("2b7e151628aed2a6abf7158809cf4f3c"),
        iv: Data::Hex("000102030405060708090a0b0c0d0e0f"),
        pt: SP800_38A_PT,
        ct: Data::Hex(
            "7649abac8119b246cee98e9b12e9197d\
             5086cb9b507219ee95db113a917678b2\
             73bed6b8e3c1743b7116e69e22229516\
             3ff1caa1681fac09120eca307586e1a7",
        ),
    },
    // SP 800-38A F.2.3 CBC-AES192.Encrypt
    ModeVector {
        name: "SP 800-38A F.2.3/F.2.4 CBC-AES192",
        alg: CipherAlg::Aes192,
        key: Data::Hex("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b"),
        iv: Data::Hex("000102030405060708090a0b0c0d0e0f"),
        pt: SP800_38A_PT,
        ct: Data::Hex(
            "4f021db243bc633d7178183a9fa071e8\
             b4d9ada9ad7dedf4e5e738763f69145a\
             571b242012fb7ae07fa9baac3df102e0\
             08b0e27988598881d920a9e64f5615cd",
        ),
    },
    // SP 800-38A F.2.5 CBC-AES256.Encrypt
    ModeVector {
        name: "SP 800-38A F.2.5/F.2.6 CBC-AES256",
        alg: CipherAlg::Aes256,
        key: Data::Hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"),
        iv: Data::Hex("000102030405060708090a0b0c0d0e0f"),
        pt: SP800_38A_PT,
        ct: Data::Hex(
            "f58c4c04d6e5f1ba779eabfb5f7bfbd6\
             9cfc4e967edb808d679f777bc6702c7d\
             39f23369a9d9bacfa530e26304231461\
             b2eb05e2c39be9fcda6c19078c6a9d1b",
        ),
    },
];

// NIST SP 800-38A Appendix F.5: CTR-AES128/192/256.Encrypt (F.5.1, F.5.3, F.5.5); initial
// counter block f0f1...feff, incremented as a whole 128-bit big-endian integer.
static CTR: &[ModeVector] = &[
    // SP 800-38A F.5.1 CTR-AES128.Encrypt
    ModeVector {
        name: "SP 800-38A F.5.1/F.5.2 CTR-AES128",
        alg: CipherAlg::Aes128,
        key: Data::Hex("2b7e151628aed2a6abf7158809cf4f3c"),
        iv: Data::Hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"),
        pt: SP800_38A_PT,
        ct: Data::Hex(
            "874d6191b620e3261bef6864990db6ce\
             9806f66b7970fdff8617187bb9fffdff\
             5ae4df3edbd5d35e5b4f09020db03eab\
             1e031dda2fbe03d1792170a0f3009cee",
        ),
    },
    // SP 800-38A F.5.3 CTR-AES192.Encrypt
    ModeVector {
        name: "SP 800-38A F.5.3/F.5.4 CTR-AES192",
        alg: CipherAlg::Aes192,
        key: Data::Hex("8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b"),
        iv: Data::Hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"),
        pt: SP800_38A_PT,
        ct: Data::Hex(
            "1abc932417521ca24f2b0459fe7e6e0b\
             090339ec0aa6faefd5ccc2c6f4ce8e94\
             1e36b26bd1ebc670d1bd1d665620abf7\
             4f78a7f6d29809585a97daec58c6b050",
        ),
    },
    // SP 800-38A F.5.5 CTR-AES256.Encrypt
    ModeVector {
        name: "SP 800-38A F.5.5/F.5.6 CTR-AES256",
        alg: CipherAlg::Aes256,
        key: Data::Hex("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4"),
        iv: Data::Hex("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"),
        pt: SP800_38A_PT,
        ct: Data::Hex(
            "601ec313775789a5b7a7f504bbf3d228\
             f443e3ca4d62b59aca84e990cacaf5c5\
             2b0930daa23de94ce87017ba2d84988d\
             dfc9c58db67aada613c2dd08457941a6",
        ),
    },
];

/// Plaintext of GCM test cases 3, 4, 15, 16 (cases 4 and 16 use its first 60 bytes).
const GCM_P64: Data = Data::Hex(
    "d9313225f88406e5a55909c5aff5269a\
     86a7a9531534f7da2e4c303d8a318a72\
     1c3c0c95956809532fcf0e2449a6b525\
     b16aedf5aa0de657ba637b391aafd255",
);
const GCM_P60: Data = Data::Hex(
    "d9313225f88406e5a55909c5aff5269a\
     86a7a9531534f7da2e4c303d8a318a72\
     1c3c0c95956809532fcf0e2449a6b525\
     b16aedf5aa0de657ba637b39",
);
/// AAD of GCM test cases 4 and 16 (20 bytes).
const GCM_A20: Data = Data::Hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");

// McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", Appendix B test cases (the AES-GCM
// examples NIST links from SP 800-38D). Cases 5, 6, 11, 12, 17, 18 use 8- or 60-byte IVs and do not
// apply to a 12-byte nonce.
static GCM: &[AeadVector] = &[
    // GCM spec test case 1: AES-128, zero key, empty P and A.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 1 AES-128",
        alg: AeadAlg::Aes128Gcm,
        key: Data::Rep(0, 16),
        nonce: Data::Rep(0, 12),
        aad: Data::Hex(""),
        pt: Data::Hex(""),
        ct: Data::Hex(""),
        tag: Data::Hex("58e2fccefa7e3061367f1d57a4e7455a"),
    },
    // GCM spec test case 2: AES-128, zero key, one zero block.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 2 AES-128",
        alg: AeadAlg::Aes128Gcm,
        key: Data::Rep(0, 16),
        nonce: Data::Rep(0, 12),
        aad: Data::Hex(""),
        pt: Data::Rep(0, 16),
        ct: Data::Hex("0388dace60b6a392f328c2b971b2fe78"),
        tag: Data::Hex("ab6e47d42cec13bdf53a67b21257bddf"),
    },
    // GCM spec test case 3: AES-128, 64-byte P, no A.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 3 AES-128",
        alg: AeadAlg::Aes128Gcm,
        key: Data::Hex("feffe9928665731c6d6a8f9467308308"),
        nonce: Data::Hex("cafebabefacedbaddecaf888"),
        aad: Data::Hex(""),
        pt: GCM_P64,
        ct: Data::Hex(
            "42831ec2217774244b7221b784d0d49c\
             e3aa212f2c02a4e035c17e2329aca12e\
             21d514b25466931c7d8f6a5aac84aa05\
             1ba30b396a0aac973d58e091473f5985",
        ),
        tag: Data::Hex("4d5c2af327cd64a62cf35abd2ba6fab4"),
    },
    // GCM spec test case 4: AES-128, 60-byte P, 20-byte A.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 4 AES-128",
        alg: AeadAlg::Aes128Gcm,
        key: Data::Hex("feffe9928665731c6d6a8f9467308308"),
        nonce: Data::Hex("cafebabefacedbaddecaf888"),
        aad: GCM_A20,
        pt: GCM_P60,
        ct: Data::Hex(
            "42831ec2217774244b7221b784d0d49c\
             e3aa212f2c02a4e035c17e2329aca12e\
             21d514b25466931c7d8f6a5aac84aa05\
             1ba30b396a0aac973d58e091",
        ),
        tag: Data::Hex("5bc94fbc3221a5db94fae95ae7121a47"),
    },
    // GCM spec test case 13: AES-256, zero key, empty P and A.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 13 AES-256",
        alg: AeadAlg::Aes256Gcm,
        key: Data::Rep(0, 32),
        nonce: Data::Rep(0, 12),
        aad: Data::Hex(""),
        pt: Data::Hex(""),
        ct: Data::Hex(""),
        tag: Data::Hex("530f8afbc74536b9a963b4f1c4cb738b"),
    },
    // GCM spec test case 14: AES-256, zero key, one zero block.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 14 AES-256",
        alg: AeadAlg::Aes256Gcm,
        key: Data::Rep(0, 32),
        nonce: Data::Rep(0, 12),
        aad: Data::Hex(""),
        pt: Data::Rep(0, 16),
        ct: Data::Hex("cea7403d4d606b6e074ec5d3baf39d18"),
        tag: Data::Hex("d0d1c8a799996bf0265b98b5d48ab919"),
    },
    // GCM spec test case 15: AES-256, 64-byte P, no A.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 15 AES-256",
        alg: AeadAlg::Aes256Gcm,
        key: Data::Hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"),
        nonce: Data::Hex("cafebabefacedbaddecaf888"),
        aad: Data::Hex(""),
        pt: GCM_P64,
        ct: Data::Hex(
            "522dc1f099567d07f47f37a32a84427d\
             643a8cdcbfe5c0c97598a2bd2555d1aa\
             8cb08e48590dbb3da7b08b1056828838\
             c5f61e6393ba7a0abcc9f662898015ad",
        ),
        tag: Data::Hex("b094dac5d93471bdec1a502270e3cc6c"),
    },
    // GCM spec test case 16: AES-256, 60-byte P, 20-byte A.
    AeadVector {
        name: "GCM spec (SP 800-38D) test case 16 AES-256",
        alg: AeadAlg::Aes256Gcm,
        key: Data::Hex("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"),
        nonce: Data::Hex("cafebabefacedbaddecaf888"),
        aad: GCM_A20,
        pt: GCM_P60,
        ct: Data::Hex(
            "522dc1f099567d07f47f37a32a84427d\
             643a8cdcbfe5c0c97598a2bd2555d1aa\
             8cb08e48590dbb3da7b08b1056828838\
             c5f61e6393ba7a0abcc9f662",
        ),
        tag: Data::Hex("76fc6ece0f4e1768cddf8853bb2d551b"),
    },
];

// AES-CCM with a 12-byte nonce and a 16-byte tag. RFC 3610 (13-byte nonces, 8/10-byte tags) and
// SP 800-38C Appendix C (7..13-byte nonces, 4..14-byte tags) have no example with these sizes, so
// these come from Project Wycheproof, testvectors/aes_ccm_test.json (C2SP/wycheproof; test
// groups "ivSize": 96, "tagSize": 128, "keySize": 128 and 256; source google-wycheproof 0.8r12),
// copied by tcId. They were additionally cross-checked against Python `cryptography` 48
// (AESCCM(key, tag_length=16).encrypt(nonce, msg, aad)), an implementation independent of ours.
static CCM: &[AeadVector] = &[
    // Wycheproof aes_ccm_test.json tcId 1: empty message, no AAD.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 1 AES-128",
        alg: AeadAlg::Aes128Ccm,
        key: Data::Hex("bedcfb5a011ebc84600fcb296c15af0d"),
        nonce: Data::Hex("438a547a94ea88dce46c6c85"),
        aad: Data::Hex(""),
        pt: Data::Hex(""),
        ct: Data::Hex(""),
        tag: Data::Hex("25d1a38495a7dea45bda049705627d10"),
    },
    // Wycheproof aes_ccm_test.json tcId 4: one block, no AAD.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 4 AES-128",
        alg: AeadAlg::Aes128Ccm,
        key: Data::Hex("ffdf4228361ea1f8165852136b3480f7"),
        nonce: Data::Hex("0e1666f2dc652f7708fb8f0d"),
        aad: Data::Hex(""),
        pt: Data::Hex("25b12e28ac0ef6ead0226a3b2288c800"),
        ct: Data::Hex("aaf596fa5b00aaac27700146aec932a9"),
        tag: Data::Hex("848b6735d32c96e4a0532bcdfaf33582"),
    },
    // Wycheproof aes_ccm_test.json tcId 9: 65-byte message, no AAD.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 9 AES-128",
        alg: AeadAlg::Aes128Ccm,
        key: Data::Hex("42e38abef2dd7573248c5aefb3ecca54"),
        nonce: Data::Hex("064b3cfbe04d94d4d5c19b30"),
        aad: Data::Hex(""),
        pt: Data::Hex(
            "2c763b9ec84903bcbb8aec15e678a3a955e4870edbf62d9d3c81c4f9ed615487\
             7875779ca33cce8f73a55ca7af1d8d817fc6baac00ef962c5a0da339ce81427a3d59",
        ),
        ct: Data::Hex(
            "4ca01b5b2a5e57bcc1a4b7f63f049dc477e3ee2e5c268efb346ff95b7dcd67f8\
             6ed0f11bb17c1dd7fb511d2f37b9684550c0d84be0f10030ccc4e0de5b74ef92ea54",
        ),
        tag: Data::Hex("c5a57dd6fa16aa9de8de20e6bd321396"),
    },
    // Wycheproof aes_ccm_test.json tcId 26: 16-byte AAD, one block.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 26 AES-128",
        alg: AeadAlg::Aes128Ccm,
        key: Data::Hex("5f0a1b5f8f8673d566ec7f54e7dca4f2"),
        nonce: Data::Hex("c30968c967e53505621628db"),
        aad: Data::Hex("c07092d799dac2b4c05fbddd04743c34"),
        pt: Data::Hex("f6538476daf04524cf134309dd84e187"),
        ct: Data::Hex("2315110f7ec64e7a23e5a762822f71ab"),
        tag: Data::Hex("dc7b12fa2dbfbdc6d85faa77a2eb767e"),
    },
    // Wycheproof aes_ccm_test.json tcId 30: 65-byte AAD, one block.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 30 AES-128",
        alg: AeadAlg::Aes128Ccm,
        key: Data::Hex("5bf008f6f27cc21f5ae82fb7907b1d92"),
        nonce: Data::Hex("580af48bc1108604d5551343"),
        aad: Data::Hex(
            "482da24bb4fb9eaa0dbf403733597f5b3ee8338b5d09a1d6f9070bb069264abb\
             cacc5657aa6353f179d1bb4c7fa00526789eaf08e0da258cbdb39e9877c68b4a75",
        ),
        pt: Data::Hex("ca89d6ae284afb6792cd894e07aa8336"),
        ct: Data::Hex("1b89c6bcddefbe9233ee4093468a5f61"),
        tag: Data::Hex("a49c7747dad42df6d729a01f4c50cf34"),
    },
    // Wycheproof aes_ccm_test.json tcId 131: empty message, no AAD.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 131 AES-256",
        alg: AeadAlg::Aes256Ccm,
        key: Data::Hex("80ba3192c803ce965ea371d5ff073cf0f43b6a2ab576b208426e11409c09b9b0"),
        nonce: Data::Hex("4da5bf8dfd5852c1ea12379d"),
        aad: Data::Hex(""),
        pt: Data::Hex(""),
        ct: Data::Hex(""),
        tag: Data::Hex("6dc4ef59a73ebcabb5e34c0d34d9f2d7"),
    },
    // Wycheproof aes_ccm_test.json tcId 134: one block, no AAD.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 134 AES-256",
        alg: AeadAlg::Aes256Ccm,
        key: Data::Hex("59d4eafb4de0cfc7d3db99a8f54b15d7b39f0acc8da69763b019c1699f87674a"),
        nonce: Data::Hex("2fcb1b38a99e71b84740ad9b"),
        aad: Data::Hex(""),
        pt: Data::Hex("549b365af913f3b081131ccb6b825588"),
        ct: Data::Hex("48dd9589a47e638bbbc2aa3e232fa529"),
        tag: Data::Hex("df69fbe1f099f0134fe2869156ab07db"),
    },
    // Wycheproof aes_ccm_test.json tcId 139: 65-byte message, no AAD.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 139 AES-256",
        alg: AeadAlg::Aes256Ccm,
        key: Data::Hex("95e87eda64d0dc2d4e851030c3e1b27cca2265b3464c2c572bd8fc8cfb282d1b"),
        nonce: Data::Hex("ce03bbb56778f25d4528350b"),
        aad: Data::Hex(""),
        pt: Data::Hex(
            "2e5acc19acb9940bb74d414b45e71386a409b641490b139493d7d632cbf1674f\
             df2511c3fad6c27359e6137b4cd52efc4bf871e6623451517d6a3c68240f2a79916a",
        ),
        ct: Data::Hex(
            "2fa0bd2cdfe9e8d7919b97ba05d59e3389fdcba728ec124d0f2849484f635a00\
             0e734c8c80941b3da32d23eea51edce8d6617b16ebb43ac8113a092e9ddaa3721ae9",
        ),
        tag: Data::Hex("a9252a50ddbbf18cd3e43adc0ba1a481"),
    },
    // Wycheproof aes_ccm_test.json tcId 141: 8-byte AAD, one block.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 141 AES-256",
        alg: AeadAlg::Aes256Ccm,
        key: Data::Hex("b907a45075513fe8a8019edee3f2591487b2a030b03c6e1d771c862571d2ea1e"),
        nonce: Data::Hex("118a6964c2d3e380071f5266"),
        aad: Data::Hex("034585621af8d7ff"),
        pt: Data::Hex("55a465644f5b650928cbee7c063214d6"),
        ct: Data::Hex("ab01f92db4f210bdb5edaf0a1bd19eba"),
        tag: Data::Hex("621630c505d24e3b29294977d8ffa4b4"),
    },
    // Wycheproof aes_ccm_test.json tcId 142: 8-byte AAD, 17-byte message.
    AeadVector {
        name: "Wycheproof aes_ccm_test tcId 142 AES-256",
        alg: AeadAlg::Aes256Ccm,
        key: Data::Hex("f60c6a1b625725f76c7037b48fe3577fa7f7b87b1bd5a982176d182306ffb870"),
        nonce: Data::Hex("f0384fb876121410633d993d"),
        aad: Data::Hex("9aaf299eeea78f79"),
        pt: Data::Hex("63858ca3e2ce69887b578a3c167b421c9c"),
        ct: Data::Hex("f05e290bbbc61927fa65760648dcca88b0"),
        tag: Data::Hex("b721be96a6b95c0931fb243dd1287c70"),
    },
];

// RFC 8439 §2.8.2 (AEAD example) and Appendix A.5 (AEAD decryption example).
static CHACHA20_POLY1305: &[AeadVector] = &[
    // RFC 8439 §2.8.2 "Example and Test Vector for AEAD_CHACHA20_POLY1305".
    AeadVector {
        name: "RFC 8439 2.8.2 AEAD_CHACHA20_POLY1305",
        alg: AeadAlg::ChaCha20Poly1305,
        key: Data::Count(0x80, 32),
        nonce: Data::Hex("070000004041424344454647"),
        aad: Data::Hex("50515253c0c1c2c3c4c5c6c7"),
        pt: Data::Text(
            "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for \
             the future, sunscreen would be it.",
        ),
        ct: Data::Hex(
            "d31a8d34648e60db7b86afbc53ef7ec2\
             a4aded51296e08fea9e2b5a736ee62d6\
             3dbea45e8ca9671282fafb69da92728b\
             1a71de0a9e060b2905d6a5b67ecd3b36\
             92ddbd7f2d778b8c9803aee328091b58\
             fab324e4fad675945585808b4831d7bc\
             3ff4def08e4b7a9de576d26586cec64b\
             6116",
        ),
        tag: Data::Hex("1ae10b594f09e26a7e902ecbd0600691"),
    },
    // RFC 8439 Appendix A.5 "ChaCha20-Poly1305 AEAD Decryption".
    AeadVector {
        name: "RFC 8439 A.5 AEAD_CHACHA20_POLY1305 decryption",
        alg: AeadAlg::ChaCha20Poly1305,
        key: Data::Hex("1c9240a5eb55d38af333888604f6b5f0473917c1402b80099dca5cbc207075c0"),
        nonce: Data::Hex("000000000102030405060708"),
        aad: Data::Hex("f33388860000000000004e91"),
        pt: Data::Hex(
            "496e7465726e65742d44726166747320\
             61726520647261667420646f63756d65\
             6e74732076616c696420666f72206120\
             6d6178696d756d206f6620736978206d\
             6f6e74687320616e64206d6179206265\
             20757064617465642c207265706c6163\
             65642c206f72206f62736f6c65746564\
             206279206f7468657220646f63756d65\
             6e747320617420616e792074696d652e\
             20497420697320696e617070726f7072\
             6961746520746f2075736520496e7465\
             726e65742d4472616674732061732072\
             65666572656e6365206d617465726961\
             6c206f7220746f206369746520746865\
             6d206f74686572207468616e20617320\
             2fe2809c776f726b20696e2070726f67\
             726573732e2fe2809d",
        ),
        ct: Data::Hex(
            "64a0861575861af460f062c79be643bd\
             5e805cfd345cf389f108670ac76c8cb2\
             4c6cfc18755d43eea09ee94e382d26b0\
             bdb7b73c321b0100d4f03b7f355894cf\
             332f830e710b97ce98c8a84abd0b9481\
             14ad176e008d33bd60f982b1ff37c855\
             9797a06ef4f0ef61c186324e2b350638\
             3606907b6a7c02b0f9f6157b53c867e4\
             b9166c767b804d46a59b5216cde7a4e9\
             9040c5a40433225ee282a1b0a06c523e\
             af4534d7f83fa1155b0047718cbc546a\
             0d072b04b3564eea1b422273f548271a\
             0bb2316053fa76991955ebd63159434e\
             cebb4e466dae5a1073a6727627097a10\
             49e617d91d361094fa68f0ff77987130\
             305beaba2eda04df997b714d6c6f2c29\
             a6ad5cb4022b02709b",
        ),
        tag: Data::Hex("eead9d67890cbb22392336fea1851f38"),
    },
];

const RFC2202_HASH_KEY_FIRST: Data =
    Data::Text("Test Using Larger Than Block-Size Key - Hash Key First");
const RFC2202_LARGER_DATA: Data =
    Data::Text("Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data");
const RFC4231_TC7_DATA: Data = Data::Text(
    "This is a test using a larger than block-size key and a larger than block-size data. The key \
     needs to be hashed before being used by the HMAC algorithm.",
);

macro_rules! mac {
    ($name:literal, $alg:ident, $key:expr, $msg:expr, $mac:literal) => {
        MacVector {
            name: $name,
            alg: MacAlg::$alg,
            key: $key,
            msg: $msg,
            mac: Data::Hex($mac),
        }
    };
}

static HMAC: &[MacVector] = &[
    // RFC 2202 §2 "Test Cases for HMAC-MD5", test cases 1-7 (case 5 also as digest-96).
    mac!(
        "RFC 2202 HMAC-MD5 test case 1",
        HmacMd5,
        Data::Rep(0x0b, 16),
        Data::Text("Hi There"),
        "9294727a3638bb1c13f48ef8158bfc9d"
    ),
    mac!(
        "RFC 2202 HMAC-MD5 test case 2",
        HmacMd5,
        Data::Text("Jefe"),
        Data::Text("what do ya want for nothing?"),
        "750c783e6ab0b503eaa86e310a5db738"
    ),
    mac!(
        "RFC 2202 HMAC-MD5 test case 3",
        HmacMd5,
        Data::Rep(0xaa, 16),
        Data::Rep(0xdd, 50),
        "56be34521d144c88dbb8c733f0e8b3f6"
    ),
    mac!(
        "RFC 2202 HMAC-MD5 test case 4",
        HmacMd5,
        Data::Count(0x01, 25),
        Data::Rep(0xcd, 50),
        "697eaf0aca3a3aea3a75164746ffaa79"
    ),
    mac!(
        "RFC 2202 HMAC-MD5 test case 5",
        HmacMd5,
        Data::Rep(0x0c, 16),
        Data::Text("Test With Truncation"),
        "56461ef2342edc00f9bab995690efd4c"
    ),
    mac!(
        "RFC 2202 HMAC-MD5 test case 5 (digest-96)",
        HmacMd5,
        Data::Rep(0x0c, 16),
        Data::Text("Test With Truncation"),
        "56461ef2342edc00f9bab995"
    ),
    mac!(
        "RFC 2202 HMAC-MD5 test case 6",
        HmacMd5,
        Data::Rep(0xaa, 80),
        RFC2202_HASH_KEY_FIRST,
        "6b1ab7fe4bd7bf8f0b62e6ce61b9d0cd"
    ),
    mac!(
        "RFC 2202 HMAC-MD5 test case 7",
        HmacMd5,
        Data::Rep(0xaa, 80),
        RFC2202_LARGER_DATA,
        "6f630fad67cda0ee1fb1f562db3aa53e"
    ),
    // RFC 2202 §3 "Test Cases for HMAC-SHA-1", test cases 1-7 (case 5 also as digest-96).
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 1",
        HmacSha1,
        Data::Rep(0x0b, 20),
        Data::Text("Hi There"),
        "b617318655057264e28bc0b6fb378c8ef146be00"
    ),
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 2",
        HmacSha1,
        Data::Text("Jefe"),
        Data::Text("what do ya want for nothing?"),
        "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"
    ),
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 3",
        HmacSha1,
        Data::Rep(0xaa, 20),
        Data::Rep(0xdd, 50),
        "125d7342b9ac11cd91a39af48aa17b4f63f175d3"
    ),
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 4",
        HmacSha1,
        Data::Count(0x01, 25),
        Data::Rep(0xcd, 50),
        "4c9007f4026250c6bc8414f9bf50c86c2d7235da"
    ),
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 5",
        HmacSha1,
        Data::Rep(0x0c, 20),
        Data::Text("Test With Truncation"),
        "4c1a03424b55e07fe7f27be1d58bb9324a9a5a04"
    ),
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 5 (digest-96)",
        HmacSha1,
        Data::Rep(0x0c, 20),
        Data::Text("Test With Truncation"),
        "4c1a03424b55e07fe7f27be1"
    ),
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 6",
        HmacSha1,
        Data::Rep(0xaa, 80),
        RFC2202_HASH_KEY_FIRST,
        "aa4ae5e15272d00e95705637ce8a3b55ed402112"
    ),
    mac!(
        "RFC 2202 HMAC-SHA-1 test case 7",
        HmacSha1,
        Data::Rep(0xaa, 80),
        RFC2202_LARGER_DATA,
        "e8e99d0f45237d786d6bbaa7965c7808bbff1a91"
    ),
    // RFC 4231 §4.2 test case 1.
    mac!(
        "RFC 4231 4.2 test case 1 HMAC-SHA-224",
        HmacSha224,
        Data::Rep(0x0b, 20),
        Data::Text("Hi There"),
        "896fb1128abbdf196832107cd49df33f47b4b1169912ba4f53684b22"
    ),
    mac!(
        "RFC 4231 4.2 test case 1 HMAC-SHA-256",
        HmacSha256,
        Data::Rep(0x0b, 20),
        Data::Text("Hi There"),
        "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
    ),
    mac!(
        "RFC 4231 4.2 test case 1 HMAC-SHA-384",
        HmacSha384,
        Data::Rep(0x0b, 20),
        Data::Text("Hi There"),
        "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c\
         faea9ea9076ede7f4af152e8b2fa9cb6"
    ),
    mac!(
        "RFC 4231 4.2 test case 1 HMAC-SHA-512",
        HmacSha512,
        Data::Rep(0x0b, 20),
        Data::Text("Hi There"),
        "87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde\
         daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"
    ),
    // RFC 4231 §4.3 test case 2 (a key shorter than the output).
    mac!(
        "RFC 4231 4.3 test case 2 HMAC-SHA-224",
        HmacSha224,
        Data::Text("Jefe"),
        Data::Text("what do ya want for nothing?"),
        "a30e01098bc6dbbf45690f3a7e9e6d0f8bbea2a39e6148008fd05e44"
    ),
    mac!(
        "RFC 4231 4.3 test case 2 HMAC-SHA-256",
        HmacSha256,
        Data::Text("Jefe"),
        Data::Text("what do ya want for nothing?"),
        "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    ),
    mac!(
        "RFC 4231 4.3 test case 2 HMAC-SHA-384",
        HmacSha384,
        Data::Text("Jefe"),
        Data::Text("what do ya want for nothing?"),
        "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e\
         8e2240ca5e69e2c78b3239ecfab21649"
    ),
    mac!(
        "RFC 4231 4.3 test case 2 HMAC-SHA-512",
        HmacSha512,
        Data::Text("Jefe"),
        Data::Text("what do ya want for nothing?"),
        "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554\
         9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"
    ),
    // RFC 4231 §4.4 test case 3 (50 bytes of 0xdd).
    mac!(
        "RFC 4231 4.4 test case 3 HMAC-SHA-224",
        HmacSha224,
        Data::Rep(0xaa, 20),
        Data::Rep(0xdd, 50),
        "7fb3cb3588c6c1f6ffa9694d7d6ad2649365b0c1f65d69d1ec8333ea"
    ),
    mac!(
        "RFC 4231 4.4 test case 3 HMAC-SHA-256",
        HmacSha256,
        Data::Rep(0xaa, 20),
        Data::Rep(0xdd, 50),
        "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"
    ),
    mac!(
        "RFC 4231 4.4 test case 3 HMAC-SHA-384",
        HmacSha384,
        Data::Rep(0xaa, 20),
        Data::Rep(0xdd, 50),
        "88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b\
         2a5ab39dc13814b94e3ab6e101a34f27"
    ),
    mac!(
        "RFC 4231 4.4 test case 3 HMAC-SHA-512",
        HmacSha512,
        Data::Rep(0xaa, 20),
        Data::Rep(0xdd, 50),
        "fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39\
         bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb"
    ),
    // RFC 4231 §4.5 test case 4 (key 0x01..0x19, 50 bytes of 0xcd).
    mac!(
        "RFC 4231 4.5 test case 4 HMAC-SHA-224",
        HmacSha224,
        Data::Count(0x01, 25),
        Data::Rep(0xcd, 50),
        "6c11506874013cac6a2abc1bb382627cec6a90d86efc012de7afec5a"
    ),
    mac!(
        "RFC 4231 4.5 test case 4 HMAC-SHA-256",
        HmacSha256,
        Data::Count(0x01, 25),
        Data::Rep(0xcd, 50),
        "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"
    ),
    mac!(
        "RFC 4231 4.5 test case 4 HMAC-SHA-384",
        HmacSha384,
        Data::Count(0x01, 25),
        Data::Rep(0xcd, 50),
        "3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e\
         6801dd23c4a7d679ccf8a386c674cffb"
    ),
    mac!(
        "RFC 4231 4.5 test case 4 HMAC-SHA-512",
        HmacSha512,
        Data::Count(0x01, 25),
        Data::Rep(0xcd, 50),
        "b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3db\
         a91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd"
    ),
    // RFC 4231 §4.6 test case 5: output truncated to 128 bits.
    mac!(
        "RFC 4231 4.6 test case 5 HMAC-SHA-224 (truncated to 128 bits)",
        HmacSha224,
        Data::Rep(0x0c, 20),
        Data::Text("Test With Truncation"),
        "0e2aea68a90c8d37c988bcdb9fca6fa8"
    ),
    mac!(
        "RFC 4231 4.6 test case 5 HMAC-SHA-256 (truncated to 128 bits)",
        HmacSha256,
        Data::Rep(0x0c, 20),
        Data::Text("Test With Truncation"),
        "a3b6167473100ee06e0c796c2955552b"
    ),
    mac!(
        "RFC 4231 4.6 test case 5 HMAC-SHA-384 (truncated to 128 bits)",
        HmacSha384,
        Data::Rep(0x0c, 20),
        Data::Text("Test With Truncation"),
        "3abf34c3503b2a23a46efc619baef897"
    ),
    mac!(
        "RFC 4231 4.6 test case 5 HMAC-SHA-512 (truncated to 128 bits)",
        HmacSha512,
        Data::Rep(0x0c, 20),
        Data::Text("Test With Truncation"),
        "415fad6271580a531d4179bc891d87a6"
    ),
    // RFC 4231 §4.7 test case 6: a 131-byte key (larger than the block), hashed first.
    mac!(
        "RFC 4231 4.7 test case 6 HMAC-SHA-224",
        HmacSha224,
        Data::Rep(0xaa, 131),
        Data::Text("Test Using Larger Than Block-Size Key - Hash Key First"),
        "95e9a0db962095adaebe9b2d6f0dbce2d499f112f2d2b7273fa6870e"
    ),
    mac!(
        "RFC 4231 4.7 test case 6 HMAC-SHA-256",
        HmacSha256,
        Data::Rep(0xaa, 131),
        Data::Text("Test Using Larger Than Block-Size Key - Hash Key First"),
        "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
    ),
    mac!(
        "RFC 4231 4.7 test case 6 HMAC-SHA-384",
        HmacSha384,
        Data::Rep(0xaa, 131),
        Data::Text("Test Using Larger Than Block-Size Key - Hash Key First"),
        "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c6\
         0c2ef6ab4030fe8296248df163f44952"
    ),
    mac!(
        "RFC 4231 4.7 test case 6 HMAC-SHA-512",
        HmacSha512,
        Data::Rep(0xaa, 131),
        Data::Text("Test Using Larger Than Block-Size Key - Hash Key First"),
        "80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352\
         6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"
    ),
    // RFC 4231 §4.8 test case 7: a 131-byte key and data larger than the block.
    mac!(
        "RFC 4231 4.8 test case 7 HMAC-SHA-224",
        HmacSha224,
        Data::Rep(0xaa, 131),
        RFC4231_TC7_DATA,
        "3a854166ac5d9f023f54d517d0b39dbd946770db9c2b95c9f6f565d1"
    ),
    mac!(
        "RFC 4231 4.8 test case 7 HMAC-SHA-256",
        HmacSha256,
        Data::Rep(0xaa, 131),
        RFC4231_TC7_DATA,
        "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"
    ),
    mac!(
        "RFC 4231 4.8 test case 7 HMAC-SHA-384",
        HmacSha384,
        Data::Rep(0xaa, 131),
        RFC4231_TC7_DATA,
        "6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5\
         a678cc31e799176d3860e6110c46523e"
    ),
    mac!(
        "RFC 4231 4.8 test case 7 HMAC-SHA-512",
        HmacSha512,
        Data::Rep(0xaa, 131),
        RFC4231_TC7_DATA,
        "e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944\
         b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58"
    ),
    // NIST CSRC "Cryptographic Standards and Guidelines: Examples with Intermediate Values",
    // HMAC_SHA3-256.pdf, samples #1-#4 (key 00 01 02 ... of the stated length; sample #4 has a
    // 128-bit truncated tag).
    mac!(
        "NIST HMAC_SHA3-256 example sample #1 (keylen<blocklen)",
        HmacSha3_256,
        Data::Count(0, 32),
        Data::Text("Sample message for keylen<blocklen"),
        "4fe8e202c4f058e8dddc23d8c34e467343e23555e24fc2f025d598f558f67205"
    ),
    mac!(
        "NIST HMAC_SHA3-256 example sample #2 (keylen=blocklen)",
        HmacSha3_256,
        Data::Count(0, 136),
        Data::Text("Sample message for keylen=blocklen"),
        "68b94e2e538a9be4103bebb5aa016d47961d4d1aa906061313b557f8af2c3faa"
    ),
    mac!(
        "NIST HMAC_SHA3-256 example sample #3 (keylen>blocklen)",
        HmacSha3_256,
        Data::Count(0, 168),
        Data::Text("Sample message for keylen>blocklen"),
        "9bcf2c238e235c3ce88404e813bd2f3a97185ac6f238c63d6229a00b07974258"
    ),
    mac!(
        "NIST HMAC_SHA3-256 example sample #4 (truncated tag)",
        HmacSha3_256,
        Data::Count(0, 32),
        Data::Text("Sample message for keylen<blocklen, with truncated tag"),
        "c8dc7148d8c1423aa549105dafdf9cad"
    ),
];

/// RFC 4493 §4 example messages (prefixes of the SP 800-38A plaintext).
static CMAC: &[MacVector] = &[
    // RFC 4493 §4 Example 1: len = 0.
    mac!(
        "RFC 4493 4 example 1 AES-CMAC (len 0)",
        CmacAes128,
        Data::Hex("2b7e151628aed2a6abf7158809cf4f3c"),
        Data::Hex(""),
        "bb1d6929e95937287fa37d129b756746"
    ),
    // RFC 4493 §4 Example 2: len = 16.
    mac!(
        "RFC 4493 4 example 2 AES-CMAC (len 16)",
        CmacAes128,
        Data::Hex("2b7e151628aed2a6abf7158809cf4f3c"),
        Data::Hex("6bc1bee22e409f96e93d7e117393172a"),
        "070a16b46b4d4144f79bdd9dd04a287c"
    ),
    // RFC 4493 §4 Example 3: len = 40.
    mac!(
        "RFC 4493 4 example 3 AES-CMAC (len 40)",
        CmacAes128,
        Data::Hex("2b7e151628aed2a6abf7158809cf4f3c"),
        Data::Hex(
            "6bc1bee22e409f96e93d7e117393172a\
             ae2d8a571e03ac9c9eb76fac45af8e51\
             30c81c46a35ce411"
        ),
        "dfa66747de9ae63030ca32611497c827"
    ),
    // RFC 4493 §4 Example 4: len = 64.
    mac!(
        "RFC 4493 4 example 4 AES-CMAC (len 64)",
        CmacAes128,
        Data::Hex("2b7e151628aed2a6abf7158809cf4f3c"),
        SP800_38A_PT,
        "51f0bebf7e3b9d92fc49741779363cfe"
    ),
];

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
