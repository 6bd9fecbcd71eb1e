//! Running a scenario file end to end: load, build, attach the requested
//! outputs, run, summarise. Output files are written to a temporary name
//! beside the target and renamed only when the run succeeds, so a failed
//! run leaves no partial file behind.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use crate::engine::{Engine, Progress, RunStats};
use crate::stats::report;
use crate::scenario::{self, Scenario, ScenarioError};
use crate::stats::OPS;
use crate::trace::blkparse::BlkparseWriter;
use crate::trace::blktrace::{BlktraceDev, BlktraceWriter};
use crate::trace::requests::RequestsCsv;
use crate::trace::TraceSink;
use crate::genhd::DevId;

/// Where an output goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    Stdout,
    File(PathBuf),
}

impl Output {
    pub fn parse(s: &str) -> Output {
        if s == "-" {
            Output::Stdout
        } else {
            Output::File(PathBuf::from(s))
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Keep events in memory, compactly (the Python API's events and
    /// requests): every event, or the issued requests only.
    pub keep_events: Option<crate::trace::store::Keep>,
    pub kernel: Option<String>,
    pub sets: Vec<String>,
    pub trace: Option<Output>,
    pub requests: Option<Output>,
    /// `--blktrace DIR` and `--blktrace-dump FILE`: blktrace's binary records.
    pub blktrace: Vec<BlktraceTarget>,
    /// iostat interval, in seconds of simulated time.
    pub interval: Option<f64>,
    /// `--check integrity`: run the integrity oracle (conservation is
    /// always checked).
    pub check_integrity: bool,
    /// `--btt`: keep btt's bookkeeping for its report (`reports.btt`).
    pub btt: bool,
}

#[derive(Debug)]
pub enum RunError {
    Scenario(ScenarioError),
    Io(String),
    /// The reader of an output went away (`blkstack run --trace - | head`).
    BrokenPipe,
    /// The progress callback asked to stop.
    Interrupted,
    /// The run finished but a conservation or integrity check failed: the report.
    Check(String),
    /// An option value the run cannot use (`--interval nan`): option and why.
    Option(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Scenario(e) => write!(f, "{e}"),
            RunError::Io(m) => write!(f, "{m}"),
            RunError::BrokenPipe => write!(f, "broken pipe"),
            RunError::Interrupted => write!(f, "interrupted"),
            RunError::Check(m) => write!(f, "{m}"),
            RunError::Option(m) => write!(f, "{m}"),
        }
    }
}

impl From<ScenarioError> for RunError {
    fn from(e: ScenarioError) -> Self {
        RunError::Scenario(e)
    }
}

/// A file written under a temporary name and renamed on [`AtomicFile::commit`];
/// dropped uncommitted, it is removed. An existing file that is not a
/// regular file (`/dev/null`, a FIFO, a terminal) is written in place:
/// renaming over it would replace the device node.
pub struct AtomicFile {
    tmp: PathBuf,
    path: PathBuf,
    committed: bool,
}

impl AtomicFile {
    pub fn create(path: &Path) -> Result<(AtomicFile, File), RunError> {
        if fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            let file = fs::OpenOptions::new().write(true).open(path).map_err(|e| RunError::Io(format!("{}: {e}", path.display())))?;
            return Ok((AtomicFile { tmp: path.to_path_buf(), path: path.to_path_buf(), committed: true }, file));
        }
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path.file_name().ok_or_else(|| RunError::Io(format!("{}: not a file name", path.display())))?;
        let tmp = dir.join(format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id()));
        let file = File::create(&tmp).map_err(|e| RunError::Io(format!("{}: {e}", path.display())))?;
        Ok((AtomicFile { tmp, path: path.to_path_buf(), committed: false }, file))
    }

