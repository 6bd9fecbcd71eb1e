//! Direct I/O on a block device (block/fops.c `blkdev_direct_IO`,
//! block/bio.c `bio_iov_iter_get_pages`) over a model of the user buffer's
//! physical pages.
//!
//! The buffer is a list of page frames ([`BufferLayout`]): page i+1 follows
//! page i physically unless a seeded coin with probability `fragmentation`
//! says otherwise, or the buffer is given as its physically contiguous
//! pieces (`buffer_segments`).
//! Bio size then follows from how many physically contiguous runs fit in
//! `BIO_MAX_VECS` multipage bvecs, exactly as the kernel fills them: pages
//! are pinned in batches of `max_vecs - vcnt`, each page extends the last
//! bvec when it continues it physically, and each batch is trimmed to the
//! logical block size.
//!
//! Two rules changed between versions ([`DioRules`]): whether a page joins
//! the previous bvec when it continues it physically (`dio_bvec_merge`:
//! 5.1–6.x do, 7.x merge only within a folio, and user memory is modelled
//! as order-0 folios, one page each), and Ed Tsai's proposal to trim each
//! bio but the last to a multiple of the queue's max I/O size
//! (`iov_align = max_io`, seed 003).

use crate::bio::{req, Bvec, BvecBuilder, Op, BIO_MAX_VECS, PAGE_SIZE};
use crate::genhd::DevId;
use crate::profile::{Behaviour, DioBvecMerge, IovAlign};

use super::rng::Rng;
use super::{BioSpec, IoUnit, UnitKind};

/// Where the first page of a user buffer sits physically (4 GiB).
const BUFFER_BASE_PFN: u64 = 0x10_0000;

/// How a user buffer's pages lie in physical memory.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferLayout {
    /// Each next page is physically discontiguous with this probability.
    Fragmented(f64),
    /// Physically contiguous pieces, in order.
    Segments(Vec<BufferSegment>),
}

/// One physically contiguous piece of a user buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferSegment {
    pub pages: u64,
    /// Frame of its first page; `None`: one frame after the previous piece
    /// ends (so the two are not contiguous), the first at 4 GiB.
    pub pfn: Option<u64>,
}

/// A user buffer: its offset inside the first page and the frame of each page.
#[derive(Clone, Debug, PartialEq)]
pub struct UserBuffer {
    pub offset: u32,
    pub pfns: Vec<u64>,
    /// For each page, the index of the first later page that does not
    /// continue it physically (so a run of pages is added in one step).
    run_end: Vec<u32>,
    /// Pages per folio of the buffer's memory: 1 (order-0 pages, the
    /// default) or 512 (2 MiB huge pages, naturally aligned).
    pub folio_pages: u64,
}

impl UserBuffer {
    /// `len` bytes starting `offset` bytes into a page; each next page is
    /// physically discontiguous with probability `fragmentation`.
    pub fn new(len: u64, offset: u32, fragmentation: f64, seed: u64) -> Self {
        let pages = (offset as u64 + len).div_ceil(PAGE_SIZE).max(1);
        let mut rng = Rng::new(seed);
        let mut pfns = Vec::with_capacity(pages as usize);
        let mut pfn = BUFFER_BASE_PFN;
        for i in 0..pages {
            if i > 0 {
                pfn = if fragmentation > 0.0 && rng.next_f64() < fragmentation {
                    // Jump well away, never onto the next frame.
                    pfn + 2 + rng.next_u64() % (1 << 20)
                } else {
                    pfn + 1
                };
            }
            pfns.push(pfn);
        }
        Self::from_pfns(offset, pfns)
    }

    /// A buffer of `len` bytes from `offset` laid out as `layout`. Given
    /// segments must hold at least the pages the buffer spans.
    pub fn with_layout(len: u64, offset: u32, layout: &BufferLayout, seed: u64) -> Self {
        match layout {
            BufferLayout::Fragmented(p) => Self::new(len, offset, *p, seed),
            BufferLayout::Segments(segs) => {
                let mut pfns = Vec::new();
                let mut next = BUFFER_BASE_PFN;
                for s in segs {
                    let first = s.pfn.unwrap_or(next);
                    pfns.extend(first..first + s.pages);
                    next = first + s.pages + 1;
                }
                Self::from_pfns(offset, pfns)
            }
        }
    }

