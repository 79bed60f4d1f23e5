"""The KRaft controller model (`control/kraft.py`): its rules step by step against Kafka's code
(unfencing after the broker replayed its registration, controlled shutdown waiting for the active
brokers' offsets, the partition changes of fencing), and what the checker finds in each release:
3.2 lets a fenced or shutting-down broker into the ISR and elects a shutting-down one (what
KIP-841 fixed in 3.3), 3.3 adds a restarted broker on its old incarnation's fetch (what KIP-903
fixed in 3.5), 3.5 holds."""

from __future__ import annotations

import json

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import check
from kafka_mc.checker.graph import system_graph
from kafka_mc.checker.scenario import documented_scenarios, load_scenario, replay
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.checker.symbolic.registry import z3_encoding
from kafka_mc.checker.tlc import run_tlc
from kafka_mc.cli import main
from kafka_mc.control import KRaftConfig, KRaftModel
from kafka_mc.control.kraft import FENCE, NONE, PARTITION, UNFENCE, view
from kafka_mc.model.config import ConfigError
from kafka_mc.model.interface import next_state


def walk(model: KRaftModel, *steps: str):
    """The state after `steps` from the initial state; each must be enabled."""
    state = model.initial_states()[0]
    for step in steps:
        following = next_state(model, state, model.parse_action(step))
        assert following is not None, f"{step} is not enabled in {state}"
        state = following
    return state


def enabled(model: KRaftModel, state, step: str) -> bool:
    return next_state(model, state, model.parse_action(step)) is not None


def partition(state):
    known = view(state.log, len(state.alive))
    return known.leader, known.isr, known.leader_epoch, known.partition_epoch


# ------------------------------------------------------------------ the rules


def test_a_fenced_follower_leaves_the_isr_and_the_leader_epoch_rises():
    model = KRaftModel(KRaftConfig(fencings=1))
    state = walk(model, "SessionTimeout(1)")
    assert state.log[-2:] == ((PARTITION, 0, 0b01, 1, 1), (FENCE, 1, 1))  # ISR {0}, epoch bumped, then Fence
    assert state.fencings == 1 and not enabled(model, state, "SessionTimeout(0)")  # the bound


def test_the_last_isr_member_fenced_stays_in_the_isr_and_the_partition_has_no_leader():
    model = KRaftModel(KRaftConfig(fencings=2))
    state = walk(model, "SessionTimeout(1)", "SessionTimeout(0)")
    assert partition(state) == (NONE, 0b01, 2, 2)


@pytest.mark.parametrize("release, replays_needed", [("3.5", 1), ("3.2", 1)])
def test_a_restarted_broker_is_unfenced_only_once_it_replayed_its_registration(release, replays_needed):
    model = KRaftModel(KRaftConfig(release=release))
    state = walk(model, "BrokerCrash(1)", "SessionTimeout(1)", "BrokerStart(1)")
    assert state.epoch[1] == len(state.log) - 1  # the broker epoch is the registration's offset
    before = walk(model, "BrokerCrash(1)", "SessionTimeout(1)", "BrokerStart(1)", "BrokerHeartbeat(1)")
    assert before.log == state.log  # not caught up: still fenced, no record
    after = walk(model, "BrokerCrash(1)", "SessionTimeout(1)", "BrokerStart(1)", "BrokerReplay(1)", "BrokerHeartbeat(1)")
    assert after.log[-1] == (UNFENCE, 1, state.epoch[1])


def test_in_3_2_a_broker_is_unfenced_only_once_it_replayed_the_whole_log():
    steps = ("BrokerCrash(1)", "SessionTimeout(1)", "BrokerStart(1)", "BrokerReplay(1)", "BrokerCrash(0)",
             "SessionTimeout(0)", "BrokerHeartbeat(1)")
    newer, older = KRaftModel(KRaftConfig(failures=2, release="3.3")), KRaftModel(KRaftConfig(failures=2, release="3.2"))
    unfenced = walk(newer, *steps)
    assert unfenced.log[-1] == (UNFENCE, 1, unfenced.epoch[1])
    assert partition(unfenced)[:2] == (NONE, 0b01)  # not elected: outside the ISR, which is 0 alone
    assert walk(older, *steps).log == walk(older, *steps[:-1]).log  # the controller's log grew since its replay


