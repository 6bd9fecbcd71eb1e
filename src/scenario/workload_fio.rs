//! `[workload] type = "fio"`: a fio job file — embedded (`job`), named
//! (`jobfile`, relative to the scenario) or as fio's command-line options
//! (`args`) — read by [`crate::source::fio`], each job resolved on its
//! device and checked here, then `numjobs` clones per job
//! ([`crate::source::fio_job`]). Errors name the job file's line (or the
//! scenario line of an embedded job's line, or the argument).

use std::rc::Rc;

use crate::bio::{PAGE_SIZE, SECTOR_SHIFT};
use crate::genhd::Topology;
use crate::limits::Zoned;
use crate::profile::Behaviour;
use crate::source::dio::{BufferLayout, DioRules};
use crate::source::discard_tool::{DiscardCall, DiscardTarget};
use crate::source::fio::{self, BlockSize, Ddir, FioError, FioJob, FioParse, FsJobFiles, IoEngine, Location, Size, ZoneMode};
use crate::source::fio_io_u::{check_lfsr, map_blocks, rw_min_bs, FioSeeds};
use crate::source::fio_job::{io_buffer_bs, random_map, FioJobSource, FioPlan, FioTarget};
use crate::source::fio_rand::{distribution_seed, fio_minor, setup_random_seeds, SeedOptions, SeedRules, TAUSWORTHE64_SWITCH_MINOR};
use crate::source::pagecache::SharedCaches;
use crate::source::rng::Rng;
use crate::stats::clat::num2str;
use crate::stats::fio::{FioDisk, FioJobMeta, FioMeta};

use super::disks::dev_names;
use super::jobs::{find_target, scenario_relative, top_device, JobSpec, Target};
use super::stack::StackSpec;
use super::tree::{Obj, Origin, ScenarioError, Value};
use super::workload::{buffer_layout, soft_blocksize};
use super::workload_discard::describe_call;

pub const FIO_KEYS: &[&str] = &["type", "job", "jobfile", "args", "buffer_fragmentation", "buffer_segments", "blocksize", "dirty_background_bytes", "fio_version", "pid", "comm"];

/// The fio release whose seed rules `fio_version` defaults to (Debian 12's).
const DEFAULT_FIO_VERSION: &str = "3.33";

/// Most blocks a random map may track: 8 TiB of 4 KiB blocks, a 256 MiB
/// bitmap as fio's own would be (allocated zeroed, so only the pages the
/// job touches take memory); beyond, the job runs as with `norandommap`,
/// with a warning, and its offsets part from fio's at the first block
/// drawn twice.
const MAX_MAP_BLOCKS: u64 = 1 << 31;

/// What the fio workload adds to the scenario.
pub struct FioWorkload {
    pub jobs: Vec<JobSpec>,
    pub meta: FioMeta,
    pub warnings: Vec<String>,
}

/// The scenario's devices as fio sees them.
pub struct FioDevices<'a> {
    pub targets: &'a [super::disks::DiskSpec],
    pub nr_disks: usize,
    pub stacked: &'a [StackSpec],
    /// The scenario's `[cgroups]`, which a job's `cgroup=` names.
    pub cgroups: &'a [super::cgroups::CgroupSpec],
}

/// Options of the workload table that are not fio's.
struct Extra {
    /// The user buffers' physical pages.
    layout: BufferLayout,
    blocksize: Option<u32>,
    dirty_background: Option<u64>,
    /// Whose seed rules the jobs follow (`fio_version`), and its N of 3.N.
    seed_rules: SeedRules,
    fio_minor: u32,
}