    pub fn commit(mut self) -> Result<(), RunError> {
        if !self.committed {
            fs::rename(&self.tmp, &self.path).map_err(|e| RunError::Io(format!("{}: {e}", self.path.display())))?;
            self.committed = true;
        }
        Ok(())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if !self.committed {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

fn open_output(out: &Output, files: &mut Vec<AtomicFile>) -> Result<Box<dyn Write>, RunError> {
    match out {
        Output::Stdout => Ok(Box::new(BufWriter::with_capacity(1 << 16, io::stdout()))),
        Output::File(p) => {
            let (af, f) = AtomicFile::create(p)?;
            files.push(af);
            Ok(Box::new(BufWriter::with_capacity(1 << 16, f)))
        }
    }
}

/// The iostat interval in ns, checked: a finite number of seconds of at
/// least one jiffy (diskstats count `io_ticks` in jiffies, so a shorter
/// interval sees 0 or 2 jiffies of busy time: %util 0 or 200), and at most
/// `u64::MAX` ns.
pub fn interval_ns(seconds: Option<f64>) -> Result<Option<u64>, RunError> {
    let Some(s) = seconds else { return Ok(None) };
    let jiffy = 1.0 / crate::profile::HZ as f64;
    if !s.is_finite() || s <= 0.0 || s > u64::MAX as f64 / 1e9 {
        return Err(RunError::Option(format!("--interval {s}: must be a positive, finite number of seconds")));
    }
    if s < jiffy {
        return Err(RunError::Option(format!(
            "--interval {s}: below one jiffy ({} ms at HZ={}), the unit diskstats count busy time in",
            1000 / crate::profile::HZ,
            crate::profile::HZ
        )));
    }
    Ok(Some((s * 1e9).round() as u64))
}

/// Where blktrace's binary records go.
#[derive(Clone, Debug)]
pub enum BlktraceTarget {
    /// `--blktrace DIR`: `DIR/NAME.blktrace.0` per device, as blktrace
    /// writes them (for `blkparse -i NAME -D DIR`).
    Dir(PathBuf),
    /// `--blktrace-dump FILE`: every device's records in one time-ordered
    /// stream, as `blkparse -d FILE` dumps them (for `btt -i FILE`).
    Dump(PathBuf),
}

/// A device as the binary writer sees it: its name, number, whether it is
/// request-based, and whether its records are written (events land on
/// whole disks only).
pub struct TraceDev<'a> {
    pub name: &'a str,
    pub major: u32,
    pub minor: u32,
    pub request_based: bool,
    pub written: bool,
}

/// The writer of `target` for `devs`, its files opened atomically: in a
/// directory, one file per device and CPU (`NAME.blktrace.N`, N below
/// `cpus`).
fn blktrace_writer(devs: &[TraceDev], target: &BlktraceTarget, cpus: u32, files: &mut Vec<AtomicFile>) -> Result<BlktraceWriter, RunError> {
    let mut outs = Vec::new();
    match target {
        BlktraceTarget::Dump(p) => outs.push(open_output(&Output::File(p.clone()), files)?),
        BlktraceTarget::Dir(dir) if !dir.is_dir() => return Err(RunError::Io(format!("--blktrace {}: not a directory", dir.display()))),
        BlktraceTarget::Dir(_) => {}
    }
    let mut out = Vec::new();
    for d in devs {
        let idx = match target {
            _ if !d.written => None,
            BlktraceTarget::Dump(_) => Some(0),
            BlktraceTarget::Dir(dir) => {
                for cpu in 0..cpus.max(1) {
                    outs.push(open_output(&Output::File(dir.join(format!("{}.blktrace.{cpu}", d.name))), files)?);
                }
                Some(outs.len() - cpus.max(1) as usize)
            }
        };
        let nr = if matches!(target, BlktraceTarget::Dir(_)) { cpus.max(1) } else { 1 };
        out.push(BlktraceDev { major: d.major, minor: d.minor, request_based: d.request_based, out: idx, cpus: nr });
    }
    Ok(BlktraceWriter::new(out, outs))
}

/// The run's devices for the binary writer.
fn engine_trace_devs(engine: &Engine) -> Vec<TraceDev<'_>> {
    let topo = &engine.core.topo;
    topo.devs
        .iter()
        .enumerate()
        .map(|(i, d)| TraceDev { name: &d.name, major: d.major, minor: d.minor, request_based: matches!(d.driver, crate::genhd::Driver::Mq(_)), written: d.whole == i as u32 })
        .collect()
}

/// A parsed trace as blktrace's binary records (the devices with events
/// of their own), so blkparse, btt and iowatcher read a real trace that
/// was recorded as text.
pub fn write_trace_blktrace(st: &crate::stats::trace::TraceStats, target: &BlktraceTarget) -> Result<(), RunError> {
    let shown: Vec<DevId> = st.report_input().devices.iter().map(|d| d.id).collect();
    let devs: Vec<TraceDev> = st
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| TraceDev { name: &st.names[i], major: d.major, minor: d.minor, request_based: st.request_based(i), written: shown.contains(&(i as DevId)) })
        .collect();
    let mut files = Vec::new();
    // Recorded as text: one stream per device, the CPUs in its records.
    let mut w = blktrace_writer(&devs, target, 1, &mut files)?;
    let io_err = |e: io::Error| RunError::Io(format!("writing blktrace records: {e}"));
    for ev in &st.events {
        w.record(ev, &st.tasks[ev.task as usize]).map_err(io_err)?;
    }
    w.finish().map_err(io_err)?;
    files.into_iter().try_for_each(AtomicFile::commit)
}

