//! An explicit list of bios: each entry is one submission, built with
//! `bio_add_page` semantics (physically contiguous pieces share a bvec). An
//! entry may repeat, each time `stride` sectors further (and its buffer as
//! far further in memory), expanded lazily so memory stays bounded. A data
//! write may be submitted as the O_DIRECT write(2) that stands for it would
//! be ([`WritePlug`]).

use super::dio::{dio_simple_wait_flags, DIO_WRITE_FLAGS};
use super::BioSpec;
use super::{IoUnit, Source};
use crate::bio::{req, Bvec, Op, PAGE_SIZE, SECTOR_SIZE};
use crate::profile::Behaviour;

pub struct BioList {
    /// (bio, times left, stride in sectors), last entry first: the entry
    /// under way is the vector's last, one load away where a ring's front
    /// costs its wrap-around arithmetic on every unit.
    pending: Vec<(BioSpec, u64, u64)>,
    plug: bool,
    /// Submissions in all (for progress).
    total: u64,
    done: u64,
    /// The bio lists of units handed back ([`Source::unit_done`]), refilled
    /// for the next units [`Source::next_unit`] builds (the engine has its
    /// lists refilled in place instead, [`Source::next_unit_into`]).
    spare: Vec<Vec<BioSpec>>,
    write_plug: WritePlug,
    /// The entry under way is the one the last unit came from.
    like: bool,
}

/// Whether a data write is submitted as write(2) submits it on a kernel
/// whose `blkdev_write_iter` plugs (`blkdev_write_plug`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WritePlug {
    /// No plug of its own (6.5+).
    #[default]
    None,
    /// In a plug finished after the call (asynchronous: an AIO iocb).
    Finished,
    /// In a plug the task sleeps in (a synchronous `pwritev2`): flushed
    /// from the scheduler.
    Sleeps,
}

/// The `REQ_*` flags the system call an entry stands for gives its bio
/// (the entry's `syscall` flag), under `beh`'s rules; `op` and `flags` are
/// the entry's as read (a flush is an empty `REQ_PREFLUSH` write), `iodepth`
/// the workload's:
///
/// * a read at `iodepth = 1` is a synchronous O_DIRECT `preadv2`: what its
///   wait adds ([`dio_simple_wait_flags`]: `REQ_SYNC` from 5.16, none on
///   5.10); above it an AIO read, which adds nothing;
/// * a data write is `pwritev2`/an AIO write: `REQ_SYNC | REQ_IDLE`
///   (`dio_bio_write_op`);
/// * a flush (`fsync`, `blkdev_issue_flush`), a discard, secure erase or
///   write-zeroes (`BLKDISCARD`, `BLKSECDISCARD`, `BLKZEROOUT`) ends in
///   `submit_bio_wait`: `REQ_SYNC`, and `BLKZEROOUT` passes
///   `BLKDEV_ZERO_NOUNMAP` (`REQ_NOUNMAP`).
pub fn syscall_flags(op: Op, flags: u32, size: u32, iodepth: u32, beh: &Behaviour) -> u32 {
    match op {
        Op::Read if iodepth == 1 => dio_simple_wait_flags((size as u64).div_ceil(PAGE_SIZE), beh.dio_simple_sync),
        Op::Read => 0,
        Op::Write if flags & req::PREFLUSH == 0 => DIO_WRITE_FLAGS,
        Op::WriteZeroes => req::SYNC | req::NOUNMAP,
        _ => req::SYNC,
    }
}

impl BioList {
    /// `plug`: each submission runs inside a plug.
    pub fn new(mut bios: Vec<(BioSpec, u64, u64)>, plug: bool) -> Self {
        let total = bios.iter().map(|b| b.1).sum();
        bios.reverse();
        BioList { pending: bios, plug, total, done: 0, spare: Vec::new(), write_plug: WritePlug::None, like: false }
    }

    /// Data writes go in a plug of their own as `write_plug` says.
    pub fn with_write_plug(mut self, write_plug: WritePlug) -> Self {
        self.write_plug = write_plug;
        self
    }
}

/// `spec` written over the first of `bios`, as its only bio.
#[inline(always)]
fn refill(bios: &mut Vec<BioSpec>, spec: &BioSpec) {
    bios.truncate(1);
    match bios.first_mut() {
        Some(b) => b.clone_from(spec),
        None => bios.push(spec.clone()),
    }
}

/// `spec` moved `stride` sectors on, and its buffer as far in memory.
#[inline(always)]
fn advance(spec: &mut BioSpec, stride: u64) {
    spec.sector += stride;
    let step = stride * SECTOR_SIZE;
    match &mut spec.bvecs[..] {
        [bv] => bv.phys += step,
        bvecs => bvecs.iter_mut().for_each(|bv| bv.phys += step),
    }
}

impl Source for BioList {
    fn next_unit(&mut self) -> Option<IoUnit> {
        let mut bios = self.spare.pop().unwrap_or_default();
        let unit = self.next_unit_into(0, &mut bios)?;
        Some(IoUnit { bios, ..unit })
    }

