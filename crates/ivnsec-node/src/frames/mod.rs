//! `frame protect|verify` and `pcap verify` without the command line: the SA options of every
//! family made into one [`AnyTx`](ivnsec_core::sa::any::AnyTx) /
//! [`AnyRx`](ivnsec_core::sa::any::AnyRx) ([`material`]), the stdin batches with a bounded line
//! reader and one answer per line ([`batch`]), and the offline check of a capture with its
//! streamed JSON ([`pcap_verify`]). The binary converts its options into the settings here and
//! passes stdin, stdout and stderr; the protocol family is dispatched on once, in the core.

pub mod batch;
pub mod material;
pub mod pcap_verify;
