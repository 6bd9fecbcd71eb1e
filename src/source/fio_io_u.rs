//! How fio chooses each I/O of a job (io_u.c): its direction
//! (`get_rw_ddir`), random offset (`get_next_rand_offset`, with the random
//! map, the LFSR or a non-uniform distribution) and length
//! (`get_next_buflen`, `mark_random_map`), each from the generator and seed
//! fio uses for that purpose, so a job issues fio's own sequence.
//!
//! Offsets here are relative to the job's region (fio's `file_offset`), and
//! the region is the file: `min(io_size, real_file_size)`.

use super::fio::{BlockSize, Ddir, FioJob, RandomDistribution, RandomGenerator, ZoneSplit};
use super::fio_axmap::Axmap;
use super::fio_dist::{GaussState, ZipfState};
use super::fio_lfsr::FioLfsr;
use super::fio_rand::{init_rand_seed, FrandState, FIO_RAND_BLOCK_OFF, FIO_RAND_BS_OFF, FIO_RAND_MIX_OFF, FIO_RAND_NR_OFFS, FIO_RAND_ZONE_OFF};

/// A job's seeds, as `setup_random_seeds` leaves them, and the seed of its
/// non-uniform distribution (`__init_rand_distribution`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FioSeeds {
    pub seeds: [u64; FIO_RAND_NR_OFFS],
    pub dist_seed: u32,
    /// `rand_repeatable` after `fixup_options`: a new pass re-seeds.
    pub rand_repeatable: bool,
    /// The offset generator is tausworthe64 although the job did not ask
    /// (`check_rand_gen_limits`, fio 3.42 on).
    pub offset_use64: bool,
}

/// Where random offsets come from (`get_next_rand_offset`).
#[derive(Clone, Debug)]
enum OffsetGen {
    /// `td->random_state`, tausworthe or tausworthe64.
    Taus(FrandState),
    Lfsr(FioLfsr),
    Zipf(ZipfState),
    Pareto(ZipfState),
    Gauss(GaussState),
}

/// `struct zone_split_index` for each of the 100 percentiles of a
/// direction (zone-dist.c `__td_zone_gen_index`): where the zone that
/// percentile falls in starts and ends, in % of the file or in bytes.
#[derive(Clone, Copy, Debug, Default)]
struct ZoneSplitIndex {
    size_perc_prev: u64,
    size_perc: u64,
    size_prev: u64,
    size: u64,
}

/// `random_distribution=zoned`/`zoned_abs`: `td->zone_state` and the index.
#[derive(Clone, Debug)]
struct Zones {
    absolute: bool,
    zone_state: FrandState,
    /// Per direction; empty: that direction draws uniformly.
    index: [Vec<ZoneSplitIndex>; 3],
}

/// `__td_zone_gen_index` for one direction.
fn td_zone_gen_index(splits: &[ZoneSplit]) -> Vec<ZoneSplitIndex> {
    if splits.is_empty() {
        return Vec::new();
    }
    let mut index = vec![ZoneSplitIndex::default(); 100];
    let (mut aprev, mut sprev, mut sprev_sz) = (0usize, 0u64, 0u64);
    for z in splits {
        let end = (aprev + z.access_perc as usize).min(100);
        for zsi in &mut index[aprev..end] {
            *zsi = ZoneSplitIndex { size_perc: sprev + z.size_perc as u64, size_perc_prev: sprev, size: sprev_sz + z.size, size_prev: sprev_sz };
        }
        aprev = end;
        sprev += z.size_perc as u64;
        sprev_sz += z.size;
    }
    index
}

/// Most draws `get_next_buflen` makes for one I/O before giving up (fio
/// would loop for ever when no allowed size fits at the offset).
const MAX_BUFLEN_TRIES: u32 = 1 << 20;

/// The state fio keeps per job for choosing I/Os.
#[derive(Clone, Debug)]
pub struct IoUGen {
    bsrange_state: [FrandState; 3],
    rwmix_state: FrandState,
    offset: OffsetGen,
    zones: Option<Zones>,
    /// `f->io_axmap`: present unless `norandommap`, lfsr or a non-uniform
    /// distribution (`file_randommap`).
    axmap: Option<Axmap>,
    rwmix_ddir: Ddir,
    rwmix_issues: u64,
    io_issues: [u64; 3],
    seeds: FioSeeds,
    region_len: u64,
}

