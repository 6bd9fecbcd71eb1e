//! The `blkstack._core` extension module: a thin layer over `crate::run`.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyOSError};
use pyo3::prelude::*;

use crate::run::{profiles_json, run_file, Output, RunError, RunOptions};

create_exception!(_core, ScenarioError, PyException, "A scenario file or option the model cannot accept.");

fn to_py(e: RunError) -> PyErr {
    match e {
        RunError::Scenario(s) => ScenarioError::new_err(s.to_string()),
        RunError::Io(m) => PyOSError::new_err(m),
    }
}

/// Run the scenario at `path`; returns the JSON summary as a string.
#[pyfunction]
#[pyo3(signature = (path, kernel=None, sets=Vec::new(), trace=None, requests=None, interval=None))]
fn run(
    py: Python<'_>,
    path: String,
    kernel: Option<String>,
    sets: Vec<String>,
    trace: Option<String>,
    requests: Option<String>,
    interval: Option<f64>,
) -> PyResult<String> {
    let opts = RunOptions { kernel, sets, trace: trace.as_deref().map(Output::parse), requests: requests.as_deref().map(Output::parse), interval };
    let v = py.detach(|| run_file(&path, &opts)).map_err(to_py)?;
    Ok(v.to_string())
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
