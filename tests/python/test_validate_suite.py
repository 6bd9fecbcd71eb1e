"""The validation suite: every scenario of validate/scenarios/ run on real
Debian kernels under qemu and compared with blkstack (docs/validation.md).

Opt-in, since it boots virtual machines and downloads kernels on first use:

    make validate          # the full suite, 5.10, 6.1, 6.12 and 7.2 (BLKSTACK_VALIDATE=full)
    make validate-ci       # the CI subset (BLKSTACK_VALIDATE=ci)

Each run must meet its scenario's ``# expect`` line: ``exact``, or the
stated percentage of a documented known difference. A result better than
its expectation passes too, and is reported so the line can be updated.
"""

from __future__ import annotations

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.path.join(ROOT, "validate", "scenarios")
MODE = os.environ.get("BLKSTACK_VALIDATE", "")
KERNELS = ("5.10", "6.1", "6.12", "7.2")

# What CI runs (under 15 minutes with setup on a fresh machine): small,
# quick scenarios that hold the fixed differences in place on 6.1 —
# REQ_SYNC of direct reads (split-max-sectors, with a partition remap in
# partition-read), blkdev_write_iter's plug (dm-stripe), raid5d's batched
# member writes (raid5-full-stripe-write), the flush machinery
# (split-write-max-sectors) — and dm-stripe on 6.12, whose chunk_sectors
# splits must not merge, so that a 6.12 guest is built and booted too.
CI_SUBSET = [
    ("split-max-sectors.toml", "6.1"),
    ("partition-read.toml", "6.1"),
    ("dm-stripe.toml", "6.1"),
    ("raid5-full-stripe-write.toml", "6.1"),
    ("split-write-max-sectors.toml", "6.1"),
    ("dm-stripe.toml", "6.12"),
]
# A guest that hangs fails its run after this long (a run takes 15-40 s).
TIMEOUT_S = float(os.environ.get("BLKSTACK_VALIDATE_TIMEOUT", "300" if MODE == "ci" else "900"))


def _kernels():
    """The kernels of a full run: all four, or those BLKSTACK_VALIDATE_KERNELS names."""
    return [k for k in os.environ.get("BLKSTACK_VALIDATE_KERNELS", " ".join(KERNELS)).split() if k]


def _runs():
    if MODE == "ci":
        return CI_SUBSET
    names = sorted(f for f in os.listdir(SUITE) if f.endswith(".toml"))
    return [(n, k) for n in names for k in _kernels()]


pytestmark = pytest.mark.skipif(
    MODE not in ("ci", "full"),
    reason="boots real kernels under qemu: set BLKSTACK_VALIDATE=ci or full (make validate-ci, make validate)")


@pytest.mark.parametrize("name,kernel", _runs() if MODE in ("ci", "full") else [("-", "-")])
def test_scenario_meets_its_expectation(name, kernel):
    from blkstack.validate import validate
    v = validate(os.path.join(SUITE, name), kernel, timeout=TIMEOUT_S,
                 out_dir=os.environ.get("BLKSTACK_VALIDATE_OUT") and os.path.join(
                     os.environ["BLKSTACK_VALIDATE_OUT"], f"{name[:-5]}-{kernel}"),
                 progress=lambda m: print(f"blkstack: {m}", flush=True))
    print(v.text())
    assert v.expectation is not None, f"{name} states no '# expect' line for {kernel}"
    if v.match_percent > v.expectation.percent + 0.05:
        print(f"{name} on {kernel}: {v.match_percent:.1f}% is better than the expected {v.expectation}: "
              "update its '# expect' line")
    assert v.meets_expectation, (f"{name} on {kernel}: {v.match_percent:.1f}% of requests match; "
                                 f"expected {v.expectation}\n{v.text()}")


# Randomized differential testing (docs/validation.md): in CI the first
# four scenarios of seed 1 in one 6.12 boot (sata, virtio and nvme disks, an md array, dd;
# no fio, so CI downloads no tools); `make validate` runs 16 per kernel.
RANDOM_RUNS = {"ci": [("6.12", 4)], "full": [(k, 16) for k in _kernels()]}


@pytest.mark.parametrize("kernel,count", RANDOM_RUNS.get(MODE, [("-", 0)]))
def test_random_scenarios_match_per_device(kernel, count, tmp_path):
    from blkstack.validate import default_cache
    from blkstack.validate.randomized import random_validate
    r = random_validate(count, 1, kernel, default_cache(), str(tmp_path / "runs"), str(tmp_path / "found"),
                        lambda m: print(f"blkstack: {m}", flush=True), timeout=TIMEOUT_S, shrink=False)
    print(r.text())
    f = r.figures()
    assert f["errors"] == 0, r.text()
    assert f["exact_scenarios"] == f["scenarios"], r.text()
