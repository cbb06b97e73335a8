//! The pcap reader on arbitrary files. Invariants: it never panics and always ends; records are
//! numbered 1, 2, … and each starts where the previous one ended; every record lies inside the
//! input and within the bounds (MAX_CAPLEN, the snaplen); an error names the record after the
//! last good one and its offset, and ends the iteration. What was read, written again with
//! `PcapWriter` (nanoseconds), reads back the same.
#![no_main]

use ivnsec_net::pcap::{
    FILE_HEADER_LEN, MAX_CAPLEN, PcapReader, PcapWriter, RECORD_HEADER_LEN, Record,
};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = PcapReader::new(data) else {
        return;
    };
    let snaplen = reader.header().snaplen;
    let limit = if snaplen == 0 {
        MAX_CAPLEN
    } else {
        snaplen.min(MAX_CAPLEN)
    };
    let mut records: Vec<Record> = Vec::new();
    let mut end = FILE_HEADER_LEN as u64;
    loop {
        match reader.next_record() {
            None => break,
            Some(Ok(r)) => {
                assert_eq!(r.number, records.len() as u64 + 1);
                assert_eq!(r.offset, end);
                assert!(r.data.len() as u64 <= u64::from(limit));
                end += (RECORD_HEADER_LEN + r.data.len()) as u64;
                assert!(end <= data.len() as u64);
                assert_eq!(
                    r.data,
                    &data[(r.offset as usize + RECORD_HEADER_LEN)..end as usize]
                );
                records.push(r.to_owned());
            }
            Some(Err(e)) => {
                assert_eq!(e.record, Some(records.len() as u64 + 1));
                assert_eq!(e.offset, end);
                let _ = e.to_string();
                assert!(
                    reader.next_record().is_none(),
                    "an error ends the iteration"
                );
                break;
            }
        }
    }
    assert!(reader.next_record().is_none());

    // Round trip through the writer (records whose time the format can hold).
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let mut kept = Vec::new();
    for r in &records {
        if w.write_frame(r.timestamp, &r.data).is_ok() {
            kept.push(r);
        }
    }
    let bytes = w.into_inner().unwrap();
    let again: Vec<Record> = PcapReader::new(&bytes[..])
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(again.len(), kept.len());
    for (a, b) in again.iter().zip(kept) {
        assert_eq!(a.data, b.data);
        assert_eq!(a.timestamp, b.timestamp);
    }
});
