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
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.failover import FailoverConfig, FailoverModel
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.counterexamples.itf import itf_to_trace
from kafka_mc.model import PROTOCOLS, Config, ReplicationModel, parse_action
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.model.state import FOLLOWER, NO_LEADER, TRUNCATING
from kafka_mc.properties import INVARIANTS, failing_invariants
from kafka_mc.properties.user import user_property
from kafka_mc.testing import check_conformance, coverage_gaps, reachable_states

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
    # the later variants: the KAFKA-7128 ISR-join rule, truncation on a diverging fetch, KIP-380,
    # KAFKA-13141 and KAFKA-14704 (kafka-14704 is kafka-13141 with the diverging response's HW left alone)
    Config("kip-320", messages=1, crashes=1, elections=1, unclean=True),
    Config("diverging-epoch", messages=1, crashes=1, elections=1),
    Config("kafka-14704", messages=1, crashes=1, elections=1, acks="1"),
    Config("hw", messages=1, crashes=1, elections=1, disk_failures=1),
    # KAFKA-15583's HW held below min.insync.replicas, and KIP-966's eligible leader replicas: every rule
    # fires (`test_the_min_isr_and_elr_configurations_fire_every_new_rule`); three replicas are too many states
    Config("kafka-15583", messages=1, crashes=1, elections=1, min_isr=2),
    Config("kip-966", messages=1, crashes=2, elections=2, min_isr=2, unclean=True),
    # KAFKA-7164's skip of the next epoch only (`follower_skips`): a follower skips the LeaderAndIsr of the
    # leader it follows, re-elected; with two crashes and elections one misses an epoch of it and truncates
    # (`test_the_agreement_configurations_fire_every_follower_skip`), without writes (one: 6.5 times the states)
    Config("kafka-7415", messages=1, crashes=1, elections=1),
    Config("kafka-7415", messages=0, crashes=2, elections=2),
    # delayed requests: KIP-841's and KIP-903's refusals of an AlterPartition, a stale fetch fenced (KAFKA-15221)
    # and one taken, with the follower joining the ISR on it (KIP-841's live-members controller); KAFKA-15221's race
    # under KIP-903 without the fence is tests/test_stale_fetch.py's
    Config("kip-966", messages=1, crashes=1, elections=1, delays=1),
    Config("kafka-14704", messages=1, crashes=1, elections=1, delays=1),
    # a leader that reads the metadata late (KRaft): an acks=all write below the controller's min.insync.replicas, a
    # shrink and (three replicas) an expansion kept pending, the metadata read with one pending
    # (`test_the_lag_configurations_fire_every_lag_rule`; with a delayed request too: LAG_WITH_DELAYS)
    Config("kip-966", messages=1, crashes=1, elections=1, min_isr=2, metadata_lag=True),
    Config("kip-966", replicas=3, messages=0, crashes=1, elections=1, min_isr=2, metadata_lag=True),
]
# 7,035 states, 80 s: an AlterPartition in flight kept while the leader has not read a removal, and refused
LAG_WITH_DELAYS = Config("kip-966", replicas=3, messages=0, crashes=1, elections=1, min_isr=2, delays=1,
                         metadata_lag=True)


@pytest.mark.parametrize("config", AGREEMENT_CONFIGS, ids=lambda c: f"{c.protocol}-m{c.messages}-c{c.crashes}"
                         f"-acks{c.acks}-isr{c.min_isr}-{'unclean' if c.unclean else 'clean'}"
                         f"-{'flush' if c.flush else 'noflush'}-p{c.partitions}{f'-d{c.delays}' * bool(c.delays)}"
                         f"{f'-r{c.replicas}' * (c.replicas != 2)}{'-lag' * c.metadata_lag}")
def test_z3_admits_exactly_the_explicit_successors_and_invariant_values(config):
    report = check_conformance(Z3Encoding(), [config], require_coverage=False)
    assert report.states > 300
    assert report.ok, report.summary()


@pytest.mark.slow
def test_z3_admits_exactly_the_explicit_successors_with_the_lag_and_a_delayed_request():
    report = check_conformance(Z3Encoding(), [LAG_WITH_DELAYS], require_coverage=False)
    assert report.states == 7035
    assert report.ok, report.summary()


def test_the_z3_agreement_configurations_exercise_every_action_and_protocol_choice():
    assert coverage_gaps(AGREEMENT_CONFIGS) == []


