//! Device kinds and their drivers' limits per kernel version: virtio-scsi,
//! null_blk (module parameters), `cpus`, nvme's 6.1 / 6.12 / 7.2 values and
//! raid456's discard on 7.2. Every expected value is worked out by hand from
//! the driver source named in its comment.

mod common;

use blkstack::limits::Elevator;
use blkstack::scenario::{self, DiskSpec, ScenarioError};
use common::{issued, run_events};

fn load(text: &str) -> Result<scenario::Scenario, ScenarioError> {
    scenario::load("kinds.toml", text, None, &[])
}

/// The first disk of a scenario holding `disk` lines under `[disks.X]`.
fn disk(kernel: &str, extra: &str, disk: &str) -> DiskSpec {
    let text = format!("kernel = \"{kernel}\"\n{extra}\n[disks.X]\n{disk}\n");
    load(&text).unwrap_or_else(|e| panic!("{e}")).disks.remove(0)
}

fn error(text: &str) -> String {
    load(text).map(|_| ()).expect_err("refused").to_string()
}

#[test]
fn virtio_scsi_limits_per_version() {
    // virtio_scsi_probe with QEMU's virtio-scsi-pci: sg_tablesize = seg_max
    // = 256 - 2; max_sectors 0xFFFF; cmd_per_lun 128. sd below 2 TiB:
    // max_dev_sectors 65535. max_sectors = min(65535, cap): 2560 on 6.1,
    // 8192 on 7.2. No max_segment_size in the template: 64 KiB.
    // dma_boundary UINT_MAX. UNMAP of 1 GiB (2097152 sectors) at QEMU's
    // 4 KiB granularity; WRITE SAME of 4194303 blocks. One queue →
    // mq-deadline, nr_requests 2 × min(128, 128) = 256. sd numbering 8:0.
    let d = disk("6.1", "", "kind = \"virtio-scsi\"\nsize = \"8GiB\"");
    let l = &d.queue.limits;
    assert_eq!((l.max_hw_sectors, l.max_dev_sectors, l.max_sectors), (65535, 65535, 2560));
    assert_eq!((l.max_segments, l.max_segment_size, l.seg_boundary_mask, l.virt_boundary_mask), (254, 65536, 0xFFFF_FFFF, 0));
    assert_eq!((l.max_hw_discard_sectors, l.discard_granularity, l.max_discard_segments), (2_097_152, 4096, 1));
    assert_eq!(l.max_write_zeroes_sectors, 4_194_303);
    let a = &d.queue.attrs;
    assert_eq!((a.queue_depth, a.nr_hw_queues, a.scheduler, a.nr_requests), (128, 1, Elevator::MqDeadline, 256));
    assert_eq!((a.rotational, a.write_cache, a.fua), (true, true, false));
    let d = disk("7.2", "", "kind = \"virtio-scsi\"\nsize = \"8GiB\"");
    assert_eq!(d.queue.limits.max_sectors, 8192);
}

#[test]
fn cpus_set_per_cpu_queues_and_the_scheduler() {
    // elevator_get_default: mq-deadline only for one hardware queue.
    // virtio_blk: num_vqs = min(num_queues (QEMU: the vCPUs), nr_cpu_ids):
    // 2 CPUs → 2 queues → none, nr_requests = tag depth 256.
    let d = disk("6.12", "cpus = 2", "kind = \"virtio\"\nsize = \"1GiB\"");
    assert_eq!((d.queue.attrs.nr_hw_queues, d.queue.attrs.scheduler, d.queue.attrs.nr_requests), (2, Elevator::None, 256));
    // One CPU: one virtqueue → mq-deadline, 2 × min(256, 128).
    let d = disk("6.12", "cpus = 1", "kind = \"virtio\"\nsize = \"1GiB\"");
    assert_eq!((d.queue.attrs.nr_hw_queues, d.queue.attrs.scheduler, d.queue.attrs.nr_requests), (1, Elevator::MqDeadline, 256));
    // nvme-pci: one I/O queue per possible CPU: 1 → mq-deadline.
    let d = disk("6.12", "cpus = 1", "kind = \"nvme\"\nsize = \"1GiB\"");
    assert_eq!((d.queue.attrs.nr_hw_queues, d.queue.attrs.scheduler), (1, Elevator::MqDeadline));
    // virtio-scsi: nr_hw_queues = min(nr_cpu_ids, num_queues) = 4 → none,
    // nr_requests = the device's 128.
    let d = disk("6.12", "cpus = 4", "kind = \"virtio-scsi\"\nsize = \"1GiB\"");
    assert_eq!((d.queue.attrs.nr_hw_queues, d.queue.attrs.scheduler, d.queue.attrs.nr_requests), (4, Elevator::None, 128));
    // libata has one queue whatever the CPUs.
    let d = disk("6.12", "cpus = 8", "kind = \"sata\"\nsize = \"1GiB\"");
    assert_eq!((d.queue.attrs.nr_hw_queues, d.queue.attrs.scheduler), (1, Elevator::MqDeadline));
    // The scenario's own nr_hw_queues still wins.
    let d = disk("6.12", "cpus = 8", "kind = \"virtio\"\nsize = \"1GiB\"\nqueue = { nr_hw_queues = 1 }");
    assert_eq!(d.queue.attrs.scheduler, Elevator::MqDeadline);
    assert!(error("cpus = 0\n").contains("kinds.toml:1: cpus: 0 is not a CPU count"));
}

