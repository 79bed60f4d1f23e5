"""`kafka-mc replay` of ITF traces other tools write of the TLA+ twin (Apalache, Quint, TLC's error
trace converted): no kafka-mc `#meta`, the twin's variables and ITF encodings. Each step is found as
the model's action between two states, and the invariants are evaluated along the replay.

Two sources of such traces: kafka-mc's own counterexamples (`check --out` writes them as ITF), whose
states are written again in the twin's form as Apalache writes it (`#map`, `#tup`, `#set`,
`#bigint`, no `#meta` of kafka-mc's); and TLC's error traces of the twin itself, parsed from TLC's
output and written as ITF (`tests/examples/case-l-hw.twin.itf.json` is one, kept so that the suite
replays a trace of TLC's without Java; `python tests/test_itf_foreign.py` writes it again).
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import Trace, check
from kafka_mc.checker.scenario import replay
from kafka_mc.checker.tla_twins import twin_of
from kafka_mc.checker.tlc import find_java, find_tla2tools
from kafka_mc.cli import main
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.counterexamples.itf import SettingError, itf_to_trace, twin_itf_to_trace
from kafka_mc.counterexamples.reports import read_itf_file, read_itf_scenario
from kafka_mc.model import Config
from kafka_mc.model.state import FOLLOWER, LEADER, NO_LEADER, NO_ROLE, TRUNCATING, isr_members, replica_name

EXAMPLES = Path(__file__).parent / "examples"
TLC_FIXTURE = EXAMPLES / "case-l-hw.twin.itf.json"
CASE_L = Config(protocol="hw", replicas=2, messages=2, crashes=2, elections=1)  # TLC finds Case L in the twin
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java on PATH")

TWIN_VARS = ["replicas", "controller", "written", "crashes", "committed", "acked"]
STATUS = {0: "up", 1: "crashed", 2: "offline"}
ROLE = {NO_ROLE: "none", LEADER: "leader", TRUNCATING: "truncating", FOLLOWER: "follower"}


# ------------------------------------------------------------- a kafka-mc trace as Apalache writes the twin's

def big(number: int) -> dict:
    return {"#bigint": str(number)}


def twin_state(state, name=replica_name) -> dict:
    """A model state as the twin's variables, in ITF as Apalache writes them: records as objects,
    sequences as arrays, tuples as #tup, sets as #set, functions as #map, integers as #bigint."""
    names = [name(index) for index in range(len(state.replicas))]

    def records(log):
        return [{"msg": big(record.msg), "epoch": big(record.epoch)} for record in log]

    def replica(r):
        response = r.response
        return {
            "log": records(r.log), "hw": big(r.hw), "epochs": [{"#tup": [big(e), big(o)]} for e, o in r.epochs],
            "status": STATUS[r.status], "role": ROLE[r.role], "epoch": big(r.epoch),
            "response": [] if not response else {"offset": big(response.offset), "hw": big(response.hw),
                                                 "records": records(response.records),
                                                 "outOfRange": response.out_of_range},
            "remoteLeos": [] if not r.remote_leos else {"#map": [[names[m], big(leo)]
                                                                 for m, leo in enumerate(r.remote_leos)]},
            "leaderId": "none" if r.leader_id == NO_LEADER else names[r.leader_id],
        }

    controller = state.controller
    return {
        "replicas": {"#map": [[names[index], replica(r)] for index, r in enumerate(state.replicas)]},
        "controller": {"leader": "none" if controller.leader == NO_LEADER else names[controller.leader],
                       "epoch": big(controller.epoch),
                       "isr": {"#set": [names[m] for m in isr_members(controller.isr)]}},
        "written": big(state.written),
        "crashes": big(state.crashes),
        "committed": {"#set": [{"#tup": [big(offset), big(msg)]} for offset, msg in state.committed]},
        "acked": {"#set": [big(msg) for msg in range(1, state.acked.bit_length()) if state.acked >> msg & 1]},
    }


def apalache_itf(trace: Trace, source: str | None = None, name=replica_name) -> dict:
    """The trace's states in the twin's form, with the `#meta` Apalache writes (no model, no
    configuration, no actions)."""
    meta = {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "description": "Created by Apalache"}
    if source is not None:
        meta["source"] = source
    states = [{"#meta": {"index": index}, **twin_state(state, name)} for index, state in enumerate(trace.states())]
    return {"#meta": meta, "vars": list(TWIN_VARS), "states": states}


