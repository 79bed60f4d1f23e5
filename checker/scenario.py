"""Scenario files: a step sequence of a model, its configuration and what the replay must show.
One format and one replay for every model. A scenario of the replication model is TOML::

    title = "Case L under hw: committed m2 is lost"
    source = "Vanlightly, figures 8-9 to 8-11"
    initial_leader = "B"  # the initial state in which B leads (or `initial`, its index)
    steps = ["ProducerWrite(B)", "LeaderHandleFetchRequest(A)", ...]
    article = "row-1"     # optional: the catalogue case it illustrates (ARTICLE_CASES)
    expected_violations = ["NoCommittedDataLoss"]   # invariants the replay breaks
    exhaustive_violations = ["NoCommittedDataLoss"] # invariants a full check of `config` breaks

    [config]              # any kafka-mc check option: protocol, replicas, messages, ...
    protocol = "hw"

    [[checkpoint]]        # the state after step `after`, as a figure shows it
    after = 6
    figure = "8-9"
    A = { log = ["m1", "m2"], hw = 1 }

Another model's scenario names it (`model`: one of `scenario_models()`), its initial state by
index (`initial`, default 0) and its `[config]` by the model's settings::

    model = "controller"
    steps = ["BrokerWinsElection(0)", "SessionExpire(0)", ...]
    [config]
    brokers = 3
    [[checkpoint]]
    after = 5
    obeyedControllerEpoch = { "0" = 2, "1" = 2, "2" = 2 }
    "replicas.B.role" = "leader"  # a dotted path reaches inside a variable

A checkpoint's keys are paths into the state's variables as the reports show them
(`model.values.plain_values`), and for the replication model also each replica's figure, keyed by
its name (`log` as record names, `hw`, `leo`, `epochs`, `role`, `status`). A table pins the
fields it lists; any other value is compared whole.
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from kafka_mc.control import MODELS
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.failover import FailoverConfig, FailoverModel
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config, ConfigError, State
from kafka_mc.model.config import upgraded_settings
from kafka_mc.model.interface import ALWAYS, Model
from kafka_mc.model.shape import ANY, Expect, check_shape, short_repr
from kafka_mc.model.state import MAX_REPLICAS, ROLE_NAMES, STATUS_NAMES, record_name, replica_index, replica_name
from kafka_mc.model.values import plain_values

from .result import Replay, ReplayError, ReplayStep, Trace

# What a catalogue scenario illustrates: a row of the table of ways to lose data in Vanlightly's
# fault-tolerance article, one of its network partition scenarios, or the three-replica example
# of the performance article (README "Sources"; its case id is still "seed-004").
ARTICLE_CASES = (*(f"row-{n}" for n in range(1, 6)), *(f"partition-{n}" for n in range(1, 9)), "seed-004")

# The shape of a scenario file (`model.shape.check_shape`); values are checked further as they are read.
REPLICA_SHAPE = {
    "log": Expect([str], "a list of record names such as \"m1\""),
    "hw": int,
    "leo": int,
    "epochs": Expect([Expect([int], "an [epoch, start offset] pair")], "a list of [epoch, start offset] pairs"),
    "role": str,
    "status": str,
}
_COMMON_SHAPE = {
    "title": Expect(str, "a non-empty string"),
    "source": str,
    "description": str,
    "config": dict,
    "expected_violations": Expect([str], "a list of invariant names"),
    "exhaustive_violations": Expect([str], "a list of invariant names"),
    "article": Expect(str, f"one of {', '.join(ARTICLE_CASES)}"),
    "initial": ANY,
    "model": str,
}
_REPLICA_NAMES = tuple(replica_name(index) for index in range(MAX_REPLICAS))
SCENARIO_SHAPE = {  # of the replication model: a checkpoint's replica names take a replica's figure
    **_COMMON_SHAPE,
    "initial_leader": Expect(str, "a non-empty string"),
    "steps": Expect([str], "a list of strings such as \"ProducerWrite(A)\""),
    "checkpoint": [{"after": ANY, "figure": str, "*": ANY,
                    **{name: Expect(REPLICA_SHAPE, f"a table of {', '.join(sorted(REPLICA_SHAPE))}")
                       for name in _REPLICA_NAMES}}],
}
MODEL_SCENARIO_SHAPE = {  # of another model
    **_COMMON_SHAPE,
    "steps": Expect([str], "a list of strings such as \"SessionExpire(0)\""),
    "checkpoint": [{"after": ANY, "figure": str, "*": ANY}],
}
REPLICA_FIELDS = set(REPLICA_SHAPE)
TOP_LEVEL = set(SCENARIO_SHAPE) | set(MODEL_SCENARIO_SHAPE)


def scenario_models() -> dict[str, tuple[type[Any], type]]:
    """The models a scenario may name, with their configuration's class: the replication model
    (the default), each control-plane model, the replication model with controller failover and
    the one with the controller's epoch bumps."""
    return {ReplicationSystem.name: (ReplicationSystem, Config), **MODELS,
            FailoverModel.name: (FailoverModel, FailoverConfig), EpochBumpSystem.name: (EpochBumpSystem, Config)}


