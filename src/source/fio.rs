//! fio job files and fio command lines, read the way fio 3.x reads them.
//!
//! What is modelled, and where it lives in fio:
//! * init.c `__parse_jobs_ini`: `[section]` lines start a job, `[global]`
//!   (any name starting with "global") sets defaults for the jobs *below* it,
//!   `include FILE` pulls a file's options into the current section (relative
//!   to the including file when the name does not exist as given), `;` and
//!   `#` end a line wherever they appear (`strip_blank_end`).
//! * init.c `parse_cmd_line`: `--name=X` starts job X; options before the
//!   first `--name` (or after `--name=global`) are global; other arguments
//!   are job files, read after the command line with its global options.
//! * parse.c `str_to_decimal`/`get_mult_bytes`: `k`, `m`, `g`, `t`, `p`
//!   (with an optional `b`) multiply by kb_base (1024 unless `kb_base=1000`),
//!   while `kib`, `mib`, ... take the *other* base — so with the default
//!   kb_base `4k` is 4096 but `4KiB` is 4000. `get_mult_time`: `us`, `ms`,
//!   `s`, `m`, `h`, `d`; a bare number is seconds.
//! * parse.c `handle_option`: `bs=4k,8k` is read, then write (and trim);
//!   `bs=4k` is all three; a piece left empty (`bs=,8k`) keeps the old value.
//! * options.c: each option's alias, default, range and callback (`rw`
//!   postfixes, `rwmixread`/`rwmixwrite` as complements, `bssplit` filling in
//!   missing percentages, size percentages, `random_distribution` values).
//!
//! Options that do not change which I/O reaches the block layer (reporting,
//! logging, CPU placement, buffer contents) are accepted with a warning
//! naming the option, file and line. Every other option this reader does not
//! model is an error, as is any value fio would read in a surprising way: a
//! space after `=` (fio reads `bs = 4k` as 4 bytes), trailing text after a
//! number, `60sec` (fio's `get_mult_time` reads it as 60 µs), `4ki` (fio's
//! HOWTO and parse.c disagree on it), several values where fio keeps only
//! one. Nothing here panics on any input.

use std::collections::HashMap;
use std::fmt;

/// Where an option came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// Line `line` (1-based) of job file `file`.
    Line { file: String, line: usize },
    /// Command-line argument `index` (0 is the program name).
    Arg { index: usize },
    /// A whole file (it could not be read).
    File { file: String },
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line { file, line } => write!(f, "{file}:{line}"),
            Location::Arg { index } => write!(f, "command line argument {index}"),
            Location::File { file } => write!(f, "{file}"),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FioErrorKind {
    /// A job file could not be read.
    Io,
    /// Not a job file or command line fio accepts (section, include, quoting).
    Syntax,
    /// Not an fio option at all.
    UnknownOption,
    /// An fio option this model does not reproduce, and it changes the I/O.
    NotModelled,
    /// A value fio refuses, or would read in a way that is easy to get wrong.
    BadValue,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioError {
    pub kind: FioErrorKind,
    pub at: Location,
    pub option: Option<String>,
    pub msg: String,
}

impl fmt::Display for FioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.option {
            Some(o) => write!(f, "{}: {}: {}", self.at, o, self.msg),
            None => write!(f, "{}: {}", self.at, self.msg),
        }
    }
}

impl std::error::Error for FioError {}

/// A cosmetic option that was ignored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FioWarning {
    pub at: Location,
    pub option: String,
    pub msg: String,
}

impl fmt::Display for FioWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.at, self.option, self.msg)
    }
}

/// Data direction, as fio indexes per-direction options (`DDIR_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ddir {
    Read,
    Write,
    Trim,
}

/// A value per data direction (fio's `bs[DDIR_RWDIR_CNT]` and friends).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PerDir<T> {
    pub read: T,
    pub write: T,
    pub trim: T,
}

impl<T: Clone> PerDir<T> {
    pub fn all(v: T) -> Self {
        PerDir { read: v.clone(), write: v.clone(), trim: v }
    }

    pub fn get(&self, d: Ddir) -> &T {
        match d {
            Ddir::Read => &self.read,
            Ddir::Write => &self.write,
            Ddir::Trim => &self.trim,
        }
    }

    fn set(&mut self, d: Ddir, v: T) {
        match d {
            Ddir::Read => self.read = v,
            Ddir::Write => self.write = v,
            Ddir::Trim => self.trim = v,
        }
    }
}

/// `rw=` (`td_ddir`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadWrite {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    RandTrim,
    /// `rw` / `readwrite`: sequential mix.
    Rw,
    RandRw,
    TrimWrite,
    RandTrimWrite,
}

const RW_NAMES: &[(&str, ReadWrite)] = &[
    ("read", ReadWrite::Read),
    ("write", ReadWrite::Write),
    ("trim", ReadWrite::Trim),
    ("randread", ReadWrite::RandRead),
    ("randwrite", ReadWrite::RandWrite),
    ("randtrim", ReadWrite::RandTrim),
    ("rw", ReadWrite::Rw),
    ("readwrite", ReadWrite::Rw),
    ("randrw", ReadWrite::RandRw),
    ("trimwrite", ReadWrite::TrimWrite),
    ("randtrimwrite", ReadWrite::RandTrimWrite),
];

/// The name of a table entry (the first one listed for it).
fn name_of<T: Copy + PartialEq>(table: &[(&'static str, T)], v: T) -> &'static str {
    table.iter().find(|(_, x)| *x == v).map_or("", |(n, _)| n)
}

impl IoEngine {
    /// The engine's name (`td->io_ops->name`).
    pub fn name(self) -> &'static str {
        name_of(ENGINE_NAMES, self)
    }
}

impl ReadWrite {
    /// `ddir_str`: the name fio prints for the job's `rw`.
    pub fn name(self) -> &'static str {
        name_of(RW_NAMES, self)
    }

    /// `td_random`.
    pub fn is_random(self) -> bool {
        use ReadWrite::*;
        matches!(self, RandRead | RandWrite | RandTrim | RandRw | RandTrimWrite)
    }

    pub fn reads(self) -> bool {
        use ReadWrite::*;
        matches!(self, Read | RandRead | Rw | RandRw)
    }

    pub fn writes(self) -> bool {
        use ReadWrite::*;
        matches!(self, Write | RandWrite | Rw | RandRw | TrimWrite | RandTrimWrite)
    }

    pub fn trims(self) -> bool {
        use ReadWrite::*;
        matches!(self, Trim | RandTrim | TrimWrite | RandTrimWrite)
    }
}

/// One `bssplit` entry: block size and percentage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BsSplit {
    pub bs: u64,
    pub perc: u32,
}

/// A size-like value (`size`, `offset`, `io_size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    Bytes(u64),
    /// `20%` of the file or device.
    Percent(u32),
    /// `10z`: zones (zonemode=zbd).
    Zones(u32),
}

/// `ioengine=`, the engines whose submission path the model reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    /// read/write
    Sync,
    /// pread/pwrite (fio's default on Linux, `FIO_PREFERRED_ENGINE`)
    Psync,
    /// preadv/pwritev
    Pvsync,
    Libaio,
    IoUring,
}

const ENGINE_NAMES: &[(&str, IoEngine)] = &[
    ("sync", IoEngine::Sync),
    ("psync", IoEngine::Psync),
    ("pvsync", IoEngine::Pvsync),
    ("libaio", IoEngine::Libaio),
    ("io_uring", IoEngine::IoUring),
];

/// `random_generator=`: which generator draws random offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RandomGenerator {
    /// 32-bit combined Tausworthe (taus88), fio's default.
    Tausworthe,
    /// fio's LFSR: each block once per pass, no random map.
    Lfsr,
    /// 64-bit combined Tausworthe (taus258).
    Tausworthe64,
}

const GENERATOR_NAMES: &[(&str, RandomGenerator)] = &[
    ("tausworthe", RandomGenerator::Tausworthe),
    ("lfsr", RandomGenerator::Lfsr),
    ("tausworthe64", RandomGenerator::Tausworthe64),
];

/// `random_distribution=` (`str_random_distribution_cb`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum RandomDistribution {
    Random,
    /// `zipf:θ[:center]`, θ ≠ 1 (default 1.1, `FIO_DEF_ZIPF`).
    Zipf { theta: f64, center: Option<f64> },
    /// `pareto:h[:center]`, 0 < h < 1 (default 0.2, `FIO_DEF_PARETO`).
    Pareto { h: f64, center: Option<f64> },
    /// `normal:dev[:center]`, 0 ≤ dev < 100 (default 0).
    Normal { dev: f64, center: Option<f64> },
    /// `zoned:access/size%:...` (per direction in [`FioJob::zone_split`]).
    Zoned,
    /// `zoned_abs:access/size:...`, sizes in bytes.
    ZonedAbs,
}

/// One zone of a `zoned`/`zoned_abs` distribution (`struct zone_split`):
/// `access_perc` % of the I/Os go to the next `size_perc` % of the file
/// (`zoned`) or the next `size` bytes (`zoned_abs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneSplit {
    pub access_perc: u8,
    pub size_perc: u8,
    pub size: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneMode {
    None,
    Zbd,
}

/// What fio would pick a block size from for one direction (`get_next_buflen`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockSize<'a> {
    Fixed(u64),
    /// Uniform in [min, max], aligned down to min.
    Range { min: u64, max: u64 },
    Split(&'a [BsSplit]),
}

/// One job section (or `--name`) with `[global]` applied; `numjobs` copies
/// of it run.
#[derive(Clone, Debug, PartialEq)]
pub struct FioJob {
    pub name: String,
    pub rw: ReadWrite,
    /// `rw=randread:N`: N I/Os per random offset (`ddir_seq_nr`, default 1).
    pub rw_seq_nr: u32,
    /// `rw=write:4k`: bytes skipped after each sequential I/O (`ddir_seq_add`).
    pub rw_seq_add: i64,
    pub rwmix_read: u32,
    pub rwmix_write: u32,
    pub bs: PerDir<u64>,
    /// `min_bs`/`max_bs` as bsrange or bssplit set them; 0 = take `bs`.
    pub min_bs: PerDir<u64>,
    pub max_bs: PerDir<u64>,
    pub bssplit: PerDir<Vec<BsSplit>>,
    /// `blockalign`/`ba`; 0 = the minimum block size.
    pub blockalign: PerDir<u64>,
    pub size: Option<Size>,
    pub offset: Size,
    pub filename: Option<String>,
    /// `cgroup`: the cgroup v2 group the job runs in.
    pub cgroup: Option<String>,
    pub direct: bool,
    pub ioengine: IoEngine,
    pub iodepth: u32,
    pub iodepth_batch_submit: u32,
    pub iodepth_batch_complete_min: u32,
    pub numjobs: u32,
    pub group_reporting: bool,
    pub fsync: u32,
    pub fdatasync: u32,
    pub end_fsync: bool,
    /// `runtime`, in microseconds as fio keeps it; 0 = no limit.
    pub runtime_us: u64,
    pub time_based: bool,
    /// 0 = no limit.
    pub number_ios: u64,
    pub io_size: Option<Size>,
    /// `randrepeat` or its fio ≥ 3.35 alias `allrandrepeat`, whichever
    /// came last.
    pub randrepeat: bool,
    /// fio < 3.35, where the two are separate options: `randrepeat` alone,
    /// and `allrandrepeat` (default off).
    pub randrepeat_own: bool,
    pub allrandrepeat: bool,
    pub randseed: u64,
    /// `randseed` was given (`fio_option_is_set`): it overrides `randrepeat`.
    pub randseed_set: bool,
    pub random_generator: RandomGenerator,
    /// `random_generator` was given: fio then keeps it even where the
    /// region outgrows it.
    pub random_generator_set: bool,
    pub random_distribution: RandomDistribution,
    /// The zones of `random_distribution=zoned`/`zoned_abs`, per direction
    /// (none: that direction draws uniformly).
    pub zone_split: PerDir<Vec<ZoneSplit>>,
    pub norandommap: bool,
    pub invalidate: bool,
    pub zonemode: ZoneMode,
    pub kb_base: u32,
    /// `stonewall` (`wait_for_previous`): start only once the jobs before
    /// it have finished.
    pub stonewall: bool,
    /// `new_group`: the job starts a new reporting group (as `stonewall`
    /// does) without waiting for the jobs before it.
    pub new_group: bool,
    /// `ramp_time`, µs: the job runs that long before its statistics
    /// (and `runtime`) start (`reset_all_stats` at the end of the ramp).
    pub ramp_time_us: u64,
    /// `startdelay`, µs: the job starts that long after fio does
    /// (`run_threads` forks it only once the delay has passed).
    pub start_delay_us: u64,
    /// `rate` (bytes/s) and `rate_iops` per direction; 0 = no limit.
    pub rate: PerDir<u64>,
    pub rate_iops: PerDir<u64>,
    /// `thinktime` (µs) after every `thinktime_blocks` I/Os.
    pub thinktime_us: u64,
    pub thinktime_blocks: u64,
    /// `prio` (0..7) and `prioclass` (0..3): fio calls `ioprio_set` when
    /// either is given, with class 0 taken as best effort (os-linux.h).
    pub ioprio: Option<u32>,
    pub ioprio_class: Option<u32>,
}