/// Load a scenario file with overrides.
pub fn load_file(path: &str, opts: &RunOptions) -> Result<Scenario, RunError> {
    let text = fs::read_to_string(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => RunError::Io(format!("{path}: no such file")),
        _ => RunError::Io(format!("{path}: {e}")),
    })?;
    Ok(scenario::load(path, &text, opts.kernel.as_deref(), &opts.sets)?)
}

/// A scenario without a `[workload]` has nothing to run: an error, not an
/// empty summary (`check_file` still accepts it, for stacks to run fio on).
fn check_runnable(sc: &Scenario) -> Result<(), RunError> {
    if !matches!(sc.workload.kind, crate::scenario::WorkloadKind::None) {
        return Ok(());
    }
    let msg = if sc.disks.is_empty() {
        "the scenario is empty: no [disks.NAME] and no [workload] (see docs/scenario.md)"
    } else {
        "no [workload] table: nothing to run (type = \"dd\", \"fio\", ...; see docs/scenario.md)"
    };
    Err(RunError::Scenario(ScenarioError { file: sc.file.clone(), line: None, key: "workload".into(), msg: msg.into(), from_set: false }))
}

/// Run a scenario file; returns the JSON summary.
pub fn run_file(path: &str, opts: &RunOptions) -> Result<Value, RunError> {
    run_file_full(path, opts, &mut |_| true).map(|r| r.summary)
}

/// A finished run: its summary, and its events when they were kept.
pub struct RunResult {
    pub summary: Value,
    /// The events kept (`RunOptions::keep_events`).
    pub store: Option<crate::trace::store::EventStore>,
    pub devices: Vec<(String, u32, u32)>,
    pub tasks: Vec<(u32, String)>,
}

