"""What the control-plane models share: their actions (`ControlAction`, parsed by
`parse_control_action`), the base of their settings, and small helpers. Each model implements
`model.interface.Model`; its states are immutable tuples and `state_values` gives a state's
variables as ITF values (named tuples, lists, sets, dicts), for the reports.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import NamedTuple

from kafka_mc.model.config import ConfigError, check_bool, check_int

__all__ = ["ConfigError", "ControlAction", "ModelConfig", "bit_members", "check_bool", "check_int",
           "parse_control_action", "put"]


class ControlAction(NamedTuple):
    """An event named after its actor and the Kafka event, with its arguments, e.g. `SessionExpire(1)`."""

    name: str
    args: tuple = ()

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class ModelConfig:
    """The base of a model's settings: a frozen dataclass, validated in `__post_init__`."""

    def to_dict(self) -> dict:
        return asdict(self)


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
