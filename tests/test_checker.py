"""The BFS engine: verdicts, shortest counterexamples, budgets, witnesses and determinism."""

from pathlib import Path

import pytest

from kafka_mc.checker import Budget, check
from kafka_mc.checker.scenario import load_scenario, replay
from kafka_mc.model import Config
from kafka_mc.properties import ALWAYS, INVARIANTS, Property, failing_invariants
from kafka_mc.checker.scenario import documented_scenarios

SCENARIOS = {path.stem: path for path in documented_scenarios()}


def test_hw_violates_both_invariants_with_two_replicas():
    result = check(Config(protocol="hw", replicas=2, messages=2, crashes=2, elections=1), keep_going=True)
    assert result.complete
    assert set(result.violated) == {"NoAckedDataLoss", "NoCommittedDataLoss", "NoConsumedRecordLost", "NoLogDivergence"}


@pytest.mark.parametrize("case", ["case-l-hw", "case-d-hw"])
def test_hw_counterexamples_are_no_longer_than_the_documented_sequences(case):
    scenario = load_scenario(SCENARIOS[case])
    documented = replay(scenario).first_breaks
    result = check(scenario.config, keep_going=True)
    for violation in result.violations:
        if violation.invariant in documented:
            assert len(violation.trace) <= documented[violation.invariant]


def test_leader_epoch_explores_everything_without_violation():
    result = check(Config(protocol="leader-epoch", replicas=2, messages=3, crashes=2, elections=2),
                   keep_going=True)
    assert result.complete and not result.violations
    assert result.passed and all(result.witnesses.values())


def test_counterexamples_replay_and_break_only_at_their_last_state():
    result = check(Config(protocol="hw"), keep_going=True)
    names = {p.name for p in INVARIANTS}
    for violation in result.violations:
        assert violation.invariant in names
        states = violation.trace.states()
        assert violation.invariant in failing_invariants(states[-1])
        assert all(violation.invariant not in failing_invariants(s) for s in states[:-1])


def test_stops_at_first_violation_unless_keep_going():
    first = check(Config(protocol="hw"))
    assert not first.complete and not first.passed
    # losing m2 breaks the three loss invariants at 10 steps; divergence (11) is never reached
    assert {v.invariant for v in first.violations} == {"NoAckedDataLoss", "NoCommittedDataLoss", "NoConsumedRecordLost"}
    assert {len(v.trace) for v in first.violations} == {10}


def test_budget_makes_a_run_incomplete_never_a_pass():
    result = check(Config(protocol="leader-epoch", messages=3, crashes=2, elections=2), budget=Budget(max_states=500))
    assert not result.complete and not result.passed
    assert "500" in result.stopped_because
    timed = check(Config(protocol="leader-epoch", messages=3, crashes=2, elections=2),
                  budget=Budget(max_seconds=1e-9))
    assert not timed.complete and "time budget" in timed.stopped_because


def test_unreached_witness_fails_the_run():
    result = check(Config(protocol="leader-epoch", messages=0))
    assert result.complete and not result.violations
    assert result.unreached_witnesses == ("RecordCommitted",) or "RecordCommitted" in result.unreached_witnesses
    assert not result.passed


def test_witness_traces_replay_to_their_witness():
    result = check(Config(protocol="hw"), keep_going=True)
    truncated = result.witness_traces["FollowerTruncated"].states()
    assert any(a.leo < b.leo for a, b in zip(truncated[-1].replicas, truncated[-2].replicas))
    assert result.witness_traces["RecordCommitted"].states()[-1].committed


def summary(result):
    return (result.complete, result.stats.distinct_states, result.stats.states_generated, result.stats.depth,
            result.violations, result.witnesses)


@pytest.mark.parametrize("protocol", ["hw", "leader-epoch"])
def test_two_runs_give_identical_summaries(protocol):
    config = Config(protocol=protocol, messages=2, crashes=2, elections=1, unclean=True)
    assert summary(check(config, keep_going=True)) == summary(check(config, keep_going=True))


