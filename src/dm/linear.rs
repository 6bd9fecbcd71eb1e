//! dm-linear (drivers/md/dm-linear.c): one device, a fixed offset.
//!
//! Table arguments: `<device> <offset>`. A dm sector `s` of a target
//! starting at `begin` maps to `offset + (s − begin)` on the device. The
//! target asks for one discard/write-zeroes clone and sets no I/O hints,
//! so its queue limits are the device's, stacked at `offset`.

use super::{parse_sectors, ArgError};

/// `struct linear_c`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearC {
    /// The device as named in the table (path or major:minor).
    pub dev: String,
    /// Sector on the device where the target starts (`lc->start`).
    pub start: u64,
}

/// `linear_ctr`: exactly `<device> <offset>`.
pub fn linear_ctr(argv: &[&str]) -> Result<LinearC, ArgError> {
    let [dev, offset] = argv else {
        return Err(ArgError::new("arguments", format!("linear takes <device> <offset>, got {} argument(s)", argv.len())));
    };
    // "Invalid device sector"
    let start = parse_sectors(offset).map_err(|m| ArgError::new("offset", m))?;
    Ok(LinearC { dev: dev.to_string(), start })
}

impl LinearC {
    /// `linear_map_sector`, given the offset inside the target
    /// (`dm_target_offset`).
    pub fn linear_map_sector(&self, target_offset: u64) -> u64 {
        self.start + target_offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctr_takes_device_and_offset() {
        assert_eq!(linear_ctr(&["/dev/sdb", "2048"]).unwrap(), LinearC { dev: "/dev/sdb".into(), start: 2048 });
        assert_eq!(linear_ctr(&["/dev/sdb", "2048", "x"]).unwrap_err().field, "arguments");
        assert_eq!(linear_ctr(&["/dev/sdb", "+2048"]).unwrap_err().field, "offset");
        // 2048 + 100
        assert_eq!(linear_ctr(&["8:16", "2048"]).unwrap().linear_map_sector(100), 2148);
    }
}
