//! MACsec (IEEE 802.1AE-2018, XPN per 802.1AEbw-2013): Annex C known answers in both directions,
//! attack tests (each rejected with its own reason and counter), validateFrames modes, XPN PN
//! recovery, PN exhaustion, and the `ivnsec frame` CLI. Every SA test runs once per provider.
//!
//! Known answers are typed in from public copies of the IEEE test vectors, never produced by this
//! code:
//! - GCM-AES-128/256, C.1–C.8: "bn-randall-test-vectors-0511-v1" (IEEE 802.1 2011, the Annex C of
//!   802.1AE) §2.1–§2.8, as reproduced e.g. in Google Tink's / wycheproof-style AES-GCM test lists
//!   (key, IV, AAD, ciphertext ‖ ICV). The 2018 numbering maps: C.1 = §2.1 (54 octets,
//!   integrity), C.2 = §2.3 (60, integrity), C.3 = §2.5 (65, integrity), C.4 = §2.7 (79,
//!   integrity), C.5 = §2.4 (54, confidentiality), C.6 = §2.2 (60, confidentiality), C.7 = §2.6
//!   (61, confidentiality), C.8 = §2.8 (75, confidentiality).
//! - GCM-AES-XPN-128/256: 802.1AEbw-2013 Annex C C.1.3, C.1.4, C.5.3, C.5.4 as typed in scapy's
//!   `test/contrib/macsec.uts` (full frames). The other XPN frame sizes were not available to us.

use std::process::{Command, Output, Stdio};

use ivnsec_core::crypto::CryptoProvider;
use ivnsec_core::sa::DropReason;
use ivnsec_core::sa::macsec::{
    CipherSuite, KeyParams, MacsecError, MacsecRx, MacsecTx, RxOptions, RxStatus, TxOptions,
    ValidateFrames,
};
use ivnsec_core::wire::macsec::Sci;

const PROVIDERS: [&CryptoProvider; 2] = [
    &ivnsec_crypto_portable::PROVIDER,
    &ivnsec_crypto_fast::PROVIDER,
];

const SALT: &str = "E630E81A48DE86A21C66FA6D";
const SSCI: u32 = 0x7A30_C118;

struct Kat {
    name: &'static str,
    suite: CipherSuite,
    key: &'static str,
    sci: u64,
    an: u8,
    pn: u64,
    conf: bool,
    /// SC bit (SCI in the SecTAG); otherwise ES is set (all Annex C frames without SC have ES).
    include_sci: bool,
    /// dst ‖ src.
    addrs: &'static str,
    sectag: &'static str,
    /// User data (EtherType ‖ payload) of the plain frame.
    user: &'static str,
    /// Secure data ‖ ICV of the protected frame.
    secure_icv: &'static str,
}

// C.1: 54-octet frame, integrity protection. User data shared by C.1.1–C.1.4.
const C1_USER: &str =
    "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F30313233340001";
// C.2: 60-octet frame, integrity protection.
const C2_USER: &str = "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A0003";
// C.3: 65-octet frame, integrity protection.
const C3_USER: &str = "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F0005";
// C.4: 79-octet frame, integrity protection.
const C4_USER: &str = "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D0007";
// C.5: 54-octet frame, confidentiality.
const C5_USER: &str =
    "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F30313233340004";
// C.6: 60-octet frame, confidentiality.
const C6_USER: &str = "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A0002";
// C.7: 61-octet frame, confidentiality.
const C7_USER: &str = "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B0006";
// C.8: 75-octet frame, confidentiality.
const C8_USER: &str = "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748490008";

const K1_128: &str = "AD7A2BD03EAC835A6F620FDCB506B345";
const K1_256: &str = "E3C08A8F06C6E3AD95A70557B23F75483CE33021A9C72B7025666204C69C0B72";
const K2_128: &str = "071B113B0CA743FECCCF3D051F737382";
const K2_256: &str = "691D3EE909D7F54167FD1CA0B5D769081F2BDE1AEE655FDBAB80BD5295AE6BE7";
const K3_128: &str = "013FE00B5F11BE7F866D0CBBC55A7A90";
const K3_256: &str = "83C093B58DE7FFE1C0DA926AC43FB3609AC1C80FEE1B624497EF942E2F79A823";
const K4_128: &str = "88EE087FD95DA9FBF6725AA9D757B0CD";
const K4_256: &str = "4C973DBC7364621674F8B5B89E5C15511FCED9216490FB1C1A2CAA0FFE0407E5";

use CipherSuite::{
    GcmAes128 as G128, GcmAes256 as G256, GcmAesXpn128 as X128, GcmAesXpn256 as X256,
};

