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
not reliably stop Spacer, so the search runs in a child interpreter that is stopped at the limit,
and on any exception in the parent (KeyboardInterrupt included); the child also ends itself when
its parent is gone or well past the limit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Sequence

import z3

from kafka_mc.model import PROTOCOLS, Config

from .budget import Deadline
from .induction import DEFAULT_CACHE, DEFAULT_PROPERTIES, PROVED, UNBOUNDED, UNKNOWN, scope_text
from .layout import Shape, leaves
from .properties import SYMBOLIC_INVARIANTS, well_formed
from .transitions import SymbolicModel

REFUTED = "refuted"
CHILD_GRACE = 5.0  # seconds past its limit after which the child ends itself
STOP_WAIT = 2.0  # seconds a terminated child is given before it is killed


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


def _watch(parent: int, seconds: float | None) -> None:
    """End this process when its parent is gone (it is re-parented) or after `seconds`."""
    ends = None if seconds is None else time.monotonic() + seconds
    while ends is None or time.monotonic() < ends:
        if os.getppid() != parent:
            break
        time.sleep(0.2)
    os._exit(3)


def _child(parent: int | None = None) -> None:
    """The child process: read the job as JSON on stdin, query Spacer, print (answer, detail) as
    JSON on stdout."""
    job = json.loads(sys.stdin.read())
    if parent is not None:
        limit = job["max_seconds"]
        threading.Thread(target=_watch, args=(parent, None if limit is None else limit + CHILD_GRACE),
                         daemon=True).start()
    try:
        fp, query = horn_clauses(Config.for_simulation(**job["config"]), job["properties"],
                                 frozenset(job["unbounded"]), job["cache"])
        answer = fp.query(query)
        if answer == z3.unsat:
            result = ("unsat", str(fp.get_answer()))
        elif answer == z3.sat:
            result = ("sat", "")
        else:
            result = ("unknown", fp.reason_unknown())
    except Exception as error:  # reported, not raised, across the process boundary
        result = ("error", f"{type(error).__name__}: {error}")
    print(json.dumps(result))


def _run_child(job: str, seconds: float | None) -> tuple[str, str]:
    """(answer, detail) from a child interpreter given `seconds`: ("timeout", "") when it has not
    answered by then."""
    # a separate interpreter, not multiprocessing: nothing depends on how the caller's main module
    # can be imported, and the child is stopped with certainty at the limit
    child = subprocess.Popen([sys.executable, "-c", f"from {__name__} import _child; _child({os.getpid()})"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        output, errors = child.communicate(job, timeout=seconds)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    finally:
        stop_child(child)
    try:
        answer, detail = json.loads(output)
    except (ValueError, TypeError):
        return "error", errors.strip()[-500:] or "no answer"
    return str(answer), str(detail)


def stop_child(child: subprocess.Popen) -> None:
    """Terminate `child` unless it has ended, wait for it (killing it if it lingers) and close
    its pipes. Safe to call again, and while an exception is on its way."""
    try:
        if child.poll() is None:
            child.terminate()
            child.wait(STOP_WAIT)
    except (subprocess.TimeoutExpired, KeyboardInterrupt):
        pass  # killed below
    while child.poll() is None:
        try:
            child.kill()
            child.wait()
        except KeyboardInterrupt:  # another Ctrl-C: the child is still reaped
            pass
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def spacer_prove(config: Config, properties: Sequence[str] = DEFAULT_PROPERTIES, *,
                 unbounded: frozenset[str] = UNBOUNDED, cache: int | None = None,
                 max_seconds: float = 600.0, deadline: Deadline | None = None) -> SpacerResult:
    """Ask Spacer for an inductive invariant proving `properties` of `config`, for at most
    `max_seconds` from this call on, or until `deadline` (a budget already running); the child
    process is stopped then, and the result is unknown. The child is stopped and reaped however
    this returns or raises."""
    if deadline is None:
        deadline = Deadline(max_seconds)
    started = time.perf_counter()
    for name in properties:
        if not isinstance(name, str):
            raise ValueError(f"property {name.name}: Spacer proves the shipped invariants only (its child process "
                             "cannot run your Python); prove your own with the lemmas (--method lemmas)")
        if name not in SYMBOLIC_INVARIANTS:
            raise ValueError(f"property {name!r} has no formula; allowed: {', '.join(SYMBOLIC_INVARIANTS)}")
    if cache is None:
        cache = DEFAULT_CACHE if "elections" in unbounded else config.elections + 1
    if not PROTOCOLS[config.protocol].epoch_cache:
        cache = 0
    SymbolicModel(config, Shape.of(config, cache=cache, integers=True), frozenset(unbounded))  # EncodingError early
    job = json.dumps({"config": config.to_dict(), "properties": list(properties), "unbounded": sorted(unbounded),
                      "cache": cache, "max_seconds": deadline.left()})
    left = deadline.left()
    answer, detail = ("timeout", "") if left == 0 else _run_child(job, left)
    seconds = time.perf_counter() - started
    scope = scope_text(config, frozenset(unbounded), cache)
    if answer == "unsat":
        return SpacerResult(config, PROVED, tuple(properties), seconds,
                            "Spacer found an inductive invariant implying the properties", scope, cache, detail)
    if answer == "sat":
        return SpacerResult(config, REFUTED, tuple(properties), seconds,
                            "Spacer derived a reachable state violating a property", scope, cache)
    if answer == "timeout":
        reason = f"no answer from Spacer within {deadline.seconds:g} s"
    elif answer == "error":
        reason = f"Spacer failed: {detail}"
    else:
        reason = f"Spacer answered unknown ({detail})"
    return SpacerResult(config, UNKNOWN, tuple(properties), seconds, reason, scope, cache)
