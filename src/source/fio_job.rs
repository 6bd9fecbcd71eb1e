//! A fio job as a [`Source`]: one clone of a [`FioJob`] (fio runs `numjobs`
//! of them, each an independent stream) on one block device.
//!
//! What each I/O is, following fio's io_u.c:
//! * **direction** (`get_rw_ddir`): from `rw`; for `rw`/`randrw` each I/O is
//!   a read with probability `rwmixread` % (fio switches direction in runs
//!   of I/Os; the proportion is the same); `trimwrite` trims a block, then
//!   writes the same block.
//! * **length** (`get_next_buflen`): `bs`, uniform in `bsrange` aligned down
//!   to its minimum, or a `bssplit` entry by its percentage.
//! * **offset**: sequential I/O continues from the direction's last offset
//!   (plus the `rw=…:N` skip), wrapping to the region's start when
//!   `time_based`; random I/O picks a block aligned to `blockalign`
//!   uniformly (`random_distribution=random`), each block once per pass with
//!   the random map (`norandommap` off: a used block moves on to the next
//!   free one, as fio's axmap does), or by fio's zipf/pareto/normal
//!   generators (zipf.c, gauss.c) over `size / min_bs` ranges, scattered by
//!   fio's hash; `rw=randread:N` issues N sequential I/Os per random offset.
//!   `zonemode=zbd`: writes go to a zone's write pointer (random jobs pick a
//!   random zone that is not full), the region stops when every zone is full.
//! * **stop** (`runtime`, `time_based`, `size`/`io_size`, `number_ios`): the
//!   job issues no I/O after `runtime`; without `time_based` it also stops
//!   after `io_size` (default `size`) bytes, one pass over the region.
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
//! Random numbers come from a seeded generator (not fio's tausworthe), so
//! the offsets are not fio's own sequence, but the same seed gives the same
//! run: with `randrepeat=1` (fio's default) the seed is `randseed`,
//! otherwise the scenario's `seed`, and each clone gets its own stream.

use std::collections::VecDeque;

use crate::bio::{req, Op};
use crate::genhd::DevId;

use super::dio::{direct_io_unit, DioRules, UserBuffer};
use super::discard_tool::DiscardTarget;
use super::fio::{BlockSize, Ddir, FioJob, IoEngine, RandomDistribution, ReadWrite};
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
    /// `runtime` in ns; `None`: no limit.
    pub end_ns: Option<u64>,
    /// Zone size in bytes for `zonemode=zbd`.
    pub zone_bytes: u64,
    /// Seed of this clone's random streams.
    pub seed: u64,
    /// Most blocks the random map may track (beyond: as `norandommap`).
    pub max_map_blocks: u64,
}

/// fio's random map: one bit per `blockalign` block of the region.
struct RandomMap {
    bits: Vec<u64>,
    blocks: u64,
    used: u64,
}

impl RandomMap {
    fn new(blocks: u64) -> Self {
        RandomMap { bits: vec![0; blocks.div_ceil(64) as usize], blocks, used: 0 }
    }

    fn is_set(&self, b: u64) -> bool {
        self.bits[(b / 64) as usize] >> (b % 64) & 1 == 1
    }

    /// The first free block at or after `b` (wrapping), `axmap_next_free`.
    fn next_free(&self, b: u64) -> Option<u64> {
        if self.used >= self.blocks {
            return None;
        }
        let mut i = b;
        for _ in 0..=self.bits.len() {
            let word = self.bits[(i / 64) as usize] | ((1u64 << (i % 64)) - 1);
            if word != u64::MAX {
                let free = (i / 64) * 64 + (!word).trailing_zeros() as u64;
                if free < self.blocks {
                    return Some(free);
                }
            }
            i = ((i / 64 + 1) * 64) % (self.bits.len() as u64 * 64);
        }
        None
    }

