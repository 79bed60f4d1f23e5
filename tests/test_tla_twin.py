"""The TLA+ twin (model/tla) and the BFS engine agree, state for state, under TLC: on the
replication model, and on it with the controller's epoch bumps (`model/epoch_bumps.py`).

Counting convention: a TLC error trace lists states, the initial one included; a
kafka-mc trace lists actions, so a shortest violation of `len(trace)` actions is a
TLC trace of `len(trace) + 1` states. Likewise TLC's depth counts states: it is the
BFS engine's depth plus one.
"""

import shutil

import pytest

from kafka_mc.checker import check
from kafka_mc.checker.tla_twins import INVARIANT_NAMES, TLA_DIR, tla_module_for, tlc_config_text, twin_of
from kafka_mc.checker.tlc import TlcError, parse_statistics, parse_violation, run_tlc
from kafka_mc.checker.tla_modules import variant_module
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.model import PROTOCOLS, Config
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.model.replication import ReplicationModel
from kafka_mc.model.state import FOLLOWER, NO_LEADER, TRUNCATING, replica_name
from kafka_mc.properties import PROPERTIES
from kafka_mc.properties.user import user_property
from kafka_mc.testing import reachable_states

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java on PATH")

TWIN_CONFIGS = [
    pytest.param(Config(protocol="hw", replicas=2, messages=2, crashes=1, elections=1), id="hw-2r"),
    pytest.param(Config(protocol="leader-epoch", replicas=2, messages=2, crashes=1, elections=1), id="le-2r"),
    pytest.param(Config(protocol="leader-epoch", replicas=2, messages=2, crashes=1, elections=1, min_isr=2),
                 id="le-2r-min-isr-2"),
    pytest.param(Config(protocol="hw", replicas=3, messages=1, crashes=1, elections=1), id="hw-3r",
                 marks=pytest.mark.slow),
    pytest.param(Config(protocol="leader-epoch", replicas=3, messages=1, crashes=1, elections=1), id="le-3r",
                 marks=pytest.mark.slow),
    # unclean election loses committed data and makes logs diverge under both protocols
    pytest.param(Config(protocol="hw", replicas=2, messages=2, crashes=1, elections=1, unclean=True),
                 id="hw-2r-unclean"),
    pytest.param(Config(protocol="leader-epoch", replicas=2, messages=2, crashes=1, elections=1, unclean=True),
                 id="le-2r-unclean"),
    pytest.param(Config(protocol="hw", replicas=3, messages=1, crashes=1, elections=1, unclean=True),
                 id="hw-3r-unclean", marks=pytest.mark.slow),
    # Case L and Case D: hw truncation fails with clean elections once two brokers crash
    pytest.param(Config(protocol="hw", replicas=2, messages=2, crashes=2, elections=1), id="hw-2r-case-l-d"),
    # the later variants; diverging-epoch loses committed data when a diverging fetch joins the ISR
    pytest.param(Config(protocol="kip-279", replicas=2, messages=2, crashes=1, elections=2), id="kip279-2r"),
    # KAFKA-7164: a follower skips a LeaderAndIsr of the leader it follows in the next epoch only
    pytest.param(Config(protocol="kafka-7415", replicas=2, messages=1, crashes=2, elections=2), id="kafka7415-2r"),
    pytest.param(Config(protocol="kip-320", replicas=2, messages=2, crashes=1, elections=2), id="kip320-2r"),
    pytest.param(Config(protocol="diverging-epoch", replicas=2, messages=2, crashes=2, elections=2),
                 id="diverging-2r"),
    pytest.param(Config(protocol="kafka-13141", replicas=2, messages=2, crashes=1, elections=2), id="kafka13141-2r"),
    # a crash that loses the disk: the last ISR member, elected again, holds nothing; one of the two crashes may
    # (the twin counts disk failures, as the model does, only where that bound is below the crashes')
    pytest.param(Config(protocol="kafka-14704", replicas=2, messages=2, crashes=2, elections=1, disk_failures=1),
                 id="kafka14704-2r-one-disk-failure"),
    # KAFKA-15583: the HW stays put while the ISR is below min.insync.replicas
    pytest.param(Config(protocol="kafka-15583", replicas=3, messages=1, crashes=1, elections=1, min_isr=2),
                 id="kafka15583-3r-min-isr-2"),
    # KIP-966: the ELR kept on every ISR change, an empty ISR, an election from the ELR, an unclean election
    # clearing it, a restart leaving it; with min.insync.replicas 1 an unclean election loses committed data
    pytest.param(Config(protocol="kip-966", replicas=2, messages=1, crashes=2, elections=2, min_isr=2, unclean=True),
                 id="kip966-2r-min-isr-2-unclean"),
    pytest.param(Config(protocol="kip-966", replicas=2, messages=1, crashes=2, elections=2, min_isr=1, unclean=True),
                 id="kip966-2r-unclean"),
    # delayed requests: AlterPartition in flight and stale fetches, under each rule of the controller and the leader
    pytest.param(Config(protocol="kafka-13141", replicas=2, messages=1, crashes=1, elections=1, delays=1),
                 id="kafka13141-2r-delays"),
    pytest.param(Config(protocol="kafka-14704", replicas=2, messages=1, crashes=2, elections=1, delays=1,
                        disk_failures=2), id="kafka14704-2r-delays"),
    pytest.param(Config(protocol="kip-966", replicas=2, messages=1, crashes=2, elections=2, delays=1,
                        disk_failures=2), id="kip966-2r-delays"),
    pytest.param(Config(protocol="kip-966", replicas=2, messages=1, crashes=2, elections=1, delays=2,
                        disk_failures=2), id="kip966-2r-delays-2"),
    # a leader reading the metadata late: its ISR with the removals it has not read, a refused shrink and
    # expansion left pending, a delayed request kept across the controller's change, the change read
    pytest.param(Config(protocol="kip-966", replicas=3, messages=0, crashes=1, elections=1, min_isr=2, delays=1,
                        metadata_lag=True), id="kip966-3r-metadata-lag"),
    pytest.param(Config(protocol="kip-966", replicas=2, messages=1, crashes=2, elections=2, min_isr=2, delays=1,
                        metadata_lag=True), id="kip966-2r-metadata-lag"),
]


