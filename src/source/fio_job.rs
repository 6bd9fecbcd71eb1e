//! A fio job as a [`Source`]: one clone of a [`FioJob`] (fio runs `numjobs`
//! of them, each an independent stream) on one block device.
//!
//! What each I/O is, following fio's io_u.c, drawn by fio's own generators
//! from fio's seeds ([`super::fio_io_u`]), so a job issues fio's sequence:
//! * **direction** (`get_rw_ddir`): from `rw`; `rw`/`randrw` draw a
//!   direction against `rwmixread` and keep it for the share of I/Os fio
//!   gives it; `trimwrite` trims a block, then writes the same block.
//! * **offset**: sequential I/O continues from the direction's last offset
//!   (plus the `rw=…:N` skip), wrapping to the region's start when
//!   `time_based`; random I/O (`get_next_rand_offset`) draws a
//!   `blockalign` block with fio's Tausworthe generator, moving on to the
//!   next free block of the random map (`norandommap` off), or takes the
//!   LFSR's next block (`random_generator=lfsr`), or a zipf/pareto/normal
//!   range; `rw=randread:N` issues N sequential I/Os per random offset.
//!   `zonemode=zbd`: writes go to a zone's write pointer (random jobs pick a
//!   random zone that is not full), the region stops when every zone is full.
//! * **length** (`get_next_buflen`): `bs`, a draw in `bsrange`, or a
//!   `bssplit` entry, that fits before the region's end; with the random map
//!   an I/O that runs into a used block is cut short (`mark_random_map`).
//! * **stop** (`runtime`, `time_based`, `size`/`io_size`, `number_ios`): the
//!   job issues no I/O after `runtime`; without `time_based` it also stops
//!   after `io_size` (default `size`) bytes: one pass over the region, or
//!   more when `io_size` is larger (`keep_running`).
//!
//! How each I/O reaches the block layer: `direct=1` reads and writes go
//! through `blkdev_direct_IO` ([`super::dio`]) from one of `iodepth` user
//! buffers, writes `REQ_SYNC` (`dio_bio_write_op`); `direct=0` writes go
//! into the device's page cache ([`super::pagecache`]); trims are a
//! BLKDISCARD ioctl each (`os_trim`, synchronous under every engine).
//! `fsync=N`/`fdatasync=N` issue an fsync after every N writes and
//! `end_fsync` one at the end: writeback of the device's dirty pages, then a
//! flush. When the job ends it closes the device; the last close writes
//! back what is still dirty.
//!
//! Seeds follow fio's `setup_random_seeds` for the job's `thread_number`
//! ([`super::fio_rand`]); where fio would read /dev/urandom (`randrepeat=0`
//! without `randseed`) the scenario's `seed` stands in, so a run is
//! reproducible. User buffers and `zonemode=zbd` zone choices use the
//! model's own generator.

use std::collections::VecDeque;

use crate::bio::Op;
use crate::genhd::DevId;

use super::dio::{direct_io_unit, fio_counted, BufferLayout, DioRules, UserBuffer, DIO_WRITE_FLAGS};
use super::discard_tool::DiscardTarget;
use super::fio::{Ddir, FioJob, IoEngine, ReadWrite};
use super::fio_io_u::{FioSeeds, IoUGen};
use super::pagecache::{fsync_units, SharedCache, WbRange};
use super::rng::Rng;
use super::{IoUnit, Source, UnitKind};

/// The device a fio job runs on, as the run built it.
#[derive(Clone, Debug)]
pub struct FioTarget {
    pub dev: DevId,
    pub rules: DioRules,
    pub discard: DiscardTarget,
    /// The device's page cache (`direct=0`).
    pub cache: Option<SharedCache>,
}

/// A job resolved against its device: everything [`FioJobSource`] needs
/// besides the device (worked out and checked by the scenario reader).
#[derive(Clone, Debug)]
pub struct FioPlan {
    pub job: FioJob,
    /// The region, in bytes on the device (`offset`, `size`).
    pub region_start: u64,
    pub region_len: u64,
    /// Bytes to do without `time_based` (`io_size`, default `size`).
    pub io_limit: u64,
    /// `runtime` in ns from the job's start (after `ramp_time`); `None`: no
    /// limit.
    pub end_ns: Option<u64>,
    /// Zone size in bytes for `zonemode=zbd`.
    pub zone_bytes: u64,
    /// Seed of this clone's user buffers and zone choices.
    pub seed: u64,
    /// fio's seeds for this clone.
    pub seeds: FioSeeds,
    /// Most blocks the random map may track (beyond: as `norandommap`).
    pub max_map_blocks: u64,
}

