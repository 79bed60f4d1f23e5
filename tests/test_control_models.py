"""The control-plane models (controller election, partition state machine, rebalancing): their
verdicts, shortest counterexamples, the goal on the state graph, reports and the CLI.

Counts and shortest lengths are checked against a second, independent exploration: the networkx
state graph (`checker.graph.system_graph`) with shortest paths computed by networkx itself.
"""

import json
from pathlib import Path

import networkx as nx
import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import Budget, ReplayError, check
from kafka_mc.checker.graph import GraphTooLarge, check_goal, system_graph
from kafka_mc.checker.result import Trace
from kafka_mc.checker.scenario import load_scenario, replay
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.checker.symbolic.registry import z3_encoding
from kafka_mc.checker.tlc import run_tlc
from kafka_mc.cli import main
from kafka_mc.control import (MODELS, ControllerConfig, ControllerModel, KRaftConfig, KRaftModel, PartitionFsmConfig,
                              PartitionFsmModel, RebalanceConfig, RebalanceModel)
from kafka_mc.control.partition_fsm import LEGAL, NON_EXISTENT, ONLINE
from kafka_mc.control.system import ConfigError, ControlAction
from kafka_mc.counterexamples.itf import itf_text, itf_to_trace
from kafka_mc.counterexamples.reports import render_reports
from kafka_mc.model.interface import ALWAYS

SMALL_SYSTEMS = [
    ControllerModel(ControllerConfig(brokers=2, expirations=1)),
    ControllerModel(ControllerConfig(brokers=2, expirations=1, fence_epochs=False)),
    ControllerModel(ControllerConfig(brokers=2, expirations=2, atomic_epoch=False)),
    PartitionFsmModel(PartitionFsmConfig()),
    PartitionFsmModel(PartitionFsmConfig(brokers=3, partitions=2, delete_online=True, unclean=True)),
    RebalanceModel(RebalanceConfig()),
    RebalanceModel(RebalanceConfig(partitions=6, imbalance_percentage=50)),
    KRaftModel(KRaftConfig(failures=1, shutdowns=0, release="3.2")),
    KRaftModel(KRaftConfig(failures=0, shutdowns=1, release="3.3")),
]


def _first_failures(system, graph):
    """Independently of the engine: per property, the fewest steps to a violation (invariant) or
    to a state or step where it holds (witness), from networkx's shortest path lengths."""
    depth = {}
    for node, initial in graph.nodes(data="initial"):
        if initial:
            for target, length in nx.single_source_shortest_path_length(graph, node).items():
                depth[target] = min(depth.get(target, length), length)
    first = {}
    for prop in system.properties:
        wanted = prop.kind != ALWAYS
        if prop.on_step:
            hits = [depth[a] + 1 for a, b, action in graph.edges(data="action")
                    if prop.holds(graph.nodes[a]["state"], action, graph.nodes[b]["state"]) == wanted]
        else:
            hits = [depth[n] for n, state in graph.nodes(data="state") if prop.holds(state) == wanted]
        if hits:
            first[prop.name] = min(hits)
    return first


@pytest.mark.parametrize("system", SMALL_SYSTEMS, ids=lambda s: f"{s.name}-{s.config}")
def test_the_engine_agrees_with_the_state_graph_on_counts_verdicts_and_shortest_lengths(system):
    result = check(system, keep_going=True)
    graph = system_graph(system)
    assert result.complete
    assert result.stats.distinct_states == graph.number_of_nodes()
    assert result.stats.states_generated == len(system.initial_states()) + sum(
        len(list(system.successors(state))) for _, state in graph.nodes(data="state"))
    first = _first_failures(system, graph)
    invariants = {p.name for p in system.properties if p.kind == ALWAYS}
    assert {v.invariant: len(v.trace) for v in result.violations} == {n: d for n, d in first.items() if n in invariants}
    assert result.witnesses == {p.name: p.name in first for p in system.properties if p.kind != ALWAYS}
    for violation in result.violations:  # each trace replays and breaks its property at its last step
        states = violation.trace.states()
        prop = next(p for p in system.properties if p.name == violation.invariant)
        assert not prop.check(states[-2] if len(states) > 1 else None, violation.trace.actions[-1]
                              if violation.trace.actions else None, states[-1])


def test_controller_fencing_holds_and_every_witness_is_reached():
    system = ControllerModel(ControllerConfig())
    result = check(system)
    assert result.passed, result
    assert check_goal(system, system_graph(system)).holds


