"""Bounded model checking: the transition relation unrolled depth by depth on one solver.

One copy of the state variables per step and one action variable per step; at each depth
every invariant not yet violated is checked in a push/pop scope, so the first depth at which
an invariant can break is its shortest counterexample. Every solver model is decoded into a
`Trace`, replayed through the explicit model and checked state by state against what the
solver said (mypyvy's smoke test); a disagreement is an internal error, never a report.
No violation up to the bound is reported as exactly that: the run is incomplete.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable

import z3

from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.checker.result import CheckResult, Stats, Trace, Violation
from kafka_mc.model import Action, Config
from kafka_mc.properties import INVARIANTS, Property, failing_invariants

from .budget import SLACK, Deadline, solve
from .layout import SymState, as_int, decode
from .properties import SYMBOLIC_INVARIANTS, well_formed
from .transitions import EncodingError, SymbolicModel

ENGINE = "z3"


class EncodingMismatch(RuntimeError):
    """A solver model that the explicit model does not replay: the encoding is wrong."""


@dataclass(frozen=True)
class DepthReport:
    """Progress after one depth: its solver time and the size of the problem so far."""

    depth: int
    seconds: float
    solver_seconds: float
    clauses: int
    violated: tuple[str, ...]

    def describe(self) -> str:
        found = f", violated: {', '.join(self.violated)}" if self.violated else ""
        return (f"depth {self.depth}: {self.solver_seconds:.2f} s in the solver, {self.clauses} clauses, "
                f"{self.seconds:.1f} s in all{found}")


class Unrolling:
    """The states and actions of paths of growing length from an initial state, on one solver."""

    def __init__(self, symbolic: SymbolicModel, solver: z3.Solver | None = None):
        self.symbolic = symbolic
        self.solver = solver or (z3.SolverFor("QF_BV") if symbolic.shape.bits else z3.Solver())
        self.states: list[SymState] = [symbolic.fresh("s0")]
        self.actions: list[z3.ArithRef] = []
        self.solver.add(symbolic.initial(self.states[0]))
        self.solver.add(well_formed(self.states[0]))

    @property
    def depth(self) -> int:
        return len(self.actions)

    def extend(self) -> None:
        """One more step: fresh variables framed by the transition relation."""
        number = self.depth + 1
        state, action = self.symbolic.fresh(f"s{number}"), self.symbolic.action_variable(f"a{number}")
        self.solver.add(self.symbolic.step(self.states[-1], state, action))
        # true of every reachable state (the agreement tests check it), and it spares the solver
        # the values no state takes: about six times faster at depth 10
        self.solver.add(well_formed(state))
        self.states.append(state)
        self.actions.append(action)

    def trace(self, model: z3.ModelRef, length: int) -> Trace:
        """The path of the first `length` steps in a solver model, replayed and checked."""
        explicit = self.symbolic.explicit
        decoded = [decode(model, state) for state in self.states[: length + 1]]
        initial_states = explicit.initial_states()
        if decoded[0] not in initial_states:
            raise EncodingMismatch(f"the solver's initial state is not an initial state: {decoded[0]}")
        actions: list[Action] = [self.symbolic.slots[as_int(model.eval(a, model_completion=True))]
                                 for a in self.actions[:length]]
        trace = Trace(ReplicationSystem(self.symbolic.config), initial_states.index(decoded[0]), tuple(actions))
        for number, (replayed, solved) in enumerate(zip(_replay(trace), decoded)):
            if replayed != solved:
                raise EncodingMismatch(f"step {number} ({actions[number - 1] if number else 'Init'}): the explicit "
                                       f"model gives {replayed}, the solver {solved}")
        return trace


def _replay(trace: Trace) -> list:
    try:
        return trace.states()
    except ValueError as error:
        raise EncodingMismatch(f"the solver's trace does not replay: {error}") from None


def symbolic_invariants(properties: Iterable[Property]) -> dict[str, Callable]:
    """The formula of every `always` state invariant among `properties`; EncodingError for one
    without a formula."""
    chosen = {}
    for prop in properties:
        if prop.kind != "always" or prop.on_step:
            continue
        if prop.name not in SYMBOLIC_INVARIANTS:
            raise EncodingError(f"invariant {prop.name} has no Z3 encoding")
        chosen[prop.name] = SYMBOLIC_INVARIANTS[prop.name]
    return chosen


def bounded_check(
    config: Config,
    depth: int,
    properties: Iterable[Property] = INVARIANTS,
    *,
    keep_going: bool = False,
    max_seconds: float | None = None,
    progress: Callable[[DepthReport], None] | None = None,
) -> CheckResult:
    """Look for invariant violations in every behaviour of at most `depth` steps.

    Stops at the first depth with a violation (reporting every invariant violated at that
    depth) unless `keep_going`, which goes on to `depth` for the shortest violation of every
    invariant. `max_seconds` bounds the whole search (each solver query gets the time left).
    The result is never complete: no violation up to `depth` is not a proof.
    """
    deadline = Deadline(max_seconds)
    started = deadline.started
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, not {depth!r}")
    invariants = symbolic_invariants(properties)
    unrolling = Unrolling(SymbolicModel(config))
    solver = unrolling.solver
    found: dict[str, Trace] = {}
    stopped_because = ""
    while True:
        pending = {name: formula for name, formula in invariants.items() if name not in found}
        violated, unknown, solver_seconds = _violations_at_depth(unrolling, pending, deadline)
        found.update(violated)
        if not unknown:
            for name in pending.keys() - violated.keys():
                # it holds in every state reachable in this many steps: a sound constraint that
                # prunes the paths the solver considers at greater depths
                solver.add(pending[name](unrolling.states[-1]))
        if progress:
            progress(DepthReport(unrolling.depth, time.perf_counter() - started, solver_seconds,
                                 _clauses(solver), tuple(sorted(violated))))
        if unknown and deadline.spent(SLACK):
            stopped_because = f"{deadline.describe()} reached at depth {unrolling.depth}"
            break
        if unknown:
            stopped_because = f"the solver answered unknown at depth {unrolling.depth} ({unknown})"
            break
        if found and (not keep_going or len(found) == len(invariants)):
            stopped_because = ("stopped at the depth of the first violation" if not keep_going
                               else "every invariant violated")
            break
        if unrolling.depth == depth:
            break
        if deadline.spent():
            stopped_because = f"{deadline.describe()} reached after depth {unrolling.depth}"
            break
        unrolling.extend()
    if not stopped_because:
        held = [name for name in invariants if name not in found]
        stopped_because = f"bounded: no violation of {', '.join(held)} up to depth {depth}"
    violations = sorted(found.items(), key=lambda item: (len(item[1]), item[0]))
    return CheckResult(
        engine=ENGINE,
        config=config,
        complete=False,
        # the depth searched to the end: the one an unknown answer interrupted is not
        stats=Stats(0, 0, unrolling.depth - 1 if unknown else unrolling.depth, time.perf_counter() - started),
        violations=tuple(Violation(name, trace) for name, trace in violations),
        witnesses={},
        stopped_because=stopped_because,
        bounded_to=depth,
        invariants=tuple(invariants),
    )


def _violations_at_depth(unrolling: Unrolling, pending: dict[str, Callable],
                         deadline: Deadline) -> tuple[dict[str, Trace], str, float]:
    """The invariants some path of the unrolling's length breaks at its last state, each with a
    trace; the solver's reason when it answered unknown (or the budget was spent before a
    query); the seconds spent solving. One query asks whether any pending invariant breaks (most
    depths: none, one unsat answer); each model found settles every invariant it breaks, and the
    query repeats for the rest."""
    solver, last = unrolling.solver, unrolling.states[-1]
    violated: dict[str, Trace] = {}
    seconds = 0.0
    while len(violated) < len(pending):
        if not deadline.arm(solver):
            return violated, "time budget spent", seconds
        remaining = {name: formula(last) for name, formula in pending.items() if name not in violated}
        solver.push()
        solver.add(z3.Or([z3.Not(holds) for holds in remaining.values()]))
        before = time.perf_counter()
        answer = solve(solver)
        seconds += time.perf_counter() - before
        if answer == z3.sat:
            model = solver.model()
            trace = unrolling.trace(model, unrolling.depth)
            broken = [name for name, holds in remaining.items() if z3.is_false(model.eval(holds, model_completion=True))]
            failing = failing_invariants(trace.states()[-1])
            if not set(broken) <= set(failing):
                raise EncodingMismatch(f"the solver says {', '.join(broken)} break at step {len(trace)}; "
                                       f"the explicit model breaks {', '.join(failing) or 'none'}")
            violated.update({name: trace for name in broken})
        reason = solver.reason_unknown() if answer == z3.unknown else ""
        solver.pop()
        if answer != z3.sat:
            return violated, reason, seconds
    return violated, "", seconds


def _clauses(solver: z3.Solver) -> int:
    """The clauses the solver holds: its SAT core's count once it has one, else its assertions."""
    statistics = solver.statistics()
    for key in ("sat mk clause 2ary", "mk clause"):
        if key in statistics.keys():
            return int(statistics.get_key_value(key))
    return len(solver.assertions())