@needs_java
@pytest.mark.parametrize("config", TWIN_CONFIGS)
def test_tlc_and_kafka_mc_agree(config):
    expected = check(config, keep_going=True)
    assert expected.complete
    tlc = run_tlc(config, timeout=120)

    assert tlc.distinct_states == expected.stats.distinct_states
    assert tlc.states_generated == expected.stats.states_generated
    assert tlc.depth == expected.stats.depth + 1
    assert set(tlc.violated) == set(expected.violated)
    for violation in expected.violations:
        assert tlc.violations[violation.invariant] == len(violation.trace) + 1, violation.invariant
        assert tlc.shortest_actions(violation.invariant) == len(violation.trace)


def test_config_text_sets_every_constant_and_lists_the_invariants():
    config = Config(protocol="leader-epoch", replicas=3, messages=2, crashes=1, elections=2,
                    acks="1", min_isr=2, unclean=True)
    text = tlc_config_text(config)
    for line in ("Replicas = {A, B, C}", "MaxMessages = 2", "MaxCrashes = 1", "MaxElections = 2",
                 "AcksAll = FALSE", "MinIsr = 2", "Unclean = TRUE", "SPECIFICATION Spec"):
        assert line in text
    assert text.split("INVARIANTS")[1].split() == list(INVARIANT_NAMES)
    assert "INVARIANTS" not in tlc_config_text(config, invariants=())


