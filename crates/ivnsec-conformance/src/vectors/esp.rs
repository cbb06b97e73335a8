//! IPsec ESP known answers: full published packets (SPI … ICV) with the key, sequence number, IV
//! and plaintext that produce them.
//!
//! Every expected byte string below is typed in from the cited publication; none was produced by
//! ivnsec.

use ivnsec_core::sa::esp::{EspAlg, EspMode};

use crate::packets::ipv4;
use crate::unhex;

/// One published ESP packet.
pub struct Vector {
    pub source: &'static str,
    pub alg: EspAlg,
    /// Key ‖ salt (the salt is the first 4 bytes of the published nonce).
    pub key: &'static str,
    pub spi: u32,
    /// Full sequence number; ESN when `esn`.
    pub seq: u64,
    pub esn: bool,
    pub iv: &'static str,
    /// Payload ‖ padding ‖ pad length ‖ next header, as published.
    pub plaintext: &'static str,
    /// The ESP packet (SPI … ICV), as published.
    pub packet: &'static str,
}

/// draft-mcgrew-gcm-test-01 (D. McGrew, "Test Cases for the use of GCM and GMAC in IPsec ESP",
/// March 2009), §4: the AES-128/256 cases (the AES-192 ones are skipped: no such profile).
/// RFC 7634 Appendix A: the ChaCha20-Poly1305 ESP example.
pub const VECTORS: &[Vector] = &[
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 1 (ESN)",
        alg: EspAlg::Aes128Gcm,
        key: "4c80cdefbb5d10da906ac73c3613a634 2e443b68",
        spi: 0x0000_4321,
        seq: 0x8765_4321_0000_0000,
        esn: true,
        iv: "4956ed7e3b244cfe",
        plaintext: "45000048699a000080114db7c0a80102c0a801010a9bf15638d3010000010000
                    00000000045f736970045f75647003736970096379626572636974790264
                    6b000021000101020201",
        packet: "00004321000000004956ed7e3b244cfefecf537e729d5b07dc30df528dd22b76
                 8d1b98736696a6fd348509fa13ceac34cfa2436f14a3f3cf65925bf1f4a13c5d
                 15b21e1884f5ff6247aeabb786b93bce61bc17d768fd9732459018148f6cbe72
                 2fd04796562dfdb4",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 2",
        alg: EspAlg::Aes128Gcm,
        key: "feffe9928665731c6d6a8f9467308308 cafebabe",
        spi: 0x0000_a5f8,
        seq: 0x0a,
        esn: false,
        iv: "facedbaddecaf888",
        plaintext: "4500003e698f000080114dccc0a80102c0a801010a980035002a2343b2d00100
                    0001000000000000037369700963796265726369747902646b00000100010001",
        packet: "0000a5f80000000afacedbaddecaf888deb22cd9b07c72c16e3a65beeb8df304
                 a5a5897d33ae530f1ba76d5d114d2a5c3de81827c10e9a4f51330d0eec416642
                 cfbb85a5b47e48a4ec3b9ba95d918bd183b70d3aa8bc6ee4c309e9d85a41ad4a",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 3",
        alg: EspAlg::Aes256Gcm,
        key: "abbccddef00112233445566778899aababbccddef00112233445566778899aab 11223344",
        spi: 0x4a2c_bfe3,
        seq: 2,
        esn: false,
        iv: "0102030405060708",
        plaintext: "4500003069a6400080062690c0a801029389155e0a9e008b2dc57ee000000000
                    7002400020bf0000020405b40101040201020201",
        packet: "4a2cbfe3000000020102030405060708ff425c9b724599df7a3bcd510194e00d
                 6a78107f1b0b1cbf06efae9d65a5d763748a637985771d347f0545659f14e99d
                 ef842d8eb335f4eecfdbf831824b4c4915956c96",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 4",
        alg: EspAlg::Aes128Gcm,
        key: "00000000000000000000000000000000 00000000",
        spi: 0,
        seq: 1,
        esn: false,
        iv: "0000000000000000",
        plaintext: "4500003c99c500008001cb7a40679318010101010800075c0200440061626364
                    65666768696a6b6c6d6e6f70717273747576776162636465666768690102
                    0201",
        packet: "000000000000000100000000000000004688daf2f973a392732909c331d56d60
                 f694abaa414b5e7ff5fdcdfff5e9a284456476492719ffb64de7d9dca1e1d894
                 bc3bd57873ed4d181d19d4d5c8c18af3f821d496eeb096e98ad2b69e4799c71d",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 5 (ESN)",
        alg: EspAlg::Aes128Gcm,
        key: "3de09874b388e6491988d0c3607eae1f 57690e43",
        spi: 0x42f6_7e3f,
        seq: 0x1010_1010_1010_1010,
        esn: true,
        iv: "4e280000a2fca1a3",
        plaintext: "4500003c99c300008001cb7c40679318010101010800085c0200430061626364
                    65666768696a6b6c6d6e6f70717273747576776162636465666768690102
                    0201",
        packet: "42f67e3f101010104e280000a2fca1a3fba2caa4853cf9f0f22cb10d86dd83b0
                 fec75691cf1a04b00d1138ec9c35791765acbd8701ad79845bf9fe3fba487bc9
                 1755e6662b4c8d0d1f5e22739530320ae0d731cc978ecafaeae88f00e80d6e48",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 6 (ESN)",
        alg: EspAlg::Aes128Gcm,
        key: "3de09874b388e6491988d0c3607eae1f 57690e43",
        spi: 0x42f6_7e3f,
        seq: 0x1010_1010_1010_1010,
        esn: true,
        iv: "4e280000a2fca1a3",
        plaintext: "4500001c42a200008001441f406793b6e00000020a00f5ff01020201",
        packet: "42f67e3f101010104e280000a2fca1a3fba2ca845e5df9f0f22c3e6e86dd831e
                 1fc65792cd1af9130e1379ed369f071f35e034be95f112e4e7d05d35",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 8 (ESN)",
        alg: EspAlg::Aes128Gcm,
        key: "abbccddef00112233445566778899aab decaf888",
        spi: 0x0000_0100,
        seq: 1,
        esn: true,
        iv: "cafedebaceface74",
        plaintext: "4500004933ba00007f119106c3fb1d10c2b1d326c02831ce0035dd7b800302d5
                    00004e20001e8c18d75b81dc91baa0476b91b924b280389d92c963bac046ec95
                    9b6266c04722b14923010101",
        packet: "0000010000000001cafedebaceface7418a6fd42f72cbf4ab2a2ea901f73d814
                 e3e7f243d95412e1c349c1d2fbec168f9190feebaf2cb01984e65863965d7472
                 b79da345e0e780191f0d2f0e0f496c226f2127b27db35724e7845d68651f57e6
                 5f354f75ff17015769623436",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 9 (ESN)",
        alg: EspAlg::Aes256Gcm,
        key: "abbccddef00112233445566778899aababbccddef00112233445566778899aab 73616c74",
        spi: 0x1740_5e67,
        seq: 0x156f_3126_dd0d_b99b,
        esn: true,
        iv: "616e640169766563",
        plaintext: "45080028732c00004006e9f90a0106120a01038f06b88023dd6bafbecb712602
                    50101f646d540001",
        packet: "17405e67dd0db99b616e640169766563f2d69ecdbd5a0d5b8d5ef38bad4da58d
                 1f278fde98ef67549d524a3018d9a57ff4d3a31ce673119e451626c2415771e3
                 b7eebca614c89b35",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 10 (ESN)",
        alg: EspAlg::Aes128Gcm,
        key: "3de09874b388e6491988d0c3607eae1f 57690e43",
        spi: 0x42f6_7e3f,
        seq: 0x1010_1010_1010_1010,
        esn: true,
        iv: "4e280000a2fca1a3",
        plaintext: "45000049333e00007f119182c3fb1d10c2b1d326c02831ce0035cb458003025b
                    000001e0001e8c18d65759d52284a0352c71475c8880391c764d6e5ee0496b32
                    5ae270c03899493915010101",
        packet: "42f67e3f101010104e280000a2fca1a3fba2cad12fc1f9f00d3cebf305410db8
                 3d7784b607323d220f24b0a97d54182800cadb0f68d99ef0e0c0c89ae9bea888
                 4e52d65bc1afd0740f742444747b5b39ab533163aad4550ee5160975cdb608c5
                 769189609763b8e18caa81e2",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 11 (ESN)",
        alg: EspAlg::Aes256Gcm,
        key: "abbccddef00112233445566778899aababbccddef00112233445566778899aab 73616c74",
        spi: 0x1740_5e67,
        seq: 0x156f_3126_dd0d_b99b,
        esn: true,
        iv: "616e640169766563",
        plaintext: "636973636f0172756c65730174686501 6e6574776501646566696e6501746865
                    746563686e6f6c6f6769657301746861 7477696c6c01646566696e65746f6d6f
                    72726f7701020201",
        packet: "17405e67dd0db99b616e640169766563d4b7ed86a1777f2ea13d6973d324c69e
                 7b43f826fb56831226508bebd2dceb18d0a6df10e5487df074113e14c641024e
                 3e6773d91a62ee429b043a10e3efe6b012a49363412364f8c0cac587f249e56b
                 11e24f30e44ccc76",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 12",
        alg: EspAlg::Aes128Gcm,
        key: "7d773d00c144c525ac619d18c84a3f47 d9664267",
        spi: 0x3354_67ae,
        seq: 0xffff_ffff,
        esn: false,
        iv: "43457e9182443bc6",
        plaintext: "01020201",
        packet: "335467aeffffffff43457e9182443bc6437f866bcb3f699fe9b0822bac961c45
                 04bef270",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 13 (ESN)",
        alg: EspAlg::Aes128Gcm,
        key: "abbccddef00112233445566778899aab decaf888",
        spi: 0x0000_0100,
        seq: 1,
        esn: true,
        iv: "cafedebaceface74",
        plaintext: "746f016265016f72016e6f7401746f0162650001",
        packet: "0000010000000001cafedebaceface7429c9fc69a197d038ccdd14e2ddfcaa05
                 43332164412503524303ed3c6c5f283843af8c3e",
    },
    Vector {
        source: "draft-mcgrew-gcm-test-01 case 14 (ESN)",
        alg: EspAlg::Aes256Gcm,
        key: "6c6567616c697a656d6172696a75616e61616e64646f69746265666f72656961 7475726e",
        spi: 0x796b_6963,
        seq: 0xffff_ffff_ffff_ffff,
        esn: true,
        iv: "333021696765746d",
        plaintext: "45000030da3a00008001df3bc0a80005c0a800010800c6cd0200070061626364
                    65666768696a6b6c6d6e6f707172737401020201",
        packet: "796b6963ffffffff333021696765746df97ab2aa356d8edce17644ac8c78e25d
                 d24dedbb29ebf1b64a274b39b49c3a864cd3d78ca4ae68a32b42458fb57dbe82
                 1dcc63b9d0937ba2945f669368661a329fb4c053",
    },
    Vector {
        source: "RFC 7634 Appendix A (tunnel mode, next header 4)",
        alg: EspAlg::ChaCha20Poly1305,
        key: "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f a0a1a2a3",
        spi: 0x0102_0304,
        seq: 5,
        esn: false,
        iv: "1011121314151617",
        plaintext: "45000054a6f200004001e778c6336405c000020508005b7a3a080000553bec10
                    000736270809 0a0b0c0d0e0f10111213 1415161718191a1b1c1d1e1f20212223
                    2425262728292a2b2c2d2e2f30313233 3435363701020204",
        packet: "0102030400000005 1011121314151617
                 240394 28b97f417e3c13753a4f05087b67c352e6a7fab1b982d466ef407ae5c6
                 14ee8099d52844eb61aa95dfab4c02f72aa71e7c4c4f64c9befe2facc638e8f3
                 cbec163fac469b502773f6fb94e664da9165b82829f641e0
                 76aaa8266b7fb0f7b11b369907e1ad43",
    },
];