impl Default for FioJob {
    /// fio's defaults (options.c `.def`).
    fn default() -> Self {
        FioJob {
            name: String::new(),
            rw: ReadWrite::Read,
            rw_seq_nr: 1,
            rw_seq_add: 0,
            rwmix_read: 50,
            rwmix_write: 50,
            bs: PerDir::all(4096),
            min_bs: PerDir::all(0),
            max_bs: PerDir::all(0),
            bssplit: PerDir::default(),
            blockalign: PerDir::all(0),
            size: None,
            offset: Size::Bytes(0),
            filename: None,
            cgroup: None,
            direct: false,
            ioengine: IoEngine::Psync,
            iodepth: 1,
            iodepth_batch_submit: 1,
            iodepth_batch_complete_min: 1,
            numjobs: 1,
            group_reporting: false,
            fsync: 0,
            fdatasync: 0,
            end_fsync: false,
            runtime_us: 0,
            time_based: false,
            number_ios: 0,
            io_size: None,
            randrepeat: true,
            randrepeat_own: true,
            allrandrepeat: false,
            randseed: 0x89,
            randseed_set: false,
            random_generator: RandomGenerator::Tausworthe,
            random_generator_set: false,
            random_distribution: RandomDistribution::Random,
            zone_split: PerDir::default(),
            norandommap: false,
            invalidate: true,
            zonemode: ZoneMode::None,
            kb_base: 1024,
            stonewall: false,
            new_group: false,
            ramp_time_us: 0,
            start_delay_us: 0,
            rate: PerDir::all(0),
            rate_iops: PerDir::all(0),
            thinktime_us: 0,
            thinktime_blocks: 1,
            ioprio: None,
            ioprio_class: None,
        }
    }
}

impl FioJob {
    /// The ioprio the job's task runs with: fio's `ioprio_set` when `prio`
    /// or `prioclass` is given (class 0 becomes best effort, level 0 by
    /// default), else the task's default (by nice 0: best effort, 4).
    pub fn task_ioprio(&self) -> crate::sched::bfq_ioprio::Ioprio {
        use crate::sched::bfq_ioprio::Ioprio;
        if self.ioprio.is_none() && self.ioprio_class.is_none() {
            return Ioprio::default();
        }
        let class = self.ioprio_class.filter(|&c| c != 0).unwrap_or(2);
        Ioprio::from_class_level(class, self.ioprio.unwrap_or(0)).unwrap_or_default()
    }

    /// `min_bs` after `fixup_options` (unset → `bs`).
    pub fn min_bs(&self, d: Ddir) -> u64 {
        nonzero_or(*self.min_bs.get(d), *self.bs.get(d))
    }

    pub fn max_bs(&self, d: Ddir) -> u64 {
        nonzero_or(*self.max_bs.get(d), *self.bs.get(d))
    }

    /// How fio picks each I/O's length (`get_next_buflen`).
    pub fn block_size(&self, d: Ddir) -> BlockSize<'_> {
        let (min, max) = (self.min_bs(d), self.max_bs(d));
        if min == max {
            BlockSize::Fixed(min)
        } else if !self.bssplit.get(d).is_empty() {
            BlockSize::Split(self.bssplit.get(d))
        } else {
            BlockSize::Range { min, max }
        }
    }

    /// Offset alignment of random I/O (`ba`, defaulting to `min_bs`).
    pub fn block_align(&self, d: Ddir) -> u64 {
        nonzero_or(*self.blockalign.get(d), self.min_bs(d))
    }

    /// I/Os per submission after `fixup_options` (0 or > iodepth → iodepth).
    pub fn iodepth_batch(&self) -> u32 {
        let b = self.iodepth_batch_submit;
        if b == 0 || b > self.iodepth {
            self.iodepth
        } else {
            b
        }
    }
}

fn nonzero_or(v: u64, default: u64) -> u64 {
    if v == 0 {
        default
    } else {
        v
    }
}

/// The jobs a job file or command line defines, and ignored options.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioParse {
    pub jobs: Vec<FioJob>,
    pub warnings: Vec<FioWarning>,
    /// The options as written, for fio's JSON (`global options`, each
    /// job's `job options`): name and value, parallel to `jobs`.
    pub global_options: Vec<(String, Option<String>)>,
    pub job_options: Vec<Vec<(String, Option<String>)>>,
    /// `--output-format`: normal, json, json+ (comma-separated).
    pub output_format: Option<String>,
}

/// Where job files and included files are read from.
pub trait JobFiles {
    /// The file's text, or why it cannot be read.
    fn read(&self, path: &str) -> Result<String, String>;
    /// Whether `path` exists as given (fio's `access(F_OK)` before `include`
    /// falls back to the including file's directory).
    fn exists(&self, path: &str) -> bool;
}

/// The real file system.
pub struct FsJobFiles;

impl JobFiles for FsJobFiles {
    fn read(&self, path: &str) -> Result<String, String> {
        let bytes = std::fs::read(path).map_err(|e| e.to_string())?;
        String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
    }

    fn exists(&self, path: &str) -> bool {
        std::path::Path::new(path).exists()
    }
}

/// No files at all: every `include` or job-file argument is an error.
pub struct NoJobFiles;

impl JobFiles for NoJobFiles {
    fn read(&self, _: &str) -> Result<String, String> {
        Err("no files can be read here".to_string())
    }

    fn exists(&self, _: &str) -> bool {
        false
    }
}

/// Files held in memory, by path.
impl JobFiles for HashMap<String, String> {
    fn read(&self, path: &str) -> Result<String, String> {
        self.get(path).cloned().ok_or_else(|| "no such file".to_string())
    }

    fn exists(&self, path: &str) -> bool {
        self.contains_key(path)
    }
}

// ---------------------------------------------------------------------------
// Numbers (parse.c)

/// A number as `str_to_decimal` returns it for a data quantity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantity {
    Bytes(u64),
    /// Followed by `%` (fio encodes it as `-1ULL - n`).
    Percent(u64),
}

/// A data quantity with fio's suffixes (`str_to_decimal(kilo = 1)`).
pub fn parse_quantity(s: &str, kb_base: u32) -> Result<Quantity, String> {
    let (digits, suffix, hex) = split_number(s)?;
    let n = parse_digits(digits, hex, s)?;
    if hex && !suffix.is_empty() {
        return Err(format!("'{s}': fio ignores a unit after a hex number; write it in decimal"));
    }
    if suffix == "%" {
        return Ok(Quantity::Percent(n));
    }
    let mult = byte_multiplier(suffix, kb_base).ok_or_else(|| bad_suffix(s, suffix))?;
    // fio keeps a long long: past i64::MAX the product would wrap negative.
    match n.checked_mul(mult) {
        Some(v) if v <= i64::MAX as u64 => Ok(Quantity::Bytes(v)),
        _ => Err(format!("'{s}' is too large")),
    }
}

/// A quantity that must be bytes (no `%`).
pub fn parse_bytes(s: &str, kb_base: u32) -> Result<u64, String> {
    match parse_quantity(s, kb_base)? {
        Quantity::Bytes(b) => Ok(b),
        Quantity::Percent(_) => Err(format!("'{s}': a percentage is not allowed here")),
    }
}

/// A time (`str_to_decimal(kilo = 0)` + `get_mult_time`), in microseconds.
/// A bare number is seconds when `is_seconds`, else microseconds.
pub fn parse_time_us(s: &str, is_seconds: bool) -> Result<u64, String> {
    let (digits, suffix, hex) = split_number(s)?;
    if hex {
        return Err(format!("'{s}': fio reads a hex time as microseconds whatever its unit; write it in decimal"));
    }
    let n = parse_digits(digits, false, s)?;
    let mult = time_multiplier(suffix, is_seconds).ok_or_else(|| bad_time_suffix(s, suffix))?;
    n.checked_mul(mult).ok_or_else(|| format!("'{s}' is too large"))
}

/// Split into (digits, suffix, is_hex). Refuses what fio reads oddly.
fn split_number(s: &str) -> Result<(&str, &str, bool), String> {
    if s.is_empty() {
        return Err("needs a value".to_string());
    }
    if s.starts_with('(') {
        return Err(format!("'{s}': arithmetic expressions are not supported"));
    }
    if s.starts_with(|c: char| c.is_whitespace()) {
        return Err(format!("'{s}' starts with a space; fio would drop its unit"));
    }
    if s.starts_with('-') {
        return Err(format!("'{s}' is negative"));
    }
    let body = s.strip_prefix('+').unwrap_or(s);
    // strtoll base: 16 when "0x" appears anywhere (parse.c), else 10.
    let hex = s.contains("0x") || s.contains("0X");
    let body = if hex { strip_hex_prefix(body) } else { body };
    let end = body.find(|c: char| !is_digit(c, hex)).unwrap_or(body.len());
    Ok((&body[..end], &body[end..], hex))
}

fn strip_hex_prefix(s: &str) -> &str {
    s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")).unwrap_or(s)
}

fn is_digit(c: char, hex: bool) -> bool {
    if hex {
        c.is_ascii_hexdigit()
    } else {
        c.is_ascii_digit()
    }
}

fn parse_digits(digits: &str, hex: bool, whole: &str) -> Result<u64, String> {
    if digits.is_empty() {
        return Err(format!("'{whole}' is not a number"));
    }
    let v = u64::from_str_radix(digits, if hex { 16 } else { 10 }).map_err(|_| format!("'{whole}' is too large"))?;
    // strtoll stores a long long: beyond i64::MAX it saturates (ERANGE).
    if v > i64::MAX as u64 {
        return Err(format!("'{whole}' is too large"));
    }
    Ok(v)
}

/// `__get_mult_bytes`: k/m/g/t/p (optionally + "b") use kb_base; kib/mib/...
/// use the other base ("opposite units" for compatibility with old scripts).
fn byte_multiplier(suffix: &str, kb_base: u32) -> Option<u64> {
    let s = suffix.to_ascii_lowercase();
    let base = kb_base as u64;
    let other = if kb_base == 1000 { 1024 } else { 1000 };
    let (pow, mult) = match s.as_str() {
        "" | "b" => (0, 1),
        "k" | "kb" => (1, base),
        "m" | "mb" => (2, base),
        "g" | "gb" => (3, base),
        "t" | "tb" => (4, base),
        "p" | "pb" => (5, base),
        "kib" => (1, other),
        "mib" => (2, other),
        "gib" => (3, other),
        "tib" => (4, other),
        "pib" => (5, other),
        _ => return None,
    };
    Some(mult.pow(pow))
}

fn bad_suffix(s: &str, suffix: &str) -> String {
    let l = suffix.to_ascii_lowercase();
    if matches!(l.as_str(), "ki" | "mi" | "gi" | "ti" | "pi") {
        format!("'{s}': fio's HOWTO and parse.c disagree on '{suffix}'; write k/m/g (kb_base units) or KiB/MiB/GiB (the other base)")
    } else {
        format!("'{s}': unknown unit '{suffix}' (fio would ignore it)")
    }
}

/// `get_mult_time`, in microseconds.
fn time_multiplier(suffix: &str, is_seconds: bool) -> Option<u64> {
    Some(match suffix.to_ascii_lowercase().as_str() {
        "" if is_seconds => 1_000_000,
        "" => 1,
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return None,
    })
}

fn bad_time_suffix(s: &str, suffix: &str) -> String {
    format!("'{s}': unit '{suffix}' is not one fio's get_mult_time knows (it would read the number as microseconds); use us, ms, s, m, h or d")
}

/// `check_int` for bool options: a decimal or 0x number, non-zero = true.
fn parse_bool(s: &str) -> Result<bool, String> {
    let hex = s.contains("0x") || s.contains("0X");
    let digits = if hex { strip_hex_prefix(s) } else { s };
    if digits.is_empty() || !digits.chars().all(|c| is_digit(c, hex)) {
        return Err(format!("'{s}' is not 0 or 1"));
    }
    Ok(digits.chars().any(|c| c != '0'))
}

// ---------------------------------------------------------------------------
// Option values

type SetResult = Result<(), String>;

fn need(v: Option<&str>) -> Result<&str, String> {
    match v {
        Some(s) if !s.is_empty() => Ok(s),
        _ => Err("needs a value".to_string()),
    }
}

