//! Kernel profiles and behaviour switches.
//!
//! Every block-layer behaviour that changed between kernel versions is a
//! named switch in [`Behaviour`]; a profile is a set of values for all of
//! them. `--set behaviour.NAME=VALUE` overrides one switch on top of a
//! profile, so a user can run "before" and "after" a single kernel change.
//! [`SWITCHES`] is the registry: name, values, description and per-profile
//! value for every switch.

use crate::limits::LimitsModel;

/// An enum switch: its values and their names.
pub trait Choice: Sized + Copy + PartialEq + 'static {
    const ALL: &'static [(Self, &'static str)];

    fn name(self) -> &'static str {
        Self::ALL.iter().find(|(v, _)| *v == self).map(|(_, n)| *n).expect("every value is named")
    }

    fn parse(s: &str) -> Result<Self, String> {
        Self::ALL.iter().find(|(_, n)| *n == s).map(|(v, _)| *v).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|(_, n)| *n).collect();
            format!("'{s}' is not one of {}", names.join("|"))
        })
    }
}

macro_rules! choice {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum $name { $($(#[$vm])* $variant),+ }
        impl Choice for $name {
            const ALL: &'static [(Self, &'static str)] = &[$(($name::$variant, $text)),+];
        }
    };
}

choice!(
    /// Where `bio_submit_split` puts the remainder on `current->bio_list`.
    SplitRemainder {
        /// ≤6.17: `submit_bio_noacct(remainder)` appends at the tail.
        Tail = "tail",
        /// 6.18+: "block: fix reordered IO in the case recursive split".
        Head = "head",
    }
);

choice!(
    /// How `__submit_bio_noacct` reassembles `current->bio_list` after each bio.
    BioListAssembly {
        /// Every released kernel: lower-level bios, then same-level, then pending.
        LowerSamePending = "lower_same_pending",
        /// Bart Van Assche's unmerged proposal: pending first.
        PendingLowerSame = "pending_lower_same",
    }
);

choice!(WriteZeroesSplit { Exact = "exact", MaxIoSize = "max_io_size" });
choice!(SecureEraseLimit { Discard = "discard", Own = "own" });

impl Choice for LimitsModel {
    const ALL: &'static [(Self, &'static str)] = &[(LimitsModel::Legacy, "legacy"), (LimitsModel::Validate, "validate")];
}

choice!(
    /// Where `blk_add_rq_to_plug` puts a new request.
    PlugAdd {
        /// Newest first (≤6.12.24, mainline ≤6.12; the unmerged revert).
        Head = "head",
        /// Oldest first: e70c301faece "block: don't reorder requests in blk_add_rq_to_plug" (6.13, 6.12.25).
        Tail = "tail",
    }
);

choice!(
    /// Which request `blk_attempt_plug_merge` tries (exactly one).
    PlugMerge {
        /// The first request of the bio's queue from the list head.
        FirstFromHead = "first_from_head",
        /// The list tail if it is the bio's queue, else (several queues) the
        /// first from the head: 961296e89dc3 (6.16, 6.12.35).
        TailThenFirstFromHead = "tail_then_first_from_head",
    }
);

choice!(
    /// How `blk_mq_dispatch_plug_list` builds its local list from the plug.
    PlugListPath {
        /// `list_add`: reverses (6.1.21+, "block: do not reverse request order when flushing plug list").
        ListAdd = "list_add",
        /// `list_add_tail`: keeps the plug's order (6.12.25+).
        ListAddTail = "list_add_tail",
    }
);

choice!(
    /// The virt-boundary gap rule between bios (`bio_will_gap`).
    GapRule {
        /// 4.12+: first-bvec rule, physical-contiguity shortcut, masked offsets.
        Current = "current",
        /// ≤4.11: any non-zero next offset is a gap.
        Old = "old",
        /// The 2016 RFC (seed 004): contiguous data in one page is no gap.
        SamePageRfc = "same_page_rfc",
    }
);

choice!(
    /// What /proc/diskstats field 9 counts on request-based disks.
    InflightCount {
        /// 6.1: requests in the driver.
        Driver = "driver",
        /// 6.12+: the accounted counter (plugged and scheduled requests too).
        Accounted = "accounted",
    }
);

