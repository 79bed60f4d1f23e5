"""The failure catalogue: acks, min.insync.replicas, unclean election, unflushed data and
network failures, checked on small configurations."""

from __future__ import annotations

import json

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import check
from kafka_mc.checker.article import CLAIMS, compare
from kafka_mc.checker.matrix import DATA_PROPERTIES, Axes, check_cell
from kafka_mc.cli import main
from kafka_mc.model import Config, ReplicationModel, parse_action
from kafka_mc.model.state import EXPIRED, FENCED, LEADER
from kafka_mc.properties import failing_invariants


def run_steps(config: Config, initial: int, steps: list[str]):
    model = ReplicationModel(config)
    state = model.initial_states()[initial]
    for step in steps:
        state = model.next_state(state, parse_action(step, model.action_names, config.replicas))
        assert state is not None, f"{step} is not enabled"
    return state


def test_acks_1_loses_an_acknowledged_write_when_the_leader_fails():
    cell = check_cell(Config("leader-epoch", acks="1", crashes=1, elections=1))
    assert cell.shortest("NoAckedDataLoss") is not None
    assert cell.shortest("NoCommittedDataLoss") is None and cell.decided


def test_acks_all_with_leader_epoch_loses_nothing_with_network_failures():
    cell = check_cell(Config("leader-epoch", acks="all", crashes=1, partitions=1))
    assert cell.decided and all(cell.shortest(name) is None for name in DATA_PROPERTIES)


def test_a_leader_cut_off_from_zookeeper_loses_acks_1_writes_without_any_crash():
    cell = check_cell(Config("leader-epoch", acks="1", crashes=0, partitions=1))
    assert cell.shortest("NoAckedDataLoss") is not None
    trace = next(v.trace for v in cell.result.violations if v.invariant == "NoAckedDataLoss")
    assert any(action.name == "ZkDisconnect" for action in trace.actions)


def test_the_recommended_configuration_holds_when_every_write_is_flushed():
    recommended = Config("leader-epoch", acks="all", min_isr=2, crashes=1, partitions=1)
    cell = check_cell(recommended)
    assert cell.decided and cell.shortest("NoAckedDataLoss") is None


def test_finding_one_unflushed_follower_crash_and_a_lost_leader_lose_an_acked_write():
    """Not the article's 'all replicas at once': a follower loses its page cache, restarts before
    the controller notices (so stays in the ISR), and is elected when the leader is cut off."""
    cell = check_cell(Config("kip-320", acks="all", min_isr=2, crashes=1, partitions=1, flush=False))
    trace = next(v.trace for v in cell.result.violations if v.invariant == "NoAckedDataLoss")
    names = [str(action) for action in trace.actions]
    assert len(names) == 9 and names.count("ReplicaCrash(B)") == 1 and "ReplicaCrash(A)" not in names
    assert names[-3:] == ["ZkDisconnect(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)"]


def test_finding_one_before_kafka_7152_the_last_replica_standing_loses_an_acked_write():
    """Up to 2.0 the leader may drop a caught-up follower (`isr_shrink = 'lag-time'`): it is then the
    last ISR member, loses the write from its page cache in a crash and is elected again, in as few
    steps."""
    cell = check_cell(Config("leader-epoch", acks="all", min_isr=2, crashes=1, partitions=1, flush=False))
    trace = next(v.trace for v in cell.result.violations if v.invariant == "NoAckedDataLoss")
    names = [str(action) for action in trace.actions]
    assert len(names) == 9 and names[3:] == ["LeaderHandleFetchRequest(B)", "LeaderShrinkIsr(B)", "ReplicaCrash(A)",
                                             "ControllerNoticeFailure(A)", "ReplicaRestart(A)",
                                             "ControllerElectLeader(A)"]


def test_an_unflushed_tail_is_lost_in_a_crash_and_kept_after_a_flush():
    config = Config("leader-epoch", flush=False)
    state = run_steps(config, 0, ["ProducerWrite(A)", "ReplicaCrash(A)"])
    assert state.replicas[0].log == () and state.replicas[0].epochs == ()
    state = run_steps(config, 0, ["ProducerWrite(A)", "ReplicaFlush(A)", "ReplicaCrash(A)"])
    assert len(state.replicas[0].log) == 1 and state.replicas[0].unflushed == 0


def test_a_deposed_leader_keeps_accepting_acks_1_writes_until_a_failed_isr_shrink():
    config = Config("leader-epoch", replicas=3, acks="1", crashes=0, partitions=1, messages=3)
    state = run_steps(config, 0, ["ZkDisconnect(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)",
                                  "ProducerWrite(A)"])
    a = state.replicas[0]
    assert a.status == EXPIRED and a.role == LEADER and len(a.log) == 1 and a.stale_isr == 0b111
    assert state.controller.leader == 1 and state.acked == 0b10
    assert "NoAckedDataLoss" in failing_invariants(state)  # B leads without the acknowledged m1
    state = run_steps(config, 0, ["ZkDisconnect(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)",
                                  "ProducerWrite(A)", "LeaderShrinkIsrFails(A)"])
    assert state.replicas[0].role == FENCED
    model = ReplicationModel(config)
    assert model.next_state(state, parse_action("ProducerWrite(A)", model.action_names, 3)) is None