    fn mark(&mut self, first: u64, n: u64) {
        for b in first..(first + n).min(self.blocks) {
            if !self.is_set(b) {
                self.bits[(b / 64) as usize] |= 1 << (b % 64);
                self.used += 1;
            }
        }
    }

    fn clear(&mut self) {
        self.bits.iter_mut().for_each(|w| *w = 0);
        self.used = 0;
    }
}

/// One clone of a fio job.
pub struct FioJobSource {
    plan: FioPlan,
    target: FioTarget,
    rng: Rng,
    map: Option<RandomMap>,
    /// zipf/pareto/normal offsets.
    skew: Option<Skew>,
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
    issued_bytes: u64,
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
}

impl FioJobSource {
    /// `fragmentation` and `buffer_seed` shape the `iodepth` user buffers.
    pub fn new(plan: FioPlan, target: FioTarget, fragmentation: f64) -> Self {
        let j = &plan.job;
        let max_bs = [Ddir::Read, Ddir::Write].iter().map(|&d| j.max_bs(d)).max().unwrap_or(4096);
        let buffers = (0..j.iodepth.max(1)).map(|i| UserBuffer::new(max_bs, 0, fragmentation, plan.seed ^ ((i as u64 + 1) * 0x9e37_79b9))).collect();
        let random_map = j.rw.is_random() && !j.norandommap && j.random_distribution == RandomDistribution::Random;
        let blocks = plan.region_len / j.block_align(Ddir::Write).min(j.block_align(Ddir::Read)).max(1);
        let map = (random_map && blocks <= plan.max_map_blocks).then(|| RandomMap::new(blocks));
        let zones = plan.region_len.checked_div(plan.zone_bytes).unwrap_or(0) as usize;
        let rng = Rng::new(plan.seed);
        let range = j.min_bs(Ddir::Read).min(j.min_bs(Ddir::Write)).max(1);
        let skew = (j.random_distribution != RandomDistribution::Random).then(|| Skew::new(j.random_distribution, (plan.region_len / range).max(1), range, plan.seed));
        FioJobSource {
            plan,
            target,
            rng,
            map,
            skew,
            seq_pos: [0; 3],
            seq_left: 0,
            trimmed: None,
            wp: vec![0; zones],
            zone_cur: 0,
            buffers,
            next_buf: 0,
            issued_bytes: 0,
            issued_ios: 0,
            writes: 0,
            follow: VecDeque::new(),
            stopped: false,
            absorbed: (0, 0),
            stalled: false,
        }
    }

    fn job(&self) -> &FioJob {
        &self.plan.job
    }

