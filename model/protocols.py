"""Truncation protocols: where the variants of Kafka's replication protocol differ.

As each variant of Kafka's TLA+ specifications extends one base module and overrides a few
steps, each variant here is a small strategy object that the replication model calls: when a
replica becomes a follower, when it writes or truncates its epoch cache, when it exchanges
OffsetsForLeaderEpoch, when the leader decides whether a fetching follower may join the ISR,
and when a fetch reveals that the follower's log diverges. The protocols are a layer below the
replication model: they import the state encoding only, never the model.

The history, one variant per fix (see `HISTORY`):
  hw               Kafka < 0.11  truncate to the local high watermark
  leader-epoch     0.11          KIP-101: OffsetsForLeaderEpoch, the leader's end of the epoch
  kip-279          2.0           KIP-279 (KAFKA-6361): agree on the largest common epoch
  kip-320          2.1           KIP-320 fencing and the KAFKA-7128 ISR-join rule
  diverging-epoch  2.8.0         truncation moves into the fetch response (KAFKA-10554)
  kafka-13141      2.8.1, 3.0    a diverging fetch no longer updates the leader's view
"""

from __future__ import annotations

from .state import FOLLOWER, TRUNCATING, UNKNOWN, FetchResponse, Record, Replica


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
    """How a replica that restarts or follows a new leader finds where its log may diverge.

    `exchanges_epochs`: a new follower exchanges OffsetsForLeaderEpoch with its leader
    (`FollowerTruncateByLeaderEpoch`, using `truncation_point`) before it fetches.
    `keeps_epoch_cache`: replicas keep a leader-epoch cache (`epochs`).
    `truncates_on_fetch`: the leader checks each fetch for divergence (`fetch_divergence`); its
    out-of-range responses are diverging-epoch responses."""

    name: str
    summary: str
    release: str
    exchanges_epochs = False
    keeps_epoch_cache = False
    truncates_on_fetch = False

    def become_follower(self, replica: Replica) -> Replica:
        """The replica has accepted a LeaderAndIsr naming another leader."""
        raise NotImplementedError

    def epochs_after_append(self, epochs: tuple, records: tuple[Record, ...], offset: int) -> tuple:
        return epochs

    def epochs_after_truncate(self, epochs: tuple, offset: int) -> tuple:
        return epochs

    def epochs_on_become_leader(self, epochs: tuple, epoch: int, leo: int) -> tuple:
        return epochs

    def truncation_point(self, leader: Replica, follower: Replica) -> tuple[int, bool]:
        """Where the follower truncates after one OffsetsForLeaderEpoch exchange, and whether
        it may fetch then (only protocols that `exchanges_epochs`)."""
        raise NotImplementedError

    def leader_answer(self, leader: Replica, follower: Replica) -> tuple[int, int]:
        """The leader's OffsetsForLeaderEpoch answer to the follower's latest epoch: (epoch, end
        offset); the epoch is UNKNOWN where the answer carries none (KIP-101's version 0)."""
        raise NotImplementedError

    def may_join_isr(self, leader: Replica, fetch_offset: int) -> bool:
        """A follower outside the ISR fetching at `fetch_offset` is added to it
        (`Partition.maybeExpandIsr` before Kafka 2.1: it reached the leader's HW)."""
        return fetch_offset >= leader.hw

    def fetch_divergence(self, leader: Replica, follower: Replica) -> int | None:
        """None, or, when the leader finds the fetching follower's log diverging from its own,
        the offset the follower truncates to on the response (only protocols that check)."""
        return None

    records_diverging_fetch = True  # the leader takes a diverging fetch's offset as the follower's LEO

    def handle_out_of_range(self, follower: Replica, response: FetchResponse) -> Replica:
        """The follower handles an OffsetOutOfRange response: it truncates to the leader's LEO."""
        return truncate(follower, response.offset, self)