def test_without_fencing_a_deposed_controller_is_obeyed_in_five_steps():
    result = check(ControllerModel(ControllerConfig(fence_epochs=False)))
    assert result.violated == ("StaleControllerIgnored",)
    actions = [str(a) for a in result.violations[0].trace.actions]
    assert actions[0] == "BrokerWinsElection(0)" and actions[1] == "SessionExpire(0)" and len(actions) == 5
    last = result.violations[0].trace.states()[-1]
    assert last.obeyed[0] == 1 and last.zk_epoch == 2  # broker 0 went back to the deposed controller's epoch


def test_an_unconditional_epoch_write_lets_two_controllers_share_an_epoch():
    result = check(ControllerModel(ControllerConfig(atomic_epoch=False)))
    assert result.violated == ("OneControllerPerEpoch",)
    last = result.violations[0].trace.states()[-1]
    assert sorted(last.acting) == [0, 1, 1]


def test_partition_fsm_takes_every_legal_edge_and_no_other():
    system = PartitionFsmModel(PartitionFsmConfig(brokers=3, partitions=2))
    result = check(system, keep_going=True)
    assert result.passed
    taken = {edge for a, b in system_graph(system).edges
             for edge in zip(a.states, b.states) if edge[0] != edge[1]}
    assert taken == {edge for edge in LEGAL if edge[0] != edge[1]}
    assert (NON_EXISTENT, ONLINE) not in taken


def test_deleting_an_online_partition_directly_is_an_illegal_transition():
    result = check(PartitionFsmModel(PartitionFsmConfig(delete_online=True)))
    assert result.violated == ("OnlyLegalTransitions",)
    assert [str(a) for a in result.violations[0].trace.actions] == ["CreateTopic()", "DeleteTopic()"]


def test_unclean_election_brings_back_a_partition_whose_isr_is_dead():
    system = PartitionFsmModel(PartitionFsmConfig(brokers=2, partitions=1, unclean=True))
    trace = Trace(system, 0, (ControlAction("CreateTopic"), ControlAction("ControllerElectLeader", (0,)),
                                    ControlAction("BrokerFailure", (1,)), ControlAction("BrokerFailure", (0,)),
                                    ControlAction("BrokerStartup", (1,)), ControlAction("ControllerElectLeader", (0,))))
    last = trace.states()[-1]
    assert last.states == (ONLINE,) and last.leaders == (1,)
    clean = Trace(PartitionFsmModel(PartitionFsmConfig(brokers=2, partitions=1)), 0, trace.actions)
    with pytest.raises(ReplayError, match="step 6"):
        clean.states()


def test_rebalance_restores_preferred_leaders_at_the_default_percentage():
    system = RebalanceModel(RebalanceConfig(brokers=4, partitions=6, replication_factor=3, failures=3))
    assert check(system).passed
    assert check_goal(system, system_graph(system)).holds


def test_a_high_imbalance_percentage_leaves_leaders_off_their_preferred_replicas_for_good():
    system = RebalanceModel(RebalanceConfig(partitions=6, imbalance_percentage=50))
    result = check(system, keep_going=True)
    assert result.violated == ("PreferredLeadersRestored",)
    goal = check_goal(system, system_graph(system))
    assert not goal.holds and goal.example is not None
    assert not system.balanced(goal.example.states()[-1])


def test_bad_settings_name_the_setting_and_the_allowed_range():
    with pytest.raises(ConfigError, match="brokers must be an integer from 2 to 4, not 7"):
        ControllerConfig(brokers=7)
    with pytest.raises(ConfigError, match="replication_factor must be an integer from 1 to 2"):
        PartitionFsmConfig(brokers=2, replication_factor=3)
    with pytest.raises(ConfigError, match="imbalance_percentage must be an integer from 0 to 100"):
        RebalanceConfig(imbalance_percentage=101)


def test_the_state_graph_has_a_limit():
    with pytest.raises(GraphTooLarge, match="more than 10 reachable states"):
        system_graph(ControllerModel(ControllerConfig()), max_states=10)


def test_a_state_budget_leaves_the_run_incomplete():
    result = check(ControllerModel(ControllerConfig()), budget=Budget(max_states=100))
    assert not result.complete and not result.passed and "state budget" in result.stopped_because


