"""Holding the Z3 encoding equal to the explicit model, as TLC holds the TLA+ twin.

`Z3Encoding` is the encoding as `kafka_mc.testing.check_conformance` takes it, which holds it to
the explicit model on every reachable state of a list of configurations; `Z3Encoding(bumps=True)`
the bump model's encoding, held to `model.epoch_bumps.EpochBumpModel`
(`check_conformance(..., transitions=EpochBumpModel)`). `shortest_lengths`
compares the shortest violation of each invariant found by bounded model checking with the
breadth-first engine's.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import z3

from kafka_mc.checker.bfs import check
from kafka_mc.model import Config, State
from kafka_mc.properties import INVARIANTS
from kafka_mc.testing import Expansion

from .bmc import bounded_check
from .budget import solve
from .layout import as_int, constant, decode, equal
from .properties import SYMBOLIC_INVARIANTS, well_formed
from .transitions import SymbolicModel


class Z3Encoding:
    """The Z3 encoding as an `Encoding` for `kafka_mc.testing.check_conformance`: with its state
    variables fixed to each state, every (action, next state) the solver admits, one blocking
    clause per answer, and every invariant's formula evaluated on the state. `bumps`: the encoding
    of the bump model (`model/epoch_bumps.py`), to hold to `EpochBumpModel`."""

    ordered = False

    def __init__(self, bumps: bool = False):
        self.bumps = bumps
        self.name = "Z3 encoding with the epoch bumps" if bumps else "Z3 encoding"

    def expand(self, config: Config, states: Sequence[State]) -> Iterator[Expansion]:
        symbolic = SymbolicModel(config, bumps=self.bumps)
        before, after, action = symbolic.fresh("s"), symbolic.fresh("t"), symbolic.action_variable("a")
        solver = z3.SolverFor("QF_BV")
        solver.add(symbolic.step(before, after, action))
        for state in states:
            fixed = constant(symbolic.shape, state)
            if not z3.is_true(z3.simplify(well_formed(fixed))):
                raise AssertionError(f"the Z3 encoding finds {state} not well formed")
            values = {prop.name: z3.is_true(z3.simplify(SYMBOLIC_INVARIANTS[prop.name](fixed))) for prop in INVARIANTS}
            solver.push()
            solver.add(equal(before, fixed))
            admitted = []
            while solve(solver) == z3.sat:
                model = solver.model()
                slot = model.eval(action, model_completion=True)
                successor = decode(model, after)
                admitted.append((as_int(slot), successor))  # slots are the model's slot indices
                solver.add(z3.Not(z3.And(action == slot, equal(after, constant(symbolic.shape, successor)))))
            solver.pop()
            yield Expansion(tuple(admitted), values)


def shortest_lengths(config: Config, depth: int | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """(BFS, BMC) shortest violation length of every invariant either finds; BMC searches to
    `depth`, by default the longest BFS counterexample."""
    explicit = check(config, INVARIANTS, keep_going=True)
    bfs = {v.invariant: len(v.trace) for v in explicit.violations}
    bound = max(bfs.values(), default=0) if depth is None else depth
    bmc = {v.invariant: len(v.trace) for v in bounded_check(config, bound, keep_going=True).violations}
    return bfs, bmc