/// One clone of a fio job.
pub struct FioJobSource {
    plan: FioPlan,
    target: FioTarget,
    /// Zone choices of `zonemode=zbd`.
    rng: Rng,
    /// fio's generators: direction, offset, length.
    io_u_gen: IoUGen,
    /// Next sequential offset per direction (read, write, trim), region-relative.
    seq_pos: [u64; 3],
    /// I/Os left in the current `rw=…:N` sequential run.
    seq_left: u32,
    /// The block a `trimwrite` trimmed, to write next.
    trimmed: Option<(u64, u64)>,
    /// Zone write pointers (region-relative bytes) for zonemode=zbd.
    wp: Vec<u64>,
    zone_cur: usize,
    buffers: Vec<UserBuffer>,
    next_buf: usize,
    /// Bytes issued per direction (read, write, trim).
    issued_bytes: [u64; 3],
    issued_ios: u64,
    writes: u64,
    /// fsyncs, background writeback and the close, before the next I/O.
    follow: VecDeque<IoUnit>,
    stopped: bool,
    /// `time_based`: (simulated time, bytes written into the page cache at
    /// that instant without any I/O) — see [`FioJobSource::no_time_passes`].
    absorbed: (u64, u64),
    /// The job stopped because its writes took no simulated time.
    stalled: bool,
    /// fio's `td->epoch`: when the job started, or its ramp ended.
    epoch: Option<u64>,
    /// Still in `ramp_time`: its I/O counts in no statistics.
    ramping: bool,
    /// `rate_io_issue_bytes` per direction since the epoch.
    rate_bytes: [u64; 3],
    /// `thinktime`: the job waits for its I/O, then thinks before the next.
    think: Think,
}

/// Where a job is in its `thinktime` pause.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Think {
    No,
    /// Due: next, a unit that waits for the job's I/O to drain.
    Due,
    /// Drained: the next I/O waits `thinktime` from now.
    Drained,
}

impl FioJobSource {
    /// `layout` shapes the `iodepth` user buffers: fragmented ones each on
    /// their own, or given pieces holding fio's whole I/O buffer, io_u i at
    /// `i × max_bs` of it (`init_io_u`).
    pub fn new(plan: FioPlan, target: FioTarget, layout: &BufferLayout) -> Self {
        let j = &plan.job;
        let max_bs = io_buffer_bs(j);
        let depth = j.iodepth.max(1) as u64;
        let buffers = match layout {
            BufferLayout::Fragmented(p) => (0..depth).map(|i| UserBuffer::new(max_bs, 0, *p, plan.seed ^ ((i + 1) * 0x9e37_79b9))).collect(),
            BufferLayout::Segments(_) => {
                let whole = UserBuffer::with_layout(depth * max_bs, 0, layout, plan.seed);
                (0..depth).map(|i| whole.slice(i * max_bs, max_bs)).collect()
            }
        };
        let zones = plan.region_len.checked_div(plan.zone_bytes).unwrap_or(0) as usize;
        let rng = Rng::new(plan.seed);
        let io_u_gen = IoUGen::new(j, &plan.seeds, plan.region_len, random_map(j, plan.region_len, plan.max_map_blocks)).expect("checked by the scenario reader");
        FioJobSource {
            plan,
            target,
            rng,
            io_u_gen,
            seq_pos: [0; 3],
            seq_left: 0,
            trimmed: None,
            wp: vec![0; zones],
            zone_cur: 0,
            buffers,
            next_buf: 0,
            issued_bytes: [0; 3],
            issued_ios: 0,
            writes: 0,
            follow: VecDeque::new(),
            stopped: false,
            absorbed: (0, 0),
            stalled: false,
            epoch: None,
            ramping: false,
            rate_bytes: [0; 3],
            think: Think::No,
        }
    }

    fn job(&self) -> &FioJob {
        &self.plan.job
    }