#[test]
fn null_blk_defaults() {
    // Module defaults: bs 512, max_sectors 0 → BLK_SAFE_MAX_SECTORS 255
    // (max_sectors min(255, 2560) = 255), 128 segments of 64 KiB, no virt
    // boundary, hw_queue_depth 64, submit_queues 1 + poll_queues 1 = two
    // hardware queues → none, nr_requests 64; non-rotational, no cache;
    // gb = 250; major 252 (dynamic), minor 0.
    let d = disk("6.12", "", "kind = \"null_blk\"");
    let l = &d.queue.limits;
    assert_eq!((l.logical_block_size, l.max_hw_sectors, l.max_sectors, l.max_segments, l.max_segment_size), (512, 255, 255, 128, 65536));
    assert_eq!((l.virt_boundary_mask, l.max_hw_discard_sectors), (0, 0));
    let a = &d.queue.attrs;
    assert_eq!((a.queue_depth, a.nr_hw_queues, a.scheduler, a.nr_requests), (64, 2, Elevator::None, 64));
    assert_eq!((a.rotational, a.write_cache, a.fua), (false, false, false));
    assert_eq!(d.nr_sectors, 250 << 21);
}

#[test]
fn null_blk_module_parameters() {
    // bs=4096: both block sizes 4096; max_hw_sectors 255 rounded down to
    // the 8-sector block = 248. virt_boundary → PAGE_SIZE - 1.
    // hw_queue_depth 8, poll_queues 0: one queue → mq-deadline, 2 × 8.
    let d = disk(
        "6.12",
        "",
        "kind = \"null_blk\"\nsize = \"1GiB\"\nnull_blk = { bs = 4096, virt_boundary = true, hw_queue_depth = 8, poll_queues = 0 }",
    );
    let l = &d.queue.limits;
    assert_eq!((l.logical_block_size, l.physical_block_size, l.max_hw_sectors, l.max_sectors, l.virt_boundary_mask), (4096, 4096, 248, 248, 4095));
    assert_eq!((d.queue.attrs.queue_depth, d.queue.attrs.scheduler, d.queue.attrs.nr_requests), (8, Elevator::MqDeadline, 16));
    // max_sectors=64; submit_queues 4 on 2 CPUs is cut to nr_cpu_ids: 2 + 1.
    let d = disk("6.12", "cpus = 2", "kind = \"null_blk\"\nsize = \"1GiB\"\nnull_blk = { max_sectors = 64, submit_queues = 4 }");
    assert_eq!((d.queue.limits.max_sectors, d.queue.attrs.nr_hw_queues), (64, 3));
}

#[test]
fn zoned_null_blk_scheduler_per_version() {
    // zone_size 4 MiB → chunk_sectors 8192; zone_nr_conv 2. Two hardware
    // queues (1 + 1 poll). 6.1: null_init_zoned_dev requires
    // ELEVATOR_F_ZBD_SEQ_WRITE → mq-deadline (elevator_get_by_features);
    // 6.12 (zone write plugging, no required features) → none.
    let zoned = "kind = \"null_blk\"\nsize = \"64MiB\"\nnull_blk = { zoned = true, zone_size = 4, zone_nr_conv = 2 }";
    let d = disk("6.1", "", zoned);
    assert_eq!((d.queue.limits.chunk_sectors, d.queue.attrs.nr_conv_zones, d.queue.attrs.scheduler), (8192, 2, Elevator::MqDeadline));
    let d = disk("6.12", "", zoned);
    assert_eq!(d.queue.attrs.scheduler, Elevator::None);
    // More conventional zones than 16 zones allow: nr_zones - 1 = 15.
    let d = disk("6.12", "", "kind = \"null_blk\"\nsize = \"64MiB\"\nnull_blk = { zoned = true, zone_size = 4, zone_nr_conv = 40 }");
    assert_eq!(d.queue.attrs.nr_conv_zones, 15);
}