def test_the_lag_configurations_fire_every_lag_rule():
    """On the model alone: the rules of `Config.metadata_lag` that the Z3 agreement above holds the encoding to."""
    fired: set[str] = set()
    for config in [c for c in AGREEMENT_CONFIGS if c.metadata_lag] + [LAG_WITH_DELAYS]:
        model = ReplicationModel(config)
        for state in reachable_states(config):
            before = state.controller
            for slot, after in model.indexed_successors(state):
                action, controller = model.action_at(slot), after.controller
                if controller.unseen & ~before.unseen:
                    kept = before.proposal and controller.proposal == before.proposal
                    fired.add(f"removal unread: {action.name}{', in flight kept' * bool(kept)}")
                if before.unseen and controller.proposal and not before.proposal:
                    fired.add(f"pending: {action.name}")
                if action.name == "ProducerWrite" and bin(before.isr).count("1") < config.min_isr:
                    fired.add("write below the controller's min.insync.replicas")
                if action.name == "LeaderApplyMetadata":
                    fired.add("read with a change pending" if before.proposal else "read")
            if before.unseen and before.proposal not in (0, 1 << before.leader) and config.delays:
                assert all(model.action_at(slot).name != "ControllerHandleAlterPartition"
                           for slot, _ in model.indexed_successors(state))
                fired.add("an expansion refused while a removal is unread")
    assert fired == {"removal unread: ControllerNoticeFailure", "removal unread: ControllerNoticeFailure, in flight kept",
                     "pending: LeaderShrinkIsr", "pending: LeaderHandleFetchRequest",
                     "write below the controller's min.insync.replicas", "read", "read with a change pending",
                     "an expansion refused while a removal is unread"}, fired


def test_the_delay_configurations_take_every_branch_of_the_delayed_requests():
    """On the model alone: each way an AlterPartition and a stale fetch end that the Z3 agreement above holds
    the encoding to (the race of KAFKA-15221 is tests/test_stale_fetch.py's)."""
    fired: set[tuple[str, str]] = set()
    for config in AGREEMENT_CONFIGS:
        if not config.delays:
            continue
        model = ReplicationModel(config)
        for state in reachable_states(config):
            for slot, after in model.indexed_successors(state):
                action, isr = model.action_at(slot), after.controller.isr
                if action.name == "ControllerHandleAlterPartition":
                    refused = "reregistered" if state.controller.reregistered else "not live"
                    fired.add((config.protocol, "added" if isr != state.controller.isr else f"refused, {refused}"))
                elif action.name == "LeaderHandleStaleFetch":
                    leader = after.controller.leader
                    fired.add((config.protocol, "stale fetch joins" if isr != state.controller.isr else
                               "stale fetch taken" if after.replicas[leader].remote_leos !=
                               state.replicas[leader].remote_leos else "stale fetch refused"))
                elif action.name == "ControllerElectLeader" and any(r.delayed_fetch for r in state.replicas):
                    fired.add((config.protocol, "an election fences a delayed fetch"))
    assert fired == {
        ("kip-966", "added"), ("kip-966", "refused, reregistered"), ("kip-966", "refused, not live"),
        ("kip-966", "stale fetch refused"), ("kip-966", "stale fetch taken"),
        ("kip-966", "an election fences a delayed fetch"),
        ("kafka-14704", "added"), ("kafka-14704", "refused, not live"), ("kafka-14704", "stale fetch joins"),
        ("kafka-14704", "stale fetch taken"), ("kafka-14704", "stale fetch refused"),
        ("kafka-14704", "an election fences a delayed fetch")}


def test_the_min_isr_and_elr_configurations_fire_every_new_rule():
    """On the model alone (a fraction of a second): the rules of `hw_needs_min_isr` and `eligible_leaders`
    that the Z3 agreement above holds the encoding to."""
    fired: set[str] = set()
    for config in AGREEMENT_CONFIGS:
        if not PROTOCOLS[config.protocol].hw_needs_min_isr:
            continue
        model = ReplicationModel(config)
        for state in reachable_states(config):
            before = state.controller
            for slot, after in model.indexed_successors(state):
                action, controller = model.action_at(slot), after.controller
                leader = after.replicas[controller.leader] if controller.leader != NO_LEADER else None
                if leader is not None and leader.remote_leos and bin(controller.isr).count("1") < config.min_isr \
                        and min(leader.leo if q == controller.leader else leader.remote_leos[q]
                                for q in range(config.replicas) if controller.isr >> q & 1) > leader.hw:
                    fired.add("HW held below min.insync.replicas")
                if controller.elr & ~before.elr:
                    fired.add(f"ELR grows: {action.name}")
                if before.elr and not controller.elr and action.name != "ControllerElectLeader":
                    fired.add(f"ELR emptied: {action.name}")
                if before.isr and not controller.isr:
                    fired.add("ISR emptied")
                if action.name == "ControllerElectLeader" and before.elr:
                    fired.add("elected from the ELR" if not before.isr and before.elr >> action.replica & 1
                              else "unclean election clears the ELR" if not controller.elr else "election keeps the ELR")
    assert fired == {"HW held below min.insync.replicas", "ELR grows: LeaderShrinkIsr",
                     "ELR grows: ControllerNoticeFailure", "ELR emptied: LeaderHandleFetchRequest",
                     "ELR emptied: ReplicaRestart", "ISR emptied", "elected from the ELR",
                     "unclean election clears the ELR", "election keeps the ELR"}


