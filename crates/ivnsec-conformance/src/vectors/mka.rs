//! MKA known answers: AES Key Wrap, CMAC with AES-256 and the IEEE 802.1X key derivations.
//!
//! Every expected value was typed in from the publication named in its entry, never produced by
//! this code: RFC 3394 §4 (key wrap), NIST SP 800-38B Appendix D.3 (CMAC-AES-256) and IEEE Std
//! 802.1X-2020 Annex G (the KDF, KEK, ICK and SAK examples; reproduced in the MKAdaemon test
//! suite, `test/crypto/test-aes-kdf.cpp`, from where they were copied). The Python reference
//! `tests/interop/mka_ref.py` (the `cryptography` package) computes the same values
//! independently.

use ivnsec_core::crypto::CipherAlg;

/// An AES Key Wrap example (RFC 3394 §4: the key data 00112233… wrapped under KEK 000102…).
pub struct KeyWrapKat {
    pub source: &'static str,
    pub alg: CipherAlg,
    pub kek: &'static str,
    pub key_data: &'static str,
    pub wrapped: &'static str,
}

const KEK_128: &str = "000102030405060708090A0B0C0D0E0F";
const KEK_192: &str = "000102030405060708090A0B0C0D0E0F1011121314151617";
const KEK_256: &str = "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F";
const DATA_128: &str = "00112233445566778899AABBCCDDEEFF";
const DATA_192: &str = "00112233445566778899AABBCCDDEEFF0001020304050607";
const DATA_256: &str = "00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F";

pub const KEY_WRAP: &[KeyWrapKat] = &[
    KeyWrapKat {
        source: "RFC 3394 4.1 (128-bit key data, 128-bit KEK)",
        alg: CipherAlg::Aes128,
        kek: KEK_128,
        key_data: DATA_128,
        wrapped: "1FA68B0A8112B447 AEF34BD8FB5A7B82 9D3E862371D2CFE5",
    },
    KeyWrapKat {
        source: "RFC 3394 4.2 (128-bit key data, 192-bit KEK)",
        alg: CipherAlg::Aes192,
        kek: KEK_192,
        key_data: DATA_128,
        wrapped: "96778B25AE6CA435 F92B5B97C050AED2 468AB8A17AD84E5D",
    },
    KeyWrapKat {
        source: "RFC 3394 4.3 (128-bit key data, 256-bit KEK)",
        alg: CipherAlg::Aes256,
        kek: KEK_256,
        key_data: DATA_128,
        wrapped: "64E8C3F9CE0F5BA2 63E9777905818A2A 93C8191E7D6E8AE7",
    },
    KeyWrapKat {
        source: "RFC 3394 4.4 (192-bit key data, 192-bit KEK)",
        alg: CipherAlg::Aes192,
        kek: KEK_192,
        key_data: DATA_192,
        wrapped: "031D33264E15D332 68F24EC260743EDC E1C6C7DDEE725A93 6BA814915C6762D2",
    },
    KeyWrapKat {
        source: "RFC 3394 4.5 (192-bit key data, 256-bit KEK)",
        alg: CipherAlg::Aes256,
        kek: KEK_256,
        key_data: DATA_192,
        wrapped: "A8F9BC1612C68B3F F6E6F4FBE30E71E4 769C8B80A32CB895 8CD5D17D6B254DA1",
    },
    KeyWrapKat {
        source: "RFC 3394 4.6 (256-bit key data, 256-bit KEK)",
        alg: CipherAlg::Aes256,
        kek: KEK_256,
        key_data: DATA_256,
        wrapped: "28C9F404C4B810F4 CBCCB35CFB87F826 3F5786E2D80ED326 CBC7F0E71A99F43B FB988B9B7A02DD21",
    },
];

/// A MAC example: key, message, tag.
pub struct CmacKat {
    pub source: &'static str,
    pub key: &'static str,
    pub message: &'static str,
    pub tag: &'static str,
}

/// SP 800-38B D.3: the AES-256 key of the examples.
const SP800_38B_KEY_256: &str =
    "603deb10 15ca71be 2b73aef0 857d7781 1f352c07 3b6108d7 2d9810a3 0914dff4";
/// SP 800-38B D.1–D.3 (and RFC 4493): the 64-octet message whose prefixes the examples use.
pub const SP800_38B_MESSAGE: &str = "6bc1bee2 2e409f96 e93d7e11 7393172a ae2d8a57 1e03ac9c 9eb76fac 45af8e51 \
                                     30c81c46 a35ce411 e5fbc119 1a0a52ef f69f2445 df4f9b17 ad2b417b e66c3710";