/// Run a scenario file and keep what the caller asked for.
pub fn run_file_full(path: &str, opts: &RunOptions, tick: &mut dyn FnMut(&Progress) -> bool) -> Result<RunResult, RunError> {
    let sc = load_file(path, opts)?;
    check_runnable(&sc)?;
    let mut engine = sc.build();
    let mut files = Vec::new();
    if let Some(t) = &opts.trace {
        let w = open_output(t, &mut files)?;
        engine.core.tracer.add_sink(Box::new(BlkparseWriter::new(w)));
    }
    if let Some(r) = &opts.requests {
        let w = open_output(r, &mut files)?;
        engine.core.tracer.add_sink(Box::new(RequestsCsv::new(w)));
    }
    let cpus = run_cpus(&sc, &engine);
    for target in &opts.blktrace {
        let sink = blktrace_writer(&engine_trace_devs(&engine), target, cpus, &mut files)?;
        engine.core.tracer.add_sink(Box::new(sink));
    }
    engine.core.tracer.keep_analysis();
    if opts.btt {
        let topo = &engine.core.topo;
        let devnos = topo.devs.iter().map(|d| (d.major, d.minor)).collect();
        engine.core.tracer.keep_btt(devnos);
    }
    if let Some(keep) = opts.keep_events {
        engine.core.tracer.keep_store(keep);
    }
    engine.sample_every = interval_ns(opts.interval)?;
    if opts.check_integrity {
        engine.core.check.enable_oracle();
    }
    let stats = engine.run_with(tick).ok_or(RunError::Interrupted)?;
    engine.core.tracer.finish().map_err(|e| match e.kind() {
        io::ErrorKind::BrokenPipe => RunError::BrokenPipe,
        _ => RunError::Io(format!("writing output: {e}")),
    })?;
    // A failed check is a finished run: its outputs are what explain it.
    for f in files {
        f.commit()?;
    }
    if let Some(report) = engine.core.check.failure_report() {
        return Err(RunError::Check(format!("{}: {report}", sc.file)));
    }
    let summary = summary(&sc, &engine, &stats);
    let store = engine.core.tracer.store.take();
    let devices = crate::trace::columns::device_table(&engine.core.topo);
    let tasks = crate::trace::columns::task_table(&engine.core.tasks);
    Ok(RunResult { summary, store, devices, tasks })
}

/// The JSON summary of a finished run.
/// The CPUs the run's events land on (and iostat's banner counts): the
/// scenario's, else one per job (the jobs of later fio groups included).
fn run_cpus(sc: &Scenario, engine: &Engine) -> u32 {
    let later = sc.workload.fio.as_ref().map_or(0, |m| m.jobs.len());
    engine.core.cpu.cpus.unwrap_or(engine.jobs.len().max(later).max(1) as u32)
}

