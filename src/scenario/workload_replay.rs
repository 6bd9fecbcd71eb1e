//! `[workload] type = "replay"`: submit again the bios a block trace shows
//! processes submitting — blkparse's text or the kernel's ftrace text,
//! read by [`crate::trace::parse`].
//!
//! Which bios are roots: every 'Q' (`block_bio_queue`) is one, except a
//! 'Q' that follows an 'A' (`block_bio_remap`) of the same sectors from a
//! stacked device (an md or dm clone: the stack will make it again). A
//! 'Q' remapped from a partition of its disk is replayed on the partition,
//! at the partition's sector. Trace devices map to scenario devices by
//! device number (blkstack numbers devices as Linux does), by name through
//! the traced machine's name table (`device_names`), or by `device_map`.
//!
//! Units: a process's consecutive roots queued at the same instant with no
//! unplug ('U'/'UT') of that process between them, or queued after its plug
//! ('P') and before its unplug or issue ('D'), were one submission (see
//! `group`); it was plugged if it had more than one bio or its process
//! traced a plug after it, and the process slept in that plug if its
//! unplug was a timer one ('UT'). Each process is one job (its pid
//! and comm from the trace). With `timing = "original"` a unit is
//! submitted at its trace time (relative to the trace's first event); with
//! `"asap"` as soon as the job has room (`iodepth`, default 1).
//!
//! Bios carry one physically contiguous buffer: a trace does not show the
//! pages of a bio.

use std::collections::HashMap;
use std::rc::Rc;

use crate::bio::{req, Bvec, Op, SECTOR_SHIFT};
use crate::genhd::{Driver, Topology};
use crate::profile::Behaviour;
use crate::source::pagecache::SharedCaches;
use crate::source::replay::Replay;
use crate::source::{BioSpec, IoUnit, Source};
use crate::trace::parse::{parse_trace, DevNo, Extra, Rwbs, TraceAction, TraceRecord};
use crate::trace::Action;

use super::disks::{dev_names, DiskSpec};
use super::jobs::{read_named_file, JobSpec};
use super::tree::{describe, Obj, ScenarioError, Value};

pub const REPLAY_KEYS: &[&str] = &["type", "trace", "timing", "device_names", "device_map", "iodepth", "pid", "comm"];

/// Where replayed data sits in memory: 4 GiB plus the byte offset on the
/// device (as explicit bios without bvecs).
const REPLAY_PHYS: u64 = 0x1_0000_0000;

/// A scenario device and its number, as the stack will number it.
#[derive(Clone, Debug)]
struct DevEntry {
    name: String,
    /// The whole device (itself for a whole device).
    whole: String,
    nr_sectors: u64,
    lbs: u32,
}

/// One root bio of the trace.
#[derive(Clone, Debug)]
struct Root {
    line: usize,
    time: u64,
    pid: u32,
    dev: String,
    op: Op,
    flags: u32,
    sector: u64,
    sectors: u32,
}

/// A trace event that matters for replay, in trace order.
enum Step {
    Root(Root),
    /// An unplug by this pid ('U'/'UT'), with the requests it released:
    /// ends the pid's current submission. A timer unplug ('UT',
    /// `from_schedule`) means the process slept inside the submission's plug.
    Unplug { pid: u32, timer: bool, depth: u32 },
    /// A plug by this pid ('P', traced when its first request enters it):
    /// the pid's latest submission ran inside a plug, and bios it queues
    /// until its unplug or issue belong to that submission.
    Plug(u32),
    /// A bio this pid queued that is not a root (a stacked device's clone,
    /// an `N` bio): it was queued inside the pid's plug all the same.
    Queued(u32),
    /// A request issued ('D') by this pid: a submission's plug is flushed
    /// by then (`blk_finish_plug`; 6.1 traces no unplug on that path).
    Issue(u32),
}

