"""Unit tests per event: enabling conditions and effects on small hand-built states."""

import pickle
import subprocess
import sys

import pytest

from kafka_mc.model import Action, Config, ConfigError, ReplicationModel, fingerprint
from kafka_mc.model.config import upgraded_settings
from kafka_mc.model.protocols import end_offset_for
from kafka_mc.model.state import (
    CRASHED, FOLLOWER, LEADER, NO_LEADER, NO_ROLE, OFFLINE, TRUNCATING, UNKNOWN, UP, Record,
)

A, B, C = 0, 1, 2


def model(**options) -> ReplicationModel:
    return ReplicationModel(Config(**options))


def run(m: ReplicationModel, leader: int, *steps: str):
    """Apply `Name(R)` steps from the initial state with `leader` leading; fail on a disabled step."""
    from kafka_mc.model import parse_action

    state = m.initial_states()[leader]
    for step in steps:
        following = m.next_state(state, parse_action(step, m.action_names, m.config.replicas))
        assert following is not None, f"{step} is not enabled"
        state = following
    return state


def enabled(m, state, step: str) -> bool:
    from kafka_mc.model import parse_action

    return m.next_state(state, parse_action(step, m.action_names, m.config.replicas)) is not None


def logs(state):
    return [[r.msg for r in replica.log] for replica in state.replicas]


def test_initial_states_one_per_leader():
    states = model(replicas=3).initial_states()
    assert [s.controller.leader for s in states] == [A, B, C]
    assert all(s.controller.isr == 0b111 and s.controller.epoch == 0 for s in states)
    assert states[0].replicas[A].role == LEADER and states[0].replicas[B].role == FOLLOWER


def test_producer_write_appends_with_epoch_and_counts():
    m = model(messages=2)
    state = run(m, A, "ProducerWrite(A)")
    assert state.replicas[A].log == (Record(1, 0),) and state.written == 1
    assert not enabled(m, state, "ProducerWrite(B)")  # only the leader takes writes
    state = run(m, A, "ProducerWrite(A)", "ProducerWrite(A)")
    assert not enabled(m, state, "ProducerWrite(A)")  # message bound


def test_acks_all_refused_below_min_isr_but_acks_1_accepted():
    strict = model(min_isr=2, acks="all")
    shrunk = run(strict, A, "LeaderShrinkIsr(B)")
    assert not enabled(strict, shrunk, "ProducerWrite(A)")
    relaxed = model(min_isr=2, acks="1")
    assert enabled(relaxed, run(relaxed, A, "LeaderShrinkIsr(B)"), "ProducerWrite(A)")


def test_acks_all_acknowledged_only_by_the_leader_that_took_the_write():
    m = model(replicas=3, crashes=1, elections=1)
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "LeaderHandleFetchRequest(C)", "FollowerHandleFetchResponse(C)", "LeaderHandleFetchRequest(B)",
                "LeaderHandleFetchRequest(C)")
    assert state.replicas[A].hw == 1 and state.acked == 0b10  # A's HW passed m1 in A's epoch
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "ReplicaCrash(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)",
                "BecomeFollower(C)", "LeaderHandleFetchRequest(C)", "FollowerHandleFetchResponse(C)",
                "LeaderHandleFetchRequest(C)")
    # B's HW passes m1, but A's producer request died with A: m1 is committed, never acknowledged
    assert state.replicas[B].hw == 1 and state.committed == ((0, 1),) and state.acked == 0


def test_fetch_request_records_follower_leo_and_advances_hw():
    m = model()
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)")
    leader, follower = state.replicas[A], state.replicas[B]
    assert leader.remote_leos[B] == 0 and leader.hw == 0
    assert follower.response.records == (Record(1, 0),) and follower.response.hw == 0
    assert not enabled(m, state, "LeaderHandleFetchRequest(B)")  # one fetch in flight
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "LeaderHandleFetchRequest(B)")
    assert state.replicas[A].hw == 1 and state.committed == ((0, 1),)
    assert state.replicas[B].hw == 0  # the follower learns the HW one round trip later
    state = m.next_state(state, Action("FollowerHandleFetchResponse", B))
    assert state.replicas[B].hw == 1


def test_fetch_beyond_leader_leo_gets_out_of_range_and_truncates_to_leader_leo():
    m = model(protocol="hw", messages=2, crashes=2, elections=1)
    state = run(m, B, "ProducerWrite(B)", "ProducerWrite(B)", "LeaderHandleFetchRequest(A)",
                "FollowerHandleFetchResponse(A)", "LeaderHandleFetchRequest(A)",  # B's HW is 2, A's 0
                "ReplicaCrash(A)", "ReplicaRestart(A)", "BecomeFollower(A)",  # A truncates to 0
                "ReplicaCrash(B)", "ControllerNoticeFailure(B)", "ControllerElectLeader(A)",
                "ReplicaRestart(B)", "BecomeFollower(B)", "LeaderHandleFetchRequest(B)")
    assert logs(state) == [[], [1, 2]]
    assert state.replicas[B].response.out_of_range and state.replicas[B].response.offset == 0
    assert state.replicas[A].remote_leos[B] == UNKNOWN  # an error response records no LEO
    state = m.next_state(state, Action("FollowerHandleFetchResponse", B))
    assert logs(state) == [[], []] and state.replicas[B].hw == 0


