//! AEAD vectors: AES-GCM (McGrew–Viega / SP 800-38D), AES-CCM (Wycheproof), ChaCha20-Poly1305 (RFC 8439).

use super::data::{AeadVector, Data};
use crate::crypto::AeadAlg;

/// Plaintext of GCM test cases 3, 4, 15, 16 (cases 4 and 16 use its first 60 bytes).
pub(super) const GCM_P64: Data = Data::Hex(
    "d9313225f88406e5a55909c5aff5269a\
     86a7a9531534f7da2e4c303d8a318a72\
     1c3c0c95956809532fcf0e2449a6b525\
     b16aedf5aa0de657ba637b391aafd255",
);
pub(super) const GCM_P60: Data = Data::Hex(
    "d9313225f88406e5a55909c5aff5269a\
     86a7a9531534f7da2e4c303d8a318a72\
     1c3c0c95956809532fcf0e2449a6b525\
     b16aedf5aa0de657ba637b39",
);
/// AAD of GCM test cases 4 and 16 (20 bytes).
pub(super) const GCM_A20: Data = Data::Hex("feedfacedeadbeeffeedfacedeadbeefabaddad2");

// McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)", Appendix B test cases (the AES-GCM
// examples NIST links from SP 800-38D). Cases 5, 6, 11, 12, 17, 18 use 8- or 60-byte IVs and do not
// apply to a 12-byte nonce.
pub(super) static GCM: &[AeadVector] = &[
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
pub(super) static CCM: &[AeadVector] = &[
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
pub(super) static CHACHA20_POLY1305: &[AeadVector] = &[
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
