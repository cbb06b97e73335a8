//! IVN-AE known answers: whole frames produced by the independent Python reference
//! (`tests/interop/ivnae_ref.py`, on the `cryptography` package; `tests/interop/ivnae_examples.py`
//! prints the version 2 ones as docs/wire-ivnae.md §9 shows them). No expected value here was
//! produced by this code.
//!
//! Every entry protects [`PLAIN`] with sequence number [`SEQ`]. The version 2 entries are the
//! worked examples of the specification plus the pair that shows key ids 1 and 2 under one key,
//! IV and sequence number giving different frames; the version 1 entries are what a sender of the
//! previous release wrote (nonce without the key id), which a receiver takes only when its SA
//! accepts version 1.

/// The plain frame of every entry: dst ‖ src ‖ 0x0800 ‖ "IVN-AE v2 worked example payload".
pub const PLAIN: &str =
    "020000000002020000000001080049564e2d414520763220776f726b6564206578616d706c65207061796c6f6164";
/// The sequence number of every entry.
pub const SEQ: u64 = 42;

/// One frame of the reference.
pub struct Kat {
    pub source: &'static str,
    pub profile: &'static str,
    /// IVN-AE version of the frame (byte 14).
    pub version: u8,
    pub key: &'static str,
    pub mac_key: &'static str,
    pub iv: &'static str,
    pub key_id: u8,
    pub tag_len: Option<usize>,
    /// The protected frame.
    pub frame: &'static str,
}

pub const KATS: &[Kat] = &[
    Kat {
        source: "docs/wire-ivnae.md §9: plain, key id 3",
        profile: "plain",
        version: 2,
        key: "",
        mac_key: "",
        iv: "000000000000000000000000",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b502000300000000000000002a080049564e2d414520763220776f726b6564206578616d706c65207061796c6f6164",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: crc32, key id 3",
        profile: "crc32",
        version: 2,
        key: "",
        mac_key: "",
        iv: "000000000000000000000000",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b502010300000000000000002a080049564e2d414520763220776f726b6564206578616d706c65207061796c6f6164d78d11b8",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: aes128-gcm/conf, key id 3",
        profile: "aes128-gcm/conf",
        version: 2,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b502100301000000000000002a07c62caf9fb98b497bdac4e49cfbf53f07de1e2f50267341182a9713349d251773aea23ead74f8eaa4ab82abab635f978322",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: aes128-gcm/auth, key id 3",
        profile: "aes128-gcm/auth",
        version: 2,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b502100300000000000000002a080049564e2d414520763220776f726b6564206578616d706c65207061796c6f6164985d9bafc0bb8351ff23816e1e8e0c4f",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: hmac-sha256, key id 3",
        profile: "hmac-sha256",
        version: 2,
        key: "",
        mac_key: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
        iv: "000000000000000000000000",
        key_id: 3,
        tag_len: Some(16),
        frame: "02000000000202000000000188b502330300000000000000002a080049564e2d414520763220776f726b6564206578616d706c65207061796c6f6164d866d710e815b20c6859cfb3953064af",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: aes128-cbc-hmac-sha256, key id 3",
        profile: "aes128-cbc-hmac-sha256",
        version: 2,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b502430301000000000000002a7c05a822bba9f587a1bc4939519ab94efc876e6e5cce9e4149ec2ddf0bc3e8e148800d7a8948c887bf97e17f85ae5ac840a32329c3bbd67db5274caeca0dfa73c31951f795564bb772cf1c25209129f7",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: aes128-ctr-hmac-sha1, key id 3",
        profile: "aes128-ctr-hmac-sha1",
        version: 2,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b502490301000000000000002a7bc0901bb4ae0f6a8386dcfe61a749c56aa2459ca9f5a77c37c9d6b48aedeb3b03deefed2ad21d59bc11c830b86488d7f8b3c400aaac",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: aes128-gcm/conf, key id 1",
        profile: "aes128-gcm/conf",
        version: 2,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 1,
        tag_len: None,
        frame: "02000000000202000000000188b502100101000000000000002ac0a91a7ef2db2fea76bc07e16846db1a5d85ef9d8736751324d745c66e0f53b7a63ad37aa5f26b8f392e088abcc6e28b55ca",
    },
    Kat {
        source: "docs/wire-ivnae.md §9: aes128-gcm/conf, key id 2",
        profile: "aes128-gcm/conf",
        version: 2,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 2,
        tag_len: None,
        frame: "02000000000202000000000188b502100201000000000000002aee16997a9bfec0d856dc33c5d4f4aab49f4d008392715f1a0badd636e7fdd0a974a2bc3400639e67b4448aa5b9b7984904c5",
    },
    Kat {
        source: "version 1 (accept_v1): aes128-gcm/conf, key id 3",
        profile: "aes128-gcm/conf",
        version: 1,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b501100301000000000000002adef95e0fb015867d08c23b8b789cdc080c4bf5367a847206b388451cf1904a31d3ae2d92a474bdc2549487b3b5104bd49c42",
    },
    Kat {
        source: "version 1 (accept_v1): aes128-gcm/auth, key id 3",
        profile: "aes128-gcm/auth",
        version: 1,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b501100300000000000000002a080049564e2d414520763220776f726b6564206578616d706c65207061796c6f616438fd75594112850b43a2175de9cd844a",
    },
    Kat {
        source: "version 1 (accept_v1): hmac-sha256, key id 3",
        profile: "hmac-sha256",
        version: 1,
        key: "",
        mac_key: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
        iv: "000000000000000000000000",
        key_id: 3,
        tag_len: Some(16),
        frame: "02000000000202000000000188b501330300000000000000002a080049564e2d414520763220776f726b6564206578616d706c65207061796c6f616443909669f000b30fd0f708fe6892d1b9",
    },
    Kat {
        source: "version 1 (accept_v1): aes128-cbc-hmac-sha256, key id 3",
        profile: "aes128-cbc-hmac-sha256",
        version: 1,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b501430301000000000000002a54ae6410a2980bf3aa6e4628ff75bfc53ecde3baa4b28917cd484f929196d1af78f12a233fc24f062a25354b0b74cc294f39837a2af6b9c33466943d785fbd85996e2846a22b0579abb5e0e69e34c969",
    },
    Kat {
        source: "version 1 (accept_v1): aes128-ctr-hmac-sha1, key id 3",
        profile: "aes128-ctr-hmac-sha1",
        version: 1,
        key: "000102030405060708090a0b0c0d0e0f",
        mac_key: "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f",
        iv: "a0a1a2a3a4a5a6a7a8a9aaab",
        key_id: 3,
        tag_len: None,
        frame: "02000000000202000000000188b501490301000000000000002a5a5e5437cdaba20aefd8123a8589c890b39d373c8659aa4844d129db6e8ac20c084b525f314e0331d5f6f072f77ed6abcd3def221112",
    },
];
