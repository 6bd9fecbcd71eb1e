//! fio's report of a run, from the jobs' completion statistics and the
//! disks' /proc/diskstats — the text of stat.c (`show_thread_status_normal`,
//! `show_ddir_status`, `show_clat_percentiles`, `show_group_stats`) and of
//! diskutil.c (`print_disk_util`, `show_agg_stats`), and the same figures
//! as JSON.
//!
//! A job's runtime is from the start of the run to its last completion, in
//! ms, as fio's `runtime[ddir]`; bandwidth and IOPS are per that runtime.
//! With `group_reporting` the clones (`numjobs`) of a job section are
//! reported together (fio merges every job of the reporting group; here
//! each section is a group). The disk stats cover the whole run: fio's
//! `util` is io_ticks over the elapsed time; an md or dm device also shows
//! its members' averages (`aggr*`) and the highest member utilisation, and
//! each member gets its own line.

use serde_json::{json, Map, Value};

use crate::engine::Engine;
use crate::stats::clat::{num2str, LatStat, FIO_PERCENTILES};

/// What the report needs to know about the fio jobs of a workload.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioMeta {
    /// One entry per engine job, in order.
    pub jobs: Vec<FioJobMeta>,
    /// The devices the jobs use (fio's disk_list).
    pub disks: Vec<FioDisk>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FioJobMeta {
    pub name: String,
    /// Which job section the clone belongs to.
    pub section: usize,
    pub group_reporting: bool,
    pub kb_base: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FioDisk {
    pub name: String,
    /// The devices below an md or dm device (/sys/block/X/slaves).
    pub slaves: Vec<String>,
}

const DDIR_NAMES: [&str; 3] = ["read", "write", "trim"];
const GROUP_NAMES: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];

/// A reported unit: one clone, or a section's clones with group_reporting.
struct ThreadStat {
    name: String,
    members: usize,
    pid: u32,
    kb_base: u32,
    clat: [LatStat; 4],
    bytes: [u64; 4],
    runtime_ms: u64,
}

impl ThreadStat {
    fn ios(&self, d: usize) -> u64 {
        self.clat[d].samples
    }

    /// Bytes/s and IOPS of direction `d`.
    fn rates(&self, d: usize) -> (u64, u64) {
        let runt = self.runtime_ms.max(1);
        (1000 * self.bytes[d] / runt, 1000 * self.ios(d) / runt)
    }
}

fn thread_stats(meta: &FioMeta, engine: &Engine) -> Vec<ThreadStat> {
    let mut out: Vec<(Option<usize>, ThreadStat)> = Vec::new();
    for (job, m) in engine.jobs.iter().zip(&meta.jobs) {
        let runtime_ms = job.stats.last_complete_ns.div_ceil(1_000_000);
        let key = m.group_reporting.then_some(m.section);
        if let Some(ts) = out.iter_mut().find(|(k, _)| key.is_some() && *k == key).map(|x| &mut x.1) {
            for d in 0..4 {
                ts.clat[d].merge(&job.stats.clat[d]);
                ts.bytes[d] += job.stats.bytes[d];
            }
            ts.members += 1;
            ts.runtime_ms = ts.runtime_ms.max(runtime_ms);
            continue;
        }
        let pid = engine.core.tasks[job.task as usize].pid;
        let ts = ThreadStat { name: m.name.clone(), members: 1, pid, kb_base: m.kb_base, clat: job.stats.clat.clone(), bytes: job.stats.bytes, runtime_ms };
        out.push((key, ts));
    }
    out.into_iter().map(|x| x.1).collect()
}