#[rustfmt::skip]
const KATS: &[Kat] = &[
    // --- C.1 54-octet frame, integrity: SCI 12153524C0895E81, AN 2, PN B2C28465.
    Kat { name: "C.1.1 GCM-AES-128 54 integrity", suite: G128, key: K1_128, sci: 0x12153524C0895E81, an: 2, pn: 0xB2C28465, conf: false, include_sci: true,
          addrs: "D609B1F056637A0D46DF998D", sectag: "88E5222AB2C2846512153524C0895E81", user: C1_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F30313233340001F09478A9B09007D06F46E9B6A1DA25DD" },
    Kat { name: "C.1.2 GCM-AES-256 54 integrity", suite: G256, key: K1_256, sci: 0x12153524C0895E81, an: 2, pn: 0xB2C28465, conf: false, include_sci: true,
          addrs: "D609B1F056637A0D46DF998D", sectag: "88E5222AB2C2846512153524C0895E81", user: C1_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333400012F0BC5AF409E06D609EA8B7D0FA5EA50" },
    Kat { name: "C.1.3 GCM-AES-XPN-128 54 integrity", suite: X128, key: K1_128, sci: 0x12153524C0895E81, an: 2, pn: 0xB0DF459CB2C28465, conf: false, include_sci: true,
          addrs: "D609B1F056637A0D46DF998D", sectag: "88E5222AB2C2846512153524C0895E81", user: C1_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F3031323334000117FE1981EBDD4AFC5062697E8BAA0C23" },
    Kat { name: "C.1.4 GCM-AES-XPN-256 54 integrity", suite: X256, key: K1_256, sci: 0x12153524C0895E81, an: 2, pn: 0xB0DF459CB2C28465, conf: false, include_sci: true,
          addrs: "D609B1F056637A0D46DF998D", sectag: "88E5222AB2C2846512153524C0895E81", user: C1_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333400014DBD2F6A754A6CF728CC129BA6931577" },
    // --- C.2 60-octet frame, integrity: ES, SCI F0761E8DCD3D0001 (implicit), AN 0, PN 76D457ED.
    Kat { name: "C.2.1 GCM-AES-128 60 integrity", suite: G128, key: K2_128, sci: 0xF0761E8DCD3D0001, an: 0, pn: 0x76D457ED, conf: false, include_sci: false,
          addrs: "E20106D7CD0DF0761E8DCD3D", sectag: "88E5400076D457ED", user: C2_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A00030C017BC73B227DFCC9BAFA1C41ACC353" },
    Kat { name: "C.2.2 GCM-AES-256 60 integrity", suite: G256, key: K2_256, sci: 0xF0761E8DCD3D0001, an: 0, pn: 0x76D457ED, conf: false, include_sci: false,
          addrs: "E20106D7CD0DF0761E8DCD3D", sectag: "88E5400076D457ED", user: C2_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A000335217C774BBC31B63166BCF9D4ABED07" },
    // --- C.3 65-octet frame, integrity: SCI 7CFDE9F9E33724C6, AN 3, PN 8932D612.
    Kat { name: "C.3.1 GCM-AES-128 65 integrity", suite: G128, key: K3_128, sci: 0x7CFDE9F9E33724C6, an: 3, pn: 0x8932D612, conf: false, include_sci: true,
          addrs: "84C5D513D2AAF6E5BBD27277", sectag: "88E523008932D6127CFDE9F9E33724C6", user: C3_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F0005217867E50C2DAD74C28C3B50ABDF695A" },
    Kat { name: "C.3.2 GCM-AES-256 65 integrity", suite: G256, key: K3_256, sci: 0x7CFDE9F9E33724C6, an: 3, pn: 0x8932D612, conf: false, include_sci: true,
          addrs: "84C5D513D2AAF6E5BBD27277", sectag: "88E523008932D6127CFDE9F9E33724C6", user: C3_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F00056EE160E8FAECA4B36C86B234920CA975" },
    // --- C.4 79-octet frame, integrity: ES, SCI 7AE8E2CA4EC50001, AN 1, PN 2E58495C.
    Kat { name: "C.4.1 GCM-AES-128 79 integrity", suite: G128, key: K4_128, sci: 0x7AE8E2CA4EC50001, an: 1, pn: 0x2E58495C, conf: false, include_sci: false,
          addrs: "68F2E77696CE7AE8E2CA4EC5", sectag: "88E541002E58495C", user: C4_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D000707922B8EBCF10BB2297588CA4C614523" },
    Kat { name: "C.4.2 GCM-AES-256 79 integrity", suite: G256, key: K4_256, sci: 0x7AE8E2CA4EC50001, an: 1, pn: 0x2E58495C, conf: false, include_sci: false,
          addrs: "68F2E77696CE7AE8E2CA4EC5", sectag: "88E541002E58495C", user: C4_USER,
          secure_icv: "08000F101112131415161718191A1B1C1D1E1F202122232425262728292A2B2C2D2E2F303132333435363738393A3B3C3D3E3F404142434445464748494A4B4C4D000700BDA1B7E87608BCBF470F12157F4C07" },
    // --- C.5 54-octet frame, confidentiality: ES, SCI F0761E8DCD3D0001, AN 0, PN 76D457ED.
    Kat { name: "C.5.1 GCM-AES-128 54 confidentiality", suite: G128, key: K2_128, sci: 0xF0761E8DCD3D0001, an: 0, pn: 0x76D457ED, conf: true, include_sci: false,
          addrs: "E20106D7CD0DF0761E8DCD3D", sectag: "88E54C2A76D457ED", user: C5_USER,
          secure_icv: "13B4C72B389DC5018E72A171DD85A5D3752274D3A019FBCAED09A425CD9B2E1C9B72EEE7C9DE7D52B3F3D6A5284F4A6D3FE22A5D6C2B960494C3" },
    Kat { name: "C.5.2 GCM-AES-256 54 confidentiality", suite: G256, key: K2_256, sci: 0xF0761E8DCD3D0001, an: 0, pn: 0x76D457ED, conf: true, include_sci: false,
          addrs: "E20106D7CD0DF0761E8DCD3D", sectag: "88E54C2A76D457ED", user: C5_USER,
          secure_icv: "C1623F55730C93533097ADDAD25664966125352B43ADACBD61C5EF3AC90B5BEE929CE4630EA79F6CE51912AF39C2D1FDC2051F8B7B3C9D397EF2" },
    Kat { name: "C.5.3 GCM-AES-XPN-128 54 confidentiality", suite: X128, key: K2_128, sci: 0xF0761E8DCD3D0001, an: 0, pn: 0xB0DF459C76D457ED, conf: true, include_sci: false,
          addrs: "E20106D7CD0DF0761E8DCD3D", sectag: "88E54C2A76D457ED", user: C5_USER,
          secure_icv: "9CA46984430203ED416EBDC2FE2622BA3E5EAB6961C36383009E187E9B0C88564653B9ABD216441C6AB6F0A232E9E44C978CF7CD84D43484D101" },
    Kat { name: "C.5.4 GCM-AES-XPN-256 54 confidentiality", suite: X256, key: K2_256, sci: 0xF0761E8DCD3D0001, an: 0, pn: 0xB0DF459C76D457ED, conf: true, include_sci: false,
          addrs: "E20106D7CD0DF0761E8DCD3D", sectag: "88E54C2A76D457ED", user: C5_USER,
          secure_icv: "88D9F7D1F1578EE34BA7B1ABC89893EF1D3398C9F1DD3E47FBD8553E0FF786EF5699EB01EA10420D0EBD39A0E273C4C7F95ED843207D7A497DFA" },
    // --- C.6 60-octet frame, confidentiality: SCI 12153524C0895E81, AN 2, PN B2C28465.
    Kat { name: "C.6.1 GCM-AES-128 60 confidentiality", suite: G128, key: K1_128, sci: 0x12153524C0895E81, an: 2, pn: 0xB2C28465, conf: true, include_sci: true,
          addrs: "D609B1F056637A0D46DF998D", sectag: "88E52E00B2C2846512153524C0895E81", user: C6_USER,
          secure_icv: "701AFA1CC039C0D765128A665DAB69243899BF7318CCDC81C9931DA17FBE8EDD7D17CB8B4C26FC81E3284F2B7FBA713D4F8D55E7D3F06FD5A13C0C29B9D5B880" },
    Kat { name: "C.6.2 GCM-AES-256 60 confidentiality", suite: G256, key: K1_256, sci: 0x12153524C0895E81, an: 2, pn: 0xB2C28465, conf: true, include_sci: true,
          addrs: "D609B1F056637A0D46DF998D", sectag: "88E52E00B2C2846512153524C0895E81", user: C6_USER,
          secure_icv: "E2006EB42F5277022D9B19925BC419D7A592666C925FE2EF718EB4E308EFEAA7C5273B394118860A5BE2A97F56AB78365CA597CDBB3EDB8D1A1151EA0AF7B436" },
    // --- C.7 61-octet frame, confidentiality: SCI 7CFDE9F9E33724C6, AN 3, PN 8932D612.
    Kat { name: "C.7.1 GCM-AES-128 61 confidentiality", suite: G128, key: K3_128, sci: 0x7CFDE9F9E33724C6, an: 3, pn: 0x8932D612, conf: true, include_sci: true,
          addrs: "84C5D513D2AAF6E5BBD27277", sectag: "88E52F008932D6127CFDE9F9E33724C6", user: C7_USER,
          secure_icv: "3A4DE6FA32191014DBB303D92EE3A9E8A1B599C14D22FB080096E13811816A3C9C9BCF7C1B9B96DA809204E29D0E2A7642BFD310A4837C816CCFA5AC23AB003988" },
    Kat { name: "C.7.2 GCM-AES-256 61 confidentiality", suite: G256, key: K3_256, sci: 0x7CFDE9F9E33724C6, an: 3, pn: 0x8932D612, conf: true, include_sci: true,
          addrs: "84C5D513D2AAF6E5BBD27277", sectag: "88E52F008932D6127CFDE9F9E33724C6", user: C7_USER,
          secure_icv: "110222FF8050CBECE66A813AD09A73ED7A9A089C106B959389168ED6E8698EA902EB1277DBEC2E68E473155A15A7DAEED4A10F4E05139C23DF00B3AADC71F0596A" },
    // --- C.8 75-octet frame, confidentiality: ES, SCI 7AE8E2CA4EC50001, AN 1, PN 2E58495C.
    Kat { name: "C.8.1 GCM-AES-128 75 confidentiality", suite: G128, key: K4_128, sci: 0x7AE8E2CA4EC50001, an: 1, pn: 0x2E58495C, conf: true, include_sci: false,
          addrs: "68F2E77696CE7AE8E2CA4EC5", sectag: "88E54D002E58495C", user: C8_USER,
          secure_icv: "C31F53D99E5687F7365119B832D2AAE70741D593F1F9E2AB3455779B078EB8FEACDFEC1F8E3E5277F8180B43361F6512ADB16D2E38548A2C719DBA7228D84088F8757ADB8AA788D8F65AD668BE70E7" },
    Kat { name: "C.8.2 GCM-AES-256 75 confidentiality", suite: G256, key: K4_256, sci: 0x7AE8E2CA4EC50001, an: 1, pn: 0x2E58495C, conf: true, include_sci: false,
          addrs: "68F2E77696CE7AE8E2CA4EC5", sectag: "88E54D002E58495C", user: C8_USER,
          secure_icv: "BA8AE31BC506486D6873E4FCE460E7DC57591FF00611F31C3834FE1C04AD80B66803AFCF5B27E6333FA67C99DA47C2F0CED68D531BD741A943CFF7A6713BD02611CD7DAA01D61C5C886DC1A8170107" },
];

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).expect("hex")
}

fn salt() -> [u8; 12] {
    h(SALT).try_into().unwrap()
}

impl Kat {
    fn plain(&self) -> Vec<u8> {
        h(&format!("{}{}", self.addrs, self.user))
    }
    fn protected(&self) -> Vec<u8> {
        h(&format!("{}{}{}", self.addrs, self.sectag, self.secure_icv))
    }
    fn keys<'a>(&self, key: &'a [u8]) -> KeyParams<'a> {
        let xpn = self.suite.is_xpn();
        KeyParams {
            suite: self.suite,
            key,
            sci: Sci::from_u64(self.sci),
            an: self.an,
            ssci: xpn.then_some(SSCI),
            salt: xpn.then(salt),
        }
    }
    fn tx_opts(&self) -> TxOptions {
        TxOptions {
            confidentiality: self.conf,
            include_sci: self.include_sci,
            es: !self.include_sci,
            scb: false,
        }
    }
    /// A receiver whose lowest acceptable PN is the vector's PN (for XPN: so the upper half is
    /// recovered from it, §10.6.2).
    fn rx_opts(&self) -> RxOptions {
        RxOptions {
            validate: ValidateFrames::Strict,
            replay_protect: true,
            replay_window: 0,
            lowest_pn: self.pn,
        }
    }
}

#[test]
fn annex_c_known_answers_protect_and_verify() {
    for p in PROVIDERS {
        for k in KATS {
            let key = h(k.key);
            let plain = k.plain();
            let want = k.protected();
            // Sanity of the typed vector: the frame length names the vector.
            let mut tx = MacsecTx::new(p, &k.keys(&key), k.tx_opts(), k.pn).unwrap();
            let mut out = vec![0u8; tx.protected_len(plain.len())];
            let n = tx.protect(&plain, &mut out).unwrap();
            assert_eq!(
                hex::encode_upper(&out[..n]),
                hex::encode_upper(&want),
                "{} protect ({})",
                k.name,
                p.name
            );

            let mut rx = MacsecRx::new(p, &k.keys(&key), k.rx_opts()).unwrap();
            let mut back = vec![0u8; want.len()];
            let (n, status) = rx
                .verify(&want, &mut back)
                .unwrap_or_else(|e| panic!("{} verify ({}): {e}", k.name, p.name));
            assert_eq!(status, RxStatus::Ok);
            assert_eq!(
                hex::encode_upper(&back[..n]),
                hex::encode_upper(&plain),
                "{} verify ({})",
                k.name,
                p.name
            );
            assert_eq!(rx.counters().in_pkts_ok, 1);
            assert_eq!(rx.next_pn(), k.pn + 1);
            if k.conf {
                assert_eq!(rx.counters().in_octets_decrypted, (plain.len() - 12) as u64);
            } else {
                assert_eq!(rx.counters().in_octets_validated, (plain.len() - 12) as u64);
            }
        }
    }
}

#[test]
fn annex_c_every_single_bit_flip_is_refused() {
    for p in PROVIDERS {
        for k in KATS
            .iter()
            .filter(|k| k.name.starts_with("C.5") || k.name.starts_with("C.1"))
        {
            let key = h(k.key);
            let want = k.protected();
            for i in 0..want.len() {
                let mut rx = MacsecRx::new(p, &k.keys(&key), k.rx_opts()).unwrap();
                let mut bad = want.clone();
                bad[i] ^= 0x01;
                let r = rx.verify_in_place(&mut bad);
                assert!(r.is_err(), "{} byte {i} flipped accepted: {r:?}", k.name);
                assert_eq!(rx.counters().in_pkts_ok, 0);
                assert_eq!(rx.counters().drops.total(), 1);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Attack tests on a simple SA pair.

const KEY: [u8; 16] = [0x42; 16];
const PEER_SCI: u64 = 0x0200_0000_0001_0001;

fn pair(p: &CryptoProvider, suite: CipherSuite, conf: bool, rx: RxOptions) -> (MacsecTx, MacsecRx) {
    let key = vec![0x42u8; suite.key_len()];
    let xpn = suite.is_xpn();
    let kp = KeyParams {
        suite,
        key: &key,
        sci: Sci::from_u64(PEER_SCI),
        an: 1,
        ssci: xpn.then_some(7),
        salt: xpn.then(salt),
    };
    let tx = MacsecTx::new(
        p,
        &kp,
        TxOptions {
            confidentiality: conf,
            include_sci: true,
            es: false,
            scb: false,
        },
        rx.lowest_pn,
    )
    .unwrap();
    let rx = MacsecRx::new(p, &kp, rx).unwrap();
    (tx, rx)
}

fn plain(n: usize) -> Vec<u8> {
    let mut f = h("0200000000020200000000010800");
    f.extend((0..n).map(|i| i as u8));
    f
}

fn protect(tx: &mut MacsecTx, f: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; tx.protected_len(f.len())];
    let n = tx.protect(f, &mut out).unwrap();
    out.truncate(n);
    out
}

fn strict(window: u32) -> RxOptions {
    RxOptions {
        validate: ValidateFrames::Strict,
        replay_protect: true,
        replay_window: window,
        lowest_pn: 1,
    }
}

fn verify(rx: &mut MacsecRx, f: &[u8]) -> Result<(Vec<u8>, RxStatus), DropReason> {
    let mut buf = f.to_vec();
    let d = rx.verify_in_place(&mut buf)?;
    Ok((buf[d.range].to_vec(), d.status))
}

#[test]
fn replayed_pn_is_a_duplicate() {
    for p in PROVIDERS {
        for suite in CipherSuite::ALL {
            let (mut tx, mut rx) = pair(p, suite, true, strict(16));
            let f1 = protect(&mut tx, &plain(60));
            let f2 = protect(&mut tx, &plain(61));
            assert_eq!(verify(&mut rx, &f2).unwrap().0, plain(61));
            assert_eq!(
                verify(&mut rx, &f1).unwrap().0,
                plain(60),
                "reordered inside the window"
            );
            assert_eq!(verify(&mut rx, &f1), Err(DropReason::ReplayDuplicate));
            assert_eq!(verify(&mut rx, &f2), Err(DropReason::ReplayDuplicate));
            let c = rx.counters();
            assert_eq!(c.in_pkts_ok, 2);
            assert_eq!(c.drops.get(DropReason::ReplayDuplicate), 2);
            assert_eq!(c.in_pkts_late, 0);
        }
    }
}

#[test]
fn pn_below_lowest_acceptable_is_late() {
    for p in PROVIDERS {
        for suite in CipherSuite::ALL {
            // Window 2: after PN 5, lowest acceptable = 6 − 2 = 4.
            let (mut tx, mut rx) = pair(p, suite, false, strict(2));
            let frames: Vec<_> = (0..5).map(|i| protect(&mut tx, &plain(i))).collect();
            verify(&mut rx, &frames[4]).unwrap();
            assert_eq!(rx.lowest_pn(), 4);
            if suite.is_xpn() {
                // XPN (§10.6.2): PN 3 has a low half below lowest's (4), so it is recovered as
                // 2^32 + 3 — never "late", but its ICV fails. Old PNs can't be replayed either way.
                assert_eq!(verify(&mut rx, &frames[2]), Err(DropReason::BadTag));
                assert_eq!(rx.counters().in_pkts_not_valid, 1);
            } else {
                assert_eq!(verify(&mut rx, &frames[2]), Err(DropReason::Late));
                assert_eq!(rx.counters().in_pkts_late, 1);
                assert_eq!(rx.counters().drops.get(DropReason::Late), 1);
            }
            assert_eq!(verify(&mut rx, &frames[3]).unwrap().1, RxStatus::Ok);
            // A configured lowest PN above the frame's.
            let (mut tx, _) = pair(p, suite, false, strict(0));
            let f = protect(&mut tx, &plain(10));
            let (_, mut rx) = pair(
                p,
                suite,
                false,
                RxOptions {
                    lowest_pn: 2,
                    ..strict(0)
                },
            );
            if suite.is_xpn() {
                // §10.6.2: a low half below the lowest PN's low half means the next upper half,
                // so PN 1 is read as 2^32 + 1 — which then fails the ICV.
                assert_eq!(verify(&mut rx, &f), Err(DropReason::BadTag));
            } else {
                assert_eq!(verify(&mut rx, &f), Err(DropReason::Late));
            }
        }
    }
}

#[test]
fn tampered_sectag_payload_icv_are_not_valid() {
    for p in PROVIDERS {
        for suite in CipherSuite::ALL {
            for conf in [false, true] {
                let (mut tx, mut rx) = pair(p, suite, conf, strict(64));
                let good = protect(&mut tx, &plain(100));
                // SecTAG: the PN (authenticated) — the ICV no longer verifies.
                let mut t = good.clone();
                t[19] ^= 0x04;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadTag), "{suite} pn");
                // SecTAG: the V bit — an invalid SecTAG.
                let mut t = good.clone();
                t[14] |= 0x80;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadVersion));
                // SecTAG: E/C cleared on a confidential frame (downgrade) or set on an integrity one.
                let mut t = good.clone();
                t[14] ^= 0x0c;
                assert_eq!(
                    verify(&mut rx, &t),
                    Err(DropReason::BadTag),
                    "{suite} E/C flip"
                );
                // Payload.
                let mut t = good.clone();
                t[40] ^= 0x80;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadTag));
                // ICV.
                let mut t = good.clone();
                let last = t.len() - 1;
                t[last] ^= 0x01;
                assert_eq!(verify(&mut rx, &t), Err(DropReason::BadTag));
                // Truncated below SecTAG + ICV.
                assert_eq!(verify(&mut rx, &good[..30]), Err(DropReason::Truncated));
                let c = rx.counters();
                assert_eq!(c.in_pkts_not_valid, 4);
                assert_eq!(c.in_pkts_bad_tag, 2);
                assert_eq!(c.drops.get(DropReason::BadTag), 4);
                // The good frame still verifies: nothing was marked by the failures.
                assert_eq!(verify(&mut rx, &good).unwrap().0, plain(100));
            }
        }
    }
}

#[test]
fn unknown_sci_and_unused_an() {
    for p in PROVIDERS {
        let other = KeyParams {
            suite: G128,
            key: &KEY,
            sci: Sci::from_u64(0x0200_0000_0009_0001),
            an: 1,
            ssci: None,
            salt: None,
        };
        let mut stranger = MacsecTx::new(
            p,
            &other,
            TxOptions {
                include_sci: true,
                ..Default::default()
            },
            1,
        )
        .unwrap();
        let f = protect(&mut stranger, &plain(50));
        let (_, mut rx) = pair(p, G128, false, strict(0));
        assert_eq!(verify(&mut rx, &f), Err(DropReason::NoSci));
        assert_eq!(rx.counters().in_pkts_no_sci, 1);
        // Check mode, C = 0: delivered unvalidated and counted as InPktsUnknownSCI.
        let (_, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(0)
            },
        );
        assert_eq!(verify(&mut rx, &f), Ok((plain(50), RxStatus::UnknownSci)));
        assert_eq!(rx.counters().in_pkts_unknown_sci, 1);
        // Confidential frames from unknown SCIs are always discarded.
        let mut stranger = MacsecTx::new(
            p,
            &other,
            TxOptions {
                include_sci: true,
                confidentiality: true,
                ..Default::default()
            },
            1,
        )
        .unwrap();
        let f = protect(&mut stranger, &plain(50));
        assert_eq!(verify(&mut rx, &f), Err(DropReason::NoSci));

        // Same SCI, another AN.
        let wrong_an = KeyParams {
            sci: Sci::from_u64(PEER_SCI),
            an: 2,
            ..other
        };
        let mut tx = MacsecTx::new(
            p,
            &wrong_an,
            TxOptions {
                include_sci: true,
                ..Default::default()
            },
            1,
        )
        .unwrap();
        let f = protect(&mut tx, &plain(50));
        let (_, mut rx) = pair(p, G128, false, strict(0));
        assert_eq!(verify(&mut rx, &f), Err(DropReason::NotUsingSa));
        assert_eq!(rx.counters().in_pkts_not_using_sa, 1);
    }
}

#[test]
fn untagged_frames_by_validate_mode() {
    for p in PROVIDERS {
        let (_, mut rx) = pair(p, G128, false, strict(0));
        assert_eq!(verify(&mut rx, &plain(50)), Err(DropReason::Untagged));
        assert_eq!(rx.counters().in_pkts_no_tag, 1);
        assert_eq!(rx.counters().drops.get(DropReason::Untagged), 1);
        let (_, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(0)
            },
        );
        assert_eq!(
            verify(&mut rx, &plain(50)),
            Ok((plain(50), RxStatus::Untagged))
        );
        assert_eq!(rx.counters().in_pkts_untagged, 1);
        assert_eq!(verify(&mut rx, &plain(0)[..13]), Err(DropReason::Truncated));
    }
}

