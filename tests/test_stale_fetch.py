"""Delayed fetches (`Config.delays`, the `stale_fetch` choice): a follower's fetch in flight to the
leader, the stale one a follower sent before it crashed, what each release does with it, and
KAFKA-15221, found by the checker where KIP-966 lacks the leader's broker-epoch fence on fetches."""

from __future__ import annotations

import dataclasses
import json
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_mc.checker import check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.checker.kernel.batch import KernelEncoding
from kafka_mc.checker.scenario import load_scenario, replay
from kafka_mc.checker.symbolic.agreement import Z3Encoding
from kafka_mc.checker.tlc import run_tlc
from kafka_mc.control.replication import model_of
from kafka_mc.counterexamples.reports import render_reports
from kafka_mc.model import PROTOCOLS, Config, ReplicationModel, parse_action, register_protocol
from kafka_mc.model.protocols import BROKER_EPOCHS, LIVE_MEMBERS, ProtocolError, unregister_protocol
from kafka_mc.model.values import DelayedFetchVar, state_values
from kafka_mc.testing import check_conformance, reachable_states

FINDINGS = Path(__file__).parent.parent / "scenarios" / "findings"
SCENARIO = FINDINGS / "stale-fetch-kip-966.toml"
PLUGIN = FINDINGS / "without_fixes.py"  # the docs' plugin of variants without a fix (docs/history.md, step 8)
UNFENCED = runpy.run_path(str(PLUGIN))["WITHOUT_KAFKA_15221"]
unregister_protocol("kip-966-without-kip-903")  # registered here per test only
unregister_protocol(UNFENCED.name)
CONFIG = Config("kip-966", replicas=2, messages=1, crashes=2, elections=1, disk_failures=2, delays=1)
# B has m1 and its fetch at offset 1 is in flight; B fails with its disk, is fenced and registers again
STALE = ["ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
         "FollowerSendDelayedFetch(B)", "ReplicaDiskFailure(B)", "ControllerNoticeFailure(B)", "ReplicaRestart(B)"]
FOLLOWING = STALE + ["BecomeFollower(B)", "FollowerTruncateByLeaderEpoch(B)"]  # B follows A again, empty
# the search: one lossy shutdown (B's replaced disk) and one fencing of a running broker (A cut off from the
# controller), min.insync.replicas 2: within what KIP-966 tolerates, so kip-966 holds (with two lossy shutdowns
# the last known leader loses m1 there: tests/test_anchors.py)
SEARCH = dict(crashes=1, disk_failures=1, partitions=1, elections=1, min_isr=2)


@pytest.fixture
def unfenced():
    register_protocol(UNFENCED)
    yield UNFENCED.name
    unregister_protocol(UNFENCED.name)


def run(config: Config, steps: list[str]):
    """The model and the state after `steps` from the initial state led by A; AssertionError at a disabled step."""
    model = ReplicationModel(config)
    state = model.initial_states()[0]
    for text in steps:
        following = model.next_state(state, act(model, text))
        assert following is not None, f"{text} is not enabled"
        state = following
    return model, state


def act(model: ReplicationModel, text: str):
    return parse_action(text, model.action_names, model.config.replicas)


def test_a_delayed_fetch_waits_for_its_sender_and_outlives_its_crash():
    model, sent = run(CONFIG, STALE[:4])
    assert sent.replicas[1].delayed_fetch == 2 and not sent.replicas[1].delayed_fetch_stale and sent.delays == 1
    # the delay is spent; the follower's next fetch is the one it waits for
    assert model.next_state(sent, act(model, "FollowerSendDelayedFetch(B)")) is None
    _, handled = run(CONFIG, STALE[:4] + ["LeaderHandleFetchRequest(B)"])
    assert handled.replicas[1].delayed_fetch == 0 and handled.replicas[0].remote_leos[1] == 1
    assert model.next_state(sent, act(model, "LeaderHandleStaleFetch(B)")) is None  # not stale: no second copy
    _, crashed = run(CONFIG, STALE[:5])
    assert crashed.replicas[1].delayed_fetch == 2 and crashed.replicas[1].delayed_fetch_stale
    assert state_values(crashed, elr=True, delays=True)["delayedFetches"] == {"A": [], "B": DelayedFetchVar(1, True)}


