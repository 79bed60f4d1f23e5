"""The protocol variants after KIP-101: each fix turns the counterexample of the variant before it
green, the new rules act as Kafka's code does, and the protocols are a layer the replication
model calls without being imported back."""

import ast
import dataclasses
from pathlib import Path

import pytest

from kafka_mc.checker import check
from kafka_mc.checker.scenario import documented_scenarios, load_scenario, replay
from kafka_mc.checker.kernel.layout import CHOICE_CODES, settings
from kafka_mc.checker.symbolic.transitions import EncodingError, SymbolicModel
from kafka_mc.checker.symbolic.truncation import SymbolicProtocol
from kafka_mc.checker.tla_modules import OPERATORS, variant_module
from kafka_mc.model import PROTOCOLS, Config, Protocol, ReplicationModel, parse_action, register_protocol
from kafka_mc.model.protocols import (
    CHOICES, HISTORY, ProtocolError, UnencodedChoice, require_encoded, unregister_protocol,
)
from kafka_mc.model.state import FOLLOWER, LEADER, TRUNCATING, FetchResponse, Record, Replica

FINDINGS = {path.stem: path for path in documented_scenarios("findings")}
MODEL_DIR = Path(__file__).parent.parent / "model"

# (the counterexample of a variant, the same story under the variant that fixes it, the step of
# the counterexample the fix disables: None when every step stays enabled)
FIXES = [
    ("kafka-6361-leader-epoch", "kafka-6361-kip-279", None),  # KIP-279, 2.0.0
    ("fast-failover-kip-279", "fast-failover-kafka-7415", None),  # KAFKA-7415, 2.0.1
    ("back-to-back-elections-kip-279", "back-to-back-elections-kafka-7415", None),  # KAFKA-7415, 2.0.1
    ("isr-join-lagging-hw-kip-279", "isr-join-lagging-hw-kafka-7415", 17),  # KAFKA-7128, 2.0.1
    ("kafka-7164-kip-279", "kafka-7164-kafka-7415", 16),  # KAFKA-7164, 2.0.1
    ("diverging-fetch-joins-isr-diverging-epoch", "diverging-fetch-joins-isr-kafka-13141", 11),
    ("kafka-14704-kafka-13141", "kafka-14704-kafka-14704", None),  # KAFKA-14704, 3.4.1
    ("last-replica-standing-kafka-14704", "last-replica-standing-kafka-15583", None),  # KAFKA-15583, 3.7.0
    ("acked-last-replica-standing-kafka-15583", "acked-last-replica-standing-kip-966", 10),  # KIP-966, 4.1
]


@pytest.mark.parametrize("broken, fixed, disabled", FIXES, ids=[fix[1] for fix in FIXES])
def test_each_fix_turns_the_counterexample_before_it_green(broken, fixed, disabled):
    before, after = load_scenario(FINDINGS[broken]), load_scenario(FINDINGS[fixed])
    replayed = replay(before)
    assert replayed.mismatches == [] and set(replayed.first_breaks) == set(before.expected_violations) != set()
    replayed = replay(after)
    assert replayed.mismatches == [] and replayed.first_breaks == {}
    assert first_disabled_step(before, after.config.protocol) == disabled


def first_disabled_step(scenario, protocol: str) -> int | None:
    """The first step of the scenario that `protocol` does not enable, or None."""
    model = ReplicationModel(dataclasses.replace(scenario.config, protocol=protocol))
    state = model.initial_states()[scenario.trace.initial]
    for number, action in enumerate(scenario.trace.actions, start=1):
        state = model.next_state(state, action)
        if state is None:
            return number
    return None


def test_truncation_on_fetch_loses_an_acks_all_write_with_min_isr_2_and_kafka_13141_refuses_it():
    scenario = load_scenario(FINDINGS["diverging-fetch-acks-all-min-isr-2-diverging-epoch"])
    replayed = replay(scenario)
    assert replayed.mismatches == [] and replayed.first_breaks["NoAckedDataLoss"] == 11
    assert first_disabled_step(scenario, "kafka-13141") == 8  # ProducerWrite(B): NotEnoughReplicas


def test_the_history_is_oldest_first_and_every_variant_is_a_distinct_declaration():
    assert [p.name for p in HISTORY] == ["hw", "leader-epoch", "kip-279", "kafka-7415", "kip-320", "diverging-epoch",
                                            "kafka-13141", "kafka-14704", "kafka-15583", "kip-966"]
    assert [p.name for p in HISTORY] == [name for name in PROTOCOLS if PROTOCOLS[name] in HISTORY]
    assert len({tuple(p.choices().items()) for p in HISTORY}) == len(HISTORY)


