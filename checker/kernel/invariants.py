"""The properties of `properties/` over wide states, compiled.

`state_flags` gives one bit per property of `PROPERTY_NAMES` (the order of
`properties.PROPERTIES`): for an invariant, set when it is violated; for a witness, set when
it holds; `follower_truncated` is the step witness, on a state and its successor.
"""

from __future__ import annotations

from numba import njit

from kafka_mc.model.state import NO_LEADER, UNKNOWN
from kafka_mc.properties import PROPERTIES

from .layout import (
    ACKED, C_MESSAGES, C_REPLICAS, CACHE_COUNT, CACHE_EPOCH, CACHE_START, COMMITTED, CONSUMED, CONTROLLER_EPOCH,
    EPOCH, HAS_REMOTE, HW, ISR, LEADER, LEO, LOG_EPOCH, LOG_MSG, REPLICA_WIDTH, RESPONSE, STALE_ISR,
)
from .transitions import alive

PROPERTY_NAMES = ("NoCommittedDataLoss", "NoLogDivergence", "NoAckedDataLoss", "NoConsumedRecordLost",
                  "HwBelowLeo", "LeaderEpochMonotonic", "LeaderInIsr", "CrashLosesMemory",
                  "RecordCommitted", "LeaderChanged", "FollowerTruncated")
FOLLOWER_TRUNCATED = PROPERTY_NAMES.index("FollowerTruncated")
assert PROPERTY_NAMES == tuple(p.name for p in PROPERTIES), "the kernel's properties must follow PROPERTIES"


@njit(cache=True)
def history_in_leader_log(cfg, s, first):
    """Every (offset, msg) of the history at `first` is at that offset in the live leader's log."""
    leader = s[LEADER]
    if leader == NO_LEADER or not alive(s, leader):
        return True
    leo = s[leader * REPLICA_WIDTH + LEO]
    for offset in range(cfg[C_MESSAGES]):
        msgs = s[first + offset]
        if msgs and (offset >= leo or msgs != 1 << s[leader * REPLICA_WIDTH + LOG_MSG + offset]):
            return False
    return True


@njit(cache=True)
def no_acked_data_loss(cfg, s):
    leader = s[LEADER]
    if leader == NO_LEADER or not alive(s, leader) or not s[ACKED]:
        return True
    held = 0
    for offset in range(s[leader * REPLICA_WIDTH + LEO]):
        held |= 1 << s[leader * REPLICA_WIDTH + LOG_MSG + offset]
    return s[ACKED] & ~held == 0


@njit(cache=True)
def no_log_divergence(cfg, s):
    n = cfg[C_REPLICAS]
    for first in range(n):
        for second in range(first + 1, n):
            for offset in range(min(s[first * REPLICA_WIDTH + HW], s[second * REPLICA_WIDTH + HW])):
                if s[first * REPLICA_WIDTH + LOG_MSG + offset] != s[second * REPLICA_WIDTH + LOG_MSG + offset] or \
                        s[first * REPLICA_WIDTH + LOG_EPOCH + offset] != s[second * REPLICA_WIDTH + LOG_EPOCH + offset]:
                    return False
    return True


@njit(cache=True)
def hw_below_leo(cfg, s):
    for i in range(cfg[C_REPLICAS]):
        if s[i * REPLICA_WIDTH + HW] > s[i * REPLICA_WIDTH + LEO]:
            return False
    return True


@njit(cache=True)
def leader_epoch_monotonic(cfg, s):
    current = s[CONTROLLER_EPOCH]
    for i in range(cfg[C_REPLICAS]):
        if s[i * REPLICA_WIDTH + EPOCH] > current:
            return False
        latest = UNKNOWN
        for offset in range(s[i * REPLICA_WIDTH + LEO]):
            epoch = s[i * REPLICA_WIDTH + LOG_EPOCH + offset]
            if epoch < latest:
                return False
            latest = epoch
        if latest > current:
            return False
        for position in range(s[i * REPLICA_WIDTH + CACHE_COUNT] - 1):
            if s[i * REPLICA_WIDTH + CACHE_EPOCH + position] >= s[i * REPLICA_WIDTH + CACHE_EPOCH + position + 1] or \
                    s[i * REPLICA_WIDTH + CACHE_START + position] > s[i * REPLICA_WIDTH + CACHE_START + position + 1]:
                return False
    return True


@njit(cache=True)
def leader_in_isr(cfg, s):
    isr, leader = s[ISR], s[LEADER]
    return leader == NO_LEADER or isr >> leader & 1 == 1


@njit(cache=True)
def crash_loses_memory(cfg, s):
    for i in range(cfg[C_REPLICAS]):
        if not alive(s, i) and (s[i * REPLICA_WIDTH + EPOCH] != UNKNOWN or s[i * REPLICA_WIDTH + RESPONSE] or s[i * REPLICA_WIDTH + HAS_REMOTE]
                                or s[i * REPLICA_WIDTH + STALE_ISR]):
            return False
    return True


@njit(cache=True)
def record_committed(cfg, s):
    for offset in range(cfg[C_MESSAGES]):
        if s[COMMITTED + offset]:
            return True
    return False


@njit(cache=True)
def state_flags(cfg, s):
    """Bit p set: invariant p violated, or state witness p reached."""
    flags = 0
    if not history_in_leader_log(cfg, s, COMMITTED):
        flags |= 1 << 0
    if not no_log_divergence(cfg, s):
        flags |= 1 << 1
    if not no_acked_data_loss(cfg, s):
        flags |= 1 << 2
    if not history_in_leader_log(cfg, s, CONSUMED):
        flags |= 1 << 3
    if not hw_below_leo(cfg, s):
        flags |= 1 << 4
    if not leader_epoch_monotonic(cfg, s):
        flags |= 1 << 5
    if not leader_in_isr(cfg, s):
        flags |= 1 << 6
    if not crash_loses_memory(cfg, s):
        flags |= 1 << 7
    if record_committed(cfg, s):
        flags |= 1 << 8
    if s[CONTROLLER_EPOCH] > 0:
        flags |= 1 << 9
    return flags


@njit(cache=True)
def follower_truncated(cfg, before, after):
    for i in range(cfg[C_REPLICAS]):
        if after[i * REPLICA_WIDTH + LEO] < before[i * REPLICA_WIDTH + LEO]:
            return True
    return False
