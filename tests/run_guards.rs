//! What keeps a run bounded, interruptible and honest about its input:
//! counts that allocate are capped as the real tools cap them, a run whose
//! jobs take no simulated time still ends and can be stopped, the iostat
//! interval is checked, and a scenario with nothing to run is an error.

use std::path::PathBuf;

use blkstack::run::{run_file_full, RunError, RunOptions};
use blkstack::scenario;

/// Write `text` to a scenario file of its own in the temporary directory.
fn scenario_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("blkstack-run-guards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

const NVME: &str = "[disks.nvme0n1]\nkind = \"nvme\"\nsize = \"8GiB\"\n";

fn fio(args: &[&str]) -> String {
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    format!("{NVME}[workload]\ntype = \"fio\"\nargs = [{}]\n", quoted.join(", "))
}

fn load_err(text: &str) -> String {
    match scenario::load("t.toml", text, None, &[]) {
        Ok(_) => panic!("accepted: {text}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn buffered_time_based_job_ends_after_one_pass() {
    // Buffered 4 KiB random writes over a 64 MiB region take no simulated
    // time (the page cache absorbs them), so runtime=1ms never comes. The
    // job stops once it has written a region's worth at one instant:
    // 64 MiB / 4 KiB = 16384 writes, each block once (the random map), and
    // its close writes every dirty page back: 16384 pages of 4 KiB, 64 MiB.
    let text = fio(&["--name=bw", "--rw=randwrite", "--bs=4k", "--size=64M", "--time_based", "--runtime=1ms", "--filename=/dev/nvme0n1"]);
    let path = scenario_file("buffered-time-based", &text);
    let r = run_file_full(path.to_str().unwrap(), &RunOptions::default(), &mut |_| true).unwrap_or_else(|e| panic!("{e}"));
    let s = &r.summary;
    assert_eq!(s["fio"]["jobs"][0]["write"]["total_ios"], 16384, "{}", s["fio"]);
    assert_eq!(s["devices"]["nvme0n1"]["sectors"]["write"], 64 * 2048);
    let warnings = s["warnings"].as_array().unwrap();
    assert!(warnings.iter().any(|w| w.as_str().unwrap().contains("stopped after one pass over the region (16384 writes)")), "{warnings:?}");
}

#[test]
fn a_job_that_takes_no_simulated_time_can_be_interrupted() {
    // 8 GiB of buffered writes at one instant: 2 Mi submissions. The run
    // reports progress after 65536 of them, and stopping it there (Ctrl-C)
    // ends the run.
    let text = fio(&["--name=bw", "--rw=write", "--bs=4k", "--size=8G", "--time_based", "--runtime=1s", "--filename=/dev/nvme0n1"]);
    let path = scenario_file("interrupt", &text);
    let mut ticks = 0;
    let r = run_file_full(path.to_str().unwrap(), &RunOptions::default(), &mut |_| {
        ticks += 1;
        false
    });
    assert!(matches!(r, Err(RunError::Interrupted)), "{:?}", r.err());
    assert_eq!(ticks, 1);
}

#[test]
fn numjobs_is_capped_as_fio_caps_jobs() {
    // fio's thread segments hold 8 jobs each, and the 512th segment
    // (REAL_MAX_JOBS 4096 / 8) is refused: 511 * 8 = 4088 jobs at most.
    let e = load_err(&fio(&["--name=a", "--rw=read", "--size=1M", "--numjobs=100000000"]));
    assert!(e.contains("numjobs") && e.contains("4088"), "{e}");
    // Several sections count together: 2 * 2048 = 4096 > 4088.
    let e = load_err(&fio(&["--name=a", "--rw=read", "--size=1M", "--numjobs=2048", "--name=b", "--rw=read", "--size=1M", "--numjobs=2048"]));
    assert!(e.contains("numjobs: 4096 jobs in all"), "{e}");
    let e = load_err(&fio(&["--name=a", "--rw=read", "--size=1M", "--iodepth=100000000", "--ioengine=libaio", "--direct=1"]));
    assert!(e.contains("iodepth") && e.contains("65536"), "{e}");
}

#[test]
fn fio_flags_take_no_value() {
    // `--stonewall --rw=write`: stonewall is a FIO_OPT_STR_SET flag, so
    // --rw=write is an option of its own, not stonewall's value. On the
    // first job it waits for nothing and starts no group; new_group on the
    // first job starts none either; hipri asks for polled completion,
    // which a queue without poll queues drops (submit_bio_noacct clears
    // REQ_POLLED): ignored with a warning.
    let text = fio(&["--name=a", "--stonewall", "--rw=write", "--size=64k", "--direct=1", "--new_group", "--hipri"]);
    let sc = scenario::load("t.toml", &text, None, &[]).unwrap_or_else(|e| panic!("{e}"));
    let w = sc.workload.warnings.join("\n");
    assert!(w.contains("hipri") && !w.contains("new_group"), "{w}");
    assert_eq!(sc.workload.fio.as_ref().unwrap().jobs[0].groupid, 0);
    // A flag as the last argument is complete.
    scenario::load("t.toml", &fio(&["--name=a", "--rw=write", "--size=64k", "--stonewall"]), None, &[]).unwrap_or_else(|e| panic!("{e}"));
    // After another job it starts once that one has finished, in a
    // reporting group of its own (add_job: groupid++).
    let sc = scenario::load("t.toml", &fio(&["--name=a", "--rw=write", "--size=64k", "--name=b", "--rw=write", "--size=64k", "--stonewall"]), None, &[])
        .unwrap_or_else(|e| panic!("{e}"));
    let groups: Vec<u32> = sc.workload.fio.as_ref().unwrap().jobs.iter().map(|j| j.groupid).collect();
    assert_eq!(groups, [0, 1]);
}

#[test]
fn interval_below_a_jiffy_or_not_finite_is_refused() {
    // HZ 250: a jiffy is 4 ms; io_ticks move in jiffies, so a shorter
    // interval reads 0 or 200 %util.
    let path = scenario_file("interval", &fio(&["--name=a", "--rw=read", "--size=64k", "--direct=1"]));
    for bad in [0.001, 1e-9, f64::NAN, f64::INFINITY, -1.0, 0.0] {
        let opts = RunOptions { interval: Some(bad), ..Default::default() };
        match run_file_full(path.to_str().unwrap(), &opts, &mut |_| true) {
            Err(RunError::Option(m)) => assert!(m.starts_with("--interval"), "{m}"),
            other => panic!("--interval {bad}: {:?}", other.map(|r| r.summary)),
        }
    }
    let opts = RunOptions { interval: Some(0.004), ..Default::default() };
    assert!(run_file_full(path.to_str().unwrap(), &opts, &mut |_| true).is_ok());
}

#[test]
fn a_trailing_sample_does_not_stretch_the_run() {
    // 16 direct reads of 4 KiB, one at a time, end well before 500 ms; an
    // --interval 0.5 sample due after the run is not taken, and the run's
    // simulated time is its own (below 500 ms).
    let path = scenario_file("stretch", &fio(&["--name=a", "--rw=read", "--bs=4k", "--size=64k", "--direct=1"]));
    let opts = RunOptions { interval: Some(0.5), ..Default::default() };
    let r = run_file_full(path.to_str().unwrap(), &opts, &mut |_| true).unwrap();
    let t = r.summary["sim_time_ns"].as_u64().unwrap();
    assert!(t < 500_000_000, "{t}");
}

#[test]
fn a_scenario_without_a_workload_is_an_error() {
    for (name, text, needle) in [("empty", "", "the scenario is empty"), ("no-workload", NVME, "no [workload] table")] {
        let path = scenario_file(name, text);
        match run_file_full(path.to_str().unwrap(), &RunOptions::default(), &mut |_| true) {
            Err(RunError::Scenario(e)) => assert!(e.to_string().contains(needle), "{e}"),
            other => panic!("{name}: {:?}", other.map(|r| r.summary)),
        }
    }
}