def test_reports_show_every_state_and_mark_the_violation(tmp_path):
    result = check(ControllerModel(ControllerConfig(fence_epochs=False)))
    trace = result.violations[0].trace
    reports = render_reports(trace, "StaleControllerIgnored", "stale", "title")  # one report set for every model
    assert set(reports) == {"stale.itf.json", "stale.txt", "stale.md", "stale.html", "stale.toml"}
    itf = json.loads(reports["stale.itf.json"])
    assert itf["#meta"]["model"] == "controller" and len(itf["states"]) == len(trace) + 1
    assert [s["#meta"]["action"] for s in itf["states"]][1:] == [str(a) for a in trace.actions]
    assert itf_text(trace, "StaleControllerIgnored") == reports["stale.itf.json"]
    back = itf_to_trace(itf)  # the ITF trace replays through the model
    assert (back.model.name, back.config, back.initial, back.actions) == \
        (trace.model.name, trace.config, trace.initial, trace.actions)
    text = reports["stale.txt"]
    assert text.startswith("Error: Invariant StaleControllerIgnored is violated.")
    assert "State 6: <BrokerHandleLeaderAndIsr(0, 1, 0)>\n\\* StaleControllerIgnored is violated" in text
    markdown = reports["stale.md"]
    header = markdown[markdown.index("```\n\n") + 5:].splitlines()[0]
    assert [cell.strip() for cell in header.strip("|").split("|")][:3] == ["step", "action", "controllerZnode"]
    table = markdown[markdown.index("```\n\n") + 5:]
    assert len(table.splitlines()) == 2 + len(trace) + 1 and "**2**" in table
    assert "B0->>B0: LeaderAndIsr (controller epoch 1)\n    Note over B0: obeys it, going back from epoch 2" in markdown
    from xml.dom import minidom

    page = minidom.parseString(reports["stale.html"])  # XHTML-compatible
    rows = page.getElementsByTagName("tbody")[0].getElementsByTagName("tr")
    assert len(rows) == len(trace) + 1 and rows[-1].getAttribute("class") == "violated"
    assert [r.getAttribute("class") for r in rows[:-1]] == [""] * len(trace)
    scenario = tmp_path / "stale.toml"  # the trace as a scenario file, replayed as it was found
    scenario.write_text(reports["stale.toml"])
    replayed = replay(load_scenario(scenario))
    assert replayed.mismatches == [] and replayed.first_breaks == {"StaleControllerIgnored": len(trace)}


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.mark.parametrize("model", list(MODELS))
def test_cli_checks_every_model_and_passes_on_kafkas_design(capsys, model):
    code, out, _ = run(capsys, "control", model, "--quiet")
    assert code == exitcodes.OK, out
    assert "Model checking completed" in out and "NOT REACHED" not in out


def test_cli_violation_writes_reports_and_exits_12(capsys, tmp_path):
    code, out, _ = run(capsys, "control", "controller", "--no-fencing", "--quiet", "--out", str(tmp_path))
    assert code == exitcodes.VIOLATION
    assert "Error: Invariant StaleControllerIgnored is violated." in out
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        f"controller-StaleControllerIgnored.{ext}" for ext in ("html", "itf.json", "md", "toml", "txt")]
    (tmp_path / "mine.txt").write_text("mine")
    (tmp_path / "controller-StaleControllerIgnored.txt").rename(tmp_path / "kept")
    (tmp_path / "controller-StaleControllerIgnored.txt").write_text("a file the user wrote")
    (tmp_path / ".kafka-mc-reports").write_text("")
    code, _, err = run(capsys, "control", "controller", "--no-fencing", "--quiet", "--out", str(tmp_path))
    assert code == exitcodes.BAD_INPUT and "was not written by kafka-mc" in err
    assert (tmp_path / "controller-StaleControllerIgnored.txt").read_text() == "a file the user wrote"


def test_cli_json_has_the_model_verdicts_and_goal(capsys):
    code, out, _ = run(capsys, "control", "rebalance", "--partitions", "6", "--imbalance-percentage", "50",
                       "--keep-going", "--format", "json", "--quiet")
    view = json.loads(out)
    assert code == exitcodes.VIOLATION
    assert view["model"] == "rebalance" and view["config"]["imbalance_percentage"] == 50
    assert [v["invariant"] for v in view["violations"]] == ["PreferredLeadersRestored"]
    assert view["violations"][0]["trace"][0]["action"] == "Init"
    assert view["goals"][0]["property"] == "PreferredLeadersCanReturn" and view["goals"][0]["holds"] is False


