//! Names for a trace's devices whose numbers say nothing by themselves.
//! Majors such as virtio-blk's (253/254 on Debian's kernels), nvme's (259)
//! or device-mapper's are allocated at boot (`register_blkdev(0, ...)`), so
//! a trace shows `254,0` where the machine said `vda`. The name comes from
//! what the trace knows — blktrace names its files after the device
//! (`vda.blktrace.0`), so a file's records are that device's — or from the
//! user (`MAJ:MIN=NAME`, `blkstack stats --name`).

use crate::trace::parse::DevNo;

/// `NAME` of a blktrace file `DIR/NAME.blktrace.N`.
pub fn blktrace_stem(path: &str) -> Option<&str> {
    let file = path.rsplit('/').next()?;
    let (stem, cpu) = file.rsplit_once(".blktrace.")?;
    (cpu.parse::<u32>().is_ok() && !stem.is_empty()).then_some(stem)
}

/// The name a trace file gives its one device: a blktrace file's stem,
/// when every record is of one device (a `blkparse -d` dump of several
/// devices names none).
pub fn names_from_file(path: &str, devices: &[DevNo]) -> Vec<(DevNo, String)> {
    match (blktrace_stem(path), devices) {
        (Some(stem), [one]) => vec![(*one, stem.to_string())],
        _ => Vec::new(),
    }
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
