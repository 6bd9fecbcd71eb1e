//! blkparse and ftrace text: every line becomes a record, a skip or a
//! reported bad line, never a panic; the counts add up.
#![no_main]

use blkstack::trace::parse::{parse_trace, Rwbs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let p = parse_trace(text);
    assert_eq!(p.records.len() + p.bad.len() + p.skipped, text.lines().count());
    for r in &p.records {
        let _ = Rwbs::decode(&r.rwbs);
    }
    for b in &p.bad {
        let _ = b.to_string();
    }
});
