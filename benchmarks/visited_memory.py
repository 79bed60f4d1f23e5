"""The memory of the CPU kernel's visited set and parent links at a given number of distinct states.

It fills the kernel's own structures, not a model's state space: N distinct 64-bit fingerprints (a
counter through the kernel's own mix, so they spread as a state's fingerprints do) inserted into the
visited table with `explore.insert_all`, in blocks the size of a kernel block's successors, and a
parent link appended for each (`links.ParentLinks`), as a search that finds N distinct states does.
A state space of 10^9 states takes hours to explore on a few cores; the structures it fills take
minutes, and their size depends only on how many fingerprints they hold.

It reports the table's slots and bytes per state at the end, the largest bytes per state of the table
and links together after any block from N / 10 states on (the shards sized as they were then: a growth's
transient of one old shard per thread is not in it), the process's peak RSS (which is: the Python
interpreter and numba, about 150 MB, and a block's keys), and the insertion rate.

    python benchmarks/visited_memory.py --states 1e8
    python benchmarks/visited_memory.py --states 1e9 --out benchmarks/visited_memory_results.json
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from bench import machine
from kafka_mc.checker.kernel.explore import SHARDS, fingerprints, insert_all, new_table, table_slots
from kafka_mc.checker.kernel.links import BYTES_PER_STATE, NO_PARENT, PAGE, ParentLinks

BLOCK_KEYS = 1 << 16  # about the successors of a kernel block (4,096 frontier states, a few each)
INITIAL_TABLE_SLOTS = 1 << 16  # as the kernel's engine starts


def measure(states: int) -> dict:
    table, counts, links = new_table(INITIAL_TABLE_SLOTS), np.zeros(SHARDS, dtype=np.int64), ParentLinks()
    worst, started, done = 0.0, time.perf_counter(), 0
    while done < states:
        size = min(BLOCK_KEYS, states - done)
        keys = fingerprints(np.arange(done, done + size, dtype=np.int64), size, 1)
        fresh = insert_all(table, counts, keys)
        if not fresh.all():
            raise SystemExit(f"a fingerprint collision among the first {done + size:,} counters: pick other counters")
        links.extend(np.full(size, NO_PARENT, dtype=np.uint32), np.zeros(size, dtype=np.uint8))
        done += size
        if done * 10 >= states:  # the last nine tenths of the run: "at N states"
            slots = table_slots(table)
            worst = max(worst, (slots * 8 + (done + PAGE - 1) // PAGE * PAGE * BYTES_PER_STATE) / done)
    seconds = time.perf_counter() - started
    slots = table_slots(table)
    return {
        "states": states,
        "table_slots": slots,
        "table_bytes_per_state": round(slots * 8 / states, 2),
        "links_bytes_per_state": round(links.nbytes / states, 2),
        "bytes_per_state": round((slots * 8 + links.nbytes) / states, 2),
        "worst_bytes_per_state": round(worst, 2),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
        "seconds": round(seconds, 1),
        "inserted_per_second": round(states / seconds),
        "machine": machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--states", type=float, default=1e8, help="distinct fingerprints to insert (default 1e8)")
    parser.add_argument("--out", help="append the row to this JSON file (a list)")
    args = parser.parse_args()
    if args.states < 1 or args.states >= 2 ** 32 - 1:
        parser.error(f"--states {args.states:g}: give a count from 1 to {2 ** 32 - 2:,} (node numbers are 32-bit)")
    row = measure(int(args.states))
    print(json.dumps(row, indent=2))
    if args.out:
        try:
            with open(args.out) as existing:
                rows = json.load(existing)
        except FileNotFoundError:
            rows = []
        rows.append(row)
        with open(args.out, "w") as out:
            json.dump(rows, out, indent=2)
            out.write("\n")


if __name__ == "__main__":
    main()
