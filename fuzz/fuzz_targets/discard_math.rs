//! Discard chopping, writeback ordering and set_init_blocksize on arbitrary
//! numbers: no panic, and the bios cover the range exactly, in order.
#![no_main]

use blkstack::source::discard::{blkdev_issue_discard, set_init_blocksize, DiscardChopping, DiscardLimits};
use blkstack::source::writeback::writeback_bios;
use libfuzzer_sys::fuzz_target;

fn u64_at(d: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    for (k, x) in b.iter_mut().enumerate() {
        *x = d.get(i * 8 + k).copied().unwrap_or(0);
    }
    u64::from_le_bytes(b)
}

const CHOPS: [DiscardChopping; 4] =
    [DiscardChopping::MaxDiscardAligned, DiscardChopping::AllowedMaxSectors, DiscardChopping::GranularityAligned, DiscardChopping::BioDiscardLimit];

/// A lower bound on the size of most pieces (the first may be shorter).
fn piece_floor(chop: DiscardChopping, lim: &DiscardLimits) -> u64 {
    let gran = (lim.discard_granularity >> 9).max(1);
    match chop {
        DiscardChopping::MaxDiscardAligned if lim.max_discard_sectors >= 2 * gran => (lim.max_discard_sectors.min(u32::MAX >> 9) / 2) as u64,
        DiscardChopping::MaxDiscardAligned => 1,
        DiscardChopping::AllowedMaxSectors => 8_388_600,
        _ => match (u32::MAX & !lim.discard_granularity.wrapping_sub(1)) >> 9 {
            0 => u64::MAX, // stops at once with NoProgress
            n => n as u64,
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let w: Vec<u64> = (0..8).map(|i| u64_at(data, i)).collect();
    let lim = DiscardLimits {
        logical_block_size: 512 << (w[0] % 4),
        discard_granularity: w[1] as u32,
        discard_alignment: (w[1] >> 32) as u32,
        max_discard_sectors: w[2] as u32,
        start_sect: w[3],
    };
    let (sector, nr) = (w[4], w[5]);
    for chop in CHOPS {
        // Bound the work to about 2^16 bios per call.
        if nr / piece_floor(chop, &lim).max(1) > 1 << 16 {
            continue;
        }
        if let Ok(bios) = blkdev_issue_discard(chop, &lim, sector, nr) {
            let mut at = sector;
            for (s, n) in &bios {
                assert_eq!(*s, at);
                assert!(*n > 0);
                at += *n as u64;
            }
            assert_eq!(at - sector, nr);
        }
    }
    let _ = set_init_blocksize(512 << (w[6] % 4), w[7]);
    let pages: Vec<u64> = data.chunks(8).take(64).map(|c| c.iter().fold(0u64, |a, b| a << 8 | *b as u64)).collect();
    if let Ok(b) = writeback_bios(&pages, (w[6] as u32).rotate_left(9)) {
        assert!(b.windows(2).all(|x| x[0].sector < x[1].sector));
    }
});