choice!(
    /// `update_io_ticks`.
    IoTicks {
        /// "block: support to account io_ticks precisely" (6.10, 6.1.93).
        Precise = "precise",
        /// Before: every start on an idle disk adds a jiffy.
        Legacy = "legacy",
    }
);

choice!(
    /// When bio-based devices (md, dm) count ios and sectors.
    BioAccounting {
        /// 6.1: at `bio_start_io_acct`.
        Start = "start",
        /// 6.12+: at `bio_end_io_acct`.
        End = "end",
    }
);

/// All behaviour switches in force for a run.
#[derive(Clone, Debug, PartialEq)]
pub struct Behaviour {
    pub split_remainder: SplitRemainder,
    pub bio_list_assembly: BioListAssembly,
    pub limits_model: LimitsModel,
    /// `BLK_DEF_MAX_SECTORS` / `BLK_DEF_MAX_SECTORS_CAP`, in sectors.
    pub def_max_sectors_cap: u32,
    pub write_zeroes_split: WriteZeroesSplit,
    pub secure_erase_limit: SecureEraseLimit,
    pub plug_add: PlugAdd,
    pub plug_merge: PlugMerge,
    pub plug_list_path: PlugListPath,
    /// nvme/virtio `->queue_rqs` submit the batch in reverse (head-add era).
    pub queue_rqs_reverse: bool,
    /// `block_unplug` also on the direct plug-flush path (6.12+).
    pub unplug_trace_direct: bool,
    /// Each `__submit_bio` in its own plug when the task has none (6.12 only).
    pub submit_bio_plug: bool,
    /// `BLK_PLUG_FLUSH_SIZE` in bytes (0 disables the size flush).
    pub plug_flush_size: u32,
    /// `BLK_MAX_REQUEST_COUNT` (doubled with several queues).
    pub plug_max_requests: u32,
    pub gap_rule: GapRule,
    pub inflight_count: InflightCount,
    pub io_ticks: IoTicks,
    pub bio_accounting: BioAccounting,
}

/// A named kernel version.
#[derive(Clone, Debug)]
pub struct Profile {
    pub name: &'static str,
    /// The tree the behaviour was read in.
    pub kernel: &'static str,
    pub summary: &'static str,
    pub behaviour: Behaviour,
}

pub const DEFAULT_PROFILE: &str = "6.12";

/// Jiffies per second (Debian's `CONFIG_HZ`).
pub const HZ: u64 = 250;

pub fn profiles() -> Vec<Profile> {
    let v6_1 = Behaviour {
        split_remainder: SplitRemainder::Tail,
        bio_list_assembly: BioListAssembly::LowerSamePending,
        limits_model: LimitsModel::Legacy,
        def_max_sectors_cap: 2560,
        write_zeroes_split: WriteZeroesSplit::Exact,
        secure_erase_limit: SecureEraseLimit::Discard,
        plug_add: PlugAdd::Head,
        plug_merge: PlugMerge::FirstFromHead,
        plug_list_path: PlugListPath::ListAdd,
        queue_rqs_reverse: true,
        unplug_trace_direct: false,
        submit_bio_plug: false,
        plug_flush_size: 131072,
        plug_max_requests: 32,
        gap_rule: GapRule::Current,
        inflight_count: InflightCount::Driver,
        io_ticks: IoTicks::Precise,
        bio_accounting: BioAccounting::Start,
    };
    let v6_12 = Behaviour {
        limits_model: LimitsModel::Validate,
        write_zeroes_split: WriteZeroesSplit::MaxIoSize,
        secure_erase_limit: SecureEraseLimit::Own,
        plug_add: PlugAdd::Tail,
        plug_merge: PlugMerge::TailThenFirstFromHead,
        plug_list_path: PlugListPath::ListAddTail,
        queue_rqs_reverse: false,
        unplug_trace_direct: true,
        submit_bio_plug: true,
        inflight_count: InflightCount::Accounted,
        bio_accounting: BioAccounting::End,
        ..v6_1.clone()
    };
    // Mainline 6.15: tail add without the tail-first merge fix (seed 001).
    let v6_15 = Behaviour { plug_merge: PlugMerge::FirstFromHead, ..v6_12.clone() };
    let v7_2 = Behaviour { split_remainder: SplitRemainder::Head, def_max_sectors_cap: 8192, submit_bio_plug: false, ..v6_12.clone() };
    vec![
        Profile { name: "6.1", kernel: "6.1.192", summary: "Debian bookworm's 6.1 LTS", behaviour: v6_1 },
        Profile { name: "6.12", kernel: "6.12.117", summary: "Debian trixie's 6.12 LTS", behaviour: v6_12 },
        Profile {
            name: "6.15",
            kernel: "6.15.1",
            summary: "plug list tail add without the tail-first plug merge (seed 001's regression)",
            behaviour: v6_15,
        },
        Profile { name: "7.2", kernel: "7.2.13", summary: "newest: head insertion of split remainders, 4 MiB default cap", behaviour: v7_2 },
    ]
}

