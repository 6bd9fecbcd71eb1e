"""bcc's block I/O tools (biolatency, biosnoop, bitesize, biopattern) as
views of a run's or a real trace's events, in those tools' own output
formats.

bcc's tools hook the kernel while it runs; here the same points are the
trace's events: ``block_rq_insert`` ('I'), ``block_rq_issue`` ('D') and
``block_rq_complete`` ('C'). A request is keyed by its device and sector,
as btt matches them (bcc keys it by the ``struct request`` pointer): a
completion takes the latest issue at its sector before it, and an issue the
latest insert. A completion without an issue ("missed issue" in bcc, e.g. a
bio-based device's bio completions) is left out, as bcc leaves it out.

The per-event work is done on whole columns (pandas' ``merge_asof`` and
numpy), never in a Python loop per event; only the printing is Python.
"""

from __future__ import annotations

from typing import Any, Dict, List, Sequence, Tuple

TOOLS = ("biolatency", "biosnoop", "bitesize", "biopattern")

# The options each tool takes (bcc's own letters).
TOOL_FLAGS = {
    "biolatency": {"-m", "-D", "-F", "-Q"},
    "biosnoop": {"-Q"},
    "bitesize": set(),
    "biopattern": set(),
}

# bcc's table.py: the width of a histogram's bar.
STARS_MAX = 40


class BioToolError(ValueError):
    """A ``--bio`` value blkstack cannot show."""


def parse_tools(text: str) -> List[Tuple[str, Dict[str, Any]]]:
    """``--bio TOOL[,TOOL]``: each TOOL is a name followed by bcc's options
    for it, e.g. ``"biolatency -D -m,biosnoop"``; biolatency and biopattern
    take bcc's interval in seconds (``"biopattern 0.5"``)."""
    out: List[Tuple[str, Dict[str, Any]]] = []
    for part in text.split(","):
        words = part.split()
        if not words:
            raise BioToolError(f"--bio {text!r}: empty tool name (expected {', '.join(TOOLS)})")
        name, rest = words[0], words[1:]
        if name not in TOOLS:
            raise BioToolError(f"--bio {name}: unknown tool (expected {', '.join(TOOLS)})")
        opts: Dict[str, Any] = {"flags": set(), "interval": None}
        for w in rest:
            if w in TOOL_FLAGS[name]:
                opts["flags"].add(w)
            elif name in ("biolatency", "biopattern") and opts["interval"] is None and not w.startswith("-"):
                opts["interval"] = _interval(name, w)
            else:
                allowed = " ".join(sorted(TOOL_FLAGS[name])) or "none"
                raise BioToolError(f"--bio {name}: unknown option {w!r} (allowed: {allowed})")
        if {"-D", "-F"} <= opts["flags"]:
            raise BioToolError("--bio biolatency: can only use -D or -F")
        out.append((name, opts))
    return out


def _interval(name: str, word: str) -> float:
    try:
        value = float(word)
    except ValueError:
        raise BioToolError(f"--bio {name}: interval {word!r} is not a number of seconds") from None
    if not value > 0 or value == float("inf"):
        raise BioToolError(f"--bio {name}: interval {word!r} must be a positive number of seconds")
    return value


# ---------------------------------------------------------------- matching

