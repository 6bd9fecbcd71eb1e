"""``blkstack seeds``: the five seed scenarios, before and after their
kernel change, beside the seed's own measurements."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from blkstack.cli import common
from blkstack.cli.common import EXIT_OK, UsageError, check_output, say, table, write_json_output
from blkstack.cli.compare import scenario_sides
from blkstack.cli.parallel import Runs, add_jobs_option
from blkstack.cli.scenarios import builtin_scenarios
from blkstack.comparison import fmt_figure

if TYPE_CHECKING:  # blkstack.seeds loads with the commands that use it
    from blkstack import seeds as S


def _find(name: str) -> S.Seed:
    from blkstack import seeds as S

    try:
        return S.seed(name)
    except KeyError:
        names = ", ".join(s.name for s in S.SEEDS)
        raise UsageError(f"{name}: no such seed (one of {names})") from None


def _progress(text: str) -> None:
    if sys.stderr.isatty():
        say(sys.stderr, f"{common.PROG}: {text}")


def _run(path: str, kernel: Optional[str], sets: Sequence[str], trace: Optional[str],
         progress: bool = True) -> Dict[str, Any]:
    return common.simulate(path, kernel, list(sets), trace, None, progress=progress)


def _run_traced(what: str, path: str, kernel: Optional[str], sets: Sequence[str], from_trace: Any,
                progress: bool = True) -> Dict[str, Any]:
    """One run, announced as *what*; with *from_trace*, what it reads from
    the run's trace goes into summary["trace"]."""
    _progress(what)
    if not from_trace:
        return _run(path, kernel, sets, None, progress)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="blkstack-seed-") as tmp:
        trace = os.path.join(tmp, "trace.txt")
        summary = _run(path, kernel, sets, trace, progress)
        with open(trace, encoding="utf-8") as fh:
            summary["trace"] = from_trace(fh.read())
    return summary


class _Pending:
    """The runs of one seed, submitted in the order a loop would run them."""

    def __init__(self, runs: Runs) -> None:
        self.runs = runs
        self.order: List[Any] = []

    def submit(self, what: str, path: str, kernel: Optional[str], sets: Sequence[str], from_trace: Any) -> Any:
        future = self.runs.submit(_run_traced, what, path, kernel, list(sets), from_trace, not self.runs.parallel)
        self.order.append(future)
        return future


def run_side(pending: _Pending, seed: S.Seed, path: str, side: Tuple[str, Optional[str], List[str]],
             quick: bool = False) -> Dict[str, Any]:
    """Every run of one side, as futures by variant: the scenario and each
    variant (quick: the scenario alone, with the seed's quick overrides)."""
    label, kernel, sets = side
    extra_sets = list(seed.quick) if quick else []
    runs: Dict[str, Any] = {}
    for variant, vsets in [("", [])] + ([] if quick else list(seed.variants.items())):
        what = f"seed {seed.number} {seed.name}: {label}{' ' + variant if variant else ''}"
        all_sets = list(sets) + list(extra_sets) + list(vsets)
        runs[variant] = pending.submit(what, path, kernel, all_sets, None if variant else seed.from_trace)
    return runs


def run_scenario_variants(pending: _Pending, files: contextlib.ExitStack, seed: S.Seed,
                          before: Dict[str, Any], after: Dict[str, Any]) -> None:
    """Each variant on a scenario of its own, under that scenario's
    [compare] sides, into the before and after runs."""
    import importlib.resources

    for variant, sv in seed.scenario_variants.items():
        path = str(files.enter_context(importlib.resources.as_file(builtin_scenarios()[sv.scenario])))
        sides = scenario_sides(path)
        assert sides is not None, f"{sv.scenario}.toml has no [compare] table"
        for runs, (label, kernel, sets) in ((before, sides[0]), (after, sides[1])):
            runs[variant] = pending.submit(f"seed {seed.number} {seed.name}: {label} {variant}", path, kernel,
                                           sets, sv.from_trace)


