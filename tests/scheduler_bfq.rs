//! bfq as a queue's scheduler: its iosched keys in the scenario, and two
//! competing fio jobs issued in the order bfq's rules give.

use blkstack::limits::Elevator;
use blkstack::scenario;
use blkstack::trace::{Action, Event};

fn disk(queue: &str, job: &str) -> String {
    format!(
        "kernel = \"6.12\"\n[disks.vda]\nkind = \"virtio\"\nsize = \"1GiB\"\n[disks.vda.queue]\n{queue}\n\
         [workload]\ntype = \"fio\"\njob = \"\"\"\n{job}\"\"\"\n"
    )
}

const TWO_READERS: &str = "[global]\nfilename=/dev/vda\nbs=4k\nioengine=libaio\niodepth=16\ndirect=1\nsize=1M\n\
                           [seq]\nrw=read\noffset=16M\n[rand]\nrw=randread\noffset=256M\n";

fn err(text: &str) -> String {
    match scenario::load("s.toml", text, None, &[]) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e.to_string(),
    }
}

/// The jobs' issued requests in order: 'S' below sector 100000 (the
/// sequential reader at 16 MiB), 'R' above (the random one at 256 MiB).
fn issue_order(text: &str) -> String {
    issue_order_with(text, &[])
}

/// `issue_order` with `--set` values.
fn issue_order_with(text: &str, sets: &[String]) -> String {
    let sc = scenario::load("s.toml", text, None, sets).unwrap_or_else(|e| panic!("{e}"));
    let mut engine = sc.build();
    engine.core.tracer.keep_log();
    engine.run();
    let events: Vec<Event> = engine.core.tracer.log.take().unwrap().events;
    events.iter().filter(|e| e.action == Action::Issue).map(|e| if e.sector < 100_000 { 'S' } else { 'R' }).collect()
}

const BFQ_IOSCHED: &str = "scheduler = \"bfq\"\n[disks.vda.queue.iosched]";

#[test]
fn bfq_keys_are_iosched_keys() {
    let sc = scenario::load("s.toml", &disk(&format!("{BFQ_IOSCHED}\nslice_idle = 0\nlow_latency = 0"), TWO_READERS), None, &[]).unwrap();
    let q = &sc.disks[0].queue;
    assert_eq!(q.attrs.scheduler, Elevator::Bfq);
    assert_eq!((q.attrs.bfq.slice_idle_ns, q.attrs.bfq.low_latency), (0, false));
    // Untouched keys keep bfq_init_queue's values: 125 ms sync FIFO expiry.
    assert_eq!(q.attrs.bfq.fifo_expire_ns[1], 125_000_000);
}

#[test]
fn bfq_keys_need_bfq() {
    let e = err(&disk("scheduler = \"mq-deadline\"\n[disks.vda.queue.iosched]\nslice_idle = 0", TWO_READERS));
    assert!(e.contains("disks.vda.queue.iosched.slice_idle") && e.contains("a file of bfq's iosched/ directory"), "{e}");
    assert!(e.contains("this queue's scheduler is mq-deadline"), "{e}");
    let e = err(&disk(&format!("{BFQ_IOSCHED}\nslice_idle = 0\nslice_idle_us = 10"), TWO_READERS));
    assert!(e.contains("slice_idle_us") && e.contains("not both"), "{e}");
}

#[test]
fn bfq_keys_at_their_old_place_name_the_new_one() {
    // Line 7 of the scenario: the fifth line of [disks.vda.queue] text.
    let e = err(&disk("scheduler = \"bfq\"\nslice_idle = 0", TWO_READERS));
    assert!(e.contains("disks.vda.queue.slice_idle") && e.contains("write it under [disks.vda.queue.iosched]"), "{e}");
    assert!(e.contains("s.toml:7"), "{e}");
}

#[test]
fn idling_sequential_reader_keeps_the_disk() {
    // low_latency off: no weight raising. The sequential reader's queue is
    // served first; it is sequential, I/O bound and has a short think time
    // on a rotational disk, so bfq_better_to_idle holds and the random
    // reader's arrival does not preempt it. Its budget, 2/3 of 16384 =
    // 10922 sectors, outlasts its 256 reads of 8 sectors (2048), so it
    // issues all of them before the random reader's first.
    let order = issue_order(&disk(&format!("nomerges = 2\nnr_requests = 64\n{BFQ_IOSCHED}\nlow_latency = 0"), TWO_READERS));
    assert_eq!(order.len(), 512);
    assert_eq!(&order[..256], "S".repeat(256), "{order}");
}

#[test]
fn a_random_reader_one_read_at_a_time_preempts_at_each_read() {
    // The random reader (one read in flight) starts 2 s after the
    // sequential one (16 in flight; 20 commands/s, 4 in the driver):
    // separate queues (created 2 s apart, no stable merge). With
    // slice_idle 0 bfq_better_to_idle is false, so the random queue
    // expires as soon as its read is dispatched, and each next random read
    // preempts the sequential queue on arrival. By then blk-mq has already
    // taken one sequential read ahead of the full driver
    // (sched_dispatch_ahead: it waits in hctx->dispatch), and the random
    // read is issued after it: between two random reads, the 3 sequential
    // reads in the driver beside the random one, the one issued when the
    // random one completes and the one waiting in hctx->dispatch, 5 in
    // all. Without the read ahead of the driver, 4.
    let job = "[global]\nfilename=/dev/vda\nbs=4k\nioengine=libaio\ndirect=1\nsize=1M\n\
               [seq]\nrw=read\niodepth=16\noffset=16M\n[rand]\nrw=randread\niodepth=1\nstartdelay=2\noffset=256M\n";
    let text = disk(&format!("queue_depth = 4\nnomerges = 2\nnr_requests = 64\n{BFQ_IOSCHED}\nslice_idle = 0\n[disks.vda.model]\niops = 20"), job);
    let order = issue_order(&text);
    let first = order.find('R').unwrap();
    assert!(order[first..].starts_with(&"RSSSSS".repeat(30)), "{order}");
    let order = issue_order_with(&text, &["behaviour.sched_dispatch_ahead=false".to_string()]);
    let first = order.find('R').unwrap();
    assert!(order[first..].starts_with(&"RSSSS".repeat(30)), "{order}");
}