/// Options that take one value: `handle_option` would split at ',', ':' or
/// '-' and keep only the first (or, with a callback, the last) piece.
fn single(v: Option<&str>) -> Result<&str, String> {
    let s = need(v)?;
    let sep = s.char_indices().any(|(i, c)| c == ',' || c == ':' || (c == '-' && i > 0));
    if sep {
        return Err(format!("'{s}': fio reads only one value here and would drop the rest"));
    }
    Ok(s)
}

/// An `int` option: a data quantity that fits fio's `int`, within [min, max].
fn int_value(v: Option<&str>, kb_base: u32, min: u32, max: u32) -> Result<u32, String> {
    let s = single(v)?;
    let n = parse_bytes(s, kb_base)?;
    if n > i32::MAX as u64 || n > max as u64 {
        return Err(format!("'{s}' is above the maximum {max}"));
    }
    if n < min as u64 {
        return Err(format!("'{s}' is below the minimum {min}"));
    }
    Ok(n as u32)
}

fn bool_value(v: Option<&str>) -> Result<bool, String> {
    parse_bool(single(v)?)
}

/// FIO_OPT_STR_SET: no value means set.
fn flag_value(v: Option<&str>) -> Result<bool, String> {
    match v {
        None => Ok(true),
        Some(_) => bool_value(v),
    }
}

/// The pieces `handle_option` hands to each direction, in order. `range`:
/// FIO_OPT_RANGE splits only at ','; other types fall back to ':' then '-'.
fn dir_pieces(s: &str, range: bool) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = s;
    loop {
        match next_separator(rest, range) {
            Some(i) => {
                out.push(&rest[..i]);
                rest = &rest[i + 1..];
            }
            None => {
                out.push(rest);
                return out;
            }
        }
    }
}

fn next_separator(s: &str, range: bool) -> Option<usize> {
    if let Some(i) = s.find(',') {
        return Some(i);
    }
    if range {
        return None;
    }
    s.find(':').or_else(|| s.get(1..).and_then(|t| t.find('-')).map(|i| i + 1))
}

/// Directions each piece sets: piece 0 sets read, and write and trim too
/// when it is the only one; piece 1 sets write (and trim when last); piece 2
/// sets trim.
fn piece_dirs(i: usize, last: bool) -> &'static [Ddir] {
    match (i, last) {
        (0, true) => &[Ddir::Read, Ddir::Write, Ddir::Trim],
        (0, false) => &[Ddir::Read],
        (1, true) => &[Ddir::Write, Ddir::Trim],
        (1, false) => &[Ddir::Write],
        _ => &[Ddir::Trim],
    }
}

/// Apply per-direction pieces with `parse`; empty pieces leave a direction alone.
fn per_dir<T: Clone>(s: &str, range: bool, dst: &mut PerDir<T>, parse: impl Fn(&str) -> Result<T, String>) -> SetResult {
    let pieces = dir_pieces(s, range);
    if pieces.len() > 3 {
        return Err(format!("'{s}': at most three values (read, write, trim)"));
    }
    let mut new = dst.clone();
    for (i, p) in pieces.iter().enumerate() {
        if p.is_empty() {
            continue;
        }
        let v = parse(p)?;
        for d in piece_dirs(i, i + 1 == pieces.len()) {
            new.set(*d, v.clone());
        }
    }
    *dst = new;
    Ok(())
}

fn block_bytes(p: &str, kb_base: u32) -> Result<u64, String> {
    let b = parse_bytes(p, kb_base)?;
    if b == 0 {
        return Err(format!("'{p}': a block size must be at least 1"));
    }
    Ok(b)
}

/// One `lo-hi` (or `lo:hi`) piece of bsrange, swapped when lo > hi.
fn bs_range(p: &str, kb_base: u32) -> Result<(u64, u64), String> {
    let at = p.find('-').or_else(|| p.find(':')).ok_or_else(|| format!("'{p}' is not a range (lo-hi)"))?;
    let lo = block_bytes(&p[..at], kb_base)?;
    let hi = block_bytes(&p[at + 1..], kb_base)?;
    Ok((lo.min(hi), lo.max(hi)))
}

/// A size-like value: bytes, a percentage in `percent`, or zones (`10z`).
fn size_value(v: Option<&str>, kb_base: u32, percent: std::ops::RangeInclusive<u64>) -> Result<Size, String> {
    let s = need(v)?;
    if let Some(z) = s.strip_suffix('z') {
        let n: u32 = z.parse().map_err(|_| format!("unexpected zone value '{s}'"))?;
        return Ok(Size::Zones(n));
    }
    match parse_quantity(single(v)?, kb_base)? {
        Quantity::Bytes(b) => Ok(Size::Bytes(b)),
        Quantity::Percent(p) if percent.contains(&p) => Ok(Size::Percent(p as u32)),
        Quantity::Percent(p) => Err(format!("{p}% is out of range ({}..{})", percent.start(), percent.end())),
    }
}

/// The value name before any ':' or ',' (parse.c `opt_len`) and the rest.
fn value_word(s: &str) -> (&str, &str) {
    let end = s.find([':', ',']).unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// `get_opt_postfix`: the text after the first ':', blanks stripped.
fn postfix(rest: &str) -> Result<Option<&str>, String> {
    if rest.is_empty() {
        return Ok(None);
    }
    match rest.strip_prefix(':') {
        Some(p) => Ok(Some(p.trim())),
        None => Err(format!("'{rest}': fio would ignore this")),
    }
}

fn lookup<T: Copy>(table: &[(&str, T)], word: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == word).map(|(_, v)| *v)
}

fn names<T>(table: &[(&str, T)]) -> String {
    table.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
}

// ---------------------------------------------------------------------------
// Setters, one per modelled option (options.c)

fn set_name(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.name = need(v)?.to_string();
    Ok(())
}

/// `rw` + `str_rw_cb`: the postfix is a count for random I/O, a byte skip
/// for sequential I/O.
fn set_rw(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let s = need(v)?;
    let (word, rest) = value_word(s);
    let rw = lookup(RW_NAMES, word).ok_or_else(|| format!("'{word}' is not one of {}", names(RW_NAMES)))?;
    j.rw = rw;
    j.rw_seq_nr = 1;
    j.rw_seq_add = 0;
    let Some(p) = postfix(rest)? else { return Ok(()) };
    if rw.is_random() {
        let n = parse_bytes(p, j.kb_base)?;
        j.rw_seq_nr = u32::try_from(n).ok().filter(|&n| n > 0).ok_or_else(|| format!("'{p}' is out of range (1..{})", u32::MAX))?;
    } else {
        j.rw_seq_add = seq_add(p, j.kb_base)?;
    }
    Ok(())
}

/// A signed skip: `-4k` goes backwards.
fn seq_add(p: &str, kb_base: u32) -> Result<i64, String> {
    match p.strip_prefix('-') {
        Some(abs) => Ok(-(parse_bytes(abs, kb_base)? as i64)),
        None => Ok(parse_bytes(p, kb_base)? as i64),
    }
}

fn set_rwmixread(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.rwmix_read = int_value(v, j.kb_base, 0, 100)?;
    j.rwmix_write = 100 - j.rwmix_read;
    Ok(())
}

fn set_rwmixwrite(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.rwmix_write = int_value(v, j.kb_base, 0, 100)?;
    j.rwmix_read = 100 - j.rwmix_write;
    Ok(())
}

fn set_bs(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let kb = j.kb_base;
    per_dir(need(v)?, false, &mut j.bs, |p| block_bytes(p, kb))
}

fn set_blockalign(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let kb = j.kb_base;
    per_dir(need(v)?, false, &mut j.blockalign, |p| block_bytes(p, kb))
}

fn set_bsrange(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let kb = j.kb_base;
    let mut ranges = PerDir {
        read: (j.min_bs.read, j.max_bs.read),
        write: (j.min_bs.write, j.max_bs.write),
        trim: (j.min_bs.trim, j.max_bs.trim),
    };
    per_dir(need(v)?, true, &mut ranges, |p| bs_range(p, kb))?;
    for d in [Ddir::Read, Ddir::Write, Ddir::Trim] {
        j.min_bs.set(d, ranges.get(d).0);
        j.max_bs.set(d, ranges.get(d).1);
    }
    Ok(())
}

/// `str_bssplit_cb` → `str_split_parse`: "r,w,t"; one comma gives write and
/// trim the second list; no comma gives all three the same list.
fn set_bssplit(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let s = need(v)?.trim();
    let lists: Vec<&str> = s.splitn(3, ',').collect();
    let pick = |d: usize| lists.get(d).or(lists.last()).copied().unwrap_or("");
    let dirs = [Ddir::Read, Ddir::Write, Ddir::Trim];
    let mut parsed = Vec::with_capacity(3);
    for (i, d) in dirs.iter().enumerate() {
        parsed.push((*d, bssplit_list(pick(i), j.kb_base)?));
    }
    for (d, list) in parsed {
        let Some(list) = list else { continue };
        j.min_bs.set(d, list.iter().map(|e| e.bs).min().unwrap_or(0));
        j.max_bs.set(d, list.iter().map(|e| e.bs).max().unwrap_or(0));
        j.bssplit.set(d, list);
    }
    Ok(())
}

/// `bssplit_ddir`: "bs/perc:bs/perc:..."; `None` for an empty list (no change).
fn bssplit_list(s: &str, kb_base: u32) -> Result<Option<Vec<BsSplit>>, String> {
    let mut entries = Vec::new();
    let mut missing = Vec::new();
    for item in s.split(':') {
        if item.is_empty() {
            break; // split_parse_ddir stops at an empty entry
        }
        if entries.len() == 64 {
            return Err("more than 64 bssplit entries (BSSPLIT_MAX); fio would drop the rest".to_string());
        }
        let (bs, perc) = bssplit_entry(item, kb_base)?;
        if perc.is_none() {
            missing.push(entries.len());
        }
        entries.push(BsSplit { bs, perc: perc.unwrap_or(0) });
    }
    if entries.is_empty() {
        return Ok(None);
    }
    fill_missing_perc(&mut entries, &missing)?;
    // qsort by percentage (glibc's merge sort keeps equal ones in order).
    entries.sort_by_key(|e| e.perc);
    Ok(Some(entries))
}

/// One "bs[/perc]": perc is `atoi` capped at 100; 0 or absent = missing.
fn bssplit_entry(item: &str, kb_base: u32) -> Result<(u64, Option<u32>), String> {
    let (bs, perc) = match item.split_once('/') {
        Some((b, p)) => (b, atoi(p)?),
        None => (item, 0),
    };
    let perc = if perc == 0 { None } else { Some(perc.min(100)) };
    Ok((block_bytes(bs, kb_base)?, perc))
}

/// `atoi` on a percentage: leading digits; anything after them is refused.
fn atoi(p: &str) -> Result<u32, String> {
    if p.is_empty() {
        return Ok(0);
    }
    if !p.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!("'{p}' is not a percentage"));
    }
    Ok(p.parse::<u64>().map(|n| n.min(100) as u32).unwrap_or(100))
}

/// The remainder of 100% shared evenly by entries without one; a single
/// entry without a percentage ends up with 0 (fio's own arithmetic: it sets
/// the sum to 100 first), which does not matter since min_bs == max_bs.
/// fio refuses a sum above 100 only when two or more entries lack a
/// percentage (otherwise its unsigned `100 - perc` wraps); any sum above 100
/// is refused here.
fn fill_missing_perc(entries: &mut [BsSplit], missing: &[usize]) -> SetResult {
    let given: u32 = entries.iter().map(|e| e.perc).sum();
    if given > 100 {
        return Err("bssplit percentages add to more than 100%".to_string());
    }
    if missing.is_empty() {
        return Ok(());
    }
    let sum = if missing.len() == 1 && entries.len() == 1 { 100 } else { given };
    let share = 100u32.saturating_sub(sum) / missing.len() as u32;
    for &i in missing {
        entries[i].perc = share;
    }
    Ok(())
}

fn set_size(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.size = Some(size_value(v, j.kb_base, 1..=100)?);
    Ok(())
}

fn set_offset(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.offset = size_value(v, j.kb_base, 0..=100)?;
    Ok(())
}

fn set_io_size(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.io_size = Some(size_value(v, j.kb_base, 1..=100)?);
    Ok(())
}

fn set_filename(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.filename = Some(need(v)?.to_string());
    Ok(())
}

fn set_cgroup(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.cgroup = Some(need(v)?.to_string());
    Ok(())
}

fn set_direct(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.direct = bool_value(v)?;
    Ok(())
}

/// `buffered` is `direct` negated (`.neg = 1`, same field).
fn set_buffered(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.direct = !bool_value(v)?;
    Ok(())
}

