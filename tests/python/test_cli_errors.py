"""How ``blkstack.cli.main`` ends on interrupts and unexpected failures.

These call main() in-process with the engine call replaced, since a real
Ctrl-C or engine bug cannot be produced on demand.
"""

from __future__ import annotations

import pytest

from blkstack import ScenarioError, cli


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch):
    monkeypatch.delenv("BLKSTACK_DEBUG", raising=False)


def _fail_with(monkeypatch, exc: BaseException) -> None:
    def simulate(*_args, **_kwargs):
        raise exc

    monkeypatch.setattr(cli.common, "simulate", simulate)


def test_keyboard_interrupt_exits_130_quietly(monkeypatch, tiny, capsys):
    _fail_with(monkeypatch, KeyboardInterrupt())
    assert cli.main(["run", str(tiny)]) == 130
    out, err = capsys.readouterr()
    assert out == "" and err == ""


class FakePanic(BaseException):
    """Like pyo3's PanicException, which is not an Exception."""


@pytest.mark.parametrize("exc", [RuntimeError("boom\nsecond line"), ValueError(), FakePanic("rust panicked")],
                         ids=["runtime-error", "no-message", "panic"])
def test_internal_error_is_one_line_exit_1(monkeypatch, tiny, capsys, exc):
    _fail_with(monkeypatch, exc)
    assert cli.main(["run", str(tiny)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"blkstack: internal error: {type(exc).__name__}")
    assert "BLKSTACK_DEBUG" in lines[0]


def test_debug_shows_the_traceback(monkeypatch, tiny):
    monkeypatch.setenv("BLKSTACK_DEBUG", "1")
    _fail_with(monkeypatch, RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        cli.main(["run", str(tiny)])


def test_scenario_error_with_newlines_is_still_one_line(monkeypatch, tiny, capsys):
    _fail_with(monkeypatch, ScenarioError("x.toml:3: disks.sda.size: bad\n  detail"))
    assert cli.main(["run", str(tiny)]) == 2
    _out, err = capsys.readouterr()
    assert err == "blkstack: error: x.toml:3: disks.sda.size: bad detail\n"


def test_os_error_from_the_engine_is_bad_input(monkeypatch, tiny, capsys):
    _fail_with(monkeypatch, PermissionError(13, "Permission denied", "/root/t.trace"))
    assert cli.main(["run", str(tiny)]) == 2
    _out, err = capsys.readouterr()
    assert err == "blkstack: error: /root/t.trace: permission denied\n"


def test_main_returns_0_on_success_and_help(capsys, tiny):
    assert cli.main(["run", str(tiny), "--quiet"]) == 0
    assert cli.main(["run", "--help"]) == 0
    assert "examples:" in capsys.readouterr().out
