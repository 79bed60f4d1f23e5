"""Hypothesis' stateful testing over any model: a RuleBasedStateMachine generated from it.

`machine_for(model)` builds the machine from a `model.interface.Model` (or `machine_for(config,
properties)` from the replication model's configuration), with nothing written per action: an
`initialize` rule picks the initial state (the replication model's: its leader) and, for swarm
testing, action kinds to avoid while others are enabled; one rule draws one of the enabled actions
in the model's order and takes it; every `always` state property is an `@invariant`, and every
`always` step property is checked after each step. A broken property raises `PropertyViolated`, which carries the behaviour so far
as a `Trace`; the shrunk failing example Hypothesis reports therefore replays through the
explicit model and renders with the same reports as every other engine's trace.

`hypothesis_check` runs the machine and returns a CheckResult (engine "hypothesis", never
complete) with the shrunk trace. Settings profiles: `kafka-mc-ci` (small, seeded by the caller)
and `kafka-mc-long` (long executions, for runs outside the test suite's time budget).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable

from hypothesis import HealthCheck, settings as Settings, strategies as st
from hypothesis import reproduce_failure as hypothesis_reproduce_failure
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from kafka_mc.control.replication import ReplicationSystem, model_of
from kafka_mc.model import Config, fingerprint
from kafka_mc.model.interface import Model
from kafka_mc.properties import ALWAYS, INVARIANTS, Property

from .result import CheckResult, Stats, Trace, Violation

ENGINE = "hypothesis"
CI_PROFILE, LONG_PROFILE = "kafka-mc-ci", "kafka-mc-long"
_QUIET_HEALTH_CHECKS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

Settings.register_profile(CI_PROFILE, max_examples=200, stateful_step_count=40, deadline=None, database=None,
                          print_blob=True, report_multiple_bugs=False, suppress_health_check=_QUIET_HEALTH_CHECKS)
Settings.register_profile(LONG_PROFILE, max_examples=5000, stateful_step_count=200, deadline=None,
                          database=None, print_blob=True, report_multiple_bugs=False,
                          suppress_health_check=_QUIET_HEALTH_CHECKS)


class PropertyViolated(AssertionError):
    """A property broken along a behaviour of the machine; `trace` is that behaviour."""

    def __init__(self, invariant: str, trace: Trace):
        steps = ", ".join(map(str, trace.actions)) or "none"
        super().__init__(f"{invariant} is violated after {len(trace)} steps: {steps}")
        self.invariant = invariant
        self.trace = trace


@dataclass
class Tally:
    """What the examples of one machine class went through (shrinking and replays included)."""

    examples: int = 0
    steps: int = 0
    longest: int = 0
    seen: set = field(default_factory=set)
    reached: dict[str, Trace] = field(default_factory=dict)


class ModelMachine(RuleBasedStateMachine):
    """The base of every generated machine; `machine_for` fills in the class attributes."""

    model: Model
    state_properties: tuple[Property, ...] = ()
    step_properties: tuple[Property, ...] = ()
    witnesses: tuple[Property, ...] = ()
    seen_key: Callable[[Any], Hashable]  # what the tally keeps of a state met
    tally: Tally

    def __init__(self) -> None:
        super().__init__()
        self.initial = 0
        self.state: Hashable | None = None
        self.actions: list = []
        self.avoided: frozenset[str] = frozenset()
        type(self).tally.examples += 1

    def trace(self) -> Trace:
        return Trace(self.model, self.initial, tuple(self.actions))

    def _saw(self, before: Hashable | None, action: Any, state: Hashable) -> None:
        tally = self.tally
        tally.seen.add(self.seen_key(state))
        for prop in self.witnesses:
            if prop.name not in tally.reached and prop.check(before, action, state):
                tally.reached[prop.name] = self.trace()

    def _start(self, initial: int, avoid: frozenset[str]) -> None:
        self.initial, self.avoided = initial, avoid
        self.state = self.model.initial_states()[initial]
        self._saw(None, None, self.state)

    @rule(data=st.data())
    def step(self, data) -> None:
        """Take one of the enabled actions; none enabled: the behaviour has ended (a stutter)."""
        assert self.state is not None  # the initialize rule (`start`) runs before any other rule
        enabled = {str(action): (action, following) for action, following in self.model.successors(self.state)}
        if not enabled:
            return
        preferred = [label for label, (action, _) in enabled.items() if action.name not in self.avoided]
        label = data.draw(st.sampled_from(preferred or list(enabled)), label="action")
        action, following = enabled[label]
        before, self.state = self.state, following
        self.actions.append(action)
        tally = self.tally
        tally.steps += 1
        tally.longest = max(tally.longest, len(self.actions))
        self._saw(before, action, following)
        for prop in self.step_properties:
            if not prop.holds(before, action, following):
                raise PropertyViolated(prop.name, self.trace())

    def _check(self, prop: Property) -> None:
        if self.state is not None and not prop.holds(self.state):
            raise PropertyViolated(prop.name, self.trace())


def machine_for(model: Model | Config, properties: Iterable[Property] | None = None) -> type[ModelMachine]:
    """A RuleBasedStateMachine for `model` (or for a `Config` of the replication model, checking
    `properties`, its invariants unless given): `always` state properties become `@invariant`s
    named after them, `always` step properties are checked after every step, `sometimes` ones are
    noted in the class's `tally` when reached."""
    model = model_of(model, properties, default=INVARIANTS)
    properties = model.properties
    names = [p.name for p in properties]
    if len(set(names)) < len(names):
        raise ValueError(f"two properties have the same name: {sorted(n for n in set(names) if names.count(n) > 1)}")
    namespace: dict = {
        "model": model,
        "state_properties": tuple(p for p in properties if p.kind == ALWAYS and not p.on_step),
        "step_properties": tuple(p for p in properties if p.kind == ALWAYS and p.on_step),
        "witnesses": tuple(p for p in properties if p.kind != ALWAYS),
        # the replication model's states kept as fingerprints, as the other engines keep them
        "seen_key": staticmethod(fingerprint if isinstance(model, ReplicationSystem) else _itself),
        "tally": Tally(),
    }
    namespace["start"] = initialize(
        initial=st.integers(0, len(model.initial_states()) - 1),
        avoid=st.frozensets(st.sampled_from(model.action_names)),
    )(_start_method())
    for prop in namespace["state_properties"]:
        method_name = identifier_of(prop.name)
        if method_name in namespace or hasattr(ModelMachine, method_name):
            method_name = f"invariant_{method_name}"  # a property called, say, `step`
        namespace[method_name] = invariant()(_invariant_method(prop, method_name))
    return type(_machine_name(model), (ModelMachine,), namespace)


