"""``--btt`` prints what real ``btt -A`` prints (Debian's blktrace 1.2.0,
btt 2.09) for the same trace, byte for byte: on simulated runs written as
blktrace's binary files, and on real kernels' traces (tests/data/identify,
recorded on 6.1 and 6.12 under qemu) converted to binary by ``stats
--blktrace``. Skipped where blkparse and btt are not installed (CI
installs them)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
needs_btt = pytest.mark.skipif(shutil.which("blkparse") is None or shutil.which("btt") is None,
                               reason="blkparse and btt (Debian's blktrace) are not installed")


def real_btt(dump: Path) -> str:
    """btt -A's standard output on a dump (btt writes its data files into
    the dump's directory)."""
    return subprocess.run(["btt", "-A", "-i", dump.name], cwd=dump.parent, check=True, capture_output=True, text=True,
                          timeout=60).stdout


def blkparse_dump(bt_dir: Path) -> Path:
    """Real blkparse joins the per-device files into one dump."""
    names = sorted(p.name[:-len(".blktrace.0")] for p in bt_dir.glob("*.blktrace.0"))
    args = ["blkparse", "-D", str(bt_dir), "-d", str(bt_dir / "dump.bin"), "-O"]
    for n in names:
        args += ["-i", n]
    subprocess.run(args, check=True, capture_output=True, timeout=60)
    return bt_dir / "dump.bin"


def first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines())):
        if x != y:
            return f"line {i + 1}:\n real: {x!r}\n ours: {y!r}"
    return f"lengths {len(a.splitlines())} and {len(b.splitlines())} lines"


SCENARIOS = [ROOT / "validate" / "scenarios" / f"{name}.toml" for name in
             ("raid10-n2", "plug-merge-deadline", "dm-stripe", "split-write-max-sectors", "partition-read")]
SCENARIOS += [ROOT / "python" / "blkstack" / "scenarios" / f"{name}.toml" for name in
              ("plug-order", "zoned-split-order", "raid5-recursive-split")]
SCENARIOS += [ROOT / "examples" / "dd-read-split.toml"]


@needs_btt
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda p: p.stem)
def test_btt_of_a_simulated_run_is_real_btts(tmp_path, scenario):
    # md (9,x), virtio (254,x), sda (8,x), nvme, dm, plugs and merges,
    # splits, partitions' remaps, overlapping writes of competing fio jobs
    # (plug-order: a Q at a pending Q's sector replaces it in btt's tree),
    # a split bio's Q above its pieces (zoned-split-order: btt's tree walk
    # misses pieces under it): each scenario's run dumped as one stream of
    # blktrace records
    # (a simulation has events of several disks at the same nanosecond,
    # whose order blkparse's join of per-disk files would change), read by
    # real btt, and blkstack's own report of the same run.
    dump = tmp_path / "run.bin"
    proc = run_cli("run", scenario, "--blktrace-dump", dump, "--btt",
                   "--json", tmp_path / "s.json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    ours = json.loads((tmp_path / "s.json").read_text())["reports"]["btt"]
    real = real_btt(dump)
    assert ours == real, first_difference(real, ours)


@needs_btt
@pytest.mark.parametrize("trace", ["raid10-f2-6.12.txt", "raid5-big-read-6.1.txt", "plug-order-virtio-6.12.txt"])
def test_btt_of_a_real_kernels_trace_is_real_btts(tmp_path, trace):
    # A real kernel's ftrace text, written as blktrace files per device by
    # stats --blktrace and joined by real blkparse (a real trace has no two
    # events at the same nanosecond): real btt on those and blkstack's
    # --btt on the text agree.
    bt = tmp_path / "bt"
    bt.mkdir()
    proc = run_cli("stats", ROOT / "tests" / "data" / "identify" / trace, "--btt", "--blktrace", bt,
                   "--json", tmp_path / "s.json", "--quiet")
    assert proc.returncode == 0, proc.stderr
    ours = json.loads((tmp_path / "s.json").read_text())["reports"]["btt"]
    real = real_btt(blkparse_dump(bt))
    assert ours == real, first_difference(real, ours)


def test_stats_blktrace_needs_a_directory(tmp_path):
    proc = run_cli("stats", ROOT / "tests" / "data" / "identify" / "raid10-f2-6.12.txt", "--blktrace",
                   tmp_path / "nope")
    assert proc.returncode == 2 and "not a directory" in proc.stderr
