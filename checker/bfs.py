"""Exhaustive breadth-first exploration with shortest counterexamples.

Visited states are kept as fingerprints only (`model.state.fingerprint`), each
mapped to a node number; parents and action indices live in compact arrays, and a
trace is rebuilt from them and replayed through the model. Level by level, every new
state is checked against the invariants not yet violated, so the first violation
found for an invariant is a shortest one.
"""

from __future__ import annotations

import time
from array import array
from dataclasses import dataclass
from typing import Callable, Iterable

from kafka_mc.model import Config, ReplicationModel, State, fingerprint
from kafka_mc.properties import ALWAYS, PROPERTIES, Property

from .result import CheckResult, Stats, Trace, Violation

ROOT = -1


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


class _Visited:
    """Fingerprint -> node number, with each node's parent node and action index in arrays."""

    def __init__(self) -> None:
        self.node_of: dict[int, int] = {}
        self.parent = array("q")
        self.action = array("q")  # action index, or the initial-state index for a root

    def add(self, key: int, parent: int, action: int) -> int | None:
        """The new node's number, or None if the fingerprint was already visited."""
        if key in self.node_of:
            return None
        node = len(self.parent)
        self.node_of[key] = node
        self.parent.append(parent)
        self.action.append(action)
        return node

    def __len__(self) -> int:
        return len(self.parent)

    def trace(self, model: ReplicationModel, node: int) -> Trace:
        path = []
        while self.parent[node] != ROOT:
            path.append(model.action_at(self.action[node]))
            node = self.parent[node]
        return Trace(model.config, self.action[node], tuple(reversed(path)))


def check(
    config: Config,
    properties: Iterable[Property] = PROPERTIES,
    *,
    keep_going: bool = False,
    budget: Budget = Budget(),
    progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    """Explore every state reachable under `config`.

    Stops at the first invariant violation unless `keep_going`, in which case it
    explores everything and reports the shortest violation of each invariant.
    """
    model = ReplicationModel(config)
    properties = tuple(properties)
    pending = [p for p in properties if p.kind == ALWAYS]
    state_witnesses = [p for p in properties if p.kind != ALWAYS and not p.on_step]
    step_witnesses = [p for p in properties if p.kind != ALWAYS and p.on_step]
    witness_nodes: dict[str, int] = {}
    violations: dict[str, int] = {}
    visited = _Visited()
    started = time.perf_counter()
    generated = 0
    depth = 0
    stopped_because = ""

    def examine(state: State, node: int) -> None:
        for prop in list(pending):
            if not prop.holds(state):
                violations[prop.name] = node
                pending.remove(prop)
        for prop in list(state_witnesses):
            if prop.holds(state):
                witness_nodes[prop.name] = node
                state_witnesses.remove(prop)

    frontier: list[tuple[int, State]] = []
    for index, state in enumerate(model.initial_states()):
        generated += 1
        node = visited.add(fingerprint(state), ROOT, index)
        if node is not None:
            frontier.append((node, state))
            examine(state, node)

    def out_of_budget() -> str:
        if budget.max_states is not None and len(visited) >= budget.max_states:
            return f"state budget of {budget.max_states} distinct states reached"
        if budget.max_seconds is not None and time.perf_counter() - started >= budget.max_seconds:
            return f"time budget of {budget.max_seconds:g} s reached"
        return ""

    while frontier and not (violations and not keep_going):
        stopped_because = out_of_budget()
        if stopped_because:
            break
        depth += 1
        next_frontier: list[tuple[int, State]] = []
        for parent, state in frontier:
            for action, following in model.successors(state):
                generated += 1
                for prop in list(step_witnesses):
                    if prop.holds(state, following):
                        witness_nodes[prop.name] = (parent, model.action_index(action))
                        step_witnesses.remove(prop)
                node = visited.add(fingerprint(following), parent, model.action_index(action))
                if node is not None:
                    next_frontier.append((node, following))
                    examine(following, node)
            if violations and not keep_going:
                break
        frontier = next_frontier
        if progress:
            progress(Progress(depth, generated, len(visited), len(frontier), time.perf_counter() - started))
        if not next_frontier:
            depth -= 1

    if violations and not keep_going:
        stopped_because = "stopped at the first violation"
    complete = not frontier and not stopped_because
    stats = Stats(len(visited), generated, depth, time.perf_counter() - started)
    return CheckResult(
        engine="bfs",
        config=config,
        complete=complete,
        stats=stats,
        violations=tuple(Violation(name, visited.trace(model, node))
                         for name, node in sorted(violations.items(), key=lambda item: item[1])),
        witnesses={p.name: p.name in witness_nodes for p in properties if p.kind != ALWAYS},
        stopped_because=stopped_because,
        witness_traces={name: _witness_trace(model, visited, where) for name, where in witness_nodes.items()},
    )


def _witness_trace(model: ReplicationModel, visited: _Visited, where) -> Trace:
    if isinstance(where, tuple):  # a step witness: the parent node and the action taken from it
        parent, action = where
        trace = visited.trace(model, parent)
        return Trace(trace.config, trace.initial, trace.actions + (model.action_at(action),))
    return visited.trace(model, where)