/// The `"fio"` part of the JSON summary and fio's text report.
pub fn report(meta: &FioMeta, engine: &Engine) -> (Value, String) {
    let stats = thread_stats(meta, engine);
    let mut text = String::new();
    let mut jobs = Vec::new();
    for ts in &stats {
        text += &thread_text(ts);
        jobs.push(thread_json(ts));
    }
    text += &group_text(&stats);
    let msec = engine.core.now.div_ceil(1_000_000);
    let disks: Vec<DiskUtil> = meta.disks.iter().filter_map(|d| DiskUtil::new(engine, &d.name, msec).map(|u| (d, u))).map(|(d, mut u)| {
        u.slaves = d.slaves.iter().filter_map(|s| DiskUtil::new(engine, s, msec)).collect();
        u
    }).collect();
    text += "\nDisk stats (read/write):\n";
    for d in &disks {
        text += &d.text();
    }
    let json = json!({ "jobs": jobs, "disk_util": disks.iter().map(DiskUtil::json).collect::<Vec<_>>() });
    (json, text)
}

fn thread_text(ts: &ThreadStat) -> String {
    let mut s = format!("{}: (groupid=0, jobs={}): err= 0: pid={}\n", ts.name, ts.members, ts.pid);
    for d in 0..3 {
        if ts.bytes[d] > 0 || ts.ios(d) > 0 {
            s += &ddir_text(ts, d);
        }
    }
    if ts.clat[3].samples > 0 {
        s += "  fsync/fdatasync/sync_file_range:\n";
        s += &lat_text("sync", &ts.clat[3]);
        s += &percentiles_text("sync", &ts.clat[3]);
    }
    s
}

/// `show_ddir_status` for a read, write or trim direction.
fn ddir_text(ts: &ThreadStat, d: usize) -> String {
    let i2p = ts.kb_base.is_power_of_two();
    let (bw, iops) = ts.rates(d);
    let mut s = format!(
        "  {}: IOPS={}, BW={} ({})({}/{}msec)\n",
        DDIR_NAMES[d],
        num2str(iops, 4, false, ""),
        num2str(bw, 4, i2p, "B/s"),
        num2str(bw, 4, !i2p, "B/s"),
        num2str(ts.bytes[d], 4, i2p, "B"),
        ts.runtime_ms
    );
    s += &lat_text("clat", &ts.clat[d]);
    s += &percentiles_text("clat", &ts.clat[d]);
    s
}

/// `display_lat`: min, max, avg and stdev, in ns, µs or ms.
fn lat_text(name: &str, l: &LatStat) -> String {
    if l.samples == 0 {
        return String::new();
    }
    let (min, max) = (l.min, l.max);
    let (unit, div) = if min > 2_000_000 && max > 99_999_999 {
        ("msec", 1e6)
    } else if min > 2000 && max > 99_999 {
        ("usec", 1e3)
    } else {
        ("nsec", 1.0)
    };
    let scaled = |v: u64| num2str((v as f64 / div) as u64, 6, false, "");
    format!("    {name} ({unit}): min={}, max={}, avg={:5.02}, stdev={:5.02}\n", scaled(min), scaled(max), l.mean() / div, l.stdev() / div)
}

/// `show_clat_percentiles` with fio's default list and precision 2.
fn percentiles_text(name: &str, l: &LatStat) -> String {
    let vals = l.percentiles(&FIO_PERCENTILES);
    let (Some(&minv), Some(&maxv)) = (vals.iter().min(), vals.iter().max()) else { return String::new() };
    let (unit, scale) = if minv > 2_000_000 && maxv > 99_999_999 {
        ("msec", 2)
    } else if minv > 2000 && maxv > 99_999 {
        ("usec", 1)
    } else {
        ("nsec", 0)
    };
    let div = 1000u64.pow(scale);
    let width = 5.max(((maxv / div) as f64).log10() as usize + 1);
    let per_line = 73 / (12 + width);
    let mut s = format!("    {name} percentiles ({unit}):\n     |");
    for (j, (p, v)) in FIO_PERCENTILES.iter().zip(&vals).enumerate() {
        if j != 0 && j % per_line == 0 {
            s += "     |";
        }
        let mut v = *v;
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j == vals.len() - 1;
        s += &format!(" {p:5.2}th=[{v:width$}]{}", if last { '\n' } else { ',' });
        if !last && j % per_line == per_line - 1 {
            s += "\n";
        }
    }
    s
}

