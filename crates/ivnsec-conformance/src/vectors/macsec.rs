//! MACsec (IEEE 802.1AE-2018, XPN per 802.1AEbw-2013) Annex C known answers: full frames in both
//! directions.
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

use ivnsec_core::sa::macsec::{CipherSuite, KeyParams, RxOptions, TxOptions, ValidateFrames};
use ivnsec_core::wire::macsec::Sci;

use crate::unhex;

/// The XPN salt of the 802.1AEbw Annex C frames.
pub const SALT: &str = "E630E81A48DE86A21C66FA6D";
/// The XPN SSCI of the 802.1AEbw Annex C frames.
pub const SSCI: u32 = 0x7A30_C118;

/// [`SALT`] as bytes.
pub fn salt() -> [u8; 12] {
    unhex(SALT).try_into().unwrap()
}

/// One Annex C frame.
pub struct Kat {
    pub name: &'static str,
    pub suite: CipherSuite,
    pub key: &'static str,
    pub sci: u64,
    pub an: u8,
    pub pn: u64,
    pub conf: bool,
    /// SC bit (SCI in the SecTAG); otherwise ES is set (all Annex C frames without SC have ES).
    pub include_sci: bool,
    /// dst ‖ src.
    pub addrs: &'static str,
    pub sectag: &'static str,
    /// User data (EtherType ‖ payload) of the plain frame.
    pub user: &'static str,
    /// Secure data ‖ ICV of the protected frame.
    pub secure_icv: &'static str,
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
pub const KATS: &[Kat] = &[
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

impl Kat {
    /// The plain frame: dst ‖ src ‖ user data.
    pub fn plain(&self) -> Vec<u8> {
        unhex(&format!("{}{}", self.addrs, self.user))
    }
    /// The protected frame: dst ‖ src ‖ SecTAG ‖ secure data ‖ ICV.
    pub fn protected(&self) -> Vec<u8> {
        unhex(&format!("{}{}{}", self.addrs, self.sectag, self.secure_icv))
    }
    /// The SA of the vector, with `key` (the bytes of [`Kat::key`]).
    pub fn keys<'a>(&self, key: &'a [u8]) -> KeyParams<'a> {
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
    /// The transmit options that produce the vector's SecTAG.
    pub fn tx_opts(&self) -> TxOptions {
        TxOptions {
            confidentiality: self.conf,
            include_sci: self.include_sci,
            es: !self.include_sci,
            scb: false,
        }
    }
    /// A receiver whose lowest acceptable PN is the vector's PN (for XPN: so the upper half is
    /// recovered from it, §10.6.2).
    pub fn rx_opts(&self) -> RxOptions {
        RxOptions {
            validate: ValidateFrames::Strict,
            replay_protect: true,
            replay_window: 0,
            lowest_pn: self.pn,
        }
    }
}
