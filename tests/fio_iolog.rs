//! fio's own offsets: each job of tests/data/fio-iolog/cases.txt, run by the
//! real fio 3.33 (Debian 12's) and 3.39 (built from its source) with
//! `--write_iolog` (the recorded iologs beside it; gen.sh made them,
//! README.md says how), is run through blkstack's fio with the same options
//! and `fio_version`; every I/O the job queues must be the iolog's line:
//! same direction, offset and length, in the same order.

use blkstack::bio::Op;
use blkstack::engine::Engine;
use blkstack::scenario;
use blkstack::trace::Action;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio-iolog");

/// Two 64 MiB disks: `sda` (fio's regular file of 64 MiB) and `vdb` (the
/// 64 MiB loop device standing for a block device).
const DISKS: &str = "seed = 1\n[disks.sda]\nkind = \"nvme\"\nsize = \"64MiB\"\n[disks.vdb]\nkind = \"virtio\"\nsize = \"64MiB\"\n";

/// The first job's pid; clone (or job) i runs as 1000 + i.
const PID: u32 = 1000;

/// One iolog line: direction, offset, length.
type Io = (String, u64, u64);

/// `NAME | options` lines of cases.txt.
fn cases() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(format!("{DIR}/cases.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, opts) = l.split_once('|').unwrap();
            (name.trim().to_string(), opts.split_whitespace().map(str::to_string).collect())
        })
        .collect()
}

/// The I/O lines of a fio 3.33 iolog.
fn iolog(name: &str) -> Vec<Io> {
    iolog_in(DIR, name).unwrap()
}