pub fn summary(sc: &Scenario, engine: &Engine, st: &RunStats) -> Value {
    let topo = &engine.core.topo;
    let input = report::ReportInput::from_engine(engine);
    let mut devices = Map::new();
    for (i, d) in topo.devs.iter().enumerate() {
        let s = &engine.core.stats[i];
        let per_op = |a: &[u64; crate::stats::NR_OPS]| {
            let mut m = Map::new();
            for op in OPS {
                m.insert(op.name().to_string(), json!(a[op as usize]));
            }
            Value::Object(m)
        };
        let mut dev = json!({
            "kind": d.kind.name(),
            "major": d.major,
            "minor": d.minor,
            "size_bytes": d.nr_sectors * 512,
            "bios_queued": s.queued,
            "splits": s.splits,
            "remaps": s.remaps,
            "requests": s.issued,
            "inserts": s.inserts,
            "completions": s.completed + s.bio_completions,
            "errors": s.errors,
            "sectors": per_op(&s.sectors_queued),
            "sectors_issued": per_op(&s.sectors_issued),
        });
        if d.whole == i as u32 {
            report::device_json(engine, &input, i as u32, &mut dev);
            let q = topo.queue(i as u32);
            if q.limits.zoned == crate::limits::Zoned::HostManaged {
                dev["zone_write_errors"] = json!(s.zone_write_errors);
                dev["zone_wplug_errors"] = json!(s.zone_wplug_errors);
                dev["zones_written"] = json!(s.zones_written);
                dev["zones_out_of_order"] = json!(s.zones_out_of_order);
            }
            let mut lim = Map::new();
            for (k, v) in q.limits.sysfs() {
                lim.insert(k.to_string(), json!(v));
            }
            lim.insert("nr_requests".into(), json!(q.attrs.nr_requests));
            lim.insert("scheduler".into(), json!(q.attrs.scheduler.name()));
            lim.insert("nomerges".into(), json!(q.attrs.nomerges));
            lim.insert("rotational".into(), json!(q.attrs.rotational as u8));
            lim.insert("write_cache".into(), json!(if q.attrs.write_cache { "write back" } else { "write through" }));
            lim.insert("fua".into(), json!(q.attrs.fua as u8));
            if matches!(d.driver, crate::genhd::Driver::Mq(_)) {
                // Request-based queues only; 0 while wbt is off (6.12's
                // queue_wb_lat_show).
                lim.insert("wbt_lat_usec".into(), json!(q.attrs.wbt_lat_nsec / 1000));
            }
            lim.insert("zoned".into(), json!(q.limits.zoned.name()));
            dev["limits"] = Value::Object(lim);
            if q.attrs.scheduler == crate::limits::Elevator::Kyber {
                // queue/iosched/ of the elevator in force.
                dev["iosched"] = json!({"read_lat_nsec": q.attrs.iosched.read_lat_nsec, "write_lat_nsec": q.attrs.iosched.write_lat_nsec});
            }
            if let Some(f) = sc.disks.iter().find(|x| x.name == d.name).and_then(|x| x.loop_file.as_ref()) {
                dev["loop"] = json!({"backing_device": f.backing, "offset": f.offset << 9, "direct_io": f.direct_io});
            }
            if let Some(spec) = sc.stacked.iter().find(|x| x.name == d.name) {
                let (key, geometry) = scenario::geometry::stack_geometry_json(spec);
                dev[key] = geometry;
            }
        } else {
            dev["partition_of"] = json!(topo.dev(d.whole).name);
            dev["start"] = json!(d.start_sect);
        }
        devices.insert(d.name.clone(), dev);
    }
    let behaviour: Map<String, Value> = sc.beh.values().into_iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    let mut v = json!({
        "scenario": sc.file,
        "name": sc.name,
        "kernel": sc.profile.kernel,
        "profile": sc.profile.name,
        "cpus": run_cpus(sc, engine),
        "behaviour": behaviour,
        "devices": devices,
        "sim_time_ns": st.sim_time_ns,
        "wall_time_s": st.wall_time_s,
        "engine_cpu_s": st.engine_cpu_s,
        "bios": st.bios,
        "bios_per_s": if st.wall_time_s > 0.0 { st.bios as f64 / st.wall_time_s } else { 0.0 },
        "peak_live_bios": st.peak_live_bios,
        "io_units": st.units,
        "errors": st.errors,
        "checks": {
            "conservation": "passed",
            "integrity": if engine.core.check.oracle_enabled() { "passed" } else { "off" },
            "roots_checked": engine.core.check.roots_checked,
            "roots_unchecked": engine.core.check.roots_unchecked,
        },
        "iostat_intervals": report::intervals_json(&input),
        "reports": report::reports_json(&input),
        "warnings": run_warnings(sc, engine),
    });
    if let Some(c) = &sc.compare {
        let side = |s: &crate::scenario::compare::Side| json!({"label": s.label, "kernel": s.kernel, "set": s.sets});
        v["compare"] = json!({"before": side(&c.before), "after": side(&c.after)});
    }
    if let Some(meta) = &sc.workload.fio {
        let (fio, text) = crate::stats::fio::report(meta, engine);
        v["fio"] = fio;
        v["reports"]["fio"] = json!(text);
    }
    v
}

/// The workload's warnings, then what its sources noted while running
/// (once each: a job's clones note the same thing).
fn run_warnings(sc: &Scenario, engine: &Engine) -> Vec<String> {
    let mut out = sc.workload.warnings.clone();
    for note in engine.jobs.iter().filter_map(|j| j.source.note()) {
        if !out.contains(&note) {
            out.push(note);
        }
    }
    out
}

