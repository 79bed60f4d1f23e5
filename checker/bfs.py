"""Exhaustive breadth-first exploration of any model (`model.interface.Model`) with shortest
counterexamples.

For the replication model, visited states are kept as fingerprints only
(`model.state.fingerprint`), split over one or more partitions (`checker.partition`); parents
and action indices live in compact arrays. Any other model's states are kept as they are
(`checker.state_pool`). Level by level, every new state is checked against the invariants not
yet violated and every transition against the step properties, so the first violation found for
an invariant is a shortest one; a trace is rebuilt from the parent links and replayed through the
model. Counts, verdicts and traces do not depend on the number of workers.
"""

from __future__ import annotations

import time
from contextlib import closing
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.replication import ReplicationBehaviour, ReplicationSystem, model_of
from kafka_mc.model import Action, Config, ReplicationModel, State
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.model.interface import Model
from kafka_mc.model.symmetry import canonical, rename, renaming
from kafka_mc.properties import ALWAYS, Property

from .partition import ROOT, LevelReport, without_cyclic_gc
from .result import EVERYTHING_FOUND, CheckResult, Coverage, Stats, Trace, Violation, coverage_of
from .state_pool import StatePool
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
        return self.out_of_time(seconds)

    def out_of_time(self, seconds: float) -> str:
        """Why a run stops after `seconds` ("" to go on): checked inside a level too, where the
        state budget is not (so that every engine stops at the same state count)."""
        return self.time_up if self.max_seconds is not None and seconds >= self.max_seconds else ""

    @property
    def time_up(self) -> str:
        """Why a run stopped when its time budget ran out."""
        return f"time budget of {self.max_seconds:g} s reached"


def _system_of(transitions: ReplicationModel) -> ReplicationBehaviour:
    """The system whose transitions these are: the replication model, or it with the controller's
    epoch bumps."""
    return (EpochBumpSystem if isinstance(transitions, EpochBumpModel) else ReplicationSystem)(transitions.config)


def concrete_trace(model: ReplicationModel, initial: int, actions: list[Action], symmetry: bool,
                   represent: Callable[[State], State] = canonical) -> Trace:
    """The trace of a path. Under symmetry the path's actions act on class representatives (as
    `represent` picks them); each is renamed to act on the concrete state, so the trace replays
    without symmetry."""
    if not symmetry:
        return Trace(_system_of(model), initial, tuple(actions))
    state = model.initial_states()[initial]
    representative = represent(state)
    concrete = []
    for action in actions:
        concrete.append(rename(action, renaming(representative, state)))
        following, represented = model.next_state(state, concrete[-1]), model.next_state(representative, action)
        assert following is not None and represented is not None  # every action of the path is enabled
        state, representative = following, represent(represented)
    return Trace(_system_of(model), initial, tuple(concrete))