def start(seed: S.Seed, runs: Runs, files: contextlib.ExitStack,
          quick: bool = False) -> Callable[[], Dict[str, Any]]:
    """Submit every run of a seed, before and after; returns the function
    that waits for them and gives the seed's figures, the seed's and
    blkstack's."""
    import importlib.resources

    path = str(files.enter_context(importlib.resources.as_file(builtin_scenarios()[seed.name])))
    sides = scenario_sides(path)
    assert sides is not None, f"{seed.name}.toml has no [compare] table"
    pending = _Pending(runs)
    before = run_side(pending, seed, path, sides[0], quick)
    after = run_side(pending, seed, path, sides[1], quick)
    if not quick:
        run_scenario_variants(pending, files, seed, before, after)

    def finish() -> Dict[str, Any]:
        for future in pending.order:  # in the order a loop runs them: its first error
            future.result()
        return seed_result(seed, quick, sides, {k: f.result() for k, f in before.items()},
                           {k: f.result() for k, f in after.items()})
    return finish


def seed_result(seed: S.Seed, quick: bool, sides: Any, before: S.Runs, after: S.Runs) -> Dict[str, Any]:
    """A seed's figures from its finished runs."""
    result: Dict[str, Any] = {"name": seed.name, "seed": seed.number, "title": seed.title, "quick": quick}
    for key, side, runs in (("before", sides[0], before), ("after", sides[1], after)):
        figures = {f.key: f.read(runs) for f in seed.figures}
        result[key] = {"label": side[0], "kernel": runs[""].get("profile"), "set": side[2], **figures}
    result["seed_figures"] = {"before": {f.key: f.seed_before for f in seed.figures},
                              "after": {f.key: f.seed_after for f in seed.figures}}
    if seed.extra:
        result["evidence"] = seed.extra(before, after)
    return result


def evaluate_all(seeds: Sequence[S.Seed], quick: bool = False, jobs: Optional[int] = None) -> Iterator[Dict[str, Any]]:
    """Each seed's figures (as :func:`start` gives them), in order, while
    the runs of the seeds after it go on (at most *jobs* at once). Runs on
    threads start slowest first (:func:`slow_first`): the long ones then
    share the processors with the short ones instead of running alone at
    the end. One job runs each call as its result is read, in seed order."""
    with Runs(jobs) as runs, contextlib.ExitStack() as files:
        finishes = {i: start(seeds[i], runs, files, quick) for i in slow_first(seeds, quick)}
        for i in range(len(seeds)):
            yield finishes[i]()


def slow_first(seeds: Sequence[S.Seed], quick: bool) -> List[int]:
    """Indexes of *seeds*, those at full size that have quick overrides
    (the slow ones, which is why they have them) first, else in order."""
    return sorted(range(len(seeds)), key=lambda i: quick or not seeds[i].quick)


def evaluate(seed: S.Seed, quick: bool = False, jobs: Optional[int] = None) -> Dict[str, Any]:
    """Run a seed before and after; its figures, the seed's and blkstack's."""
    return next(evaluate_all([seed], quick, jobs))


def _ratio(value: Optional[float]) -> str:
    """after / before: '1.20x', or '1/290' for a large drop."""
    if value is None:
        return "-"
    if 0 < value < 0.1:
        return f"1/{1 / value:,.0f}"
    return f"{value:,.0f}x" if value >= 10 else f"{value:.2f}x"


def format_seed(result: Dict[str, Any], seed: S.Seed) -> str:
    from blkstack import seeds as S

    b, a = result["before"], result["after"]
    lines = [f"seed {seed.number}  {seed.name}: {seed.title}",
             f"  before: {b['label']} (profile {b['kernel']})    after: {a['label']} (profile {a['kernel']})", ""]
    rows = []
    for f in seed.figures:
        label = f"{f.label} ({f.unit})" if f.unit else f.label
        rows.append([label, fmt_figure(f.seed_before), fmt_figure(f.seed_after), _ratio(S.ratio(f.seed_before, f.seed_after)),
                     fmt_figure(b[f.key]), fmt_figure(a[f.key]), _ratio(S.ratio(b[f.key], a[f.key]))])
    headers = ["FIGURE", "SEED BEFORE", "SEED AFTER", "RATIO", "BLKSTACK BEFORE", "BLKSTACK AFTER", "RATIO"]
    lines += ["  " + l for l in table(headers, rows, [False] + [True] * 6)]
    if result.get("evidence"):
        lines.append("")
        lines += ["  " + l if l else "" for l in result["evidence"]]
    return "\n".join(lines)


