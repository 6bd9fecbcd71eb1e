//! fio job files and command lines: any text must parse or fail with an
//! error, never panic. The input is also readable as "self.fio" (so
//! `include self.fio` exercises cycle detection) and a fixed "common.fio"
//! can be included.
#![no_main]

use std::collections::HashMap;

use blkstack::source::fio::{parse_cmdline, parse_job_text, FioJob};
use libfuzzer_sys::fuzz_target;

fn touch(jobs: &[FioJob]) {
    for j in jobs {
        for d in [blkstack::source::fio::Ddir::Read, blkstack::source::fio::Ddir::Write, blkstack::source::fio::Ddir::Trim] {
            let _ = (j.block_size(d), j.block_align(d), j.iodepth_batch());
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let mut files = HashMap::new();
    files.insert("self.fio".to_string(), text.to_string());
    files.insert("common.fio".to_string(), "bs=8k ; shared\niodepth=2\n".to_string());
    match parse_job_text("self.fio", text, &files) {
        Ok(p) => {
            touch(&p.jobs);
            let _ = p.warnings.iter().map(|w| w.to_string()).count();
        }
        Err(e) => drop(e.to_string()),
    }
    match parse_cmdline(text, &files) {
        Ok(p) => touch(&p.jobs),
        Err(e) => drop(e.to_string()),
    }
});
