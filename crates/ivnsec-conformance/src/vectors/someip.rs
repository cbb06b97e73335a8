//! Secured SOME/IP (docs/wire-someip-sec.md) known answers: one protected message per suite and
//! level, computed independently with Python `cryptography`.

/// One protected SOME/IP message.
pub struct Known {
    /// The AEAD suite (`aes128-gcm`, …, as `suite_from_name` reads it).
    pub suite: &'static str,
    /// The protection level (`auth` or `conf`).
    pub level: &'static str,
    /// The whole protected message: header ‖ security header ‖ body ‖ tag.
    pub message: &'static str,
}

/// Computed with Python `cryptography` (AESGCM, AESCCM(tag_length=16), ChaCha20Poly1305) from the
/// layout of docs/wire-someip-sec.md, not with this code: service 0x1234, method 1, client
/// 0x0102, session 0x0304, REQUEST, key = 00 01 02 …, key id 7, salt a1a2a3a4, counter 5,
/// body "hello SOME/IP".
pub const KNOWN: &[Known] = &[
    Known {
        suite: "aes128-gcm",
        level: "conf",
        message: "123400010000002e010203040101000007000000000000000578f45f546746ae49ec2bd22ad5c80b0451db235e3175f78625dd282ef0",
    },
    Known {
        suite: "aes128-gcm",
        level: "auth",
        message: "123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f4950e439c6261f499d5cf3934819db76d0c4",
    },
    Known {
        suite: "aes256-gcm",
        level: "conf",
        message: "123400010000002e0102030401010000070000000000000005006b5220c8dd9c2c5e5c155e7348baca3175b0d1ca3958880cb05c6990",
    },
    Known {
        suite: "aes256-gcm",
        level: "auth",
        message: "123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f495049cc1872c60b52b6e1a35299cb16c5dc",
    },
    Known {
        suite: "aes128-ccm",
        level: "conf",
        message: "123400010000002e01020304010100000700000000000000056991c75a0dace2471997fbe2fc5ec82825d1d04e05b2ce8d920ceddb64",
    },
    Known {
        suite: "aes128-ccm",
        level: "auth",
        message: "123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f49504d70882ae1a90817be64bf5070af27c3",
    },
    Known {
        suite: "aes256-ccm",
        level: "conf",
        message: "123400010000002e010203040101000007000000000000000549f987ec47c718bb72ffa09d6bfc07c607857e9e43acd58d60aca21325",
    },
    Known {
        suite: "aes256-ccm",
        level: "auth",
        message: "123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f49508be4c543dbf8c3412f0e70befed7a710",
    },
    Known {
        suite: "chacha20-poly1305",
        level: "conf",
        message: "123400010000002e0102030401010000070000000000000005f7b3ff1bfb3d6025643989fb3c4ed013398785d4829640ebabbc33b05d",
    },
    Known {
        suite: "chacha20-poly1305",
        level: "auth",
        message: "123400010000002e010203040101000007000000000000000568656c6c6f20534f4d452f49501cc8986ba52f6d327c48c85313a530a3",
    },
];