pub fn read(w: &Obj, devs: &FioDevices, beh: &Behaviour, seed: u64, pid: u32, comm: &str) -> Result<FioWorkload, ScenarioError> {
    let (parse, key) = parse_jobs(w)?;
    let first = w.node("job").and_then(|n| job_first_line(w, &n.at));
    let mut warnings: Vec<String> = parse.warnings.iter().map(|x| warning_text(w, first, x)).collect();
    if parse.jobs.is_empty() {
        return Err(w.err(key, &at(w, key), "the job file defines no job"));
    }
    let extra = read_extra(w, &parse.jobs)?;
    let total: u64 = parse.jobs.iter().map(|j| j.numjobs as u64).sum();
    if total > fio::FIO_MAX_JOBS as u64 {
        return Err(w.err(key, &at(w, key), format!("numjobs: {total} jobs in all; fio runs at most {} (maximum number of jobs reached)", fio::FIO_MAX_JOBS)));
    }
    let (mut jobs, mut meta) = (Vec::new(), FioMeta::default());
    meta.output_format = parse.output_format.clone().unwrap_or_else(|| "normal".to_string());
    meta.global_options = parse.global_options.clone();
    // add_job: a stonewall or new_group job after others starts a group.
    let mut groupid = 0u32;
    for (section, job) in parse.jobs.iter().enumerate() {
        if (job.stonewall || job.new_group) && section > 0 {
            groupid += 1;
        }
        let t = job_target(w, key, job, devs)?;
        let job = adjust_engine(job, &mut warnings);
        let job_err = |m: String| w.err(key, &at(w, key), format!("job '{}': {m}", job.name));
        let plan = resolve(&job, &t, seed, section).map_err(job_err)?;
        let cgroup = job_cgroup(&job, devs.cgroups).map_err(job_err)?;
        check_job(&job, &t, beh, &plan).map_err(job_err)?;
        if random_map(&job, plan.region_len, u64::MAX) && !random_map(&job, plan.region_len, MAX_MAP_BLOCKS) {
            warnings.push(format!("job '{}': the random map would track more than {MAX_MAP_BLOCKS} blocks: runs as norandommap", job.name));
        }
        add_disk(&mut meta, &t, devs);
        for clone in 0..job.numjobs.max(1) {
            let mut p = plan.clone();
            p.seed = clone_seed(&job, seed, section, clone);
            // thread_number: 1-based over every job and clone so far.
            p.seeds = fio_seeds(&job, &t.name, jobs.len() as u64 + 1, extra.seed_rules, seed);
            p.seeds.offset_use64 = tausworthe64_switch(&job, p.region_len, extra.fio_minor);
            check_lfsr(&job, &p.seeds, p.region_len).map_err(job_err)?;
            // The clones of a stonewall job start together, after the jobs before.
            let stonewall = job.stonewall && clone == 0;
            jobs.push(JobSpec { cgroup, stonewall, ..clone_spec(p, &t.name, &extra, pid + jobs.len() as u32, comm) });
            meta.jobs.push(FioJobMeta {
                name: job.name.clone(),
                section,
                group_reporting: job.group_reporting,
                kb_base: job.kb_base,
                groupid,
                announce: match clone {
                    0 => Some(announce_line(&job, groupid)),
                    1 => Some("...".to_string()),
                    _ => None,
                },
                options: parse.job_options.get(section).cloned().unwrap_or_default(),
                iodepth: job.iodepth.max(1),
            });
        }
    }
    Ok(FioWorkload { jobs, meta, warnings })
}

fn at(w: &Obj, key: &str) -> Origin {
    w.node(key).map(|n| n.at.clone()).unwrap_or_else(|| w.at.clone())
}