@pytest.fixture(scope="module")
def kafka_mc_traces(tmp_path_factory) -> list[Path]:
    """The ITF counterexamples `kafka-mc check --out` writes for hw's shortest violations."""
    out = tmp_path_factory.mktemp("reports")
    assert main(["check", "--protocol", "hw", "--keep-going", "--quiet", "--out", str(out)]) == exitcodes.VIOLATION
    written = sorted(out.glob("*.itf.json"))
    assert len(written) >= 4
    return written


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def test_kafka_mc_counterexamples_in_the_twins_form_replay_the_same_steps_and_verdicts(kafka_mc_traces, tmp_path,
                                                                                         capsys):
    for own in kafka_mc_traces:
        scenario = read_itf_scenario(own)
        trace = scenario.trace
        foreign = apalache_itf(trace)
        assert "config" not in foreign["#meta"] and all("action" not in s["#meta"] for s in foreign["states"])
        back = itf_to_trace(foreign, {"protocol": "hw"})
        assert back.initial == trace.initial and back.actions == trace.actions, own.name
        assert back.broken() == trace.broken(), own.name
        path = write(tmp_path / f"apalache-{own.name}", foreign)
        assert replay(read_itf_scenario(path, {"protocol": "hw"})).first_breaks == replay(scenario).first_breaks
        # through the command line: the step tables and breaking steps of the file kafka-mc wrote
        capsys.readouterr()
        assert main(["replay", str(own)]) == exitcodes.OK
        expected = capsys.readouterr().out
        assert main(["replay", str(path), "--protocol", "hw"]) == exitcodes.OK
        out = capsys.readouterr().out
        assert out.split("\nStep 0: ")[1] == expected.split("\nStep 0: ")[1], own.name


def test_the_cli_replay_of_a_twin_trace_prints_the_steps_where_invariants_break_and_its_settings(
        kafka_mc_traces, tmp_path, capsys):
    own = next(path for path in kafka_mc_traces if "NoCommittedDataLoss" in path.name)
    trace = read_itf_file(own)
    path = write(tmp_path / "apalache.itf.json", apalache_itf(trace))
    capsys.readouterr()
    assert main(["replay", str(path), "--protocol", "hw"]) == exitcodes.OK
    out = capsys.readouterr().out
    steps = re.findall(r"^Step (\d+): (\S+)", out, re.MULTILINE)
    assert steps == [(str(n), "Init" if a is None else str(a)) for n, (a, _) in enumerate(trace.steps())]
    assert f"NoCommittedDataLoss at step {len(trace)}" in out  # a shortest violation: at its last step
    assert "a trace of the TLA+ twin; protocol=hw (given), replicas=2 (the trace's replicas)" in out
    assert "(the least the trace needs)" in out and "acks=all, min_isr=1, unclean=False (check's defaults)" in out


def test_every_itf_encoding_of_the_twin_is_read(kafka_mc_traces):
    """Plain JSON numbers for #bigint, arrays for #tup, objects keyed by replica for #map, Apalache's
    uninterpreted replicas (A_OF_REPLICA), and the protocol named by #meta.source."""
    trace = read_itf_file(kafka_mc_traces[0])
    data = apalache_itf(trace, source="/home/me/specs/KafkaHw.tla", name=lambda i: f"{replica_name(i)}_OF_REPLICA")
    text = re.sub(r'\{"#bigint": "(-?\d+)"\}', r"\1", json.dumps(data))
    text = re.sub(r'\{"#tup": (\[[^\]]*\])\}', r"\1", text)
    plain = json.loads(text)
    for state in plain["states"]:
        state["replicas"] = dict(state["replicas"]["#map"])
    back, note = twin_itf_to_trace(plain, {})
    assert back.actions == trace.actions and "protocol=hw (the trace's #meta.source)" in note


def test_the_twins_constants_given_as_itf_params_set_the_configuration(kafka_mc_traces):
    trace = read_itf_file(kafka_mc_traces[0])
    data = apalache_itf(trace)
    data["params"] = ["MaxMessages", "MaxCrashes", "MaxElections", "AcksAll", "MinIsr", "Unclean"]
    for state in data["states"]:
        state.update(MaxMessages=big(3), MaxCrashes=big(2), MaxElections=big(2), AcksAll=True, MinIsr=big(1),
                     Unclean=False)
    back, note = twin_itf_to_trace(data, {"protocol": "hw", "messages": 4})
    assert back.actions == trace.actions
    assert (back.config.messages, back.config.crashes, back.config.elections) == (4, 2, 2)  # an option wins
    assert "messages=4 (given)" in note and "crashes=2, elections=2, acks=all, min_isr=1, unclean=False (the " \
                                           "trace's params)" in note


