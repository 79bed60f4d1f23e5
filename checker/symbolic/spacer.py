"""Looking for an inductive invariant with no lemmas: the model as constrained Horn clauses for
Z3's Spacer engine.

One predicate `Inv` over the state variables (the same layout, unbounded integers and lifted
bounds as `induction.prove`) and the clauses

    initial(s)                                  => Inv(s)
    Inv(s) and well_formed(s) and slot_i(s, t)  => Inv(t)      one clause per action slot
    Inv(s) and not (P1(s) and ... and Pn(s))    => Err

Spacer answers `unsat` for the query Err when it has found an interpretation of Inv that is an
inductive invariant implying the properties (proved), `sat` when Err is derivable (a property
is violated in a reachable state: refuted), or runs out of time (unknown). Z3's own time-out does
not reliably stop Spacer, so the search runs in a child process that is stopped at the limit.
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import dataclass
from typing import Sequence

import z3

from kafka_mc.model import Config

from .induction import DEFAULT_CACHE, DEFAULT_PROPERTIES, PROVED, UNBOUNDED, UNKNOWN, scope_text
from .layout import Shape, leaves
from .properties import SYMBOLIC_INVARIANTS, well_formed
from .transitions import SymbolicModel

REFUTED = "refuted"


@dataclass(frozen=True)
class SpacerResult:
    config: Config
    status: str  # proved, refuted, unknown
    properties: tuple[str, ...]
    seconds: float
    reason: str
    scope: str
    cache: int
    invariant: str = ""  # Spacer's interpretation of Inv, when it proved the properties

    @property
    def proved(self) -> bool:
        return self.status == PROVED


def horn_clauses(config: Config, properties: Sequence[str], unbounded: frozenset[str], cache: int) -> tuple:
    """(Fixedpoint with the clauses, the query) for Spacer."""
    symbolic = SymbolicModel(config, Shape.of(config, cache=cache, integers=True), unbounded)
    s, t = symbolic.fresh("s"), symbolic.fresh("t")
    before, after = leaves(s), leaves(t)
    inv = z3.Function("Inv", *[leaf.sort() for leaf in before], z3.BoolSort())
    err = z3.Function("Err", z3.BoolSort())
    fp = z3.Fixedpoint()
    fp.set(engine="spacer")
    fp.register_relation(inv, err)
    fp.declare_var(*before, *after)
    fp.rule(inv(*before), symbolic.initial(s))
    for slot in range(len(symbolic.slots)):
        fp.rule(inv(*after), [inv(*before), well_formed(s), symbolic.transition(s, t, slot)])
    fp.rule(err(), [inv(*before), z3.Not(z3.And([SYMBOLIC_INVARIANTS[name](s) for name in properties]))])
    return fp, err()


def _solve(config_fields: dict, properties: list[str], unbounded: list[str], cache: int, pipe) -> None:
    """The child process: build the clauses, query, send (answer, detail) back."""
    try:
        fp, query = horn_clauses(Config.for_simulation(**config_fields), properties, frozenset(unbounded), cache)
        answer = fp.query(query)
        if answer == z3.unsat:
            pipe.send(("unsat", str(fp.get_answer())))
        elif answer == z3.sat:
            pipe.send(("sat", ""))
        else:
            pipe.send(("unknown", fp.reason_unknown()))
    except Exception as error:  # reported, not raised, across the process boundary
        pipe.send(("error", f"{type(error).__name__}: {error}"))


def spacer_prove(config: Config, properties: Sequence[str] = DEFAULT_PROPERTIES, *,
                 unbounded: frozenset[str] = UNBOUNDED, cache: int | None = None,
                 max_seconds: float = 600.0) -> SpacerResult:
    """Ask Spacer for an inductive invariant proving `properties` of `config`, for at most
    `max_seconds` (the child process is stopped then, and the result is unknown)."""
    for name in properties:
        if name not in SYMBOLIC_INVARIANTS:
            raise ValueError(f"property {name!r} has no formula; allowed: {', '.join(SYMBOLIC_INVARIANTS)}")
    if cache is None:
        cache = DEFAULT_CACHE if "elections" in unbounded else config.elections + 1
    if config.protocol == "hw":
        cache = 0
    SymbolicModel(config, Shape.of(config, cache=cache, integers=True), frozenset(unbounded))  # EncodingError early
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_solve, args=(config.to_dict(), list(properties), sorted(unbounded), cache, sender),
                            daemon=True)
    started = time.perf_counter()
    child.start()
    sender.close()
    answer, detail = "timeout", ""
    if receiver.poll(max_seconds):
        try:
            answer, detail = receiver.recv()
        except EOFError:
            answer, detail = "error", "the Spacer process ended without an answer"
    seconds = time.perf_counter() - started
    if child.is_alive():
        child.kill()
    child.join()
    scope = scope_text(config, frozenset(unbounded), cache)
    if answer == "unsat":
        return SpacerResult(config, PROVED, tuple(properties), seconds,
                            "Spacer found an inductive invariant implying the properties", scope, cache, detail)
    if answer == "sat":
        return SpacerResult(config, REFUTED, tuple(properties), seconds,
                            "Spacer derived a reachable state violating a property", scope, cache)
    if answer == "timeout":
        reason = f"no answer from Spacer within {max_seconds:g} s"
    elif answer == "error":
        reason = f"Spacer failed: {detail}"
    else:
        reason = f"Spacer answered unknown ({detail})"
    return SpacerResult(config, UNKNOWN, tuple(properties), seconds, reason, scope, cache)