#[test]
fn check_and_disabled_modes() {
    for p in PROVIDERS {
        // Check: a bad ICV on an integrity-only frame is delivered and counted InPktsInvalid.
        let (mut tx, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(8)
            },
        );
        let mut f = protect(&mut tx, &plain(70));
        let last = f.len() - 1;
        f[last] ^= 1;
        assert_eq!(verify(&mut rx, &f), Ok((plain(70), RxStatus::Invalid)));
        assert_eq!(rx.counters().in_pkts_invalid, 1);
        assert_eq!(rx.next_pn(), 1, "an invalid frame does not move nextPN");
        // ... but a bad confidential frame is discarded (InPktsNotValid).
        let (mut tx, mut rx) = pair(
            p,
            G128,
            true,
            RxOptions {
                validate: ValidateFrames::Check,
                ..strict(8)
            },
        );
        let mut f = protect(&mut tx, &plain(70));
        f[30] ^= 1;
        assert_eq!(verify(&mut rx, &f), Err(DropReason::BadTag));
        assert_eq!(rx.counters().in_pkts_not_valid, 1);
        // Disabled: integrity-only frames pass unchecked; confidential frames are still decrypted
        // and checked.
        let (mut tx, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                validate: ValidateFrames::Disabled,
                ..strict(8)
            },
        );
        let mut f = protect(&mut tx, &plain(70));
        let last = f.len() - 1;
        f[last] ^= 1;
        assert_eq!(verify(&mut rx, &f), Ok((plain(70), RxStatus::Unchecked)));
        assert_eq!(rx.counters().in_pkts_unchecked, 1);
        assert_eq!(rx.counters().in_octets_validated, 0);
        let (mut tx, mut rx) = pair(
            p,
            G128,
            true,
            RxOptions {
                validate: ValidateFrames::Disabled,
                ..strict(8)
            },
        );
        let f = protect(&mut tx, &plain(70));
        assert_eq!(verify(&mut rx, &f), Ok((plain(70), RxStatus::Ok)));
        // replayProtect off: a valid frame below the lowest acceptable PN is InPktsDelayed.
        let (mut tx, mut rx) = pair(
            p,
            G128,
            false,
            RxOptions {
                replay_protect: false,
                ..strict(1)
            },
        );
        let a = protect(&mut tx, &plain(1));
        let _ = protect(&mut tx, &plain(2));
        let c = protect(&mut tx, &plain(3));
        verify(&mut rx, &c).unwrap();
        assert_eq!(verify(&mut rx, &a), Ok((plain(1), RxStatus::Delayed)));
        assert_eq!(rx.counters().in_pkts_delayed, 1);
    }
}