def test_a_new_leader_epoch_fences_every_delayed_fetch():
    config = dataclasses.replace(CONFIG, protocol="kafka-14704", replicas=3)
    _, state = run(config, STALE[:4] + ["ReplicaCrash(A)", "ControllerNoticeFailure(A)", "ControllerElectLeader(C)"])
    assert state.controller.epoch == 1 and state.replicas[1].delayed_fetch == 0  # FENCED_LEADER_EPOCH


@pytest.mark.parametrize("protocol, joins", [
    ("kafka-13141", True),  # AlterIsr (2.7): any stale fetch reaching the HW adds its sender
    ("kafka-14704", True),  # KIP-841 (3.3): B is a live broker again
    ("kip-966", False),  # KAFKA-15221 (3.7, KRaft): A refuses the fetch of B's earlier incarnation
])
def test_what_each_release_does_with_a_stale_fetch(protocol, joins):
    config = dataclasses.replace(CONFIG, protocol=protocol)
    _, state = run(config, STALE + ["LeaderHandleStaleFetch(B)"])
    assert bool(state.controller.isr >> 1 & 1) == joins and state.replicas[1].delayed_fetch == 0
    assert state.replicas[0].remote_leos[1] == (1 if joins else 0)  # 0: its first fetch


def test_while_the_follower_is_down_the_fetch_is_taken_but_cannot_add_it(unfenced):
    for protocol in ("kip-966", unfenced):
        _, state = run(dataclasses.replace(CONFIG, protocol=protocol), STALE[:6] + ["LeaderHandleStaleFetch(B)"])
        assert state.replicas[0].remote_leos[1] == 1 and state.controller.isr == 0b01


def test_before_kafka_15221_the_new_incarnations_fetch_lets_the_stale_one_add_it(unfenced):
    config = dataclasses.replace(CONFIG, protocol=unfenced)
    # with no fetch of B's new incarnation to race with, A's check refuses the old broker epoch
    _, state = run(config, STALE + ["LeaderHandleStaleFetch(B)"])
    assert state.controller.isr == 0b01 and state.replicas[0].remote_leos[1] == 1
    # B fetches again while A decides: B joins on offset 1, with its empty log (its fetch answered)
    _, state = run(config, FOLLOWING + ["LeaderHandleStaleFetch(B)"])
    assert state.controller.isr == 0b11 and state.replicas[1].log == () and state.replicas[1].response
    assert state.replicas[0].remote_leos[1] == 0


def test_the_fence_needs_broker_epochs():
    with pytest.raises(ProtocolError, match="stale_fetch = 'fenced' needs isr_updates = 'broker-epochs'"):
        dataclasses.replace(PROTOCOLS["kip-966"], name="zk-fenced", isr_updates=LIVE_MEMBERS)
    assert PROTOCOLS["kip-966"].isr_updates == BROKER_EPOCHS and PROTOCOLS["kip-966"].fences_stale_fetches
    assert not any(p.fences_stale_fetches for name, p in PROTOCOLS.items() if name != "kip-966")