class ScenarioError(ValueError):
    """A scenario file that cannot be read: the message names the file and the bad value."""


@dataclass(frozen=True)
class Checkpoint:
    """What the state after step `after` must show: path -> value (see the module docstring)."""

    after: int
    figure: str
    expected: dict[str, Any]


@dataclass(frozen=True)
class Scenario:
    path: Path
    title: str
    source: str
    description: str
    trace: Trace
    checkpoints: tuple[Checkpoint, ...]
    expected_violations: tuple[str, ...]
    exhaustive_violations: tuple[str, ...] | None
    article: str = ""
    # whether an invariant that breaks but is not expected is a mismatch: not for an ITF trace,
    # which names only the invariant it was written for
    strict: bool = True

    @property
    def config(self):
        return self.trace.config


def documented_scenarios(folder: str = "") -> list[Path]:
    """The scenario files shipped with kafka-mc, by name: the documented cases (Case L and Case D
    under each protocol), or those in a subfolder such as `findings`."""
    root = resources.files("kafka_mc.scenarios").joinpath(folder) if folder else resources.files("kafka_mc.scenarios")
    return sorted(Path(str(entry)) for entry in root.iterdir() if entry.name.endswith(".toml"))


def shipped_scenarios() -> dict[str, Path]:
    """Every scenario file shipped with kafka-mc (documented cases, findings, the catalogue, the
    control-plane scenarios, Kafka's own tests), by name (the file name without `.toml`)."""
    root = Path(str(resources.files("kafka_mc.scenarios")))
    return {path.stem: path for path in sorted(root.rglob("*.toml"))}


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file, or a shipped one by its name (`case-l-hw`);
    ScenarioError names what is wrong."""
    path = Path(path)
    if not path.exists() and path.parent == Path(".") and path.suffix != ".toml":
        shipped = shipped_scenarios()
        if path.name not in shipped:
            close = difflib.get_close_matches(path.name, list(shipped), n=5)
            hint = f"; shipped scenarios with a similar name: {', '.join(close)}" if close else ""
            raise ScenarioError(f"{path}: no such file, and no shipped scenario of that name ({len(shipped)} "
                                f"are shipped, e.g. case-l-hw){hint}")
        path = shipped[path.name]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ScenarioError(f"{path}: cannot be read ({error})") from None
    except ValueError as error:  # TOMLDecodeError, or a number too long to convert
        raise ScenarioError(f"{path}: not valid TOML ({error})") from None
    except RecursionError:
        raise ScenarioError(f"{path}: cannot be read: values nested too deeply") from None
    try:
        return _parse(Path(path), data)
    except (ConfigError, ValueError, TypeError) as error:
        raise ScenarioError(f"{path}: {error}") from None


def _parse(path: Path, data: dict) -> Scenario:
    models = scenario_models()
    name = data.get("model", ReplicationSystem.name)
    check_shape(data, SCENARIO_SHAPE if name == ReplicationSystem.name else MODEL_SCENARIO_SHAPE)
    if name not in models:
        raise ValueError(f"model {short_repr(name)} is unknown; allowed: {', '.join(models)}")
    model_class, config_class = models[name]
    settings = data.get("config", None if name == ReplicationSystem.name else {})
    if not isinstance(settings, dict):
        raise ValueError(f"a [config] table is required, of the {name} model's settings: "
                         + ", ".join(field.name for field in dataclasses.fields(config_class)))
    settings = upgraded_settings(settings)
    allowed = [field.name for field in dataclasses.fields(config_class)]
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        raise ValueError(f"unknown config key(s) {', '.join(unknown)}: [config] of the {name} model takes "
                         + ", ".join(allowed))
    model = model_class(config_class(**settings))
    steps = data.get("steps")
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise ValueError(f"steps must be a list of strings such as \"{_example_step(model)}\"")
    actions = tuple(model.parse_action(step) for step in steps)
    title = data.get("title", "")
    if name == ReplicationSystem.name:  # the replication model's own shorthand
        title = _string(data, "title")
        initial = replica_index(_string(data, "initial_leader"), model.config.replicas) \
            if "initial_leader" in data or "initial" not in data else _initial(data, model)
    else:
        initial = _initial(data, model)
    return Scenario(
        path=path,
        title=str(title),
        source=str(data.get("source", "")),
        description=str(data.get("description", "")),
        trace=Trace(model, initial, actions),
        checkpoints=tuple(_checkpoint(entry, len(actions), model) for entry in data.get("checkpoint", [])),
        expected_violations=_invariant_names(data, "expected_violations", model) or (),
        exhaustive_violations=_invariant_names(data, "exhaustive_violations", model),
        article=_article_case(data),
    )


def _example_step(model: Model) -> str:
    return "ProducerWrite(A)" if model.name == ReplicationSystem.name else "SessionExpire(0)"


def _initial(data: dict, model: Model) -> int:
    initial = data.get("initial", 0)
    count = len(model.initial_states())
    if isinstance(initial, bool) or not isinstance(initial, int) or not 0 <= initial < count:
        raise ValueError(f"initial must be the index of an initial state, from 0 to {count - 1}, "
                         f"not {short_repr(initial)}")
    return initial


def _article_case(data: dict) -> str:
    case = data.get("article", "")
    if case and case not in ARTICLE_CASES:
        raise ValueError(f"article must be one of {', '.join(ARTICLE_CASES)}, not {short_repr(case)}")
    return case


def _string(data: dict, key: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value:
        raise ValueError(f"{key} must be a non-empty string, not {short_repr(value)}")
    return value


def _invariant_names(data: dict, key: str, model: Model) -> tuple[str, ...] | None:
    if key not in data:
        return None
    names = data[key]
    known = [p.name for p in model.properties if p.kind == ALWAYS]
    if not isinstance(names, list) or any(name not in known for name in names):
        raise ValueError(f"{key} must list invariants of the model: {', '.join(known)}; not {short_repr(names)}")
    return tuple(names)


def _checkpoint(entry: dict, steps: int, model: Model) -> Checkpoint:
    after = entry.get("after")
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after <= steps:
        raise ValueError(f"checkpoint 'after' must be a step number from 0 to {steps}, not {short_repr(after)}")
    expected = {key: value for key, value in entry.items() if key not in ("after", "figure")}
    if model.name == ReplicationSystem.name:
        for name in set(expected) & set(_REPLICA_NAMES):  # a replica's figure (SCENARIO_SHAPE): one that exists
            replica_index(name, model.config.replicas)
    return Checkpoint(after, str(entry.get("figure", "")), expected)


def replica_figures(state: State) -> dict[str, dict]:
    """Each replica as a figure shows it, by name: what a replication scenario's checkpoint pins."""
    return {replica_name(index): {
        "log": [record_name(record) for record in replica.log],
        "hw": replica.hw,
        "leo": replica.leo,
        "epochs": [list(entry) for entry in replica.epochs],
        "role": ROLE_NAMES[replica.role],
        "status": STATUS_NAMES[replica.status],
    } for index, replica in enumerate(state.replicas)}


