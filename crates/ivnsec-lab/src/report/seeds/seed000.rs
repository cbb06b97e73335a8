//! The figures seed 000 (UFPE master's thesis, 2017) reports for its ping-pong experiment, the
//! baseline our reports print beside their own numbers.
//!
//! - Per scenario: Appendix A, tables "t_owd (us)" (one-way delay, parts 1+2+5+4 of Fig. 16,
//!   our `owd_forward`) and "T iteration (us)" (complete iteration, our `rtt`): mean, min, max,
//!   standard deviation and median in µs for all 56 scenarios. In the text extraction the t_owd
//!   rows repeat the mean twice; the duplicate is dropped here.
//! - Per payload over the 48 AE scenarios: §4.2.1 Table 4 (OWD) and §4.2.2 Table 5 (complete
//!   iteration) give the [lowest, highest] mean, minimum and maximum, rounded to 1 µs. They are
//!   the ranges of the Appendix A rows (a test checks that).
//! - §4.3: the Wilcoxon one-sided 99 % median bounds of the four AES-256 / HMAC-SHA-256 OWD
//!   scenarios.
//!
//! Labels map to our profiles: "no crypto" → `plain`, "crc32" → `crc32`, "K/shaH" →
//! `aesK-cbc-hmac-shaH` ("shamd5" → `md5`).

/// Mean, minimum, maximum, standard deviation and median in µs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub std: f64,
    pub median: f64,
}

/// One scenario of seed 000 Appendix A.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SeedRow {
    pub payload: usize,
    /// The seed's own label "payload/AES key/HMAC" ("64/128/shamd5", "64/crc32", "64/no crypto").
    pub label: &'static str,
    /// Our profile name.
    pub profile: &'static str,
    /// t_owd: one-way delay (our `owd_forward`).
    pub owd: Figures,
    /// T iteration: complete iteration (our `rtt`).
    pub rtt: Figures,
}

const fn figs(v: [f64; 5]) -> Figures {
    Figures {
        mean: v[0],
        min: v[1],
        max: v[2],
        std: v[3],
        median: v[4],
    }
}

const fn row(
    payload: usize,
    label: &'static str,
    profile: &'static str,
    owd: [f64; 5],
    rtt: [f64; 5],
) -> SeedRow {
    SeedRow {
        payload,
        label,
        profile,
        owd: figs(owd),
        rtt: figs(rtt),
    }
}