def test_three_replicas_explore_and_find_hw_loss():
    result = check(Config(protocol="hw", replicas=3, messages=1, crashes=1, elections=1), keep_going=True)
    assert result.complete and result.stats.distinct_states > 1000


# Regression pins: TLC on the TLA+ twin finds the same numbers (tests/test_tla_twin.py runs
# the cross-check on smaller configurations; `kafka-mc check --write-tla DIR` writes these).
PINNED = [
    ("case-l-hw", 5946),
    ("case-l-leader-epoch", 6398),
    ("case-d-hw", 18572),
    ("case-d-leader-epoch", 19830),
]


@pytest.mark.parametrize("case, distinct", PINNED)
def test_pinned_state_counts_of_the_documented_configurations(case, distinct):
    result = check(load_scenario(SCENARIOS[case]).config, keep_going=True)
    assert result.complete and result.stats.distinct_states == distinct


@pytest.mark.parametrize("symmetry", [False, True])
def test_workers_give_identical_counts_verdicts_and_traces(symmetry):
    config = Config(protocol="hw", replicas=3, messages=1, crashes=2, elections=1)
    runs = [check(config, keep_going=True, symmetry=symmetry, workers=n) for n in (1, 2, 3)]
    assert summary(runs[0]) == summary(runs[1]) == summary(runs[2])
    assert runs[0].witness_traces == runs[1].witness_traces == runs[2].witness_traces
    stopped = [check(Config(protocol="hw"), workers=n) for n in (1, 2)]
    assert summary(stopped[0]) == summary(stopped[1]) and not stopped[0].complete


def test_workers_must_be_positive():
    with pytest.raises(ValueError, match="workers must be a positive integer, not 0"):
        check(Config(), workers=0)


def _log_never_shrinks(before, action, after) -> bool:
    return all(len(b.log) <= len(a.log) for b, a in zip(before.replicas, after.replicas))


NO_LOG_SHRINKS = Property("NoLogShrinks", ALWAYS, "a test's step invariant", _log_never_shrinks, on_step=True)
EPOCH_NEVER_DECREASES = Property("EpochNeverDecreases", ALWAYS, "a test's step invariant",
                                 lambda before, action, after: after.controller.epoch >= before.controller.epoch,
                                 on_step=True)
STEP_INVARIANTS = (NO_LOG_SHRINKS, EPOCH_NEVER_DECREASES)


@pytest.mark.parametrize("workers", [1, 2])
def test_a_step_invariant_is_checked_on_every_transition(workers):
    """An `always` property of a step (before, action, after) is a step invariant: the engine
    reports the shortest path whose last step breaks it, and the other holds."""
    result = check(Config("hw", messages=2, crashes=1, elections=1), STEP_INVARIANTS, keep_going=True,
                   workers=workers)
    assert result.complete and result.violated == ("NoLogShrinks",)
    states = result.violations[0].trace.states()
    actions = result.violations[0].trace.actions
    assert not _log_never_shrinks(states[-2], actions[-1], states[-1])
    assert all(_log_never_shrinks(*step) for step in zip(states[:-2], actions[:-1], states[1:-1]))
    # B copies m1 (its HW stays 0), crashes, restarts and truncates to its HW on BecomeFollower
    assert [str(action) for action in result.violations[0].trace.actions] == [
        "ProducerWrite(A)", "LeaderHandleFetchRequest(B)", "FollowerHandleFetchResponse(B)", "ReplicaCrash(B)",
        "ReplicaRestart(B)", "BecomeFollower(B)"]


def test_the_readme_table_of_the_documented_cases_has_the_pinned_counts():
    """The README's first table names each case by its figures; its distinct states are the pinned ones."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    table = readme[readme.index("| case | protocol | figures reproduced |"):].splitlines()[2:]
    rows = [line.split("|")[1:-1] for line in table[:next(i for i, line in enumerate(table) if not line.startswith("|"))]]
    found = {f"case-{row[0].split()[1].lower()}-{row[1].strip()}": int(row[4]) for row in rows}
    assert found == dict(PINNED)
