"""Exploration speed of the compiled kernel beside TLC, on the TLA+ twin's state spaces.

The ladder of `bench.py` and, above it, rungs up to 10^8 distinct states. Each run is a fresh
child process (its peak RSS is its own): the kernel with one thread and with two, and TLC with
one and with two workers (through `bench.py`'s runner). A kernel row splits the wall time into
JIT compilation (or loading it from numba's cache) and exploration; distinct states per second
are over the exploration; "visited_bytes_per_state" is the visited table's and parent links' memory
at the end (`KernelStats.visited_bytes`) over the distinct states.

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
    ("leader-epoch", 3, 4, 3, 1, 3.8e7),
    ("leader-epoch", 3, 4, 5, 1, 1.04e8),
]
ENGINES = ("kernel 1", "kernel 2", "TLC -workers 1", "TLC -workers 2")
COLUMNS = ("config", "engine", "distinct", "generated", "wall_s", "compile_s", "explore_s", "cpu_s", "distinct_per_s",
           "peak_rss_mb", "bytes_per_state", "visited_bytes_per_state", "collision_probability", "violated",
           "load_before", "load_after")


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
        "visited_bytes_per_state": round(stats.visited_bytes / stats.distinct_states, 1),
        "collision_probability": f"{stats.collision_probability:.1e}",
        "violated": ",".join(result.violated) or "-",
    }


def costs(config_args: list[str], frontier_at_least: int = 200_000) -> list[dict]:
    """Microseconds per frontier state of each part of a level, one thread, on the first frontier
    of at least `frontier_at_least` states: unpacking, the rest of the expansion (every action slot,
    packing and fingerprinting the successors), the property flags of the new states, and the
    rest of the level (the visited table, parent links, the next frontier)."""
    import numba
    import numpy as np

    from kafka_mc.checker.kernel.engine import _Search, compile_kernel
    from kafka_mc.checker.kernel.explore import BLOCK, expand_block, flag_block, unpack
    from kafka_mc.checker.kernel.layout import WIDTH
    from kafka_mc.model import Config
    from kafka_mc.properties import PROPERTIES

    @numba.njit
    def unpack_all(frontier, count, layout):
        wide = np.empty(WIDTH, dtype=np.int16)
        for index in range(count):
            unpack(frontier, index * layout[5], layout[0], layout[1], layout[2], layout[3], layout[4], wide)

    compile_kernel()
    numba.set_num_threads(1)
    protocol, replicas, messages, crashes, elections = config_args
    search = _Search(Config(protocol, int(replicas), int(messages), int(crashes), int(elections)), PROPERTIES)
    while search.frontier_count < frontier_at_least:
        search.run_level()
    layout, count = search.layout, search.frontier_count
    arrays = (layout.cells, layout.biases, layout.bits, layout.shifts, layout.words)
    words, slot_count = layout.word_count, len(search.slot_codes)
    room = BLOCK * slot_count
    buffers = (np.empty(room * words, np.int64), np.empty(room, np.uint64), np.empty(room, np.int64),
               np.empty(room, np.bool_), np.empty(BLOCK, np.int64))
    flags = np.empty(BLOCK, np.int64)
    unpack_all(search.frontier, 1, (*arrays, words))

    def timed(work) -> float:
        started = time.process_time()
        work()
        return (time.process_time() - started) / count * 1e6

    def expand():
        for first in range(0, count, BLOCK):
            expand_block(search.cfg, search.slot_codes, search.orders, *arrays, words, search.frontier, first,
                         min(BLOCK, count - first), *buffers)

    def flag():
        for first in range(0, count, BLOCK):
            flag_block(search.cfg, *arrays, words, search.frontier, first, min(BLOCK, count - first), flags)

    unpacking = timed(lambda: unpack_all(search.frontier, count, (*arrays, words)))
    expansion, flagging = timed(expand), timed(flag)
    generated_before = search.generated
    level = timed(search.run_level)
    successors, fresh = (search.generated - generated_before) / count, search.frontier_count / count
    parts = {"unpacking": unpacking,
             f"transitions ({slot_count} slots, {successors:.2f} enabled), packing, fingerprints": expansion - unpacking,
             f"property flags ({fresh:.2f} new states)": flagging * fresh,
             "visited table, parent links, next frontier": level - expansion - flagging * fresh}
    total = sum(parts.values())
    return [{"part": part, "us_per_state": round(value, 3), "share": f"{value / total:.0%}"}
            for part, value in parts.items()]


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
    parser.add_argument("--costs", nargs=5, metavar=("PROTOCOL", "R", "M", "C", "E"),
                        help="time each part of a level on one configuration instead")
    parser.add_argument("--child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.costs:
        print(f"load average {load_average()}")
        print(tabulate(costs(args.costs), headers="keys", tablefmt="github"))
        return
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
