"""Hypothesis' stateful testing over the model: hw's documented failures are found and shrunk,
kip-279 with clean elections and acks=all survives executions longer than exhaustive checking
affords, and every shrunk example replays and renders as any engine's trace.

Settings: the `kafka-mc-ci` profile, sized for the suite's time budget and seeded, so the suite is
deterministic; `KAFKA_MC_HYPOTHESIS_PROFILE=kafka-mc-long` runs the same tests with the long-run
profile (thousands of examples of 200 steps, a random seed each run, printed on failure).
"""

import os

import pytest
from hypothesis import Phase, seed, settings

from kafka_mc.checker import check
from kafka_mc.checker.machine import CI_PROFILE, PropertyViolated, hypothesis_check, machine_for
from kafka_mc.checker.scenario import load_scenario
from kafka_mc.counterexamples.reports import read_itf_file, write_reports
from kafka_mc.model import PROTOCOLS, Config
from kafka_mc.properties import INVARIANTS, SOMETIMES, Property

PROFILE = os.environ.get("KAFKA_MC_HYPOTHESIS_PROFILE", CI_PROFILE)
SEED = 0
SCENARIOS = os.path.join(os.path.dirname(__file__), os.pardir, "scenarios")


def sized(**for_ci) -> tuple[settings, int | None]:
    """The settings and seed of a test: under the CI profile, the profile resized for this test and
    a fixed seed; under any other profile, that profile as it is and a random seed."""
    profile = settings.get_profile(PROFILE)
    if PROFILE == CI_PROFILE:
        return settings(profile, **for_ci), SEED
    return profile, None


def invariant(name: str) -> Property:
    return next(p for p in INVARIANTS if p.name == name)


def documented_config(scenario: str) -> Config:
    return load_scenario(os.path.join(SCENARIOS, scenario)).config


@pytest.mark.parametrize("scenario, name", [
    pytest.param("case-l-hw.toml", "NoCommittedDataLoss",  # Case L: clean elections, 10 steps at the least
                 marks=pytest.mark.slow),  # two minutes, most of it shrinking
    ("case-d-hw.toml", "NoLogDivergence"),  # Case D: its unclean election, 6 steps at the least
])
def test_hypothesis_finds_hw_violations_and_shrinks_them_to_twice_the_shortest(scenario, name, tmp_path):
    config = documented_config(scenario)
    prop = invariant(name)
    shortest = check(config, [prop]).violations[0].trace
    chosen, seed = sized(max_examples=1500, stateful_step_count=30)
    result = hypothesis_check(config, [prop], settings=chosen, seed=seed)
    assert result.violated == (name,), f"Hypothesis found no {name} violation (seed {seed})"
    trace = result.violations[0].trace
    assert len(trace) <= 2 * len(shortest), (len(trace), len(shortest))
    states = trace.states()  # the shrunk example replays through the explicit model
    assert [prop.holds(state) for state in states] == [True] * (len(states) - 1) + [False]
    assert result.reproduce_blob and result.reproduce_blob.startswith("@reproduce_failure(")
    written = write_reports(trace, name, tmp_path, name, f"{name} found by Hypothesis")
    assert {path.name for path in written} == {f"{name}.itf.json", f"{name}.txt", f"{name}.md", f"{name}.html", f"{name}.toml"}
    assert read_itf_file(tmp_path / f"{name}.itf.json") == trace


def test_kip_279_with_clean_elections_and_acks_all_survives_long_executions():
    config = Config.for_simulation(protocol="kip-279", replicas=3, messages=12, crashes=12, elections=12,
                                   acks="all", unclean=False)
    # what the exhaustive runs of the README cover with three replicas: 3 crashes, 2 elections
    beyond = (Property("FourCrashes", SOMETIMES, "beyond check", lambda s: s.crashes >= 4),
              Property("EightCrashes", SOMETIMES, "beyond check", lambda s: s.crashes >= 8),
              Property("FourElections", SOMETIMES, "beyond check", lambda s: s.controller.epoch >= 4),
              Property("TenWrites", SOMETIMES, "beyond check", lambda s: s.written >= 10))
    chosen, seed = sized(max_examples=200, stateful_step_count=150)
    result = hypothesis_check(config, INVARIANTS + beyond, settings=chosen, seed=seed)
    assert result.violations == (), [str(v.trace.actions) for v in result.violations]
    assert all(result.witnesses.values()), result.witnesses
    assert result.stats.depth >= 100 and result.steps >= 20_000


def test_the_machine_is_generated_from_the_model_for_every_protocol_and_setting():
    for protocol in PROTOCOLS:
        config = Config(protocol=protocol, replicas=3, messages=2, crashes=2, elections=2, partitions=1,
                        flush=False, acks="1", unclean=True)
        machine = machine_for(config)
        state = machine.setup_state()
        assert sorted(i.function.__name__ for i in state.invariants) == sorted(p.name for p in INVARIANTS)
        assert [r.function.__name__ for r in state.rules] == ["step"]
        quick = settings(settings.get_profile(CI_PROFILE), max_examples=15, phases=[Phase.generate])  # no shrinking
        result = hypothesis_check(config, INVARIANTS, settings=quick, seed=SEED)
        for violation in result.violations:  # acks=1, unclean, unflushed: losses are expected; they replay
            states = violation.trace.states()
            assert not invariant(violation.invariant).holds(states[-1])
        assert result.examples >= (1 if result.violations else 15)
        assert result.engine == "hypothesis" and not result.complete


def test_a_step_property_is_checked_on_every_step_and_its_failure_carries_the_trace():
    config = Config(protocol="kip-279")
    never_truncate = Property("NeverTruncates", "always", "test",
                              lambda before, action, after: all(a.leo >= b.leo for b, a in zip(before.replicas,
                                                                                                 after.replicas)),
                              on_step=True)
    result = hypothesis_check(config, [never_truncate], settings=settings(settings.get_profile(CI_PROFILE),
                                                                          max_examples=500), seed=SEED)
    assert result.violated == ("NeverTruncates",)
    states = result.violations[0].trace.states()
    assert any(a.leo < b.leo for b, a in zip(states[-2].replicas, states[-1].replicas))


def test_the_generated_test_case_runs_under_unittest_and_raises_with_the_trace():
    machine = seed(SEED)(machine_for(documented_config("case-d-hw.toml"), [invariant("NoLogDivergence")]))
    case = machine.TestCase
    case.settings = settings(settings.get_profile(CI_PROFILE), max_examples=1500, stateful_step_count=30)
    with pytest.raises(PropertyViolated) as raised:
        case("runTest").runTest()
    assert raised.value.invariant == "NoLogDivergence"
    assert "NoLogDivergence is violated after" in str(raised.value)
    assert not invariant("NoLogDivergence").holds(raised.value.trace.states()[-1])
