//! A TOML document as a tree whose every value remembers where it came from
//! (a byte offset in the file, or a `--set` argument), and a reader over it
//! that reports errors as `FILE:LINE: KEY: what is wrong` and refuses keys
//! it was not asked for.

use std::cell::RefCell;
use std::fmt;

use toml::de::{DeTable, DeValue};

/// Where a value (or key) came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Origin {
    /// Byte offset in the scenario file.
    File(usize),
    /// A `--set key=value` argument.
    Set,
}

#[derive(Clone, Debug)]
pub enum Value {
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Table(Table),
    Array(Vec<Node>),
    Datetime(String),
}

#[derive(Clone, Debug)]
pub struct Node {
    pub value: Value,
    pub at: Origin,
    /// For `--set` values: the text as typed, so `--set kernel=6.1` is the
    /// string "6.1", not a float.
    pub raw: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Table {
    pub entries: Vec<(String, Origin, Node)>,
}

impl Table {
    fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.entries.iter_mut().find(|(k, _, _)| k == key).map(|(_, _, n)| n)
    }
}

/// A scenario error: file, line when known, key path, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    pub file: String,
    pub line: Option<usize>,
    pub key: String,
    pub msg: String,
    pub from_set: bool,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.from_set, self.line, self.key.is_empty()) {
            (true, _, _) => write!(f, "{}: --set {}: {}", self.file, self.key, self.msg),
            (false, Some(l), false) => write!(f, "{}:{}: {}: {}", self.file, l, self.key, self.msg),
            (false, Some(l), true) => write!(f, "{}:{}: {}", self.file, l, self.msg),
            (false, None, false) => write!(f, "{}: {}: {}", self.file, self.key, self.msg),
            (false, None, true) => write!(f, "{}: {}", self.file, self.msg),
        }
    }
}

impl std::error::Error for ScenarioError {}

/// The source text, to turn offsets into line numbers.
pub struct Doc {
    pub file: String,
    pub text: String,
}

impl Doc {
    pub fn line_of(&self, offset: usize) -> usize {
        self.text[..offset.min(self.text.len())].matches('\n').count() + 1
    }

    pub fn error(&self, at: &Origin, key: &str, msg: impl Into<String>) -> ScenarioError {
        let (line, from_set) = match at {
            Origin::File(o) => (Some(self.line_of(*o)), false),
            Origin::Set => (None, true),
        };
        ScenarioError { file: self.file.clone(), line, key: key.to_string(), msg: msg.into(), from_set }
    }

    /// Parse the whole file.
    pub fn parse(&self) -> Result<Table, ScenarioError> {
        let root = DeTable::parse(&self.text).map_err(|e| {
            let line = e.span().map(|s| self.line_of(s.start));
            let msg = e.message().lines().next().unwrap_or("invalid TOML").trim().to_string();
            ScenarioError { file: self.file.clone(), line, key: String::new(), msg: format!("invalid TOML: {msg}"), from_set: false }
        })?;
        Ok(convert_table(root.get_ref()))
    }
}

fn convert_table(t: &DeTable) -> Table {
    Table {
        entries: t
            .iter()
            .map(|(k, v)| (k.get_ref().to_string(), Origin::File(k.span().start), convert(v.get_ref(), v.span().start)))
            .collect(),
    }
}

fn convert(v: &DeValue, at: usize) -> Node {
    let value = match v {
        DeValue::String(s) => Value::Str(s.to_string()),
        DeValue::Integer(i) => match i64::from_str_radix(i.as_str(), i.radix()) {
            Ok(n) => Value::Int(n),
            Err(_) => Value::Str(i.as_str().to_string()),
        },
        DeValue::Float(f) => Value::Float(f.as_str().parse().unwrap_or(f64::NAN)),
        DeValue::Boolean(b) => Value::Bool(*b),
        DeValue::Datetime(d) => Value::Datetime(d.to_string()),
        DeValue::Array(a) => Value::Array(a.iter().map(|x| convert(x.get_ref(), x.span().start)).collect()),
        DeValue::Table(t) => Value::Table(convert_table(t)),
    };
    Node { value, at: Origin::File(at), raw: None }
}

