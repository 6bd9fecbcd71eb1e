//! The `blkstack._core` extension module: a thin layer over `crate::run`.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::{PyBrokenPipeError, PyException, PyKeyboardInterrupt, PyOSError, PyValueError};
use pyo3::prelude::*;

use pyo3::types::{PyBytes, PyDict};

use crate::critical_path::{run_on_own_thread, Seat};
use crate::engine::Progress;
use crate::run::{profiles_json, progress_line, run_file_full, BlktraceTarget, Output, RunError, RunOptions, RunResult};
use crate::trace::store::{Column, EventStore, Keep};
use crate::trace::Action;

create_exception!(_core, ScenarioError, PyException, "A scenario file or option the model cannot accept.");
create_exception!(_core, CheckError, PyException, "The run finished but a conservation or integrity check failed.");

fn to_py(e: RunError) -> PyErr {
    match e {
        RunError::Scenario(s) => ScenarioError::new_err(s.to_string()),
        RunError::Io(m) => PyOSError::new_err(m),
        RunError::BrokenPipe => PyBrokenPipeError::new_err("broken pipe"),
        RunError::Interrupted => PyKeyboardInterrupt::new_err(()),
        RunError::Check(m) => CheckError::new_err(m),
        RunError::Option(m) => PyValueError::new_err(m),
    }
}

/// Wall-clock seconds between two looks at Python's signals (Ctrl-C) by
/// the thread that waits for a run.
const SIGNAL_EVERY_S: f64 = 0.1;
/// Wall-clock seconds between two redraws of the progress bar.
const DRAW_EVERY_S: f64 = 0.25;

/// Seconds of wall time after which a run shows its progress bar: 1, or
/// `BLKSTACK_PROGRESS_AFTER` (the tests set 0).
fn progress_after() -> f64 {
    std::env::var("BLKSTACK_PROGRESS_AFTER").ok().and_then(|v| v.parse().ok()).unwrap_or(1.0)
}

/// Bumped by `interrupt()`: every run started before it stops at its next
/// tick. A run compares the value it started with, so runs started later
/// are not affected.
static INTERRUPTS: AtomicU64 = AtomicU64::new(0);

