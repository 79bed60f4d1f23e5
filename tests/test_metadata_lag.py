"""A KRaft leader that reads the controller's own ISR changes late (`Config.metadata_lag`): what it works
with meanwhile, what it may propose, when it catches up, what Z3 finds and proves of it, and where it is
refused by name."""

import json
from pathlib import Path

import pytest
import z3

from kafka_mc import exitcodes
from kafka_mc.checker.bfs import check
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.checker.symbolic.induction import prove
from kafka_mc.checker.symbolic.layout import SymState
from kafka_mc.checker.tla_twins import tlc_config_text
from kafka_mc.cli import main
from kafka_mc.model import Config, ConfigError, ReplicationModel, parse_action
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.model.state import NO_LEADER
from kafka_mc.model.values import state_values

A, B = 0, 1
EXAMPLES = Path(__file__).parent / "examples"
LAGGING = Config("kip-966", messages=1, crashes=1, elections=1, min_isr=2, metadata_lag=True)


def run(m: ReplicationModel, *steps: str):
    """From the initial state with A leading, apply each step; fail on a disabled one."""
    state = m.initial_states()[A]
    for step in steps:
        state = m.next_state(state, parse_action(step, m.action_names, m.config.replicas))
        assert state is not None, f"{step} is not enabled"
    return state


def enabled(m: ReplicationModel, state, step: str) -> bool:
    return m.next_state(state, parse_action(step, m.action_names, m.config.replicas)) is not None


def test_the_leader_works_with_the_isr_it_knew_until_it_reads_the_controllers_removal():
    """B fails and the controller fences it out of the ISR. Without the lag the leader knows at once and refuses
    an acks=all write below min.insync.replicas; with it the leader still counts B, takes the write, and refuses
    only once it has read the change (`Partition.makeLeader` at the newer partition epoch)."""
    steps = ("ReplicaCrash(B)", "ControllerNoticeFailure(B)")
    at_once = ReplicationModel(Config("kip-966", messages=1, crashes=1, elections=1, min_isr=2))
    assert not enabled(at_once, run(at_once, *steps), "ProducerWrite(A)")
    assert "LeaderApplyMetadata" not in at_once.action_names
    lagging = ReplicationModel(LAGGING)
    state = run(lagging, *steps)
    assert (state.controller.isr, state.controller.elr, state.controller.unseen) == (1 << A, 1 << B, 1 << B)
    assert enabled(lagging, state, "ProducerWrite(A)")
    caught_up = run(lagging, *steps, "LeaderApplyMetadata(A)")
    assert (caught_up.controller.isr, caught_up.controller.unseen) == (1 << A, 0)
    assert not enabled(lagging, caught_up, "ProducerWrite(A)") and not enabled(lagging, caught_up,
                                                                               "LeaderApplyMetadata(A)")


def test_a_shrink_at_an_older_partition_epoch_is_refused_and_stays_pending():
    """The leader's shrink of B, made before it read the controller's change, is at an older partition epoch:
    refused (INVALID_UPDATE_VERSION), it stays pending (a proposal of the leader itself, whose maximal ISR is the
    ISR it knew) and blocks further ISR changes until the leader reads the metadata, which drops it."""
    lagging = ReplicationModel(LAGGING)
    state = run(lagging, "ReplicaCrash(B)", "ControllerNoticeFailure(B)", "LeaderShrinkIsr(B)")
    assert (state.controller.isr, state.controller.proposal, state.controller.unseen) == (1 << A, 1 << A, 1 << B)
    assert not enabled(lagging, state, "LeaderShrinkIsr(B)")
    state = run(lagging, "ReplicaCrash(B)", "ControllerNoticeFailure(B)", "LeaderShrinkIsr(B)",
                "LeaderApplyMetadata(A)")
    assert (state.controller.isr, state.controller.proposal, state.controller.unseen) == (1 << A, 0, 0)


def test_a_new_leader_starts_from_the_controllers_isr():
    """A leader deposed while it had not read a removal takes that view with it; the next one starts from the
    controller's ISR (its LeaderAndIsr carries it)."""
    lagging = ReplicationModel(Config("kip-966", replicas=3, messages=0, crashes=2, elections=1, min_isr=2,
                                      metadata_lag=True))
    state = run(lagging, "ReplicaCrash(C)", "ControllerNoticeFailure(C)")
    assert state.controller.unseen == 0b100
    state = run(lagging, "ReplicaCrash(C)", "ControllerNoticeFailure(C)", "ReplicaCrash(A)",
                "ControllerNoticeFailure(A)")
    assert (state.controller.leader, state.controller.unseen) == (-1, 0)
    state = lagging.next_state(state, parse_action("ControllerElectLeader(B)", lagging.action_names, 3))
    assert state is not None and (state.controller.isr, state.controller.unseen) == (1 << B, 0)