#[test]
fn null_blk_bad_parameters_name_file_line_and_key() {
    let base = "[disks.nullb0]\nkind = \"null_blk\"\nsize = \"1GiB\"\n";
    let e = error(&format!("{base}null_blk = {{ bs = 1000 }}\n"));
    assert!(e.contains("kinds.toml:4: disks.nullb0.null_blk.bs: 1000 is not a power of two"), "{e}");
    let e = error(&format!("{base}[disks.nullb0.null_blk]\nirqmode = 3\n"));
    assert!(e.contains("kinds.toml:5: disks.nullb0.null_blk.irqmode: 3 is not between 0 and 2"), "{e}");
    let e = error(&format!("{base}[disks.nullb0.null_blk]\nzoned = true\nzone_size = 3\n"));
    assert!(e.contains("kinds.toml:6: disks.nullb0.null_blk.zone_size"), "{e}");
    let e = error(&format!("{base}[disks.nullb0.null_blk]\nzone_nr_conv = 3\n"));
    assert!(e.contains("zone_nr_conv: only with zoned = true"), "{e}");
    let e = error(&format!("{base}[disks.nullb0.null_blk]\nmemory_backed = 1\n"));
    assert!(e.contains("memory_backed: this null_blk parameter is not modelled"), "{e}");
    // no_sched up to 6.x: BLK_MQ_F_NO_SCHED refuses a scheduler; 7.2's
    // BLK_MQ_F_NO_SCHED_BY_DEFAULT takes the write.
    let no_sched = format!("{base}[disks.nullb0.null_blk]\nno_sched = 1\n[disks.nullb0.queue]\nscheduler = \"mq-deadline\"\n");
    let e = error(&no_sched);
    assert!(e.contains("kinds.toml:7: disks.nullb0.queue.scheduler"), "{e}");
    let s = load(&format!("kernel = \"7.2\"\n{no_sched}")).unwrap();
    assert_eq!(s.disks[0].queue.attrs.scheduler, Elevator::MqDeadline);
    let e = error("[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\nnull_blk = { bs = 512 }\n");
    assert!(e.contains("kinds.toml:4: disks.sda.null_blk: module parameters are for kind = \"null_blk\" only"), "{e}");
}

#[test]
fn nvme_limits_per_version() {
    // nvme_max_drv_segments = max_hw_sectors / 8 + 1 = 1024 / 8 + 1 = 129,
    // capped by NVME_MAX_SEGS: 127 (6.1), 128 (6.12), 256 (7.2) → 127, 128,
    // 129. Virt boundary: a controller page up to 6.x; 7.2 only without
    // SGLs (the preset has them) → 0. Discard granularity: the LBA size up
    // to 6.x; 7.2 max(NPDG, NPDA) = 4 KiB. io_opt: 6.1 (1 + NOWS) × 512 =
    // 512 with NOWS 0; 6.12+ none.
    let got = |k: &str| {
        let l = disk(k, "", "kind = \"nvme\"\nsize = \"1GiB\"").queue.limits;
        (l.max_segments, l.virt_boundary_mask, l.discard_granularity, l.io_opt)
    };
    assert_eq!(got("6.1"), (127, 4095, 512, 512));
    assert_eq!(got("6.12"), (128, 4095, 512, 0));
    assert_eq!(got("7.2"), (129, 0, 4096, 0));
    // MDTS 5 (128 KiB = 256 sectors): 256 / 8 + 1 = 33 segments.
    let d = disk("6.12", "", "kind = \"nvme\"\nsize = \"1GiB\"\nqueue = { max_hw_sectors_kb = 128 }");
    assert_eq!(d.queue.limits.max_segments, 33);
    // 4 KiB LBAs on 6.1: io_opt and discard granularity one block, 4096.
    let d = disk("6.1", "", "kind = \"nvme\"\nsize = \"1GiB\"\nqueue = { logical_block_size = 4096 }");
    assert_eq!((d.queue.limits.io_opt, d.queue.limits.discard_granularity), (4096, 4096));
}

