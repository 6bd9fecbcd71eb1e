//! `[disks.NAME.model]`: the device's service model, a preset with any of
//! its parameters overridden (docs/scenario.md lists them with defaults).

use crate::disk::{Rotation, SeekCurve, ServiceModel, PRESETS};

use super::tree::{Obj, ScenarioError};

const MODEL_KEYS: &[&str] = &[
    "preset",
    "read_latency_us",
    "seq_read_latency_us",
    "streams",
    "write_latency_us",
    "bandwidth",
    "write_bandwidth",
    "iops",
    "parallelism",
    "discard_latency_us",
    "discard_us_per_gib",
    "discard_parallelism",
    "flush_latency_us",
    "command_overhead_us",
    "write_command_overhead_us",
    "write_cache_size",
    "media_write_bandwidth",
    "rpm",
    "seek_min_us",
    "seek_max_us",
    "cylinders",
    "seek_curve",
    "track_readahead",
    "batch_completions",
];

/// The five figures of a seek curve, `a + b·√d` ms below `boundary`
/// cylinders and `c + e·d` from it (Ruemmler and Wilkes' form).
const CURVE_KEYS: &[&str] = &["short_ms", "short_sqrt_ms", "boundary_cyl", "long_ms", "long_per_cyl_ms"];

pub fn read_model(d: &Obj, base: ServiceModel) -> Result<ServiceModel, ScenarioError> {
    let Some(t) = d.table("model")? else { return Ok(base) };
    let mut m = match t.opt_str("preset")? {
        None => base,
        Some((name, n)) => ServiceModel::preset(&name).ok_or_else(|| {
            let names: Vec<&str> = PRESETS.iter().map(|p| p.0).collect();
            t.err("preset", &n.at, format!("unknown preset '{name}' (one of {})", names.join(", ")))
        })?,
    };
    read_times(&t, &mut m)?;
    read_rates(&t, &mut m)?;
    read_rotation(&t, &mut m)?;
    t.finish(MODEL_KEYS)?;
    Ok(m)
}

/// A non-negative time in µs (fractions allowed), as ns.
fn us(t: &Obj, key: &str, field: &mut u64) -> Result<(), ScenarioError> {
    if let Some((v, n)) = t.opt_f64(key)? {
        if !(v >= 0.0) {
            return Err(t.err(key, &n.at, format!("{v} is negative")));
        }
        *field = (v * 1000.0) as u64;
    }
    Ok(())
}

/// A size or count that must be positive.
fn positive(t: &Obj, key: &str) -> Result<Option<u64>, ScenarioError> {
    match t.opt_size(key)? {
        Some((0, n)) => Err(t.err(key, &n.at, "must be positive")),
        v => Ok(v.map(|x| x.0)),
    }
}

fn read_times(t: &Obj, m: &mut ServiceModel) -> Result<(), ScenarioError> {
    // A read latency set alone sets the read-ahead one too: stream
    // detection then changes nothing until seq_read_latency_us says so.
    if t.opt_f64("read_latency_us")?.is_some() && t.opt_f64("seq_read_latency_us")?.is_none() {
        us(t, "read_latency_us", &mut m.seq_read_latency_ns)?;
    }
    us(t, "read_latency_us", &mut m.read_latency_ns)?;
    us(t, "seq_read_latency_us", &mut m.seq_read_latency_ns)?;
    us(t, "write_latency_us", &mut m.write_latency_ns)?;
    us(t, "discard_latency_us", &mut m.discard_latency_ns)?;
    us(t, "discard_us_per_gib", &mut m.discard_ns_per_gib)?;
    us(t, "flush_latency_us", &mut m.flush_latency_ns)?;
    // Likewise the command overhead covers writes unless they have their own.
    if t.opt_f64("command_overhead_us")?.is_some() && t.opt_f64("write_command_overhead_us")?.is_none() {
        us(t, "command_overhead_us", &mut m.write_command_overhead_ns)?;
    }
    us(t, "command_overhead_us", &mut m.command_overhead_ns)?;
    us(t, "write_command_overhead_us", &mut m.write_command_overhead_ns)?;
    Ok(())
}