def test_the_lag_adds_states_and_the_variants_loss_stays_as_long():
    """kip-966, one lossy shutdown of two unclean ones (`test_anchors`): the leader's lag reaches more states and
    loses m1 in as few steps, no fewer."""
    config = Config("kip-966", messages=1, crashes=2, elections=2, min_isr=2, disk_failures=1)
    at_once, lagging = check(config, keep_going=True), check(Config(**{**config.to_dict(), "metadata_lag": True}),
                                                             keep_going=True)
    assert (at_once.stats.distinct_states, lagging.stats.distinct_states) == (3170, 4454)
    lengths = {v.invariant: len(v.trace.actions) for v in lagging.violations}
    assert lengths == {v.invariant: len(v.trace.actions) for v in at_once.violations}
    assert lengths["NoCommittedDataLoss"] == 11
    # bounded model checking finds each at the same length (the Z3 encoding's agreement with the model on every
    # reachable state of lag configurations is tests/test_z3_engine.py's)
    bounded = bounded_check(lagging.config, 11, keep_going=True)
    assert {v.invariant: len(v.trace.actions) for v in bounded.violations} == lengths


def UnreadRemovalsLeftTheIsr(s: SymState):
    """A removal the leader has not read is out of the controller's ISR, and only a partition with a leader has
    one."""
    return z3.And([z3.Implies(unseen, z3.And(z3.Not(member), s.leader != NO_LEADER))
                   for unseen, member in zip(s.unseen, s.isr)])


def NoUnreadRemovals(s: SymState):
    """False: the leader reads every removal at once."""
    return z3.Not(z3.Or(s.unseen))


def test_prove_takes_the_lag_with_a_users_lemmas():
    """For any number of crashes and elections (the shipped lemmas do not cover kip-966, `tests/test_prove.py`)."""
    config = Config("kip-966", replicas=3, messages=1, min_isr=2, delays=1, metadata_lag=True)
    assert prove(config, [UnreadRemovalsLeftTheIsr], properties=()).status == "proved"
    failed = prove(config, [NoUnreadRemovals], properties=())
    assert failed.status == "failed" and failed.counterexample.lemma == "NoUnreadRemovals"
    assert failed.counterexample.action.name in ("ControllerNoticeFailure", "ReplicaRestart")


def test_the_prove_command_takes_the_lag_and_the_delays(capsys):
    """`kafka-mc prove --metadata-lag --delays N` with a user's lemma (`tests/examples/lag_lemmas.py`, docs/proofs.md)
    proves a user's property over the unread removals for any number of crashes and elections, and refutes the
    false one."""
    argv = ["prove", "--quiet", "--protocol", "kip-966", "--replicas", "3", "--messages", "1", "--min-isr", "2",
            "--delays", "1", "--metadata-lag", "--no-shipped-lemmas", "--lemmas", str(EXAMPLES / "lag_lemmas.py"),
            "--format", "json", "--bmc-depth", "0"]
    code = main([*argv, "--property", f"{EXAMPLES / 'lag_properties.py'}:unread_removals_left_the_isr"])
    proof = json.loads(capsys.readouterr().out)
    assert code == exitcodes.OK and proof["status"] == "proved"
    assert proof["config"]["metadata_lag"] is True and proof["config"]["delays"] == 1
    code = main([*argv, "--property", f"{EXAMPLES / 'lag_properties.py'}:no_unread_removals"])
    proof = json.loads(capsys.readouterr().out)
    assert code == exitcodes.FAILED and proof["status"] == "failed"
    code = main(["prove", "--quiet", "--protocol", "kip-320", "--metadata-lag"])
    assert code == exitcodes.BAD_INPUT and "not a KRaft variant" in capsys.readouterr().err


def test_only_a_kraft_variant_has_the_lag():
    with pytest.raises(ConfigError, match=r"metadata_lag: protocol 'kip-320' is not a KRaft variant.*KRaft "
                                          r"variants: kip-966"):
        Config("kip-320", metadata_lag=True)
    with pytest.raises(ConfigError, match="metadata_lag must be true or false, not 1"):
        Config("kip-966", metadata_lag=1)
    with pytest.raises(ConfigError, match="^metadata_lag: the epoch bump's LeaderAndIsr"):
        EpochBumpModel(LAGGING)
    assert "MetadataLag = TRUE" in tlc_config_text(LAGGING)  # the twin has it (tests/test_tla_twin.py)


def test_the_reports_show_what_the_leader_has_not_read():
    state = run(ReplicationModel(LAGGING), "ReplicaCrash(B)", "ControllerNoticeFailure(B)", "LeaderShrinkIsr(B)")
    values = state_values(state, elr=True, metadata_lag=True)
    assert values["unseenRemovals"] == {"B"} and values["alterPartition"].adds == {"A"}
    assert "unseenRemovals" not in state_values(state, elr=True)


def test_the_command_line_takes_metadata_lag_where_it_applies(capsys):
    argv = ["check", "--protocol", "kip-966", "--messages", "1", "--crashes", "1", "--elections", "1",
            "--min-isr", "2", "--quiet", "--format", "json", "--keep-going"]
    code = main([*argv, "--metadata-lag"])
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == exitcodes.OK and summary["config"]["metadata_lag"] is True
    assert summary["distinct_states"] == check(LAGGING).stats.distinct_states
    code = main(["check", "--protocol", "kip-320", "--metadata-lag", "--quiet"])
    _, err = capsys.readouterr()
    assert code == exitcodes.BAD_INPUT and "metadata_lag: protocol 'kip-320' is not a KRaft variant" in err
    code = main([*argv, "--metadata-lag", "--engine", "z3", "--depth", "2"])
    out, _ = capsys.readouterr()
    summary = json.loads(out)
    assert code == exitcodes.OK and summary["engine"] == "z3" and summary["config"]["metadata_lag"] is True
    assert summary["bounded_to"] == 2 and not summary["complete"]
