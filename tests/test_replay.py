"""Scenario replay against the book's figures, and malformed scenario files."""

import dataclasses

import pytest

from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.checker import ReplayError
from kafka_mc.checker.scenario import ScenarioError, documented_scenarios, load_scenario, replay

SCENARIOS = {path.stem: path for path in documented_scenarios()}


def final(case):
    replayed = replay(load_scenario(SCENARIOS[case]))
    assert replayed.mismatches == []
    return replayed, replayed.steps[-1].state


def msgs(replica):
    return [f"m{record.msg}" for record in replica.log]


def test_the_four_documented_scenarios_are_shipped():
    assert sorted(SCENARIOS) == ["case-d-hw", "case-d-leader-epoch", "case-l-hw", "case-l-leader-epoch"]


@pytest.mark.parametrize("case", sorted(SCENARIOS))
def test_every_checkpoint_matches_its_figure(case):
    replayed = replay(load_scenario(SCENARIOS[case]))
    assert replayed.mismatches == []
    assert all(step.mismatches == () for step in replayed.steps)


def test_case_l_under_hw_ends_with_m2_on_no_replica():
    replayed, state = final("case-l-hw")
    assert all("m2" not in msgs(replica) for replica in state.replicas)
    # when A is elected without m2: committed, acknowledged and readable, now lost
    assert replayed.first_breaks == {"NoCommittedDataLoss": 13, "NoAckedDataLoss": 13, "NoConsumedRecordLost": 13}


def test_case_d_under_hw_ends_diverged_with_both_hw_2():
    replayed, state = final("case-d-hw")
    a, b = state.replicas
    assert (msgs(a), a.hw, msgs(b), b.hw) == (["m1", "m2"], 2, ["m1", "m3"], 2)
    assert set(replayed.first_breaks) == {"NoAckedDataLoss", "NoCommittedDataLoss", "NoConsumedRecordLost", "NoLogDivergence"}
    assert "NoLogDivergence" in replayed.steps[-1].broken  # and it stays broken


def test_case_l_under_leader_epoch_keeps_m2_as_figure_8_19():
    replayed, state = final("case-l-leader-epoch")
    a, b = state.replicas
    assert msgs(a) == msgs(b) == ["m1", "m2"]
    assert state.controller.leader == 0 and state.controller.epoch == 1
    assert a.epoch == 1 and a.epochs == ((0, 0),)  # 0.11.0 caches LE1 with A's first append, not at election
    assert replayed.first_breaks == {}


def test_case_d_under_leader_epoch_converges_as_figure_8_22():
    replayed, state = final("case-d-leader-epoch")
    a, b = state.replicas
    assert msgs(a) == msgs(b) == ["m1", "m3"] and a.hw == b.hw == a.leo == b.leo == 2
    assert a.epochs == b.epochs == ((0, 0), (1, 1))
    # m2 was committed and acknowledged; divergence is gone
    assert set(replayed.steps[-1].broken) == {"NoAckedDataLoss", "NoCommittedDataLoss", "NoConsumedRecordLost"}


FINDINGS = {path.stem: path for path in documented_scenarios("findings")}


def test_the_shortest_fast_failover_divergence_outlives_kip_279_and_kafka_7415_closes_it():
    kip101 = replay(load_scenario(FINDINGS["fast-failover-leader-epoch"]))
    assert kip101.mismatches == [] and kip101.first_breaks == {"NoLogDivergence": 16}
    kip279 = replay(load_scenario(FINDINGS["fast-failover-kip-279"]))  # Kafka 2.0.0
    assert kip279.mismatches == [] and kip279.first_breaks == {"NoLogDivergence": 16}
    fixed = replay(load_scenario(FINDINGS["fast-failover-kafka-7415"]))  # Kafka 2.0.1
    assert fixed.mismatches == [] and fixed.first_breaks == {}
    b, c = fixed.steps[-1].state.replicas[1:]
    assert b.log == c.log and b.hw == c.hw == 2


