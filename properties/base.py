"""The property type shared by every engine."""

from __future__ import annotations

from typing import Callable, NamedTuple

from kafka_mc.model.state import State

ALWAYS, SOMETIMES = "always", "sometimes"


class Property(NamedTuple):
    """A named predicate. `always`: must hold in every reachable state; `sometimes`: must hold
    in at least one. A step predicate sees the state before and after a transition."""

    name: str
    kind: str
    source: str
    holds: Callable[..., bool]
    on_step: bool = False

    def check(self, before: State | None, after: State) -> bool:
        if self.on_step:
            return before is not None and self.holds(before, after)
        return self.holds(after)