def test_every_protocol_has_a_twin_and_others_are_refused():
    assert tla_module_for("hw") == "KafkaHw"
    assert tla_module_for("leader-epoch") == "KafkaLeaderEpoch"
    assert all((TLA_DIR / f"{tla_module_for(name)}.tla").is_file() for name in PROTOCOLS)
    with pytest.raises(ValueError, match="unknown"):
        tla_module_for("raft")
    with pytest.raises(ValueError, match="no invariant"):
        tlc_config_text(Config(), invariants=("Liveness",))


@pytest.mark.parametrize("config, rules", [
    pytest.param(Config("hw", 2, 2, 1, 1), {"skipped"}, id="hw-2r"),
    pytest.param(Config("kafka-7415", 2, 1, 2, 2), {"skipped", "missed an epoch"}, id="kafka7415-2r"),
    pytest.param(Config("kip-320", 2, 2, 1, 2), set(), id="kip320-2r"),
])
def test_the_twin_configurations_use_each_rule_of_the_skip(config, rules):
    """Configurations of `test_tlc_and_kafka_mc_agree` reach each rule of the skip (`follower_skips`, the
    twin's SkipsLeaderAndIsr): a replica told of a newer epoch of the leader it follows takes the epoch only,
    or, under KAFKA-7164, acts on it as a new follower as it missed an epoch; variants from 2.1 remember no
    leader (`Replica.leader_id`, the twin's leaderId, stays NoLeader)."""
    model = ReplicationModel(config)
    fired: set[str] = set()
    for state in reachable_states(config):
        assert model.protocol.remembers_leader or all(r.leader_id == NO_LEADER for r in state.replicas)
        for action, after in model.successors(state):
            before, controller = state.replicas[action.replica], state.controller
            if action.name == "BecomeFollower" and before.leader_id == controller.leader:
                skips = model.protocol.skips_leader_and_isr(before, controller.leader, controller.epoch)
                assert not skips or after.replicas[action.replica] == before._replace(epoch=controller.epoch)
                fired.add("skipped" if skips else "missed an epoch")
    assert fired == rules


def test_the_variant_modules_in_the_repository_are_the_generated_ones():
    for protocol in PROTOCOLS.values():
        path = TLA_DIR / f"{tla_module_for(protocol.name)}.tla"
        assert path.read_text(encoding="utf-8") == variant_module(protocol), \
            f"{path.name} differs from its declaration: python -m kafka_mc.checker.tla_modules rewrites it"


TRACE_OUTPUT = """\
Error: Invariant NoCommittedDataLoss is violated.
Error: The behavior up to this point is:
State 1: <Initial predicate>
/\\ written = 0

State 2: <ProducerWrite line 190, col 5 to line 199, col 25 of module KafkaReplication>
/\\ written = 1

385 states generated, 234 distinct states found, 106 states left on queue.
"""

COMPLETE_OUTPUT = """\
Model checking completed. No error has been found.
2,544 states generated, 1,264 distinct states found, 0 states left on queue.
The depth of the complete state graph search is 18.
"""


def test_tlc_output_parsing():
    assert parse_violation(TRACE_OUTPUT) == ("NoCommittedDataLoss", 2)
    assert parse_violation("Error: Invariant LeaderInIsr is violated by the initial state:\n/\\ x = 1\n") \
        == ("LeaderInIsr", 1)
    assert parse_violation(COMPLETE_OUTPUT) is None
    assert parse_statistics(COMPLETE_OUTPUT) == (2544, 1264, 18)
    with pytest.raises(TlcError):
        parse_statistics(TRACE_OUTPUT)


