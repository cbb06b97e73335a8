//! MAC vectors: HMAC (RFC 2202, RFC 4231, NIST HMAC-SHA3-256 examples) and AES-CMAC (RFC 4493).

use super::cipher::SP800_38A_PT;
use super::data::{Data, MacVector};
use crate::crypto::MacAlg;

pub(super) const RFC2202_HASH_KEY_FIRST: Data =
    Data::Text("Test Using Larger Than Block-Size Key - Hash Key First");
pub(super) const RFC2202_LARGER_DATA: Data =
    Data::Text("Test Using Larger Than Block-Size Key and Larger Than One Block-Size Data");
pub(super) const RFC4231_TC7_DATA: Data = Data::Text(
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

pub(super) static HMAC: &[MacVector] = &[
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
pub(super) static CMAC: &[MacVector] = &[
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
