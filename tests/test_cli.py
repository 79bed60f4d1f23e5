"""The kafka-mc command line: verdicts, JSON, reports, exit codes and bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker.scenario import documented_scenarios
from kafka_mc.cli import main

SMALL = ["--messages", "1", "--crashes", "2", "--elections", "1", "--quiet"]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_hw_violation_prints_a_tlc_style_trace_and_exits_12(capsys):
    code, out, _ = run(capsys, "check", "--protocol", "hw", *SMALL)
    assert code == exitcodes.VIOLATION
    assert "Error: Invariant NoCommittedDataLoss is violated." in out
    assert "State 1: <Initial predicate>" in out and "INCOMPLETE" in out


def test_json_summary_has_the_documented_fields(capsys):
    code, out, _ = run(capsys, "check", "--protocol", "hw", "--format", "json", "--keep-going", "--quiet")
    summary = json.loads(out)
    assert code == exitcodes.VIOLATION
    assert {"protocol", "config", "complete", "distinct_states", "violations", "witnesses"} <= set(summary)
    assert summary["complete"] is True and summary["protocol"] == "hw"
    assert {v["invariant"] for v in summary["violations"]} == {"NoAckedDataLoss", "NoCommittedDataLoss",
                                                              "NoConsumedRecordLost", "NoLogDivergence"}
    step = summary["violations"][0]["trace"][1]
    assert set(step) == {"action", "state"} and step["state"]["replicas"]["A"]["leo"] >= 0


def test_leader_epoch_passes_with_exit_0(capsys):
    code, out, _ = run(capsys, "check", "--protocol", "leader-epoch", "--format", "json", *SMALL)
    summary = json.loads(out)
    assert code == exitcodes.OK and summary["violations"] == [] and summary["passed"]
    assert all(summary["witnesses"].values())


def test_budget_gives_an_incomplete_run_with_its_own_exit_code(capsys):
    code, out, _ = run(capsys, "check", "--protocol", "leader-epoch", "--max-states", "50", "--format", "json",
                       *SMALL)
    assert code == exitcodes.INCOMPLETE and json.loads(out)["complete"] is False


def test_unreached_witness_fails_the_run(capsys):
    code, out, _ = run(capsys, "check", "--protocol", "leader-epoch", "--messages", "0", "--quiet")
    assert code == exitcodes.WITNESS_UNREACHED and "RecordCommitted" in out and "NOT REACHED" in out


def test_reports_are_written_and_foreign_files_are_not_overwritten(capsys, tmp_path):
    out_dir = tmp_path / "reports"
    for _ in range(2):  # a rerun replaces its own reports
        code, out, _ = run(capsys, "check", "--protocol", "hw", "--out", str(out_dir), *SMALL)
        assert code == exitcodes.VIOLATION
    assert (out_dir / "hw-NoCommittedDataLoss.itf.json").is_file()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "hw-NoCommittedDataLoss.md").write_text("my notes")
    code, _, err = run(capsys, "check", "--protocol", "hw", "--out", str(foreign), *SMALL)
    assert code == exitcodes.BAD_INPUT and "hw-NoCommittedDataLoss.md exists" in err
    assert (foreign / "hw-NoCommittedDataLoss.md").read_text() == "my notes"


def test_dump_dot_in_tlc_layout(capsys, tmp_path):
    dot = tmp_path / "graph.dot"
    code, _, _ = run(capsys, "check", "--protocol", "leader-epoch", "--dump-dot", str(dot), *SMALL)
    text = dot.read_text()
    assert code == exitcodes.OK and text.startswith("strict digraph DiskGraph {")
    assert text.count("style = filled") == 2 and '[label="ProducerWrite(A)"' in text
    assert run(capsys, "check", "--protocol", "leader-epoch", "--dump-dot", str(dot), *SMALL)[0] == exitcodes.OK


def test_dump_dot_never_replaces_a_users_file_and_refuses_before_the_run(capsys, tmp_path):
    mine = tmp_path / "notes.txt"
    mine.write_text("my notes")
    code, out, err = run(capsys, "check", "--dump-dot", str(mine), *SMALL)
    assert code == exitcodes.BAD_INPUT and f"{mine} exists and was not written by kafka-mc" in err
    assert mine.read_text() == "my notes" and out == ""  # refused before any work


@pytest.mark.parametrize("where, message", [
    (lambda tmp: tmp / "file" / "out", "is a file, not a folder"),
    (lambda tmp: tmp / ("x" * 300), "is longer than"),
    (lambda tmp: tmp / ("x" * 300) / "out", "is longer than"),
    (lambda tmp: Path("/proc/kafka-mc-out"), "cannot be written"),
])
@pytest.mark.parametrize("flag", ["--out", "--write-tla", "--dump-dot"])
def test_output_paths_that_cannot_be_written_are_refused_before_the_run(capsys, tmp_path, flag, where, message):
    (tmp_path / "file").write_text("x")
    code, out, err = run(capsys, "check", flag, str(where(tmp_path)), *SMALL)
    assert code == exitcodes.BAD_INPUT and message in err and err.count("\n") == 1 and out == ""


def test_recoverability_fails_for_case_d_under_hw(capsys):
    code, out, _ = run(capsys, "check", "--protocol", "hw", "--unclean", "--messages", "3", "--crashes", "2",
                       "--elections", "1", "--recoverability", "--keep-going", "--quiet")
    assert code == exitcodes.VIOLATION and "LiveReplicasAgree (recoverability)" in out
    assert "can never recover" in out


@pytest.mark.parametrize("scenario", documented_scenarios(), ids=lambda p: p.stem)
def test_replay_of_documented_scenarios(capsys, scenario):
    code, out, _ = run(capsys, "replay", str(scenario))
    assert code == exitcodes.OK and "Step 1: " in out and "matches every checkpoint" in out


def test_replay_marks_the_breaking_step(capsys):
    case_l = next(p for p in documented_scenarios() if p.stem == "case-l-hw")
    _, out, _ = run(capsys, "replay", str(case_l))
    assert "Step 13: ControllerElectLeader(A)" in out
    assert "<<< invariants NoCommittedDataLoss, NoAckedDataLoss, NoConsumedRecordLost break here >>>" in out


def test_replay_of_a_disabled_step_names_it(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text('title = "t"\ninitial_leader = "A"\nsteps = ["ProducerWrite(B)"]\n[config]\nprotocol = "hw"\n')
    code, _, err = run(capsys, "replay", str(path))
    assert code == exitcodes.BAD_SPEC and "step 1 (ProducerWrite(B)): not enabled" in err


def test_reproduce_writes_every_case(capsys, tmp_path):
    code, out, _ = run(capsys, "reproduce", "--out", str(tmp_path), "--quiet")
    assert code == exitcodes.OK and "MISMATCH" not in out
    for case in ("case-l-hw", "case-l-leader-epoch", "case-d-hw", "case-d-leader-epoch"):
        assert (tmp_path / f"{case}.html").is_file() and case in (tmp_path / "README.md").read_text()


@pytest.mark.parametrize("argv, code, message", [
    (["check", "--protocol", "raft"], exitcodes.BAD_INPUT, "protocol 'raft' is unknown; allowed: hw, leader-epoch, kip-279"),
    (["check", "--replicas", "7"], exitcodes.BAD_INPUT, "replicas must be an integer from 2 to 5, not 7"),
    (["check", "--replicas", "1"], exitcodes.BAD_INPUT, "replicas must be an integer from 2 to 5, not 1"),
    (["check", "--replicas", "two"], exitcodes.BAD_INPUT, "--replicas must be an integer, not 'two'"),
    (["check", "--max-seconds", "soon"], exitcodes.BAD_INPUT, "--max-seconds must be a number, not 'soon'"),
    (["check", "--messages", "-1"], exitcodes.BAD_INPUT, "messages must be an integer from 0 to 9, not -1"),
    (["check", "--crashes", "12"], exitcodes.BAD_INPUT, "crashes must be an integer from 0 to 9, not 12"),
    (["check", "--elections", "-3"], exitcodes.BAD_INPUT, "elections must be an integer from 0 to 9, not -3"),
    (["check", "--acks", "2"], exitcodes.BAD_INPUT, "acks '2' is not supported; allowed: all, 1, 0"),
    (["check", "--network-failures", "10"], exitcodes.BAD_INPUT,
     "--network-failures must be an integer from 0 to 9, not 10"),
    (["check", "--network-failures", "x"], exitcodes.BAD_INPUT, "--network-failures must be an integer, not 'x'"),
    (["check", "--min-isr", "3"], exitcodes.BAD_INPUT, "min_isr must be an integer from 1 to 2, not 3"),
    (["check", "--min-isr", "0"], exitcodes.BAD_INPUT, "min_isr must be an integer from 1 to 2, not 0"),
    (["check", "--format", "xml"], exitcodes.USAGE, "'xml' is not one of"),
    (["check", "--max-states", "0"], exitcodes.BAD_INPUT, "--max-states must be an integer from 1 to 1,000,000,000,000, not 0"),
    (["check", "--workers", "0"], exitcodes.BAD_INPUT, "--workers must be an integer from 1 to 64, not 0"),
    (["check", "--workers", "many"], exitcodes.BAD_INPUT, "--workers must be an integer, not 'many'"),
    (["check", "--max-seconds", "-1"], exitcodes.BAD_INPUT, "--max-seconds must be a number greater than 0 and at most 10,000,000, not -1"),
    (["check", "--max-seconds", "nan"], exitcodes.BAD_INPUT, "--max-seconds must be a finite number, not 'nan'"),
    (["check", "--max-seconds", "inf"], exitcodes.BAD_INPUT, "--max-seconds must be a finite number, not 'inf'"),
    (["check", "--max-seconds", "1e400"], exitcodes.BAD_INPUT, "--max-seconds must be a finite number, not '1e400'"),
    (["check", "--workers", "1" + "0" * 30], exitcodes.BAD_INPUT, "--workers must be an integer from 1 to 64, not 1000"),
    (["check", "--max-states", "1e3"], exitcodes.BAD_INPUT, "--max-states must be an integer, not '1e3'"),
    (["simulate", "--depth", "1" + "0" * 26], exitcodes.BAD_INPUT, "--depth must be an integer from 1 to 1,000,000"),
    (["simulate", "--max-seconds", "-inf"], exitcodes.BAD_INPUT, "--max-seconds must be a finite number, not '-inf'"),
    (["check", "--unclean", "yes"], exitcodes.USAGE, "unexpected extra argument"),
    (["check", "--colour"], exitcodes.USAGE, "No such option: --colour"),
    (["replay"], exitcodes.USAGE, "Missing argument"),
    (["replay", "absent.toml"], exitcodes.BAD_SPEC, "absent.toml: no such file"),
    (["frobnicate"], exitcodes.USAGE, "No such command"),
])
def test_bad_input_names_the_value_and_exits_non_zero(capsys, argv, code, message):
    got, out, err = run(capsys, *argv)
    assert got == code
    assert message in out + err


def test_partitions_still_works_as_the_deprecated_name_of_network_failures(capsys):
    argv = ("check", "--engine", "python", "--messages", "1", "--crashes", "1", "--max-states", "10", "--quiet",
            "--format", "json")
    code, out, err = run(capsys, *argv, "--network-failures", "1")
    assert "deprecated" not in err
    expected = code, json.loads(out)["config"]
    code, out, err = run(capsys, *argv, "--partitions", "1")
    assert (code, json.loads(out)["config"]) == expected and expected[1]["partitions"] == 1
    assert err.count("warning: --partitions is deprecated; use --network-failures") == 1
    code, _, err = run(capsys, "check", "--partitions", "10")  # errors name the flag given
    assert code == exitcodes.BAD_INPUT and "kafka-mc: --partitions must be an integer from 0 to 9, not 10" in err
    code, _, err = run(capsys, "check", "--partitions", "1", "--network-failures", "1")
    assert code == exitcodes.BAD_INPUT and "give only --network-failures" in err
    code, _, err = run(capsys, "simulate", "--partitions", "200")
    assert code == exitcodes.BAD_INPUT and "--partitions must be an integer from 0 to 99, not 200" in err
    assert err.count("deprecated") == 1


def test_replaced_disks_still_works_as_the_deprecated_form_of_disk_failures(capsys):
    argv = ("check", "--engine", "python", "--messages", "1", "--crashes", "2", "--max-states", "10", "--quiet",
            "--format", "json")
    code, out, err = run(capsys, *argv, "--disk-failures", "2")
    assert "deprecated" not in err
    expected = code, json.loads(out)["config"]
    code, out, err = run(capsys, *argv, "--replaced-disks")
    assert (code, json.loads(out)["config"]) == expected and expected[1]["disk_failures"] == 2
    assert err.count("warning: --replaced-disks is deprecated; use --disk-failures N (here N = --crashes)") == 1
    code, _, err = run(capsys, "check", "--replaced-disks", "--disk-failures", "1")
    assert code == exitcodes.BAD_INPUT and "give only --disk-failures" in err
    code, _, err = run(capsys, "check", "--crashes", "1", "--disk-failures", "2")
    assert code == exitcodes.BAD_INPUT and ("kafka-mc: --disk-failures: disk_failures 2: each disk failure is one of "
                                            "the crashes, so it may be at most crashes (1)") in err


def test_out_must_be_a_directory(capsys, tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    code, _, err = run(capsys, "check", "--out", str(target), *SMALL)
    assert code == exitcodes.BAD_INPUT and "exists and is not a folder" in err


def test_dump_dot_refuses_configurations_too_large_for_a_graph(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr("kafka_mc.checker.graph.DEFAULT_GRAPH_LIMIT", 10)
    code, _, err = run(capsys, "check", "--dump-dot", str(tmp_path / "g.dot"), *SMALL)
    assert code == exitcodes.BAD_INPUT and "more than 10 reachable states" in err


def test_console_script_and_module_entry_points():
    for command in (["kafka-mc", "--help"], [sys.executable, "-m", "kafka_mc", "--help"]):
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0 and "check" in done.stdout and "reproduce" in done.stdout
    done = subprocess.run(["kafka-mc", "check", "--replicas", "9"], capture_output=True, text=True)
    assert done.returncode == exitcodes.BAD_INPUT and "Traceback" not in done.stderr


@pytest.mark.parametrize("protocol", ["hw", "diverging-epoch"])
def test_the_default_kernel_engine_gives_the_python_engines_results_and_its_own_figures(capsys, protocol):
    argv = ("check", "--protocol", protocol, "--keep-going", "--format", "json", "--quiet")
    python_code, python_out, _ = run(capsys, *argv, "--engine", "python")
    code, out, _ = run(capsys, *argv)
    reference, kernel = json.loads(python_out), json.loads(out)
    assert code == python_code and kernel["engine"] == "kernel" and reference["engine"] == "bfs"
    fields = ("distinct_states", "states_generated", "depth", "complete", "witnesses")
    assert {f: kernel[f] for f in fields} == {f: reference[f] for f in fields}
    assert [(v["invariant"], v["length"]) for v in kernel["violations"]] == \
        [(v["invariant"], v["length"]) for v in reference["violations"]]
    assert kernel["compile_seconds"] >= 0 and 0 < kernel["collision_probability"] < 1e-6
    assert 13 * kernel["distinct_states"] < kernel["visited_bytes"]  # at least 8 a table slot, 5 a link
    assert "compile_seconds" not in reference
    _, bfs_out, _ = run(capsys, *argv, "--engine", "bfs")  # the reference's former name
    timing = {"seconds": 0, "states_per_second": 0}
    assert json.loads(bfs_out) | timing == reference | timing


FLAG_VALUES = {"--workers": "2", "--max-states": "10", "--dump-dot": "graph.dot", "--write-tla": "tla", "--depth": "2",
               "--spark-master": "local[1]", "--spark-partitions": "2", "--checkpoint-dir": "checkpoints",
               "--resume": "checkpoints", "--property": "props.py:anything"}


def _given(flag: str) -> list[str]:
    return [flag, FLAG_VALUES[flag]] if flag in FLAG_VALUES else [flag]


def test_every_engine_refuses_by_name_every_option_its_declaration_does_not_take(capsys, tmp_path, monkeypatch):
    """The refusals come from one table (`cli.CHECK_ENGINE_FLAGS`): each option an engine does not take
    is refused before anything runs, naming the option, the engine and the engines that take it."""
    from kafka_mc.cli import CHECK_ENGINE_FLAGS

    monkeypatch.chdir(tmp_path)
    every_flag = set().union(*CHECK_ENGINE_FLAGS.values())
    for engine, takes in CHECK_ENGINE_FLAGS.items():
        for flag in sorted(every_flag - takes):
            code, _, err = run(capsys, "check", "--engine", engine.value, *_given(flag), *SMALL)
            assert code == exitcodes.BAD_INPUT, (engine, flag)
            takers = [e.value for e, flags in CHECK_ENGINE_FLAGS.items() if flag in flags]
            assert f"{flag}: not with --engine {engine.value} (only with --engine {' or '.join(takers)})" in err
    assert list(tmp_path.iterdir()) == []  # nothing was written


def test_write_tla_goes_with_the_z3_engine_too(capsys, tmp_path):
    code, _, _ = run(capsys, "check", "--engine", "z3", "--depth", "3", "--write-tla", str(tmp_path / "tla"), *SMALL)
    assert code == exitcodes.OK
    assert (tmp_path / "tla" / "KafkaHw.tla").is_file() and (tmp_path / "tla" / "KafkaHw.cfg").is_file()


def test_a_replay_that_stops_on_a_disabled_step_shows_that_state_and_what_is_enabled(capsys, tmp_path):
    """(The third step of Case L, A's fetch response, replaced by a restart of A, which is up.)"""
    case_l = next(p for p in documented_scenarios() if p.stem == "case-l-hw")
    text = case_l.read_text()
    broken = tmp_path / "broken.toml"
    broken.write_text(text.replace('"FollowerHandleFetchResponse(A)"', '"ReplicaRestart(A)"', 1))
    code, _, err = run(capsys, "replay", str(broken))
    assert code == exitcodes.BAD_SPEC
    assert "step 3 (ReplicaRestart(A)): not enabled in the state before it; enabled there: ProducerWrite(B), " \
           "FollowerHandleFetchResponse(A)," in err
    assert "The state before it:" in err and '  controller = {"leader": "B", "epoch": 0, "isr": ["A", "B"]}' in err


def test_a_trace_that_violates_several_invariants_is_printed_once(capsys):
    code, out, _ = run(capsys, "check", "--protocol", "hw", "--quiet")
    assert code == exitcodes.VIOLATION
    assert out.count("State 1: <Initial predicate>") == 1 and out.count("Error: The behavior up to this point is:") == 1
    assert "\\* NoAckedDataLoss, NoCommittedDataLoss, NoConsumedRecordLost are violated in this state" in out


def test_a_shipped_scenario_replays_by_name_and_a_wrong_name_gets_close_ones(capsys):
    code, out, _ = run(capsys, "replay", "case-l-hw")
    assert code == exitcodes.OK and "NoCommittedDataLoss at step 13" in out
    code, _, err = run(capsys, "replay", "case-l-hv")
    assert code == exitcodes.BAD_SPEC
    assert "case-l-hv: no such file, and no shipped scenario of that name" in err
    assert "similar name: case-l-hw" in err


def test_replay_takes_an_itf_trace_kafka_mc_wrote(capsys, tmp_path):
    """A counterexample round-trips: `check --out` writes NAME.itf.json, `replay` reads it back
    through the model and exits 0 when it breaks the invariant it records; 1 when it does not;
    150, naming the place, when a state is not the one the model gives."""
    assert run(capsys, "check", "--protocol", "hw", "--out", str(tmp_path), *SMALL)[0] == exitcodes.VIOLATION
    itf = tmp_path / "hw-NoCommittedDataLoss.itf.json"
    code, out, _ = run(capsys, "replay", str(itf))
    assert code == exitcodes.OK and "NoCommittedDataLoss" in out and "break here >>>" in out
    document = json.loads(itf.read_text())
    document["#meta"]["invariant"] = "HwBelowLeo"  # an invariant this trace never breaks
    (tmp_path / "other.itf.json").write_text(json.dumps(document))
    code, out, _ = run(capsys, "replay", str(tmp_path / "other.itf.json"))
    assert code == exitcodes.FAILED and "expected HwBelowLeo to break, it never does" in out
    document = json.loads(itf.read_text())
    document["states"][2]["replicas"]["#map"][0][1]["hw"] = {"#bigint": "7"}
    (tmp_path / "tampered.itf.json").write_text(json.dumps(document))
    code, out, err = run(capsys, "replay", str(tmp_path / "tampered.itf.json"))
    assert code == exitcodes.BAD_SPEC and "tampered.itf.json: ITF state 2" in err and "replay gives other" in err


PROPERTY_FILE = '''
from kafka_mc.model.values import leader_name

def leader_never_b(state):
    return leader_name(state) != "B"

def epoch_never_drops(state, action, after):
    assert after.controller.epoch >= state.controller.epoch

def broken(state):
    return state.nothing

def two(a, b):
    return True
'''


def test_check_takes_a_users_property_from_a_file(capsys, tmp_path):
    """--property FILE:NAME checks the user's function instead of kafka-mc's own properties: the
    verdict table lists only it, a violation has its trace and reports, a step property works."""
    (tmp_path / "props.py").write_text(PROPERTY_FILE)
    props = str(tmp_path / "props.py")
    code, out, _ = run(capsys, "check", "--engine", "python", "--property", f"{props}:leader_never_b",
                       "--out", str(tmp_path / "out"), *SMALL)
    assert code == exitcodes.VIOLATION and "Error: Invariant leader_never_b is violated." in out
    assert "NoCommittedDataLoss" not in out and (tmp_path / "out" / "hw-leader_never_b.toml").is_file()
    for engine, verdict in (("python", "holds"), ("kernel", "holds"), ("z3", "no violation up to depth 10")):
        code, out, _ = run(capsys, "check", "--engine", engine, "--property", f"{props}:epoch_never_drops", *SMALL)
        assert code == exitcodes.OK and f"epoch_never_drops  {verdict}" in out and "NoCommittedDataLoss" not in out


@pytest.mark.parametrize("argv, code, message", [
    (["--property", "{props}:leader_never_b"], exitcodes.BAD_SPEC,
     "--property: property leader_never_b: indexing str 'ABCDE' cannot be lowered (state.py, line"),
    (["--property", "{props}:leader_never_b", "--write-tla", "{props}.tla"], exitcodes.BAD_SPEC,
     "indexing str 'ABCDE' cannot be lowered (state.py, line"),
    (["--engine", "python", "--property", "{props}:broken"], exitcodes.BAD_SPEC,
     "property broken raised AttributeError"),
    (["--engine", "python", "--property", "{props}:two"], exitcodes.BAD_SPEC, "not 2 parameters"),
    (["--engine", "python", "--property", "{props}:absent"], exitcodes.BAD_SPEC, "has no absent; its functions: "
                                                                                "broken, epoch_never_drops"),
    (["--engine", "python", "--property", "missing.py:x"], exitcodes.BAD_SPEC, "no such file: missing.py"),
    (["--engine", "python", "--property", "no-colon"], exitcodes.BAD_INPUT, "give FILE:NAME"),
])
def test_a_users_property_that_cannot_be_checked_is_refused_by_name(capsys, tmp_path, argv, code, message):
    (tmp_path / "props.py").write_text(PROPERTY_FILE)
    argv = [arg.format(props=tmp_path / "props.py") for arg in argv]
    got, _, err = run(capsys, "check", *argv, *SMALL)
    assert got == code and message in err and "internal error" not in err