/// Run with a tick that honours Ctrl-C and, when asked, shows a progress
/// bar on stderr (a terminal only). The run holds no GIL, so runs on
/// several Python threads use several cores, and its engine has a thread
/// of its own (`critical_path`: among runs at once, the longest goes
/// first). The engine ticks every 65536 events; the tick reads the
/// `INTERRUPTS` flag and the calling thread's stop flag, and redraws the
/// bar a few times a second. The calling thread, meanwhile, takes the GIL
/// a few times a second to let Python look at its signals (Ctrl-C on the
/// main thread), so the loop stays in Rust.
fn run_checked(py: Python<'_>, path: &str, opts: &RunOptions, progress: bool) -> PyResult<RunResult> {
    let show = progress && std::io::stderr().is_terminal();
    let after = progress_after();
    let epoch = INTERRUPTS.load(Ordering::Relaxed);
    let stop = AtomicBool::new(false);
    let engine = |seat: Option<&Seat>| {
        let (mut shown, mut drawn, mut draws) = (false, f64::NEG_INFINITY, 0u64);
        let mut tick = |p: &Progress| {
            if INTERRUPTS.load(Ordering::Relaxed) != epoch || stop.load(Ordering::Relaxed) {
                return false;
            }
            if let Some(seat) = seat {
                seat.tick(p.done);
            }
            if show && p.wall_s >= after && p.wall_s - drawn >= DRAW_EVERY_S {
                drawn = p.wall_s;
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r{}\x1b[K", progress_line(p, draws));
                let _ = err.flush();
                draws += 1;
                shown = true;
            }
            true
        };
        let result = run_file_full(path, opts, &mut tick);
        if shown {
            eprint!("\r\x1b[K");
        }
        result
    };
    let look_at_signals = || {
        if !stop.load(Ordering::Relaxed) && Python::attach(|py| py.check_signals()).is_err() {
            stop.store(true, Ordering::Relaxed);
        }
    };
    let result = py.detach(|| run_on_own_thread(engine, Duration::from_secs_f64(SIGNAL_EVERY_S), look_at_signals));
    result.map_err(to_py)
}

/// Stop every run in progress (on any thread) at its next tick: each then
/// raises KeyboardInterrupt. Runs started afterwards are not affected. For
/// Ctrl-C while runs go on in worker threads, which Python's signal
/// handlers (main thread only) do not reach.
#[pyfunction]
fn interrupt() {
    INTERRUPTS.fetch_add(1, Ordering::Relaxed);
}

fn options(kernel: Option<String>, sets: Vec<String>, trace: Option<String>, requests: Option<String>, interval: Option<f64>) -> RunOptions {
    let out = |s: Option<String>| s.as_deref().map(Output::parse);
    RunOptions { kernel, sets, trace: out(trace), requests: out(requests), interval, ..RunOptions::default() }
}

/// The binary trace outputs asked for: a directory, a dump file, or both.
fn blktrace_targets(dir: Option<String>, dump: Option<String>) -> Vec<BlktraceTarget> {
    let dirs = dir.into_iter().map(|d| BlktraceTarget::Dir(d.into()));
    dirs.chain(dump.into_iter().map(|f| BlktraceTarget::Dump(f.into()))).collect()
}

/// `check`: "integrity" turns the integrity oracle on (conservation is
/// always checked); anything else is refused.
fn with_check(opts: RunOptions, check: Option<String>) -> PyResult<RunOptions> {
    match check.as_deref() {
        None => Ok(opts),
        Some("integrity") => Ok(RunOptions { check_integrity: true, ..opts }),
        Some(other) => Err(ScenarioError::new_err(format!("--check {other}: unknown check (integrity)"))),
    }
}

/// Run the scenario at `path`; returns the JSON summary as a string.
/// `blktrace`: a directory for blktrace's binary files (`NAME.blktrace.0`);
/// `blktrace_dump`: a file for all of them in one stream (for `btt -i`).
/// `btt`: also btt's report (`reports.btt`, what `btt -A` prints).
/// With `progress`, a line on stderr (a terminal only) follows runs longer
/// than a second. Ctrl-C stops the run (KeyboardInterrupt).
#[pyfunction]
#[pyo3(signature = (path, kernel=None, sets=Vec::new(), trace=None, requests=None, interval=None, progress=false, check=None, blktrace=None, btt=false, blktrace_dump=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    path: String,
    kernel: Option<String>,
    sets: Vec<String>,
    trace: Option<String>,
    requests: Option<String>,
    interval: Option<f64>,
    progress: bool,
    check: Option<String>,
    blktrace: Option<String>,
    btt: bool,
    blktrace_dump: Option<String>,
) -> PyResult<String> {
    let opts = with_check(options(kernel, sets, trace, requests, interval), check)?;
    let opts = RunOptions { blktrace: blktrace_targets(blktrace, blktrace_dump), btt, ..opts };
    Ok(run_checked(py, &path, &opts, progress)?.summary.to_string())
}

/// Like `run`, and also the events, kept compactly: returns (summary
/// JSON, Events, {table: list}). `events`: keep every event (else the
/// issued requests only). `trace`, `requests`, `blktrace`,
/// `blktrace_dump`, `progress` and `btt` as `run` takes them.
#[pyfunction]
#[pyo3(signature = (path, kernel=None, sets=Vec::new(), interval=None, check=None, trace=None, requests=None, progress=false, blktrace=None, btt=false, blktrace_dump=None, events=true))]
#[allow(clippy::too_many_arguments)]
fn run_columns<'py>(
    py: Python<'py>,
    path: String,
    kernel: Option<String>,
    sets: Vec<String>,
    interval: Option<f64>,
    check: Option<String>,
    trace: Option<String>,
    requests: Option<String>,
    progress: bool,
    blktrace: Option<String>,
    btt: bool,
    blktrace_dump: Option<String>,
    events: bool,
) -> PyResult<(String, Events, Bound<'py, PyDict>)> {
    let opts = with_check(options(kernel, sets, trace, requests, interval), check)?;
    let keep = if events { Keep::All } else { Keep::Issues };
    let opts = RunOptions { keep_events: Some(keep), blktrace: blktrace_targets(blktrace, blktrace_dump), btt, ..opts };
    let r = run_checked(py, &path, &opts, progress)?;
    let store = r.store.unwrap_or_else(|| EventStore::new(keep));
    let tables = tables_dict(py, r.devices, r.tasks, &store.rwbs_names)?;
    Ok((r.summary.to_string(), Events { store }, tables))
}

