//! The optional `[compare]` table: the two sides a "before and after" run
//! of the scenario uses (`blkstack compare SCENARIO` without `--kernel`).
//!
//! ```toml
//! [compare]
//! before = { label = "tail insertion", kernel = "6.12" }
//! after = { label = "head insertion", kernel = "6.12", set = ["behaviour.split_remainder=head"] }
//! ```
//!
//! Each side names a kernel profile, `--set` overrides, or both. They are
//! checked here, where errors can name the file and line; running a side is
//! the caller's business (it loads the scenario again with that side's
//! kernel and sets).

use crate::profile;

use super::tree::{describe, Obj, ScenarioError, Value};

/// One side of a comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub label: String,
    pub kernel: Option<String>,
    pub sets: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Compare {
    pub before: Side,
    pub after: Side,
}

const SIDE_KEYS: &[&str] = &["label", "kernel", "set"];

pub fn read_compare(o: &Obj) -> Result<Option<Compare>, ScenarioError> {
    let Some(c) = o.table("compare")? else { return Ok(None) };
    let before = read_side(&c, "before")?;
    let after = read_side(&c, "after")?;
    c.finish(&["before", "after"])?;
    Ok(Some(Compare { before, after }))
}

fn read_side(c: &Obj, key: &str) -> Result<Side, ScenarioError> {
    let Some(s) = c.table(key)? else {
        return Err(c.err(key, &c.at, format!("missing: give the {key} side, e.g. {key} = {{ kernel = \"6.12\" }}")));
    };
    let kernel = match s.opt_str("kernel")? {
        Some((k, n)) if profile::profile(&k).is_none() => {
            return Err(s.err("kernel", &n.at, format!("unknown kernel profile '{k}'")));
        }
        other => other.map(|x| x.0),
    };
    let mut sets = Vec::new();
    if let Some((items, _)) = s.opt_array("set")? {
        for item in items {
            match &item.value {
                Value::Str(text) if text.contains('=') => sets.push(text.clone()),
                Value::Str(text) => return Err(s.err("set", &item.at, format!("'{text}' is not KEY=VALUE"))),
                v => return Err(s.err("set", &item.at, format!("expected \"KEY=VALUE\" strings, found {}", describe(v)))),
            }
        }
    }
    if kernel.is_none() && sets.is_empty() {
        return Err(c.err(key, &s.at, "give a kernel profile, set overrides, or both"));
    }
    let label = s.opt_str("label")?.map(|x| x.0).unwrap_or_else(|| default_label(&kernel, &sets));
    s.finish(SIDE_KEYS)?;
    Ok(Side { label, kernel, sets })
}

/// "6.12", "6.12 + behaviour.split_remainder=head", or the sets alone.
fn default_label(kernel: &Option<String>, sets: &[String]) -> String {
    kernel.iter().cloned().chain(sets.iter().cloned()).collect::<Vec<_>>().join(" + ")
}
