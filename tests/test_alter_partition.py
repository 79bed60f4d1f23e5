"""Delayed AlterPartition requests (`Config.delays`, the `isr_updates` choice): the leader's ISR
expansion in flight to the controller, what the controller refuses in each release (KIP-841,
KIP-903), and KAFKA-14139, found by the checker where KIP-966 lacks KIP-903's broker epochs."""

from __future__ import annotations

import dataclasses
import runpy
from pathlib import Path

import pytest

from kafka_mc.checker import check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.checker.scenario import load_scenario, replay
from kafka_mc.checker.symbolic.agreement import shortest_lengths
from kafka_mc.checker.tla_twins import tlc_config_text
from kafka_mc.control.replication import model_of
from kafka_mc.counterexamples.reports import render_reports
from kafka_mc.model import PROTOCOLS, Config, ReplicationModel, parse_action, register_protocol
from kafka_mc.model.config import ConfigError
from kafka_mc.model.protocols import unregister_protocol

FINDINGS = Path(__file__).parent.parent / "scenarios" / "findings"
SCENARIO = FINDINGS / "stale-alter-partition-kip-966.toml"
# the docs' plugin of variants without a fix (docs/history.md, step 7), registered here per test only
WITHOUT_KIP_903 = runpy.run_path(str(FINDINGS / "without_fixes.py"))["WITHOUT_KIP_903"]
unregister_protocol("kip-966-without-kip-903")
unregister_protocol("kip-966-without-kafka-15221")


@pytest.fixture
def without_kip_903():
    register_protocol(WITHOUT_KIP_903)
    yield WITHOUT_KIP_903.name
    unregister_protocol(WITHOUT_KIP_903.name)


def run(config: Config, steps: list[str]):
    """The state after `steps` from the initial state led by A; AssertionError at a disabled step."""
    model = ReplicationModel(config)
    state = model.initial_states()[0]
    for text in steps:
        following = model.next_state(state, act(model, text))
        assert following is not None, f"{text} is not enabled"
        state = following
    return model, state


def act(model: ReplicationModel, text: str):
    return parse_action(text, model.action_names, model.config.replicas)


IN_FLIGHT = ["ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)", "LeaderShrinkIsr(B)",
             "LeaderSendAlterPartition(B)"]  # A leads the ISR {A} with m1 committed; adding B is in flight


def test_a_delay_needs_a_variant_whose_leader_sends_alter_partition():
    with pytest.raises(ConfigError) as refused:
        Config("kip-320", delays=1)
    assert refused.value.field == "delays"
    assert "writes the ISR to ZooKeeper itself" in str(refused.value) and "diverging-epoch" in str(refused.value)
    with pytest.raises(ConfigError, match="delays must be an integer from 0 to 9"):
        Config("kip-966", delays=10)
    assert "LeaderSendAlterPartition" not in ReplicationModel(Config("kip-966")).action_names


def test_the_request_in_flight_holds_the_hw_and_blocks_other_isr_changes():
    config = Config("kafka-13141", replicas=2, messages=2, crashes=1, elections=1, delays=1)
    model, state = run(config, IN_FLIGHT)
    assert state.controller.isr == 0b01 and state.controller.proposal == 0b10 and state.delays == 1
    # the HW counts over the maximal ISR {A, B}: m2 stays uncommitted until B has it
    _, written = run(config, IN_FLIGHT + ["ProducerWrite(A)"])
    assert written.replicas[0].hw == 1
    # no second request and no shrink while one is in flight; the delay is spent
    assert model.next_state(written, act(model, "LeaderShrinkIsr(B)")) is None
    assert model.next_state(state, act(model, "LeaderSendAlterPartition(B)")) is None
    _, handled = run(config, IN_FLIGHT + ["ControllerHandleAlterPartition(B)"])
    assert handled.controller.isr == 0b11 and handled.controller.proposal == 0


def test_a_partition_change_drops_the_request():
    config = Config("kafka-13141", replicas=2, messages=1, crashes=1, elections=1, delays=1)
    _, state = run(config, IN_FLIGHT + ["ReplicaCrash(A)", "ControllerNoticeFailure(A)"])
    assert state.controller.leader == -1 and state.controller.proposal == 0
    # a follower outside the ISR fenced by the controller changes nothing: the request stays
    _, state = run(config, IN_FLIGHT + ["ReplicaCrash(B)", "ControllerNoticeFailure(B)"])
    assert state.controller.proposal == 0b10


