"""Input files and settings of any shape: scenario TOML, ITF JSON and `Config` keyword arguments.

Every outcome is a success or the documented error (ScenarioError, ValueError, ConfigError) whose
message names the file or the field; never an exception from inside (AttributeError, TypeError,
KeyError, IndexError, RecursionError, ...). The Hypothesis tests mutate shipped scenarios and an
ITF file written for a real trace. They run 100 examples each, derandomized;
KAFKA_MC_FUZZ_EXAMPLES=5000 runs that many, with fresh random draws.
"""

from __future__ import annotations

import copy
import json
import math
import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from kafka_mc import exitcodes
from kafka_mc.checker import ReplayError
from kafka_mc.checker.scenario import ScenarioError, load_scenario, replay, shipped_scenarios
from kafka_mc.cli import main
from kafka_mc.counterexamples.itf import itf_text, itf_to_trace
from kafka_mc.counterexamples.reports import read_itf_file
from kafka_mc.model import Config, ConfigError
from kafka_mc.model.config import SimulationConfig

LONG = os.environ.get("KAFKA_MC_FUZZ_EXAMPLES")
FUZZ = settings(max_examples=int(LONG) if LONG else 100, deadline=None, derandomize=not LONG,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

SHIPPED = shipped_scenarios()
# A few scenarios of each kind: replication (checkpoints with epochs, roles), control-plane, failover.
MUTATED = ("case-l-hw", "case-d-leader-epoch", "epoch-acceptance-basic-workflow-2.0.1", "controller-deposed",
           "partition-8", "fast-failover-kafka-7415")
DOCUMENTS = {name: tomllib.loads(SHIPPED[name].read_text(encoding="utf-8")) for name in MUTATED}
KNOWN_KEYS = sorted({"title", "source", "description", "initial_leader", "steps", "config", "checkpoint", "model",
                     "expected_violations", "exhaustive_violations", "article", "initial", "after", "figure", "A",
                     "B", "C", "log", "hw", "leo", "epochs", "role", "status", "replicas.B.role",
                     *Config.__dataclass_fields__})


# ------------------------------------------------------------------ strategies and helpers

def values(null: bool = True) -> st.SearchStrategy:
    """JSON-able values (without null: TOML-able); text without surrogates, which TOML cannot hold."""
    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    leaves = st.booleans() | st.integers() | st.integers(-3, 12) | st.floats() | text | st.sampled_from(KNOWN_KEYS)
    if null:
        leaves = leaves | st.none()
    return st.recursive(leaves, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(text | st.sampled_from(KNOWN_KEYS), inner, max_size=4), max_leaves=12)


def places(value, at=()) -> list[tuple]:
    """The path of every value inside `value`, `value` itself first."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += places(item, (*at, index))
    return found


def _at(document, at: tuple):
    for step in at:
        document = document[step]
    return document


def mutate(data, document, null: bool):
    """`document` with a few values replaced, keys added or keys removed, at places Hypothesis picks."""
    document = copy.deepcopy(document)
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        found = places(document)
        tables_and_lists = [at for at in found if isinstance(_at(document, at), (dict, list))]
        at = data.draw(st.sampled_from(found) | st.sampled_from(tables_and_lists or found), label="place")
        kind = data.draw(st.sampled_from(("replace", "add", "remove")), label="kind")
        if not at:
            if kind == "add" and isinstance(document, dict):
                document[data.draw(st.sampled_from(KNOWN_KEYS))] = data.draw(values(null))
            elif kind == "replace":
                document = data.draw(values(null))
            continue
        parent = _at(document, at[:-1])
        target = parent[at[-1]]
        if kind == "remove":
            del parent[at[-1]]
        elif kind == "add" and isinstance(target, dict):
            target[data.draw(st.sampled_from(KNOWN_KEYS) | st.text(max_size=6))] = data.draw(values(null))
        else:
            parent[at[-1]] = data.draw(values(null))
    return document


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, (int, float, str)):
        return json.dumps(value)  # JSON's strings and numbers are TOML's too
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    return "{" + ", ".join(f"{json.dumps(key)} = {toml_value(item)}" for key, item in value.items()) + "}"


def toml_text(document: dict) -> str:
    return "".join(f"{json.dumps(key)} = {toml_value(value)}\n" for key, value in document.items())


def assert_scenario_outcome(path: Path) -> None:
    """The file loads (and replays, or stops at a disabled step), or ScenarioError names the file."""
    try:
        scenario = load_scenario(path)
    except ScenarioError as error:
        assert str(error).startswith(f"{path}: ")
        return
    try:
        replay(scenario)
    except ReplayError as error:
        assert str(error).startswith("step ")


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def itf_document() -> dict:
    """The ITF object of a real trace: Case L under hw."""
    return json.loads(itf_text(load_scenario("case-l-hw").trace, "NoCommittedDataLoss"))


# ------------------------------------------------------------------ scenarios

def test_the_mutated_scenarios_load_and_their_toml_round_trips(work):
    for name, document in DOCUMENTS.items():
        path = work / f"{name}.toml"
        path.write_text(toml_text(document), encoding="utf-8")
        assert tomllib.loads(path.read_text(encoding="utf-8")) == document
        replay(load_scenario(path))


@FUZZ
@given(data=st.data())
def test_mutated_scenarios_load_or_name_the_file(work, data):
    document = mutate(data, DOCUMENTS[data.draw(st.sampled_from(MUTATED), label="scenario")], null=False)
    path = work / "mutated.toml"
    path.write_text(toml_text(document) if isinstance(document, dict) else f"x = {toml_value(document)}\n",
                    encoding="utf-8")
    assert_scenario_outcome(path)


@FUZZ
@given(document=st.dictionaries(st.sampled_from(KNOWN_KEYS) | st.text(max_size=6), values(null=False), max_size=8))
def test_arbitrary_toml_documents_load_or_name_the_file(work, document):
    path = work / "arbitrary.toml"
    path.write_text(toml_text(document), encoding="utf-8")
    assert_scenario_outcome(path)


@FUZZ
@given(text=st.text(max_size=200))
def test_arbitrary_text_loads_or_names_the_file(work, text):
    path = work / "text.toml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    assert_scenario_outcome(path)


GOOD = 'title = "t"\ninitial_leader = "A"\nsteps = ["ProducerWrite(A)"]\n[config]\nprotocol = "hw"\n'
CONTROL = 'model = "controller"\nsteps = ["BrokerWinsElection(0)"]\n[config]\nbrokers = 3\n'


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("[config]", "checkpoint = [[1, 2]]\n[config]"),
     r"\[\[checkpoint\]\] 1 must be a table, not \[1, 2\]"),
    (GOOD.replace("[config]", "checkpoint = [3]\n[config]"), r"\[\[checkpoint\]\] 1 must be a table, not 3"),
    (GOOD + "[[checkpoint]]\nafter = 1\nA = [1]\n", r"\[\[checkpoint\]\] 1: A must be a table of epochs, hw, leo"),
    (GOOD + "[[checkpoint]]\nafter = 0\n[[checkpoint]]\nafter = 1\nA = { log = 3 }\n",
     r"\[\[checkpoint\]\] 2: A.log must be a list of record names such as \"m1\", not 3"),
    (GOOD + "[[checkpoint]]\nafter = 1\nA = { epochs = [[0, \"x\"]] }\n",
     r"\[\[checkpoint\]\] 1: A.epochs\[0\]\[1\] must be an integer, not 'x'"),
    (GOOD + "[[checkpoint]]\nafter = 1\nA = { lag = 1 }\n",
     r"\[\[checkpoint\]\] 1: A has unknown key\(s\) lag; allowed: epochs"),
    (GOOD.replace('steps = ["ProducerWrite(A)"]', 'steps = ["ProducerWrite(A)", {}]'),
     r"steps\[1\] must be a string, not \{\}"),
    (GOOD.replace('title = "t"', "title = [1]"), r"title must be a non-empty string, not \[1\]"),
    (GOOD.replace('title = "t"', 'title = "t"\nsource = { a = 1 }'), r"source must be a string, not \{'a': 1\}"),
    (GOOD.replace('"hw"', "{ a = 1 }"), r"protocol must be a string, one of hw, .*; not \{'a': 1\}"),
    (GOOD.replace('"hw"', "[1]"), r"protocol must be a string, one of hw"),
    (GOOD + "acks = 1\n", r"acks must be a string, one of all, 1, 0; not 1"),
    (GOOD.replace('title = "t"', 'title = "t"\narticle = ["row-1"]'),
     r"article must be one of .*, not \['row-1'\]"),
    (GOOD.replace('title = "t"', "title = \"t\"\nconfig = 3").replace('[config]\nprotocol = "hw"\n', ""),
     r"config must be a table, not 3"),
    (CONTROL.replace("[config]", "checkpoint = [3]\n[config]"), r"\[\[checkpoint\]\] 1 must be a table, not 3"),
    (CONTROL.replace('model = "controller"', "model = {}"), r"model must be a string, not \{\}"),
    (CONTROL + "[[checkpoint]]\nafter = [1]\n",
     r"checkpoint 'after' must be a step number from 0 to 1, not \[1\]"),
    (CONTROL.replace("steps = [", "steps = [[1], "), r"steps\[0\] must be a string, not \[1\]"),
    (CONTROL.replace("[config]", "expected_violations = [{}]\n[config]"),
     r"expected_violations\[0\] must be a string"),
    (CONTROL.replace("[config]", "initial = \"0\"\n[config]"), r"initial must be the index of an initial state"),
    ("model = \"replication-failover\"\nsteps = []\n[config]\nprotocol = []\n", r"protocol must be a string"),
    ("x = " + "[" * 2000 + "]" * 2000 + "\n", "cannot be read: values nested too deeply"),
    ("title = " + "1" * 5000 + "\n", r"not valid TOML \(Exceeds the limit \(4300 digits\)"),
    ("x = " + "{a = " * 2000 + "1" + "}" * 2000 + "\n", "cannot be read: values nested too deeply"),
])
def test_malformed_scenarios_name_the_place_and_what_was_expected(tmp_path, text, message):
    path = tmp_path / "scenario.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ScenarioError, match=message) as raised:
        load_scenario(path)
    assert str(raised.value).startswith(f"{path}: ")


@pytest.mark.parametrize("text", [
    GOOD.replace("[config]", "checkpoint = [[1, 2]]\n[config]"),
    CONTROL.replace("[config]", "checkpoint = [3]\n[config]"),
    "x = " + "[" * 2000 + "]" * 2000 + "\n",
])
def test_replay_of_a_malformed_scenario_exits_150_with_one_line(capsys, tmp_path, text):
    path = tmp_path / "bad.toml"
    path.write_text(text, encoding="utf-8")
    code = main(["replay", str(path)])
    out, err = capsys.readouterr()
    assert code == exitcodes.BAD_SPEC and out == ""
    assert err.startswith(f"kafka-mc: {path}: ") and err.count("\n") == 1
    assert "internal error" not in err and "Traceback" not in err


# ------------------------------------------------------------------ ITF

@FUZZ
@given(data=st.data())
def test_mutated_itf_objects_replay_or_raise_value_error(itf_document, data):
    document = mutate(data, itf_document, null=True)
    try:
        itf_to_trace(document)
    except ValueError as error:
        assert str(error)


@FUZZ
@given(data=st.data())
def test_mutated_itf_files_replay_or_name_the_file(work, itf_document, data):
    path = work / "mutated.itf.json"
    path.write_text(json.dumps(mutate(data, itf_document, null=True)), encoding="utf-8")
    try:
        read_itf_file(path)
    except ValueError as error:
        assert str(error).startswith(f"{path}: ")


def _with(document: dict, *at_and_value) -> dict:
    """A copy of `document` with the value at a path (keys and indices) replaced."""
    document = copy.deepcopy(document)
    *at, value = at_and_value
    _at(document, at[:-1])[at[-1]] = value
    return document


@pytest.mark.parametrize("change, message", [
    (lambda d: [1, 2], r"the document must be an object, not \[1, 2\]"),
    (lambda d: _with(d, "states", {"a": 1}), r"states must be a list of objects, not \{'a': 1\}"),
    (lambda d: _with(d, "states", 0, [1]), r"states\[0\] must be an object, not \[1\]"),
    (lambda d: _with(d, "#meta", [1]), r"#meta must be an object, not \[1\]"),
    (lambda d: _with(d, "#meta", "initial", "0"), r"#meta.initial must be the index of an initial state, not '0'"),
    (lambda d: _with(d, "#meta", "initial", 7), r"#meta.initial must be the index of an initial state, from 0 to 1"),
    (lambda d: _with(d, "#meta", "config", "replicas", {}), r"#meta.config: replicas must be an integer"),
    (lambda d: _with(d, "#meta", "config", "protocol", {}), r"#meta.config: protocol must be a string"),
    (lambda d: _with(d, "#meta", "config", "colour", 1), r"#meta.config has unknown key\(s\) colour"),
    (lambda d: _with(d, "states", 2, "#meta", "action", {}), r"states\[2\].#meta.action must be an action such as"),
    (lambda d: _with(d, "states", 2, "#meta", {}), r"states\[2\].#meta.action is missing"),
    (lambda d: _with(d, "states", 2, "#meta", "action", "Nope(A)"), r"states\[2\].#meta.action: step 'Nope\(A\)'"),
    (lambda d: _with(d, "vars", 3), r"vars must be a list of strings, not 3"),
])
def test_malformed_itf_names_the_place_and_what_was_expected(tmp_path, itf_document, change, message):
    path = tmp_path / "trace.itf.json"
    path.write_text(json.dumps(change(itf_document)), encoding="utf-8")
    with pytest.raises(ValueError, match=message) as raised:
        read_itf_file(path)
    assert str(raised.value).startswith(f"{path}: not a kafka-mc ITF trace: ")


def test_deeply_nested_itf_is_a_value_error_naming_the_file(tmp_path, itf_document):
    path = tmp_path / "deep.itf.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ValueError, match=f"{path}: cannot be read: values nested too deeply"):
        read_itf_file(path)
    path.write_text(json.dumps(_with(itf_document, "states", 1, "replicas", "DEEP")).replace(
        '"DEEP"', "[" * 900 + "]" * 900), encoding="utf-8")  # parses; the state differs from the replay's
    with pytest.raises(ValueError, match=r"ITF state 1 \(ProducerWrite\(B\)\): replay gives other replicas"):
        read_itf_file(path)


def test_an_itf_number_too_long_to_read_is_a_value_error_naming_the_file(tmp_path, itf_document):
    path = tmp_path / "trace.itf.json"
    text = json.dumps(_with(itf_document, "#meta", "initial", "BIG")).replace('"BIG"', "1" * 5000)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=f"^{path}: .*4300 digits"):
        read_itf_file(path)


def test_a_valid_itf_file_still_replays(tmp_path, itf_document):
    path = tmp_path / "trace.itf.json"
    path.write_text(json.dumps(itf_document), encoding="utf-8")
    assert read_itf_file(path) == load_scenario("case-l-hw").trace


# ------------------------------------------------------------------ Config

FIELDS = tuple(Config.__dataclass_fields__)


@FUZZ
@given(fields=st.dictionaries(st.sampled_from(FIELDS), values() | st.sampled_from(["hw", "all", "1", 2, True]),
                              max_size=5))
def test_config_of_any_values_is_made_or_a_config_error_names_the_field(fields):
    for make in (Config, Config.for_simulation, SimulationConfig):
        try:
            config = make(**fields)
        except ConfigError as error:
            assert error.field in FIELDS and error.field in str(error)
            assert error.field in fields
        else:
            assert all(getattr(config, name) == value for name, value in fields.items())


@pytest.mark.parametrize("field, value", [
    ("protocol", {}), ("protocol", []), ("protocol", 1.5), ("protocol", None), ("acks", {}), ("acks", [1]),
    ("acks", 1), ("replicas", {}), ("replicas", [2]), ("replicas", 2.0), ("replicas", True), ("messages", None),
    ("min_isr", "1"), ("unclean", 1), ("flush", "yes"), ("partitions", {"a": 1}),
])
def test_config_of_a_wrong_type_is_a_config_error_naming_the_field(field, value):
    with pytest.raises(ConfigError, match=f"^{field} must be ") as raised:
        Config(**{field: value})
    assert raised.value.field == field