/// A raid5 md0 over four nvme disks (chunk 512 KiB).
fn raid5(kernel: &str, workload: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n");
    for i in 0..4 {
        s += &format!("[disks.nvme{i}n1]\nkind = \"nvme\"\nsize = \"1GiB\"\n");
    }
    s + "[md.md0]\nlevel = 5\nmembers = [\"nvme0n1\", \"nvme1n1\", \"nvme2n1\", \"nvme3n1\"]\n" + workload
}

#[test]
fn raid5_discard_is_advertised_on_7_2() {
    // raid5_set_limits, 7.2: max_hw_discard_sectors = UINT_MAX on every
    // array; blk_validate_limits: max_discard = min(hw, user UINT_MAX) =
    // 4294967295 sectors = 2199023255040 bytes. Granularity: the data
    // stripe 3 × 512 KiB = 1.5 MiB rounded up to a power of two = 2 MiB,
    // the largest of it and the members' 4 KiB. 6.12 without
    // devices_handle_discard_safely: max_hw_discard_sectors 0 → none.
    let s = load(&raid5("7.2", "")).unwrap();
    let l = &s.stacked[0].queue.limits;
    assert_eq!(((l.max_discard_sectors as u64) << 9, l.discard_granularity), (2_199_023_255_040, 2 << 20));
    let s = load(&raid5("6.12", "")).unwrap();
    let l = &s.stacked[0].queue.limits;
    assert_eq!((l.max_discard_sectors, l.discard_granularity), (0, 0));
}

#[test]
fn raid5_discard_fails_on_7_2_without_safe_devices() {
    // A 6 MiB discard of md0 (three whole 1.5 MiB stripes and more) on 7.2:
    // make_discard_request → raid5_discard_limits → -EOPNOTSUPP, so no
    // member sees a request and the call fails.
    let w = "[workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"discard\"\nsector = 0\nsize = \"6MiB\"\n";
    let (e, ev) = run_events(&raid5("7.2", w), &[]);
    assert!(issued(&e, &ev, "nvme0n1").is_empty());
    assert_eq!(e.jobs[0].errors, 1);
    // With devices_handle_discard_safely the stripes are discarded.
    let safe = raid5("7.2", &format!("devices_handle_discard_safely = true\n{w}"));
    let (e, ev) = run_events(&safe, &[]);
    assert!(!issued(&e, &ev, "nvme0n1").is_empty());
    assert_eq!(e.jobs[0].errors, 0);
}

#[test]
fn virtio_scsi_direct_read_per_version() {
    // dd bs=1M iflag=direct from a contiguous buffer. 6.12: one bvec of
    // 256 pages; 16 segments of 64 KiB ≤ 254, 2048 sectors ≤ max_sectors
    // 2560 → one request. 7.2 (folio_only: one bvec per page): 256
    // segments > 254 → split after 254 pages (2032 sectors); the last 2
    // pages (16 sectors) cannot merge back (254 + 2 segments > 254).
    let text = |k: &str| {
        format!("kernel = \"{k}\"\n[disks.sda]\nkind = \"virtio-scsi\"\nsize = \"1GiB\"\n[workload]\ntype = \"dd\"\nif = \"/dev/sda\"\nof = \"/dev/null\"\nbs = \"1M\"\ncount = 1\niflag = \"direct\"\n")
    };
    let (e, ev) = run_events(&text("6.12"), &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 2048)]);
    let (e, ev) = run_events(&text("7.2"), &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 2032), (2032, 16)]);
}

#[test]
fn null_blk_timer_mode_completion_time() {
    // irqmode=2 completion_nsec=50000: four synchronous 4 KiB O_DIRECT
    // reads, each completing 50 µs after issue (no bandwidth, no
    // latency otherwise): the run ends at 4 × 50 µs.
    let text = |irq: &str| {
        format!("[disks.nullb0]\nkind = \"null_blk\"\nsize = \"1GiB\"\nnull_blk = {{ {irq} }}\n[workload]\ntype = \"dd\"\nif = \"/dev/nullb0\"\nof = \"/dev/null\"\nbs = \"4k\"\ncount = 4\niflag = \"direct\"\n")
    };
    let (e, _) = run_events(&text("irqmode = 2, completion_nsec = 50000"), &[]);
    assert_eq!(e.core.now, 200_000);
    // Softirq mode (the default): every request completes as it is issued.
    let (e, ev) = run_events(&text("irqmode = 1"), &[]);
    assert_eq!(e.core.now, 0);
    assert_eq!(issued(&e, &ev, "nullb0"), vec![(0, 8), (8, 8), (16, 8), (24, 8)]);
}