/// The job definitions from exactly one of `job`, `jobfile` and `args`.
fn parse_jobs(w: &Obj) -> Result<(FioParse, &'static str), ScenarioError> {
    let given: Vec<&str> = ["job", "jobfile", "args"].into_iter().filter(|k| w.has(k)).collect();
    let [key] = given[..] else {
        return Err(w.err("job", &w.at, "give the fio job one way: job = \"\"\"...\"\"\" (a job file's text), jobfile = \"FILE\" or args = [\"--name=x\", ...]"));
    };
    let r = match key {
        "job" => {
            let (text, n) = w.opt_str("job")?.expect("present");
            let first = job_first_line(w, &n.at);
            fio::parse_job_text("job", &text, &FsJobFiles).map_err(|e| job_text_error(w, &n.at, first, e))?
        }
        "jobfile" => {
            let (path, n) = w.opt_str("jobfile")?.expect("present");
            let full = scenario_relative(&w.doc.file, &path);
            fio::parse_job_file(&full, &FsJobFiles).map_err(|e| w.err("jobfile", &n.at, e.to_string()))?
        }
        _ => {
            let (items, n) = w.opt_array("args")?.expect("present");
            let mut args = vec!["fio".to_string()];
            for item in items {
                match &item.value {
                    Value::Str(s) => args.push(s.clone()),
                    _ => return Err(w.err("args", &item.at, "fio arguments are strings, e.g. \"--rw=randwrite\"")),
                }
            }
            fio::parse_args(&args, &FsJobFiles).map_err(|e| w.err("args", &n.at, e.to_string()))?
        }
    };
    Ok((r, key))
}

/// The scenario line holding line 1 of an embedded job: the line of its
/// opening quotes, or the next one when a newline follows them (TOML drops
/// that newline).
fn job_first_line(w: &Obj, at: &Origin) -> Option<usize> {
    let Origin::File(off) = at else { return None };
    let rest = w.doc.text.get(*off..)?;
    let newline_first = ["\"\"\"\n", "'''\n", "\"\"\"\r\n", "'''\r\n"].iter().any(|q| rest.starts_with(q));
    Some(w.doc.line_of(*off) + newline_first as usize)
}

/// An error in an embedded job, at the scenario line it comes from.
fn job_text_error(w: &Obj, at: &Origin, first: Option<usize>, e: FioError) -> ScenarioError {
    let what = match &e.option {
        Some(o) => format!("{o}: {}", e.msg),
        None => e.msg.clone(),
    };
    match (&e.at, first) {
        (Location::Line { file, line }, Some(l)) if file == "job" => {
            ScenarioError { file: w.doc.file.clone(), line: Some(l + line - 1), key: w.key_path("job"), msg: what, from_set: false }
        }
        (Location::Line { file, line }, None) if file == "job" => w.err("job", at, format!("job line {line}: {what}")),
        _ => w.err("job", at, e.to_string()),
    }
}

/// A cosmetic option's warning; an embedded job's line becomes the
/// scenario's.
fn warning_text(w: &Obj, first: Option<usize>, x: &fio::FioWarning) -> String {
    match (&x.at, first) {
        (Location::Line { file, line }, Some(l)) if file == "job" => format!("{}:{}: {}: {}: {}", w.doc.file, l + line - 1, w.key_path("job"), x.option, x.msg),
        _ => x.to_string(),
    }
}

fn read_extra(w: &Obj, jobs: &[FioJob]) -> Result<Extra, ScenarioError> {
    // Given pieces must hold the largest job's I/O buffer.
    let bytes = jobs.iter().map(|j| adjust_engine(j, &mut Vec::new()).iodepth.max(1) as u64 * io_buffer_bs(j)).max().unwrap_or(0);
    let layout = buffer_layout(w, bytes.div_ceil(PAGE_SIZE))?;
    let blocksize = soft_blocksize(w, "blocksize", None)?;
    let dirty_background = w.opt_size("dirty_background_bytes")?.map(|x| x.0);
    let (version, at) = match w.opt_str("fio_version")? {
        None => (DEFAULT_FIO_VERSION.to_string(), None),
        Some((v, n)) => (v, Some(n)),
    };
    let Some(seed_rules) = SeedRules::of_version(&version) else {
        let at = at.map_or(w.at.clone(), |n| n.at.clone());
        return Err(w.err("fio_version", &at, format!("'{version}': the seed rules of fio 3.31 and later are modelled; give \"3.N\" with N >= 31, e.g. \"3.33\"")));
    };
    let fio_minor = fio_minor(&version).expect("a modelled version");
    Ok(Extra { layout, blocksize, dirty_background, seed_rules, fio_minor })
}