/// Look a profile up by name or by its full kernel version.
pub fn profile(name: &str) -> Option<Profile> {
    profiles().into_iter().find(|p| p.name == name || p.kernel == name)
}

/// One behaviour switch: how to read and set it, and what it models.
pub struct SwitchDef {
    pub name: &'static str,
    /// The values, separated by '|' (for a numeric switch, the ones the profiles use).
    pub values: &'static str,
    pub description: &'static str,
    pub get: fn(&Behaviour) -> String,
    pub set: fn(&mut Behaviour, &str) -> Result<(), String>,
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "true" | "1" | "on" => Ok(true),
        "false" | "0" | "off" => Ok(false),
        _ => Err(format!("'{v}' is not true or false")),
    }
}

fn parse_u32(v: &str, min: u32) -> Result<u32, String> {
    let n: u32 = v.parse().map_err(|_| format!("'{v}' is not a whole number"))?;
    if n < min {
        return Err(format!("{n} is below {min}"));
    }
    Ok(n)
}

macro_rules! switch {
    (choice $field:ident, $values:literal, $desc:literal) => {
        SwitchDef {
            name: stringify!($field),
            values: $values,
            description: $desc,
            get: |b| b.$field.name().to_string(),
            set: |b, v| {
                b.$field = Choice::parse(v)?;
                Ok(())
            },
        }
    };
    (flag $field:ident, $desc:literal) => {
        SwitchDef {
            name: stringify!($field),
            values: "true|false",
            description: $desc,
            get: |b| b.$field.to_string(),
            set: |b, v| {
                b.$field = parse_bool(v)?;
                Ok(())
            },
        }
    };
    (number $field:ident, $min:expr, $values:literal, $desc:literal) => {
        SwitchDef {
            name: stringify!($field),
            values: $values,
            description: $desc,
            get: |b| b.$field.to_string(),
            set: |b, v| {
                b.$field = parse_u32(v, $min)?;
                Ok(())
            },
        }
    };
}