fn set_ioengine(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let s = need(v)?;
    j.ioengine = lookup(ENGINE_NAMES, s).ok_or_else(|| format!("engine '{s}' is not modelled (modelled: {})", names(ENGINE_NAMES)))?;
    Ok(())
}

/// The most I/Os a job keeps in flight: the kernel's default `aio-max-nr`
/// (65536, fs/aio.c), beyond which libaio's `io_setup` fails; each one
/// holds a buffer here.
const MAX_IODEPTH: u32 = 65536;

fn set_iodepth(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.iodepth = int_value(v, j.kb_base, 1, MAX_IODEPTH)?;
    Ok(())
}

fn set_iodepth_batch(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.iodepth_batch_submit = int_value(v, j.kb_base, 0, u32::MAX)?;
    Ok(())
}

fn set_iodepth_batch_complete_min(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.iodepth_batch_complete_min = int_value(v, j.kb_base, 0, u32::MAX)?;
    Ok(())
}

/// The most jobs fio runs (clones included): `add_thread_segment` hands out
/// segments of `JOBS_PER_SEG` = 8 jobs and refuses the one that would make
/// `REAL_MAX_SEG` = 4096 / 8 = 512 ("maximum number of jobs reached"), so
/// 511 segments of 8: 4088 jobs.
pub const FIO_MAX_JOBS: u32 = (4096 / 8 - 1) * 8;

/// fio has no minimum, but `add_job`'s `while (--numjobs)` would spin on 0;
/// above [`FIO_MAX_JOBS`] fio stops with "maximum number of jobs reached".
fn set_numjobs(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.numjobs = int_value(v, j.kb_base, 1, FIO_MAX_JOBS).map_err(|m| format!("{m} (fio runs at most {FIO_MAX_JOBS} jobs)"))?;
    Ok(())
}

fn set_stonewall(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.stonewall = flag_value(v)?;
    Ok(())
}

fn set_new_group(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.new_group = flag_value(v)?;
    Ok(())
}

fn set_ramp_time(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.ramp_time_us = parse_time_us(single(v)?, true)?;
    Ok(())
}

/// `startdelay` is in seconds without a unit (`is_seconds`); fio's range
/// form (`startdelay=1-5`, a random delay) is refused by the unit check.
fn set_startdelay(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.start_delay_us = parse_time_us(single(v)?, true)?;
    Ok(())
}

fn set_rate(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let kb = j.kb_base;
    per_dir(need(v)?, false, &mut j.rate, |p| parse_bytes(p, kb))
}

fn set_rate_iops(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let kb = j.kb_base;
    per_dir(need(v)?, false, &mut j.rate_iops, |p| parse_bytes(p, kb))
}

/// `thinktime` is in microseconds without a unit (`is_time`, not seconds).
fn set_thinktime(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.thinktime_us = parse_time_us(single(v)?, false)?;
    Ok(())
}

fn set_thinktime_blocks(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.thinktime_blocks = int_value(v, j.kb_base, 1, i32::MAX as u32)? as u64;
    Ok(())
}

fn set_prio(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.ioprio = Some(int_value(v, j.kb_base, 0, 7)?);
    Ok(())
}

fn set_prioclass(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.ioprio_class = Some(int_value(v, j.kb_base, 0, 3)?);
    Ok(())
}

fn set_group_reporting(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.group_reporting = flag_value(v)?;
    Ok(())
}

fn set_fsync(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.fsync = int_value(v, j.kb_base, 0, u32::MAX)?;
    Ok(())
}

fn set_fdatasync(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.fdatasync = int_value(v, j.kb_base, 0, u32::MAX)?;
    Ok(())
}

fn set_end_fsync(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.end_fsync = bool_value(v)?;
    Ok(())
}

fn set_runtime(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.runtime_us = parse_time_us(single(v)?, true)?;
    Ok(())
}

fn set_time_based(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.time_based = flag_value(v)?;
    Ok(())
}

fn set_number_ios(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.number_ios = parse_bytes(single(v)?, j.kb_base)?;
    Ok(())
}

fn set_randrepeat(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.randrepeat = bool_value(v)?;
    j.randrepeat_own = j.randrepeat;
    Ok(())
}

fn set_allrandrepeat(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.randrepeat = bool_value(v)?;
    j.allrandrepeat = j.randrepeat;
    Ok(())
}

fn set_randseed(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.randseed = parse_bytes(single(v)?, j.kb_base)?;
    j.randseed_set = true;
    Ok(())
}

fn set_random_generator(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let s = need(v)?;
    j.random_generator = lookup(GENERATOR_NAMES, s).ok_or_else(|| format!("'{s}' is not one of {}", names(GENERATOR_NAMES)))?;
    j.random_generator_set = true;
    Ok(())
}

fn set_random_distribution(j: &mut FioJob, v: Option<&str>) -> SetResult {
    let s = need(v)?;
    let (word, rest) = value_word(s);
    let p = postfix(rest)?;
    j.random_distribution = match word {
        "random" if p.is_none() => RandomDistribution::Random,
        "zipf" => zipf(p)?,
        "pareto" => pareto(p)?,
        "normal" => normal(p)?,
        "random" => return Err(format!("'{s}': 'random' takes no value")),
        "zoned" | "zoned_abs" => {
            j.zone_split = zone_splits(s, word == "zoned_abs", j.kb_base)?;
            if word == "zoned" {
                RandomDistribution::Zoned
            } else {
                RandomDistribution::ZonedAbs
            }
        }
        "sequence" => return Err(format!("distribution '{word}' is not modelled")),
        _ => return Err(format!("'{word}' is not one of random, zipf, pareto, normal, zoned, zoned_abs")),
    };
    Ok(())
}

/// `parse_zoned_distribution`: "zoned:A/S:A/S...", the same zones for every
/// direction. Its per-direction form (lists separated by commas, as for
/// `bssplit`) is refused: fio's option parser splits the value at the comma
/// first and then fails on the second piece.
fn zone_splits(s: &str, absolute: bool, kb_base: u32) -> Result<PerDir<Vec<ZoneSplit>>, String> {
    let Some((_, list)) = s.trim().split_once(':') else { return Err(format!("'{s}': give the zones, e.g. zoned:60/10:30/20:10/70")) };
    if list.contains(',') {
        return Err(format!("'{s}': fio fails to parse zones per direction (a comma in the value)"));
    }
    Ok(PerDir::all(zone_split_ddir(list, absolute, kb_base)?))
}

/// `zone_split_ddir`: access percentages must add up to exactly 100; zones
/// without a size share what the others leave of 100 %.
fn zone_split_ddir(list: &str, absolute: bool, kb_base: u32) -> Result<Vec<ZoneSplit>, String> {
    let mut zones = Vec::new();
    for item in list.split(':') {
        if item.is_empty() {
            break; // split_parse_ddir stops at an empty entry
        }
        if zones.len() == 256 {
            return Err("more than 256 zones (ZONESPLIT_MAX)".to_string());
        }
        let (a, size) = item.split_once('/').map_or((item, None), |(a, b)| (a, Some(b)));
        let access = parse_bytes(a, kb_base)?;
        if access > 100 {
            return Err(format!("'{item}': an access percentage above 100"));
        }
        let z = match (absolute, size) {
            (true, sz) => ZoneSplit { access_perc: access as u8, size_perc: 0, size: sz.map(|x| parse_bytes(x, kb_base)).transpose()?.unwrap_or(0) },
            // atoi capped at 100; 0 or absent is "missing" (fio's 255).
            (false, sz) => ZoneSplit { access_perc: access as u8, size_perc: sz.map(atoi).transpose()?.filter(|&p| p > 0).map_or(u8::MAX, |p| p as u8), size: 0 },
        };
        zones.push(z);
    }
    if zones.is_empty() {
        return Ok(zones);
    }
    let perc: u32 = zones.iter().map(|z| z.access_perc as u32).sum();
    let missing = zones.iter().filter(|z| !absolute && z.size_perc == u8::MAX).count() as u32;
    let sperc: u32 = zones.iter().filter(|z| !absolute && z.size_perc != u8::MAX).map(|z| z.size_perc as u32).sum();
    if perc > 100 || sperc > 100 {
        return Err("zone_split percentages add to more than 100%".to_string());
    }
    if perc < 100 {
        return Err(format!("access percentage don't add up to 100 for zoned random distribution (got={perc})"));
    }
    if missing > 0 {
        let sum = if missing == 1 && zones.len() == 1 { 100 } else { sperc };
        for z in zones.iter_mut().filter(|z| z.size_perc == u8::MAX) {
            z.size_perc = ((100 - sum) / missing) as u8;
        }
    }
    Ok(zones)
}

/// `split_parse_distr`: "value[:center]", center in [0, 1].
fn distr_args(p: Option<&str>, default: f64) -> Result<(f64, Option<f64>), String> {
    let Some(p) = p else { return Ok((default, None)) };
    let (v, c) = match p.split_once(':') {
        Some((v, c)) => (v, Some(c)),
        None => (p, None),
    };
    let val = float(v)?;
    let center = c.map(float).transpose()?;
    if let Some(c) = center {
        if !(0.0..=1.0).contains(&c) {
            return Err("distribution center out of range (0 <= center <= 1.0)".to_string());
        }
    }
    Ok((val, center))
}

fn float(s: &str) -> Result<f64, String> {
    let v: f64 = s.trim().parse().map_err(|_| format!("'{s}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{s}' is not a finite number"));
    }
    Ok(v)
}

fn zipf(p: Option<&str>) -> Result<RandomDistribution, String> {
    let (theta, center) = distr_args(p, 1.1)?;
    if theta == 1.0 {
        return Err("zipf theta must be different than 1.0".to_string());
    }
    Ok(RandomDistribution::Zipf { theta, center })
}

fn pareto(p: Option<&str>) -> Result<RandomDistribution, String> {
    let (h, center) = distr_args(p, 0.2)?;
    if h <= 0.0 || h >= 1.0 {
        return Err("pareto input out of range (0 < input < 1.0)".to_string());
    }
    Ok(RandomDistribution::Pareto { h, center })
}

fn normal(p: Option<&str>) -> Result<RandomDistribution, String> {
    let (dev, center) = distr_args(p, 0.0)?;
    if !(0.0..100.0).contains(&dev) {
        return Err("normal deviation out of range (0 <= input < 100.0)".to_string());
    }
    Ok(RandomDistribution::Normal { dev, center })
}

fn set_norandommap(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.norandommap = flag_value(v)?;
    Ok(())
}

fn set_invalidate(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.invalidate = bool_value(v)?;
    Ok(())
}

fn set_zonemode(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.zonemode = match need(v)? {
        "none" => ZoneMode::None,
        "zbd" => ZoneMode::Zbd,
        "strided" => return Err("zonemode 'strided' is not modelled".to_string()),
        s => return Err(format!("'{s}' is not one of none, zbd")),
    };
    Ok(())
}

fn set_kb_base(j: &mut FioJob, v: Option<&str>) -> SetResult {
    j.kb_base = match need(v)? {
        "1024" => 1024,
        "1000" => 1000,
        s => return Err(format!("'{s}' is not 1024 or 1000")),
    };
    Ok(())
}

type Setter = fn(&mut FioJob, Option<&str>) -> SetResult;

/// A modelled option: name, aliases, whether it is a flag (FIO_OPT_STR_SET:
/// the value is optional), and its setter.
struct Opt {
    name: &'static str,
    alias: &'static [&'static str],
    flag: bool,
    set: Setter,
}