    fn should_stop(&self, now: u64) -> bool {
        let j = self.job();
        let epoch = self.epoch.unwrap_or(0);
        (!self.ramping && self.plan.end_ns.is_some_and(|e| now >= epoch.saturating_add(e)))
            || (j.number_ios > 0 && self.issued_ios >= j.number_ios)
            || (!j.time_based && self.counted_bytes() >= self.plan.io_limit)
    }

    /// The bytes fio's `io_bytes_exceeded` holds against `io_size`: reads
    /// and writes of a mixed job, else its one direction — the writes of a
    /// `trimwrite` job, whose trims do not count.
    fn counted_bytes(&self) -> u64 {
        let [r, w, t] = self.issued_bytes;
        let rw = self.job().rw;
        match (rw.reads(), rw.writes()) {
            (true, true) => r + w,
            (false, true) => w,
            (true, false) => r,
            _ => t,
        }
    }

    /// The job is done: `end_fsync`, then the close.
    fn stop(&mut self, now: u64) {
        self.stopped = true;
        let t = &self.target;
        if self.plan.job.end_fsync {
            self.follow.extend(fsync_units(t.cache.as_ref(), t.dev, WbRange::All, now));
        }
        if let Some(u) = t.cache.as_ref().and_then(|c| c.borrow_mut().release()) {
            self.follow.push_back(u);
        }
    }

    /// `get_rw_ddir`.
    fn pick_ddir(&mut self) -> Ddir {
        use ReadWrite::*;
        match self.job().rw {
            Read | RandRead => Ddir::Read,
            Write | RandWrite => Ddir::Write,
            Trim | RandTrim => Ddir::Trim,
            TrimWrite | RandTrimWrite => {
                if self.trimmed.is_some() {
                    Ddir::Write
                } else {
                    Ddir::Trim
                }
            }
            Rw | RandRw => {
                let mix = [self.plan.job.rwmix_read, self.plan.job.rwmix_write];
                self.io_u_gen.get_rw_ddir(mix)
            }
        }
    }

    /// The next I/O of direction `d`: region-relative offset and length
    /// (`get_next_offset`, then `get_next_buflen` at that offset), or `None`
    /// when the region is used up (without `time_based`).
    fn next_io(&mut self, d: Ddir) -> Option<(u64, u64)> {
        if let (Ddir::Write, Some(io)) = (d, self.trimmed.take()) {
            return Some(io);
        }
        if self.plan.zone_bytes > 0 && d == Ddir::Write {
            let bs = self.buflen(d, 0)?;
            return self.zone_offset(bs).map(|off| (off, bs));
        }
        let rw_seq_hit = self.seq_left == 0;
        let random = self.job().rw.is_random() && rw_seq_hit;
        let (off, bs) = if random { self.random_io(d)? } else { self.seq_io(d)? };
        if self.job().rw.is_random() {
            self.seq_left = if self.seq_left > 0 { self.seq_left - 1 } else { self.job().rw_seq_nr.saturating_sub(1) };
        }
        self.seq_pos[d as usize] = (off as i64 + bs as i64 + self.job().rw_seq_add).max(0) as u64;
        Some((off, bs))
    }

    /// The region is used up but `io_size` is not (`keep_running`: more
    /// than the largest block size left): a new pass from the region's
    /// start, and its first I/O. A job with `ramp_time` counts its bytes
    /// from the ramp's end, so its pass over the region after the ramp
    /// falls short and goes on from the start.
    fn new_pass(&mut self) -> Option<(Ddir, (u64, u64))> {
        let j = &self.plan.job;
        if j.time_based || (j.io_size.is_none() && j.ramp_time_us == 0) {
            return None;
        }
        let max_bs = [Ddir::Read, Ddir::Write, Ddir::Trim].iter().map(|&d| j.max_bs(d)).max().unwrap_or(0);
        if self.plan.io_limit.saturating_sub(self.counted_bytes()) < max_bs.max(1) {
            return None;
        }
        self.io_u_gen.new_pass(&self.plan.job);
        self.seq_pos = [0; 3];
        self.trimmed = None;
        let d = self.pick_ddir();
        self.next_io(d).map(|io| (d, io))
    }

    /// `get_next_buflen` at `off`; `None` when nothing fits there.
    fn buflen(&mut self, d: Ddir, off: u64) -> Option<u64> {
        Some(self.io_u_gen.get_next_buflen(&self.plan.job, d, off)).filter(|&b| b > 0)
    }

