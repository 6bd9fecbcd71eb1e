//! `struct bio`: op and flags, the sector/size iterator, and multipage bvecs
//! over physical addresses (include/linux/blk_types.h, block/bio.c).
//!
//! Memory is modelled as physical addresses: a [`Bvec`] is `(phys, len)` and
//! its `bv_offset` is `phys % PAGE_SIZE`. Clones get the same bvec table
//! ([`BioVecs`]), as `bio_alloc_clone` shares `bi_io_vec`, and splitting only
//! moves the [`BvecIter`].

use std::ops::Deref;
use std::sync::Arc;

use crate::genhd::DevId;

/// Bytes per sector.
pub const SECTOR_SIZE: u64 = 512;
pub const SECTOR_SHIFT: u32 = 9;
pub const PAGE_SIZE: u64 = 4096;
/// `BIO_MAX_VECS`: most bvecs one bio holds.
pub const BIO_MAX_VECS: usize = 256;

/// `enum req_op` (values as in 6.1 and 7.2). The default is the zero
/// value, `REQ_OP_READ`, as in a zeroed `struct bio`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    #[default]
    Read,
    Write,
    Flush,
    Discard,
    SecureErase,
    ZoneAppend,
    WriteZeroes,
}

impl Op {
    /// The kernel's numeric `REQ_OP_*` value.
    pub fn value(self) -> u32 {
        match self {
            Op::Read => 0,
            Op::Write => 1,
            Op::Flush => 2,
            Op::Discard => 3,
            Op::SecureErase => 5,
            Op::ZoneAppend => 7,
            Op::WriteZeroes => 9,
        }
    }

    /// `op_is_write`: the low bit of the op.
    pub fn is_write(self) -> bool {
        self.value() & 1 == 1
    }

    /// `op_is_discard` as diskstats groups it (discard and secure erase).
    pub fn is_discard(self) -> bool {
        matches!(self, Op::Discard | Op::SecureErase)
    }

    /// Ops that carry data pages (everything else is a range or empty).
    pub fn has_data(self) -> bool {
        matches!(self, Op::Read | Op::Write | Op::ZoneAppend)
    }

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Flush => "flush",
            Op::Discard => "discard",
            Op::SecureErase => "secure_erase",
            Op::ZoneAppend => "zone_append",
            Op::WriteZeroes => "write_zeroes",
        }
    }

    pub fn from_name(s: &str) -> Option<Op> {
        Some(match s {
            "read" => Op::Read,
            "write" => Op::Write,
            "flush" => Op::Flush,
            "discard" => Op::Discard,
            "secure_erase" => Op::SecureErase,
            "zone_append" => Op::ZoneAppend,
            "write_zeroes" => Op::WriteZeroes,
            _ => return None,
        })
    }

    pub const NAMES: &'static [&'static str] =
        &["read", "write", "flush", "discard", "secure_erase", "zone_append", "write_zeroes"];
}

/// `REQ_*` flag bits kept on `bi_opf` above the op.
pub mod req {
    pub const SYNC: u32 = 1 << 0;
    pub const META: u32 = 1 << 1;
    pub const PRIO: u32 = 1 << 2;
    pub const FUA: u32 = 1 << 3;
    pub const PREFLUSH: u32 = 1 << 4;
    pub const RAHEAD: u32 = 1 << 5;
    pub const NOMERGE: u32 = 1 << 6;
    pub const NOWAIT: u32 = 1 << 7;
    pub const ATOMIC: u32 = 1 << 8;
    pub const POLLED: u32 = 1 << 9;
    pub const NOUNMAP: u32 = 1 << 10;
    /// `REQ_IDLE`: O_DIRECT writes carry it with `REQ_SYNC`
    /// (`dio_bio_write_op`), which is how writeback throttling tells them
    /// from buffered writeback (`wbt_should_throttle`). Traces do not show it.
    pub const IDLE: u32 = 1 << 11;
    /// `REQ_BACKGROUND`: background or periodic writeback
    /// (`wbc_to_write_flags`); wbt gives it the background limit.
    pub const BACKGROUND: u32 = 1 << 12;
    /// `REQ_SWAP`: a swap write (`swap_writepage`).
    pub const SWAP: u32 = 1 << 13;
    /// `REQ_NOMERGE_FLAGS`: a bio with any of these never merges.
    pub const NOMERGE_FLAGS: u32 = NOMERGE | PREFLUSH | FUA;

