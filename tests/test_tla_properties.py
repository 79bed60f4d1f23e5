"""Users' own properties in the TLA+ twin (`checker/tla_properties.py`): lowered into TLA+, TLC finds
what the explicit engine finds with the functions themselves (the same violations, witnesses and
shortest lengths), what the twin cannot state is refused by name, and `check --write-tla --property`
writes the module and its .cfg."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import check
from kafka_mc.checker.tla_twins import twin_of
from kafka_mc.checker.tlc import run_tlc
from kafka_mc.cli import main
from kafka_mc.control.replication import model_of
from kafka_mc.model import Config, ReplicationModel
from kafka_mc.model.state import EXPIRED, FENCED
from kafka_mc.properties import SOMETIMES, Property, invariants
from kafka_mc.properties.lowering import NotLowered
from kafka_mc.properties.user import user_property

EXAMPLES = Path(__file__).parent / "examples"
sys.path.insert(0, str(EXAMPLES))
import twin_properties as examples  # noqa: E402

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs java on PATH")

# the shipped invariants as a user writes them (NoAckedDataLoss's function does not lower: it calls
# int.bit_length; leader_holds_every_acked_write below reads the acknowledged writes)
SHIPPED_IN_PYTHON = [invariants.no_committed_data_loss, invariants.no_log_divergence,
                     invariants.no_consumed_record_lost, invariants.hw_below_leo, invariants.leader_epoch_monotonic,
                     invariants.leader_in_isr, invariants.epoch_known_only_when_live]
EXAMPLE_PROPERTIES = [
    user_property(examples.leader_holds_every_acked_write, "leader_holds_every_acked_write"),
    user_property(examples.every_isr_member_is_up_to_the_hw, "every_isr_member_is_up_to_the_hw"),
    user_property(examples.responses_and_views_are_in_range, "responses_and_views_are_in_range"),
    user_property(examples.replica_b_never_leads, "replica_b_never_leads"),
    user_property(examples.committed_records_stay_committed, "committed_records_stay_committed"),
    user_property(examples.hw_never_moves_back_on_a_live_leader, "hw_never_moves_back"),
    Property("two_replicas_hold_a_record", SOMETIMES, "a witness", examples.two_replicas_hold_a_record,
             predicate=examples.two_replicas_hold_a_record),
]
SHIPPED = [user_property(function, function.__name__) for function in SHIPPED_IN_PYTHON]
# the ELR (KIP-966's eligible leader replicas): controller.elr with EligibleLeaders, else 0
ELR_PROPERTIES = [
    user_property(examples.elr_is_always_empty, "elr_is_always_empty"),
    user_property(examples.elr_and_isr_are_disjoint, "elr_and_isr_are_disjoint"),
    user_property(examples.live_elr_members_hold_every_committed_record,
                  "live_elr_members_hold_every_committed_record"),
    Property("only_the_elr_is_left", SOMETIMES, "a witness", examples.only_the_elr_is_left,
             predicate=examples.only_the_elr_is_left),
    # the last known leader (KAFKA-15584): controller.lastKnownElr with EligibleLeaders, else 0
    user_property(examples.last_known_leader_only_while_leaderless, "last_known_leader_only_while_leaderless"),
    Property("only_the_last_known_leader_is_left", SOMETIMES, "a witness", examples.only_the_last_known_leader_is_left,
             predicate=examples.only_the_last_known_leader_is_left),
]
# the removals a KRaft leader has not read (`--metadata-lag`): controller.unseen, {} without MetadataLag
LAG_PROPERTIES = [
    user_property(examples.unread_removals_are_out_of_the_isr, "unread_removals_are_out_of_the_isr"),
    user_property(examples.every_removal_is_read_at_once, "every_removal_is_read_at_once"),
    Property("a_removed_member_still_counts", SOMETIMES, "a witness", examples.a_removed_member_still_counts,
             predicate=examples.a_removed_member_still_counts),
]
# the requests delayed (`--delays`): controller.proposal and reregistered, delays, each replica's delayedFetch and
# delayedFetchStale; and the disks lost (`--disk-failures`): diskFailures
DELAY_PROPERTIES = [
    *(user_property(getattr(examples, name), name)
      for name in ("no_proposal_in_flight", "no_reregistration_since_a_proposal", "no_request_delayed_yet",
                   "no_fetch_delayed", "no_stale_fetch_delayed", "proposals_add_replicas_outside_the_isr")),
    Property("a_stale_fetch_waits_at_the_leader", SOMETIMES, "a witness", examples.a_stale_fetch_waits_at_the_leader,
             predicate=examples.a_stale_fetch_waits_at_the_leader),
]
# the leader each replica follows (leaderId: remembered to 2.0.1, NoLeader from 2.1) and the epochs the
# controller's epoch bumps made (Bumped: {} without EpochBump)
LEADER_PROPERTIES = [
    *(user_property(getattr(examples, name), name)
      for name in ("every_replica_follows_the_current_leader", "no_replica_remembers_a_leader",
                   "replicas_follow_replicas")),
    Property("a_replica_follows_another", SOMETIMES, "a witness", examples.a_replica_follows_another,
             predicate=examples.a_replica_follows_another),
]
BUMP_PROPERTIES = [user_property(getattr(examples, name), name)
                   for name in ("no_epoch_bumped", "bumped_epochs_are_past_or_current")]
# each configuration with the properties it checks: Case L and D break the shipped invariants; the
# examples read every other field the twin maps
RUNS = [
    pytest.param(Config("hw", replicas=2, messages=2, crashes=2, elections=1), SHIPPED, id="hw-case-l-d-shipped"),
    pytest.param(Config("kip-320", replicas=3, messages=1, crashes=1, elections=1, acks="1", unclean=True),
                 EXAMPLE_PROPERTIES, id="kip320-3r-acks1-unclean-examples"),
    pytest.param(Config("kip-966", replicas=2, messages=1, crashes=2, elections=2, min_isr=2), ELR_PROPERTIES,
                 id="kip966-min-isr-2-elr"),
    # no ELR in the twin (EligibleLeaders FALSE): it reads 0, nothing fails and the witness is not reached,
    # but B leads
    pytest.param(Config("kafka-15583", replicas=2, messages=1, crashes=2, elections=2, min_isr=2),
                 [*ELR_PROPERTIES, user_property(examples.replica_b_never_leads, "replica_b_never_leads")],
                 id="kafka15583-min-isr-2-no-elr"),
    pytest.param(Config("kip-966", replicas=2, messages=1, crashes=1, elections=1, min_isr=2, metadata_lag=True),
                 LAG_PROPERTIES, id="kip966-metadata-lag"),
    pytest.param(Config("kafka-13141", replicas=2, messages=1, crashes=1, elections=1, delays=1), DELAY_PROPERTIES,
                 id="kafka13141-delays"),
    pytest.param(Config("kip-966", replicas=2, messages=1, crashes=2, elections=2, min_isr=2, disk_failures=1),
                 [user_property(examples.no_disk_lost, "no_disk_lost"),
                  user_property(examples.lost_disks_are_crashes, "lost_disks_are_crashes")], id="kip966-disk-failures"),
    pytest.param(Config("hw", replicas=2, messages=1, crashes=1, elections=2), LEADER_PROPERTIES,
                 id="hw-followed-leaders"),
]


@needs_java
@pytest.mark.parametrize("config, properties", RUNS)
def test_tlc_finds_what_the_functions_find(config, properties):
    """TLC on the lowered properties and the explicit engine on the functions: the same violations,
    witnesses and shortest lengths, the same states."""
    expected = check(config, properties, keep_going=True)
    assert expected.complete and expected.violations
    assert expected.witness_traces or properties is SHIPPED or config.protocol == "kafka-15583" or \
        config.disk_failures
    tlc = run_tlc(model_of(config, properties), timeout=300)
    assert tlc.distinct_states == expected.stats.distinct_states
    assert tlc.violations == {v.invariant: len(v.trace) + 1 for v in expected.violations}
    assert tlc.reached == {name: len(trace) + 1 for name, trace in expected.witness_traces.items()}


@needs_java
def test_tlc_reads_the_bumped_epochs_as_the_explicit_engine_does():
    """`controller.bumped` on the twin with `EpochBump` (a mask of Bumped's epochs): TLC finds the
    explicit engine's violations at its shortest lengths, in the same states; without the bumps it reads 0."""
    from kafka_mc.control.epoch_bumps import EpochBumpSystem

    config = Config("hw", replicas=2, messages=1, crashes=2, elections=1)
    for model in (EpochBumpSystem(config, BUMP_PROPERTIES), model_of(config, BUMP_PROPERTIES)):
        expected = check(model, keep_going=True)
        tlc = run_tlc(model, timeout=300)
        assert tlc.distinct_states == expected.stats.distinct_states
        assert tlc.violations == {v.invariant: len(v.trace) + 1 for v in expected.violations}
        assert set(tlc.violations) == ({"no_epoch_bumped"} if isinstance(model, EpochBumpSystem) else set())


@pytest.mark.parametrize("config", [p.values[0] for p in RUNS])
def test_what_the_twin_reads_as_constant_is_constant_and_no_step_stutters(config):
    """The fields the twin lacks hold the values it reads for them in every reachable state of the
    configurations it covers, and no step leaves a state unchanged (so `[][P]_vars` sees every step)."""
    model = ReplicationModel(config)
    seen = set(model.initial_states())
    frontier = list(seen)
    while frontier:
        following = []
        for state in frontier:
            assert state.consumed == state.committed
            assert state.zk_cut == state.peer_cut == state.cuts == 0
            for replica in state.replicas:
                assert replica.unflushed == 0 and replica.stale_isr == 0
                assert replica.status != EXPIRED and replica.role != FENCED
            for action, after in model.successors(state):
                assert after != state, action
                if after not in seen:
                    seen.add(after)
                    following.append(after)
        frontier = following


def reads_the_action(before, action, after):
    return action.name != "ReplicaCrash"


def overflows(state):
    return (state.written << 40) >= 0


def Init(state):  # noqa: N802: a name the twin's modules define
    return True


@pytest.mark.parametrize("function, error, message", [
    (reads_the_action, NotLowered, "property reads_the_action: the step's action (action.name) cannot be stated in "
                                   "the TLA+ twin"),
    (overflows, NotLowered, "beyond TLC's 32-bit integers"),
    (Init, ValueError, "property 'Init' cannot be named in the TLA+ twin: the name is defined by the twin's modules"),
])
def test_what_the_twin_cannot_state_is_refused_by_name(function, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace("+", r"\+")):
        twin_of(model_of(Config("hw"), [user_property(function, function.__name__)]))


def test_the_replicas_are_taken_in_kafka_mcs_order():
    twin = twin_of(model_of(Config("hw", replicas=3), [user_property(examples.replica_b_never_leads,
                                                                     "replica_b_never_leads")]))
    cfg = twin.config_text(twin.properties)
    assert "ReplicaA = A\n    ReplicaB = B\n    ReplicaC = C" in cfg
    assert "ReplicaAt == <<ReplicaA, ReplicaB, ReplicaC>>" in twin.modules["KafkaHwProperties"]
    assert twin.module == "KafkaHwProperties" and twin.properties == ("replica_b_never_leads",)


def test_write_tla_writes_the_users_properties(capsys, tmp_path):
    """`check --write-tla DIR --property FILE:NAME` writes the twin with the property lowered into it
    and a .cfg that checks it (a step property as an action property)."""
    props = EXAMPLES / "twin_properties.py"
    code = main(["check", "--engine", "python", "--protocol", "leader-epoch", "--messages", "1", "--crashes", "1",
                 "--quiet", "--write-tla", str(tmp_path / "tla"), "--property", f"{props}:every_isr_member_is_up_to_the_hw",
                 "--property", f"{props}:committed_records_stay_committed"])
    assert code == exitcodes.OK, capsys.readouterr().err
    module = (tmp_path / "tla" / "KafkaLeaderEpochProperties.tla").read_text()
    assert "every_isr_member_is_up_to_the_hw ==" in module
    assert "committed_records_stay_committed == [][committed_records_stay_committedStep]_vars" in module
    cfg = (tmp_path / "tla" / "KafkaLeaderEpochProperties.cfg").read_text()
    assert cfg.split("INVARIANTS")[1].split("PROPERTIES")[0].split() == ["every_isr_member_is_up_to_the_hw"]
    assert cfg.split("PROPERTIES")[1].split() == ["committed_records_stay_committed"]
    assert {p.name for p in tmp_path.joinpath("tla").iterdir()} >= {
        "KafkaLeaderEpoch.tla", "KafkaReplication.tla", "KafkaProtocols.tla"}