def completed_requests(events):
    """One row per completed request, in completion order: device, comm,
    pid, rwbs, sector, bytes (at issue), insert_ns, issue_ns, complete_ns.

    ``insert_ns`` is the issue time where the request was issued without
    an insert (issued directly)."""
    import numpy as np
    import pandas as pd

    names = list(events["action"].cat.categories)
    insert, issue, complete = (names.index(a) for a in ("I", "D", "C"))
    codes = events["action"].cat.codes.to_numpy()
    ev = events[(codes == insert) | (codes == issue) | (codes == complete)]
    action = ev["action"].cat.codes.to_numpy()
    key = pd.DataFrame({
        "dev": ev["device"].cat.codes.to_numpy(np.int64),
        "sector": ev["sector"].to_numpy(np.int64),
        "time_ns": ev["time_ns"].to_numpy(np.int64),
        "row": np.arange(len(ev)),
    })
    ins = key[action == insert].rename(columns={"time_ns": "insert_ns", "row": "irow"})
    iss = key[action == issue].rename(columns={"time_ns": "issue_ns", "row": "drow"})
    com = key[action == complete][["dev", "sector", "time_ns"]].rename(columns={"time_ns": "complete_ns"})
    # Each completion takes the latest issue at its device and sector.
    done = pd.merge_asof(com.sort_values("complete_ns"), iss.sort_values("issue_ns"),
                         left_on="complete_ns", right_on="issue_ns", by=["dev", "sector"],
                         direction="backward")
    done = done.dropna(subset=["drow"]).drop_duplicates(subset=["drow"], keep="first")
    # Completions without an issue made these float (NaN): back to integers.
    done = done.astype({"drow": np.int64, "issue_ns": np.int64})
    # Each issue takes the latest insert at its device and sector.
    done = pd.merge_asof(done.sort_values("issue_ns"), ins.sort_values("insert_ns"),
                         left_on="issue_ns", right_on="insert_ns", by=["dev", "sector"],
                         direction="backward")
    # An insert belongs to one request: a later issue at the same sector
    # (a request issued directly, after one that was inserted) has none.
    reused = done["irow"].notna() & done["irow"].duplicated(keep="first")
    done.loc[reused, ["irow", "insert_ns"]] = np.nan
    done = done.sort_values(["complete_ns", "drow"], kind="stable")
    issued = ev.iloc[done["drow"].to_numpy()]
    direct = done["irow"].isna().to_numpy()
    irow = np.where(direct, done["drow"].to_numpy(), done["irow"].fillna(0).to_numpy(np.int64))
    inserted = ev.iloc[irow]

    def column(frame, name):
        return frame[name].reset_index(drop=True)

    return pd.DataFrame({
        "device": column(issued, "device"),
        # The task that queued the request (biosnoop's blk_account_io_start),
        # and the one that issued it (bitesize's block_rq_issue).
        "comm": column(inserted, "comm"),
        "pid": inserted["pid"].to_numpy(),
        "issue_comm": column(issued, "comm"),
        "rwbs": column(issued, "rwbs"),
        "sector": issued["sector"].to_numpy(),
        "bytes": issued["bytes"].to_numpy(),
        "insert_ns": np.where(direct, done["issue_ns"].to_numpy(), done["insert_ns"].fillna(0).to_numpy()).astype(np.int64),
        "issue_ns": done["issue_ns"].to_numpy(np.int64),
        "complete_ns": done["complete_ns"].to_numpy(np.int64),
    })


# ---------------------------------------------------------------- format

def bpf_log2l(values):
    """The BPF helper's slot: 0 for 0, else floor(log2(v)) + 1."""
    import numpy as np

    v = np.asarray(values, dtype=np.uint64)
    out = np.zeros(len(v), dtype=np.int64)
    nz = v > 0
    out[nz] = np.floor(np.log2(v[nz].astype(np.float64))).astype(np.int64) + 1
    # float log2 can round up just below a power of two: correct it.
    big = nz & (np.left_shift(np.uint64(1), (out - 1).clip(0).astype(np.uint64)) > v)
    out[big] -= 1
    return out


def _stars(val: int, val_max: int, width: int) -> str:
    # bcc's _stars: as many stars as width * val / val_max, rounded up.
    n = 0
    while not (n > width * val / val_max - 1 or n > width - 1):
        n += 1
    return "*" * n


def log2_hist_lines(slots, val_type: str) -> List[str]:
    """bcc's ``_print_log2_hist`` of slot numbers (``bpf_log2l``): the
    header, then one line per slot from 1 to the last non-empty one (slot
    0, a value of 0, is counted but never printed, as in bcc)."""
    import numpy as np

    vals = np.bincount(np.asarray(slots, dtype=np.int64), minlength=1) if len(slots) else np.zeros(1, np.int64)
    nonzero = np.nonzero(vals)[0]
    idx_max = int(nonzero[-1]) if len(nonzero) else -1
    val_max = int(vals.max()) if len(vals) else 0
    if idx_max <= 32:
        header, width, stars = f"     {val_type:<19} : count     distribution", 10, STARS_MAX
    else:
        header, width, stars = f"               {val_type:<29} : count     distribution", 20, STARS_MAX // 2
    lines = [header] if idx_max > 0 else []
    for i in range(1, idx_max + 1):
        low, high = (1 << i) >> 1, (1 << i) - 1
        if low == high:
            low -= 1
        val = int(vals[i])
        lines.append(f"{low:>{width}} -> {high:<{width}} : {val:<8} |{_stars(val, val_max, stars):<{stars}}|")
    return lines


