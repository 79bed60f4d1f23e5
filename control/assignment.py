"""Replica assignment when a topic is created (the cluster internals article, README "Sources";
Kafka's rack-unaware `AdminUtils.assignReplicasToBrokers`).

Leaders go round-robin over the brokers from a random start; each partition's followers follow
its leader at a shift that is the same for a whole round of partitions and grows by one each
round (`1 + (shift + j) % (brokers - 1)` places after the leader for the j-th follower), so no
two replicas of a partition share a broker and followers spread as leaders do. The first
replica of each list is the partition's preferred leader. Rack-aware placement is left out: the
documents do not describe it.
"""

from __future__ import annotations

import random
from typing import Sequence


class AssignmentError(ValueError):
    """Assignment input Kafka refuses (no partitions, a bad replication factor, no brokers)."""


def assign_replicas(brokers: Sequence[int], partitions: int, replication_factor: int, *,
                    start: int | None = None, shift: int | None = None,
                    rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
    """Partition -> its assigned replicas (AR), the preferred leader first. `start` (index of the
    first leader's broker) and `shift` (the first round's follower shift) are random when not
    given, as in Kafka."""
    brokers = list(brokers)
    if len(set(brokers)) != len(brokers):
        raise AssignmentError(f"broker ids must be distinct, not {brokers}")
    if not brokers:
        raise AssignmentError("no brokers to assign replicas to")
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions <= 0:
        raise AssignmentError(f"the number of partitions must be larger than 0, not {partitions!r}")
    if isinstance(replication_factor, bool) or not isinstance(replication_factor, int) or replication_factor <= 0:
        raise AssignmentError(f"the replication factor must be larger than 0, not {replication_factor!r}")
    if replication_factor > len(brokers):
        raise AssignmentError(f"replication factor {replication_factor} is larger than the {len(brokers)} "
                              "available brokers")
    count, rng = len(brokers), rng or random.Random()
    start = rng.randrange(count) if start is None else start
    shift = rng.randrange(count) if shift is None else shift
    assignment = {}
    for partition in range(partitions):
        if partition > 0 and partition % count == 0:
            shift += 1
        first = (partition + start) % count
        followers = [(first + 1 + (shift + j) % (count - 1)) % count for j in range(replication_factor - 1)]
        assignment[partition] = tuple(brokers[index] for index in [first, *followers])
    return assignment