def test_the_agreement_configurations_fire_every_follower_skip():
    """On the model alone: a follower skips the LeaderAndIsr of the leader it follows (`follower_skips`),
    its fetch response in flight kept, up to 2.0.0 and in 2.0.1; in 2.0.1 one that missed an epoch
    of that leader acts on it; from 2.1 none skips."""
    fired: set[tuple[str, str]] = set()
    for config in AGREEMENT_CONFIGS:
        model, skips = ReplicationModel(config), PROTOCOLS[config.protocol].follower_skips
        for state in reachable_states(config):
            for slot, after in model.indexed_successors(state):
                action = model.action_at(slot)
                if action.name != "BecomeFollower":
                    continue
                replica, taken = state.replicas[action.replica], after.replicas[action.replica]
                if model.protocol.skips_leader_and_isr(replica, state.controller.leader, state.controller.epoch):
                    assert taken == replica._replace(epoch=state.controller.epoch)
                    fired.add((skips, "skips with a response in flight" if replica.response else "skips"))
                elif replica.leader_id == state.controller.leader:
                    fired.add((skips, "acts on the leader it follows"))
    assert fired == {("same-leader", "skips"), ("same-leader", "skips with a response in flight"),
                     ("same-leader-next-epoch", "skips"), ("same-leader-next-epoch", "skips with a response in flight"),
                     ("same-leader-next-epoch", "acts on the leader it follows")}


def _scenario_config(name: str) -> Config:
    return load_scenario(__import__("pathlib").Path(__file__).parent.parent / "scenarios" / name).config


@pytest.mark.parametrize("scenario", ["case-d-hw.toml", "case-d-leader-epoch.toml"])
def test_bmc_shortest_lengths_equal_the_bfs_engine_on_documented_cases(scenario):
    bfs, bmc = shortest_lengths(_scenario_config(scenario))
    assert bfs and bmc == bfs


@pytest.mark.parametrize("config", [
    pytest.param(Config("leader-epoch", acks="1", crashes=1, elections=1, partitions=1), id="acks-1"),
    pytest.param(Config("kip-279", acks="all", min_isr=1, unclean=True, partitions=1), id="unclean"),
    # two crashes: the longest of the three (benchmarks/z3_engine.py --catalogue compares every violated cell)
    pytest.param(Config("leader-epoch", acks="all", min_isr=1, flush=False, crashes=2, partitions=1), id="no-flush",
                 marks=pytest.mark.slow),
])
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
    assert z3_encoded_models() == ("replication", "replication-epoch-bumps", "controller", "partition-fsm", "kraft")
    for model in (RebalanceModel(RebalanceConfig()), FailoverModel(FailoverConfig("hw"))):
        with pytest.raises(NoEncoding, match=f"^the {model.name} model has no Z3 encoding; models with one: "
                                             "replication, replication-epoch-bumps, controller, partition-fsm, kraft$"):
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


def test_cli_z3_finds_case_l_at_the_bfs_engines_length_writes_reports_and_exits_12(capsys, tmp_path):
    # Case L's configuration; its NoLogDivergence is one step longer (benchmarks/z3_engine.py compares every length)
    assert _scenario_config("case-l-hw.toml") == Config("hw")
    shortest = {v.invariant: len(v.trace) for v in check(Config("hw"), keep_going=True).violations}
    code, out, err = run(capsys, "check", "--engine", "z3", "--protocol", "hw", "--depth", "12", "--format", "json",
                         "--out", str(tmp_path))
    summary = json.loads(out)
    assert code == exitcodes.VIOLATION
    assert summary["engine"] == "z3" and summary["depth"] == 10 and summary["complete"] is False
    lengths = {v["invariant"]: v["length"] for v in summary["violations"]}
    assert lengths.items() <= shortest.items()
    assert lengths["NoCommittedDataLoss"] == min(shortest.values()) == shortest["NoCommittedDataLoss"] == 10
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