/// The events of a run or a trace, kept compactly (trace::store): each
/// column is decoded when asked for, as little-endian bytes that numpy,
/// pandas and Arrow wrap without a copy.
#[pyclass(frozen, module = "blkstack._core")]
struct Events {
    store: EventStore,
}

#[pymethods]
impl Events {
    fn __len__(&self) -> usize {
        self.store.len()
    }

    /// True when every event was kept; False when only the issued
    /// requests were (`events=False`).
    #[getter]
    fn complete(&self) -> bool {
        self.store.keep() == Keep::All
    }

    /// Entries of a column: one per event, or with `issues_only` one per
    /// issued request ('D').
    #[pyo3(signature = (issues_only=false))]
    fn rows(&self, issues_only: bool) -> usize {
        self.store.rows(issues_only)
    }

    /// Bytes the compact log takes.
    #[getter]
    fn nbytes(&self) -> usize {
        self.store.stream_bytes()
    }

    /// Columns as little-endian bytes, {name: bytes}, decoded in one pass:
    /// time_ns u64, dev u32, action u8, rwbs u16, sector u64, bytes u32,
    /// nr_sectors u32, task u32, error i32, arg u64, from_dev u32, and
    /// with `issues_only` (one entry per issued request, 'D') also seq i64
    /// (the request's number on its device, from 0).
    #[pyo3(signature = (names, issues_only=false))]
    fn columns<'py>(&self, py: Python<'py>, names: Vec<String>, issues_only: bool) -> PyResult<Bound<'py, PyDict>> {
        let mut wanted = Vec::new();
        for name in &names {
            let col = Column::parse(name).ok_or_else(|| PyValueError::new_err(format!("{name}: no such column")))?;
            if col == Column::Seq && !issues_only {
                return Err(PyValueError::new_err("seq: a column of the issued requests only (issues_only=True)"));
            }
            wanted.push(col);
        }
        let rows = self.store.rows(issues_only);
        let out = PyDict::new(py);
        let mut buffers = Vec::new();
        for (name, col) in names.iter().zip(&wanted) {
            let bytes = PyBytes::new_with(py, rows * col.width(), |_| Ok(()))?;
            buffers.push(Buffer(bytes.as_bytes().as_ptr() as *mut u8, rows * col.width()));
            out.set_item(name, bytes)?;
        }
        py.detach(|| {
            // SAFETY: each buffer is the storage of a bytes object made
            // just above, of that length, that no Python code has seen yet
            // (the dict holding it is not returned until the fill is done),
            // so writing it is CPython's own PyBytes_FromStringAndSize(NULL,
            // n) then fill; the GIL-free writer is the only one.
            let mut slices: Vec<(Column, &mut [u8])> =
                wanted.iter().zip(&buffers).map(|(c, b)| (*c, unsafe { std::slice::from_raw_parts_mut(b.0, b.1) })).collect();
            self.store.fill(&mut slices, issues_only);
        });
        Ok(out)
    }
}

/// A bytes object's storage, filled without the GIL (see `Events::columns`).
struct Buffer(*mut u8, usize);
// SAFETY: the pointer is only written by the one thread that fills it,
// while the owning bytes object is held and not yet visible to Python.
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

/// The tables that name what the columns hold: devices (name, major,
/// minor), tasks (pid, comm), actions and rwbs strings.
fn tables_dict<'py>(py: Python<'py>, devices: Vec<(String, u32, u32)>, tasks: Vec<(u32, String)>, rwbs: &[String]) -> PyResult<Bound<'py, PyDict>> {
    let tables = PyDict::new(py);
    tables.set_item("devices", devices)?;
    tables.set_item("tasks", tasks)?;
    tables.set_item("actions", Action::ALL.iter().map(|a| a.letter()).collect::<Vec<_>>())?;
    tables.set_item("rwbs", rwbs.to_vec())?;
    Ok(tables)
}

