"""Preferred-leader rebalancing (the cluster internals article, README "Sources"; Kafka's
`KafkaController.checkAndTriggerAutoLeaderRebalance` and the preferred replica election).

A partition's preferred leader is the first replica of its assignment. Failures move leaders to
surviving brokers (`fail`: the first live replica of the assignment that is in the ISR, as the
controller's offline-partition election); recoveries do not move them back (`recover`: the
broker rejoins the ISR of its partitions as a follower, once caught up; an offline partition
comes back with the replica its ISR still names). The rebalance task
counts, per broker, the partitions that prefer it but are led elsewhere; when that share
exceeds `leader.imbalance.per.broker.percentage` (10 by default) and the broker is alive, each of
those partitions holds a preferred replica election: leadership moves to the preferred replica
if it is alive and in the ISR, and stays where it is otherwise. Each move is one LeaderAndIsr
change from the old leader to the new, so a partition is never without a leader during a move.
Left out: partitions being reassigned or deleted (the controller skips them), unclean election, the
time a recovering broker takes to catch up, and the time the task waits between checks.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

DEFAULT_IMBALANCE_PERCENTAGE = 10


@dataclass(frozen=True)
class Cluster:
    """What the controller knows of a topic: each partition's assigned replicas (preferred
    first), leader (None: offline) and ISR, and the live brokers."""

    assignment: Mapping[int, tuple[int, ...]]
    leaders: Mapping[int, int | None]
    isr: Mapping[int, frozenset[int]]
    live: frozenset[int]

    @classmethod
    def created(cls, assignment: Mapping[int, tuple[int, ...]]) -> "Cluster":
        """A new topic: every preferred replica leads, every replica in sync, every broker up."""
        return cls(dict(assignment), {p: ar[0] for p, ar in assignment.items()},
                   {p: frozenset(ar) for p, ar in assignment.items()},
                   frozenset(b for ar in assignment.values() for b in ar))

    def preferred(self, partition: int) -> int:
        return self.assignment[partition][0]


@dataclass(frozen=True)
class Move:
    """One leadership change of a rebalance."""

    partition: int
    old_leader: int | None
    new_leader: int


def fail(cluster: Cluster, broker: int) -> Cluster:
    """`broker` fails: it leaves the ISR of every partition with a leader, and partitions it led
    elect the first live in-sync replica of their assignment. With none left a partition goes
    offline and keeps its ISR, the failed leader included, as Kafka's controller does."""
    live, leaders, isr = cluster.live - {broker}, dict(cluster.leaders), dict(cluster.isr)
    for partition, members in cluster.isr.items():
        if broker not in members or cluster.leaders[partition] is None:
            continue
        remaining = members - {broker}
        if cluster.leaders[partition] == broker:
            successor = next((r for r in cluster.assignment[partition] if r in live and r in remaining), None)
            leaders[partition] = successor
            if successor is None:
                continue  # offline: the ISR still names its last leader
        isr[partition] = remaining
    return replace(cluster, leaders=leaders, isr=isr, live=live)


def recover(cluster: Cluster, broker: int) -> Cluster:
    """`broker` restarts: an offline partition whose ISR names it elects it; elsewhere it
    catches up and rejoins the ISR as a follower."""
    live, leaders, isr = cluster.live | {broker}, dict(cluster.leaders), dict(cluster.isr)
    for partition, replicas in cluster.assignment.items():
        if broker not in replicas:
            continue
        if leaders[partition] is None:
            if broker in isr[partition]:
                leaders[partition] = broker
        else:
            isr[partition] = isr[partition] | {broker}
    return replace(cluster, leaders=leaders, isr=isr, live=live)


def imbalance(cluster: Cluster) -> dict[int, float]:
    """Per broker preferred by some partition: the share of those partitions led elsewhere."""
    preferring: dict[int, list[int]] = {}
    for partition in cluster.assignment:
        preferring.setdefault(cluster.preferred(partition), []).append(partition)
    return {broker: sum(cluster.leaders[p] != broker for p in partitions) / len(partitions)
            for broker, partitions in preferring.items()}


def rebalance(cluster: Cluster, percentage: float = DEFAULT_IMBALANCE_PERCENTAGE) -> tuple[Cluster, list[Move]]:
    """One run of the rebalance task: the cluster after it and the leadership moves it made."""
    if not 0 <= percentage <= 100:
        raise ValueError(f"leader.imbalance.per.broker.percentage must be from 0 to 100, not {percentage!r}")
    leaders, moves = dict(cluster.leaders), []
    for broker, ratio in sorted(imbalance(cluster).items()):
        if ratio <= percentage / 100 or broker not in cluster.live:
            continue
        for partition in sorted(cluster.assignment):
            if cluster.preferred(partition) != broker or cluster.leaders[partition] == broker:
                continue
            if broker in cluster.isr[partition]:  # the preferred replica election succeeds
                moves.append(Move(partition, cluster.leaders[partition], broker))
                leaders[partition] = broker
    return replace(cluster, leaders=leaders), moves