/// `td->bsrange_state`, one per direction; trimwrite trims and writes the
/// same sizes, so its trim generator takes the write seed.
fn bsrange_states(job: &FioJob, seeds: &FioSeeds) -> [FrandState; 3] {
    let s = &seeds.seeds;
    let use64 = job.random_generator == RandomGenerator::Tausworthe64;
    let (read, write) = (s[FIO_RAND_BS_OFF], s[FIO_RAND_BS_OFF + 1]);
    let trim = if job.rw.trims() && job.rw.writes() { write } else { s[FIO_RAND_BS_OFF + 2] };
    [read, write, trim].map(|x| init_rand_seed(x, use64))
}

/// `rw_min_bs`: the smallest block size of any direction.
pub fn rw_min_bs(job: &FioJob) -> u64 {
    [Ddir::Read, Ddir::Write, Ddir::Trim].iter().map(|&d| job.min_bs(d)).min().unwrap_or(4096).max(1)
}

/// Blocks of the random map and the LFSR (`init_random_map`).
pub fn map_blocks(job: &FioJob, region_len: u64) -> u64 {
    region_len / rw_min_bs(job)
}

/// fio refuses to start a `random_generator=lfsr` job whose seed is the
/// LFSR's forbidden all-ones state ("failed initializing LFSR").
pub fn check_lfsr(job: &FioJob, seeds: &FioSeeds, region_len: u64) -> Result<(), String> {
    let uniform = matches!(job.random_distribution, RandomDistribution::Random | RandomDistribution::Zoned | RandomDistribution::ZonedAbs);
    let lfsr = job.rw.is_random() && job.random_generator == RandomGenerator::Lfsr && uniform;
    if lfsr && FioLfsr::lfsr_init(map_blocks(job, region_len), seeds.seeds[FIO_RAND_BLOCK_OFF]).is_none() {
        return Err(LFSR_FAILED.to_string());
    }
    Ok(())
}

const LFSR_FAILED: &str = "fio: failed initializing LFSR (the seed is the LFSR's all-ones state): change randseed";

impl IoUGen {
    /// `td_fill_rand_seeds` + `init_random_map` for one job on a region of
    /// `region_len` bytes; `map` is whether to keep the random map (fio's
    /// `file_randommap`, unless the model caps it). `Err` where fio fails to
    /// start the job.
    pub fn new(job: &FioJob, seeds: &FioSeeds, region_len: u64, map: bool) -> Result<IoUGen, String> {
        let s = &seeds.seeds;
        let use64 = job.random_generator == RandomGenerator::Tausworthe64;
        let bsrange_state = bsrange_states(job, seeds);
        let blocks = map_blocks(job, region_len);
        let offset = Self::offset_gen(job, seeds, region_len, blocks, use64)?;
        let axmap = (map && matches!(offset, OffsetGen::Taus(_))).then(|| Axmap::axmap_new(blocks));
        let absolute = job.random_distribution == RandomDistribution::ZonedAbs;
        let zones = matches!(job.random_distribution, RandomDistribution::Zoned | RandomDistribution::ZonedAbs).then(|| Zones {
            absolute,
            zone_state: init_rand_seed(s[FIO_RAND_ZONE_OFF], false),
            index: [Ddir::Read, Ddir::Write, Ddir::Trim].map(|d| td_zone_gen_index(job.zone_split.get(d))),
        });
        Ok(IoUGen {
            bsrange_state,
            rwmix_state: init_rand_seed(s[FIO_RAND_MIX_OFF], false),
            offset,
            zones,
            axmap,
            rwmix_ddir: Ddir::Read,
            rwmix_issues: 0,
            io_issues: [0; 3],
            seeds: seeds.clone(),
            region_len,
        })
    }

    /// A new pass over the region after the last one ended (fio's
    /// `keep_running` loop while `io_size` is not done): `clear_io_state`
    /// resets the read/write share count, reopening the file resets it
    /// (`fio_file_reset`), and a repeatable job (`randrepeat` without
    /// `randseed`) re-seeds its generators (`td_fill_rand_seeds`), so the
    /// pass repeats the first one's sequence.
    pub fn new_pass(&mut self, job: &FioJob) {
        self.rwmix_issues = 0;
        self.fio_file_reset();
        if !self.seeds.rand_repeatable {
            return;
        }
        let s = &self.seeds.seeds;
        self.bsrange_state = bsrange_states(job, &self.seeds);
        self.rwmix_state = init_rand_seed(s[FIO_RAND_MIX_OFF], false);
        if let OffsetGen::Taus(state) = &mut self.offset {
            *state = init_rand_seed(s[FIO_RAND_BLOCK_OFF], job.random_generator == RandomGenerator::Tausworthe64 || self.seeds.offset_use64);
        }
        if let Some(z) = &mut self.zones {
            z.zone_state = init_rand_seed(s[FIO_RAND_ZONE_OFF], false);
        }
    }