    fn should_stop(&self, now: u64) -> bool {
        let j = self.job();
        self.plan.end_ns.is_some_and(|e| now >= e)
            || (j.number_ios > 0 && self.issued_ios >= j.number_ios)
            || (!j.time_based && self.issued_bytes >= self.plan.io_limit)
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
                if self.rng.next_u64() % 100 < self.job().rwmix_read as u64 {
                    Ddir::Read
                } else {
                    Ddir::Write
                }
            }
        }
    }

    /// `get_next_buflen`.
    fn pick_bs(&mut self, d: Ddir) -> u64 {
        match self.plan.job.block_size(d) {
            BlockSize::Fixed(b) => b,
            BlockSize::Range { min, max } => {
                let v = min + self.rng.next_u64() % (max - min + 1);
                if min.is_power_of_two() {
                    v & !(min - 1)
                } else {
                    v
                }
            }
            BlockSize::Split(entries) => {
                let r = self.rng.next_u64() % 100;
                let mut acc = 0u64;
                let last = entries.last().map_or(4096, |e| e.bs);
                entries.iter().find(|e| {
                    acc += e.perc as u64;
                    r < acc
                })
                .map_or(last, |e| e.bs)
            }
        }
    }

    /// Region-relative offset of the next I/O of `bs` bytes, or `None` when
    /// the region is used up (without `time_based`).
    fn next_offset(&mut self, d: Ddir, bs: u64) -> Option<u64> {
        if let (Ddir::Write, Some((off, _))) = (d, self.trimmed.take()) {
            return Some(off);
        }
        if self.plan.zone_bytes > 0 && d == Ddir::Write {
            return self.zone_offset(bs);
        }
        let random = self.job().rw.is_random() && self.seq_left == 0;
        let off = if random { self.random_offset(d, bs)? } else { self.seq_offset(d, bs)? };
        if self.job().rw.is_random() {
            self.seq_left = if self.seq_left > 0 { self.seq_left - 1 } else { self.job().rw_seq_nr.saturating_sub(1) };
        }
        self.seq_pos[d as usize] = (off as i64 + bs as i64 + self.job().rw_seq_add).max(0) as u64;
        Some(off)
    }

    fn seq_offset(&mut self, d: Ddir, bs: u64) -> Option<u64> {
        let pos = self.seq_pos[d as usize];
        if pos + bs <= self.plan.region_len {
            return Some(pos);
        }
        if self.job().time_based && bs <= self.plan.region_len {
            return Some(0);
        }
        None
    }

    fn random_offset(&mut self, d: Ddir, bs: u64) -> Option<u64> {
        let align = self.job().block_align(d);
        let len = self.plan.region_len;
        if bs > len {
            return None;
        }
        let slots = (len - bs) / align + 1;
        let b = match &self.skew {
            None => self.rng.next_u64() % slots,
            Some(s) => {
                let (u, u2) = (self.rng.next_f64(), self.rng.next_f64());
                s.next(u, u2) * s.range / align % slots
            }
        };
        let Some(map) = &mut self.map else { return Some(b * align) };
        // The next free block where the I/O fits, wrapping to the start.
        let fits = |f: Option<u64>| f.filter(|&f| f < slots);
        let b = match fits(map.next_free(b)).or_else(|| fits(map.next_free(0))) {
            Some(free) => free,
            _ if self.plan.job.time_based => {
                // A new pass over the region.
                map.clear();
                b
            }
            _ => return None,
        };
        map.mark(b, bs.div_ceil(align));
        Some(b * align)
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
                    _ => (Op::Write, UnitKind::Write, req::SYNC),
                };
                let buf = &self.buffers[self.next_buf];
                self.next_buf = (self.next_buf + 1) % self.buffers.len();
                let sync = matches!(self.job().ioengine, IoEngine::Sync | IoEngine::Psync | IoEngine::Pvsync);
                IoUnit { kind, bytes: bs, ..direct_io_unit(t.dev, op, flags, pos, bs, buf, &t.rules, sync) }
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
        if self.should_stop(now) {
            self.stop(now);
            return self.follow.pop_front();
        }
        let d = self.pick_ddir();
        let bs = self.pick_bs(d);
        let Some(off) = self.next_offset(d, bs) else {
            self.stop(now);
            return self.follow.pop_front();
        };
        let unit = self.io_unit(d, off, bs);
        self.issued_ios += 1;
        self.issued_bytes += bs;
        if d == Ddir::Write {
            self.after_write(now);
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
            self.plan.end_ns.and_then(|e| share(now, e)),
            share(self.issued_ios, j.number_ios),
            if j.time_based { None } else { share(self.issued_bytes, self.plan.io_limit) },
        ]
        .into_iter()
        .flatten()
        .reduce(f64::max)
    }
}

/// fio's hash (`__hash_u64`, the golden-ratio multiply of hash.h), which
/// scatters zipf/pareto ranks over the region.
fn hash_u64(v: u64) -> u64 {
    v.wrapping_mul(0x61C8_8646_80B5_83EB)
}

