//! The `blkstack._core` extension module: a thin layer over `crate::run`.

use std::io::{IsTerminal, Write};

use pyo3::create_exception;
use pyo3::exceptions::{PyBrokenPipeError, PyException, PyKeyboardInterrupt, PyOSError};
use pyo3::prelude::*;

use pyo3::types::{PyBytes, PyDict};

use crate::engine::Progress;
use crate::run::{profiles_json, run_file_full, Output, RunError, RunOptions, RunResult};
use crate::trace::columns::EventColumns;
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
    }
}

/// One progress line on stderr, rewritten in place.
fn show_progress(p: &Progress) {
    let rate = if p.wall_s > 0.0 { p.bios as f64 / p.wall_s / 1e6 } else { 0.0 };
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\rblkstack: simulated {:.3} s, {} bios, {:.2} M bios/s ", p.sim_time_ns as f64 / 1e9, p.bios, rate);
    let _ = err.flush();
}

/// Run with a tick that honours Ctrl-C and, when asked, shows progress.
fn run_checked(py: Python<'_>, path: &str, opts: &RunOptions, progress: bool) -> PyResult<RunResult> {
    let show = progress && std::io::stderr().is_terminal();
    let mut shown = false;
    let mut tick = |p: &Progress| {
        if py.check_signals().is_err() {
            return false;
        }
        if show && p.wall_s > 1.0 {
            show_progress(p);
            shown = true;
        }
        true
    };
    let result = run_file_full(path, opts, &mut tick);
    if shown {
        eprint!("\r\x1b[K");
    }
    result.map_err(to_py)
}

fn options(kernel: Option<String>, sets: Vec<String>, trace: Option<String>, requests: Option<String>, interval: Option<f64>) -> RunOptions {
    let out = |s: Option<String>| s.as_deref().map(Output::parse);
    RunOptions { kernel, sets, trace: out(trace), requests: out(requests), interval, keep_events: false, check_integrity: false }
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
/// With `progress`, a line on stderr (a terminal only) follows runs longer
/// than a second. Ctrl-C stops the run (KeyboardInterrupt).
#[pyfunction]
#[pyo3(signature = (path, kernel=None, sets=Vec::new(), trace=None, requests=None, interval=None, progress=false, check=None))]
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
) -> PyResult<String> {
    let opts = with_check(options(kernel, sets, trace, requests, interval), check)?;
    Ok(run_checked(py, &path, &opts, progress)?.summary.to_string())
}

/// Like `run`, and also every event as columns: returns (summary JSON,
/// {column: bytes}, {table: list}). Columns are little-endian arrays:
/// time_ns u64, dev u32, action u8, rwbs u16, sector u64, bytes u32,
/// task u32, error i32, arg u64, from_dev u32.
#[pyfunction]
#[pyo3(signature = (path, kernel=None, sets=Vec::new(), interval=None, check=None))]
fn run_columns<'py>(
    py: Python<'py>,
    path: String,
    kernel: Option<String>,
    sets: Vec<String>,
    interval: Option<f64>,
    check: Option<String>,
) -> PyResult<(String, Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let opts = RunOptions { keep_events: true, ..with_check(options(kernel, sets, None, None, interval), check)? };
    let r = run_checked(py, &path, &opts, false)?;
    let c = EventColumns::build(&r.events);
    let cols = PyDict::new(py);
    for (name, data) in [
        ("time_ns", &c.time_ns),
        ("dev", &c.dev),
        ("action", &c.action),
        ("rwbs", &c.rwbs),
        ("sector", &c.sector),
        ("bytes", &c.bytes),
        ("task", &c.task),
        ("error", &c.error),
        ("arg", &c.arg),
        ("from_dev", &c.from_dev),
    ] {
        cols.set_item(name, PyBytes::new(py, data))?;
    }
    let tables = PyDict::new(py);
    tables.set_item("devices", r.devices)?;
    tables.set_item("tasks", r.tasks)?;
    tables.set_item("actions", Action::ALL.iter().map(|a| a.letter()).collect::<Vec<_>>())?;
    tables.set_item("rwbs", c.rwbs_names)?;
    Ok((r.summary.to_string(), cols, tables))
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

#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("CheckError", m.py().get_type::<CheckError>())?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(run_columns, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
