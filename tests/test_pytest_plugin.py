"""The pytest plugin: users' own properties, run by pytest itself (pytester) as a user would."""

import re
from pathlib import Path

import pytest

import kafka_mc.checker.kernel  # noqa: F401  loaded before pytester's in-process runs, which unload what they
# imported: numba's parallel backend cannot be loaded twice in one process
from kafka_mc.counterexamples.reports import read_itf_file

# numba imports most of its implementations (numba/core/cpu.py, `load_additional_registries`) when it first
# compiles or loads a function from its cache. Done first inside a pytester run, those modules were unloaded
# after it and registered again by the next load in this process: "KeyError: duplicate registration".
from numba.core.registry import cpu_target

cpu_target.target_context.refresh()

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).parent / "examples" / "test_own_property.py"  # the README's example, as written

HW_STEP_PROPERTY = '''
from kafka_mc.model import Config
from kafka_mc.pytest_plugin import always

HW = Config(protocol="hw", replicas=2, messages=1, crashes=2, elections=2)


@always(HW){decorators}
def test_no_step_drops_a_committed_record(state, action, next_state):
    for before, after in zip(state.replicas, next_state.replicas):
        for offset, msg in next_state.committed:
            if offset < before.leo and before.log[offset].msg == msg:
                assert offset < after.leo and after.log[offset].msg == msg, f"{{action}} dropped m{{msg}}"
'''


def step_table(output: str) -> list[str]:
    """The actions of the first step table in pytest's output.

    Under CI (the CI or BUILD_NUMBER variable set) pytest's short summary repeats the whole failure
    message, so the table can appear twice."""
    rows = re.findall(r"^\s+\d+\s+(Init|\w+\([A-E]\))\s", output, flags=re.MULTILINE)
    end = rows.index("Init", 1) if "Init" in rows[1:] else len(rows)
    return rows[:end]


def test_the_readme_example_runs_as_written(pytester):
    pytester.makepyfile(test_readme_example=EXAMPLE.read_text())
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, xfailed=1)
    result.stdout.fnmatch_lines(["kafka-mc: engine auto, max examples 200, seed *, reports *"])


def test_a_failure_shows_the_shortest_trace_the_reports_and_how_to_reproduce(pytester, tmp_path):
    pytester.makepyfile(test_readme_example=EXAMPLE.read_text())
    reports = tmp_path / "reports"
    result = pytester.runpytest("-p", "no:cacheprovider", "--runxfail", "--kafka-mc-reports", str(reports))
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str()
    assert "is violated after 10 steps (found by exhaustive search: a shortest counterexample)" in output
    assert step_table(output)[0] == "Init" and step_table(output)[-1] == "ControllerElectLeader(B)"
    assert "✗ violated" in output and "--kafka-mc-engine kernel" in output
    itf = Path(re.search(r"ITF report: (\S+)", output).group(1))
    html = Path(re.search(r"HTML report: (\S+)", output).group(1))
    assert itf.parent == reports and html.is_file() and html.read_text().startswith("<!DOCTYPE html>")
    trace = read_itf_file(itf)  # the report replays through the model
    assert [str(a) for a in trace.actions] == step_table(output)[1:]


def test_a_step_property_failure_names_its_action_and_hypothesis_gives_seed_and_blob(pytester):
    pytester.makepyfile(test_steps=HW_STEP_PROPERTY.format(decorators=""))
    result = pytester.runpytest("-p", "no:cacheprovider", "--kafka-mc-engine", "hypothesis", "--kafka-mc-seed", "8")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "step property test_no_step_drops_a_committed_record is violated" in output
    assert "found and shrunk by Hypothesis" in output and "--kafka-mc-seed 8" in output
    assert re.search(r"Assertion: BecomeFollower\([AB]\) dropped m\d", output)
    blob = re.search(r"(@reproduce_failure\(.*?\)) between @always", output).group(1)
    shrunk = step_table(output)
    assert len(shrunk) - 1 <= 2 * 7  # the shortest counterexample has 7 steps

    # the same seed gives the same example; the blob replays it under any seed
    again = pytester.runpytest("-p", "no:cacheprovider", "--kafka-mc-engine", "hypothesis", "--kafka-mc-seed", "8")
    assert step_table(again.stdout.str()) == shrunk
    pytester.makepyfile(test_steps="from hypothesis import reproduce_failure\n" +
                        HW_STEP_PROPERTY.format(decorators=f"\n{blob}"))
    replayed = pytester.runpytest("-p", "no:cacheprovider", "--kafka-mc-seed", "99")
    replayed.assert_outcomes(failed=1)
    assert step_table(replayed.stdout.str()) == shrunk