@pytest.mark.parametrize("encoded", [
    {name: tuple(codes) for name, codes in CHOICE_CODES.items()},  # the compiled kernel
    SymbolicProtocol.ENCODED,  # Z3
    {name: tuple(values) for name, values in OPERATORS.items()},  # the TLA+ twin
], ids=["kernel", "z3", "tla"])
def test_every_encoding_encodes_every_value_of_every_choice(encoded):
    assert {choice.name: set(choice.values) for choice in CHOICES} == \
        {name: set(values) for name, values in encoded.items()}


def test_a_declaration_names_its_bad_choice_and_what_is_allowed():
    good = HISTORY[2].choices()
    with pytest.raises(ProtocolError, match="isr_join = 'sometimes' is not allowed; allowed: 'leader-hw'"):
        Protocol("mine", "x", "x", **{**good, "isr_join": "sometimes"})
    with pytest.raises(ProtocolError, match="epoch_cache = 1 is not allowed"):
        Protocol("mine", "x", "x", **{**good, "epoch_cache": 1})
    with pytest.raises(ProtocolError, match="truncate_on_fetch needs epoch_lookup = 'kip-279'"):
        Protocol("mine", "x", "x", **{**HISTORY[5].choices(), "epoch_lookup": "kip-101"})
    with pytest.raises(ProtocolError, match="already registered"):
        register_protocol(Protocol("hw", "x", "x", **good))
    with pytest.raises(ProtocolError, match="part of the history"):
        unregister_protocol("hw")


def test_an_encoding_without_a_choice_value_refuses_the_variant_by_name(monkeypatch):
    kip_279 = PROTOCOLS["kip-279"]
    with pytest.raises(UnencodedChoice, match="the GPU kernel cannot run protocol 'kip-279': its epoch_lookup = "
                                              "'kip-279' is not encoded there"):
        require_encoded("GPU kernel", kip_279, {**SymbolicProtocol.ENCODED, "epoch_lookup": ("none", "kip-101")})
    monkeypatch.setitem(CHOICE_CODES, "isr_join", {"leader-hw": 0})
    with pytest.raises(UnencodedChoice, match="compiled kernel cannot run protocol 'kip-320': its isr_join"):
        settings(Config("kip-320"))
    monkeypatch.setitem(SymbolicProtocol.ENCODED, "truncate_on_fetch", (False,))
    with pytest.raises(EncodingError, match="Z3 encoding cannot run protocol 'kafka-13141': its truncate_on_fetch"):
        SymbolicModel(Config("kafka-13141"))
    monkeypatch.setitem(OPERATORS, "new_follower", {})
    with pytest.raises(UnencodedChoice, match="TLA\\+ twin cannot run protocol 'hw': its new_follower"):
        variant_module(PROTOCOLS["hw"])


def test_diverging_epoch_loses_committed_data_with_two_replicas_and_kafka_13141_does_not():
    bounds = dict(replicas=2, messages=2, crashes=2, elections=2)
    broken = check(Config("diverging-epoch", **bounds), keep_going=True, symmetry=True)
    assert {v.invariant: len(v.trace) for v in broken.violations} == {
        "NoCommittedDataLoss": 11, "NoAckedDataLoss": 11, "NoConsumedRecordLost": 11, "NoLogDivergence": 11}
    fixed = check(Config("kafka-13141", **bounds), keep_going=True, symmetry=True)
    assert fixed.complete and not fixed.violations


def replica(log=(), hw=0, epochs=(), role=FOLLOWER) -> Replica:
    return Replica(tuple(Record(m, e) for m, e in log), 0, hw, tuple(epochs), 0, role, 0, (), 0, ())


def test_kafka_7128_rule_needs_the_start_of_the_leaders_epoch():
    leader = replica([(1, 0), (2, 1)], hw=0, epochs=[(0, 0), (1, 1)], role=LEADER)  # LE1 starts at offset 1
    assert PROTOCOLS["kip-279"].may_join_isr(leader, 0)
    assert not PROTOCOLS["kip-320"].may_join_isr(leader, 0)
    assert PROTOCOLS["kip-320"].may_join_isr(leader, 1)
    assert not PROTOCOLS["kip-320"].may_join_isr(leader._replace(hw=2), 1)


def test_a_fetch_diverges_where_readrecords_says_and_the_follower_truncates_as_kip_279():
    protocol = PROTOCOLS["diverging-epoch"]
    leader = replica([(1, 0), (3, 2)], hw=1, epochs=[(0, 0), (2, 1)], role=LEADER)
    assert protocol.fetch_divergence(leader, replica([(1, 0)], epochs=[(0, 0)])) is None  # a prefix
    assert protocol.fetch_divergence(leader, replica()) is None  # no epoch: OffsetsForLeaderEpoch first
    # LE0 ends at 1 on the leader, before the fetch offset 2: truncate to 1
    follower = replica([(1, 0), (2, 0)], hw=1, epochs=[(0, 0)])
    assert protocol.fetch_divergence(leader, follower) == 1
    # the leader has no LE1: it answers LE0 ending at 1; the follower's LE0 ends at 1 too
    follower = replica([(1, 0), (2, 1)], hw=0, epochs=[(0, 0), (1, 1)])
    assert protocol.fetch_divergence(leader, follower) == 1
    # the response's HW is taken before truncation, so it never covers the cut records
    handled = protocol.handle_out_of_range(follower, FetchResponse(1, 2, (), True))
    assert handled.log == (Record(1, 0),) and handled.hw == 1 and handled.epochs == ((0, 0),)


