"""Truncation protocols: the one place where `hw` and `leader-epoch` differ.

As `Kip101.tla` extends `KafkaReplication.tla` and overrides only the truncation
step, each variant here is a small strategy object that the replication model calls
when a replica becomes a follower and when it writes or truncates its epoch cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .state import FOLLOWER, NO_LEADER, TRUNCATING, UNKNOWN, Record, Replica, State

if TYPE_CHECKING:
    from .replication import ReplicationModel

Transition = Callable[["ReplicationModel", State, int], "State | None"]


def truncate(replica: Replica, offset: int, protocol: "TruncationProtocol") -> Replica:
    """Cut the log at `offset`; the HW and the epoch cache never point past the new end."""
    if offset >= replica.leo:
        return replica
    return replica._replace(
        log=replica.log[:offset],
        unflushed=max(0, replica.unflushed - (replica.leo - offset)),
        hw=min(replica.hw, offset),
        epochs=protocol.epochs_after_truncate(replica.epochs, offset),
    )


class TruncationProtocol:
    """How a replica that restarts or follows a new leader finds where its log may diverge."""

    name: str
    summary: str
    extra_actions: dict[str, Transition] = {}

    def become_follower(self, replica: Replica) -> Replica:
        """The replica has accepted a LeaderAndIsr naming another leader."""
        raise NotImplementedError

    def epochs_after_append(self, epochs: tuple, records: tuple[Record, ...], offset: int) -> tuple:
        return epochs

    def epochs_after_truncate(self, epochs: tuple, offset: int) -> tuple:
        return epochs

    def epochs_on_become_leader(self, epochs: tuple, epoch: int, leo: int) -> tuple:
        return epochs


class HighWatermarkTruncation(TruncationProtocol):
    """Kafka before 0.11: truncate to the replica's own high watermark; no epoch cache."""

    name = "hw"
    summary = "truncate to the local high watermark (Kafka < 0.11)"

    def become_follower(self, replica: Replica) -> Replica:
        return truncate(replica, replica.hw, self)._replace(role=FOLLOWER)


class LeaderEpochTruncation(TruncationProtocol):
    """KIP-101 (Kafka 0.11): truncate to the end offset of the follower's latest epoch on the leader.

    A new follower first exchanges OffsetsForLeaderEpoch with the leader
    (`FollowerTruncateByLeaderEpoch`) and only then fetches.
    """

    name = "leader-epoch"
    summary = "truncate to the leader's end offset for the follower's latest epoch (KIP-101)"

    def become_follower(self, replica: Replica) -> Replica:
        return replica._replace(role=TRUNCATING)

    def epochs_after_append(self, epochs: tuple, records: tuple[Record, ...], offset: int) -> tuple:
        for position, record in enumerate(records, start=offset):
            if not epochs or record.epoch > epochs[-1][0]:
                epochs += ((record.epoch, position),)
        return epochs

    def epochs_after_truncate(self, epochs: tuple, offset: int) -> tuple:
        return tuple(entry for entry in epochs if entry[1] < offset)

    def epochs_on_become_leader(self, epochs: tuple, epoch: int, leo: int) -> tuple:
        return epochs + ((epoch, leo),)

    def truncation_point(self, leader: Replica, follower: Replica) -> tuple[int, bool]:
        """Where the follower truncates after one exchange, and whether it may fetch then: the
        leader's end offset for its latest epoch, or its HW when that is undefined (Kafka 0.11)."""
        end_offset = end_offset_for(leader, latest_epoch(follower))
        return (follower.hw if end_offset == UNKNOWN else end_offset), True


def end_offset_for(leader: Replica, requested_epoch: int) -> int:
    """The leader's answer to OffsetsForLeaderEpoch, as `LeaderEpochFileCache.endOffsetFor`.

    The leader's LEO for its latest epoch; otherwise the start offset of the first
    later epoch (the start of `requested_epoch + 1` whenever that epoch is cached);
    UNKNOWN (UNDEFINED_EPOCH_OFFSET) for an undefined or older-than-cached epoch.
    """
    epochs = leader.epochs
    if requested_epoch == UNKNOWN or not epochs:
        return UNKNOWN
    if requested_epoch == epochs[-1][0]:
        return leader.leo
    if requested_epoch < epochs[0][0]:
        return UNKNOWN
    return next((start for epoch, start in epochs if epoch > requested_epoch), UNKNOWN)


def follower_truncate_by_leader_epoch(model: "ReplicationModel", state: State, index: int) -> State | None:
    """One OffsetsForLeaderEpoch exchange: the follower sends its latest epoch, truncates to the
    point the protocol derives from the leader's answer, and fetches once truncation is complete."""
    follower = state.replicas[index]
    if follower.role != TRUNCATING:
        return None
    leader_index = model.reachable_leader(state, index)
    if leader_index == NO_LEADER:
        return None
    leader = state.replicas[leader_index]
    offset, complete = model.protocol.truncation_point(leader, follower)
    follower = truncate(follower, offset, model.protocol)
    return model.with_replica(state, index, follower._replace(role=FOLLOWER) if complete else follower)


def latest_epoch(replica: Replica) -> int:
    return replica.epochs[-1][0] if replica.epochs else UNKNOWN


def epoch_end(epochs: tuple, leo: int, requested_epoch: int) -> tuple[int, int]:
    """`LeaderEpochFileCache.endOffsetFor` since KIP-279: the largest cached epoch at or below the
    requested one (the requested one itself if it predates the cache) and where it ends."""
    if requested_epoch == UNKNOWN or not epochs:
        return UNKNOWN, UNKNOWN
    if requested_epoch == epochs[-1][0]:
        return requested_epoch, leo
    later = [start for epoch, start in epochs if epoch > requested_epoch]
    if not later:
        return UNKNOWN, UNKNOWN
    earlier = [epoch for epoch, _ in epochs if epoch <= requested_epoch]
    return (earlier[-1] if earlier else requested_epoch), later[0]


class Kip279Truncation(LeaderEpochTruncation):
    """KIP-279 (Kafka 2.0 on): the leader answers with the largest epoch it has at or below the
    follower's and that epoch's end; the follower truncates to the end of the same epoch in its own
    log, and asks again, with its new latest epoch, while the two epochs differ
    (`AbstractFetcherThread.getOffsetTruncationState`)."""

    name = "kip-279"
    summary = "KIP-279: agree on the largest common epoch, truncate to its end (Kafka >= 2.0)"

    def truncation_point(self, leader: Replica, follower: Replica) -> tuple[int, bool]:
        leader_epoch, leader_end = epoch_end(leader.epochs, leader.leo, latest_epoch(follower))
        if leader_end == UNKNOWN:
            return follower.hw, True
        follower_epoch, follower_end = epoch_end(follower.epochs, follower.leo, leader_epoch)
        if follower_end == UNKNOWN:
            return leader_end, True
        if follower_epoch != leader_epoch:
            return follower_end, False
        return min(follower_end, leader_end), True


LeaderEpochTruncation.extra_actions = {"FollowerTruncateByLeaderEpoch": follower_truncate_by_leader_epoch}

PROTOCOLS: dict[str, TruncationProtocol] = {
    protocol.name: protocol
    for protocol in (HighWatermarkTruncation(), LeaderEpochTruncation(), Kip279Truncation())
}