/// A loop device over a file at `offset` on an nvme disk, and a workload.
fn loop_over_nvme(kernel: &str, lo: &str, workload: &str) -> String {
    format!("kernel = \"{kernel}\"\n[disks.nvme0n1]\nkind = \"nvme\"\nsize = \"1GiB\"\n[disks.loop0]\nkind = \"loop\"\nbacking = \"nvme0n1\"\n{lo}\n{workload}")
}

#[test]
fn loop_limits_follow_the_driver_and_the_backing_disk() {
    // loop_add: max_hw_sectors 2560 → max_sectors min(2560, 2560). With
    // direct I/O the backing device's block size (nvme 512, or 4096 when
    // set); the file system's punch hole: discard and write zeroes up to
    // UINT_MAX >> 9 = 8388607 sectors at 4 KiB; write cache (fsync), no
    // FUA; non-rotational like the nvme disk; one queue of 128 tags with
    // BLK_MQ_F_NO_SCHED_BY_DEFAULT → none, nr_requests 128. 7:0.
    let s = load(&loop_over_nvme("6.12", "direct_io = true\noffset = \"1MiB\"", "")).unwrap();
    let lo = &s.disks[1];
    let l = &lo.queue.limits;
    assert_eq!((l.logical_block_size, l.max_hw_sectors, l.max_sectors, l.max_segments), (512, 2560, 2560, 128));
    assert_eq!((l.max_hw_discard_sectors, l.discard_granularity, l.max_write_zeroes_sectors), (8_388_607, 4096, 8_388_607));
    let a = &lo.queue.attrs;
    assert_eq!((a.queue_depth, a.nr_hw_queues, a.scheduler, a.nr_requests), (128, 1, Elevator::None, 128));
    assert_eq!((a.rotational, a.write_cache, a.fua), (false, true, false));
    // The file fills the disk after 1 MiB: 1 GiB - 1 MiB.
    assert_eq!(lo.nr_sectors, (1 << 21) - 2048);
    // 4 KiB blocks below: 8388607 rounds down to 8388600.
    let text = "kernel = \"6.12\"\n[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\nqueue = { logical_block_size = 4096 }\n[disks.loop0]\nkind = \"loop\"\nbacking = \"sda\"\ndirect_io = true\n";
    let l = &load(text).unwrap().disks[1].queue.limits;
    assert_eq!((l.logical_block_size, l.max_hw_discard_sectors), (4096, 8_388_600));
}

#[test]
fn loop_direct_io_becomes_one_bio_on_the_backing_disk() {
    // dd bs=1M oflag=direct on loop0 (6.12): one 2048-sector request on
    // loop0 (16 segments of 64 KiB, 2048 ≤ 2560). lo_rw_aio hands its
    // bvecs to the file's direct I/O as one bio at 1 MiB (sector 2048) on
    // nvme0n1, which splits it at max_sectors 1024 (512 KiB, MDTS 7).
    let dd = "[workload]\ntype = \"dd\"\nif = \"/dev/zero\"\nof = \"/dev/loop0\"\nbs = \"1M\"\ncount = 2\noflag = \"direct\"\n";
    let (e, ev) = run_events(&loop_over_nvme("6.12", "direct_io = true\noffset = \"1MiB\"", dd), &[]);
    assert_eq!(issued(&e, &ev, "loop0"), vec![(0, 2048), (2048, 2048)]);
    assert_eq!(issued(&e, &ev, "nvme0n1"), vec![(2048, 1024), (3072, 1024), (4096, 1024), (5120, 1024)]);
    // Each loop request completes after its bio on the disk.
    use blkstack::trace::Action;
    let lo = e.core.topo.by_name("loop0").unwrap();
    let nv = e.core.topo.by_name("nvme0n1").unwrap();
    let t = |dev, a: Action| ev.iter().filter(|x| x.dev == dev && x.action == a).map(|x| x.time).collect::<Vec<_>>();
    let (lo_c, nv_c) = (t(lo, Action::Complete), t(nv, Action::Complete));
    assert_eq!(lo_c.len(), 2);
    assert!(lo_c[0] >= nv_c[1] && lo_c[1] >= nv_c[3]);
    assert_eq!(e.jobs[0].errors, 0);
}

