"""Traces as TLC prints an error trace: the variables of every state as TLA+ conjuncts, for any
model (its `state_values`, sorted)."""

from __future__ import annotations

import json
from typing import Any

from kafka_mc.checker.result import Trace
from kafka_mc.model.values import sorted_values

from .explain import explain


def trace_text(trace: Trace, invariant: str | tuple[str, ...] | None) -> str:
    """A TLC-style error trace of one invariant's violation, or of several that this same trace
    violates (each a shortest violation, so they break first in its last state); the first state
    where they fail carries a comment."""
    names = (invariant,) if isinstance(invariant, str) else tuple(invariant or ())
    checked = trace.checked_steps()
    breaking = next((number for number, (*_, failing) in enumerate(checked) if names[0] in failing), None) \
        if names else None
    lines = [f"Error: Invariant {name} is violated." for name in names]
    if names:
        lines.append("Error: The behavior up to this point is:")
    previous: dict[str, Any] | None = None
    for number, (action, state, _) in enumerate(checked):
        predicate = "Initial predicate" if action is None else str(action)
        lines.append(f"State {number + 1}: <{predicate}>")
        if number == breaking:
            lines.append(f"\\* {', '.join(names)} {'is' if len(names) == 1 else 'are'} violated in this state")
            lines += [f"\\* {name}: {why}" for name in names if (why := explain(name, state))]
        values = sorted_values(trace.model, state)
        if previous is not None:
            changed = [path for name in sorted(values) for path in changed_paths(name, previous[name], values[name])]
            lines.append(f"\\* changed: {', '.join(changed) or 'nothing'}")
        lines += [conjunct(name, values[name]) for name in sorted(values)]
        lines.append("")
        previous = values
    return "\n".join(lines)


def changed_paths(path: str, before: Any, after: Any) -> list[str]:
    """Where two values of `state_values` differ, as TLA+ paths: `replicas["B"].hw`, a function's
    values and a record's fields apart, anything else whole."""
    if before == after:
        return []
    if isinstance(before, dict) and isinstance(after, dict) and before.keys() == after.keys():
        return [found for key in before for found in changed_paths(f"{path}[{tla_value(key)}]", before[key], after[key])]
    if hasattr(before, "_fields") and type(before) is type(after):
        return [found for field in before._fields
                for found in changed_paths(f"{path}.{field}", getattr(before, field), getattr(after, field))]
    return [path]


def conjunct(name: str, value: Any) -> str:
    """`/\\ name = value`, a function's pairs on lines of their own under the value."""
    prefix = f"/\\ {name} = "
    return prefix + tla_value(value, " " * (len(prefix) + 2))


def tla_value(value: Any, indent: str | None = None) -> str:
    """A value of `state_values` in TLA+ syntax; a function puts each pair on its own line,
    indented by `indent`, or all on one line without one."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, frozenset):
        return "{" + ", ".join(tla_value(v) for v in value) + "}"
    if isinstance(value, dict):
        pairs = (f"{tla_value(k)} :> {tla_value(v)}" for k, v in value.items())
        return "( " + (" @@ " if indent is None else f" @@\n{indent}").join(pairs) + " )"
    if hasattr(value, "_fields"):
        return "[" + ", ".join(f"{k} |-> {tla_value(v)}" for k, v in value._asdict().items()) + "]"
    return "<<" + ", ".join(tla_value(v) for v in value) + ">>"