const fn opt(name: &'static str, alias: &'static [&'static str], set: Setter) -> Opt {
    Opt { name, alias, flag: false, set }
}

const fn flag(name: &'static str, set: Setter) -> Opt {
    Opt { name, alias: &[], flag: true, set }
}

const OPTIONS: &[Opt] = &[
    opt("name", &[], set_name),
    opt("kb_base", &[], set_kb_base),
    opt("rw", &["readwrite"], set_rw),
    opt("rwmixread", &[], set_rwmixread),
    opt("rwmixwrite", &[], set_rwmixwrite),
    opt("bs", &["blocksize"], set_bs),
    opt("bsrange", &["blocksize_range"], set_bsrange),
    opt("bssplit", &[], set_bssplit),
    opt("ba", &["blockalign"], set_blockalign),
    opt("size", &[], set_size),
    opt("offset", &["fileoffset"], set_offset),
    opt("filename", &[], set_filename),
    opt("cgroup", &[], set_cgroup),
    opt("direct", &[], set_direct),
    opt("buffered", &[], set_buffered),
    opt("ioengine", &[], set_ioengine),
    opt("iodepth", &[], set_iodepth),
    opt("iodepth_batch", &["iodepth_batch_submit"], set_iodepth_batch),
    opt("iodepth_batch_complete_min", &["iodepth_batch_complete"], set_iodepth_batch_complete_min),
    opt("numjobs", &[], set_numjobs),
    opt("prio", &[], set_prio),
    opt("prioclass", &[], set_prioclass),
    flag("group_reporting", set_group_reporting),
    opt("fsync", &[], set_fsync),
    opt("fdatasync", &[], set_fdatasync),
    opt("end_fsync", &[], set_end_fsync),
    opt("runtime", &["timeout"], set_runtime),
    flag("time_based", set_time_based),
    opt("number_ios", &[], set_number_ios),
    opt("io_size", &["io_limit"], set_io_size),
    opt("randrepeat", &[], set_randrepeat),
    opt("allrandrepeat", &[], set_allrandrepeat),
    opt("randseed", &[], set_randseed),
    opt("random_generator", &[], set_random_generator),
    opt("random_distribution", &[], set_random_distribution),
    flag("norandommap", set_norandommap),
    Opt { name: "stonewall", alias: &["wait_for_previous"], flag: true, set: set_stonewall },
    flag("new_group", set_new_group),
    opt("ramp_time", &[], set_ramp_time),
    opt("startdelay", &[], set_startdelay),
    opt("rate", &[], set_rate),
    opt("rate_iops", &[], set_rate_iops),
    opt("thinktime", &[], set_thinktime),
    opt("thinktime_blocks", &[], set_thinktime_blocks),
    opt("invalidate", &[], set_invalidate),
    opt("zonemode", &[], set_zonemode),
];

/// Job options that do not change the I/O reaching the block layer
/// (reporting, logs, CPU placement, buffer contents). `true` = a flag
/// (FIO_OPT_STR_SET, value optional on the command line).
const COSMETIC: &[(&str, bool)] = &[
    ("verify", false), // only verify=0; any other value adds read-back I/O
    ("verify_fatal", false),
    ("verify_dump", false),
    ("verify_backlog", false),
    ("do_verify", false),
    ("description", false),
    ("thread", true),
    ("cpus_allowed", false),
    ("cpus_allowed_policy", false),
    ("cpumask", false),
    ("lat_percentiles", false),
    ("clat_percentiles", false),
    ("slat_percentiles", false),
    ("percentile_list", false),
    ("per_job_logs", false),
    ("write_bw_log", false),
    ("write_lat_log", false),
    ("write_iops_log", false),
    ("write_hist_log", false),
    ("log_avg_msec", false),
    ("log_hist_msec", false),
    ("log_max_value", false),
    ("log_offset", false),
    ("log_unix_epoch", false),
    ("disable_lat", false),
    ("disable_clat", false),
    ("disable_slat", false),
    ("disable_bw_measurement", false),
    ("disable_bw", false),
    ("gtod_reduce", false),
    ("clocksource", false),
    ("unified_rw_reporting", false),
    ("stats", false),
    ("significant_figures", false),
    ("unit_base", false),
    ("buffer_compress_percentage", false),
    ("buffer_compress_chunk", false),
    ("refill_buffers", true),
    ("scramble_buffers", false),
    ("zero_buffers", true),
    ("buffer_pattern", false),
    ("dedupe_percentage", false),
    // RWF_HIPRI / IORING_SETUP_IOPOLL: polled completion. The model's queues
    // have no poll queues, so submit_bio_noacct clears REQ_POLLED and the
    // bios are those of an interrupt-driven run.
    ("hipri", true),
];

/// fio's options of type FIO_OPT_STR_SET (options.c and the sync, libaio and
/// io_uring engines, fio at commit f5344384): flags whose value is optional,
/// so `--stonewall --rw=write` is two options, not `stonewall=--rw=write`.
const FIO_FLAG_NAMES: &[&str] = &[
    "bs_unaligned", "blocksize_unaligned", "norandommap", "time_based", "verify_only", "exitall",
    "exitall_on_error", "stonewall", "wait_for_previous", "new_group", "thread", "group_reporting",
    "zero_buffers", "refill_buffers", "hipri", "fixedbufs", "registerfiles", "sqthread_poll", "userspace_reap",
];

/// fio's own command-line options (init.c `l_opts`): (name, takes an
/// argument: 0 none, 1 optional, 2 required, cosmetic).
const PROGRAM_OPTS: &[(&str, u8, bool)] = &[
    ("output", 2, true),
    ("output-format", 2, true),
    ("minimal", 0, true),
    ("append-terse", 1, true),
    ("terse-version", 2, true),
    ("bandwidth-log", 1, true),
    ("eta", 2, true),
    ("eta-interval", 2, true),
    ("eta-newline", 2, true),
    ("status-interval", 2, true),
    ("debug", 2, true),
    ("warnings-fatal", 0, true),
    ("max-jobs", 2, true),
    ("alloc-size", 2, true),
    ("aux-path", 2, true),
    ("latency-log", 2, false),
    ("version", 0, false),
    ("help", 0, false),
    ("cmdhelp", 1, false),
    ("enghelp", 1, false),
    ("showcmd", 0, false),
    ("readonly", 0, false),
    ("parse-only", 0, false),
    ("section", 2, false),
    ("profile", 2, false),
    ("server", 1, false),
    ("client", 2, false),
    ("remote-config", 2, false),
    ("daemonize", 2, false),
    ("idle-prof", 2, false),
    ("inflate-log", 2, false),
    ("trigger-file", 2, false),
    ("trigger-timeout", 2, false),
    ("trigger", 2, false),
    ("trigger-remote", 2, false),
    ("crctest", 1, false),
    ("memcpytest", 1, false),
    ("cpuclock-test", 0, false),
];

/// Every job option name and alias fio knows (options.c, plus the libaio,
/// io_uring and sync engines' own options), from fio at commit f5344384; used
/// only to tell an fio option this model does not reproduce from a name
/// fio itself would refuse.
const FIO_OPTION_NAMES: &str = "\
    allow_file_create allow_mounted_write allrandrepeat apptag apptag_mask atomic ba \
    block_error_percentiles blockalign blocksize blocksize_range blocksize_unaligned bs bs_is_seq_rand \
    bs_unaligned bsrange bssplit buffer_compress_chunk buffer_compress_percentage buffer_pattern \
    buffered bwavgtime cdb_len cgroup cgroup_nodelete cgroup_weight clat_percentiles clocksource \
    cmd_type comm continue_on_error cpumask cpus_allowed cpus_allowed_policy create_fsync create_on_open \
    create_only create_serialize data_placement dataplacement deac dedupe_global dedupe_mode \
    dedupe_percentage dedupe_working_set_percentage description direct directory disable_bw \
    disable_bw_measurement disable_clat disable_lat disable_slat disk_util do_verify dp_scheme end_fsync \
    end_syncfs error_dump exec_postrun exec_prerun exit_what exitall exitall_on_error \
    experimental_verify fadvise_hint fallocate fdatasync fdp fdp_pli fdp_pli_select file_append \
    file_service_type filename filename_format fileoffset filesize filetype fill_device fill_fs \
    fixedbufs flow flow_id flow_sleep flow_watermark force_async fsync fsync_on_close gid gpu_dev_id \
    group_reporting gtod_cpu gtod_reduce hipri hipri_percentage hugepage-size ignore_error \
    ignore_zone_limits invalidate io_limit io_size io_submit_mode iodepth iodepth_batch \
    iodepth_batch_complete iodepth_batch_complete_max iodepth_batch_complete_min iodepth_batch_submit \
    iodepth_low ioengine iomem iomem_align iopsavgtime ioscheduler job_max_open_zones job_start_clock_id \
    kb_base lat_percentiles latency_percentile latency_run latency_target latency_window libaio_vectored \
    lockfile lockmem log_alternate_epoch log_alternate_epoch_clock_id log_avg_msec log_compression \
    log_compression_cpus log_entries log_hist_coarseness log_hist_msec log_issue_time log_max_value \
    log_offset log_prio log_store_compressed log_unix_epoch log_window_value loops max_latency \
    max_open_zones md_per_io_size mem mem_align merge_blktrace_file merge_blktrace_iters \
    merge_blktrace_scalars name new_group nice nonvectored norandommap nowait nr_files nrfiles num_range \
    numa_cpu_nodes numa_mem_policy number_ios numjobs offset offset_align offset_increment opendir \
    openfiles overwrite per_job_logs percentage_random percentage_sequential percentile_list pi_act \
    pi_chk plid_select plids pre_read prio prioclass priohint profile ramp_size ramp_time \
    random_distribution random_generator random_sequence_stride randrepeat randseed rate rate_cycle \
    rate_ignore_thinktime rate_iops rate_iops_min rate_min rate_process ratecycle ratemin read_beyond_wp \
    read_iolog read_iolog_chunked read_mode readfua readwrite recover_zbd_write_error refill_buffers \
    registerfiles replay_align replay_no_stall replay_redirect replay_scale replay_skip \
    replay_time_scale runtime rw rw_sequencer rwmixcycle rwmixread rwmixwrite scramble_buffers \
    serialize_overlap significant_figures size slat_percentiles softrandommap spr_cs spr_num_regions \
    spr_op sprandom sqthread_poll sqthread_poll_cpu ss ss_dur ss_interval ss_ramp startdelay stats \
    steadystate steadystate_check_interval steadystate_duration steadystate_ramp_time stonewall sync \
    sync_file_range thinkcycles thinktime thinktime_blocks thinktime_blocks_type thinktime_iotime \
    thinktime_spin thread time_based timeout trim_backlog trim_backlog_batch trim_percentage \
    trim_verify_zero uid uncached unified_rw_reporting unique_filename unit_base unlink unlink_each_loop \
    userspace_reap verify verify_async verify_async_cpus verify_backlog verify_backlog_batch \
    verify_bytchk verify_dump verify_fatal verify_header_seed verify_interval verify_mode verify_offset \
    verify_only verify_pattern verify_pattern_interval verify_policy verify_state_load verify_state_save \
    verify_write_sequence verifysort verifysort_nr wait_for wait_for_previous write_barrier write_bw_log \
    write_hint write_hist_log write_iolog write_iops_log write_lat_log write_mode write_zone_remainder \
    writefua zero_buffers zone_reset_frequency zone_reset_threshold zonecapacity zonemode zonerange \
    zonesize zoneskip";

fn is_fio_option(name: &str) -> bool {
    FIO_OPTION_NAMES.split(' ').any(|n| n == name)
}

fn find_opt(name: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.name == name || o.alias.contains(&name))
}

fn find_cosmetic(name: &str) -> Option<bool> {
    lookup(COSMETIC, name)
}

/// Whether job option `name` takes its value only after '=' (flags).
fn is_flag(name: &str) -> bool {
    find_opt(name).map(|o| o.flag).or_else(|| find_cosmetic(name)).unwrap_or(false) || FIO_FLAG_NAMES.contains(&name)
}

// ---------------------------------------------------------------------------
// Applying options

/// One `key[=value]` as written, with where it came from.
#[derive(Clone, Debug)]
struct RawOpt {
    key: String,
    value: Option<String>,
    at: Location,
}

impl RawOpt {
    fn err(&self, kind: FioErrorKind, msg: impl Into<String>) -> FioError {
        FioError { kind, at: self.at.clone(), option: Some(self.key.clone()), msg: msg.into() }
    }

    /// The option as fio lists it in its JSON report.
    fn given(&self) -> (String, Option<String>) {
        (self.key.clone(), self.value.clone())
    }
}

/// Environment (`${VAR}`) and keyword (`$pagesize`...) substitution, which
/// fio performs (and then runs `bc`), are not reproduced.
fn check_substitution(o: &RawOpt) -> Result<(), FioError> {
    let v = o.value.as_deref().unwrap_or("");
    if v.contains("${") || ["$pagesize", "$mb_memory", "$ncpus"].iter().any(|k| v.contains(k)) {
        return Err(o.err(FioErrorKind::NotModelled, "variable substitution is not supported; write the value out"));
    }
    Ok(())
}

/// Apply one option to `job`; cosmetic options become warnings.
fn apply(job: &mut FioJob, o: &RawOpt, warnings: &mut Vec<FioWarning>) -> Result<(), FioError> {
    check_substitution(o)?;
    let v = o.value.as_deref();
    if v.is_some_and(|s| s.starts_with(|c: char| c.is_whitespace())) {
        return Err(o.err(FioErrorKind::BadValue, "the value starts with a space; fio reads it differently (e.g. 'bs = 4k' as 4 bytes)"));
    }
    if let Some(opt) = find_opt(&o.key) {
        return (opt.set)(job, v).map_err(|m| o.err(FioErrorKind::BadValue, m));
    }
    if find_cosmetic(&o.key).is_some() {
        return cosmetic(o, warnings);
    }
    if !is_fio_option(&o.key) {
        return Err(o.err(FioErrorKind::UnknownOption, "not an fio option"));
    }
    Err(o.err(FioErrorKind::NotModelled, "not modelled; it may change the I/O, so the job cannot be reproduced"))
}

