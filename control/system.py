"""What a control-plane model is to the engines: a small transition system in Stateright's shape.

A model has a configuration, initial states, the enabled actions of a state and their
successors, named properties, and a goal every reachable state must be able to get back to
(checked on the state graph, AG EF goal). States are immutable tuples; actions are named
values whose text is what traces and reports show. `state_values` gives a state's variables
as ITF values (named tuples, lists, sets, dicts), for the reports.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Callable, Hashable, Iterator, NamedTuple, Protocol

from kafka_mc.model.config import ConfigError, check_bool, check_int

__all__ = ["ALWAYS", "SOMETIMES", "ConfigError", "ControlAction", "ControlProperty", "Goal", "TransitionSystem",
           "ModelConfig", "bit_members", "check_bool", "check_int", "next_state", "parse_control_action", "put"]

ALWAYS, SOMETIMES = "always", "sometimes"


class ControlAction(NamedTuple):
    """An event named after its actor and the Kafka event, with its arguments, e.g. `SessionExpire(1)`."""

    name: str
    args: tuple = ()

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class ControlProperty:
    """A named predicate of a state (`holds(state)`) or, with `on_step`, of a transition
    (`holds(before, action, after)`). `always`: in every reachable state or step; `sometimes`:
    in at least one."""

    name: str
    kind: str
    source: str
    holds: Callable[..., bool]
    on_step: bool = False

    def check(self, before: Hashable | None, action: ControlAction | None, after: Hashable) -> bool:
        """Whether it holds in `after` (or the step to it); with no step before, a step invariant
        holds and a step witness does not."""
        if self.on_step:
            return self.holds(before, action, after) if before is not None else self.kind == ALWAYS
        return self.holds(after)


@dataclass(frozen=True)
class Goal:
    """A state predicate every reachable state must be able to reach again (AG EF goal)."""

    name: str
    source: str
    holds: Callable[[Any], bool]  # of the model's own state type


@dataclass(frozen=True)
class ModelConfig:
    """The base of a model's settings: a frozen dataclass, validated in `__post_init__`."""

    def to_dict(self) -> dict:
        return asdict(self)


class TransitionSystem(Protocol):
    name: str  # the model's name on the CLI, e.g. "controller"
    action_names: tuple[str, ...]  # every action's name
    config: Any  # a frozen dataclass with `to_dict()`
    properties: tuple[ControlProperty, ...]
    goal: Goal

    def initial_states(self) -> list[Hashable]: ...

    def successors(self, state: Hashable) -> Iterator[tuple[ControlAction, Hashable]]: ...

    def state_values(self, state: Hashable) -> dict[str, Any]: ...


def next_state(system: TransitionSystem, state: Hashable, action: ControlAction) -> Hashable | None:
    """The state `action` leads to from `state`, or None when it is not enabled there."""
    return next((following for taken, following in system.successors(state) if taken == action), None)


def put(values: tuple, index: int, value) -> tuple:
    """`values` with the one at `index` replaced by `value`."""
    return values[:index] + (value,) + values[index + 1:]


def bit_members(mask: int) -> list[int]:
    """The indices of the set bits of `mask`, in order."""
    return [index for index in range(mask.bit_length()) if mask >> index & 1]


_ACTION_SYNTAX = re.compile(r"^\s*([A-Za-z]+)\s*\(\s*([-0-9,\s]*)\)\s*$")


def parse_control_action(text: str, names: tuple[str, ...]) -> ControlAction:
    """`Name(1, 2)` as a ControlAction; ValueError naming the bad part and what is allowed."""
    match = _ACTION_SYNTAX.match(text)
    if not match:
        raise ValueError(f"step {text!r} is not of the form Action(arguments), e.g. SessionExpire(0)")
    name, arguments = match.groups()
    if name not in names:
        raise ValueError(f"step {text!r}: unknown action {name!r}; allowed: {', '.join(names)}")
    try:
        args = tuple(int(part) for part in arguments.split(",") if part.strip())
    except ValueError:
        raise ValueError(f"step {text!r}: arguments must be integers") from None
    return ControlAction(name, args)
