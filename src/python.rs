//! The `blkstack._core` extension module: a thin layer over `crate::run`.

use std::io::{IsTerminal, Write};

use pyo3::create_exception;
use pyo3::exceptions::{PyBrokenPipeError, PyException, PyKeyboardInterrupt, PyOSError};
use pyo3::prelude::*;

use crate::engine::Progress;
use crate::run::{profiles_json, run_file_with, Output, RunError, RunOptions};

create_exception!(_core, ScenarioError, PyException, "A scenario file or option the model cannot accept.");

fn to_py(e: RunError) -> PyErr {
    match e {
        RunError::Scenario(s) => ScenarioError::new_err(s.to_string()),
        RunError::Io(m) => PyOSError::new_err(m),
        RunError::BrokenPipe => PyBrokenPipeError::new_err("broken pipe"),
        RunError::Interrupted => PyKeyboardInterrupt::new_err(()),
    }
}

/// One progress line on stderr, rewritten in place.
fn show_progress(p: &Progress) {
    let rate = if p.wall_s > 0.0 { p.bios as f64 / p.wall_s / 1e6 } else { 0.0 };
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\rblkstack: simulated {:.3} s, {} bios, {:.2} M bios/s ", p.sim_time_ns as f64 / 1e9, p.bios, rate);
    let _ = err.flush();
}

/// Run the scenario at `path`; returns the JSON summary as a string.
/// With `progress`, a line on stderr (a terminal only) follows runs longer
/// than a second. Ctrl-C stops the run (KeyboardInterrupt).
#[pyfunction]
#[pyo3(signature = (path, kernel=None, sets=Vec::new(), trace=None, requests=None, interval=None, progress=false))]
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
) -> PyResult<String> {
    let opts = RunOptions { kernel, sets, trace: trace.as_deref().map(Output::parse), requests: requests.as_deref().map(Output::parse), interval };
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
    let result = run_file_with(&path, &opts, &mut tick);
    if shown {
        eprint!("\r\x1b[K");
    }
    Ok(result.map_err(to_py)?.to_string())
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
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(profiles, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    Ok(())
}
