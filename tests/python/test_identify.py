"""blkstack identify on traces from real kernels.

The fixtures in tests/data/identify/ are the block_* tracepoint text that
`blkstack validate` recorded on Debian's 6.1.192 and 6.12.117 kernels under
qemu, with the scenario each ran:

* plug-order-virtio: eight 4 KiB writes to scattered sectors in one
  io_submit call on a virtio disk (scheduler none). The call runs in a plug.
  6.1 adds each request at the plug list's head (blk_add_rq_to_plug before
  e70c301faece) and its virtio ->queue_rqs also reverses, so the disk sees
  2944, 2816, ... 2048: newest first (the 6.1 trace shows exactly that);
  6.12.117 carries e70c301faece (tail add): 2048 ... 2944, in order.
* raid5-big-read: 2 MiB O_DIRECT reads of a 4-disk raid5 (64 KiB chunks),
  above md0's 1 MiB max_sectors; the order the members see the chunk reads
  differs between 6.1 and 6.12 (mq-deadline's next request, plug order) and
  7.2 (split remainders at the head of current->bio_list, stripe-sized
  chunk_sectors).

* raid10-f2 (validate/scenarios/raid10-f2.toml): reads, writes and
  discards of a 4-disk raid10 in the far layout. On the 6.1 trace, 6.1 (and
  5.13) match every request and the 6.x.y-and-later profiles do not
  (mq-deadline's next request, dd_next; raid10's chunk_sectors); the
  replay of the 6.12 trace matches under 6.1 as well as 6.12: the 6.12
  guest's requests do not separate them.

5.8, 5.13 and 6.1 share every switch these workloads touch, as do 6.12 and
6.15 (and, for the plug order, 7.2): a trace cannot tell those apart, and
identify says so.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli

from blkstack.identify import identify

DATA = Path(__file__).resolve().parent.parent / "data" / "identify"


# 5.10 adds at the plug's tail and keeps that order at flush (one queue: no
# sort), as 6.12 does; 5.8-5.13 have no raid5 max_sectors cap, so a 6.1
# raid5 trace of large reads is 6.1's alone.
@pytest.mark.parametrize("name, kernel, family", [
    ("plug-order-virtio", "6.1", ["5.8", "5.13", "6.1"]),
    ("plug-order-virtio", "6.12", ["5.10", "6.12", "6.15", "7.2"]),
    ("raid5-big-read", "6.1", ["6.1"]),
    ("raid5-big-read", "6.12", ["6.12", "6.15"]),
    ("raid10-f2", "6.1", ["5.13", "6.1"]),
])
def test_identify_names_the_kernel_family_of_a_real_trace(name, kernel, family):
    found = identify(DATA / f"{name}-{kernel}.txt", DATA / f"{name}.toml", switches=False, workers=2)
    assert found.best_profiles == family
    assert family in found.groups
    assert kernel in found.best_profiles


def test_identify_says_when_a_trace_cannot_tell_profiles_apart():
    found = identify(DATA / "raid10-f2-6.12.txt", DATA / "raid10-f2.toml", switches=False, workers=1)
    assert found.best_profiles == ["5.13", "6.1", "6.12", "6.15", "7.2"]
    assert found.profiles[0].match_percent == 100.0


def test_identify_finds_the_switch_that_explains_the_plug_order():
    # Under 6.12 with plug_add=head (the pre-e70c301faece list order), the
    # 6.1 trace's reversed order is reproduced: that switch is the one this
    # workload shows, and it is the only one.
    found = identify(DATA / "plug-order-virtio-6.1.txt", DATA / "plug-order-virtio.toml",
                     kernels=["6.1", "6.12"], workers=2)
    assert found.relevant_switches == ["behaviour.plug_add"]
    ranked = [(c.profile, c.switches, c.match_percent) for c in found.ranking]
    assert ranked[0] == ("6.1", "-", 100.0)
    assert ("6.12", "behaviour.plug_add=head", 100.0) in ranked
    # As it is, 6.12 issues the 8 writes in the opposite order: of a
    # sequence and its reverse only one element lines up in order (the
    # longest common subsequence), 1 of 8 = 12.5%.
    assert found.profiles[-1].profile == "6.12"
    assert found.profiles[-1].match_percent == 12.5


def test_cli_identify_prints_the_ranking(tmp_path):
    proc = run_cli("identify", DATA / "plug-order-virtio-6.12.txt", "--stack", DATA / "plug-order-virtio.toml",
                   "--no-switches", "--workers", "1")
    assert proc.returncode == 0, proc.stderr
    assert "best profiles: 5.10, 6.12, 6.15, 7.2" in proc.stdout
    assert "cannot be told apart by this workload (identical issued requests): 5.8 = 5.13 = 6.1" in proc.stdout
