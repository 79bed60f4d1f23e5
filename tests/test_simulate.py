"""Random simulation: the engine, its reproducibility, and `kafka-mc simulate` as `check` reports."""

import io
import json
from collections import Counter

import pytest
from rich.console import Console

from kafka_mc import exitcodes
from kafka_mc.checker import check
from kafka_mc.checker.simulate import SimulationProgress, simulate, without_loops
from kafka_mc.cli import app, main
from kafka_mc.cli_simulate import SimulationReporter, simulate_command
from kafka_mc.counterexamples.reports import read_itf_file
from kafka_mc.model import Action, Config, ConfigError, ReplicationModel
from kafka_mc.properties import ALWAYS, INVARIANTS, SOMETIMES, Property

if not any(command.name == "simulate" for command in app.registered_commands):
    app.command("simulate")(simulate_command)

HW = Config(protocol="hw")  # Case L's configuration: NoCommittedDataLoss breaks in 10 steps at the least
FOUND_SEED = 2  # one of the seeds whose runs break NoCommittedDataLoss within a few hundred runs


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_the_same_seed_gives_the_same_runs_and_another_seed_other_runs():
    first = simulate(HW, runs=400, depth=60, seed=11, keep_going=True)
    again = simulate(HW, runs=400, depth=60, seed=11, keep_going=True)
    other = simulate(HW, runs=400, depth=60, seed=12, keep_going=True)
    assert (first.steps, first.stats.distinct_states, first.violations) == \
           (again.steps, again.stats.distinct_states, again.violations)
    assert (first.steps, first.stats.distinct_states) != (other.steps, other.stats.distinct_states)
    assert first.engine == "simulate" and first.complete is False and first.runs == 400 and first.seed == 11


def test_a_violation_replays_through_the_model_breaks_only_at_its_last_step_and_has_no_loop():
    result = simulate(HW, runs=5000, depth=100, seed=FOUND_SEED)
    assert "NoCommittedDataLoss" in result.violated and not result.passed
    shortest = check(HW, [p for p in INVARIANTS if p.name == "NoCommittedDataLoss"]).violations[0].trace
    for violation in result.violations:
        prop = next(p for p in INVARIANTS if p.name == violation.invariant)
        states = violation.trace.states()  # replays, or ReplayError
        assert [prop.holds(state) for state in states] == [True] * (len(states) - 1) + [False]
        assert len(set(states)) == len(states), "a state repeats: the loop was not cut"
        assert len(shortest) <= len(violation.trace) <= 100
    assert result.failing_run is not None and result.runs == result.failing_run  # numbered from 1


def test_without_loops_cuts_every_return_to_an_earlier_state_but_keeps_the_last_step():
    a, b, c, d = Action("A", 0), Action("B", 0), Action("C", 0), Action("D", 0)
    # states 0 -a-> 1 -b-> 2 -c-> 1 -d-> 3: the stretch 1 -> 2 -> 1 goes
    assert without_loops([0, 1, 2, 1, 3], [a, b, c, d]) == (a, d)
    # the last step returns to the initial state: kept (a step property may be what it breaks)
    assert without_loops([0, 1, 0], [a, b]) == (a, b)
    assert without_loops([0], []) == ()


def test_each_enabled_action_is_drawn_about_equally_often():
    model = ReplicationModel(HW)
    firsts: Counter = Counter()

    def note_first_step(before, action, after):
        if before in initial_states:
            firsts[(before, after)] += 1
        return True

    initial_states = model.initial_states()
    recorder = Property("Recorder", ALWAYS, "test", note_first_step, on_step=True)
    simulate(HW, [recorder], runs=4000, depth=1, seed=5)
    expected = {(state, following) for state in initial_states for _, following in model.successors(state)}
    assert set(firsts) == expected
    share = 4000 / len(expected)  # each initial state, then each of its enabled actions, equally likely
    assert all(0.8 * share < count < 1.2 * share for count in firsts.values()), firsts.values()


def test_bounds_beyond_check_are_for_simulation_only():
    with pytest.raises(ConfigError, match="from 0 to 9, not 30"):
        Config(protocol="kip-279", replicas=5, messages=30)
    config = Config.for_simulation(protocol="kip-279", replicas=5, messages=30, crashes=20, elections=20)
    assert Config.for_simulation(messages=3) == Config(messages=3)  # within check's bounds: a plain Config
    with pytest.raises(ConfigError, match="from 0 to 99, not 100"):
        Config.for_simulation(messages=100)
    beyond = [Property("MoreThanNineCrashes", SOMETIMES, "test", lambda s: s.crashes > 9),
              Property("MoreThanFourElections", SOMETIMES, "test", lambda s: s.controller.epoch > 4),
              Property("MoreThanNineWrites", SOMETIMES, "test", lambda s: s.written > 9)]
    result = simulate(config, INVARIANTS + tuple(beyond), runs=150, depth=300, seed=1)
    assert result.violations == () and result.runs == 150
    assert all(result.witnesses.values()), result.witnesses
    assert result.stats.depth == 300 and result.steps > 150 * 200


