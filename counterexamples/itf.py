"""Traces in ITF, the Informal Trace Format of Apalache and Quint, and back, for every model.

The trace `#meta` names the model (the replication model when absent), keeps its configuration
and the initial-state index, and each state's `#meta` the action that led to it, so a file can be
replayed by the model; `itf_to_trace` checks that the replay gives the states the file shows. The
variables are the model's `state_values`, sets sorted and maps keyed in order
(`model.values.sorted_values`), so the same trace gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import itf_py

from kafka_mc.checker.result import Trace
from kafka_mc.checker.scenario import scenario_models
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config, ConfigError
from kafka_mc.model.shape import ANY, Expect, Required, check_shape, short_repr
from kafka_mc.model.values import sorted_values

INIT = "Init"
FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
# What `itf_to_trace` reads of an ITF object (`model.shape.check_shape`); the state variables are
# compared with the replay's as they are, and the configuration with the model's settings.
ACTION_SHAPE = Expect(str, "an action such as \"ProducerWrite(A)\"")
ITF_SHAPE = {
    "#meta": Required({"model": Expect(str, "the name of a model"), "config": Required(dict),
                       "initial": Required(Expect(int, "the index of an initial state")), "*": ANY}),
    "vars": Required([str]),
    "states": Required([{"#meta": Required({"action": Required(ACTION_SHAPE), "*": ANY}), "*": ANY}]),
    "*": ANY,
}


def trace_to_itf(trace: Trace, invariant: str | None) -> dict:
    """The trace as an ITF JSON object."""
    meta: dict[str, Any] = {
        "format": "ITF",
        "format-description": FORMAT_DESCRIPTION,
        "source": "kafka-mc",
        "model": trace.model.name,
        "config": trace.config.to_dict(),
        "initial": trace.initial,
    }
    if trace.start is not None:
        meta["start"] = "the first state is given, not an initial state (a counterexample to induction)"
    if invariant is not None:
        meta["invariant"] = invariant
    states = [
        itf_py.State(meta={"index": index, "action": INIT if action is None else str(action)},
                     values=sorted_values(trace.model, state))
        for index, (action, state) in enumerate(trace.steps())
    ]
    return itf_py.trace_to_json(itf_py.Trace(meta=meta, params=[], vars=list(states[0].values), states=states,
                                             loop=None))


def itf_text(trace: Trace, invariant: str | None) -> str:
    """The ITF JSON as text, the same bytes for the same trace."""
    return json.dumps(trace_to_itf(trace, invariant), indent=2) + "\n"


def itf_to_trace(data: dict) -> Trace:
    """The trace an ITF object written by `trace_to_itf` records. ValueError when the object
    lacks the model's configuration or the actions, or when replaying it gives other states."""
    try:
        check_shape(data, ITF_SHAPE, toml=False)
        meta = data["#meta"]
        models = scenario_models()
        name = meta.get("model", ReplicationSystem.name)
        if name not in models:
            raise ValueError(f"#meta.model: model {short_repr(name)} is unknown; allowed: {', '.join(models)}")
        model_class, config_class = models[name]
        fields = [field.name for field in dataclasses.fields(config_class)]
        check_shape(meta["config"], {field: ANY for field in fields}, "#meta.config", toml=False)
        try:  # the replication model's traces may be a simulation's, past `check`'s bounds
            config = (Config.for_simulation(**meta["config"]) if config_class is Config
                      else config_class(**meta["config"]))
        except (ConfigError, ValueError, TypeError) as error:
            raise ValueError(f"#meta.config: {error}") from None
    except ValueError as error:
        raise ValueError(f"not a kafka-mc ITF trace: {error}") from None
    initial = meta["initial"]
    labels = [state["#meta"]["action"] for state in data["states"]]
    if "start" in meta:
        raise ValueError("this ITF trace starts in a given state, not an initial one (a counterexample to "
                         "induction): it has no replay from an initial state")
    if not labels or labels[0] != INIT:
        raise ValueError(f"not a kafka-mc ITF trace: the first state's action must be {INIT!r}")
    model = model_class(config)
    actions = []
    for index, label in enumerate(labels[1:], start=1):
        try:
            actions.append(model.parse_action(label))
        except ValueError as error:
            raise ValueError(f"not a kafka-mc ITF trace: states[{index}].#meta.action: {error}") from None
    count = len(model.initial_states())
    if not 0 <= initial < count:
        raise ValueError(f"not a kafka-mc ITF trace: #meta.initial must be the index of an initial state, from 0 to "
                         f"{count - 1}, not {short_repr(initial)}")
    trace = Trace(model, initial, tuple(actions))
    for index, (state, raw) in enumerate(zip(trace.states(), data["states"])):
        expected = itf_py.state_to_json(itf_py.State(meta={}, values=sorted_values(model, state)))
        differing = [name for name in expected if name != "#meta" and raw.get(name) != expected[name]]
        if differing:
            raise ValueError(f"ITF state {index} ({labels[index]}): replay gives other {', '.join(differing)}")
    return trace
