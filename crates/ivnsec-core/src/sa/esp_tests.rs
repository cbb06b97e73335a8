use super::SpiRange;

/// The boundaries RFC 4303 §2.1 draws.
#[test]
fn spi_ranges_follow_rfc4303_section_2_1() {
    assert_eq!(SpiRange::of(0), SpiRange::Local);
    assert_eq!(SpiRange::of(1), SpiRange::IanaReserved);
    assert_eq!(SpiRange::of(52), SpiRange::IanaReserved);
    assert_eq!(SpiRange::of(255), SpiRange::IanaReserved);
    assert_eq!(SpiRange::of(256), SpiRange::Assignable);
    assert_eq!(SpiRange::of(u32::MAX), SpiRange::Assignable);
}
