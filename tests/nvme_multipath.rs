//! nvme multipath end to end: the head device remaps each bio to the path
//! its iopolicy picks; scenario errors.

mod common;

use blkstack::scenario;
use common::{issued, run_events};

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