/// Seed 000 Appendix A, "t_owd (us)" and "T iteration (us)": [mean, min, max, std, median].
pub const APPENDIX_A: [SeedRow; 56] = [
    row(
        64,
        "64/128/shamd5",
        "aes128-cbc-hmac-md5",
        [277.1, 258.8, 340.3, 5.1, 275.5],
        [526.1, 490.4, 594.9, 7.5, 523.9],
    ),
    row(
        64,
        "64/128/sha1",
        "aes128-cbc-hmac-sha1",
        [280.6, 261.5, 344.9, 5.6, 278.8],
        [530.5, 492.9, 596.9, 7.3, 530.5],
    ),
    row(
        64,
        "64/128/sha224",
        "aes128-cbc-hmac-sha224",
        [284.5, 263.0, 348.4, 5.3, 282.9],
        [539.8, 497.5, 633.4, 7.9, 537.6],
    ),
    row(
        64,
        "64/128/sha256",
        "aes128-cbc-hmac-sha256",
        [286.8, 274.3, 355.5, 5.9, 284.7],
        [544.4, 520.0, 618.8, 9.0, 541.0],
    ),
    row(
        64,
        "64/192/shamd5",
        "aes192-cbc-hmac-md5",
        [278.8, 255.5, 340.9, 5.2, 277.5],
        [526.4, 481.0, 591.1, 6.4, 526.5],
    ),
    row(
        64,
        "64/192/sha1",
        "aes192-cbc-hmac-sha1",
        [280.1, 260.9, 345.7, 5.4, 279.2],
        [530.6, 492.8, 597.0, 7.0, 530.5],
    ),
    row(
        64,
        "64/192/sha224",
        "aes192-cbc-hmac-sha224",
        [286.2, 264.2, 349.4, 5.7, 284.7],
        [541.5, 498.5, 651.6, 8.1, 540.4],
    ),
    row(
        64,
        "64/192/sha256",
        "aes192-cbc-hmac-sha256",
        [288.2, 265.3, 394.9, 6.8, 285.8],
        [545.8, 500.8, 651.2, 9.9, 541.8],
    ),
    row(
        64,
        "64/256/shamd5",
        "aes256-cbc-hmac-md5",
        [277.9, 259.4, 341.9, 5.2, 276.9],
        [528.0, 491.4, 593.8, 6.6, 528.3],
    ),
    row(
        64,
        "64/256/sha1",
        "aes256-cbc-hmac-sha1",
        [280.9, 262.2, 344.1, 5.1, 279.3],
        [530.5, 494.3, 593.2, 6.5, 528.8],
    ),
    row(
        64,
        "64/256/sha224",
        "aes256-cbc-hmac-sha224",
        [285.7, 264.5, 349.0, 5.3, 284.5],
        [543.7, 501.7, 608.3, 7.6, 543.3],
    ),
    row(
        64,
        "64/256/sha256",
        "aes256-cbc-hmac-sha256",
        [288.9, 274.3, 351.9, 5.4, 287.2],
        [549.4, 521.3, 654.7, 7.7, 547.3],
    ),
    row(
        128,
        "128/128/shamd5",
        "aes128-cbc-hmac-md5",
        [354.1, 334.9, 467.0, 5.8, 353.3],
        [657.0, 627.8, 774.1, 7.6, 657.3],
    ),
    row(
        128,
        "128/128/sha1",
        "aes128-cbc-hmac-sha1",
        [358.3, 337.3, 480.7, 6.6, 356.9],
        [666.0, 625.0, 788.1, 8.3, 665.7],
    ),
    row(
        128,
        "128/128/sha224",
        "aes128-cbc-hmac-sha224",
        [363.1, 349.8, 427.5, 5.6, 361.4],
        [674.8, 649.6, 738.3, 6.7, 673.7],
    ),
    row(
        128,
        "128/128/sha256",
        "aes128-cbc-hmac-sha256",
        [364.3, 350.7, 428.8, 5.5, 362.4],
        [678.2, 651.4, 750.3, 8.4, 675.7],
    ),
    row(
        128,
        "128/192/shamd5",
        "aes192-cbc-hmac-md5",
        [357.5, 337.0, 423.0, 5.7, 356.5],
        [666.1, 624.5, 783.1, 8.5, 665.4],
    ),
    row(
        128,
        "128/192/sha1",
        "aes192-cbc-hmac-sha1",
        [359.2, 339.5, 466.9, 6.4, 357.7],
        [666.8, 628.7, 774.9, 7.7, 667.2],
    ),
    row(
        128,
        "128/192/sha224",
        "aes192-cbc-hmac-sha224",
        [363.6, 350.8, 427.2, 5.5, 361.8],
        [677.6, 652.1, 795.9, 8.7, 676.3],
    ),
    row(
        128,
        "128/192/sha256",
        "aes192-cbc-hmac-sha256",
        [367.4, 351.3, 432.4, 5.8, 365.9],
        [685.9, 653.0, 804.1, 9.3, 684.8],
    ),
    row(
        128,
        "128/256/shamd5",
        "aes256-cbc-hmac-md5",
        [351.4, 333.1, 417.9, 5.7, 350.3],
        [660.6, 625.2, 727.6, 7.8, 660.1],
    ),
    row(
        128,
        "128/256/sha1",
        "aes256-cbc-hmac-sha1",
        [355.5, 334.8, 420.2, 5.7, 353.5],
        [670.6, 628.4, 736.7, 8.0, 669.8],
    ),
    row(
        128,
        "128/256/sha224",
        "aes256-cbc-hmac-sha224",
        [359.0, 340.9, 423.3, 5.9, 357.3],
        [674.7, 638.9, 747.4, 9.6, 672.9],
    ),
    row(
        128,
        "128/256/sha256",
        "aes256-cbc-hmac-sha256",
        [362.5, 346.2, 427.5, 5.6, 361.5],
        [680.7, 649.4, 745.2, 6.5, 681.1],
    ),
    row(
        736,
        "736/128/shamd5",
        "aes128-cbc-hmac-md5",
        [1076.6, 1066.1, 1140.0, 4.5, 1076.5],
        [1937.5, 1918.2, 2000.7, 7.1, 1937.4],
    ),
    row(
        736,
        "736/128/sha1",
        "aes128-cbc-hmac-sha1",
        [1081.2, 1064.1, 1199.6, 8.3, 1080.2],
        [1963.3, 1922.6, 2081.7, 11.6, 1961.3],
    ),
    row(
        736,
        "736/128/sha224",
        "aes128-cbc-hmac-sha224",
        [1108.8, 1090.7, 1172.3, 6.5, 1107.7],
        [1975.8, 1947.6, 2042.9, 8.0, 1977.5],
    ),
    row(
        736,
        "736/128/sha256",
        "aes128-cbc-hmac-sha256",
        [1111.6, 1095.0, 1183.6, 7.2, 1111.4],
        [1984.1, 1950.6, 2060.2, 10.0, 1983.9],
    ),
    row(
        736,
        "736/192/shamd5",
        "aes192-cbc-hmac-md5",
        [1081.2, 1056.0, 1146.5, 5.5, 1080.7],
        [1963.4, 1920.9, 2034.4, 8.1, 1962.7],
    ),
    row(
        736,
        "736/192/sha1",
        "aes192-cbc-hmac-sha1",
        [1089.6, 1066.7, 1199.9, 8.5, 1090.5],
        [1978.9, 1935.1, 2094.3, 12.6, 1978.0],
    ),
    row(
        736,
        "736/192/sha224",
        "aes192-cbc-hmac-sha224",
        [1094.7, 1071.4, 1209.4, 8.9, 1094.3],
        [1990.1, 1952.4, 2105.6, 10.7, 1989.5],
    ),
    row(
        736,
        "736/192/sha256",
        "aes192-cbc-hmac-sha256",
        [1095.5, 1082.5, 1165.8, 6.6, 1094.3],
        [1989.5, 1970.4, 2056.0, 8.6, 1989.3],
    ),
    row(
        736,
        "736/256/shamd5",
        "aes256-cbc-hmac-md5",
        [1089.0, 1067.0, 1213.8, 8.9, 1088.3],
        [1979.4, 1943.4, 2163.6, 13.5, 1978.0],
    ),
    row(
        736,
        "736/256/sha1",
        "aes256-cbc-hmac-sha1",
        [1094.9, 1080.3, 1162.4, 7.6, 1094.0],
        [1987.7, 1963.6, 2055.5, 8.8, 1989.0],
    ),
    row(
        736,
        "736/256/sha224",
        "aes256-cbc-hmac-sha224",
        [1117.0, 1096.4, 1183.5, 7.1, 1115.9],
        [2011.3, 1965.8, 2080.8, 9.8, 2012.1],
    ),
    row(
        736,
        "736/256/sha256",
        "aes256-cbc-hmac-sha256",
        [1121.4, 1101.9, 1240.2, 8.8, 1119.8],
        [2020.8, 1984.3, 2144.8, 11.6, 2018.4],
    ),
    row(
        1440,
        "1440/128/shamd5",
        "aes128-cbc-hmac-md5",
        [1923.0, 1906.7, 2039.1, 9.5, 1921.8],
        [3423.3, 3395.3, 3546.3, 13.2, 3422.9],
    ),
    row(
        1440,
        "1440/128/sha1",
        "aes128-cbc-hmac-sha1",
        [1927.6, 1911.7, 1991.0, 8.5, 1926.8],
        [3470.8, 3437.3, 3590.0, 11.7, 3469.5],
    ),
    row(
        1440,
        "1440/128/sha224",
        "aes128-cbc-hmac-sha224",
        [1971.5, 1953.0, 2082.1, 9.5, 1970.7],
        [3479.9, 3455.7, 3595.6, 11.7, 3477.6],
    ),
    row(
        1440,
        "1440/128/sha256",
        "aes128-cbc-hmac-sha256",
        [1975.7, 1957.2, 2090.1, 9.9, 1974.9],
        [3488.2, 3456.6, 3607.3, 12.5, 3486.4],
    ),
    row(
        1440,
        "1440/192/shamd5",
        "aes192-cbc-hmac-md5",
        [1934.6, 1916.8, 2045.4, 9.6, 1933.7],
        [3484.0, 3453.2, 3642.8, 12.1, 3481.6],
    ),
    row(
        1440,
        "1440/192/sha1",
        "aes192-cbc-hmac-sha1",
        [1936.2, 1914.8, 2048.2, 8.8, 1934.3],
        [3488.8, 3448.9, 3654.9, 13.3, 3487.0],
    ),
    row(
        1440,
        "1440/192/sha224",
        "aes192-cbc-hmac-sha224",
        [1940.2, 1924.0, 2052.7, 9.2, 1938.4],
        [3496.0, 3462.1, 3609.9, 12.4, 3493.6],
    ),
    row(
        1440,
        "1440/192/sha256",
        "aes192-cbc-hmac-sha256",
        [1943.1, 1926.0, 2057.6, 9.0, 1942.0],
        [3501.8, 3464.1, 3624.3, 12.8, 3499.0],
    ),
    row(
        1440,
        "1440/256/shamd5",
        "aes256-cbc-hmac-md5",
        [1940.6, 1929.3, 2052.9, 8.9, 1939.2],
        [3496.6, 3475.8, 3613.5, 12.0, 3493.5],
    ),
    row(
        1440,
        "1440/256/sha1",
        "aes256-cbc-hmac-sha1",
        [1945.2, 1925.1, 2057.3, 9.1, 1944.0],
        [3505.8, 3474.7, 3618.0, 11.7, 3504.4],
    ),
    row(
        1440,
        "1440/256/sha224",
        "aes256-cbc-hmac-sha224",
        [1991.3, 1972.2, 2103.1, 9.9, 1990.6],
        [3558.1, 3524.2, 3670.8, 12.8, 3556.3],
    ),
    row(
        1440,
        "1440/256/sha256",
        "aes256-cbc-hmac-sha256",
        [1992.8, 1979.3, 2109.8, 8.9, 1992.9],
        [3561.1, 3533.1, 3677.8, 12.2, 3560.2],
    ),
    row(
        64,
        "64/crc32",
        "crc32",
        [225.1, 208.1, 289.5, 4.3, 224.0],
        [441.0, 407.0, 504.5, 6.0, 440.7],
    ),
    row(
        128,
        "128/crc32",
        "crc32",
        [272.1, 254.3, 391.1, 6.6, 270.8],
        [533.9, 498.0, 705.1, 8.4, 533.5],
    ),
    row(
        736,
        "736/crc32",
        "crc32",
        [732.7, 717.4, 763.7, 4.1, 734.2],
        [1421.0, 1392.2, 1484.9, 6.0, 1420.8],
    ),
    row(
        1440,
        "1440/crc32",
        "crc32",
        [1261.9, 1242.9, 1337.1, 10.0, 1263.0],
        [2448.6, 2403.9, 2526.7, 11.7, 2448.1],
    ),
    row(
        64,
        "64/no crypto",
        "plain",
        [176.0, 157.3, 238.4, 2.8, 175.5],
        [342.9, 305.7, 406.7, 5.0, 342.0],
    ),
    row(
        128,
        "128/no crypto",
        "plain",
        [191.0, 172.6, 253.5, 3.4, 190.2],
        [371.8, 334.9, 433.7, 5.8, 370.4],
    ),
    row(
        736,
        "736/no crypto",
        "plain",
        [340.7, 330.6, 406.6, 4.0, 339.8],
        [661.4, 641.2, 727.0, 6.4, 660.2],
    ),
    row(
        1440,
        "1440/no crypto",
        "plain",
        [511.7, 498.7, 550.3, 2.9, 510.9],
        [993.7, 966.7, 1062.4, 5.8, 992.2],
    ),
];

