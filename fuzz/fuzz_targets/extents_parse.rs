//! Free-extent lists: parse or fail with a line number, never panic; what
//! parses is non-empty and does not overlap.
#![no_main]

use blkstack::source::extents::{parse_extents, parse_sectors};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_extents("fuzz.txt", text) {
        Ok(ext) => {
            let mut v: Vec<(u64, u64)> = ext.iter().map(|e| (e.start, e.end())).collect();
            v.sort_unstable();
            assert!(v.iter().all(|(s, e)| s < e));
            assert!(v.windows(2).all(|w| w[0].1 <= w[1].0));
        }
        Err(e) => assert!(e.line >= 1 && e.line <= text.lines().count()),
    }
    let _ = parse_sectors(text.trim());
});
