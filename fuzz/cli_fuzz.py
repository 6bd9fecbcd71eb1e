#!/usr/bin/env python3
"""Mutation fuzzing of the ``blkstack`` command line, end to end.

The cargo-fuzz targets beside this file reach the Rust parsers; this driver
reaches everything behind the command line: scenario TOML, fio job files and
command lines, blkparse/ftrace text traces, binary blktrace files and sweep
files, each mutated from a seed and handed to the command that reads it, in a
fresh directory, under a wall-clock limit and an address-space limit.

A run fails when:
  * the process dies of a signal other than the SIGTERM this driver sends,
    or exits with a status other than 0 (done) or 2 (clear error);
  * standard error holds a Python traceback, a Rust panic or
    "internal error";
  * a clear error (status 2) is not exactly one "blkstack: error:" line;
  * a file is left in the run's directory that the command did not promise:
    a temporary file, or any output file of a failed run;
  * the time limit passes and the process does not end within a few seconds
    of SIGTERM, or ends without cleaning up;
  * its peak resident memory passes the limit.

Usage:
    nice -n 19 python fuzz/cli_fuzz.py --minutes 35 --work /tmp/cli-fuzz

Failures are kept under WORK/failures/N/ (the input, the command, its
output); WORK/summary.json holds the counts, rewritten after every run.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
INTERESTING = [b"0", b"-1", b"1", b"4096", b"4097", b"2147483648", b"4294967296", b"18446744073709551616",
               b"1e308", b"nan", b"inf", b"-0", b"0.0000001", b"99999999999", b"1M", b"1T", b"512k", b"3",
               b"\"\"", b"true", b"[]", b"{}", b"\x00", b"\xff\xfe", b"\n", b"=", b"#", b"[", b"]"]
TEMP_NAME = re.compile(r"\.tmp$|\.tmp\.|\.\d+\.tmp")


# --- seeds -----------------------------------------------------------------

def seed_files(kind: str) -> List[Path]:
    """The files each kind of input is mutated from."""
    if kind == "scenario":
        return sorted((ROOT / "python/blkstack/scenarios").glob("*.toml")) + \
            [p for p in sorted((ROOT / "examples").glob("*.toml")) if not p.name.endswith(".sweep.toml")]
    if kind == "fio":
        return sorted((ROOT / "fuzz/corpus/fio_parse").glob("*.fio"))
    if kind == "fio_cmdline":
        return sorted((ROOT / "fuzz/corpus/fio_parse").glob("*.txt"))
    if kind == "text_trace":
        return sorted((ROOT / "tests/data").glob("*.txt")) + sorted((ROOT / "fuzz/corpus/blkparse_parse").glob("*"))
    if kind == "sweep":
        return sorted((ROOT / "examples").glob("*.sweep.toml"))
    raise ValueError(kind)


def make_binary_seeds(blkstack: List[str], work: Path) -> List[Path]:
    """Binary blktrace files written by blkstack itself for two scenarios."""
    out = work / "binary-seeds"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name, count in (("demo", 8), ("raid5-recursive-split", 2)):
        d = out / name
        d.mkdir()
        scen = ROOT / "python/blkstack/scenarios" / f"{name}.toml"
        subprocess.run(blkstack + ["run", str(scen), "-q", "--set", f"workload.count={count}", "--blktrace", str(d)],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    return sorted(p for p in out.rglob("*.blktrace.*") if 0 < p.stat().st_size <= 256 << 10)


# --- mutations -------------------------------------------------------------

def mutate_bytes(data: bytes, rng: random.Random, others: List[bytes]) -> bytes:
    """A few random edits: byte flips, inserts, deletes, duplicated or
    spliced chunks, interesting numbers in place of numbers."""
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3, 5, 8))):
        op = rng.randrange(9)
        n = len(buf)
        if op == 0 and n:
            buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
        elif op == 1:
            at = rng.randrange(n + 1)
            buf[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
        elif op == 2 and n:
            a = rng.randrange(n)
            del buf[a:a + rng.randrange(1, 64)]
        elif op == 3 and n:
            a = rng.randrange(n)
            chunk = buf[a:a + rng.randrange(1, 256)]
            at = rng.randrange(n + 1)
            buf[at:at] = chunk * rng.choice((1, 2, 16))
        elif op == 4 and others:
            o = rng.choice(others)
            if o:
                a = rng.randrange(len(o))
                at = rng.randrange(n + 1)
                buf[at:at] = o[a:a + rng.randrange(1, 512)]
        elif op in (5, 6, 7):
            buf = bytearray(replace_number(bytes(buf), rng))
        elif op == 8 and n:
            buf = buf[:rng.randrange(n)]
    return bytes(buf)


def replace_number(data: bytes, rng: random.Random) -> bytes:
    nums = list(re.finditer(rb"-?\d+(?:\.\d+)?[kKmMgGtT]?(?:i?[bB])?", data))
    if not nums:
        return data
    m = rng.choice(nums)
    return data[:m.start()] + rng.choice(INTERESTING) + data[m.end():]


def mutate_lines(data: bytes, rng: random.Random) -> bytes:
    """Line-level edits for text: swap, duplicate, drop, reverse a block."""
    lines = data.split(b"\n")
    if len(lines) < 2:
        return data
    op = rng.randrange(4)
    i, j = sorted(rng.sample(range(len(lines)), 2))
    if op == 0:
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 1:
        lines[i:i] = lines[i:j + 1] * rng.choice((1, 2, 50))
    elif op == 2:
        del lines[i:j + 1]
    else:
        lines[i:j + 1] = lines[i:j + 1][::-1]
    return b"\n".join(lines)


def mutate(data: bytes, rng: random.Random, others: List[bytes], text: bool) -> bytes:
    if text and rng.random() < 0.4:
        data = mutate_lines(data, rng)
    return mutate_bytes(data, rng, others)


# --- one run ---------------------------------------------------------------

class Outcome:
    def __init__(self) -> None:
        self.status: Optional[int] = None
        self.stderr = b""
        self.stdout_len = 0
        self.seconds = 0.0
        self.maxrss_mb = 0.0
        self.timed_out = False
        self.term_ok = True


def run_limited(cmd: List[str], cwd: Path, limit_s: float, mem_mb: int) -> Outcome:
    """Run cmd in cwd; at limit_s send SIGTERM (and SIGKILL 10 s later)."""
    def pre() -> None:
        os.setsid()
        lim = mem_mb * 1024 * 1024 * 4  # address space: the RSS check below is the real bound
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        resource.setrlimit(resource.RLIMIT_FSIZE, (512 << 20, 512 << 20))

    out = Outcome()
    t0 = time.monotonic()
    env = dict(os.environ, BLKSTACK_DEBUG="", PYTHONUNBUFFERED="1")
    env.pop("BLKSTACK_DEBUG")
    with open(cwd / ".stdout", "wb") as so, open(cwd / ".stderr", "wb") as se:
        p = subprocess.Popen(cmd, cwd=cwd, stdout=so, stderr=se, stdin=subprocess.DEVNULL, preexec_fn=pre, env=env)
        try:
            _, status, ru = wait4_timeout(p, limit_s)
        except KeyboardInterrupt:  # the campaign is stopped: so is its run
            os.killpg(p.pid, signal.SIGKILL)
            os.wait4(p.pid, 0)
            raise
        except TimeoutError:
            out.timed_out = True
            os.killpg(p.pid, signal.SIGTERM)
            try:
                _, status, ru = wait4_timeout(p, 10.0)
            except TimeoutError:
                out.term_ok = False
                os.killpg(p.pid, signal.SIGKILL)
                _, status, ru = os.wait4(p.pid, 0)
    out.seconds = time.monotonic() - t0
    out.status = os.waitstatus_to_exitcode(status)
    out.maxrss_mb = ru.ru_maxrss / 1024
    out.stderr = (cwd / ".stderr").read_bytes()
    out.stdout_len = (cwd / ".stdout").stat().st_size
    (cwd / ".stdout").unlink()
    (cwd / ".stderr").unlink()
    return out


def wait4_timeout(p: subprocess.Popen, limit_s: float) -> Tuple[int, int, resource.struct_rusage]:
    end = time.monotonic() + limit_s
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = status
            return pid, status, ru
        if time.monotonic() > end:
            raise TimeoutError
        time.sleep(0.05)


def judge(out: Outcome, cwd: Path, inputs: List[str], outputs: List[str], mem_mb: int,
          keeps_partial: bool = False) -> List[str]:
    """What is wrong with this run (empty: nothing). *keeps_partial*: the
    command keeps its finished part when interrupted (a sweep's table)."""
    bad = []
    err = out.stderr.decode("utf-8", "replace")
    if "Traceback (most recent call last)" in err:
        bad.append("traceback")
    if "panicked at" in err or "RUST_BACKTRACE" in err:
        bad.append("panic")
    if "internal error" in err:
        bad.append("internal error")
    if out.timed_out:
        if not out.term_ok:
            bad.append("hang: no exit within 10 s of SIGTERM")
        elif out.status not in (143, -15):
            bad.append(f"SIGTERM gave status {out.status}")
    elif out.status not in (0, 2):
        bad.append(f"exit status {out.status}")
    if out.status == 2 and not out.timed_out:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        errors = [ln for ln in lines if ln.startswith("blkstack: error:")]
        if len(errors) != 1:
            bad.append(f"status 2 with {len(errors)} 'blkstack: error:' lines")
    if out.maxrss_mb > mem_mb:
        bad.append(f"peak RSS {out.maxrss_mb:.0f} MB over {mem_mb} MB")
    left = [p.relative_to(cwd).as_posix() for p in cwd.rglob("*") if p.is_file() and p.name not in inputs]
    temp = [p for p in left if TEMP_NAME.search(p)]
    if temp:
        bad.append(f"temporary files left: {temp[:3]}")
    if out.status != 0 and not (out.timed_out and keeps_partial):
        stray = [p for p in left if p not in temp and any(fnmatch.fnmatch(p, o) or p.startswith(o.rstrip('/') + '/')
                                                          for o in outputs)]
        if stray:
            bad.append(f"output files of a failed run left: {stray[:3]}")
    return bad


# --- the kinds of input and the commands that read them --------------------

Case = Tuple[List[str], Dict[str, bytes], List[str]]   # argv after 'blkstack', files to write, outputs


def case_scenario(rng: random.Random, data: bytes) -> Case:
    args = rng.choice([
        ["run", "s.toml", "--trace", "t.txt", "--json", "r.json"],
        ["run", "s.toml", "--iostat", "--btt", "--histograms"],
        ["run", "s.toml", "--requests", "r.csv", "--check", "integrity"],
        ["run", "s.toml", "--blktrace", "."],
        ["run", "s.toml", "--iostat", "--interval", rng.choice(["0.001", "1e-9", "nan", "-1", "0.0005", "1"])],
        ["report", "s.toml", "--out", "r.html"],
    ])
    return args, {"s.toml": data}, ["t.txt", "r.json", "r.csv", "*.blktrace.*", "r.html"]


def case_fio(rng: random.Random, data: bytes) -> Case:
    return ["fio", "job.fio", "--stack", "stack.toml", "--json", "f.json", "--trace", "t.txt"], \
        {"job.fio": data, "stack.toml": FIO_STACK}, ["f.json", "t.txt"]


def case_fio_cmdline(rng: random.Random, data: bytes) -> Case:
    words = [w for w in data.decode("utf-8", "replace").split() if "\x00" not in w][:64]
    return ["fio", "--stack", "stack.toml", "--json", "f.json"] + words, {"stack.toml": FIO_STACK}, ["f.json"]


def case_text_trace(rng: random.Random, data: bytes) -> Case:
    args = rng.choice([
        ["stats", "t.txt", "--json", "s.json"],
        ["stats", "t.txt", "--btt", "--histograms"],
        ["stats", "t.txt", "--blktrace", "."],
        ["stats", "t.txt", "--interval", rng.choice(["0.001", "1e-9", "nan", "0.1"])],
        ["diff", "t.txt", "t.txt", "--json", "d.json"],
        ["report", "t.txt", "--out", "r.html"],
    ])
    return args, {"t.txt": data}, ["s.json", "*.blktrace.*", "d.json", "r.html"]


def case_binary_trace(rng: random.Random, data: bytes) -> Case:
    name = "sda.blktrace.0"
    args = rng.choice([
        ["stats", name, "--json", "s.json"],
        ["stats", name, "--btt"],
        ["stats", name, "--blktrace-dump", "dump.txt"],
        ["report", name, "--out", "r.html"],
    ])
    return args, {name: data}, ["s.json", "dump.txt", "r.html"]


def case_sweep(rng: random.Random, data: bytes) -> Case:
    return ["sweep", "x.sweep.toml", "--out", "x.parquet", "--csv", "x.csv", "-q", "--workers", "1"], \
        {"x.sweep.toml": data}, ["x.parquet", "x.csv"]


FIO_STACK = b"""kernel = "6.12"
[disks.nvme0n1]
kind = "nvme"
size = "8GiB"
[disks.sda]
kind = "sata-ssd"
size = "8GiB"
[workload]
type = "fio"
"""

KINDS: Dict[str, Tuple[Callable[[random.Random, bytes], Case], bool]] = {
    "scenario": (case_scenario, True),
    "fio": (case_fio, True),
    "fio_cmdline": (case_fio_cmdline, True),
    "text_trace": (case_text_trace, True),
    "binary_trace": (case_binary_trace, False),
    "sweep": (case_sweep, True),
}


# --- the campaign ----------------------------------------------------------

def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--work", type=Path, default=Path("/tmp/blkstack-cli-fuzz"))
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--limit", type=float, default=30.0, help="seconds per run before SIGTERM")
    ap.add_argument("--mem", type=int, default=1536, help="peak RSS allowed per run, MB")
    ap.add_argument("--blkstack", default=str(Path(sys.executable).parent / "blkstack"))
    a = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 32)
    rng = random.Random(seed)
    a.work.mkdir(parents=True, exist_ok=True)
    blkstack = [a.blkstack]
    seeds: Dict[str, List[bytes]] = {k: [p.read_bytes() for p in seed_files(k)] for k in KINDS if k != "binary_trace"}
    seeds["binary_trace"] = [p.read_bytes() for p in make_binary_seeds(blkstack, a.work)]
    for k, v in seeds.items():
        if not v:
            print(f"no seeds for {k}", file=sys.stderr)
            return 1
    stats = {"seed": seed, "started": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "runs": 0,
             "per_kind": {k: 0 for k in KINDS}, "exit_0": 0, "exit_2": 0, "terminated_at_limit": 0,
             "failures": 0, "failure_kinds": {}, "max_rss_mb": 0.0, "max_seconds": 0.0,
             "seed_counts": {k: len(v) for k, v in seeds.items()}}
    end = time.monotonic() + a.minutes * 60
    run_dir = a.work / "run"
    while time.monotonic() < end:
        kind = rng.choice(list(KINDS))
        make, text = KINDS[kind]
        pool = seeds[kind]
        data = rng.choice(pool)
        if rng.random() < 0.9:
            data = mutate(data, rng, pool, text)
        args, files, outputs = make(rng, data)
        if run_dir.exists():
            shutil.rmtree(run_dir)
        run_dir.mkdir()
        for name, content in files.items():
            (run_dir / name).write_bytes(content)
        out = run_limited(blkstack + args, run_dir, a.limit, a.mem)
        bad = judge(out, run_dir, list(files), outputs, a.mem, keeps_partial=kind == "sweep")
        stats["runs"] += 1
        stats["per_kind"][kind] += 1
        stats["max_rss_mb"] = max(stats["max_rss_mb"], round(out.maxrss_mb, 1))
        stats["max_seconds"] = max(stats["max_seconds"], round(out.seconds, 2))
        if out.timed_out:
            stats["terminated_at_limit"] += 1
        elif out.status in (0, 2):
            stats["exit_%d" % out.status] += 1
        if bad:
            stats["failures"] += 1
            for b in bad:
                key = b.split(":")[0]
                stats["failure_kinds"][key] = stats["failure_kinds"].get(key, 0) + 1
            keep = a.work / "failures" / str(stats["failures"])
            keep.mkdir(parents=True, exist_ok=True)
            for name, content in files.items():
                (keep / name).write_bytes(content)
            (keep / "report.json").write_text(json.dumps({
                "kind": kind, "argv": ["blkstack"] + args, "problems": bad, "status": out.status,
                "seconds": round(out.seconds, 2), "maxrss_mb": round(out.maxrss_mb, 1),
                "stderr": out.stderr.decode("utf-8", "replace")[-4000:]}, indent=1))
            print(f"FAIL {stats['failures']} {kind} {' '.join(args)}: {bad}", flush=True)
        tmp = a.work / "summary.json.tmp"
        tmp.write_text(json.dumps(stats, indent=1))
        tmp.replace(a.work / "summary.json")
    if run_dir.exists():
        shutil.rmtree(run_dir)
    stats["finished"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    (a.work / "summary.json").write_text(json.dumps(stats, indent=1))
    print(json.dumps(stats, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