pub fn read(w: &Obj, disks: &[DiskSpec], nr_disks: usize) -> Result<Vec<JobSpec>, ScenarioError> {
    let (path, text) = read_named_file(w, "trace")?.ok_or_else(|| w.err("trace", &w.at, "missing: the trace file to replay (blkparse or ftrace text)"))?;
    let trace_at = w.node("trace").expect("read").at.clone();
    let err = |line: usize, m: String| w.err("trace", &trace_at, format!("{path}:{line}: {m}"));
    let parsed = parse_trace(&text);
    if let Some(b) = parsed.bad.first() {
        return Err(err(b.line, format!("{}: {}", b.reason, b.text.trim())));
    }
    let numbers = device_numbers(disks, nr_disks);
    let numbers = device_names(w, numbers)?;
    let map = device_map(w, disks, numbers)?;
    let asap = timing(w)?;
    let iodepth = w.opt_u64("iodepth")?.map(|x| x.0.clamp(1, u32::MAX as u64) as u32);
    let steps = roots(&parsed.records, &map).map_err(|(l, m)| err(l, m))?;
    for s in &steps {
        if let Step::Root(r) = s {
            check_root(r, &map).map_err(|m| err(r.line, m))?;
        }
    }
    let t0 = parsed.records.first().map_or(0, |r| r.time_ns);
    let comms: HashMap<u32, String> = parsed.records.iter().filter_map(|r| r.comm.clone().map(|c| (r.pid, c))).collect();
    let depth = if asap { iodepth.unwrap_or(1) } else { u32::MAX };
    Ok(group(&steps)
        .into_iter()
        .map(|(pid, units)| {
            let comm = comms.get(&pid).cloned().unwrap_or_else(|| "replay".to_string());
            job(pid, comm, units, if asap { None } else { Some(t0) }, depth)
        })
        .collect())
}

/// The device numbers the stack will have: disks and their partitions in
/// file order, then stacked devices (as `Scenario::build` adds them).
fn device_numbers(disks: &[DiskSpec], nr_disks: usize) -> HashMap<DevNo, DevEntry> {
    let mut topo = Topology::default();
    let mut out = HashMap::new();
    for (i, d) in disks.iter().enumerate() {
        let driver = if i < nr_disks { Driver::Mq(i) } else { Driver::BioBased(i) };
        let id = topo.add_disk(&d.name, d.kind, d.nr_sectors, d.queue.clone(), driver);
        let mut ids = vec![id];
        for (pi, p) in d.partitions.iter().enumerate() {
            ids.push(topo.add_partition(id, &p.name, pi as u32 + 1, p.start, p.nr_sectors));
        }
        for i in ids {
            let b = topo.dev(i);
            let e = DevEntry { name: b.name.clone(), whole: d.name.clone(), nr_sectors: b.nr_sectors, lbs: d.queue.limits.logical_block_size };
            out.insert(DevNo { major: b.major, minor: b.minor }, e);
        }
    }
    out
}

/// `device_map = { "8,0" = "sda" }` on top of the numbers.
fn device_map(w: &Obj, disks: &[DiskSpec], mut numbers: HashMap<DevNo, DevEntry>) -> Result<HashMap<DevNo, DevEntry>, ScenarioError> {
    let Some(t) = w.table("device_map")? else { return Ok(numbers) };
    let by_name: HashMap<String, DevEntry> = numbers.values().map(|e| (e.name.clone(), e.clone())).collect();
    for key in t.keys() {
        let n = t.node(&key).expect("listed");
        let devno = parse_devno(&key).ok_or_else(|| t.err(&key, &n.at, "a trace device is MAJOR,MINOR (e.g. \"8,0\")"))?;
        let Value::Str(name) = &n.value else {
            return Err(t.err(&key, &n.at, format!("expected a scenario device name, found {}", describe(&n.value))));
        };
        let name = name.strip_prefix("/dev/").unwrap_or(name);
        let e = by_name.get(name).ok_or_else(|| t.err(&key, &n.at, format!("'{name}' is not a scenario device ({})", dev_names(disks))))?;
        numbers.insert(devno, e.clone());
    }
    Ok(numbers)
}