    /// Bytes [pos, pos + len) of this buffer as a buffer of their own (one
    /// io_u's slice of fio's I/O buffer).
    pub fn slice(&self, pos: u64, len: u64) -> Self {
        let start = self.offset as u64 + pos;
        let first = (start / PAGE_SIZE) as usize;
        let pages = self.pages_spanned(pos, len) as usize;
        Self::from_pfns((start % PAGE_SIZE) as u32, self.pfns[first..first + pages].to_vec())
    }

    /// A buffer over given page frames.
    pub fn from_pfns(offset: u32, pfns: Vec<u64>) -> Self {
        let mut run_end = vec![pfns.len() as u32; pfns.len()];
        for i in (0..pfns.len().saturating_sub(1)).rev() {
            if pfns[i + 1] == pfns[i] + 1 {
                run_end[i] = run_end[i + 1];
            } else {
                run_end[i] = i as u32 + 1;
            }
        }
        UserBuffer { offset, pfns, run_end, folio_pages: 1 }
    }

    /// Bytes from `pos` to the end of its physically contiguous run.
    fn contiguous_from(&self, pos: u64) -> u64 {
        let at = self.offset as u64 + pos;
        let page = (at / PAGE_SIZE) as usize;
        self.run_end[page] as u64 * PAGE_SIZE - at
    }

    /// Physical address of byte `pos` of the buffer.
    pub fn phys(&self, pos: u64) -> u64 {
        let at = self.offset as u64 + pos;
        self.pfns[(at / PAGE_SIZE) as usize] * PAGE_SIZE + at % PAGE_SIZE
    }

    /// Pages spanned by bytes [pos, pos + len).
    pub fn pages_spanned(&self, pos: u64, len: u64) -> u64 {
        let start = self.offset as u64 + pos;
        (start + len).div_ceil(PAGE_SIZE) - start / PAGE_SIZE
    }
}

/// The per-version rules of direct I/O bio building, and the device values
/// they read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DioRules {
    /// The device's logical block size: each batch is trimmed to it.
    pub lbs: u32,
    pub merge: DioBvecMerge,
    /// `iov_align = max_io` or `max_io_v2`: the queue's max I/O size in
    /// bytes (`max_sectors` × 512); `None` when the rule is off.
    pub align: Option<u64>,
    /// `iov_align = max_io_v2`: the patch as posted limits each extraction
    /// instead of trimming the bio afterwards ([`v2_max_extract`]).
    pub align_v2: bool,
    /// `blkdev_write_plug`: `blkdev_write_iter` plugs the whole write(2).
    pub write_plug: bool,
    /// `dio_simple_sync`: the simple path's `submit_bio_wait` sets `REQ_SYNC`.
    pub simple_sync: bool,
}

impl DioRules {
    /// 5.1–6.x rules: physically contiguous pages merge, no alignment, no
    /// plug around writes.
    pub fn merging(lbs: u32) -> Self {
        DioRules { lbs, merge: DioBvecMerge::PhysContig, align: None, align_v2: false, write_plug: false, simple_sync: true }
    }

    /// The rules of `beh` for a device with these limits.
    pub fn new(beh: &Behaviour, lbs: u32, max_sectors: u32) -> Self {
        let align = (beh.iov_align != IovAlign::Off).then_some(max_sectors as u64 * 512);
        let align_v2 = beh.iov_align == IovAlign::MaxIoV2;
        DioRules { lbs, merge: beh.dio_bvec_merge, align, align_v2, write_plug: beh.blkdev_write_plug, simple_sync: beh.dio_simple_sync }
    }
}

/// The I/O unit of one O_DIRECT `pread`/`pwrite` (`sync`) or one AIO iocb:
/// [`blkdev_direct_io_with`]'s bios, plugged as the kernel plugs them. A
/// write inside `blkdev_write_iter`'s plug (`write_plug`, up to 6.4) that
/// is synchronous sleeps for its bios before the plug is finished, so the
/// scheduler flushes it (`blk_flush_plug(plug, true)`); `__blkdev_direct_IO`'s
/// own plug is then nested and does nothing.
///
/// An I/O whose bios cover less than `len` (a single-bio path under
/// `iov_align = max_io_v2`) completes short: the call returns the bytes its
/// bio moved. The rest is [`IoUnit::requeue`], the I/O fio submits again
/// for the residual once the short one completes.
#[allow(clippy::too_many_arguments)]
pub fn direct_io_unit(dev: DevId, op: Op, flags: u32, pos: u64, len: u64, buf: &UserBuffer, rules: &DioRules, sync: bool) -> IoUnit {
    let (bios, multi) = blkdev_direct_io_with(dev, op, flags, pos, len, buf, rules, sync);
    let write_plug = rules.write_plug && op.is_write();
    let got: u64 = bios.iter().map(|b| b.size as u64).sum();
    let requeue = (got > 0 && got < len).then(|| Box::new(direct_io_unit(dev, op, flags, pos + got, len - got, &buf.slice(got, len - got), rules, sync)));
    IoUnit { bios, plug: multi || write_plug, sleeps_in_plug: write_plug && sync, requeue, ..IoUnit::default() }
}