#[test]
fn short_frames_use_sl_and_round_trip() {
    for p in PROVIDERS {
        for suite in CipherSuite::ALL {
            for conf in [false, true] {
                let (mut tx, mut rx) = pair(p, suite, conf, strict(0));
                for n in [0usize, 1, 45, 46, 47, 600, 1500] {
                    let pl = plain(n);
                    let f = protect(&mut tx, &pl);
                    let sd = pl.len() - 12;
                    assert_eq!(
                        usize::from(f[15]),
                        if sd < 48 { sd } else { 0 },
                        "SL for {sd}"
                    );
                    assert_eq!(f.len(), pl.len() + 16 + 16);
                    assert_eq!(verify(&mut rx, &f), Ok((pl, RxStatus::Ok)));
                }
            }
        }
    }
}

#[test]
fn xpn_recovers_upper_pn_half_across_the_32_bit_boundary() {
    for p in PROVIDERS {
        for suite in [X128, X256] {
            let start = 0x0000_0005_FFFF_FFFD;
            let (mut tx, mut rx) = pair(
                p,
                suite,
                true,
                RxOptions {
                    lowest_pn: start,
                    ..strict(4)
                },
            );
            for i in 0..6u64 {
                let f = protect(&mut tx, &plain(20));
                assert_eq!(
                    u32::from_be_bytes(f[16..20].try_into().unwrap()),
                    (start + i) as u32
                );
                let d = {
                    let mut b = f.clone();
                    rx.verify_in_place(&mut b).unwrap()
                };
                assert_eq!(d.pn, start + i);
            }
            assert_eq!(rx.next_pn(), 0x0000_0006_0000_0003);
            // Lower half 0 is valid for XPN (and the PN on the wire is 00000000 then 00000001...).
            let (mut tx, mut rx) = pair(
                p,
                suite,
                false,
                RxOptions {
                    lowest_pn: 0x1_0000_0000,
                    ..strict(0)
                },
            );
            let f = protect(&mut tx, &plain(20));
            assert_eq!(&f[16..20], &[0, 0, 0, 0]);
            assert_eq!(
                rx.verify_in_place(&mut f.clone()).unwrap().pn,
                0x1_0000_0000
            );
        }
        // Non-XPN: PN 0 is an invalid SecTAG.
        let (mut tx, mut rx) = pair(p, G128, false, strict(0));
        let mut f = protect(&mut tx, &plain(20));
        f[16..20].fill(0);
        assert_eq!(verify(&mut rx, &f), Err(DropReason::BadSeq));
        assert_eq!(rx.counters().in_pkts_bad_tag, 1);
    }
}

