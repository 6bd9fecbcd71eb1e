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
    let sc = scenario::load("s.toml", text, None, &[]).unwrap_or_else(|e| panic!("{e}"));
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
