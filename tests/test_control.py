"""Replica assignment and preferred-leader rebalancing (the cluster internals article, README
"Sources"), property-tested with Hypothesis."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_mc.control import (AssignmentError, Cluster, assign_replicas, fail, imbalance, rebalance,
                              recover)


@st.composite
def topics(draw):
    """Broker ids, a partition count and a replication factor Kafka accepts, and a seed."""
    brokers = draw(st.lists(st.integers(0, 1000), min_size=1, max_size=12, unique=True))
    return (brokers, draw(st.integers(1, 60)), draw(st.integers(1, len(brokers))), draw(st.integers(0, 2**32)))


@given(topics())
@settings(max_examples=300, deadline=None)
def test_every_partition_gets_the_factor_on_distinct_brokers_and_leaders_spread_within_one(topic):
    brokers, partitions, factor, seed = topic
    assignment = assign_replicas(brokers, partitions, factor, rng=random.Random(seed))
    assert sorted(assignment) == list(range(partitions))
    for replicas in assignment.values():
        assert len(replicas) == factor and len(set(replicas)) == factor and set(replicas) <= set(brokers)
    leaders = Counter(replicas[0] for replicas in assignment.values())
    counts = [leaders.get(broker, 0) for broker in brokers]
    assert max(counts) - min(counts) <= 1


@given(topics())
@settings(max_examples=200, deadline=None)
def test_followers_spread_too_replicas_per_broker_within_the_factor(topic):
    """Over each whole round of partitions (one per broker) every broker holds `factor` replicas."""
    brokers, partitions, factor, seed = topic
    rounds = partitions // len(brokers) * len(brokers)
    assignment = assign_replicas(brokers, partitions, factor, rng=random.Random(seed))
    held = Counter(b for p in range(rounds) for b in assignment[p])
    assert all(held[broker] == factor * (rounds // len(brokers)) for broker in brokers)


def test_kafkas_placement_on_three_brokers_with_factor_two():
    """Leaders round-robin from the start broker; followers shifted after them, one more each round."""
    assignment = assign_replicas([1, 2, 3], 6, 2, start=0, shift=0)
    assert assignment == {0: (1, 2), 1: (2, 3), 2: (3, 1), 3: (1, 3), 4: (2, 1), 5: (3, 2)}


@pytest.mark.parametrize("brokers, partitions, factor, message", [
    ([1, 2], 3, 3, "replication factor 3 is larger than the 2 available brokers"),
    ([1, 2], 0, 1, "the number of partitions must be larger than 0, not 0"),
    ([1, 2], 2, 0, "the replication factor must be larger than 0, not 0"),
    ([], 1, 1, "no brokers"),
    ([1, 1], 1, 1, "broker ids must be distinct"),
])
def test_bad_input_is_refused_with_the_value(brokers, partitions, factor, message):
    with pytest.raises(AssignmentError, match=message):
        assign_replicas(brokers, partitions, factor)


@st.composite
def clusters(draw):
    """A topic after a random sequence of broker failures and recoveries."""
    brokers, partitions, factor, seed = draw(topics())
    cluster = Cluster.created(assign_replicas(brokers, partitions, factor, rng=random.Random(seed)))
    for _ in range(draw(st.integers(0, 8))):
        broker = draw(st.sampled_from(brokers))
        cluster = fail(cluster, broker) if broker in cluster.live else recover(cluster, broker)
    return cluster


@given(clusters(), st.sampled_from([0, 10, 25, 50]))
@settings(max_examples=300, deadline=None)
def test_a_rebalance_hands_leadership_back_and_never_leaves_a_partition_without_a_leader(cluster, percentage):
    after, moves = rebalance(cluster, percentage)
    for move in moves:  # one LeaderAndIsr change each, to a live in-sync replica
        assert move.new_leader in cluster.live and move.new_leader in cluster.isr[move.partition]
        assert cluster.leaders[move.partition] == move.old_leader != move.new_leader
    assert all(after.leaders[p] is not None for p, leader in cluster.leaders.items() if leader is not None)
    over = {b for b, ratio in imbalance(cluster).items() if ratio > percentage / 100 and b in cluster.live}
    for partition in cluster.assignment:
        preferred = cluster.preferred(partition)
        if preferred in over and preferred in cluster.isr[partition]:
            assert after.leaders[partition] == preferred  # every such partition is led by its preferred replica
        elif preferred not in over:
            assert after.leaders[partition] == cluster.leaders[partition]  # below the threshold nothing moves


@given(clusters())
@settings(max_examples=200, deadline=None)
def test_leaders_are_live_and_in_sync_after_failures_and_recoveries(cluster):
    for partition, leader in cluster.leaders.items():
        if leader is not None:
            assert leader in cluster.live and leader in cluster.isr[partition]
            assert cluster.isr[partition] <= set(cluster.assignment[partition])


def test_failures_pile_leaders_up_and_a_rebalance_spreads_them_back():
    """Seed 001's story: broker 1 fails, its leaders move; it returns, and the rebalance task
    (share of non-preferred leaders above 10%) gives them back."""
    created = Cluster.created(assign_replicas([1, 2, 3], 6, 3, start=0, shift=0))
    returned = recover(fail(created, 1), 1)
    assert imbalance(returned)[1] == 1.0 and all(returned.leaders[p] != 1 for p in returned.leaders)
    balanced, moves = rebalance(returned)
    assert balanced.leaders == created.leaders and {m.new_leader for m in moves} == {1}
    assert rebalance(returned, 100)[1] == []  # a threshold of 100% never triggers
    with pytest.raises(ValueError, match="from 0 to 100, not 101"):
        rebalance(returned, 101)
