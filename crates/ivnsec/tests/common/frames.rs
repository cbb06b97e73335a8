//! Frames and captures taken apart or put together by hand, from the formats' definitions (not
//! by the code under test).

/// The 128-bit key of the frame tests: 00 01 … 0f.
pub const KEY: &str = "000102030405060708090a0b0c0d0e0f";

/// A classic pcap file (microsecond magic, little-endian, Ethernet) holding `frames`, written
/// byte by byte from pcap-savefile(5); frame `i` is stamped 1 700 000 000 + `i` seconds.
pub fn pcap<F: AsRef<[u8]>>(frames: &[F]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    f.extend_from_slice(&2u16.to_le_bytes());
    f.extend_from_slice(&4u16.to_le_bytes());
    for w in [0u32, 0, 65535, 1] {
        f.extend_from_slice(&w.to_le_bytes());
    }
    for (i, fr) in frames.iter().enumerate() {
        let fr = fr.as_ref();
        let len = u32::try_from(fr.len()).unwrap();
        for w in [1_700_000_000 + u32::try_from(i).unwrap(), 0, len, len] {
            f.extend_from_slice(&w.to_le_bytes());
        }
        f.extend_from_slice(fr);
    }
    f
}

/// The MACsec EtherType (IEEE 802.1AE).
pub const ETH_MACSEC: [u8; 2] = [0x88, 0xE5];

/// (SCI, 32-bit PN) of the MACsec frames (with an SCI) among `frames`, in capture order.
pub fn macsec_pns(frames: &[Vec<u8>]) -> Vec<(u64, u32)> {
    frames
        .iter()
        .filter(|f| f.len() >= 28 && f[12..14] == ETH_MACSEC)
        .map(|f| sci_pn(f))
        .collect()
}

/// (SCI, 32-bit PN) of every frame of `frames`; panics on a frame that is not MACsec or whose
/// SecTAG carries no SCI.
pub fn only_macsec_pns(frames: &[Vec<u8>]) -> Vec<(u64, u32)> {
    frames
        .iter()
        .map(|f| {
            assert_eq!(
                &f[12..14],
                &ETH_MACSEC,
                "a frame that is not MACsec crossed the veth: {}",
                hex::encode(&f[..f.len().min(64)])
            );
            assert_eq!(f[14] & 0x20, 0x20, "SC bit: the SCI is in the SecTAG");
            sci_pn(f)
        })
        .collect()
}

/// (SCI, PN) of a MACsec frame whose SecTAG carries the SCI.
fn sci_pn(f: &[u8]) -> (u64, u32) {
    (
        u64::from_be_bytes(f[20..28].try_into().unwrap()),
        u32::from_be_bytes(f[16..20].try_into().unwrap()),
    )
}
