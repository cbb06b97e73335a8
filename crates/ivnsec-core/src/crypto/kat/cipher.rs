//! AES block (FIPS 197), CBC and CTR (NIST SP 800-38A) vectors.

use super::data::{BlockVector, Data, ModeVector};
use crate::crypto::CipherAlg;

/// The plaintext of every SP 800-38A Appendix F example (four blocks).
pub(super) const SP800_38A_PT: Data = Data::Hex(
    "6bc1bee22e409f96e93d7e117393172a\
     ae2d8a571e03ac9c9eb76fac45af8e51\
     30c81c46a35ce411e5fbc1191a0a52ef\
     f69f2445df4f9b17ad2b417be66c3710",
);

// FIPS 197 Appendix C (C.1, C.2, C.3): PLAINTEXT 00112233445566778899aabbccddeeff, key
// 000102... of the key size.
pub(super) static AES_BLOCK: &[BlockVector] = &[
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
pub(super) static CBC: &[ModeVector] = &[
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
pub(super) static CTR: &[ModeVector] = &[
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
