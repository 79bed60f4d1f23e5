"""Users' own properties on the compiled kernel (lowered) beside the Python engine (run as written).

    python benchmarks/user_properties_bench.py            # leader-epoch, 3 replicas, 2 messages, 2 crashes, 2 elections
    python benchmarks/user_properties_bench.py --versus-shipped 3 2 3 1   # the toolkit issue's aim, below
    python benchmarks/user_properties_bench.py --spark local[1] 3 2 1 1   # on Spark's executors, both ways
    python benchmarks/user_properties_bench.py --step 3 2 2 1             # what a user's step property costs

The properties are the shipped invariants written in plain Python (`properties/invariants.py`),
given to the engines as a user's functions (`properties.user.user_property`), so the kernel runs
them through the lowering (`properties/lowering.py`) and its interpreter, not its own compiled
invariants. Every property is checked on every reachable state (`--keep-going`). Prints distinct
states, seconds and distinct states per second of each engine (the kernel compiled first, and the
lowering counted in its time), whether their verdicts and shortest lengths agree, and the machine.

With `--versus-shipped`, each function instead runs alone on the kernel beside the kernel's own
compiled invariant of the same meaning (`properties.INVARIANTS`), every state each, and where it is
violated Z3's bounded check (`--engine z3`) looks for it at the shortest length the kernel found:
the aim is the user's property at no less than half the shipped one's speed, and Z3 finding it at
the explicit search's length.

With `--spark MASTER`, the properties run on the Spark engine instead, one run each way: the
executors running the kernel (the properties lowered, `checker.spark_kernel`) and running the model
itself (the functions as written, `kernel=False`), beside the kernel with one thread.

With `--step`, the kernel (one thread) explores every state with kafka-mc's own properties (its
compiled ones), then again with the step property of the documentation (`no_step_drops`,
docs/properties.md) beside them: the seconds each, the steps, and what the step property costs a step
(its program's instructions run once per step, `checker.kernel.user_properties.step_block_flags`).
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
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.properties import INVARIANTS, invariants
from kafka_mc.properties.user import user_property

def no_step_drops(state, action, next_state):
    """A step property: no replica loses a committed record it held (docs/properties.md's example)."""
    for before, after in zip(state.replicas, next_state.replicas):
        for offset, msg in next_state.committed:
            if offset < before.leo and before.log[offset].msg == msg:
                assert offset < after.leo and after.log[offset].msg == msg, f"{action} dropped m{msg}"


FUNCTIONS = (invariants.no_committed_data_loss, invariants.no_consumed_record_lost, invariants.no_log_divergence,
             invariants.hw_below_leo, invariants.leader_epoch_monotonic, invariants.leader_in_isr)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("counts", nargs="*", type=int, default=[3, 2, 2, 2],
                        help="replicas, messages, crashes, elections (default 3 2 2 2)")
    parser.add_argument("--protocol", default="leader-epoch")
    parser.add_argument("--versus-shipped", action="store_true",
                        help="each function alone beside the kernel's own invariant, and Z3 at its length")
    parser.add_argument("--spark", metavar="MASTER", help="on Spark's executors (e.g. local[1]), both ways")
    parser.add_argument("--step", action="store_true", help="the kernel without and with a user's step property")
    arguments = parser.parse_args()
    replicas, messages, crashes, elections = arguments.counts
    config = Config(arguments.protocol, replicas=replicas, messages=messages, crashes=crashes, elections=elections)
    properties = [user_property(function, function.__name__) for function in FUNCTIONS]
    compiled = compile_kernel()
    if arguments.versus_shipped:
        versus_shipped(config, properties, compiled)
        return
    if arguments.step:
        step_cost(config, compiled)
        return
    engines = (("kernel (lowered)", kernel_check), ("python (as written)", check))
    if arguments.spark:
        engines = spark_engines(arguments.spark)
    rows, outcomes = [], {}
    for name, engine in engines:
        started = time.perf_counter()
        result = engine(config, properties, keep_going=True)
        seconds = time.perf_counter() - started
        outcomes[name] = {v.invariant: len(v.trace) for v in result.violations}
        rows.append([name, f"{result.stats.distinct_states:,}", f"{seconds:.1f}",
                     f"{result.stats.distinct_states / seconds:,.0f}"])
    print(f"{config}: {len(properties)} users' properties, every state (kernel compile {compiled:.1f} s, apart)")
    print(tabulate(rows, headers=["engine", "distinct states", "seconds", "distinct states/s"]))
    agree = len({tuple(sorted(found.items())) for found in outcomes.values()}) == 1
    print(f"violations (shortest lengths): {outcomes[engines[0][0]]}; the engines agree: {agree}")
    print(f"machine: {machine()}")


def spark_engines(master: str) -> tuple:
    """The kernel with one thread, then the Spark engine on `master` with its executors running the
    kernel and then the model, in one session started beforehand (its start is not timed)."""
    from kafka_mc.checker.spark import run_spark_check, session

    spark = session(master)

    def executors(kernel: bool):
        def run(config, properties, keep_going):
            result, ran = run_spark_check(config, properties, keep_going=keep_going, spark=spark, kernel=kernel)
            assert ran.kernel == kernel
            return result
        return run

    return (("kernel, 1 thread (lowered)", kernel_check), (f"spark {master}, kernel's executors (lowered)",
                                                          executors(True)),
            (f"spark {master}, model's executors (as written)", executors(False)))


def step_cost(config: Config, compiled: float) -> None:
    """The kernel with one thread over every state, with kafka-mc's own properties, then with the
    documentation's step property beside them."""
    from kafka_mc.checker.kernel.user_properties import lowered_program
    from kafka_mc.properties import PROPERTIES

    step = user_property(no_step_drops, "no_step_drops")
    rows, seconds = [], []
    for name, chosen in (("kafka-mc's own", list(PROPERTIES)), ("kafka-mc's own and no_step_drops",
                                                                list(PROPERTIES) + [step])):
        started = time.perf_counter()
        result = kernel_check(config, chosen, keep_going=True)
        seconds.append(time.perf_counter() - started)
        rows.append([name, f"{result.stats.distinct_states:,}", f"{result.stats.states_generated:,}",
                     f"{seconds[-1]:.2f}", sorted(v.invariant for v in result.violations)])
    steps = result.stats.states_generated
    print(f"{config}: every state, one thread (kernel compile {compiled:.1f} s, apart)")
    print(tabulate(rows, headers=["properties", "distinct states", "steps", "seconds", "violated"]))
    print(f"no_step_drops: {len(lowered_program(step, config).instructions):,} instructions, "
          f"{(seconds[1] - seconds[0]) / steps * 1e6:.2f} us a step ({seconds[1] / seconds[0]:.1f} times the run)")
    print(f"machine: {machine()}")


def versus_shipped(config: Config, properties: list, compiled: float) -> None:
    """Each user's property alone on the kernel beside the shipped invariant with its function, then Z3."""
    rows = []
    for prop in properties:
        own = next(p for p in INVARIANTS if p.holds is prop.predicate)
        timings, lengths = [], []
        for chosen in (prop, own):
            started = time.perf_counter()
            result = kernel_check(config, [chosen], keep_going=True)
            seconds = time.perf_counter() - started
            timings.append((result.stats.distinct_states / seconds, seconds))
            lengths.append(len(result.violations[0].trace) if result.violations else None)
        z3 = "-"
        if lengths[0] is not None:
            started = time.perf_counter()
            bounded = bounded_check(config, lengths[0], [prop])
            found = len(bounded.violations[0].trace) if bounded.violations else None
            z3 = f"{found} steps, {time.perf_counter() - started:.1f} s" if found is not None else "not found"
        rows.append([prop.name, own.name, f"{timings[0][0]:,.0f} ({timings[0][1]:.1f} s)",
                     f"{timings[1][0]:,.0f} ({timings[1][1]:.1f} s)", f"{timings[0][0] / timings[1][0]:.2f}",
                     lengths[0] if lengths[0] is not None else "holds",
                     lengths[1] if lengths[1] is not None else "holds", z3])
    print(f"{config}: every state, one property a run (kernel compile {compiled:.1f} s, apart)")
    print(tabulate(rows, headers=["user's function", "shipped", "user's, states/s", "shipped, states/s",
                                  "ratio", "user's shortest", "shipped shortest", "z3 at that length"]))
    print(f"machine: {machine()}")


if __name__ == "__main__":
    main()