/// `device_names = "partitions.txt"`: the traced machine's device names and
/// numbers (its /proc/partitions, or `lsblk -rno NAME,MAJ:MIN`). A trace
/// shows only numbers, and dynamic majors (virtio_blk's, device-mapper's,
/// null_blk's: `register_blkdev(0, ...)`) differ between machines and
/// kernels; the table says which device each number was, so a number it
/// lists means the scenario device of that name, or none.
fn device_names(w: &Obj, mut numbers: HashMap<DevNo, DevEntry>) -> Result<HashMap<DevNo, DevEntry>, ScenarioError> {
    let Some((path, text)) = read_named_file(w, "device_names")? else { return Ok(numbers) };
    let at = w.node("device_names").expect("read").at.clone();
    let table = parse_name_table(&text).map_err(|(line, m)| w.err("device_names", &at, format!("{path}:{line}: {m}")))?;
    let by_name: HashMap<String, DevEntry> = numbers.values().map(|e| (e.name.clone(), e.clone())).collect();
    for (devno, name) in table {
        numbers.remove(&devno);
        if let Some(e) = by_name.get(&name) {
            numbers.insert(devno, e.clone());
        }
    }
    Ok(numbers)
}

/// (number, name) per line of /proc/partitions (`MAJOR MINOR BLOCKS NAME`,
/// after its header) or of `lsblk -rno NAME,MAJ:MIN`; an error is (line, why).
fn parse_name_table(text: &str) -> Result<Vec<(DevNo, String)>, (usize, String)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let entry = match f.as_slice() {
            [] | ["major", "minor", ..] | ["NAME", ..] => continue,
            [maj, min, _, name] => maj.parse().ok().zip(min.parse().ok()).map(|(major, minor)| (DevNo { major, minor }, *name)),
            [name, devno] => parse_devno(devno).map(|d| (d, *name)),
            _ => None,
        };
        let (devno, name) = entry.ok_or((i + 1, format!("'{}' is neither /proc/partitions' MAJOR MINOR BLOCKS NAME nor lsblk's NAME MAJ:MIN", line.trim())))?;
        out.push((devno, name.strip_prefix("/dev/").unwrap_or(name).to_string()));
    }
    Ok(out)
}

fn parse_devno(s: &str) -> Option<DevNo> {
    let (a, b) = s.split_once(',').or_else(|| s.split_once(':'))?;
    Some(DevNo { major: a.trim().parse().ok()?, minor: b.trim().parse().ok()? })
}

/// `timing`: true for "asap".
fn timing(w: &Obj) -> Result<bool, ScenarioError> {
    match w.opt_str("timing")? {
        None => Ok(false),
        Some((t, _)) if t == "original" => Ok(false),
        Some((t, _)) if t == "asap" => Ok(true),
        Some((t, n)) => Err(w.err("timing", &n.at, format!("'{t}' is not original or asap"))),
    }
}

