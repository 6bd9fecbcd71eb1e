//! Reports of a finished run or of a parsed trace: the per-device JSON
//! figures, and the text blocks users know — `iostat -x`, btt's stage table
//! and merge information, seek and request-size histograms.
//!
//! The reports read a [`ReportInput`]: the devices to show, diskstats
//! snapshots and the btt-style [`Analysis`]. A simulated run builds it from
//! its engine ([`ReportInput::from_engine`]); `blkstack stats` from a real
//! trace ([`super::trace`]), so both print the same figures the same way.

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use super::analysis::{Analysis, Avg, DeviceAnalysis, Log2Hist, STAGES};
use super::btt::Btt;
use super::clat::LatStat;
use super::iostat;
use crate::engine::Engine;
use crate::genhd::DevId;

/// A device as the reports show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportDev {
    /// Index into the samples' per-device arrays and the analysis.
    pub id: DevId,
    pub name: String,
    pub major: u32,
    pub minor: u32,
    /// Its diskstats are known: false for a traced bio-based device whose
    /// bios' completions the trace lacks (every iostat figure would be
    /// wrong), which the iostat report and JSON then leave out.
    pub accounted: bool,
}

/// Diskstats snapshots: (time in ns, the 17 fields of every device by id).
pub type Samples = [(u64, Vec<[u64; 17]>)];

/// What the reports are computed from.
pub struct ReportInput<'a> {
    /// The devices to report on, in order (a run's whole devices).
    pub devices: Vec<ReportDev>,
    /// At least the first and the last snapshot; one per interval when
    /// `intervals` is set.
    pub samples: &'a Samples,
    /// The snapshots were taken every interval (iostat per interval).
    pub intervals: bool,
    pub analysis: Option<&'a Analysis>,
    /// btt's own bookkeeping, when `--btt` asked for its report.
    pub btt: Option<&'a Btt>,
}

impl<'a> ReportInput<'a> {
    /// A simulated run: its whole devices (partitions are counted on
    /// their disk), its snapshots and its analysis.
    pub fn from_engine(engine: &'a Engine) -> Self {
        let topo = &engine.core.topo;
        let devices = (0..topo.devs.len() as DevId)
            .filter(|&d| topo.dev(d).whole == d)
            .map(|d| {
                let x = topo.dev(d);
                ReportDev { id: d, name: x.name.clone(), major: x.major, minor: x.minor, accounted: true }
            })
            .collect();
        ReportInput { devices, samples: &engine.samples, intervals: engine.sample_every.is_some(), analysis: engine.core.tracer.analysis.as_ref(), btt: engine.core.tracer.btt.as_ref() }
    }

    /// The devices whose diskstats are known.
    fn accounted(&self) -> impl Iterator<Item = &ReportDev> {
        self.devices.iter().filter(|d| d.accounted)
    }

    fn device_analysis(&self, dev: DevId) -> Option<&'a DeviceAnalysis> {
        self.analysis.and_then(|a| a.device(dev))
    }

    /// iostat figures of `dev` between samples `a` and `b`.
    fn ext_stats(&self, dev: DevId, a: usize, b: usize) -> [f64; 22] {
        let (ta, sa) = &self.samples[a];
        let (tb, sb) = &self.samples[b];
        iostat::ext_stats(&sa[dev as usize], &sb[dev as usize], (tb - ta) as f64 / 1e9)
    }
}

fn iostat_map(v: &[f64; 22]) -> Value {
    Value::Object(iostat::COLUMNS.iter().zip(v).map(|(k, x)| (k.to_string(), json!(x))).collect())
}

fn avg_json(a: &Avg) -> Value {
    json!({"min_s": a.min as f64 / 1e9, "avg_s": a.avg() / 1e9, "max_s": a.max as f64 / 1e9, "n": a.n})
}

/// The percentiles a sweep or a report shows of a latency series.
pub const LATENCY_PERCENTILES: [f64; 4] = [50.0, 90.0, 99.0, 99.9];

/// D2C and Q2C percentiles in seconds (`{"D2C": {"p50_s": ..}}`), taken
/// as fio takes them (`calc_clat_percentiles`: a bucket's midpoint).
fn latency_percentiles_json(lat: &[LatStat; 2]) -> Value {
    let mut out = Map::new();
    for (stage, l) in ["D2C", "Q2C"].iter().zip(lat) {
        if l.samples == 0 {
            continue;
        }
        let values = l.percentiles(&LATENCY_PERCENTILES);
        let per: Map<String, Value> = LATENCY_PERCENTILES.iter().zip(values).map(|(p, ns)| (format!("p{p}_s"), json!(ns as f64 / 1e9))).collect();
        out.insert(stage.to_string(), Value::Object(per));
    }
    Value::Object(out)
}

fn hist_json(h: &Log2Hist) -> Value {
    let buckets: Vec<Value> = h
        .buckets
        .iter()
        .enumerate()
        .map(|(b, &c)| {
            let (lo, hi) = Log2Hist::bounds(b);
            json!({"from_kb": lo, "to_kb": hi, "count": c})
        })
        .collect();
    json!({"count": h.count, "zero": h.zero, "buckets": buckets})
}

/// btt's #Q, #D and ratio (`__output_dip_merge_ratio`): a device without
/// Q or D events has no row, and #Q is raised to #D when fewer bios than
/// requests were seen (requests whose bios were queued before the trace, or
/// on another device); `None` when btt prints no row.
fn btt_merge_counts(a: &DeviceAnalysis) -> Option<(u64, u64, f64)> {
    if a.n_q == 0 || a.n_d == 0 {
        return None;
    }
    let q = a.n_q.max(a.n_d);
    Some((q, a.n_d, q as f64 / a.n_d as f64))
}