    pub const NAMES: &[(&str, u32)] = &[
        ("sync", SYNC),
        ("meta", META),
        ("prio", PRIO),
        ("fua", FUA),
        ("preflush", PREFLUSH),
        ("rahead", RAHEAD),
        ("nomerge", NOMERGE),
        ("nowait", NOWAIT),
        ("atomic", ATOMIC),
        ("polled", POLLED),
        ("nounmap", NOUNMAP),
        ("idle", IDLE),
        ("background", BACKGROUND),
        ("swap", SWAP),
    ];

    pub fn from_name(s: &str) -> Option<u32> {
        NAMES.iter().find(|(n, _)| *n == s).map(|(_, v)| *v)
    }

    /// Not a `REQ_*` flag: the model's stand-in for a set
    /// `bio->bi_crypt_context` (`bio_has_crypt_ctx`), kept in the flags
    /// word so testing for it costs one bit test. It is not in [`NAMES`],
    /// never printed in RWBS, and cleared once the blk-crypto fallback has
    /// encrypted the data ([`crate::crypto`]).
    pub const CRYPT_CTX: u32 = 1 << 31;
    /// Not a `REQ_*` flag either: the bio is a blk-crypto fallback bounce
    /// bio made on a request-based disk, standing for sectors its plaintext
    /// bio already brought to that disk's 'Q', so the conservation check
    /// does not count them again when a piece of it is queued. Never printed.
    pub const BOUNCE: u32 = 1 << 30;
    /// Not a `REQ_*` flag: `BIO_ZONE_WRITE_PLUGGING` on a bio, and on the
    /// request made from it `RQF_ZONE_WRITE_PLUGGING` (a request's flags
    /// start as its first bio's): the write goes through its zone's write
    /// plug ([`crate::zoned`]). Bios merged into such a request later are
    /// not marked (the model never looks at them again). Never printed.
    pub const ZONE_WPLUG: u32 = 1 << 29;
    /// Model-only: when this bio's last completion reference drops, its end
    /// waits for its driver ([`crate::submit::BioDriver::bio_deferred_end`]):
    /// dm-crypt's read io, ended once decrypted. Never printed.
    pub const DEFER_END: u32 = 1 << 28;
}

/// One (possibly multipage) `struct bio_vec`, as a physical range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bvec {
    pub phys: u64,
    pub len: u32,
}

impl Bvec {
    /// `bv_offset`: offset of the start inside its first page.
    pub fn offset(&self) -> u32 {
        (self.phys % PAGE_SIZE) as u32
    }

    pub fn end(&self) -> u64 {
        self.phys + self.len as u64
    }
}

/// `bi_io_vec`: a bio's bvec table, never changed once the bio is built.
/// One bvec lives in the bio itself (`bi_inline_vecs`; the kernel has
/// room for `BIO_INLINE_VECS`, 4): that is nearly every bio the sources
/// build (a physically contiguous buffer is one multipage bvec), so
/// building one allocates nothing and copying a bio stays cheap. A longer
/// table is allocated once (`bvec_alloc`) and shared. A clone or split
/// front gets the same table: a copy of the inline bvec (the same pages),
/// the shared one itself.
#[derive(Clone, Debug, Default)]
pub enum BioVecs {
    /// No pages (discards, flushes, write zeroes).
    #[default]
    None,
    Inline(Bvec),
    Shared(Arc<[Bvec]>),
}

impl BioVecs {
    pub fn new(bvecs: &[Bvec]) -> BioVecs {
        match bvecs {
            [] => BioVecs::None,
            [bv] => BioVecs::Inline(*bv),
            _ => BioVecs::Shared(Arc::from(bvecs)),
        }
    }

    /// Do both tables hold the same pages, as a clone's and its original's do?
    /// (Inline: the conservation check asks this of every piece a disk
    /// queues, nearly always of two inline bvecs.)
    #[inline(always)]
    pub fn same_pages(&self, other: &BioVecs) -> bool {
        match (self, other) {
            (BioVecs::Inline(a), BioVecs::Inline(b)) => a == b,
            _ => self.same_pages_table(other),
        }
    }

    /// [`Self::same_pages`] of any other pair: the same shared table, or
    /// equal bvecs.
    #[inline(never)]
    fn same_pages_table(&self, other: &BioVecs) -> bool {
        match (self, other) {
            (BioVecs::Shared(a), BioVecs::Shared(b)) if Arc::ptr_eq(a, b) => true,
            _ => self[..] == other[..],
        }
    }
}

impl Deref for BioVecs {
    type Target = [Bvec];

    fn deref(&self) -> &[Bvec] {
        match self {
            BioVecs::None => &[],
            BioVecs::Inline(bv) => std::slice::from_ref(bv),
            BioVecs::Shared(v) => v,
        }
    }
}

