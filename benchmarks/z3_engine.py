"""The Z3 engine's figures: bounded model checking next to the breadth-first engine.

    python benchmarks/z3_engine.py --cases          # Case L and Case D: seconds to the shortest violation
    python benchmarks/z3_engine.py --depths 20      # leader-epoch, 2 replicas: seconds per BMC depth
    python benchmarks/z3_engine.py --catalogue      # every violated cell of the default failure catalogue:
                                                    # BMC's shortest lengths against BFS's
    python benchmarks/z3_engine.py --cases --save z3.json   # also the rows as JSON

Markdown tables on stdout; the machine and Z3's version first. Each figure is one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import z3
from tabulate import tabulate

from kafka_mc.checker import check
from kafka_mc.checker.matrix import DEFAULT_BOUNDS, Axes
from kafka_mc.checker.scenario import documented_scenarios, load_scenario
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.model import Config
from kafka_mc.properties import INVARIANTS


def _lengths(result) -> dict[str, int]:
    return {v.invariant: len(v.trace) for v in result.violations}


def _timed(run):
    started = time.perf_counter()
    result = run()
    return result, time.perf_counter() - started


def cases() -> list[dict]:
    """The documented cases with a violation: every invariant's shortest violation and the seconds
    to find them all, BFS (every reachable state) and BMC (to the longest of those lengths)."""
    rows = []
    for path in documented_scenarios():
        config = load_scenario(path).config
        bfs, bfs_seconds = _timed(lambda: check(config, INVARIANTS, keep_going=True))
        if not bfs.violations:
            continue
        bmc, bmc_seconds = _timed(lambda: bounded_check(config, max(_lengths(bfs).values()), keep_going=True))
        rows.append({"case": path.stem, "bfs_shortest": _lengths(bfs), "bfs_seconds": round(bfs_seconds, 2),
                     "bmc_shortest": _lengths(bmc), "bmc_seconds": round(bmc_seconds, 2)})
    return rows


def depths(bound: int) -> list[dict]:
    """leader-epoch, 2 replicas, 2 messages, 2 crashes, 1 election: the time of each depth."""
    rows = []
    bounded_check(Config("leader-epoch", messages=2, crashes=2, elections=1), bound,
                  progress=lambda report: rows.append({"depth": report.depth,
                                                       "solver_seconds": round(report.solver_seconds, 2),
                                                       "clauses": report.clauses,
                                                       "seconds_in_all": round(report.seconds, 1),
                                                       "violated": list(report.violated)}))
    return rows


def catalogue() -> list[dict]:
    """Every cell of the default failure catalogue with a violation: shortest lengths of BFS and BMC."""
    rows = []
    for config in Axes().configs(DEFAULT_BOUNDS):
        bfs, bfs_seconds = _timed(lambda: check(config, INVARIANTS, keep_going=True, symmetry=True))
        shortest = _lengths(bfs)
        if not shortest:
            continue
        bmc, bmc_seconds = _timed(lambda: bounded_check(config, max(shortest.values()), keep_going=True))
        rows.append({"cell": _cell_name(config), "bfs_shortest": shortest, "bmc_shortest": _lengths(bmc),
                     "equal": _lengths(bmc) == shortest, "bfs_seconds": round(bfs_seconds, 2),
                     "bmc_seconds": round(bmc_seconds, 2)})
        print(f"{rows[-1]['cell']}: equal={rows[-1]['equal']} ({bmc_seconds:.1f} s)", flush=True, file=sys.stderr)
    return rows


def _cell_name(c: Config) -> str:
    return (f"{c.protocol} acks={c.acks} min.isr={c.min_isr} {'unclean' if c.unclean else 'clean'} "
            f"{'flush' if c.flush else 'no-flush'}")


def _cpu() -> str:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.machine()


def _table(rows: list[dict]) -> str:
    def cell(value):
        if isinstance(value, dict):
            return ", ".join(f"{name} {length}" for name, length in sorted(value.items())) or "-"
        return ", ".join(value) if isinstance(value, list) else value

    return tabulate([{k: cell(v) for k, v in row.items()} for row in rows], headers="keys", tablefmt="github")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", action="store_true", help="Case L and Case D, BFS and BMC")
    parser.add_argument("--depths", type=int, metavar="K", help="seconds per BMC depth up to K (leader-epoch)")
    parser.add_argument("--catalogue", action="store_true", help="BMC against BFS on every violated catalogue cell")
    parser.add_argument("--save", type=Path, help="also write the rows as JSON to this file")
    args = parser.parse_args()
    if not (args.cases or args.depths or args.catalogue):
        parser.error("choose at least one of --cases, --depths K, --catalogue")
    if args.depths is not None and args.depths < 0:
        parser.error(f"--depths must be 0 or more, not {args.depths}")
    print(f"Machine: {_cpu()}, {os.cpu_count()} cores; "
          f"Python {platform.python_version()}; Z3 {z3.get_version_string()}\n")
    saved = {}
    for wanted, name, run in ((args.cases, "cases", cases), (args.depths is not None, "depths",
                              lambda: depths(args.depths)), (args.catalogue, "catalogue", catalogue)):
        if wanted:
            saved[name] = run()
            print(_table(saved[name]) + "\n", flush=True)
    if args.save:
        args.save.write_text(json.dumps(saved, indent=2) + "\n")


if __name__ == "__main__":
    main()