# ----------------------------------------------------------------------- TLC's error traces of the twin

TOKEN = re.compile(r'\s*(<<|>>|\|->|:>|@@|[\[\]{}(),]|"(?:[^"\\]|\\.)*"|-?\d+|[A-Za-z_]\w*)')


def parse_tla(text: str):
    """A value as TLC prints it, as (kind, value): int, str, bool, a model value, a sequence, a set, a
    record or a function (`(A :> 1 @@ B :> 2)`)."""
    tokens, position = [], 0
    while position < len(text.rstrip()):
        match = TOKEN.match(text, position)
        assert match, text[position:position + 40]
        tokens.append(match.group(1))
        position = match.end()
    tokens.reverse()

    def items(close):
        found = []
        while tokens[-1] != close:
            found.append(value())
            if tokens[-1] == ",":
                tokens.pop()
        tokens.pop()
        return found

    def value():
        token = tokens.pop()
        if token == "<<":
            return "seq", items(">>")
        if token == "{":
            return "set", items("}")
        if token == "[":
            fields = {}
            while tokens[-1] != "]":
                name = tokens.pop()
                assert tokens.pop() == "|->"
                fields[name] = value()
                if tokens[-1] == ",":
                    tokens.pop()
            tokens.pop()
            return "rec", fields
        if token == "(":
            pairs = []
            while True:
                key = value()
                assert tokens.pop() == ":>"
                pairs.append((key, value()))
                if tokens.pop() == ")":
                    return "fun", pairs
        if token.startswith('"'):
            return "str", json.loads(token)
        if token in ("TRUE", "FALSE"):
            return "bool", token == "TRUE"
        if re.fullmatch(r"-?\d+", token):
            return "int", int(token)
        return "mv", token

    parsed = value()
    assert not tokens, tokens
    return parsed


def to_itf(node, pairs: bool = False, pair: bool = False):
    """A parsed TLA+ value in ITF, as Apalache writes it; `pair`: a tuple (#tup); `pairs`: a
    sequence or set of tuples (an epoch cache, the committed history)."""
    kind, value = node
    if kind == "int":
        return big(value)
    if kind in ("str", "bool", "mv"):
        return value
    if kind == "seq":
        return {"#tup": [to_itf(item) for item in value]} if pair else [to_itf(item, pair=pairs) for item in value]
    if kind == "set":
        return {"#set": [to_itf(item, pair=pairs) for item in value]}
    if kind == "rec":
        return {name: to_itf(item, pairs=name == "epochs") for name, item in value.items()}
    return {"#map": [[to_itf(key), to_itf(item)] for key, item in value]}


def tlc_error_trace(config: Config, invariant: str, folder: Path) -> dict:
    """TLC's shortest trace of the twin to a state that violates `invariant`, as an ITF object."""
    twin = twin_of(config)
    for name, text in twin.modules.items():
        (folder / f"{name}.tla").write_text(text, encoding="utf-8")
    (folder / f"{twin.module}.cfg").write_text(twin.config_text((invariant,)), encoding="utf-8")
    done = subprocess.run([find_java(), f"-Djava.io.tmpdir={folder}", "-cp", str(find_tla2tools()), "tlc2.TLC",
                           "-workers", "1", "-deadlock", "-metadir", str(folder / "states"), "-config",
                           f"{twin.module}.cfg", twin.module], cwd=folder, capture_output=True, text=True, timeout=120,
                          check=False)
    output = done.stdout + done.stderr
    assert f"Error: Invariant {invariant} is violated." in output, output[-3000:]
    behaviour = output.split("The behavior up to this point is:", 1)[1]
    states = []
    for index, block in enumerate(re.split(r"^State \d+: <[^\n]*>\n", behaviour, flags=re.MULTILINE)[1:]):
        assignments = block.split("\n\n")[0]
        values = dict(re.findall(r"^/\\ (\w+) = (.*?)(?=^/\\ |\Z)", assignments, re.DOTALL | re.MULTILINE))
        states.append({"#meta": {"index": index},
                       **{name: to_itf(parse_tla(values[name]), pairs=name == "committed") for name in TWIN_VARS}})
    return {"#meta": {"format": "ITF", "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
                      "source": f"{twin.module}.tla",
                      "description": f"TLC's error trace of the TLA+ twin to {invariant}, in ITF "
                                     "(tests/test_itf_foreign.py)"},
            "vars": list(TWIN_VARS), "states": states}