def format_compact(results: Sequence[Dict[str, Any]]) -> str:
    """One line per seed: its headline figure, the seed's and blkstack's."""
    from blkstack import seeds as S

    rows = []
    for result in results:
        seed = S.seed(result["name"])
        f = next(f for f in seed.figures if f.key == seed.headline)
        b, a = result["before"][f.key], result["after"][f.key]
        unit = f" {f.unit}" if f.unit else ""
        rows.append([seed.number, seed.name, f.label,
                     f"{fmt_figure(f.seed_before)} -> {fmt_figure(f.seed_after)}{unit}",
                     f"{fmt_figure(b)} -> {fmt_figure(a)}{unit}" + (" *" if seed.quick else "")])
    lines = table(["SEED", "NAME", "FIGURE", "SEED'S MEASUREMENT", "BLKSTACK"], rows, [False] * 5)
    if any(S.seed(r["name"]).quick for r in results):
        lines.append("* on devices scaled down for speed (1/64 of the size): times scale with it; "
                     "the full run: blkstack seeds raid10-discard")
    return "\n".join(lines)


def cmd_seeds(args: argparse.Namespace) -> int:
    from blkstack import seeds as S

    chosen = [_find(args.name)] if args.name else list(S.SEEDS)
    if args.show:
        if not args.name:
            raise UsageError("--show needs a seed NAME (see 'blkstack seeds --list')")
        text = builtin_scenarios()[chosen[0].name].read_text(encoding="utf-8")
        sys.stdout.write(text)
        return EXIT_OK
    if args.list:
        rows = [[s.number, s.name, s.title] for s in S.SEEDS]
        for line in table(["SEED", "NAME", "CHANGE"], rows, [False, False, False]):
            print("  " + line)
        return EXIT_OK
    if args.json not in (None, "-"):
        check_output("--json", args.json)
    results = []
    for i, (seed, result) in enumerate(zip(chosen, evaluate_all(chosen, jobs=args.jobs))):
        results.append(result)
        if args.json != "-":
            if i:
                print()
            print(format_seed(result, seed))
            sys.stdout.flush()
    write_json_output("--json", args.json, {"seeds": results})
    return EXIT_OK


DESCRIPTION = """\
Run the five kernel changes blkstack was started from, each as a built-in
scenario under its before and after behaviour, and print the seed's own
measurements beside blkstack's: the figure, the seed's before and after
values and their ratio, then blkstack's.

  000 raid5-recursive-split  md raid5: split remainders at the tail or the head
                             (variant: zoned-split-order, zone write errors)
  001 plug-order             plug list order and plug merges (fio 4k randwrite)
  002 raid10-discard         md raid10 discard: chunk by chunk or whole ranges
  003 bio-align              bio size aligned to max_sectors at extraction
  004 virt-boundary          the virt_boundary merge gap rule

Each scenario is a file you can print, copy and change; its [compare]
table says what before and after are, so 'blkstack compare FILE' runs it
the same way. Seed 002's before side simulates ~22 million bios (about ten
seconds); the others take a second or less."""

EPILOG = """\
examples:
  blkstack seeds                                   # all five
  blkstack seeds raid5-recursive-split             # one (or by number: blkstack seeds 000)
  blkstack seeds --json - | python3 -m json.tool
  blkstack seeds bio-align --show > mine.toml      # copy it, change it ...
  blkstack compare mine.toml                       # ... and compare again"""


def register(sub: Any, kernels: List[str]) -> None:
    """Add the command to the top-level parser's subcommands."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("seeds", help="run the five seed scenarios before and after, beside the seeds' figures",
                       description=DESCRIPTION, epilog=EPILOG, formatter_class=fmt)
    p.add_argument("name", nargs="?", metavar="NAME", help="one seed, by name or number (default: all)")
    p.add_argument("--show", action="store_true", help="print the seed's scenario file instead of running it")
    p.add_argument("--list", action="store_true", help="list the seeds")
    p.add_argument("--json", metavar="FILE|-", help="write every figure as JSON to FILE ('-' for standard output)")
    add_jobs_option(p)
    p.set_defaults(func=cmd_seeds)

