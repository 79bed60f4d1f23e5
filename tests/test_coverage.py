"""Action coverage, as TLC's `-coverage` reports it (`CheckResult.coverage`): how often each action
was enabled and how many states it reached first. The Python engine (any number of workers) and
the compiled kernel count the same; the counts add up to the run's own; an action a complete run
never enabled is named (a vacuity warning)."""

import json

import pytest

from kafka_mc import exitcodes
from kafka_mc.checker import Budget, check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.cli import main
from kafka_mc.control import ControllerConfig, ControllerModel
from kafka_mc.model import Config, ReplicationModel

CONFIGS = [
    Config("hw", replicas=2, messages=2, crashes=2, elections=1),
    Config("kip-320", replicas=3, messages=1, crashes=1, elections=2, acks="1", min_isr=2),
    Config("diverging-epoch", replicas=2, messages=1, crashes=1, elections=1, unclean=True, flush=False,
           partitions=1),
]


def _counts(result):
    return [(entry.action, entry.enabled, entry.new_states) for entry in result.coverage]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda config: config.protocol)
@pytest.mark.parametrize("symmetry", [False, True])
def test_the_engines_count_the_same_and_the_counts_add_up(config, symmetry):
    python = check(config, keep_going=True, symmetry=symmetry)
    kernel = kernel_check(config, keep_going=True, symmetry=symmetry)
    assert python.complete and kernel.complete
    if symmetry:  # the engines pick other representatives of a class, so a tie between two shortest
        # paths into it may go to another action; how often each action is enabled does not change
        assert [e.enabled for e in python.coverage] == [e.enabled for e in kernel.coverage]
        assert sum(e.new_states for e in python.coverage) == sum(e.new_states for e in kernel.coverage)
    else:
        assert _counts(python) == _counts(kernel)
    assert [entry.action for entry in python.coverage] == list(ReplicationModel(config).action_names)
    initial = len(ReplicationModel(config).initial_states())  # generated too, by no action
    assert sum(entry.enabled for entry in python.coverage) == python.stats.states_generated - initial
    roots = python.stats.distinct_states - sum(entry.new_states for entry in python.coverage)
    assert 1 <= roots <= config.replicas  # the initial states, one per leader, reached by no action


def test_any_number_of_workers_counts_the_same():
    config = CONFIGS[1]
    assert _counts(check(config, keep_going=True, workers=2)) == _counts(check(config, keep_going=True))


def test_a_control_model_is_counted_and_an_action_never_enabled_is_named():
    result = check(ControllerModel(ControllerConfig(expirations=0)), keep_going=True)
    assert result.complete
    counts = {entry.action: entry for entry in result.coverage}
    assert sum(entry.new_states for entry in result.coverage) == result.stats.distinct_states - 1
    assert counts["SessionExpire"].enabled == 0 and "SessionExpire" in result.never_enabled
    assert counts["BrokerWinsElection"].enabled > 0 and "BrokerWinsElection" not in result.never_enabled
    # no warning from a run that did not explore everything
    assert check(ControllerModel(ControllerConfig(expirations=0)), budget=Budget(max_states=3)).never_enabled == ()


def test_the_cli_prints_coverage_warns_of_vacuous_actions_and_refuses_it_where_not_counted(capsys):
    argv = ["check", "--protocol", "hw", "--crashes", "0", "--keep-going", "--quiet"]
    assert main([*argv, "--coverage"]) == exitcodes.WITNESS_UNREACHED
    out = capsys.readouterr().out
    assert "enabled (successors)" in out and "new states" in out
    assert "Warning: never enabled in this complete run: BecomeFollower, ReplicaCrash" in out
    main([*argv, "--format", "json"])
    view = json.loads(capsys.readouterr().out)
    assert view["coverage"][0]["action"] == "ProducerWrite" and "ReplicaCrash" in view["never_enabled"]
    assert main(["check", "--engine", "z3", "--coverage", "--quiet"]) == exitcodes.BAD_INPUT
    assert "--coverage" in capsys.readouterr().err