impl Vector {
    /// Splits the published plaintext into payload and next header (trusting its trailer).
    pub fn payload_and_nh(&self) -> (Vec<u8>, u8) {
        let plaintext = unhex(self.plaintext);
        let n = plaintext.len();
        let pad = plaintext[n - 2] as usize;
        (plaintext[..n - 2 - pad].to_vec(), plaintext[n - 1])
    }

    /// The packet to protect and the mode that yields the published packet: tunnel mode
    /// (192.0.2.1 → 192.0.2.2) for an inner IPv4 packet (next header 4), which is protected
    /// whole; transport mode otherwise, the payload behind an IPv4 header naming the next header.
    pub fn input_and_mode(&self) -> (Vec<u8>, EspMode) {
        let (payload, nh) = self.payload_and_nh();
        if nh == 4 {
            let mode = EspMode::Tunnel {
                src: [192, 0, 2, 1].into(),
                dst: [192, 0, 2, 2].into(),
            };
            (payload, mode)
        } else {
            (ipv4(nh, &payload), EspMode::Transport)
        }
    }
}

/// The vector of RFC 7634 Appendix A (ChaCha20-Poly1305, tunnel mode).
pub fn rfc7634_appendix_a() -> &'static Vector {
    VECTORS
        .iter()
        .find(|v| v.source.starts_with("RFC 7634 Appendix A"))
        .expect("the RFC 7634 vector is in the table")
}
