"""Bounded model checking: a model's transition relation unrolled depth by depth on one solver.

Runs any model with a Z3 encoding (`encoding.SymbolicEncoding`, found by `registry.z3_encoding`):
one copy of the state variables per step and one action variable per step; at each depth every
property not yet settled (an invariant violated, a witness reached) is asked for in a push/pop
scope, so the first depth that answers is its shortest trace. Every solver model is decoded into
a `Trace`, replayed through the explicit model and checked state by state against what the
solver said (mypyvy's smoke test); a disagreement is an internal error, never a report.
No violation up to the bound is reported as exactly that: the run is incomplete.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable

import z3

from kafka_mc.control.replication import model_of
from kafka_mc.checker.bfs import search_result
from kafka_mc.checker.result import CheckResult, Stats, Trace
from kafka_mc.model import Config
from kafka_mc.model.interface import ALWAYS, Model, Property
from kafka_mc.properties import INVARIANTS

from ..interrupts import deferred_interrupts
from .budget import SLACK, Deadline, solve
from .encoding import Formula, SymbolicEncoding
from .registry import z3_encoding

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

    def __init__(self, encoding: SymbolicEncoding, solver: z3.Solver | None = None):
        self.encoding = encoding
        self.solver = solver or encoding.solver()
        self.states: list[Any] = [encoding.fresh("s0")]
        self.actions: list[z3.ExprRef] = []
        self.solver.add(encoding.initial(self.states[0]))
        self.solver.add(encoding.well_formed(self.states[0]))

    @property
    def depth(self) -> int:
        return len(self.actions)

    def extend(self) -> None:
        """One more step: fresh variables framed by the transition relation."""
        number = self.depth + 1
        state, action = self.encoding.fresh(f"s{number}"), self.encoding.action_variable(f"a{number}")
        self.solver.add(self.encoding.step(self.states[-1], state, action))
        # true of every reachable state (the replication model's agreement tests check it), and it
        # spares the solver the values no state takes: about six times faster at depth 10
        self.solver.add(self.encoding.well_formed(state))
        self.states.append(state)
        self.actions.append(action)

    def trace(self, solver_model: z3.ModelRef, length: int) -> Trace:
        """The path of the first `length` steps in a solver model, replayed and checked."""
        encoding = self.encoding
        decoded = [encoding.decode(solver_model, state) for state in self.states[: length + 1]]
        initial_states = encoding.model.initial_states()
        if decoded[0] not in initial_states:
            raise EncodingMismatch(f"the solver's initial state is not an initial state: {decoded[0]}")
        actions = tuple(encoding.decode_action(solver_model, action) for action in self.actions[:length])
        trace = Trace(encoding.model, initial_states.index(decoded[0]), actions)
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


class _Goal:
    """A property's question at the unrolling's last step: `target` is satisfiable when a path of
    this length settles it (breaks an invariant, reaches a witness), `unsettled` holds on every
    path of this length when none does."""

    def __init__(self, prop: Property, formula: Formula, unrolling: Unrolling):
        before, action = (unrolling.states[-2], unrolling.actions[-1]) if unrolling.depth else (None, None)
        holds = formula(before, action, unrolling.states[-1])
        self.prop = prop
        self.target = z3.Not(holds) if prop.kind == ALWAYS else holds
        self.unsettled = holds if prop.kind == ALWAYS else z3.Not(holds)


def bounded_check(
    model: Model | Config,
    depth: int,
    properties: Iterable[Property] | None = None,
    *,
    keep_going: bool = False,
    max_seconds: float | None = None,
    progress: Callable[[DepthReport], None] | None = None,
) -> CheckResult:
    """Look for violations of `model`'s invariants, and ways to its witnesses, in every behaviour of
    at most `depth` steps. `model`: any model with a Z3 encoding (`registry.z3_encoding`), or a
    `Config` of the replication model checking `properties` (default: its invariants).

    Stops at the first depth with a violation (reporting every property settled at that depth)
    unless `keep_going`, which goes on to `depth` for the shortest trace of every property.
    `max_seconds` bounds the whole search (each solver query gets the time left). The result is
    never complete: no violation up to `depth` is not a proof.
    """
    deadline = Deadline(max_seconds)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be a non-negative integer, not {depth!r}")
    model = model_of(model, properties, default=INVARIANTS)
    encoding = z3_encoding(model)
    with deferred_interrupts():  # Ctrl-C stops the run at its next query (interrupts.py)
        return _bounded_run(model, encoding, depth, keep_going, deadline, progress)


def _bounded_run(model: Model, encoding, depth: int, keep_going: bool, deadline: Deadline,
                 progress: Callable[[DepthReport], None] | None) -> CheckResult:
    started = deadline.started
    formulas = [(prop, encoding.formula(prop)) for prop in model.properties]
    invariants = {prop.name for prop in model.properties if prop.kind == ALWAYS}
    unrolling = Unrolling(encoding)
    solver = unrolling.solver
    found: dict[str, Trace] = {}
    stopped_because = ""
    while True:
        pending = [_Goal(prop, formula, unrolling) for prop, formula in formulas
                   if prop.name not in found and not (prop.on_step and not unrolling.depth)]
        settled, unknown, solver_seconds = _settled_at_depth(unrolling, pending, deadline)
        found.update(settled)
        if not unknown:
            for goal in pending:
                if goal.prop.name not in settled:
                    # true on every path of this length: a sound constraint that prunes the paths
                    # the solver considers at greater depths
                    solver.add(goal.unsettled)
        if progress:
            progress(DepthReport(unrolling.depth, time.perf_counter() - started, solver_seconds,
                                 _clauses(solver), tuple(sorted(invariants & settled.keys()))))
        if unknown and deadline.spent(SLACK):
            stopped_because = f"{deadline.describe()} reached at depth {unrolling.depth}"
            break
        if unknown:
            stopped_because = f"the solver answered unknown at depth {unrolling.depth} ({unknown})"
            break
        if not keep_going and invariants & found.keys():
            stopped_because = "stopped at the depth of the first violation"
            break
        if len(found) == len(formulas):
            witnesses = len(formulas) > len(invariants)
            stopped_because = "every invariant violated" + (" and every witness reached" if witnesses else "")
            break
        if unrolling.depth == depth:
            break
        if deadline.spent():
            stopped_because = f"{deadline.describe()} reached at depth {unrolling.depth + 1}"
            break
        unrolling.extend()
    if not stopped_because:
        stopped_because = _bounded_reason([prop for prop, _ in formulas if prop.name not in found], depth)
    # the depth searched to the end: the one an unknown answer interrupted is not
    stats = Stats(0, 0, unrolling.depth - 1 if unknown else unrolling.depth, time.perf_counter() - started)
    result = search_result(ENGINE, model.config, model.properties, found, False, stats, stopped_because)
    return replace(result, bounded_to=depth)


def _bounded_reason(unsettled: list[Property], depth: int) -> str:
    """Why a run that reached its depth bound stopped: what it found no trace of."""
    held = [prop.name for prop in unsettled if prop.kind == ALWAYS]
    unreached = [prop.name for prop in unsettled if prop.kind != ALWAYS]
    parts = ([f"no violation of {', '.join(held)}"] if held else []) + \
            ([f"{', '.join(unreached)} not reached"] if unreached else [])
    return f"bounded: {' and '.join(parts)} up to depth {depth}"


def _settled_at_depth(unrolling: Unrolling, pending: list[_Goal],
                      deadline: Deadline) -> tuple[dict[str, Trace], str, float]:
    """The properties some path of the unrolling's length settles at its last step, each with a
    trace; the solver's reason when it answered unknown (or the budget was spent before a query);
    the seconds spent solving. One query asks whether any pending property is settled (most
    depths: none, one unsat answer); each model found settles every property it settles, and the
    query repeats for the rest."""
    solver = unrolling.solver
    settled: dict[str, Trace] = {}
    seconds = 0.0
    while len(settled) < len(pending):
        if not deadline.arm(solver):
            return settled, "time budget spent", seconds
        remaining = [goal for goal in pending if goal.prop.name not in settled]
        solver.push()
        solver.add(z3.Or([goal.target for goal in remaining]))
        before = time.perf_counter()
        answer = solve(solver)
        seconds += time.perf_counter() - before
        if answer == z3.sat:
            solver_model = solver.model()
            trace = unrolling.trace(solver_model, unrolling.depth)
            claimed = [goal.prop for goal in remaining
                       if z3.is_true(solver_model.eval(goal.target, model_completion=True))]
            _check_claims(trace, claimed)
            settled.update({prop.name: trace for prop in claimed})
        reason = solver.reason_unknown() if answer == z3.unknown else ""
        solver.pop()
        if answer != z3.sat:
            return settled, reason, seconds
    return settled, "", seconds


def _check_claims(trace: Trace, claimed: list[Property]) -> None:
    """EncodingMismatch unless the explicit model, at the trace's last step, breaks every invariant
    and reaches every witness the solver says it does."""
    steps = trace.steps()
    (_, before), (action, after) = (steps[-2] if len(steps) > 1 else (None, None)), steps[-1]
    wrong = [prop.name for prop in claimed if prop.check(before, action, after) == (prop.kind == ALWAYS)]
    if wrong:
        raise EncodingMismatch(f"the solver says {', '.join(wrong)} break (an invariant) or hold (a witness) at step "
                               f"{len(trace)}; the explicit model disagrees")


def _clauses(solver: z3.Solver) -> int:
    """The clauses the solver holds: its SAT core's count once it has one, else its assertions."""
    statistics = solver.statistics()
    for key in ("sat mk clause 2ary", "mk clause"):
        if key in statistics.keys():
            return int(statistics.get_key_value(key))
    return len(solver.assertions())
