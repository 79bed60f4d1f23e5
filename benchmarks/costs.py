"""Where an exploration's time goes: the cost of one state, and what a second worker gains.

Per state: every distinct state of the configuration is collected once and packed; then, a
slice at a time as the checker does, the slice is unpacked and each part of the work is
timed over it in turn: the model's transitions (every action slot, enabled or not), each
invariant, the fingerprints of the successors and their packing (a successor packs like a
new state; the checker packs each distinct state once). The parts are the per-state work of
the checker; what they leave out is the visited table, the parent arrays and the loops.

Two workers: wall and CPU seconds of `check` with one worker (once before and once after the
rest, which shows this machine's run-to-run noise), with two, and of two one-worker runs side
by side, which tells how well the machine runs two busy processes at all; each run is a fresh
process of `bench.py`. From these: the partitioned path's extra CPU (the owner hash, path
keys, outboxes, their pickling, sorted frontiers) and the time workers wait for each other at
the end of a level.

    python benchmarks/costs.py                          # leader-epoch r=3 m=2 c=2 e=1 (about 4 minutes)
    python benchmarks/costs.py --messages 3 --no-per-state   # the two-worker part on 3.3e6 states (10 min)
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

from bench import machine, run_child
from tabulate import tabulate

from kafka_mc.checker.packing import StatePacker
from kafka_mc.checker.partition import without_cyclic_gc
from kafka_mc.model import Config, ReplicationModel, fingerprint
from kafka_mc.properties import INVARIANTS


def reachable_records(model: ReplicationModel) -> tuple[StatePacker, bytes]:
    """Every distinct state, breadth first, packed as the checker's frontiers hold them."""
    seen = set(model.initial_states())
    frontier = list(seen)
    packer = StatePacker(frontier[0])
    records = bytearray(b"".join(map(packer.pack, frontier)))
    while frontier:
        frontier = [following for state in frontier for _, following in model.indexed_successors(state)
                    if following not in seen and not seen.add(following)]
        records += b"".join(map(packer.pack, frontier))
    return packer, bytes(records)


def per_state_costs(config: Config, chunk: int = 4096) -> list[dict]:
    """Microseconds per distinct state of each part of the work, and its share of their sum. Like
    the checker, the states are unpacked a slice at a time, and each part is timed over the slice
    in turn, so that the machine's noise falls on every part alike."""
    model = ReplicationModel(config)
    packer, records = reachable_records(model)
    count, generated = len(records) // packer.size, 0
    parts = ["unpacking", "transitions", *(f"invariant {p.name}" for p in INVARIANTS),
             "fingerprints of the successors", "packing (once per distinct state)"]
    seconds = dict.fromkeys(parts, 0.0)

    def timed(part: str, work):
        started = time.perf_counter()
        result = work()
        seconds[part] += time.perf_counter() - started
        return result

    for start in range(0, len(records), chunk * packer.size):
        states = timed("unpacking", lambda: list(packer.unpack(records[start:start + chunk * packer.size])))
        successors = timed("transitions", lambda: [following for state in states
                                                   for _, following in model.indexed_successors(state)])
        generated += len(successors)
        for p in INVARIANTS:
            timed(f"invariant {p.name}", lambda: [p.holds(state) for state in states])
        timed("fingerprints of the successors", lambda: [fingerprint(state) for state in successors])
        # a successor packs like a new state: its changed nested values are not interned yet
        timed("packing (once per distinct state)", lambda: [packer.pack(state) for state in successors])
    seconds["packing (once per distinct state)"] *= count / generated
    total = sum(seconds.values())
    rows = [{"part": part, "us_per_state": round(seconds[part] / count * 1e6, 2),
             "share": f"{seconds[part] / total:.0%}"} for part in parts]
    slots = len(model.action_names) * config.replicas
    rows[1]["part"] = f"transitions ({slots} slots, {generated / count:.2f} enabled)"
    rows.append({"part": "sum of the parts", "us_per_state": round(total / count * 1e6, 2), "share": "100%"})
    return rows


def scaling(config: Config) -> list[dict]:
    """One worker before and after the others (their difference is this machine's run-to-run
    noise), two workers, and two one-worker runs side by side."""
    bounds = (config.protocol, config.replicas, config.messages, config.crashes, config.elections)
    before, two = run_child("kafka-mc", bounds), run_child("kafka-mc --workers 2", bounds)
    with ThreadPoolExecutor(2) as pair:
        side_by_side = max(row["wall_s"] for row in pair.map(run_child, ["kafka-mc"] * 2, [bounds] * 2))
    after = run_child("kafka-mc", bounds)
    one = (before["wall_s"] + after["wall_s"]) / 2
    one_cpu = (before["cpu_s"] + after["cpu_s"]) / 2
    return [
        {"measure": "1 worker: wall s (CPU s), run before and after",
         "value": f"{before['wall_s']:.1f} ({before['cpu_s']:.1f}), {after['wall_s']:.1f} ({after['cpu_s']:.1f})"},
        {"measure": "1 worker: distinct states/s (mean of the two)", "value": f"{before['distinct'] / one:,.0f}"},
        {"measure": "2 workers: wall s (CPU s of both)", "value": f"{two['wall_s']:.1f} ({two['cpu_s']:.1f})"},
        {"measure": "2 workers: speed-up over 1", "value": f"{one / two['wall_s']:.2f}"},
        {"measure": "2 workers: CPU over 1 worker's", "value": f"{two['cpu_s'] / one_cpu:.2f}"},
        {"measure": "2 workers: wall over half their CPU (waiting)",
         "value": f"{two['wall_s'] / (two['cpu_s'] / 2):.2f}"},
        {"measure": "two 1-worker runs side by side: speed-up over 1", "value": f"{2 * one / side_by_side:.2f}"},
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--protocol", default="leader-epoch")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--messages", type=int, default=2)
    parser.add_argument("--crashes", type=int, default=2)
    parser.add_argument("--elections", type=int, default=1)
    parser.add_argument("--no-per-state", action="store_true", help="only the two-worker part")
    args = parser.parse_args()
    try:
        config = Config(args.protocol, args.replicas, args.messages, args.crashes, args.elections)
    except ValueError as error:
        parser.error(str(error))
    print(f"machine: {machine()}\nconfig: {config}\n")
    if not args.no_per_state:
        with without_cyclic_gc():
            costs = per_state_costs(config)
        print(tabulate(costs, headers="keys", tablefmt="github"), "\n")
    print(tabulate(scaling(config), headers="keys", tablefmt="github"))


if __name__ == "__main__":
    main()