def check(
    model: Model | Config,
    properties: Iterable[Property] | None = None,
    *,
    keep_going: bool = False,
    symmetry: bool = False,
    workers: int = 1,
    budget: Budget = Budget(),
    progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    """Explore every state reachable in `model`: any `model.interface.Model`, or a `Config` of the
    replication model (checked for `properties`, all of `properties.PROPERTIES` unless given; a
    model's own properties are part of it).

    Stops after the level of the first invariant violation unless `keep_going`, in which
    case it explores everything and reports the shortest violation of each invariant
    (stopping early only once every property is decided: all violated or reached).
    With `symmetry`, states equal up to renaming replicas count once (see
    `model.symmetry`); verdicts are the same and traces stay concrete. `workers` > 1
    spreads the visited set over that many processes, with the same results. The replication
    model's visited set keeps fingerprints of packed states (`checker.partition`); another
    model's keeps the states (`checker.state_pool`), in this process and without symmetry.
    """
    model = model_of(model, properties)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, not {workers!r}")
    config, properties = model.config, model.properties
    invariants = {p.name for p in properties if p.kind == ALWAYS}
    started = time.perf_counter()

    def seconds() -> float:
        return time.perf_counter() - started

    found: dict[str, tuple] = {}  # property -> (key, where), from the first level it shows in
    pool = _pool(model, symmetry, workers)
    with without_cyclic_gc(), closing(pool):
        totals = LevelReport()
        _record(found, pool.seed(), totals)
        frontier, depth, stopped_because = totals.frontier, 0, ""
        while frontier:
            stopped_because = stop_reason(found, invariants, len(properties), keep_going, budget,
                                          totals.new_states, seconds())
            if stopped_because:
                break
            level = LevelReport()
            stop_at = None if budget.max_seconds is None else time.monotonic() + budget.max_seconds - seconds()
            _record(found, pool.level(set(found), stop_at), level)
            totals.generated += level.generated
            totals.new_states += level.new_states
            totals.enabled.update(level.enabled)
            totals.new_by_action.update(level.new_by_action)
            frontier = level.frontier
            if level.cut:  # the time budget ran out inside the level
                stopped_because = budget.time_up
                break
            depth += 1 if level.new_states else 0
            if progress:
                progress(Progress(depth, totals.generated, totals.new_states, frontier,
                                  time.perf_counter() - started))
        traces = {name: _trace(model, pool, where, symmetry) for name, (_, where) in found.items()}
    engine = "bfs" + ("+symmetry" if symmetry else "") + (f" ({workers} workers)" if workers > 1 else "")
    return search_result(engine, config, properties, traces, not frontier and not stopped_because,
                         Stats(totals.new_states, totals.generated, depth, time.perf_counter() - started),
                         stopped_because, coverage_of(model.action_names, totals.enabled, totals.new_by_action))


def _pool(model: Model, symmetry: bool, workers: int):
    """The visited set for `model`: the replication model's partitions, or its states."""
    if isinstance(model, ReplicationSystem):
        return (LocalPartitions(model.config, model.properties, symmetry) if workers == 1
                else WorkerPartitions(model.config, model.properties, symmetry, workers))
    for wanted, option in ((symmetry, "symmetry"), (workers > 1, "more than one worker")):
        if wanted:
            raise ValueError(f"{option} is for the replication model; the {model.name} model is explored "
                             "in one process without it")
    return StatePool(model)


def stop_reason(found: Iterable[str], invariants: set[str], property_count: int, keep_going: bool,
                budget: Budget, distinct: int, seconds: float) -> str:
    """Why a breadth-first search stops before its next level ("" to go on): the level of the
    first violation is done (unless `keep_going`), every property is decided, or the budget is
    spent. Every explicit engine stops by this rule, so their counts agree."""
    found = set(found)
    if invariants & found and not keep_going:
        return "stopped after the level of the first violation"
    if len(found) == property_count:
        return EVERYTHING_FOUND
    return budget.exceeded(distinct, seconds)


def search_result(engine: str, config: Config, properties: tuple[Property, ...],
                  traces: Mapping[str, Trace], complete: bool, stats: Stats,
                  stopped_because: str, coverage: tuple[Coverage, ...] | None = None) -> CheckResult:
    """The CheckResult of a search that found `traces` (property name -> shortest trace):
    violations shortest first, witnesses reached or not; `coverage` per action if the engine
    counted it."""
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
        invariants=tuple(p.name for p in properties if p.kind == ALWAYS),
        coverage=coverage,
    )


def _record(found: dict[str, tuple], reports: list[LevelReport], level: LevelReport) -> None:
    """Merge the partitions' reports of one level; a property's first level is the one kept."""
    for report in reports:
        level.merge(report)
    for name, entry in level.found.items():
        found.setdefault(name, entry)


def _trace(model: Model, pool, where: tuple, symmetry: bool) -> Trace:
    """The trace to (partition, node), or for a step property to (partition, node, action): the
    replication model's partitions keep action slots, a `StatePool` the actions."""
    partition, node, *last = where
    actions = list(last)
    while True:
        parent_partition, parent_node, action = pool.link(partition, node)
        if parent_partition == ROOT:
            break
        actions.append(action)
        partition, node = parent_partition, parent_node
    actions.reverse()
    if isinstance(model, ReplicationSystem):
        actions = [model.action_at(a) for a in actions]
    return path_trace(model, action, actions, symmetry)


def path_trace(model: Model, initial: int, actions: list, symmetry: bool,
               represent: Callable[[State], State] = canonical) -> Trace:
    """The trace of the path of `actions` from the initial state `initial`; with `symmetry`, a path
    over class representatives of the replication model, with the epoch bumps or without (as
    `represent` picks them), made concrete."""
    if isinstance(model, ReplicationSystem) or (symmetry and isinstance(model, ReplicationBehaviour)):
        return concrete_trace(model.transitions, initial, actions, symmetry, represent)
    return Trace(model, initial, tuple(actions))