class HighWatermarkTruncation(TruncationProtocol):
    """Kafka before 0.11: truncate to the replica's own high watermark; no epoch cache."""

    name = "hw"
    summary = "truncate to the local high watermark (Kafka < 0.11)"
    release = "0.10"

    def become_follower(self, replica: Replica) -> Replica:
        return truncate(replica, replica.hw, self)._replace(role=FOLLOWER)


class LeaderEpochTruncation(TruncationProtocol):
    """KIP-101 (Kafka 0.11): truncate to the end offset of the follower's latest epoch on the leader.

    A new follower first exchanges OffsetsForLeaderEpoch with the leader
    (`FollowerTruncateByLeaderEpoch`) and only then fetches.
    """

    name = "leader-epoch"
    summary = "truncate to the leader's end offset for the follower's latest epoch (KIP-101)"
    release = "0.11"
    exchanges_epochs = True
    keeps_epoch_cache = True

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

    def leader_answer(self, leader: Replica, follower: Replica) -> tuple[int, int]:
        return UNKNOWN, end_offset_for(leader, latest_epoch(follower))

    def truncation_point(self, leader: Replica, follower: Replica) -> tuple[int, bool]:
        """The leader's end offset for the follower's latest epoch, or its HW when that is
        undefined (Kafka 0.11)."""
        end_offset = self.leader_answer(leader, follower)[1]
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


def offset_truncation_state(leader_epoch: int, leader_end: int, follower: Replica) -> tuple[int, bool]:
    """`AbstractFetcherThread.getOffsetTruncationState` (Kafka 2.0 on), given the leader's
    (epoch, end offset): truncate to the end of that epoch in the follower's own log, and ask
    again (incomplete) while the follower's epoch there differs; the follower's HW when the
    leader's answer is undefined."""
    if leader_end == UNKNOWN:
        return follower.hw, True
    follower_epoch, follower_end = epoch_end(follower.epochs, follower.leo, leader_epoch)
    if follower_end == UNKNOWN:
        return leader_end, True
    if follower_epoch != leader_epoch:
        return follower_end, False
    return min(follower_end, leader_end), True


class Kip279Truncation(LeaderEpochTruncation):
    """KIP-279 (Kafka 2.0 on): the leader answers with the largest epoch it has at or below the
    follower's and that epoch's end; the follower truncates to the end of the same epoch in its own
    log, and asks again, with its new latest epoch, while the two epochs differ
    (`AbstractFetcherThread.getOffsetTruncationState`)."""

    name = "kip-279"
    summary = "KIP-279: agree on the largest common epoch, truncate to its end (Kafka >= 2.0)"
    release = "2.0"

    def leader_answer(self, leader: Replica, follower: Replica) -> tuple[int, int]:
        return epoch_end(leader.epochs, leader.leo, latest_epoch(follower))

    def truncation_point(self, leader: Replica, follower: Replica) -> tuple[int, bool]:
        return offset_truncation_state(*self.leader_answer(leader, follower), follower)


class Kip320Truncation(Kip279Truncation):
    """KIP-320 and KAFKA-7128 (Kafka 2.1): KIP-279's truncation, and a follower joins the ISR only
    once its fetch offset has reached both the leader's HW and the start offset of the leader's
    epoch (`Partition.maybeExpandIsr`, `leaderEpochStartOffsetOpt.exists(fetchOffset >= _)`), so a
    new leader whose HW lags cannot admit a replica that misses committed records.

    KIP-320's fencing (Fetch and OffsetsForLeaderEpoch carry the follower's current leader
    epoch; FENCED_LEADER_EPOCH and UNKNOWN_LEADER_EPOCH answer a mismatch) is not a difference
    between variants here: the base model lets a follower fetch and exchange epochs only with
    the replica acting as leader in the follower's own epoch, for every protocol. The leader's
    epoch start offset is the start of its latest cache entry, written when it became leader.
    """

    name = "kip-320"
    summary = "KIP-320 and KAFKA-7128: join the ISR only past the leader's epoch start (Kafka >= 2.1)"
    release = "2.1"

    def may_join_isr(self, leader: Replica, fetch_offset: int) -> bool:
        return fetch_offset >= leader.hw and bool(leader.epochs) and fetch_offset >= leader.epochs[-1][1]


