//! Disks, partitions and device numbers (block/genhd.c, block/partitions).
//!
//! Every traced block device — whole disk, partition, md or dm device — is a
//! [`BlockDevice`] in the [`Topology`] and is named by a [`DevId`]. A
//! partition shares its disk's queue; its bios are remapped onto the disk in
//! `submit_bio_noacct` ('A'). Device numbers follow what Linux hands out for
//! each driver so traces read like real ones (sd 8:16·i, nvme 259:n, md 9:n,
//! dm 253:n, virtio 254:16·i).

use crate::limits::{DriverLimits, ElevatorPolicy, QueueAttrs, QueueLimits, Zoned};
use crate::profile::{Behaviour, NvmeDiscardGranularity, NvmeVirtBoundary};

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
    /// A SCSI disk (QEMU's `scsi-hd`) behind virtio-scsi, and sd.
    VirtioScsi,
    /// null_blk, set up from its module parameters ([`crate::nullb`]).
    NullBlk,
    /// loop over a file on another device ([`crate::loopdev`]).
    Loop,
    /// md array (bio-based).
    Md,
    /// device-mapper device (bio-based).
    Dm,
}

impl DiskKind {
    pub const DISK_NAMES: &'static [&'static str] = &["nvme", "sata", "hdd", "scsi", "virtio", "ufs", "hyperv", "virtio-scsi", "null_blk", "loop"];

    pub fn from_name(s: &str) -> Option<DiskKind> {
        Some(match s {
            "nvme" => DiskKind::Nvme,
            "sata" | "ssd" => DiskKind::Sata,
            "hdd" => DiskKind::Hdd,
            "scsi" | "sas" => DiskKind::Scsi,
            "virtio" => DiskKind::Virtio,
            "ufs" => DiskKind::Ufs,
            "hyperv" | "storvsc" => DiskKind::Hyperv,
            "virtio-scsi" | "virtio_scsi" => DiskKind::VirtioScsi,
            "null_blk" | "nullb" => DiskKind::NullBlk,
            "loop" => DiskKind::Loop,
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
            DiskKind::VirtioScsi => "virtio-scsi",
            DiskKind::NullBlk => "null_blk",
            DiskKind::Loop => "loop",
            DiskKind::Md => "md",
            DiskKind::Dm => "dm",
        }
    }

    /// Handled by sd, and so numbered on the SCSI disk majors.
    pub(crate) fn is_sd(self) -> bool {
        matches!(self, DiskKind::Sata | DiskKind::Hdd | DiskKind::Scsi | DiskKind::Ufs | DiskKind::Hyperv | DiskKind::VirtioScsi)
    }

    /// Hardware queues the driver sets up on a machine with `cpus` CPUs
    /// (`nr_cpu_ids`), for the kinds whose count follows the CPUs:
    /// nvme-pci one I/O queue per CPU (`nvme_max_io_queues`, up to the
    /// controller's 64 queue pairs, QEMU's default `max_ioqpairs`);
    /// virtio-blk and virtio-scsi one virtqueue per CPU (`min(num_queues,
    /// nr_cpu_ids)`, with QEMU's `num-queues` defaulting to the vCPUs);
    /// storvsc `num_present_cpus()`. libata, generic SCSI and UFS (single
    /// doorbell) keep one; null_blk's come from its module parameters.
    pub fn nr_hw_queues_for_cpus(self, cpus: u32) -> Option<u32> {
        match self {
            DiskKind::Nvme => Some(cpus.min(64)),
            DiskKind::Virtio | DiskKind::VirtioScsi | DiskKind::Hyperv => Some(cpus),
            DiskKind::Sata | DiskKind::Hdd | DiskKind::Scsi | DiskKind::Ufs | DiskKind::Loop => Some(1),
            DiskKind::NullBlk | DiskKind::Md | DiskKind::Dm => None,
        }
    }

    /// Values the driver derives from others, worked out again after the
    /// scenario's overrides unless the scenario set them itself (`set`):
    /// nvme's segment count follows its transfer size
    /// (`nvme_max_drv_segments`: one PRP/SGL entry per controller page
    /// plus one, at most `NVME_MAX_SEGS`), its discard granularity and
    /// optimal I/O size the logical block size. A host-managed sd or
    /// null_blk disk asks for a zoned-capable elevator before zone write
    /// plugging (`required_elevator_features`, up to 6.9).
    pub fn derive_driver_limits(self, d: &mut DriverLimits, beh: &Behaviour, set: impl Fn(&str) -> bool) {
        if self == DiskKind::Nvme {
            if !set("max_segments") {
                d.max_segments = (d.max_hw_sectors / 8 + 1).min(beh.nvme_max_segs);
            }
            if !set("discard_granularity") && beh.nvme_discard_granularity == NvmeDiscardGranularity::Lba {
                d.discard_granularity = d.logical_block_size;
            }
            if !set("optimal_io_size") {
                d.io_opt = if beh.nvme_io_opt_nows_zero { d.logical_block_size } else { 0 };
            }
        }
        let zoned_sched = self.is_sd() || self == DiskKind::NullBlk;
        if zoned_sched && d.zoned == Zoned::HostManaged && !beh.zone_write_plugging && d.elevator == ElevatorPolicy::Default {
            d.elevator = ElevatorPolicy::ZonedDeadline;
        }
    }

    /// The limits and tag set each driver sets up before any sysfs write,
    /// for a typical device of this kind, as the profile's kernel sets
    /// them (6.1's `legacy` limits code: UFS segment boundary, storvsc
    /// segment size; the nvme switches). Sources per field: docs/devices.md.
    pub fn driver_limits(self, beh: &Behaviour) -> DriverLimits {
        let legacy = beh.limits_model == crate::limits::LimitsModel::Legacy;
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
            elevator: ElevatorPolicy::Default,
        };
        // libata + sd: ATA_MAX_SECTORS_LBA48, AHCI_MAX_SG, can_queue 32.
        let ata = DriverLimits { max_hw_sectors: 65535, max_dev_sectors: 65535, max_segments: 168, ..base.clone() };
        let mut d = match self {
            // nvme_set_queue_limits, nvme_config_discard: MDTS 7 (512 KiB),
            // segments min(MDTS pages + 1, NVME_MAX_SEGS) (set in
            // derive_driver_limits), a controller-page virt boundary unless
            // 7.x and SGLs, DSM with 256 ranges, write zeroes up to max_hw,
            // io_queue_depth 1024 - 1, many queues. The device supports
            // SGLs and reports NPDG 4 KiB and NSFEAT_IO_OPT with NOWS 0
            // (QEMU's nvme does).
            DiskKind::Nvme => DriverLimits {
                max_hw_sectors: 1024,
                max_segment_size: u32::MAX,
                virt_boundary_mask: match beh.nvme_virt_boundary {
                    NvmeVirtBoundary::Always => 4095,
                    NvmeVirtBoundary::PrpOnly => 0,
                },
                dma_alignment: 3,
                max_hw_discard_sectors: u32::MAX,
                discard_granularity: 4096,
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
            // virtio_scsi_probe on QEMU's virtio-scsi-pci: sg_tablesize
            // seg_max 254 (virtqueue 256 - 2), max_sectors 0xFFFF,
            // cmd_per_lun 128 (the device's queue depth), dma_boundary
            // UINT_MAX, no max_segment_size (64 KiB); sd on a scsi-hd:
            // READ(10) below 2 TiB (65535 blocks), UNMAP of QEMU's
            // max_unmap_size 1 GiB (drive discard=unmap) at 4 KiB
            // granularity, WRITE SAME up to the maximum transfer
            // (INT_MAX bytes: 4194303 blocks), no DPOFUA, rotational
            // (rotation_rate 0), one request queue per CPU.
            DiskKind::VirtioScsi => DriverLimits {
                max_hw_sectors: 65535,
                max_dev_sectors: 65535,
                max_segments: 254,
                max_hw_discard_sectors: 2_097_152,
                discard_granularity: 4096,
                max_write_zeroes_sectors: 4_194_303,
                queue_depth: 128,
                rotational: true,
                ..base
            },
            // null_blk's defaults before its module parameters
            // (crate::nullb applies them): no cache, non-rotational.
            DiskKind::NullBlk => DriverLimits { queue_depth: 64, nr_hw_queues: 2, write_cache: false, ..base },
            // loop_add, loop_update_limits (6.1 loop_configure and
            // loop_config_discard alike): 2560 sectors, a file on a
            // filesystem that punches holes (discard and write zeroes up to
            // UINT_MAX >> 9 sectors at its 4 KiB block), a write cache
            // (the file has fsync), hw_queue_depth 128 on one queue with
            // BLK_MQ_F_NO_SCHED_BY_DEFAULT. Block size and rotational come
            // from the backing device (crate::loopdev).
            DiskKind::Loop => DriverLimits {
                max_hw_sectors: 2560,
                max_hw_discard_sectors: u32::MAX >> 9,
                discard_granularity: 4096,
                max_write_zeroes_sectors: u32::MAX >> 9,
                queue_depth: 128,
                elevator: ElevatorPolicy::NoneByDefault,
                ..base
            },
            DiskKind::Md | DiskKind::Dm => base,
        };
        self.derive_driver_limits(&mut d, beh, |_| false);
        d
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
    nullb: u32,
    loop_minor: u32,
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

    /// [`Self::queue`] of a device known to be a whole disk (its own
    /// `whole`): one lookup fewer, for the paths every bio takes.
    #[inline(always)]
    pub fn whole_queue(&self, whole: DevId) -> &Queue {
        debug_assert_eq!(self.devs[whole as usize].whole, whole, "a whole disk");
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
            DiskKind::Nvme | DiskKind::Md | DiskKind::Dm | DiskKind::NullBlk => {
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
            // LOOP_MAJOR, minor = index (max_part 0: no partitions).
            DiskKind::Loop => {
                let i = n.loop_minor;
                n.loop_minor += 1;
                (7, i)
            }
            // register_blkdev(0, "nullb"): a dynamic major, the one after
            // virtio_blk's (254) and device-mapper's (253); minor = index.
            DiskKind::NullBlk => {
                let i = n.nullb;
                n.nullb += 1;
                (252, i)
            }
            _ => {
                let m = n.dm_minor;
                n.dm_minor += 1;
                (253, m)
            }
        }
    }
}
