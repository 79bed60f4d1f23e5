"""Exploration speed of the compiled kernel beside TLC, on the TLA+ twin's state spaces.

The ladder of `bench.py` and, above it, rungs up to 10^8 distinct states. Each run is a fresh
child process (its peak RSS is its own): the kernel with one thread and with two, and TLC with
one and with two workers (through `bench.py`'s runner). A kernel row splits the wall time into
JIT compilation (or loading it from numba's cache) and exploration; distinct states per second
are over the exploration.

    python benchmarks/kernel_bench.py --up-to 1e6            # rungs expected below a million states
    python benchmarks/kernel_bench.py --at-least 5e7 --no-tlc --engines "kernel 1"
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

from tabulate import tabulate

from bench import LADDER, machine, run_child as run_bench_child

# (protocol, replicas, messages, crashes, elections, expected distinct states), beyond bench.LADDER
LARGER = [
    ("leader-epoch", 3, 4, 3, 1, 3.7e7),
    ("leader-epoch", 3, 4, 4, 1, 1.0e8),
]
ENGINES = ("kernel 1", "kernel 2", "TLC -workers 1", "TLC -workers 2")
COLUMNS = ("config", "engine", "distinct", "generated", "wall_s", "compile_s", "explore_s", "cpu_s", "distinct_per_s",
           "peak_rss_mb", "bytes_per_state", "collision_probability", "violated", "load_before", "load_after")


def run_kernel(threads: int, config_args: list[str]) -> dict:
    """In the child: one complete exploration by the kernel, as a JSON-ready row."""
    started = time.perf_counter()
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.model import Config

    protocol, replicas, messages, crashes, elections = config_args
    config = Config(protocol, int(replicas), int(messages), int(crashes), int(elections))
    result = kernel_check(config, keep_going=True, workers=threads)
    wall = time.perf_counter() - started
    stats = result.stats
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "config": f"{protocol} r={replicas} m={messages} c={crashes} e={elections}",
        "engine": f"kernel {threads}",
        "distinct": stats.distinct_states,
        "generated": stats.states_generated,
        "wall_s": round(wall, 2),
        "compile_s": round(stats.compile_seconds, 2),
        "explore_s": round(stats.seconds, 2),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "distinct_per_s": round(stats.distinct_states / stats.seconds),
        "peak_rss_mb": round(usage.ru_maxrss / 1024),
        "bytes_per_state": round(usage.ru_maxrss * 1024 / stats.distinct_states, 1),
        "collision_probability": f"{stats.collision_probability:.1e}",
        "violated": ",".join(result.violated) or "-",
    }


def run_child(engine: str, config_args: list) -> dict:
    if engine.startswith("TLC"):
        row = run_bench_child(engine, config_args)
        row["explore_s"] = row["wall_s"]
        return row
    threads = engine.split()[-1]
    child = subprocess.run([sys.executable, __file__, "--child", threads, *map(str, config_args)],
                           capture_output=True, text=True)
    if child.returncode != 0:
        sys.exit(f"{engine} failed on {config_args}:\n{child.stderr}")
    return json.loads(child.stdout)


def load_average() -> str:
    with open("/proc/loadavg") as loadavg:
        return " ".join(loadavg.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--up-to", type=float, default=float("inf"),
                        help="skip rungs expected to exceed this many distinct states")
    parser.add_argument("--at-least", type=float, default=0, help="skip rungs expected below this many")
    parser.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of: {', '.join(ENGINES)}")
    parser.add_argument("--no-tlc", action="store_true", help="run the kernel only")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--save", metavar="FILE", help="write the rows as JSON to FILE after every run")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        threads, *config_args = args.child
        print(json.dumps(run_kernel(int(threads), config_args)))
        return
    engines = [e.strip() for e in args.engines.split(",") if not (args.no_tlc and e.strip().startswith("TLC"))]
    rows = []
    for *config_args, expected in LADDER + LARGER:
        if not args.at_least <= expected <= args.up_to:
            continue
        for engine in engines:
            before = load_average()
            rows.append({**run_child(engine, config_args), "load_before": before, "load_after": load_average()})
            print(f"done: {rows[-1]['config']} {engine}", file=sys.stderr)
            if args.save:
                with open(args.save, "w") as saved:
                    json.dump({"machine": machine(), "rows": rows}, saved, indent=2)
    if args.json:
        print(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    else:
        print(f"machine: {machine()}")
        print(tabulate([[row.get(column, "-") for column in COLUMNS] for row in rows], headers=COLUMNS,
                       tablefmt="github"))


if __name__ == "__main__":
    main()
