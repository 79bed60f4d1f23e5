"""Actions: named events with the one replica they concern, as in the Kafka TLA+ specifications."""

from __future__ import annotations

import re
from typing import NamedTuple

from .state import replica_index, replica_name


class Action(NamedTuple):
    """An event, named after its actor and the Kafka event, e.g. `LeaderHandleFetchRequest(A)`."""

    name: str
    replica: int

    def __str__(self) -> str:
        return f"{self.name}({replica_name(self.replica)})"


_ACTION_SYNTAX = re.compile(r"^\s*([A-Za-z]+)\s*\(\s*([A-Za-z])\s*\)\s*$")


def parse_action(text: str, names: tuple[str, ...], replicas: int) -> Action:
    """Parse `Name(R)`; raise ValueError naming the bad part and what is allowed."""
    match = _ACTION_SYNTAX.match(text)
    if not match:
        raise ValueError(f"step {text!r} is not of the form Action(Replica), e.g. ProducerWrite(A)")
    name, replica = match.groups()
    if name not in names:
        raise ValueError(f"step {text!r}: unknown action {name!r}; allowed: {', '.join(names)}")
    return Action(name, replica_index(replica, replicas))
