//! Names for a trace's devices whose numbers say nothing by themselves.
//! Majors such as virtio-blk's (253/254 on Debian's kernels), nvme's (259)
//! or device-mapper's are allocated at boot (`register_blkdev(0, ...)`), so
//! a trace shows `254,0` where the machine said `vda`. The name comes from
//! what the trace knows — blktrace names its files after the device
//! (`vda.blktrace.0`), so a file's records are that device's, and
//! blkparse's closing summary names the device of its input (`CPU0
//! (vda):`) — or from the user (`MAJ:MIN=NAME`, `blkstack stats --name`).
//!
//! What is not a rule is left alone: a remap line (`A ... <- (254,1) 0`)
//! carries only device numbers, and a remap between two devices of one
//! dynamic major may be a partition onto its disk or one dm (or md) device
//! onto another, so no name is derived from it; nor is a dynamic major
//! guessed to be virtio's, dm's or nvme's (259 is the extended major any
//! driver's partitions may take).

use crate::trace::parse::DevNo;

/// `NAME` of a blktrace file `DIR/NAME.blktrace.N`.
pub fn blktrace_stem(path: &str) -> Option<&str> {
    let file = path.rsplit('/').next()?;
    let (stem, cpu) = file.rsplit_once(".blktrace.")?;
    (cpu.parse::<u32>().is_ok() && !stem.is_empty()).then_some(stem)
}

/// The name a trace file gives its one device: a blktrace file's stem, or
/// the device blkparse's closing summary at the end of a text file names,
/// when every record is of one device (a `blkparse -d` dump of several
/// devices names none, and nor does a summary of several: blkparse lists
/// its inputs in the order they were given, which the records do not
/// show).
pub fn names_from_file(path: &str, devices: &[DevNo]) -> Vec<(DevNo, String)> {
    let [one] = devices else { return Vec::new() };
    let name = match blktrace_stem(path) {
        Some(stem) => Some(stem.to_string()),
        None => file_tail(path).and_then(|t| summary_name(&t)),
    };
    name.map(|n| vec![(*one, n)]).unwrap_or_default()
}

/// The last 64 KiB of a file, where blkparse prints its closing summary.
fn file_tail(path: &str) -> Option<String> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(SeekFrom::Start(len.saturating_sub(64 << 10))).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

/// The one device blkparse's closing summary names (`show_device_and_cpu_stats`
/// heads each CPU's block `CPU0 (vda):`, the total `Total (vda):` when
/// several CPUs had events, and ends with `Events (vda): N entries`); none
/// when it names several, or prints numbers (`CPU0 (8,0):`: an input read
/// from a pipe has no name).
pub fn summary_name(text: &str) -> Option<String> {
    let mut found: Option<&str> = None;
    for line in text.lines() {
        let Some(name) = summary_heading(line) else { continue };
        if found.is_some_and(|f| f != name) {
            return None;
        }
        found = Some(name);
    }
    let name = found?;
    let numbers = name.split_once(',').is_some_and(|(a, b)| a.trim().parse::<u32>().is_ok() && b.trim().parse::<u32>().is_ok());
    (!name.is_empty() && !numbers && !name.contains(char::is_whitespace)).then(|| name.to_string())
}

/// `NAME` of a summary heading `CPUn (NAME):`, `Total (NAME):` or
/// `Events (NAME): ...`.
fn summary_heading(line: &str) -> Option<&str> {
    let (head, rest) = line.split_once(" (")?;
    let cpu = head.strip_prefix("CPU").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let (name, tail) = rest.split_once("):")?;
    let ok = match head {
        "Total" => tail.is_empty(),
        "Events" => tail.contains(" entries"),
        _ => cpu && tail.is_empty(),
    };
    ok.then_some(name)
}

/// One `MAJ:MIN=NAME` (or `MAJ,MIN=NAME`) mapping.
pub fn parse_name(s: &str) -> Result<(DevNo, String), String> {
    let bad = || format!("'{s}': expected MAJ:MIN=NAME, e.g. 254:0=vda");
    let (num, name) = s.split_once('=').ok_or_else(bad)?;
    let (major, minor) = num.split_once([':', ',']).ok_or_else(bad)?;
    let (major, minor) = (major.trim().parse::<u32>().map_err(|_| bad())?, minor.trim().parse::<u32>().map_err(|_| bad())?);
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("'{s}': the name must be one word"));
    }
    Ok((DevNo { major, minor }, name.to_string()))
}

/// Apply `map` to `names` (indexed like `devices`): later entries win.
pub fn rename(devices: &[DevNo], names: &mut [String], map: &[(DevNo, String)]) {
    for (dev, name) in map {
        if let Some(i) = devices.iter().position(|d| d == dev) {
            names[i] = name.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blktrace_files_name_their_device() {
        let vda = DevNo { major: 254, minor: 0 };
        assert_eq!(blktrace_stem("/tmp/x/vda.blktrace.1"), Some("vda"));
        assert_eq!(blktrace_stem("trace.txt"), None);
        assert_eq!(names_from_file("vda.blktrace.0", &[vda]), vec![(vda, "vda".to_string())]);
        // A dump of two devices: no name from the file.
        assert!(names_from_file("all.blktrace.0", &[vda, DevNo { major: 254, minor: 16 }]).is_empty());
    }

    #[test]
    fn blkparse_summary_names_its_one_device() {
        // blkparse -i vda: "CPU0 (vda):" per CPU, "Total (vda):" (only
        // when two CPUs had events), "Events (vda): 2 entries".
        let one = "CPU0 (vda):\n Reads Queued: 1, 4KiB\nCPU1 (vda):\n Reads Queued: 1, 4KiB\n\
                   Total (vda):\n Reads Queued: 2, 8KiB\n\nThroughput (R/W): 0KiB/s / 0KiB/s\nEvents (vda): 2 entries\n";
        assert_eq!(summary_name(one).as_deref(), Some("vda"));
        assert_eq!(summary_name("CPU0 (vda):\n Reads Queued: 1, 4KiB\n").as_deref(), Some("vda"));
        // Read from a pipe: blkparse prints the numbers, which name nothing.
        assert_eq!(summary_name("CPU0 (254,0):\nEvents (254,0): 1 entries\n"), None);
        // Two inputs: which device is which is not in the records.
        assert_eq!(summary_name("CPU0 (vda):\nEvents (vda): 1 entries\nCPU0 (vdb):\n"), None);
        assert_eq!(summary_name("  254,0    0    1  0.0  1  Q R 0 + 8 [dd]\n"), None);
    }

    #[test]
    fn user_mappings_parse_and_apply() {
        let (d, n) = parse_name("254:16=vdb").unwrap();
        assert_eq!((d, n.as_str()), (DevNo { major: 254, minor: 16 }, "vdb"));
        assert_eq!(parse_name("259,0=nvme0n1").unwrap().1, "nvme0n1");
        assert!(parse_name("254=vda").unwrap_err().contains("MAJ:MIN=NAME"));
        let devs = [DevNo { major: 8, minor: 0 }, d];
        let mut names = vec!["sda".to_string(), "254,16".to_string()];
        rename(&devs, &mut names, &[(d, n)]);
        assert_eq!(names, ["sda", "vdb"]);
    }
}
