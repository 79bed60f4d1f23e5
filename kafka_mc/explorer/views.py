"""What the explorer's page shows of one step of a path, as JSON: the state (a picture for the
replication model, as the HTML reports draw it, and every variable, changed ones marked), the
actions enabled there with what each would change, and each property's verdict along the path."""

from __future__ import annotations

from typing import Any, Callable, Iterable

from kafka_mc.counterexamples.html import state_picture
from kafka_mc.counterexamples.itf import INIT
from kafka_mc.counterexamples.text import tla_value
from kafka_mc.model.interface import ALWAYS, Model, Property
from kafka_mc.model.values import plain_values, sorted_values
from kafka_mc.properties.user import UserPropertyError

from .paths import Walk

# The models with a picture of their own, by name: (model, state) -> HTML; any other shows its variables.
PICTURES: dict[str, Callable[[Any, Any], str]] = {
    "replication": lambda model, state: state_picture(state, model.config.protocol),
    "replication-failover": lambda model, state: state_picture(state.replication, model.config.protocol),
}


def flat_values(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """JSON values by their dotted path (`replicas.A.hw`, as a scenario's checkpoint names them):
    objects opened up, anything else a value."""
    flat: dict[str, Any] = {}
    for name, value in values.items():
        if isinstance(value, dict) and value:
            flat |= flat_values(value, f"{prefix}{name}.")
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def changes(model: Model, before: Any, after: Any) -> list[dict[str, Any]]:
    """The variables (dotted paths) whose values differ from `before` to `after`, with both values."""
    old, new = flat_values(plain_values(model, before)), flat_values(plain_values(model, after))
    return [{"variable": name, "before": old.get(name), "after": new.get(name)}
            for name in dict.fromkeys([*old, *new]) if old.get(name) != new.get(name)]


def verdicts(walk: Walk, prop: Property) -> tuple[list[bool | None], str | None]:
    """Whether `prop` holds at each step of the walk (a step property: on the step into it), and
    the error a user's property raised (its verdicts from there on are None)."""
    found: list[bool | None] = []
    before = None
    for action, state in zip((None, *walk.trace.actions), walk.states):
        try:
            found.append(prop.check(before, action, state))
        except UserPropertyError as error:
            return found + [None] * (len(walk.states) - len(found)), str(error)
        before = state
    return found, None


def property_view(prop: Property, found: list[bool | None], error: str | None, at: int) -> dict[str, Any]:
    """One property at step `at`: whether it holds, and for an invariant that fails the step it
    started failing at (the first of the failing steps that lead up to `at`); for a witness the
    first step of the path up to `at` at which it held."""
    holds = found[at]
    view: dict[str, Any] = {"name": prop.name, "kind": "invariant" if prop.kind == ALWAYS else "witness",
                            "on_step": prop.on_step, "source": prop.source, "holds": holds, "error": error}
    if prop.kind == ALWAYS:
        since = at
        while holds is False and since > 0 and found[since - 1] is False:
            since -= 1
        view["failing_since"] = since if holds is False else None
    else:
        view["reached_at"] = next((number for number, held in enumerate(found[:at + 1]) if held), None)
    return view


def variables_view(model: Model, state: Any, before: Any) -> list[dict[str, Any]]:
    """Each variable as `counterexamples.tables` shows it (TLA+ syntax), marked where it changed
    on the step into `state`."""
    values = sorted_values(model, state)
    previous = sorted_values(model, before) if before is not None else values
    return [{"name": name, "value": tla_value(value), "changed": previous.get(name) != value}
            for name, value in values.items()]


def step_view(walk: Walk, at: int, extra: Iterable[Property] = ()) -> dict[str, Any]:
    """The page's view of step `at` of `walk` (0: the initial state), with the model's properties
    and `extra` ones (a user's) evaluated along the whole path."""
    model, state = walk.trace.model, walk.states[at]
    before = walk.states[at - 1] if at > 0 else None
    properties = [*model.properties, *extra]
    evaluated = [(prop, *verdicts(walk, prop)) for prop in properties]
    picture = PICTURES.get(model.name)
    return {
        "model": model.name,
        "config": model.config.to_dict(),
        "path": list(walk.texts),
        "at": at,
        "initial_states": len(model.initial_states()),
        "steps": [{"number": number, "action": INIT if action is None else str(action),
                   "failing": [prop.name for prop, found, _ in evaluated
                               if prop.kind == ALWAYS and found[number] is False]}
                  for number, action in enumerate((None, *walk.trace.actions))],
        "picture": picture(model, state) if picture is not None else None,
        "variables": variables_view(model, state, before),
        "enabled": [{"action": str(action), "changes": changes(model, state, following)}
                    for action, following in model.successors(state)],
        "properties": [property_view(prop, found, error, at) for prop, found, error in evaluated],
    }
