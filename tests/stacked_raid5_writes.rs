//! md raid5 writes as members see them (src/md/raid5_io.rs): raid5d
//! submits the stripe work inside its own plug, a batch of full-stripe
//! writes member by member, so a member's consecutive 4 KiB writes merge;
//! writes carry the bio's REQ_SYNC (R5_SyncIO). The validation suite's
//! raid5-full-stripe-write scenario, worked by hand.

mod common;

use blkstack::trace::{rwbs, Action};

/// raid5, four 256 MiB virtio members, 64 KiB chunks, left-symmetric
/// (mdadm's data offset 2048 sectors); `dd` writes.
fn scenario(kernel: &str, dd: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n");
    for d in ["vda", "vdb", "vdc", "vdd"] {
        s += &format!("[disks.{d}]\nkind = \"virtio\"\nsize = \"256MiB\"\n");
    }
    s + "[md.md0]\nlevel = 5\nchunk = \"64KiB\"\nmembers = [\"vda\", \"vdb\", \"vdc\", \"vdd\"]\n\
         [workload]\ntype = \"dd\"\nif = \"/dev/zero\"\nof = \"/dev/md0\"\noflag = \"direct\"\n" + dd
}

/// (rwbs, sector, sectors, task) of `action` events on `dev`.
fn on(e: &blkstack::engine::Engine, ev: &[blkstack::trace::Event], dev: &str, action: Action) -> Vec<(String, u64, u32, String)> {
    let id = e.core.topo.by_name(dev).unwrap();
    ev.iter()
        .filter(|x| x.dev == id && x.action == action)
        .map(|x| (rwbs(x.op, x.flags, x.bytes), x.sector, x.sectors(), e.core.tasks[x.task as usize].comm.clone()))
        .collect()
}

/// The requests issued to member `dev`: (RWBS, sector, sectors).
fn issued(e: &blkstack::engine::Engine, ev: &[blkstack::trace::Event], dev: &str) -> Vec<(String, u64, u32)> {
    on(e, ev, dev, Action::Issue).into_iter().map(|x| (x.0, x.1, x.2)).collect()
}

/// One expected request.
fn req(rwbs: &str, sector: u64, sectors: u32) -> (String, u64, u32) {
    (rwbs.to_string(), sector, sectors)
}

#[test]
fn a_full_stripe_write_is_one_chunk_per_member() {
    // bs 192k seek 2: md sectors 768..1152, all of stripe row 2 (3 data
    // chunks of 128 sectors). Row 2's parity is on member 3 − 2 = 1 (vdb),
    // its data on vdc, vdd, vda; member sectors 256..384, + 2048.
    //
    // The bio covers the 16 stripe_heads of the row completely: each is a
    // full-stripe write (no reads), each joins the batch of the one below
    // it, so stripe_head 256 heads a batch of 16. raid5d handles the head:
    // ops_run_io goes member by member from the highest (vdd, vdc, vdb,
    // vda), each through the 16 stripe_heads: 16 consecutive 8-sector
    // writes that back-merge in raid5d's plug into one 128-sector request.
    // The dd write is O_DIRECT (REQ_SYNC): R5_SyncIO makes data and parity
    // writes "WS".
    for kernel in ["6.1", "6.12"] {
        let (e, ev) = common::run_events(&scenario(kernel, "bs = \"192k\"\ncount = 1\nseek = 2\n"), &[]);
        assert_eq!(e.core.check.failure_report(), None);
        for m in ["vda", "vdb", "vdc", "vdd"] {
            assert_eq!(issued(&e, &ev, m), [req("WS", 2304, 128)], "{kernel} {m}");
            let q = on(&e, &ev, m, Action::Queue);
            assert_eq!(q.len(), 16, "{kernel} {m}: one 4 KiB bio per stripe_head");
            assert!(q.iter().all(|x| x.3 == "md0_raid5"), "{kernel} {m}: raid5d submits them");
            assert_eq!(q.iter().map(|x| x.1).collect::<Vec<_>>(), (0..16).map(|i| 2304 + 8 * i).collect::<Vec<_>>());
        }
        // Member by member: all of vdd's bios are queued before vdc's.
        let order: Vec<String> = ev
            .iter()
            .filter(|x| x.action == Action::Queue && x.bytes == 4096)
            .map(|x| e.core.topo.dev(x.dev).name.clone())
            .collect();
        let firsts: Vec<usize> = ["vdd", "vdc", "vdb", "vda"].iter().map(|m| order.iter().position(|x| x == m).unwrap()).collect();
        assert_eq!(firsts, [0, 16, 32, 48], "{kernel}");
    }
}

