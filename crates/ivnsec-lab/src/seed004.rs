//! The figures seed 004 (Q. Delhaye: "Implementation of High-Level Cryptographic Protocols using
//! a SoC Platform", ULB master's thesis, 2015) reports for TLS connections (chapter 5 §5.1): an
//! OpenVPN server on an ARM board (Barco Silex BA414E public-key engine for the hardware
//! column), ten OpenVPN clients in a virtual machine renegotiating every second (§4.2, listing
//! 4.1), TLS with DHE and RSA-1024/2048/4096 (`tls-cipher TLS-DHE-RSA-WITH-AES-256-CBC-SHA`,
//! the client configuration, listing B.1; the server's `dh dh1024.pem` … `dh4096.pem`, listing
//! B.2), the data channel aes-256-cbc (Table 5.1's caption).
//! `ivnsec tls-bench` prints them beside its own figures (docs/tls-bench.md), and the
//! `[[tls_bench]]` and `[[chunk_bench]]` report sections beside a plan's.
//!
//! The text extraction of Table 5.2 is damaged: the header row reads `F RSA-102 4 RSA-2048
//! RSA-4096 6` and the hardware row's ratios `X1.14 X2./U X3.09`. The figures themselves are
//! whole (one decimal), and the software row's ratios (×1.14, ×2.70, ×5.89) are what the
//! figures give, truncated to two decimals (509.3 / 445.4 = 1.143, 420.9 / 155.6 = 2.705,
//! 115.5 / 19.6 = 5.893), so the damaged copies are those same ratios. The row labels of
//! Table 5.1 are damaged too (`N3A-1024`, `K3A-4090` for RSA-1024, RSA-4096); the order is
//! soft, BA411E per size (the seed prints BA411E there, BA414E in Table 5.2; the public-key
//! engine is the BA414E, §3.2 Table 3.1).
//!
//! The ceiling is the clients, not the server: ten clients connecting once a second allow at
//! most 600 connections per minute (§4.2, §5.1), which is why RSA-1024 barely gains from the
//! hardware ("the number of clients is probably too low to push the configuration to its
//! limits", §5.1). The CPU is the server board's.

/// One RSA size of Table 5.2 (and its connection times of Table 5.1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TlsRow {
    /// RSA modulus (and DH) size in bits.
    pub rsa_bits: u32,
    /// Software (OpenSSL on the ARM core): connections per minute, CPU %.
    pub soft_per_min: f64,
    pub soft_cpu_pct: f64,
    /// Hardware (BA414E): connections per minute, CPU %.
    pub hw_per_min: f64,
    pub hw_cpu_pct: f64,
    /// Table 5.1: seconds to establish one connection, software and hardware.
    pub soft_connect_s: f64,
    pub hw_connect_s: f64,
}

/// Seed 004 Table 5.2 (connections per minute and CPU %, ten clients) with Table 5.1's
/// connection times.
pub const TABLE_5_2: [TlsRow; 3] = [
    TlsRow {
        rsa_bits: 1024,
        soft_per_min: 445.4,
        soft_cpu_pct: 40.32,
        hw_per_min: 509.3,
        hw_cpu_pct: 13.29,
        soft_connect_s: 0.041921,
        hw_connect_s: 0.020312,
    },
    TlsRow {
        rsa_bits: 2048,
        soft_per_min: 155.6,
        soft_cpu_pct: 92.14,
        hw_per_min: 420.9,
        hw_cpu_pct: 4.82,
        soft_connect_s: 0.202945,
        hw_connect_s: 0.039965,
    },
    TlsRow {
        rsa_bits: 4096,
        soft_per_min: 19.6,
        soft_cpu_pct: 81.97,
        hw_per_min: 115.5,
        hw_cpu_pct: 4.34,
        soft_connect_s: 1.436743,
        hw_connect_s: 0.183533,
    },
];

/// Clients of the seed's run (§4.2).
pub const CLIENTS: u32 = 10;
/// The most connections per minute ten clients renegotiating once a second can make (§4.2).
pub const CEILING_PER_MIN: f64 = 600.0;

/// Seed 004 §6.1 ("Conditional offloading in cryptodev"): the packet size from which its
/// BA411E engine (AES on the FPGA, through cryptodev) beats OpenSSL in software on the
/// Cortex-A9, "around 1024kB" as extracted. Read literally that is 1 MiB; the same paragraph
/// compares it with the 1500-byte MTU ("the performance for a network application would be
/// very close to those of a full software implementation"), which holds for either reading
/// (1 KiB or 1 MiB), and the figure it cites was lost (`figure ??`). Kept in bytes as printed.
pub const OFFLOAD_BREAK_EVEN_BYTES: usize = 1024 * 1024;
/// The same, as a sentence for tables and `crypto-bench --chunk-sizes`.
pub const OFFLOAD_BREAK_EVEN_TEXT: &str = "seed 004 (BA411E AES engine on an FPGA against OpenSSL \
on the Cortex-A9): break-even \"around 1024kB\" (as extracted; 1 MiB read literally, possibly \
1 KiB), above the 1500-byte MTU, so network packets stay in software; its figure was lost";

/// Seed 004's row for an RSA size.
pub fn row(rsa_bits: u32) -> Option<&'static TlsRow> {
    TABLE_5_2.iter().find(|r| r.rsa_bits == rsa_bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ratios the seed prints in Table 5.2 (×1.14, ×2.70, ×5.89) follow from the figures
    /// kept here (truncated to two decimals), and every rate is under the 600 per minute ten clients can make.
    #[test]
    fn printed_ratios_follow_from_the_figures() {
        let printed = [1.14, 2.70, 5.89];
        for (r, p) in TABLE_5_2.iter().zip(printed) {
            let ratio = r.hw_per_min / r.soft_per_min;
            // Truncated to two decimals as printed (420.9 / 155.6 = 2.7050…: "x2.70").
            let truncated = (ratio * 100.0).floor() / 100.0;
            assert!((truncated - p).abs() < 1e-9, "{}: {ratio}", r.rsa_bits);
            assert!(r.soft_per_min < CEILING_PER_MIN && r.hw_per_min < CEILING_PER_MIN);
        }
        // §6.1: the break-even as printed (1024 kB), above the 1500-byte MTU.
        const { assert!(OFFLOAD_BREAK_EVEN_BYTES > 1500) };
        assert!(OFFLOAD_BREAK_EVEN_TEXT.contains("1024kB"));
        // §5.1: "the software can process 0.24 connection per percentage of CPU usage".
        let r = row(4096).unwrap();
        assert!((r.soft_per_min / r.soft_cpu_pct - 0.24).abs() < 0.005);
    }
}
