//! Inline encryption without hardware: the blk-crypto fallback
//! (block/blk-crypto.c `__blk_crypto_bio_prep`, block/blk-crypto-fallback.c),
//! as in 6.1 and 6.12.
//!
//! A bio marked with [`req::CRYPT_CTX`] stands for one with a
//! `bi_crypt_context` (fscrypt with `-o inlinecrypt`). No disk in the model
//! has inline-encryption hardware, so `blk_crypto_bio_prep`, which runs
//! first in every `__submit_bio`, always takes the fallback:
//!
//! * a READ only swaps its end_io for one that decrypts, and loses its
//!   context (`bio_crypt_free_ctx`); nothing changes on its way down;
//! * a WRITE is encrypted into a bounce bio. That bio holds one bvec per
//!   page of the data, so the plaintext bio is first cut after
//!   `BIO_MAX_VECS` single-page segments
//!   (`blk_crypto_fallback_split_bio_if_needed`): the front is chained to
//!   the rest, traced 'X', and the rest goes back through a plain
//!   `submit_bio_noacct` — always at the tail of `current->bio_list`,
//!   whatever the split-remainder switch says, since it is not a
//!   `bio_submit_split`. The front is copied into the bounce bio
//!   (`blk_crypto_fallback_clone_bio`), whose pages come from a mempool:
//!   each bvec is one page at its own physical address, never contiguous
//!   with the next, so the disk counts one segment per page. The bounce
//!   bio carries no context, gets no 'Q' of its own, and when it ends it
//!   ends the plaintext bio (`blk_crypto_fallback_encrypt_endio`), which
//!   gets no 'C' either. Its own split remainders do get a 'Q' (they are
//!   resubmitted); on a request-based disk it is marked [`req::BOUNCE`] so
//!   the conservation check does not count sectors twice.
//!
//! 7.2 moved the fallback above the block layer (`blk_crypto_submit_bio`
//! submits the encrypted pieces in order); the model does not have that
//! path, so a crypt bio follows the 6.12 path under every profile.

use crate::bio::{req, Bio, BioId, BioVecs, Bvec, Op, BIO_MAX_VECS, PAGE_SIZE, SECTOR_SHIFT};
use crate::genhd::Driver;
use crate::submit::BlockCore;

/// Where bounce pages live in the model's physical memory (far above any
/// buffer a source builds); consecutive bounce pages are two pages apart.
const BOUNCE_BASE: u64 = 1 << 46;
/// Bounce page addresses wrap after this many (the mempool recycles pages).
const BOUNCE_PAGES: u64 = 1 << 20;

/// `bio_for_each_segment` up to `BIO_MAX_VECS` segments: the sectors
/// before the cut `blk_crypto_fallback_split_bio_if_needed` makes, or
/// `None` when the whole bio fits. A segment is one page's part of a bvec.
pub fn fallback_split_sectors(bio: &Bio) -> Option<u32> {
    let (mut segs, mut bytes) = (0usize, 0u32);
    bio.for_each_bvec(|bv| {
        let mut phys = bv.phys;
        let end = bv.end();
        while phys < end && segs < BIO_MAX_VECS {
            let seg_end = ((phys / PAGE_SIZE + 1) * PAGE_SIZE).min(end);
            bytes += (seg_end - phys) as u32;
            segs += 1;
            phys = seg_end;
        }
        segs < BIO_MAX_VECS
    });
    (bytes < bio.iter.size).then_some(bytes >> SECTOR_SHIFT)
}

/// The single-page segments of `bio` from its iterator, each moved to its
/// own bounce page (same offset and length), as
/// `blk_crypto_fallback_encrypt_bio` builds the bounce bio's bvecs.
fn bounce_bvecs(bio: &Bio, next_page: &mut u64) -> Vec<Bvec> {
    let mut out = Vec::new();
    bio.for_each_bvec(|bv| {
        let mut phys = bv.phys;
        while phys < bv.end() {
            let seg_end = ((phys / PAGE_SIZE + 1) * PAGE_SIZE).min(bv.end());
            let page = BOUNCE_BASE + (*next_page % BOUNCE_PAGES) * 2 * PAGE_SIZE;
            *next_page += 1;
            out.push(Bvec { phys: page + phys % PAGE_SIZE, len: (seg_end - phys) as u32 });
            phys = seg_end;
        }
        true
    });
    out
}

impl BlockCore {
    /// `blk_crypto_bio_prep` for a bio with a crypt context: the fallback
    /// (no disk has the hardware). Returns the bio `__submit_bio` goes on
    /// with: the same bio for a read, the bounce bio for a write.
    #[cold]
    #[inline(never)]
    pub fn blk_crypto_bio_prep(&mut self, id: BioId) -> BioId {
        let b = self.bio_mut(id);
        b.flags &= !req::CRYPT_CTX;
        if !(b.op == Op::Write && b.iter.size > 0) {
            // Reads decrypt at completion; empty writes have nothing to
            // encrypt.
            return id;
        }
        self.blk_crypto_fallback_encrypt_bio(id)
    }

