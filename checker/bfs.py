"""Exhaustive breadth-first exploration with shortest counterexamples.

Visited states are kept as fingerprints only (`model.state.fingerprint`), split over
one or more partitions (`checker.partition`); parents and action indices live in
compact arrays, and a trace is rebuilt from them and replayed through the model. Level
by level, every new state is checked against the invariants not yet violated, so the
first violation found for an invariant is a shortest one. Counts, verdicts and traces
do not depend on the number of workers.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Action, Config, ReplicationModel, State
from kafka_mc.model.symmetry import canonical, rename, renaming
from kafka_mc.properties import ALWAYS, PROPERTIES, Property

from .partition import ROOT, LevelReport, without_cyclic_gc
from .result import CheckResult, Stats, Trace, Violation
from .workers import LocalPartitions, WorkerPartitions


@dataclass(frozen=True)
class Progress:
    depth: int
    states_generated: int
    distinct_states: int
    queue: int
    seconds: float

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Budget:
    """Limits that end a run early; a run that hits one is reported incomplete, never passed."""

    max_states: int | None = None
    max_seconds: float | None = None

    def exceeded(self, distinct: int, seconds: float) -> str:
        if self.max_states is not None and distinct >= self.max_states:
            return f"state budget of {self.max_states} distinct states reached"
        if self.max_seconds is not None and seconds >= self.max_seconds:
            return f"time budget of {self.max_seconds:g} s reached"
        return ""


def concrete_trace(model: ReplicationModel, initial: int, actions: list[Action], symmetry: bool,
                   represent: Callable[[State], State] = canonical) -> Trace:
    """The trace of a path. Under symmetry the path's actions act on class representatives (as
    `represent` picks them); each is renamed to act on the concrete state, so the trace replays
    without symmetry."""
    if not symmetry:
        return Trace(ReplicationSystem(model.config), initial, tuple(actions))
    state = model.initial_states()[initial]
    representative = represent(state)
    concrete = []
    for action in actions:
        concrete.append(rename(action, renaming(representative, state)))
        following, represented = model.next_state(state, concrete[-1]), model.next_state(representative, action)
        assert following is not None and represented is not None  # every action of the path is enabled
        state, representative = following, represent(represented)
    return Trace(ReplicationSystem(model.config), initial, tuple(concrete))


def check(
    config: Config,
    properties: Iterable[Property] = PROPERTIES,
    *,
    keep_going: bool = False,
    symmetry: bool = False,
    workers: int = 1,
    budget: Budget = Budget(),
    progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    """Explore every state reachable under `config`.

    Stops after the level of the first invariant violation unless `keep_going`, in which
    case it explores everything and reports the shortest violation of each invariant
    (stopping early only once every property is decided: all violated or reached).
    With `symmetry`, states equal up to renaming replicas count once (see
    `model.symmetry`); verdicts are the same and traces stay concrete. `workers` > 1
    spreads the visited set over that many processes, with the same results.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, not {workers!r}")
    properties = tuple(properties)
    invariants = {p.name for p in properties if p.kind == ALWAYS}
    model = ReplicationModel(config)
    started = time.perf_counter()
    found: dict[str, tuple] = {}  # property -> (key, where), from the first level it shows in
    pool = (LocalPartitions(config, properties, symmetry) if workers == 1
            else WorkerPartitions(config, properties, symmetry, workers))
    with without_cyclic_gc(), closing(pool):
        totals = LevelReport()
        _record(found, pool.seed(), totals)
        frontier, depth, stopped_because = totals.frontier, 0, ""
        while frontier:
            stopped_because = stop_reason(found, invariants, len(properties), keep_going, budget,
                                          totals.new_states, time.perf_counter() - started)
            if stopped_because:
                break
            level = LevelReport()
            _record(found, pool.level(set(found)), level)
            totals.generated += level.generated
            totals.new_states += level.new_states
            frontier = level.frontier
            depth += 1 if level.new_states else 0
            if progress:
                progress(Progress(depth, totals.generated, totals.new_states, frontier,
                                  time.perf_counter() - started))
        traces = {name: _trace(model, pool, where, symmetry) for name, (_, where) in found.items()}
    engine = "bfs" + ("+symmetry" if symmetry else "") + (f" ({workers} workers)" if workers > 1 else "")
    return search_result(engine, config, properties, traces, not frontier and not stopped_because,
                         Stats(totals.new_states, totals.generated, depth, time.perf_counter() - started),
                         stopped_because)


def stop_reason(found: Iterable[str], invariants: set[str], property_count: int, keep_going: bool,
                budget: Budget, distinct: int, seconds: float) -> str:
    """Why a breadth-first search stops before its next level ("" to go on): the level of the
    first violation is done (unless `keep_going`), every property is decided, or the budget is
    spent. Every explicit engine stops by this rule, so their counts agree."""
    found = set(found)
    if invariants & found and not keep_going:
        return "stopped after the level of the first violation"
    if len(found) == property_count:
        return "every invariant violated and every witness reached"
    return budget.exceeded(distinct, seconds)


def search_result(engine: str, config: Config, properties: tuple[Property, ...],
                  traces: Mapping[str, Trace], complete: bool, stats: Stats,
                  stopped_because: str) -> CheckResult:
    """The CheckResult of a search that found `traces` (property name -> shortest trace):
    violations shortest first, witnesses reached or not."""
    invariants = {p.name for p in properties if p.kind == ALWAYS}
    violated = sorted((name for name in traces if name in invariants), key=lambda n: (len(traces[n]), n))
    return CheckResult(
        engine=engine,
        config=config,
        complete=complete,
        stats=stats,
        violations=tuple(Violation(name, traces[name]) for name in violated),
        witnesses={p.name: p.name in traces for p in properties if p.kind != ALWAYS},
        stopped_because=stopped_because,
        witness_traces={name: trace for name, trace in traces.items() if name not in invariants},
    )


def _record(found: dict[str, tuple], reports: list[LevelReport], level: LevelReport) -> None:
    """Merge the partitions' reports of one level; a property's first level is the one kept."""
    for report in reports:
        level.merge(report)
    for name, entry in level.found.items():
        found.setdefault(name, entry)


def _trace(model: ReplicationModel, pool, where: tuple, symmetry: bool) -> Trace:
    """The trace to (partition, node), or for a step witness to (partition, node, action)."""
    partition, node, *last = where
    actions = list(last)
    while True:
        parent_partition, parent_node, action = pool.link(partition, node)
        if parent_partition == ROOT:
            break
        actions.append(action)
        partition, node = parent_partition, parent_node
    return concrete_trace(model, action, [model.action_at(a) for a in reversed(actions)], symmetry)