/// `check_rand_gen_limits`: a region of more blocks than the 32-bit
/// generator covers, with no generator chosen, draws offsets with
/// tausworthe64 from fio 3.42 on.
fn tausworthe64_switch(job: &FioJob, region_len: u64, minor: u32) -> bool {
    minor >= TAUSWORTHE64_SWITCH_MINOR && !job.random_generator_set && map_blocks(job, region_len) > u32::MAX as u64
}

/// The clone's seeds: fio's for thread `thread_number`, the scenario's
/// `seed` standing in for /dev/urandom. A non-uniform distribution hashes
/// the job's `filename` as written (`/dev/NAME` without one).
fn fio_seeds(job: &FioJob, dev: &str, thread_number: u64, rules: SeedRules, seed: u64) -> FioSeeds {
    let o = SeedOptions {
        randrepeat: if rules == SeedRules::Fio331 { job.randrepeat_own } else { job.randrepeat },
        allrandrepeat: job.allrandrepeat,
        randseed: job.randseed,
        randseed_set: job.randseed_set,
        thread_number,
    };
    let seeds = setup_random_seeds(&o, rules, seed);
    let file_name = job.filename.clone().unwrap_or_else(|| format!("/dev/{dev}"));
    FioSeeds { dist_seed: distribution_seed(&file_name, &o, rules, &seeds), seeds, rand_repeatable: o.rand_repeatable(), offset_use64: false }
}

/// The job's device: `filename`, else the top of the stack.
fn job_target<'d>(w: &Obj, key: &str, job: &FioJob, devs: &FioDevices<'d>) -> Result<Target<'d>, ScenarioError> {
    let err = |m: String| w.err(key, &at(w, key), format!("job '{}': {m}", job.name));
    let name = match &job.filename {
        Some(f) if f.contains(':') => return Err(err(format!("filename={f}: several files per job are not modelled"))),
        Some(f) => f.clone(),
        None => match top_device(devs.targets, devs.nr_disks) {
            Some(d) => d.name.clone(),
            None => return Err(err(format!("no filename=, and the stack has no single top device: set filename= to one of {}", dev_names(devs.targets)))),
        },
    };
    find_target(devs.targets, &name).ok_or_else(|| err(format!("filename={name} is not a scenario device ({})", dev_names(devs.targets))))
}

/// Sync engines run one I/O at a time (fio: "queue depth will be capped at 1").
fn adjust_engine(job: &FioJob, warnings: &mut Vec<String>) -> FioJob {
    let mut j = job.clone();
    let sync = matches!(j.ioengine, IoEngine::Sync | IoEngine::Psync | IoEngine::Pvsync);
    if sync && j.iodepth > 1 {
        warnings.push(format!("job '{}': note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be capped at 1", j.name));
    }
    if sync {
        j.iodepth = 1;
        j.iodepth_batch_submit = 1;
        j.iodepth_batch_complete_min = 1;
    }
    j
}

/// A size-like value in bytes.
fn bytes_of(s: Size, whole: u64, zone: u64) -> u64 {
    match s {
        Size::Bytes(b) => b,
        Size::Percent(p) => whole / 100 * p as u64 + whole % 100 * p as u64 / 100,
        Size::Zones(z) => z as u64 * zone,
    }
}

