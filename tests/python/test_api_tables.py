"""The Python API's tables: events kept compactly, requests without the
events table, the tools' column order, labelled comparisons, Arrow and
polars.

The scenario is conftest's TINY: four 1 MiB O_DIRECT reads from a SATA disk
with max_sectors_kb 128, so each read is one bio split seven times into
eight 256-sector requests: 32 requests at sectors 0, 256, ... 7936.
"""

from pathlib import Path

import pytest

import blkstack

DATA = Path(__file__).resolve().parent.parent / "data"
REQUEST_SECTORS = [256 * i for i in range(32)]

# sysstat's iostat -x header (iostat.c write_disk_stat_header), in order.
IOSTAT_HEADER = ("r/s rkB/s rrqm/s %rrqm r_await rareq-sz w/s wkB/s wrqm/s %wrqm w_await wareq-sz "
                 "d/s dkB/s drqm/s %drqm d_await dareq-sz f/s f_await aqu-sz %util").split()


@pytest.fixture
def result(tiny):
    return blkstack.run(tiny)


def test_events_take_a_few_bytes_each(result):
    # Each event is a kind number (1 byte: fewer than 128 kinds), its time
    # step (at most 4 bytes: steps below 134 ms), its sector step on the
    # device (2: within 8192 sectors), its bytes (3: up to 1 MiB) and, for
    # X, the remainder's sector (2): at most 12 bytes, the bound
    # being 32.
    n = len(result.events)
    assert n >= 160  # 4 Q, 28 X, 32 each of G, I, D, C (and plugs)
    assert 0 < result.stored_bytes <= 12 * n


def test_requests_without_events(tiny, result):
    r = blkstack.run(tiny, events=False)
    rq = r.requests
    assert list(rq.columns) == ["device", "seq", "time_ns", "rwbs", "sector", "nr_sectors"]
    assert list(rq["sector"]) == REQUEST_SECTORS
    assert list(rq["seq"]) == list(range(32))
    assert set(rq["nr_sectors"]) == {256}
    # The same table as decoded from a run keeping every event (whose rwbs
    # categories also name the other events' rwbs).
    plain = {"device": str, "rwbs": str}
    assert rq.astype(plain).equals(result.requests.astype(plain))
    with pytest.raises(ValueError, match="without events"):
        r.events


def test_trace_output_keeps_the_events(tiny, tmp_path):
    # Writing a trace no longer drops the events table.
    r = blkstack.run(tiny, trace=tmp_path / "t.txt")
    assert (r.events["action"] == "D").sum() == 32
    assert (tmp_path / "t.txt").stat().st_size > 0


def test_load_trace_requests_without_events():
    r = blkstack.load_trace(DATA / "blkparse-sda-sdb.txt", events=False)
    assert list(r.requests["sector"]) == [2048, 2176, 10000, 20000, 0]
    with pytest.raises(ValueError, match="without events"):
        r.events


def test_iostat_and_btt_columns_in_the_tools_order(result):
    assert list(result.iostat.columns) == ["device", "start_s", "end_s", *IOSTAT_HEADER]
    # btt -A prints Q2Q Q2G G2I Q2M I2D M2D D2C Q2C; this run has no merges.
    lat = result.latency
    assert list(lat[lat["device"] == "sda"]["stage"]) == ["Q2Q", "Q2G", "G2I", "I2D", "D2C", "Q2C"]


def test_compare_labels(tiny):
    table = blkstack.compare(tiny, kernels=["6.1", "7.2"], labels=["old", "new"], jobs=2)
    assert list(table["run"]) == ["old", "new"]
    assert list(table.columns[:2]) == ["run", "device"]
    assert list(table.columns[2:2 + len(IOSTAT_HEADER)]) == IOSTAT_HEADER
    # max_sectors_kb is set to 128 under both kernels: 32 requests each.
    assert list(table["requests"]) == [32, 32]
    # One run at a time gives the same table.
    assert table.equals(blkstack.compare(tiny, kernels=["6.1", "7.2"], labels=["old", "new"], jobs=1))
    with pytest.raises(ValueError, match="labels: 1 given for 2 runs"):
        blkstack.compare(tiny, kernels=["6.1", "7.2"], labels=["one"])


def test_arrow_tables(result):
    import pyarrow as pa

    events = result.to_arrow()
    frame = result.events
    assert events.column_names == list(frame.columns)
    assert events.schema.field("time_ns").type == pa.uint64()
    assert pa.types.is_dictionary(events.schema.field("action").type)
    assert events["action"].to_pylist() == list(frame["action"].astype(str))
    assert events["sector"].to_pylist() == list(frame["sector"])
    remaps = [d for d in events["from_device"].to_pylist() if d is not None]
    assert remaps == []  # no remaps on a single disk
    rq = result.to_arrow("requests")
    assert rq["sector"].to_pylist() == REQUEST_SECTORS
    assert rq["seq"].type == pa.int64()
    assert result.to_arrow("iostat").column_names[:4] == ["device", "start_s", "end_s", "r/s"]
    with pytest.raises(ValueError, match="no such table"):
        result.to_arrow("nope")


def test_polars_tables(result):
    pytest.importorskip("polars")
    rq = result.to_polars("requests")
    assert rq["sector"].to_list() == REQUEST_SECTORS
    assert rq.height == 32
    assert result.to_polars().height == len(result.events)
