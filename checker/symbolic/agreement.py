"""Holding the Z3 encoding equal to the explicit model, as TLC holds the TLA+ twin.

`Z3Encoding` is the encoding as `kafka_mc.testing.check_conformance` takes it, which holds it to
the explicit model on every reachable state of a list of configurations; `Z3Encoding(bumps=True)`
the bump model's encoding, held to `model.epoch_bumps.EpochBumpModel`
(`check_conformance(..., transitions=EpochBumpModel)`). `shortest_lengths`
compares the shortest violation of each invariant found by bounded model checking with the
breadth-first engine's.
"""

from __future__ import annotations

from typing import Callable, Iterator, Sequence

import z3

from kafka_mc.checker.bfs import check
from kafka_mc.model import Config, State
from kafka_mc.properties import INVARIANTS
from kafka_mc.testing import Expansion

from .bmc import bounded_check
from .budget import solve
from .layout import constant, decode, leaves, model_values, values_of
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
        shape = symbolic.shape
        before, after, action = symbolic.fresh("s"), symbolic.fresh("t"), symbolic.action_variable("a")
        solver = z3.SolverFor("QF_BV")
        solver.add(symbolic.step(before, after, action))
        # built once over the state variables, and evaluated in the solver's model of each state
        checked = [("well formed", well_formed(before))]
        checked += [(prop.name, SYMBOLIC_INVARIANTS[prop.name](before)) for prop in INVARIANTS]

        def fixer(variables: list) -> Callable[[State], list[z3.BoolRef]]:
            """A function of a state to the literals fixing `variables` (a SymState's leaves) to
            it, each literal made once."""
            made: dict[tuple[int, bool, int], z3.BoolRef] = {}

            def fixing(state: State) -> list[z3.BoolRef]:
                fixed = []
                for index, v in enumerate(leaves(values_of(shape, state))):
                    key = (index, isinstance(v, bool), int(v))
                    if key not in made:
                        made[key] = variables[index] == (z3.BoolVal(v) if key[1] else shape.num(v))
                    fixed.append(made[key])
                return fixed

            return fixing

        fix_before, fix_after = fixer(leaves(before)), fixer(leaves(after))
        names, formulas = zip(*checked)
        action_literals: dict[int, z3.BoolRef] = {}

        def fix_action(slot: int) -> z3.BoolRef:
            if slot not in action_literals:
                action_literals[slot] = action == slot
            return action_literals[slot]

        for state in states:
            solver.push()
            solver.add(conjunction(fix_before(state)))
            admitted, holds = [], None
            while solve(solver) == z3.sat:
                model = solver.model()
                if holds is None:  # the formulas' values where `before` is the state
                    holds = dict(zip(names, model_values(model, formulas)))
                slot, = model_values(model, [action])
                successor = decode(model, after)
                admitted.append((slot, successor))  # slots are the model's slot indices
                solver.add(z3.Not(conjunction([fix_action(slot), *fix_after(successor)])))
            solver.pop()
            if holds is None:  # no successor: the values substituted into the formulas
                pairs = list(zip(leaves(before), leaves(constant(shape, state))))
                holds = {name: z3.is_true(z3.simplify(z3.substitute(formula, *pairs))) for name, formula in checked}
            if not holds.pop("well formed"):
                raise AssertionError(f"the Z3 encoding finds {state} not well formed")
            yield Expansion(tuple(admitted), holds)


def conjunction(literals: list[z3.BoolRef]) -> z3.BoolRef:
    """`z3.And(literals)` without its per-argument checks (the literals are Boolean terms of one
    context), which cost more than the solver here."""
    context = literals[0].ctx
    array = (z3.Ast * len(literals))(*(literal.as_ast() for literal in literals))
    return z3.BoolRef(z3.Z3_mk_and(context.ref(), len(literals), array), context)


def shortest_lengths(config: Config, depth: int | None = None) -> tuple[dict[str, int], dict[str, int]]:
    """(BFS, BMC) shortest violation length of every invariant either finds; BMC searches to
    `depth`, by default the longest BFS counterexample."""
    explicit = check(config, INVARIANTS, keep_going=True)
    bfs = {v.invariant: len(v.trace) for v in explicit.violations}
    bound = max(bfs.values(), default=0) if depth is None else depth
    bmc = {v.invariant: len(v.trace) for v in bounded_check(config, bound, keep_going=True).violations}
    return bfs, bmc
