#!/usr/bin/env python3
"""Held-out check of a calibrated disk model on this machine's real disk.

Two steps, each runnable alone:

  python bench/heldout.py measure --dir DIR [--repeats 3] [--file PATH]
      Writes a 2 GiB file in full (O_DIRECT), records its extents
      (filefrag -v), then runs, REPEATS times in turn, the calibration job
      set (python/blkstack/calibrate/jobs/read.fio) and the held-out job
      set (bench/heldout/heldout.fio) on it with the system's fio, O_DIRECT
      libaio reads only: DIR/train-N.json, DIR/heldout-N.json, DIR/load.txt.

  python bench/heldout.py predict --dir DIR [--stack stack.toml] [--host-cpu CLASS] [--completions batched]
      Fits the disk's model on the training runs only (each job's median
      run), captures the stack (or takes --stack) and runs every held-out
      job through `blkstack fio` on it, on the disk region the file's
      extents cover. Prints measured (median, and the spread of the
      repeats) against predicted bandwidth per held-out job, with the
      median and worst error.

Not a test: it measures a shared machine, so its figures move from one
sitting to the next; bench/heldout/ keeps one sitting's JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
HELDOUT_FIO = os.path.join(HERE, "heldout", "heldout.fio")
FILE_SIZE = 2 << 30


def sh(cmd: List[str], **kw: Any) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stderr}")
    return r.stdout


def load_avg() -> str:
    with open("/proc/loadavg", encoding="ascii") as f:
        return f.read().strip()


def prepare(path: str) -> None:
    """A file of FILE_SIZE bytes, written in full, so that reads reach the disk."""
    if os.path.exists(path) and os.path.getsize(path) == FILE_SIZE:
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    sh(["fallocate", "-l", str(FILE_SIZE), path])
    sh(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={FILE_SIZE >> 20}", "conv=notrunc", "oflag=direct"])


def extents(path: str) -> List[Tuple[int, int, int]]:
    """(logical block, physical block, blocks) of each extent, filefrag -v's table."""
    out = sh(["filefrag", "-v", path])
    rows = []
    for line in out.splitlines():
        m = re.match(r"\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*(\d+):\s+(\d+):", line)
        if m:
            rows.append((int(m.group(1)), int(m.group(3)), int(m.group(5))))
    return rows


def run_fio(job_file: str, target: str, out: str) -> None:
    env = dict(os.environ, TARGET=target)
    sh(["fio", "--readonly", "--output-format=json", f"--output={out}", job_file], env=env)


def cmd_measure(args: argparse.Namespace) -> int:
    train_fio = os.path.join(HERE, "..", "python", "blkstack", "calibrate", "jobs", "read.fio")
    os.makedirs(args.dir, exist_ok=True)
    prepare(args.file)
    ext = extents(args.file)
    with open(os.path.join(args.dir, "extents.json"), "w", encoding="utf-8") as f:
        json.dump({"file": args.file, "block_size": 4096, "extents": ext}, f)
    log = open(os.path.join(args.dir, "load.txt"), "a", encoding="utf-8")
    for r in range(1, args.repeats + 1):
        for name, jf in (("train", train_fio), ("heldout", HELDOUT_FIO)):
            start = time.strftime("%H:%M:%S", time.gmtime())
            run_fio(jf, args.file, os.path.join(args.dir, f"{name}-{r}.json"))
            line = f"{name}-{r}: {start}-{time.strftime('%H:%M:%S', time.gmtime())} UTC, loadavg {load_avg()}"
            print(line, flush=True)
            log.write(line + "\n")
            log.flush()
    return 0


def load_json(path: str) -> Any:
    """fio's JSON, plain or gzipped (the recorded sittings are)."""
    import gzip
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def fio_jobs(path: str) -> Dict[str, Dict[str, float]]:
    """Per job name: read bandwidth (B/s) and mean completion latency (ns)."""
    data = load_json(path)
    return {j["jobname"]: {"bw": float(j["read"]["bw_bytes"]), "clat": float(j["read"]["clat_ns"]["mean"])} for j in data["jobs"]}


def repeats(directory: str, name: str) -> List[str]:
    files = sorted(f for f in os.listdir(directory) if re.fullmatch(rf"{name}-\d+\.json(\.gz)?", f))
    return [os.path.join(directory, f) for f in files]