def test_symmetry_gives_the_same_verdicts_with_network_failures():
    config = Config("leader-epoch", replicas=3, messages=1, crashes=0, elections=1, acks="1", partitions=1)
    plain, reduced = check(config, keep_going=True), check(config, keep_going=True, symmetry=True)
    assert plain.complete and reduced.complete
    assert reduced.stats.distinct_states < plain.stats.distinct_states
    assert [(v.invariant, len(v.trace)) for v in plain.violations] == \
           [(v.invariant, len(v.trace)) for v in reduced.violations]
    for violation in reduced.violations:
        assert violation.invariant in failing_invariants(violation.trace.states()[-1])


def test_sanity_invariants_hold_with_every_new_feature():
    config = Config("kip-279", replicas=2, messages=2, crashes=1, elections=1, acks="0", flush=False, partitions=1)
    result = check(config, keep_going=True)
    assert result.complete
    assert set(result.violated) <= set(DATA_PROPERTIES)


def test_matrix_axes_make_every_combination():
    axes = Axes(protocols=("hw",), acks=("1", "all"), min_isr=(1,), unclean=(False, True), flush=(True,))
    assert len(list(axes.configs(Config()))) == 4


def test_matrix_command_prints_a_table_and_writes_reports(tmp_path, capsys):
    out = tmp_path / "catalogue"
    code = main(["matrix", "--protocols", "leader-epoch", "--acks", "1,all", "--min-isr", "1", "--unclean", "no",
                 "--flush", "yes", "--network-failures", "0", "--crashes", "1", "--no-compare", "--quiet",
                 "--format", "json", "--out", str(out)])
    assert code == exitcodes.OK
    cells = json.loads(capsys.readouterr().out)["cells"]
    assert [c["config"]["acks"] for c in cells] == ["1", "all"]
    assert cells[0]["verdicts"]["NoAckedDataLoss"]["violated"] and not cells[1]["verdicts"]["NoAckedDataLoss"]["violated"]
    assert (out / "catalogue.md").is_file()
    assert (out / "cells" / "leader-epoch-acks-1-min-isr-1-clean-flush" / "NoAckedDataLoss.html").is_file()


@pytest.mark.parametrize("argv, message", [
    (["matrix", "--acks", "2"], "--acks: '2' is not allowed"),
    (["matrix", "--protocols", "raft"], "--protocols: 'raft' is not allowed"),
    (["matrix", "--unclean", "maybe"], "--unclean: 'maybe' is not allowed"),
    (["matrix", "--min-isr", "3"], "min_isr must be an integer from 1 to 2, not 3"),
    (["matrix", "--engine", "spark", "--workers", "2"], "--workers: not with --engine spark"),
    (["matrix", "--spark-master", "local[2]"], "--spark-master: only with --engine spark"),
    (["matrix", "--engine", "spark", "--spark-master", "locale"], "'locale' is not a Spark master URL"),
    (["check", "--engine", "spark", "--spark-master", "local[0]"], "'local[0]' is not a Spark master URL"),
])
def test_matrix_bad_input_names_the_value(argv, message, capsys):
    assert main(argv) == exitcodes.BAD_INPUT
    assert message in capsys.readouterr().err


def test_the_article_comparison_replays_every_expressible_case_and_agrees():
    """Every claim of Vanlightly's fault-tolerance article and the performance article (README
    "Sources") the model can express has a catalogue scenario whose replay loses acknowledged data
    exactly when the article says so, and whose closing setting (checked exhaustively at the
    scenario's bounds) loses none."""
    comparisons = {comparison.claim.case: comparison for comparison in compare()}
    assert set(comparisons) == {claim.case for claim in CLAIMS}
    assert comparisons["partition-8"].scenario.trace.model.name == "replication-failover"
    for case, comparison in comparisons.items():
        assert comparison.replayed is not None and comparison.agrees, case
        assert comparison.model_loses_acked == comparison.claim.loses_acked, case
        if comparison.claim.closed_by:
            assert comparison.closed is True, case


def test_the_kernel_decides_every_cell_as_the_python_engine_does():
    from kafka_mc.checker.matrix import run_matrix

    axes = Axes(protocols=("hw", "kip-279"), acks=("all", "1"), min_isr=(1, 2), unclean=(False, True), flush=(True, False))
    bounds = Config(messages=1, crashes=1, elections=1, partitions=1)
    by_kernel, by_python = run_matrix(axes, bounds), run_matrix(axes, bounds, kernel=False)
    assert any(cell.result.violations for cell in by_python) and not all(cell.result.violations for cell in by_python)
    for kernel_cell, python_cell in zip(by_kernel, by_python):
        assert kernel_cell.result.engine.startswith("kernel") and python_cell.result.engine.startswith("bfs")
        assert (kernel_cell.result.stats.distinct_states, kernel_cell.result.witnesses, kernel_cell.decided) == \
            (python_cell.result.stats.distinct_states, python_cell.result.witnesses, python_cell.decided)
        assert {name: kernel_cell.shortest(name) for name in DATA_PROPERTIES} == \
            {name: python_cell.shortest(name) for name in DATA_PROPERTIES}