/// Analyse a trace file (blkparse text, blktrace's binary files or the kernel's ftrace text of the
/// block tracepoints) as a run is analysed: returns (summary JSON, columns
/// tables), the events and tables as `run_columns` gives them (times
/// relative to the trace's first record). `interval`: seconds of trace
/// time between iostat snapshots. `events`: keep every event (else the
/// issued requests only).
/// `btt`: also btt's report. `blktrace`, `blktrace_dump`: write the trace
/// as blktrace's binary files into that directory, or as one dump file.
/// `requests`: without `events`, keep the issued requests (false: keep no
/// event, for a caller that shows only the summary).
#[pyfunction]
#[pyo3(signature = (path, interval=None, events=false, btt=false, blktrace=None, blktrace_dump=None, names=Vec::new(), requests=true))]
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn trace_stats<'py>(
    py: Python<'py>,
    path: String,
    interval: Option<f64>,
    events: bool,
    btt: bool,
    blktrace: Option<String>,
    blktrace_dump: Option<String>,
    names: Vec<String>,
    requests: bool,
) -> PyResult<(String, Events, Bound<'py, PyDict>)> {
    use crate::stats::dev_names;
    let names = names.iter().map(|s| dev_names::parse_name(s)).collect::<Result<Vec<_>, _>>().map_err(|e| PyValueError::new_err(format!("--name {e}")))?;
    let every = crate::run::interval_ns(interval).map_err(to_py)?;
    let keep = crate::stats::trace::Keep { events: events || blktrace.is_some() || blktrace_dump.is_some(), requests, btt };
    let st = py
        .detach(|| {
            let mut st = crate::stats::trace::analyse_file(&path, every, keep)?;
            // Names the file gives its device, then the user's.
            let from_file = dev_names::names_from_file(&path, &st.devices);
            st.rename(&from_file);
            st.rename(&names);
            Ok::<_, std::io::Error>(st)
        })
        .map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
    for target in blktrace_targets(blktrace, blktrace_dump) {
        py.detach(|| crate::run::write_trace_blktrace(&st, &target)).map_err(to_py)?;
    }
    let keep = if events { Keep::All } else { Keep::Issues };
    let store = py.detach(|| EventStore::from_trace(keep, &st.events, &st.rwbs, &st.rwbs_names));
    let tasks = crate::trace::columns::task_table(&st.tasks);
    let tables = tables_dict(py, st.device_table(), tasks, &store.rwbs_names)?;
    Ok((st.summary(&path).to_string(), Events { store }, tables))
}

/// Load and validate a scenario without running it; returns JSON of the
/// resolved profile, switches and devices with their limits.
#[pyfunction]
#[pyo3(signature = (path, kernel=None, sets=Vec::new()))]
fn check(path: String, kernel: Option<String>, sets: Vec<String>) -> PyResult<String> {
    let opts = options(kernel, sets, None, None, None);
    Ok(crate::run::check_file(&path, &opts).map_err(to_py)?.to_string())
}

/// Every kernel profile and behaviour switch, as JSON.
#[pyfunction]
fn profiles() -> String {
    profiles_json().to_string()
}

/// The kernel profiles' names, in `profiles()`'s order: what every
/// command's `--kernel` accepts, without building and parsing the whole
/// JSON document at each start.
#[pyfunction]
fn profile_names() -> Vec<&'static str> {
    crate::profile::profiles().iter().map(|p| p.name).collect()
}

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("CheckError", m.py().get_type::<CheckError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(profile_names, m)?)?;
    m.add_function(wrap_pyfunction!(interrupt, m)?)?;
    m.add_function(wrap_pyfunction!(run_columns, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(trace_stats, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_class::<Events>()?;
    m.add("IOSTAT_COLUMNS", crate::stats::iostat::COLUMNS.to_vec())?;
    m.add("BTT_STAGES", crate::stats::analysis::STAGES.to_vec())?;
    crate::python_diff::register(m)?;
    Ok(())
}