/// The root bios and unplugs, in trace order.
fn roots(records: &[TraceRecord], map: &HashMap<DevNo, DevEntry>) -> Result<Vec<Step>, (usize, String)> {
    let mut remaps: HashMap<(DevNo, u64, u32), (DevNo, u64)> = HashMap::new();
    let mut out = Vec::new();
    for r in records {
        match (r.action, r.dev, &r.extra) {
            (TraceAction::Model(Action::Remap), Some(d), Extra::Remap { from, from_sector, .. }) => {
                remaps.insert((d, r.sector.unwrap_or(0), r.nr_sectors), (*from, *from_sector));
            }
            (TraceAction::Model(a @ (Action::Unplug | Action::UnplugTimer)), _, e) => {
                let depth = if let Extra::Unplug { depth } = e { *depth } else { 0 };
                out.push(Step::Unplug { pid: r.pid, timer: a == Action::UnplugTimer, depth });
            }
            (TraceAction::Model(Action::Plug), _, _) => out.push(Step::Plug(r.pid)),
            (TraceAction::Model(Action::Issue), _, _) => out.push(Step::Issue(r.pid)),
            (TraceAction::Model(Action::Queue), Some(d), _) => {
                let sector = r.sector.unwrap_or(0);
                let target = match remaps.remove(&(d, sector, r.nr_sectors)) {
                    None => Some((d, sector)),
                    Some((from, fs)) => match (map.get(&from), map.get(&d)) {
                        // A partition's bio, remapped onto its disk.
                        (Some(f), Some(to)) if f.whole == to.name && f.name != to.name => Some((from, fs)),
                        // A clone of a stacked device's bio.
                        (Some(_), _) => None,
                        // From a device the scenario lacks: replay it where it landed.
                        (None, _) => Some((d, sector)),
                    },
                };
                let Some((dev, sector)) = target else {
                    out.push(Step::Queued(r.pid));
                    continue;
                };
                let e = map.get(&dev).ok_or((r.line, format!("device {dev} is not in the scenario (map it with device_map)")))?;
                match op_of(&r.rwbs) {
                    Some((op, flags)) => out.push(Step::Root(Root { line: r.line, time: r.time_ns, pid: r.pid, dev: e.name.clone(), op, flags, sector, sectors: r.nr_sectors })),
                    None => out.push(Step::Queued(r.pid)),
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// The bio's op and flags from RWBS; `None` for ops a bio cannot be
/// replayed as (`N`: write zeroes, zone management).
fn op_of(rwbs: &str) -> Option<(Op, u32)> {
    let r = Rwbs::decode(rwbs);
    let mut flags = 0;
    for (on, f) in [(r.preflush, req::PREFLUSH), (r.fua, req::FUA), (r.rahead, req::RAHEAD), (r.sync, req::SYNC), (r.meta, req::META)] {
        if on {
            flags |= f;
        }
    }
    let op = if r.secure_erase {
        Op::SecureErase
    } else if r.discard {
        Op::Discard
    } else if r.write {
        Op::Write
    } else if r.read {
        Op::Read
    } else if r.flush {
        // A flush request's bio: an empty PREFLUSH write.
        flags |= req::PREFLUSH;
        Op::Write
    } else {
        return None;
    };
    Some((op, flags))
}

fn check_root(r: &Root, map: &HashMap<DevNo, DevEntry>) -> Result<(), String> {
    let e = map.values().find(|e| e.name == r.dev).expect("mapped");
    let lbs = (e.lbs >> SECTOR_SHIFT) as u64;
    if r.sector % lbs != 0 || r.sectors as u64 % lbs != 0 {
        return Err(format!("{} + {} is not aligned to {}'s logical block size ({})", r.sector, r.sectors, r.dev, e.lbs));
    }
    if r.sectors > u32::MAX >> SECTOR_SHIFT {
        return Err(format!("{} sectors is more than a bio holds (UINT_MAX bytes)", r.sectors));
    }
    if r.sector + r.sectors as u64 > e.nr_sectors {
        return Err(format!("{} + {} passes the end of {} ({} sectors)", r.sector, r.sectors, r.dev, e.nr_sectors));
    }
    Ok(())
}

/// A submission to replay.
#[derive(Clone, Debug)]
struct ReplayUnit {
    time: u64,
    roots: Vec<Root>,
    /// Its requests went into a plug ('P').
    plugged: bool,
    /// The process slept inside that plug (a timer unplug, 'UT').
    sleeps: bool,
}

/// The pid's latest unit.
fn latest(out: &mut [(u32, Vec<ReplayUnit>)], pid: u32) -> Option<&mut ReplayUnit> {
    out.iter_mut().find(|(p, _)| *p == pid).and_then(|(_, units)| units.last_mut())
}

/// A pid's plug ('P') not yet unplugged: the unit it plugged, and whether
/// the pid queued a bio since.
struct OpenPlug {
    unit: (usize, usize),
    queued_since: bool,
}

/// Each pid's units. A root joins the pid's latest unit when
/// * it is queued at the same instant with no unplug of the pid between
///   (blkstack's own traces stamp one submission's bios alike), or
/// * the pid plugged ('P') after that unit's first root and has neither
///   unplugged nor issued since: a real trace stamps each bio of a plugged
///   submission (io_submit of a batch, a write md splits) with its own time.
///
/// A plug that held only the request of the bio just queued and was
/// unplugged ('U', depth 1) with no bio queued inside it is the plug 6.12's
/// `__submit_bio` puts around each bio of a task that has none (switch
/// `submit_bio_plug`), not the submission's: it does not mark the unit
/// plugged (each profile adds its own).
fn group(steps: &[Step]) -> Vec<(u32, Vec<ReplayUnit>)> {
    let mut out: Vec<(u32, Vec<ReplayUnit>)> = Vec::new();
    let mut open: HashMap<u32, bool> = HashMap::new();
    let mut in_plug: HashMap<u32, bool> = HashMap::new();
    let mut plugs: HashMap<u32, OpenPlug> = HashMap::new();
    let latest_at = |out: &[(u32, Vec<ReplayUnit>)], pid: u32| out.iter().position(|(p, _)| *p == pid).and_then(|i| out[i].1.len().checked_sub(1).map(|u| (i, u)));
    for s in steps {
        match s {
            Step::Plug(pid) => {
                if let Some(unit) = latest_at(&out, *pid) {
                    plugs.entry(*pid).or_insert(OpenPlug { unit, queued_since: false });
                    in_plug.insert(*pid, true);
                }
            }
            Step::Queued(pid) => {
                if let Some(p) = plugs.get_mut(pid) {
                    p.queued_since = true;
                }
            }
            Step::Issue(pid) => {
                in_plug.insert(*pid, false);
            }
            Step::Unplug { pid, timer, depth } => {
                // The timer unplug of the pid's latest submission (flushes
                // for size may have ended it before).
                if let (true, Some(u)) = (*timer, latest(&mut out, *pid)) {
                    u.sleeps = true;
                }
                if let Some(p) = plugs.remove(pid) {
                    let per_bio = !*timer && *depth == 1 && !p.queued_since;
                    out[p.unit.0].1[p.unit.1].plugged |= !per_bio;
                }
                open.insert(*pid, false);
                in_plug.insert(*pid, false);
            }
            Step::Root(r) => {
                let i = out.iter().position(|(p, _)| *p == r.pid).unwrap_or_else(|| {
                    out.push((r.pid, Vec::new()));
                    out.len() - 1
                });
                let units = &mut out[i].1;
                let same_instant = open.get(&r.pid).copied().unwrap_or(false) && units.last().is_some_and(|u| u.time == r.time);
                let plugged = in_plug.get(&r.pid).copied().unwrap_or(false);
                if same_instant || plugged {
                    units.last_mut().expect("checked").roots.push(r.clone());
                } else {
                    units.push(ReplayUnit { time: r.time, roots: vec![r.clone()], plugged: false, sleeps: false });
                }
                if let Some(p) = plugs.get_mut(&r.pid) {
                    p.queued_since = true;
                }
                open.insert(r.pid, true);
            }
        }
    }
    // Plugs the trace never shows unplugged.
    for p in plugs.into_values() {
        out[p.unit.0].1[p.unit.1].plugged = true;
    }
    out
}

/// The replay job of one traced process.
fn job(pid: u32, comm: String, units: Vec<ReplayUnit>, t0: Option<u64>, iodepth: u32) -> JobSpec {
    let make = Rc::new(move |topo: &Topology, _: &Behaviour, _: &mut SharedCaches| {
        let built = units
            .iter()
            .map(|u| {
                let bios = u.roots.iter().map(|r| bio_spec(topo, r)).collect();
                let not_before = t0.map_or(0, |t| u.time.saturating_sub(t));
                let plug = u.roots.len() > 1 || u.plugged || u.sleeps;
                IoUnit { bios, plug, sleeps_in_plug: u.sleeps, not_before, ..IoUnit::default() }
            })
            .collect();
        Box::new(Replay::new(built)) as Box<dyn Source>
    });
    // One unit per submission: units of one instant were separate calls.
    JobSpec { pid, comm: comm.clone(), iodepth, batch: 1, complete_min: 1, ioprio: Default::default(), cgroup: 0, stonewall: false, async_io: false, make }
}

fn bio_spec(topo: &Topology, r: &Root) -> BioSpec {
    let dev = topo.by_name(&r.dev).expect("a validated device");
    let size = r.sectors << SECTOR_SHIFT;
    let bvecs = if r.op.has_data() && size > 0 { vec![Bvec { phys: REPLAY_PHYS + (r.sector << SECTOR_SHIFT), len: size }] } else { Vec::new() };
    BioSpec { dev, op: r.op, flags: r.flags, sector: r.sector, bvecs, size }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rwbs_to_bios() {
        assert_eq!(op_of("WS"), Some((Op::Write, req::SYNC)));
        assert_eq!(op_of("FWS"), Some((Op::Write, req::PREFLUSH | req::SYNC)));
        assert_eq!(op_of("WFS"), Some((Op::Write, req::FUA | req::SYNC)));
        assert_eq!(op_of("RA"), Some((Op::Read, req::RAHEAD)));
        assert_eq!(op_of("DS"), Some((Op::Discard, req::SYNC)));
        assert_eq!(op_of("DE"), Some((Op::SecureErase, 0)));
        assert_eq!(op_of("N"), None);
        assert_eq!(parse_devno("8,16"), Some(DevNo { major: 8, minor: 16 }));
        assert_eq!(parse_devno("259:0"), Some(DevNo { major: 259, minor: 0 }));
        assert_eq!(parse_devno("sda"), None);
    }

    fn root(time: u64, sector: u64) -> Step {
        Step::Root(Root { line: 0, time, pid: 7, dev: "sda".into(), op: Op::Write, flags: 0, sector, sectors: 8 })
    }

    /// (time, sectors of the roots, plugged) per unit of pid 7.
    fn units(steps: &[Step]) -> Vec<(u64, Vec<u64>, bool)> {
        group(steps)[0].1.iter().map(|u| (u.time, u.roots.iter().map(|r| r.sector).collect(), u.plugged)).collect()
    }

    #[test]
    fn submissions_from_plugs_and_issues() {
        // 6.1's direct path: the plug is flushed by blk_finish_plug with no
        // unplug traced; the issue ('D') ends the submission.
        let steps = [root(0, 0), Step::Plug(7), root(5, 8), Step::Issue(7), root(9, 16)];
        assert_eq!(units(&steps), [(0, vec![0, 8], true), (9, vec![16], false)]);
        // 6.12's plug around a single bio (`__submit_bio`): depth 1, nothing
        // queued inside it: the unit is not the task's plug.
        let steps = [root(0, 0), Step::Plug(7), Step::Unplug { pid: 7, timer: false, depth: 1 }, root(3, 8)];
        assert_eq!(units(&steps), [(0, vec![0], false), (3, vec![8], false)]);
        // ... but a clone queued inside it (md) makes it the submission's.
        let steps = [root(0, 0), Step::Plug(7), Step::Queued(7), Step::Unplug { pid: 7, timer: false, depth: 1 }];
        assert_eq!(units(&steps), [(0, vec![0], true)]);
    }

    #[test]
    fn name_tables() {
        let d = |major, minor| DevNo { major, minor };
        let partitions = "major minor  #blocks  name\n\n 252        0    8388608 vda\n 252        1    8387584 vda1\n";
        assert_eq!(parse_name_table(partitions), Ok(vec![(d(252, 0), "vda".into()), (d(252, 1), "vda1".into())]));
        assert_eq!(parse_name_table("vdb 252:16\nvg-lv 253:0\n"), Ok(vec![(d(252, 16), "vdb".into()), (d(253, 0), "vg-lv".into())]));
        assert!(parse_name_table("vda\n").unwrap_err().0 == 1);
    }
}