    fn seq_io(&mut self, d: Ddir) -> Option<(u64, u64)> {
        let mut off = self.seq_pos[d as usize];
        if off >= self.plan.region_len && self.job().time_based {
            off = 0;
        }
        let bs = self.buflen(d, off.min(self.plan.region_len))?;
        if off + bs <= self.plan.region_len {
            return Some((off, bs));
        }
        if self.job().time_based && bs <= self.plan.region_len {
            return Some((0, bs));
        }
        None
    }

    /// `get_next_rand_block` (a time_based job starts a new pass when the
    /// map or the LFSR is used up), the length at that offset, and
    /// `mark_random_map`.
    fn random_io(&mut self, d: Ddir) -> Option<(u64, u64)> {
        let job = &self.plan.job;
        let b = match self.io_u_gen.get_next_rand_offset(job, d) {
            Some(b) => b,
            None if job.time_based => {
                self.io_u_gen.fio_file_reset();
                self.io_u_gen.get_next_rand_offset(job, d)?
            }
            None => return None,
        };
        let off = b * job.block_align(d);
        if off >= self.plan.region_len {
            return None;
        }
        let bs = self.buflen(d, off)?;
        Some((off, self.io_u_gen.mark_random_map(&self.plan.job, d, off, bs)))
    }

    /// zonemode=zbd: the write pointer of the current (sequential) or a
    /// random (random jobs) zone that has room for `bs`.
    fn zone_offset(&mut self, bs: u64) -> Option<u64> {
        let zb = self.plan.zone_bytes;
        let open: Vec<usize> = (0..self.wp.len()).filter(|&z| self.wp[z] + bs <= zb).collect();
        if open.is_empty() {
            return None;
        }
        let z = if self.job().rw.is_random() {
            open[(self.rng.next_u64() % open.len() as u64) as usize]
        } else {
            *open.iter().find(|&&z| z >= self.zone_cur).unwrap_or(&open[0])
        };
        self.zone_cur = z;
        let off = z as u64 * zb + self.wp[z];
        self.wp[z] += bs;
        Some(off)
    }

    /// The unit of one I/O.
    fn io_unit(&mut self, d: Ddir, off: u64, bs: u64) -> IoUnit {
        let pos = self.plan.region_start + off;
        let t = self.target.clone();
        match d {
            Ddir::Trim => {
                if self.job().rw == ReadWrite::TrimWrite || self.job().rw == ReadWrite::RandTrimWrite {
                    self.trimmed = Some((off, bs));
                }
                t.discard.blkdiscard(pos, bs).unwrap_or_default()
            }
            Ddir::Write if t.cache.is_some() => self.buffered_write(&t, pos, bs),
            _ => {
                let (op, kind, flags) = match d {
                    Ddir::Read => (Op::Read, UnitKind::Read, 0),
                    // dio_bio_write_op: REQ_SYNC | REQ_IDLE.
                    _ => (Op::Write, UnitKind::Write, DIO_WRITE_FLAGS),
                };
                let buf = &self.buffers[self.next_buf];
                self.next_buf = (self.next_buf + 1) % self.buffers.len();
                let sync = matches!(self.job().ioengine, IoEngine::Sync | IoEngine::Psync | IoEngine::Pvsync);
                fio_counted(direct_io_unit(t.dev, op, flags, pos, bs, buf, &t.rules, sync), kind)
            }
        }
    }

    fn buffered_write(&mut self, t: &FioTarget, pos: u64, bs: u64) -> IoUnit {
        let cache = t.cache.as_ref().expect("buffered");
        let reads = cache.borrow_mut().write(pos, bs);
        if let Some(bg) = cache.borrow_mut().background_unit() {
            self.follow.push_back(bg);
        }
        IoUnit { bios: reads, sync: true, kind: UnitKind::Write, bytes: bs, ..IoUnit::default() }
    }