# bcc's biolatency flags_print: the op, then each flag prepended in its order.
_OPS = {"R": "Read", "W": "Write", "D": "Discard", "N": "Unknown"}
_FLAG_NAMES = [("S", "Sync"), ("M", "Metadata"), ("F", "ForcedUnitAccess"), ("A", "ReadAhead")]


def flags_name(rwbs: str) -> str:
    """biolatency -F's name of a request's flags, from its rwbs letters
    (blk_fill_rwbs: an optional F for a preflush, the op, then F for FUA,
    A, S, M). A flush request's op letter is its F alone."""
    s = rwbs
    if s.startswith("F") and len(s) > 1 and s[1] in "DWRNF":
        s = s[1:]  # preflush: not among the flags bcc names
    if s.startswith("DE"):
        desc, rest = "SecureErase", s[2:]
    elif s.startswith("F"):
        desc, rest = "Flush", s[1:]
    elif s[:1] in _OPS:
        desc, rest = _OPS[s[0]], s[1:]
    else:
        desc, rest = "Unknown", s
    for letter, name in _FLAG_NAMES:
        if letter in rest:
            desc = f"{name}-{desc}"
    return desc


def biolatency(done, flags: Sequence[str], interval_s: Any = None, duration_ns: int = 0) -> str:
    """biolatency: a log2 histogram of issue-to-completion time (``-Q``:
    from insert), in usecs (``-m``: msecs); ``-D`` one per disk, ``-F`` one
    per set of flags. With an interval, one per interval that has
    completions, after a line with the interval's end."""
    import numpy as np

    if not interval_s:
        return _biolatency(done, flags)
    windows = _window_ids(done["complete_ns"], interval_s)  # done is in completion order
    ids, starts = np.unique(windows, return_index=True)
    bounds = list(starts) + [len(done)]
    return "\n\n".join(_window_end(int(w), interval_s, duration_ns) + "\n"
                       + _biolatency(done.iloc[bounds[i]:bounds[i + 1]], flags) for i, w in enumerate(ids))


def _biolatency(done, flags: Sequence[str]) -> str:
    import numpy as np

    start = done["insert_ns"] if "-Q" in flags else done["issue_ns"]
    divisor = 1_000_000 if "-m" in flags else 1_000
    delta = (done["complete_ns"].to_numpy(np.int64) - start.to_numpy(np.int64)) // divisor
    slots = bpf_log2l(delta)
    label = "msecs" if "-m" in flags else "usecs"
    if "-D" in flags:
        groups, heading = _labels(done["device"]), "disk = '{}'"
    elif "-F" in flags:
        groups, heading = _labels(done["rwbs"], flags_name), "flags = {}"
    else:
        return "\n".join(log2_hist_lines(slots, label))
    return _sections(groups, slots, label, heading)


def _labels(column, name=str):
    """A categorical column as an array of strings, *name* applied once per
    category rather than once per row."""
    import numpy as np

    cats = np.array([name(str(c)) for c in column.cat.categories] + [""], dtype=object)
    return cats[column.cat.codes.to_numpy()].astype(str)


def _sections(groups, slots, label: str, heading: str) -> str:
    import numpy as np

    names, index = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    lines: List[str] = []
    for i, g in enumerate(names):
        lines += ["", heading.format(g)] + log2_hist_lines(slots[index == i], label)
    return "\n".join(lines).lstrip("\n")