# ------------------------------------------------------------------ the controller's epoch bump

# The smallest configurations that together fire every rule of the bump (`model/epoch_bumps.py`);
# each is needed, catching a wrong encoding the others miss. kip-279 with a network failure: a
# leader cut off from ZooKeeper that takes the bump when it reconnects and leads meanwhile, the
# up-to-2.0 follower skip and acting leader; kip-320 with two crashes: the bump cached at once
# (KAFKA-7415), an election after a bump (the bound counts elections); hw with a message: no skip
# for a follower of an older leadership; kafka-15583: the bump beside the HW held below
# min.insync.replicas (ZooKeeper mode, 3.7). Three replicas (a write acknowledged across the bump) are
# too many states: the behaviours below.
BUMP_AGREEMENT_CONFIGS = [Config("kip-279", 2, 0, 1, 0, partitions=1), Config("kip-320", 2, 0, 2, 1),
                          Config("hw", 2, 1, 1, 1), Config("kafka-15583", 2, 1, 1, 1, min_isr=2)]


@pytest.mark.parametrize("config", BUMP_AGREEMENT_CONFIGS, ids=lambda c: f"{c.protocol}-{c.replicas}-{c.messages}-"
                         f"{c.crashes}-{c.elections}-p{c.partitions}")
def test_z3_with_the_bump_admits_exactly_the_bump_models_successors(config):
    report = check_conformance(Z3Encoding(bumps=True), [config], require_coverage=False, transitions=EpochBumpModel)
    assert report.states > 250
    assert report.ok, report.summary()


def test_the_bump_agreement_configurations_fire_every_rule_of_the_bump():
    """On the model alone (a fraction of a second): what the Z3 agreement above is held to."""
    fired: set[str] = set()
    for config in BUMP_AGREEMENT_CONFIGS:
        model = EpochBumpModel(config)
        for state in reachable_states(config, transitions=EpochBumpModel):
            controller = state.controller
            for slot, after in model.indexed_successors(state):
                action = model.action_at(slot)
                replica, taken = state.replicas[action.replica], after.replicas[action.replica]
                if action.name == "ControllerNoticeFailure" and after.controller.bumped != controller.bumped:
                    leader = after.replicas[after.controller.leader]
                    fired.add("bump cut off" if state.zk_cut >> after.controller.leader & 1
                              else "bump cached" if leader.epochs != state.replicas[controller.leader].epochs
                              else "bump taken" if leader.epoch == after.controller.epoch else "bump lost")
                elif action.name == "ZkReconnect" and taken.epoch != replica.epoch:
                    fired.add("bump taken on reconnect")
                elif action.name == "BecomeFollower" and taken == replica._replace(epoch=controller.epoch) \
                        and replica.role in (FOLLOWER, TRUNCATING):
                    fired.add("follower skips")
                elif action.name == "ControllerElectLeader" and controller.epoch >= config.elections:
                    fired.add("election after a bump")
                elif action.name in ("LeaderHandleFetchRequest", "FollowerTruncateByLeaderEpoch") \
                        and state.replicas[model.reachable_leader(state, action.replica)].epoch != replica.epoch:
                    fired.add("request reaches the leadership")
    assert fired == {"bump cut off", "bump cached", "bump taken", "bump lost", "bump taken on reconnect",
                     "follower skips", "election after a bump", "request reaches the leadership"}


# three replicas, C catches up, dies and leaves A's ISR: the bump (`tests/test_epoch_bumps.py`)
C_DIES = ("LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)", "LeaderHandleFetchRequest(C)",
          "FollowerHandleFetchResponse(C)", "ReplicaCrash(C)", "ControllerNoticeFailure(C)")
B_CATCHES_UP = ("FollowerTruncateByLeaderEpoch(B)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)",
                "LeaderHandleFetchRequest(B)")
PURGATORY = (*C_DIES[:4], "ProducerWrite(A)", *C_DIES[4:], "BecomeFollower(B)", *B_CATCHES_UP)
CUT_OFF = ("ProducerWrite(A)", "ZkDisconnect(A)", "ReplicaCrash(C)", "ControllerNoticeFailure(C)", "BecomeFollower(B)",
           "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)", "FollowerTruncateByLeaderEpoch(B)",
           "ZkReconnect(A)", *B_CATCHES_UP)