fn read_rates(t: &Obj, m: &mut ServiceModel) -> Result<(), ScenarioError> {
    if let Some(v) = positive(t, "bandwidth")? {
        m.bandwidth = v;
        m.write_bandwidth = v;
    }
    if let Some(v) = positive(t, "write_bandwidth")? {
        m.write_bandwidth = v;
    }
    if let Some(v) = positive(t, "media_write_bandwidth")? {
        m.media_write_bandwidth = v;
    }
    if let Some((v, _)) = t.opt_size("write_cache_size")? {
        m.write_cache_bytes = v;
    }
    if let Some((v, _)) = t.opt_u64("iops")? {
        m.iops = v;
    }
    if let Some((v, _)) = t.opt_bool("batch_completions")? {
        m.batch_completions = v;
    }
    if let Some((v, n)) = t.opt_u64("streams")? {
        if v > 64 {
            return Err(t.err("streams", &n.at, format!("{v} streams: at most 64 are tracked")));
        }
        m.streams = v as u32;
    }
    if let Some(v) = positive(t, "parallelism")? {
        m.parallelism = v.min(65536) as u32;
    }
    if let Some(v) = positive(t, "discard_parallelism")? {
        m.discard_parallelism = v.min(65536) as u32;
    }
    Ok(())
}

fn read_rotation(t: &Obj, m: &mut ServiceModel) -> Result<(), ScenarioError> {
    if let Some(rpm) = positive(t, "rpm")? {
        let r = m.rotation.get_or_insert(Rotation {
            rpm: 7200,
            seek_min_ns: 800_000,
            seek_max_ns: 16_000_000,
            cylinders: 0,
            curve: None,
            track_sectors: 0,
        });
        r.rpm = rpm.min(100_000) as u32;
    }
    for key in ["seek_min_us", "seek_max_us", "cylinders", "seek_curve", "track_readahead"] {
        if let (Some(n), None) = (t.node(key), &m.rotation) {
            return Err(t.err(key, &n.at, "only for rotating disks: set rpm (or preset = \"hdd-7200\")"));
        }
    }
    let Some(r) = m.rotation.as_mut() else { return Ok(()) };
    us(t, "seek_min_us", &mut r.seek_min_ns)?;
    us(t, "seek_max_us", &mut r.seek_max_ns)?;
    if let Some((v, _)) = t.opt_size("track_readahead")? {
        r.track_sectors = v / 512;
    }
    if let Some(v) = positive(t, "cylinders")? {
        r.cylinders = v;
    }
    if let Some(c) = t.table("seek_curve")? {
        r.curve = Some(read_curve(&c)?);
        if r.cylinders == 0 {
            return Err(t.err("seek_curve", &c.at, "a seek curve counts cylinders: set cylinders too"));
        }
    }
    Ok(())
}

fn read_curve(c: &Obj) -> Result<SeekCurve, ScenarioError> {
    let ms = |key: &str| -> Result<f64, ScenarioError> {
        match c.opt_f64(key)? {
            Some((v, n)) if !(v >= 0.0) => Err(c.err(key, &n.at, format!("{v} is negative"))),
            Some((v, _)) => Ok(v),
            None => Err(c.err(key, &c.at, "missing (a seek curve needs short_ms, short_sqrt_ms, boundary_cyl, long_ms, long_per_cyl_ms)")),
        }
    };
    let curve = SeekCurve {
        short_ns: (ms("short_ms")? * 1e6) as u64,
        short_sqrt_ns: ms("short_sqrt_ms")? * 1e6,
        boundary_cyl: ms("boundary_cyl")? as u64,
        long_ns: (ms("long_ms")? * 1e6) as u64,
        long_per_cyl_ns: ms("long_per_cyl_ms")? * 1e6,
    };
    c.finish(CURVE_KEYS)?;
    Ok(curve)
}
