#!/usr/bin/env python3
"""Run the seeds' and the validation suite's scenarios through `blkstack run
--json FILE --btt --histograms --iostat` into a directory (the JSON summary
and the printed reports of each), and again without `--btt` (a plain run,
whose analysis thread is then the only listener of the engine's events),
or compare two such directories file by file: a change meant to leave
every figure alone (the analysis, the engine's speed) shows that it does.
What differs from run to run is left out of the comparison: the run's wall
and processor time and speed (in the JSON, and on the printed summary's
line), the dates fio's and iostat's reports print. Scenarios are named
relative to the checkout, so two checkouts' outputs compare.

  bench/same_outputs.py run OUT [--python PY]    # one blkstack, every case
  bench/same_outputs.py compare DIR_A DIR_B      # counts of identical files

Cases: each built-in scenario under both sides of its [compare] table, seed
002's fstrim (extents and members at a sixty-sixth and a sixty-fourth of
the size) on both sides, and each validation scenario under its own kernel,
5.10 and 7.2. A run that fails leaves its error message, compared too.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import List, Sequence, Tuple

ROOT = Path(__file__).resolve().parents[1]
SEED_DIR = ROOT / "python" / "blkstack" / "scenarios"
VALIDATE_DIR = ROOT / "validate" / "scenarios"
# Each case's reports, and the suffix of its files: with btt's own
# bookkeeping, and without (the analysis thread alone listens).
REPORTS = [("", ["--btt", "--histograms", "--iostat"]), ("-plain", ["--histograms", "--iostat"])]
QUICK_002 = [f"disks.nvme{i}n1.size=29687496704" for i in range(4)]
FSTRIM_002 = 'workload={type = "fstrim", device = "/dev/md0", extents = %s}'


def compare_sides(path: Path) -> List[Tuple[str, List[str]]]:
    """(kernel, --set overrides) of the scenario's [compare] sides."""
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    table = tomllib.loads(path.read_text()).get("compare", {})
    return [(side["kernel"], list(side.get("set", []))) for side in (table.get("before"), table.get("after")) if side]


def cases() -> List[Tuple[str, Path, str, List[str]]]:
    """(name, scenario, kernel, --set overrides) of every case."""
    out = []
    for path in sorted(SEED_DIR.glob("*.toml")):
        for i, (kernel, sets) in enumerate(compare_sides(path)):
            out.append((f"seed-{path.stem}-{i}", path, kernel, sets))
    from blkstack.seeds import XFS_FREE_EXTENTS  # the seed's fstrim extents

    extents = [[start // 66 // 8 * 8, length // 66 // 8 * 8] for start, length in XFS_FREE_EXTENTS]
    fstrim = [FSTRIM_002 % json.dumps(extents)] + QUICK_002
    for kernel in ("5.8", "5.13"):
        out.append((f"seed-raid10-discard-fstrim-small-{kernel}", SEED_DIR / "raid10-discard.toml", kernel, fstrim))
    for path in sorted(VALIDATE_DIR.glob("*.toml")):
        for kernel in ("", "5.10", "7.2"):
            out.append((f"validate-{path.stem}-{kernel or 'own'}", path, kernel, []))
    return out


def run_all(out: Path, blkstack: Sequence[str]) -> int:
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for case, path, kernel, sets in cases():
        for suffix, reports in REPORTS:
            name = case + suffix
            args = list(blkstack) + ["run", str(path.relative_to(ROOT))] + (["--kernel", kernel] if kernel else [])
            for s in sets:
                args += ["--set", s]
            args += ["--json", str(out / f"{name}.json")] + reports
            proc = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, cwd=ROOT)
            (out / f"{name}.txt").write_bytes(proc.stdout)
            if proc.returncode != 0:
                (out / f"{name}.error").write_bytes(proc.stderr)
            print(f"{name}: {'error ' + str(proc.returncode) if proc.returncode else 'ok'}", flush=True)
    return 0


# fio's report dates its job's end by the wall clock ("pid=4242: Wed Nov 25 04:44:47 2026"),
# iostat's header the day of the run ("Linux 6.12.117 (blkstack) \t12/07/26 \t").
FIO_DATE = re.compile(rb"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}")
IOSTAT_DATE = re.compile(rb"\(blkstack\) \t\d\d/\d\d/\d\d \t")


def without_timing(path: Path) -> bytes:
    """A file without what differs from run to run: the run's wall and
    processor time and speed (the JSON summary's keys, the printed
    summary's line) and
    fio's wall-clock date."""
    data = path.read_bytes()
    if path.suffix == ".json":
        doc = json.loads(data)
        for key in ("wall_time_s", "engine_cpu_s", "bios_per_s"):
            doc.pop(key, None)
        data = json.dumps(doc, sort_keys=True).encode()
    else:
        data = b"".join(line for line in data.splitlines(keepends=True) if b" wall " not in line)
    return IOSTAT_DATE.sub(b"(blkstack) \tDATE \t", FIO_DATE.sub(b"DATE", data))


def compare(a: Path, b: Path) -> int:
    names = sorted({p.name for p in a.iterdir()} | {p.name for p in b.iterdir()})
    differ = [n for n in names if not ((a / n).exists() and (b / n).exists() and without_timing(a / n) == without_timing(b / n))]
    print(f"{len(names) - len(differ)} of {len(names)} files identical")
    for name in differ:
        print(f"  differs: {name}")
    return 1 if differ else 0


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--python", default=sys.executable, help="the Python whose blkstack runs the cases")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "run":
        script = Path(args.python).parent / "blkstack"
        return run_all(args.out, [str(script)] if script.exists() else [args.python, "-m", "blkstack"])
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