def test_kafka_15221_is_found_where_the_fence_is_missing_and_kip_966_holds(unfenced):
    """The checker finds KAFKA-15221 when KIP-966 lacks the fence, on the Python engine and the kernel alike, with
    one lossy shutdown and one fencing; kip-966 holds there, and its scenario replays the steps of the same race
    (A crashing instead of being fenced) with A refusing B's stale fetch."""
    scenario = load_scenario(SCENARIO)
    assert replay(scenario).mismatches == [] and replay(scenario).first_breaks == {}
    config = dataclasses.replace(scenario.config, protocol=unfenced)
    expected = FOLLOWING + ["LeaderHandleStaleFetch(B)", "ReplicaCrash(A)", "ControllerNoticeFailure(A)",
                            "ControllerElectLeader(B)"]
    assert [str(action) for action in scenario.trace.actions] == expected[:-1]
    found = FOLLOWING + ["LeaderHandleFetchRequest(B)", "ZkDisconnect(A)", "LeaderHandleStaleFetch(B)",
                         "ControllerNoticeFailure(A)", "ControllerElectLeader(B)"]
    for engine in (check, kernel_check):
        result = engine(dataclasses.replace(config, **SEARCH), keep_going=True)
        lengths = {v.invariant: len(v.trace) for v in result.violations}
        assert lengths == {"NoCommittedDataLoss": 14, "NoAckedDataLoss": 14, "NoConsumedRecordLost": 14}
        shortest = next(v.trace for v in result.violations if v.invariant == "NoCommittedDataLoss")
        assert [str(action) for action in shortest.actions] == found
        fixed = engine(dataclasses.replace(scenario.config, **SEARCH), keep_going=True)
        assert fixed.complete and fixed.violations == ()
    model, state = run(config, expected)
    trace = dataclasses.replace(shortest, model=model_of(config), initial=0,
                                actions=tuple(act(model, text) for text in expected))
    report = render_reports(trace, "NoCommittedDataLoss", "kafka-15221", "KAFKA-15221")["kafka-15221.md"]
    assert "fetch of B at offset 1 in flight (sent before B crashed)" in report
    model, state = run(scenario.config, expected[:-1])  # kip-966: B is in neither the ISR nor the ELR
    assert model.next_state(state, act(model, expected[-1])) is None


def test_the_documented_command_finds_it_with_the_plugin():
    """docs/history.md, step 8, as a user runs it: the CLI in a fresh process, the variant from `--plugin`."""
    done = subprocess.run([sys.executable, "-m", "kafka_mc", "check", "--plugin", str(PLUGIN), "--protocol",
                           UNFENCED.name, "--replicas", "2", "--messages", "1", "--crashes", "1", "--partitions", "1",
                           "--elections", "1", "--min-isr", "2", "--disk-failures", "1", "--delays", "1", "--keep-going",
                           "--format", "json"],
                          capture_output=True, text=True, timeout=600)
    summary = json.loads(done.stdout)
    assert done.returncode != 0 and summary["distinct_states"] == 18418
    assert {v["invariant"]: v["length"] for v in summary["violations"]} == {
        "NoCommittedDataLoss": 14, "NoAckedDataLoss": 14, "NoConsumedRecordLost": 14}


def test_the_kernel_takes_the_race_as_the_model_does(unfenced):
    config = dataclasses.replace(CONFIG, protocol=unfenced)
    report = check_conformance(KernelEncoding(), [config], require_coverage=False)
    assert report.ok, report.summary()


def test_the_z3_encoding_takes_the_race_as_the_model_does(unfenced):
    """One crash is enough for the race (B's restart takes it out of the ISR, an unclean shutdown): 1,134 states."""
    config = Config(unfenced, messages=1, crashes=1, elections=1, delays=1)
    model = ReplicationModel(config)
    races = [(model.action_at(slot).replica, after) for state in reachable_states(config)
             for slot, after in model.indexed_successors(state)
             if model.action_at(slot).name == "LeaderHandleStaleFetch" and after.controller.isr != state.controller.isr]
    assert races and all(after.replicas[replica].response for replica, after in races)  # its new incarnation fetched
    report = check_conformance(Z3Encoding(), [config], require_coverage=False)
    assert report.ok and report.states == 1134, report.summary()


@pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java on PATH")
def test_the_tla_twin_takes_the_race_as_the_model_does(unfenced):
    """TLC on the twin of the variant without the fence (its module generated from the declaration): the
    model's counts, depth, verdicts and shortest lengths."""
    config = dataclasses.replace(CONFIG, protocol=unfenced)
    expected, tlc = check(config, keep_going=True), run_tlc(config, timeout=120)
    assert (tlc.distinct_states, tlc.states_generated, tlc.depth) == (
        expected.stats.distinct_states, expected.stats.states_generated, expected.stats.depth + 1)
    assert {name: length - 1 for name, length in tlc.violations.items()} == \
        {v.invariant: len(v.trace) for v in expected.violations}
