"""Safety invariants: the two documented failures and the sanity checks behind them."""

from __future__ import annotations

from itertools import combinations

from kafka_mc.model.state import NO_LEADER, UNKNOWN, State

from .base import ALWAYS, Property


def missing_from_leader(state: State, history: tuple[tuple[int, int], ...]) -> tuple[int, int] | None:
    """The first (offset, msg) of `history` that is not at that offset in the log of the
    controller's leader, while it is live (a crashed leader without flushed data is no later
    leader yet); None when every one is."""
    leader = state.leader
    if leader is None or not leader.alive:
        return None
    log = leader.log
    return next(((offset, msg) for offset, msg in history if offset >= len(log) or log[offset].msg != msg), None)


def missing_acked(state: State) -> int | None:
    """The lowest acknowledged message number missing from the live current leader's log, if any."""
    leader = state.leader
    if leader is None or not leader.alive or not state.acked:
        return None
    missing = state.acked & ~sum(1 << record.msg for record in leader.log)
    return (missing & -missing).bit_length() - 1 if missing else None


def diverging_offset(state: State) -> tuple[int, int, int] | None:
    """Two replicas (indices) and the first offset below both their HWs where they hold different
    records, live or not; None when no two do."""
    for (first, one), (second, other) in combinations(enumerate(state.replicas), 2):
        common = min(one.hw, other.hw)
        if one.log[:common] != other.log[:common]:
            offset = next(i for i in range(common) if one.log[i] != other.log[i])
            return first, second, offset
    return None


def no_committed_data_loss(state: State) -> bool:
    """Every record once below the leader's HW is at the same offset in the current leader's log."""
    return missing_from_leader(state, state.committed) is None


def no_consumed_record_lost(state: State) -> bool:
    """Every record a consumer could read below some acting leader's HW (a deposed leader's
    too) is at the same offset in the current leader's log."""
    return missing_from_leader(state, state.consumed) is None


def no_acked_data_loss(state: State) -> bool:
    """Every write acknowledged to the producer is in the live current leader's log."""
    return missing_acked(state) is None


def no_log_divergence(state: State) -> bool:
    """No two replicas, live or not, hold different records at an offset below both their HWs."""
    return diverging_offset(state) is None


def hw_below_leo(state: State) -> bool:
    """Every replica's high watermark is at most its log end offset."""
    return all(replica.hw <= replica.leo for replica in state.replicas)


def leader_epoch_monotonic(state: State) -> bool:
    """Leader epochs never go backwards: record epochs rise along every log, epoch-cache
    entries rise in epoch and offset, and nobody is ahead of the controller's epoch."""
    current = state.controller.epoch
    for replica in state.replicas:
        if replica.epoch > current:
            return False
        latest = UNKNOWN
        for record in replica.log:
            if record.epoch < latest:
                return False
            latest = record.epoch
        if latest > current:
            return False
        cache = replica.epochs
        if any(a[0] >= b[0] or a[1] > b[1] for a, b in zip(cache, cache[1:])):
            return False
    return True


def leader_in_isr(state: State) -> bool:
    """The controller's leader, when there is one, is a member of the ISR. (Before KIP-966 the ISR
    is never empty; with eligible leader replicas it is empty while the partition has no leader.)"""
    controller = state.controller
    return controller.leader == NO_LEADER or bool(controller.isr >> controller.leader & 1)


def epoch_known_only_when_live(state: State) -> bool:
    """A crashed replica has no in-memory leader epoch, response or view of the others."""
    return all(replica.alive or (replica.epoch == UNKNOWN and not replica.response and not replica.remote_leos
                                 and not replica.stale_isr)
               for replica in state.replicas)


INVARIANTS: tuple[Property, ...] = (
    Property("NoCommittedDataLoss", ALWAYS, "reliability article figures 8-9 to 8-11 (Case L)", no_committed_data_loss),
    Property("NoLogDivergence", ALWAYS, "reliability article figures 8-12 to 8-14 (Case D)", no_log_divergence),
    Property("NoAckedDataLoss", ALWAYS, "Vanlightly's fault-tolerance article, ways to lose acknowledged writes",
             no_acked_data_loss),
    Property("NoConsumedRecordLost", ALWAYS,
             "Vanlightly's fault-tolerance article, partition scenarios 4 and 6: two leaders",
             no_consumed_record_lost),
    Property("HwBelowLeo", ALWAYS, "reliability article section 1.3: HW <= LEO", hw_below_leo),
    Property("LeaderEpochMonotonic", ALWAYS, "reliability article section 1.4: epochs only grow",
             leader_epoch_monotonic),
    Property("LeaderInIsr", ALWAYS, "ISR high-watermark article: the leader is in the ISR", leader_in_isr),
    Property("CrashLosesMemory", ALWAYS, "reliability article: a crash loses in-memory state",
             epoch_known_only_when_live),
)