def test_the_fixture_checks_exhaustively_when_it_can_and_with_hypothesis_beyond(pytester):
    pytester.makepyfile(test_fixture='''
        import pytest
        from kafka_mc.model import Config

        def leader_in_isr(state):
            leader = state.controller.leader
            return leader < 0 or bool(state.controller.isr >> leader & 1)

        def test_small(kafka_mc):
            outcome = kafka_mc.check(Config(protocol="kip-279"), leader_in_isr)
            assert outcome.engine == "kernel" and outcome.complete and outcome.states > 1000

        def test_not_lowered(kafka_mc):
            def isr_text(state):
                return str(state.controller.isr) != ""  # str() is not lowered: the Python engine runs it
            outcome = kafka_mc.check(Config(protocol="kip-279"), isr_text)
            assert outcome.engine == "bfs" and outcome.complete and outcome.states > 1000
            with pytest.raises(ValueError, match="a call of 'str' cannot be lowered"):
                kafka_mc.check(Config(protocol="kip-279"), isr_text, engine="kernel")

        def test_large(kafka_mc):
            config = Config.for_simulation(protocol="kip-279", replicas=3, messages=20, crashes=10)
            outcome = kafka_mc.check(config, leader_in_isr, max_examples=20)
            assert outcome.engine == "hypothesis" and not outcome.complete and outcome.examples >= 20

        def test_bfs_refuses_large_bounds(kafka_mc):
            with pytest.raises(ValueError, match="bfs engine explores at most 9"):
                kafka_mc.check(Config.for_simulation(messages=20), leader_in_isr, engine="bfs")
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.parseoutcomes() == {"passed": 3, "sampled": 1}  # test_large did not see every state


def test_a_property_sampling_would_miss_fails_on_every_state_by_default(pytester):
    """The fast-failover divergence of leader-epoch with three replicas and three messages (16 steps,
    among a million states): the kernel finds it, where auto used to pass it after 200 Hypothesis runs."""
    pytester.makepyfile(test_divergence='''
        from kafka_mc.model import Config
        from kafka_mc.properties.invariants import no_log_divergence
        from kafka_mc.pytest_plugin import always

        @always(Config("leader-epoch", replicas=3, messages=3, crashes=2, elections=2))
        def test_no_divergence(state):
            return no_log_divergence(state)
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert "is violated after 16 steps (found by exhaustive search: a shortest counterexample)" in result.stdout.str()


LARGE_PROPERTY = '''
from kafka_mc.model import Config
from kafka_mc.pytest_plugin import always


@always(Config.for_simulation(protocol="kip-279", replicas=3, messages=20, crashes=10), max_examples=10)
def test_hw_never_passes_leo(state):
    assert all(replica.hw <= replica.leo for replica in state.replicas)
'''


def test_a_sampled_property_never_reads_as_a_plain_pass(pytester):
    """Beyond the exhaustive search's reach the property is only sampled: the test reads SAMPLED
    and the summary says how it was checked; --kafka-mc-require-exhaustive makes it a failure."""
    pytester.makepyfile(test_large=LARGE_PROPERTY)
    result = pytester.runpytest("-p", "no:cacheprovider", "-v", "--kafka-mc-seed", "3")
    assert result.ret == 0 and result.parseoutcomes() == {"sampled": 1}
    result.stdout.fnmatch_lines(["*test_hw_never_passes_leo SAMPLED*",
                                 "*kafka-mc: properties checked by sampling, not on every state*",
                                 "test_large.py::test_hw_never_passes_leo: test_hw_never_passes_leo held in 10 "
                                 "Hypothesis runs of up to 50 steps (* distinct states met, seed 3; auto: bounds "
                                 "beyond the exhaustive search's (Config.for_simulation)): sampled, not exhaustive"])
    assert "PASSED" not in result.stdout.str()
    strict = pytester.runpytest("-p", "no:cacheprovider", "--kafka-mc-require-exhaustive")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(["*sampled, not exhaustive; --kafka-mc-require-exhaustive asks for every state*"])


def test_a_property_with_a_wrong_signature_is_an_error_at_collection(pytester):
    pytester.makepyfile(test_bad='''
        from kafka_mc.model import Config
        from kafka_mc.pytest_plugin import always

        @always(Config())
        def test_two(state, other):
            return True
    ''')
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*a kafka-mc property takes (state) or (state, action, next_state), not 2 *"])


@pytest.mark.parametrize("option, value, message", [
    ("--kafka-mc-engine", "tlc", "--kafka-mc-engine must be one of auto, kernel, bfs, hypothesis, not 'tlc'"),
    ("--kafka-mc-max-examples", "0", "--kafka-mc-max-examples must be a positive integer, not '0'"),
    ("--kafka-mc-seed", "x", "--kafka-mc-seed must be a non-negative integer, not 'x'"),
])
def test_bad_options_are_usage_errors_naming_the_value(pytester, option, value, message):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", option, value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


WITNESSES = '''
from kafka_mc.model import Config
from kafka_mc.pytest_plugin import sometimes

HW = Config(protocol="hw", replicas=2, messages=1, crashes=2, elections=2)


@sometimes(HW)
def test_both_replicas_hold_m1(state):
    return all(replica.leo == 1 for replica in state.replicas)


@sometimes(HW)
def test_a_follower_loses_a_record(state, action, next_state):
    return any(after.leo < before.leo for before, after in zip(state.replicas, next_state.replicas))


@sometimes(HW, engine="bfs")
def test_a_second_record_never_written(state):
    return state.written > 1


@sometimes(Config.for_simulation(protocol="hw", replicas=2, messages=10, crashes=3), max_examples=5)
def test_sampled_never_reaches_a_third_replica(state):
    return len(state.replicas) > 2
'''


def test_sometimes_witnesses_pass_once_reached_and_fail_when_every_state_misses_them(pytester):
    """A witness (state or step) reached passes, as TLC's and Stateright's `sometimes`; one never
    reached fails, saying whether every state was explored or only some were sampled."""
    pytester.makepyfile(test_witnesses=WITNESSES)
    result = pytester.runpytest("-p", "no:cacheprovider", "-v", "--kafka-mc-seed", "5")
    assert result.parseoutcomes() == {"passed": 2, "failed": 2}
    output = result.stdout.str()
    result.stdout.fnmatch_lines(["*test_both_replicas_hold_m1 PASSED*", "*test_a_follower_loses_a_record PASSED*"])
    assert ("witness test_a_second_record_never_written is never reached: no state among the 1,912 reachable states "
            "of protocol=hw, replicas=2, messages=1" in output)
    assert "(every state explored by the Python engine)" in output
    assert ("witness test_sampled_never_reaches_a_third_replica was not reached in 5 Hypothesis runs" in output
            and "sampled, not exhaustive, so it may still be reachable" in output)


def test_a_sometimes_test_is_a_witness_on_the_command_line(tmp_path, capsys):
    """`kafka-mc check --property FILE:NAME` of a @sometimes test checks it as a witness."""
    import json

    from kafka_mc.cli import main

    (tmp_path / "witnesses.py").write_text(WITNESSES)
    code = main(["check", "--protocol", "hw", "--messages", "1", "--crashes", "2", "--elections", "2", "--quiet",
                 "--format", "json", "--property", f"{tmp_path / 'witnesses.py'}:test_both_replicas_hold_m1",
                 "--property", f"{tmp_path / 'witnesses.py'}:test_a_follower_loses_a_record"])
    view = json.loads(capsys.readouterr().out)
    assert code == 0 and view["witnesses"] == {"test_both_replicas_hold_m1": True,
                                               "test_a_follower_loses_a_record": True}