# C dies twice, rejoining between: two bumps that B, following A, misses
MISSED_BUMP = (*C_DIES[:4], "ProducerWrite(A)", *C_DIES[4:], "ReplicaRestart(C)", "BecomeFollower(C)",
               "FollowerTruncateByLeaderEpoch(C)", "LeaderHandleFetchRequest(C)", "FollowerHandleFetchResponse(C)",
               "LeaderHandleFetchRequest(C)", "ReplicaCrash(C)", "ControllerNoticeFailure(C)", "BecomeFollower(B)",
               *B_CATCHES_UP)


@pytest.mark.parametrize("config, steps", [(Config("kip-279", 3, 1, 1, 1), PURGATORY),
                                           (Config("kafka-7415", 3, 1, 1, 1), PURGATORY),
                                           (Config("kip-320", 3, 1, 1, 1), PURGATORY),
                                           (Config("kip-279", 3, 1, 1, 0, partitions=1), CUT_OFF),
                                           (Config("kip-320", 3, 1, 1, 0, partitions=1), CUT_OFF),
                                           (Config("kip-279", 3, 1, 2, 1), MISSED_BUMP),
                                           (Config("kafka-7415", 3, 1, 2, 1), MISSED_BUMP)],
                         ids=["kip-279-purgatory", "kafka-7415-purgatory", "kip-320-purgatory", "kip-279-cut-off",
                              "kip-320-cut-off", "kip-279-missed-bump", "kafka-7415-missed-bump"])
def test_z3_with_the_bump_agrees_with_the_model_along_three_replica_behaviours(config, steps):
    """Where three replicas are too many states for the agreement above: along the behaviours of
    `tests/test_epoch_bumps.py`, a write taken before the bump acknowledged after it (the leader's
    purgatory, across its leadership), a follower that skips the bump (kip-279, and kafka-7415 for
    the next epoch) or truncates (kip-320, and kafka-7415 after a missed bump), fetches that reach a
    leader cut off in the older epoch or are fenced by it. Each state's successors and invariant
    values, as the harness compares them."""
    model = EpochBumpModel(config)
    states = [model.initial_states()[0]]
    for text in steps:
        following = model.next_state(states[-1], parse_action(text, model.action_names, config.replicas))
        if following is not None:  # what one variant fences, the other takes
            states.append(following)
    assert states[-1].acked and states[-1].controller.bumped
    for state, expansion in zip(states, Z3Encoding(bumps=True).expand(config, states)):
        assert set(expansion.successors) == set(model.indexed_successors(state)), state
        assert expansion.state_properties == {prop.name: prop.holds(state) for prop in INVARIANTS}, state


def every_epoch_is_elected(state) -> bool:
    """Breaks only with the bump: one election allowed, and a second epoch."""
    return state.controller.epoch <= 1


def test_bmc_with_the_bump_finds_the_explicit_engines_shortest_violations():
    config = Config("hw", 2, 1, 2, 1)
    wanted = (*INVARIANTS, user_property(every_epoch_is_elected, "EveryEpochIsElected"))
    explicit = check(EpochBumpSystem(config, wanted), keep_going=True)
    shortest = {v.invariant: len(v.trace) for v in explicit.violations}
    assert shortest["EveryEpochIsElected"] == 6 and shortest["NoCommittedDataLoss"] == 10
    bounded = bounded_check(EpochBumpSystem(config, wanted), max(shortest.values()), keep_going=True)
    assert {v.invariant: len(v.trace) for v in bounded.violations} == shortest
    for violation in bounded.violations:
        assert violation.trace.model == EpochBumpSystem(config)
        states = violation.trace.states()  # replayed by the bump model
        assert violation.invariant in failing_invariants(states[-1], wanted)
    elected = next(v for v in bounded.violations if v.invariant == "EveryEpochIsElected").trace.states()[-1]
    assert elected.controller.bumped and elected.controller.epoch == 2  # a bump, then the one election


def test_the_bump_has_its_own_layout_and_no_proofs():
    """The replication model's symbolic states have no bump flags (its proofs are unchanged); the bump
    model's run to elections + crashes + network failures; `prove`'s unbounded relation refuses it."""
    config = Config("kip-320", 2, 1, 1, 1, partitions=1)
    assert SymbolicModel(config).shape.epochs == 0 and SymbolicModel(config).fresh("s").bumped == []
    bumped = SymbolicModel(config, bumps=True)
    assert (bumped.shape.epochs, bumped.shape.cache, len(bumped.fresh("s").bumped)) == (4, 4, 4)
    with pytest.raises(EncodingError, match="the replication-epoch-bumps model has no inductive proof"):
        SymbolicModel(config, unbounded=frozenset({"crashes"}), bumps=True)
