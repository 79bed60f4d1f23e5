"""Exhaustive breadth-first exploration of any small transition system (the control-plane models).

The same search as `checker.bfs` for the replication model, without its packing and
partitions: the visited map holds the states themselves (the control-plane models have
thousands, not millions), each with its parent and the action that reached it. Level by
level, state properties are checked on every new state and step properties on every
transition, so the first violation found of each property is a shortest one. The stop rule
and the result are the replication engines' (`bfs.stop_reason`, `bfs.search_result`).
"""

from __future__ import annotations

import time
from typing import Callable, Hashable

from kafka_mc.model.interface import ALWAYS, Model

from .bfs import Budget, Progress, search_result, stop_reason
from .result import CheckResult, Stats, Trace

ENGINE = "bfs"


def explore(system: Model, *, keep_going: bool = False, budget: Budget = Budget(),
            progress: Callable[[Progress], None] | None = None) -> CheckResult:
    """Explore every state reachable in `system`, checking its properties (see `bfs.check` for
    `keep_going` and `budget`)."""
    properties = system.properties
    state_properties = [p for p in properties if not p.on_step]
    step_properties = [p for p in properties if p.on_step]
    invariants = {p.name for p in properties if p.kind == ALWAYS}
    started = time.perf_counter()
    parents: dict[Hashable, tuple] = {}  # state -> (parent state, action) or (None, initial index)
    found: dict[str, tuple] = {}  # property -> (state, action after it or None)

    def note(name: str, state: Hashable, action=None) -> None:
        found.setdefault(name, (state, action))

    def observe(before, action, after, new: bool) -> None:
        for prop in step_properties if before is not None else ():
            if prop.name not in found and prop.holds(before, action, after) != (prop.kind == ALWAYS):
                note(prop.name, before, action)
        if new:
            for prop in state_properties:
                if prop.name not in found and prop.holds(after) != (prop.kind == ALWAYS):
                    note(prop.name, after)

    frontier = []
    for index, state in enumerate(system.initial_states()):
        if state not in parents:
            parents[state] = (None, index)
            frontier.append(state)
            observe(None, None, state, True)
    generated, depth, stopped_because = len(frontier), 0, ""
    while frontier:
        stopped_because = stop_reason(found, invariants, len(properties), keep_going, budget, len(parents),
                                      time.perf_counter() - started)
        if stopped_because:
            break
        next_frontier = []
        for state in frontier:
            for action, following in system.successors(state):
                generated += 1
                new = following not in parents
                if new:
                    parents[following] = (state, action)
                    next_frontier.append(following)
                observe(state, action, following, new)
        frontier = next_frontier
        depth += 1 if frontier else 0
        if progress:
            progress(Progress(depth, generated, len(parents), len(frontier), time.perf_counter() - started))
    traces = {name: trace_to(system, parents.__getitem__, state, action) for name, (state, action) in found.items()}
    return search_result(ENGINE, system.config, properties, traces, not frontier and not stopped_because,
                         Stats(len(parents), generated, depth, time.perf_counter() - started), stopped_because)


def trace_to(system: Model, link_of: Callable[[Hashable], tuple], state: Hashable,
             last_action=None) -> Trace:
    """The path to `state` by its parent links (`link_of(state)`: the parent and the action from
    it, or None and the initial index), then `last_action` if given."""
    actions = [] if last_action is None else [last_action]
    parent, link = link_of(state)
    while parent is not None:
        actions.append(link)
        parent, link = link_of(parent)
    return Trace(system, link, tuple(reversed(actions)))