@pytest.mark.parametrize("protocol, fenced_added, restarted_added", [
    ("kafka-13141", True, True),  # AlterIsr (2.7): only the epochs are checked
    ("kafka-14704", False, True),  # KIP-841 (3.3): a fenced broker is refused, a restarted one is not
    ("kip-966", False, False),  # KIP-903 (3.5, KRaft): a restarted one has a new broker epoch
])
def test_what_each_release_refuses(protocol, fenced_added, restarted_added):
    config = Config(protocol, replicas=2, messages=1, crashes=1, elections=1, delays=1)
    fenced = IN_FLIGHT + ["ReplicaCrash(B)", "ControllerNoticeFailure(B)"]
    _, state = run(config, fenced + ["ControllerHandleAlterPartition(B)"])
    assert bool(state.controller.isr >> 1 & 1) == fenced_added and state.controller.proposal == 0
    _, state = run(config, fenced + ["ReplicaRestart(B)", "ControllerHandleAlterPartition(B)"])
    assert bool(state.controller.isr >> 1 & 1) == restarted_added


# the search: one lossy shutdown (B's replaced disk) and one fencing of a running broker (A cut off from the
# controller), min.insync.replicas 2: within what KIP-966 tolerates, so kip-966 holds (with two lossy shutdowns
# the last known leader loses m1 there: tests/test_anchors.py)
SEARCH = dict(crashes=1, disk_failures=1, partitions=1, elections=1, min_isr=2)


def test_kip_903_keeps_the_restarted_replica_out_where_kip_966_alone_loses_m1(without_kip_903):
    """Without KIP-903's broker epochs KIP-966 loses m1 through a restarted B on an empty disk, on the Python
    engine and the kernel alike, with one lossy shutdown and one fencing: shortest through a stale fetch of B's
    (11 steps, `LeaderHandleStaleFetch`: nothing fences it without broker epochs); kip-966 holds there. KIP-903's
    motivating sequence (KAFKA-14139), the scenario's steps with A crashing, loses m1 in 12, and kip-966's
    scenario replays the steps with the controller refusing B."""
    scenario = load_scenario(SCENARIO)
    assert replay(scenario).mismatches == [] and replay(scenario).first_breaks == {}
    config = dataclasses.replace(scenario.config, protocol=without_kip_903)
    expected = [str(action) for action in scenario.trace.actions] + ["ControllerElectLeader(B)"]
    for engine in (check, kernel_check):
        result = engine(dataclasses.replace(config, **SEARCH), keep_going=True)
        lengths = {v.invariant: len(v.trace) for v in result.violations}
        assert lengths == {"NoCommittedDataLoss": 11, "NoAckedDataLoss": 11, "NoConsumedRecordLost": 11}
        shortest = next(v.trace for v in result.violations if v.invariant == "NoCommittedDataLoss")
        assert "LeaderHandleStaleFetch(B)" in [str(action) for action in shortest.actions]
        fixed = engine(dataclasses.replace(config, protocol="kip-966", **SEARCH), keep_going=True)
        assert fixed.complete and fixed.violations == ()
    model, state = run(config, expected)
    assert state.controller.leader == 1 and state.replicas[1].log == () and (0, 1) in state.committed
    trace = dataclasses.replace(shortest, model=model_of(config), initial=0,
                                actions=tuple(act(model, text) for text in expected))
    report = render_reports(trace, "NoCommittedDataLoss", "kafka-14139", "KAFKA-14139")["kafka-14139.md"]
    assert "AlterPartition adding B in flight (B registered again since)" in report
    # kip-966 takes every step but the last: B is not in the ISR to be elected
    model, state = run(dataclasses.replace(config, protocol="kip-966"), expected[:-1])
    assert model.next_state(state, act(model, expected[-1])) is None


def test_z3_bounded_model_checking_finds_it_at_the_breadth_first_engines_length(without_kip_903):
    """The Z3 encoding takes delayed requests (held equal to the model: tests/test_z3_engine.py), so bounded
    model checking finds the loss without KIP-903 in 11 steps, as the breadth-first engine does; the TLA+ twin
    bounds the delays too (held equal to the model by TLC: tests/test_tla_twin.py)."""
    config = dataclasses.replace(load_scenario(SCENARIO).config, protocol=without_kip_903, **SEARCH)
    bfs, bmc = shortest_lengths(config)
    assert bmc == bfs == {"NoCommittedDataLoss": 11, "NoAckedDataLoss": 11, "NoConsumedRecordLost": 11}
    # the twin has no network failures
    assert "MaxDelays = 1" in tlc_config_text(dataclasses.replace(config, partitions=0))