fn cosmetic(o: &RawOpt, warnings: &mut Vec<FioWarning>) -> Result<(), FioError> {
    if o.key == "verify" && o.value.as_deref() != Some("0") {
        return Err(o.err(FioErrorKind::NotModelled, "only verify=0 is modelled (verification adds read-back I/O)"));
    }
    warnings.push(FioWarning { at: o.at.clone(), option: o.key.clone(), msg: "ignored: it does not change the I/O".to_string() });
    Ok(())
}

/// `sort_options` by priority: kb_base (prio 1) first, filename (prio -1)
/// last, the rest in file order.
fn by_priority(opts: &[RawOpt]) -> Vec<&RawOpt> {
    let prio = |o: &RawOpt| match o.key.as_str() {
        "kb_base" => 0,
        "filename" => 2,
        _ => 1,
    };
    let mut v: Vec<&RawOpt> = opts.iter().collect();
    v.sort_by_key(|o| prio(o));
    v
}

// ---------------------------------------------------------------------------
// Job files (init.c __parse_jobs_ini)

/// fio reads lines with `fgets(OPT_LEN_MAX = 8192)`; longer lines would be
/// cut into several.
const LINE_MAX: usize = 8190;
/// Include nesting limit, and the most includes one parse follows (fio has
/// neither, and recurses forever on a cycle).
const INCLUDE_DEPTH: usize = 16;
const INCLUDE_BUDGET: usize = 256;

struct Section {
    name: String,
    global: bool,
    opts: Vec<RawOpt>,
}

/// Builds jobs from sections and command-line options.
struct Reader<'a> {
    files: &'a dyn JobFiles,
    global: FioJob,
    out: FioParse,
    /// The job file and the includes being read, outermost first.
    reading: Vec<String>,
    includes: usize,
    /// The options of the command-line job being read, as written.
    cmd_opts: Vec<(String, Option<String>)>,
}

impl<'a> Reader<'a> {
    fn new(files: &'a dyn JobFiles) -> Self {
        Reader { files, global: FioJob::default(), out: FioParse::default(), reading: Vec::new(), includes: 0, cmd_opts: Vec::new() }
    }

    fn finish_section(&mut self, s: Section) -> Result<(), FioError> {
        let mut job = if s.global { std::mem::take(&mut self.global) } else { self.new_job(&s.name) };
        for o in by_priority(&s.opts) {
            apply(&mut job, o, &mut self.out.warnings)?;
        }
        let given = s.opts.iter().map(RawOpt::given).collect();
        if s.global {
            self.global = job;
            self.out.global_options.extend(given);
        } else {
            self.out.jobs.push(job);
            self.out.job_options.push(given);
        }
        Ok(())
    }

    /// `get_new_job`: a copy of the global options, named after the section.
    fn new_job(&self, name: &str) -> FioJob {
        FioJob { name: name.to_string(), ..self.global.clone() }
    }

    fn read_file(&self, path: &str) -> Result<String, FioError> {
        self.files.read(path).map_err(|m| FioError {
            kind: FioErrorKind::Io,
            at: Location::File { file: path.to_string() },
            option: None,
            msg: format!("unable to open job file: {m}"),
        })
    }

    /// Parse one job file's text into sections and jobs.
    fn parse_ini(&mut self, file: &str, text: &str) -> Result<(), FioError> {
        self.reading = vec![file.to_string()];
        let mut section: Option<Section> = None;
        for (i, raw) in text.lines().enumerate() {
            let at = Location::Line { file: file.to_string(), line: i + 1 };
            let Some(line) = clean_line(raw, &at)? else { continue };
            if line.starts_with('[') {
                if let Some(s) = section.take() {
                    self.finish_section(s)?;
                }
                section = Some(section_header(line, &at)?);
                continue;
            }
            let Some(s) = section.as_mut() else {
                return Err(syntax(&at, format!("option <{line}> outside of [] job section")));
            };
            self.section_line(s, file, line, at)?;
        }
        match section {
            Some(s) => self.finish_section(s),
            None => Ok(()),
        }
    }

    /// An option line or an include inside a section.
    fn section_line(&mut self, s: &mut Section, file: &str, line: &str, at: Location) -> Result<(), FioError> {
        if line.starts_with("include") {
            return self.include(s, file, line, &at);
        }
        s.opts.push(option_line(line, at));
        Ok(())
    }

    /// `include FILE`: its options join the current section.
    fn include(&mut self, s: &mut Section, file: &str, line: &str, at: &Location) -> Result<(), FioError> {
        let name = line.strip_prefix("include").and_then(|r| r.strip_prefix([' ', '\t'])).unwrap_or("");
        if name.is_empty() {
            return Err(syntax(at, "include needs a file name"));
        }
        let path = self.include_path(file, name);
        self.enter_include(&path, at)?;
        let text = self.read_file(&path).map_err(|e| FioError { at: at.clone(), ..e })?;
        for (i, raw) in text.lines().enumerate() {
            let at = Location::Line { file: path.clone(), line: i + 1 };
            let Some(l) = clean_line(raw, &at)? else { continue };
            if l.starts_with('[') {
                return Err(syntax(&at, "no new sections in included files"));
            }
            self.section_line(s, &path, l, at)?;
        }
        self.reading.pop();
        Ok(())
    }

    /// Refuse include cycles, deep nesting and runaway include counts.
    fn enter_include(&mut self, path: &str, at: &Location) -> Result<(), FioError> {
        if self.reading.iter().any(|f| f == path) {
            return Err(syntax(at, format!("include cycle: {} -> {path}", self.reading.join(" -> "))));
        }
        // `reading` holds the job file and the includes already open.
        if self.reading.len() > INCLUDE_DEPTH {
            return Err(syntax(at, format!("includes nested deeper than {INCLUDE_DEPTH}")));
        }
        self.includes += 1;
        if self.includes > INCLUDE_BUDGET {
            return Err(syntax(at, format!("more than {INCLUDE_BUDGET} includes")));
        }
        self.reading.push(path.to_string());
        Ok(())
    }

    /// A name that does not exist as given is taken relative to the
    /// including file's directory.
    fn include_path(&self, file: &str, name: &str) -> String {
        match file.rfind('/') {
            Some(slash) if !self.files.exists(name) => format!("{}{}", &file[..=slash], name),
            _ => name.to_string(),
        }
    }
}

fn syntax(at: &Location, msg: impl Into<String>) -> FioError {
    FioError { kind: FioErrorKind::Syntax, at: at.clone(), option: None, msg: msg.into() }
}

/// `strip_blank_front` + `strip_blank_end` (which cuts at the first ';' and
/// the first '#', anywhere) + `is_empty_or_comment`. `None` for nothing left.
fn clean_line<'t>(raw: &'t str, at: &Location) -> Result<Option<&'t str>, FioError> {
    if raw.len() > LINE_MAX {
        return Err(syntax(at, format!("line longer than {LINE_MAX} characters (fio would split it)")));
    }
    if raw.contains('\0') {
        return Err(syntax(at, "NUL character in line"));
    }
    let cut = raw.find([';', '#']).unwrap_or(raw.len());
    let line = raw[..cut].trim_start().trim_end_matches(|c: char| c.is_whitespace() || c.is_control());
    Ok(if line.is_empty() { None } else { Some(line) })
}

/// `[name]`; a name starting with "global" is a global section.
fn section_header(line: &str, at: &Location) -> Result<Section, FioError> {
    let name = line[1..].strip_suffix(']').ok_or_else(|| syntax(at, format!("section header {line} does not end in ']'")))?;
    if name.is_empty() || name.len() > 255 {
        return Err(syntax(at, format!("bad section name in {line}")));
    }
    Ok(Section { name: name.to_string(), global: name.starts_with("global"), opts: Vec::new() })
}

/// `key=value` (trailing blanks of the key dropped, as `get_option` does) or `key`.
fn option_line(line: &str, at: Location) -> RawOpt {
    match line.split_once('=') {
        Some((k, v)) => RawOpt { key: k.trim_end().to_string(), value: Some(v.to_string()), at },
        None => RawOpt { key: line.to_string(), value: None, at },
    }
}

/// Parse the job file at `path`; includes are read through `files` too.
pub fn parse_job_file(path: &str, files: &dyn JobFiles) -> Result<FioParse, FioError> {
    let mut r = Reader::new(files);
    let text = r.read_file(path)?;
    r.parse_ini(path, &text)?;
    Ok(r.out)
}

/// Parse job-file text named `file` (for messages and relative includes).
pub fn parse_job_text(file: &str, text: &str, files: &dyn JobFiles) -> Result<FioParse, FioError> {
    let mut r = Reader::new(files);
    r.parse_ini(file, text)?;
    Ok(r.out)
}

// ---------------------------------------------------------------------------
// Command lines (init.c parse_cmd_line)

/// Where command-line options currently go.
enum Target {
    /// No job yet: options go to the global defaults.
    Global,
    Job(Box<FioJob>),
}

/// Parse fio's arguments (`args[0]` may be the program name "fio").
/// Non-option arguments are job files, read after the command line.
pub fn parse_args<S: AsRef<str>>(args: &[S], files: &dyn JobFiles) -> Result<FioParse, FioError> {
    let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
    let mut r = Reader::new(files);
    let mut target = Target::Global;
    let mut job_files = Vec::new();
    let mut i = usize::from(args.first().is_some_and(|a| is_program_name(a)));
    let mut only_files = false;
    while i < args.len() {
        let a = args[i];
        if only_files || !a.starts_with('-') || a == "-" {
            job_files.push((i, a));
        } else if a == "--" {
            only_files = true;
        } else {
            i = r.cmd_option(&args, i, &mut target)?;
        }
        i += 1;
    }
    r.end_target(target);
    for (i, f) in job_files {
        let text = r.read_file(f).map_err(|e| FioError { at: Location::Arg { index: i }, ..e })?;
        r.parse_ini(f, &text)?;
    }
    Ok(r.out)
}

fn is_program_name(a: &str) -> bool {
    a == "fio" || a.ends_with("/fio")
}

/// Split a command line as a POSIX shell would (quotes, backslashes,
/// backslash-newline) and parse it with [`parse_args`].
pub fn parse_cmdline(line: &str, files: &dyn JobFiles) -> Result<FioParse, FioError> {
    parse_args(&split_shell_words(line)?, files)
}

impl<'a> Reader<'a> {
    /// One `--opt[=value]` (or `-opt`, as getopt_long_only allows) at
    /// `args[i]`; returns the index of the last argument used.
    fn cmd_option(&mut self, args: &[&str], i: usize, target: &mut Target) -> Result<usize, FioError> {
        let body = args[i].strip_prefix("--").unwrap_or(&args[i][1..]);
        let (name, value) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (body, None),
        };
        let at = Location::Arg { index: i };
        if let Some(&(_, arg, ok)) = PROGRAM_OPTS.iter().find(|(n, _, _)| *n == name) {
            return self.program_option(args, i, name, value, arg, ok);
        }
        let (value, last) = take_value(args, i, name, value, is_flag(name))?;
        let o = RawOpt { key: name.to_string(), value: value.map(str::to_string), at };
        if name == "name" {
            self.cmd_name(&o, target)?;
        } else {
            let job = match target {
                Target::Global => &mut self.global,
                Target::Job(j) => j,
            };
            apply(job, &o, &mut self.out.warnings)?;
            match target {
                Target::Global => self.out.global_options.push(o.given()),
                Target::Job(_) => self.cmd_opts.push(o.given()),
            }
        }
        Ok(last)
    }

    /// `--name`: finish the current job, start a new one (or go back to the
    /// global options for `--name=global`).
    fn cmd_name(&mut self, o: &RawOpt, target: &mut Target) -> Result<(), FioError> {
        let old = std::mem::replace(target, Target::Global);
        self.end_target(old);
        let v = o.value.as_deref().unwrap_or("");
        if v.starts_with("global") {
            return apply(&mut self.global, o, &mut self.out.warnings);
        }
        let mut job = self.new_job("");
        apply(&mut job, o, &mut self.out.warnings)?;
        *target = Target::Job(Box::new(job));
        self.cmd_opts = vec![o.given()];
        Ok(())
    }

    fn end_target(&mut self, t: Target) {
        if let Target::Job(j) = t {
            self.out.jobs.push(*j);
            self.out.job_options.push(std::mem::take(&mut self.cmd_opts));
        }
    }

    fn program_option(&mut self, args: &[&str], i: usize, name: &str, value: Option<&str>, arg: u8, ok: bool) -> Result<usize, FioError> {
        let at = Location::Arg { index: i };
        let (_, last) = if arg == 2 { take_value(args, i, name, value, false)? } else { (value, i) };
        if !ok {
            let msg = "fio program option not modelled (it changes what runs)";
            return Err(FioError { kind: FioErrorKind::NotModelled, at, option: Some(name.to_string()), msg: msg.to_string() });
        }
        if name == "output-format" {
            let v = if arg == 2 && value.is_none() { args.get(i + 1).copied() } else { value };
            let v = v.unwrap_or("");
            check_output_format(v).map_err(|msg| FioError { kind: FioErrorKind::BadValue, at, option: Some(name.to_string()), msg })?;
            self.out.output_format = Some(v.to_string());
            return Ok(last);
        }
        let msg = "ignored: it does not change the I/O".to_string();
        self.out.warnings.push(FioWarning { at, option: name.to_string(), msg });
        Ok(last)
    }
}