def test_before_kafka_7152_the_leader_may_drop_a_caught_up_follower():
    """`Partition.getOutOfSyncReplicas` to 2.0.1: a follower at the leader's LEO that stopped fetching
    is dropped once the lag time passes (`isr_shrink = 'lag-time'`); from 2.1.0 it stays."""
    for protocol, drops in (("hw", True), ("leader-epoch", True), ("kip-279", True), ("kip-320", False)):
        m = model(protocol=protocol)
        state = run(m, A, "LeaderHandleFetchRequest(B)")  # B caught up with A's LEO, 0
        assert enabled(m, state, "LeaderShrinkIsr(B)") is drops, protocol


def test_shrink_only_lagging_followers_and_rejoin_on_fetch_at_hw():
    m = model(protocol="kip-320")
    state = m.initial_states()[A]
    assert enabled(m, state, "LeaderShrinkIsr(B)")  # never fetched: its LEO is unknown to A
    state = run(m, A, "LeaderHandleFetchRequest(B)")
    assert not enabled(m, state, "LeaderShrinkIsr(B)")  # caught up with A's LEO
    state = run(m, A, "ProducerWrite(A)", "LeaderShrinkIsr(B)")
    assert state.controller.isr == 1 << A and state.replicas[A].hw == 1  # HW follows the smaller ISR
    state = m.next_state(state, Action("LeaderHandleFetchRequest", B))
    assert state.controller.isr == 1 << A  # fetch offset 0 is below A's HW, 1
    state = m.next_state(state, Action("FollowerHandleFetchResponse", B))
    state = m.next_state(state, Action("LeaderHandleFetchRequest", B))
    assert state.controller.isr == 0b11  # fetch offset 1 reached the HW: B rejoins as A handles it


def test_a_crashed_follower_never_rejoins_on_a_stale_view():
    m = model(crashes=1)
    # A saw B at offset 1 = its HW before B crashed; the controller then removed B.
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "LeaderHandleFetchRequest(B)", "ReplicaCrash(B)", "ControllerNoticeFailure(B)")
    assert state.replicas[A].remote_leos[B] == 1 and state.controller.isr == 1 << A
    assert not any(following.controller.isr >> B & 1 for _, following in m.successors(state))


def test_crash_keeps_durable_state_and_loses_memory():
    m = model()
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "ReplicaCrash(B)")
    crashed = state.replicas[B]
    assert crashed.status == CRASHED and crashed.role == NO_ROLE and crashed.epoch == UNKNOWN
    assert crashed.response == () and state.crashes == 1
    state = run(m, A, "ProducerWrite(A)", "ReplicaCrash(A)")
    assert state.replicas[A].log == (Record(1, 0),) and state.replicas[A].remote_leos == ()
    assert state.controller.leader == A  # the controller has not noticed yet


def test_restart_before_notice_keeps_isr_membership():
    m = model()
    state = run(m, A, "ReplicaCrash(B)", "ReplicaRestart(B)")
    assert state.replicas[B].status == UP and state.controller.isr == 0b11
    assert not enabled(m, state, "LeaderHandleFetchRequest(B)")  # needs a LeaderAndIsr first
    state = m.next_state(state, Action("BecomeFollower", B))
    assert enabled(m, state, "LeaderHandleFetchRequest(B)")


def test_crashed_leader_restarts_only_after_notice():
    m = model()
    state = run(m, A, "ReplicaCrash(A)")
    assert not enabled(m, state, "ReplicaRestart(A)")
    state = m.next_state(state, Action("ControllerNoticeFailure", A))
    assert state.controller.leader == NO_LEADER and state.controller.isr == 1 << B
    assert state.replicas[A].status == OFFLINE and enabled(m, state, "ReplicaRestart(A)")


def test_notice_keeps_last_isr_member():
    m = model()
    state = run(m, A, "LeaderShrinkIsr(B)", "ReplicaCrash(A)", "ControllerNoticeFailure(A)")
    assert state.controller.isr == 1 << A and state.controller.leader == NO_LEADER