def test_one_runner_for_every_twin_and_a_model_without_one_is_refused_by_name():
    from kafka_mc.control import ControllerConfig, ControllerModel, PartitionFsmConfig, PartitionFsmModel

    replication = twin_of(Config(protocol="kip-320"))
    assert replication.module == "KafkaKip320" and set(replication.modules) == {
        "KafkaReplication", "KafkaProtocols", "KafkaKip320"}
    assert replication.spec_files()["KafkaKip320.cfg"] == tlc_config_text(Config(protocol="kip-320"))
    controller = twin_of(ControllerModel(ControllerConfig(fence_epochs=False)))
    assert controller.properties == ("OneControllerPerEpoch", "StaleControllerIgnored")
    assert "FenceEpochs = FALSE" in controller.spec_files()["KafkaController.cfg"]
    with pytest.raises(ValueError, match="the partition-fsm model has no TLA\\+ twin; models with one: "
                                         "replication, controller"):
        run_tlc(PartitionFsmModel(PartitionFsmConfig()))
    with pytest.raises(ValueError, match="does not model the setting flush"):
        run_tlc(Config(flush=False))


# ---------------------------------------------------------------- the controller's epoch bumps

# the kernel's bump conformance configurations without network failures (tests/test_epoch_bumps.py),
# and one with two crashes and no message, where a follower truncating by OffsetsForLeaderEpoch hears
# of a bump: each with the rules of the bump its steps use (`bump_rules_fired`)
BUMP_CONFIGS = [
    pytest.param(Config("leader-epoch", 3, 1, 1, 1),
                 {"taken", "skipped by a follower", "fetch reaches", "acked across"}, id="le-3r"),
    pytest.param(Config("kip-320", 3, 1, 1, 1), {"taken", "fetch fenced", "acked across"}, id="kip320-3r"),
    pytest.param(Config("hw", 2, 2, 2, 1), {"taken", "lost", "election after", "acked across"}, id="hw-2r"),
    pytest.param(Config("diverging-epoch", 2, 2, 2, 1), {"taken", "lost", "election after", "acked across"},
                 id="diverging-2r"),
    pytest.param(Config("kip-279", 3, 0, 2, 0),
                 {"taken", "lost", "skipped by a follower", "skipped while truncating", "fetch reaches",
                  "truncation reaches"}, id="kip279-3r-no-message"),
    # the bump beside the HW held below min.insync.replicas and KIP-841 (ZooKeeper mode, 3.7)
    pytest.param(Config("kafka-15583", 2, 2, 2, 1, min_isr=2), {"taken", "lost", "election after", "acked across"},
                 id="kafka15583-2r-min-isr-2"),
]


def bump_rules_fired(config: Config) -> set[str]:
    """The rules of `model.epoch_bumps` that the reachable steps of `config` use: the bump taken by the
    leader or lost with it (crashed); a follower of the leader skipping it (up to 2.0.1: `follower_skips`,
    `SkipsLeaderAndIsr` in the twin); a request from an epoch the bump passed over reaching the leader (up
    to 2.0) or fenced (from 2.1); a write acknowledged by a leader in an epoch bumped after it took the
    write; an election after a bump (the elections bound counts elections, not epochs). On the way it checks what
    `checker/tla_properties.py` assumes of the states of the configurations the twin covers: no
    consumed record but the committed ones, and no step that leaves a state unchanged."""
    model = EpochBumpModel(config)
    fired: set[str] = set()
    seen = set(model.initial_states())
    frontier = list(seen)
    while frontier:
        following = []
        for state in frontier:
            assert state.consumed == state.committed
            controller = state.controller
            steps = list(model.successors(state))
            enabled = {str(action) for action, _ in steps}
            current, start = model._current_leader(state), model._leadership_start(state, controller.epoch)
            for index, replica in enumerate(state.replicas):
                if current in (NO_LEADER, index) or not replica.alive or not start <= replica.epoch < controller.epoch:
                    continue
                if replica.role == FOLLOWER and not replica.response:
                    reaches = f"LeaderHandleFetchRequest({replica_name(index)})" in enabled
                    fired.add("fetch reaches" if reaches else "fetch fenced")
                if replica.role == TRUNCATING:
                    reaches = f"FollowerTruncateByLeaderEpoch({replica_name(index)})" in enabled
                    fired.add("truncation reaches" if reaches else "truncation fenced")
            for action, after in steps:
                assert after != state, action
                before = state.replicas[action.replica]
                if action.name == "ControllerNoticeFailure" and after.controller.bumped != controller.bumped:
                    fired.add("taken" if after.replicas[after.controller.leader].epoch == after.controller.epoch
                              else "lost")
                if action.name == "BecomeFollower" and start <= before.epoch \
                        and model.protocol.skips_leader_and_isr(before, controller.leader, controller.epoch):
                    fired.add("skipped by a follower" if before.role == FOLLOWER else "skipped while truncating")
                if action.name == "ControllerElectLeader" and controller.bumped:
                    fired.add("election after")
                new = after.acked & ~state.acked
                if new and after.controller.leader != NO_LEADER:
                    leader = after.replicas[after.controller.leader]
                    if any(record.epoch < leader.epoch for record in leader.log if new >> record.msg & 1):
                        fired.add("acked across")
                if after not in seen:
                    seen.add(after)
                    following.append(after)
        frontier = following
    return fired