def fixture_text(data: dict) -> str:
    """An ITF object as the fixture keeps it: one state a line."""
    head = {key: value for key, value in data.items() if key != "states"}
    states = ",\n".join(json.dumps(state) for state in data["states"])
    return json.dumps(head)[:-1] + ', "states": [\n' + states + "\n]}\n"


def test_tlcs_error_trace_of_the_twin_kept_as_a_fixture_replays_case_l():
    """TLC's shortest trace of the twin to NoCommittedDataLoss under hw (Case L), in ITF, replays
    without any option: the protocol is named by #meta.source, the replicas by its shape. Every step
    is the model's; the invariant TLC reports breaks in the last state and in no other."""
    assert TLC_FIXTURE.stat().st_size < 20_000
    data = json.loads(TLC_FIXTURE.read_text(encoding="utf-8"))
    trace, note = twin_itf_to_trace(data, {})
    assert len(trace) == len(data["states"]) - 1 == 10
    assert [str(action) for action in trace.actions] == [
        "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
        "LeaderHandleFetchRequest(B)", "ReplicaCrash(A)", "ReplicaCrash(B)", "ReplicaRestart(B)",
        "BecomeFollower(B)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)"]
    broken = trace.broken()
    assert "NoCommittedDataLoss" in broken[-1] and not any(broken[:-1])
    assert "protocol=hw (the trace's #meta.source)" in note and "replicas=2 (the trace's replicas)" in note


def test_the_cli_replays_the_tlc_fixture(capsys):
    assert main(["replay", str(TLC_FIXTURE)]) == exitcodes.OK
    out = capsys.readouterr().out
    assert "invariants broken: NoCommittedDataLoss at step 10" in out and "Step 10: ControllerElectLeader(B)" in out


TLC_CASES = [
    pytest.param(CASE_L, "NoCommittedDataLoss", {}, id="case-l-hw"),
    pytest.param(Config(protocol="diverging-epoch", replicas=2, messages=2, crashes=2, elections=2), "NoLogDivergence",
                 {}, id="diverging-epoch"),
    pytest.param(Config(protocol="hw", replicas=3, messages=1, crashes=1, elections=1, acks="1", unclean=True),
                 "NoAckedDataLoss", {"acks": "1", "unclean": True}, id="hw-3r-acks-1-unclean"),
    # the twin's controller.elr (KIP-966): the crashed leader joins the ELR as the ISR empties
    pytest.param(Config(protocol="kip-966", replicas=2, messages=1, crashes=2, elections=2, unclean=True),
                 "NoCommittedDataLoss", {"unclean": True}, id="kip-966-unclean"),
]


@needs_java
@pytest.mark.parametrize("config, invariant, settings", TLC_CASES)
def test_tlcs_error_traces_of_the_twin_replay_as_kafka_mcs_shortest(config, invariant, settings, tmp_path):
    """TLC on the twin, its error trace in ITF: replayed by the model, step for step, to the same
    shortest violation kafka-mc's own search finds, the invariant breaking in the last state only."""
    data = tlc_error_trace(config, invariant, tmp_path)
    if config == CASE_L:
        assert fixture_text(data) == TLC_FIXTURE.read_text(encoding="utf-8"), "python tests/test_itf_foreign.py"
    trace, _ = twin_itf_to_trace(data, {"protocol": config.protocol, **settings})
    broken = trace.broken()
    assert invariant in broken[-1] and not any(invariant in names for names in broken[:-1])
    shortest = next(v.trace for v in check(config, keep_going=True).violations if v.invariant == invariant)
    assert len(trace) == len(shortest)
    if config.protocol == "kip-966":  # the replay matched the twin's controller.elr, not empty on the way
        assert any(state.controller.elr for state in trace.states())
        assert all("elr" in state["controller"] for state in data["states"])


# ------------------------------------------------------------------------------------------- errors

def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err
    return code, out, err


@pytest.fixture
def case_l() -> dict:
    return json.loads(TLC_FIXTURE.read_text(encoding="utf-8"))


def test_a_missing_protocol_is_one_line_naming_the_option(capsys, tmp_path, case_l):
    del case_l["#meta"]["source"]
    path = write(tmp_path / "apalache.itf.json", case_l)
    code, out, err = run(capsys, "replay", str(path))
    assert code == exitcodes.BAD_INPUT and out == "" and err.count("\n") == 1
    assert err.startswith(f"kafka-mc: {path}: the protocol is missing") and "give it with --protocol NAME" in err
    with pytest.raises(SettingError, match="--protocol"):
        itf_to_trace(case_l)
    assert run(capsys, "replay", str(path), "--protocol", "hw")[0] == exitcodes.OK