#[test]
fn pn_exhaustion_stops_the_sa() {
    for p in PROVIDERS {
        for (suite, last) in [(G128, u64::from(u32::MAX)), (X128, u64::MAX)] {
            let key = vec![1u8; suite.key_len()];
            let xpn = suite.is_xpn();
            let kp = KeyParams {
                suite,
                key: &key,
                sci: Sci::from_u64(PEER_SCI),
                an: 0,
                ssci: xpn.then_some(1),
                salt: xpn.then(salt),
            };
            let mut tx = MacsecTx::new(p, &kp, TxOptions::default(), last - 1).unwrap();
            let mut rx = MacsecRx::new(
                p,
                &kp,
                RxOptions {
                    lowest_pn: last - 1,
                    ..strict(0)
                },
            )
            .unwrap();
            let a = protect(&mut tx, &plain(5));
            let b = protect(&mut tx, &plain(5));
            assert!(tx.needs_rekey());
            let mut out = vec![0u8; 100];
            assert_eq!(
                tx.protect(&plain(5), &mut out),
                Err(ivnsec_core::sa::ProtectError::SeqExhausted)
            );
            assert!(verify(&mut rx, &a).is_ok());
            assert!(verify(&mut rx, &b).is_ok());
            assert!(verify(&mut rx, &b).is_err());
            assert!(matches!(
                MacsecTx::new(p, &kp, TxOptions::default(), 0),
                Err(MacsecError::BadPn { .. })
            ));
        }
        let kp = KeyParams {
            suite: G128,
            key: &KEY,
            sci: Sci::from_u64(1),
            an: 0,
            ssci: None,
            salt: None,
        };
        assert!(matches!(
            MacsecTx::new(p, &kp, TxOptions::default(), 1 << 32),
            Err(MacsecError::BadPn { .. })
        ));
    }
}

