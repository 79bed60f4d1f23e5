"""Vanlightly's KIP-966 invariants that kafka-mc's own do not state (`properties/anchors.py`): what
they find under `kip-966` and `kafka-15583`, the same on the engines that lower them, and on the
command line as `--property MODULE:NAME`; and the liveness his specification asks for, a partition
that gets a leader again (`checker.graph.check_leader_again`, `--recoverability`)."""

from __future__ import annotations

import json

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import check
from kafka_mc.checker.graph import check_leader_again, state_graph
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.cli import main
from kafka_mc.model import Config, ReplicationModel
from kafka_mc.model.state import UP
from kafka_mc.properties.anchors import ANCHOR_PROPERTIES
from kafka_mc.testing import reachable_states

CANDIDATES, GLOBALLY = ANCHOR_PROPERTIES
UNFLUSHED = dict(min_isr=2, flush=False)


def lengths(result) -> dict[str, int]:
    return {violation.invariant: len(violation.trace) for violation in result.violations}


def test_kip_966_keeps_every_leader_candidate_complete_where_kafka_15583_does_not():
    """The last replica standing (kafka-15583, Kafka 3.7) comes back from an unclean shutdown without
    a committed record and is still in the ISR; under KIP-966 it leaves the ISR. The python engine, the
    kernel and Z3 agree."""
    holds, breaks = Config("kip-966", 2, 2, 1, 1, **UNFLUSHED), Config("kafka-15583", 2, 2, 1, 1, **UNFLUSHED)
    for engine in (check, kernel_check):
        assert lengths(engine(holds, (CANDIDATES,), keep_going=True)) == {}
        assert lengths(engine(breaks, (CANDIDATES,), keep_going=True)) == {"LeaderCandidateCompleteness": 9}
    assert lengths(bounded_check(breaks, 9, (CANDIDATES,))) == {"LeaderCandidateCompleteness": 9}


def test_kip_966_tolerates_one_lossy_shutdown_below_min_insync_replicas_but_not_two():
    """With 3 replicas and min.insync.replicas 2, one unclean shutdown loses no acknowledged write
    anywhere; two do (the write acknowledged by A and B, both losing it unflushed), as Vanlightly's
    comment on `NoCommittedRecordLostGlobally` says they will."""
    one = kernel_check(Config("kip-966", 3, 1, 1, 2, **UNFLUSHED), ANCHOR_PROPERTIES, keep_going=True, symmetry=True)
    assert one.complete and lengths(one) == {}
    two = check(Config("kip-966", 3, 1, 2, 2, **UNFLUSHED), (GLOBALLY,))
    assert lengths(two) == {"NoCommittedRecordLostGlobally": 7}
    assert [str(action) for action in two.violations[0].trace.actions] == [
        "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
        "LeaderHandleFetchRequest(B)", "LeaderShrinkIsr(C)", "ReplicaCrash(A)", "ReplicaCrash(B)"]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_property_is_named_by_module_on_the_command_line(capsys):
    spec = "kafka_mc.properties.anchors:leader_candidate_completeness"
    config = ("--protocol", "kafka-15583", "--replicas", "2", "--messages", "2", "--crashes", "1", "--elections", "1",
              "--min-isr", "2", "--no-flush", "--quiet", "--format", "json")
    code, out, _ = run_cli(capsys, "check", *config, "--property", spec)
    assert code == exitcodes.VIOLATION
    assert {v["invariant"]: v["length"] for v in json.loads(out)["violations"]} == \
        {"leader_candidate_completeness": 9}


@pytest.mark.parametrize("spec, message", [
    ("kafka_mc.properties.nowhere:x", "no such file or module: kafka_mc.properties.nowhere"),
    ("kafka_mc.properties.anchors:nope", "kafka_mc.properties.anchors has no nope"),
    ("not/a/module:x", "no such file: not/a/module"),
])
def test_a_bad_module_or_name_is_refused_by_name(capsys, spec, message):
    code, _, err = run_cli(capsys, "check", "--property", spec)
    assert code == exitcodes.BAD_SPEC and message in err and "Traceback" not in err, err