/// Apply one `--set key.path=value`: the value is read as TOML if it is
/// valid TOML, as a plain string otherwise; tables on the way are created.
pub fn apply_set(doc: &Doc, root: &mut Table, arg: &str) -> Result<(), ScenarioError> {
    let set_err = |key: &str, msg: &str| ScenarioError {
        file: doc.file.clone(),
        line: None,
        key: key.to_string(),
        msg: msg.to_string(),
        from_set: true,
    };
    let Some((key, raw)) = arg.split_once('=') else {
        return Err(set_err(arg, "expected key=value"));
    };
    let key = key.trim();
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(set_err(key, "empty key component"));
    }
    let mut node = match DeValue::parse(raw.trim()) {
        Ok(v) => convert(v.get_ref(), 0),
        Err(_) => Node { value: Value::Str(raw.to_string()), at: Origin::Set, raw: None },
    };
    mark_set(&mut node);
    node.raw = Some(raw.trim().to_string());
    let mut table = root;
    for (i, part) in parts.iter().enumerate() {
        let last = i == parts.len() - 1;
        if last {
            match table.get_mut(part) {
                Some(existing) => *existing = node,
                None => table.entries.push((part.to_string(), Origin::Set, node)),
            }
            return Ok(());
        }
        if table.get_mut(part).is_none() {
            let t = Node { value: Value::Table(Table::default()), at: Origin::Set, raw: None };
            table.entries.push((part.to_string(), Origin::Set, t));
        }
        table = match &mut table.get_mut(part).expect("just ensured").value {
            Value::Table(t) => t,
            _ => return Err(set_err(key, &format!("'{}' is not a table", parts[..=i].join(".")))),
        };
    }
    Ok(())
}