def bitesize(done) -> str:
    """bitesize: a log2 histogram of issued request sizes in Kbytes per
    process (the task that issued it, block_rq_issue's comm)."""
    import numpy as np

    slots = bpf_log2l(done["bytes"].to_numpy(np.int64) // 1024)
    return _sections(_labels(done["issue_comm"]), slots, "Kbytes", "Process Name = {}")


def biosnoop(done, flags: Sequence[str]) -> str:
    """biosnoop: one line per completed request, TIME(s) from the first
    completion (bcc's microsecond timestamps), LAT(ms) from issue
    (``-Q``: QUE(ms), insert to issue, before it)."""
    import numpy as np

    queue = "-Q" in flags
    head = "%-11s %-14s %-7s %-9s %-1s %-10s %-7s" % ("TIME(s)", "COMM", "PID", "DISK", "T", "SECTOR", "BYTES")
    head += ("%7s " % "QUE(ms)" if queue else "") + "%7s" % "LAT(ms)"
    ts_us = done["complete_ns"].to_numpy(np.int64) // 1000
    t0 = ts_us[0] if len(ts_us) else 0
    lat = (done["complete_ns"] - done["issue_ns"]).to_numpy(np.int64) / 1e6
    que = (done["issue_ns"] - done["insert_ns"]).to_numpy(np.int64) / 1e6
    lines = [head]
    rows = zip(ts_us - t0, done["comm"], done["pid"], done["device"], done["rwbs"], done["sector"],
               done["bytes"], que, lat)
    for t, comm, pid, disk, rwbs, sector, nbytes, q, d in rows:
        rw = "W" if "W" in rwbs else "R"
        line = "%-11.6f %-14.14s %-7s %-9s %-1s %-10s %-7s" % (t / 1e6, comm, pid, disk, rw, sector, nbytes)
        lines.append(line + ("%7.2f " % q if queue else "") + "%7.2f" % d)
    return "\n".join(lines)


def _window_ids(complete_ns, interval_s: Any):
    """The interval of each completion: all 0 without an interval."""
    import numpy as np

    t = np.asarray(complete_ns, dtype=np.int64)
    return t // max(int(interval_s * 1e9), 1) if interval_s else np.zeros(len(t), np.int64)


def _window_end(w: int, interval_s: Any, duration_ns: int) -> str:
    """An interval's end in seconds of simulated or trace time (bcc prints
    the wall clock there): the run's end for the last or only one."""
    end = duration_ns if not interval_s else min((w + 1) * max(int(interval_s * 1e9), 1), duration_ns)
    return f"{end / 1e9:.6f}"


def biopattern(done, interval_s: Any, duration_ns: int) -> str:
    """biopattern: per disk and interval, the completions at the sector
    where the disk's previous completion ended (%SEQ) or elsewhere (%RND),
    their count and Kbytes. As bcc counts, a disk's first completion only
    sets the position, and so does its first in each interval (bcc clears
    its counters). TIME is the interval's end."""
    import numpy as np
    import pandas as pd

    lines = ["%-9s %-7s %5s %5s %8s %10s" % ("TIME", "DISK", "%RND", "%SEQ", "COUNT", "KBYTES")]
    d = pd.DataFrame({
        "disk": _labels(done["device"]),
        "sector": done["sector"].to_numpy(np.int64),
        "bytes": done["bytes"].to_numpy(np.int64),
        "window": _window_ids(done["complete_ns"], interval_s),
    })  # in completion order
    d["end"] = d["sector"].to_numpy() + (d["bytes"].to_numpy() >> 9)
    prev = d.groupby("disk", sort=False)[["end", "window"]].shift(1)
    last = prev["end"].fillna(0).to_numpy(np.int64)
    # A disk's first completion, and its first of each interval (bcc clears
    # its counters), only set the position.
    d["counted"] = (last != 0) & (prev["window"].to_numpy() == d["window"].to_numpy())
    d["seq"] = d["counted"] & (last == d["sector"].to_numpy())
    d = d[d["counted"]]
    agg = d.groupby(["window", "disk"], sort=True).agg(total=("seq", "size"), seq=("seq", "sum"),
                                                      nbytes=("bytes", "sum"))
    for (w, disk), row in agg.iterrows():
        total = int(row["total"])
        rnd = int(round((total - int(row["seq"])) * 100 / total))
        lines.append("%-9s %-7s %5d %5d %8d %10d" % (_window_end(int(w), interval_s, duration_ns), disk, rnd,
                                                     100 - rnd, total, int(row["nbytes"]) // 1024))
    return "\n".join(lines)


def render(events, tools: Sequence[Tuple[str, Dict[str, Any]]], duration_ns: int) -> str:
    """The chosen tools' output, one block each, separated by a blank line."""
    done = completed_requests(events)
    blocks = []
    for name, opts in tools:
        flags = opts["flags"]
        if name == "biolatency":
            blocks.append(biolatency(done, flags, opts["interval"], duration_ns))
        elif name == "biosnoop":
            blocks.append(biosnoop(done, flags))
        elif name == "bitesize":
            blocks.append(bitesize(done))
        else:
            blocks.append(biopattern(done, opts["interval"], duration_ns))
    return "\n\n".join(b for b in blocks if b)
