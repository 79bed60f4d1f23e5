"""Replica symmetry: one representative per class, same verdicts, concrete traces."""

import random
from itertools import permutations

import pytest

from kafka_mc.checker import check
from kafka_mc.model import Config, ReplicationModel
from kafka_mc.model.symmetry import canonical, permute, rename, renaming
from kafka_mc.properties import failing_invariants


def random_states(config, count, seed=7, length=25):
    """States reached by seeded random walks."""
    model, rng, found = ReplicationModel(config), random.Random(seed), []
    for _ in range(count):
        state = rng.choice(model.initial_states())
        for _ in range(rng.randrange(length)):
            options = list(model.successors(state))
            if not options:
                break
            state = rng.choice(options)[1]
        found.append(state)
    return model, found


@pytest.mark.parametrize("protocol", ["hw", "leader-epoch", "kip-279"])
def test_canonical_is_the_same_for_every_renaming(protocol):
    _, states = random_states(Config(protocol=protocol, replicas=3, messages=2, crashes=2, elections=2), 60)
    for state in states:
        representative = canonical(state)
        for order in permutations(range(3)):
            assert canonical(permute(state, order)) == representative
        assert permute(state, renaming(representative, state)) == representative


def test_renamed_actions_commute_with_permutation():
    model, states = random_states(Config(protocol="leader-epoch", replicas=3, messages=2, crashes=2), 40)
    for state in states:
        for order in permutations(range(3)):
            permuted = permute(state, order)
            for action, following in model.successors(permuted):
                assert permute(model.next_state(state, rename(action, order)), order) == following
            assert failing_invariants(permuted) == failing_invariants(state)


CONFIGS = [
    Config(protocol="hw"),
    Config(protocol="hw", replicas=3, messages=1, crashes=2, elections=1),
    Config(protocol="leader-epoch", replicas=3, messages=1, crashes=1, elections=1, unclean=True),
    Config(protocol="kip-279", replicas=3, messages=1, crashes=2, elections=1),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.protocol}-r{c.replicas}")
def test_same_verdicts_and_shortest_lengths_with_fewer_states(config):
    plain = check(config, keep_going=True)
    reduced = check(config, keep_going=True, symmetry=True)
    assert reduced.complete and plain.complete
    assert reduced.violated == plain.violated and reduced.witnesses == plain.witnesses
    assert [len(v.trace) for v in reduced.violations] == [len(v.trace) for v in plain.violations]
    assert reduced.stats.depth == plain.stats.depth
    if config.replicas == 3:
        assert plain.stats.distinct_states >= 4 * reduced.stats.distinct_states
    for violation in reduced.violations:  # concrete: they replay without symmetry
        assert violation.invariant in failing_invariants(violation.trace.states()[-1])
