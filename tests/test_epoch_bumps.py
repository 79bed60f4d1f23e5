"""The controller's epoch bump on ISR removal (`model/epoch_bumps.py`): each rule on a hand-made
trace, read at the release tags, and what leaving the bump out changes on small configurations
(`benchmarks/epoch_bumps.py` runs the history table's)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from kafka_mc import exitcodes

from kafka_mc.checker import check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.checker.kernel.batch import KernelEncoding
from kafka_mc.checker.scenario import load_scenario, replay
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.checker.symbolic.registry import NoEncoding
from kafka_mc.checker.tla_twins import twin_of
from kafka_mc.cli import main
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model import Config, ConfigError, register_protocol
from kafka_mc.model.actions import parse_action
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.model.protocols import FOLLOWERS_TAKE_BUMP, NO_BUMP, PROTOCOLS, unregister_protocol
from kafka_mc.model.state import FOLLOWER, LEADER, TRUNCATING
from kafka_mc.properties import INVARIANTS, PROPERTIES
from kafka_mc.properties.user import user_property
from kafka_mc.testing import check_conformance


def run(model: EpochBumpModel, *steps: str):
    """The state after `steps` from the initial state in which A leads."""
    state = model.initial_states()[0]
    for text in steps:
        following = model.next_state(state, parse_action(text, model.action_names, model.config.replicas))
        assert following is not None, f"{text} is not enabled"
        state = following
    return state


# C catches up, then dies; the controller notices and removes it from A's ISR
C_DIES = ("LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)", "LeaderHandleFetchRequest(C)",
          "FollowerHandleFetchResponse(C)", "ReplicaCrash(C)", "ControllerNoticeFailure(C)")


def test_removing_a_dead_follower_bumps_the_epoch_and_the_leader_takes_it():
    model = EpochBumpModel(Config("kip-320", 3, 2, 2, 1))
    before = run(model, *C_DIES[:-1])
    after = run(model, *C_DIES)
    assert (after.controller.leader, after.controller.epoch, after.controller.isr) == (0, 1, 0b011)
    leader = after.replicas[0]
    assert leader.role == LEADER and leader.epoch == 1
    assert leader.remote_leos == before.replicas[0].remote_leos  # not a new leader: its view is kept
    assert leader.epochs[-1] == (1, leader.leo)  # 2.0.1 on (KAFKA-7415): cached at once
    # the bump is not an election: the one election allowed is still there
    assert model.next_state(after, parse_action("ReplicaCrash(A)", model.action_names, 3)) is not None
    elected = run(model, *C_DIES, "ReplicaCrash(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)")
    assert (elected.controller.leader, elected.controller.epoch) == (1, 2)
    # without the bump, the same steps leave the epoch alone
    assert run(ReplicationSystem(Config("kip-320", 3, 2, 1, 1)).transitions, *C_DIES).controller.epoch == 0


def test_before_kafka_7415_the_bumped_epoch_enters_the_cache_with_the_next_append():
    model = EpochBumpModel(Config("leader-epoch", 3, 2, 1, 1))
    state = run(model, *C_DIES)
    assert state.replicas[0].epochs == ()
    state = run(model, *C_DIES, "ProducerWrite(A)")
    assert state.replicas[0].epochs == ((1, 0),) and state.replicas[0].log[0].epoch == 1


@pytest.mark.parametrize("protocol, role", [("hw", FOLLOWER), ("leader-epoch", FOLLOWER), ("kip-279", FOLLOWER),
                                            ("kip-320", TRUNCATING), ("kafka-13141", FOLLOWER)])
def test_a_follower_of_the_same_leader_skips_the_bump_up_to_2_0(protocol, role):
    """`Partition.makeFollower` returns false for the leader it follows up to 2.0.0, for the same
    epoch only from 2.1.0: then it truncates again (by OffsetsForLeaderEpoch; from 2.8 on the
    fetch itself, with an epoch cache, so the role stays a follower)."""
    model = EpochBumpModel(Config(protocol, 3, 2, 1, 1))
    state = run(model, "ProducerWrite(A)", *C_DIES, "BecomeFollower(B)")
    follower = state.replicas[1]
    assert follower.epoch == 1 and follower.role == role
    assert follower.log == state.replicas[0].log  # nothing truncated


def test_a_fetch_from_the_older_epoch_reaches_the_leader_up_to_2_0_and_is_fenced_from_2_1():
    """KIP-320 (2.1): fetches carry the follower's epoch and the leader fences an older one."""
    for protocol, reaches in (("kip-279", True), ("kip-320", False)):
        model = EpochBumpModel(Config(protocol, 3, 2, 1, 1))
        state = run(model, *C_DIES, "ProducerWrite(A)")
        fetch = model.next_state(state, parse_action("LeaderHandleFetchRequest(B)", model.action_names, 3))
        assert (fetch is not None) == reaches, protocol


