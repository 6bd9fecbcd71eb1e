//! Disks, partitions and device numbers (block/genhd.c, block/partitions).
//!
//! Every traced block device — whole disk, partition, md or dm device — is a
//! [`BlockDevice`] in the [`Topology`] and is named by a [`DevId`]. A
//! partition shares its disk's queue; its bios are remapped onto the disk in
//! `submit_bio_noacct` ('A'). Device numbers follow what Linux hands out for
//! each driver so traces read like real ones (sd 8:16·i, nvme 259:n, md 9:n,
//! dm 253:n, virtio 254:16·i).

use crate::limits::{DriverLimits, QueueAttrs, QueueLimits, Zoned};

pub type DevId = u32;

/// What kind of device (and so which driver preset and device numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiskKind {
    /// NVMe over PCIe (nvme-pci).
    Nvme,
    /// SATA SSD behind libata/AHCI and sd.
    Sata,
    /// 7200 rpm SATA disk (libata + sd, rotational).
    Hdd,
    /// Generic SCSI disk (sd).
    Scsi,
    /// virtio-blk.
    Virtio,
    /// UFS (ufshcd + sd).
    Ufs,
    /// Hyper-V storvsc (sd).
    Hyperv,
    /// md array (bio-based).
    Md,
    /// device-mapper device (bio-based).
    Dm,
}