    /// The unit's one bio written over the first of `bios` (a repeated
    /// entry's bios all have as many bvecs), so a long repeat allocates
    /// nothing and no list changes hands.
    fn next_unit_into(&mut self, _now: u64, bios: &mut Vec<BioSpec>) -> Option<IoUnit> {
        let (spec, left, stride) = self.pending.last_mut()?;
        refill(bios, spec);
        let write_plug = if spec.op == Op::Write && spec.size > 0 { self.write_plug } else { WritePlug::None };
        *left -= 1;
        self.done += 1;
        // The entry's next units are like this one.
        self.like = *left > 0;
        if *left == 0 {
            self.pending.pop();
        } else {
            advance(spec, *stride);
        }
        let plug = self.plug || write_plug != WritePlug::None;
        Some(IoUnit { plug, sleeps_in_plug: write_plug == WritePlug::Sleeps, ..IoUnit::default() })
    }

    /// The rest of the entry the last unit came from (its units differ
    /// only in their bios).
    fn next_units_like(&mut self, _now: u64, lists: &mut [Vec<BioSpec>]) -> usize {
        if !self.like {
            return 0;
        }
        let Some((spec, left, stride)) = self.pending.last_mut() else { return 0 };
        let n = (*left).min(lists.len() as u64);
        match spec.bvecs[..] {
            // One bvec (nearly every entry): the run's place kept in locals
            // and each list that already holds a bio of one bvec (every list
            // after its first unit) written over field by field, where the
            // spec's fields were read and moved on in memory for every unit.
            [bv] => {
                let (dev, op, flags, size, step) = (spec.dev, spec.op, spec.flags, spec.size, *stride * SECTOR_SIZE);
                let (mut sector, mut phys) = (spec.sector, bv.phys);
                for bios in &mut lists[..n as usize] {
                    match &mut bios[..] {
                        [b] if b.bvecs.len() == 1 => {
                            (b.dev, b.op, b.flags, b.sector, b.size) = (dev, op, flags, sector, size);
                            b.bvecs[0] = Bvec { phys, ..bv };
                        }
                        _ => {
                            (spec.sector, spec.bvecs[0].phys) = (sector, phys);
                            refill(bios, spec);
                        }
                    }
                    (sector, phys) = (sector + *stride, phys + step);
                }
                (spec.sector, spec.bvecs[0].phys) = (sector, phys);
            }
            _ => {
                for bios in &mut lists[..n as usize] {
                    refill(bios, spec);
                    advance(spec, *stride);
                }
            }
        }
        *left -= n;
        self.done += n;
        if *left == 0 {
            self.pending.pop();
            self.like = false;
        }
        n as usize
    }

    fn unit_done(&mut self, bios: Vec<BioSpec>) {
        self.spare.push(bios);
    }

    fn progress(&self, _now: u64) -> Option<f64> {
        Some(super::fraction(self.done, self.total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bio::Bvec;

    fn spec(op: Op, size: u32) -> BioSpec {
        let bvecs = if size > 0 { vec![Bvec { phys: 1 << 32, len: size }] } else { Vec::new() };
        BioSpec { dev: 0, op, flags: 0, sector: 0, bvecs, size }
    }

    #[test]
    fn runs_of_like_units_are_the_units_one_by_one() {
        // Five 4 KiB writes 8 sectors (4 KiB) apart, then two reads: taken
        // as the first unit of an entry and runs of up to three like it,
        // into new lists (the first run) and lists written over (the
        // second), they carry the bios handed out one at a time: sectors
        // 0, 8, .., 32 with pages 4 KiB apart, then 0 and 8. A run ends
        // with its entry.
        let bios = vec![(spec(Op::Write, 4096), 5, 8), (spec(Op::Read, 4096), 2, 8)];
        let mut one = BioList::new(bios.clone(), true);
        let want: Vec<Vec<BioSpec>> = std::iter::from_fn(|| one.next_unit()).map(|u| u.bios).collect();
        assert_eq!(want[4][0].sector, 32);
        assert_eq!(want[4][0].bvecs[0].phys, (1 << 32) + 4 * 4096);
        let mut l = BioList::new(bios, true);
        let (mut first, mut lists, mut got, mut runs) = (Vec::new(), vec![Vec::new(); 3], Vec::new(), Vec::new());
        while l.next_unit_into(0, &mut first).is_some() {
            got.push(first.clone());
            loop {
                let k = l.next_units_like(0, &mut lists);
                runs.push(k);
                got.extend(lists[..k].iter().cloned());
                if k < lists.len() {
                    break;
                }
            }
        }
        assert_eq!(runs, [3, 1, 1]);
        assert_eq!(got, want);
    }

    #[test]
    fn data_writes_take_the_write_plug_and_nothing_else_does() {
        // A read, a 4 KiB write and an empty flush, under 6.1's
        // blkdev_write_iter plug at iodepth 1: only the write is plugged,
        // and its task sleeps in the plug (pwritev2 waits for the bio).
        let bios = vec![(spec(Op::Read, 4096), 1, 8), (spec(Op::Write, 4096), 1, 8), (spec(Op::Write, 0), 1, 0)];
        let mut l = BioList::new(bios.clone(), false).with_write_plug(WritePlug::Sleeps);
        let units: Vec<(bool, bool)> = std::iter::from_fn(|| l.next_unit()).map(|u| (u.plug, u.sleeps_in_plug)).collect();
        assert_eq!(units, [(false, false), (true, true), (false, false)]);
        // An AIO iocb's plug is finished after the call: no sleep in it.
        let mut l = BioList::new(bios, false).with_write_plug(WritePlug::Finished);
        l.next_unit();
        let u = l.next_unit().unwrap();
        assert!(u.plug && !u.sleeps_in_plug);
    }
}
