"""Inductive proofs over the Z3 encoding, as mypyvy checks an invariant.

A set of lemmas (formulas over one symbolic state) proves the safety properties when

- initiation: every lemma holds in every initial state (with `k` > 1: in every state reachable
  in fewer than `k` steps);
- consecution: from any well-formed state where every lemma holds (with `k` > 1: any `k`
  consecutive such states linked by steps), each action slot leads to a state where each lemma
  holds; one solver query per (action slot, lemma), so a failure names both;
- safety: every well-formed state where the lemmas hold satisfies each property.

The transition relation is `SymbolicModel`'s with the crash and election bounds lifted
(`unbounded`) over unbounded integers. With elections unbounded the epoch cache has a fixed
capacity and a step that would overflow it is disabled, so a proof covers exactly the behaviours
whose caches stay within that capacity; messages and replicas stay bounded.

The shipped lemmas do not cover every variant: a protocol choice that makes some of them false in
reachable states (`UNCOVERED`: KIP-966's eligible leader replicas, whose ISR may be empty;
KAFKA-15583's HW held below min.insync.replicas, with min.insync.replicas above 1) is refused by
name (`EncodingError`) while those lemmas are among the ones given; a user's own lemmas may cover it.

A failed query yields a counterexample to induction, decoded into explicit States and replayed
through the explicit model (`Trace` with `start`); a replay that disagrees with the solver is an
internal error (`EncodingMismatch`). `unknown` and time-outs give an `unknown` result, never
`proved`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import z3

from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.checker.result import Trace
from kafka_mc.model import PROTOCOLS, Action, Config, ReplicationModel, State
from kafka_mc.model.config import SIMULATION_COUNT_LIMIT, ConfigError
from kafka_mc.model.interface import Property
from kafka_mc.model.state import FENCED, LEADER, NO_LEADER

from .bmc import EncodingMismatch, Unrolling
from ..interrupts import deferred_interrupts
from .budget import SLACK, Deadline, solve
from .layout import Shape, SymState, decode, leaves
from .lemma import Lemma
from .lemmas import LEMMAS
from .properties import StateFormula, state_formulas, well_formed
from .transitions import EncodingError, SymbolicModel

PROVED, FAILED, UNKNOWN = "proved", "failed", "unknown"
UNBOUNDED = frozenset({"crashes", "elections"})
DEFAULT_PROPERTIES = ("NoCommittedDataLoss", "NoLogDivergence")
DEFAULT_CACHE = 4
SMALL_VALUES = (4, 8, 16, 32)  # bounds tried, in turn, for a readable counterexample

# (choice, whether it applies to a configuration, the shipped lemmas it makes false in reachable
# states, why; `{min_isr}` the configuration's): `prove` refuses such a variant while any of those
# lemmas is among its lemmas
UNCOVERED: tuple[tuple[str, Callable[[Config], bool], tuple[str, ...], str], ...] = (
    ("eligible_leaders", lambda config: True, ("LeaderInIsr",),
     ", the ISR becomes empty when the controller notices its last member's failure (KIP-966)"),
    ("hw_needs_min_isr", lambda config: config.min_isr > 1, ("EmptyLatestAtHw", "LeaderHwCoversCommitted"),
     " and min.insync.replicas {min_isr}, a new leader's HW stays below its LEO and the committed records "
     "while its ISR is smaller (KAFKA-15583)"),
)


@dataclass(frozen=True)
class Query:
    """One solver query: what it checked and how it ended."""

    kind: str  # initiation, consecution, safety
    lemma: str  # the lemma (or property) it is about
    action: Action | None  # the action slot of a consecution query
    answer: str  # "holds", "fails" or "unknown"
    seconds: float
    depth: int = 0  # initiation with k > 1: the depth of the base case


@dataclass(frozen=True)
class Counterexample:
    """Why a query failed: the states the solver found and the lemma that broke in the last.

    consecution: `k` states where every lemma holds, linked by `actions`, then the state after the
    last action, where `lemma` does not hold (a counterexample to induction); initiation: a
    behaviour from an initial state to a state where `lemma` does not hold; safety: one state where
    every lemma holds and the property `lemma` does not. `trace` replays it through the explicit
    model (None when its counters are beyond what the explicit model takes; `note` says so)."""

    kind: str
    lemma: str
    states: tuple[State, ...]
    actions: tuple[Action, ...]
    trace: Trace | None
    note: str = ""

    @property
    def action(self) -> Action | None:
        return self.actions[-1] if self.actions else None


@dataclass(frozen=True)
class ProofResult:
    config: Config
    status: str  # proved, failed, unknown
    properties: tuple[str, ...]
    lemmas: tuple[str, ...]
    k: int
    unbounded: frozenset[str]
    cache: int
    queries: tuple[Query, ...]
    seconds: float
    counterexample: Counterexample | None = None
    reason: str = ""
    scope: str = ""

    @property
    def proved(self) -> bool:
        return self.status == PROVED

    def seconds_by_kind(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for query in self.queries:
            totals[query.kind] = totals.get(query.kind, 0.0) + query.seconds
        return totals


@dataclass
class _Budget:
    deadline: Deadline
    timeout: float | None  # per query, seconds


class _Stop(Exception):
    def __init__(self, status: str, reason: str, counterexample: Counterexample | None = None):
        super().__init__(reason)
        self.status, self.reason, self.counterexample = status, reason, counterexample


def scope_text(config: Config, unbounded: frozenset[str], cache: int) -> str:
    """What a proof of `config` covers, in words."""
    crashes = "any number of crashes" if "crashes" in unbounded else f"at most {config.crashes} crashes"
    elections = ("any number of elections (any leader epoch)" if "elections" in unbounded
                 else f"at most {config.elections} elections")
    text = (f"{config.protocol}, {config.replicas} replicas, at most {config.messages} messages, {crashes}, "
            f"{elections}, acks={config.acks}, min.insync.replicas={config.min_isr}, "
            f"{'unclean' if config.unclean else 'clean'} elections, "
            f"{'flushed' if config.flush else 'unflushed'} writes, {config.partitions} network failures")
    if PROTOCOLS[config.protocol].epoch_cache and ("elections" in unbounded or cache < config.elections + 1):
        text += f"; behaviours whose epoch caches stay within {cache} entries"
    return text


def prove(
    config: Config,
    lemmas: Iterable[Lemma | Callable] | None = None,
    *,
    properties: Sequence[str | Property] = DEFAULT_PROPERTIES,
    unbounded: frozenset[str] = UNBOUNDED,
    k: int = 1,
    cache: int | None = None,
    timeout: float | None = None,
    max_seconds: float | None = None,
    progress: Callable[[Query], None] | None = None,
    deadline: Deadline | None = None,
) -> ProofResult:
    """Prove `properties` of `config` with `lemmas` (default: the shipped set, `lemmas.LEMMAS`): shipped
    invariants by name, or users' state invariants (a `Property` with its Python `predicate`, lowered).

    `unbounded`: the counters whose bound is lifted; `cache`: the epoch-cache capacity (default
    DEFAULT_CACHE when elections are unbounded, else the exact `elections + 1`); `timeout`: per
    query, `max_seconds`: in all (seconds, from this call on), or `deadline`: a budget already
    running; each query gets the time left, and either ends the proof as `unknown`. A lemma that
    is not a named function, raises, or gives no Z3 Boolean formula: LemmaError (a ValueError)
    naming it."""
    started = time.perf_counter()
    if deadline is None:
        deadline = Deadline(max_seconds, started)
    if lemmas is None:
        lemmas = LEMMAS
    chosen = [Lemma.of(item) for item in lemmas]
    names = [item.name for item in chosen]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"lemma names must be distinct; repeated: {', '.join(duplicates)}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive integer, not {k!r}")
    bad = sorted(unbounded - UNBOUNDED)
    if bad:
        raise ValueError(f"only {', '.join(sorted(UNBOUNDED))} can be unbounded, not {', '.join(bad)}")
    _refuse_uncovered(config, chosen)
    if cache is None:
        cache = DEFAULT_CACHE if "elections" in unbounded else config.elections + 1
    if not PROTOCOLS[config.protocol].epoch_cache:
        cache = 0
    shape = Shape.of(config, cache=cache, integers=True)
    formulas = state_formulas(properties, config, shape)
    proved = list(formulas)
    symbolic = SymbolicModel(config, shape, frozenset(unbounded))
    prover = _Prover(config, symbolic, chosen, formulas, k, _Budget(deadline, timeout), progress)
    status, reason, counterexample = PROVED, "", None
    try:
        with deferred_interrupts():  # Ctrl-C stops the proof at its next query (interrupts.py)
            prover.run()
    except _Stop as stop:
        status, reason, counterexample = stop.status, stop.reason, stop.counterexample
    if status == PROVED:
        reason = (f"{len(chosen)} lemmas are {'inductive' if k == 1 else f'{k}-inductive'} and imply "
                  f"{', '.join(proved)}")
    return ProofResult(config, status, tuple(proved), tuple(names), k, frozenset(unbounded), cache,
                       tuple(prover.queries), time.perf_counter() - started, counterexample, reason,
                       scope_text(config, frozenset(unbounded), cache))


def _refuse_uncovered(config: Config, chosen: list[Lemma]) -> None:
    """EncodingError naming the variant, the choice and the shipped lemmas among `chosen` that the
    choice makes false in reachable states (`UNCOVERED`)."""
    protocol = PROTOCOLS[config.protocol]
    shipped = {item.name for item in chosen if item in LEMMAS}
    for choice, applies, broken, why in UNCOVERED:
        if getattr(protocol, choice) is True and applies(config) and shipped & set(broken):
            names = ", ".join(name for name in broken if name in shipped)
            several = "," in names
            raise EncodingError(f"the shipped lemmas do not cover protocol {config.protocol!r}: with {choice}"
                                f"{why.format(min_isr=config.min_isr)}; the lemma{'s' * several} {names} do"
                                f"{'' if several else 'es'} not hold in its reachable states. Prove it with "
                                f"lemmas of your own (--lemmas FILE --no-shipped-lemmas)")


class _Prover:
    def __init__(self, config, symbolic: SymbolicModel, lemmas: list[Lemma], formulas: dict[str, StateFormula],
                 k: int, budget: _Budget, progress):
        self.config, self.symbolic, self.lemmas, self.formulas = config, symbolic, lemmas, formulas
        self.k, self.budget, self.progress = k, budget, progress
        self.queries: list[Query] = []

    def run(self) -> None:
        self.initiation()
        self.consecution()
        self.safety()

    # ------------------------------------------------------------------ queries

    def _check(self, solver: z3.Solver, goal, kind: str, name: str, action: Action | None, depth: int = 0):
        """Is `goal` satisfiable with what `solver` holds? The model, or None when it is not."""
        what = f"the {kind} query of {name}{f' for {action}' if action else ''}"
        deadline = self.budget.deadline
        if not deadline.arm(solver, self.budget.timeout):
            raise _Stop(UNKNOWN, f"{deadline.describe()} spent before {what}")
        before = time.perf_counter()
        answer = solve(solver, goal)
        seconds = time.perf_counter() - before
        verdict = "holds" if answer == z3.unsat else "fails" if answer == z3.sat else "unknown"
        query = Query(kind, name, action, verdict, seconds, depth)
        self.queries.append(query)
        if self.progress:
            self.progress(query)
        if answer == z3.unknown:
            if deadline.spent(SLACK):
                raise _Stop(UNKNOWN, f"{deadline.describe()} spent during {what}")
            raise _Stop(UNKNOWN, f"the solver answered unknown ({solver.reason_unknown()}) on {what}")
        return solver.model() if answer == z3.sat else None

    def _solver(self) -> z3.Solver:
        return z3.Solver()

    def all_lemmas(self, s: SymState) -> list:
        return [item.build(s) for item in self.lemmas]

    def initiation(self) -> None:
        """Every lemma holds in every state reachable in fewer than k steps."""
        unrolling = Unrolling(self.symbolic, self._solver())
        for depth in range(self.k):
            if depth:
                unrolling.extend()
            state = unrolling.states[-1]
            for item in self.lemmas:
                goal = z3.Not(item.build(state))
                model = self._check(unrolling.solver, goal, "initiation", item.name, None, depth)
                if model is not None:
                    model = self._small(unrolling.solver, goal, unrolling.states, model)
                    raise _Stop(FAILED, f"lemma {item.name} does not hold in a state reachable in {depth} steps",
                                self._counterexample("initiation", item.name, model, unrolling.states,
                                                     unrolling.actions, None, initial=True))
            # what held is kept: a sound constraint for the deeper base cases
            unrolling.solver.add(self.all_lemmas(state))

    def consecution(self) -> None:
        """From k consecutive states satisfying every lemma, each slot keeps each lemma."""
        symbolic = self.symbolic
        states = [symbolic.fresh(f"s{i}") for i in range(self.k + 1)]
        actions = [symbolic.action_variable(f"a{i + 1}") for i in range(self.k - 1)]
        base = z3.Solver()
        for i, state in enumerate(states):
            base.add(well_formed(state))
            if i < self.k:
                base.add(self.all_lemmas(state))
        for i, action in enumerate(actions):
            base.add(symbolic.step(states[i], states[i + 1], action))
        before, after = states[-2], states[-1]
        for slot, action in enumerate(symbolic.slots):
            base.push()
            base.add(symbolic.transition(before, after, slot))
            for item in self.lemmas:
                goal = z3.Not(item.build(after))
                model = self._check(base, goal, "consecution", item.name, action)
                if model is not None:
                    model = self._small(base, goal, states, model)
                    raise _Stop(FAILED, f"lemma {item.name} is not preserved by {action}",
                                self._counterexample("consecution", item.name, model, states, actions, action))
            base.pop()

    def safety(self) -> None:
        """Every well-formed state satisfying the lemmas satisfies each property."""
        s = self.symbolic.fresh("s")
        solver = z3.Solver()
        solver.add(well_formed(s), *self.all_lemmas(s))
        for name, formula in self.formulas.items():
            goal = z3.Not(formula(s))
            model = self._check(solver, goal, "safety", name, None)
            if model is not None:
                model = self._small(solver, goal, [s], model)
                raise _Stop(FAILED, f"the lemmas do not imply {name}",
                            self._counterexample("safety", name, model, [s], [], None))

    # ------------------------------------------------------------------ counterexamples

    def _small(self, solver: z3.Solver, goal, states: list[SymState], model: z3.ModelRef) -> z3.ModelRef:
        """A model of the same query whose numbers are small, when there is one (a readable
        counterexample, and one the explicit model can replay); `model` otherwise."""
        numbers = [leaf for state in states for leaf in leaves(state) if z3.is_int(leaf)]
        for bound in SMALL_VALUES:
            if not self.budget.deadline.arm(solver, self.budget.timeout):
                break
            solver.push()
            solver.add([leaf <= bound for leaf in numbers])
            answer = solve(solver, goal)
            smaller = solver.model() if answer == z3.sat else None
            solver.pop()
            if smaller is not None:
                return smaller
        return model

    def _counterexample(self, kind: str, name: str, model: z3.ModelRef, states: list[SymState],
                        actions: list, last: Action | None, initial: bool = False) -> Counterexample:
        decoded = tuple(decode(model, state) for state in states)
        taken = [self.symbolic.slots[model.eval(a, model_completion=True).as_long()] for a in actions]
        if last is not None:
            taken.append(last)
        trace, note = replay_trace(self.config, self.symbolic.unbounded, decoded, tuple(taken), initial)
        return Counterexample(kind, name, decoded, tuple(taken), trace, note)


def replay_config(config: Config, unbounded: frozenset[str], states: Sequence[State]) -> Config | None:
    """A configuration of the explicit model under which `states` can be replayed: the lifted
    bounds just above the counters the states reach; None when that is beyond what it takes."""
    fields = config.to_dict()
    if "crashes" in unbounded:
        fields["crashes"] = max(state.crashes for state in states) + 1
    if "elections" in unbounded:
        fields["elections"] = max(state.controller.epoch for state in states) + 1
    if fields["crashes"] > SIMULATION_COUNT_LIMIT or fields["elections"] > SIMULATION_COUNT_LIMIT:
        return None
    try:
        return Config.for_simulation(**fields)
    except ConfigError:
        return None


def encoding_exact(state: State) -> bool:
    """The state meets what the encoding assumes to be exact (`transitions.py`, `truncation.py`): every
    epoch cache's epochs rise strictly and its starts do not fall, the ISR is not empty but while the
    partition has no leader (an empty ISR only with eligible leader replicas, KIP-966), and a replica
    in a leader's role holds its view of the others' LEOs (the encoding's `has_remote`; the explicit model would write into an empty
    one), as in every reachable state."""
    return (state.controller.isr != 0 or state.controller.leader == NO_LEADER) and all(
        all(a[0] < b[0] and a[1] <= b[1] for a, b in zip(replica.epochs, replica.epochs[1:]))
        and (replica.remote_leos or replica.role not in (LEADER, FENCED)) for replica in state.replicas)


def replay_trace(config: Config, unbounded: frozenset[str], states: tuple[State, ...], actions: tuple[Action, ...],
                 initial: bool) -> tuple[Trace | None, str]:
    """The trace of a counterexample, replayed step by step through the explicit model and
    compared with `states`: EncodingMismatch when the model disables a step or reaches another
    state (naming the state, the action and both successors); (None, why) when the counters are
    beyond the explicit model's bounds or the model cannot step from a state outside the ones
    it builds (an unreachable one the encoding still takes)."""
    replay = replay_config(config, unbounded, states)
    if replay is None:
        return None, (f"not replayed: its counters (crashes {max(s.crashes for s in states)}, epoch "
                      f"{max(s.controller.epoch for s in states)}) are beyond the explicit model's "
                      f"{SIMULATION_COUNT_LIMIT}")
    model = ReplicationModel(replay)
    if initial:
        starts = model.initial_states()
        if states[0] not in starts:
            raise EncodingMismatch(f"the solver's first state is not an initial state: {states[0]}")
        trace = Trace(ReplicationSystem(replay), starts.index(states[0]), actions)
    else:
        trace = Trace(ReplicationSystem(replay), 0, actions, start=states[0])
    for before, action, solved in zip(states, actions, states[1:]):
        try:
            explicit = model.next_state(before, action)
        except Exception as error:  # a state no behaviour builds, e.g. a leader without a view of LEOs
            return None, (f"not replayed: the explicit model cannot take {action} from this state, which no "
                          f"behaviour of it builds ({type(error).__name__}: {error})")
        if explicit != solved:
            if not encoding_exact(before):
                return None, ("not replayed: from this state, which no behaviour reaches (an epoch cache whose epochs "
                              "do not rise or whose starts fall, an empty ISR, or a leader without its view of the "
                              "LEOs), the encoding's transition differs from the explicit model's by design (see "
                              "checker/symbolic/transitions.py)")
            raise EncodingMismatch(f"from {before}, {action}: the explicit model gives "
                                   f"{'no successor (not enabled)' if explicit is None else explicit}, "
                                   f"the solver {solved}")
    return trace, ""


# ------------------------------------------------------------------ is it reachable?


@dataclass(frozen=True)
class Reachability:
    """What bounded model checking found after a failed proof: a behaviour violating a property
    (`violation`, `violated`), a behaviour reaching the counterexample's first state (`reaches`),
    and the depth searched to the end (`depth`; `complete` when it reached the bound asked)."""

    bound: int
    depth: int
    complete: bool
    seconds: float
    violated: str | None = None
    violation: Trace | None = None
    reaches: Trace | None = None
    reason: str = ""


def bounded_config(config: Config, unbounded: frozenset[str], depth: int) -> Config:
    """`config` with each lifted bound set to `depth`: in `depth` steps no behaviour crashes or
    elects more often, so bounded model checking to `depth` covers the lifted bounds exactly."""
    fields = config.to_dict()
    for counter in unbounded:
        fields[counter] = min(depth, SIMULATION_COUNT_LIMIT)
    return Config.for_simulation(**fields)


def reachability(config: Config, unbounded: frozenset[str], properties: Sequence[str | Property], depth: int,
                 target: State | None = None, max_seconds: float | None = None, *,
                 deadline: Deadline | None = None) -> Reachability:
    """Bounded model checking from the initial states to `depth` steps: the shortest behaviour
    violating one of `properties`, and whether `target` (a counterexample's first state) is
    reachable. Stops at the first violation; `unknown` or the time budget (`max_seconds` from
    this call on, or `deadline`, a budget already running) end the search early."""
    from .layout import constant, equal

    if deadline is None:
        deadline = Deadline(max_seconds)
    started = time.perf_counter()
    bounded = bounded_config(config, frozenset(unbounded), depth)
    symbolic = SymbolicModel(bounded)
    unrolling = Unrolling(symbolic)
    solver = unrolling.solver
    shape = symbolic.shape
    fixed = None
    if target is not None:
        try:
            fixed = constant(shape, target) if target.crashes <= depth and target.controller.epoch <= depth else None
        except ValueError:  # arrays beyond the bounded shape: not reachable within depth
            fixed = None
    by_name = state_formulas(properties, bounded, shape)
    users = {p.name: p for p in properties if isinstance(p, Property)}
    names, formulas = list(by_name), list(by_name.values())
    reaches: Trace | None = None

    def check(goal) -> z3.CheckSatResult:
        if not deadline.arm(solver):
            return z3.unknown
        return solve(solver, goal)

    def stop(searched: int, why: str) -> Reachability:
        if deadline.spent(SLACK):
            why = f"{deadline.describe()} reached at depth {searched + 1}"
        return Reachability(depth, searched, False, time.perf_counter() - started, reaches=reaches, reason=why)

    while True:
        state = unrolling.states[-1]
        if fixed is not None and reaches is None:
            answer = check(equal(state, fixed))
            if answer == z3.sat:
                reaches = unrolling.trace(solver.model(), unrolling.depth)
            elif answer == z3.unknown:
                return stop(unrolling.depth - 1, f"unknown at depth {unrolling.depth} ({solver.reason_unknown()})")
        for name, formula in zip(names, formulas):
            answer = check(z3.Not(formula(state)))
            if answer == z3.sat:
                trace = unrolling.trace(solver.model(), unrolling.depth)
                if name in users and users[name].holds(trace.states()[-1]):  # its error, or its verdict, is its own
                    raise EncodingMismatch(f"the solver says {name} breaks at step {unrolling.depth}; "
                                           "its Python function holds there")
                return Reachability(depth, unrolling.depth, False, time.perf_counter() - started, name, trace,
                                    reaches, f"{name} is violated in {unrolling.depth} steps")
            if answer == z3.unknown:
                return stop(unrolling.depth - 1, f"unknown at depth {unrolling.depth} ({solver.reason_unknown()})")
        # what held at this depth is a sound constraint for the deeper ones
        solver.add(*[formula(state) for formula in formulas])
        if unrolling.depth == depth:
            return Reachability(depth, depth, True, time.perf_counter() - started, reaches=reaches,
                                reason=f"no violation of {', '.join(names)} in {depth} steps or fewer")
        unrolling.extend()


# ------------------------------------------------------------------ lemmas on concrete states

_JOIN = {z3.Z3_OP_AND: (" and ", "True"), z3.Z3_OP_OR: (" or ", "False"), z3.Z3_OP_ADD: (" + ", "0"),
         z3.Z3_OP_MUL: (" * ", "1"), z3.Z3_OP_SUB: (" - ", "0")}
_COMPARE = {z3.Z3_OP_EQ: "==", z3.Z3_OP_LE: "<=", z3.Z3_OP_LT: "<", z3.Z3_OP_GE: ">=", z3.Z3_OP_GT: ">",
            z3.Z3_OP_DISTINCT: "!="}


def evaluator(formula: z3.ExprRef, s: SymState) -> Callable[[list], object]:
    """A Python function computing `formula` from the values of the leaves of `s` (in layout
    order, as `leaves(values_of(shape, state))` gives them): thousands of states a second, where
    substituting and simplifying takes a millisecond each. Integer and Boolean terms only."""
    index = {leaf.get_id(): position for position, leaf in enumerate(leaves(s))}
    lines: list[str] = []
    names: dict[int, str] = {}

    def name(term: z3.ExprRef) -> str:
        key = term.get_id()
        if key in names:
            return names[key]
        if key in index:
            return f"v[{index[key]}]"
        if z3.is_true(term) or z3.is_false(term):
            return str(z3.is_true(term))
        if z3.is_int_value(term):
            return str(term.as_long())
        kind, args = term.decl().kind(), [name(child) for child in term.children()]
        if kind in _JOIN:
            separator, empty = _JOIN[kind]
            code = f"({separator.join(args)})" if args else empty
        elif kind in _COMPARE:
            code = f"({args[0]} {_COMPARE[kind]} {args[1]})"
        elif kind == z3.Z3_OP_NOT:
            code = f"(not {args[0]})"
        elif kind == z3.Z3_OP_IMPLIES:
            code = f"((not {args[0]}) or {args[1]})"
        elif kind == z3.Z3_OP_ITE:
            code = f"({args[1]} if {args[0]} else {args[2]})"
        elif kind == z3.Z3_OP_UMINUS:
            code = f"(-{args[0]})"
        else:
            raise ValueError(f"cannot evaluate {term.decl()} in Python")
        names[key] = f"t{len(lines)}"
        lines.append(f"    {names[key]} = {code}")
        return names[key]

    result = name(formula)
    namespace: dict = {}
    exec("def evaluate(v):\n" + "\n".join(lines) + f"\n    return {result}\n", namespace)
    return namespace["evaluate"]


def failing_in(lemmas: Iterable[Lemma | Callable], shape: Shape, states: Iterable[State]) -> dict[str, State]:
    """The lemmas that do not hold in some of `states`, each with the first such state."""
    from .layout import fresh, values_of

    s = fresh(shape, "s")
    chosen = [Lemma.of(item) for item in lemmas]
    functions = [(item.name, evaluator(item.build(s), s)) for item in chosen]
    failing: dict[str, State] = {}
    for state in states:
        values = leaves(values_of(shape, state))
        for name, evaluate in functions:
            if name not in failing and not evaluate(values):
                failing[name] = state
    return failing
