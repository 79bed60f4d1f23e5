"""Exploration speed: kafka-mc and TLC on the same state spaces.

For each configuration of a ladder (none of them violates an invariant, so every run
explores the whole state space), this runs kafka-mc with one and with two workers,
kafka-mc with `--symmetry`, and TLC on the TLA+ twin with one and with two workers, each
in a fresh child process so that its peak RSS is its own (for several processes, the
largest one's), and prints distinct and generated states, wall time, distinct states per
second, CPU seconds of every process, peak RSS and bytes per distinct state.

    python benchmarks/bench.py                    # the whole ladder (about 80 minutes)
    python benchmarks/bench.py --up-to 200000     # only rungs expected below that many states
    python benchmarks/bench.py --no-tlc           # kafka-mc only
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time

from tabulate import tabulate

# (protocol, replicas, messages, crashes, elections, expected distinct states)
LADDER = [
    ("leader-epoch", 3, 1, 1, 1, 1.4e4),
    ("leader-epoch", 2, 3, 2, 2, 2e4),
    ("leader-epoch", 3, 2, 1, 1, 1e5),
    ("leader-epoch", 4, 1, 1, 1, 4.5e5),
    ("leader-epoch", 3, 2, 2, 1, 5.8e5),
    ("leader-epoch", 3, 2, 3, 1, 1.6e6),
    ("leader-epoch", 3, 3, 2, 1, 3.3e6),
    ("leader-epoch", 3, 4, 2, 1, 1.3e7),
]
ENGINES = ("kafka-mc", "kafka-mc --workers 2", "kafka-mc --symmetry", "TLC -workers 1", "TLC -workers 2")


def run_engine(engine: str, config_args: list[str]) -> dict:
    """In the child: one complete exploration by one engine, as a JSON-ready row."""
    from kafka_mc.model import Config

    protocol, replicas, messages, crashes, elections = config_args
    config = Config(protocol, int(replicas), int(messages), int(crashes), int(elections))
    started = time.perf_counter()
    if engine.startswith("TLC"):
        from kafka_mc.checker.tlc import run_tlc

        result = run_tlc(config, workers=int(engine.split()[-1]), timeout=3600)
        distinct, generated, violated = result.distinct_states, result.states_generated, result.violated
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    else:
        from kafka_mc.checker import check

        workers = int(engine.split()[-1]) if "--workers" in engine else 1
        result = check(config, keep_going=True, symmetry=engine.endswith("--symmetry"), workers=workers)
        distinct, generated, violated = (result.stats.distinct_states, result.stats.states_generated,
                                         result.violated)
        peak_kib = max(resource.getrusage(who).ru_maxrss
                       for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    wall = time.perf_counter() - started
    cpu = sum(usage.ru_utime + usage.ru_stime
              for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)))
    return {
        "config": f"{protocol} r={replicas} m={messages} c={crashes} e={elections}",
        "engine": engine,
        "distinct": distinct,
        "generated": generated,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "distinct_per_s": round(distinct / wall),
        "peak_rss_mb": round(peak_kib / 1024),
        "bytes_per_state": round(peak_kib * 1024 / distinct),
        "violated": ",".join(violated) or "-",
    }


def run_child(engine: str, config_args: list) -> dict:
    """One complete exploration by one engine in a fresh process (so that its peak RSS is its
    own), as a row; `config_args` are protocol, replicas, messages, crashes and elections."""
    child = subprocess.run([sys.executable, __file__, "--child", engine, *map(str, config_args)],
                           capture_output=True, text=True)
    if child.returncode != 0:
        sys.exit(f"{engine} failed on {config_args}:\n{child.stderr}")
    return json.loads(child.stdout)


def machine() -> str:
    cpu = platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0] \
        if shutil.which("java") else "no java"
    return f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB, Python {platform.python_version()}, {java}"


def spread(seconds: list[float]) -> dict:
    """A shape's timed runs, for a benchmark's JSON: their median, least and most, in seconds."""
    return {"median_s": statistics.median(seconds), "min_s": min(seconds), "max_s": max(seconds)}


def save_figures(figures: dict, path: str | None) -> None:
    """A benchmark's figures with the load average at its end, written as JSON to `path` when given."""
    figures["load_at_end"] = os.getloadavg()[0]
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--up-to", type=float, default=float("inf"),
                        help="skip rungs expected to exceed this many distinct states")
    parser.add_argument("--at-least", type=float, default=0,
                        help="skip rungs expected below this many distinct states")
    parser.add_argument("--no-tlc", action="store_true", help="run kafka-mc only")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--save", metavar="FILE",
                        help="write the rows as JSON to FILE after every run (a long run keeps what it measured)")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        engine, *config_args = args.child
        print(json.dumps(run_engine(engine, config_args)))
        return
    engines = [e for e in ENGINES if not (args.no_tlc and e.startswith("TLC"))]
    rows = []
    for *config_args, expected in LADDER:
        if not args.at_least <= expected <= args.up_to:
            continue
        for engine in engines:
            rows.append(run_child(engine, config_args))
            print(f"done: {rows[-1]['config']} {engine}", file=sys.stderr)
            if args.save:
                with open(args.save, "w") as saved:
                    json.dump({"machine": machine(), "rows": rows}, saved, indent=2)
    if args.json:
        print(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    else:
        print(f"machine: {machine()}")
        print(tabulate(rows, headers="keys", tablefmt="github"))


if __name__ == "__main__":
    main()
