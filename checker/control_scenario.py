"""Scenario files for the control-plane models: `model` names one of `control.MODELS`.

    model = "controller"
    title = "Partition scenario 8: ..."
    article = "partition-8"       # optional, as in replication scenarios
    steps = ["BrokerWinsElection(0)", "SessionExpire(0)", ...]
    expected_violations = []      # the model's invariants the replay breaks

    [config]                      # the model's settings: brokers, expirations, ...
    brokers = 3

    [[checkpoint]]                # variables of the state after step `after`, as reports show them
    after = 5
    obeyedControllerEpoch = { "0" = 2, "1" = 2, "2" = 2 }
    "replicas.B.role" = "leader"  # a dotted path reaches inside a variable

`initial` (default 0) picks the initial state by its index.

`checker.scenario.load_scenario` and `replay` hand such files here; the replay is the same
`Replay` of numbered steps and broken invariants.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from kafka_mc.control import MODELS
from kafka_mc.control.system import parse_control_action
from kafka_mc.model.interface import ALWAYS
from kafka_mc.model.shape import ANY, Expect, check_shape, short_repr
from kafka_mc.model.values import plain_values

from .result import Replay, ReplayStep, Trace


# ------------------------------------------------------------------ control-plane scenarios

SCENARIO_SHAPE = {
    "model": str, "title": str, "source": str, "description": str, "article": str, "initial": ANY,
    "steps": Expect([str], "a list of strings such as \"SessionExpire(0)\""),
    "config": dict,
    "checkpoint": [{"after": ANY, "*": ANY}],
    "expected_violations": Expect([str], "a list of the model's invariant names"),
}
TOP_LEVEL = set(SCENARIO_SHAPE)


def scenario_models() -> dict:
    """The models a scenario may name: the control-plane models and the replication model with
    controller failover."""
    from kafka_mc.control.failover import FailoverConfig, FailoverModel

    return {**MODELS, FailoverModel.name: (FailoverModel, FailoverConfig)}


@dataclass(frozen=True)
class ControlScenario:
    path: Path
    title: str
    source: str
    description: str
    trace: Trace
    checkpoints: tuple[tuple[int, dict], ...]  # (after step, variable -> value)
    expected_violations: tuple[str, ...]
    article: str = ""

    @property
    def config(self):
        return self.trace.config


def parse_control_scenario(path: Path, data: dict, article: str) -> ControlScenario:
    """The scenario in `data` (a parsed TOML file); ValueError naming what is wrong."""
    check_shape(data, SCENARIO_SHAPE)
    models = scenario_models()
    if data["model"] not in models:
        raise ValueError(f"model {data['model']!r} is unknown; allowed: replication (no key), {', '.join(models)}")
    system_class, config_class = models[data["model"]]
    settings = data.get("config", {})
    allowed = {field.name for field in dataclasses.fields(config_class)}
    if not isinstance(settings, dict) or set(settings) - allowed:
        raise ValueError(f"[config] of the {data['model']} model takes {', '.join(sorted(allowed))}")
    system = system_class(config_class(**settings))
    steps = data.get("steps")
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise ValueError("steps must be a list of strings such as \"SessionExpire(0)\"")
    parse = getattr(system, "parse_action", None) or (lambda text: parse_control_action(text, system.action_names))
    actions = tuple(parse(step) for step in steps)
    initial = data.get("initial", 0)
    count = len(system.initial_states())
    if isinstance(initial, bool) or not isinstance(initial, int) or not 0 <= initial < count:
        raise ValueError(f"initial must be the index of an initial state, from 0 to {count - 1}, "
                         f"not {short_repr(initial)}")
    invariants = {p.name for p in system.properties if p.kind == ALWAYS}
    expected = data.get("expected_violations", [])
    if not isinstance(expected, list) or set(expected) - invariants:
        raise ValueError(f"expected_violations must list invariants of the model: {', '.join(sorted(invariants))}")
    checkpoints = []
    for entry in data.get("checkpoint", []):
        after = entry.get("after")
        if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after <= len(actions):
            raise ValueError(f"checkpoint 'after' must be a step number from 0 to {len(actions)}, "
                             f"not {short_repr(after)}")
        checkpoints.append((after, {key: value for key, value in entry.items() if key != "after"}))
    return ControlScenario(path, str(data.get("title", "")), str(data.get("source", "")),
                           str(data.get("description", "")), Trace(system, initial, actions), tuple(checkpoints),
                           tuple(expected), article)


def replay_control(scenario: ControlScenario):
    """Run the scenario step by step: each step's broken invariants and checkpoint differences;
    ReplayError names the first step that is not enabled."""
    system = scenario.trace.model
    result = Replay(scenario)
    before = None
    for number, (action, state) in enumerate(scenario.trace.steps()):
        broken = tuple(p.name for p in system.properties if p.kind == ALWAYS and not p.check(before, action, state))
        values = plain_values(scenario.trace.model, state)
        mismatches = tuple(f"{name} is {_at(values, name)!r}, expected {expected!r}"
                           for after, checkpoint in scenario.checkpoints if after == number
                           for name, expected in checkpoint.items() if _at(values, name) != expected)
        result.steps.append(ReplayStep(number, "Init" if action is None else str(action), state, broken, mismatches))
        before = state
    return result


def _at(values: dict, path: str):
    """The value at a dotted path (`replicas.B.role`) of a state's variables; None if there is none."""
    for part in path.split("."):
        if not isinstance(values, dict) or part not in values:
            return None
        values = values[part]
    return values