class DivergingEpochTruncation(Kip320Truncation):
    """Truncation in the fetch (Kafka 2.7 leader side, KAFKA-10554 follower side in 2.8, with
    inter.broker.protocol.version 2.7 or later): a follower whose log has a latest epoch starts
    fetching at once, at its LEO, and each fetch carries that epoch (`lastFetchedEpoch`). The
    leader (`Partition.readRecords`) looks up the largest epoch at or below it and its end; if that
    epoch is older or ends before the fetch offset, it answers with no records and that
    `divergingEpoch`; the follower sets its HW from the response (`updateHighWatermark`, at most
    its LEO) and then truncates as KIP-279 would (`truncateOnFetchResponse`), and fetches again.
    The leader still records the diverging fetch's offset as the follower's LEO, may add it to the
    ISR and may advance its HW (`ReplicaManager.updateFollowerFetchState` skips only error
    responses; Kafka 2.7.0 to 2.7.1 and 2.8.0, fixed by KAFKA-13141). A follower with no epoch (an empty log) exchanges
    OffsetsForLeaderEpoch as before; the ISR-join rule is KIP-320's.

    Modelled: the response's offset is where the follower truncates, computed when the leader
    answers (the follower's log cannot change while it waits), and a diverging response reuses
    the response's out-of-range flag (an out-of-range fetch cannot happen here: a fetch beyond the
    leader's log always diverges). The response carries the HW after the leader's update, as every
    response of the model does (Kafka sends the HW read before it). An undefined lookup (an epoch
    newer than the leader's, OffsetOutOfRange in Kafka) cannot occur: a follower's epochs never
    exceed its leader's. The follower takes the HW and truncates in one event, so the window of
    KAFKA-14704 (fixed in 3.2.4, 3.3.3, 3.4.1: a consumer could read records the follower was
    about to truncate, below the HW it had just taken) is not modelled.
    """

    name = "diverging-epoch"
    summary = "truncation on the fetch response's diverging epoch (Kafka 2.8.0)"
    release = "2.8.0"
    truncates_on_fetch = True

    def become_follower(self, replica: Replica) -> Replica:
        return replica._replace(role=FOLLOWER if replica.epochs else TRUNCATING)

    def fetch_divergence(self, leader: Replica, follower: Replica) -> int | None:
        fetch_epoch = latest_epoch(follower)
        if fetch_epoch == UNKNOWN:
            return None
        leader_epoch, leader_end = self.leader_answer(leader, follower)
        if leader_end == UNKNOWN or not (leader_epoch < fetch_epoch or leader_end < follower.leo):
            return None
        return offset_truncation_state(leader_epoch, leader_end, follower)[0]

    def handle_out_of_range(self, follower: Replica, response: FetchResponse) -> Replica:
        return truncate(follower._replace(hw=min(follower.leo, response.hw)), response.offset, self)


class Kafka13141Truncation(DivergingEpochTruncation):
    """KAFKA-13141 (Kafka 2.7.2, 2.8.1, 3.0.0 on; `ReplicaManager.updateFollowerFetchState`, and
    `Partition.fetchRecords` since 3.3): as `diverging-epoch`, but the leader updates a follower's
    fetch state (its LEO, the ISR, the HW) only from a fetch that does not diverge."""

    name = "kafka-13141"
    summary = "a diverging fetch leaves the leader's view of the follower alone (Kafka 2.8.1, 3.0 on)"
    release = "3.0"
    records_diverging_fetch = False


HISTORY: tuple[TruncationProtocol, ...] = (
    HighWatermarkTruncation(), LeaderEpochTruncation(), Kip279Truncation(), Kip320Truncation(),
    DivergingEpochTruncation(), Kafka13141Truncation(),
)

PROTOCOLS: dict[str, TruncationProtocol] = {protocol.name: protocol for protocol in HISTORY}
