//! A plain root's pieces while they continue one another (what nearly every
//! root of a disk or partition does): kept as a cursor in a compact state
//! of their own, per root id, instead of a full [`super::RootState`]. A
//! root whose pieces break the streak, or that does not complete as one
//! whole streak, becomes a full state there and then (`Checker::promote`),
//! holding what the piece by piece bookkeeping would hold at that point.

use crate::bio::{Bio, BioVecs, SECTOR_SHIFT};
use crate::genhd::DevId;

use super::{data_offset, Root};

#[derive(Default)]
pub(super) struct Streak {
    /// A root in flight on this id is kept here (not in `Checker::roots`).
    pub live: bool,
    pub root: Root,
    /// The disk and the partition's start (0 on a whole disk).
    pub disk: DevId,
    pub offset: u64,
    /// The whole-disk sector the next piece of the streak starts at.
    pub cursor: u64,
    /// Where the cursor stands once the streak covers the root (set with
    /// it: one compare at completion, not two sums).
    pub end: u64,
    /// The submitter's pages, and where the root starts in them (bytes).
    pub bvecs: BioVecs,
    pub base: u64,
}

impl Streak {
    /// Is this leaf piece of `n` sectors the streak's next, of its op, on
    /// its disk, at its own place (a data piece carrying the submitter's
    /// pages there, as `Checker::check_placement` requires)? Then it is
    /// counted.
    #[inline(always)]
    pub fn extend(&mut self, bio: &Bio, n: u64) -> bool {
        let phys = bio.iter.sector;
        if !(bio.dev == self.disk && bio.op == self.root.op && phys == self.cursor) {
            return false;
        }
        if bio.op.has_data() {
            let same = match (&bio.bvecs, &self.bvecs) {
                // Nearly every piece: one page each, compared here.
                (BioVecs::Inline(a), BioVecs::Inline(b)) => a == b,
                // The rest out of line, and the call with them: inline,
                // its register saves were paid by every piece.
                _ => return self.extend_table(bio, n),
            };
            if !(same && self.at_its_place(bio)) {
                return false;
            }
        }
        self.cursor += n;
        true
    }

    /// [`Self::extend`] of a data piece whose pages or the root's are a
    /// table (or none).
    #[inline(never)]
    fn extend_table(&mut self, bio: &Bio, n: u64) -> bool {
        if !(bio.bvecs.same_pages(&self.bvecs) && self.at_its_place(bio)) {
            return false;
        }
        self.cursor += n;
        true
    }

    /// Does the data piece `bio` (of the submitter's pages) carry the top
    /// sectors that live where it is?
    #[inline(always)]
    fn at_its_place(&self, bio: &Bio) -> bool {
        self.root.start + ((data_offset(&bio.bvecs, &bio.iter) - self.base) >> SECTOR_SHIFT) + self.offset == bio.iter.sector
    }

    /// Did the streak reach the root's end?
    pub fn complete(&self) -> bool {
        self.cursor == self.end
    }

}