def test_a_controlled_shutdown_moves_the_leadership_and_waits_for_the_other_brokers_offsets():
    model = KRaftModel(KRaftConfig())
    state = walk(model, "BrokerBeginShutdown(0)", "BrokerHeartbeat(0)")
    assert partition(state) == (1, 0b10, 1, 1)  # broker 0 left the ISR and the leadership
    assert state.shutdown_offset[0] == len(state.log) and state.alive[0]
    waiting = walk(model, "BrokerBeginShutdown(0)", "BrokerHeartbeat(0)", "BrokerHeartbeat(0)")
    assert waiting.alive[0]  # broker 1 has not reported the offset yet
    reported = walk(model, "BrokerBeginShutdown(0)", "BrokerHeartbeat(0)", "BrokerHeartbeat(1)", "BrokerHeartbeat(0)")
    assert reported.alive[0]  # it reported, but before replaying the move
    done = walk(model, "BrokerBeginShutdown(0)", "BrokerHeartbeat(0)", "BrokerReplay(1)", "BrokerHeartbeat(1)",
                "BrokerHeartbeat(0)")
    assert not done.alive[0] and done.log[-1] == (FENCE, 0, 0)


class WithoutTheOffsetWait(KRaftModel):
    """A negative control: controlled shutdown granted once the leadership has moved, whatever
    the other brokers replayed (no `lowestActiveOffset`)."""

    def _lowest_active_offset(self, state, known, broker):
        return float("inf")


def test_without_the_wait_for_the_active_brokers_offsets_a_leader_is_let_go_unseen():
    result = check(WithoutTheOffsetWait(KRaftConfig()), keep_going=True)
    assert [(v.invariant, tuple(map(str, v.trace.actions))) for v in result.violations] == [
        ("ShutdownAfterLeadershipMoved", ("BrokerBeginShutdown(0)", "BrokerHeartbeat(0)", "BrokerHeartbeat(0)"))]


def test_a_broker_leading_nothing_shuts_down_at_once():
    model = KRaftModel(KRaftConfig())
    state = walk(model, "BrokerBeginShutdown(1)", "BrokerHeartbeat(1)")
    assert not state.alive[1] and partition(state)[1] == 0b01 and state.log[-1] == (FENCE, 1, 1)


def test_the_heartbeat_offsets_are_kept_only_during_a_controlled_shutdown():
    model = KRaftModel(KRaftConfig())
    assert walk(model, "BrokerHeartbeat(1)").reported == (NONE, NONE)
    state = walk(model, "BrokerBeginShutdown(0)", "BrokerHeartbeat(0)", "BrokerHeartbeat(1)")
    assert state.reported[1] == state.replayed[1]


def test_a_follower_fetches_only_in_the_leaders_epoch_and_the_leader_proposes_it():
    model = KRaftModel(KRaftConfig(fencings=1))
    state = walk(model, "SessionTimeout(1)")
    assert not enabled(model, state, "FollowerFetch(1)")  # neither has replayed the new epoch
    state = walk(model, "SessionTimeout(1)", "BrokerReplay(1)")
    assert not enabled(model, state, "FollowerFetch(1)")  # the leader is still in the old epoch
    state = walk(model, "SessionTimeout(1)", "BrokerReplay(1)", "BrokerReplay(0)", "FollowerFetch(1)")
    assert state.fetched[1] == (0, 1, 1)
    assert not enabled(model, state, "LeaderProposeIsr(0, 1)")  # KIP-841: fenced in the leader's view
    state = walk(model, "SessionTimeout(1)", "BrokerReplay(1)", "BrokerReplay(0)", "FollowerFetch(1)",
                 "BrokerHeartbeat(1)", "BrokerReplay(0)", "LeaderProposeIsr(0, 1)",
                 "ControllerHandleAlterPartition(0, 1)")
    assert partition(state) == (0, 0b11, 1, 2)  # an ISR expansion keeps the leader epoch


# ------------------------------------------------------------------ what the checker finds


def verdicts(release: str, **settings):
    result = check(KRaftModel(KRaftConfig(release=release, **settings)), keep_going=True)
    assert result.complete and all(result.witnesses.values()), result.witnesses
    return result, {v.invariant: len(v.trace.actions) for v in result.violations}


def test_3_5_holds_every_property():
    result, violated = verdicts("3.5")
    assert violated == {} and result.stats.distinct_states == 8465


def test_3_3_adds_a_restarted_broker_on_the_fetch_of_its_old_incarnation():
    result, violated = verdicts("3.3")
    assert violated == {"IsrJoinedByRegisteredIncarnation": 13}
    trace = result.violations[0].trace
    steps = [str(action) for action in trace.actions]
    # broker 0 shuts down, its old incarnation's fetch stays with the leader, it restarts and is unfenced
    assert steps[0] == "BrokerBeginShutdown(0)" and "BrokerStart(0)" in steps
    assert steps.index("FollowerFetch(0)") < steps.index("BrokerStart(0)") < steps.index("LeaderProposeIsr(1, 0)")
    # KIP-903: the same steps in 3.5 end with the leader refusing to propose it
    model = KRaftModel(KRaftConfig(release="3.5"))
    assert not enabled(model, walk(model, *steps[:-2]), steps[-2])


