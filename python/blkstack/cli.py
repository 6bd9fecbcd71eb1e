"""The ``blkstack`` command-line tool.

Every bad input ends the program with exactly one line on standard error,
``blkstack: error: ...``, and exit status 2. An unexpected failure prints one
line ``blkstack: internal error: ...`` and exits with status 1 (set
``BLKSTACK_DEBUG=1`` to see the traceback instead). Ctrl-C exits with status
130, and a closed output pipe (``blkstack ... | head``) ends it quietly.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import json
import os
import re
import select
import stat
import sys
import tempfile
import textwrap
from typing import Any, Dict, List, NoReturn, Optional, Sequence, TextIO

from blkstack import ScenarioError, __version__, _core
from blkstack._core import CheckError

PROG = "blkstack"
KNOWN_KERNELS = ("6.1", "6.12", "7.2")
EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_CHECK = 3
EXIT_SIGINT = 130
EXIT_SIGPIPE = 141  # what a shell reports for a process killed by SIGPIPE


class UsageError(Exception):
    """Bad input from the user: reported as one ``blkstack: error:`` line."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())


# --------------------------------------------------------------------------
# Formatting helpers
# --------------------------------------------------------------------------


def _fmt_int(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-" if value is None else str(value)
    return f"{int(value):,}"


def _fmt_duration_ns(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    ns = float(value)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3f} {unit}"
    return f"{ns:.0f} ns"


def _fmt_seconds(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return _fmt_duration_ns(float(value) * 1e9)


def _fmt_rate(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    rate = float(value)
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if rate >= scale:
            return f"{rate / scale:.2f} {unit}"
    return f"{rate:.0f}"


def _fmt_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "-"
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return str(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool]) -> List[str]:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, cell in enumerate(cells):
            out.append(cell.rjust(widths[i]) if right[i] else cell.ljust(widths[i]))
        return "  ".join(out).rstrip()

    return [line(headers)] + [line(row) for row in rows]


def format_summary(summary: Dict[str, Any]) -> str:
    """Render a run's summary as a short human-readable table."""
    devices = summary.get("devices") or {}
    headers = ["DEVICE", "KIND", "MAJ:MIN", "BIOS Q", "SPLITS", "REQUESTS",
               "SECT READ", "SECT WRITTEN", "SECT DISCARDED"]
    right = [False, False, False, True, True, True, True, True, True]
    rows = []
    partitions = []
    for name, dev in devices.items():
        if dev.get("partition_of"):
            # A partition's bios are traced and counted on its disk's queue.
            partitions.append(f"{name} is a partition of {dev['partition_of']} starting at sector {dev.get('start')}")
            continue
        sectors = dev.get("sectors") or {}
        rows.append([
            str(name),
            _fmt_value(dev.get("kind")),
            f"{_fmt_value(dev.get('major'))}:{_fmt_value(dev.get('minor'))}",
            _fmt_int(dev.get("bios_queued")),
            _fmt_int(dev.get("splits")),
            _fmt_int(dev.get("requests")),
            _fmt_int(sectors.get("read")),
            _fmt_int(sectors.get("write")),
            _fmt_int(sectors.get("discard")),
        ])
    scenario = _fmt_value(summary.get("scenario"))
    if summary.get("name"):
        scenario = f"{summary['name']} ({scenario})"
    lines = [f"scenario: {scenario}", ""]
    lines += _table(headers, rows, right)
    lines += [f"({p}; its I/O is counted on the disk)" for p in partitions]
    lines.append("")
    lines.append(
        f"profile {_fmt_value(summary.get('profile'))} "
        f"(kernel {_fmt_value(summary.get('kernel'))})  "
        f"simulated {_fmt_duration_ns(summary.get('sim_time_ns'))}  "
        f"wall {_fmt_seconds(summary.get('wall_time_s'))}  "
        f"{_fmt_int(summary.get('bios'))} bios, {_fmt_rate(summary.get('bios_per_s'))} bios/s"
    )
    return "\n".join(lines)


def format_profiles(data: Dict[str, Any]) -> str:
    """Render ``profiles()`` as two tables: profiles, then behaviour switches."""
    profiles = data.get("profiles") or []
    switches = data.get("switches") or []
    names = [str(p.get("name")) for p in profiles]

    # Profiles: name and kernel first, then whatever else the engine reports.
    keys: List[str] = ["name", "kernel"]
    for prof in profiles:
        for key, value in prof.items():
            if key not in keys and not isinstance(value, (list, dict)):
                keys.append(key)
    rows = [[_fmt_value(p.get(k)) for k in keys] for p in profiles]
    lines = ["Kernel profiles (choose one with: blkstack run SCENARIO --kernel NAME)", ""]
    lines += ["  " + l for l in _table([k.upper() for k in keys], rows, [False] * len(keys))]
    if data.get("default"):
        lines += ["", f"  A scenario without a 'kernel' key uses profile {_fmt_value(data['default'])}."]

    lines += ["", "Behaviour switches (value under each profile; override with --set NAME=VALUE)", ""]
    headers = ["SWITCH"] + names
    rows = []
    for sw in switches:
        per = sw.get("per_profile") or {}
        rows.append([str(sw.get("name"))] + [_fmt_value(per.get(n)) for n in names])
    table = _table(headers, rows, [False] * len(headers))
    lines.append("  " + table[0])
    for sw, row_text in zip(switches, table[1:]):
        lines.append("  " + row_text)
        desc = _one_line(sw.get("description") or "")
        values = sw.get("values")
        if values:
            desc = (desc + " " if desc else "") + "Values: " + ", ".join(_fmt_value(v) for v in values) + "."
        if desc:
            lines += textwrap.wrap(desc, width=78, initial_indent="      ", subsequent_indent="      ")
    if not switches:
        lines.append("  (none)")
    return "\n".join(lines)


def _leading_comments(text: str) -> List[str]:
    """The comment block at the top of a scenario file, without the '#'."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("#"):
            break
        body = stripped[1:]
        lines.append(body[1:] if body.startswith(" ") else body)
    return lines


def _bullet(text: str) -> List[str]:
    return textwrap.wrap(text, width=78, initial_indent="  * ", subsequent_indent="    ")


def explain_demo(summary: Dict[str, Any], scenario_text: str = "") -> str:
    """A few lines explaining what the demo run shows."""
    lines: List[str] = []
    about = _leading_comments(scenario_text)
    if about:
        lines += ["", "About this scenario:"] + ["  " + line if line else "" for line in about]
    lines += ["", "What happened:"]
    for name, dev in (summary.get("devices") or {}).items():
        kind = _fmt_value(dev.get("kind"))
        if dev.get("partition_of"):
            parent = dev["partition_of"]
            text = (f"{name} is a partition of {parent}: each bio sent to it is remapped ('A') onto "
                    f"{parent}, shifted by its start sector, and is queued, split and counted there.")
            lines += _bullet(text)
            continue
        limits = dev.get("limits") or {}
        text = f"{name} ({kind}): {_fmt_int(dev.get('bios_queued'))} bios queued ('Q')"
        remaps = dev.get("remaps")
        if isinstance(remaps, int) and remaps > 0:
            text += f", {_fmt_int(remaps)} of them remapped onto it ('A')"
        splits = dev.get("splits")
        if isinstance(splits, int) and splits > 0:
            text += f"; bios larger than its queue limits were split {_fmt_int(splits)} times ('X')"
            if "max_sectors_kb" in limits:
                text += f" (max_sectors_kb = {_fmt_value(limits['max_sectors_kb'])})"
        reqs = dev.get("requests")
        if isinstance(reqs, int):
            text += f"; {_fmt_int(reqs)} requests were issued to the driver ('D')"
        lines += _bullet(text + ".")
    lines += _bullet(
        f"Kernel profile {_fmt_value(summary.get('profile'))} decided the edge cases; "
        "'blkstack profiles' lists every behaviour switch and its value per kernel.")
    lines += [
        "",
        "Try next:",
        "  blkstack demo --kernel 7.2                     # the same run under another kernel",
        "  blkstack scenarios demo --show > my.toml       # copy the scenario, then edit it",
        "  blkstack run my.toml --trace - | head -40      # see every event, blkparse-style",
    ]
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------


def _check_input(path: str) -> None:
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    if os.path.isdir(path):
        raise UsageError(f"{path}: is a directory")
    if not os.access(path, os.R_OK):
        raise UsageError(f"{path}: permission denied")


def _check_output(option: str, path: str) -> None:
    """Refuse an output path that cannot be written, before anything runs."""
    if path == "":
        raise UsageError(f"{option}: empty file name")
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {os.path.dirname(path) or '.'} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: permission denied")


def _same_file(a: str, b: str) -> bool:
    if os.path.abspath(a) == os.path.abspath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _new_file_mode(target: str) -> int:
    try:
        return os.stat(target).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_atomic(path: str, text: str) -> None:
    """Write *text* to *path*: a temp file in the same directory, then rename.

    Readers see either the old file or the complete new one, never a part.
    A target that exists and is not a regular file (``/dev/null``, a FIFO)
    is written in place: renaming over it would replace the device node.
    """
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        special = False
    if special:
        with open(path, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        return
    directory = os.path.dirname(os.path.abspath(path))
    mode = _new_file_mode(path)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _os_error_message(exc: OSError) -> str:
    reason = exc.strerror or str(exc)
    if exc.filename is not None:
        return f"{exc.filename}: {reason[:1].lower() + reason[1:]}"
    return reason


# --------------------------------------------------------------------------
# Built-in scenarios
# --------------------------------------------------------------------------


def _scenario_dir():
    return importlib.resources.files("blkstack").joinpath("scenarios")


def builtin_scenarios() -> Dict[str, Any]:
    """Map name (file name without .toml) -> resource, sorted by name."""
    folder = _scenario_dir()
    found = {}
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        for entry in folder.iterdir():
            if entry.name.endswith(".toml") and entry.is_file():
                found[entry.name[: -len(".toml")]] = entry
    return dict(sorted(found.items()))


_DESCRIPTION_RE = re.compile(r'^description\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*(?:#.*)?$')


def _scenario_description(text: str) -> str:
    """The scenario's top-level ``description``, else its first comment line."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            break
        match = _DESCRIPTION_RE.match(stripped)
        if match:
            try:
                return _one_line(json.loads(f'"{match.group(1)}"'))
            except ValueError:
                return match.group(1)
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            desc = stripped.lstrip("#").strip()
            if desc:
                return desc
            continue
        break
    return ""


def _find_builtin(name: str):
    scenarios = builtin_scenarios()
    key = name[: -len(".toml")] if name.endswith(".toml") else name
    if key not in scenarios:
        available = ", ".join(scenarios) or "none"
        raise UsageError(f"{name}: no such built-in scenario (available: {available})")
    return scenarios[key]


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------


def _kernel_choices() -> List[str]:
    try:
        names = [str(p["name"]) for p in json.loads(_core.profiles())["profiles"]]
    except Exception:
        names = []
    return names or list(KNOWN_KERNELS)


def _check_sets(sets: Sequence[str]) -> None:
    for item in sets:
        key, eq, _value = item.partition("=")
        if not eq:
            raise UsageError(f"--set {item}: expected KEY=VALUE, e.g. --set disks.sda.queue.max_sectors_kb=64")
        if not key.strip():
            raise UsageError(f"--set {item}: missing KEY before '=' (expected KEY=VALUE)")


def _simulate(scenario: str, kernel: Optional[str], sets: Sequence[str],
              trace: Optional[str], requests: Optional[str],
              interval: Optional[float] = None, check: Optional[str] = None) -> Dict[str, Any]:
    # Rust may write the trace to file descriptor 1 itself: flush ours first.
    sys.stdout.flush()
    text = _core.run(scenario, kernel, list(sets), trace, requests, interval, True, check)
    return json.loads(text)


def _check_run_outputs(args: argparse.Namespace) -> List[str]:
    """Refuse output files that cannot be written or collide; return the
    options whose output goes to standard output."""
    outputs = [(opt, path) for opt, path in
               (("--trace", args.trace), ("--requests", args.requests), ("--json", args.json))
               if path is not None]
    files = [(opt, path) for opt, path in outputs if path != "-"]
    for opt, path in files:
        _check_output(opt, path)
        if _same_file(path, args.scenario):
            raise UsageError(f"{opt} {path}: would overwrite the scenario file")
    for i, (opt_a, path_a) in enumerate(files):
        for opt_b, path_b in files[i + 1:]:
            if _same_file(path_a, path_b):
                raise UsageError(f"{opt_a} and {opt_b} name the same file {path_b}")
    to_stdout = [opt for opt, path in outputs if path == "-"]
    if len(to_stdout) > 1:
        both = " and ".join(f"{opt} -" for opt in to_stdout)
        raise UsageError(f"{both}: only one output can go to standard output; send the others to files")
    return to_stdout


def _print_warnings(summary: Dict[str, Any]) -> None:
    """What the workload ignored (fio's cosmetic options), on stderr."""
    for warning in summary.get("warnings") or []:
        _say(sys.stderr, f"{PROG}: warning: {_one_line(warning)}")


def cmd_run(args: argparse.Namespace) -> int:
    sets: List[str] = args.set or []
    _check_sets(sets)
    _check_input(args.scenario)
    to_stdout = _check_run_outputs(args)

    if args.interval is not None and args.interval <= 0:
        raise UsageError(f"--interval {args.interval}: must be a positive number of seconds")
    summary = _simulate(args.scenario, args.kernel, sets, args.trace, args.requests, args.interval, args.check)
    _print_warnings(summary)

    if args.json == "-":
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    elif args.json is not None:
        write_atomic(args.json, json.dumps(summary, indent=2) + "\n")
    stream = sys.stderr if to_stdout else sys.stdout
    if not args.quiet:
        print(format_summary(summary), file=stream)
    reports = summary.get("reports") or {}
    wanted = [("iostat", args.iostat or args.interval is not None), ("btt", args.btt), ("histograms", args.histograms)]
    for key, on in wanted:
        if on and reports.get(key):
            print("", file=stream)
            print(reports[key].rstrip("\n"), file=stream)
    return EXIT_OK


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text)


def cmd_fio(args: argparse.Namespace) -> int:
    fio_args: List[str] = list(args.fio_args or [])
    if not fio_args:
        raise UsageError("fio: give a job file or fio's options, e.g. 'blkstack fio job.fio --stack S.toml' "
                         "or 'blkstack fio --stack S.toml --name=x --rw=randwrite' (see 'blkstack fio --help')")
    sets: List[str] = args.set or []
    _check_sets(sets)
    _check_input(args.stack)
    args.scenario = args.stack
    to_stdout = _check_run_outputs(args)
    workload = "{type = \"fio\", args = [" + ", ".join(_toml_string(a) for a in fio_args) + "]}"
    summary = _simulate(args.stack, args.kernel, [f"workload={workload}"] + sets, args.trace, args.requests)
    _print_warnings(summary)
    if args.json == "-":
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    elif args.json is not None:
        write_atomic(args.json, json.dumps(summary, indent=2) + "\n")
    stream = sys.stderr if to_stdout else sys.stdout
    report = (summary.get("reports") or {}).get("fio") or ""
    print(report.rstrip("\n"), file=stream)
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    scenarios = builtin_scenarios()
    if "demo" not in scenarios:
        raise RuntimeError("the built-in scenario demo.toml is missing from this installation")
    text = scenarios["demo"].read_text(encoding="utf-8")
    with importlib.resources.as_file(scenarios["demo"]) as path:
        summary = _simulate(str(path), args.kernel, [], None, None)
    # Show the scenario by name, not by where the package happens to live.
    summary["scenario"] = "built-in demo.toml; see it with: blkstack scenarios demo --show"
    print(format_summary(summary))
    print(explain_demo(summary, text))
    return EXIT_OK


def cmd_profiles(args: argparse.Namespace) -> int:
    data = json.loads(_core.profiles())
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(format_profiles(data))
    return EXIT_OK


def cmd_scenarios(args: argparse.Namespace) -> int:
    if args.name is None:
        if args.show:
            raise UsageError("--show needs a scenario NAME (see 'blkstack scenarios')")
        scenarios = builtin_scenarios()
        if not scenarios:
            print("No built-in scenarios are installed.")
            return EXIT_OK
        rows = [[name, _scenario_description(res.read_text(encoding="utf-8"))]
                for name, res in scenarios.items()]
        print("Built-in scenarios (print one with: blkstack scenarios NAME --show):")
        print()
        for line in _table(["NAME", "DESCRIPTION"], rows, [False, False]):
            print("  " + line)
        return EXIT_OK
    resource = _find_builtin(args.name)
    text = resource.read_text(encoding="utf-8")
    if args.show:
        sys.stdout.write(text if text.endswith("\n") or not text else text + "\n")
    else:
        name = resource.name[: -len(".toml")]
        desc = _scenario_description(text)
        print(f"{name}: {desc}" if desc else name)
        print(f"Print it with:  blkstack scenarios {name} --show > {name}.toml")
        print(f"Run it with:    blkstack run {name}.toml")
    return EXIT_OK


def _split_events(text: str) -> List[str]:
    from blkstack.diff import EVENT_NAMES
    events = [e.strip() for e in text.split(",") if e.strip()]
    for e in events:
        if e not in EVENT_NAMES:
            raise UsageError(f"--events {text}: unknown event '{e}' (one or more of {', '.join(EVENT_NAMES)})")
    if not events:
        raise UsageError("--events: empty list (e.g. --events D or --events Q,X,D)")
    return events


def _write_json_output(option: str, path: Optional[str], data: Any) -> None:
    if path is None:
        return
    text = json.dumps(data, indent=2) + "\n"
    if path == "-":
        sys.stdout.write(text)
    else:
        write_atomic(path, text)


def cmd_diff(args: argparse.Namespace) -> int:
    from blkstack.diff import TraceFileError, diff_files, limits_by_devno, parse_devno
    for path in (args.real, args.sim):
        _check_input(path)
    if args.json not in (None, "-"):
        _check_output("--json", args.json)
    mapping: Dict[str, str] = {}
    for item in args.map:
        left, eq, right = item.partition("=")
        try:
            if not eq:
                raise ValueError("expected REAL=SIM")
            mapping[parse_devno(left)] = parse_devno(right)
        except ValueError as exc:
            raise UsageError(f"--map {item}: {exc} (e.g. --map 254,0=8,0)")
    if args.context < 0:
        raise UsageError(f"--context {args.context}: must be 0 or more")
    if args.scenario and args.sim_limits:
        raise UsageError("--scenario and --sim-limits both give the model's limits: use one")
    if args.kernel and not args.scenario:
        raise UsageError("--kernel needs --scenario (the model's limits come from the scenario)")
    try:
        real_limits = limits_by_devno(args.real_limits) if args.real_limits else None
        sim_limits = limits_by_devno(args.sim_limits) if args.sim_limits else None
        if args.scenario:
            _check_input(args.scenario)
            data = json.loads(_core.check(args.scenario, args.kernel, []))
            sim_limits = {}
            for name, dev in (data.get("devices") or {}).items():
                if dev.get("limits"):
                    sim_limits[name] = dev["limits"]
                    sim_limits[f"{dev.get('major')},{dev.get('minor')}"] = dev["limits"]
        report = diff_files(args.real, args.sim, events=_split_events(args.events), mapping=mapping,
                            ignore_flags=args.ignore_flags, real_limits=real_limits,
                            sim_limits=sim_limits if real_limits is not None else None, context=args.context)
    except TraceFileError as exc:
        raise UsageError(str(exc))
    if args.json == "-":
        _write_json_output("--json", "-", report.to_json())
    else:
        sys.stdout.write(report.text())
        _write_json_output("--json", args.json, report.to_json())
    return EXIT_OK if report.identical else 1


def _expand_scenarios(items: Sequence[str]) -> List[str]:
    out: List[str] = []
    for item in items:
        if os.path.isdir(item):
            found = sorted(os.path.join(item, f) for f in os.listdir(item) if f.endswith(".toml"))
            if not found:
                raise UsageError(f"{item}: no .toml scenarios in this directory")
            out += found
        else:
            _check_input(item)
            out.append(item)
    return out


def cmd_validate(args: argparse.Namespace) -> int:
    from blkstack import validate as V
    scenarios = _expand_scenarios(args.scenario)
    kernels: List[Optional[str]] = []
    for k in args.kernel or [None]:
        if k == "all":
            kernels += list(V.KERNELS)
        elif k is not None and k not in V.KERNELS:
            raise UsageError(f"--kernel {k}: Debian ships {' and '.join(V.KERNELS)} (or 'all')")
        else:
            kernels.append(k)
    if args.timeout <= 0:
        raise UsageError(f"--timeout {args.timeout}: must be a positive number of seconds")
    if args.json not in (None, "-"):
        _check_output("--json", args.json)
    events = _split_events(args.events)
    runs = [(s, k) for s in scenarios for k in kernels]
    single = len(runs) == 1
    results = []
    failures = 0
    for scenario, kernel in runs:
        out_dir = None
        if args.out:
            kname = V.scenario_kernel(scenario, kernel)
            stem = os.path.splitext(os.path.basename(scenario))[0]
            out_dir = args.out if single else os.path.join(args.out, f"{stem}-{kname}")
        try:
            v = V.validate(scenario, kernel, cache=args.cache, out_dir=out_dir, timeout=args.timeout,
                           events=events, rebuild=args.rebuild, ignore_flags=args.ignore_flags)
        except V.ValidationError as exc:
            if single:
                raise UsageError(str(exc))
            _say(sys.stderr, f"{PROG}: error: {scenario} ({kernel or 'its kernel'}): {_one_line(str(exc))}")
            failures += 1
            results.append({"scenario": scenario, "kernel": kernel, "error": _one_line(str(exc))})
            continue
        if args.json != "-" and not args.summary:
            sys.stdout.write(v.text())
            if not single:
                sys.stdout.write("\n")
            sys.stdout.flush()
        results.append(v)
    rows = []
    unexpected = failures
    for r in results:
        if isinstance(r, dict):
            rows.append([os.path.basename(r["scenario"]), str(r["kernel"] or "-"), "error", "-", "-", "error"])
            continue
        exp = r.expectation
        if exp is None:
            ok = r.report.identical
            status = "exact" if ok else "differs"
        else:
            ok = bool(r.meets_expectation)
            status = "as expected" if ok else "NOT as expected"
            if ok and not exp.exact and r.match_percent > exp.percent + 0.05:
                status = "at least as expected"
        if args.check and not ok:
            unexpected += 1
        rows.append([os.path.basename(r.scenario), r.kernel, f"{r.match_percent:.1f}%",
                     f"{r.report.ops_match_percent:.1f}%",
                     "-" if exp is None else ("exact" if exp.exact else f"{exp.percent:.1f}%"), status])
    if args.json is not None:
        _write_json_output("--json", args.json, [r if isinstance(r, dict) else r.to_json() for r in results])
    if not single or args.summary:
        stream = sys.stderr if args.json == "-" else sys.stdout
        print("validation summary (requests issued to each disk, in order):", file=stream)
        for line in _table(["SCENARIO", "KERNEL", "MATCH", "OPS ONLY", "EXPECTED", "STATUS"], rows,
                           [False, False, True, True, True, False]):
            print("  " + line, file=stream)
    if args.check and unexpected:
        return 1
    return EXIT_OK if not failures else EXIT_USAGE


# --------------------------------------------------------------------------
# Parser
# --------------------------------------------------------------------------

MAIN_DESCRIPTION = """\
blkstack models the Linux block I/O path -- bio splitting, device stacking,
plugging, merging and blktrace-style tracing -- for a scenario described in a
TOML file, under the behaviour of a chosen kernel version."""

MAIN_EPILOG = """\
examples:
  blkstack demo                                  # a guided first run
  blkstack scenarios demo --show > my.toml       # copy a built-in scenario
  blkstack run my.toml                           # simulate it, print a summary
  blkstack run my.toml --kernel 6.1 --trace -    # blkparse-style trace on stdout
  blkstack fio job.fio --stack my.toml           # fio jobs on the scenario's devices
  blkstack profiles                              # kernel profiles and switches
  blkstack validate my.toml --kernel 6.1         # the same scenario on a real kernel (qemu)
  blkstack diff real.txt sim.txt                 # compare two block traces

Run 'blkstack COMMAND --help' for the details of one command."""

RUN_DESCRIPTION = """\
Simulate the scenario in SCENARIO.toml and print a summary per device: bios
queued, splits, requests and sectors read, written and discarded, then the
kernel profile, simulated time, wall time and simulation speed.

The summary goes to standard output, or to standard error when standard
output carries the trace, the requests or the JSON summary (FILE is '-').
Output files are written whole or not at all: a failed run leaves none."""

RUN_EPILOG = """\
examples:
  blkstack run my.toml
  blkstack run my.toml --kernel 6.1 --set disks.sda.queue.max_sectors_kb=64
  blkstack run my.toml --trace trace.txt --requests requests.csv
  blkstack run my.toml --trace - | head -20
  blkstack run my.toml --json - | python3 -m json.tool
  blkstack run my.toml --iostat --btt --histograms
  blkstack run my.toml --interval 0.1            # iostat -x every 100 ms of simulated time

A scenario file looks like this:
  kernel = "6.12"
  [disks.sda]
  kind = "sata"
  size = "1GiB"
  [disks.sda.queue]
  logical_block_size = 512
  max_sectors_kb = 128
  [workload]
  type = "dd"
  if = "/dev/sda"
  of = "/dev/null"
  bs = "1M"
  count = 4
  iflag = "direct"
"""

FIO_DESCRIPTION = """\
Run fio jobs on the devices of a scenario. Give fio's own arguments: job
files and/or options (--name=NAME starts a job; options before the first
--name are global), read as fio 3.x reads them. Each job's filename= is a
scenario device (/dev/NAME); without it, the top of the stack.

Prints fio's report: per job IOPS, bandwidth, completion latency and its
percentiles, fsync latency, the run status line and fio's "Disk stats".
Options fio has that do not change the I/O (output, logging, verify, CPU
placement) are ignored with a warning on standard error; any other option
the model does not reproduce is an error."""

FIO_EPILOG = """\
examples:
  blkstack fio job.fio --stack my.toml
  blkstack fio --stack my.toml --name=w --rw=randwrite --bs=4k --direct=1 --ioengine=libaio --iodepth=32 --size=1G
  blkstack fio job.fio --stack my.toml --kernel 6.1 --json - | python3 -m json.tool
  blkstack fio job.fio --stack my.toml --trace trace.txt"""

DEMO_DESCRIPTION = """\
Run the built-in demo scenario, print its summary and explain what it shows.
It takes a second or two."""

DEMO_EPILOG = """\
examples:
  blkstack demo
  blkstack demo --kernel 6.1
  blkstack scenarios demo --show     # the scenario the demo runs"""

PROFILES_DESCRIPTION = """\
List the kernel profiles blkstack can model and every behaviour switch, with
its value under each profile and what it changes. A profile is chosen by the
scenario's 'kernel' key or by 'blkstack run --kernel'; a single switch can be
overridden with --set."""

PROFILES_EPILOG = """\
examples:
  blkstack profiles
  blkstack profiles --json
  blkstack run my.toml --kernel 6.1 --set behaviour.split_remainder=tail"""

SCENARIOS_DESCRIPTION = """\
List the scenario files that come with blkstack, or print one of them so
you can copy it and edit it."""

SCENARIOS_EPILOG = """\
examples:
  blkstack scenarios
  blkstack scenarios demo --show
  blkstack scenarios demo --show > my.toml && blkstack run my.toml"""


VALIDATE_DESCRIPTION = """\
Run a scenario on a real Linux kernel and in blkstack, and compare them.

A Debian kernel (6.1 or 6.12) boots under qemu (TCG) with the scenario's
disks; the guest builds the stack (partitions, md arrays, dm tables, sysfs
writes), runs the workload for real and records the block tracepoints and
every /sys/block/*/queue/* value. blkstack then runs the same scenario with
the matching profile, and the requests issued to each disk are compared in
order, with the queue limits that differ.

The first run downloads the kernel and a few packages from Debian's mirror
(about 80-110 MB per kernel) into the cache and builds a guest; later runs
reuse them. A guest takes 10-60 s per scenario. Needs qemu-system-x86_64,
apt-get, dpkg and a C compiler with a static libc (gcc, libc6-dev).

A scenario may state what it should reach, in comment lines:
  # expect: exact
  # expect 6.12: 87.5% -- why it differs (issue #N)
--check makes the exit status 1 when a result falls short of that (or,
without such a line, is not exact)."""

VALIDATE_EPILOG = """\
examples:
  blkstack validate validate/scenarios/split-max-sectors.toml --kernel 6.1
  blkstack validate my.toml --kernel all               # 6.1 and 6.12
  blkstack validate validate/scenarios --kernel all --check --summary
  blkstack validate my.toml --out run/ --events Q,X,D  # keep the traces in run/
  blkstack diff run/trace.txt run/sim-trace.txt        # compare them again

Output files (in --out, else CACHE/runs/SCENARIO-KERNEL): trace.txt (the
guest's ftrace text), sim-trace.txt (blkstack's blkparse text), sysfs.txt,
devices.txt, job.sh, job.log, console.log, diff.txt, diff.json.

environment:
  BLKSTACK_VALIDATE_CACHE   cache directory (default ~/.cache/blkstack/validate)
  BLKSTACK_QEMU             qemu binary (default qemu-system-x86_64)
  BLKSTACK_DEBIAN_MIRROR    Debian mirror (default http://deb.debian.org/debian)"""

DIFF_DESCRIPTION = """\
Compare two block traces device by device: the requests issued to each
device (or other events, --events), aligned in order. Prints the match
percentage per device, the first divergence with the events around it, and
the queue limits that differ when both sides' limits are given.

Each trace may be blkparse's default text (blkparse -i DEV, or blkstack run
--trace) or the kernel's tracepoint text (/sys/kernel/tracing/trace with
the block_* events enabled, 6.1 or 6.12 layout). Devices are paired by
device number; --map pairs numbers that differ (a single device on each side
is paired anyway).

Exit status: 0 when the streams are identical, 1 when they differ, 2 on
bad input."""

DIFF_EPILOG = """\
examples:
  blkstack diff real.txt sim.txt
  blkstack diff real.txt sim.txt --map 254,0=8,0 --events Q,X,D
  blkstack diff real.txt sim.txt --ignore-flags --json -
  blkstack diff real.txt sim.txt --real-limits limits.txt --scenario my.toml --kernel 6.1

On a real machine:
  cd /sys/kernel/tracing && echo 1 > events/block/enable && echo > trace
  ... run the workload ...
  cat trace > real.txt
  grep -r . /sys/block/*/dev /sys/block/*/queue/ > limits.txt 2>/dev/null"""


def build_parser() -> ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = ArgumentParser(prog=PROG, description=MAIN_DESCRIPTION, epilog=MAIN_EPILOG,
                            formatter_class=fmt)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)

    kernels = _kernel_choices()
    kernel_metavar = "|".join(kernels)

    p = sub.add_parser("run", help="simulate a scenario file", description=RUN_DESCRIPTION,
                       epilog=RUN_EPILOG, formatter_class=fmt)
    p.add_argument("scenario", metavar="SCENARIO.toml", help="the scenario file to simulate")
    p.add_argument("--kernel", choices=kernels, metavar=kernel_metavar,
                   help="kernel profile to model instead of the scenario's 'kernel' (see 'blkstack profiles')")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override one scenario key, e.g. disks.sda.queue.max_sectors_kb=64 "
                        "or behaviour.split_remainder=tail; may be repeated")
    p.add_argument("--trace", metavar="FILE|-",
                   help="write a blkparse-style text trace to FILE ('-' for standard output)")
    p.add_argument("--requests", metavar="FILE|-",
                   help="write one CSV row per issued request to FILE ('-' for standard output): "
                        "device,seq,time_ns,rwbs,sector,nr_sectors")
    p.add_argument("--json", metavar="FILE|-",
                   help="write the summary as JSON to FILE ('-' for standard output)")
    p.add_argument("--iostat", action="store_true",
                   help="print 'iostat -x' figures (sysstat's layout) over the whole run")
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="print 'iostat -x' per interval of simulated time (implies --iostat)")
    p.add_argument("--btt", action="store_true",
                   help="print btt's stage latencies (Q2G, G2I, I2D, D2C, Q2C...) and merge information")
    p.add_argument("--histograms", action="store_true",
                   help="print the seek-distance and request-size histograms of each disk")
    p.add_argument("--check", choices=["integrity"], metavar="integrity",
                   help="also run the integrity oracle: every copy of every written block is tracked, and a "
                        "missed copy, a stale read or a discard outside its range fails the run (exit status 3); "
                        "the conservation check always runs")
    p.add_argument("-q", "--quiet", action="store_true", help="do not print the human-readable summary")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("fio", help="run fio job files or fio options on a scenario's stack",
                       description=FIO_DESCRIPTION, epilog=FIO_EPILOG, formatter_class=fmt, allow_abbrev=False)
    p.add_argument("--stack", required=True, metavar="SCENARIO.toml",
                   help="the scenario whose devices (and kernel) the jobs run on; its own workload is replaced")
    p.add_argument("--kernel", choices=kernels, metavar=kernel_metavar,
                   help="kernel profile to model instead of the scenario's 'kernel'")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override one scenario key, e.g. workload.buffer_fragmentation=0.1; may be repeated")
    p.add_argument("--trace", metavar="FILE|-", help="write a blkparse-style text trace to FILE ('-' for standard output)")
    p.add_argument("--requests", metavar="FILE|-", help="write one CSV row per issued request to FILE")
    p.add_argument("--json", metavar="FILE|-", help="write the summary (with fio's figures under 'fio') as JSON to FILE")
    p.set_defaults(func=cmd_fio, fio_args=[])

    p = sub.add_parser("demo", help="run the built-in demo and explain it", description=DEMO_DESCRIPTION,
                       epilog=DEMO_EPILOG, formatter_class=fmt)
    p.add_argument("--kernel", choices=kernels, metavar=kernel_metavar,
                   help="kernel profile to model instead of the demo's own")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("profiles", help="list kernel profiles and behaviour switches",
                       description=PROFILES_DESCRIPTION, epilog=PROFILES_EPILOG, formatter_class=fmt)
    p.add_argument("--json", action="store_true", help="print them as JSON")
    p.set_defaults(func=cmd_profiles)

    p = sub.add_parser("scenarios", help="list or print the built-in scenarios",
                       description=SCENARIOS_DESCRIPTION, epilog=SCENARIOS_EPILOG, formatter_class=fmt)
    p.add_argument("name", nargs="?", metavar="NAME", help="a built-in scenario (e.g. demo)")
    p.add_argument("--show", action="store_true", help="print the scenario file NAME")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("validate", help="run a scenario on a real kernel (qemu) and compare with blkstack",
                       description=VALIDATE_DESCRIPTION, epilog=VALIDATE_EPILOG, formatter_class=fmt)
    p.add_argument("scenario", nargs="+", metavar="SCENARIO.toml",
                   help="scenario files, or directories of them (a suite)")
    p.add_argument("--kernel", action="append", metavar="6.1|6.12|all",
                   help="Debian kernel to boot and profile to model (default: the scenario's); may be repeated")
    p.add_argument("--cache", metavar="DIR", help="download and guest cache (default $BLKSTACK_VALIDATE_CACHE "
                                                  "or ~/.cache/blkstack/validate)")
    p.add_argument("--out", metavar="DIR", help="where to keep the traces and reports (one subdirectory per run "
                                                "when there are several)")
    p.add_argument("--events", default="D", metavar="LIST",
                   help="events to compare, comma-separated blkparse letters (default D: issued requests)")
    p.add_argument("--ignore-flags", action="store_true",
                   help="compare only the operation of each event, not its FUA/sync/meta/readahead letters")
    p.add_argument("--timeout", type=float, default=900.0, metavar="SECONDS",
                   help="give up on a guest after this long (default 900)")
    p.add_argument("--rebuild", action="store_true", help="rebuild the cached guest")
    p.add_argument("--check", action="store_true",
                   help="exit with status 1 when a result does not meet its scenario's '# expect' line")
    p.add_argument("--summary", action="store_true", help="print only the summary table")
    p.add_argument("--json", metavar="FILE|-", help="write every result as JSON to FILE ('-' for standard output)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("diff", help="compare two block traces (blkparse or kernel tracepoint text)",
                       description=DIFF_DESCRIPTION, epilog=DIFF_EPILOG, formatter_class=fmt)
    p.add_argument("real", metavar="REAL", help="the reference trace (e.g. from a real kernel)")
    p.add_argument("sim", metavar="SIM", help="the trace to compare with it (e.g. blkstack run --trace)")
    p.add_argument("--map", action="append", default=[], metavar="REAL=SIM",
                   help="pair device REAL of the first trace with SIM of the second (MAJ,MIN=MAJ,MIN); may be repeated")
    p.add_argument("--events", default="D", metavar="LIST",
                   help="events to compare, comma-separated blkparse letters (default D: issued requests)")
    p.add_argument("--ignore-flags", action="store_true",
                   help="compare only the operation of each event, not its FUA/sync/meta/readahead letters")
    p.add_argument("--context", type=int, default=3, metavar="N",
                   help="events shown around the first divergence (default 3)")
    p.add_argument("--real-limits", metavar="FILE",
                   help="queue limits of the first trace's machine: 'grep -r . /sys/block/*/dev /sys/block/*/queue/' output")
    p.add_argument("--sim-limits", metavar="FILE",
                   help="queue limits of the second: a sysfs snapshot or a 'blkstack run --json' summary")
    p.add_argument("--scenario", metavar="SCENARIO.toml", help="take the second side's limits from this scenario")
    p.add_argument("--kernel", choices=kernels, metavar=kernel_metavar, help="profile for --scenario")
    p.add_argument("--json", metavar="FILE|-", help="write the comparison as JSON to FILE ('-' for standard output)")
    p.set_defaults(func=cmd_diff)
    return parser


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def _say(stream: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        stream.write(line + "\n")
        stream.flush()


def _silence_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so exit-time flushing is quiet."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _stdout_is_broken() -> bool:
    """True if standard output is a pipe whose reading end has been closed."""
    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return False
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


def _dispatch(argv: Optional[Sequence[str]]) -> int:
    parser = build_parser()
    try:
        args, extras = parser.parse_known_args(argv)
    except SystemExit as exc:  # --help and --version
        sys.stdout.flush()
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    if extras and args.command == "fio":
        # Everything argparse does not know is fio's: options and job files.
        args.fio_args, extras = extras, []
    if extras:
        where = f"{PROG} {args.command}" if args.command else PROG
        raise UsageError(f"unrecognized arguments: {' '.join(extras)} (see '{where} --help')")
    if args.command is None:
        raise UsageError("missing COMMAND: one of run, fio, demo, profiles, scenarios, validate, diff (see 'blkstack --help')")
    status = args.func(args)
    sys.stdout.flush()
    return status


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line *argv* (default: ``sys.argv[1:]``); return the exit status."""
    try:
        return _dispatch(argv)
    except KeyboardInterrupt:
        return EXIT_SIGINT
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_SIGPIPE
    except UsageError as exc:
        _say(sys.stderr, f"{PROG}: error: {_one_line(str(exc))}")
        return EXIT_USAGE
    except ScenarioError as exc:
        _say(sys.stderr, f"{PROG}: error: {_one_line(str(exc)) or 'invalid scenario'}")
        return EXIT_USAGE
    except CheckError as exc:
        _say(sys.stderr, f"{PROG}: check failed: {exc}")
        return EXIT_CHECK
    except OSError as exc:
        if _stdout_is_broken():
            # The engine wrote the trace to a closed pipe (`--trace - | head`)
            # and reports EPIPE as a plain OSError.
            _silence_stdout()
            return EXIT_SIGPIPE
        # A file we were asked to read or write could not be (permissions,
        # full disk, ...): the user's environment, not a bug.
        _say(sys.stderr, f"{PROG}: error: {_one_line(_os_error_message(exc))}")
        return EXIT_USAGE
    except BaseException as exc:  # also pyo3's PanicException (a BaseException)
        if isinstance(exc, SystemExit):
            raise
        if os.environ.get("BLKSTACK_DEBUG") == "1":
            raise
        detail = _one_line(str(exc))
        what = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
        _say(sys.stderr, f"{PROG}: internal error: {what} (set BLKSTACK_DEBUG=1 for a traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