def test_a_follower_with_an_epoch_fetches_at_once_under_truncation_on_fetch():
    protocol = PROTOCOLS["diverging-epoch"]
    assert protocol.become_follower(replica([(1, 0)], epochs=[(0, 0)])).role == FOLLOWER
    assert protocol.become_follower(replica()).role == TRUNCATING
    actions = ReplicationModel(Config("diverging-epoch")).action_names
    assert "FollowerTruncateByLeaderEpoch" in actions and "FollowerTruncateByLeaderEpoch" not in \
        ReplicationModel(Config("hw")).action_names


def test_kafka_13141_leaves_the_leaders_view_of_a_diverging_follower_alone():
    steps = ["ProducerWrite(A)", "ReplicaCrash(A)", "ControllerNoticeFailure(A)", "ReplicaRestart(A)",
             "ControllerElectLeader(B)", "ProducerWrite(B)", "BecomeFollower(A)", "LeaderHandleFetchRequest(A)"]
    after = {}
    for name in ("diverging-epoch", "kafka-13141"):
        model = ReplicationModel(Config(name, messages=2, crashes=2, elections=2))
        state = model.initial_states()[0]
        for step in steps:
            state = model.next_state(state, parse_action(step, model.action_names, 2))
        after[name] = state
    assert after["diverging-epoch"].controller.isr == 0b11 and after["diverging-epoch"].replicas[1].remote_leos[0] == 1
    assert after["kafka-13141"].controller.isr == 0b10 and after["kafka-13141"].replicas[1].remote_leos[0] == -1
    assert after["diverging-epoch"].replicas[0].response == after["kafka-13141"].replicas[0].response == \
        FetchResponse(0, 1, (), True)


def test_from_kip_380_a_crashed_follower_starts_again_only_once_the_controller_has_noticed():
    steps = ["ReplicaCrash(B)"]
    for name, restarts in [("kip-320", True), ("diverging-epoch", False), ("kafka-13141", False),
                           ("kafka-14704", False)]:
        model = ReplicationModel(Config(name, replicas=2, messages=1, crashes=1, elections=1))
        state = model.initial_states()[0]
        for step in steps:
            state = model.next_state(state, parse_action(step, model.action_names, 2))
        assert (model.next_state(state, parse_action("ReplicaRestart(B)", model.action_names, 2)) is not None) \
            == restarts, name
        noticed = model.next_state(state, parse_action("ControllerNoticeFailure(B)", model.action_names, 2))
        assert model.next_state(noticed, parse_action("ReplicaRestart(B)", model.action_names, 2)) is not None


def test_until_kafka_14704_a_diverging_response_raises_the_hw_of_a_follower_that_truncates_short_of_it():
    # B holds m1 in LE0 and an empty LE2; the leader answers LE2 with LE1 ending at 1 and its HW 1. B lacks
    # LE1 and truncates to its own LE0's end, 1 (getOffsetTruncationState): nothing is cut
    follower = replica([(1, 0)], hw=0, epochs=[(0, 0), (2, 1)])
    response = FetchResponse(1, 1, (), True)
    before = PROTOCOLS["kafka-13141"].handle_out_of_range(follower, response)
    after = PROTOCOLS["kafka-14704"].handle_out_of_range(follower, response)
    assert before.log == after.log == (Record(1, 0),) and before.epochs == after.epochs == ((0, 0),)
    assert (before.hw, after.hw) == (1, 0)


def imports_of(path: Path) -> set[str]:
    """The sibling model modules a module imports (relative imports), at any level of nesting."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module)
    return found


def test_the_model_modules_import_no_loop_and_protocols_never_import_the_model():
    graph = {path.stem: imports_of(path) for path in MODEL_DIR.glob("*.py") if path.stem != "__init__"}
    assert imports_of(MODEL_DIR / "protocols.py") == {"state"}
    visiting, done = set(), set()

    def visit(module):
        assert module not in visiting, f"import loop through {module}"
        if module in done:
            return
        visiting.add(module)
        for imported in graph.get(module, ()):
            visit(imported)
        visiting.discard(module)
        done.add(module)

    for module in graph:
        visit(module)
