use super::aead::GCM_P60;
use super::data::{Data, hex};
use super::mac::RFC4231_TC7_DATA;
use super::*;

/// The tables themselves: hex decodes, fields have the lengths their algorithm needs.
#[test]
fn vector_tables_are_well_formed() {
    let decoded = |d: Data| d.bytes().unwrap_or_else(|e| panic!("{e}"));
    for v in AES_BLOCK {
        assert_eq!(decoded(v.key).len(), v.alg.key_len(), "{}", v.name);
        assert_eq!(decoded(v.pt).len(), 16, "{}", v.name);
        assert_eq!(decoded(v.ct).len(), 16, "{}", v.name);
    }
    for v in CBC.iter().chain(CTR) {
        assert_eq!(decoded(v.key).len(), v.alg.key_len(), "{}", v.name);
        assert_eq!(decoded(v.iv).len(), 16, "{}", v.name);
        assert_eq!(decoded(v.pt).len(), decoded(v.ct).len(), "{}", v.name);
    }
    for v in GCM.iter().chain(CCM).chain(CHACHA20_POLY1305) {
        assert_eq!(decoded(v.key).len(), v.alg.key_len(), "{}", v.name);
        assert_eq!(decoded(v.nonce).len(), AEAD_NONCE_LEN, "{}", v.name);
        assert_eq!(decoded(v.tag).len(), AEAD_TAG_LEN, "{}", v.name);
        assert_eq!(decoded(v.pt).len(), decoded(v.ct).len(), "{}", v.name);
        decoded(v.aad);
    }
    for v in HMAC.iter().chain(CMAC) {
        decoded(v.key);
        decoded(v.msg);
        let n = decoded(v.mac).len();
        assert!(n >= 12 && n <= v.alg.output_len(), "{}", v.name);
    }
    // Lengths the documents state.
    assert_eq!(decoded(CHACHA20_POLY1305[0].pt).len(), 114);
    assert_eq!(decoded(CHACHA20_POLY1305[1].pt).len(), 265);
    assert_eq!(decoded(GCM_P60).len(), 60);
    assert_eq!(decoded(RFC4231_TC7_DATA).len(), 152);
}

#[test]
fn hex_decoder() {
    assert_eq!(hex("00ff A0\n 1b"), Ok(alloc::vec![0x00, 0xff, 0xa0, 0x1b]));
    assert!(hex("0").is_err());
    assert!(hex("0g").is_err());
    assert_eq!(
        Data::Count(0xfe, 3).bytes(),
        Ok(alloc::vec![0xfe, 0xff, 0x00])
    );
}
