"""Scenario files: a documented step sequence, its configuration and what the documents show.

A scenario is TOML::

    title = "Case L under hw: committed m2 is lost"
    source = "seed 000, figures 8-9 to 8-11"
    initial_leader = "B"
    steps = ["ProducerWrite(B)", "LeaderHandleFetchRequest(A)", ...]
    article = "row-1"   # optional: the catalogue case it illustrates (ARTICLE_CASES)
    expected_violations = ["NoCommittedDataLoss"]   # invariants the replay breaks
    exhaustive_violations = ["NoCommittedDataLoss"] # invariants a full check of `config` breaks

    [config]            # any kafka-mc check option: protocol, replicas, messages, ...
    protocol = "hw"

    [[checkpoint]]      # the state after step `after`, as a figure shows it
    after = 6
    figure = "8-9"
    A = { log = ["m1", "m2"], hw = 1 }

A file with a `model` key is a control-plane model's scenario (`checker.control_scenario`).
"""

from __future__ import annotations

import difflib
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config, ConfigError, ReplicationModel, State, parse_action
from kafka_mc.model.shape import ANY, Expect, check_shape, short_repr
from kafka_mc.model.state import ROLE_NAMES, STATUS_NAMES, record_name, replica_index
from kafka_mc.properties import failing_invariants

from .control_scenario import ControlScenario, parse_control_scenario, replay_control
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
SCENARIO_SHAPE = {
    "title": Expect(str, "a non-empty string"),
    "source": str,
    "description": str,
    "initial_leader": Expect(str, "a non-empty string"),
    "steps": Expect([str], "a list of strings such as \"ProducerWrite(A)\""),
    "config": dict,
    # a checkpoint's other keys are replica names
    "checkpoint": [{"after": ANY, "figure": str,
                    "*": Expect(REPLICA_SHAPE, f"a table of {', '.join(sorted(REPLICA_SHAPE))}")}],
    "expected_violations": Expect([str], "a list of invariant names"),
    "exhaustive_violations": Expect([str], "a list of invariant names"),
    "article": Expect(str, f"one of {', '.join(ARTICLE_CASES)}"),
}
REPLICA_FIELDS = set(REPLICA_SHAPE)
TOP_LEVEL = set(SCENARIO_SHAPE)


class ScenarioError(ValueError):
    """A scenario file that cannot be read: the message names the file and the bad value."""


@dataclass(frozen=True)
class Checkpoint:
    after: int
    figure: str
    replicas: dict[str, dict]


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
    def config(self) -> Config:
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


def load_scenario(path: Path) -> Scenario | ControlScenario:
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


def _parse(path: Path, data: dict) -> Scenario | ControlScenario:
    if "model" in data:  # a control-plane model's scenario
        return parse_control_scenario(path, data, _article_case(data))
    check_shape(data, SCENARIO_SHAPE)
    config_table = data.get("config")
    if not isinstance(config_table, dict):
        raise ValueError("a [config] table is required (protocol, replicas, messages, crashes, elections, ...)")
    allowed = set(Config.__dataclass_fields__)
    if set(config_table) - allowed:
        bad = ", ".join(sorted(set(config_table) - allowed))
        raise ValueError(f"unknown config key(s) {bad}; allowed: {', '.join(sorted(allowed))}")
    config = Config(**config_table)
    model = ReplicationModel(config)
    initial = replica_index(_string(data, "initial_leader"), config.replicas)
    steps = data.get("steps")
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise ValueError("steps must be a list of strings such as \"ProducerWrite(A)\"")
    actions = tuple(parse_action(step, model.action_names, config.replicas) for step in steps)
    return Scenario(
        path=path,
        title=_string(data, "title"),
        source=data.get("source", ""),
        description=data.get("description", ""),
        trace=Trace(ReplicationSystem(config), initial, actions),
        checkpoints=tuple(_checkpoint(entry, len(actions), config) for entry in data.get("checkpoint", [])),
        expected_violations=_invariant_names(data, "expected_violations") or (),
        exhaustive_violations=_invariant_names(data, "exhaustive_violations"),
        article=_article_case(data),
    )


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


def _invariant_names(data: dict, key: str) -> tuple[str, ...] | None:
    from kafka_mc.properties import INVARIANTS

    if key not in data:
        return None
    names = data[key]
    known = [p.name for p in INVARIANTS]
    if not isinstance(names, list) or any(name not in known for name in names):
        raise ValueError(f"{key} must list invariants among {', '.join(known)}, not {short_repr(names)}")
    return tuple(names)


def _checkpoint(entry: dict, steps: int, config: Config) -> Checkpoint:
    after = entry.get("after")
    if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after <= steps:
        raise ValueError(f"checkpoint 'after' must be a step number from 0 to {steps}, not {short_repr(after)}")
    replicas = {key: value for key, value in entry.items() if key not in ("after", "figure")}
    for name in replicas:  # each a table of REPLICA_FIELDS (SCENARIO_SHAPE)
        replica_index(name, config.replicas)
    return Checkpoint(after, str(entry.get("figure", "")), replicas)


def _describe(state: State, index: int) -> dict:
    replica = state.replicas[index]
    return {
        "log": [record_name(record) for record in replica.log],
        "hw": replica.hw,
        "leo": replica.leo,
        "epochs": [list(entry) for entry in replica.epochs],
        "role": ROLE_NAMES[replica.role],
        "status": STATUS_NAMES[replica.status],
    }


def _compare(checkpoint: Checkpoint, state: State) -> tuple[str, ...]:
    found = []
    for name, expected in checkpoint.replicas.items():
        actual = _describe(state, replica_index(name, len(state.replicas)))
        for key, value in expected.items():
            if actual[key] != value:
                figure = f" (figure {checkpoint.figure})" if checkpoint.figure else ""
                found.append(f"replica {name} {key} is {actual[key]!r}, expected {value!r}{figure}")
    return tuple(found)


def replay(scenario: Scenario | ControlScenario) -> Replay:
    """Run the scenario step by step; ReplayError names the first step that is not enabled."""
    if not isinstance(scenario, Scenario):  # a control-plane model's scenario
        return replay_control(scenario)
    result = Replay(scenario)
    checkpoints: dict[int, list[Checkpoint]] = {}
    for checkpoint in scenario.checkpoints:
        checkpoints.setdefault(checkpoint.after, []).append(checkpoint)
    for number, (action, state) in enumerate(scenario.trace.steps()):
        mismatches = sum((_compare(c, state) for c in checkpoints.get(number, [])), ())
        label = "Init" if action is None else str(action)
        result.steps.append(ReplayStep(number, label, state, tuple(failing_invariants(state)), mismatches))
    return result


__all__ = ["ARTICLE_CASES", "Checkpoint", "Replay", "ReplayError", "ReplayStep", "Scenario", "ScenarioError",
           "documented_scenarios", "load_scenario", "replay"]