#[test]
fn configuration_errors() {
    let p = PROVIDERS[0];
    let kp = KeyParams {
        suite: X128,
        key: &KEY,
        sci: Sci::from_u64(1),
        an: 0,
        ssci: None,
        salt: None,
    };
    assert!(matches!(
        MacsecRx::new(p, &kp, strict(0)),
        Err(MacsecError::MissingXpnParams { .. })
    ));
    let kp = KeyParams {
        suite: G128,
        ssci: Some(1),
        ..kp
    };
    assert!(matches!(
        MacsecRx::new(p, &kp, strict(0)),
        Err(MacsecError::XpnParamsNotUsed { .. })
    ));
    let kp = KeyParams {
        suite: G256,
        ssci: None,
        ..kp
    };
    assert!(matches!(
        MacsecRx::new(p, &kp, strict(0)),
        Err(MacsecError::BadKeyLength {
            expected: 32,
            got: 16,
            ..
        })
    ));
    let kp = KeyParams {
        suite: G128,
        an: 4,
        ..kp
    };
    assert!(matches!(
        MacsecRx::new(p, &kp, strict(0)),
        Err(MacsecError::BadAn(4))
    ));
}

#[test]
fn hostile_input_never_panics() {
    // Cheap deterministic noise (xorshift) over lengths 0..200 and SecTAG-shaped prefixes.
    let mut s = 0x1234_5678_9abc_def0u64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    for p in PROVIDERS {
        for suite in CipherSuite::ALL {
            for validate in [
                ValidateFrames::Strict,
                ValidateFrames::Check,
                ValidateFrames::Disabled,
            ] {
                let (_, mut rx) = pair(
                    p,
                    suite,
                    false,
                    RxOptions {
                        validate,
                        ..strict(32)
                    },
                );
                for _ in 0..300 {
                    let n = (next() % 200) as usize;
                    let mut f: Vec<u8> = (0..n).map(|_| next() as u8).collect();
                    if n >= 16 && next() % 2 == 0 {
                        f[12] = 0x88;
                        f[13] = 0xe5;
                        f[14] &= 0x2f;
                        f[15] &= 0x3f;
                    }
                    if let Ok(d) = rx.verify_in_place(&mut f) {
                        assert!(d.range.end <= n);
                    }
                }
            }
        }
    }
}

