"""A control-plane model's state as values: its variables with sets sorted and maps keyed in order
(`control_values`, what the reports show), and the same as plain JSON values (`plain_values`,
what the JSON summary shows and what a scenario's checkpoints are compared with).

Below both `counterexamples.control` (the reports) and `checker.control_scenario` (the replay),
which use it, and `counterexamples.summary`.
"""

from __future__ import annotations

from typing import Any

from kafka_mc.checker.result import SystemTrace

from .itf import SortedSet


def control_values(trace: SystemTrace, state) -> dict[str, Any]:
    """A state's variables with every set sorted and every map keyed in order."""
    return {name: _sorted(value) for name, value in trace.system.state_values(state).items()}


def plain_values(trace: SystemTrace, state) -> dict[str, Any]:
    """A state's variables as JSON values (sets as sorted lists, map keys as strings)."""
    return plain_value(control_values(trace, state))


def plain_value(value: Any) -> Any:
    """A value of `control_values` as JSON: sets as sorted lists, named tuples as objects."""
    if isinstance(value, frozenset):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {str(key): plain_value(v) for key, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {key: plain_value(v) for key, v in zip(value._fields, value)}  # as `_asdict()`
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


def _sorted(value: Any) -> Any:
    if isinstance(value, frozenset):
        return SortedSet(_sorted(v) for v in value)
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value