/// `--output-format`: the formats the report can be written in.
fn check_output_format(v: &str) -> Result<(), String> {
    for f in v.split(',') {
        if !matches!(f, "normal" | "json" | "json+") {
            return Err(format!("'{f}': output format not modelled (normal, json, json+)"));
        }
    }
    Ok(())
}

/// The option's value: after '=', else (required_argument) the next word.
fn take_value<'s>(args: &[&'s str], i: usize, name: &str, value: Option<&'s str>, flag: bool) -> Result<(Option<&'s str>, usize), FioError> {
    if value.is_some() || flag {
        return Ok((value, i));
    }
    match args.get(i + 1) {
        Some(v) => Ok((Some(*v), i + 1)),
        None => Err(FioError {
            kind: FioErrorKind::Syntax,
            at: Location::Arg { index: i },
            option: Some(name.to_string()),
            msg: "requires an argument".to_string(),
        }),
    }
}

/// POSIX shell word splitting without expansion: whitespace separates words;
/// '...' is literal; "..." keeps `\"`, `\\`, `\$`, `` \` `` escapes; a
/// backslash outside quotes escapes the next character and backslash-newline
/// joins lines. Expansions and operators (`$`, `` ` ``, `|`, `;`, `&`, `<`,
/// `>`, `(`, `)`) are refused.
pub fn split_shell_words(line: &str) -> Result<Vec<String>, FioError> {
    let mut words = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        let r = match c {
            c if c.is_whitespace() => {
                words.extend(cur.take());
                Ok(())
            }
            '\'' => single_quoted(&mut chars, cur.get_or_insert_with(String::new)),
            '"' => double_quoted(&mut chars, cur.get_or_insert_with(String::new)),
            '\\' => {
                backslash(chars.next(), &mut cur);
                Ok(())
            }
            '$' | '`' | '|' | ';' | '&' | '<' | '>' | '(' | ')' => Err(format!("shell syntax '{c}' is not supported")),
            c => {
                cur.get_or_insert_with(String::new).push(c);
                Ok(())
            }
        };
        r.map_err(|msg| FioError { kind: FioErrorKind::Syntax, at: Location::Arg { index: words.len() }, option: None, msg })?;
    }
    words.extend(cur);
    Ok(words)
}