fn thread_json(ts: &ThreadStat) -> Value {
    let mut m = Map::new();
    m.insert("jobname".into(), json!(ts.name));
    m.insert("jobs".into(), json!(ts.members));
    for (d, name) in DDIR_NAMES.iter().enumerate() {
        let (bw, iops) = ts.rates(d);
        m.insert(
            (*name).into(),
            json!({
                "io_bytes": ts.bytes[d], "bw_bytes": bw, "iops": iops, "runtime": ts.runtime_ms,
                "total_ios": ts.ios(d), "clat_ns": lat_json(&ts.clat[d]),
            }),
        );
    }
    m.insert("sync".into(), json!({ "total_ios": ts.clat[3].samples, "lat_ns": lat_json(&ts.clat[3]) }));
    Value::Object(m)
}

fn lat_json(l: &LatStat) -> Value {
    if l.samples == 0 {
        return json!({ "min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0 });
    }
    let vals = l.percentiles(&FIO_PERCENTILES);
    let pct: Map<String, Value> = FIO_PERCENTILES.iter().zip(&vals).map(|(p, v)| (format!("{p:.6}"), json!(v))).collect();
    let pick = |p: f64| l.percentiles(&[p]).first().copied().unwrap_or(0);
    json!({
        "min": l.min, "max": l.max, "mean": l.mean(), "stddev": l.stdev(), "N": l.samples,
        "p50": pick(50.0), "p90": pick(90.0), "p99": pick(99.0), "p99.9": pick(99.9),
        "percentile": pct,
    })
}

/// `show_group_stats` for group 0 (every job).
fn group_text(stats: &[ThreadStat]) -> String {
    let mut s = "\nRun status group 0 (all jobs):\n".to_string();
    let i2p = stats.first().map_or(true, |t| t.kb_base.is_power_of_two());
    for (d, group) in GROUP_NAMES.iter().enumerate() {
        let with: Vec<&ThreadStat> = stats.iter().filter(|t| t.bytes[d] > 0).collect();
        if with.is_empty() {
            continue;
        }
        let io: u64 = with.iter().map(|t| t.bytes[d]).sum();
        let max_run = with.iter().map(|t| t.runtime_ms).max().unwrap_or(1).max(1);
        let min_run = with.iter().map(|t| t.runtime_ms).min().unwrap_or(1);
        let bws: Vec<u64> = with.iter().map(|t| t.rates(d).0).collect();
        let (lo, hi) = (*bws.iter().min().unwrap_or(&0), *bws.iter().max().unwrap_or(&0));
        let agg = 1000 * io / max_run;
        let n = |v: u64, p: bool, u: &str| num2str(v, 4, p, u);
        s += &format!(
            "{}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec\n",
            group,
            n(agg, i2p, "B/s"),
            n(agg, !i2p, "B/s"),
            n(lo, i2p, "B/s"),
            n(hi, i2p, "B/s"),
            n(lo, !i2p, "B/s"),
            n(hi, !i2p, "B/s"),
            n(io, i2p, "B"),
            n(io, !i2p, "B"),
            min_run,
            max_run
        );
    }
    s
}

/// fio's `disk_util_stat` of one device over the run.
struct DiskUtil {
    name: String,
    ios: [u64; 2],
    merges: [u64; 2],
    ticks: [u64; 2],
    time_in_queue: u64,
    util: f64,
    slaves: Vec<DiskUtil>,
}

impl DiskUtil {
    fn new(engine: &Engine, name: &str, msec: u64) -> Option<DiskUtil> {
        let dev = engine.core.topo.by_name(name)?;
        let f = engine.core.diskstats(dev);
        let util = if msec > 0 { (100.0 * f[9] as f64 / msec as f64).min(100.0) } else { 0.0 };
        Some(DiskUtil { name: name.to_string(), ios: [f[0], f[4]], merges: [f[1], f[5]], ticks: [f[3], f[7]], time_in_queue: f[10], util, slaves: Vec::new() })
    }

    /// `print_disk_util` (+ `show_agg_stats`), then each member's line.
    fn text(&self) -> String {
        let indent = if self.slaves.is_empty() { "  " } else { "    " };
        let mut s = format!(
            "{indent}{}: ios={}/{}, merge={}/{}, ticks={}/{}, in_queue={}, util={:3.2}%",
            self.name, self.ios[0], self.ios[1], self.merges[0], self.merges[1], self.ticks[0], self.ticks[1], self.time_in_queue, self.util
        );
        if let Some(a) = self.aggregate() {
            s += &format!(
                ", aggrios={}/{}, aggrmerge={}/{}, aggrticks={}/{}, aggrin_queue={}, aggrutil={:3.2}%",
                a.ios[0], a.ios[1], a.merges[0], a.merges[1], a.ticks[0], a.ticks[1], a.time_in_queue, a.util
            );
        }
        s += "\n";
        for sl in &self.slaves {
            s += &sl.text();
        }
        s
    }

    /// `aggregate_slaves_stats`: member averages, the highest utilisation.
    fn aggregate(&self) -> Option<DiskUtil> {
        let n = self.slaves.len() as u64;
        if n == 0 {
            return None;
        }
        let sum = |f: &dyn Fn(&DiskUtil) -> u64| self.slaves.iter().map(f).sum::<u64>() / n;
        Some(DiskUtil {
            name: String::new(),
            ios: [sum(&|d| d.ios[0]), sum(&|d| d.ios[1])],
            merges: [sum(&|d| d.merges[0]), sum(&|d| d.merges[1])],
            ticks: [sum(&|d| d.ticks[0]), sum(&|d| d.ticks[1])],
            time_in_queue: sum(&|d| d.time_in_queue),
            util: self.slaves.iter().map(|d| d.util).fold(0.0, f64::max),
            slaves: Vec::new(),
        })
    }

    fn json(&self) -> Value {
        let mut v = json!({
            "name": self.name, "read_ios": self.ios[0], "write_ios": self.ios[1],
            "read_merges": self.merges[0], "write_merges": self.merges[1],
            "read_ticks": self.ticks[0], "write_ticks": self.ticks[1],
            "in_queue": self.time_in_queue, "util": self.util,
        });
        if let (Some(a), Value::Object(m)) = (self.aggregate(), &mut v) {
            m.insert("aggr_read_ios".into(), json!(a.ios[0]));
            m.insert("aggr_write_ios".into(), json!(a.ios[1]));
            m.insert("aggr_read_merges".into(), json!(a.merges[0]));
            m.insert("aggr_write_merge".into(), json!(a.merges[1]));
            m.insert("aggr_read_ticks".into(), json!(a.ticks[0]));
            m.insert("aggr_write_ticks".into(), json!(a.ticks[1]));
            m.insert("aggr_in_queue".into(), json!(a.time_in_queue));
            m.insert("aggr_util".into(), json!(a.util));
            m.insert("slaves".into(), Value::Array(self.slaves.iter().map(DiskUtil::json).collect()));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_lines_follow_fio_layout() {
        // 1000 samples of 10,000 ns and 100 µs..: min 10000 > 2000 and max
        // > 99,999 → µs; width 5, 73 / 17 = 4 entries per line.
        let mut l = LatStat::default();
        for i in 0..1000u64 {
            l.add(if i < 990 { 10_000 } else { 200_000 });
        }
        let t = percentiles_text("clat", &l);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "    clat percentiles (usec):");
        // 10,000 ns: msb 13, error bits 7, bucket (7+1)·64 + (10000 >> 7 & 63)
        // = 512 + 14 = 526 → 2^13 + 14.5·128 = 10048 ns → 11 µs (rounded up).
        assert_eq!(lines[1], "     |  1.00th=[   11],  5.00th=[   11], 10.00th=[   11], 20.00th=[   11],");
        assert_eq!(lines.len(), 6, "17 entries, 4 per line: 5 lines after the header");
        assert!(lines[5].ends_with("]"), "{t}");
    }

    #[test]
    fn latency_line_units() {
        let mut l = LatStat::default();
        l.add(1500);
        l.add(2500);
        // min 1500 is not above 2000: nanoseconds.
        assert_eq!(lat_text("clat", &l), "    clat (nsec): min=1500, max=2500, avg=2000.00, stdev=707.11\n");
    }
}