/// fio's non-uniform offset generators (zipf.c, gauss.c) over `n` ranges
/// of `range` bytes (`min_bs`), set up once (`zipf_init`, `pareto_init`).
pub struct Skew {
    dist: RandomDistribution,
    n: u64,
    range: u64,
    /// ζ(n, θ), summed over at most 10M terms (`ZIPF_MAX_GEN`).
    zetan: f64,
    /// Where rank 0 lands: `center × n`, else a random base (`rand_off`).
    rand_off: u64,
}

impl Skew {
    pub fn new(dist: RandomDistribution, n: u64, range: u64, seed: u64) -> Self {
        let (theta, center) = match dist {
            RandomDistribution::Zipf { theta, center } => (theta, center),
            RandomDistribution::Pareto { center, .. } | RandomDistribution::Normal { center, .. } => (0.0, center),
            RandomDistribution::Random => (0.0, None),
        };
        let zetan = match dist {
            RandomDistribution::Zipf { .. } => (1..=n.min(10_000_000)).map(|i| (i as f64).powf(-theta)).sum(),
            _ => 0.0,
        };
        let rand_off = match center {
            Some(c) => (c * n as f64) as u64,
            None => hash_u64(seed) % n,
        };
        Skew { dist, n, range, zetan, rand_off }
    }

    /// A range index in [0, n); `u`, `u2` uniform in [0, 1).
    pub fn next(&self, u: f64, u2: f64) -> u64 {
        let (n, nf) = (self.n, self.n as f64);
        let rank = match self.dist {
            RandomDistribution::Random => return (u * nf) as u64 % n,
            RandomDistribution::Zipf { theta, .. } => zipf_rank(theta, n, self.zetan, u),
            // pareto_next: (n − 1) × u^(ln h / ln(1 − h)).
            RandomDistribution::Pareto { h, .. } => ((nf - 1.0) * u.powf(h.ln() / (1.0 - h).ln())) as u64,
            RandomDistribution::Normal { dev, center } => {
                // gauss: around the middle (or `center`), stdev dev % of n (Box-Muller).
                let z = (-2.0 * (1.0 - u).ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let mid = center.unwrap_or(0.5) * nf;
                return (mid + z * dev / 100.0 * nf).clamp(0.0, nf - 1.0) as u64;
            }
        };
        (hash_u64(rank) % n + self.rand_off) % n
    }
}

/// `zipf_next` without the hash: rank − 1 of a zipf(θ) draw over n items.
fn zipf_rank(theta: f64, n: u64, zetan: f64, u: f64) -> u64 {
    let zeta2 = 1.0 + 0.5f64.powf(theta);
    let alpha = 1.0 / (1.0 - theta);
    let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
    let z = u * zetan;
    let val = if z < 1.0 {
        1
    } else if z < 1.0 + 0.5f64.powf(theta) {
        2
    } else {
        1 + (n as f64 * (eta * u - eta + 1.0).powf(alpha)) as u64
    };
    (val - 1).min(n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_map_hands_out_each_block_once() {
        let mut m = RandomMap::new(130);
        m.mark(0, 64);
        m.mark(65, 10);
        // 64 is the first free block from 3; from 70 the next free is 75.
        assert_eq!(m.next_free(3), Some(64));
        assert_eq!(m.next_free(70), Some(75));
        m.mark(64, 1);
        m.mark(75, 55);
        assert_eq!(m.next_free(100), None, "all 130 used");
    }

    #[test]
    fn zipf_favours_low_ranks() {
        // zipf(1.2) over 1000 ranks: rank 0 takes 1/ζ(1000, 1.2) ≈ 1/4.6 ≈ 22 %
        // of the draws; uniform draws u < 1/ζ map to it.
        let n = 1000;
        let zetan: f64 = (1..=n).map(|i| (i as f64).powf(-1.2)).sum();
        assert_eq!(zipf_rank(1.2, n, zetan, 0.5 / zetan), 0);
        let zeros = (0..1000).filter(|i| zipf_rank(1.2, n, zetan, *i as f64 / 1000.0) == 0).count();
        assert!((200..=240).contains(&zeros), "{zeros}");
    }
}
