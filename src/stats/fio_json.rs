//! fio's JSON as its json.c builds and prints it: objects keep their
//! keys in insertion order, two spaces of indent per level, `"key" : value`,
//! integers as `%lld`, floats as `%f`, strings quoted as they are (fio
//! escapes only in a few option values; names here need none beyond `"`
//! and `\`).

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

/// One JSON value, objects in order.
#[derive(Clone, Debug, PartialEq)]
pub enum FioJson {
    Int(i64),
    Float(f64),
    Str(String),
    Obj(Vec<(String, FioJson)>),
    Arr(Vec<FioJson>),
}

impl FioJson {
    pub fn obj() -> FioJson {
        FioJson::Obj(Vec::new())
    }

    /// Add a pair to an object (`json_object_add_value_*`).
    pub fn add(&mut self, key: &str, v: impl Into<FioJson>) -> &mut FioJson {
        if let FioJson::Obj(pairs) = self {
            pairs.push((key.to_string(), v.into()));
        }
        self
    }

    /// The value of `key` in an object.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut FioJson> {
        match self {
            FioJson::Obj(pairs) => pairs.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// `json_print_object`: the text fio writes, without the final newline.
    pub fn print(&self) -> String {
        let mut s = String::new();
        self.print_at(0, &mut s);
        s
    }

    fn print_at(&self, level: usize, s: &mut String) {
        let indent = |s: &mut String, l: usize| s.push_str(&"  ".repeat(l));
        match self {
            FioJson::Int(v) => {
                let _ = write!(s, "{v}");
            }
            FioJson::Float(v) => {
                let _ = write!(s, "{v:.6}");
            }
            FioJson::Str(v) => {
                let _ = write!(s, "\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""));
            }
            FioJson::Obj(pairs) => {
                s.push_str("{\n");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        s.push_str(",\n");
                    }
                    indent(s, level + 1);
                    let _ = write!(s, "\"{k}\" : ");
                    v.print_at(level + 1, s);
                }
                s.push('\n');
                indent(s, level);
                s.push('}');
            }
            FioJson::Arr(items) => {
                s.push_str("[\n");
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        s.push_str(",\n");
                    }
                    indent(s, level + 1);
                    v.print_at(level + 1, s);
                }
                s.push('\n');
                indent(s, level);
                s.push(']');
            }
        }
    }

    /// The same value for the run's JSON summary.
    pub fn to_value(&self) -> Value {
        match self {
            FioJson::Int(v) => json!(v),
            FioJson::Float(v) => json!(v),
            FioJson::Str(v) => json!(v),
            FioJson::Obj(pairs) => Value::Object(pairs.iter().map(|(k, v)| (k.clone(), v.to_value())).collect::<Map<_, _>>()),
            FioJson::Arr(items) => Value::Array(items.iter().map(FioJson::to_value).collect()),
        }
    }
}

impl From<u64> for FioJson {
    fn from(v: u64) -> Self {
        FioJson::Int(v.min(i64::MAX as u64) as i64)
    }
}

impl From<u32> for FioJson {
    fn from(v: u32) -> Self {
        FioJson::Int(v as i64)
    }
}

impl From<i64> for FioJson {
    fn from(v: i64) -> Self {
        FioJson::Int(v)
    }
}

impl From<f64> for FioJson {
    fn from(v: f64) -> Self {
        FioJson::Float(v)
    }
}

impl From<&str> for FioJson {
    fn from(v: &str) -> Self {
        FioJson::Str(v.to_string())
    }
}

impl From<String> for FioJson {
    fn from(v: String) -> Self {
        FioJson::Str(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_as_fio_json_c() {
        // fio-3.33 --output-format=json: `"key" : value`, two spaces a
        // level, floats with six decimals, arrays one element a line.
        let mut inner = FioJson::obj();
        inner.add("name", "vda").add("util", 12.462312);
        let mut root = FioJson::obj();
        root.add("fio version", "fio-3.33").add("jobs", FioJson::Arr(vec![inner])).add("N", 3u64);
        let want = "{\n  \"fio version\" : \"fio-3.33\",\n  \"jobs\" : [\n    {\n      \"name\" : \"vda\",\n      \"util\" : 12.462312\n    }\n  ],\n  \"N\" : 3\n}";
        assert_eq!(root.print(), want);
    }
}