def test_cli_goal_failure_alone_exits_12(capsys):
    code, out, _ = run(capsys, "control", "rebalance", "--partitions", "6", "--imbalance-percentage", "50",
                       "--keep-going", "--quiet")
    assert code == exitcodes.VIOLATION and "PreferredLeadersCanReturn can never be reached again" in out


@pytest.mark.parametrize("argv, message", [
    (["control", "zookeeper"], "model 'zookeeper' is unknown; allowed: controller, partition-fsm, rebalance"),
    (["control", "rebalance", "--expirations", "2"], "--expirations: not an option of the rebalance model"),
    (["control", "controller", "--unclean"], "--unclean: not an option of the controller model"),
    (["control", "controller", "--brokers", "x"], "--brokers must be an integer, not 'x'"),
    (["control", "partition-fsm", "--partitions", "0"], "--partitions: partitions must be an integer from 1 to 3"),
    (["control", "controller", "--format", "xml"], "--format 'xml' is not allowed; allowed: text, json"),
])
def test_cli_bad_input_is_named_with_exit_151(capsys, argv, message):
    code, _, err = run(capsys, *argv, "--quiet", "--max-states", "300000")
    assert code == exitcodes.BAD_INPUT and message in err


@pytest.mark.parametrize("system", SMALL_SYSTEMS, ids=lambda s: f"{s.name}-{s.config}")
def test_action_names_list_every_action_the_model_takes(system):
    taken = {action.name for _, _, action in system_graph(system).edges(data="action")}
    assert taken <= set(system.action_names)


DEPOSED = "controller-deposed.toml"


def _scenario_file(name, folder="control"):
    from kafka_mc.checker.scenario import documented_scenarios

    return next(path for path in documented_scenarios(folder) if path.name == name)


def test_a_deposed_controller_replays_in_the_controller_model_and_is_ignored():
    replayed = replay(load_scenario(_scenario_file(DEPOSED)))
    assert replayed.first_breaks == {} and replayed.mismatches == []
    stale = replayed.steps[7]
    assert stale.action == "BrokerHandleLeaderAndIsr(2, 1, 0)" and stale.state.obeyed[2] == 2


def test_the_same_story_without_fencing_breaks_and_a_wrong_checkpoint_is_reported(tmp_path):
    text = _scenario_file(DEPOSED).read_text()
    broken = tmp_path / "unfenced.toml"
    broken.write_text(text.replace("expirations = 1", "expirations = 1\nfence_epochs = false"))
    replayed = replay(load_scenario(broken))
    assert replayed.first_breaks == {"StaleControllerIgnored": 7}
    assert "StaleControllerIgnored breaks, which the scenario does not expect" in replayed.mismatches
    # a table pins the fields it lists, each reported apart
    assert any("obeyedControllerEpoch.2 is 1, expected 2" in m for m in replayed.mismatches)


@pytest.mark.parametrize("change, message", [
    (('model = "controller"', 'model = "zookeeper"'), "model 'zookeeper' is unknown"),
    (('"SessionExpire(0)"', '"SessionExpires(0)"'), "unknown action 'SessionExpires'"),
    (('"SessionExpire(0)"', '"SessionExpire(zero)"'), "is not of the form Action(arguments)"),
    (("brokers = 3", "brokers = 5"), "brokers must be an integer from 2 to 4, not 5"),
    (("brokers = 3", "racks = 3"), "[config] of the controller model takes"),
    (("expected_violations = []", 'expected_violations = ["NoCommittedDataLoss"]'),
     "expected_violations must list invariants of the model"),
])
def test_bad_control_scenarios_exit_150_naming_the_problem(capsys, tmp_path, change, message):
    path = tmp_path / "bad.toml"
    path.write_text(_scenario_file(DEPOSED).read_text().replace(*change))
    code, _, err = run(capsys, "replay", str(path))
    assert code == exitcodes.BAD_SPEC and message in err