def test_back_to_back_elections_lose_a_committed_record_until_kafka_7415():
    for name in ("leader-epoch", "kip-279"):
        scenario = load_scenario(FINDINGS["back-to-back-elections-kip-279"])
        scenario = dataclasses.replace(scenario, trace=dataclasses.replace(
            scenario.trace, model=ReplicationSystem(dataclasses.replace(scenario.config, protocol=name))))
        replayed = replay(scenario)
        assert replayed.first_breaks == {"NoCommittedDataLoss": 24, "NoAckedDataLoss": 24, "NoConsumedRecordLost": 24}
    assert replay(load_scenario(FINDINGS["back-to-back-elections-kafka-7415"])).first_breaks == {}


def write(tmp_path, text):
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return path


GOOD = '''title = "t"
initial_leader = "A"
steps = ["ProducerWrite(A)"]
[config]
protocol = "hw"
'''


@pytest.mark.parametrize("text, message", [
    ("title = ", "not valid TOML"),
    (GOOD.replace('[config]\nprotocol = "hw"\n', ""), "a \\[config\\] table is required"),
    (GOOD.replace('"hw"', '"raft"'), "protocol 'raft' is unknown"),
    (GOOD + "replicas = 9\n", "replicas must be an integer from 2 to 5, not 9"),
    (GOOD + "colour = 1\n", "unknown config key\\(s\\) colour"),
    (GOOD.replace('"A"', '"Z"', 1), "replica 'Z' does not exist; replicas are A, B"),
    (GOOD.replace("ProducerWrite(A)", "Produce(A)"), "unknown action 'Produce'"),
    (GOOD.replace("ProducerWrite(A)", "ProducerWrite"), "is not of the form Action\\(Replica\\)"),
    (GOOD.replace('steps = ["ProducerWrite(A)"]', "steps = 3"), "steps must be a list of strings"),
    ("extra = 1\n" + GOOD, "unknown key\\(s\\) extra"),
    (GOOD.replace('title = "t"\n', ""), "title must be a non-empty string"),
    ('expected_violations = ["Nope"]\n' + GOOD, "expected_violations must list invariants"),
    (GOOD + "[[checkpoint]]\nafter = 5\n", "checkpoint 'after' must be a step number from 0 to 1"),
])
def test_malformed_scenarios_are_rejected_with_the_reason(tmp_path, text, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(write(tmp_path, text))


def test_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario(tmp_path / "absent.toml")


def test_a_step_that_is_not_enabled_names_the_step(tmp_path):
    scenario = load_scenario(write(tmp_path, GOOD.replace('["ProducerWrite(A)"]',
                                                          '["ProducerWrite(A)", "ProducerWrite(B)"]')))
    with pytest.raises(ReplayError, match=r"step 2 \(ProducerWrite\(B\)\): not enabled"):
        replay(scenario)


def test_one_format_for_every_model_and_a_table_pins_the_fields_it_lists(tmp_path):
    """The replication model may be named and its initial state given by index, as any model's;
    a checkpoint's table pins only the fields it lists, and each differing one is reported."""
    named = load_scenario(write(tmp_path, 'model = "replication"\n' + GOOD.replace('initial_leader = "A"', "initial = 1")
                                .replace("ProducerWrite(A)", "ProducerWrite(B)")
                                + '[[checkpoint]]\nafter = 0\nB = { hw = 0, role = "leader" }\n'
                                + '"replicas.B.leaderEpoch" = 0\ncontroller = { leader = "A" }\n'))
    assert named.trace.initial == 1 and named.trace.model.name == "replication"
    replayed = replay(named)
    assert replayed.mismatches == ["after step 0: controller.leader is 'B', expected 'A'"]
    fsm = load_scenario(write(tmp_path, 'model = "partition-fsm"\nsteps = []\n[[checkpoint]]\nafter = 0\n'
                                        'x = { y = 1 }\n'))
    assert replay(fsm).mismatches == ["after step 0: x.y is None, expected 1"]