    /// `__init_rand_distribution` (ranges of the smaller of the read and
    /// write minimum block sizes), else the LFSR or `td->random_state`.
    fn offset_gen(job: &FioJob, seeds: &FioSeeds, region_len: u64, blocks: u64, use64: bool) -> Result<OffsetGen, String> {
        let range_size = job.min_bs(Ddir::Read).min(job.min_bs(Ddir::Write)).max(1);
        let nranges = region_len.div_ceil(range_size).max(1);
        let seed = seeds.dist_seed;
        Ok(match job.random_distribution {
            RandomDistribution::Zipf { theta, center } => OffsetGen::Zipf(ZipfState::zipf_init(nranges, theta, center, seed)),
            RandomDistribution::Pareto { h, center } => OffsetGen::Pareto(ZipfState::pareto_init(nranges, h, center, seed)),
            RandomDistribution::Normal { dev, center } => OffsetGen::Gauss(GaussState::gauss_init(nranges, dev, center, seed)),
            _ if job.random_generator == RandomGenerator::Lfsr => {
                let seed = seeds.seeds[FIO_RAND_BLOCK_OFF];
                OffsetGen::Lfsr(FioLfsr::lfsr_init(blocks, seed).ok_or(LFSR_FAILED)?)
            }
            RandomDistribution::Random | RandomDistribution::Zoned | RandomDistribution::ZonedAbs => OffsetGen::Taus(init_rand_seed(seeds.seeds[FIO_RAND_BLOCK_OFF], use64 || seeds.offset_use64)),
        })
    }

    /// `get_rw_ddir` for `rw`/`randrw`: a new direction is drawn (1–100
    /// against `rwmixread`) once the current one has issued its share.
    pub fn get_rw_ddir(&mut self, rwmix: [u32; 2]) -> Ddir {
        if self.io_issues[self.rwmix_ddir as usize] >= self.rwmix_issues {
            let v = self.rwmix_state.rand_between(1, 100);
            let ddir = if v <= rwmix[0] as u64 { Ddir::Read } else { Ddir::Write };
            if ddir != self.rwmix_ddir {
                // set_rwmix_bytes, from the direction being left.
                let diff = rwmix[1 - self.rwmix_ddir as usize] as u64;
                self.rwmix_issues = self.io_issues[self.rwmix_ddir as usize] * diff / 100;
            }
            self.rwmix_ddir = ddir;
        }
        self.rwmix_ddir
    }

    /// One I/O of `ddir` was issued (`td->io_issues`).
    pub fn issued(&mut self, ddir: Ddir) {
        self.io_issues[ddir as usize] += 1;
    }

    /// `last_block`: how many `ba` blocks a random offset may start at.
    fn last_block(&self, job: &FioJob, ddir: Ddir) -> u64 {
        let (min_bs, ba) = (job.min_bs(ddir), job.block_align(ddir).max(1));
        let max_size = if min_bs > ba { self.region_len.saturating_sub(min_bs - ba) } else { self.region_len };
        max_size / ba
    }

    /// `get_next_rand_offset`: a block index in `ba` units, `None` when the
    /// pass is over (the map or the LFSR is used up).
    #[inline]
    pub fn get_next_rand_offset(&mut self, job: &FioJob, ddir: Ddir) -> Option<u64> {
        let lastb = self.last_block(job, ddir);
        match &mut self.offset {
            OffsetGen::Zipf(z) => return Some(z.zipf_next()),
            OffsetGen::Pareto(z) => return Some(z.pareto_next()),
            OffsetGen::Gauss(g) => return Some(g.gauss_next()),
            _ if lastb == 0 => return None,
            _ => {}
        }
        if self.zones.as_ref().is_some_and(|z| !z.index[ddir as usize].is_empty()) {
            return self.get_next_rand_offset_zoned(job, ddir, lastb);
        }
        self.__get_next_rand_offset(lastb)
    }

