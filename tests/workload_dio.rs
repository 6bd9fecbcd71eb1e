//! Direct I/O bio sizes per kernel version (seed 003): a 64 MiB O_DIRECT
//! read into a physically fragmented buffer, max_sectors_kb = 512.
//!
//! In seed 003 only p ≈ 4.5 % of the buffer's page boundaries continue
//! physically, i.e. `buffer_fragmentation` (the probability that a page is
//! *not* after the previous one) is 1 − p = 0.955.
//!
//! Expected size of a bio under `dio_bvec_merge = phys_contig` (worked by
//! hand from `bio_iov_iter_get_pages`): the first batch pins 256 pages,
//! which merge into 256 − X₁ bvecs, X₁ ~ Bin(255, p) being the contiguous
//! boundaries; the next batch pins the X₁ free vecs' worth of pages, of
//! which X₂ ~ Bin(X₁, p) merge, and so on until the 256 vecs are full. The
//! pages per bio are 256 + X₁ + X₂ + …, with mean 256 + 255·p/(1 − p) =
//! 256 + 255 × 0.045/0.955 = 268.02 pages (2144 sectors), and standard
//! deviation about √(255·p·(1 − p)) ≈ 3.3 pages. Over ~61 full bios the
//! mean is within 268.0 ± 4 × 3.4/√61 ≈ ± 1.8 pages: [266, 270] pages, i.e.
//! 2128–2160 sectors (the seed observed 2136, 2152, 2128, 2160). No bio can
//! hold fewer than 256 pages (the first batch fills the vecs or merges).

mod common;

use blkstack::trace::Action;
use common::{issued, on, run_events};

const SEED_003: &str = r#"
seed = 3
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.queue]
max_sectors_kb = 512
[workload]
type = "dd"
if = "/dev/sda"
of = "/dev/null"
bs = "64M"
count = 1
iflag = "direct"
buffer_fragmentation = 0.955
"#;

/// Sizes in sectors of the bios dd queued on sda ('Q').
fn queued(sets: &[&str]) -> Vec<u32> {
    let (engine, events) = run_events(SEED_003, sets);
    let q = on(&engine, &events, "sda", Action::Queue);
    // The bios tile the 64 MiB read: 131,072 sectors from sector 0.
    assert_eq!(q.iter().map(|b| b.1 as u64).sum::<u64>(), 131_072);
    q.iter().map(|b| b.1).collect()
}

#[test]
fn phys_contig_bios_hold_256_plus_merged_pages() {
    let q = queued(&["kernel=6.12"]);
    let full = &q[..q.len() - 1];
    assert!(full.iter().all(|&s| (2048..=2400).contains(&s)), "{full:?}");
    let mean_pages = full.iter().map(|&s| s as f64 / 8.0).sum::<f64>() / full.len() as f64;
    assert!((266.0..=270.0).contains(&mean_pages), "mean {mean_pages} pages per bio");
}

#[test]
fn iov_align_max_io_cuts_every_bio_but_the_last_to_max_sectors() {
    // max_sectors 1024: each ~268-page bio is cut to 256 pages (2048
    // sectors, two max-size requests); the pages beyond start the next bio.
    let q = queued(&["kernel=6.12", "behaviour.iov_align=max_io"]);
    let (last, rest) = q.split_last().unwrap();
    assert!(rest.iter().all(|&s| s % 1024 == 0 && s >= 2048), "{rest:?}");
    assert!(*last > 0);
    // 64 MiB = 64 × 2048 sectors: 64 bios of 2048 (a remainder of a few
    // pages can only come last).
    assert!(rest.len() >= 63);
}

#[test]
fn iov_align_v2_as_posted_caps_every_bio_at_max_sectors() {
    // max_sectors 1024 = 512 KiB. The posted patch limits each extraction to
    // (max - bi_size) & (max - 1): 512 KiB into an empty bio, then 0 once it
    // holds 512 KiB (the first batch of 256 scattered pages is 1 MiB, so
    // the first extraction alone fills it). Every bio is 1024 sectors: 128.
    let q = queued(&["kernel=6.12", "behaviour.iov_align=max_io_v2"]);
    assert_eq!(q, vec![1024; 128]);
}

/// A 64 KiB libaio read (`__blkdev_direct_IO_async`, one bio) on a null_blk
/// disk of max_sectors 32 (16 KiB), fio at depth 1.
fn fio_short_reads(sets: &[&str]) -> Vec<(u64, u32)> {
    let text = r#"
[disks.nullb0]
kind = "null_blk"
size = "1GiB"
[disks.nullb0.null_blk]
max_sectors = 32
[workload]
type = "fio"
args = ["--name=r", "--filename=/dev/nullb0", "--direct=1", "--ioengine=libaio", "--rw=read", "--bs=64k", "--size=128k", "--iodepth=1"]
"#;
    let (engine, events) = run_events(text, sets);
    on(&engine, &events, "nullb0", Action::Queue)
}

