"""``blkstack report``: one self-contained HTML file, checked in headless Chromium.

The Chromium test runs wherever Chromium is installed; it skips only when
it is not and the tests are not running in CI (CI=true installs Debian's
``chromium`` package in .ci/run, and there the test must run)."""

from __future__ import annotations

import base64
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
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
    # href, no url(), no script; a policy that forbids any other source.
    refs = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert refs and all(r.startswith(("data:", "#")) for r in refs), [r[:40] for r in refs]
    assert "<script" not in html and "url(" not in html
    assert "default-src 'none'; img-src data:" in html
    # Two runs of one disk: five plots each, five overlays.
    images = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', html)
    assert len(images) == 15
    for data in images:
        assert ET.fromstring(base64.b64decode(data)).tag.endswith("svg")
    for needle in ("Comparison", "iostat -x", "btt stage latencies", "Queue limits", "Device merge information",
                   "max_sectors_kb", "sda: requests by start sector over time", "[workload]"):
        assert needle in html, needle


def test_report_renders_in_chromium_without_console_errors(report, tmp_path):
    dom, console = render(report, tmp_path / "profile")
    assert console == []
    assert "<h1>blkstack report: tiny.toml</h1>" in dom
    assert dom.count("<img ") == 15 and dom.count("<table>") >= 8


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
    proc = run_cli("report", DATA / "ftrace-6.12-sda.txt", "--format", "png", "--out", tmp_path / "t.html", "-q")
    assert proc.returncode == 0, proc.stderr
    # The trace's bad line is reported as by 'blkstack stats'.
    assert ":36: " in proc.stderr
    html = (tmp_path / "t.html").read_text()
    assert html.count('src="data:image/png;base64,') == 5
    assert "is a trace: no scenario" in html


def test_report_errors(tiny, tmp_path):
    assert_one_error_line(run_cli("report", tiny), "--out FILE is required")
    assert_one_error_line(run_cli("report", tiny, "--out", tmp_path / "no" / "r.html"), "does not exist")
    assert_one_error_line(run_cli("report", tiny, "--out", tiny), "would overwrite the input")
    assert_one_error_line(run_cli("report", tiny, "--kernel", "2.6", "--out", tmp_path / "r.html"), "invalid choice")
    assert not (tmp_path / "r.html").exists()
