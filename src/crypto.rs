//! Inline encryption without hardware: the blk-crypto fallback
//! (block/blk-crypto.c `__blk_crypto_bio_prep`, block/blk-crypto-fallback.c),
//! as in 6.1 and 6.12, and as 7.x has it above the block layer.
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
//!   gets its 'C' then: it holds `BIO_TRACE_COMPLETION` from its own 'Q'
//!   or, as a split front, from its parent's, and it is in no request.
//!   The bounce bio's own split remainders get a 'Q' (they are
//!   resubmitted); on a request-based disk it is marked [`req::BOUNCE`] so
//!   the conservation check does not count sectors twice.
//!
//! That is switch `crypto_fallback`'s `in_submit_bio` (every profile up to
//! 6.15). bb8e2019ad61 "blk-crypto: handle the fallback above the block
//! layer" (7.0; `above_block_layer`, profile 7.2) moved it out of
//! `__submit_bio`: filesystems call `blk_crypto_submit_bio`, and the plain
//! bio is never submitted. A WRITE is encrypted into bounce bios of at most
//! `BIO_MAX_VECS` single-page segments each (`__blk_crypto_fallback_encrypt_bio`),
//! each chained to the plaintext bio (`bio_inc_remaining`) and submitted
//! with a plain `submit_bio` from the caller, in order, with no
//! `current->bio_list` left over from the one before: each bounce bio and
//! its split remainders are done before the next is submitted. Bounce bios
//! get a 'Q' each; the plaintext bio gets none and no 'C'. A READ only
//! loses its context and is submitted as it is.

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

/// The single-page segments of the first `bytes` of `bio` from its
/// iterator, each moved to its own bounce page (same offset and length), as
/// `blk_crypto_fallback_encrypt_bio` builds the bounce bio's bvecs.
fn bounce_bvecs(bio: &Bio, bytes: u32, next_page: &mut u64) -> Vec<Bvec> {
    let mut out = Vec::new();
    let mut left = bytes as u64;
    bio.for_each_bvec(|bv| {
        let mut phys = bv.phys;
        let end = bv.end().min(phys + left);
        while phys < end {
            let seg_end = ((phys / PAGE_SIZE + 1) * PAGE_SIZE).min(end);
            let page = BOUNCE_BASE + (*next_page % BOUNCE_PAGES) * 2 * PAGE_SIZE;
            *next_page += 1;
            out.push(Bvec { phys: page + phys % PAGE_SIZE, len: (seg_end - phys) as u32 });
            left -= seg_end - phys;
            phys = seg_end;
        }
        left > 0
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
        // On a request-based disk the plaintext bio's 'Q' already counted
        // these sectors for the checks; above a bio-based driver the bounce
        // bio's pieces are the first to reach the disks.
        let counted = matches!(self.topo.dev(self.bio(id).dev).driver, Driver::Mq(_));
        // The plaintext bio keeps BIO_TRACE_COMPLETION (its own 'Q', or
        // inherited by bio_split): blk_crypto_fallback_encrypt_endio ends it
        // with bio_endio, which traces its 'C' outside any request.
        let src = self.bio(id);
        let flags = if counted { src.flags | req::BOUNCE } else { src.flags };
        // The plaintext bio's own reference passes to the bounce bio: it
        // ends exactly when the bounce bio does.
        self.alloc_bounce_bio(id, src.iter.size, flags)
    }

    /// `blk_crypto_fallback_clone_bio` (6.x) / `blk_crypto_alloc_enc_bio`
    /// (7.x): a bounce bio of `flags` for the first `bytes` of `src` from
    /// its iterator, chained to it, one bounce page per page of the data.
    fn alloc_bounce_bio(&mut self, src: BioId, bytes: u32, flags: u32) -> BioId {
        let mut next = self.bounce_pages;
        let b = self.bio(src);
        let bvecs = bounce_bvecs(b, bytes, &mut next);
        let enc = Bio {
            remapped: b.remapped,
            parent: Some(src),
            owner: b.owner,
            cookie: b.cookie,
            ..Bio::new(b.dev, b.op, flags, b.iter.sector, bytes, BioVecs::new(&bvecs))
        };
        self.bounce_pages = next;
        self.alloc_bio(enc)
    }
}

impl BlockCore {
    /// `__blk_crypto_fallback_encrypt_bio` (7.x) for a plaintext write
    /// `src` with a crypt context, not yet submitted: its bounce bios, in
    /// order, each of at most `BIO_MAX_VECS` single-page segments and
    /// chained to `src`, which ends (untraced) when the last of them does.
    /// The caller submits them.
    #[cold]
    #[inline(never)]
    pub fn blk_crypto_fallback_encrypt_bios(&mut self, src: BioId) -> Vec<BioId> {
        let b = self.bio_mut(src);
        b.flags &= !req::CRYPT_CTX;
        b.traced = false;
        let mut out = Vec::new();
        while self.bio(src).iter.size > 0 {
            let b = self.bio(src);
            let bytes = fallback_split_sectors(b).map_or(b.iter.size, |sectors| sectors << SECTOR_SHIFT);
            // The first `bytes` of what is left of the plaintext bio.
            out.push(self.alloc_bounce_bio(src, bytes, b.flags));
            // bio_advance_iter_single over the encrypted pages.
            let b = self.bio_mut(src);
            crate::bio::bvec_iter_advance(&b.bvecs, &mut b.iter, bytes);
        }
        // One reference per bounce bio: the plaintext bio's own, and one
        // bio_inc_remaining for each further one.
        self.bio_mut(src).remaining = out.len() as u32;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bio(bvecs: &[(u64, u32)]) -> Bio {
        Bio::test_write(req::CRYPT_CTX, bvecs)
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
        let v = bounce_bvecs(&b, b.iter.size, &mut next);
        let lens: Vec<u32> = v.iter().map(|x| x.len).collect();
        assert_eq!(lens, [3072, 4096, 4096, 1024]);
        assert_eq!(v[0].phys, BOUNCE_BASE + 1024);
        assert_eq!(v[1].phys, BOUNCE_BASE + 2 * 4096);
        assert!(v.windows(2).all(|w| w[0].end() != w[1].phys));
        assert_eq!(next, 4);
    }

    #[test]
    fn above_the_block_layer_a_write_is_cut_into_bounce_bios_of_256_pages() {
        // 2 MiB + 4 KiB at sector 64 in one contiguous bvec: 513 pages, so
        // bounce bios of 256, 256 and 1 page: sectors [64, 2112), [2112,
        // 4160), [4160, 4168), chained to the plaintext bio, which now
        // needs three completions and gets no 'C'.
        let mut core = crate::submit::BlockCore::new(Default::default(), crate::profile::profile("7.2").unwrap().behaviour);
        let mut b = bio(&[(1 << 32, (2 << 20) + 4096)]);
        b.iter.sector = 64;
        let src = core.alloc_bio(b);
        let enc = core.blk_crypto_fallback_encrypt_bios(src);
        let got: Vec<(u64, u32, usize)> = enc.iter().map(|&e| (core.bio(e).iter.sector, core.bio(e).sectors(), core.bio(e).bvecs.len())).collect();
        assert_eq!(got, vec![(64, 2048, 256), (2112, 2048, 256), (4160, 8, 1)]);
        assert!(enc.iter().all(|&e| core.bio(e).parent == Some(src) && core.bio(e).flags & req::CRYPT_CTX == 0));
        assert_eq!(core.bio(src).remaining, 3);
        assert!(!core.bio(src).traced);
        assert_eq!(core.bounce_pages, 513);
    }
}