/// fio's accounting of a short I/O (`io_completed`, fio 3.22+): a
/// completion with a residual is not counted but requeued for the rest
/// (`requeue_io_u`), and the completion that ends it counts only its own
/// bytes (`xfer_buflen - resid`). So each piece of `unit`'s requeue chain
/// but the last counts nothing, and the last counts its own size as `kind`.
pub fn fio_counted(mut unit: IoUnit, kind: UnitKind) -> IoUnit {
    match unit.requeue.take() {
        Some(rest) => IoUnit { kind: UnitKind::Other, bytes: 0, requeue: Some(Box::new(fio_counted(*rest, kind))), ..unit },
        None => {
            let bytes = unit.bios.iter().map(|b| b.size as u64).sum();
            IoUnit { kind, bytes, ..unit }
        }
    }
}

/// `bio_iov_iter_get_pages` for bytes [pos, pos + len) of `buf` into a bio
/// of `max_vecs` vectors. Returns the builder (bvecs and size in bytes).
pub fn bio_iov_iter_get_pages(buf: &UserBuffer, pos: u64, len: u64, max_vecs: usize, lbs: u32) -> BvecBuilder {
    bio_iov_iter_get_pages_with(buf, pos, len, max_vecs, &DioRules::merging(lbs))
}

/// [`bio_iov_iter_get_pages`] under `rules`.
pub fn bio_iov_iter_get_pages_with(buf: &UserBuffer, pos: u64, len: u64, max_vecs: usize, rules: &DioRules) -> BvecBuilder {
    let lbs = rules.lbs;
    let mut bio = BvecBuilder::new(max_vecs);
    let mut cur = pos;
    let end = pos + len;
    while cur < end && bio.bvecs.len() < max_vecs {
        // Pin up to (max_vecs - vcnt) pages from the iterator.
        let entries = (max_vecs - bio.bvecs.len()) as u64;
        let in_first = PAGE_SIZE - (buf.offset as u64 + cur) % PAGE_SIZE;
        let reach = in_first + (entries - 1) * PAGE_SIZE;
        let max_extract = match rules.align {
            Some(max) if rules.align_v2 => v2_max_extract(max, bio.size),
            _ => u32::MAX as u64 - bio.size,
        };
        let limit = max_extract.min(end - cur);
        let mut batch = reach.min(limit);
        batch -= batch % lbs as u64;
        if batch == 0 {
            break;
        }
        match rules.merge {
            DioBvecMerge::PhysContig => add_runs(&mut bio, buf, cur, batch),
            DioBvecMerge::FolioOnly => add_pages(&mut bio, buf, cur, batch),
        }
        cur += batch;
    }
    bio
}

/// Adding a batch page by page merges each physically contiguous run into
/// one bvec (and onto the previous bvec when it continues it): add whole
/// runs at once.
fn add_runs(bio: &mut BvecBuilder, buf: &UserBuffer, from: u64, batch: u64) {
    let mut at = from;
    while at < from + batch {
        let piece = buf.contiguous_from(at).min(from + batch - at);
        let added = bio.add(buf.phys(at), piece as u32);
        debug_assert!(added, "a batch never needs more vecs than it pinned pages");
        at += piece;
    }
}

/// One bvec per folio: no page joins a bvec of another folio (order-0
/// memory: one bvec per page; a huge page: its contiguous pages together).
fn add_pages(bio: &mut BvecBuilder, buf: &UserBuffer, from: u64, batch: u64) {
    let folio = buf.folio_pages * PAGE_SIZE;
    let mut at = from;
    while at < from + batch {
        let to_folio_end = folio - buf.phys(at) % folio;
        let piece = to_folio_end.min(buf.contiguous_from(at)).min(from + batch - at);
        bio.bvecs.push(Bvec { phys: buf.phys(at), len: piece as u32 });
        bio.size += piece;
        at += piece;
    }
}

