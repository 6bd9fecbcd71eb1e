"""What ``plot`` and ``report`` read: scenarios to run (under one or more
kernels) and block traces to analyse, each becoming a labelled run."""

from __future__ import annotations

import os
from typing import Any, List, NamedTuple, Optional, Sequence

from blkstack.cli.common import UsageError, check_input, check_sets


class Run(NamedTuple):
    """One thing to show: ``label`` names it in legends and file names,
    ``source`` is the scenario's text (empty for a trace)."""

    label: str
    path: str
    kernel: Optional[str]
    result: Any  # blkstack.Result
    source: str


def add_run_options(p: Any, kernels: List[str]) -> None:
    """--kernel (repeatable: one run per kernel), --set, for scenarios,
    --label (one per input) and --jobs."""
    from blkstack.cli.parallel import add_jobs_option

    p.add_argument("--kernel", action="append", default=[], choices=kernels, metavar="|".join(kernels),
                   help="run the scenarios under this kernel profile; repeat it to compare kernels")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="override one scenario key (as for 'blkstack run'); may be repeated")
    p.add_argument("--label", action="append", default=[], metavar="NAME",
                   help="name the inputs, one --label per input in order (default: the file names, or the "
                        "kernels when one scenario runs under several)")
    add_jobs_option(p)


def is_scenario(path: str) -> bool:
    """Scenarios are TOML files; anything else is read as a block trace."""
    return path.lower().endswith(".toml")


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def load_runs(inputs: Sequence[str], kernels: Sequence[str], sets: Sequence[str],
              jobs: Optional[int] = None, labels: Sequence[str] = ()) -> List[Run]:
    """Run every scenario under every kernel (or its own), read every trace,
    at most *jobs* at once (default: one per processor).

    Labels: *labels* (one per input; with several kernels each run's label
    is the input's and the kernel), else the kernel when one scenario runs
    under several, the file's name otherwise (with the kernel when both
    vary)."""
    from blkstack.api import load_trace, run
    from blkstack.cli.parallel import Runs
    from blkstack.plots import label_runs

    for path in inputs:
        check_input(path)
    check_sets(sets)
    check_labels(inputs, labels)
    given = dict(zip(inputs, labels)) if labels else {}
    traces = [p for p in inputs if not is_scenario(p)]
    if traces and (kernels or sets):
        option = "--kernel" if kernels else "--set"
        raise UsageError(f"{option} applies to scenarios, but {traces[0]} is a trace (scenarios end in .toml)")
    scenarios = [p for p in inputs if is_scenario(p)]
    runs: List[tuple] = []
    with Runs(jobs, most=len(traces) + len(scenarios) * max(1, len(kernels))) as pool:
        for path in inputs:
            if not is_scenario(path):
                runs.append((given.get(path, _stem(path)), path, None, pool.submit(load_trace, path), ""))
                continue
            # Shown in the report only; the run itself refuses a file that is not UTF-8.
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
            for kernel in kernels or [None]:
                label = kernel if (kernel and len(scenarios) == 1 and not traces) else _stem(path)
                if path in given:
                    label = given[path]
                if kernel and label != kernel:
                    label = f"{label}-{kernel}"
                runs.append((label, path, kernel, pool.submit(run, path, kernel, sets=list(sets)), text))
        runs = [(label, path, kernel, _finished(path, future), text)
                for label, path, kernel, future, text in runs]
    # Given labels are kept as written (file names are made safe where written).
    labels = [r[0] for r in runs] if given else label_runs([r[0] for r in runs])
    return [Run(label, *rest) for label, (_, *rest) in zip(labels, runs)]


def check_labels(inputs: Sequence[str], labels: Sequence[str]) -> None:
    """--label: none, or one per input, non-empty and all different."""
    if not labels:
        return
    if len(labels) != len(inputs):
        raise UsageError(f"--label: {len(labels)} given for {len(inputs)} input{'s' if len(inputs) != 1 else ''} "
                         f"(give one per input, in order)")
    if len(set(inputs)) != len(inputs):
        raise UsageError("--label: the same input is given twice")
    for label in labels:
        if not label.strip():
            raise UsageError("--label: an empty label")
    if len(set(labels)) != len(labels):
        raise UsageError("--label: two inputs have the same label")


def _finished(path: str, future: Any) -> Any:
    """The result of a run or a trace read, a trace checked for events."""
    from blkstack.cli.stats import report_problems

    result = future.result()
    if not is_scenario(path):
        if not result.summary.get("events"):
            raise UsageError(f"{path}: no block trace events (a scenario file must end in .toml; "
                             f"a trace is blkparse or ftrace block_* text)")
        report_problems(path, result.summary)
    return result