def test_under_kip_966_a_partition_whose_isr_and_elr_empty_elects_its_last_known_leader():
    """KAFKA-15584 (3.7.0): the ISR that becomes empty keeps its last member as the last known leader, and
    the controller elects it, uncleanly, once the ISR and the ELR are both empty. So after two crashes, each
    restart an unclean shutdown that takes its broker out of the ELR, the partition gets a leader again
    (`LeaderAgain` holds), and with unflushed writes it is that leader that loses the committed record: two
    lossy shutdowns, one past the min.insync.replicas - 1 that KIP-966 tolerates."""
    config = Config("kip-966", 2, 1, 2, 2, min_isr=2)
    assert check_leader_again(config, state_graph(config)).holds
    lossy = check(Config("kip-966", 2, 1, 2, 2, **UNFLUSHED), keep_going=True)
    assert lengths(lossy) == {"NoCommittedDataLoss": 11, "NoAckedDataLoss": 11, "NoConsumedRecordLost": 11}
    trace = next(v.trace for v in lossy.violations if v.invariant == "NoCommittedDataLoss")
    assert [str(action) for action in trace.actions] == [
        "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
        "LeaderHandleFetchRequest(B)", "ReplicaCrash(A)", "ReplicaCrash(B)", "ControllerNoticeFailure(A)",
        "ReplicaRestart(A)", "ControllerNoticeFailure(B)", "ReplicaRestart(B)", "ControllerElectLeader(B)"]
    before, after = trace.states()[-2:]
    assert (before.controller.isr, before.controller.elr) == (0, 0) and before.controller.last_known_elr
    assert after.controller.isr == before.controller.last_known_elr == 1 << after.controller.leader
    assert after.controller.last_known_elr == 0
    for holds in (Config("kafka-15583", 2, 1, 2, 2, min_isr=2),
                  Config("kip-966", 2, 1, 2, 2, min_isr=2, unclean=True)):
        assert check_leader_again(holds, state_graph(holds)).holds, holds


def test_under_kip_966_one_lossy_shutdown_of_two_unclean_ones_loses_the_committed_record():
    """KIP-966 tolerates min.insync.replicas - 1 unclean shutdowns, lossy or not: A crashes with its disk
    intact and B with its disk lost (`disk_failures` 1 of 2 crashes); A's restart is an unclean shutdown that
    takes it out of the ELR, and B, the last known leader, is elected on its empty disk. The python engine
    and the kernel agree."""
    config = Config("kip-966", 2, 1, 2, 2, min_isr=2, disk_failures=1)
    for engine in (check, kernel_check):
        result = engine(config, keep_going=True)
        assert result.complete and result.stats.distinct_states == 3170
        assert lengths(result) == {"NoCommittedDataLoss": 11, "NoAckedDataLoss": 11, "NoConsumedRecordLost": 11}
    trace = next(v.trace for v in result.violations if v.invariant == "NoCommittedDataLoss")
    assert [str(action) for action in trace.actions] == [
        "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
        "LeaderHandleFetchRequest(B)", "ReplicaCrash(A)", "ReplicaDiskFailure(B)", "ControllerNoticeFailure(A)",
        "ReplicaRestart(A)", "ControllerNoticeFailure(B)", "ReplicaRestart(B)", "ControllerElectLeader(B)"]
    assert trace.states()[-1].disk_failures == 1


def test_the_last_known_leader_comes_before_an_unclean_election():
    """`PartitionChangeBuilder.electAnyLeader` tries the last known leader before an unclean election of any
    other replica: with unclean election on, a live replica that is not the last known leader is not elected
    while the ISR and the ELR are empty."""
    config = Config("kip-966", 2, 1, 2, 2, min_isr=2, unclean=True)
    model = ReplicationModel(config)
    contested = 0  # states where another live replica would be elected uncleanly but for the last known leader
    for state in reachable_states(config):
        controller = state.controller
        if controller.leader == -1 and controller.isr == controller.elr == 0 and not model.elections_spent(state):
            elections = [action.replica for action in model.actions(state) if action.name == "ControllerElectLeader"]
            assert all(controller.last_known_elr == 1 << replica for replica in elections), (elections, controller)
            contested += any(replica.status == UP and controller.last_known_elr != 1 << r
                             for r, replica in enumerate(state.replicas))
    assert contested


def test_recoverability_on_the_command_line_decides_both_goals(capsys):
    config = ("--protocol", "kip-966", "--replicas", "2", "--messages", "1", "--crashes", "2", "--elections", "2",
              "--min-isr", "2", "--recoverability", "--quiet")
    code, out, _ = run_cli(capsys, "check", *config, "--format", "json")
    goals = {goal["property"]: goal for goal in json.loads(out)["goals"]}
    assert code == exitcodes.OK and goals["LiveReplicasAgree"]["holds"] and goals["LeaderAgain"]["holds"]
    code, out, _ = run_cli(capsys, "check", *config)
    assert code == exitcodes.OK and "LeaderAgain (recoverability)" in out
