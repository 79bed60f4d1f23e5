"""Exploration speed: distinct states, states/s and peak memory over a ladder of configurations.

Each configuration runs in a fresh child process so that its peak RSS is its own.

    python benchmarks/bench.py              # the whole ladder (a few minutes)
    python benchmarks/bench.py --up-to 200000   # only rungs expected below that many states
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

from tabulate import tabulate

# (protocol, replicas, messages, crashes, elections, expected order of magnitude of distinct states)
LADDER = [
    ("hw", 2, 2, 2, 1, 5e3),
    ("leader-epoch", 2, 3, 2, 2, 2e4),
    ("leader-epoch", 3, 2, 1, 1, 1.4e5),
    ("leader-epoch", 2, 4, 3, 2, 1.9e5),
    ("hw", 3, 2, 2, 1, 6e5),
    ("leader-epoch", 3, 2, 2, 1, 7.6e5),
    ("leader-epoch", 3, 2, 2, 2, 2e6),
]


def run_one(protocol: str, replicas: int, messages: int, crashes: int, elections: int) -> dict:
    """In the child: one complete exploration, reported as JSON."""
    from kafka_mc.checker import check
    from kafka_mc.model import Config

    config = Config(protocol, replicas, messages, crashes, elections)
    started = time.perf_counter()
    result = check(config, keep_going=True)
    wall = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "config": f"{protocol} r={replicas} m={messages} c={crashes} e={elections}",
        "complete": result.complete,
        "distinct": result.stats.distinct_states,
        "generated": result.stats.states_generated,
        "wall_s": round(wall, 2),
        "states_per_s": round(result.stats.distinct_states / wall),
        "peak_rss_mb": round(peak_kib / 1024, 1),
        "bytes_per_state": round(peak_kib * 1024 / result.stats.distinct_states),
        "violated": ",".join(result.violated) or "-",
    }


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            cpu = next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{cpu}, {os.cpu_count()} cores, {memory:.0f} GiB, Python {platform.python_version()}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--up-to", type=float, default=float("inf"),
                        help="skip rungs expected to exceed this many distinct states")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        protocol, *numbers = args.child
        print(json.dumps(run_one(protocol, *map(int, numbers))))
        return
    rows = []
    for protocol, replicas, messages, crashes, elections, expected in LADDER:
        if expected > args.up_to:
            continue
        child = subprocess.run(
            [sys.executable, __file__, "--child", protocol, str(replicas), str(messages), str(crashes),
             str(elections)], capture_output=True, text=True, check=True)
        rows.append(json.loads(child.stdout))
        print(f"done: {rows[-1]['config']}", file=sys.stderr)
    if args.json:
        print(json.dumps({"machine": machine(), "rows": rows}, indent=2))
    else:
        print(f"machine: {machine()}")
        print(tabulate(rows, headers="keys", tablefmt="github"))


if __name__ == "__main__":
    main()