/// CMAC-AES-256 examples: the message is the first `message` octets of [`SP800_38B_MESSAGE`]
/// (as a decimal count in `message`).
pub const CMAC_AES_256: &[CmacKat] = &[
    CmacKat {
        source: "SP 800-38B D.3 example 9 (Mlen 0)",
        key: SP800_38B_KEY_256,
        message: "0",
        tag: "028962f6 1b7bf89e fc6b551f 4667d983",
    },
    CmacKat {
        source: "SP 800-38B D.3 example 10 (Mlen 128)",
        key: SP800_38B_KEY_256,
        message: "16",
        tag: "28a7023f 452e8f82 bd4bf28d 8c37c35c",
    },
    CmacKat {
        source: "SP 800-38B D.3 example 11 (Mlen 320)",
        key: SP800_38B_KEY_256,
        message: "40",
        tag: "aaf3d8f1 de5640c2 32f5b169 b9c911e6",
    },
    CmacKat {
        source: "SP 800-38B D.3 example 12 (Mlen 512)",
        key: SP800_38B_KEY_256,
        message: "64",
        tag: "e1992190 549f6ed5 696a2c05 6c315410",
    },
];

/// An example of the 802.1X KDF with an explicit label and context.
pub struct KdfKat {
    pub source: &'static str,
    pub key: &'static str,
    pub label: &'static [u8],
    pub context: &'static str,
    pub out: &'static str,
}

pub const KDF: &[KdfKat] = &[
    KdfKat {
        source: "IEEE 802.1X-2020 G.1.1 (128-bit KDK, L = 128)",
        key: "1ab9024fa04a03feb9024fa04a03fe11",
        label: b"HI THERE",
        context: "01020104",
        out: "b57a0b05f43e9600c3c4d15c1e3c26e8",
    },
    KdfKat {
        source: "IEEE 802.1X-2020 G.1.2 (256-bit KDK, L = 256)",
        key: "3946ec36f59017f1267e914abed2dbf6633f52ae7e20309d3eefdda4073adfad",
        label: b"HI THERE",
        context: "01020104",
        out: "0efd01e5b03a0951a6df9bbffe419016ee40fdbfc3335ebf92ea03802214a307",
    },
];

/// A CAK/CKN pair of Annex G with its KEK (G.4) and ICK (G.5).
pub struct CaKat {
    pub source: &'static str,
    pub cak: &'static str,
    pub ckn: &'static str,
    pub kek: &'static str,
    pub ick: &'static str,
}

/// The 128-bit CAK of Annex G.
pub const CAK_128: &str = "135bd758b0ee5c11c55ff6ab19fdb199";
/// The 256-bit CAK of Annex G.
pub const CAK_256: &str = "a29efdb63d6fba73c65daab2295340a837a8886e94a905b5c9c7ef1d9dbb297e";

pub const CA_KEYS: &[CaKat] = &[
    CaKat {
        source: "IEEE 802.1X-2020 G.4.1 / G.5.1 (128-bit CAK)",
        cak: CAK_128,
        ckn: "96437a93ccf10d9dfe347846cce52c7d",
        kek: "8f5a384c15d6ae9302b462e363d03ca6",
        ick: "8f1c5cb1c8ed2e5f047906e0473aad4d",
    },
    CaKat {
        source: "IEEE 802.1X-2020 G.4.2 / G.5.2 (256-bit CAK)",
        cak: CAK_256,
        ckn: "7888f5d48ba8b24e96bb95bd8c7304ec",
        kek: "71340e454c84a1232aa7977d5ed86f78f250f3f9d53584b9337ff0c6dfdc9f96",
        ick: "98b8544d7390a41e50ef72e25b4a036523c919e812918871949b48123eab526e",
    },
];

/// A SAK derivation of Annex G.6: KS-nonce, the MIs of the key server and one peer, KN 1.
pub struct SakKat {
    pub source: &'static str,
    pub cak: &'static str,
    pub ks_nonce: &'static str,
    pub mis: [&'static str; 2],
    pub kn: u32,
    pub sak: &'static str,
}

pub const SAK: &[SakKat] = &[
    SakKat {
        source: "IEEE 802.1X-2020 G.6.1 (128-bit SAK)",
        cak: CAK_128,
        ks_nonce: "0102030405060708090a0b0c0d0e0f10",
        mis: ["cd421cf86ba4579386 57675b", "0102030405060708 0d1f36cf"],
        kn: 1,
        sak: "045205925831ae59c14550ed59cc003d",
    },
    SakKat {
        source: "IEEE 802.1X-2020 G.6.2 (256-bit SAK)",
        cak: CAK_256,
        ks_nonce: "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f00",
        mis: ["cd421cf86ba4579386 57675b", "0102030405060708 0d1f36cf"],
        kn: 1,
        sak: "bb692568b287484a5f3f4793b09732270d13dd818373c15b3f2793fdc1948a37",
    },
];