def test_clean_election_from_live_isr_and_unclean_when_enabled():
    clean = model()
    state = run(clean, A, "LeaderShrinkIsr(B)", "ReplicaCrash(A)", "ControllerNoticeFailure(A)")
    assert not enabled(clean, state, "ControllerElectLeader(B)")  # B is out of the ISR
    unclean = model(unclean=True)
    state = run(unclean, A, "LeaderShrinkIsr(B)", "ReplicaCrash(A)", "ControllerNoticeFailure(A)",
                "ControllerElectLeader(B)")
    assert (state.controller.leader, state.controller.epoch, state.controller.isr) == (B, 1, 1 << B)
    assert state.replicas[B].role == LEADER


def test_election_bound_and_epoch_increment():
    m = model(elections=1)
    state = run(m, A, "ReplicaCrash(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)")
    assert state.controller.epoch == 1 and state.replicas[B].epoch == 1
    assert state.replicas[B].remote_leos == (UNKNOWN, UNKNOWN)
    state = run(m, A, "ReplicaCrash(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)",
                "ReplicaCrash(B)", "ControllerNoticeFailure(B)", "ReplicaRestart(B)")
    assert not enabled(m, state, "ControllerElectLeader(B)")


def test_hw_protocol_truncates_to_hw_on_become_follower():
    m = model(protocol="hw")
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "ReplicaCrash(B)", "ReplicaRestart(B)")
    assert state.replicas[B].leo == 1 and state.replicas[B].hw == 0
    state = m.next_state(state, Action("BecomeFollower", B))
    assert state.replicas[B].leo == 0 and state.replicas[B].role == FOLLOWER
    assert "FollowerTruncateByLeaderEpoch" not in m.action_names


def test_leader_epoch_protocol_asks_before_fetching():
    m = model(protocol="leader-epoch")
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "ReplicaCrash(B)", "ReplicaRestart(B)", "BecomeFollower(B)")
    assert state.replicas[B].role == TRUNCATING and state.replicas[B].leo == 1
    assert not enabled(m, state, "LeaderHandleFetchRequest(B)")
    state = m.next_state(state, Action("FollowerTruncateByLeaderEpoch", B))
    assert state.replicas[B].leo == 1 and state.replicas[B].role == FOLLOWER  # LE0 ends at A's LEO, 1
    assert state.replicas[A].epochs == ((0, 0),) and state.replicas[B].epochs == ((0, 0),)


def test_new_leader_caches_its_epoch_at_election_from_kafka_7415_on():
    steps = ("ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
             "ReplicaCrash(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(B)")
    state = run(model(protocol="kip-320"), A, *steps)
    assert state.replicas[B].epochs == ((0, 0), (1, 1))  # Partition.makeLeader, 2.0.1
    state = run(model(protocol="leader-epoch"), A, *steps)
    assert state.replicas[B].epochs == ((0, 0),)  # 0.11.0: only Log.append assigns an epoch
    state = run(model(protocol="leader-epoch"), A, *steps, "ProducerWrite(B)")
    assert state.replicas[B].epochs == ((0, 0), (1, 1))


def test_end_offset_for_matches_leader_epoch_file_cache():
    m = model(protocol="leader-epoch")
    leader = m.initial_states()[A].replicas[A]._replace(
        log=(Record(1, 0), Record(2, 2)), epochs=((0, 0), (2, 1), (3, 2)))
    assert end_offset_for(leader, 3, False) == 2  # the latest epoch: the LEO
    assert end_offset_for(leader, 2, False) == 2  # where epoch 2 ended: the start of epoch 3
    assert end_offset_for(leader, 0, False) == 1  # epoch 1 is not cached: the start of the next, epoch 2
    assert end_offset_for(leader, UNKNOWN, False) == UNKNOWN
    assert end_offset_for(leader, 4, False) == UNKNOWN  # newer than the cache
    assert end_offset_for(leader._replace(epochs=((2, 0),)), 1, False) == UNKNOWN  # older than the cache
    assert end_offset_for(leader._replace(epochs=((2, 0), (3, 1))), 1, True) == 0  # KAFKA-7415: the first start


def test_states_pickle_and_fingerprint_stably_across_processes():
    m = model(protocol="leader-epoch")
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)")
    assert pickle.loads(pickle.dumps(state)) == state
    code = ("from kafka_mc.model import *; m=ReplicationModel(Config(protocol='leader-epoch'));"
            "s=m.initial_states()[0]; s=m.next_state(s, Action('ProducerWrite',0));"
            "s=m.next_state(s, Action('LeaderHandleFetchRequest',1)); print(fingerprint(s))")
    prints = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout.strip() for seed in ("1", "2")}
    assert prints == {str(fingerprint(state))}


def test_successor_order_is_deterministic():
    m = model(replicas=3)
    state = m.initial_states()[B]
    assert m.actions(state) == m.actions(state)
    assert [str(a) for a in m.actions(state)][:2] == ["ProducerWrite(B)", "LeaderHandleFetchRequest(A)"]