    /// `blk_crypto_fallback_split_bio_if_needed` then
    /// `blk_crypto_fallback_encrypt_bio`.
    fn blk_crypto_fallback_encrypt_bio(&mut self, mut id: BioId) -> BioId {
        if let Some(sectors) = fallback_split_sectors(self.bio(id)) {
            let front = self.bio_split(id, sectors);
            self.bio_chain(front, id);
            let dev = self.bio(id).dev;
            self.stats[dev as usize].splits += 1;
            let rest = self.bio(id).iter.sector;
            self.trace_bio(crate::trace::Action::Split, front, rest, 0);
            // The remainder is still to be encrypted: its context stays.
            self.bio_mut(id).flags |= req::CRYPT_CTX;
            let looped = self.submit_bio_noacct(id);
            debug_assert!(looped.is_none(), "crypto split outside a submission loop");
            id = front;
        }
        let mut next = self.bounce_pages;
        let bvecs = bounce_bvecs(self.bio(id), &mut next);
        self.bounce_pages = next;
        // On a request-based disk the plaintext bio's 'Q' already counted
        // these sectors for the checks; above a bio-based driver the bounce
        // bio's pieces are the first to reach the disks.
        let counted = matches!(self.topo.dev(self.bio(id).dev).driver, Driver::Mq(_));
        let src = self.bio_mut(id);
        // The plaintext bio is ended by the bounce bio's end_io, untraced.
        src.traced = false;
        let flags = if counted { src.flags | req::BOUNCE } else { src.flags };
        let enc = Bio {
            remapped: src.remapped,
            parent: Some(id),
            owner: src.owner,
            cookie: src.cookie,
            ..Bio::new(src.dev, src.op, flags, src.iter.sector, src.iter.size, BioVecs::new(&bvecs))
        };
        // The plaintext bio's own reference passes to the bounce bio: it
        // ends exactly when the bounce bio does.
        self.alloc_bio(enc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bio(bvecs: &[(u64, u32)]) -> Bio {
        let size = bvecs.iter().map(|b| b.1).sum();
        let bvecs: Vec<Bvec> = bvecs.iter().map(|&(phys, len)| Bvec { phys, len }).collect();
        Bio { traced: true, ..Bio::new(0, Op::Write, req::CRYPT_CTX, 0, size, BioVecs::new(&bvecs)) }
    }

    #[test]
    fn split_counts_pages_not_bvecs() {
        // One physically contiguous 2 MiB bvec is 512 single-page
        // segments: the cut comes after 256 of them, 1 MiB = 2048 sectors.
        assert_eq!(fallback_split_sectors(&bio(&[(1 << 32, 2 << 20)])), Some(2048));
        // Exactly 256 pages fit: no split.
        assert_eq!(fallback_split_sectors(&bio(&[(1 << 32, 1 << 20)])), None);
        // A bvec starting 512 bytes into a page: its first segment is the
        // 3584 bytes to the page end, then whole pages. 256 segments are
        // 3584 + 255 * 4096 = 1048064 bytes = 2047 sectors.
        assert_eq!(fallback_split_sectors(&bio(&[((1 << 32) + 512, 2 << 20)])), Some(2047));
        // Two bvecs of 128 pages and 200 pages: the 256th segment is the
        // 128th page of the second, (128 + 128) * 8 = 2048 sectors.
        assert_eq!(fallback_split_sectors(&bio(&[(1 << 32, 128 * 4096), (1 << 34, 200 * 4096)])), Some(2048));
    }

    #[test]
    fn split_counts_from_the_iterator() {
        // The same 2 MiB bio after its first 1 MiB was split off: 256
        // pages left, no further split.
        let mut b = bio(&[(1 << 32, 2 << 20)]);
        crate::bio::bvec_iter_advance(&b.bvecs, &mut b.iter, 1 << 20);
        assert_eq!(fallback_split_sectors(&b), None);
    }

    #[test]
    fn bounce_pages_are_one_segment_each() {
        // 3 pages from offset 1024: segments of 3072, 4096, 4096, 1024
        // bytes, each on its own bounce page at the same in-page offset,
        // two pages apart (never physically contiguous).
        let b = bio(&[((1 << 32) + 1024, 3 * 4096)]);
        let mut next = 0;
        let v = bounce_bvecs(&b, &mut next);
        let lens: Vec<u32> = v.iter().map(|x| x.len).collect();
        assert_eq!(lens, [3072, 4096, 4096, 1024]);
        assert_eq!(v[0].phys, BOUNCE_BASE + 1024);
        assert_eq!(v[1].phys, BOUNCE_BASE + 2 * 4096);
        assert!(v.windows(2).all(|w| w[0].end() != w[1].phys));
        assert_eq!(next, 4);
    }
}