impl DiskKind {
    pub const DISK_NAMES: &'static [&'static str] = &["nvme", "sata", "hdd", "scsi", "virtio", "ufs", "hyperv"];

    pub fn from_name(s: &str) -> Option<DiskKind> {
        Some(match s {
            "nvme" => DiskKind::Nvme,
            "sata" | "ssd" => DiskKind::Sata,
            "hdd" => DiskKind::Hdd,
            "scsi" | "sas" => DiskKind::Scsi,
            "virtio" => DiskKind::Virtio,
            "ufs" => DiskKind::Ufs,
            "hyperv" | "storvsc" => DiskKind::Hyperv,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            DiskKind::Nvme => "nvme",
            DiskKind::Sata => "sata",
            DiskKind::Hdd => "hdd",
            DiskKind::Scsi => "scsi",
            DiskKind::Virtio => "virtio",
            DiskKind::Ufs => "ufs",
            DiskKind::Hyperv => "hyperv",
            DiskKind::Md => "md",
            DiskKind::Dm => "dm",
        }
    }

    /// Handled by sd, and so numbered on the SCSI disk majors.
    fn is_sd(self) -> bool {
        matches!(self, DiskKind::Sata | DiskKind::Hdd | DiskKind::Scsi | DiskKind::Ufs | DiskKind::Hyperv)
    }

    /// The limits and tag set each driver sets up before any sysfs write,
    /// for a typical device of this kind. `legacy` selects 6.1's values
    /// where the driver changed (NVMe segments, UFS segment boundary,
    /// storvsc segment size). Sources per field: docs/devices.md.
    pub fn driver_limits(self, legacy: bool) -> DriverLimits {
        let base = DriverLimits {
            logical_block_size: 512,
            physical_block_size: 512,
            io_min: 0,
            io_opt: 0,
            max_hw_sectors: 0,
            max_dev_sectors: 0,
            max_segments: 128,
            max_segment_size: 0,
            seg_boundary_mask: 0xFFFF_FFFF,
            virt_boundary_mask: 0,
            dma_alignment: 511,
            chunk_sectors: 0,
            max_hw_discard_sectors: 0,
            discard_granularity: 0,
            max_discard_segments: 1,
            max_secure_erase_sectors: 0,
            max_write_zeroes_sectors: 0,
            zoned: Zoned::None,
            queue_depth: 32,
            nr_hw_queues: 1,
            rotational: false,
            write_cache: true,
            fua: false,
            nr_conv_zones: 0,
        };
        // libata + sd: ATA_MAX_SECTORS_LBA48, AHCI_MAX_SG, can_queue 32.
        let ata = DriverLimits { max_hw_sectors: 65535, max_dev_sectors: 65535, max_segments: 168, ..base.clone() };
        match self {
            // nvme_set_queue_limits, nvme_config_discard: MDTS 7 (512 KiB),
            // NVME_MAX_SEGS 127 (6.1) / 128 (6.12), DSM with 256 ranges,
            // write zeroes up to max_hw, io_queue_depth 1024 - 1, many queues.
            DiskKind::Nvme => DriverLimits {
                max_hw_sectors: 1024,
                max_segments: if legacy { 127 } else { 128 },
                max_segment_size: u32::MAX,
                virt_boundary_mask: 4095,
                dma_alignment: 3,
                max_hw_discard_sectors: u32::MAX,
                discard_granularity: 512,
                max_discard_segments: 256,
                max_write_zeroes_sectors: 1024,
                queue_depth: 1023,
                nr_hw_queues: 4,
                // A volatile write cache comes with FUA (nvme_update_disk_info).
                fua: true,
                ..base
            },
            // libata VPD B0: WRITE SAME(16) UNMAP of 65535 * 64 blocks.
            DiskKind::Sata => DriverLimits { max_hw_discard_sectors: 65535 * 64, discard_granularity: 512, ..ata },
            // 512e drive: 4 KiB physical blocks, no TRIM.
            DiskKind::Hdd => DriverLimits { physical_block_size: 4096, io_min: 4096, rotational: true, ..ata },
            // sd: FUA when the device reports DPOFUA.
            DiskKind::Scsi => DriverLimits { max_hw_sectors: 65535, max_dev_sectors: 65535, rotational: true, fua: true, ..base },
            // virtio_blk on QEMU defaults: no sector limit, seg_max 254,
            // 4194303-sector discard and write zeroes, one virtqueue of 256.
            DiskKind::Virtio => DriverLimits {
                max_hw_sectors: u32::MAX,
                max_segments: 254,
                max_segment_size: u32::MAX,
                max_hw_discard_sectors: 4_194_303,
                discard_granularity: 512,
                max_write_zeroes_sectors: 4_194_303,
                queue_depth: 256,
                rotational: true,
                ..base
            },
            // ufshcd_driver_template: 1 MiB, SG_ALL, PRDT entries of 256 KiB,
            // dma_boundary PAGE_SIZE - 1 until 6.12; nutrs 32 - 1 tags.
            DiskKind::Ufs => DriverLimits {
                logical_block_size: 4096,
                physical_block_size: 4096,
                max_hw_sectors: 2048,
                max_segments: 128,
                max_segment_size: 262144,
                seg_boundary_mask: if legacy { 0xFFF } else { 0xFFFF_FFFF },
                queue_depth: 31,
                fua: true,
                ..base
            },
            // storvsc: 2 MiB transfers, 513 segments, 4 KiB virt boundary;
            // SCSI passes its 64 KiB segment size in 6.12 (6.1 makes it
            // unlimited with the boundary); can_queue 316, several queues.
            DiskKind::Hyperv => DriverLimits {
                physical_block_size: 4096,
                io_min: 4096,
                max_hw_sectors: 4096,
                max_segments: 513,
                max_segment_size: if legacy { 0 } else { 65536 },
                virt_boundary_mask: 4095,
                max_write_zeroes_sectors: 65535,
                queue_depth: 316,
                nr_hw_queues: 4,
                rotational: true,
                ..base
            },
            DiskKind::Md | DiskKind::Dm => base,
        }
    }
}

/// Whether bios on a device go to a driver's `->submit_bio` or become requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driver {
    /// Request-based (blk-mq): index of the request queue.
    Mq(usize),
    /// Bio-based (md, dm, test drivers): index of the driver.
    BioBased(usize),
}

/// A `struct block_device`: a whole disk or a partition.
#[derive(Clone, Debug)]
pub struct BlockDevice {
    pub name: String,
    pub kind: DiskKind,
    pub major: u32,
    pub minor: u32,
    /// Size in sectors.
    pub nr_sectors: u64,
    /// The whole disk (itself for a whole disk).
    pub whole: DevId,
    /// `bd_start_sect` (0 for a whole disk).
    pub start_sect: u64,
    pub driver: Driver,
}