    /// `time_based` with writes the page cache absorbs: the model gives a
    /// buffered write no CPU time, so once a whole region's worth of them
    /// went in at one instant without any I/O, further ones would only
    /// dirty the same pages again and `runtime` would never come. The job
    /// stops there (its close writes the pages back) instead of spinning.
    fn no_time_passes(&mut self, unit: &IoUnit, now: u64) -> bool {
        if !self.job().time_based || !unit.bios.is_empty() || !self.follow.is_empty() || self.target.cache.is_none() {
            self.absorbed = (now, 0);
            return false;
        }
        if self.absorbed.0 != now {
            self.absorbed = (now, 0);
        }
        self.absorbed.1 += unit.bytes;
        self.absorbed.1 >= self.plan.region_len
    }

    /// The job's start (its first call, or `startdelay` if later) and the
    /// end of its `ramp_time`: fio's `reset_all_stats` — the bytes counted
    /// against `io_size`, the rate's bytes and the epoch start again.
    fn ramp(&mut self, now: u64) {
        let ramp_ns = self.job().ramp_time_us.saturating_mul(1000);
        let Some(epoch) = self.epoch else {
            self.epoch = Some(now.max(self.job().start_delay_us.saturating_mul(1000)));
            self.ramping = ramp_ns > 0;
            return;
        };
        if self.ramping && now >= epoch.saturating_add(ramp_ns) {
            self.ramping = false;
            self.epoch = Some(now);
            self.issued_bytes = [0; 3];
            self.issued_ios = 0;
            self.rate_bytes = [0; 3];
        }
    }

    /// `rate_bps` of direction `d` (`__setup_rate`): `rate`, else
    /// `rate_iops` × the direction's minimum block size; 0 = no limit.
    fn rate_bps(&self, d: Ddir) -> u64 {
        let j = self.job();
        match *j.rate.get(d) {
            0 => j.rate_iops.get(d).saturating_mul(j.min_bs(d)),
            r => r,
        }
    }

    /// When direction `d` may issue next (`usec_for_io`), in ns from the
    /// epoch; `None` without a rate.
    fn rate_next_io_time(&self, d: Ddir) -> Option<u64> {
        let bps = self.rate_bps(d);
        (bps > 0).then(|| (self.rate_bytes[d as usize] as u128 * 1_000_000_000 / bps as u128).min(u64::MAX as u128) as u64)
    }

    /// `rate_ddir`: a mixed job ahead of its rate in direction `d` but
    /// behind in the other switches direction, or takes the one due first.
    fn rate_ddir(&self, d: Ddir, now: u64) -> Ddir {
        let since = now.saturating_sub(self.epoch.unwrap_or(0));
        let Some(next) = self.rate_next_io_time(d) else { return d };
        let other = if d == Ddir::Read { Ddir::Write } else { Ddir::Read };
        let mixed = matches!(self.job().rw, ReadWrite::Rw | ReadWrite::RandRw) && d != Ddir::Trim;
        if next <= since || !mixed {
            return d;
        }
        match self.rate_next_io_time(other) {
            Some(o) if o <= since || o < next => other,
            _ => d,
        }
    }

    /// `rate_ddir`'s check: a sleep for the rate that would end at or past
    /// `runtime` ends the job instead (no I/O is issued; the runtime check
    /// would stop the job when it wakes).
    fn rate_sleeps_past_runtime(&self, d: Ddir) -> bool {
        let (Some(next), Some(end)) = (self.rate_next_io_time(d), self.plan.end_ns) else { return false };
        !self.ramping && next >= end
    }

    /// The unit's earliest time: not before the job has started
    /// (`startdelay`); a rate-limited job ahead of its rate waits for its
    /// I/O (`io_u_quiesce`), then sleeps until its time; a job that just
    /// drained for `thinktime` sleeps that long.
    fn pace(&mut self, unit: &mut IoUnit, d: Ddir, now: u64) {
        let epoch = self.epoch.unwrap_or(0);
        unit.not_before = unit.not_before.max(epoch);
        if let Some(next) = self.rate_next_io_time(d).map(|t| epoch.saturating_add(t)).filter(|&t| t > now) {
            unit.drain = true;
            unit.not_before = next;
        }
        if self.think == Think::Drained {
            self.think = Think::No;
            unit.not_before = unit.not_before.max(now.saturating_add(self.job().thinktime_us.saturating_mul(1000)));
        }
        if self.ramping {
            // Ramp I/O: issued like any other, counted by nobody.
            unit.kind = UnitKind::Other;
        }
    }