def test_a_leader_cut_off_from_zookeeper_takes_the_bump_when_it_reconnects():
    """Meanwhile it still leads in the older epoch: up to 2.0 a follower that took the newer epoch
    still reaches it (its requests carry no epoch); from 2.1 it is fenced until the leader catches up."""
    cut = ("ZkDisconnect(A)", "ReplicaCrash(C)", "ControllerNoticeFailure(C)", "BecomeFollower(B)")
    for protocol, follower_acts in (("kip-279", "LeaderHandleFetchRequest(B)"),
                                    ("kip-320", "FollowerTruncateByLeaderEpoch(B)")):
        model = EpochBumpModel(Config(protocol, 3, 1, 1, 1, partitions=1))
        state = run(model, *cut)
        assert (state.controller.epoch, state.replicas[0].epoch, state.replicas[1].epoch) == (1, 0, 1)
        assert model._current_leader(state) == 0  # A still leads, in the older epoch
        acts = parse_action(follower_acts, model.action_names, 3)
        assert (model.next_state(state, acts) is not None) == (protocol == "kip-279"), protocol
        state = run(model, *cut, "ZkReconnect(A)")
        assert state.replicas[0].epoch == 1 and model.next_state(state, acts) is not None


def test_the_purgatory_survives_the_bump():
    """A write taken before the bump is acknowledged when the HW passes it after the bump: the
    leader stays the leader (Kafka's delayed produce is not completed by its makeLeader)."""
    model = EpochBumpModel(Config("kip-279", 3, 1, 1, 1))
    bumped = (*C_DIES[:4], "ProducerWrite(A)", *C_DIES[4:])
    state = run(model, *bumped)
    assert state.replicas[0].epoch == 1 and state.replicas[0].log[0].epoch == 0 and not state.acked
    state = run(model, *bumped, "BecomeFollower(B)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "LeaderHandleFetchRequest(B)")
    assert state.replicas[0].hw == 1 and state.acked == 0b10


def test_a_users_variant_runs_with_the_bump_its_declaration_chooses():
    """The bump is a protocol choice (`isr_removal_bump`), so a user's variant runs it as declared:
    a copy of `kip-320` reaches kip-320's states on the model, the kernel and Z3's encoding alike, and
    the same copy declaring no bump (the KRaft controller from 3.6) reaches the replication model's."""
    config, DEPTH = Config("kip-320", 2, 1, 1, 1, flush=False), 8  # loses m1 in 6 steps
    bumped, plain = check(EpochBumpSystem(config)).stats, check(config).stats
    assert bumped.distinct_states > plain.distinct_states
    for bump, expected in ((FOLLOWERS_TAKE_BUMP, bumped), (NO_BUMP, plain)):
        register_protocol(replace(PROTOCOLS["kip-320"], name="bump-test-variant", isr_removal_bump=bump))
        try:
            copy = replace(config, protocol="bump-test-variant")
            for result in (check(EpochBumpSystem(copy)), kernel_check(EpochBumpSystem(copy))):
                assert (result.stats.distinct_states, result.stats.states_generated) == \
                    (expected.distinct_states, expected.states_generated), bump
            states = [p for p in INVARIANTS if not p.on_step]  # what Z3 encodes
            explicit = {v.invariant: len(v.trace)
                        for v in check(EpochBumpSystem(copy, states), keep_going=True).violations}
            symbolic = bounded_check(EpochBumpSystem(copy, states), depth=DEPTH, keep_going=True)
            assert {v.invariant: len(v.trace) for v in symbolic.violations} == \
                {name: length for name, length in explicit.items() if length <= DEPTH} != {}
        finally:
            unregister_protocol("bump-test-variant")  # the other tests see the shipped variants only
    with pytest.raises(ValueError, match="does not model the setting partitions=1"):
        twin_of(EpochBumpSystem(Config("kip-320", 2, 2, 2, 1, partitions=1)))
    with pytest.raises(ConfigError, match="elections \\+ crashes \\+ network failures must be at most 9, not 10"):
        EpochBumpModel(Config("kip-320", 3, 2, 5, 5))


# every rule of the bump: with 3 replicas a follower skips or truncates, fetches reach or are fenced,
# a write waits across the bump; with 2, the hw and diverging-epoch variants' own rules, and a leader
# cut off from ZooKeeper that takes the bump late
BUMP_CONFORMANCE = [Config("leader-epoch", 3, 1, 1, 1), Config("kip-320", 3, 1, 1, 1), Config("hw", 2, 2, 2, 1),
                    Config("diverging-epoch", 2, 2, 2, 1), Config("kip-279", 2, 2, 1, 0, partitions=1),
                    Config("kip-320", 2, 1, 1, 0, partitions=1),
                    # the bump beside the HW held below min.insync.replicas and KIP-841 (ZooKeeper mode, 3.7: with two
                    # replicas the bump is taken, lost, followed by an election and crossed by an acknowledged write,
                    # 4,866 states; three replicas, 67,248, add only the fenced fetch of kip-320 3,1,1,1), and KRaft's
                    # controller, which does not bump (`isr_removal_bump`)
                    Config("kafka-15583", 2, 1, 2, 1, min_isr=2, flush=False), Config("kip-966", 2, 2, 2, 1)]


def test_the_kernel_with_the_bump_conforms_to_the_model_on_every_reachable_state():
    report = check_conformance(KernelEncoding(bumps=True), BUMP_CONFORMANCE, require_coverage=False,
                               transitions=EpochBumpModel)
    assert report.states > 60_000 and not report.mismatches, report.mismatches[:3]


def test_the_kernel_finds_what_the_python_engine_finds_with_the_bump():
    """Symmetry, a lowered user's property and traces replayed by the bump model."""
    config = Config("hw", 3, 1, 2, 1)
    wanted = (*PROPERTIES, user_property(leader_is_in_its_isr, "LeaderInIsr"))
    python = check(EpochBumpSystem(config, wanted), keep_going=True)
    kernel = kernel_check(EpochBumpSystem(config, wanted), keep_going=True, symmetry=True)
    assert {v.invariant: len(v.trace) for v in kernel.violations} == \
        {v.invariant: len(v.trace) for v in python.violations} != {}
    for violation in kernel.violations:
        assert violation.trace.model == EpochBumpSystem(config)
        violation.trace.states()  # replays under the bump model


def leader_is_in_its_isr(state) -> bool:
    leader = state.controller.leader
    return leader < 0 or state.controller.isr >> leader & 1 == 1


@pytest.mark.parametrize("protocol", ["hw", "leader-epoch", "kip-320", "diverging-epoch"])
def test_leaving_the_bump_out_changes_no_verdict_and_no_shortest_length_on_two_replicas(protocol):
    """The history table's first configuration (2 replicas, 2 messages, 2 crashes, 2 elections);
    the bump is reached (more states), and every invariant's verdict and shortest length agree."""
    config = Config(protocol, 2, 2, 2, 2)
    without, bumped = check(config, keep_going=True), check(EpochBumpSystem(config), keep_going=True)
    assert without.complete and bumped.complete
    assert bumped.stats.distinct_states > without.stats.distinct_states
    assert {v.invariant: len(v.trace) for v in bumped.violations} == \
        {v.invariant: len(v.trace) for v in without.violations}


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_check_epoch_bumps_on_the_command_line(capsys):
    """`kafka-mc check --epoch-bumps`: the kernel (with symmetry) and the python engine run the bump
    model and say so, Z3 finds the same shortest loss, --write-tla writes the bump twin (Spark:
    tests/test_spark.py); what does not model the bump is refused by name, with a bad-input exit."""
    argv = ("check", "--epoch-bumps", "--protocol", "hw", "--replicas", "3", "--messages", "1", "--crashes", "2",
            "--quiet", "--format", "json")
    for engine in (("--engine", "kernel", "--symmetry"), ("--engine", "python")):
        code, out, _ = run_cli(capsys, *argv, *engine)
        result = json.loads(out)
        assert code == exitcodes.VIOLATION and result["model"] == "replication-epoch-bumps"
        assert result["violations"]
    small = ("check", "--epoch-bumps", "--protocol", "hw", "--messages", "1", "--crashes", "2", "--quiet", "--format",
             "json", "--keep-going")
    lengths = [{v["invariant"]: v["length"] for v in json.loads(run_cli(capsys, *small, *engine)[1])["violations"]}
               for engine in (("--engine", "python"), ("--engine", "z3", "--depth", "10"))]
    assert lengths[0] == lengths[1] != {}
    for refused, named in ((("--engine", "python", "--workers", "2"), "--workers"),
                           (("--crashes", "5", "--elections", "5"), "--crashes"),
                           (("--recoverability",), "--recoverability")):
        code, _, err = run_cli(capsys, "check", "--epoch-bumps", *refused)
        assert code == exitcodes.BAD_INPUT and named in err and "Traceback" not in err, err


def test_with_the_bump_back_to_back_elections_lose_m1_in_21_steps_before_kafka_7415():
    """`scenarios/findings/back-to-back-elections-epoch-bump-leader-epoch.toml`, the back-to-back-elections
    loss under 0.11.0 and 2.0.0 with one bump for an election (24 steps without the bump; the same-leader
    skip's loss, 19 steps, is the shortest in both models): its steps lose nothing in the model without
    the bump, where C's failure leaves the epoch alone."""
    scenario = load_scenario(Path(__file__).parent.parent / "scenarios" / "findings"
                             / "back-to-back-elections-epoch-bump-leader-epoch.toml")
    for protocol in ("leader-epoch", "kip-279"):
        config = replace(scenario.config, protocol=protocol)
        replayed = replay(replace(scenario, trace=replace(scenario.trace, model=EpochBumpSystem(config))))
        assert replayed.mismatches == [] and replayed.first_breaks == {
            "NoCommittedDataLoss": 21, "NoAckedDataLoss": 21, "NoConsumedRecordLost": 21}
    without = replace(scenario, trace=replace(scenario.trace, model=ReplicationSystem(scenario.config)))
    assert replay(without).first_breaks == {}