def test_settings_the_trace_contradicts_or_the_model_refuses_name_the_option(capsys, tmp_path, case_l):
    path = write(tmp_path / "apalache.itf.json", case_l)
    for argv, message in [(["--replicas", "3"], "--replicas 3: the trace has 2 replicas (A, B)"),
                          (["--protocol", "nope"], "--protocol: protocol 'nope' is unknown"),
                          (["--min-isr", "3"], "--min-isr: min_isr must be an integer from 1 to 2, not 3"),
                          (["--messages", "x"], "--messages must be an integer, not 'x'")]:
        code, _, err = run(capsys, "replay", str(path), *argv)
        assert code == exitcodes.BAD_INPUT and message in err and err.count("\n") == 1, (argv, err)


def test_settings_are_refused_for_a_trace_or_scenario_that_has_its_configuration(capsys, kafka_mc_traces):
    code, _, err = run(capsys, "replay", str(kafka_mc_traces[0]), "--protocol", "hw", "--acks", "1")
    assert code == exitcodes.BAD_INPUT and "--protocol, --acks: this trace's #meta gives its configuration" in err
    code, _, err = run(capsys, "replay", "case-l-hw", "--unclean")
    assert code == exitcodes.BAD_INPUT and "--unclean: only for an ITF trace without kafka-mc's #meta" in err


def test_variables_the_twin_has_not_or_lacks_are_named(capsys, tmp_path, case_l):
    foreign = copy.deepcopy(case_l)
    foreign["vars"] = [name for name in foreign["vars"] if name != "acked"] + ["ackedMsgs", "clock"]
    for state in foreign["states"]:
        state["ackedMsgs"], state["clock"] = state.pop("acked"), 0
    path = write(tmp_path / "quint.itf.json", foreign)
    code, out, err = run(capsys, "replay", str(path), "--protocol", "hw")
    assert code == exitcodes.BAD_SPEC and out == ""
    assert "not an ITF trace of kafka-mc's TLA+ twin: its variables must be the twin's, replicas, controller, " \
           "written, crashes, committed, acked (and delays, diskFailures, which a trace written before the twin " \
           "had them lacks): it lacks acked; it has ackedMsgs, clock, which the twin has not" in err


def test_auxiliary_variables_are_left_out(tmp_path, case_l):
    """Quint's model-based-testing variables (quint run --mbt) and names starting with `_`."""
    case_l["vars"] += ["mbt::actionTaken", "mbt::nondetPicks", "_step"]
    for index, state in enumerate(case_l["states"]):
        state.update({"mbt::actionTaken": "step", "mbt::nondetPicks": {"r": {"tag": "Some", "value": "A"}},
                      "_step": index})
    assert len(twin_itf_to_trace(case_l, {})[0]) == 10


def test_a_kafka_mc_trace_without_its_meta_is_told_apart(kafka_mc_traces):
    data = json.loads(kafka_mc_traces[0].read_text(encoding="utf-8"))
    del data["#meta"]
    with pytest.raises(ValueError, match=r"it has consumed, which the twin has not \(these are the variables of "
                                         r"an ITF trace kafka-mc writes, whose #meta.*is missing here\)"):
        itf_to_trace(data, {"protocol": "hw"})


def test_a_step_that_is_no_transition_names_it_with_the_enabled_actions_and_the_state_before(capsys, tmp_path, case_l):
    case_l["states"][6]["crashes"] = big(1)  # ReplicaCrash(B) without counting the crash
    path = write(tmp_path / "apalache.itf.json", case_l)
    code, _, err = run(capsys, "replay", str(path))
    assert code == exitcodes.BAD_SPEC
    assert f"{path}: step 6: no action of the model leads from the trace's state 5 to its state 6, which changes " \
           "replicas[B].status, replicas[B].role, replicas[B].epoch, replicas[B].response, replicas[B].leaderId; " \
           "enabled there: " \
           "FollowerHandleFetchResponse(B), ReplicaCrash(B), ControllerNoticeFailure(A); the closest, " \
           "ReplicaCrash(B), gives other crashes\n" in err
    assert "\nThe configuration: protocol=hw (the trace's #meta.source), replicas=2 (the trace's replicas), " in err
    assert '\nThe state before it (the trace\'s state 5):\n  replicas[A].log = [{"msg": 1, "epoch": 0}]\n' in err
    assert '\n  replicas[B].response = {"offset": 1, "hw": 1, "records": [], "outOfRange": false}\n' in err
    assert '\n  controller.isr = ["A", "B"]\n' in err and err.endswith("\n  acked = [1]\n  delays = 0\n  diskFailures = 0\n")