fn mark_set(n: &mut Node) {
    n.at = Origin::Set;
    match &mut n.value {
        Value::Table(t) => {
            for (_, o, v) in &mut t.entries {
                *o = Origin::Set;
                mark_set(v);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(mark_set),
        _ => {}
    }
}

/// Reads one table: typed getters, and [`Obj::finish`] to refuse keys that
/// were never asked for.
pub struct Obj<'a> {
    pub doc: &'a Doc,
    pub path: String,
    pub at: Origin,
    table: &'a Table,
    used: RefCell<Vec<bool>>,
}

/// Edit distance, for "did you mean".
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            cur.push((prev[j] + (ca != *cb) as usize).min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

pub fn describe(v: &Value) -> &'static str {
    match v {
        Value::Str(_) => "a string",
        Value::Int(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Bool(_) => "a boolean",
        Value::Table(_) => "a table",
        Value::Array(_) => "an array",
        Value::Datetime(_) => "a date",
    }
}

static EMPTY: Table = Table { entries: Vec::new() };

impl<'a> Obj<'a> {
    pub fn root(doc: &'a Doc, table: &'a Table) -> Self {
        Self::child(doc, String::new(), Origin::File(0), table)
    }

    /// A reader for `table`, reported as `path`.
    pub fn child(doc: &'a Doc, path: String, at: Origin, table: &'a Table) -> Self {
        Obj { doc, path, at, table, used: RefCell::new(vec![false; table.entries.len()]) }
    }

    /// An empty table standing in for an omitted optional one.
    pub fn empty(&self, key: &str) -> Obj<'a> {
        Self::child(self.doc, self.key_path(key), self.at.clone(), &EMPTY)
    }

    pub fn key_path(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else {
            format!("{}.{}", self.path, key)
        }
    }

    pub fn err(&self, key: &str, at: &Origin, msg: impl Into<String>) -> ScenarioError {
        self.doc.error(at, &self.key_path(key), msg)
    }

    /// The value under `key`, marked as used.
    pub fn node(&self, key: &str) -> Option<&'a Node> {
        let i = self.table.entries.iter().position(|(k, _, _)| k == key)?;
        self.used.borrow_mut()[i] = true;
        Some(&self.table.entries[i].2)
    }

    /// Keys in file order (for tables of named things, e.g. disks).
    pub fn keys(&self) -> Vec<String> {
        self.table.entries.iter().map(|(k, _, _)| k.clone()).collect()
    }

    pub fn has(&self, key: &str) -> bool {
        self.table.entries.iter().any(|(k, _, _)| k == key)
    }

    pub fn table(&self, key: &str) -> Result<Option<Obj<'a>>, ScenarioError> {
        let Some(n) = self.node(key) else { return Ok(None) };
        match &n.value {
            Value::Table(t) => Ok(Some(Self::child(self.doc, self.key_path(key), n.at.clone(), t))),
            v => Err(self.err(key, &n.at, format!("expected a table, found {}", describe(v)))),
        }
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<(String, &'a Node)>, ScenarioError> {
        let Some(n) = self.node(key) else { return Ok(None) };
        match (&n.value, &n.raw) {
            (Value::Str(s), _) => Ok(Some((s.clone(), n))),
            (_, Some(raw)) => Ok(Some((raw.clone(), n))),
            (v, None) => Err(self.err(key, &n.at, format!("expected a string, found {}", describe(v)))),
        }
    }

    pub fn opt_u64(&self, key: &str) -> Result<Option<(u64, &'a Node)>, ScenarioError> {
        let Some(n) = self.node(key) else { return Ok(None) };
        match &n.value {
            Value::Int(i) if *i >= 0 => Ok(Some((*i as u64, n))),
            Value::Int(i) => Err(self.err(key, &n.at, format!("{i} is negative"))),
            v => Err(self.err(key, &n.at, format!("expected a non-negative integer, found {}", describe(v)))),
        }
    }

    pub fn opt_f64(&self, key: &str) -> Result<Option<(f64, &'a Node)>, ScenarioError> {
        let Some(n) = self.node(key) else { return Ok(None) };
        match &n.value {
            Value::Int(i) => Ok(Some((*i as f64, n))),
            Value::Float(f) => Ok(Some((*f, n))),
            v => Err(self.err(key, &n.at, format!("expected a number, found {}", describe(v)))),
        }
    }

    /// A boolean; 0 and 1 are accepted as sysfs writes them.
    pub fn opt_bool(&self, key: &str) -> Result<Option<(bool, &'a Node)>, ScenarioError> {
        let Some(n) = self.node(key) else { return Ok(None) };
        match &n.value {
            Value::Bool(b) => Ok(Some((*b, n))),
            Value::Int(0) => Ok(Some((false, n))),
            Value::Int(1) => Ok(Some((true, n))),
            v => Err(self.err(key, &n.at, format!("expected true/false (or 0/1), found {}", describe(v)))),
        }
    }

    /// A size in bytes: an integer, or a string with a unit
    /// ("4KiB", "1M" = MiB, "1MB" = 10^6, "2048s" = sectors).
    pub fn opt_size(&self, key: &str) -> Result<Option<(u64, &'a Node)>, ScenarioError> {
        let Some(n) = self.node(key) else { return Ok(None) };
        let text = match (&n.value, &n.raw) {
            (Value::Int(i), _) if *i >= 0 => return Ok(Some((*i as u64, n))),
            (Value::Str(s), _) => s.clone(),
            (_, Some(raw)) => raw.clone(),
            (v, None) => return Err(self.err(key, &n.at, format!("expected a size (bytes, or a string like \"4KiB\"), found {}", describe(v)))),
        };
        parse_size(&text).map(|v| Some((v, n))).map_err(|m| self.err(key, &n.at, m))
    }

    pub fn opt_array(&self, key: &str) -> Result<Option<(&'a [Node], &'a Node)>, ScenarioError> {
        let Some(n) = self.node(key) else { return Ok(None) };
        match &n.value {
            Value::Array(a) => Ok(Some((a, n))),
            v => Err(self.err(key, &n.at, format!("expected an array, found {}", describe(v)))),
        }
    }

    /// Refuse every key that was not read, suggesting the closest known one.
    pub fn finish(&self, known: &[&str]) -> Result<(), ScenarioError> {
        let used = self.used.borrow();
        for (i, (k, at, _)) in self.table.entries.iter().enumerate() {
            if used[i] {
                continue;
            }
            let hint = known
                .iter()
                .map(|c| (distance(k, c), c))
                .filter(|(d, _)| *d <= 3)
                .min()
                .map(|(_, c)| format!(" (did you mean '{c}'?)"))
                .unwrap_or_default();
            return Err(self.err(k, at, format!("unknown key{hint}")));
        }
        Ok(())
    }
}

