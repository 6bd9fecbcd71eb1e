//! nvme multipath end to end: the head device remaps each bio to the path
//! its iopolicy picks; scenario errors.

mod common;

use blkstack::scenario;
use blkstack::trace::Action;
use common::{issued, on, run_events};

fn mp(kernel: &str, multipath: &str) -> String {
    format!(
        "kernel = \"{kernel}\"\n[disks.nvme0n1]\nkind = \"nvme\"\nsize = \"256MiB\"\n[disks.nvme0n1.multipath]\n{multipath}\n\
         [workload]\ntype = \"dd\"\nif = \"/dev/nvme0n1\"\nof = \"/dev/null\"\nbs = \"128k\"\ncount = 4\niflag = \"direct\"\n"
    )
}

#[test]
fn round_robin_alternates_and_numa_stays() {
    // Four 128 KiB reads (256 sectors) at 0, 256, 512, 768; the head's list holds c1 then c0.
    // 6.12: setting round-robin cleared the current path, so the first in the list (c1) first,
    // then c0, c1, c0.
    let rr = "paths = 2\niopolicy = \"round-robin\"";
    let (e, ev) = run_events(&mp("6.12", rr), &[]);
    assert_eq!(issued(&e, &ev, "nvme0c1n1"), vec![(0, 256), (512, 256)]);
    assert_eq!(issued(&e, &ev, "nvme0c0n1"), vec![(256, 256), (768, 256)]);
    // 6.1: the partition scan's read left c1 current, so c0 first.
    let (e, ev) = run_events(&mp("6.1", rr), &[]);
    assert_eq!(issued(&e, &ev, "nvme0c0n1"), vec![(0, 256), (512, 256)]);
    // numa: every read on the first in the list (c1); with c1 inaccessible, every read on c0.
    let (e, ev) = run_events(&mp("6.12", "paths = 2"), &[]);
    assert_eq!(issued(&e, &ev, "nvme0c1n1").len(), 4);
    let (e, ev) = run_events(&mp("6.12", "ana = [\"optimized\", \"inaccessible\"]"), &[]);
    assert_eq!((issued(&e, &ev, "nvme0c0n1").len(), issued(&e, &ev, "nvme0c1n1").len()), (4, 0));
    // Device numbers as a 6.12 guest adds them: the paths, then the head.
    let t = &e.core.topo;
    let num = |n: &str| {
        let d = t.dev(t.by_name(n).unwrap());
        (d.major, d.minor)
    };
    assert_eq!((num("nvme0c0n1"), num("nvme0n1"), num("nvme0c1n1")), ((259, 0), (259, 2), (259, 1)));
}

#[test]
fn multipath_errors_name_the_key() {
    let e = scenario::load("m.toml", &mp("6.1", "iopolicy = \"queue-depth\""), None, &[]).unwrap_err().to_string();
    assert!(e.contains("multipath.iopolicy") && e.contains("6.11"), "{e}");
    assert!(scenario::load("m.toml", &mp("6.12", "iopolicy = \"queue-depth\""), None, &[]).is_ok());
    let e = scenario::load("m.toml", &mp("6.12", "paths = 2\nana = [\"optimized\"]"), None, &[]).unwrap_err().to_string();
    assert!(e.contains("multipath.ana") && e.contains("1 state(s) for 2 path(s)"), "{e}");
    let e = scenario::load("m.toml", &mp("6.12", "ana = [\"fast\", \"optimized\"]"), None, &[]).unwrap_err().to_string();
    assert!(e.contains("'fast' is not optimized"), "{e}");
    let virtio = "[disks.vda]\nkind = \"virtio\"\nsize = \"1GiB\"\n[disks.vda.multipath]\npaths = 2\n";
    let e = scenario::load("m.toml", virtio, None, &[]).unwrap_err().to_string();
    assert!(e.contains("only an nvme disk has multipath"), "{e}");
}

#[test]
fn a_failed_path_fails_its_reads_over() {
    // numa on 6.12: every read goes to the list's first path, c1. Fail c1
    // while the first read (sectors 0–255) is in its device: it ends with a
    // host path error, nvme_failover_req puts its bio back on the head
    // (the request completes with status 0), the requeue work resubmits it,
    // and with c1 disabled and no longer current __nvme_find_path finds c0:
    // the read is issued again there, and the three after it too. dd sees
    // four reads that succeeded.
    let (e, ev) = run_events(&mp("6.12", "paths = 2"), &[]);
    let c1 = e.core.topo.by_name("nvme0c1n1").unwrap();
    let d = ev.iter().find(|x| x.dev == c1 && x.action == Action::Issue).unwrap().time;
    let c = ev.iter().find(|x| x.dev == c1 && x.action == Action::Complete).unwrap().time;
    let at_us = (d + c) / 2 / 1000;
    assert!(at_us * 1000 > d && at_us * 1000 < c, "the first read is in flight at {at_us} µs");
    let (e, ev) = run_events(&mp("6.12", &format!("paths = 2\nfail = [{{ path = 1, at_us = {at_us} }}]")), &[]);
    assert_eq!(issued(&e, &ev, "nvme0c1n1"), vec![(0, 256)]);
    assert_eq!(issued(&e, &ev, "nvme0c0n1"), vec![(0, 256), (256, 256), (512, 256), (768, 256)]);
    // The failed request's 'C' carries status 0, and nothing ends with an error.
    let c1 = e.core.topo.by_name("nvme0c1n1").unwrap();
    let failed: Vec<i32> = ev.iter().filter(|x| x.dev == c1 && x.action == Action::Complete).map(|x| x.error).collect();
    assert_eq!(failed, vec![0]);
    assert!(ev.iter().all(|x| x.error == 0));
    assert_eq!(e.core.errors_total, 0);
    // The resubmission is a second remap from the head to c0, with no second 'Q'.
    assert_eq!(on(&e, &ev, "nvme0c0n1", Action::Remap).len(), 4);
    assert_eq!(on(&e, &ev, "nvme0c1n1", Action::Remap).len(), 1);
    assert_eq!(on(&e, &ev, "nvme0n1", Action::Queue).len(), 4);
}

#[test]
fn with_every_path_failed_reads_fail() {
    // Both controllers down before the second read: the failed-over read
    // finds no usable path (nothing in a run brings one back) and ends with
    // -EIO, as do the reads after it.
    let text = mp("6.12", "paths = 2\nfail = [{ path = 0, at_us = 1 }, { path = 1, at_us = 1 }]");
    let (e, ev) = run_events(&text, &[]);
    // The first read went to c1 at 0 and was in its device at 1 µs.
    assert_eq!(issued(&e, &ev, "nvme0c1n1"), vec![(0, 256)]);
    assert!(issued(&e, &ev, "nvme0c0n1").is_empty());
    assert!(e.core.errors_total > 0);
}

#[test]
fn fail_errors_name_the_key() {
    let e = scenario::load("m.toml", &mp("6.12", "fail = [{ path = 2, at_us = 5 }]"), None, &[]).unwrap_err().to_string();
    assert!(e.contains("multipath.fail[0].path") && e.contains("path 2 of 2"), "{e}");
    let e = scenario::load("m.toml", &mp("6.12", "fail = [{ path = 1 }]"), None, &[]).unwrap_err().to_string();
    assert!(e.contains("multipath.fail[0].at_us") && e.contains("missing"), "{e}");
    let e = scenario::load("m.toml", &mp("6.12", "fail = [1]"), None, &[]).unwrap_err().to_string();
    assert!(e.contains("multipath.fail") && e.contains("expected a table"), "{e}");
}
