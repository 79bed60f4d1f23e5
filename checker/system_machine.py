"""Hypothesis' stateful testing over a control-plane model (`control.system`), as `checker.machine`
does for the replication model: an `initialize` rule picks the initial state, one rule takes one of
the enabled actions, the model's state invariants are `@invariant`s and its step invariants are
checked after each step. A broken invariant raises `machine.PropertyViolated` carrying the behaviour
as a `Trace`, so the shrunk example replays and renders as the other engines' traces do.

    from kafka_mc.checker.system_machine import system_machine
    TestController = system_machine(ControllerModel(ControllerConfig())).TestCase
"""

from __future__ import annotations

from typing import Any, Hashable

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kafka_mc.control.system import ControlAction
from kafka_mc.model.interface import ALWAYS

from .machine import PropertyViolated, identifier_of
from .result import Trace


class SystemMachine(RuleBasedStateMachine):
    """The base of every generated machine; `system_machine` fills in `system`."""

    system: Any = None  # the model (a `model.interface.Model`)

    def __init__(self) -> None:
        super().__init__()
        self.initial = 0
        self.state: Hashable | None = None
        self.actions: list[ControlAction] = []

    def trace(self) -> Trace:
        return Trace(self.system, self.initial, tuple(self.actions))

    @rule(data=st.data())
    def step(self, data) -> None:
        """Take one of the enabled actions; none enabled: the behaviour has ended (a stutter)."""
        enabled = {str(action): (action, following) for action, following in self.system.successors(self.state)}
        if not enabled:
            return
        action, following = enabled[data.draw(st.sampled_from(sorted(enabled)), label="action")]
        before, self.state = self.state, following
        self.actions.append(action)
        for prop in self.system.properties:
            if prop.on_step and prop.kind == ALWAYS and not prop.holds(before, action, following):
                raise PropertyViolated(prop.name, self.trace())


def system_machine(system) -> type[SystemMachine]:
    """A RuleBasedStateMachine class over `system`, its invariants checked in every state and step."""
    initial_count = len(system.initial_states())

    def start(self: SystemMachine, initial: int) -> None:
        self.initial, self.state = initial, system.initial_states()[initial]

    namespace = {"system": system,
                 "start": initialize(initial=st.integers(0, initial_count - 1))(start)}
    for prop in system.properties:
        if prop.kind == ALWAYS and not prop.on_step:
            namespace[f"check_{identifier_of(prop.name)}"] = invariant()(_invariant_method(prop))
    return type(f"{identifier_of(system.name).title().replace('_', '')}Machine", (SystemMachine,), namespace)


def _invariant_method(prop):
    def check(self: SystemMachine) -> None:
        if self.state is not None and not prop.holds(self.state):
            raise PropertyViolated(prop.name, self.trace())
    check.__name__ = f"check_{identifier_of(prop.name)}"
    return check