#[test]
fn iov_align_v2_makes_a_single_bio_read_complete_short_and_fio_requeue() {
    // Off: each 64 KiB read is one bio of 128 sectors (split later into
    // four requests).
    assert_eq!(fio_short_reads(&["kernel=6.12"]), vec![(0, 128), (128, 128)]);
    // As posted: the bio stops at 16 KiB (32 sectors), the read returns
    // 16 KiB, and fio submits the rest again (io_completed's requeue), which
    // stops at 16 KiB too: four 32-sector bios one after another per read.
    let want: Vec<(u64, u32)> = (0..8).map(|i| (i * 32, 32)).collect();
    assert_eq!(fio_short_reads(&["kernel=6.12", "behaviour.iov_align=max_io_v2"]), want);
}

#[test]
fn folio_only_puts_one_page_in_each_bvec() {
    // 7.2: no merging across order-0 folios, 256 pages (2048 sectors) per
    // bio: 64 MiB is exactly 64 bios.
    let q = queued(&["kernel=7.2"]);
    assert_eq!(q, vec![2048; 64]);
}


/// dm-stripe over three virtio disks, 64 KiB chunks (validate/scenarios/
/// dm-stripe.toml): one 512 KiB O_DIRECT write at sector 0.
const DM_STRIPE_WRITE: &str = r#"
[disks.vda]
kind = "virtio"
size = "256MiB"
[disks.vdb]
kind = "virtio"
size = "256MiB"
[disks.vdc]
kind = "virtio"
size = "256MiB"
[dm.st]
table = "0 393216 striped 3 128 /dev/vda 0 /dev/vdb 0 /dev/vdc 0"
[workload]
type = "dd"
if = "/dev/zero"
of = "/dev/st"
bs = "512k"
count = 1
oflag = "direct"
"#;

#[test]
fn a_6_1_write_is_plugged_until_the_task_sleeps() {
    // dm-stripe cuts the 1024-sector bio at its 128-sector chunks:
    // [0,128) → vda 0, [128,256) → vdb 0, [256,384) → vdc 0, [384,512) →
    // vda 128, [512,640) → vdb 128, [640,768) → vdc 128, [768,896) → vda
    // 256, [896,1024) → vdb 256.
    //
    // 6.1: blkdev_write_iter's plug holds the requests; each later piece of
    // a member back-merges into that member's request (the plug merge tries
    // the member queue's first request from the head, the only one): vda
    // 0 + 384, vdb 0 + 384, vdc 0 + 256. The task then sleeps in
    // submit_bio_wait, so the scheduler flushes the plug (from_schedule):
    // one timer unplug ('UT') per queue and the kworker issues them.
    let (engine, events) = run_events(DM_STRIPE_WRITE, &["kernel=6.1"]);
    assert_eq!(issued(&engine, &events, "vda"), [(0, 384)]);
    assert_eq!(issued(&engine, &events, "vdb"), [(0, 384)]);
    assert_eq!(issued(&engine, &events, "vdc"), [(0, 256)]);
    assert_eq!(events.iter().filter(|e| e.action == Action::UnplugTimer).count(), 3);
    assert!(events.iter().all(|e| e.action != Action::Unplug));
    let kworker = events.iter().filter(|e| e.action == Action::Issue).all(|e| engine.core.tasks[e.task as usize].comm.starts_with("kworker"));
    assert!(kworker, "the plug flushed from schedule runs the queues asynchronously");

    // 6.12 (712c7364655f, 6.5: no plug in blkdev_write_iter): dm-stripe
    // sets chunk_sectors, the pieces are split with REQ_NOMERGE, and each
    // is its own 128-sector request.
    let (engine, events) = run_events(DM_STRIPE_WRITE, &["kernel=6.12"]);
    assert_eq!(issued(&engine, &events, "vda"), [(0, 128), (128, 128), (256, 128)]);
    assert_eq!(issued(&engine, &events, "vdb"), [(0, 128), (128, 128), (256, 128)]);
    assert_eq!(issued(&engine, &events, "vdc"), [(0, 128), (128, 128)]);
    // The switch alone turns 6.1's behaviour off.
    let (engine, events) = run_events(DM_STRIPE_WRITE, &["kernel=6.1", "behaviour.blkdev_write_plug=false"]);
    assert_eq!(issued(&engine, &events, "vdc"), [(0, 128), (128, 128)]);
}
