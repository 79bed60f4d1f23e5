"""What every engine returns: traces, statistics and verdicts, independent of the engine; and
what a scenario's replay returns (`Replay`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Protocol

from kafka_mc.model import Action, Config, State
from kafka_mc.model.interface import ALWAYS, next_state


class ReplayError(ValueError):
    """A trace step that is not enabled in the state before it: `state` is that state (None for a
    missing initial state) and `enabled` the actions enabled there."""

    def __init__(self, step: int, action: Action | str, reason: str, state: Any = None,
                 enabled: tuple[str, ...] = ()):
        where = "" if state is None else (f"; enabled there: {', '.join(enabled)}" if enabled
                                          else "; no action is enabled there")
        super().__init__(f"step {step} ({action}): {reason}{where}")
        self.step = step
        self.action = action
        self.state = state
        self.enabled = enabled


class _HasSteps(Protocol):
    """What `_Steps` needs of the trace it is mixed into."""

    @property
    def actions(self) -> tuple[Any, ...]: ...

    def states(self) -> list[Any]: ...


class _Steps:
    """What every trace type shares: its steps, from its `actions` and `states()`."""

    def __len__(self: _HasSteps) -> int:
        return len(self.actions)

    def steps(self: _HasSteps) -> list[tuple[Any, Any]]:
        """(None, initial state), then (action, state after it) for every step."""
        return list(zip((None, *self.actions), self.states()))



EVERYTHING_FOUND = "every invariant violated and every witness reached"  # why a search stops with all decided

@dataclass(frozen=True)
class Trace(_Steps):
    """A behaviour of a model (`model.interface.Model`): an initial state (by its index among the
    model's initial states) and the actions taken from it. States are rebuilt by re-running the
    model, so any engine's trace can be replayed and re-checked by the explicit model; it pickles
    small."""

    model: Any
    initial: int
    actions: tuple
    start: Any = None  # a given first state instead of an initial one (a counterexample to induction)

    @property
    def config(self) -> Any:
        return self.model.config

    def states(self) -> list:
        """The initial state and the state after each action; ReplayError if a step is disabled."""
        if self.start is not None:
            states = [self.start]
        else:
            initial_states = self.model.initial_states()
            if not 0 <= self.initial < len(initial_states):
                raise ReplayError(0, "Init", f"there is no initial state {self.initial}")
            states = [initial_states[self.initial]]
        for number, action in enumerate(self.actions, start=1):
            following = next_state(self.model, states[-1], action)
            if following is None:
                enabled = tuple(str(taken) for taken, _ in self.model.successors(states[-1]))
                raise ReplayError(number, action, "not enabled in the state before it", states[-1], enabled)
            states.append(following)
        return states

    def checked_steps(self, properties: Iterable[Any] | None = None) -> list[tuple[Any, Any, tuple[str, ...]]]:
        """`steps()`, each with the invariants of `properties` (the model's own unless given) that fail
        there (a step invariant: on the step into it), from one replay."""
        invariants = [p for p in (self.model.properties if properties is None else properties) if p.kind == ALWAYS]
        before = None
        checked = []
        for action, state in self.steps():
            checked.append((action, state, tuple(p.name for p in invariants if not p.check(before, action, state))))
            before = state
        return checked

    def broken(self, properties: Iterable[Any] | None = None) -> list[tuple[str, ...]]:
        """For each step, the invariants that fail there (`checked_steps`)."""
        return [names for _, _, names in self.checked_steps(properties)]


@dataclass(frozen=True)
class Violation:
    invariant: str
    trace: Trace


@dataclass(frozen=True)
class Stats:
    distinct_states: int
    states_generated: int
    depth: int
    seconds: float

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else float(self.distinct_states)


@dataclass(frozen=True)
class KernelStats(Stats):
    """`Stats` with the kernel's own figures: `seconds` is exploration only; `compile_seconds`
    the JIT compilation (or loading it from numba's cache) before it; `collision_probability`
    TLC's optimistic estimate of a fingerprint collision, distinct * (generated - distinct) / 2^64;
    `visited_bytes` the memory of the visited set and the parent links when the run ended (the table's
    slots, the links' pages; on the GPU engine the table is on the device)."""

    compile_seconds: float = 0.0
    collision_probability: float = 0.0
    visited_bytes: int = 0


@dataclass(frozen=True)
class Coverage:
    """One action's coverage in a run, as TLC's `-coverage` reports it: how often it was enabled
    (the successors it generated) and how many distinct states it reached first (the action of
    their parent link, the last step of the shortest trace to them). With symmetry the engines
    may pick other representatives of a class, and then a tie between shortest paths may credit
    another action: the counts of enabled actions agree, those of new states add up alike."""

    action: str
    enabled: int
    new_states: int


def coverage_of(action_names: tuple[str, ...], enabled: Mapping[str, int], new: Mapping[str, int]) -> tuple[Coverage, ...]:
    """Every action of a model in its order, with the counts a run kept by action name."""
    return tuple(Coverage(name, enabled.get(name, 0), new.get(name, 0)) for name in action_names)


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one run. `complete` is true only when every reachable state was explored."""

    engine: str
    config: Config
    complete: bool
    stats: Stats
    violations: tuple[Violation, ...]
    witnesses: dict[str, bool]
    stopped_because: str = ""
    witness_traces: dict[str, Trace] = field(default_factory=dict)
    bounded_to: int | None = None  # bounded model checking: the depth asked for (never complete)
    invariants: tuple[str, ...] | None = None  # the invariants checked (None: the replication model's own)
    coverage: tuple[Coverage, ...] | None = None  # per action; None: the engine does not count it

    @property
    def never_enabled(self) -> tuple[str, ...]:
        """The actions a complete run never found enabled (a vacuity warning, as a witness never
        reached: the bounds or settings leave the action no state to fire in)."""
        if not self.complete or self.coverage is None:
            return ()
        return tuple(entry.action for entry in self.coverage if not entry.enabled)

    @property
    def violated(self) -> tuple[str, ...]:
        return tuple(violation.invariant for violation in self.violations)

    @property
    def unreached_witnesses(self) -> tuple[str, ...]:
        return tuple(name for name, reached in self.witnesses.items() if not reached)

    @property
    def every_witness_reached(self) -> bool:
        """A search of witnesses only that stopped once each was reached (`EVERYTHING_FOUND`, no
        violation): decided, though not every state was explored."""
        return self.stopped_because == EVERYTHING_FOUND and not self.violations and self.bounded_to is None

    @property
    def passed(self) -> bool:
        return (self.complete or self.every_witness_reached) and not self.violations and not self.unreached_witnesses


@dataclass(frozen=True)
class ReplayStep:
    number: int
    action: str
    state: State
    broken: tuple[str, ...]  # invariants that fail in this state
    mismatches: tuple[str, ...] = ()  # differences from a checkpoint after this step


@dataclass
class Replay:
    """A scenario's replay (`checker.scenario.replay`): the replayed scenario (a `Scenario` of any
    model) and each of its steps."""

    scenario: Any
    steps: list[ReplayStep] = field(default_factory=list)

    @property
    def first_breaks(self) -> dict[str, int]:
        """Each broken invariant with the first step at which it fails."""
        first: dict[str, int] = {}
        for step in self.steps:
            for name in step.broken:
                first.setdefault(name, step.number)
        return first

    @property
    def mismatches(self) -> list[str]:
        found = [f"after step {s.number}: {m}" for s in self.steps for m in s.mismatches]
        expected = set(self.scenario.expected_violations)
        broken = set(self.first_breaks)
        found += [f"expected {name} to break, it never does" for name in sorted(expected - broken)]
        if getattr(self.scenario, "strict", True):
            found += [f"{name} breaks, which the scenario does not expect" for name in sorted(broken - expected)]
        return found
