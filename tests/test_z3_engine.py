"""The Z3 engine: its encoding equals the explicit model, bounded model checking finds the
documented cases at the breadth-first engine's lengths, and the CLI reports it honestly."""

from __future__ import annotations

import dataclasses
import json

import pytest
import z3

from kafka_mc import exitcodes
from kafka_mc.checker import check
from kafka_mc.checker.scenario import load_scenario
from kafka_mc.checker.symbolic.agreement import Z3Encoding, shortest_lengths
from kafka_mc.checker.symbolic.bmc import EncodingMismatch, bounded_check
from kafka_mc.checker.symbolic.properties import SYMBOLIC_INVARIANTS
from kafka_mc.checker.symbolic.registry import NoEncoding, z3_encoded_models
from kafka_mc.checker.symbolic.transitions import EncodingError, SymbolicModel
from kafka_mc.checker.symbolic.truncation import SymbolicProtocol
from kafka_mc.cli import main
from kafka_mc.control import (ControllerConfig, ControllerModel, PartitionFsmConfig, PartitionFsmModel,
                              RebalanceConfig, RebalanceModel)
from kafka_mc.control.failover import FailoverConfig, FailoverModel
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.counterexamples.itf import itf_to_trace
from kafka_mc.model import Config
from kafka_mc.properties import INVARIANTS, failing_invariants
from kafka_mc.testing import check_conformance, coverage_gaps

# Every protocol, acks all, 1 and 0, min.insync.replicas 2, unclean election on and off, flush on
# and off, a network failure: each setting in at least one configuration small enough to compare
# on every reachable state.
AGREEMENT_CONFIGS = [
    Config("hw", messages=2, crashes=1, elections=1),
    Config("hw", messages=1, crashes=1, elections=1, min_isr=2),
    Config("leader-epoch", messages=1, crashes=1, elections=1, acks="1", flush=False),
    Config("leader-epoch", messages=1, crashes=1, elections=1, acks="0"),
    Config("kip-279", messages=1, crashes=1, elections=1, unclean=True),
    Config("kip-279", messages=1, crashes=0, elections=1, partitions=1),
    # the later variants: the KAFKA-7128 ISR-join rule, truncation on a diverging fetch, KAFKA-13141
    Config("kip-320", messages=1, crashes=1, elections=1, unclean=True),
    Config("diverging-epoch", messages=1, crashes=1, elections=1),
    Config("kafka-13141", messages=1, crashes=1, elections=1, acks="1"),
]


@pytest.mark.parametrize("config", AGREEMENT_CONFIGS, ids=lambda c: f"{c.protocol}-m{c.messages}-c{c.crashes}"
                         f"-acks{c.acks}-isr{c.min_isr}-{'unclean' if c.unclean else 'clean'}"
                         f"-{'flush' if c.flush else 'noflush'}-p{c.partitions}")
def test_z3_admits_exactly_the_explicit_successors_and_invariant_values(config):
    report = check_conformance(Z3Encoding(), [config], require_coverage=False)
    assert report.states > 300
    assert report.ok, report.summary()


def test_the_z3_agreement_configurations_exercise_every_action_and_protocol_choice():
    assert coverage_gaps(AGREEMENT_CONFIGS) == []


def _scenario_config(name: str) -> Config:
    return load_scenario(__import__("pathlib").Path(__file__).parent.parent / "scenarios" / name).config


@pytest.mark.parametrize("scenario", ["case-d-hw.toml", "case-d-leader-epoch.toml"])
def test_bmc_shortest_lengths_equal_the_bfs_engine_on_documented_cases(scenario):
    bfs, bmc = shortest_lengths(_scenario_config(scenario))
    assert bfs and bmc == bfs


def test_bmc_finds_case_l_at_the_bfs_engines_length():
    # Case L's NoLogDivergence is one step longer; benchmarks/z3_engine.py compares every length
    config = _scenario_config("case-l-hw.toml")
    shortest = {v.invariant: len(v.trace) for v in check(config, keep_going=True).violations}
    found = bounded_check(config, 12).violations
    assert found and {v.invariant: len(v.trace) for v in found}.items() <= shortest.items()
    assert len(found[0].trace) == min(shortest.values()) == shortest["NoCommittedDataLoss"]


@pytest.mark.parametrize("config", [
    Config("leader-epoch", acks="1", crashes=1, elections=1, partitions=1),
    Config("kip-279", acks="all", min_isr=1, unclean=True, partitions=1),
    Config("leader-epoch", acks="all", min_isr=1, flush=False, crashes=2, partitions=1),
], ids=["acks-1", "unclean", "no-flush"])
def test_bmc_shortest_lengths_equal_the_bfs_engine_on_catalogue_cells(config):
    bfs, bmc = shortest_lengths(config)
    assert bfs and bmc == bfs


def test_bmc_traces_replay_and_break_the_invariant_at_their_last_step():
    result = bounded_check(_scenario_config("case-d-hw.toml"), 6, keep_going=True)
    assert {v.invariant for v in result.violations} >= {"NoCommittedDataLoss", "NoLogDivergence"}
    for violation in result.violations:
        states = violation.trace.states()
        assert violation.invariant in failing_invariants(states[-1])
        assert all(violation.invariant not in failing_invariants(state) for state in states[:-1])


def test_no_violation_up_to_the_depth_is_bounded_never_a_pass():
    result = bounded_check(Config("leader-epoch"), 6)
    assert not result.violations and not result.complete and not result.passed
    assert result.stats.depth == 6 and result.bounded_to == 6
    assert "bounded" in result.stopped_because