pub const SWITCHES: &[SwitchDef] = &[
    switch!(choice split_remainder, "tail|head",
        "where a split remainder goes on current->bio_list: tail (<=6.17) or head (6.18+, \"block: fix reordered IO in the case recursive split\"); seed 000"),
    switch!(choice bio_list_assembly, "lower_same_pending|pending_lower_same",
        "__submit_bio_noacct list order after each bio: lower, same, pending (all released kernels) or pending first (\"block: Make __submit_bio_noacct() preserve the bio submission order\", unmerged)"),
    switch!(choice limits_model, "legacy|validate",
        "how max_sectors is derived: legacy (6.1 blk_queue_max_hw_sectors, max_sectors_kb above max_hw refused) or validate (6.12+ blk_validate_limits with max_user_sectors; io_opt may raise the default)"),
    switch!(number def_max_sectors_cap, 8, "2560|8192",
        "BLK_DEF_MAX_SECTORS_CAP, the default max_sectors cap in sectors (any count of at least 8): 2560 (1280 KiB) up to 6.12, 8192 (4 MiB) after \"block: Increase BLK_DEF_MAX_SECTORS_CAP\""),
    switch!(choice write_zeroes_split, "exact|max_io_size",
        "write-zeroes splitting: exact (6.1, at max_write_zeroes_sectors) or max_io_size (6.12+, get_max_io_size with chunk boundaries)"),
    switch!(choice secure_erase_limit, "discard|own",
        "secure erase split by max_discard_sectors (6.1) or by max_secure_erase_sectors (6.12+)"),
    switch!(choice plug_add, "head|tail",
        "blk_add_rq_to_plug adds at the head (newest first; 6.1, 6.12.0-24) or the tail (e70c301faece \"block: don't reorder requests in blk_add_rq_to_plug\", 6.13, 6.12.25); seed 001"),
    switch!(choice plug_merge, "first_from_head|tail_then_first_from_head",
        "blk_attempt_plug_merge tries the first request of the queue from the list head, or the tail first (961296e89dc3 \"block: use plug request list tail for one-shot backmerge attempt\", 6.16, 6.12.35); seed 001"),
    switch!(choice plug_list_path, "list_add|list_add_tail",
        "blk_mq_dispatch_plug_list builds its list with list_add (reverses; 6.1.21+) or list_add_tail (keeps order; 6.12.25+)"),
    switch!(flag queue_rqs_reverse,
        "nvme/virtio ->queue_rqs push each request at the head of their submit list, so the device sees the batch reversed (head-add era; undone with e70c301faece)"),
    switch!(flag unplug_trace_direct,
        "block_unplug ('U') is traced on the direct plug-flush path too (6.12+; 6.1 traces it only on the list path)"),
    switch!(flag submit_bio_plug,
        "each __submit_bio runs in its own plug when the task has none (6.12 only; every request shows P and U)"),
    switch!(number plug_flush_size, 0, "131072",
        "BLK_PLUG_FLUSH_SIZE in bytes: adding a request flushes the plug first when the reference request is this large (0 disables); seed 000"),
    switch!(number plug_max_requests, 1, "32",
        "BLK_MAX_REQUEST_COUNT: requests in a plug before it is flushed (doubled with several queues)"),
    switch!(choice gap_rule, "current|old|same_page_rfc",
        "virt_boundary merge gap rule: current (5a8d75a1b8c9 \"block: fix bio_will_gap() for first bvec with offset\", 4.12+), old (any non-zero next offset is a gap), same_page_rfc (the 2016 RFC \"block: fix bio merge checks when virt_boundary is set\", never merged); seed 004"),
    switch!(choice inflight_count, "driver|accounted",
        "/proc/diskstats in_flight of request-based disks: requests in the driver (6.1) or the accounted counter including plugged and scheduled ones (6.12+)"),
    switch!(choice io_ticks, "precise|legacy",
        "update_io_ticks: precise (\"block: support to account io_ticks precisely\", 6.10, 6.1.93) or legacy (a start on an idle disk adds a jiffy)"),
    switch!(choice bio_accounting, "start|end",
        "bio-based (md/dm) ios and sectors counted at bio_start_io_acct (6.1) or at bio_end_io_acct (6.12+)"),
];

pub fn switch(name: &str) -> Option<&'static SwitchDef> {
    SWITCHES.iter().find(|s| s.name == name)
}

impl Behaviour {
    /// Every switch and its value, in registry order.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        SWITCHES.iter().map(|s| (s.name, (s.get)(self))).collect()
    }

    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let s = switch(name).ok_or_else(|| format!("unknown behaviour switch '{name}'"))?;
        (s.set)(self, value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_switch_round_trips_in_every_profile() {
        for p in profiles() {
            for s in SWITCHES {
                let mut b = p.behaviour.clone();
                let v = (s.get)(&b);
                (s.set)(&mut b, &v).unwrap();
                assert_eq!(b, p.behaviour, "{} in {}", s.name, p.name);
            }
        }
    }

    #[test]
    fn split_remainder_per_version() {
        assert_eq!(profile("6.1").unwrap().behaviour.split_remainder, SplitRemainder::Tail);
        assert_eq!(profile("6.12.117").unwrap().behaviour.split_remainder, SplitRemainder::Tail);
        assert_eq!(profile("7.2").unwrap().behaviour.split_remainder, SplitRemainder::Head);
    }

    #[test]
    fn bad_values_name_the_choices() {
        let mut b = profile("6.1").unwrap().behaviour;
        assert_eq!(b.set("plug_add", "middle").unwrap_err(), "'middle' is not one of head|tail");
        assert_eq!(b.set("submit_bio_plug", "maybe").unwrap_err(), "'maybe' is not true or false");
        assert!(b.set("nonsense", "1").is_err());
    }
}
