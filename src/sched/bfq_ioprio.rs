//! I/O priorities as bfq reads them (include/uapi/linux/ioprio.h,
//! bfq_set_next_ioprio_data, bfq_ioprio_to_weight).
//!
//! A task's ioprio is a class (RT 1, BE 2, IDLE 3; NONE 0 takes the class
//! and level from the task's nice value: BE, (nice + 20) / 5, so 4 at nice
//! 0) and a level 0..7. bfq's weight is (8 − level) · 10: level 4 gives the
//! default weight 40; the idle class always has level 7. A cgroup's
//! `io.bfq.weight` (1..1000, default 100) weighs the group's entity; with
//! every job in one group, bfq's flat model gives the queue weights alone.

/// `IOPRIO_NR_LEVELS`.
pub const IOPRIO_NR_LEVELS: u32 = 8;
/// `BFQ_WEIGHT_CONVERSION_COEFF`.
pub const BFQ_WEIGHT_CONVERSION_COEFF: u32 = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IoprioClass {
    Rt = 1,
    Be = 2,
    Idle = 3,
}

impl IoprioClass {
    /// Index of the class's service tree (`bfq_class_idx`).
    pub fn idx(self) -> usize {
        self as usize - 1
    }
}

/// A task's effective ioprio: class and level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ioprio {
    pub class: IoprioClass,
    pub level: u32,
}

impl Default for Ioprio {
    /// `IOPRIO_CLASS_NONE` at nice 0: `task_nice_ioclass` BE,
    /// `task_nice_ioprio` (0 + 20) / 5 = 4.
    fn default() -> Self {
        Ioprio { class: IoprioClass::Be, level: 4 }
    }
}

impl Ioprio {
    /// `bfq_set_next_ioprio_data`: the class and level a queue takes from
    /// `ioprio_set(class, level)` (class 0 = none, by nice 0). The idle class
    /// always has the lowest level; a level past 7 is cut to 7.
    pub fn from_class_level(class: u32, level: u32) -> Option<Ioprio> {
        let class = match class {
            0 => return Some(Ioprio::default()),
            1 => IoprioClass::Rt,
            2 => IoprioClass::Be,
            3 => return Some(Ioprio { class: IoprioClass::Idle, level: IOPRIO_NR_LEVELS - 1 }),
            _ => return None,
        };
        Some(Ioprio { class, level: level.min(IOPRIO_NR_LEVELS - 1) })
    }

    /// `bfq_ioprio_to_weight`.
    pub fn weight(self) -> u64 {
        bfq_ioprio_to_weight(self.level)
    }
}

/// `bfq_ioprio_to_weight`: (8 − level) · 10.
pub fn bfq_ioprio_to_weight(level: u32) -> u64 {
    ((IOPRIO_NR_LEVELS - level.min(IOPRIO_NR_LEVELS - 1)) * BFQ_WEIGHT_CONVERSION_COEFF) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_by_level() {
        // (8 − 0)·10 = 80, (8 − 4)·10 = 40, (8 − 7)·10 = 10.
        assert_eq!(bfq_ioprio_to_weight(0), 80);
        assert_eq!(bfq_ioprio_to_weight(4), 40);
        assert_eq!(bfq_ioprio_to_weight(7), 10);
    }

    #[test]
    fn classes() {
        assert_eq!(Ioprio::from_class_level(0, 0), Some(Ioprio { class: IoprioClass::Be, level: 4 }));
        assert_eq!(Ioprio::from_class_level(3, 0).unwrap().weight(), 10);
        assert_eq!(Ioprio::from_class_level(1, 9).unwrap().level, 7);
        assert_eq!(Ioprio::from_class_level(4, 0), None);
        assert_eq!(IoprioClass::Rt.idx(), 0);
    }
}