def checkpoint_values(model: Model, state) -> dict[str, Any]:
    """The variables a checkpoint's paths reach: the state's as the reports show them, and for the
    replication model each replica's figure too."""
    values = plain_values(model, state)
    if model.name == ReplicationSystem.name:
        values |= replica_figures(state)
    return values


def _leaves(expected: dict[str, Any], prefix: str = ""):
    """(path, value) for each value a checkpoint pins: a table's fields, one by one."""
    for key, value in expected.items():
        if isinstance(value, dict):
            yield from _leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def _compare(checkpoint: Checkpoint, values: dict[str, Any]) -> tuple[str, ...]:
    figure = f" (figure {checkpoint.figure})" if checkpoint.figure else ""
    return tuple(f"{path} is {_at(values, path)!r}, expected {expected!r}{figure}"
                 for path, expected in _leaves(checkpoint.expected) if _at(values, path) != expected)


def _at(values: Any, path: str):
    """The value at a dotted path (`replicas.B.role`) of a state's variables; None if there is none."""
    for part in path.split("."):
        if not isinstance(values, dict) or part not in values:
            return None
        values = values[part]
    return values


def replay(scenario: Scenario) -> Replay:
    """Run the scenario step by step: each step's broken invariants and checkpoint differences;
    ReplayError names the first step that is not enabled."""
    model = scenario.trace.model
    result = Replay(scenario)
    for number, (action, state, broken) in enumerate(scenario.trace.checked_steps()):
        due = [checkpoint for checkpoint in scenario.checkpoints if checkpoint.after == number]
        mismatches = sum((_compare(c, checkpoint_values(model, state)) for c in due), ()) if due else ()
        result.steps.append(ReplayStep(number, "Init" if action is None else str(action), state, broken, mismatches))
    return result


__all__ = ["ARTICLE_CASES", "Checkpoint", "Replay", "ReplayError", "ReplayStep", "Scenario", "ScenarioError",
           "checkpoint_values", "documented_scenarios", "load_scenario", "replay", "scenario_models"]