/// Found by the `macsec_verify` fuzz target (2026-11-21, crash-2761ee3c…, selector 0xc6:
/// GCM-AES-XPN-128, validateFrames Check, replay window 0, replayProtect, fast provider): an
/// integrity-only XPN frame with PN 1 validates; the same bytes again are not Late, because XPN
/// PN recovery (802.1AEbw §10.6.2) puts a lower half below that of the lowest acceptable PN (now
/// 2) into the next 2^32 epoch, PN 2^32 + 1. Under that PN the ICV fails, and validateFrames
/// Check delivers an integrity-only frame that fails validation (InPktsInvalid) as the standard
/// says. The intended behaviour, which the target had wrong: a replay is never delivered as
/// validated (Ok or Delayed) and moves no state; with Strict it is discarded (InPktsNotValid).
#[test]
fn fuzz_xpn_replay_in_check_mode_is_delivered_invalid_never_ok() {
    // dst ‖ src ‖ 88e5 ‖ TCI 0x21 (SC, AN 1) ‖ SL 2 ‖ PN 1 ‖ SCI ‖ 0800 ‖ ICV, made by
    // `ivnsec frame protect --profile macsec-gcm-aes-xpn-128 --integrity-only` with the target's
    // key 5a…5a, SCI 0200000000010001, SSCI 7a30c118 and salt (fuzz/seed.sh).
    let frame = h("020000000002020000000001\
                   88e5210200000001020000000001000108001726f8682b1dac1c4199a23b05519035");
    let key = [0x5au8; 16];
    let kp = KeyParams {
        suite: X128,
        key: &key,
        sci: Sci::from_u64(0x0200_0000_0001_0001),
        an: 1,
        ssci: Some(SSCI),
        salt: Some(salt()),
    };
    for p in PROVIDERS {
        for validate in [ValidateFrames::Check, ValidateFrames::Strict] {
            let mut rx = MacsecRx::new(
                p,
                &kp,
                RxOptions {
                    validate,
                    ..strict(0)
                },
            )
            .unwrap();
            let mut b = frame.clone();
            let d = rx.verify_in_place(&mut b).unwrap();
            assert_eq!((d.status, d.pn), (RxStatus::Ok, 1));
            assert_eq!(b[d.range], h("0200000000020200000000010800"));
            assert_eq!(rx.next_pn(), 2);

            let mut b = frame.clone();
            let again = rx.verify_in_place(&mut b);
            if validate == ValidateFrames::Check {
                let d = again.unwrap();
                assert_eq!((d.status, d.pn), (RxStatus::Invalid, 0x1_0000_0001));
                assert_eq!(rx.counters().in_pkts_invalid, 1);
            } else {
                assert_eq!(again, Err(DropReason::BadTag));
                assert_eq!(rx.counters().in_pkts_not_valid, 1);
            }
            assert_eq!(rx.counters().in_pkts_ok, 1, "the replay is not validated");
            assert_eq!(rx.next_pn(), 2, "the replay moves no state");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// CLI

fn ivnsec(args: &[&str], stdin: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ivnsec"));
    c.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("run ivnsec");
    {
        use std::io::Write;
        let mut i = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            i.write_all(s.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().unwrap()
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn cli_annex_c_vectors_both_directions() {
    for k in KATS {
        let pn = k.pn.to_string();
        let sci = format!("{:016x}", k.sci);
        let an = k.an.to_string();
        let mut args = vec![
            "frame",
            "protect",
            "--profile",
            k.suite.profile(),
            "--key",
            k.key,
            "--sci",
            &sci,
            "--an",
            &an,
            "--pn",
            &pn,
        ];
        let ssci = format!("{SSCI:08x}");
        if k.suite.is_xpn() {
            args.extend(["--ssci", &ssci, "--salt", SALT]);
        }
        if !k.conf {
            args.push("--integrity-only");
        }
        if !k.include_sci {
            args.push("--es");
        }
        let plain = format!("{}{}", k.addrs, k.user);
        let prot = ivnsec(&[&args[..], &[plain.as_str()]].concat(), None);
        assert_eq!(
            stdout(&prot).trim(),
            hex::encode(k.protected()),
            "{}",
            k.name
        );

        let mut vargs = vec![
            "frame",
            "verify",
            "--profile",
            k.suite.profile(),
            "--key",
            k.key,
            "--sci",
            &sci,
            "--an",
            &an,
            "--lowest-pn",
            &pn,
        ];
        if k.suite.is_xpn() {
            vargs.extend(["--ssci", &ssci, "--salt", SALT]);
        }
        let frame = hex::encode(k.protected());
        let ver = ivnsec(&[&vargs[..], &[frame.as_str()]].concat(), None);
        assert_eq!(stdout(&ver).trim(), hex::encode(k.plain()), "{}", k.name);
    }
}

#[test]
fn cli_batch_keeps_state_and_reports_drops() {
    let common = [
        "--profile",
        "macsec-gcm-aes-xpn-128",
        "--key",
        "000102030405060708090a0b0c0d0e0f",
        "--sci",
        "0200000000010001",
        "--an",
        "1",
        "--ssci",
        "00000001",
        "--salt",
        "0102030405060708090a0b0c",
    ];
    let frames = "0200000000020200000000010800aabbcc\n020000000002020000000001080011\n";
    let p = ivnsec(
        &[
            &["frame", "protect"][..],
            &common,
            &["--pn", "4294967295", "-"],
        ]
        .concat(),
        Some(frames),
    );
    let out = stdout(&p);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2);
    // First frame replayed at the end; a garbage frame in the middle.
    let batch = format!(
        "{}\n{}\n{}\n0200000000020200000000010800\n",
        lines[0], lines[1], lines[0]
    );
    let v = ivnsec(
        &[
            &["frame", "verify"][..],
            &common,
            &["--lowest-pn", "4294967290", "--replay-window", "8", "-"],
        ]
        .concat(),
        Some(&batch),
    );
    assert_eq!(v.status.code(), Some(1));
    let got = String::from_utf8(v.stdout).unwrap();
    let got: Vec<&str> = got.lines().collect();
    assert_eq!(
        got,
        [
            "0200000000020200000000010800aabbcc",
            "020000000002020000000001080011",
            "DROP replay_duplicate",
            "DROP untagged"
        ]
    );
    let err = String::from_utf8(v.stderr).unwrap();
    assert!(err.contains("InPktsOK=2"), "{err}");
    assert!(err.contains("InPktsNoTag=1"), "{err}");
}

#[test]
fn cli_usage_errors_exit_2() {
    let base = [
        "frame",
        "protect",
        "--profile",
        "macsec-gcm-aes-128",
        "--key",
        "000102030405060708090a0b0c0d0e0f",
    ];
    let o = ivnsec(
        &[
            &base[..],
            &["--an", "0", "--pn", "1", "0200000000020200000000010800"],
        ]
        .concat(),
        None,
    );
    assert_eq!(o.status.code(), Some(2), "missing --sci");
    let o = ivnsec(
        &[
            &base[..],
            &[
                "--sci",
                "01",
                "--an",
                "0",
                "--pn",
                "1",
                "0200000000020200000000010800",
            ],
        ]
        .concat(),
        None,
    );
    assert_eq!(o.status.code(), Some(2), "short --sci");
    let o = ivnsec(
        &[
            &base[..],
            &[
                "--sci",
                "0200000000010001",
                "--an",
                "0",
                "--pn",
                "4294967296",
                "0200000000020200000000010800",
            ],
        ]
        .concat(),
        None,
    );
    assert_eq!(o.status.code(), Some(2), "PN too large for a non-XPN suite");
    let o = ivnsec(
        &[
            "frame",
            "protect",
            "--profile",
            "macsec-gcm-aes-xpn-128",
            "--key",
            "000102030405060708090a0b0c0d0e0f",
            "--sci",
            "0200000000010001",
            "--an",
            "0",
            "--pn",
            "1",
            "0200000000020200000000010800",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "XPN without --ssci/--salt");
    let o = ivnsec(
        &[
            "frame",
            "verify",
            "--profile",
            "macsec-gcm-aes-128",
            "--key",
            "000102030405060708090a0b0c0d0e0f",
            "--sci",
            "0200000000010001",
            "--an",
            "0",
            "--validate",
            "sometimes",
            "00",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "bad --validate");
}