def test_a_disabled_step_in_a_control_scenario_exits_150(capsys, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(_scenario_file(DEPOSED).read_text().replace('"SessionExpire(0)"', '"BrokerReconnect(0)"'))
    code, _, err = run(capsys, "replay", str(path))
    assert code == exitcodes.BAD_SPEC and "step 3 (BrokerReconnect(0)): not enabled" in err


def test_cli_replays_a_control_scenario_with_reports(capsys, tmp_path):
    code, out, _ = run(capsys, "replay", str(_scenario_file(DEPOSED)), "--out", str(tmp_path))
    assert code == exitcodes.OK
    assert "Step 7: BrokerHandleLeaderAndIsr(2, 1, 0)" in out and "invariants broken: none" in out
    assert (tmp_path / "controller-deposed.itf.json").is_file()
    assert "Note over B2: ignores it (has obeyed epoch 2)" in (tmp_path / "controller-deposed.md").read_text()


def test_random_simulation_finds_the_unfenced_controller_and_repeats_with_its_seed():
    from kafka_mc.checker.simulate import simulate

    system = ControllerModel(ControllerConfig(fence_epochs=False))
    first = simulate(system, runs=300, depth=30, seed=7)
    again = simulate(system, runs=300, depth=30, seed=7)
    assert first.violated == ("StaleControllerIgnored",) and not first.complete
    assert first.violations[0].trace.actions == again.violations[0].trace.actions
    states = first.violations[0].trace.states()
    assert not stale_step_ok(states[-2], first.violations[0].trace.actions[-1], states[-1])
    fenced = simulate(ControllerModel(ControllerConfig()), runs=300, depth=30, seed=7)
    assert fenced.violations == () and all(fenced.witnesses.values()) and fenced.runs == 300


def stale_step_ok(before, action, after):
    from kafka_mc.control.controller import stale_request_ignored

    return stale_request_ignored(before, action, after)


def test_cli_simulates_a_control_model(capsys):
    code, out, _ = run(capsys, "control", "partition-fsm", "--delete-online", "--engine", "simulate",
                       "--runs", "50", "--seed", "1", "--quiet")
    assert code == exitcodes.VIOLATION and "Use --seed 1 to reproduce" in out
    code, out, _ = run(capsys, "control", "partition-fsm", "--engine", "simulate", "--runs", "50", "--seed", "1",
                       "--format", "json", "--quiet")
    view = json.loads(out)
    assert code == exitcodes.OK and view["model"] == "partition-fsm" and view["runs"] == 50 and view["seed"] == 1


@pytest.mark.parametrize("argv, message", [
    (["--runs", "5"], "--runs: not with --engine bfs"),
    (["--engine", "simulate", "--no-goal"], "--no-goal: not with --engine simulate"),
    (["--engine", "tlc"], "--engine 'tlc' is not allowed; allowed: bfs, spark, simulate, z3"),
    (["--engine", "simulate", "--runs", "0"], "--runs must be an integer from 1 to 1,000,000,000, not 0"),
])
def test_cli_engine_options_are_checked(capsys, argv, message):
    code, _, err = run(capsys, "control", "controller", *argv, "--quiet")
    assert code == exitcodes.BAD_INPUT and message in err


def test_hypothesis_state_machine_over_a_control_model():
    from hypothesis import settings
    from hypothesis.stateful import run_state_machine_as_test

    from kafka_mc.checker.machine import PropertyViolated
    from kafka_mc.checker.machine import machine_for

    # derandomized: the same examples every run, among them a violation of the non-atomic model
    quick = settings(max_examples=150, stateful_step_count=30, deadline=None, database=None, derandomize=True)
    run_state_machine_as_test(machine_for(ControllerModel(ControllerConfig())), settings=quick)
    with pytest.raises(PropertyViolated) as caught:
        run_state_machine_as_test(machine_for(ControllerModel(ControllerConfig(atomic_epoch=False))),
                                  settings=quick)
    assert caught.value.invariant == "OneControllerPerEpoch"
    from kafka_mc.control.controller import one_controller_per_epoch

    assert not one_controller_per_epoch(caught.value.trace.states()[-1])


# The replication model with the controller's own failure (control/failover.py).

FAILOVER_CONFIGS = [
    dict(protocol="hw"),
    dict(protocol="leader-epoch"),
    dict(protocol="hw", acks="1", messages=1, partitions=1),
    dict(protocol="kip-279", replicas=3, messages=1, crashes=1, elections=1),
]


@pytest.mark.parametrize("settings", FAILOVER_CONFIGS, ids=lambda s: ",".join(f"{k}={v}" for k, v in s.items()))
def test_a_controller_failover_changes_no_verdict_and_no_shortest_length(settings):
    """Seed 003's claim for partition scenario 8 ("no effect"), checked exhaustively: with a
    controller failure the same properties break, with counterexamples of the same lengths; and
    the generic engine with no failure counts the states the replication engine counts."""
    from kafka_mc.checker import check
    from kafka_mc.control.failover import FailoverConfig, FailoverModel

    plain = check(FailoverConfig(controller_failures=0, **settings), keep_going=True)
    never = check(FailoverModel(FailoverConfig(controller_failures=0, **settings)), keep_going=True)
    failing = check(FailoverModel(FailoverConfig(controller_failures=1, **settings)), keep_going=True)
    assert plain.complete and never.complete and failing.complete
    assert never.stats.distinct_states == plain.stats.distinct_states
    assert failing.stats.distinct_states > plain.stats.distinct_states
    lengths = {v.invariant: len(v.trace) for v in plain.violations}
    assert {v.invariant: len(v.trace) for v in failing.violations} == lengths
    assert failing.witnesses == {**plain.witnesses, "ControllerFailover": True}


def test_partition_scenario_8_replays_with_replication_and_loses_nothing():
    from kafka_mc.checker.article import compare
    scenario = load_scenario(_scenario_file("partition-8.toml", "catalogue"))
    replayed = replay(scenario)
    assert replayed.first_breaks == {} and replayed.mismatches == []
    assert [step.state.controller_up for step in replayed.steps[6:9]] == [False, False, True]
    (comparison,) = compare(["partition-8"])
    assert comparison.agrees and comparison.model_loses_acked is False


def test_without_a_controller_no_leader_is_elected(capsys, tmp_path):
    text = _scenario_file("partition-8.toml", "catalogue").read_text()
    path = tmp_path / "early.toml"
    path.write_text(text.replace('    "NewControllerElected()",\n', "").replace(
        '    "ControllerElectLeader(B)",\n', '    "ControllerElectLeader(B)",\n    "NewControllerElected()",\n'))
    code, _, err = run(capsys, "replay", str(path))
    assert code == exitcodes.BAD_SPEC and "step 8 (ControllerNoticeFailure(A)): not enabled" in err


def test_cli_check_with_controller_failures(capsys, tmp_path):
    code, out, _ = run(capsys, "check", "--controller-failures", "1", "--messages", "1", "--quiet",
                       "--out", str(tmp_path))
    assert code == exitcodes.VIOLATION and "The replication-failover model." in out
    assert "NoCommittedDataLoss   violated (10 steps)" in out and "ControllerFailover" in out
    assert (tmp_path / "replication-failover-NoCommittedDataLoss.itf.json").is_file()
    code, out, _ = run(capsys, "check", "--controller-failures", "1", "--protocol", "leader-epoch", "--messages", "1",
                       "--recoverability", "--format", "json", "--quiet")
    view = json.loads(out)
    assert code == exitcodes.OK and view["config"]["controller_failures"] == 1 and view["goals"][0]["holds"]


@pytest.mark.parametrize("argv, message", [
    (["--engine", "z3"], "--engine z3: not with --controller-failures"),
    (["--symmetry", "--workers", "2"], "--workers, --symmetry: not with --controller-failures"),
    (["--controller-failures", "10"], "controller_failures must be an integer from 0 to 9, not 10"),
])
def test_cli_controller_failures_refuse_what_they_cannot_do(capsys, argv, message):
    code, _, err = run(capsys, "check", "--controller-failures", "1", *argv, "--quiet")
    assert code == exitcodes.BAD_INPUT and message in err


CONTROL_PAGE = Path(__file__).resolve().parent.parent / "docs" / "control-plane.md"  # the tables below


def _readme_control_rows():
    readme = CONTROL_PAGE.read_text(encoding="utf-8")
    table = readme[readme.index("| model and options | states | result |"):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        command, states = line.split("|")[1:3]
        rows.append((command.split("`")[1].split(), int(states.strip().replace(",", ""))))
    return rows


def test_the_readme_table_of_control_models_is_what_the_checker_finds(capsys):
    rows = _readme_control_rows()
    assert len(rows) >= 10
    for argv, states in rows:
        code, out, _ = run(capsys, "control", *argv, "--keep-going", "--format", "json", "--quiet")
        assert json.loads(out)["distinct_states"] == states, argv


@pytest.mark.slow  # 146,000 states on the Python engine; the failover's verdicts: test_a_controller_failover_changes_no_verdict...
def test_the_readme_table_of_controller_failures_is_what_the_checker_finds(capsys):
    readme = CONTROL_PAGE.read_text(encoding="utf-8")
    table = readme[readme.index("| configuration | distinct states, no controller failure |"):]
    rows = []
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.split("|")[1:-1]])
    assert len(rows) == 4
    for command, without, with_one, violations in rows:
        found = []
        for failures, states in (("0", without), ("1", with_one)):
            code, out, _ = run(capsys, "check", *command.strip("`").split(), "--controller-failures", failures,
                               "--keep-going", "--format", "json", "--quiet")
            view = json.loads(out)
            assert view["distinct_states"] == int(states.replace(",", "")), (command, failures)
            found.append({v["invariant"]: v["length"] for v in view["violations"]})
        assert found[0] == found[1]  # a controller failure changes no verdict and no shortest length
        assert violations == "none" if not found[0] else all(name in violations for name in found[0])


