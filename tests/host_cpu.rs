//! The host CPU model (`[host] cpu`, src/host_cpu.rs): the time each
//! kernel operation costs on the submitting and completing CPUs, worked out
//! by hand from the `server` class's costs.

use blkstack::engine::Engine;
use blkstack::scenario;
use blkstack::trace::{Action, Event};

/// A null_blk disk whose requests complete the instant they are issued
/// (irqmode 1), one hardware queue, no scheduler.
fn scenario(host: &str, workload: &str) -> String {
    format!(
        "seed = 1\n{host}\n[disks.nullb0]\nkind = \"null_blk\"\nsize = \"1GiB\"\n\
         [disks.nullb0.null_blk]\nirqmode = 1\n[disks.nullb0.queue]\nscheduler = \"none\"\n{workload}"
    )
}

const PSYNC_4K: &str = "[workload]\ntype = \"fio\"\nargs = [\"--name=r\", \"--rw=read\", \"--bs=4k\", \"--ioengine=psync\", \
     \"--direct=1\", \"--size=40k\", \"--filename=/dev/nullb0\"]\n";

fn run(text: &str) -> (Engine, Vec<Event>) {
    let sc = scenario::load("h.toml", text, None, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = sc.build();
    engine.core.tracer.keep_log();
    engine.run();
    let events = engine.core.tracer.log.take().unwrap().events;
    (engine, events)
}

fn times(events: &[Event], action: Action) -> Vec<u64> {
    events.iter().filter(|e| e.action == action).map(|e| e.time).collect()
}

#[test]
fn without_a_host_section_submission_takes_no_time() {
    let (_, ev) = run(&scenario("", PSYNC_4K));
    // Every I/O is queued, issued and completed at time 0.
    assert!(ev.iter().all(|e| e.time == 0));
    let (_, none) = run(&scenario("[host]\ncpu = \"none\"", PSYNC_4K));
    assert_eq!(ev.iter().map(|e| (e.time, e.action, e.sector)).collect::<Vec<_>>(), none.iter().map(|e| (e.time, e.action, e.sector)).collect::<Vec<_>>());
}

/// The ten 4 KiB preads of [`PSYNC_4K`] under CPU class `class`: the
/// first read's Q, G, D and C at `first`, each later read `step` after the
/// one before.
fn assert_psync_times(class: &str, first: (u64, u64, u64, u64), step: u64) {
    let (_, ev) = run(&scenario(&format!("[host]\ncpu = \"{class}\""), PSYNC_4K));
    let (q, g, d, c) = (times(&ev, Action::Queue), times(&ev, Action::GetRq), times(&ev, Action::Issue), times(&ev, Action::Complete));
    assert_eq!(q.len(), 10);
    for i in 0..10 {
        let at = i as u64 * step;
        assert_eq!((q[i], g[i], d[i], c[i]), (first.0 + at, first.1 + at, first.2 + at, first.3 + at), "read {i}");
    }
}

#[test]
fn psync_reads_pay_submission_and_completion_in_turn() {
    // First pread: one system call (100), the unit (60), the bio and its
    // page (40 + 15), submit_bio (30): Q at 245. 6.12 plugs the bio's
    // __submit_bio; the plug is empty and so is the software queue, so no
    // merge is attempted; the request (40): G at 285, then the plug is
    // flushed (30) and the request handed to null_blk (80): D at 395.
    // null_blk completes at once; the CPU takes the interrupt (1000), ends
    // the request (60) and its bio (20): C at 1475. The next pread also
    // reaps the event (50): every later step is 1475 + 50 = 1525 ns after
    // the previous one.
    assert_psync_times("server", (245, 285, 395, 1475), 1525);
}

#[test]
fn psync_reads_under_tcg_take_the_guests_gaps() {
    // The `tcg` class (a qemu TCG vCPU): the first pread's system call
    // (26 µs), unit (12), bio and page (10 + 1), submit_bio (7): Q at 56 µs;
    // no merge attempt (empty plug and queue); the request (7): G at 63;
    // the plug flushed (5) and queue_rq (8): D at 76. null_blk completes at
    // once: the interrupt (5), the request (4) and the bio (2) ended: C at
    // 87. The next pread reaps the event (10): each later read comes
    // 87 + 10 = 97 µs after the one before.
    assert_psync_times("tcg", (56_000, 63_000, 76_000, 87_000), 97_000);
}

#[test]
fn request_stream_is_the_same_with_and_without_the_model() {
    let w = "[workload]\ntype = \"fio\"\nargs = [\"--name=r\", \"--rw=randread\", \"--bs=64k\", \"--ioengine=libaio\", \
             \"--iodepth=8\", \"--direct=1\", \"--number_ios=200\", \"--filename=/dev/nullb0\"]\n";
    let (_, off) = run(&scenario("", w));
    let (_, on) = run(&scenario("[host]\ncpu = \"vm\"", w));
    let issued = |ev: &[Event]| ev.iter().filter(|e| e.action == Action::Issue).map(|e| (e.sector, e.bytes)).collect::<Vec<_>>();
    assert_eq!(issued(&off), issued(&on));
    assert!(times(&on, Action::Complete).last() > times(&off, Action::Complete).last());
}

#[test]
fn two_jobs_on_two_cpus_run_in_parallel_and_share_one_cpu() {
    let w = "[workload]\ntype = \"fio\"\nargs = [\"--name=r\", \"--rw=read\", \"--bs=4k\", \"--ioengine=psync\", \
             \"--direct=1\", \"--size=40k\", \"--numjobs=2\", \"--filename=/dev/nullb0\"]\n";
    // Each job's ten reads take 1475 + 9 · 1525 = 15,200 ns on a CPU of
    // its own; on one CPU the two interleave and the run takes longer.
    let (e2, _) = run(&scenario("cpus = 2\n[host]\ncpu = \"server\"", w));
    assert_eq!(e2.core.now, 15_200);
    let (e1, _) = run(&scenario("cpus = 1\n[host]\ncpu = \"server\"", w));
    assert!(e1.core.now > 25_000, "{}", e1.core.now);
}

#[test]
fn host_errors_name_the_key() {
    let bad = scenario::load("h.toml", &scenario("[host]\ncpu = \"laptop\"", PSYNC_4K), None, &[]).unwrap_err().to_string();
    assert!(bad.contains("host.cpu") && bad.contains("laptop") && bad.contains("server, vm, tcg"), "{bad}");
    let no_class = scenario::load("h.toml", &scenario("[host]\nirq_ns = 5", PSYNC_4K), None, &[]).unwrap_err().to_string();
    assert!(no_class.contains("host.irq_ns"), "{no_class}");
    let unknown = scenario::load("h.toml", &scenario("[host]\ncpu = \"vm\"\nirqs_ns = 5", PSYNC_4K), None, &[]).unwrap_err().to_string();
    assert!(unknown.contains("irqs_ns"), "{unknown}");
}
