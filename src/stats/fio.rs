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

use serde_json::{json, Value};

use crate::engine::Engine;
use crate::stats::clat::{num2str, LatStat, FIO_PERCENTILES};
use crate::stats::fio_json::FioJson;
use crate::stats::fio_stats::{FioStats, Rusage, AVG_TIME_NS};

/// The fio release whose report this is (Debian bookworm's fio).
pub const FIO_VERSION: &str = "fio-3.33";

/// What the report needs to know about the fio jobs of a workload.
#[derive(Clone, Debug, PartialEq)]
pub struct FioMeta {
    /// One entry per engine job, in order.
    pub jobs: Vec<FioJobMeta>,
    /// The devices the jobs use (fio's disk_list).
    pub disks: Vec<FioDisk>,
    /// `--output-format`: normal, json, json+, comma-separated.
    pub output_format: String,
    /// The `[global]` options as written (fio's JSON `global options`).
    pub global_options: Vec<(String, Option<String>)>,
}

impl Default for FioMeta {
    fn default() -> Self {
        FioMeta { jobs: Vec::new(), disks: Vec::new(), output_format: "normal".to_string(), global_options: Vec::new() }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct FioJobMeta {
    pub name: String,
    /// Which job section the clone belongs to.
    pub section: usize,
    pub group_reporting: bool,
    pub kb_base: u32,
    /// The reporting group (a `stonewall` or `new_group` job starts one).
    pub groupid: u32,
    /// What fio prints when it adds the job (`add_job`): the `(g=N)` line
    /// for a section's first clone, `...` for its second, nothing after.
    pub announce: Option<String>,
    /// The job's own options as written (JSON `job options`).
    pub options: Vec<(String, Option<String>)>,
    pub iodepth: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct FioDisk {
    pub name: String,
    /// The devices below an md or dm device (/sys/block/X/slaves).
    pub slaves: Vec<String>,
}

const DDIR_NAMES: [&str; 3] = ["read", "write", "trim"];
const GROUP_NAMES: [&str; 3] = ["   READ", "  WRITE", "   TRIM"];
const LAT_RANGES: [&str; 12] = ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];

/// A reported unit: one clone, or a section's clones with group_reporting.
struct ThreadStat {
    name: String,
    groupid: u32,
    members: usize,
    pid: u32,
    kb_base: u32,
    iodepth: u32,
    clat: [LatStat; 4],
    bytes: [u64; 4],
    fio: FioStats,
    /// Bandwidth (KiB/s) and IOPS samples per direction.
    bw: [LatStat; 3],
    iops: [LatStat; 3],
    runtime_ms: u64,
    /// The `cpu` line's figures, summed over the group's jobs.
    rusage: Rusage,
    options: Vec<(String, Option<String>)>,
}

impl ThreadStat {
    fn ios(&self, d: usize) -> u64 {
        self.fio.total_io_u[d]
    }

    /// `runtime[ddir]`: the job's runtime for a direction it did I/O in.
    fn runtime(&self, d: usize) -> u64 {
        if self.ios(d) > 0 || self.bytes[d] > 0 {
            self.runtime_ms.max(1)
        } else {
            0
        }
    }

}

/// The bandwidth and IOPS samples of one job (`__add_samples` every
/// `bw_avg_time`): a sample per direction for each window that saw I/O
/// complete, in KiB/s and IO/s. fio's helper thread takes the samples; a
/// job's last window before its end is not sampled (fio 3.33 measured:
/// 1001 ms runs give 1 sample, 2001 ms runs 3).
fn rate_samples(fio: &FioStats, runtime_ms: u64) -> ([LatStat; 3], [LatStat; 3]) {
    let summary = || [LatStat::summary_only(), LatStat::summary_only(), LatStat::summary_only()];
    let (mut bw, mut iops) = (summary(), summary());
    let avg_ms = AVG_TIME_NS / 1_000_000;
    let n = (runtime_ms / avg_ms).saturating_sub(1) as usize;
    for w in fio.windows.iter().take(n) {
        for d in 0..3 {
            if w[d] > 0 {
                bw[d].add(w[d] * 1000 / avg_ms / 1024);
                iops[d].add(w[3 + d] * 1000 / avg_ms);
            }
        }
    }
    (bw, iops)
}

fn thread_stats(meta: &FioMeta, engine: &Engine) -> Vec<ThreadStat> {
    let mut out: Vec<(Option<usize>, ThreadStat)> = Vec::new();
    for (job, m) in engine.jobs.iter().zip(&meta.jobs) {
        let st = &job.stats;
        let start = st.fio.start_ns.unwrap_or(0);
        let runtime_ms = st.last_complete_ns.saturating_sub(start).div_ceil(1_000_000);
        let (bw, iops) = rate_samples(&st.fio, runtime_ms);
        let key = m.group_reporting.then_some(m.section);
        if let Some(ts) = out.iter_mut().find(|(k, _)| key.is_some() && *k == key).map(|x| &mut x.1) {
            for d in 0..4 {
                ts.clat[d].merge(&st.clat[d]);
                ts.bytes[d] += st.bytes[d];
            }
            for d in 0..3 {
                ts.bw[d].sum(&bw[d]);
                ts.iops[d].sum(&iops[d]);
            }
            ts.fio.merge(&st.fio);
            ts.members += 1;
            ts.runtime_ms = ts.runtime_ms.max(runtime_ms);
            ts.rusage.add(&Rusage::of_job(&st.fio, runtime_ms));
            continue;
        }
        let pid = engine.core.tasks[job.task as usize].pid;
        let ts = ThreadStat {
            name: m.name.clone(),
            groupid: m.groupid,
            members: 1,
            pid,
            kb_base: m.kb_base,
            iodepth: m.iodepth,
            clat: st.clat.clone(),
            bytes: st.bytes,
            fio: st.fio.clone(),
            bw,
            iops,
            runtime_ms,
            rusage: Rusage::of_job(&st.fio, runtime_ms),
            options: m.options.clone(),
        };
        out.push((key, ts));
    }
    out.into_iter().map(|x| x.1).collect()
}

/// `struct group_run_stats` of one reporting group.
struct GroupStat {
    groupid: u32,
    kb_base: u32,
    min_run: [u64; 3],
    max_run: [u64; 3],
    min_bw: [u64; 3],
    max_bw: [u64; 3],
    iobytes: [u64; 3],
    /// Aggregate bandwidth, bytes/s: the group's bytes over its longest run.
    agg: [u64; 3],
}

/// `__show_run_stats`' per-group sums, groups in order.
fn group_stats(stats: &[ThreadStat]) -> Vec<GroupStat> {
    let n = stats.iter().map(|t| t.groupid + 1).max().unwrap_or(0);
    let mut groups: Vec<GroupStat> = (0..n)
        .map(|g| GroupStat { groupid: g, kb_base: 1024, min_run: [0; 3], max_run: [0; 3], min_bw: [u64::MAX; 3], max_bw: [0; 3], iobytes: [0; 3], agg: [0; 3] })
        .collect();
    for ts in stats {
        let rs = &mut groups[ts.groupid as usize];
        rs.kb_base = ts.kb_base;
        for d in 0..3 {
            let runt = ts.runtime(d);
            if runt == 0 {
                continue;
            }
            if runt < rs.min_run[d] || rs.min_run[d] == 0 {
                rs.min_run[d] = runt;
            }
            rs.max_run[d] = rs.max_run[d].max(runt);
            let bw = ts.bytes[d] * 1000 / runt;
            rs.min_bw[d] = rs.min_bw[d].min(bw);
            rs.max_bw[d] = rs.max_bw[d].max(bw);
            rs.iobytes[d] += ts.bytes[d];
        }
    }
    for rs in &mut groups {
        for d in 0..3 {
            if rs.max_run[d] > 0 {
                rs.agg[d] = rs.iobytes[d] * 1000 / rs.max_run[d];
            }
        }
    }
    groups
}

/// The output formats asked for.
struct Formats {
    normal: bool,
    json: bool,
    json_plus: bool,
}

impl Formats {
    fn of(s: &str) -> Formats {
        let has = |f: &str| s.split(',').any(|x| x == f);
        Formats { normal: has("normal") || s.is_empty(), json: has("json") || has("json+"), json_plus: has("json+") }
    }
}

/// The `"fio"` part of the JSON summary and fio's output: what fio prints
/// as it adds the jobs (normal output), then its JSON document, then the
/// normal report — the order of fio's output buffers.
pub fn report(meta: &FioMeta, engine: &Engine) -> (Value, String) {
    let stats = thread_stats(meta, engine);
    let groups = group_stats(&stats);
    let now = crate::stats::wall_clock::now();
    let msec = engine.core.now.div_ceil(1_000_000);
    let disks: Vec<DiskUtil> = meta.disks.iter().filter_map(|d| DiskUtil::new(engine, &d.name, msec).map(|u| (d, u))).map(|(d, mut u)| {
        u.slaves = d.slaves.iter().filter_map(|s| DiskUtil::new(engine, s, msec)).collect();
        u
    }).collect();
    let elapsed_s = engine.core.now.div_ceil(1_000_000_000) + 1;
    let doc = |plus: bool| fio_json(meta, &stats, &groups, &disks, &now, elapsed_s, plus);
    let f = Formats::of(&meta.output_format);
    let mut text = String::new();
    if f.normal {
        text += &announce(meta);
    }
    if f.json {
        text += &doc(f.json_plus).print();
        text += "\n";
    }
    if f.normal {
        text += "\n";
        for ts in &stats {
            text += &thread_text(ts, &groups[ts.groupid as usize], &now.ctime);
        }
        for g in &groups {
            text += &group_text(g);
        }
        text += "\nDisk stats (read/write):\n";
        for d in &disks {
            text += &d.text();
        }
    }
    (summary_json(&doc(false)), text)
}

/// The summary's `"fio"`: fio's JSON without what depends on the wall
/// clock or on how the options were written (the same jobs from a job file
/// or the command line give the same summary), with each clat's p50, p90,
/// p99 and p99.9 beside its percentile list (the names sweeps and plots use).
fn summary_json(doc: &FioJson) -> Value {
    let mut v = doc.to_value();
    if let Some(m) = v.as_object_mut() {
        for k in ["timestamp", "timestamp_ms", "time", "global options"] {
            m.remove(k);
        }
    }
    if let Some(jobs) = v.get_mut("jobs").and_then(Value::as_array_mut) {
        for job in jobs {
            if let Some(m) = job.as_object_mut() {
                for k in ["job options", "eta", "elapsed"] {
                    m.remove(k);
                }
            }
            for d in DDIR_NAMES {
                let Some(clat) = job.get_mut(d).and_then(|x| x.get_mut("clat_ns")) else { continue };
                let pct = clat.get("percentile").cloned().unwrap_or(Value::Null);
                for (name, key) in [("p50", "50.000000"), ("p90", "90.000000"), ("p99", "99.000000"), ("p99.9", "99.900000")] {
                    clat[name] = pct.get(key).cloned().unwrap_or(json!(0));
                }
            }
        }
    }
    v
}

/// What fio prints while it sets the jobs up: each job's `(g=N)` line
/// (`add_job`), its version, and how many processes it starts.
fn announce(meta: &FioMeta) -> String {
    let mut s: String = meta.jobs.iter().filter_map(|j| j.announce.as_deref()).map(|a| format!("{a}\n")).collect();
    let n = meta.jobs.len();
    s += &format!("{FIO_VERSION}\nStarting {n} process{}\n", if n > 1 { "es" } else { "" });
    s
}

/// `show_thread_status_normal`.
fn thread_text(ts: &ThreadStat, rs: &GroupStat, ctime: &str) -> String {
    if ts.bytes[..3].iter().sum::<u64>() == 0 && ts.fio.total_io_u[..3].iter().sum::<u64>() == 0 {
        return String::new();
    }
    let mut s = format!("{}: (groupid={}, jobs={}): err= 0: pid={}: {ctime}\n", ts.name, ts.groupid, ts.members, ts.pid);
    for d in 0..3 {
        if ts.bytes[d] > 0 {
            s += &ddir_text(ts, rs, d);
        }
    }
    s += &latencies_text(&ts.fio);
    if ts.clat[3].samples > 0 {
        s += "  fsync/fdatasync/sync_file_range:\n";
        s += &lat_text("sync", &ts.clat[3]);
        s += &percentiles_text("sync", &ts.clat[3]);
    }
    let f = &ts.fio;
    let rw_ios: u64 = f.total_io_u[..3].iter().sum();
    s += &ts.rusage.text();
    s += &format!("  IO depths    : {}\n", dist_text(&f.depth, rw_ios, &["1", "2", "4", "8", "16", "32", ">=64"]));
    let maps = ["0", "4", "8", "16", "32", "64", ">=64"];
    s += &format!("     submit    : {}\n", dist_text(&f.submit, f.total_submit, &maps));
    s += &format!("     complete  : {}\n", dist_text(&f.complete, f.total_complete, &maps));
    let t = &f.total_io_u;
    s += &format!("     issued rwts: total={},{},{},{} short=0,0,0,0 dropped=0,0,0,0\n", t[0], t[1], t[2], t[3]);
    s += &format!("     latency   : target=0, window=0, percentile=100.00%, depth={}\n", ts.iodepth);
    s
}

/// Each bucket's share of `total` in percent, at least `floor` when it has
/// any: `stat_calc_dist` (floor 0.1) and `stat_calc_lat` (0.01).
fn shares(map: &[u64], total: u64, floor: f64) -> Vec<f64> {
    map.iter()
        .map(|&m| {
            if total == 0 {
                return 0.0;
            }
            let v = m as f64 / total as f64 * 100.0;
            if v < floor && m > 0 {
                floor
            } else {
                v
            }
        })
        .collect()
}

/// `stat_calc_dist`: depth and submit/complete buckets.
fn dist(map: &[u64], total: u64) -> Vec<f64> {
    shares(map, total, 0.1)
}

fn dist_text(map: &[u64], total: u64, names: &[&str]) -> String {
    dist(map, total).iter().zip(names).map(|(v, n)| format!("{n}={v:3.1}%")).collect::<Vec<_>>().join(", ")
}

/// `stat_calc_lat`: a latency bucket's share of the read, write and trim
/// I/Os.
fn lat_dist(map: &[u64], total: u64) -> Vec<f64> {
    shares(map, total, 0.01)
}

/// `show_latencies`: the nsec, usec and msec buckets that have I/O, five
/// to a line.
fn latencies_text(f: &FioStats) -> String {
    let total: u64 = f.total_io_u[..3].iter().sum();
    let mut s = String::new();
    for (unit, map) in [("nsec", &f.lat_n[..]), ("usec", &f.lat_u[..]), ("msec", &f.lat_m[..])] {
        let shown: Vec<String> = lat_dist(map, total).iter().zip(LAT_RANGES).filter(|(v, _)| **v > 0.0).map(|(v, r)| format!("{r}={v:3.2}%")).collect();
        for line in shown.chunks(5) {
            s += &format!("  lat ({unit})   : {}\n", line.join(", "));
        }
    }
    s
}

/// `show_ddir_status` for a read, write or trim direction.
fn ddir_text(ts: &ThreadStat, rs: &GroupStat, d: usize) -> String {
    let i2p = rs.kb_base.is_power_of_two();
    let (bw, iops) = rates_of(ts, d);
    let mut s = format!(
        "  {}: IOPS={}, BW={} ({})({}/{}msec){}\n",
        DDIR_NAMES[d],
        num2str(iops, 4, false, ""),
        num2str(bw, 4, i2p, "B/s"),
        num2str(bw, 4, !i2p, "B/s"),
        num2str(ts.bytes[d], 4, i2p, "B"),
        ts.runtime(d),
        // zbd_write_status: every write line reports the zone resets.
        if d == 1 { "; 0 zone resets" } else { "" }
    );
    if d < 3 && ts.fio.slat[d].samples > 0 {
        s += &lat_text("slat", &ts.fio.slat[d]);
    }
    s += &lat_text("clat", &ts.clat[d]);
    s += &lat_text(" lat", &ts.fio.lat[d]);
    s += &percentiles_text("clat", &ts.clat[d]);
    if ts.bw[d].samples > 0 {
        let bw = &ts.bw[d];
        let p_of_agg = agg_percent(rs, d, bw.mean());
        let (mut min, mut max, mut mean, mut dev) = (bw.min as f64, bw.max as f64, bw.mean(), bw.stdev());
        let kb = rs.kb_base as f64;
        let mut unit = if i2p { "KiB" } else { "kB" };
        if mean > kb * kb {
            (min, max, mean, dev) = (min / kb, max / kb, mean / kb, dev / kb);
            unit = "MiB";
        }
        s += &format!(
            "   bw ({unit:>5}/s): min={:5}, max={:5}, per={p_of_agg:3.2}%, avg={mean:5.02}, stdev={dev:5.02}, samples={}\n",
            min as u64, max as u64, bw.samples
        );
        let io = &ts.iops[d];
        s += &format!("   iops        : min={:5}, max={:5}, avg={:5.02}, stdev={:5.02}, samples={}\n", io.min, io.max, io.mean(), io.stdev(), io.samples);
    }
    s
}

fn rates_of(ts: &ThreadStat, d: usize) -> (u64, u64) {
    let runt = ts.runtime(d);
    if runt == 0 {
        return (0, 0);
    }
    (1000 * ts.bytes[d] / runt, 1000 * ts.ios(d) / runt)
}

/// `convert_agg_kbytes_percent`: a job's mean bandwidth sample as a share
/// of its group's aggregate bandwidth.
fn agg_percent(rs: &GroupStat, d: usize, mean: f64) -> f64 {
    if rs.agg[d] > 1024 {
        (mean * 100.0 / (rs.agg[d] as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

/// `display_lat`: min, max, avg and stdev, in ns, µs or ms
/// (`nsec_to_msec`, `nsec_to_usec`).
fn lat_text(name: &str, l: &LatStat) -> String {
    if l.samples == 0 {
        return String::new();
    }
    let (min, max, dev) = (l.min, l.max, l.stdev());
    let (unit, div) = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        ("msec", 1_000_000)
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        ("usec", 1000)
    } else {
        ("nsec", 1)
    };
    let scaled = |v: u64| num2str(v / div, 6, false, "");
    format!("    {name} ({unit}): min={}, max={}, avg={:5.02}, stdev={:5.02}\n", scaled(min), scaled(max), l.mean() / div as f64, dev / div as f64)
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

/// fio's JSON document (`__show_run_stats` with FIO_OUTPUT_JSON).
fn fio_json(meta: &FioMeta, stats: &[ThreadStat], groups: &[GroupStat], disks: &[DiskUtil], now: &crate::stats::wall_clock::WallClock, elapsed_s: u64, plus: bool) -> FioJson {
    let mut root = FioJson::obj();
    root.add("fio version", FIO_VERSION).add("timestamp", now.secs).add("timestamp_ms", now.millis).add("time", now.ctime.as_str());
    if !meta.global_options.is_empty() {
        root.add("global options", options_json(&meta.global_options));
    }
    let jobs = stats.iter().map(|ts| thread_json(ts, &groups[ts.groupid as usize], elapsed_s, plus)).collect();
    root.add("jobs", FioJson::Arr(jobs));
    if !disks.is_empty() {
        root.add("disk_util", FioJson::Arr(disks.iter().map(DiskUtil::json).collect()));
    }
    root
}

/// `json_add_job_opts`: each option with a value, as written.
fn options_json(opts: &[(String, Option<String>)]) -> FioJson {
    let mut o = FioJson::obj();
    for (k, v) in opts {
        if let Some(v) = v {
            o.add(k, v.as_str());
        }
    }
    o
}

/// `show_thread_status_json`.
fn thread_json(ts: &ThreadStat, rs: &GroupStat, elapsed_s: u64, plus: bool) -> FioJson {
    let mut m = FioJson::obj();
    m.add("jobname", ts.name.as_str()).add("groupid", ts.groupid).add("error", 0u64);
    m.add("eta", i32::MAX as u64).add("elapsed", elapsed_s);
    m.add("job options", options_json(&ts.options));
    for d in 0..3 {
        m.add(DDIR_NAMES[d], ddir_json(ts, rs, d, plus));
    }
    let mut sync = FioJson::obj();
    sync.add("total_ios", ts.fio.total_io_u[3]).add("lat_ns", lat_json(&ts.clat[3], true, plus));
    m.add("sync", sync);
    let f = &ts.fio;
    let rw_ios: u64 = f.total_io_u[..3].iter().sum();
    let (r, (usr, sys)) = (&ts.rusage, ts.rusage.cpu_pct());
    // job_runtime is `total_run_time`, summed over a group's jobs
    // (`sum_thread_stats`), where each direction's runtime is the longest.
    m.add("job_runtime", r.run_ms).add("usr_cpu", usr).add("sys_cpu", sys).add("ctx", r.ctx).add("majf", r.majf).add("minf", r.minf);
    let levels = ["1", "2", "4", "8", "16", "32", ">=64"];
    let maps = ["0", "4", "8", "16", "32", "64", ">=64"];
    m.add("iodepth_level", dist_json(&dist(&f.depth, rw_ios), &levels));
    m.add("iodepth_submit", dist_json(&dist(&f.submit, f.total_submit), &maps));
    m.add("iodepth_complete", dist_json(&dist(&f.complete, f.total_complete), &maps));
    m.add("latency_ns", dist_json(&lat_dist(&f.lat_n, rw_ios), &LAT_RANGES[..10]));
    m.add("latency_us", dist_json(&lat_dist(&f.lat_u, rw_ios), &LAT_RANGES[..10]));
    m.add("latency_ms", dist_json(&lat_dist(&f.lat_m, rw_ios), &LAT_RANGES));
    m.add("latency_depth", ts.iodepth).add("latency_target", 0u64).add("latency_percentile", 100.0).add("latency_window", 0u64);
    m
}

fn dist_json(vals: &[f64], names: &[&str]) -> FioJson {
    let mut o = FioJson::obj();
    for (v, n) in vals.iter().zip(names) {
        o.add(n, *v);
    }
    o
}

/// `add_ddir_status_json` for a read, write or trim direction.
fn ddir_json(ts: &ThreadStat, rs: &GroupStat, d: usize, plus: bool) -> FioJson {
    let runt = ts.runtime(d);
    let bw_bytes = if runt > 0 { 1000 * ts.bytes[d] / runt } else { 0 };
    let iops = if runt > 0 { 1000.0 * ts.ios(d) as f64 / runt as f64 } else { 0.0 };
    let mut o = FioJson::obj();
    o.add("io_bytes", ts.bytes[d]).add("io_kbytes", ts.bytes[d] >> 10).add("bw_bytes", bw_bytes).add("bw", bw_bytes / 1024).add("iops", iops);
    o.add("runtime", runt).add("total_ios", ts.ios(d)).add("short_ios", 0u64).add("drop_ios", 0u64);
    o.add("slat_ns", lat_json(&ts.fio.slat[d], false, false));
    o.add("clat_ns", lat_json(&ts.clat[d], true, plus));
    o.add("lat_ns", lat_json(&ts.fio.lat[d], false, false));
    let (bw, io) = (&ts.bw[d], &ts.iops[d]);
    let some = bw.samples > 0;
    let (min, max) = if some { (bw.min, bw.max) } else { (0, 0) };
    let p_of_agg = if some { agg_percent(rs, d, bw.mean()) } else { 0.0 };
    o.add("bw_min", min).add("bw_max", max).add("bw_agg", p_of_agg).add("bw_mean", bw.mean()).add("bw_dev", bw.stdev()).add("bw_samples", bw.samples);
    let (min, max) = if io.samples > 0 { (io.min, io.max) } else { (0, 0) };
    o.add("iops_min", min).add("iops_max", max).add("iops_mean", io.mean()).add("iops_stddev", io.stdev()).add("iops_samples", io.samples);
    o
}

/// `add_ddir_lat_json`: min, max, mean, stddev, N; the percentiles when
/// fio reports them for the series, and with json+ the histogram's bins.
fn lat_json(l: &LatStat, percentiles: bool, plus: bool) -> FioJson {
    let some = l.samples > 0;
    let mut o = FioJson::obj();
    o.add("min", if some { l.min } else { 0 }).add("max", if some { l.max } else { 0 });
    o.add("mean", l.mean()).add("stddev", l.stdev()).add("N", l.samples);
    if percentiles && some {
        let mut p = FioJson::obj();
        for (pct, v) in FIO_PERCENTILES.iter().zip(l.percentiles(&FIO_PERCENTILES)) {
            p.add(&format!("{pct:.6}"), v);
        }
        o.add("percentile", p);
        if plus {
            let mut bins = FioJson::obj();
            for (v, n) in l.bins() {
                bins.add(&v.to_string(), n);
            }
            o.add("bins", bins);
        }
    }
    o
}

/// `show_group_stats`.
fn group_text(rs: &GroupStat) -> String {
    let mut s = format!("\nRun status group {} (all jobs):\n", rs.groupid);
    let i2p = rs.kb_base.is_power_of_two();
    let n = |v: u64, p: bool, u: &str| num2str(v, 4, p, u);
    for (d, group) in GROUP_NAMES.iter().enumerate() {
        if rs.max_run[d] == 0 {
            continue;
        }
        let (agg, lo, hi, io) = (rs.agg[d], rs.min_bw[d], rs.max_bw[d], rs.iobytes[d]);
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
            rs.min_run[d],
            rs.max_run[d]
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

    /// `json_object_add_disk_utils`' fields, the members' averages after.
    fn json(&self) -> FioJson {
        let mut o = FioJson::obj();
        o.add("name", self.name.as_str()).add("read_ios", self.ios[0]).add("write_ios", self.ios[1]);
        o.add("read_merges", self.merges[0]).add("write_merges", self.merges[1]);
        o.add("read_ticks", self.ticks[0]).add("write_ticks", self.ticks[1]);
        o.add("in_queue", self.time_in_queue).add("util", self.util);
        if let Some(a) = self.aggregate() {
            o.add("aggr_read_ios", a.ios[0]).add("aggr_write_ios", a.ios[1]);
            o.add("aggr_read_merges", a.merges[0]).add("aggr_write_merge", a.merges[1]);
            o.add("aggr_read_ticks", a.ticks[0]).add("aggr_write_ticks", a.ticks[1]);
            o.add("aggr_in_queue", a.time_in_queue).add("aggr_util", a.util);
            o.add("slaves", FioJson::Arr(self.slaves.iter().map(DiskUtil::json).collect()));
        }
        o
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
    fn distributions_floor_and_latency_lines() {
        // 1 of 2000 I/Os at depth 1 is 0.05 %: shown as 0.1 (stat_calc_dist).
        assert_eq!(dist(&[1, 0, 0, 1999, 0, 0, 0], 2000)[0], 0.1);
        // 3 I/Os with clat 20-49 µs and 1 of 1-2 ms out of 4: "50=75.00%"
        // and "2=25.00%", one line per unit that has any.
        let mut f = FioStats::default();
        f.total_io_u[0] = 4;
        f.lat_u[4] = 3;
        f.lat_m[0] = 1;
        assert_eq!(latencies_text(&f), "  lat (usec)   : 50=75.00%\n  lat (msec)   : 2=25.00%\n");
    }

    #[test]
    fn bandwidth_samples_skip_the_last_window_and_idle_ones() {
        // 1600 ms of runtime: windows 0..3, the last two not sampled (fio
        // 3.33 took 1 sample of a 1001 ms job, 3 of a 2001 ms one), so
        // windows 0 and 1; window 1 saw no reads: one read sample, 8 KiB
        // in 500 ms = 16 KiB/s, 2 I/Os = 4 IOPS.
        let f = FioStats { windows: vec![[8192, 0, 0, 2, 0, 0], [0, 4096, 0, 0, 1, 0], [4096, 0, 0, 1, 0, 0]], ..FioStats::default() };
        let (bw, iops) = rate_samples(&f, 1600);
        assert_eq!((bw[0].samples, bw[0].min, iops[0].min), (1, 16, 4));
        assert_eq!((bw[1].samples, bw[1].min, iops[1].min), (1, 8, 2));
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