def test_a_stuttering_step_and_a_state_0_that_is_no_initial_state_are_named(tmp_path, case_l):
    stutter = copy.deepcopy(case_l)
    stutter["states"].insert(3, stutter["states"][2])
    with pytest.raises(ValueError, match=r"^step 3: the trace's state 3 repeats its state 2 \(a stuttering step"):
        itf_to_trace(stutter)
    late = copy.deepcopy(case_l)
    del late["states"][0]
    with pytest.raises(ValueError, match=r"^the trace's state 0 is no initial state of the model; the closest, the "
                                         r"one with A leading, has other replicas\[A\].log, written"):
        itf_to_trace(late)


def test_a_trace_made_with_other_settings_than_the_defaults_says_which_were_defaulted(tmp_path):
    """acks=1 acknowledges at the write: under the default acks=all, the first write is no step of
    the model, and the message shows where acks came from."""
    config = Config(protocol="hw", replicas=2, messages=1, crashes=0, elections=0, acks="1")
    model = ReplicationSystem(config)
    trace = Trace(model, 0, (model.parse_action("ProducerWrite(A)"),))
    data = apalache_itf(trace, source="KafkaHw.tla")
    with pytest.raises(ValueError, match=r"(?s)step 1: .* changes replicas\[A\]\.log, written, acked; enabled "
                                         r"there: ProducerWrite\(A\), .*; the closest, ProducerWrite\(A\), gives "
                                         r"other acked\nThe configuration: .*acks=all, min_isr=1, unclean=False "
                                         r"\(check's defaults\)"):
        itf_to_trace(data)
    assert itf_to_trace(data, {"acks": "1"}).actions == trace.actions


@pytest.mark.parametrize("change, message", [
    (lambda d: d["states"][2]["replicas"]["#map"][1][1].update(hw="x"),
     r"states\[2\]\.replicas\[B\]\.hw must be an integer, not 'x'"),
    (lambda d: d["states"][1]["replicas"]["#map"][0][1]["log"][0].pop("epoch"),
     r"states\[1\]\.replicas\[A\]\.log\[0\] must be a record with the fields msg, epoch: it lacks epoch"),
    (lambda d: d["states"][0]["controller"].update(leader="Z"),
     r"states\[0\]\.controller\.leader must be a replica \(A, B or 'none'\), not 'Z'"),
    (lambda d: d["states"][0]["replicas"]["#map"][1][1].update(leaderId="Z"),
     r"states\[0\]\.replicas\[B\]\.leaderId must be a replica \(A, B or 'none'\), not 'Z'"),
    (lambda d: d["states"][0]["replicas"]["#map"][1][1].pop("leaderId"),
     r"states\[0\]\.replicas\[B\] must be a record with the fields .*remoteLeos, leaderId: it lacks leaderId"),
    (lambda d: d["states"][4].update(committed=[]), r"states\[4\]\.committed must be a set \(#set\), not \[\]"),
    (lambda d: d["states"][0]["replicas"]["#map"][1].__setitem__(0, "C"),
     r"states\[0\]\.replicas: the replicas must be named A, B \(kafka-mc's names"),
    (lambda d: d["states"][3].update(written={"#bigint": "many"}), r"states\[3\]\.written: not an ITF value"),
    (lambda d: d["states"][3].pop("written"), r"states\[3\] lacks written"),
    (lambda d: d.update(states=[]), r"it has no states"),
])
def test_a_value_the_twin_has_not_is_named_by_its_place(case_l, change, message):
    change(case_l)
    with pytest.raises(ValueError, match=r"^not an ITF trace of kafka-mc's TLA\+ twin: " + message):
        itf_to_trace(case_l)


if __name__ == "__main__":  # write the TLC fixture again (the twin or TLC changed)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        TLC_FIXTURE.write_text(fixture_text(tlc_error_trace(CASE_L, "NoCommittedDataLoss", Path(folder))),
                               encoding="utf-8")
    print(f"wrote {TLC_FIXTURE}", file=sys.stderr)
