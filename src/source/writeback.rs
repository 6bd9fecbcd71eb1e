//! Writeback of a raw block device's page cache, as pure ordering (spec
//! stack-and-sources §8.3): `write_cache_pages` / `writeback_iter` visit
//! dirty pages in ascending index from `range_start` (no wrap within one
//! call), stopping after `nr_to_write` pages for background writeback; for
//! each page `__block_write_full_folio` submits one bio per dirty buffer
//! head (`bio_alloc(…, 1)`, sector = b_blocknr × (blocksize / 512), size =
//! blocksize) in buffer order. All of it runs inside the writeback plug, so
//! whether a page's buffers end up in one request is decided by plug merging.
//!
//! Buffer heads cover a page in `PAGE_SIZE / blocksize` blocks (the bdev's
//! block size, see [`super::discard::set_init_blocksize`]); a page dirtied
//! by a whole-page write has every buffer dirty.

use crate::bio::PAGE_SIZE;

const SECTORS_PER_PAGE: u64 = PAGE_SIZE / 512;

/// One buffer-head bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferBio {
    /// Page-cache index of the page it belongs to.
    pub page: u64,
    pub sector: u64,
    /// Bytes (= the block size).
    pub size: u32,
}

/// Which dirty pages one writeback call visits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WritebackControl {
    /// First page index (`range_start >> PAGE_SHIFT`, or `writeback_index`).
    pub range_start: u64,
    /// Pages to write (`nr_to_write`, background writeback); `None` = all
    /// (WB_SYNC_ALL, as fsync does).
    pub nr_to_write: Option<u64>,
}

/// What one writeback call submitted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writeback {
    pub bios: Vec<BufferBio>,
    pub pages_written: u64,
    /// Where the next cyclic call would start (`writeback_index`).
    pub next_index: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WritebackError {
    /// Block sizes are powers of two from 512 to PAGE_SIZE (`set_blocksize`).
    BadBlockSize(u32),
    /// The page's sectors do not fit in 64 bits.
    PageIndexTooLarge(u64),
}

/// Bios for writing back every dirty page (given in any order, duplicates
/// allowed) with all buffers dirty.
pub fn writeback_bios(dirty_pages: &[u64], blocksize: u32) -> Result<Vec<BufferBio>, WritebackError> {
    Ok(write_cache_pages(dirty_pages, blocksize, &WritebackControl::default())?.bios)
}

/// `write_cache_pages` over `dirty_pages` under `wbc`.
pub fn write_cache_pages(dirty_pages: &[u64], blocksize: u32, wbc: &WritebackControl) -> Result<Writeback, WritebackError> {
    check_blocksize(blocksize)?;
    let mut pages: Vec<u64> = dirty_pages.iter().copied().filter(|&p| p >= wbc.range_start).collect();
    pages.sort_unstable();
    pages.dedup();
    if let Some(n) = wbc.nr_to_write {
        pages.truncate(usize::try_from(n).unwrap_or(usize::MAX));
    }
    let mut bios = Vec::with_capacity(pages.len() * (PAGE_SIZE / blocksize as u64) as usize);
    for &p in &pages {
        block_write_full_page(p, blocksize, &mut bios)?;
    }
    let next_index = pages.last().map_or(wbc.range_start, |p| p.saturating_add(1));
    Ok(Writeback { bios, pages_written: pages.len() as u64, next_index })
}

fn check_blocksize(bs: u32) -> Result<(), WritebackError> {
    if bs < 512 || bs as u64 > PAGE_SIZE || !bs.is_power_of_two() {
        return Err(WritebackError::BadBlockSize(bs));
    }
    Ok(())
}

/// `__block_write_full_folio` for one fully dirty page: one bio per buffer.
fn block_write_full_page(page: u64, blocksize: u32, out: &mut Vec<BufferBio>) -> Result<(), WritebackError> {
    let first = page.checked_mul(SECTORS_PER_PAGE).ok_or(WritebackError::PageIndexTooLarge(page))?;
    let per_block = (blocksize / 512) as u64;
    for i in 0..PAGE_SIZE / blocksize as u64 {
        out.push(BufferBio { page, sector: first + i * per_block, size: blocksize });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::rng::Rng;

    #[test]
    fn random_dirty_pages_with_2k_blocks() {
        // 64 distinct random pages of a 1 GiB device (262,144 pages).
        let mut rng = Rng::new(1);
        let mut pages = Vec::new();
        while pages.len() < 64 {
            let p = rng.next_u64() % 262_144;
            if !pages.contains(&p) {
                pages.push(p);
            }
        }
        let bios = writeback_bios(&pages, 2048).unwrap();
        // Two 2 KiB buffers per 4 KiB page: 128 bios of 4 sectors.
        assert_eq!(bios.len(), 128);
        assert!(bios.iter().all(|b| b.size == 2048));
        assert!(bios.windows(2).all(|w| w[0].sector < w[1].sector), "ascending sectors");
        let mut sorted = pages.clone();
        sorted.sort_unstable();
        for (i, p) in sorted.iter().enumerate() {
            // Page p covers sectors 8p..8p+8: buffers at 8p and 8p + 4.
            assert_eq!((bios[2 * i].sector, bios[2 * i + 1].sector), (8 * p, 8 * p + 4));
        }
    }

    #[test]
    fn block_sizes() {
        // 4 KiB blocks: one bio per page; 512-byte blocks: eight, one sector apart.
        assert_eq!(writeback_bios(&[3], 4096).unwrap(), vec![BufferBio { page: 3, sector: 24, size: 4096 }]);
        let b = writeback_bios(&[1], 512).unwrap();
        assert_eq!(b.iter().map(|b| b.sector).collect::<Vec<_>>(), (8..16).collect::<Vec<_>>());
        assert_eq!(writeback_bios(&[1], 3000), Err(WritebackError::BadBlockSize(3000)));
        assert_eq!(writeback_bios(&[1], 8192), Err(WritebackError::BadBlockSize(8192)));
        assert_eq!(writeback_bios(&[u64::MAX], 4096), Err(WritebackError::PageIndexTooLarge(u64::MAX)));
    }

    #[test]
    fn range_start_and_nr_to_write() {
        // Dirty pages 9, 2, 5, 7, 5: from index 4, two pages → 5 and 7; next call starts at 8.
        let wbc = WritebackControl { range_start: 4, nr_to_write: Some(2) };
        let wb = write_cache_pages(&[9, 2, 5, 7, 5], 4096, &wbc).unwrap();
        assert_eq!(wb.bios.iter().map(|b| b.page).collect::<Vec<_>>(), [5, 7]);
        assert_eq!((wb.pages_written, wb.next_index), (2, 8));
    }
}