/// `struct bvec_iter`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BvecIter {
    pub sector: u64,
    /// Remaining bytes (`bi_size`, a u32 in the kernel).
    pub size: u32,
    pub idx: u32,
    /// Bytes already consumed inside `bvecs[idx]`.
    pub bvec_done: u32,
}

pub type BioId = u32;

/// `struct bio`. Chain and clone relations are kept as a parent link plus a
/// `__bi_remaining` count, which is all completion ordering needs.
#[derive(Debug)]
pub struct Bio {
    pub dev: DevId,
    pub op: Op,
    pub flags: u32,
    pub iter: BvecIter,
    pub bvecs: BioVecs,
    /// `BIO_TRACE_COMPLETION`: set once 'Q' fired for this bio object.
    pub traced: bool,
    /// `BIO_REMAPPED`: the partition remap already happened.
    pub remapped: bool,
    /// Completion target: the original for a clone, the remainder for a
    /// split front (`bio_chain`), none for a submitter's bio.
    pub parent: Option<BioId>,
    /// `__bi_remaining`: completions still needed before `bi_end_io` runs.
    pub remaining: u32,
    /// Inside a request (request-based disks complete per request, not per bio).
    pub in_request: bool,
    /// `bi_next`: the next bio of the request this one is in (the
    /// request's `bio` .. `biotail` chain), or of the `bio_list` it waits
    /// on (`current->bio_list`); `None` for the last, or on neither.
    pub bi_next: Option<BioId>,
    /// The submitting job; completion of a root bio is reported to it.
    pub owner: u32,
    /// The job's own tag for a root bio (which I/O unit it belongs to).
    pub cookie: u32,
    /// Bio-based accounting in progress ([`Bio::acct`]): the start time,
    /// and the sectors or [`NO_ACCT`]. Two plain fields rather than an
    /// `Option<(u64, u32)>` (24 bytes with its tag): the u32 packs with the
    /// other small fields and keeps the bio at 104 bytes, which every
    /// clone and split copies.
    pub acct_start: u64,
    pub acct_sectors: u32,
    /// `bi_status`: the first error this bio ended with or a chained child
    /// passed up (`bio_chain_endio`), as a negative errno; 0 for success.
    /// One byte, as `blk_status_t` is in the kernel.
    pub status: i8,
    /// `bi_blkg`: the cgroup the bio is charged to (1 + its index in the
    /// scenario's `[cgroups]`; 0 the root group). Clones and splits keep
    /// it (`bio_clone_blkg_association`).
    pub blkcg: u16,
    /// blk-throttle's bio flags ([`crate::rq_qos::throttle`]):
    /// `BIO_BPS_THROTTLED`, `BIO_TG_BPS_THROTTLED`.
    pub throtl: u8,
}

/// Field by field, so that `clone_from` copies into an existing bio in
/// place: clones and split fronts are copied straight into their arena
/// slot, where building a whole temporary and moving it stalls on store
/// forwarding.
impl Clone for Bio {
    fn clone(&self) -> Bio {
        let Bio { dev, op, flags, iter, ref bvecs, traced, remapped, parent, remaining, in_request, bi_next, owner, cookie, acct_start, acct_sectors, status, blkcg, throtl } = *self;
        Bio { dev, op, flags, iter, bvecs: bvecs.clone(), traced, remapped, parent, remaining, in_request, bi_next, owner, cookie, acct_start, acct_sectors, status, blkcg, throtl }
    }

    #[inline]
    fn clone_from(&mut self, src: &Bio) {
        let Bio { dev, op, flags, iter, ref bvecs, traced, remapped, parent, remaining, in_request, bi_next, owner, cookie, acct_start, acct_sectors, status, blkcg, throtl } = *src;
        self.bvecs.clone_from(bvecs);
        (self.dev, self.op, self.flags, self.iter, self.traced, self.remapped) = (dev, op, flags, iter, traced, remapped);
        (self.parent, self.remaining, self.in_request, self.bi_next) = (parent, remaining, in_request, bi_next);
        (self.owner, self.cookie, self.acct_start, self.acct_sectors, self.status) = (owner, cookie, acct_start, acct_sectors, status);
        (self.blkcg, self.throtl) = (blkcg, throtl);
    }
}

/// `acct_sectors` of a bio whose I/O is not being accounted (no bio has
/// this many sectors: `bi_size` is a byte count in a u32).
pub const NO_ACCT: u32 = u32::MAX;

