"""Time bins of the report's timeline (blkstack.timebins, blkstack.report_data):
every figure worked out by hand from the requests given."""

from __future__ import annotations

import numpy as np
import pytest

from blkstack.report_data import GRID, stack_groups, thin_cells
from blkstack.timebins import depth_bins, pair_by_sector, seek_flags, spread_bytes


def test_a_steady_stream_reads_steady_at_any_bin_width():
    # Ten 4096-byte requests back to back, each issued at k ms and
    # completed at k+1 ms: the device moves 4096 bytes every millisecond.
    # Bins of 0.7 ms each hold 0.7 * 4096 = 2867.2 bytes. Counting bytes
    # at completions instead would give 4096, 0, 4096, 4096, 0, ... (the
    # completions at 1, 2, 3 ... ms fall 1 or 0 to a bin): aliasing.
    start = np.arange(10.0)
    edges = np.linspace(0.0, 7.0, 11)
    got = spread_bytes(start, start + 1.0, np.full(10, 4096.0), edges)
    assert got == pytest.approx(np.full(10, 2867.2))
    naive, _ = np.histogram(start + 1.0, bins=edges, weights=np.full(10, 4096.0))
    assert sorted(set(naive)) == [0.0, 4096.0]


def test_overlapping_requests_add_and_bytes_are_conserved():
    # [0, 2] and [1, 3] ms, 2000 bytes each (1000 bytes/ms): bins of 1 ms
    # hold 1000, 1000 + 1000, 1000; a request with no duration counts at
    # its completion (500 bytes at 2.5 ms); the total is every byte.
    start = np.array([0.0, 1.0, 2.5])
    end = np.array([2.0, 3.0, 2.5])
    got = spread_bytes(start, end, np.array([2000.0, 2000.0, 500.0]), np.array([0.0, 1.0, 2.0, 3.0]))
    assert list(got) == pytest.approx([1000.0, 2000.0, 1500.0])
    assert got.sum() == pytest.approx(4500.0)


def test_depth_bins_least_most_and_mean():
    # Issues at 0 and 1, completions at 2 and 3: in flight 1 on [0, 1),
    # 2 on [1, 2), 1 on [2, 3), 0 after.
    d = depth_bins(np.array([0.0, 1.0]), np.array([2.0, 3.0]), np.array([0.0, 1.0, 2.0, 3.0, 4.0]))
    assert list(d["lo"]) == [1, 2, 1, 0] and list(d["hi"]) == [1, 2, 1, 0]
    assert list(d["mean"]) == pytest.approx([1.0, 2.0, 1.0, 0.0])
    # One bin over [0, 4): least 0, most 2, mean (1 + 2 + 1 + 0) / 4 = 1.
    d = depth_bins(np.array([0.0, 1.0]), np.array([2.0, 3.0]), np.array([0.0, 4.0]))
    assert (d["lo"][0], d["hi"][0], d["mean"][0]) == (0, 2, pytest.approx(1.0))


def test_a_completion_frees_its_tag_before_an_issue_at_the_same_time():
    # Issues at 0 and 1, completions at 1 and 2: at 1 the completion goes
    # first, so no more than one request is ever in flight.
    d = depth_bins(np.array([0.0, 1.0]), np.array([1.0, 2.0]), np.array([0.0, 3.0]))
    assert d["hi"][0] == 1 and d["mean"][0] == pytest.approx(2.0 / 3.0)


def test_a_trace_that_starts_with_requests_in_flight_never_goes_below_zero():
    # Completions at 1 and 2 before any issue (at 3), one more at 4: two
    # were in flight when the trace began. In flight: 2 on [0, 1), 1 on
    # [1, 2), 0 on [2, 3), 1 on [3, 4); mean (2 + 1 + 0 + 1) / 4 = 1.
    d = depth_bins(np.array([3.0]), np.array([1.0, 2.0, 4.0]), np.array([0.0, 4.0]))
    assert (d["lo"][0], d["hi"][0], d["mean"][0]) == (0, 2, pytest.approx(1.0))


def test_seeks_are_requests_not_starting_where_the_last_ended():
    # 0+8, 8+8 (contiguous), 100+8 (seek), 108+8, 0+8 (seek back).
    flags = seek_flags(np.array([0, 8, 100, 108, 0]), np.array([8, 8, 8, 8, 8]))
    assert list(flags) == [False, False, True, False, True]


def test_issues_pair_with_completions_in_order_per_sector():
    # Issues: sector 0 at 0 us, 8 at 1, 0 again at 2. Completions at 8,
    # 0, 0, 16: the first completion at 0 pairs with the first issue at 0.
    got = pair_by_sector(np.array([0, 8, 0]), np.array([0.0, 1.0, 2.0]), np.array([8, 0, 0, 16]))
    assert list(got[:3]) == [1.0, 0.0, 2.0] and np.isnan(got[3])


def test_thinning_keeps_one_point_per_cell_within_the_budget():
    # 100,000 requests along a straight line cross at most GRID[0] + GRID[1]
    # cells of the picture; the first in each is kept, in time order.
    t = np.linspace(0.0, 1.0, 100_000)
    keep = thin_cells(t, t * 1e6, 1.0, budget=10_000)
    assert len(keep) <= GRID[0] + GRID[1] and keep[0] == 0 and (np.diff(keep) > 0).all()
    assert len(thin_cells(t, t * 1e6, 1.0, budget=100)) <= 100


def test_stack_groups_name_each_array_and_its_member_disks():
    summary = {"devices": {
        "sda": {}, "sda1": {"partition_of": "sda"}, "sdb": {}, "sdb1": {"partition_of": "sdb"}, "sdc": {},
        "md0": {"md": {"members": [{"device": "sda1"}, {"device": "sdb1"}]}},
        "dm-0": {"dm": {"table": [{"target": "striped", "devices": [{"device": "sdc"}, {"device": "sdb"}]}]}},
    }}
    assert stack_groups(summary) == [("md0", ["sda", "sdb"]), ("dm-0", ["sdc", "sdb"])]
