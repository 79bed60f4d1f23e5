"""Why an invariant fails and the step that causes it (`counterexamples.explain`), held to facts
computed here from the trace's states: which record the leader lacks, where two logs diverge,
and the last step at which that became so."""

from __future__ import annotations

import pytest

from kafka_mc.checker import check
from kafka_mc.checker.scenario import load_scenario
from kafka_mc.counterexamples.explain import diagnose, explain, verdict
from kafka_mc.counterexamples.steps import trace_steps
from kafka_mc.model import Config
from kafka_mc.model.state import State, replica_name

LOSSES = {"NoCommittedDataLoss": "is committed (below a HW)",
          "NoConsumedRecordLost": "was readable by a consumer (below an acting leader's HW)"}


def holds(state: State, index: int, offset: int, msg: int) -> bool:
    log = state.replicas[index].log
    return offset < len(log) and log[offset].msg == msg


def first_failing(trace, invariant: str) -> int:
    return next(number for number, failing in enumerate(trace.broken()) if invariant in failing)


def lost_entry(state: State, invariant: str) -> tuple[int, int, int]:
    """The leader and the first (offset, msg) of the invariant's history missing from its log."""
    history = state.committed if invariant == "NoCommittedDataLoss" else state.consumed
    leader = state.controller.leader
    offset, msg = next(entry for entry in history if not holds(state, leader, *entry))
    return leader, offset, msg


def last_step_when(states: list[State], became) -> int | None:
    """The last step n (n >= 1) with `became(states[n - 1], states[n])`."""
    return max((n for n in range(1, len(states)) if became(states[n - 1], states[n])), default=None)


def loss_cause(states: list[State], leader: int, lacks) -> int:
    """The last step at which the final leader lost the record, else the last at which it came to lead."""
    removal = last_step_when(states, lambda before, after: not lacks(before.replicas[leader])
                             and lacks(after.replicas[leader]))
    if removal is not None:
        return removal

    def leads(state: State) -> bool:
        return state.controller.leader == leader and state.replicas[leader].alive

    elected = last_step_when(states, lambda before, after: not leads(before) and leads(after))
    assert elected is not None
    return elected


def check_history_loss(trace, invariant: str) -> None:
    """The explanation names the missing record and what the leader holds there; the cause is the
    last step at which the leader lost it (or became leader without it)."""
    steps = trace_steps(trace)
    shows = first_failing(trace, invariant)
    states = trace.states()[:shows + 1]
    state = states[-1]
    leader, offset, msg = lost_entry(state, invariant)
    log = state.replicas[leader].log
    there = f"has m{log[offset].msg} at offset {offset}" if offset < len(log) else f"ends at offset {len(log)}"
    why = f"m{msg}@{offset} {LOSSES[invariant]}, but leader {replica_name(leader)}'s log {there}"
    assert explain(invariant, state) == why
    cause = loss_cause(states, leader, lambda replica: not (offset < replica.leo and replica.log[offset].msg == msg))
    diagnosis = diagnose(steps, invariant)
    assert diagnosis is not None and diagnosis.cause is not None
    assert (diagnosis.shows, diagnosis.why, diagnosis.cause.number) == (shows, why, cause)
    assert diagnosis.cause.action == str(trace.actions[cause - 1])
    assert f"m{msg}@{offset}" in diagnosis.cause.what and replica_name(leader) in diagnosis.cause.what


def check_acked_loss(trace) -> None:
    steps = trace_steps(trace)
    shows = first_failing(trace, "NoAckedDataLoss")
    states = trace.states()[:shows + 1]
    state = states[-1]
    leader = state.controller.leader
    held = {record.msg for record in state.replicas[leader].log}
    msg = min(m for m in range(state.written + 1) if state.acked >> m & 1 and m not in held)
    why = f"m{msg} was acknowledged, but leader {replica_name(leader)}'s log lacks it"
    assert explain("NoAckedDataLoss", state) == why
    cause = loss_cause(states, leader, lambda replica: all(record.msg != msg for record in replica.log))
    diagnosis = diagnose(steps, "NoAckedDataLoss")
    assert diagnosis is not None and diagnosis.cause is not None and diagnosis.cause.number == cause


