"""The DataFrame API, used as a notebook would: run, then look at tables.

The scenario is conftest's TINY: four 1 MiB O_DIRECT reads from a SATA disk
(mq-deadline) with max_sectors_kb 128, so each read is one bio split seven
times into eight 256-sector requests: 4 Q, 28 X, 32 G, I, D and C.
"""

import pandas as pd
import pytest

import blkstack


@pytest.fixture
def result(tiny):
    return blkstack.run(tiny)


def test_events_columns_and_dtypes(result):
    ev = result.events
    assert list(ev.columns) == ["time_ns", "device", "action", "rwbs", "sector", "nr_sectors", "bytes",
                                "pid", "comm", "error", "arg", "from_device"]
    assert ev["time_ns"].dtype == "uint64"
    assert ev["sector"].dtype == "uint64"
    assert ev["nr_sectors"].dtype == "uint32"
    for col in ("device", "action", "rwbs", "comm", "from_device"):
        assert isinstance(ev[col].dtype, pd.CategoricalDtype), col
    counts = ev["action"].value_counts()
    assert (counts["Q"], counts["X"], counts["G"], counts["I"], counts["D"], counts["C"]) == (4, 28, 32, 32, 32, 32)
    # The splits' 'arg' is the remainder's sector: 256, 512, ... within each read.
    assert list(ev[ev["action"] == "X"]["arg"][:7]) == [256 * i for i in range(1, 8)]
    # dd's 1 MiB O_DIRECT reads take __blkdev_direct_IO_simple, whose
    # submit_bio_wait adds REQ_SYNC: "RS".
    q = ev[ev["action"] == "Q"]
    assert set(q["comm"]) == {"dd"} and set(q["rwbs"]) == {"RS"}


def test_requests_match_the_csv_layout(result):
    rq = result.requests
    assert list(rq.columns) == ["device", "seq", "time_ns", "rwbs", "sector", "nr_sectors"]
    assert rq["seq"].dtype == "int64"
    assert list(rq["seq"]) == list(range(32))
    assert list(rq["sector"]) == [256 * i for i in range(32)]
    assert set(rq["nr_sectors"]) == {256}


def test_accounting_tables(result):
    ds = result.diskstats.set_index("device")
    assert ds.loc["sda", "reads"] == 32
    assert ds.loc["sda", "sectors_read"] == 8192
    assert ds["reads"].dtype == "uint64"
    io = result.iostat.set_index("device")
    # 32 reads of 256 sectors = 128 KiB each.
    assert io.loc["sda", "rareq-sz"] == pytest.approx(128.0)
    lat = result.latency
    assert list(lat.columns) == ["device", "stage", "min_s", "avg_s", "max_s", "n"]
    d2c = lat[(lat["device"] == "sda") & (lat["stage"] == "D2C")].iloc[0]
    assert d2c["n"] == 32 and d2c["min_s"] <= d2c["avg_s"] <= d2c["max_s"]


def test_result_reads_like_the_summary(result):
    assert result["devices"]["sda"]["requests"] == 32


def test_overrides_as_keywords_and_compare(tiny):
    r = blkstack.run(tiny, disks__sda__queue__max_sectors_kb=64, events=False)
    assert r["devices"]["sda"]["requests"] == 64
    table = blkstack.compare(tiny, kernels=["6.1", "7.2"])
    assert list(table["run"]) == ["6.1", "7.2"]
    # 7.2's larger default cap does not matter: max_sectors_kb is set to 128.
    assert list(table["requests"]) == [32, 32]
    assert table.loc[0, "mean_request_kib"] == pytest.approx(128.0)


def test_load_validates_without_running(tiny):
    s = blkstack.load(tiny)
    assert s.info["devices"]["sda"]["limits"]["max_sectors_kb"] == 128
    bad = tiny.parent / "bad.toml"
    bad.write_text(tiny.read_text().replace("max_sectors_kb = 128", "max_sectors_kb = \"x\""))
    with pytest.raises(blkstack.ScenarioError, match=r"bad.toml:\d+: disks.sda.queue.max_sectors_kb"):
        blkstack.load(bad)
