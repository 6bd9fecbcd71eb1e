//! `buffer_segments`: an O_DIRECT buffer given as its physically contiguous
//! pieces, for dd and fio. A disk with `max_segments = 1` shows the pieces:
//! `bio_split_to_limits` cuts a bio at each physical discontinuity, so each
//! piece the I/O covers becomes its own request.

mod common;

use blkstack::scenario;
use common::{issued, run_events};

/// One 16 KiB O_DIRECT read of sda (1 GiB SATA, one segment per request)
/// into a buffer laid out as `layout`.
fn dd_read(layout: &str) -> String {
    format!(
        "[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\n[disks.sda.queue]\nmax_segments = 1\n\
         [workload]\ntype = \"dd\"\nif = \"/dev/sda\"\nof = \"/dev/null\"\niflag = \"direct\"\nbs = \"16k\"\ncount = 1\n{layout}\n"
    )
}

fn requests(text: &str) -> Vec<(u64, u32)> {
    let (engine, events) = run_events(text, &[]);
    issued(&engine, &events, "sda")
}

#[test]
fn each_piece_of_a_dd_buffer_is_its_own_segment() {
    // One piece of 4 pages: one segment, one 32-sector request.
    assert_eq!(requests(&dd_read("buffer_segments = [4]")), [(0, 32)]);
    // 1 + 3 pages, apart: two segments, 8 and 24 sectors.
    assert_eq!(requests(&dd_read("buffer_segments = [1, 3]")), [(0, 8), (8, 24)]);
    // Given addresses that happen to continue each other: one segment.
    let touching = "buffer_segments = [{ pages = 2, addr = 0x20000000 }, { pages = 2, addr = 0x20002000 }]";
    assert_eq!(requests(&dd_read(touching)), [(0, 32)]);
    // The same pieces in the other order: two segments of 8 KiB.
    let swapped = "buffer_segments = [{ pages = 2, addr = 0x20002000 }, { pages = 2, addr = 0x20000000 }]";
    assert_eq!(requests(&dd_read(swapped)), [(0, 16), (16, 16)]);
}

#[test]
fn fio_io_u_buffers_are_slices_of_one_buffer() {
    // iodepth 2, bs 8 KiB: fio's I/O buffer is 2 × 8 KiB, io_u 0 at its
    // pages 0-1 and io_u 1 at pages 2-3. Pieces [3, 1]: io_u 0 lies in the
    // first piece (one segment), io_u 1 straddles both (two of 4 KiB).
    // Reads of blocks 0 and 1: 16 sectors from io_u 0, then 8 + 8 from io_u 1.
    let text = "[disks.sda]\nkind = \"sata\"\nsize = \"1GiB\"\n[disks.sda.queue]\nmax_segments = 1\n\
                [workload]\ntype = \"fio\"\nbuffer_segments = [3, 1]\n\
                args = [\"--name=x\", \"--filename=sda\", \"--rw=read\", \"--bs=8k\", \"--size=16k\", \"--direct=1\", \"--ioengine=libaio\", \"--iodepth=2\"]\n";
    let mut got = requests(text);
    got.sort();
    assert_eq!(got, [(0, 16), (16, 8), (24, 8)]);
}

#[test]
fn bad_segments_name_the_key() {
    let err = |layout: &str| scenario::load("b.toml", &dd_read(layout), None, &[]).unwrap_err().to_string();
    // The buffer spans 4 pages; the key is on line 13.
    let e = err("buffer_segments = [1, 2]");
    assert!(e.starts_with("b.toml:13: workload.buffer_segments: the pieces hold 3 pages, the buffer spans 4"), "{e}");
    let e = err("buffer_segments = [4, 0]");
    assert!(e.contains("workload.buffer_segments[1]"), "{e}");
    let e = err("buffer_segments = [{ pages = 4, addr = 0x1001 }]");
    assert!(e.contains("workload.buffer_segments[0].addr: 0x1001 is not page aligned"), "{e}");
    let e = err("buffer_segments = [{ pages = 4, where = 1 }]");
    assert!(e.contains("buffer_segments[0]") && e.contains("where"), "{e}");
    let e = err("buffer_segments = [4]\nbuffer_fragmentation = 0.5");
    assert!(e.contains("not both"), "{e}");
}
