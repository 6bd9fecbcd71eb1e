"""``blkstack report``: one self-contained HTML file, checked in headless Chromium.

The Chromium test runs wherever Chromium is installed; it skips only when
it is not and the tests are not running in CI (CI=true installs Debian's
``chromium`` package in .ci/run, and there the test must run)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import assert_one_error_line, run_cli

DATA = Path(__file__).resolve().parent.parent / "data"

# Chromium logs every console message (errors, CSP violations, failed
# loads) as "...:INFO:CONSOLE:LINE] ..." (older builds "CONSOLE(LINE)").
CONSOLE = re.compile(r":CONSOLE[:(]")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true but no chromium: .ci/run should have installed Debian's chromium package")
    pytest.skip("chromium is not installed (apt-get install chromium)")


def render(page: Path, profile: Path) -> tuple:
    """(DOM after load, console lines) of *page* in headless Chromium."""
    proc = subprocess.run(
        [chromium(), "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
         f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180,
        env=dict(os.environ, HOME=str(profile)))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout, [line for line in proc.stderr.splitlines() if CONSOLE.search(line)]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from conftest import TINY
    d = tmp_path_factory.mktemp("report")
    (d / "tiny.toml").write_text(TINY)
    proc = run_cli("report", "tiny.toml", "--kernel", "6.1", "--kernel", "7.2", "--out", "r.html", cwd=d)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "r.html"
    return d / "r.html"


def test_report_is_self_contained(report):
    html = report.read_text()
    # Nothing outside the file: no scheme other than data: in any src or
    # href, no url() but to the page's own ids; a policy that forbids any
    # other source and lets exactly the page's one script run, by its hash.
    refs = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert refs and all(r.startswith(("data:", "#")) for r in refs), [r[:40] for r in refs]
    assert all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", html))
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1 and html.count("<script") == 2  # the script and its JSON data block
    policy = re.search(r'Content-Security-Policy" content="([^"]*)"', html).group(1)
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    assert policy == f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'"
    data = json.loads(re.search(r'<script type="application/json" id="blkstack-data">(.*?)</script>', html,
                                re.S).group(1))
    # Two runs of one disk: its view in each run, and both runs together.
    assert [v["name"] for v in data["views"]] == ["6.1: sda", "7.2: sda", "sda: all runs"]
    for needle in ("Comparison", "iostat -x", "btt stage latencies", "Queue limits", "Device merge information",
                   "max_sectors_kb", "%rrqm", "dareq-sz", "Request sizes", "[workload]"):
        assert needle in html, needle


def test_report_renders_in_chromium_without_console_errors(report, tmp_path):
    dom, console = render(report, tmp_path / "profile")
    assert console == []
    assert "<h1>blkstack report: tiny.toml</h1>" in dom
    # The script drew the first view: LBA, throughput, seeks, in flight.
    assert dom.count("<svg") == 4 and dom.count("<table>") >= 8


def test_console_errors_are_caught(tmp_path):
    # The check above would miss nothing: a page that logs an error, breaks
    # a script and loads from the network is caught three times.
    page = tmp_path / "bad.html"
    page.write_text("<!DOCTYPE html><html><head><meta http-equiv=\"Content-Security-Policy\" "
                    "content=\"default-src 'none'; script-src 'unsafe-inline'\"></head><body>"
                    "<img src=\"http://127.0.0.1:9/x.png\"><script>console.error('boom'); no_such_function()"
                    "</script></body></html>")
    _, console = render(page, tmp_path / "profile")
    assert len(console) == 3, console


def test_report_of_a_trace(tmp_path):
    proc = run_cli("report", DATA / "ftrace-6.12-sda.txt", "--out", tmp_path / "t.html", "-q")
    assert proc.returncode == 0, proc.stderr
    # The trace's bad line is reported as by 'blkstack stats'.
    assert ":36: " in proc.stderr
    html = (tmp_path / "t.html").read_text()
    assert "is a trace: no scenario" in html and "<img" not in html


def test_report_errors(tiny, tmp_path):
    assert_one_error_line(run_cli("report", tiny), "--out FILE is required")
    assert_one_error_line(run_cli("report", tiny, "--out", tmp_path / "no" / "r.html"), "does not exist")
    assert_one_error_line(run_cli("report", tiny, "--out", tiny), "would overwrite the input")
    assert_one_error_line(run_cli("report", tiny, "--kernel", "2.6", "--out", tmp_path / "r.html"), "invalid choice")
    assert not (tmp_path / "r.html").exists()


SCENARIOS = Path(__file__).resolve().parent.parent.parent / "python" / "blkstack" / "scenarios"


def page_data(html: str) -> dict:
    return json.loads(re.search(r'<script type="application/json" id="blkstack-data">(.*?)</script>', html,
                                re.S).group(1))


def test_an_eight_disk_array_is_one_view_first_and_the_file_is_small(tmp_path):
    # The seed raid5 array: md0 over sda..sdh, 200 reads of 4480 KiB
    # (28,000 member requests): the summary lists md0 first with its
    # members under it, the picker starts on md0 with its members, and
    # the whole page stays under 2 MB.
    out = tmp_path / "r.html"
    proc = run_cli("report", SCENARIOS / "raid5-recursive-split.toml", "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert out.stat().st_size < 2_000_000
    summary = html.split('<h2 id="summary">')[1].split("</table>")[0]
    devices = re.findall(r"<tr(?: class=\"array\")?><td>([a-z0-9]+)</td><td>([^<]*)</td>", summary)
    assert devices == [("md0", "array")] + [(f"sd{c}", "member of md0") for c in "abcdefgh"]
    views = [v["name"] for v in page_data(html)["views"]]
    assert views[:3] == ["md0 with its 8 members", "md0", "sda"] and len(views) == 10
    series = page_data(html)["series"]
    assert sum(s["pts"]["total"] for s in series if s["device"] != "md0") == 8 * 1200


def test_report_merge_information_is_btts(tmp_path):
    # tests/data/blkparse-sda-sdb.txt: sda has 3 Qs and 4 Ds; btt's #Q is
    # max(Q, D) = 4 (test_stats works it out), and the report shows what
    # --btt prints: #Q 4, #D 4, not the Q events counted alone.
    proc = run_cli("stats", DATA / "blkparse-sda-sdb.txt", "--btt")
    assert "(  8,  0) |        4        4     1.0 |" in proc.stdout
    out = tmp_path / "r.html"
    assert run_cli("report", DATA / "blkparse-sda-sdb.txt", "--out", out, "-q").returncode == 0
    merge = out.read_text().split("<h3>Device merge information</h3>")[1].split("</table>")[0]
    assert '<td>sda</td><td class="n">4</td><td class="n">4</td><td class="n">1.00</td>' in merge


def test_a_device_without_completions_has_no_throughput_or_depth(tmp_path):
    # md0 queued two bios and the trace has no completion for them: its
    # timeline has the points but no throughput or depth (they would show
    # nothing and a count rising for ever), and the summary shows no
    # aqu-sz or %util for it; sda, completed, keeps both.
    trace = tmp_path / "md.txt"
    trace.write_text("  9,0    0        1     0.000000000   500  Q   W 0 + 64 [dd]\n"
                     "  9,0    0        2     0.010000000   500  Q   W 64 + 64 [dd]\n"
                     "  8,0    0        3     0.010000100   500  D   W 0 + 64 [dd]\n"
                     "  8,0    0        4     0.011000000     0  C   W 0 + 64 [0]\n")
    out = tmp_path / "r.html"
    proc = run_cli("report", trace, "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    series = {s["device"]: s for s in page_data(html)["series"]}
    assert series["md0"]["pts"]["total"] == 2 and series["md0"]["tput"] is None and series["md0"]["depth"] is None
    # sda: 64 sectors = 32768 bytes written, spread over D..C (all of it).
    (op, bins), = series["sda"]["tput"]
    assert op == 1 and sum(bins) == pytest.approx(32768, rel=1e-3)
    row = re.search(r"<tr><td>md0</td>(.*?)</tr>", html).group(1)
    assert row.endswith("<td>-</td><td>-</td>")


def test_labels_name_each_input(tmp_path, tiny):
    trace = DATA / "blkparse-sda-sdb.txt"
    out = tmp_path / "r.html"
    proc = run_cli("report", tiny, trace, "--label", "model", "--label", "real machine", "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert "<h3>model: tiny.toml, kernel" in html and "<h3>real machine: trace blkparse-sda-sdb.txt" in html
    views = [v["name"] for v in page_data(html)["views"]]
    assert views[:2] == ["model: sda", "real machine: sda"] and "sda: all runs" in views
    assert_one_error_line(run_cli("report", tiny, trace, "--label", "x", "--out", out),
                          "--label: 1 given for 2 inputs")
    assert_one_error_line(run_cli("report", tiny, trace, "--label", "x", "--label", "x", "--out", out),
                          "--label: two inputs have the same label")


def test_a_scenario_that_is_not_utf8_is_one_error(tmp_path):
    # Found by fuzz/cli_fuzz.py: the report read the scenario's text for
    # its last section before the run and failed with an internal error.
    path = tmp_path / "s.toml"
    path.write_bytes(b"# \x8b\n[disks.sda]\nkind = \"sata\"\n")
    assert_one_error_line(run_cli("report", path, "--out", tmp_path / "r.html"), "s.toml", "UTF-8")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_traces_arrays_come_from_its_remaps(tmp_path):
    # A trace names no arrays; its remaps do: md0 (9,0) remaps to sda
    # (8,0) and sdb (8,16), so md0 and its two members are one view and
    # one group of the summary. sdc's remap from its partition sdc1 (8,33)
    # makes no array (sdc1 has no events of its own).
    trace = tmp_path / "md.txt"
    trace.write_text("""\
  9,0    0        1     0.000000000   500  Q   R 0 + 16 [dd]
  8,0    0        2     0.000001000   500  A   R 2048 + 8 <- (9,0) 0
  8,0    0        3     0.000001000   500  Q   R 2048 + 8 [dd]
  8,0    0        4     0.000002000   500  D   R 2048 + 8 [dd]
  8,16   0        5     0.000001000   500  A   R 2048 + 8 <- (9,0) 8
  8,16   0        6     0.000001000   500  Q   R 2048 + 8 [dd]
  8,16   0        7     0.000002000   500  D   R 2048 + 8 [dd]
  8,32   0        8     0.000003000   500  A   R 4096 + 8 <- (8,33) 0
  8,32   0        9     0.000003000   500  Q   R 4096 + 8 [dd]
  8,32   0       10     0.000004000   500  D   R 4096 + 8 [dd]
  8,0    0       11     0.000100000     0  C   R 2048 + 8 [0]
  8,16   0       12     0.000100000     0  C   R 2048 + 8 [0]
  8,32   0       13     0.000100000     0  C   R 4096 + 8 [0]
  9,0    0       14     0.000101000     0  C   R 0 + 16 [0]
""")
    out = tmp_path / "r.html"
    proc = run_cli("report", trace, "--out", out, "-q")
    assert proc.returncode == 0, proc.stderr
    html = out.read_text()
    assert [v["name"] for v in page_data(html)["views"]] == ["md0 with its 2 members", "md0", "sda", "sdb", "sdc"]
    summary = html.split('<h2 id="summary">')[1].split("</table>")[0]
    assert re.findall(r"<td>([a-z0-9]+)</td><td>([^<]*)</td>", summary) == [
        ("md0", "array"), ("sda", "member of md0"), ("sdb", "member of md0"), ("sdc", "-")]