impl Bio {
    /// `bio_alloc` + `bio_init`: a new bio of `size` bytes at `sector` over
    /// `bvecs`, on no list, chained to nothing, ended by one completion,
    /// neither traced nor accounted yet; it belongs to job 0 until the
    /// caller says otherwise (`Bio { owner, cookie, ..Bio::new(..) }`).
    pub fn new(dev: DevId, op: Op, flags: u32, sector: u64, size: u32, bvecs: BioVecs) -> Bio {
        Bio {
            dev,
            op,
            flags,
            iter: BvecIter { sector, size, idx: 0, bvec_done: 0 },
            bvecs,
            traced: false,
            remapped: false,
            parent: None,
            remaining: 1,
            in_request: false,
            bi_next: None,
            owner: 0,
            cookie: 0,
            acct_start: 0,
            acct_sectors: NO_ACCT,
            status: 0,
            blkcg: 0,
            throtl: 0,
        }
    }

    /// For unit tests: a write of `flags` at sector 0 of device 0 over
    /// `(phys, len)` pieces, already traced at 'Q'.
    #[cfg(test)]
    pub fn test_write(flags: u32, pieces: &[(u64, u32)]) -> Bio {
        let size = pieces.iter().map(|p| p.1).sum();
        let bvecs: Vec<Bvec> = pieces.iter().map(|&(phys, len)| Bvec { phys, len }).collect();
        Bio { traced: true, ..Bio::new(0, Op::Write, flags, 0, size, BioVecs::new(&bvecs)) }
    }

    /// Bio-based accounting in progress: (start time, sectors).
    pub fn acct(&self) -> Option<(u64, u32)> {
        (self.acct_sectors != NO_ACCT).then_some((self.acct_start, self.acct_sectors))
    }

    pub fn sectors(&self) -> u32 {
        self.iter.size >> SECTOR_SHIFT
    }

    pub fn end_sector(&self) -> u64 {
        self.iter.sector + self.sectors() as u64
    }

    /// Walk the multipage bvecs from the iterator (`bio_for_each_bvec`).
    /// The table is looked up once, not once per bvec.
    #[inline(always)]
    pub fn for_each_bvec(&self, mut f: impl FnMut(Bvec) -> bool) {
        let Some(rest) = self.bvecs.get(self.iter.idx as usize..) else { return };
        let mut left = self.iter.size;
        let mut done = self.iter.bvec_done;
        for bv in rest {
            if left == 0 {
                return;
            }
            let len = (bv.len - done).min(left);
            if !f(Bvec { phys: bv.phys + done as u64, len }) {
                return;
            }
            left -= len;
            done = 0;
        }
    }

    /// First bvec at the iterator (`bio_iter_iovec` on a multipage walk).
    pub fn first_bvec(&self) -> Option<Bvec> {
        let mut out = None;
        self.for_each_bvec(|bv| {
            out = Some(bv);
            false
        });
        out
    }

    /// Last bvec inside the iterator's range (`bio_get_last_bvec`).
    pub fn last_bvec(&self) -> Option<Bvec> {
        let mut out = None;
        self.for_each_bvec(|bv| {
            out = Some(bv);
            true
        });
        out
    }
}

/// Advance an iterator by `bytes` (`bvec_iter_advance`). Data-less ops only
/// move the sector and size.
pub fn bvec_iter_advance(bvecs: &[Bvec], iter: &mut BvecIter, bytes: u32) {
    iter.sector += (bytes >> SECTOR_SHIFT) as u64;
    iter.size -= bytes;
    if bvecs.is_empty() {
        return;
    }
    let mut left = bytes;
    while left > 0 {
        let bv_left = bvecs[iter.idx as usize].len - iter.bvec_done;
        if left < bv_left {
            iter.bvec_done += left;
            return;
        }
        left -= bv_left;
        iter.idx += 1;
        iter.bvec_done = 0;
    }
}

/// Builds a bvec table the way `bio_add_page` does: a range that starts
/// exactly where the last bvec ends physically extends it; anything else
/// takes a new bvec, up to `max_vecs`.
#[derive(Debug, Default)]
pub struct BvecBuilder {
    pub bvecs: Vec<Bvec>,
    pub size: u64,
    max_vecs: usize,
}

impl BvecBuilder {
    pub fn new(max_vecs: usize) -> Self {
        BvecBuilder { bvecs: Vec::new(), size: 0, max_vecs }
    }

    /// `bio_add_page`: false when the bio is full (no merge and no free vec,
    /// or `bi_size` would pass `UINT_MAX`).
    pub fn add(&mut self, phys: u64, len: u32) -> bool {
        if self.size + len as u64 > u32::MAX as u64 {
            return false;
        }
        if let Some(last) = self.bvecs.last_mut() {
            if last.end() == phys {
                last.len += len;
                self.size += len as u64;
                return true;
            }
        }
        if self.bvecs.len() >= self.max_vecs {
            return false;
        }
        self.bvecs.push(Bvec { phys, len });
        self.size += len as u64;
        true
    }
}
