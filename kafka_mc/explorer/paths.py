"""A path through a model's state space as the explorer's URL writes it: the index of an initial
state, then the actions taken from it, comma-separated (`0,ProducerWrite(A),BecomeFollower(B)`).
Following one replays it through the model, one `next_state` a step, nothing exhaustive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_mc.checker.result import Trace
from kafka_mc.model.interface import Model, next_state
from kafka_mc.model.shape import short_repr


class PathError(ValueError):
    """A path that cannot be followed: the message names the bad part; `valid` is the path up to
    it (initial index and actions, as texts) and `enabled` the actions enabled at its end."""

    def __init__(self, message: str, valid: tuple[str, ...] = (), enabled: tuple[str, ...] = ()):
        super().__init__(message)
        self.valid = valid
        self.enabled = enabled


@dataclass(frozen=True)
class Walk:
    """A path followed: its trace and the state after each step (the initial state first)."""

    trace: Trace
    states: tuple[Any, ...]

    @property
    def texts(self) -> tuple[str, ...]:
        return trace_path(self.trace)


def trace_path(trace: Trace) -> tuple[str, ...]:
    """A trace as a path, as the URL writes it: the initial index, then each action's text."""
    return (str(trace.initial), *(str(action) for action in trace.actions))


def split_path(text: str) -> list[str]:
    """The parts of a path's text, split at the commas outside parentheses (an action's arguments
    have commas of their own: `BrokerHandleLeaderAndIsr(1, 1, 0)`)."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth <= 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    parts.append("".join(current).strip())
    return [part for part in parts if part]


def enabled_actions(model: Model, state: Any) -> tuple[str, ...]:
    return tuple(str(action) for action, _ in model.successors(state))


def follow(model: Model, parts: list[str]) -> Walk:
    """The walk along `parts` (an initial index, then action texts); PathError naming the first
    part that cannot be read or taken, with the actions enabled where it stopped."""
    initial_states = model.initial_states()
    first = parts[0] if parts else "0"
    if not (first.isascii() and first.isdigit()) or not 0 <= int(first) < len(initial_states):
        raise PathError(f"the path must start with the index of an initial state, from 0 to "
                        f"{len(initial_states) - 1}, not {short_repr(first)}")
    states = [initial_states[int(first)]]
    actions: list[Any] = []
    for number, text in enumerate(parts[1:], start=1):
        valid = (first, *(str(action) for action in actions))
        try:
            action = model.parse_action(text)
        except ValueError as error:
            enabled = enabled_actions(model, states[-1])
            raise PathError(f"step {number}: {short_repr(text)} is not an action of the {model.name} model "
                            f"({error}); enabled there: {', '.join(enabled) or 'none'}", valid, enabled) from None
        following = next_state(model, states[-1], action)
        if following is None:
            enabled = enabled_actions(model, states[-1])
            raise PathError(f"step {number}: {action} is not enabled after step {number - 1}; enabled there: "
                            f"{', '.join(enabled) or 'none'}", valid, enabled)
        actions.append(action)
        states.append(following)
    return Walk(Trace(model, int(first), tuple(actions)), tuple(states))
