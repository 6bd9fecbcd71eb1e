//! The wall-clock time tools print in their reports (fio's `ctime` after
//! each job's pid, its JSON `timestamp`), in UTC. `SOURCE_DATE_EPOCH`,
//! when set to a number of seconds, stands in for the clock, so a report
//! can be reproduced byte for byte.

use std::time::{SystemTime, UNIX_EPOCH};

/// One reading of the clock.
#[derive(Clone, Debug, PartialEq)]
pub struct WallClock {
    pub secs: u64,
    pub millis: u64,
    /// `ctime` without its newline: "Wed Nov 25 01:12:44 2026".
    pub ctime: String,
}

/// The clock now (or `SOURCE_DATE_EPOCH`).
pub fn now() -> WallClock {
    let fixed = std::env::var("SOURCE_DATE_EPOCH").ok().and_then(|s| s.trim().parse::<u64>().ok());
    let millis = match fixed {
        Some(s) => s.saturating_mul(1000),
        None => SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64),
    };
    at(millis)
}

/// The reading for `millis` since the epoch.
pub fn at(millis: u64) -> WallClock {
    let secs = millis / 1000;
    WallClock { secs, millis, ctime: ctime(secs) }
}

/// `asctime`'s "%.3s %.3s%3d %.2d:%.2d:%.2d %d" of a UTC time.
pub fn ctime(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let days = secs / 86_400;
    let (y, m, d) = civil_from_days(days as i64);
    let t = secs % 86_400;
    format!("{} {}{:3} {:02}:{:02}:{:02} {y}", DAYS[(days % 7) as usize], MONTHS[m as usize - 1], d, t / 3600, t / 60 % 60, t % 60)
}

/// The calendar date of a day count since 1970-01-01 (proleptic
/// Gregorian; Howard Hinnant's days-to-civil method).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + (m <= 2) as i64;
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_as_fio_prints_it() {
        // fio-3.33's JSON on this machine: "timestamp" : 1795569172 with
        // "time" : "Wed Nov 25 01:12:52 2026".
        assert_eq!(ctime(1_795_569_172), "Wed Nov 25 01:12:52 2026");
        // A single-digit day is padded to three columns ("%3d").
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
    }
}
