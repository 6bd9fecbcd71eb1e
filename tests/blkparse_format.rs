//! blkparse's default line layout (blkparse_fmt.c `process_default`):
//! "%3d,%-3d %2d %8d %5d.%09lu %5u %2s %3s " then the action's tail.
//! Expected lines are written out by hand from that format.

mod common;

use blkstack::trace::blkparse::format_event;
use blkstack::trace::TraceCtx;

/// Run `text` and return its blkparse lines.
fn blkparse_lines(text: &str) -> Vec<String> {
    let (e, ev) = common::run_events(text, &[]);
    let ctx = TraceCtx { topo: &e.core.topo, tasks: &e.core.tasks };
    let mut out = Vec::new();
    for (i, x) in ev.iter().enumerate() {
        format_event(x, i as u64 + 1, &ctx, &mut out).unwrap();
    }
    String::from_utf8(out).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn lines_match_blkparse_layout() {
    let text = r#"
kernel = "6.1"
[disks.sda]
kind = "sata"
size = "1GiB"
[disks.sda.queue]
scheduler = "none"
max_sectors_kb = 64
[disks.sda.partitions.sda1]
start = 2048
size = "1MiB"
[workload]
type = "bios"
device = "sda1"
pid = 843
comm = "dd"
[[workload.bio]]
op = "read"
sector = 0
size = "96KiB"
"#;
    let lines = blkparse_lines(text);
    // A (partition remap), Q, X (split at 128 sectors, remainder at 2176),
    // G and D of the front, G and D of the remainder, then the completions.
    assert_eq!(lines[0], "  8,0    0        1     0.000000000   843  A   R 2048 + 192 <- (8,1) 0");
    assert_eq!(lines[1], "  8,0    0        2     0.000000000   843  Q   R 2048 + 192 [dd]");
    assert_eq!(lines[2], "  8,0    0        3     0.000000000   843  X   R 2048 / 2176 [dd]");
    assert_eq!(lines[3], "  8,0    0        4     0.000000000   843  G   R 2048 + 128 [dd]");
    assert_eq!(lines[4], "  8,0    0        5     0.000000000   843  D   R 2048 + 128 [dd]");
    assert_eq!(lines[5], "  8,0    0        6     0.000000000   843  G   R 2176 + 64 [dd]");
    assert_eq!(lines[6], "  8,0    0        7     0.000000000   843  D   R 2176 + 64 [dd]");
    // Completions: pid 0, "[error]" instead of the command name. The SATA
    // model takes 100 µs + 64 KiB at 530 MB/s = 100,000 + 123,652 ns (65536 / 0.53, truncated) for the first.
    assert_eq!(lines[7], "  8,0    0        8     0.000223652     0  C   R 2048 + 128 [0]");
    assert_eq!(lines.len(), 9);

    // 6.12 runs each __submit_bio in a plug of its own: P, then U with a
    // depth of one request, before the D. P and U carry no data ("N").
    let lines = blkparse_lines(&text.replace("kernel = \"6.1\"", "kernel = \"6.12\""));
    assert_eq!(lines[4], "  8,0    0        5     0.000000000   843  P   N [dd]");
    assert_eq!(lines[5], "  8,0    0        6     0.000000000   843  U   N [dd] 1");
    assert_eq!(lines[6], "  8,0    0        7     0.000000000   843  D   R 2048 + 128 [dd]");
}
