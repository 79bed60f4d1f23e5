"""A user's property written once in Python, lowered to expressions (`properties.lowering`) and to the
kernel's programs (`checker.kernel.user_properties`): both give the Python function's own verdict, and
its errors, on every reachable state and step; what cannot be lowered is refused by name."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from kafka_mc.checker.kernel.layout import encode
from kafka_mc.checker.kernel.user_properties import evaluate_wide, program
from kafka_mc.model import Config, ReplicationModel
from kafka_mc.model.replication import ACTION_NAMES
from kafka_mc.model.state import FOLLOWER, LEADER
from kafka_mc.properties import invariants
from kafka_mc.properties.expressions import evaluate
from kafka_mc.properties.lowering import NotLowered, lower

sys.path.insert(0, str(Path(__file__).parent / "examples"))
import test_own_property as examples  # noqa: E402

CONFIG = Config("hw", replicas=2, messages=2, crashes=2, elections=2)  # Case L: the data properties fail here


def reachable(config: Config, transitions=ReplicationModel):
    """Every reachable state, and every step out of one (of `transitions`: the replication model's, or the
    model with the controller's epoch bumps)."""
    model = transitions(config)
    seen = set(model.initial_states())
    frontier, steps = list(seen), []
    while frontier:
        following = []
        for state in frontier:
            for action, after in model.successors(state):
                steps.append((state, action, after))
                if after not in seen:
                    seen.add(after)
                    following.append(after)
        frontier = following
    return sorted(seen), steps


STATES, STEPS = reachable(CONFIG)


def outcome(predicate, *arguments) -> str:
    """What the Python function does: holds, fails (False or an assert) or raises."""
    try:
        return "fails" if predicate(*arguments) is False else "holds"
    except AssertionError:
        return "fails"
    except Exception:
        return "raises"


def lowered_outcome(fails: int, raises: int) -> str:
    return "raises" if raises else "fails" if fails else "holds"


def check_every_state(predicate, config: Config = CONFIG, states=STATES) -> dict[str, int]:
    lowered = lower(predicate, config)
    compiled = program(lowered)
    seen: dict[str, int] = {}
    for state in states:
        expected = outcome(predicate, state)
        by_expression = lowered_outcome(evaluate(lowered.fails, state), evaluate(lowered.raises, state))
        by_kernel = lowered_outcome(*evaluate_wide(compiled, config, encode(state)))
        assert by_expression == by_kernel == expected, (predicate.__name__, state)
        seen[expected] = seen.get(expected, 0) + 1
    return seen


STATE_PROPERTIES = [invariants.hw_below_leo, invariants.leader_epoch_monotonic, invariants.leader_in_isr,
                    invariants.epoch_known_only_when_live, invariants.no_committed_data_loss,
                    invariants.no_consumed_record_lost, invariants.no_log_divergence]


@pytest.mark.parametrize("predicate", STATE_PROPERTIES, ids=lambda p: p.__name__)
def test_the_shipped_invariants_written_in_python_lower_to_their_own_verdicts(predicate):
    check_every_state(predicate)


def test_a_lowered_property_fails_where_its_function_fails():
    assert check_every_state(invariants.no_committed_data_loss).get("fails", 0) > 0
    assert check_every_state(invariants.no_log_divergence).get("fails", 0) > 0


def test_the_documented_examples_lower_to_their_own_verdicts():
    consumer = examples.test_a_consumer_never_reads_past_a_record_it_later_cannot_read_again.kafka_mc_property
    assert check_every_state(consumer).get("fails", 0) > 0
    step = examples.test_no_step_drops_a_committed_record.kafka_mc_property
    lowered = lower(step, CONFIG)
    compiled = program(lowered)
    failing = 0
    for before, action, after in STEPS:
        expected = outcome(step, before, action, after)
        by_expression = lowered_outcome(evaluate(lowered.fails, before, action, after),
                                        evaluate(lowered.raises, before, action, after))
        by_kernel = lowered_outcome(*evaluate_wide(compiled, CONFIG, encode(before), encode(after),
                                                   ACTION_NAMES.index(action.name), action.replica))
        assert by_expression == by_kernel == expected, (before, action)
        failing += expected == "fails"
    assert failing > 0



@pytest.mark.parametrize("symmetry", [False, True])
def test_the_kernel_batch_flags_every_step_as_the_function_does(symmetry):
    """A user's step property over every reachable state (two of the kernel's blocks), flagged by
    `KernelBatch.expand_flagging` (on the expansion's own blocks where, without symmetry, its successors
    are the steps' own) and by `step_flags` (the rows expanded again): the function's verdict on every
    step, in the expansion's order."""
    from kafka_mc.checker.kernel.batch import KernelBatch

    step = examples.test_no_step_drops_a_committed_record.kafka_mc_property
    batch, model = KernelBatch(CONFIG, symmetry), ReplicationModel(CONFIG)
    rows = np.stack([batch.pack(state) for state in STATES])
    represented = [batch.state(row) for row in rows]  # with symmetry, a state's representative
    expected = [outcome(step, before, model.action_at(slot), after) != "holds"
                for before in represented for slot, after in model.indexed_successors(before)]
    compiled = program(lower(step, CONFIG))
    (parents, slots, _, successors, _), with_expansion = batch.expand_flagging(rows, [compiled])
    assert [(before, slot) for before in range(len(rows)) for slot, _ in
            model.indexed_successors(represented[before])] == list(zip(parents.tolist(), slots.tolist()))
    again = batch.step_flags(rows, [compiled])
    assert again[0].tolist() == with_expansion[0].tolist() == expected
    assert sum(expected) > 0


def leader_a_holds_a_record(state):
    return state.controller.leader == 0 and state.replicas[0].leo > 0  # a bool, False where it fails


def leader_a_holds_a_record_by_bit_and(state):
    return (state.controller.leader == 0) & (state.replicas[0].leo > 0)  # bool & bool is a bool


def leaderless_or_b_ahead(state):
    return state.controller.leader == -1 or state.replicas[1].leo > state.replicas[0].leo


def exactly_one_holds_a_record(state):
    return (state.replicas[0].leo > 0) ^ (state.replicas[1].leo > 0)


def least_of_two_truths(state):
    return min(state.replicas[0].hw > 0, state.replicas[1].hw > 0)


def chosen_truth(state):
    return state.replicas[0].hw > 0 if state.controller.leader == 0 else state.replicas[1].hw > 0


def flag_or_count(state):
    return state.controller.leader == 0 and state.replicas[0].leo  # False, or a number (never False)


@pytest.mark.parametrize("predicate", [leader_a_holds_a_record, leader_a_holds_a_record_by_bit_and,
                                       leaderless_or_b_ahead, exactly_one_holds_a_record, least_of_two_truths,
                                       chosen_truth, flag_or_count], ids=lambda p: p.__name__)
def test_a_bool_made_of_bools_fails_where_it_is_false(predicate):
    """`and`, `or`, `&`, `^`, `min` and a conditional of two bools give a bool, which a property may
    return: it fails where that bool is False (they once lowered to a number, never False)."""
    assert check_every_state(predicate).get("fails", 0) > 0


def first_record_is_m1(state):
    return state.replicas[0].log[0].msg == 1  # IndexError on an empty log


def leaders_field(state):
    return state.leader.hw >= 0  # AttributeError without a leader


def branches_loops_and_helpers(state):
    """if/elif/else, a for loop with continue, an assignment merged across branches, a helper called."""
    best = -1
    for index, replica in enumerate(state.replicas):
        if not replica.alive:
            continue
        elif replica.role == LEADER:
            best = max(best, replica.hw)
        else:
            best = best if replica.role != FOLLOWER else best + 0
    total = sum(record.epoch for record in state.replicas[0].log[:2])
    assert total >= 0, f"negative epochs {total}"
    return best <= most_records(state) and (state.controller.isr & 1 or state.controller.isr >> 1 & 1)


def most_records(state):
    return max(len(replica.log) for replica in state.replicas) if len(state.replicas) > 1 else 0


@pytest.mark.parametrize("predicate", [first_record_is_m1, leaders_field, branches_loops_and_helpers],
                         ids=lambda p: p.__name__)
def test_errors_branches_loops_and_calls_lower_to_the_functions_outcome(predicate):
    seen = check_every_state(predicate)
    if predicate is not branches_loops_and_helpers:
        assert seen.get("raises", 0) > 0 and seen.get("holds", 0) + seen.get("fails", 0) > 0


def with_while(state):
    while state.written:
        return True
    return False


def with_try(state):
    try:
        return state.replicas[0].log[0].msg == 1
    except IndexError:
        return True


def with_unknown_call(state):
    return print(state.written)


def with_string_field(state):
    return state.replicas[0].name == "A"


def with_sorted(state):
    return sorted(state.replicas[0].log) == list(state.replicas[0].log)


@pytest.mark.parametrize("predicate, construct", [
    (with_while, "the statement while cannot be lowered (test_lowering.py, line"),
    (with_try, "the statement try cannot be lowered (test_lowering.py, line"),
    (with_unknown_call, "a call of 'print' cannot be lowered (test_lowering.py, line"),
    (with_string_field, "the replica's field 'name' cannot be lowered (test_lowering.py, line"),
    (with_sorted, "a call of 'sorted' cannot be lowered (test_lowering.py, line"),
    (lambda state: True, "only a def function is lowered"),
], ids=["while", "try", "print", "unknown-field", "sorted", "lambda"])
def test_what_cannot_be_lowered_is_refused_naming_the_construct_and_line(predicate, construct):
    with pytest.raises(NotLowered, match=None) as refused:
        lower(predicate, CONFIG)
    assert construct in str(refused.value)


# ------------------------------------------------------------------------------ on the engines

def leader_holds_its_isr(state):
    """The controller's leader is in its ISR (`isr >> leader & 1`: shifts and masks lowered)."""
    leader = state.controller.leader
    return leader < 0 or bool(state.controller.isr >> leader & 1)


def test_z3_finds_a_users_state_and_step_property_at_the_explicit_engines_shortest_length():
    from kafka_mc.checker import check
    from kafka_mc.checker.symbolic.bmc import bounded_check
    from kafka_mc.properties.user import user_property

    state_property = user_property(invariants.no_committed_data_loss, "committed_kept")
    step = user_property(examples.test_no_step_drops_a_committed_record.kafka_mc_property, "no_step_drops")
    z3_result = bounded_check(CONFIG, 10, [state_property, step], keep_going=True)
    lengths = {v.invariant: len(v.trace) for v in z3_result.violations}
    explicit = check(CONFIG, [state_property])
    assert lengths["committed_kept"] == len(explicit.violations[0].trace) == 10
    assert lengths["no_step_drops"] == 7  # docs/properties.md: under hw it fails in 7 steps


def test_prove_takes_a_users_state_invariant_and_refuses_what_it_cannot_encode():
    from kafka_mc.checker.symbolic.induction import prove
    from kafka_mc.properties.user import user_property

    config = Config.for_simulation(protocol="leader-epoch", replicas=2, messages=1, crashes=0, elections=0)
    every = frozenset({"crashes", "elections"})
    proved = prove(config, properties=[user_property(leader_holds_its_isr, "leader_holds_its_isr")],
                   unbounded=every)
    assert proved.status == "proved" and proved.properties == ("leader_holds_its_isr",)

    def xor_of_isr(state):
        return state.controller.isr ^ 1 >= 0

    with pytest.raises(ValueError, match="bit_xor has no encoding over unbounded integers"):
        prove(config, properties=[user_property(xor_of_isr, "xor_of_isr")], unbounded=every)


def test_the_kernel_checks_users_properties_with_the_python_engines_counts_and_lengths():
    from kafka_mc.checker import check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.properties import SOMETIMES, Property
    from kafka_mc.properties.user import user_property

    consumer = examples.test_a_consumer_never_reads_past_a_record_it_later_cannot_read_again.kafka_mc_property
    mine = [user_property(invariants.no_committed_data_loss, "committed_kept"),
            user_property(invariants.no_log_divergence, "no_divergence"),
            user_property(consumer, "consumer_reads_again")]
    leader_known = Property("leader_known", SOMETIMES, "a witness", lambda s: s.controller.leader >= 0,
                            predicate=leads)
    kernel = kernel_check(CONFIG, [*mine, leader_known], keep_going=True)
    python = check(CONFIG, [*mine, leader_known], keep_going=True)
    assert kernel.stats.distinct_states == python.stats.distinct_states
    assert {v.invariant: len(v.trace) for v in kernel.violations} == \
        {v.invariant: len(v.trace) for v in python.violations} == \
        {"committed_kept": 10, "no_divergence": 11, "consumer_reads_again": 10}
    assert kernel.witnesses == python.witnesses == {"leader_known": True}
    step = user_property(examples.test_no_step_drops_a_committed_record.kafka_mc_property, "no_step_drops")
    assert [len(v.trace) for v in kernel_check(CONFIG, [step]).violations] == [7]


def leads(state):
    return state.controller.leader >= 0


def test_the_kernel_raises_a_users_error_as_the_python_engine_does_and_refuses_what_does_not_lower():
    from kafka_mc.checker import check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.properties.user import UserPropertyError, user_property

    raising = user_property(first_record_is_m1, "first_record_is_m1", guarded=True)
    for engine in (kernel_check, check):
        with pytest.raises(UserPropertyError, match="first_record_is_m1 raised IndexError"):
            engine(CONFIG, [raising])
    with pytest.raises(NotLowered, match="property uses_try: the statement try cannot be lowered"):
        kernel_check(CONFIG, [user_property(with_try, "uses_try")])


# ------------------------------------------------------------------------- the ELR (KIP-966)

def elr_properties():
    """The ELR properties of tests/examples/twin_properties.py: one violated under kip-966, two that
    hold, and a witness."""
    from kafka_mc.properties import SOMETIMES, Property
    from kafka_mc.properties.user import user_property

    import twin_properties
    names = ("elr_is_always_empty", "elr_and_isr_are_disjoint", "live_elr_members_hold_every_committed_record")
    witness = twin_properties.only_the_elr_is_left
    return [*(user_property(getattr(twin_properties, name), name) for name in names),
            Property("only_the_elr_is_left", SOMETIMES, "a witness", witness, predicate=witness)]


ELR = Config("kip-966", replicas=2, messages=1, crashes=2, elections=2, min_isr=2)
NO_ELR = Config("kafka-15583", replicas=2, messages=1, crashes=2, elections=2, min_isr=2)


@pytest.mark.parametrize("config", [ELR, NO_ELR], ids=lambda c: c.protocol)
def test_the_elr_lowers_to_its_own_verdicts_on_every_state(config):
    """`state.controller.elr` lowered (expressions and the kernel's cell) gives the functions' verdicts
    on every reachable state; without eligible leaders it reads 0."""
    states, _ = reachable(config)
    seen = {p.name: check_every_state(p.predicate, config, states) for p in elr_properties()}
    assert seen["elr_is_always_empty"].get("fails", 0) == (0 if config is NO_ELR else
                                                           sum(1 for s in states if s.controller.elr))
    assert (seen["only_the_elr_is_left"].get("holds", 0) > 0) == (config is ELR)


@pytest.mark.parametrize("config, violations, reached", [
    (ELR, {"elr_is_always_empty": 1}, {"only_the_elr_is_left": 3}),  # B shrunk out of {A, B} below min.isr 2
    (NO_ELR, {}, {}),
], ids=["kip-966", "kafka-15583"])
def test_the_engines_read_the_elr_alike(config, violations, reached):
    """The Python engine, the kernel and Z3 (bounded): the same verdicts, witnesses and shortest lengths
    on properties reading the ELR."""
    from kafka_mc.checker import check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.checker.symbolic.bmc import bounded_check

    properties = elr_properties()
    python = check(config, properties, keep_going=True)
    kernel = kernel_check(config, properties, keep_going=True)
    z3_result = bounded_check(config, 3, properties, keep_going=True)
    assert python.complete and kernel.stats.distinct_states == python.stats.distinct_states
    for result in (python, kernel, z3_result):
        assert {v.invariant: len(v.trace) for v in result.violations} == violations, result.engine
        assert result.witnesses == {"only_the_elr_is_left": bool(reached)}, result.engine
    for result in (python, kernel, z3_result):
        assert {name: len(trace) for name, trace in result.witness_traces.items()} == reached, result.engine


def test_the_engines_read_the_last_known_leader_alike():
    """`state.controller.last_known_elr` (KAFKA-15584) on the Python engine, the kernel and Z3 (bounded): an
    invariant that holds (an election clears it) and a witness reached in 6 steps under kip-966 (A and B
    crash, and each is fenced and comes back), never without eligible leaders, where it reads 0."""
    from kafka_mc.checker import check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.checker.symbolic.bmc import bounded_check
    from kafka_mc.properties import SOMETIMES, Property
    from kafka_mc.properties.user import user_property

    import twin_properties
    witness = twin_properties.only_the_last_known_leader_is_left
    properties = [user_property(twin_properties.last_known_leader_only_while_leaderless,
                                "last_known_leader_only_while_leaderless"),
                  Property("only_the_last_known_leader_is_left", SOMETIMES, "a witness", witness, predicate=witness)]
    for config, reached in ((ELR, {"only_the_last_known_leader_is_left": 6}), (NO_ELR, {})):
        python = check(config, properties, keep_going=True)
        kernel = kernel_check(config, properties, keep_going=True)
        z3_result = bounded_check(config, 7, properties, keep_going=True)
        assert python.complete and kernel.stats.distinct_states == python.stats.distinct_states
        for result in (python, kernel, z3_result):
            assert not result.violations, result.engine
            assert {name: len(trace) for name, trace in result.witness_traces.items()} == reached, result.engine


def test_the_engines_read_the_unread_removals_alike():
    """`state.controller.unseen` (a KRaft leader that reads the metadata late) on the Python engine, the kernel
    and Z3 (bounded): an invariant that holds (an unread removal is out of the ISR, under a leader) and one broken
    in 2 steps with the lag (B crashes and the controller fences it), never without it, where it reads 0."""
    from kafka_mc.checker import check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.checker.symbolic.bmc import bounded_check
    from kafka_mc.properties.user import user_property

    import twin_properties
    properties = [user_property(twin_properties.unread_removals_are_out_of_the_isr,
                                "unread_removals_are_out_of_the_isr"),
                  user_property(twin_properties.every_removal_is_read_at_once, "every_removal_is_read_at_once")]
    lagging = Config("kip-966", messages=1, crashes=1, elections=1, min_isr=2, metadata_lag=True)
    at_once = Config("kip-966", messages=1, crashes=1, elections=1, min_isr=2)
    for config, broken in ((lagging, {"every_removal_is_read_at_once": 2}), (at_once, {})):
        python = check(config, properties, keep_going=True)
        kernel = kernel_check(config, properties, keep_going=True)
        z3_result = bounded_check(config, 4, properties, keep_going=True)
        assert python.complete and kernel.stats.distinct_states == python.stats.distinct_states
        for result in (python, kernel, z3_result):
            assert {v.invariant: len(v.trace.actions) for v in result.violations} == broken, result.engine


def delayed_request_properties():
    """The delayed requests' invariants of tests/examples/twin_properties.py: each broken by a delay."""
    import twin_properties
    return [twin_properties.no_proposal_in_flight, twin_properties.no_reregistration_since_a_proposal,
            twin_properties.no_request_delayed_yet, twin_properties.no_fetch_delayed,
            twin_properties.no_stale_fetch_delayed]



DELAYS = Config("kafka-13141", replicas=2, messages=1, crashes=1, elections=1, delays=1)
DISKS = Config("kip-966", replicas=2, messages=1, crashes=2, elections=2, min_isr=2, disk_failures=1)


@pytest.mark.parametrize("config", [DELAYS, DISKS], ids=["delays", "disk-failures"])
def test_the_delayed_requests_and_lost_disks_lower_to_their_own_verdicts_on_every_state(config):
    """`state.controller.proposal` and `reregistered` (the AlterPartition in flight), `state.delays`,
    `state.disk_failures` and each replica's `delayed_fetch` and `delayed_fetch_stale` lowered (expressions
    and the kernel's cells) give the functions' verdicts on every reachable state, and read 0 where the
    configuration has none."""
    import twin_properties
    states, _ = reachable(config)
    for predicate in delayed_request_properties() + [twin_properties.no_disk_lost]:
        seen = check_every_state(predicate, config, states)
        expected_failures = sum(1 for state in states if predicate(state) is False)
        assert seen.get("fails", 0) == expected_failures
        lost = predicate is twin_properties.no_disk_lost
        assert (expected_failures > 0) == ((config is DISKS) == lost), predicate.__name__


def test_the_engines_read_the_delayed_requests_and_lost_disks_alike():
    """The delayed requests' fields and the lost disks on the Python engine, the kernel and Z3 (bounded):
    each invariant that a delay (a lost disk) breaks is broken at the same shortest length by all three,
    none without delays, and a lost disk is always a crash's."""
    from kafka_mc.checker import check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.checker.symbolic.bmc import bounded_check
    from kafka_mc.properties.user import user_property

    import twin_properties
    delayed = [user_property(predicate, predicate.__name__) for predicate in delayed_request_properties()]
    lost = [user_property(twin_properties.no_disk_lost, "no_disk_lost"),
            user_property(twin_properties.lost_disks_are_crashes, "lost_disks_are_crashes")]
    without = Config("kafka-13141", replicas=2, messages=1, crashes=1, elections=1)
    for config, properties, broken in ((DELAYS, delayed, {p.name for p in delayed}), (without, delayed, set()),
                                       (DISKS, lost, {"no_disk_lost"})):
        python = check(config, properties, keep_going=True)
        kernel = kernel_check(config, properties, keep_going=True)
        z3_result = bounded_check(config, 6, properties, keep_going=True)
        lengths = {v.invariant: len(v.trace.actions) for v in python.violations}
        assert set(lengths) == broken
        assert kernel.stats.distinct_states == python.stats.distinct_states
        for result in (kernel, z3_result):
            assert {v.invariant: len(v.trace.actions) for v in result.violations} == lengths, result.engine


LEADERS = Config("hw", replicas=2, messages=1, crashes=1, elections=2)
BUMPS = Config("hw", replicas=2, messages=1, crashes=2, elections=1)


def test_the_followed_leader_and_the_bumped_epochs_lower_to_their_own_verdicts_on_every_state():
    """Each replica's `leader_id` (the leader it follows: -1 where none, and always from 2.1, which never
    reads it) and the controller's `bumped` (a bitmask of the epochs its epoch bumps made, 0 without them),
    lowered (expressions and the kernel's cells), give the functions' verdicts on every reachable state."""
    from kafka_mc.model.epoch_bumps import EpochBumpModel, bounding_config

    import twin_properties
    followed = (twin_properties.every_replica_follows_the_current_leader, twin_properties.no_replica_remembers_a_leader)
    later = Config("kip-320", replicas=2, messages=1, crashes=1, elections=2)
    for config, failing in ((LEADERS, set(followed)), (later, set())):
        states, _ = reachable(config)
        for predicate in followed:
            seen = check_every_state(predicate, config, states)
            assert (seen.get("fails", 0) > 0) == (predicate in failing), (config.protocol, predicate.__name__)
    bumped = (twin_properties.no_epoch_bumped, twin_properties.bumped_epochs_are_past_or_current)
    for transitions, failing in ((EpochBumpModel, {twin_properties.no_epoch_bumped}), (ReplicationModel, set())):
        states, _ = reachable(BUMPS, transitions)
        for predicate in bumped:
            seen = check_every_state(predicate, bounding_config(BUMPS), states)
            assert (seen.get("fails", 0) > 0) == (predicate in failing), (transitions.__name__, predicate.__name__)


def test_the_engines_read_the_followed_leader_and_the_bumped_epochs_alike():
    """`leader_id` and `bumped` on the Python engine, the kernel and Z3 (bounded): each invariant broken at
    the same shortest length by all three, the bump's only with the controller's epoch bumps."""
    from kafka_mc.checker import check
    from kafka_mc.checker.kernel import kernel_check
    from kafka_mc.checker.symbolic.bmc import bounded_check
    from kafka_mc.control.epoch_bumps import EpochBumpSystem
    from kafka_mc.control.replication import ReplicationSystem
    from kafka_mc.properties.user import user_property

    import twin_properties
    followed = [user_property(predicate, predicate.__name__)
                for predicate in (twin_properties.every_replica_follows_the_current_leader,
                                  twin_properties.no_replica_remembers_a_leader)]
    bumped = [user_property(predicate, predicate.__name__)
              for predicate in (twin_properties.no_epoch_bumped, twin_properties.bumped_epochs_are_past_or_current)]
    for model, broken in ((ReplicationSystem(LEADERS, followed), {p.name for p in followed}),
                          (EpochBumpSystem(BUMPS, bumped), {"no_epoch_bumped"}),
                          (ReplicationSystem(BUMPS, bumped), set())):
        python = check(model, keep_going=True)
        kernel = kernel_check(model, keep_going=True)
        z3_result = bounded_check(model, 7, keep_going=True)
        lengths = {v.invariant: len(v.trace.actions) for v in python.violations}
        assert set(lengths) == broken, model.name
        assert kernel.stats.distinct_states == python.stats.distinct_states
        for result in (kernel, z3_result):
            assert {v.invariant: len(v.trace.actions) for v in result.violations} == lengths, result.engine
