//! `blkstack diff`'s entry points into the engine: a trace read as
//! streams of events ([`crate::trace::streams`]), and two streams aligned
//! ([`crate::trace::align`]).

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::trace::align::align;
use crate::trace::streams::{event_key, key_ids, read_streams};

fn le_bytes<'py, T: Copy, const N: usize>(py: Python<'py>, v: &[T], to: impl Fn(T) -> [u8; N]) -> Bound<'py, PyBytes> {
    let mut out = Vec::with_capacity(v.len() * N);
    v.iter().for_each(|&x| out.extend_from_slice(&to(x)));
    PyBytes::new(py, &out)
}

/// Read a trace (blkparse or ftrace text, blktrace's binary files) into
/// streams: returns (devices, rwbs table, [(device index, action, columns)],
/// records, skipped lines, [(line, text, reason)]). Columns are
/// little-endian bytes: line u64, rwbs u32 (into the table), sector u64,
/// nr_sectors u32, split u64 (u64::MAX: absent).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn trace_streams<'py>(
    py: Python<'py>,
    path: String,
) -> PyResult<(Vec<String>, Vec<String>, Bound<'py, PyList>, usize, usize, Vec<(usize, String, String)>)> {
    let t = py.detach(|| read_streams(&path)).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
    let streams = PyList::empty(py);
    for s in &t.streams {
        let cols = PyDict::new(py);
        cols.set_item("line", le_bytes(py, &s.line, u64::to_le_bytes))?;
        cols.set_item("rwbs", le_bytes(py, &s.rwbs, u32::to_le_bytes))?;
        cols.set_item("sector", le_bytes(py, &s.sector, u64::to_le_bytes))?;
        cols.set_item("nr_sectors", le_bytes(py, &s.nr_sectors, u32::to_le_bytes))?;
        cols.set_item("split", le_bytes(py, &s.split, u64::to_le_bytes))?;
        streams.append((s.dev, s.action, cols))?;
    }
    let bad = t.bad.into_iter().map(|b| (b.line, b.text, b.reason)).collect();
    Ok((t.devices, t.rwbs, streams, t.count, t.skipped, bad))
}

/// Columns of one side: rwbs ids (u32), sector (u64), nr_sectors (u32),
/// split (u64), as little-endian bytes.
type Side<'a> = (&'a [u8], &'a [u8], &'a [u8], &'a [u8]);
type SideBytes<'py> = (Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>, Bound<'py, PyBytes>);

fn keys<'a>(s: Side<'a>) -> PyResult<impl Iterator<Item = (u32, u64, u64)> + 'a> {
    let n = s.0.len() / 4;
    if s.1.len() != 8 * n || s.2.len() != 4 * n || s.3.len() != 8 * n {
        return Err(PyValueError::new_err("columns of different lengths"));
    }
    let u32_at = |b: &'a [u8], i: usize| u32::from_le_bytes(b[4 * i..4 * i + 4].try_into().expect("4 bytes"));
    let u64_at = |b: &'a [u8], i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().expect("8 bytes"));
    Ok((0..n).map(move |i| event_key(u32_at(s.0, i), u64_at(s.1, i), u32_at(s.2, i), u64_at(s.3, i))))
}

/// Align two event streams given as columns (their rwbs ids common to
/// both): returns (events aligned in order, events in common ignoring
/// order, [(tag, i1, i2, j1, j2)] as difflib's opcodes).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn align_streams<'py>(py: Python<'py>, a: SideBytes<'py>, b: SideBytes<'py>) -> PyResult<(usize, usize, Vec<(&'static str, usize, usize, usize, usize)>)> {
    let (ka, kb) = (keys((a.0.as_bytes(), a.1.as_bytes(), a.2.as_bytes(), a.3.as_bytes()))?, keys((b.0.as_bytes(), b.1.as_bytes(), b.2.as_bytes(), b.3.as_bytes()))?);
    let r = py.detach(|| {
        let (a, b, n) = key_ids(ka, kb);
        align(&a, &b, n)
    });
    Ok((r.matched, r.common, r.ops.iter().map(|o| (o.tag.name(), o.i1, o.i2, o.j1, o.j2)).collect()))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(trace_streams, m)?)?;
    m.add_function(wrap_pyfunction!(align_streams, m)?)?;
    Ok(())
}