/// Parse a size with an optional unit. Binary units: K, KiB, M, MiB, G, GiB,
/// T, TiB, P, PiB (lower-case k/m/g/t accepted); decimal: KB, MB, GB, TB, PB;
/// `s` = 512-byte sectors; `b` = bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let mult: u64 = match unit {
        "" | "b" | "B" => 1,
        "s" => 512,
        "k" | "K" | "KiB" | "kiB" => 1 << 10,
        "m" | "M" | "MiB" => 1 << 20,
        "g" | "G" | "GiB" => 1 << 30,
        "t" | "T" | "TiB" => 1 << 40,
        "p" | "P" | "PiB" => 1 << 50,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "PB" => 1_000_000_000_000_000,
        _ => return Err(format!("'{text}' has an unknown unit '{unit}' (use K/KiB, M/MiB, G/GiB, T/TiB, KB/MB/GB/TB or s for sectors)")),
    };
    if num.is_empty() {
        return Err(format!("'{text}' is not a size"));
    }
    let v: f64 = num.parse().map_err(|_| format!("'{text}' is not a size"))?;
    let bytes = v * mult as f64;
    if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        return Err(format!("'{text}' is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("4480k"), Ok(4480 * 1024));
        assert_eq!(parse_size("1.9TB"), Ok(1_900_000_000_000));
        assert_eq!(parse_size("2048s"), Ok(1 << 20));
        assert!(parse_size("12 parsecs").is_err());
        assert_eq!(parse_size("0.5s"), Ok(256));
        assert!(parse_size("1.5").is_err(), "fractional bytes");
    }

    #[test]
    fn unknown_key_names_line_and_suggests() {
        let doc = Doc { file: "x.toml".into(), text: "a = 1\n[t]\nmax_sector_kb = 3\n".into() };
        let root = doc.parse().unwrap();
        let o = Obj::root(&doc, &root);
        o.opt_u64("a").unwrap();
        let t = o.table("t").unwrap().unwrap();
        let e = t.finish(&["max_sectors_kb"]).unwrap_err();
        assert_eq!(e.to_string(), "x.toml:3: t.max_sector_kb: unknown key (did you mean 'max_sectors_kb'?)");
    }

    #[test]
    fn set_overrides_and_keeps_raw_text() {
        let doc = Doc { file: "x.toml".into(), text: "kernel = \"6.12\"\n".into() };
        let mut root = doc.parse().unwrap();
        apply_set(&doc, &mut root, "kernel=6.1").unwrap();
        apply_set(&doc, &mut root, "disks.sda.queue.max_sectors_kb=64").unwrap();
        let o = Obj::root(&doc, &root);
        assert_eq!(o.opt_str("kernel").unwrap().unwrap().0, "6.1");
        let q = o.table("disks").unwrap().unwrap().table("sda").unwrap().unwrap().table("queue").unwrap().unwrap();
        assert_eq!(q.opt_u64("max_sectors_kb").unwrap().unwrap().0, 64);
    }

    #[test]
    fn syntax_error_has_line() {
        let doc = Doc { file: "x.toml".into(), text: "a = 1\nb = [\n".into() };
        let e = doc.parse().unwrap_err();
        assert!(e.line.is_some());
        assert!(e.to_string().starts_with("x.toml:"), "{e}");
    }
}