/// Outside quotes: backslash-newline joins lines, otherwise the next
/// character is taken literally.
fn backslash(next: Option<char>, cur: &mut Option<String>) {
    match next {
        Some('\n') | None => {}
        Some(n) => cur.get_or_insert_with(String::new).push(n),
    }
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn single_quoted(chars: &mut Chars, out: &mut String) -> Result<(), String> {
    for c in chars.by_ref() {
        if c == '\'' {
            return Ok(());
        }
        out.push(c);
    }
    Err("unterminated single quote".to_string())
}

fn double_quoted(chars: &mut Chars, out: &mut String) -> Result<(), String> {
    while let Some(c) = chars.next() {
        match c {
            '"' => return Ok(()),
            '$' | '`' => return Err(format!("shell expansion '{c}' is not supported")),
            '\\' => match chars.next() {
                Some(n @ ('"' | '\\' | '$' | '`')) => out.push(n),
                Some('\n') => {}
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => break,
            },
            c => out.push(c),
        }
    }
    Err("unterminated double quote".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seed 001's benchmark (revert of "block: don't reorder requests in
    /// blk_add_rq_to_plug"), as its author typed it.
    const SEED_001: &str = r#"fio --time_based --name=benchmark --size=50G --rw=randwrite --runtime=60 --filename="/dev/nvme1n1" --ioengine=psync --randrepeat=0 --iodepth=1 --fsync=64 --invalidate=1 --verify=0 --verify_fatal=0 --blocksize=4k --numjobs=4 --group_reporting"#;

    /// The same job as a job file. On the command line the shell removed the
    /// quotes around the file name; a job file would keep them, so none here.
    const SEED_001_FILE: &str = "\
; seed 001
[global]
time_based

[benchmark]
size=50G
rw=randwrite
runtime=60
filename=/dev/nvme1n1   # the NVMe namespace
ioengine=psync
randrepeat=0
iodepth=1
fsync=64
invalidate=1
verify=0
verify_fatal=0
blocksize=4k
numjobs=4
group_reporting
";

    fn seed_job() -> FioJob {
        FioJob {
            name: "benchmark".to_string(),
            rw: ReadWrite::RandWrite,
            // 50G: 'g' with kb_base 1024 → 50 × 1024³ = 53,687,091,200 bytes.
            size: Some(Size::Bytes(50 * (1 << 30))),
            // 60 without a unit is seconds: 60 × 10⁶ µs.
            runtime_us: 60_000_000,
            time_based: true,
            filename: Some("/dev/nvme1n1".to_string()),
            ioengine: IoEngine::Psync,
            randrepeat: false,
            randrepeat_own: false,
            iodepth: 1,
            fsync: 64,
            invalidate: true,
            bs: PerDir::all(4096),
            numjobs: 4,
            group_reporting: true,
            ..FioJob::default()
        }
    }

    fn cmd(line: &str) -> Result<FioParse, FioError> {
        parse_cmdline(line, &NoJobFiles)
    }

    fn file(text: &str) -> Result<FioParse, FioError> {
        parse_job_text("job.fio", text, &NoJobFiles)
    }

    fn one(text: &str) -> FioJob {
        let p = file(&format!("[j]\n{text}\n")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.jobs.len(), 1);
        p.jobs.into_iter().next().unwrap()
    }

    fn bad(text: &str) -> FioError {
        file(&format!("[j]\n{text}\n")).expect_err(text)
    }

    #[test]
    fn seed_001_command_line() {
        let p = cmd(SEED_001).unwrap();
        assert_eq!(p.jobs, vec![seed_job()]);
        // verify and verify_fatal are cosmetic: arguments 12 and 13 (0 is "fio").
        let w: Vec<(String, Location)> = p.warnings.iter().map(|w| (w.option.clone(), w.at.clone())).collect();
        assert_eq!(w, vec![("verify".into(), Location::Arg { index: 12 }), ("verify_fatal".into(), Location::Arg { index: 13 })]);
    }

    #[test]
    fn seed_001_job_file_matches_command_line() {
        let f = file(SEED_001_FILE).unwrap();
        let c = cmd(SEED_001).unwrap();
        assert_eq!(f.jobs, c.jobs);
        assert_eq!(f.warnings[0].at, Location::Line { file: "job.fio".into(), line: 15 });
        assert_eq!(f.warnings[1].at, Location::Line { file: "job.fio".into(), line: 16 });
    }

    #[test]
    fn prio_and_prioclass_set_the_task_ioprio() {
        use crate::sched::bfq_ioprio::{Ioprio, IoprioClass};
        // prio alone: fio's ioprio_set takes class 0 as best effort.
        assert_eq!(one("prio=2").task_ioprio(), Ioprio { class: IoprioClass::Be, level: 2 });
        // prioclass alone: level 0 of that class.
        assert_eq!(one("prioclass=1").task_ioprio(), Ioprio { class: IoprioClass::Rt, level: 0 });
        // The idle class has one level, 7.
        assert_eq!(one("prioclass=3\nprio=5").task_ioprio(), Ioprio { class: IoprioClass::Idle, level: 7 });
        // Neither: the task's default, best effort 4 at nice 0.
        assert_eq!(one("").task_ioprio(), Ioprio::default());
        bad("prio=8");
    }

    #[test]
    fn numbers_follow_kb_base() {
        let kb = 1024;
        assert_eq!(parse_bytes("4k", kb), Ok(4096));
        assert_eq!(parse_bytes("4kb", kb), Ok(4096));
        assert_eq!(parse_bytes("4K", kb), Ok(4096));
        // "Opposite units" with kb_base=1024: KiB is 1000.
        assert_eq!(parse_bytes("4KiB", kb), Ok(4000));
        assert_eq!(parse_bytes("1mib", kb), Ok(1_000_000));
        // kb_base=1000: k is 1000, KiB is 1024.
        assert_eq!(parse_bytes("4k", 1000), Ok(4000));
        assert_eq!(parse_bytes("4KiB", 1000), Ok(4096));
        assert_eq!(parse_bytes("1t", kb), Ok(1 << 40));
        assert_eq!(parse_bytes("4096b", kb), Ok(4096));
        assert_eq!(parse_bytes("0x1000", kb), Ok(4096));
        assert_eq!(parse_quantity("20%", kb), Ok(Quantity::Percent(20)));
        assert!(parse_bytes("4ki", kb).unwrap_err().contains("disagree"));
        assert!(parse_bytes("4q", kb).is_err());
        assert!(parse_bytes("0x10k", kb).is_err(), "fio reads it as 16");
        assert!(parse_bytes("-4k", kb).is_err());
        assert!(parse_bytes("16384p", kb).is_err(), "2^64 overflows");
        assert!(parse_bytes("8192p", kb).is_err(), "2^63 is past fio's long long");
    }

    #[test]
    fn times_are_microseconds() {
        assert_eq!(parse_time_us("60", true), Ok(60_000_000));
        assert_eq!(parse_time_us("10m", true), Ok(600_000_000));
        assert_eq!(parse_time_us("250ms", true), Ok(250_000));
        assert_eq!(parse_time_us("7us", true), Ok(7));
        assert_eq!(parse_time_us("1h", true), Ok(3_600_000_000));
        // get_mult_time compares "s" exactly: "60sec" would be 60 µs in fio.
        assert!(parse_time_us("60sec", true).is_err());
    }

    #[test]
    fn kb_base_applies_before_sizes_in_a_section() {
        // sort_options puts kb_base (prio 1) first, whatever the file order.
        let j = one("size=1m\nkb_base=1000");
        assert_eq!(j.size, Some(Size::Bytes(1_000_000)));
    }

    #[test]
    fn block_sizes_per_direction() {
        // One value: all three directions.
        assert_eq!(one("bs=8k").bs, PerDir { read: 8192, write: 8192, trim: 8192 });
        // Two: read, then write and trim.
        assert_eq!(one("bs=4k,8k").bs, PerDir { read: 4096, write: 8192, trim: 8192 });
        // Three.
        assert_eq!(one("bs=1k,2k,3k").bs, PerDir { read: 1024, write: 2048, trim: 3072 });
        // Empty first piece keeps read at its default 4096.
        assert_eq!(one("bs=,8k").bs, PerDir { read: 4096, write: 8192, trim: 8192 });
        // A trailing comma: the first value is not copied to write/trim.
        assert_eq!(one("bs=8k,").bs, PerDir { read: 8192, write: 4096, trim: 4096 });
        // Without a comma, ':' separates too (handle_option).
        assert_eq!(one("bs=4k:8k").bs, PerDir { read: 4096, write: 8192, trim: 8192 });
        assert!(bad("bs=1k,2k,3k,4k").msg.contains("three"));
    }

    #[test]
    fn bsrange_swaps_and_splits() {
        let j = one("bsrange=64k-4k");
        assert_eq!(j.block_size(Ddir::Read), BlockSize::Range { min: 4096, max: 65536 });
        let j = one("bsrange=1k-4k,8k:32k");
        assert_eq!((j.min_bs(Ddir::Read), j.max_bs(Ddir::Read)), (1024, 4096));
        assert_eq!((j.min_bs(Ddir::Write), j.max_bs(Ddir::Write)), (8192, 32768));
        assert_eq!((j.min_bs(Ddir::Trim), j.max_bs(Ddir::Trim)), (8192, 32768));
        assert!(bad("bsrange=4k").msg.contains("range"));
    }

    #[test]
    fn bssplit_fills_in_missing_percentages() {
        // HOWTO: "4k/50:1k/:32k/" → 50% 4k, 25% 1k, 25% 32k, sorted by
        // percentage (stable: 1k before 32k).
        let j = one("bssplit=4k/50:1k/:32k/");
        let want = vec![BsSplit { bs: 1024, perc: 25 }, BsSplit { bs: 32768, perc: 25 }, BsSplit { bs: 4096, perc: 50 }];
        assert_eq!(j.bssplit.read, want);
        assert_eq!(j.bssplit.trim, want);
        assert_eq!((j.min_bs(Ddir::Write), j.max_bs(Ddir::Write)), (1024, 32768));
        // "2k/50:4k/50,4k/90:8k/10": reads one list, writes (and trims) the other.
        let j = one("bssplit=2k/50:4k/50,4k/90:8k/10");
        assert_eq!(j.bssplit.write, vec![BsSplit { bs: 8192, perc: 10 }, BsSplit { bs: 4096, perc: 90 }]);
        assert_eq!(j.bssplit.trim, j.bssplit.write);
        assert_eq!(j.block_size(Ddir::Read), BlockSize::Split(&j.bssplit.read));
        assert!(bad("bssplit=4k/60:8k/60:16k/:32k/").msg.contains("more than 100"));
    }

    #[test]
    fn rw_postfix_and_mix() {
        let j = one("rw=randread:8");
        assert_eq!((j.rw, j.rw_seq_nr), (ReadWrite::RandRead, 8));
        let j = one("readwrite=write:4k");
        assert_eq!((j.rw, j.rw_seq_add), (ReadWrite::Write, 4096));
        let j = one("rw=randrw\nrwmixwrite=30");
        assert_eq!((j.rwmix_read, j.rwmix_write), (70, 30));
        assert!(bad("rw=randwrit").msg.contains("not one of"));
        assert!(bad("rwmixread=101").msg.contains("maximum"));
    }

    #[test]
    fn sizes_percentages_and_zones() {
        assert_eq!(one("size=20%").size, Some(Size::Percent(20)));
        assert_eq!(one("offset=10%").offset, Size::Percent(10));
        assert_eq!(one("io_limit=5g").io_size, Some(Size::Bytes(5 << 30)));
        assert_eq!(one("zonemode=zbd\nsize=10z").size, Some(Size::Zones(10)));
        assert!(bad("size=150%").msg.contains("out of range"));
        assert!(bad("size=1G,2G").msg.contains("only one value"));
    }

    #[test]
    fn flags_bools_and_engines() {
        let j = one("direct=1\nnorandommap\niodepth_batch=16\niodepth=32\nioengine=io_uring\nend_fsync=1");
        assert!(j.direct && j.norandommap && j.end_fsync);
        assert_eq!((j.ioengine, j.iodepth, j.iodepth_batch()), (IoEngine::IoUring, 32, 16));
        assert!(!one("buffered=1").direct);
        assert!(one("buffered=0").direct);
        assert!(!one("time_based=0").time_based);
        // iodepth_batch_submit=0 means "iodepth" (fixup_options).
        assert_eq!(one("iodepth=8\niodepth_batch_submit=0").iodepth_batch(), 8);
        assert!(bad("direct").msg.contains("needs a value"), "bools need a value");
        assert!(bad("direct=true").msg.contains("0 or 1"));
        assert_eq!(bad("ioengine=posixaio").kind, FioErrorKind::BadValue);
    }

    #[test]
    fn random_distributions() {
        assert_eq!(one("random_distribution=zipf:1.2").random_distribution, RandomDistribution::Zipf { theta: 1.2, center: None });
        assert_eq!(one("random_distribution=pareto:0.3:0.5").random_distribution, RandomDistribution::Pareto { h: 0.3, center: Some(0.5) });
        assert_eq!(one("random_distribution=zipf").random_distribution, RandomDistribution::Zipf { theta: 1.1, center: None });
        assert!(bad("random_distribution=zipf:1").msg.contains("different than 1.0"));
        assert!(bad("random_distribution=pareto:1.5").msg.contains("out of range"));
    }

    #[test]
    fn zoned_distributions() {
        // 60 % of I/Os in the first 10 %, the rest in the next 20 % and 70 %;
        // a zone without a size gets what the others leave (100 − 30 = 70).
        let j = one("random_distribution=zoned:60/10:30/20:10");
        assert_eq!(j.random_distribution, RandomDistribution::Zoned);
        let z = |a, s| ZoneSplit { access_perc: a, size_perc: s, size: 0 };
        assert_eq!(j.zone_split.write, vec![z(60, 10), z(30, 20), z(10, 70)]);
        assert_eq!(j.zone_split.read, j.zone_split.trim);
        let j = one("random_distribution=zoned_abs:60/1M:40/3M");
        assert_eq!(j.zone_split.read[1], ZoneSplit { access_perc: 40, size_perc: 0, size: 3 << 20 });
        assert!(bad("random_distribution=zoned:60/10:30/20").msg.contains("don't add up to 100"));
        assert!(bad("random_distribution=zoned:60/60:40/60").msg.contains("more than 100%"));
        assert!(bad("random_distribution=zoned:50/50:50/50,100/10").msg.contains("comma"));
        assert!(bad("random_distribution=sequence:1:2").msg.contains("not modelled"));
    }

    #[test]
    fn random_generators_and_seed_options() {
        assert_eq!(one("rw=randread").random_generator, RandomGenerator::Tausworthe);
        assert_eq!(one("random_generator=lfsr").random_generator, RandomGenerator::Lfsr);
        assert_eq!(one("random_generator=tausworthe64").random_generator, RandomGenerator::Tausworthe64);
        let e = bad("random_generator=mt19937");
        assert_eq!(e.kind, FioErrorKind::BadValue);
        assert!(e.msg.contains("tausworthe, lfsr, tausworthe64"), "{}", e.msg);
        // randseed is "set" even at its default value (fio_option_is_set).
        let j = one("randseed=0x89");
        assert!(j.randseed_set && j.randseed == 0x89);
        assert!(!one("rw=read").randseed_set);
        // allrandrepeat: fio 3.35's alias of randrepeat, fio 3.33's own option.
        let j = one("allrandrepeat=1\nrandrepeat=0");
        assert!(j.allrandrepeat && !j.randrepeat && !j.randrepeat_own);
        let j = one("randrepeat=0\nallrandrepeat=1");
        assert!(j.allrandrepeat && j.randrepeat && !j.randrepeat_own);
    }

    #[test]
    fn global_sections_apply_to_jobs_below_them() {
        let p = file("[global]\nbs=8k\n[a]\n[global]\nrw=write\n[b]\nbs=16k\n").unwrap();
        assert_eq!(p.jobs.len(), 2);
        assert_eq!((p.jobs[0].name.as_str(), p.jobs[0].bs.read, p.jobs[0].rw), ("a", 8192, ReadWrite::Read));
        assert_eq!((p.jobs[1].name.as_str(), p.jobs[1].bs.read, p.jobs[1].rw), ("b", 16384, ReadWrite::Write));
    }

    #[test]
    fn command_line_globals_and_several_jobs() {
        // HOWTO: "fio --name=global --rw=randread --size=128m --name=job1 --name=job2".
        let p = cmd("fio --name=global --rw=randread --size=128m --name=job1 --name=job2").unwrap();
        let names: Vec<&str> = p.jobs.iter().map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["job1", "job2"]);
        assert!(p.jobs.iter().all(|j| j.rw == ReadWrite::RandRead && j.size == Some(Size::Bytes(128 << 20))));
        // A separate value word for a required argument.
        let p = cmd("fio --name x --bs 8k --output-format json --output out.txt").unwrap();
        assert_eq!(p.jobs[0].bs.read, 8192);
        assert_eq!(p.output_format.as_deref(), Some("json"));
        assert_eq!(p.warnings[0].option, "output");
        // The options as written, for fio's JSON `job options`.
        assert_eq!(p.job_options[0], [("name".to_string(), Some("x".to_string())), ("bs".to_string(), Some("8k".to_string()))]);
        assert_eq!(cmd("fio --name x --output-format=terse").unwrap_err().option.as_deref(), Some("output-format"));
    }

    #[test]
    fn pacing_and_group_options() {
        // rate_iops: read, then write; thinktime in µs without a unit; ramp_time in
        // seconds without one (is_seconds), or with its unit.
        let j = one("rate_iops=100,50\nthinktime=100\nthinktime_blocks=4\nramp_time=2\nnew_group");
        assert_eq!((j.rate_iops.read, j.rate_iops.write), (100, 50));
        assert_eq!((j.thinktime_us, j.thinktime_blocks, j.ramp_time_us, j.new_group), (100, 4, 2_000_000, true));
        assert_eq!(one("ramp_time=200ms").ramp_time_us, 200_000);
        // startdelay: seconds without a unit, like ramp_time; fio's random
        // range form is refused.
        assert_eq!(one("startdelay=2").start_delay_us, 2_000_000);
        assert_eq!(one("startdelay=1500ms").start_delay_us, 1_500_000);
        bad("startdelay=1-5");
        // rate=1m: 1 MiB/s for every direction (one value for all).
        let j = one("rate=1m");
        assert_eq!((j.rate.read, j.rate.write, j.rate.trim), (1 << 20, 1 << 20, 1 << 20));
    }

    #[test]
    fn includes_join_the_section() {
        let mut fs = HashMap::new();
        fs.insert("dir/main.fio".to_string(), "[global]\ninclude common.fio\n[t]\nrw=randread\n".to_string());
        fs.insert("dir/common.fio".to_string(), "; shared\nbs=16k\ninclude deeper.fio\n".to_string());
        fs.insert("dir/deeper.fio".to_string(), "iodepth=4\n".to_string());
        let p = parse_job_file("dir/main.fio", &fs).unwrap();
        assert_eq!((p.jobs[0].bs.write, p.jobs[0].iodepth), (16384, 4));
        fs.insert("dir/common.fio".to_string(), "[oops]\n".to_string());
        let e = parse_job_file("dir/main.fio", &fs).unwrap_err();
        assert_eq!(e.at, Location::Line { file: "dir/common.fio".into(), line: 1 });
        fs.insert("dir/common.fio".to_string(), "include main.fio\n".to_string());
        let e = parse_job_file("dir/main.fio", &fs).unwrap_err();
        assert_eq!(e.msg, "include cycle: dir/main.fio -> dir/common.fio -> dir/main.fio");
        // n0 → n1 → … → n16: 17 nested includes from n0 is one too many, 16 from n1 is fine.
        for i in 0..16 {
            fs.insert(format!("n{i}.fio"), format!("include n{}.fio\n", i + 1));
        }
        fs.insert("n16.fio".to_string(), "bs=8k\n".to_string());
        let e = parse_job_text("top.fio", "[j]\ninclude n0.fio\n", &fs).unwrap_err();
        assert!(e.msg.contains("nested deeper"), "{e}");
        assert_eq!(parse_job_text("top.fio", "[j]\ninclude n1.fio\n", &fs).unwrap().jobs[0].bs.read, 8192);
        // Two includes per level would otherwise grow as 2^depth.
        for i in 0..12 {
            fs.insert(format!("t{i}.fio"), format!("include t{0}.fio\ninclude t{0}.fio\n", i + 1));
        }
        fs.insert("t12.fio".to_string(), "\n".to_string());
        let e = parse_job_text("top.fio", "[j]\ninclude t0.fio\n", &fs).unwrap_err();
        assert!(e.msg.contains("more than 256 includes"), "{e}");
    }

    #[test]
    fn comments_anywhere_and_errors_carry_lines() {
        let j = one("bs=8k ; why not\n# a comment\n   ; another");
        assert_eq!(j.bs.read, 8192);
        let e = file("[j]\nrw=read\n\nverify=md5\n").unwrap_err();
        assert_eq!((e.kind, e.at.to_string(), e.option.as_deref()), (FioErrorKind::NotModelled, "job.fio:4".to_string(), Some("verify")));
        let e = file("bs=4k\n").unwrap_err();
        assert!(e.msg.contains("outside of [] job section"));
        assert_eq!(bad("rate_iops_min=100").kind, FioErrorKind::NotModelled);
        assert_eq!(bad("sqthread_poll").kind, FioErrorKind::NotModelled, "io_uring engine option");
        assert_eq!(bad("blocksise=4k").kind, FioErrorKind::UnknownOption);
        assert!(bad("bs = 4k").msg.contains("space"));
        assert_eq!(bad("size=${SIZE}").kind, FioErrorKind::NotModelled);
        let w = file("[j]\nthread\nlat_percentiles=1\n").unwrap().warnings;
        assert_eq!(w.iter().map(|w| w.to_string()).collect::<Vec<_>>(), ["job.fio:2: thread: ignored: it does not change the I/O", "job.fio:3: lat_percentiles: ignored: it does not change the I/O"]);
    }

    #[test]
    fn shell_words() {
        let w = split_shell_words("fio --filename=\"/dev/x y\" 'a b' \\\n--c=d\\ e").unwrap();
        assert_eq!(w, ["fio", "--filename=/dev/x y", "a b", "--c=d e"]);
        assert!(split_shell_words("fio --size=$SIZE").is_err());
        assert!(split_shell_words("fio 'open").is_err());
    }
}