def test_3_2_lets_fenced_and_shutting_down_brokers_into_the_isr_and_elects_one():
    result, violated = verdicts("3.2")
    assert violated == {"IsrMembersEligible": 7, "LeaderIsActive": 7, "IsrJoinedByRegisteredIncarnation": 10}
    elected = next(v.trace for v in result.violations if v.invariant == "LeaderIsActive")
    state = walk(KRaftModel(KRaftConfig(release="3.2")), *map(str, elected.actions))
    assert state.shutdown_offset[partition(state)[0]] != NONE  # the new leader is in controlled shutdown


def test_a_live_broker_fenced_rejoins_the_isr_in_3_2_only():
    for release, holds in (("3.2", False), ("3.3", True)):
        result = check(KRaftModel(KRaftConfig(release=release, failures=0, fencings=1, shutdowns=0)), keep_going=True)
        assert ("IsrMembersEligible" not in result.violated) == holds


def test_a_restart_registered_before_the_fence_keeps_the_broker_in_the_isr_fenced_in_every_release():
    """`registerBroker` takes a new incarnation once the old session expired, removing that session:
    the fence never comes, and no release modelled takes the broker out of the ISR (KIP-966's
    unclean-shutdown handling came in 3.8)."""
    for release in ("3.2", "3.3", "3.5"):
        result = check(KRaftModel(KRaftConfig(release=release, early_registrations=1)), keep_going=True)
        shortest = {v.invariant: [str(a) for a in v.trace.actions] for v in result.violations}
        assert shortest["IsrMembersEligible"] == shortest["LeaderIsActive"] == \
            ["BrokerCrash(0)", "BrokerStartBeforeFence(0)"], release
    model = KRaftModel(KRaftConfig(early_registrations=1))
    state = walk(model, "BrokerCrash(0)", "BrokerStartBeforeFence(0)")
    assert partition(state) == (0, 0b11, 0, 0) and view(state.log, 2).registrations[0].fenced  # leads, fenced
    assert not enabled(model, state, "SessionTimeout(0)")  # its new registration is fenced: no fence follows
    assert not enabled(model, walk(model, "BrokerCrash(0)", "SessionTimeout(0)"), "BrokerStartBeforeFence(0)")
    assert not enabled(KRaftModel(KRaftConfig()), walk(model, "BrokerCrash(0)"), "BrokerStartBeforeFence(0)")  # bound 0


def test_the_documented_kip_903_scenario_replays_and_is_the_shortest_violation():
    path = next(path for path in documented_scenarios("control") if path.name == "kraft-kip-903.toml")
    scenario = load_scenario(path)
    replayed = replay(scenario)
    assert replayed.mismatches == [] and replayed.first_breaks == {"IsrJoinedByRegisteredIncarnation": 13}
    shortest = next(v.trace for v in check(KRaftModel(KRaftConfig(release="3.3"))).violations)
    assert shortest.actions == scenario.trace.actions


# ------------------------------------------------------------------ the command line


def test_cli_checks_each_release(capsys):
    code = main(["control", "kraft", "--release", "3.3", "--keep-going", "--no-goal", "--format", "json", "--quiet"])
    report = json.loads(capsys.readouterr().out)
    assert code == exitcodes.VIOLATION and report["config"]["release"] == "3.3"
    assert [v["invariant"] for v in report["violations"]] == ["IsrJoinedByRegisteredIncarnation"]


@pytest.mark.parametrize("argv, message", [
    (["--release", "3.4"], "release must be one of 3.2, 3.3, 3.5"),
    (["--brokers", "4"], "brokers must be an integer from 2 to 3"),
    (["--fencings", "-1"], "fencings must be an integer from 0 to 2"),
    (["--early-registrations", "3"], "early_registrations must be an integer from 0 to 2"),
])
def test_cli_bad_settings_are_named(capsys, argv, message):
    code = main(["control", "kraft", *argv, "--quiet"])
    assert code == exitcodes.BAD_INPUT and message in capsys.readouterr().err


def test_bad_settings_raise_a_config_error_naming_the_setting():
    with pytest.raises(ConfigError) as error:
        KRaftConfig(release="4.0")
    assert error.value.field == "release"


# ------------------------------------------------------------------ the TLA+ twin


@pytest.mark.parametrize("config", [KRaftConfig(), KRaftConfig(release="3.3"),
                                    KRaftConfig(failures=1, shutdowns=0, release="3.2"),
                                    KRaftConfig(failures=1, shutdowns=0, early_registrations=1)], ids=str)