    /// `__get_next_rand_offset_zoned` / `_zoned_abs`: a percentile picks the
    /// zone, then a uniform block inside it.
    fn get_next_rand_offset_zoned(&mut self, job: &FioJob, ddir: Ddir, lastb: u64) -> Option<u64> {
        let zones = self.zones.as_mut().expect("zoned");
        let v = zones.zone_state.rand_between(1, 100);
        let zsi = zones.index[ddir as usize][v as usize - 1];
        if zones.absolute {
            let ba = job.block_align(ddir).max(1);
            let (stotal, send) = (zsi.size_prev / ba, zsi.size / ba);
            // fio: "zoned_abs sizes exceed file size", the job ends.
            if send > lastb {
                return None;
            }
            return Some(self.__get_next_rand_offset(send - stotal)? + stotal);
        }
        let offset = zsi.size_perc_prev * lastb / 100;
        let lastb = lastb * (zsi.size_perc - zsi.size_perc_prev) / 100;
        Some(self.__get_next_rand_offset(lastb)? + offset)
    }

    /// `__get_next_rand_offset`: `lastb × r / (rand_max + 1)` (or the
    /// LFSR's next block), then the next free block when the map says it is
    /// used.
    #[inline]
    fn __get_next_rand_offset(&mut self, lastb: u64) -> Option<u64> {
        let b = match &mut self.offset {
            OffsetGen::Lfsr(l) => l.lfsr_next()?,
            OffsetGen::Taus(state) => {
                let r = state.__rand();
                (lastb as f64 * state.unit(r)) as u64
            }
            _ => unreachable!("non-uniform distributions draw their own ranges"),
        };
        match &self.axmap {
            Some(map) if map.axmap_isset(b) => map.axmap_next_free(b),
            _ => Some(b),
        }
    }

    /// `fio_file_reset`: a new pass (time_based jobs) — the map cleared,
    /// the LFSR restarted from its seed.
    pub fn fio_file_reset(&mut self) {
        if let Some(map) = &mut self.axmap {
            map.axmap_reset();
        }
        if let OffsetGen::Lfsr(l) = &mut self.offset {
            l.lfsr_reset(self.seeds.seeds[FIO_RAND_BLOCK_OFF]);
        }
    }

    /// `get_next_buflen` at region offset `off`; 0 when not even the
    /// smallest size fits before the region's end.
    pub fn get_next_buflen(&mut self, job: &FioJob, ddir: Ddir, off: u64) -> u64 {
        let (minbs, maxbs) = (job.min_bs(ddir), job.max_bs(ddir));
        if minbs == maxbs {
            return minbs;
        }
        let fits = |len: u64| off + len <= self.region_len;
        if !fits(minbs) {
            return 0;
        }
        let state = &mut self.bsrange_state[ddir as usize];
        let frand_max = state.rand_max();
        for _ in 0..MAX_BUFLEN_TRIES {
            let r = state.__rand();
            let mut buflen = match job.block_size(ddir) {
                BlockSize::Split(entries) => {
                    let (mut perc, mut len) = (0u64, 0u64);
                    for e in entries.iter().filter(|e| e.perc > 0) {
                        len = e.bs;
                        perc += e.perc as u64;
                        if r / perc <= frand_max / 100 && fits(len) {
                            break;
                        }
                    }
                    len
                }
                _ => minbs + (maxbs as f64 * state.unit(r)) as u64,
            };
            if minbs.is_power_of_two() {
                buflen &= !(minbs - 1);
            } else {
                buflen -= buflen % minbs;
            }
            buflen = buflen.min(maxbs);
            if fits(buflen) {
                return buflen;
            }
        }
        0
    }

    /// `mark_random_map`: mark the I/O's blocks (`min_bs` units) used; an
    /// I/O that runs into a used block is cut short there.
    pub fn mark_random_map(&mut self, job: &FioJob, ddir: Ddir, off: u64, buflen: u64) -> u64 {
        let Some(map) = &mut self.axmap else { return buflen };
        let min_bs = job.min_bs(ddir).max(1);
        let set = map.axmap_set_nr(off / min_bs, buflen.div_ceil(min_bs));
        if set > 0 && set * min_bs < buflen {
            set * min_bs
        } else {
            buflen
        }
    }

    /// Whether offsets go through the random map.
    pub fn has_map(&self) -> bool {
        self.axmap.is_some()
    }
}
