//! `iostat -x` as sysstat prints it (iostat.c `write_disk_stat_header`,
//! `write_ext_stat`, rd_stats.c `compute_ext_disk_stats`): kB units, the
//! device in 13 columns, then each figure as " %*.2f" with sysstat's widths.
//! Figures are per second over the interval between two /proc/diskstats
//! snapshots (the 17 fields of [`super::diskstats::DiskStats::fields`]).

use std::fmt::Write as _;

pub const HEADER: &str = "Device            r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz     f/s f_await  aqu-sz  %util";

/// The columns of one row, by their header names.
pub const COLUMNS: [&str; 22] = [
    "r/s", "rkB/s", "rrqm/s", "%rrqm", "r_await", "rareq-sz", "w/s", "wkB/s", "wrqm/s", "%wrqm", "w_await", "wareq-sz", "d/s", "dkB/s",
    "drqm/s", "%drqm", "d_await", "dareq-sz", "f/s", "f_await", "aqu-sz", "%util",
];
const WIDTHS: [usize; 22] = [7, 9, 8, 6, 7, 8, 7, 9, 8, 6, 7, 8, 7, 9, 8, 6, 7, 8, 7, 7, 7, 6];

/// The figures of one device over an interval of `secs` seconds.
pub fn ext_stats(prev: &[u64; 17], cur: &[u64; 17], secs: f64) -> [f64; 22] {
    let d = |i: usize| cur[i].saturating_sub(prev[i]) as f64;
    let rate = |i: usize| if secs > 0.0 { d(i) / secs } else { 0.0 };
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    // One group: ios, merges, sectors, ticks at fields i, i+1, i+2, i+3.
    let group = |i: usize| {
        [rate(i), rate(i + 2) / 2.0, rate(i + 1), ratio(d(i + 1), d(i + 1) + d(i)) * 100.0, ratio(d(i + 3), d(i)), ratio(d(i + 2), d(i)) / 2.0]
    };
    let (r, w, dc) = (group(0), group(4), group(11));
    let f = [rate(15), ratio(d(16), d(15)), rate(10) / 1000.0, rate(9) / 10.0];
    let mut out = [0.0; 22];
    out[..6].copy_from_slice(&r);
    out[6..12].copy_from_slice(&w);
    out[12..18].copy_from_slice(&dc);
    out[18..].copy_from_slice(&f);
    out
}

/// One row: the device name in 13 columns, then the figures.
pub fn row(name: &str, stats: &[f64; 22]) -> String {
    let mut s = format!("{name:<13}");
    for (v, w) in stats.iter().zip(WIDTHS) {
        let _ = write!(s, " {v:>w$.2}");
    }
    s
}

/// A report block: the header, then a row per device.
pub fn report(rows: &[(String, [f64; 22])]) -> String {
    let mut s = String::from(HEADER);
    s.push('\n');
    for (name, st) in rows {
        s.push_str(&row(name, st));
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_sysstats() {
        // write_disk_stat_header with -x and kB units: "Device" in 13
        // columns, then the four groups.
        let expect = format!(
            "{}{}{}{}{}",
            "Device       ",
            "     r/s     rkB/s   rrqm/s  %rrqm r_await rareq-sz",
            "     w/s     wkB/s   wrqm/s  %wrqm w_await wareq-sz",
            "     d/s     dkB/s   drqm/s  %drqm d_await dareq-sz",
            "     f/s f_await  aqu-sz  %util"
        );
        assert_eq!(HEADER, expect);
    }

    #[test]
    fn figures_from_diskstats_by_hand() {
        // Over 2 s: 1000 reads, 250 merged, 16000 sectors, 3000 ms reading;
        // io_ticks 1500 ms; time_in_queue 3000 ms.
        let prev = [0u64; 17];
        let mut cur = [0u64; 17];
        cur[0] = 1000;
        cur[1] = 250;
        cur[2] = 16000;
        cur[3] = 3000;
        cur[9] = 1500;
        cur[10] = 3000;
        let s = ext_stats(&prev, &cur, 2.0);
        // r/s 500, rkB/s 16000/2/2 = 4000, rrqm/s 125, %rrqm 250/1250 = 20%,
        // r_await 3 ms, rareq-sz 16 sectors = 8 kB, aqu-sz 1500 ms/s = 1.5,
        // %util 750 ms/s = 75%.
        assert_eq!(&s[..6], &[500.0, 4000.0, 125.0, 20.0, 3.0, 8.0]);
        assert_eq!((s[20], s[21]), (1.5, 75.0));
        let line = row("sda", &s);
        assert!(line.starts_with("sda            500.00   4000.00   125.00  20.00    3.00     8.00    0.00"), "{line}");
        assert!(line.ends_with("   0.00    0.00    1.50  75.00"), "{line}");
    }
}
