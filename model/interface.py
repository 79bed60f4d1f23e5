"""What a model is to the engines, in the shape of Stateright's `Model` trait
(https://docs.rs/stateright/latest/stateright/trait.Model.html): initial states, the successors of
a state with the actions that lead to them in a fixed order, action parsing, the values a report
shows, the properties to check and a goal every reachable state must be able to get back to.

The replication model (`control.replication.ReplicationSystem`) and each control-plane model
implement it. States are immutable and hashable; an action's `str` is what traces and reports show
and what `parse_action` reads back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Iterator, Protocol

__all__ = ["ALWAYS", "SOMETIMES", "Goal", "Model", "Property", "next_state"]

ALWAYS, SOMETIMES = "always", "sometimes"


@dataclass(frozen=True)
class Property:
    """A named predicate of a state (`holds(state)`) or, with `on_step`, of a transition
    (`holds(before, action, after)`). `always`: in every reachable state (or step); `sometimes`: in
    at least one (a witness that the model can do what the property names)."""

    name: str
    kind: str
    source: str
    holds: Callable[..., bool]
    on_step: bool = False

    def check(self, before: Hashable | None, action: Any, after: Hashable) -> bool:
        """Whether it holds in `after` (or the step to it); with no step before (an initial state),
        a step invariant holds and a step witness does not."""
        if self.on_step:
            return self.holds(before, action, after) if before is not None else self.kind == ALWAYS
        return self.holds(after)


@dataclass(frozen=True)
class Goal:
    """A state predicate every reachable state must be able to reach again (AG EF goal)."""

    name: str
    source: str
    holds: Callable[[Any], bool]  # of the model's own state type


class Model(Protocol):
    """What every engine takes. `successors` yields (action, state) in the same order on every
    call, so that every engine finds the same least shortest trace."""

    name: str  # the model's name, e.g. "replication" or "controller"
    action_names: tuple[str, ...]  # every action's name
    config: Any  # a frozen dataclass with `to_dict()`
    properties: tuple[Property, ...]
    goal: Goal

    def initial_states(self) -> list[Any]: ...

    def successors(self, state: Any) -> Iterator[tuple[Any, Any]]: ...

    def parse_action(self, text: str) -> Any: ...

    def state_values(self, state: Any) -> dict[str, Any]: ...


def next_state(model: Model, state: Hashable, action: Any) -> Any:
    """The state `action` leads to from `state`, or None when it is not enabled there (by the
    model's own `next_state` where it has one, without computing the other successors)."""
    own = getattr(model, "next_state", None)
    if own is not None:
        return own(state, action)
    return next((following for taken, following in model.successors(state) if taken == action), None)