#[test]
fn loop_errors_name_file_line_and_key() {
    let e = error(&loop_over_nvme("6.12", "", ""));
    assert!(e.contains("disks.loop0.direct_io: buffered loop I/O"), "{e}");
    let e = error(&loop_over_nvme("6.12", "direct_io = true\noffset = 1000", ""));
    assert!(e.contains("kinds.toml:9: disks.loop0.offset: 1000 is not a multiple"), "{e}");
    let e = error(&loop_over_nvme("6.12", "direct_io = true\nsize = \"2GiB\"", ""));
    assert!(e.contains("kinds.toml:9: disks.loop0.size: the file"), "{e}");
    let e = error("[disks.loop0]\nkind = \"loop\"\nbacking = \"sdz\"\ndirect_io = true\n");
    assert!(e.contains("kinds.toml:3: disks.loop0.backing: 'sdz' is not a disk"), "{e}");
    let e = error(&loop_over_nvme("6.12", "direct_io = true\nmodel = { read_latency_us = 5 }", ""));
    assert!(e.contains("kinds.toml:9: disks.loop0.model: a loop device has no service model"), "{e}");
    let e = error("[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\nbacking = \"sdb\"\n");
    assert!(e.contains("kinds.toml:4: disks.sda.backing: only for kind = \"loop\""), "{e}");
}

/// Two steps on one sata disk: `first` then `second`, the first untraced.
fn two_steps(first: &str, second: &str) -> String {
    format!("kernel = \"6.12\"\n[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\n[[steps]]\ntrace = false\n{first}\n[[steps]]\n{second}\n")
}

#[test]
fn steps_run_in_order_on_one_stack_and_trace_only_traced_steps() {
    // Each step: dd bs=1k count=1 through the page cache. The 1 KiB write
    // covers part of a 4 KiB buffer (blocksize 4096 on a 1 GiB disk) that
    // is not uptodate: one 8-sector read first; the last close writes the
    // page back (8 sectors) and drops the cache (kill_bdev), so the second
    // step reads again. The trace shows the second step only: R 0+8 then
    // W 0+8, after the first step ended; diskstats count both steps.
    let dd = "type = \"dd\"\nif = \"/dev/zero\"\nof = \"/dev/sda\"\nbs = \"1k\"\ncount = 1";
    let (e, ev) = run_events(&two_steps(dd, dd), &[]);
    use blkstack::trace::Action;
    let sda = e.core.topo.by_name("sda").unwrap();
    let d: Vec<_> = ev.iter().filter(|x| x.dev == sda && x.action == Action::Issue).collect();
    assert_eq!(d.iter().map(|x| (x.op.is_write(), x.sector, x.sectors())).collect::<Vec<_>>(), vec![(false, 0, 8), (true, 0, 8)]);
    assert!(d[0].time > 0, "the second step starts after the first");
    let st = e.core.diskstats(sda);
    assert_eq!((st[0], st[4]), (2, 2), "reads and writes completed over both steps");
}

#[test]
fn steps_errors_name_the_step() {
    let dd = "type = \"dd\"\nif = \"/dev/sda\"\nof = \"/dev/null\"\nbs = \"4k\"\niflag = \"direct\"\ncount = 1";
    let e = error(&two_steps(dd, "type = \"dd\"\nif = \"/dev/sda\"\nof = \"/dev/null\"\nbs = \"4k\"\niflag = \"direct\"\ncounts = 1"));
    assert!(e.contains("kinds.toml:19: steps[1].counts: unknown key"), "{e}");
    let e = error(&format!("{}[workload]\n{dd}\n", two_steps(dd, dd)));
    assert!(e.contains("workload: give either [workload] or [[steps]]"), "{e}");
    let e = error(&two_steps(dd, &format!("{dd}\ntrace = 2")));
    assert!(e.contains("kinds.toml:20: steps[1].trace: expected true/false"), "{e}");
}

#[test]
fn loop_file_in_the_json_summary() {
    // As /sys/block/loop0/loop/{backing_file,offset,dio}: offset in bytes.
    let sc = load(&loop_over_nvme("6.12", "direct_io = true\noffset = \"1MiB\"", "")).unwrap();
    let mut e = sc.build();
    let st = e.run();
    let v = blkstack::run::summary(&sc, &e, &st);
    assert_eq!(v["devices"]["loop0"]["loop"], serde_json::json!({"backing_device": "nvme0n1", "offset": 1048576, "direct_io": true}));
    assert_eq!(v["devices"]["loop0"]["kind"], "loop");
    assert_eq!((v["devices"]["loop0"]["major"].as_u64(), v["devices"]["loop0"]["minor"].as_u64()), (Some(7), Some(0)));
}