/// btt's "Device Merge Information" figures as the text report prints
/// them: #Q, #D, Q/D, and issued sizes in sectors (all 0 where btt prints
/// no row); `q_events` is the Q events seen.
fn merge_info(a: &DeviceAnalysis) -> Value {
    let (q, d, ratio) = btt_merge_counts(a).unwrap_or((0, 0, 0.0));
    json!({"q": q, "d": d, "ratio": ratio, "q_events": a.n_q, "blkmin": a.blks.min, "blkavg": a.blks.avg() as u64, "blkmax": a.blks.max, "total": a.blks.total as u64})
}

/// Add the accounting and analysis of a simulated run's `dev` to its JSON
/// object.
pub fn device_json(engine: &Engine, input: &ReportInput, dev: DevId, out: &mut Value) {
    let s = &engine.core.stats[dev as usize];
    out["diskstats"] = json!(engine.core.diskstats(dev).to_vec());
    out["plug"] = json!({"plugs": s.plugs, "unplugs": s.unplugs, "merge_attempts": s.plug_merge_attempts, "merges": s.plug_merges});
    analysis_json(input, dev, out);
}

/// Add the iostat figures over the whole input, btt's stages, merge
/// information and the histograms of `dev` to its JSON object.
pub fn analysis_json(input: &ReportInput, dev: DevId, out: &mut Value) {
    if input.samples.len() >= 2 && input.accounted().any(|d| d.id == dev) {
        out["iostat"] = iostat_map(&input.ext_stats(dev, 0, input.samples.len() - 1));
    }
    let Some(a) = input.device_analysis(dev) else { return };
    let stages: Map<String, Value> = STAGES.iter().zip(&a.stages).filter(|(_, x)| x.n > 0).map(|(k, x)| (k.to_string(), avg_json(x))).collect();
    out["btt"] = Value::Object(stages);
    out["merge_info"] = merge_info(a);
    out["latency_percentiles"] = latency_percentiles_json(&a.latency);
    out["seek_histogram"] = hist_json(&a.seek);
    out["size_histogram"] = hist_json(&a.sizes);
}

/// Per-interval iostat figures (with `--interval`).
pub fn intervals_json(input: &ReportInput) -> Value {
    if !input.intervals {
        return Value::Null;
    }
    let out: Vec<Value> = (1..input.samples.len())
        .map(|i| {
            let devs: Map<String, Value> = input.accounted().map(|d| (d.name.clone(), iostat_map(&input.ext_stats(d.id, i - 1, i)))).collect();
            json!({"time_s": input.samples[i].0 as f64 / 1e9, "devices": devs})
        })
        .collect();
    Value::Array(out)
}

/// `iostat -x` over the whole run, then per interval if sampled.
pub fn iostat_text(input: &ReportInput) -> String {
    let n = input.samples.len();
    if n < 2 {
        return String::new();
    }
    let block = |a: usize, b: usize| {
        let rows: Vec<(String, [f64; 22])> = input.accounted().map(|d| (d.name.clone(), input.ext_stats(d.id, a, b))).collect();
        iostat::report(&rows)
    };
    if !input.intervals {
        return block(0, n - 1);
    }
    (1..n).map(|i| block(i - 1, i)).collect::<Vec<_>>().join("\n")
}

/// Seek-distance and request-size histograms of every disk that issued
/// requests (seed 000's layout).
pub fn histograms_text(input: &ReportInput) -> String {
    let mut out = String::new();
    for d in &input.devices {
        let Some(a) = input.device_analysis(d.id).filter(|a| a.n_d > 0) else { continue };
        let _ = writeln!(out, "{}:", d.name);
        a.seek.render("Read|Write seek", &mut out);
        out.push('\n');
        a.sizes.render("Read|Write request size", &mut out);
        out.push('\n');
    }
    out
}

/// The text reports, as the JSON summary's `reports` holds them.
pub fn reports_json(input: &ReportInput) -> Value {
    let mut out = json!({"iostat": iostat_text(input), "histograms": histograms_text(input)});
    if let Some(b) = input.btt {
        out["btt"] = json!(b.text());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_percentiles_are_fio_bucket_midpoints() {
        // 99 samples of 100 µs and one of 1 ms. fio's buckets (6 bits):
        // 100,000 ns has its top bit at 2^16, so 10 error bits; bucket
        // (11 << 6) + ((100000 >> 10) & 63) = 704 + 33 = 737, whose
        // midpoint is 2^16 + (2·33 + 1) · 2^9 = 99,840 ns. p50, p90 and p99
        // (the 99th sample) fall there. p99.9 needs the 100th sample:
        // 1,000,000 ns, top bit 2^19, 13 error bits, offset
        // (1e6 >> 13) & 63 = 122 & 63 = 58, midpoint 2^19 + 117 · 2^12 =
        // 1,003,520 ns. Q2C has no samples and is left out.
        let mut d2c = LatStat::default();
        for _ in 0..99 {
            d2c.add(100_000);
        }
        d2c.add(1_000_000);
        let v = latency_percentiles_json(&[d2c, LatStat::default()]);
        assert_eq!(v, json!({"D2C": {"p50_s": 99_840e-9, "p90_s": 99_840e-9, "p99_s": 99_840e-9, "p99.9_s": 1_003_520e-9}}));
    }
}