/// The I/O lines of an iolog in `dir` (version 3: `TIME FILE ACTION OFFSET
/// LENGTH`); `None` when fio could not run the case.
fn iolog_in(dir: &str, name: &str) -> Option<Vec<Io>> {
    let text = std::fs::read_to_string(format!("{dir}/{name}.iolog")).ok()?;
    assert_eq!(text.lines().next(), Some("fio version 3 iolog"));
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5).then(|| (f[2].to_string(), f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect::<Vec<Io>>()
        .into()
}

/// The options as blkstack runs them: the iolog placeholder dropped, and
/// O_DIRECT psync unless the case names an engine (fio ran `ioengine=null`,
/// which draws the same offsets). fio paces the `time_based` cases with
/// `rate_iops`, which does not change the offsets; blkstack, which does not
/// model rate limits, stops after as many I/Os as fio logged (`ios`).
fn blkstack_args(opts: &[String], extra: &[&str]) -> Vec<String> {
    blkstack_args_for(opts, extra, 0)
}

fn blkstack_args_for(opts: &[String], extra: &[&str], ios: usize) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    if !opts.iter().any(|a| a.starts_with("--ioengine=")) {
        // Global: before the first --name.
        args.extend(["--ioengine=psync".to_string(), "--direct=1".to_string()]);
    }
    let rate = |o: &String| o.starts_with("--rate_iops=");
    args.extend(opts.iter().filter(|o| *o != "@IOLOG@" && !rate(o)).cloned());
    if opts.iter().any(rate) {
        args.push(format!("--number_ios={ios}"));
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// The I/Os the last job (the one fio logged) queued, in order.
fn run(args: &[String], workload_extra: &str) -> Vec<Io> {
    let jobs = args.iter().filter(|a| a.starts_with("--name=")).count() as u32;
    run_task(args, workload_extra, PID + jobs - 1)
}

/// The I/Os the task `pid` queued, in order.
fn run_task(args: &[String], workload_extra: &str, pid: u32) -> Vec<Io> {
    let quoted: Vec<String> = args.iter().map(|a| format!("\"{a}\"")).collect();
    let text = format!("{DISKS}[workload]\ntype = \"fio\"\npid = {PID}\n{workload_extra}args = [{}]\n", quoted.join(", "));
    let sc = scenario::load("fio-iolog.toml", &text, None, &[]).unwrap_or_else(|e| panic!("{e}"));
    let mut engine: Engine = sc.build();
    engine.core.tracer.keep_log();
    engine.run();
    let events = engine.core.tracer.log.take().unwrap().events;
    let tasks = &engine.core.tasks;
    events
        .iter()
        .filter(|e| e.action == Action::Queue && tasks[e.task as usize].pid == pid)
        .map(|e| (fio_ddir(e.op).to_string(), e.sector * 512, e.bytes as u64))
        .collect()
}

/// The iolog's name of a bio's direction.
fn fio_ddir(op: Op) -> &'static str {
    match op {
        Op::Read => "read",
        Op::Discard => "trim",
        _ => "write",
    }
}

/// The first line where two I/O lists differ, for the failure message.
fn first_difference(want: &[Io], got: &[Io]) -> String {
    let i = want.iter().zip(got).position(|(a, b)| a != b).unwrap_or(want.len().min(got.len()));
    format!("I/O {i}: fio {:?}, blkstack {:?} ({} vs {} I/Os)", want.get(i), got.get(i), want.len(), got.len())
}

/// Every case of cases.txt recorded in `dir` against blkstack with
/// `fio_version`: how many were compared.
fn compare_all(dir: &str, fio_version: &str) -> usize {
    let mut failed = Vec::new();
    let mut compared = 0;
    let all = cases();
    for (name, opts) in &all {
        let Some(want) = iolog_in(dir, name) else { continue };
        assert!(!want.is_empty(), "{name}: empty iolog");
        let got = run(&blkstack_args_for(opts, &[], want.len()), &format!("fio_version = \"{fio_version}\"\n"));
        if got != want {
            failed.push(format!("{name}: {}", first_difference(&want, &got)));
        }
        compared += 1;
    }
    assert!(failed.is_empty(), "{} of {compared} cases differ from fio {fio_version}:\n{}", failed.len(), failed.join("\n"));
    compared
}

#[test]
fn every_recorded_job_issues_fios_offsets() {
    assert_eq!(compare_all(DIR, "3.33"), cases().len());
}

#[test]
fn fio_3_39_jobs_issue_its_offsets() {
    // fio 3.39 built from source, without libaio: every case but the
    // libaio one.
    assert_eq!(compare_all(&format!("{DIR}/3.39"), "3.39"), cases().len() - 1);
}

#[test]
fn numjobs_clones_are_fios_thread_numbers() {
    // thread2-*: fio's second job is thread 2; so is a job's second clone.
    for name in ["thread2-randwrite-zipf", "thread2-randrw"] {
        let (_, opts) = cases().into_iter().find(|c| c.0 == name).unwrap();
        let b = opts.iter().rposition(|o| o == "--name=b").unwrap();
        let mut args = blkstack_args(&opts[b..], &["--numjobs=2"]);
        args.retain(|a| a != "--name=b");
        args.insert(0, "--name=b".to_string());
        let want = iolog(name);
        let got = run_task(&args, "", PID + 1);
        assert!(got == want, "{name}: {}", first_difference(&want, &got));
    }
}

#[test]
fn the_first_offset_is_fios_first_draw() {
    // randrepeat (the default) in fio 3.33: the offset generator of thread 1
    // is seeded with FIO_RANDSEED (0xb1899bed); fio's first read of a 64 MiB
    // file (16384 blocks of 4 KiB) is at 4046848 = block 988 (measured).
    let want = &iolog("randread-4k")[0];
    assert_eq!(want, &("read".to_string(), 4046848, 4096));
    let got = run(&blkstack_args(&["--name=x", "--filename=sda", "--rw=randread", "--size=64M", "--number_ios=1"].map(String::from), &[]), "");
    assert_eq!(&got[0], want);
}

#[test]
fn bad_fio_version_and_generator_name_file_line_and_key() {
    let text = format!("{DISKS}[workload]\ntype = \"fio\"\nfio_version = \"3.20\"\nargs = [\"--name=x\", \"--filename=sda\", \"--rw=randread\", \"--direct=1\"]\n");
    let e = scenario::load("v.toml", &text, None, &[]).unwrap_err().to_string();
    // DISKS is 7 lines: fio_version is line 10.
    assert!(e.starts_with("v.toml:10: workload.fio_version: '3.20'"), "{e}");
    let text = format!("{DISKS}[workload]\ntype = \"fio\"\nargs = [\"--name=x\", \"--filename=sda\", \"--rw=randread\", \"--random_generator=mt\"]\n");
    let e = scenario::load("g.toml", &text, None, &[]).unwrap_err().to_string();
    assert!(e.contains("g.toml:10: workload.args") && e.contains("random_generator") && e.contains("tausworthe, lfsr, tausworthe64"), "{e}");
}

#[test]
fn fio_3_42_draws_offsets_of_huge_regions_with_tausworthe64() {
    // A 20 TiB disk of 4 KiB blocks: 5 × 2^30 blocks, more than taus88's
    // 2^32 values. fio 3.39 still draws with taus88 (its switch came after
    // seeding); its first draw on this seed, measured on 64 MiB (16384
    // blocks, randread-4k under 3.39), is block 16007: r / 2^32 lies in
    // [16007, 16008) / 16384, so here the block lies in
    // [5 × 2^30 × 16007 / 16384, 5 × 2^30 × 16008 / 16384) =
    // [5245173760, 5245501440). fio 3.42 draws with tausworthe64 instead,
    // unless the job names its generator.
    let text = |version: &str, generator: &str| {
        format!(
            "[disks.big]\nkind = \"nvme\"\nsize = \"20TiB\"\n[workload]\ntype = \"fio\"\nfio_version = \"{version}\"\npid = {PID}\n\
             args = [\"--name=x\", \"--filename=big\", \"--rw=randread\", \"--direct=1\", \"--number_ios=1\"{generator}]\n"
        )
    };
    let first_block = |version: &str, generator: &str| {
        let sc = scenario::load("big.toml", &text(version, generator), None, &[]).unwrap_or_else(|e| panic!("{e}"));
        let mut engine: Engine = sc.build();
        engine.core.tracer.keep_log();
        engine.run();
        let events = engine.core.tracer.log.take().unwrap().events;
        events.iter().find(|e| e.action == Action::Queue).map(|e| e.sector * 512 / 4096).unwrap()
    };
    let taus88 = 5245173760..5245501440;
    assert!(taus88.contains(&first_block("3.39", "")));
    assert!(taus88.contains(&first_block("3.42", ", \"--random_generator=tausworthe\"")));
    assert!(!taus88.contains(&first_block("3.42", "")));
}