def check_divergence(trace) -> None:
    """The explanation names the two replicas and their records at the first diverging offset below
    both HWs; the cause is the step at which the second of the two records arrived."""
    shows = first_failing(trace, "NoLogDivergence")
    states = trace.states()[:shows + 1]
    state = states[-1]
    first, second, offset = next(
        (i, j, o) for i in range(len(state.replicas)) for j in range(i + 1, len(state.replicas))
        for o in range(min(state.replicas[i].hw, state.replicas[j].hw))
        if state.replicas[i].log[o] != state.replicas[j].log[o])
    held = [f"{replica_name(index)} holds m{state.replicas[index].log[offset].msg}@{offset}"
            for index in (first, second)]
    assert explain("NoLogDivergence", state) == f"{held[0]}, {held[1]}, both below their HWs"

    def differ(s: State) -> bool:
        logs = s.replicas[first].log, s.replicas[second].log
        return all(offset < len(log) for log in logs) and logs[0][offset] != logs[1][offset]

    cause = last_step_when(states, lambda before, after: not differ(before) and differ(after))
    diagnosis = diagnose(trace_steps(trace), "NoLogDivergence")
    assert diagnosis is not None and diagnosis.cause is not None and diagnosis.cause.number == cause


@pytest.fixture(scope="module")
def shortest():
    """The shortest counterexamples of the hw protocol, and of kip-279 without flushing."""
    found = {}
    for config in (Config(protocol="hw"), Config(protocol="kip-279", flush=False)):
        for violation in check(config, keep_going=True).violations:
            found[config.protocol, violation.invariant] = violation.trace
    return found


def test_case_l_is_explained_and_caused_by_a_truncation_to_the_hw():
    trace = load_scenario("case-l-hw").trace
    for invariant in LOSSES:
        check_history_loss(trace, invariant)
    check_acked_loss(trace)
    diagnosis = diagnose(trace_steps(trace), "NoCommittedDataLoss")
    assert diagnosis is not None and diagnosis.cause is not None
    cause = diagnosis.cause.number
    assert verdict("NoCommittedDataLoss", diagnosis) == (
        "Invariant NoCommittedDataLoss is violated: m2@1 is committed (below a HW), but leader A's log ends at "
        f"offset 1; caused at step {cause} (BecomeFollower(A): A truncates to its HW, removing m2@1); "
        f"shows at step {diagnosis.shows}.")
    after = trace.states()[cause].replicas[0]
    assert after.leo == after.hw == 1  # A truncated to its HW there


def test_case_d_is_explained_the_new_leader_never_had_the_record():
    trace = load_scenario("case-d-hw").trace
    for invariant in LOSSES:
        check_history_loss(trace, invariant)
    check_acked_loss(trace)
    check_divergence(trace)
    diagnosis = diagnose(trace_steps(trace), "NoCommittedDataLoss")
    assert diagnosis is not None and diagnosis.cause is not None
    assert diagnosis.cause.what == "B becomes leader without m2@1"
    assert "caused and shows at step" in verdict("NoCommittedDataLoss", diagnosis)


@pytest.mark.parametrize("protocol", ["hw", "kip-279"])
def test_shortest_counterexamples_are_explained(shortest, protocol):
    traces = {invariant: trace for (found, invariant), trace in shortest.items() if found == protocol}
    assert {"NoCommittedDataLoss", "NoAckedDataLoss", "NoConsumedRecordLost", "NoLogDivergence"} <= set(traces)
    for invariant in LOSSES:
        check_history_loss(traces[invariant], invariant)
    check_acked_loss(traces["NoAckedDataLoss"])
    check_divergence(traces["NoLogDivergence"])


def test_a_crash_losing_unflushed_records_is_the_cause(shortest):
    trace = shortest["kip-279", "NoCommittedDataLoss"]
    diagnosis = diagnose(trace_steps(trace), "NoCommittedDataLoss")
    assert diagnosis is not None and diagnosis.cause is not None
    number = diagnosis.cause.number
    before, after = trace.states()[number - 1:number + 1]
    crashed = next(index for index, replica in enumerate(after.replicas)
                   if before.replicas[index].alive and not replica.alive)
    assert diagnosis.cause.action == f"ReplicaCrash({replica_name(crashed)})"
    assert diagnosis.cause.what.startswith(f"{replica_name(crashed)} crashes, losing unflushed m")


def test_explain_says_nothing_where_it_cannot():
    trace = load_scenario("case-l-hw").trace
    states = trace.states()
    assert explain("NoCommittedDataLoss", states[0]) is None  # it holds
    assert explain("HwBelowLeo", states[-1]) is None  # not explained
    assert explain("NoCommittedDataLoss", object()) is None  # another model's state
    assert diagnose(trace_steps(trace), None) is None
    assert verdict("NoLogDivergence", diagnose(trace_steps(trace), "NoLogDivergence")) == \
        "Invariant NoLogDivergence is violated."  # named, but it holds along this trace