/// The region, limits and stop time of `job` on `t`.
fn resolve(job: &FioJob, t: &Target, seed: u64, section: usize) -> Result<FioPlan, String> {
    let dev_bytes = t.bytes();
    let zone_bytes = match job.zonemode {
        ZoneMode::Zbd if t.limits().zoned == Zoned::None || t.limits().chunk_sectors == 0 => {
            return Err(format!("zonemode=zbd needs a zoned device, and {} is not zoned", t.name));
        }
        ZoneMode::Zbd => (t.limits().chunk_sectors as u64) << SECTOR_SHIFT,
        ZoneMode::None => 0,
    };
    // td_min_bs: the smallest block size of any direction.
    let min_bs = rw_min_bs(job);
    let mut start = bytes_of(job.offset, dev_bytes, zone_bytes);
    if matches!(job.offset, Size::Percent(_)) {
        // get_start_offset: up to the next block boundary.
        start = start.div_ceil(min_bs).saturating_mul(min_bs);
    }
    if start >= dev_bytes {
        return Err(format!("offset {start} is at or beyond the end of {} ({dev_bytes} bytes)", t.name));
    }
    let len = match job.size {
        None => dev_bytes - start,
        // setup_files: a share of the device, at most what follows the
        // offset, down to a whole block.
        Some(Size::Percent(p)) => {
            let len = bytes_of(Size::Percent(p), dev_bytes, zone_bytes).min(dev_bytes - start);
            len - len % min_bs
        }
        Some(s) => bytes_of(s, dev_bytes, zone_bytes),
    };
    if len == 0 || start + len > dev_bytes {
        return Err(format!("offset {start} + size {len} passes the end of {} ({dev_bytes} bytes)", t.name));
    }
    let io_limit = job.io_size.map_or(len, |s| bytes_of(s, len, zone_bytes));
    if job.time_based && job.runtime_us == 0 {
        return Err("time_based needs a runtime (the job would never end)".to_string());
    }
    let end_ns = (job.runtime_us > 0).then(|| job.runtime_us.saturating_mul(1000));
    Ok(FioPlan { job: job.clone(), region_start: start, region_len: len, io_limit, end_ns, zone_bytes, seed: clone_seed(job, seed, section, 0), seeds: FioSeeds::default(), max_map_blocks: MAX_MAP_BLOCKS })
}

/// What the kernel (or this model) refuses before the job starts.
fn check_job(job: &FioJob, t: &Target, beh: &Behaviour, plan: &FioPlan) -> Result<(), String> {
    let lbs = t.limits().logical_block_size as u64;
    if job.rw.reads() && !job.direct {
        return Err("buffered reads through the page cache are not modelled: set direct=1".to_string());
    }
    for d in [Ddir::Read, Ddir::Write, Ddir::Trim] {
        let sizes: Vec<u64> = match job.block_size(d) {
            BlockSize::Fixed(b) => vec![b],
            BlockSize::Range { min, max } => vec![min, max],
            BlockSize::Split(e) => e.iter().map(|x| x.bs).collect(),
        };
        if let Some(b) = sizes.iter().find(|&&b| b == 0 || b > plan.region_len) {
            return Err(format!("block size {b} does not fit the {}-byte region", plan.region_len));
        }
        let needs_lbs = job.direct || d == Ddir::Trim;
        if needs_lbs && (sizes.iter().any(|b| b % lbs != 0) || job.block_align(d) % lbs != 0 || plan.region_start % lbs != 0) {
            let dir = ["read", "write", "trim"][d as usize];
            return Err(format!("{dir} block sizes, blockalign and offset must be multiples of {}'s logical block size ({lbs}): the kernel fails with EINVAL", t.name));
        }
    }
    if job.rw.trims() {
        let call = DiscardCall::Bytes(plan.region_start, job.min_bs(Ddir::Trim));
        call.unit(&t.discard_target(beh)).map_err(|e| format!("trim on {}: {}", t.name, describe_call(call, &e)))?;
    }
    if plan.zone_bytes > 0 && (plan.region_start % plan.zone_bytes != 0 || plan.region_len % plan.zone_bytes != 0) {
        return Err("zonemode=zbd: offset and size must be whole zones".to_string());
    }
    if plan.zone_bytes > 0 && job.rw.writes() && !job.direct {
        return Err("zonemode=zbd with buffered writes is not modelled: set direct=1".to_string());
    }
    Ok(())
}

