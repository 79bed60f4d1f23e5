"""The control-plane models' breadth-first search on Spark, with Spark's own RDD operators.

The replication engine (`checker.spark`) moves packed states through Arrow batches and the
compiled kernel; a control-plane model (`control.system`) is a Python class with a few
thousand to a few hundred thousand states, so here the states themselves (tuples of ints) are
the keys. Level by level: the frontier's successors are generated on the executors
(`flatMap`; the model travels with the task, pickled), one parent is kept per state
(`reduceByKey`), states already visited are removed (`subtractByKey`, both sides hash-partitioned
the same way), the new states join the visited set (`union`, then `localCheckpoint` cuts the
lineage), and the properties are checked on the executors: step properties on every transition,
state properties on every new state. The driver only counts, collects what broke (at most a
few records per property) and rebuilds each trace by looking up parents, one partition per
lookup. The stop rule and the result are the local engines' (`bfs.stop_reason`,
`bfs.search_result`), so counts, verdicts and shortest lengths equal `checker.bfs.check`'s; when a
level holds several shortest traces, which one is kept may differ.
"""

from __future__ import annotations

import time
from typing import Callable, Hashable

from kafka_mc.model.interface import ALWAYS

from .bfs import Budget, Progress, search_result, stop_reason
from .bfs import trace_to
from .result import CheckResult, Stats
from .shipping import ship

ENGINE = "spark"


def spark_explore(system, *, master: str = "local[*]", partitions: int | None = None, keep_going: bool = False,
                  budget: Budget = Budget(), progress: Callable[[Progress], None] | None = None) -> CheckResult:
    """Explore every state reachable in `system` on the Spark cluster at `master`."""
    from .spark import session

    spark = session(master, partitions, app_name=f"kafka-mc control {system.name}")
    context = spark.sparkContext
    ship(context)
    width = partitions or context.defaultParallelism
    properties = system.properties
    invariants = {p.name for p in properties if p.kind == ALWAYS}
    started = time.perf_counter()
    initial: dict[Hashable, tuple[None, int]] = {}  # state -> (no parent, its index)
    for index, state in enumerate(system.initial_states()):
        initial.setdefault(state, (None, index))
    frontier = context.parallelize(list(initial.items())).partitionBy(width, state_hash).persist()
    visited = frontier
    found = _first_of_each(frontier.flatMap(_state_findings(properties)), properties)
    distinct, generated, depth, stopped_because = len(initial), len(initial), 0, ""
    while True:
        stopped_because = stop_reason(found, invariants, len(properties), keep_going, budget, distinct,
                                      time.perf_counter() - started)
        if stopped_because:
            break
        edges = frontier.keys().flatMap(_expand(system)).persist()
        for name, where in _first_of_each(edges.flatMap(_step_findings(properties)), properties).items():
            found.setdefault(name, where)
        new = (edges.reduceByKey(_least, width, state_hash).subtractByKey(visited, width)
               .partitionBy(width, state_hash).persist())
        generated += edges.count()
        fresh = new.count()
        edges.unpersist()
        if not fresh:
            frontier = None
            break
        for name, where in _first_of_each(new.flatMap(_state_findings(properties)), properties).items():
            found.setdefault(name, where)
        visited = visited.union(new).partitionBy(width, state_hash).persist()
        visited.localCheckpoint()  # taken when the next level's anti-join computes it
        frontier, distinct, depth = new, distinct + fresh, depth + 1
        if progress:
            progress(Progress(depth, generated, distinct, fresh, time.perf_counter() - started))
    traces = {name: trace_to(system, lambda key: visited.lookup(key)[0], state, action)
              for name, (state, action) in found.items()}
    return search_result(ENGINE, system.config, properties, traces, frontier is None and not stopped_because,
                         Stats(distinct, generated, depth, time.perf_counter() - started), stopped_because)


def state_hash(state) -> int:
    """Where a state lives: Python's hash of a tuple of ints, the same in every process (Spark's
    own `portable_hash` refuses to run on a driver without PYTHONHASHSEED)."""
    return hash(state)


def _expand(system):
    def successors(state):
        return [(following, (state, action)) for action, following in system.successors(state)]
    return successors


def _least(a, b):
    """The parent link kept for a state reached several ways in one level (any, but the same every run)."""
    return min(a, b, key=repr)


def _state_findings(properties):
    """For a new state: (property index, (state, None)) for each state property it decides."""
    def findings(entry):
        state = entry[0]
        return [(i, (state, None)) for i, p in enumerate(properties)
                if not p.on_step and p.holds(state) != (p.kind == ALWAYS)]
    return findings


def _step_findings(properties):
    """For a transition: (property index, (state before, action)) for each step property it decides."""
    def findings(edge):
        after, (before, action) = edge
        return [(i, (before, action)) for i, p in enumerate(properties)
                if p.on_step and p.holds(before, action, after) != (p.kind == ALWAYS)]
    return findings


def _first_of_each(findings, properties) -> dict:
    """Property name -> one finding (the least, so runs agree), collected to the driver. Keys are
    property indices on the cluster: Spark hashes strings only with PYTHONHASHSEED fixed."""
    return {properties[index].name: where for index, where in findings.reduceByKey(_least).collect()}