def _itself(state: Hashable) -> Hashable:
    return state


def _machine_name(model: Model) -> str:
    if isinstance(model, ReplicationSystem):
        return f"Replication_{identifier_of(model.config.protocol)}_{model.config.replicas}r"
    return f"{identifier_of(model.name).title().replace('_', '')}Machine"


def _start_method():
    def start(self: ModelMachine, initial: int, avoid: frozenset[str]) -> None:
        """An initial state; action kinds to avoid while others are enabled (swarm testing)."""
        self._start(initial, avoid)

    return start


def _invariant_method(prop: Property, method_name: str):
    def check(self: ModelMachine) -> None:
        self._check(prop)

    check.__name__ = check.__qualname__ = method_name
    check.__doc__ = f"{prop.name} ({prop.source})"
    return check


def identifier_of(text: str) -> str:
    """A Python identifier for a property's or a protocol's name (for machine and method names)."""
    name = re.sub(r"\W", "_", text)
    return name if name.isidentifier() else f"p_{name}"


@dataclass(frozen=True)
class HypothesisResult(CheckResult):
    """A CheckResult with what a Hypothesis run adds: examples run, steps taken, the seed, and
    Hypothesis' `@reproduce_failure(...)` line for a failure."""

    seed: int | None = None
    examples: int = 0
    steps: int = 0
    reproduce_blob: str | None = None
    falsifying_example: str = ""


def hypothesis_check(
    model: Model | Config,
    properties: Iterable[Property] | None = None,
    *,
    settings: Settings | None = None,
    seed: int | None = None,
    reproduce: tuple[str, bytes] | None = None,
) -> HypothesisResult:
    """Run the machine of `model` (or of a `Config` of the replication model, checking `properties`,
    all of `properties.PROPERTIES` unless given) under `settings` (when None, the current Hypothesis profile
    with no deadline, no example database and the reproduce blob printed),
    seeded with `seed`, or replaying a `reproduce` = (version, blob) of `@reproduce_failure`.
    A failing example is shrunk by Hypothesis, replayed through the explicit model and returned
    as the violation's trace; with no failure the result says how much was tried."""
    model = model_of(model, properties)
    machine = machine_for(model)
    properties = model.properties
    if seed is not None:
        machine = hypothesis_seed(seed)(machine)
    if reproduce is not None:
        machine = hypothesis_reproduce_failure(*reproduce)(machine)
    if settings is None:
        settings = Settings(deadline=None, database=None, print_blob=True, report_multiple_bugs=False,
                            suppress_health_check=_QUIET_HEALTH_CHECKS)
    started = time.perf_counter()
    violations: tuple[Violation, ...] = ()
    blob, example = None, ""
    try:
        run_state_machine_as_test(machine, settings=settings)
    except PropertyViolated as error:
        violation = _replayed(error, properties)
        violations = (violation,)
        notes = getattr(error, "__notes__", [])
        example = "\n".join(note for note in notes if "reproduce_failure" not in note).strip()
        blob = next((match.group(0) for note in notes
                     if (match := re.search(r"@reproduce_failure\(.*\)", note))), None)
    tally = machine.tally
    seconds = time.perf_counter() - started
    return HypothesisResult(
        engine=ENGINE,
        config=model.config,
        complete=False,
        stats=Stats(len(tally.seen), tally.examples + tally.steps, tally.longest, seconds),
        violations=violations,
        witnesses={p.name: p.name in tally.reached for p in properties if p.kind != ALWAYS},
        stopped_because=(f"Hypothesis: {settings.max_examples} examples of up to "
                         f"{settings.stateful_step_count} steps, never a proof"),
        witness_traces=dict(tally.reached),
        seed=seed,
        examples=tally.examples,
        steps=tally.steps,
        reproduce_blob=blob,
        falsifying_example=example,
    )


def _replayed(error: PropertyViolated, properties: tuple[Property, ...]) -> Violation:
    """The violation of a shrunk example, after replaying its trace through the explicit model
    and seeing the property fail at its last step (an engine slip would show here)."""
    trace = error.trace
    states = trace.states()
    prop = next(p for p in properties if p.name == error.invariant)
    before, action = (states[-2], trace.actions[-1]) if len(states) > 1 else (None, None)
    if prop.check(before, action, states[-1]):
        raise AssertionError(f"the shrunk trace of {error.invariant} replays without violating it")
    return Violation(error.invariant, trace)


__all__ = ["CI_PROFILE", "LONG_PROFILE", "HypothesisResult", "ModelMachine", "PropertyViolated",
           "hypothesis_check", "machine_for"]
