"""Truncation protocols: the one place where `hw` and `leader-epoch` differ.

As `Kip101.tla` extends `KafkaReplication.tla` and overrides only the truncation
step, each variant here is a small strategy object that the replication model calls
when a replica becomes a follower and when it writes or truncates its epoch cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from .state import FOLLOWER, LEADER, TRUNCATING, UNKNOWN, Record, Replica, State

if TYPE_CHECKING:
    from .replication import ReplicationModel

Transition = Callable[["ReplicationModel", State, int], "State | None"]


def truncate(replica: Replica, offset: int, protocol: "TruncationProtocol") -> Replica:
    """Cut the log at `offset`; the HW and the epoch cache never point past the new end."""
    if offset >= replica.leo:
        return replica
    return replica._replace(
        log=replica.log[:offset],
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
    """The follower sends its latest epoch, truncates to the leader's answer if its LEO is larger
    (to its HW when the answer is undefined, as Kafka 0.11 falls back), then starts fetching."""
    follower = state.replicas[index]
    leader = state.leader
    if not (follower.alive and follower.role == TRUNCATING and follower.epoch == state.controller.epoch):
        return None
    if leader is None or not (leader.alive and leader.role == LEADER):
        return None
    latest_epoch = follower.epochs[-1][0] if follower.epochs else UNKNOWN
    end_offset = end_offset_for(leader, latest_epoch)
    target = follower.hw if end_offset == UNKNOWN else end_offset
    follower = truncate(follower, target, model.protocol)._replace(role=FOLLOWER)
    return model.with_replica(state, index, follower)


LeaderEpochTruncation.extra_actions = {"FollowerTruncateByLeaderEpoch": follower_truncate_by_leader_epoch}

PROTOCOLS: dict[str, TruncationProtocol] = {
    protocol.name: protocol for protocol in (HighWatermarkTruncation(), LeaderEpochTruncation())
}