/// `iov_align = max_io_v2`: the posted patch's `max_extract` for a bio
/// holding `bi_size` bytes on a queue of `max` bytes: `max` for an empty
/// bio, else `max - bi_size & (max - 1)` in unsigned int, which C groups as
/// `(max - bi_size) & (max - 1)`. With a power-of-two `max` that is what
/// the bio lacks of `max`, and 0 once it holds `max`: `iov_iter_extract_pages`
/// then returns 0, `__bio_iov_iter_get_pages` -EFAULT, and
/// `bio_iov_iter_get_pages` ends the bio there (it has pages, so no error).
pub fn v2_max_extract(max: u64, bi_size: u64) -> u64 {
    if bi_size == 0 {
        return max;
    }
    let (max, size) = (max as u32, bi_size as u32);
    (max.wrapping_sub(size) & max.wrapping_sub(1)) as u64
}

/// `iov_align = max_io`: when more of the I/O follows, cut the bio down to
/// a multiple of the max I/O size (when it holds at least one); the pages
/// beyond go back to the iterator (`iov_iter_revert`) for the next bio.
fn align_to_max_io(mut bio: BvecBuilder, align: u64, more_follows: bool) -> BvecBuilder {
    let keep = bio.size / align * align;
    if !more_follows || keep == 0 || keep == bio.size {
        return bio;
    }
    let mut left = keep;
    let mut vecs = Vec::new();
    for v in bio.bvecs {
        if left == 0 {
            break;
        }
        let len = (v.len as u64).min(left);
        vecs.push(Bvec { phys: v.phys, len: len as u32 });
        left -= len;
    }
    bio.bvecs = vecs;
    bio.size = keep;
    bio
}

/// `dio_bio_write_op`: an O_DIRECT write is `REQ_SYNC | REQ_IDLE`, whatever
/// path submits it (traces show the `S`; `REQ_IDLE` keeps writeback
/// throttling off it).
pub const DIO_WRITE_FLAGS: u32 = req::SYNC | req::IDLE;

/// What how a synchronous O_DIRECT I/O of `nr_pages` pages waits adds to
/// its bios' flags. The simple path (`__blkdev_direct_IO_simple`, at most
/// `BIO_MAX_VECS` pages) submits its bio with `submit_bio_wait`, which sets
/// `REQ_SYNC` (block/bio.c, 5.16+), so such a read is "RS"; up to 5.15 it
/// called `submit_bio` and slept itself (`simple_sync` off: "R"). The
/// multi-bio path (`__blkdev_direct_IO`) waits on its own and adds nothing
/// (writes are `REQ_SYNC` already, [`DIO_WRITE_FLAGS`]).
pub fn dio_simple_wait_flags(nr_pages: u64, simple_sync: bool) -> u32 {
    if simple_sync && nr_pages <= BIO_MAX_VECS as u64 {
        req::SYNC
    } else {
        0
    }
}