@pytest.mark.parametrize("config, rules", BUMP_CONFIGS)
def test_the_bump_configurations_use_each_rule_of_the_bump(config, rules):
    assert bump_rules_fired(config) == rules


@needs_java
@pytest.mark.parametrize("config", [pytest.param(param.values[0], id=param.id,  # le-3r's rules: kip279-3r and kip320-3r
                                                 marks=[pytest.mark.slow] * (param.id == "le-3r"))
                                    for param in BUMP_CONFIGS])
def test_tlc_and_kafka_mc_agree_with_the_epoch_bump(config):
    """The twin with `EpochBump` and the explicit engine on `EpochBumpSystem`: the same states, depth,
    violated invariants and shortest lengths."""
    model = EpochBumpSystem(config)
    expected = check(model, keep_going=True)
    assert expected.complete
    tlc = run_tlc(model, timeout=120)

    assert tlc.distinct_states == expected.stats.distinct_states
    assert tlc.states_generated == expected.stats.states_generated
    assert tlc.depth == expected.stats.depth + 1
    assert tlc.violations == {violation.invariant: len(violation.trace) + 1 for violation in expected.violations}


def test_the_bump_twin_is_the_replication_twin_run_with_the_bump_and_refuses_network_failures_by_name():
    for protocol, skips in (("kip-279", "TRUE"), ("kip-320", "FALSE")):
        config = Config(protocol, 3, 1, 1, 1)
        bump, plain = twin_of(EpochBumpSystem(config)), twin_of(config)
        assert bump.module == plain.module and bump.modules == plain.modules
        assert bump.properties == plain.properties == INVARIANT_NAMES
        cfg = bump.spec_files()[f"{bump.module}.cfg"]
        assert "EpochBump = TRUE" in cfg and f"SkipsSameLeader = {skips}" in cfg
        assert "EpochBump = FALSE" in tlc_config_text(config) and "SkipsSameLeader = FALSE" in tlc_config_text(config)
    # a user's property is stated in a module extending the variant's, run with the bump too
    users = twin_of(EpochBumpSystem(Config("kip-320", 3, 1, 1, 1),
                                    (*PROPERTIES, user_property(leader_is_in_its_isr, "leader_is_in_its_isr"))))
    assert users.module == "KafkaKip320Properties" and users.properties[-1] == "leader_is_in_its_isr"
    assert "EpochBump = TRUE" in users.spec_files()["KafkaKip320Properties.cfg"]
    with pytest.raises(ValueError, match="the TLA\\+ twin does not model the setting partitions=1"):
        twin_of(EpochBumpSystem(Config("kip-320", 2, 1, 1, 0, partitions=1)))


def leader_is_in_its_isr(state) -> bool:
    leader = state.controller.leader
    return leader < 0 or state.controller.isr >> leader & 1 == 1