def test_tlc_on_the_kraft_twin_agrees_with_kafka_mc(config):
    """model/tla/KafkaKRaft.tla under TLC: the same distinct states, states generated and depth
    (TLC counts states, kafka-mc steps), and the same shortest violations (3.5 none, 3.3
    IsrJoinedByRegisteredIncarnation, 3.2 IsrMembersEligible)."""
    tlc = run_tlc(KRaftModel(config))
    ours = check(KRaftModel(config), keep_going=True)
    assert (tlc.distinct_states, tlc.states_generated, tlc.depth - 1) == \
        (ours.stats.distinct_states, ours.stats.states_generated, ours.stats.depth)
    assert {name: tlc.shortest_actions(name) for name in tlc.violations} == \
        {v.invariant: len(v.trace) for v in ours.violations}


# ---------------------------------------------------------------------- the Z3 encoding

# each release, with a controlled shutdown, a crash and a registration before the fence
Z3_CONFIGS = [KRaftConfig(failures=0, shutdowns=1, release="3.3"), KRaftConfig(failures=1, shutdowns=0, release="3.2"),
              KRaftConfig(failures=1, shutdowns=0, early_registrations=1)]


def reachable(model: KRaftModel) -> list:
    return [state for _, state in system_graph(model).nodes(data="state")]


@pytest.mark.parametrize("config", Z3_CONFIGS, ids=str)
def test_the_z3_encoding_equals_the_model_on_every_reachable_state(config):
    model = KRaftModel(config)
    # the encoding's views are checked against its log's on every successor (`KRaftEncoding.check_decoded`)
    assert z3_encoding(model).check_agreement(reachable(model)) >= set(KRaftModel.action_names) - {
        "SessionTimeout", "BrokerCrash", "BrokerStartBeforeFence", "BrokerBeginShutdown"}


@pytest.mark.parametrize("config, case", [
    (KRaftConfig(failures=0, fencings=1, shutdowns=1), "a fenced broker shuts down"),
    (KRaftConfig(failures=0, fencings=2, shutdowns=0), "an unfencing elects a leader")])
def test_the_z3_encoding_equals_the_model_in_the_rarer_heartbeat_cases(config, case):
    """The heartbeat's cases the configurations above do not reach, on every reachable state where they apply."""
    model = KRaftModel(config)

    def applies(state) -> bool:
        known = model.controller(state)
        for b in model.brokers:
            registration = known.registrations[b]
            if state.alive[b] and registration.fenced and registration.epoch == state.epoch[b]:
                if state.shutting[b] if case == "a fenced broker shuts down" else \
                        known.leader == NONE and state.replayed[b] > registration.epoch:
                    return True
        return False

    states = [state for state in reachable(model) if applies(state)]
    assert states and "BrokerHeartbeat" in z3_encoding(model).check_agreement(states)


def test_z3_bounded_model_checking_finds_the_registration_before_the_fence(capsys):
    """Both properties broken in two steps, as the breadth-first engine finds them; and from the CLI."""
    config = KRaftConfig(early_registrations=1)
    explicit = {v.invariant: len(v.trace) for v in check(KRaftModel(config), keep_going=True).violations}
    bounded = bounded_check(KRaftModel(config), 2)
    assert {v.invariant: len(v.trace) for v in bounded.violations} == explicit == \
        {"IsrMembersEligible": 2, "LeaderIsActive": 2}
    for violation in bounded.violations:  # a broker crashes and registers again before its fence
        crash, start = violation.trace.actions
        assert (crash.name, start.name) == ("BrokerCrash", "BrokerStartBeforeFence") and crash.args == start.args
    code = main(["control", "kraft", "--engine", "z3", "--early-registrations", "1", "--depth", "2", "--quiet"])
    assert code == exitcodes.VIOLATION and "IsrMembersEligible                violated (2 steps)" in \
        capsys.readouterr().out


@pytest.mark.slow
def test_z3_bounded_model_checking_finds_what_kip_841_fixed_at_the_breadth_first_length():
    """3.2 to depth 7: KIP-841's two properties broken in 7 steps, and every witness at its shortest length."""
    model = KRaftModel(KRaftConfig(release="3.2"))
    explicit, bounded = check(model, keep_going=True), bounded_check(model, 7, keep_going=True)
    assert {v.invariant: len(v.trace) for v in bounded.violations} == {"IsrMembersEligible": 7, "LeaderIsActive": 7}
    assert {n: len(t) for n, t in bounded.witness_traces.items()} == \
        {n: len(t) for n, t in explicit.witness_traces.items() if len(t) <= 7}
