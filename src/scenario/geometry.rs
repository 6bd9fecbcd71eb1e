//! The geometry of a stacked device as `run --json` shows it: for an md
//! array what `mdadm --detail`/`--examine` and /sys/block/mdX/md/ report
//! (level, layout, chunk, raid disks, component size, each member's role
//! and data offset), for a dm device its table as `dmsetup table` prints
//! it, with the scenario's device names (docs/reports.md).

use serde_json::{json, Value};

use crate::dm::TargetKind;
use crate::md::personality::Personality;
use crate::md::raid0::Raid0Layout;
use crate::md::raid10::R10Geo;

use super::stack::{StackBody, StackSpec, raid10_layout_word, RAID5_LAYOUTS};

/// The `md` or `dm` object of a stacked device: (key, value).
pub fn stack_geometry_json(spec: &StackSpec) -> (&'static str, Value) {
    match &spec.body {
        StackBody::Md { pers, members } => ("md", md_geometry_json(pers, members, spec.nr_sectors)),
        StackBody::Dm { targets, devs, .. } => {
            let table: Vec<Value> = targets.iter().zip(devs).map(|(t, d)| dm_target_json(t, d)).collect();
            ("dm", json!({ "table": table }))
        }
    }
}

/// level, layout (mdadm's name and md's number), chunk, raid disks,
/// component size (`md/component_size`, `mddev->dev_sectors`; raid0 has
/// none: each member keeps its own size) and the members.
fn md_geometry_json(pers: &Personality, members: &[(String, u64)], array_sectors: u64) -> Value {
    let (level, layout, layout_value, chunk, component) = match pers {
        Personality::Raid0(c) => {
            let (name, v) = match c.layout {
                Raid0Layout::Orig => ("original", 1),
                Raid0Layout::AltMultizone => ("alternate", 2),
            };
            ("raid0", Some(name.to_string()), Some(v), c.chunk_sectors, None)
        }
        Personality::Raid1 { sectors } => ("raid1", None, None, 0, Some(*sectors)),
        Personality::Raid10(c) => ("raid10", Some(raid10_layout_name(&c.geo)), Some(raid10_layout_word(c.geo.near_copies, c.geo.far_copies, c.geo.far_offset)), c.geo.chunk_sectors, Some(c.dev_sectors)),
        Personality::Raid456 { conf, .. } => {
            let v = conf.algorithm as u32;
            let name = RAID5_LAYOUTS.iter().find(|x| x.1 == v).map(|x| x.0.to_string());
            let level = ["raid4", "raid5", "raid6"][conf.level as usize - 4];
            (level, name, Some(v), conf.chunk_sectors, Some(array_sectors / conf.data_disks() as u64))
        }
    };
    let member_sectors = |i: usize| match pers {
        Personality::Raid0(c) => c.member_sectors[i],
        _ => component.expect("levels other than raid0 have a component size"),
    };
    let members: Vec<Value> = members
        .iter()
        .enumerate()
        .map(|(i, (dev, off))| json!({"device": dev, "role": i, "data_offset": off, "data_sectors": member_sectors(i)}))
        .collect();
    json!({
        "level": level,
        "layout": layout,
        "layout_value": layout_value,
        "chunk_bytes": chunk as u64 * 512,
        "raid_disks": members.len(),
        "component_sectors": component,
        "members": members,
    })
}

/// mdadm's raid10 layout name: `n`, `f` or `o` with the copy count, each
/// part with more than one copy (`n2`, `f2`, `o2`, `n2f2`).
fn raid10_layout_name(g: &R10Geo) -> String {
    let mut s = String::new();
    if g.near_copies > 1 || g.far_copies == 1 {
        s += &format!("n{}", g.near_copies);
    }
    if g.far_copies > 1 {
        s += &format!("{}{}", if g.far_offset { 'o' } else { 'f' }, g.far_copies);
    }
    s
}


/// One table line: `start length target args`, the args as fields.
fn dm_target_json(t: &crate::dm::DmTarget, devs: &[String]) -> Value {
    match &t.kind {
        TargetKind::Linear(l) => json!({"start": t.begin, "length": t.len, "target": "linear", "device": devs[0], "offset": l.start}),
        TargetKind::Crypt(c) => json!({"start": t.begin, "length": t.len, "target": "crypt", "cipher": c.cipher, "key_size": c.key_size, "iv_offset": c.iv_offset, "device": devs[0], "offset": c.start, "sector_size": c.sector_size, "opt_params": c.opt_params}),
        TargetKind::Striped(s) => {
            let stripes: Vec<Value> = s.stripe.iter().zip(devs).map(|(x, d)| json!({"device": d, "offset": x.physical_start})).collect();
            json!({"start": t.begin, "length": t.len, "target": "striped", "stripes": s.stripes, "chunk_sectors": s.chunk_size, "devices": stripes})
        }
    }
}
