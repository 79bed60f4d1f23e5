"""Users' own properties on the compiled kernel (lowered) beside the Python engine (run as written).

    python benchmarks/user_properties_bench.py            # leader-epoch, 3 replicas, 2 messages, 2 crashes, 2 elections

The properties are the shipped invariants written in plain Python (`properties/invariants.py`),
given to the engines as a user's functions (`properties.user.user_property`), so the kernel runs
them through the lowering (`properties/lowering.py`) and its interpreter, not its own compiled
invariants. Every property is checked on every reachable state (`--keep-going`). Prints distinct
states, seconds and distinct states per second of each engine (the kernel compiled first, and the
lowering counted in its time), whether their verdicts and shortest lengths agree, and the machine.
"""

from __future__ import annotations

import argparse
import time

from bench import machine
from tabulate import tabulate

from kafka_mc.checker import check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.checker.kernel.engine import compile_kernel
from kafka_mc.model import Config
from kafka_mc.properties import invariants
from kafka_mc.properties.user import user_property

FUNCTIONS = (invariants.no_committed_data_loss, invariants.no_consumed_record_lost, invariants.no_log_divergence,
             invariants.hw_below_leo, invariants.leader_epoch_monotonic, invariants.leader_in_isr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("counts", nargs="*", type=int, default=[3, 2, 2, 2],
                        help="replicas, messages, crashes, elections (default 3 2 2 2)")
    parser.add_argument("--protocol", default="leader-epoch")
    arguments = parser.parse_args()
    replicas, messages, crashes, elections = arguments.counts
    config = Config(arguments.protocol, replicas=replicas, messages=messages, crashes=crashes, elections=elections)
    properties = [user_property(function, function.__name__) for function in FUNCTIONS]
    compiled = compile_kernel()
    rows, outcomes = [], {}
    for name, engine in (("kernel (lowered)", kernel_check), ("python (as written)", check)):
        started = time.perf_counter()
        result = engine(config, properties, keep_going=True)
        seconds = time.perf_counter() - started
        outcomes[name] = {v.invariant: len(v.trace) for v in result.violations}
        rows.append([name, f"{result.stats.distinct_states:,}", f"{seconds:.1f}",
                     f"{result.stats.distinct_states / seconds:,.0f}"])
    print(f"{config}: {len(properties)} users' properties, every state (kernel compile {compiled:.1f} s, apart)")
    print(tabulate(rows, headers=["engine", "distinct states", "seconds", "distinct states/s"]))
    agree = len({tuple(sorted(found.items())) for found in outcomes.values()}) == 1
    print(f"violations (shortest lengths): {outcomes['kernel (lowered)']}; the engines agree: {agree}")
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