/// A [lowest, highest] range across scenarios, in µs.
pub type Range = [f64; 2];

/// One row of seed 000 Table 4 or 5: ranges across the 12 AE scenarios of one payload.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeRow {
    pub payload: usize,
    pub mean: Range,
    pub min: Range,
    pub max: Range,
}

const fn rr(payload: usize, mean: Range, min: Range, max: Range) -> RangeRow {
    RangeRow {
        payload,
        mean,
        min,
        max,
    }
}

/// Seed 000 §4.2.1 Table 4: OWD mean, minimum and maximum across the AE scenarios (µs).
pub const TABLE_4_OWD: [RangeRow; 4] = [
    rr(64, [277.0, 289.0], [256.0, 274.0], [340.0, 395.0]),
    rr(128, [351.0, 367.0], [333.0, 351.0], [418.0, 481.0]),
    rr(736, [1077.0, 1121.0], [1056.0, 1102.0], [1140.0, 1240.0]),
    rr(1440, [1923.0, 1993.0], [1907.0, 1979.0], [1991.0, 2110.0]),
];

/// Seed 000 §4.2.2 Table 5: complete-iteration mean, minimum and maximum across the AE
/// scenarios (µs).
pub const TABLE_5_RTT: [RangeRow; 4] = [
    rr(64, [526.0, 549.0], [481.0, 521.0], [591.0, 655.0]),
    rr(128, [657.0, 686.0], [625.0, 653.0], [728.0, 804.0]),
    rr(736, [1938.0, 2021.0], [1918.0, 1984.0], [2001.0, 2164.0]),
    rr(1440, [3423.0, 3561.0], [3395.0, 3533.0], [3546.0, 3678.0]),
];