/// Each clone's seed: `randseed` with `randrepeat` (fio's default), the
/// scenario's seed otherwise; mixed with the section and clone numbers as
/// fio mixes in `thread_number`.
fn clone_seed(job: &FioJob, seed: u64, section: usize, clone: u32) -> u64 {
    let base = if job.randrepeat { job.randseed } else { seed };
    Rng::new(base ^ (section as u64) << 32 ^ clone as u64 ^ 0xf10_f10).next_u64()
}

/// The line fio prints when it adds a job (`add_job`): its group, `rw`,
/// each direction's block size range, engine and depth.
fn announce_line(job: &FioJob, groupid: u32) -> String {
    let i2p = job.kb_base.is_power_of_two();
    let bs = |d: Ddir| format!("{}-{}", num2str(job.min_bs(d), 4, i2p, "B"), num2str(job.max_bs(d), 4, i2p, "B"));
    format!(
        "{}: (g={groupid}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
        job.name,
        job.rw.name(),
        bs(Ddir::Read),
        bs(Ddir::Write),
        bs(Ddir::Trim),
        job.ioengine.name(),
        job.iodepth
    )
}

fn clone_spec(plan: FioPlan, dev: &str, extra: &Extra, pid: u32, comm: &str) -> JobSpec {
    let (iodepth, batch, complete_min) = (plan.job.iodepth.max(1), plan.job.iodepth_batch().max(1), plan.job.iodepth_batch_complete_min);
    let direct = plan.job.direct;
    let async_io = matches!(plan.job.ioengine, IoEngine::Libaio | IoEngine::IoUring);
    let ioprio = plan.job.task_ioprio();
    let (dev, layout, bsize, bg) = (dev.to_string(), extra.layout.clone(), extra.blocksize, extra.dirty_background);
    let make = Rc::new(move |topo: &Topology, beh: &Behaviour, shared: &mut SharedCaches| {
        let id = topo.by_name(&dev).expect("a validated device");
        let l = topo.limits(id);
        let cache = if direct { None } else { shared.open(topo, id, bsize, bg).ok() };
        let target = FioTarget { dev: id, rules: DioRules::new(beh, l.logical_block_size, l.max_sectors), discard: DiscardTarget::new(topo, id, beh), cache };
        Box::new(FioJobSource::new(plan.clone(), target, &layout)) as Box<dyn crate::source::Source>
    });
    JobSpec { pid, comm: comm.to_string(), iodepth, batch, complete_min, ioprio, cgroup: 0, stonewall: false, async_io, make }
}

/// fio's `cgroup=NAME`: the job runs in that `[cgroups]` group (fio would
/// create a missing one; here it must be described, limits and all).
fn job_cgroup(job: &FioJob, cgroups: &[super::cgroups::CgroupSpec]) -> Result<u16, String> {
    let Some(name) = &job.cgroup else { return Ok(0) };
    let name = name.trim_matches('/');
    super::cgroups::cgroup_index(cgroups, name).ok_or_else(|| format!("cgroup={name} is not a [cgroups] group ({})", super::cgroups::cgroup_names(cgroups)))
}

/// fio's disk list: the job's device and, for md/dm, the devices below it.
fn add_disk(meta: &mut FioMeta, t: &Target, devs: &FioDevices) {
    if meta.disks.iter().any(|d| d.name == t.name) {
        return;
    }
    let mut slaves = devs.stacked.iter().find(|s| s.name == t.name).map(|s| s.lower_devices()).unwrap_or_default();
    slaves.dedup();
    meta.disks.push(FioDisk { name: t.name.clone(), slaves });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_sizes_do_not_overflow() {
        // 20 % of 2^63 − 1 bytes, computed without overflowing.
        assert_eq!(bytes_of(Size::Percent(20), 1000, 0), 200);
        assert_eq!(bytes_of(Size::Percent(50), u64::MAX, 0), u64::MAX / 2);
        assert_eq!(bytes_of(Size::Zones(3), 0, 256 << 20), 768 << 20);
    }
}