/// The whole-disk state a queue needs: limits and attributes.
#[derive(Clone, Debug)]
pub struct Queue {
    pub limits: QueueLimits,
    pub attrs: QueueAttrs,
}

/// All block devices and the queue of each whole disk.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub devs: Vec<BlockDevice>,
    /// Per device; `None` for partitions (they use the whole disk's).
    queues: Vec<Option<Queue>>,
    numbers: Numbering,
}

/// Allocator of device numbers per driver family.
#[derive(Clone, Debug, Default)]
struct Numbering {
    sd: u32,
    virtio: u32,
    nvme_minor: u32,
    dm_minor: u32,
}

/// `SCSI_DISK*_MAJOR`: sd uses 8, 65–71, 128–135, 16 disks each.
fn sd_major(index: u32) -> u32 {
    match index / 16 {
        0 => 8,
        n @ 1..=7 => 64 + n,
        n => 120 + n,
    }
}

impl Topology {
    pub fn dev(&self, id: DevId) -> &BlockDevice {
        &self.devs[id as usize]
    }

    pub fn queue(&self, id: DevId) -> &Queue {
        let whole = self.devs[id as usize].whole;
        self.queues[whole as usize].as_ref().expect("whole disk has a queue")
    }

    pub fn limits(&self, id: DevId) -> &QueueLimits {
        &self.queue(id).limits
    }

    pub fn by_name(&self, name: &str) -> Option<DevId> {
        self.devs.iter().position(|d| d.name == name).map(|i| i as DevId)
    }

    /// Add a whole disk; returns its id. `md_minor` is used for md devices.
    pub fn add_disk(&mut self, name: &str, kind: DiskKind, nr_sectors: u64, queue: Queue, driver: Driver) -> DevId {
        let id = self.devs.len() as DevId;
        let (major, minor) = self.number_disk(name, kind);
        self.devs.push(BlockDevice {
            name: name.to_string(),
            kind,
            major,
            minor,
            nr_sectors,
            whole: id,
            start_sect: 0,
            driver,
        });
        self.queues.push(Some(queue));
        id
    }

    /// Add partition `index` (1-based) of `disk`.
    pub fn add_partition(&mut self, disk: DevId, name: &str, index: u32, start: u64, nr_sectors: u64) -> DevId {
        let id = self.devs.len() as DevId;
        let d = self.devs[disk as usize].clone();
        let (major, minor) = match d.kind {
            // NVMe partitions take the next extended (259) minor.
            DiskKind::Nvme | DiskKind::Md | DiskKind::Dm => {
                let m = self.numbers.nvme_minor;
                self.numbers.nvme_minor += 1;
                (259, m)
            }
            _ => (d.major, d.minor + index),
        };
        self.devs.push(BlockDevice {
            name: name.to_string(),
            kind: d.kind,
            major,
            minor,
            nr_sectors,
            whole: disk,
            start_sect: start,
            driver: d.driver,
        });
        self.queues.push(None);
        id
    }

    fn number_disk(&mut self, name: &str, kind: DiskKind) -> (u32, u32) {
        let n = &mut self.numbers;
        if kind.is_sd() {
            let i = n.sd;
            n.sd += 1;
            return (sd_major(i), (i % 16) * 16);
        }
        match kind {
            DiskKind::Virtio => {
                let i = n.virtio;
                n.virtio += 1;
                (254, i * 16)
            }
            DiskKind::Nvme => {
                let m = n.nvme_minor;
                n.nvme_minor += 1;
                (259, m)
            }
            DiskKind::Md => (9, name.trim_start_matches("md").parse().unwrap_or(0)),
            _ => {
                let m = n.dm_minor;
                n.dm_minor += 1;
                (253, m)
            }
        }
    }
}
