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

from kafka_mc.model import Action, Config, ReplicationModel, State, fingerprint
from kafka_mc.model.symmetry import canonical, rename, renaming
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

    def path(self, model: ReplicationModel, node: int) -> tuple[int, list[Action]]:
        """The initial-state index and the actions that discovered the node."""
        actions = []
        while self.parent[node] != ROOT:
            actions.append(model.action_at(self.action[node]))
            node = self.parent[node]
        return self.action[node], actions[::-1]


def concrete_trace(model: ReplicationModel, initial: int, actions: list[Action], symmetry: bool) -> Trace:
    """The trace of a path. Under symmetry the path's actions act on class representatives; each
    is renamed to act on the concrete state, so the trace replays without symmetry."""
    if not symmetry:
        return Trace(model.config, initial, tuple(actions))
    state = model.initial_states()[initial]
    representative = canonical(state)
    concrete = []
    for action in actions:
        concrete.append(rename(action, renaming(representative, state)))
        state = model.next_state(state, concrete[-1])
        representative = canonical(model.next_state(representative, action))
    return Trace(model.config, initial, tuple(concrete))


def check(
    config: Config,
    properties: Iterable[Property] = PROPERTIES,
    *,
    keep_going: bool = False,
    symmetry: bool = False,
    budget: Budget = Budget(),
    progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    """Explore every state reachable under `config`.

    Stops at the first invariant violation unless `keep_going`, in which case it
    explores everything and reports the shortest violation of each invariant. With
    `symmetry`, states equal up to renaming replicas count once (see `model.symmetry`);
    verdicts are the same and traces stay concrete.
    """
    model = ReplicationModel(config)
    represent = canonical if symmetry else (lambda state: state)
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
        state = represent(state)
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
                following = represent(following)
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
    trace_to = _trace_builder(model, visited, symmetry)
    stats = Stats(len(visited), generated, depth, time.perf_counter() - started)
    return CheckResult(
        engine="bfs+symmetry" if symmetry else "bfs",
        config=config,
        complete=complete,
        stats=stats,
        violations=tuple(Violation(name, trace_to(node))
                         for name, node in sorted(violations.items(), key=lambda item: item[1])),
        witnesses={p.name: p.name in witness_nodes for p in properties if p.kind != ALWAYS},
        stopped_because=stopped_because,
        witness_traces={name: trace_to(where) for name, where in witness_nodes.items()},
    )


def _trace_builder(model: ReplicationModel, visited: _Visited, symmetry: bool):
    def trace_to(where) -> Trace:
        """The trace to a node, or, for a step witness, to (parent node, action index)."""
        node, last = where if isinstance(where, tuple) else (where, None)
        initial, actions = visited.path(model, node)
        if last is not None:
            actions.append(model.action_at(last))
        return concrete_trace(model, initial, actions, symmetry)
    return trace_to
