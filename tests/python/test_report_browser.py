"""``blkstack report``'s timeline, driven in headless Chromium (Selenium with
Debian's chromium and chromium-driver).

The page must load offline (no request leaves it, no console message), a
wheel or button zoom must narrow the visible time range, a drag must pan
it, hovering a point must show its request, and the device picker must
switch the charts to the device chosen. The tests skip when Selenium,
chromium or chromedriver is missing, except in CI (CI=true), where
.ci/run installs them and the tests must run.

Set BLKSTACK_SCREENSHOTS=DIR to keep the screenshots taken along the way.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import run_cli

SCENARIOS = Path(__file__).resolve().parent.parent.parent / "python" / "blkstack" / "scenarios"


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true but {what} is missing: .ci/run should have installed it")
    pytest.skip(f"{what} is not installed")


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium (pip install selenium)")
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser") if shutil.which(n)), None)
    driver_path = shutil.which("chromedriver")
    if not binary:
        _missing("chromium (apt-get install chromium)")
    if not driver_path:
        _missing("chromedriver (apt-get install chromium-driver)")
    opts = webdriver.ChromeOptions()
    opts.binary_location = binary
    profile = tmp_path_factory.mktemp("chromium-profile")
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--window-size=1400,1800",
                f"--user-data-dir={profile}",
                # Offline: any request that tried to leave the page would fail.
                "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=opts)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def array_report(tmp_path_factory):
    """The seed raid5 array (md0 over eight disks), 20 reads of 4480 KiB."""
    d = tmp_path_factory.mktemp("array")
    proc = run_cli("report", SCENARIOS / "raid5-recursive-split.toml", "--set", "workload.count=20",
                   "--out", d / "r.html", "-q")
    assert proc.returncode == 0, proc.stderr
    return d / "r.html"


def shot(driver, name: str) -> None:
    keep = os.environ.get("BLKSTACK_SCREENSHOTS")
    if keep:
        os.makedirs(keep, exist_ok=True)
        driver.save_screenshot(os.path.join(keep, name))


def visible_range(driver) -> tuple:
    el = driver.find_element("id", "range")
    return float(el.get_attribute("data-t0")), float(el.get_attribute("data-t1"))


def captions(driver) -> list:
    return [e.text for e in driver.find_elements("css selector", "#charts figcaption")]


def test_report_loads_offline_with_its_charts(browser, array_report):
    browser.get(array_report.as_uri())
    # No console message (a CSP refusal, a script error, a failed load)
    # and no resource fetched: the page is all there is.
    assert browser.get_log("browser") == []
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0
    # The picker starts on the array with its members; four charts: the
    # array's bios, the members' requests, throughput, seeks/s, depth.
    picker = browser.find_element("id", "view")
    assert picker.find_element("css selector", "option:checked").text == "md0 with its 8 members"
    caps = captions(browser)
    assert caps[0].startswith("md0: bios queued by start sector")
    assert caps[1].startswith("members of md0: requests by start sector")
    assert any(c.startswith("throughput") for c in caps) and any(c.startswith("seeks per second") for c in caps)
    # The summary comes first and shows md0 above its members.
    rows = [r.text.split()[0] for r in browser.find_elements("css selector", "#summary ~ div table tr")[1:10]]
    assert rows == ["md0", "sda", "sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh"]
    t0, t1 = visible_range(browser)
    assert t0 == 0 and t1 > 0
    shot(browser, "1-array.png")


def test_zoom_narrows_the_visible_time_range_and_drag_pans_it(browser, array_report):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin

    browser.get(array_report.as_uri())
    t0, t1 = visible_range(browser)
    svg = browser.find_elements("css selector", "#charts svg")[2]  # throughput
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", svg)
    # Three wheel steps towards the user, over the chart: each shows 0.8
    # of the span around the pointer.
    for _ in range(3):
        ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(svg), 0, -100).perform()
    z0, z1 = visible_range(browser)
    assert z1 - z0 == pytest.approx((t1 - t0) * 0.8 ** 3, rel=1e-6)
    assert t0 <= z0 < z1 <= t1
    shot(browser, "2-zoomed.png")
    # Dragging left by a quarter of the plot's width moves later in time
    # by about a quarter of the span, which stays the same.
    width = svg.size["width"]
    ActionChains(browser).move_to_element(svg).click_and_hold().move_by_offset(-int(width * 0.8 * 0.25), 0) \
        .release().perform()
    p0, p1 = visible_range(browser)
    assert p1 - p0 == pytest.approx(z1 - z0, rel=1e-6)
    assert p0 > z0
    # The buttons: zoom in halves the span, "whole run" restores it.
    browser.find_element("id", "zoom-in").click()
    b0, b1 = visible_range(browser)
    assert b1 - b0 == pytest.approx((p1 - p0) / 2, rel=1e-6)
    browser.find_element("id", "zoom-reset").click()
    assert visible_range(browser) == (t0, t1)


def test_hovering_a_point_shows_its_request(browser, array_report):
    from selenium.webdriver.common.action_chains import ActionChains

    browser.get(array_report.as_uri())
    svg = browser.find_elements("css selector", "#charts svg")[1]  # the members' requests
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", svg)
    # The first point drawn: its viewBox coordinates, as offsets from the
    # element's centre in CSS pixels.
    dx, dy = browser.execute_script("""
        const svg = arguments[0], path = svg.querySelector('g path');
        const m = /M([0-9.]+) ([0-9.]+)/.exec(path.getAttribute('d'));
        const box = svg.getBoundingClientRect(), vb = svg.viewBox.baseVal;
        return [m[1] * box.width / vb.width - box.width / 2, m[2] * box.height / vb.height - box.height / 2];
    """, svg)
    ActionChains(browser).move_to_element_with_offset(svg, int(dx), int(dy)).perform()
    tip = browser.find_element("id", "tip")
    assert tip.is_displayed()
    assert "sector" in tip.text and "KiB" in tip.text and tip.text.startswith("sd")
    shot(browser, "3-hover.png")


def test_device_picker_switches_devices(browser, array_report):
    from selenium.webdriver.support.ui import Select

    browser.get(array_report.as_uri())
    picker = Select(browser.find_element("id", "view"))
    names = [o.text for o in picker.options]
    assert names[:2] == ["md0 with its 8 members", "md0"] and "sdc" in names
    picker.select_by_visible_text("sdc")
    caps = captions(browser)
    assert caps[0].startswith("sdc: requests issued by start sector")
    assert "members of md0" not in " ".join(caps)
    assert browser.find_element("id", "view-note").text.startswith("sdc:")
    # One device: its LBA chart is coloured by operation (all reads here).
    legend = [t.text for t in browser.find_elements("css selector", "#charts svg")[0]
              .find_elements("css selector", "text.legend")]
    assert legend == ["read"]
    shot(browser, "4-sdc.png")
    picker.select_by_visible_text("md0")
    assert captions(browser)[0].startswith("md0: bios queued by start sector")
    assert browser.get_log("browser") == []