@pytest.mark.parametrize("options, message", [
    ({"protocol": "raft"}, "protocol 'raft' is unknown; allowed: hw, leader-epoch, kip-279"),
    ({"replicas": 1}, "replicas must be an integer from 2 to 5, not 1"),
    ({"replicas": 6}, "replicas must be an integer from 2 to 5, not 6"),
    ({"messages": -1}, "messages must be an integer from 0 to 9"),
    ({"crashes": 10}, "crashes must be an integer from 0 to 9"),
    ({"elections": "2"}, "elections must be an integer"),
    ({"acks": "2"}, "acks '2' is not supported; allowed: all, 1, 0"),
    ({"flush": "no"}, "flush must be true or false, not 'no'"),
    ({"partitions": -1}, "partitions must be an integer from 0 to 9, not -1"),
    ({"min_isr": 3}, "min_isr must be an integer from 1 to 2, not 3"),
    ({"unclean": "yes"}, "unclean must be true or false"),
])
def test_config_rejects_bad_values(options, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Config(**options)


def test_a_replaced_disk_comes_back_empty_and_counts_as_a_crash():
    m = model(protocol="kafka-14704", messages=1, crashes=1, elections=1, disk_failures=1)
    state = run(m, A, "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "ReplicaDiskFailure(B)")
    replica = state.replicas[B]
    assert (replica.log, replica.hw, replica.epochs, replica.status, state.crashes) == ((), 0, (), CRASHED, 1)
    assert not enabled(m, state, "ReplicaCrash(A)")  # the crash bound is shared
    assert "ReplicaDiskFailure" not in model(protocol="kafka-14704").action_names  # only with disk_failures


def test_disk_failures_are_bounded_apart_from_the_crashes():
    """`disk_failures` below `crashes`: the state counts them, and once they are spent a broker can still
    crash, but keeps its disk. At `crashes` (any crash may lose its disk) the count stays 0."""
    m = model(protocol="kafka-14704", messages=1, crashes=2, elections=1, disk_failures=1)
    state = run(m, A, "ProducerWrite(A)", "ReplicaDiskFailure(B)", "ControllerNoticeFailure(B)", "ReplicaRestart(B)")
    assert (state.crashes, state.disk_failures) == (1, 1)
    assert not enabled(m, state, "ReplicaDiskFailure(A)") and enabled(m, state, "ReplicaCrash(A)")
    every = model(protocol="kafka-14704", messages=1, crashes=2, elections=1, disk_failures=2)
    state = run(every, A, "ProducerWrite(A)", "ReplicaDiskFailure(B)", "ControllerNoticeFailure(B)",
                "ReplicaRestart(B)")
    assert (state.crashes, state.disk_failures) == (1, 0) and enabled(every, state, "ReplicaDiskFailure(A)")


def test_disk_failures_beyond_the_crashes_are_refused_and_the_earlier_form_reads_as_today():
    with pytest.raises(ConfigError, match=r"disk_failures 2: each disk failure is one of the crashes, so it may be "
                                          r"at most crashes \(1\)"):
        Config(crashes=1, disk_failures=2)
    assert upgraded_settings({"crashes": 1, "replaced_disks": True}) == {"crashes": 1, "disk_failures": 1}
    assert upgraded_settings({"replaced_disks": False}) == {"disk_failures": 0}
    assert upgraded_settings({"replaced_disks": True}) == {"disk_failures": Config.crashes}
    with pytest.raises(ConfigError, match="replaced_disks and disk_failures given together"):
        upgraded_settings({"replaced_disks": True, "disk_failures": 1})
    with pytest.raises(ConfigError, match="replaced_disks must be true or false, not 'yes'"):
        upgraded_settings({"replaced_disks": "yes"})


def test_the_last_isr_member_elected_again_on_a_replaced_disk_loses_the_committed_record():
    """A leader alone in its ISR commits m1, loses its disk and, the last member of the ISR, is
    elected again: a clean election (KIP-966's eligible leader replicas address it)."""
    from kafka_mc.checker import check

    config = Config("kafka-14704", messages=1, crashes=1, elections=1, disk_failures=1)
    state = run(ReplicationModel(config), A, "ProducerWrite(A)", "LeaderShrinkIsr(B)", "ReplicaDiskFailure(A)",
                "ControllerNoticeFailure(A)", "ReplicaRestart(A)", "ControllerElectLeader(A)")
    assert state.committed == ((0, 1),) and state.replicas[A].log == () and state.controller.leader == A
    found = {v.invariant: len(v.trace) for v in check(config, keep_going=True).violations}
    assert found["NoCommittedDataLoss"] == 6
    assert not check(Config("kafka-14704", messages=1, crashes=1, elections=1), keep_going=True).violations