#[test]
fn a_partial_write_is_a_reconstruct_write_of_its_stripe_head() {
    // bs 4k seek 96: md sector 768, the first unit of row 2's first data
    // chunk, on vdc (member sector 256 + 2048). One stripe_head: rmw would
    // read the old data and parity (2), rcw the two other data units (vdd,
    // vda: 2); a tie goes to rcw unless rmw_level is 2 (PARITY_PREFER_RMW).
    // raid5d reads vdd and vda (highest member first), then writes vdc's
    // data and vdb's parity, "WS" — alone in their stripe_head, no batch.
    let (e, ev) = common::run_events(&scenario("6.12", "bs = \"4k\"\ncount = 1\nseek = 96\n"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let all: Vec<(String, String, u64, String)> = ev
        .iter()
        .filter(|x| x.action == Action::Issue)
        .map(|x| (e.core.topo.dev(x.dev).name.clone(), rwbs(x.op, x.flags, x.bytes), x.sector, e.core.tasks[x.task as usize].comm.clone()))
        .collect();
    let want = [("vdd", "R", 2304), ("vda", "R", 2304), ("vdc", "WS", 2304), ("vdb", "WS", 2304)];
    assert_eq!(all.iter().map(|x| (x.0.as_str(), x.1.as_str(), x.2)).collect::<Vec<_>>(), want);
}

/// Three virtio members (scheduler none), raid5 right-asymmetric, 128 KiB
/// chunks; one synchronous 32 KiB `bios` write at md sector 243912 — the
/// shape of the randomized run's random-1-097 (validate/found), whose
/// guests issued what this test expects.
fn partial_write(kernel: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n");
    for d in ["vda", "vdb", "vdc"] {
        s += &format!("[disks.{d}]\nkind = \"virtio\"\nsize = \"256MiB\"\n[disks.{d}.queue]\nscheduler = \"none\"\n");
    }
    s + "[md.md0]\nlevel = 5\nlayout = \"right-asymmetric\"\nchunk = \"128KiB\"\nmembers = [\"vda\", \"vdb\", \"vdc\"]\n\
         [workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"write\"\nsector = 243912\nsize = 32768\nflags = [\"sync\"]\n"
}

#[test]
fn partial_stripe_writes_follow_their_pre_reads_in_raid5d_passes() {
    // Row 476 (2 data chunks of 256 sectors: 476·512 = 243712), 200
    // sectors in: the write covers chunk 0 [200, 256) and chunk 1 [0, 8).
    // right-asymmetric: parity on 476 mod 3 = 2 (vdc), chunk 0 on vda,
    // chunk 1 on vdb; member sector 476·256 = 121856, + 2048 data offset
    // = 123904. Stripe_heads: 123904 (vdb written: rcw reads vda, 1 < rmw
    // 2) and 124104..124152, seven (vda written: rcw reads vdb). The walk
    // starts at the lowest chunk offset (chunk 1's unit 0), so the order is
    // 123904, then 124104..124152.
    //
    // raid5d's first run takes the eight (MAX_STRIPE_BATCH) and issues the
    // pre-reads: vda R 123904+8 and vdb R 124104+8 ×7, which merge in its
    // plug into R 124104+56. Its next run, with the reads back: one batch
    // of eight computes parity (back to the tail), the next writes, in the
    // order the stripe_heads became ready, each parity (vdc) first.
    //
    // 6.12 (tail-add plug): the flush dispatches the head's queue (vda,
    // read first) first: 123904 is ready first. Writes: vdc 123904, vdb
    // 123904, vdc 124104, vda 124104, vdc 124112, vda 124112, ... A bio
    // merges with the plug's tail request, else only with the first
    // request of its queue from the head: vdc 124112 meets vdc 123904+8
    // (no merge) and starts a request that the later vdc writes join;
    // vda's join 124104. vdc: 123904+8, 124104+8, 124112+48.
    let (e, ev) = common::run_events(&partial_write("6.12"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let d = |ev: &[blkstack::trace::Event], m: &str| issued(&e, ev, m);
    let r = req;
    assert_eq!(d(&ev, "vda"), [r("R", 123904, 8), r("WS", 124104, 56)]);
    assert_eq!(d(&ev, "vdb"), [r("R", 124104, 56), r("WS", 123904, 8)]);
    assert_eq!(d(&ev, "vdc"), [r("WS", 123904, 8), r("WS", 124104, 8), r("WS", 124112, 48)]);
    // 6.1 (head-add plug): the flush takes the newest request's queue
    // first, vdb's read: the seven are ready before 123904. Writes vdc
    // 124104, vda 124104, vdc 124112 ... (each joining the first request of
    // its queue from the head, the newest), then vdc 123904 (not
    // contiguous with vdc 124104+56: a request of its own), vdb 123904.
    let (e, ev) = common::run_events(&partial_write("6.1"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let d = |ev: &[blkstack::trace::Event], m: &str| issued(&e, ev, m);
    assert_eq!(d(&ev, "vda"), [r("R", 123904, 8), r("WS", 124104, 56)]);
    assert_eq!(d(&ev, "vdb"), [r("R", 124104, 56), r("WS", 123904, 8)]);
    assert_eq!(d(&ev, "vdc"), [r("WS", 124104, 56), r("WS", 123904, 8)]);
}

/// Four virtio members (scheduler none, vdd's `max_sectors_kb` 64, so md's
/// `max_sectors` is 128), raid5 left-symmetric, 64 KiB chunks; one
/// synchronous 256 KiB `bios` write at md sector 640 — the shape of the
/// randomized run's random-1-081 (validate/found), which 6.12 issued so.
fn split_write(kernel: &str) -> String {
    let mut s = format!("kernel = \"{kernel}\"\n");
    for d in ["vda", "vdb", "vdc", "vdd"] {
        s += &format!("[disks.{d}]\nkind = \"virtio\"\nsize = \"256MiB\"\n[disks.{d}.queue]\nscheduler = \"none\"\n");
    }
    s.replace("[disks.vdd.queue]\n", "[disks.vdd.queue]\nmax_sectors_kb = 64\n")
        + "[md.md0]\nlevel = 5\nchunk = \"64KiB\"\nmembers = [\"vda\", \"vdb\", \"vdc\", \"vdd\"]\n\
         [workload]\ntype = \"bios\"\ndevice = \"md0\"\n[[workload.bio]]\nop = \"write\"\nsector = 640\nsize = 262144\nflags = [\"sync\"]\n"
}

#[test]
fn split_write_pieces_share_stripe_heads_and_raid5d_takes_the_first_alone() {
    // md splits the write at 128 sectors: [640, 768) is row 1's D2, then
    // [768, 896), [896, 1024), [1024, 1152) are all of row 2.
    // Row 1 (member sectors 128..256, + 2048): parity on 3 − 1 = 2 (vdc),
    // D0 vdd, D1 vda, D2 vdb. The first piece writes D2: rmw reads D2 and
    // P (2), rcw D0 and D1 (2): a tie, rcw. On 6.12 the piece's own plug
    // ends before the next piece is submitted: raid5_unplug releases its
    // 16 stripe_heads and raid5d, woken, runs first: vdd R 2176+128 and
    // vda R 2176+128 are queued before md splits the second piece.
    // Row 2 (member sectors 2304..2432): parity on 3 − 2 = 1 (vdb), D0
    // vdc, D1 vdd, D2 vda. Its three pieces reach the same 16 stripe_heads
    // before raid5d runs again (it runs when the submitter sleeps): the
    // second piece sets them up (rcw), the third adds D1, the fourth D2,
    // which makes each a full-stripe write joining the batch below it —
    // one batch, no reads, one WS 2304+128 per member. Row 1's writes
    // (vdc parity, vdb D2) follow once its reads are back.
    let (e, ev) = common::run_events(&split_write("6.12"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let d = |m: &str| issued(&e, &ev, m);
    let r = req;
    assert_eq!(d("vda"), [r("R", 2176, 128), r("WS", 2304, 128)]);
    assert_eq!(d("vdb"), [r("WS", 2304, 128), r("WS", 2176, 128)]);
    assert_eq!(d("vdc"), [r("WS", 2304, 128), r("WS", 2176, 128)]);
    assert_eq!(d("vdd"), [r("R", 2176, 128), r("WS", 2304, 128)]);
    // The first piece's reads are queued between md's first and second split.
    let md0 = e.core.topo.by_name("md0").unwrap();
    let pos = |f: &dyn Fn(&blkstack::trace::Event) -> bool| ev.iter().position(|x| f(x)).unwrap();
    let splits: Vec<usize> = ev.iter().enumerate().filter(|(_, x)| x.dev == md0 && x.action == Action::Split).map(|(i, _)| i).collect();
    let first_read = pos(&|x| x.action == Action::Queue && x.sector == 2176 && rwbs(x.op, x.flags, x.bytes) == "R");
    assert!(splits[0] < first_read && first_read < splits[1], "splits {splits:?}, first read {first_read}");
}

#[test]
fn without_a_plug_raid5d_first_takes_the_stripe_heads_released_so_far() {
    // 7.2's __submit_bio has no plug (switch submit_bio_plug) and a direct
    // write none of its own, so release_stripe_plug finds no plug and
    // releases each stripe_head as raid5_make_request sets it up. A
    // full-stripe stripe_head is held as ctx->batch_last until the next one
    // that can batch: stripe_head 2304 (row 2's first, a batch head) reaches
    // the list when 2312 has joined its batch. raid5d, woken for the first
    // time, runs then: it handles the batch {2304, 2312} (compute, then
    // write, member by member: vdd, vdc, vdb, vda) and its plug ends:
    // WS 2304+16 on each member. 2320 cannot join 2312 (its batch is no
    // longer ready), so it heads a batch of the other fourteen, which
    // raid5d writes when dd sleeps: WS 2320+112. The second write (row 3,
    // member 2432) finds raid5d just back from a run: one batch of 16, as
    // with a plug. (The 7.2 guest runs of earlier rounds issued exactly
    // this; three later ones kept raid5d's plug open until dd had released
    // the rest, one WS 2304+128: docs/validation.md, H.) 6.12 issues one
    // request per row (its __submit_bio plug releases all 16 at once).
    let dd = "bs = \"192k\"\ncount = 2\nseek = 2\n";
    let (e, ev) = common::run_events(&scenario("7.2", dd), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    for m in ["vda", "vdb", "vdc", "vdd"] {
        assert_eq!(issued(&e, &ev, m), [req("WS", 2304, 16), req("WS", 2320, 112), req("WS", 2432, 128)], "7.2 {m}");
    }
    let (e, ev) = common::run_events(&scenario("6.12", dd), &[]);
    for m in ["vda", "vdb", "vdc", "vdd"] {
        assert_eq!(issued(&e, &ev, m), [req("WS", 2304, 128), req("WS", 2432, 128)], "6.12 {m}");
    }
}

#[test]
fn without_a_plug_raid5d_reads_the_first_stripe_head_alone() {
    // partial_write on 7.2 (the first write of random-1-097's guests had
    // this shape): stripe_head 123904 (rcw: read vda) is set up first and,
    // not a full-stripe write, released at once; raid5d, woken for the
    // first time, handles it alone: vda R 123904+8 in a plug of its own.
    // Then 124104..124152 (rcw: read vdb) are released. raid5d's next run
    // comes once its read is back (under TCG the submitter takes longer
    // than the emulated disk), so 123904 is back on the list behind the
    // seven: one batch of eight issues their reads (vdb R 124104+56) and
    // computes 123904's parity; the next call writes it, parity first (vdc
    // WS 123904+8, vdb WS 123904+8), in the same plug. With the seven's
    // reads back: computed, then written, vdc and vda alternately, each
    // request joining the first of its queue: vdc and vda WS 124104+56.
    let (e, ev) = common::run_events(&partial_write("7.2"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let d = |m: &str| issued(&e, &ev, m);
    let r = req;
    assert_eq!(d("vda"), [r("R", 123904, 8), r("WS", 124104, 56)]);
    assert_eq!(d("vdb"), [r("R", 124104, 56), r("WS", 123904, 8)]);
    assert_eq!(d("vdc"), [r("WS", 123904, 8), r("WS", 124104, 56)]);
    // The first read is issued before any other I/O; 123904's writes
    // follow the seven's reads in one plug.
    let issues: Vec<(String, String, u64)> = ev
        .iter()
        .filter(|x| x.action == Action::Issue)
        .map(|x| (e.core.topo.dev(x.dev).name.clone(), rwbs(x.op, x.flags, x.bytes), x.sector))
        .collect();
    let at = |m: &str, s: &str, a: u64| issues.iter().position(|x| (x.0.as_str(), x.1.as_str(), x.2) == (m, s, a)).unwrap();
    assert_eq!(at("vda", "R", 123904), 0);
    assert!(at("vdb", "R", 124104) < at("vdc", "WS", 123904));
}

/// split_write with 128 KiB chunks: one synchronous 256 KiB write at md
/// sector 640, which md splits at 128 sectors into half-chunk pieces —
/// the shape of the randomized run's random-1-091 (validate/found).
fn half_chunk_pieces(kernel: &str) -> String {
    split_write(kernel).replace("chunk = \"64KiB\"", "chunk = \"128KiB\"")
}

#[test]
fn a_later_piece_moves_a_released_stripe_head_to_the_tail() {
    // 256-sector chunks, three data chunks a row (768 md sectors). The
    // pieces: P0 [640, 768) row 0's D2 (vdc) second half, P1 [768, 896)
    // and P2 [896, 1024) row 1's D0 (vdd), P3 [1024, 1152) row 1's D1
    // (vda) first half. Row 0: parity vdd, D0 vda, D1 vdb; row 1: parity
    // vdc, D0 vdd, D1 vda, D2 vdb; member sector = row offset + 2048.
    //
    // 6.12, each piece in a plug of its own: P0's plug end releases its 16
    // stripe_heads (2176..2296; rcw on a 2-2 tie: read D0 and D1) and
    // raid5d runs first: vda and vdb R 2176+128. P1 sets up A (2304..2424,
    // rcw: read vda and vdb), released at its plug end; P2 sets up B
    // (2432..2552, the same reads). P3 writes D1 of A's stripe_heads:
    // raid5_get_active_stripe takes each off raid5d's list (nobody holds
    // it) and P3's plug end puts it back at the tail, behind B; with D0 and
    // D1 written, rcw reads D2 alone (vdb; rmw would read three).
    //
    // raid5d's next run (when the submitter sleeps) handles B, then A, in
    // one plug: vda R 2432+128; on vdb B's reads make R 2432+128, then A's
    // first read meets that request at the plug list's tail (6.12's merge
    // candidate), which it does not touch: a new request, which A's other
    // reads back-merge into: R 2304+128 after R 2432+128. Had A kept its
    // place, B's vdb reads would have back-merged into A's: R 2304+256.
    let (e, ev) = common::run_events(&half_chunk_pieces("6.12"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let reads = |m: &str| issued(&e, &ev, m).into_iter().filter(|x| x.0 == "R").collect::<Vec<_>>();
    assert_eq!(reads("vda"), [req("R", 2176, 128), req("R", 2432, 128)]);
    assert_eq!(reads("vdb"), [req("R", 2176, 128), req("R", 2432, 128), req("R", 2304, 128)]);
    // 7.2 has no plug: raid5_release_stripe puts each stripe_head on
    // released_stripes with its count still one, and only a raid5d run
    // drains that list onto the handle list. raid5d's first run (at P0's
    // first release) drains nothing of A; asleep after it, raid5d leaves A
    // there, so P3 takes A with its count above zero and A keeps its
    // place: vdb reads A (2304) before B (2432).
    let (e, ev) = common::run_events(&half_chunk_pieces("7.2"), &[]);
    assert_eq!(e.core.check.failure_report(), None);
    let vdb: Vec<_> = issued(&e, &ev, "vdb").into_iter().filter(|x| x.0 == "R").collect();
    let covering = |s: u64| vdb.iter().position(|r| r.1 <= s && s < r.1 + r.2 as u64).unwrap();
    assert!(covering(2304) <= covering(2432), "{vdb:?}");
}