    /// fsync=N / fdatasync=N after a write.
    fn after_write(&mut self, now: u64) {
        self.writes += 1;
        let j = self.job();
        let every = [j.fsync, j.fdatasync];
        if every.iter().any(|&n| n > 0 && self.writes % n as u64 == 0) {
            let t = &self.target;
            self.follow.extend(fsync_units(t.cache.as_ref(), t.dev, WbRange::All, now));
        }
    }
}

impl Source for FioJobSource {
    fn next_unit(&mut self) -> Option<IoUnit> {
        self.next_unit_at(0)
    }

    fn next_unit_at(&mut self, now: u64) -> Option<IoUnit> {
        if let Some(u) = self.follow.pop_front() {
            return Some(u);
        }
        if self.stopped {
            return None;
        }
        self.ramp(now);
        if self.should_stop(now) {
            self.stop(now);
            return self.follow.pop_front();
        }
        if self.think == Think::Due {
            self.think = Think::Drained;
            return Some(drain_unit());
        }
        let d = self.pick_ddir();
        let d = self.rate_ddir(d, now);
        if self.rate_sleeps_past_runtime(d) {
            self.stop(now);
            return self.follow.pop_front();
        }
        let Some((d, (off, bs))) = self.next_io(d).map(|io| (d, io)).or_else(|| self.new_pass()) else {
            self.stop(now);
            return self.follow.pop_front();
        };
        self.io_u_gen.issued(d);
        let mut unit = self.io_unit(d, off, bs);
        self.pace(&mut unit, d, now);
        self.issued_ios += 1;
        self.issued_bytes[d as usize] += bs;
        self.rate_bytes[d as usize] += bs;
        if d == Ddir::Write {
            self.after_write(now);
        }
        if self.job().thinktime_us > 0 && self.issued_ios % self.job().thinktime_blocks.max(1) == 0 {
            self.think = Think::Due;
        }
        if self.no_time_passes(&unit, now) {
            self.stalled = true;
            self.stop(now);
        }
        // The I/O goes first; what it triggered follows.
        Some(unit)
    }

    fn note(&self) -> Option<String> {
        self.stalled.then(|| {
            format!(
                "job '{}': time_based buffered writes stay in the page cache and take no simulated time: stopped after one pass over the region ({} writes) instead of running for runtime",
                self.job().name,
                self.issued_ios
            )
        })
    }

    /// The furthest of the job's stop conditions (`should_stop`).
    fn progress(&self, now: u64) -> Option<f64> {
        if self.stopped {
            return Some(1.0);
        }
        let j = self.job();
        let share = |done: u64, all: u64| (all > 0).then(|| done as f64 / all as f64);
        [
            self.plan.end_ns.and_then(|e| share(now.saturating_sub(self.epoch.unwrap_or(0)), e)),
            share(self.issued_ios, j.number_ios),
            if j.time_based { None } else { share(self.counted_bytes(), self.plan.io_limit) },
        ]
        .into_iter()
        .flatten()
        .reduce(f64::max)
    }
}

/// A unit without I/O that is submitted only once the job's I/O has
/// drained (`io_u_quiesce`).
fn drain_unit() -> IoUnit {
    IoUnit { drain: true, ..IoUnit::default() }
}

/// The size of each io_u's buffer: the largest read or write block size.
pub fn io_buffer_bs(j: &FioJob) -> u64 {
    [Ddir::Read, Ddir::Write].iter().map(|&d| j.max_bs(d)).max().unwrap_or(4096)
}

/// Whether the job keeps fio's random map (`file_randommap`): random I/O
/// with the uniform distribution and the Tausworthe generator, without
/// `norandommap` — which `fixup_options` also sets when `blockalign` differs
/// from a direction's minimum block size ("Any use of blockalign= turns off
/// randommap") — and within the model's cap on the map's size.
pub fn random_map(j: &FioJob, region_len: u64, max_blocks: u64) -> bool {
    let aligned = [Ddir::Read, Ddir::Write, Ddir::Trim].iter().all(|&d| j.block_align(d) == j.min_bs(d));
    j.rw.is_random()
        && aligned
        && !j.norandommap
        && j.random_distribution == super::fio::RandomDistribution::Random
        && j.random_generator != super::fio::RandomGenerator::Lfsr
        && super::fio_io_u::map_blocks(j, region_len) <= max_blocks
}
