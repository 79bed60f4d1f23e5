"""Holding the Z3 encoding equal to the explicit model, as TLC holds the TLA+ twin.

`successor_disagreements` fixes the encoding's state variables to each reachable state in
turn and enumerates every (action, next state) the solver admits, with a blocking clause per
answer, comparing the set with the explicit model's successors and every invariant's formula
with its Python predicate. `length_disagreements` compares the shortest violation of each
invariant found by bounded model checking with the breadth-first engine's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import z3

from kafka_mc.checker.bfs import check
from kafka_mc.model import Config, ReplicationModel, State
from kafka_mc.properties import INVARIANTS

from .bmc import bounded_check
from .layout import as_int, constant, decode, equal
from .properties import SYMBOLIC_INVARIANTS, well_formed
from .transitions import SymbolicModel


def reachable_states(config: Config) -> Iterator[State]:
    """Every state reachable under `config`, breadth first."""
    model = ReplicationModel(config)
    seen = set(model.initial_states())
    frontier = sorted(seen)
    while frontier:
        yield from frontier
        following = []
        for state in frontier:
            for _, successor in model.successors(state):
                if successor not in seen:
                    seen.add(successor)
                    following.append(successor)
        frontier = following


@dataclass(frozen=True)
class Disagreement:
    state: State
    what: str

    def __str__(self) -> str:
        return f"{self.what} in {self.state}"


def successor_disagreements(config: Config) -> tuple[int, list[Disagreement]]:
    """(states compared, disagreements) over every reachable state of `config`."""
    explicit, symbolic = ReplicationModel(config), SymbolicModel(config)
    before, after, action = symbolic.fresh("s"), symbolic.fresh("t"), symbolic.action_variable("a")
    solver = z3.SolverFor("QF_BV")
    solver.add(symbolic.step(before, after, action))
    compared, found = 0, []
    for state in reachable_states(config):
        compared += 1
        fixed = constant(symbolic.shape, state)
        if not z3.is_true(z3.simplify(well_formed(fixed))):
            found.append(Disagreement(state, "the state is not well formed"))
        for prop in INVARIANTS:
            value = z3.simplify(SYMBOLIC_INVARIANTS[prop.name](fixed))
            if z3.is_true(value) != prop.holds(state):
                found.append(Disagreement(state, f"{prop.name} is {z3.is_true(value)} in Z3"))
        solver.push()
        solver.add(equal(before, fixed))
        admitted = set()
        while solver.check() == z3.sat:
            model = solver.model()
            slot = model.eval(action, model_completion=True)
            successor = decode(model, after)
            admitted.add((symbolic.slots[as_int(slot)], successor))
            solver.add(z3.Not(z3.And(action == slot, equal(after, constant(symbolic.shape, successor)))))
        solver.pop()
        expected = set(explicit.successors(state))
        for action_taken, successor in sorted(admitted - expected):
            found.append(Disagreement(state, f"Z3 admits {action_taken} to {successor}"))
        for action_taken, successor in sorted(expected - admitted):
            found.append(Disagreement(state, f"Z3 misses {action_taken} to {successor}"))
    return compared, found


def shortest_lengths(config: Config, depth: int | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """(BFS, BMC) shortest violation length of every invariant either finds; BMC searches to
    `depth`, by default the longest BFS counterexample."""
    explicit = check(config, INVARIANTS, keep_going=True)
    bfs = {v.invariant: len(v.trace) for v in explicit.violations}
    bound = max(bfs.values(), default=0) if depth is None else depth
    bmc = {v.invariant: len(v.trace) for v in bounded_check(config, bound, keep_going=True).violations}
    return bfs, bmc