SPARK_SYSTEMS = [  # partition-fsm on Spark: test_cli_control_on_spark
    ControllerModel(ControllerConfig(brokers=2, expirations=1, fence_epochs=False)),
    RebalanceModel(RebalanceConfig(partitions=6, imbalance_percentage=50)),
    KRaftModel(KRaftConfig(failures=1, shutdowns=0, release="3.2")),
]


@pytest.mark.slow  # control models on Spark, shorter: test_cli_control_on_spark
def test_spark_explores_the_control_models_as_the_local_engine_does():
    """Spark's search agrees with the local one: counts, depth, verdicts, shortest lengths and
    witnesses; its traces replay and break their property at their last step."""
    from kafka_mc.checker.spark import spark_check

    for system in SPARK_SYSTEMS:
        local = check(system, keep_going=True)
        spark = spark_check(system, master="local[2]", partitions=3, keep_going=True)
        assert spark.engine == "spark" and spark.complete
        assert (spark.stats.distinct_states, spark.stats.states_generated, spark.stats.depth) == \
            (local.stats.distinct_states, local.stats.states_generated, local.stats.depth), system.name
        assert {v.invariant: len(v.trace) for v in spark.violations} == \
            {v.invariant: len(v.trace) for v in local.violations}, system.name
        assert spark.witnesses == local.witnesses
        for violation in spark.violations:
            states = violation.trace.states()
            prop = next(p for p in system.properties if p.name == violation.invariant)
            assert not prop.check(states[-2], violation.trace.actions[-1], states[-1])


