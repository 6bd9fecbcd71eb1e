//! Kernel profiles and behaviour switches.
//!
//! Every block-layer behaviour that changed between kernel versions is a
//! named switch in [`Behaviour`]; a profile is a set of values for all of
//! them. `--set behaviour.NAME=VALUE` overrides one switch on top of a
//! profile, so a user can run "before" and "after" a single kernel change.
//! [`SWITCHES`] is the registry: name, values, description and per-profile
//! value for every switch.

use crate::limits::LimitsModel;

/// Where `bio_submit_split` puts the remainder on `current->bio_list`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitRemainder {
    /// ≤6.17: `submit_bio_noacct(remainder)` appends at the tail.
    Tail,
    /// 6.18+: "block: fix reordered IO in the case recursive split" inserts at the head.
    Head,
}

/// How `__submit_bio_noacct` reassembles `current->bio_list` after each bio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BioListAssembly {
    /// Every released kernel: lower-level bios, then same-level, then pending.
    LowerSamePending,
    /// Bart Van Assche's unmerged proposal: pending first, preserving submission order.
    PendingLowerSame,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteZeroesSplit {
    /// 6.1: split at exactly `max_write_zeroes_sectors`.
    Exact,
    /// 6.12+: split at `get_max_io_size` (chunk boundary, pbs alignment).
    MaxIoSize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecureEraseLimit {
    /// 6.1: secure erase is split by `max_discard_sectors`.
    Discard,
    /// 6.12+: by `max_secure_erase_sectors`.
    Own,
}

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

pub fn profiles() -> Vec<Profile> {
    let v6_1 = Behaviour {
        split_remainder: SplitRemainder::Tail,
        bio_list_assembly: BioListAssembly::LowerSamePending,
        limits_model: LimitsModel::Legacy,
        def_max_sectors_cap: 2560,
        write_zeroes_split: WriteZeroesSplit::Exact,
        secure_erase_limit: SecureEraseLimit::Discard,
    };
    let v6_12 = Behaviour {
        limits_model: LimitsModel::Validate,
        write_zeroes_split: WriteZeroesSplit::MaxIoSize,
        secure_erase_limit: SecureEraseLimit::Own,
        ..v6_1.clone()
    };
    let v7_2 = Behaviour { split_remainder: SplitRemainder::Head, def_max_sectors_cap: 8192, ..v6_12.clone() };
    vec![
        Profile { name: "6.1", kernel: "6.1.192", summary: "Debian bookworm's 6.1 LTS", behaviour: v6_1 },
        Profile { name: "6.12", kernel: "6.12.117", summary: "Debian trixie's 6.12 LTS", behaviour: v6_12 },
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

fn bad(value: &str, values: &str) -> String {
    format!("'{value}' is not one of {values}")
}

pub const SWITCHES: &[SwitchDef] = &[
    SwitchDef {
        name: "split_remainder",
        values: "tail|head",
        description: "where a split remainder goes on current->bio_list: tail (<=6.17) or head (6.18+, \"block: fix reordered IO in the case recursive split\")",
        get: |b| match b.split_remainder {
            SplitRemainder::Tail => "tail".into(),
            SplitRemainder::Head => "head".into(),
        },
        set: |b, v| {
            b.split_remainder = match v {
                "tail" => SplitRemainder::Tail,
                "head" => SplitRemainder::Head,
                _ => return Err(bad(v, "tail|head")),
            };
            Ok(())
        },
    },
    SwitchDef {
        name: "bio_list_assembly",
        values: "lower_same_pending|pending_lower_same",
        description: "__submit_bio_noacct list order after each bio: lower, same, pending (all released kernels) or pending first (\"block: Make __submit_bio_noacct() preserve the bio submission order\", unmerged)",
        get: |b| match b.bio_list_assembly {
            BioListAssembly::LowerSamePending => "lower_same_pending".into(),
            BioListAssembly::PendingLowerSame => "pending_lower_same".into(),
        },
        set: |b, v| {
            b.bio_list_assembly = match v {
                "lower_same_pending" => BioListAssembly::LowerSamePending,
                "pending_lower_same" => BioListAssembly::PendingLowerSame,
                _ => return Err(bad(v, "lower_same_pending|pending_lower_same")),
            };
            Ok(())
        },
    },
    SwitchDef {
        name: "limits_model",
        values: "legacy|validate",
        description: "how max_sectors is derived: legacy (6.1 blk_queue_max_hw_sectors, max_sectors_kb above max_hw refused) or validate (6.12+ blk_validate_limits with max_user_sectors; io_opt may raise the default)",
        get: |b| match b.limits_model {
            LimitsModel::Legacy => "legacy".into(),
            LimitsModel::Validate => "validate".into(),
        },
        set: |b, v| {
            b.limits_model = match v {
                "legacy" => LimitsModel::Legacy,
                "validate" => LimitsModel::Validate,
                _ => return Err(bad(v, "legacy|validate")),
            };
            Ok(())
        },
    },
    SwitchDef {
        name: "def_max_sectors_cap",
        values: "2560|8192",
        description: "BLK_DEF_MAX_SECTORS_CAP, the default max_sectors cap in sectors (any count of at least 8): 2560 (1280 KiB) up to 6.12, 8192 (4 MiB) after \"block: Increase BLK_DEF_MAX_SECTORS_CAP\"",
        get: |b| b.def_max_sectors_cap.to_string(),
        set: |b, v| {
            let n: u32 = v.parse().map_err(|_| format!("'{v}' is not a whole number of sectors"))?;
            if n < 8 {
                return Err(format!("{n} sectors is below one page"));
            }
            b.def_max_sectors_cap = n;
            Ok(())
        },
    },
    SwitchDef {
        name: "write_zeroes_split",
        values: "exact|max_io_size",
        description: "write-zeroes splitting: exact (6.1, at max_write_zeroes_sectors) or max_io_size (6.12+, get_max_io_size with chunk boundaries)",
        get: |b| match b.write_zeroes_split {
            WriteZeroesSplit::Exact => "exact".into(),
            WriteZeroesSplit::MaxIoSize => "max_io_size".into(),
        },
        set: |b, v| {
            b.write_zeroes_split = match v {
                "exact" => WriteZeroesSplit::Exact,
                "max_io_size" => WriteZeroesSplit::MaxIoSize,
                _ => return Err(bad(v, "exact|max_io_size")),
            };
            Ok(())
        },
    },
    SwitchDef {
        name: "secure_erase_limit",
        values: "discard|own",
        description: "secure erase split by max_discard_sectors (6.1) or by max_secure_erase_sectors (6.12+)",
        get: |b| match b.secure_erase_limit {
            SecureEraseLimit::Discard => "discard".into(),
            SecureEraseLimit::Own => "own".into(),
        },
        set: |b, v| {
            b.secure_erase_limit = match v {
                "discard" => SecureEraseLimit::Discard,
                "own" => SecureEraseLimit::Own,
                _ => return Err(bad(v, "discard|own")),
            };
            Ok(())
        },
    },
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
}