def test_cli_reports_a_violation_as_check_does(capsys, tmp_path):
    out_dir = tmp_path / "reports"
    code, out, err = run(capsys, "simulate", "--protocol", "hw", "--seed", str(FOUND_SEED), "--out", str(out_dir),
                         "--quiet")
    assert code == exitcodes.VIOLATION
    assert "Error: Invariant NoCommittedDataLoss is violated." in out and "State 1: <Initial predicate>" in out
    assert f"Use --seed {FOUND_SEED} to reproduce" in out and "steps/s" in out and "INCOMPLETE" in out
    trace = read_itf_file(out_dir / "hw-NoCommittedDataLoss.itf.json")  # the ITF report replays
    assert (out_dir / "hw-NoCommittedDataLoss.html").is_file() and len(trace) > 0
    code_again, out_again, _ = run(capsys, "simulate", "--protocol", "hw", "--seed", str(FOUND_SEED), "--quiet")
    assert code_again == code and out_again.split("Checked")[0] == out.split("Checked")[0]


def test_cli_json_has_steps_per_second_seed_and_runs(capsys):
    code, out, _ = run(capsys, "simulate", "--protocol", "kip-279", "--runs", "60", "--depth", "50", "--seed", "3",
                       "--replicas", "3", "--messages", "12", "--crashes", "12", "--elections", "12",
                       "--format", "json", "--quiet")
    summary = json.loads(out)
    assert code == exitcodes.OK
    assert summary["engine"] == "simulate" and summary["complete"] is False and summary["passed"] is False
    assert summary["seed"] == 3 and summary["runs"] == summary["runs_requested"] == 60
    assert summary["steps"] > 0 and summary["steps_per_second"] > 0 and summary["config"]["messages"] == 12
    assert summary["violations"] == [] and summary["reproduce"] == "--seed 3"


def test_a_time_budget_that_cuts_the_runs_short_exits_75(capsys):
    code, out, _ = run(capsys, "simulate", "--protocol", "kip-279", "--runs", "100000000", "--max-seconds", "0.3",
                       "--seed", "1", "--quiet", "--format", "json")
    summary = json.loads(out)
    assert code == exitcodes.INCOMPLETE and summary["runs"] < summary["runs_requested"]
    assert "time budget" in summary["stopped_because"]


@pytest.mark.parametrize("argv, message", [
    (["--messages", "100"], "--messages: messages must be an integer from 0 to 99, not 100"),
    (["--replicas", "6"], "--replicas: replicas must be an integer from 2 to 5, not 6"),
    (["--runs", "0"], "--runs must be an integer from 1 to 1,000,000,000, not 0"),
    (["--depth", "ten"], "--depth must be an integer, not 'ten'"),
    (["--seed", "-4"], "--seed must be an integer from 0 to 18,446,744,073,709,551,615, not -4"),
    (["--format", "xml"], "--format must be one of text, json, not 'xml'"),
    (["--protocol", "kip-999"], "allowed: hw, leader-epoch, kip-279"),
    (["--max-seconds", "soon"], "--max-seconds must be a number, not 'soon'"),
])
def test_bad_input_names_the_value_and_exits_151(capsys, argv, message):
    code, _, err = run(capsys, "simulate", *argv, "--quiet")
    assert code == exitcodes.BAD_INPUT and message in err


def test_check_keeps_its_own_bounds(capsys):
    code, _, err = run(capsys, "check", "--messages", "30", "--quiet")
    assert code == exitcodes.BAD_INPUT and "from 0 to 9, not 30" in err


def test_progress_is_plain_lines_off_a_terminal_and_a_bar_on_one(capsys):
    code, _, err = run(capsys, "simulate", "--protocol", "kip-279", "--runs", "30", "--seed", "1")
    assert code == exitcodes.OK and "with seed 1" in err and "run 30/30:" in err and "steps/s" in err
    screen = io.StringIO()
    reporter = SimulationReporter(10, console=Console(file=screen, force_terminal=True, width=100))
    for done in range(1, 11):
        reporter(SimulationProgress(done, 10, done * 100, done / 10))
    reporter.close()
    assert "simulating" in screen.getvalue() and "10/10" in screen.getvalue()
