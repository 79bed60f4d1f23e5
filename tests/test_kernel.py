"""The compiled kernel is held to the explicit model: the same successors (with their action
slots, in slot order) and the same property values on every reachable state of small
configurations covering every protocol and option, and `kernel_check` gives the BFS engine's
counts, verdicts and traces."""

from __future__ import annotations

import numpy as np
import pytest

from kafka_mc.checker import Budget, check
from kafka_mc.checker.kernel import kernel_check
from kafka_mc.checker.kernel.engine import KernelStats, collision_probability
from kafka_mc.checker.kernel.explore import pack, unpack
from kafka_mc.checker.kernel.invariants import FOLLOWER_TRUNCATED, PROPERTY_NAMES, follower_truncated, state_flags
from kafka_mc.checker.kernel.layout import decode, encode, packing, settings
from kafka_mc.checker.kernel.transitions import slot_codes, successors
from kafka_mc.model import Config, ReplicationModel
from kafka_mc.model.protocols import PROTOCOLS
from kafka_mc.properties import ALWAYS, INVARIANTS, PROPERTIES, WITNESSES

# every protocol, replicas 2 to 5, acks all/1/0, min_isr above 1, unclean, no flush, partitions
AGREEMENT_CONFIGS = [
    Config("hw", messages=2, crashes=2, elections=1),
    Config("hw", messages=1, crashes=1, elections=1, min_isr=2, acks="1"),
    Config("hw", replicas=4, messages=1, crashes=0, elections=1),
    Config("leader-epoch", messages=1, crashes=1, elections=1, acks="1", flush=False),
    Config("leader-epoch", messages=2, crashes=1, elections=1, acks="0"),
    Config("leader-epoch", replicas=5, messages=0, crashes=1, elections=0, min_isr=3, acks="0"),
    Config("kip-279", messages=1, crashes=1, elections=1, unclean=True),
    Config("kip-279", messages=1, crashes=0, elections=1, partitions=1),
    Config("kip-320", replicas=3, messages=1, crashes=1, elections=1),
    Config("diverging-epoch", messages=2, crashes=1, elections=2),
    Config("diverging-epoch", messages=1, crashes=0, elections=1, partitions=1, flush=False),
    Config("kafka-13141", messages=2, crashes=1, elections=2, unclean=True),
    Config("kafka-13141", messages=1, crashes=0, elections=1, partitions=2, acks="1"),
]


def _name(config: Config) -> str:
    options = [f"r{config.replicas}", f"m{config.messages}", f"c{config.crashes}", f"e{config.elections}",
               f"acks{config.acks}", f"isr{config.min_isr}"]
    options += ["unclean"] * config.unclean + ["noflush"] * (not config.flush) + [f"p{config.partitions}"]
    return "-".join([config.protocol, *options])


def test_the_agreement_configurations_cover_every_protocol_and_option():
    covered = {c.protocol for c in AGREEMENT_CONFIGS}
    assert covered == set(PROTOCOLS)
    assert {c.replicas for c in AGREEMENT_CONFIGS} == {2, 3, 4, 5}
    assert {c.acks for c in AGREEMENT_CONFIGS} == {"all", "1", "0"}
    assert any(c.unclean for c in AGREEMENT_CONFIGS) and any(not c.flush for c in AGREEMENT_CONFIGS)
    assert any(c.partitions for c in AGREEMENT_CONFIGS) and any(c.min_isr > 1 for c in AGREEMENT_CONFIGS)


def _reachable(model: ReplicationModel):
    seen = set(model.initial_states())
    frontier = list(seen)
    while frontier:
        following = []
        for state in frontier:
            yield state
            for _, successor in model.indexed_successors(state):
                if successor not in seen:
                    seen.add(successor)
                    following.append(successor)
        frontier = following


