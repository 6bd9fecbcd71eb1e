//! Splitting to queue limits, checked against values worked out by hand from
//! the kernel's rules (block/blk-merge.c). Each test shows its working.

mod common;

use blkstack::trace::Action;
use common::{issued, on, run_events};

/// A SATA disk with `queue` lines, read by dd.
fn dd_read(queue: &str, bs: &str) -> String {
    format!(
        r#"
kernel = "6.12"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.queue]
{queue}
[workload]
type = "dd"
if = "/dev/sda"
of = "/dev/null"
bs = "{bs}"
count = 1
iflag = "direct"
"#
    )
}

#[test]
fn one_mib_read_at_128k_is_eight_256_sector_requests() {
    // dd's buffer is physically contiguous: one bio of one 1 MiB bvec (256
    // pages ≤ BIO_MAX_VECS, the simple direct-I/O path). get_max_io_size =
    // max_sectors = 256. The walk: the bvec is larger than a page, so
    // bvec_split_segs takes 64 KiB segments (max_segment_size) up to
    // max_bytes = 128 KiB — 2 segments — and the bvec does not fit: split at
    // 256 sectors. The remainder goes round again: 8 pieces in all.
    let (e, ev) = run_events(&dd_read("max_sectors_kb = 128", "1M"), &[]);
    let expect: Vec<(u64, u32)> = (0..8).map(|i| (i * 256, 256)).collect();
    assert_eq!(issued(&e, &ev, "sda"), expect);
    assert_eq!(on(&e, &ev, "sda", Action::Queue), vec![(0, 2048)], "one Q per bio object");
    assert_eq!(on(&e, &ev, "sda", Action::Split).len(), 7);
}

#[test]
fn read_of_1028k_adds_a_final_8_sector_request() {
    // 1028 KiB spans 257 pages: __blkdev_direct_IO builds one bio (the
    // contiguous pages merge into one bvec) inside a plug. 2056 sectors =
    // 8 × 256 + 8.
    let (e, ev) = run_events(&dd_read("max_sectors_kb = 128", "1028k"), &[]);
    let mut expect: Vec<(u64, u32)> = (0..8).map(|i| (i * 256, 256)).collect();
    expect.push((2048, 8));
    assert_eq!(issued(&e, &ev, "sda"), expect);
}

/// A disk with `queue` lines and an explicit list of bios.
fn bios(kind: &str, queue: &str, entries: &str) -> String {
    format!(
        r#"
[disks.sda]
kind = "{kind}"
size = "1GiB"
[disks.sda.queue]
{queue}
[workload]
type = "bios"
device = "sda"
{entries}
"#
    )
}

#[test]
fn chunk_sectors_boundaries_cut_requests() {
    // chunk_sectors = 128. A 128 KiB (256-sector) read at sector 64:
    // get_max_io_size = min(max_sectors 2560, 128 - 64 % 128 = 64) → 64;
    // then at 128: min(2560, 128) → 128; the rest, 64 sectors at 256, fits.
    let text = bios("sata", "chunk_sectors = 128", "[[workload.bio]]\nop = \"read\"\nsector = 64\nsize = \"128KiB\"\n");
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(64, 64), (128, 128), (256, 64)]);
}

#[test]
fn first_piece_ends_on_a_physical_block() {
    // pbs 4096 (8 sectors), max_sectors 128. A 256-sector read at sector 1:
    // start = 1 mod 8 = 1, end = round_down(1 + 128, 8) = 128 → 127 sectors,
    // so the next piece starts aligned at 128 and takes 128; 1 sector is left.
    let text = bios(
        "sata",
        "physical_block_size = 4096\nmax_sectors_kb = 64",
        "[[workload.bio]]\nop = \"read\"\nsector = 1\nsize = \"256s\"\n",
    );
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(1, 127), (128, 128), (256, 1)]);
}

#[test]
fn segment_split_rounds_down_to_the_logical_block() {
    // lbs 4096, max_segments 2. Bvecs of 3584 (ending on a page boundary),
    // 4096 and 512 bytes, none physically contiguous: 8192 bytes = 2 blocks.
    // Walk: 3584 → 1 segment; 4096 → 2 segments, 7680 bytes; the third bvec
    // finds no segment left → split at round_down(7680, 4096) = 4096 bytes
    // (8 sectors), not 15 sectors. The remainder (the last 3584 bytes of the
    // second bvec and the 512-byte one) is 2 segments and fits.
    let text = bios(
        "sata",
        "logical_block_size = 4096\nphysical_block_size = 4096\nmax_segments = 2",
        "[[workload.bio]]\nop = \"read\"\nsector = 0\nbvecs = [[0x10000200, 3584], [0x20000000, 4096], [0x30000000, 512]]\n",
    );
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 8), (8, 8)]);
}

#[test]
fn max_segments_with_a_fragmented_buffer() {
    // buffer_fragmentation = 1: every page of dd's 64 KiB buffer is
    // physically alone, so the bio holds 16 one-page bvecs. Each is one
    // segment; max_segments = 4 → 16 KiB (32 sectors) per request: 4 requests.
    let text = dd_read("max_segments = 4", "64k").replace("iflag = \"direct\"", "iflag = \"direct\"\nbuffer_fragmentation = 1.0");
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 32), (32, 32), (64, 32), (96, 32)]);
}