/// Load and build a scenario without running it: the profile, the
/// behaviour switches and every device with its limits.
pub fn check_file(path: &str, opts: &RunOptions) -> Result<Value, RunError> {
    let sc = load_file(path, opts)?;
    let engine = sc.build();
    let idle = RunStats { sim_time_ns: 0, wall_time_s: 0.0, engine_cpu_s: None, bios: 0, peak_live_bios: 0, units: 0, errors: 0 };
    let mut v = summary(&sc, &engine, &idle);
    if let Value::Object(m) = &mut v {
        for k in ["sim_time_ns", "wall_time_s", "engine_cpu_s", "bios", "bios_per_s", "peak_live_bios", "io_units", "errors", "iostat_intervals", "reports"] {
            m.remove(k);
        }
    }
    Ok(v)
}

/// Width of the progress bar, in characters between the brackets.
const BAR: usize = 24;

/// The progress line `blkstack` shows on a terminal during long runs:
/// `blkstack [######..................]  25%  simulated 1.250 s  2.10 M bios/s`.
/// When the workload's sources do not know their share (e.g. fio with
/// `time_based` and no `runtime`), a block moves along the bar instead,
/// one place per `step`.
pub fn progress_line(p: &Progress, step: u64) -> String {
    let rate = if p.wall_s > 0.0 { p.bios as f64 / p.wall_s / 1e6 } else { 0.0 };
    let (bar, pct) = match p.done {
        Some(f) => {
            let f = f.clamp(0.0, 1.0);
            let full = ((f * BAR as f64) as usize).min(BAR);
            (format!("{}{}", "#".repeat(full), ".".repeat(BAR - full)), format!("{:>3.0}%", f * 100.0))
        }
        None => {
            // Back and forth: 0, 1, ..., BAR - 3, BAR - 4, ..., 1, 0, ...
            let span = (BAR - 3) as u64;
            let at = (step % (2 * span)).min(2 * span - step % (2 * span)) as usize;
            (format!("{}<=>{}", ".".repeat(at), ".".repeat(BAR - 3 - at)), "   ?".to_string())
        }
    };
    format!("blkstack [{bar}] {pct}  simulated {:.3} s  {rate:.2} M bios/s", p.sim_time_ns as f64 / 1e9)
}

/// Every profile and switch, for `blkstack profiles`.
pub fn profiles_json() -> Value {
    let profiles = crate::profile::profiles();
    let ps: Vec<Value> = profiles.iter().map(|p| json!({"name": p.name, "kernel": p.kernel, "summary": p.summary})).collect();
    let sw: Vec<Value> = crate::profile::SWITCHES
        .iter()
        .map(|s| {
            let per: Map<String, Value> = profiles.iter().map(|p| (p.name.to_string(), json!((s.get)(&p.behaviour)))).collect();
            json!({"name": format!("behaviour.{}", s.name), "values": s.values.split('|').collect::<Vec<_>>(), "description": s.description, "per_profile": per})
        })
        .collect();
    json!({"default": crate::profile::DEFAULT_PROFILE, "profiles": ps, "switches": sw})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_bar() {
        // A quarter handed out: 6 of the 24 places; 2.1 M bios in 1 s.
        let p = Progress { sim_time_ns: 1_250_000_000, bios: 2_100_000, wall_s: 1.0, done: Some(0.25) };
        assert_eq!(progress_line(&p, 0), "blkstack [######..................]  25%  simulated 1.250 s  2.10 M bios/s");
        // Share unknown: "<=>" moves one place per step, 21 places out
        // (24 - 3) and back.
        let p = Progress { done: None, ..p };
        let bar = |step| progress_line(&p, step)[9..35].to_string();
        assert_eq!(bar(0), "[<=>.....................]");
        assert_eq!(bar(21), "[.....................<=>]");
        assert_eq!(bar(22), "[....................<=>.]");
        assert_eq!(bar(42), bar(0));
    }
}