def test_one_engine_runs_every_model_with_an_encoding_and_refuses_the_others_by_name():
    def lengths(result):
        return {v.invariant: len(v.trace) for v in result.violations}

    config = _scenario_config("case-d-hw.toml")
    from_config = bounded_check(config, 6, keep_going=True)
    assert lengths(from_config) and lengths(bounded_check(ReplicationSystem(config, INVARIANTS), 6, keep_going=True)) \
        == lengths(from_config)
    controller = bounded_check(ControllerModel(ControllerConfig(atomic_epoch=False)), 6)
    assert lengths(controller) == {"OneControllerPerEpoch": 5} and controller.witnesses["TwoBrokersActAsController"]
    partitions = bounded_check(PartitionFsmModel(PartitionFsmConfig(delete_online=True)), 4)
    assert [v.invariant for v in partitions.violations] == ["OnlyLegalTransitions"]
    assert z3_encoded_models() == ("replication", "controller", "partition-fsm")
    for model in (RebalanceModel(RebalanceConfig()), FailoverModel(FailoverConfig("hw"))):
        with pytest.raises(NoEncoding, match=f"^the {model.name} model has no Z3 encoding; models with one: "
                                             "replication, controller, partition-fsm$"):
            bounded_check(model, 2)
    with pytest.raises(EncodingError, match="WitnessName has no Z3 encoding: only state invariants have one"):
        bounded_check(Config("hw"), 2, [dataclasses.replace(INVARIANTS[0], name="WitnessName", kind="sometimes")])


def test_a_wrong_encoding_is_an_internal_error_never_a_report(monkeypatch):
    # a broken ProducerWrite that does not advance `written`: its solver traces no longer replay
    original = SymbolicModel.producer_write

    def broken(self, s, i):
        guard, after = original(self, s, i)
        return guard, __import__("dataclasses").replace(after, written=s.written)

    monkeypatch.setattr(SymbolicModel, "producer_write", broken)
    with pytest.raises(EncodingMismatch):
        bounded_check(Config("hw", messages=1, crashes=2), 10)


def test_an_unencoded_protocol_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(SymbolicProtocol.ENCODED, "epoch_lookup", ("none", "kip-101"))
    with pytest.raises(EncodingError, match="protocol 'kip-279': its epoch_lookup = 'kip-279' is not encoded"):
        SymbolicModel(Config("kip-279"))


def test_solver_unknown_is_reported_as_no_verdict(monkeypatch):
    monkeypatch.setattr(z3.Solver, "check", lambda self, *a: z3.unknown)
    monkeypatch.setattr(z3.Solver, "reason_unknown", lambda self: "canceled")
    result = bounded_check(Config("hw"), 5)
    assert not result.violations and result.stats.depth < 5 and "unknown" in result.stopped_because


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_cli_z3_finds_case_l_writes_reports_and_exits_12(capsys, tmp_path):
    code, out, err = run(capsys, "check", "--engine", "z3", "--protocol", "hw", "--depth", "12", "--format", "json",
                         "--out", str(tmp_path))
    summary = json.loads(out)
    assert code == exitcodes.VIOLATION
    assert summary["engine"] == "z3" and summary["depth"] == 10 and summary["complete"] is False
    lengths = {v["invariant"]: v["length"] for v in summary["violations"]}
    assert lengths["NoCommittedDataLoss"] == 10
    assert "depth 9:" in err and "clauses" in err
    itf = json.loads((tmp_path / "hw-NoCommittedDataLoss.itf.json").read_text())
    assert len(itf_to_trace(itf)) == 10
    assert (tmp_path / "hw-NoCommittedDataLoss.html").exists()


def test_cli_z3_bounded_run_says_so_and_exits_0(capsys):
    code, out, _ = run(capsys, "check", "--engine", "z3", "--protocol", "leader-epoch", "--depth", "4", "--quiet")
    assert code == exitcodes.OK
    assert "Bounded model checking to depth 4" in out and "no violation up to depth 4" in out
    assert not [line for line in out.splitlines() if line.endswith(" holds")]


@pytest.mark.parametrize("argv, named", [
    (["--engine", "z3", "--symmetry"], "--symmetry"),
    (["--engine", "z3", "--workers", "2"], "--workers"),
    (["--engine", "z3", "--depth", "ten"], "--depth"),
    (["--engine", "z3", "--depth", "-1"], "--depth"),
    (["--depth", "5"], "--depth"),
    (["--engine", "z3", "--spark-partitions", "2"], "--spark-partitions"),
])
def test_cli_z3_bad_input_names_the_option(capsys, argv, named):
    code, _, err = run(capsys, "check", *argv, "--quiet")
    assert code == exitcodes.BAD_INPUT and named in err


def test_an_invariant_formula_that_disagrees_with_its_predicate_is_an_internal_error(monkeypatch):
    monkeypatch.setitem(SYMBOLIC_INVARIANTS, "HwBelowLeo", lambda s: s.written > 0)  # false initially
    with pytest.raises(EncodingMismatch, match="HwBelowLeo"):
        bounded_check(Config("hw"), 2)


def test_the_readme_shows_the_prove_example_the_tests_run():
    import re
    from pathlib import Path

    root = Path(__file__).parent.parent
    example = re.search(r"README_EXAMPLE = '''\n(.*?)'''", (root / "tests" / "test_prove.py").read_text(), re.S)
    assert example and example.group(1).strip() in (root / "docs" / "proofs.md").read_text()