def median_run(files: List[str]) -> Dict[str, Any]:
    """fio's JSON with each job taken from the run whose bandwidth is that job's median."""
    runs = [load_json(p) for p in files]
    merged = dict(runs[0])
    jobs = []
    for i, job in enumerate(runs[0]["jobs"]):
        versions = sorted((r["jobs"][i] for r in runs), key=lambda j: j["read"]["bw_bytes"])
        jobs.append(versions[len(versions) // 2] if job else job)
    merged["jobs"] = jobs
    return merged


def sim_job_text(text: str, disk: str, offset: int, size: int, runtime: str) -> str:
    """The held-out job file for blkstack: the disk region the file covers, a shorter run."""
    text = text.replace("filename=${TARGET}", f"filename=/dev/{disk}\noffset={offset}\nsize={size}")
    text = re.sub(r"^runtime=.*$", f"runtime={runtime}", text, flags=re.M)
    return re.sub(r"^ramp_time=.*\n", "", text, flags=re.M)


def cmd_predict(args: argparse.Namespace) -> int:
    import tempfile
    from blkstack.calibrate import fiojson, model_toml
    from blkstack.calibrate.fit import COMPLETIONS, fit
    train = repeats(args.dir, "train")
    held = repeats(args.dir, "heldout")
    if not train or not held:
        sys.exit(f"{args.dir}: no train-N.json / heldout-N.json (run 'measure' first)")
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        merged = os.path.join(tmp, "train.json")
        with open(merged, "w", encoding="utf-8") as f:
            json.dump(median_run(train), f)
        reads, _ = fiojson.split(fiojson.load(merged))
        fitted = fit(reads, [], COMPLETIONS[args.completions])
        section = model_toml(fitted, args.disk, [os.path.basename(p) for p in train], None)
        stack = args.stack
        if stack is None:
            stack = os.path.join(tmp, "stack.toml")
            with open(stack, "w", encoding="utf-8") as f:
                f.write(sh(["blkstack", "capture"]))
        with open(stack, encoding="utf-8") as f:
            stack_text = f.read()
        stack_text = re.sub(rf"(?ms)^\[disks\.{args.disk}\.model\].*?(?=^\[|\Z)", "", stack_text)
        host = f'\n[host]\ncpu = "{args.host_cpu}"\n' if args.host_cpu else ""
        scen = os.path.join(tmp, "scenario.toml")
        with open(scen, "w", encoding="utf-8") as f:
            f.write(stack_text + "\n" + section + host)
        with open(os.path.join(args.dir, "extents.json"), encoding="utf-8") as f:
            ext = json.load(f)
        # The file's data starts at its first extent; the partition-less
        # root filesystem sits on the whole disk, so a filesystem block is
        # a disk block. A random offset inside the file lands in its extent
        # at the same distance from the extent's start: with few extents of
        # hundreds of MiB, the disk region from the first extent on is what
        # the reads cover.
        first = min(e[1] for e in ext["extents"]) * ext["block_size"]
        with open(HELDOUT_FIO, encoding="utf-8") as f:
            jobs_text = sim_job_text(f.read(), args.disk, first, FILE_SIZE, args.runtime)
        # fio runs the jobs one after the other (stonewall): each on its own.
        parts = re.split(r"(?m)^(?=\[)", jobs_text.replace("stonewall\n", ""))
        glob = next(p for p in parts if p.startswith("[global]"))
        sim = {}
        for part in parts:
            m = re.match(r"\[([^\]]+)\]", part)
            if not m or m.group(1) == "global":
                continue
            jf = os.path.join(tmp, "job.fio")
            with open(jf, "w", encoding="utf-8") as f:
                f.write(glob + part)
            out = os.path.join(tmp, "sim.json")
            sh(["blkstack", "fio", "--stack", scen, "--json", out, jf])
            with open(out, encoding="utf-8") as f:
                sim[m.group(1)] = float(json.load(f)["fio"]["jobs"][0]["read"]["bw_bytes"])
    measured = [fio_jobs(p) for p in held]
    print(section.rstrip())
    print(f"# host CPU model: {args.host_cpu or 'none'}; completions: {args.completions}; "
          f"{len(train)} training runs, {len(held)} held-out runs")
    print(f"{'JOB':24} {'MEASURED MB/s':>14} {'SPREAD':>16} {'PREDICTED':>10} {'ERROR':>8}")
    errors, spreads = [], []
    # Jobs of the measured runs that are no longer in the job file are left out.
    for name in (n for n in measured[0] if n in sim):
        bws = [m[name]["bw"] for m in measured]
        med = statistics.median(bws)
        lo, hi = (min(bws) - med) / med * 100, (max(bws) - med) / med * 100
        pred = sim[name]
        err = (pred - med) / med * 100
        errors.append(abs(err))
        spreads.append(max(-lo, hi))
        print(f"{name:24} {med / 1e6:14,.1f} {lo:+7.1f}/{hi:+6.1f}% {pred / 1e6:10,.1f} {err:+7.1f}%")
    print(f"held-out jobs: {len(errors)}; error median {statistics.median(errors):.1f}%, worst {max(errors):.1f}%; "
          f"measurement spread (largest distance of a repeat from the median) median {statistics.median(spreads):.1f}%, "
          f"worst {max(spreads):.1f}%")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--dir", required=True)
    m.add_argument("--file", default="/var/tmp/heldout/data")
    m.add_argument("--repeats", type=int, default=3)
    q = sub.add_parser("predict")
    q.add_argument("--dir", required=True)
    q.add_argument("--disk", default="vda")
    q.add_argument("--stack")
    q.add_argument("--host-cpu", default=None)
    q.add_argument("--runtime", default="300ms")
    # This machine's disk is a Firecracker guest's virtio-block device
    # (the kernel command line's --firecracker-init), which posts its
    # completions in batches (docs/devices.md); auto lets the training
    # jobs choose, and they do not hold the shallow small-block job that
    # would show it (bench/heldout/README.md).
    q.add_argument("--completions", choices=("auto", "batched", "each"), default="batched",
                   help="as blkstack calibrate's: whether the disk posts completions in batches (default: batched, "
                        "this machine's Firecracker virtio-block disk), each as it finishes, or auto (the training "
                        "jobs decide)")
    args = p.parse_args()
    return cmd_measure(args) if args.cmd == "measure" else cmd_predict(args)


if __name__ == "__main__":
    sys.exit(main())