@pytest.mark.parametrize("config", AGREEMENT_CONFIGS, ids=_name)
def test_the_kernel_computes_the_models_successors_and_property_values_on_every_reachable_state(config):
    model = ReplicationModel(config)
    cfg, codes, layout = settings(config), slot_codes(model.action_names, config.replicas), packing(config)
    words = np.zeros(layout.word_count, dtype=np.int64)
    unpacked = np.empty_like(encode(model.initial_states()[0]))
    invariants = [p for p in INVARIANTS if p.kind == ALWAYS]
    state_witnesses = [p for p in WITNESSES if not p.on_step]
    states = 0
    for state in _reachable(model):
        states += 1
        wide = encode(state)
        assert decode(wide, config.replicas) == state
        pack(wide, layout.cells, layout.biases, layout.shifts, layout.words, layout.word_count, words, 0)
        unpack(words, 0, layout.cells, layout.biases, layout.bits, layout.shifts, layout.words, unpacked)
        assert np.array_equal(unpacked, wide), f"packing loses part of {state}"
        expected = list(model.indexed_successors(state))
        following, slots = successors(cfg, codes, wide)
        assert [(int(slot), decode(row, config.replicas)) for slot, row in zip(slots, following)] == expected, \
            f"successors of {state}"
        for (_, successor), row in zip(expected, following):
            truncated = next(p for p in WITNESSES if p.on_step).holds(state, successor)
            assert follower_truncated(cfg, wide, row) == truncated
        flags = state_flags(cfg, wide)
        for prop in invariants:
            assert bool(flags >> PROPERTY_NAMES.index(prop.name) & 1) == (not prop.holds(state)), prop.name
        for prop in state_witnesses:
            assert bool(flags >> PROPERTY_NAMES.index(prop.name) & 1) == prop.holds(state), prop.name
    assert states > 100


def _outcome(result):
    return (result.stats.distinct_states, result.stats.states_generated, result.stats.depth, result.complete,
            result.stopped_because, result.violations, result.witnesses, result.witness_traces)


@pytest.mark.parametrize("config, keep_going", [
    (Config("hw"), False),
    (Config("hw"), True),
    (Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1), True),
    (Config("kip-279", messages=2, crashes=2, elections=2, acks="1", flush=False), True),
    (Config("diverging-epoch", messages=1, crashes=1, elections=1, partitions=1, unclean=True), True),
    (Config("kafka-13141", replicas=3, messages=1, crashes=1, elections=1, partitions=1, acks="0"), False),
], ids=lambda value: _name(value) if isinstance(value, Config) else f"keep_going={value}")
def test_kernel_check_equals_the_bfs_engine(config, keep_going):
    kernel, reference = kernel_check(config, keep_going=keep_going), check(config, keep_going=keep_going)
    assert _outcome(kernel) == _outcome(reference)
    assert kernel.engine == "kernel"


def test_two_threads_give_the_same_results_as_one():
    config = Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1, unclean=True)
    one, two = kernel_check(config, keep_going=True), kernel_check(config, keep_going=True, workers=2)
    assert _outcome(one) == _outcome(two)
    assert two.engine == "kernel (2 threads)"


def test_a_budget_stops_the_kernel_where_it_stops_the_bfs_engine():
    config, budget = Config("leader-epoch", replicas=3, messages=1, crashes=1, elections=1), Budget(max_states=3000)
    kernel, reference = kernel_check(config, budget=budget), check(config, budget=budget)
    assert _outcome(kernel) == _outcome(reference)
    assert not kernel.complete and "budget" in kernel.stopped_because


def test_a_subset_of_the_properties_is_checked_alone():
    config = Config("hw")
    chosen = tuple(p for p in PROPERTIES if p.name in ("NoLogDivergence", "LeaderChanged"))
    kernel, reference = kernel_check(config, chosen, keep_going=True), check(config, chosen, keep_going=True)
    assert _outcome(kernel) == _outcome(reference)
    assert kernel.violated == ("NoLogDivergence",)


def test_symmetry_and_users_properties_run_the_bfs_engine():
    config = Config("hw", messages=1)
    assert kernel_check(config, symmetry=True).engine == "bfs+symmetry"
    own = INVARIANTS[0]._replace(holds=lambda state: True)
    assert kernel_check(config, (own,)).engine == "bfs"


def test_the_kernel_reports_compile_time_apart_and_tlcs_collision_estimate():
    result = kernel_check(Config("hw"), keep_going=True)
    assert isinstance(result.stats, KernelStats) and result.stats.compile_seconds >= 0
    stats = result.stats
    assert stats.collision_probability == pytest.approx(
        stats.distinct_states * (stats.states_generated - stats.distinct_states) / 2 ** 64)
    assert collision_probability(10 ** 8, 3 * 10 ** 8) == pytest.approx(1.0842e-3, rel=1e-3)