#[test]
fn virt_boundary_gap_splits_512_byte_pieces() {
    // Hyper-V storvsc, virt_boundary_mask 4095. Pieces of 512 bytes in
    // separate pages: A at offset 3584 (ends on the page boundary), B and C
    // at offset 0. bvec_gap_to_prev(A, B): B starts at offset 0 and A ends on
    // the boundary → no gap, one request. (B, C): B ends at 512, not on the
    // boundary → gap → split after 2 sectors; C alone is the second request.
    let text = bios(
        "hyperv",
        "",
        "[[workload.bio]]\nop = \"write\"\nsector = 0\nbvecs = [[0x10000e00, 512], [0x20000000, 512], [0x30000000, 512]]\n",
    );
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 2), (2, 1)]);
}

#[test]
fn every_512_byte_piece_alone_under_virt_boundary() {
    // Four 512-byte pieces each at offset 0 of its own page: every previous
    // piece ends at 512, off the boundary → a gap before each → 4 requests.
    let text = bios(
        "hyperv",
        "",
        "[[workload.bio]]\nop = \"write\"\nsector = 8\nbvecs = [[0x10000000, 512], [0x20000000, 512], [0x30000000, 512], [0x40000000, 512]]\n",
    );
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(8, 1), (9, 1), (10, 1), (11, 1)]);
}

#[test]
fn discard_split_by_max_and_granularity() {
    // discard_granularity 4096 (8 sectors), discard_max_bytes 1 MiB (2048).
    // A 6144-sector discard at sector 1: bio_split_discard takes 2048, then
    // pulls the end back so the next piece starts aligned:
    // (1 + 2048) mod 8 = 1 → 2047. Then (2048 + 2048) mod 8 = 0 → 2048, twice;
    // one sector is left at 6144.
    let text = bios(
        "sata",
        "discard_granularity = 4096\ndiscard_max_bytes = 1048576",
        "[[workload.bio]]\nop = \"discard\"\nsector = 1\nsize = \"6144s\"\n",
    );
    let (e, ev) = run_events(&text, &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(1, 2047), (2048, 2048), (4096, 2048), (6144, 1)]);
}

#[test]
fn write_zeroes_split_differs_between_61_and_612() {
    // write_zeroes_max_bytes 64 KiB (128 sectors), chunk_sectors 96.
    // 6.1 cuts at exactly 128 sectors: 0+128, 128+72.
    // 6.12 uses get_max_io_size with the chunk: min(128, 96 - 0) = 96, then at
    // 96 min(128, 96) = 96, then 8 remain.
    let t = bios(
        "sata",
        "write_zeroes_max_bytes = 65536\nchunk_sectors = 96",
        "[[workload.bio]]\nop = \"write_zeroes\"\nsector = 0\nsize = \"200s\"\n",
    );
    let (e, ev) = run_events(&format!("kernel = \"6.1\"\n{t}"), &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 128), (128, 72)]);
    let (e, ev) = run_events(&format!("kernel = \"6.12\"\n{t}"), &[]);
    assert_eq!(issued(&e, &ev, "sda"), vec![(0, 96), (96, 96), (192, 8)]);
}

#[test]
fn partition_bios_are_remapped_to_the_disk() {
    // sda1 starts at sector 2048: a read at partition sector 0 shows an 'A'
    // on sda (2048 <- sda1 0) and is issued at 2048.
    let text = r#"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.partitions.sda1]
start = 2048
size = "100MiB"
[workload]
type = "bios"
device = "sda1"
[[workload.bio]]
op = "read"
sector = 0
size = "4KiB"
"#;
    let (e, ev) = run_events(text, &[]);
    assert_eq!(on(&e, &ev, "sda", Action::Remap), vec![(2048, 8)]);
    let a = ev.iter().find(|x| x.action == Action::Remap).unwrap();
    assert_eq!((a.arg, e.core.topo.dev(a.from_dev).name.as_str()), (0, "sda1"));
    assert_eq!(issued(&e, &ev, "sda"), vec![(2048, 8)]);
}

#[test]
fn nowait_and_atomic_bios_are_failed_not_split() {
    // A 1 MiB REQ_NOWAIT read at max_sectors_kb 128 would need a split:
    // the kernel ends it with BLK_STS_AGAIN instead; REQ_ATOMIC with
    // -EINVAL. Nothing is issued; each counts one error on the disk. The
    // bio was queued ('Q'), so it is traced complete, with its bi_status
    // as the errno (blk_add_trace_bio_complete).
    for (flag, errno) in [("nowait", -11), ("atomic", -22)] {
        let text = bios("sata", "max_sectors_kb = 128", &format!("[[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"1MiB\"\nflags = [\"{flag}\"]\n"));
        let (e, ev) = run_events(&text, &[]);
        assert!(issued(&e, &ev, "sda").is_empty(), "{flag}");
        assert_eq!(e.core.stats[0].errors, 1, "{flag}");
        let c: Vec<(u64, u32, i32)> = ev.iter().filter(|x| x.action == Action::Complete).map(|x| (x.sector, x.sectors(), x.error)).collect();
        assert_eq!(c, vec![(0, 2048, errno)], "{flag}");
        // Small enough to fit: issued as one request.
        let text = bios("sata", "max_sectors_kb = 128", &format!("[[workload.bio]]\nop = \"read\"\nsector = 0\nsize = \"64KiB\"\nflags = [\"{flag}\"]\n"));
        let (e, ev) = run_events(&text, &[]);
        assert_eq!(issued(&e, &ev, "sda"), vec![(0, 128)], "{flag}");
    }
}