/// The profile seed 000 §4.3 tested with Wilcoxon and drew box plots of (Fig. 27–30).
pub const WILCOXON_PROFILE: &str = "aes256-cbc-hmac-sha256";

/// Seed 000 §4.3: OWD median bounds (µs) for which "median ≥ m" was rejected at 99 %, for
/// `WILCOXON_PROFILE`, by payload.
pub const WILCOXON_OWD: [(usize, f64); 4] =
    [(64, 289.0), (128, 363.0), (736, 1121.0), (1440, 1993.0)];

/// Seed 000 §4.2.3: extrapolating Fig. 20, a payload above 1600 bytes would cross 2.5 ms.
pub const FIG20_CROSSING_ABOVE_BYTES: f64 = 1600.0;

/// The seed's payload sizes (§3.3, Table 3).
pub const PAYLOADS: [usize; 4] = [64, 128, 736, 1440];

/// Whether a profile belongs to the seed's 48 AE scenarios (AES-CBC + HMAC, Table 3).
pub fn is_seed_ae_profile(profile: &str) -> bool {
    APPENDIX_A
        .iter()
        .any(|r| r.profile == profile && r.profile.starts_with("aes"))
}

/// The seed's row for a profile and payload, if the seed measured that scenario.
pub fn lookup(profile: &str, payload: usize) -> Option<&'static SeedRow> {
    APPENDIX_A
        .iter()
        .find(|r| r.profile == profile && r.payload == payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(payload: usize, f: impl Fn(&SeedRow) -> f64) -> Range {
        let v: Vec<f64> = APPENDIX_A
            .iter()
            .filter(|r| r.payload == payload && is_seed_ae_profile(r.profile))
            .map(f)
            .collect();
        assert_eq!(v.len(), 12, "12 AE scenarios per payload");
        let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        [lo.round(), hi.round()]
    }

    /// Tables 4 and 5 are the rounded ranges of the Appendix A rows: checks the transcription
    /// of both against each other.
    #[test]
    fn tables_4_and_5_are_the_ranges_of_appendix_a() {
        for t in TABLE_4_OWD {
            assert_eq!(
                range(t.payload, |r| r.owd.mean),
                t.mean,
                "T4 mean {}",
                t.payload
            );
            assert_eq!(
                range(t.payload, |r| r.owd.min),
                t.min,
                "T4 min {}",
                t.payload
            );
            assert_eq!(
                range(t.payload, |r| r.owd.max),
                t.max,
                "T4 max {}",
                t.payload
            );
        }
        for t in TABLE_5_RTT {
            assert_eq!(
                range(t.payload, |r| r.rtt.mean),
                t.mean,
                "T5 mean {}",
                t.payload
            );
            assert_eq!(
                range(t.payload, |r| r.rtt.min),
                t.min,
                "T5 min {}",
                t.payload
            );
            assert_eq!(
                range(t.payload, |r| r.rtt.max),
                t.max,
                "T5 max {}",
                t.payload
            );
        }
    }

    #[test]
    fn appendix_covers_the_56_scenario_matrix() {
        for p in PAYLOADS {
            for k in [128, 192, 256] {
                for h in ["md5", "sha1", "sha224", "sha256"] {
                    let prof = format!("aes{k}-cbc-hmac-{h}");
                    assert!(lookup(&prof, p).is_some(), "{prof}@{p}");
                }
            }
            assert!(lookup("crc32", p).is_some());
            assert!(lookup("plain", p).is_some());
        }
        // Sanity of the row contents: min ≤ median ≤ max and min ≤ mean ≤ max.
        for r in APPENDIX_A {
            for f in [r.owd, r.rtt] {
                assert!(
                    f.min <= f.mean && f.mean <= f.max,
                    "{}/{}",
                    r.payload,
                    r.label
                );
                assert!(
                    f.min <= f.median && f.median <= f.max,
                    "{}/{}",
                    r.payload,
                    r.label
                );
            }
            assert!(r.owd.mean < r.rtt.mean);
        }
        // §4.3 quotes the 1440-byte AES-256/SHA-256 maximum as 2109.75 µs.
        let r = lookup(WILCOXON_PROFILE, 1440).unwrap();
        assert_eq!(r.owd.max, 2109.8);
    }
}