def test_cli_check_with_controller_failures_on_spark(capsys):
    argv = ["check", "--controller-failures", "1", "--messages", "1", "--crashes", "1", "--acks", "1",
            "--format", "json", "--quiet"]
    code, out, _ = run(capsys, *argv)
    local = json.loads(out)
    code_on_spark, out, _ = run(capsys, *argv, "--engine", "spark", "--spark-master", "local[2]")
    on_spark = json.loads(out)
    assert code == code_on_spark == exitcodes.VIOLATION and on_spark["engine"] == "spark"
    assert [(v["invariant"], v["length"]) for v in on_spark["violations"]] == \
        [(v["invariant"], v["length"]) for v in local["violations"]] == [("NoAckedDataLoss", 4)]
    assert on_spark["distinct_states"] == local["distinct_states"]


def test_cli_control_on_spark(capsys):
    code, out, _ = run(capsys, "control", "partition-fsm", "--delete-online", "--engine", "spark",
                       "--spark-master", "local[2]", "--format", "json", "--quiet")
    view = json.loads(out)
    assert code == exitcodes.VIOLATION and view["engine"] == "spark"
    assert [v["invariant"] for v in view["violations"]] == ["OnlyLegalTransitions"]
    code, _, err = run(capsys, "control", "partition-fsm", "--spark-master", "local[2]", "--quiet")
    assert code == exitcodes.BAD_INPUT and "--spark-master: not with --engine bfs" in err


@pytest.mark.parametrize("config", [ControllerConfig(brokers=2, expirations=1, fence_epochs=False),
                                    ControllerConfig(brokers=2, expirations=1, atomic_epoch=False)], ids=str)
def test_the_z3_encoding_of_the_controller_equals_the_model_on_every_reachable_state(config):
    """As TLC holds the TLA+ twin: the same actions enabled and the same successors, state by state
    (both switches are off in one of the two configurations and on in the other)."""
    _assert_encoding_agrees(ControllerModel(config))


@pytest.mark.parametrize("config", [PartitionFsmConfig(brokers=2, partitions=2, delete_online=True),
                                    PartitionFsmConfig(brokers=2, partitions=1, unclean=True)], ids=str)