/// The bios one `pread`/`pwrite` with O_DIRECT submits (`blkdev_direct_IO`)
/// under `rules`, and whether they are submitted inside a plug. `pos` is the
/// byte offset on the device, `buf` the user buffer (the I/O uses its first
/// `len` bytes).
#[allow(clippy::too_many_arguments)]
pub fn blkdev_direct_io_with(dev: DevId, op: Op, flags: u32, pos: u64, len: u64, buf: &UserBuffer, rules: &DioRules, sync: bool) -> (Vec<BioSpec>, bool) {
    let nr_pages = buf.pages_spanned(0, len).min(BIO_MAX_VECS as u64 + 1);
    let mut bios = Vec::new();
    let mut done = 0u64;
    // __blkdev_direct_IO_simple (one bio, no plug) for a synchronous I/O of
    // at most BIO_MAX_VECS pages; __blkdev_direct_IO (a plug around a loop of
    // bios) otherwise. Asynchronous small I/O is one bio, no plug of its own.
    let multi = nr_pages > BIO_MAX_VECS as u64;
    let flags = if sync { flags | dio_simple_wait_flags(nr_pages, rules.simple_sync) } else { flags };
    while done < len {
        let vecs = buf.pages_spanned(done, len - done).min(BIO_MAX_VECS as u64) as usize;
        let mut b = bio_iov_iter_get_pages_with(buf, done, len - done, vecs, rules);
        if let Some(align) = rules.align.filter(|_| !rules.align_v2) {
            let more_follows = multi && done + b.size < len;
            b = align_to_max_io(b, align, more_follows);
        }
        if b.size == 0 {
            break;
        }
        bios.push(BioSpec {
            dev,
            op,
            flags,
            sector: (pos + done) >> 9,
            size: b.size as u32,
            bvecs: b.bvecs,
        });
        done += b.size;
        if !multi {
            break;
        }
    }
    (bios, multi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `blkdev_direct_io_with` on device 0 under the merging rules of a
    /// disk with `lbs`-byte logical blocks.
    fn blkdev_direct_io(op: Op, flags: u32, pos: u64, len: u64, buf: &UserBuffer, lbs: u32, sync: bool) -> (Vec<BioSpec>, bool) {
        blkdev_direct_io_with(0, op, flags, pos, len, buf, &DioRules::merging(lbs), sync)
    }

    #[test]
    fn v2_max_extract_groups_as_c_does() {
        // max 16 KiB: an empty bio takes 16384; holding 4096,
        // (16384 - 4096) & 16383 = 12288; holding 16384, 0.
        assert_eq!(v2_max_extract(16384, 0), 16384);
        assert_eq!(v2_max_extract(16384, 4096), 12288);
        assert_eq!(v2_max_extract(16384, 16384), 0);
        // max 1280 KiB (0x140000, not a power of two) holding 0x41000:
        // 0x140000 - 0x41000 = 0xFF000, & 0x13FFFF = 0x3F000 = 258,048, not
        // the 1,044,480 bytes the bio lacks of max.
        assert_eq!(v2_max_extract(0x140000, 0x41000), 0x3F000);
    }

    #[test]
    fn segments_place_pieces_apart_or_where_given() {
        // [2, 3]: frames B, B+1, then one frame left out: B+3, B+4, B+5.
        let b = BUFFER_BASE_PFN;
        let segs = vec![BufferSegment { pages: 2, pfn: None }, BufferSegment { pages: 3, pfn: None }];
        let buf = UserBuffer::with_layout(5 * PAGE_SIZE, 0, &BufferLayout::Segments(segs), 0);
        assert_eq!(buf.pfns, [b, b + 1, b + 3, b + 4, b + 5]);
        assert_eq!(buf.contiguous_from(0), 2 * PAGE_SIZE);
        // A given address, then an automatic piece after it.
        let segs = vec![BufferSegment { pages: 1, pfn: Some(7) }, BufferSegment { pages: 1, pfn: None }];
        assert_eq!(UserBuffer::with_layout(PAGE_SIZE, 0, &BufferLayout::Segments(segs), 0).pfns, [7, 9]);
        // Bytes 6144..14336 of the first buffer: pages 1-3, from 2048 into page 1.
        let s = buf.slice(6144, 8192);
        assert_eq!((s.offset, s.pfns.clone()), (2048, vec![b + 1, b + 3, b + 4]));
        assert_eq!(s.phys(0), (b + 1) * PAGE_SIZE + 2048);
    }

    #[test]
    fn folio_only_merges_within_a_huge_page() {
        // 7.x: 1 MiB of order-0 memory is 256 bvecs of one page; in a 2 MiB
        // huge page (one folio, naturally aligned) it is one bvec. 1 MiB
        // starting 1.5 MiB into a huge page crosses into the next folio at
        // 0.5 MiB: two bvecs of 512 KiB.
        let rules = DioRules { merge: DioBvecMerge::FolioOnly, ..DioRules::merging(512) };
        let buf = UserBuffer::new(1 << 20, 0, 0.0, 1);
        assert_eq!(bio_iov_iter_get_pages_with(&buf, 0, 1 << 20, 256, &rules).bvecs.len(), 256);
        let mut huge = UserBuffer::new(1 << 20, 0, 0.0, 1);
        huge.folio_pages = 512;
        let b = bio_iov_iter_get_pages_with(&huge, 0, 1 << 20, 256, &rules);
        assert_eq!((b.bvecs.len(), b.size), (1, 1 << 20));
        let mut late = UserBuffer::new(5 << 19, 0, 0.0, 1);
        late.folio_pages = 512;
        let b = bio_iov_iter_get_pages_with(&late, 3 << 19, 1 << 20, 256, &rules);
        let lens: Vec<u32> = b.bvecs.iter().map(|v| v.len).collect();
        assert_eq!(lens, [1 << 19, 1 << 19]);
    }

    #[test]
    fn contiguous_buffer_is_one_bvec_per_bio() {
        let buf = UserBuffer::new(1 << 20, 0, 0.0, 1);
        let (bios, plug) = blkdev_direct_io(Op::Read, 0, 0, 1 << 20, &buf, 512, true);
        assert_eq!(bios.len(), 1);
        assert_eq!(bios[0].bvecs.len(), 1);
        assert_eq!(bios[0].size, 1 << 20);
        assert!(!plug, "256 pages take the simple path");
    }

    #[test]
    fn over_256_pages_takes_the_plugged_loop() {
        // 1028 KiB = 257 pages: __blkdev_direct_IO, one bio (contiguous pages
        // all merge into one bvec), inside a plug; submit_bio, so a read
        // stays without REQ_SYNC.
        let buf = UserBuffer::new(1028 << 10, 0, 0.0, 1);
        let (bios, plug) = blkdev_direct_io(Op::Read, 0, 0, 1028 << 10, &buf, 512, true);
        assert!(plug);
        assert_eq!(bios.len(), 1);
        assert_eq!(bios[0].size, 1028 << 10);
        assert_eq!(bios[0].flags, 0);
    }

    #[test]
    fn synchronous_simple_path_read_is_req_sync() {
        // 1 MiB at offset 0 spans 256 pages: bio_iov_vecs_to_alloc(iter, 257)
        // = 256 <= BIO_MAX_VECS, a sync kiocb: __blkdev_direct_IO_simple, whose
        // submit_bio_wait ORs in REQ_SYNC ("RS").
        let buf = UserBuffer::new(1 << 20, 0, 0.0, 1);
        let (bios, _) = blkdev_direct_io(Op::Read, 0, 0, 1 << 20, &buf, 512, true);
        assert_eq!(bios[0].flags, req::SYNC);
        // The same 1 MiB starting 512 bytes into a page spans 257 pages: the
        // plugged loop with plain submit_bio, no REQ_SYNC on any bio.
        let buf = UserBuffer::new(1 << 20, 512, 0.0, 1);
        let (bios, plug) = blkdev_direct_io(Op::Read, 0, 0, 1 << 20, &buf, 512, true);
        assert!(plug);
        assert!(bios.iter().all(|b| b.flags == 0));
        // Asynchronous (io_submit) 4 KiB: __blkdev_direct_IO_async, no REQ_SYNC.
        let buf = UserBuffer::new(4096, 0, 0.0, 1);
        let (bios, plug) = blkdev_direct_io(Op::Read, 0, 0, 4096, &buf, 512, false);
        assert!(!plug);
        assert_eq!(bios[0].flags, 0);
        // A write keeps dio_bio_write_op's REQ_SYNC either way.
        let (bios, _) = blkdev_direct_io(Op::Write, req::SYNC, 0, 4096, &buf, 512, true);
        assert_eq!(bios[0].flags, req::SYNC);
    }

    #[test]
    fn fully_fragmented_buffer_gives_256_pages_per_bio() {
        // Every page discontiguous: one bvec per page, 256 per bio.
        let buf = UserBuffer::new(4 << 20, 0, 1.0, 7);
        let (bios, _) = blkdev_direct_io(Op::Read, 0, 0, 4 << 20, &buf, 512, true);
        assert_eq!(bios.len(), 4);
        assert!(bios.iter().all(|b| b.size == 1 << 20 && b.bvecs.len() == 256));
        assert_eq!(bios[1].sector, 2048);
    }

    #[test]
    fn last_batch_merges_past_the_256th_run() {
        // Pages 0..255 each discontiguous, then the rest contiguous with page
        // 255: the first batch fills 256 vecs, the bio ends after it.
        let mut pfns = vec![0u64; 512];
        for (i, p) in pfns.iter_mut().enumerate().take(256) {
            *p = 1000 + 2 * i as u64;
        }
        for i in 256..pfns.len() {
            pfns[i] = pfns[255] + (i as u64 - 255);
        }
        let buf = UserBuffer::from_pfns(0, pfns);
        let b = bio_iov_iter_get_pages(&buf, 0, 2 << 20, 256, 512);
        assert_eq!(b.bvecs.len(), 256);
        assert_eq!(b.size, 256 * 4096, "the bio is full after the first batch");
    }
}