def test_the_z3_encoding_of_the_partition_fsm_equals_the_model_on_every_reachable_state(config):
    _assert_encoding_agrees(PartitionFsmModel(config))


def _assert_encoding_agrees(system):
    encoding = z3_encoding(system)
    taken = encoding.check_agreement(state for _, state in system_graph(system).nodes(data="state"))
    assert taken <= {instance.name for instance in encoding.action_instances}


@pytest.mark.parametrize("system, depth", [(ControllerModel(ControllerConfig()), 8),
                                           (ControllerModel(ControllerConfig(fence_epochs=False)), 8),
                                           (ControllerModel(ControllerConfig(atomic_epoch=False)), 8),
                                           (PartitionFsmModel(PartitionFsmConfig()), 10),
                                           (PartitionFsmModel(PartitionFsmConfig(delete_online=True)), 10)],
                         ids=lambda s: f"{s.name}-{s.config}" if hasattr(s, "name") else str(s))
def test_z3_bounded_model_checking_finds_what_the_explicit_search_finds(system, depth):
    """Every witness is within `depth` steps, so the bounded search must find them all."""
    explicit = check(system, keep_going=True)
    bounded = bounded_check(system, depth, keep_going=True)
    assert bounded.engine == "z3" and bounded.bounded_to == depth and not bounded.complete
    assert explicit.complete and all(len(t) <= depth for t in explicit.witness_traces.values())
    assert {v.invariant: len(v.trace) for v in bounded.violations} == \
        {v.invariant: len(v.trace) for v in explicit.violations}
    assert bounded.witnesses == explicit.witnesses
    assert {n: len(t) for n, t in bounded.witness_traces.items()} == \
        {n: len(t) for n, t in explicit.witness_traces.items()}


def test_cli_control_with_z3(capsys):
    code, out, _ = run(capsys, "control", "controller", "--engine", "z3", "--non-atomic-epoch", "--depth", "6")
    assert code == exitcodes.VIOLATION and "OneControllerPerEpoch      violated (5 steps)" in out
    code, out, _ = run(capsys, "control", "controller", "--engine", "z3", "--depth", "4", "--format", "json")
    view = json.loads(out)
    assert code == exitcodes.OK and view["bounded_to"] == 4 and view["violations"] == []
    code, _, err = run(capsys, "control", "rebalance", "--engine", "z3")
    assert code == exitcodes.BAD_INPUT and "the rebalance model has no Z3 encoding" in err
    code, out, _ = run(capsys, "control", "partition-fsm", "--engine", "z3", "--delete-online", "--depth", "4")
    assert code == exitcodes.VIOLATION and "OnlyLegalTransitions" in out


def test_z3_out_of_time_says_so_and_claims_only_the_depths_searched():
    result = bounded_check(ControllerModel(ControllerConfig()), 40, max_seconds=1.0)
    assert result.stopped_because.startswith("time budget of 1 s reached at depth ")
    searched_to = int(result.stopped_because.rsplit(" ", 1)[1]) - 1
    assert result.stats.depth == searched_to < 40 and not result.violations


@pytest.mark.parametrize("config", [ControllerConfig(), ControllerConfig(fence_epochs=False),
                                    ControllerConfig(atomic_epoch=False)], ids=str)
def test_tlc_on_the_controller_twin_agrees_with_kafka_mc(config):
    """model/tla/KafkaController.tla under TLC: the same distinct states, states generated and
    depth (TLC counts states, kafka-mc steps), and the same shortest violations."""
    tlc = run_tlc(ControllerModel(config))
    ours = check(ControllerModel(config), keep_going=True)
    assert (tlc.distinct_states, tlc.states_generated, tlc.depth - 1) == \
        (ours.stats.distinct_states, ours.stats.states_generated, ours.stats.depth)
    assert {name: tlc.shortest_actions(name) for name in tlc.violations} == \
        {v.invariant: len(v.trace) for v in ours.violations}


def test_the_breadth_first_engine_refuses_by_name_what_it_cannot_do_for_a_model_without_packing():
    model = ControllerModel(ControllerConfig())
    with pytest.raises(ValueError, match="symmetry is for the replication model; the controller model"):
        check(model, symmetry=True)
    with pytest.raises(ValueError, match="more than one worker is for the replication model"):
        check(model, workers=2)
    with pytest.raises(ValueError, match="the controller model checks its own properties"):
        check(model, model.properties)
