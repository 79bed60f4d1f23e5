"""Successor generation over wide states, compiled: one function per action of
`model/replication.py`; the protocol variant's choices (`model/protocols.py`) are read from their
settings cells, one branch per choice value, so any declaration the kernel encodes runs as declared.

Every action reads the state `s` and, when it is enabled, writes its successor into `t`
(a copy of `s` changed in place) and returns True; `apply` dispatches an action code.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .layout import (
    ACKED, ACKS_ALL, ACKS_ZERO, BUMPED, C_ACKS, C_DELAYS, C_ISR_UPDATES, DELAYS, ISR_BROKER_EPOCHS, ISR_LIVE_MEMBERS,
    C_DISK_FAILURES, DISK_FAILURES, C_METADATA_LAG, UNSEEN,
    LAST_KNOWN_ELR, PROPOSAL, REREGISTERED, C_CRASHES, C_DIVERGING_FETCH_UPDATES_LEADER, C_ELECTIONS,
    C_BOUNCE_NOTICED, C_DIVERGING_RESPONSE_HW, C_ELIGIBLE_LEADERS, C_HW_NEEDS_MIN_ISR, C_EPOCH_ASSIGN, C_EPOCH_CACHE, C_EPOCH_ON_ELECTION, C_EPOCH_LOOKUP, C_FLUSH, C_ISR_BUMPS, C_ISR_JOIN,
    C_UNFENCED_REQUESTS, C_FOLLOWER_SKIPS, C_MESSAGES, C_TRUNCATE_AT_END, C_MIN_ISR, C_NEW_FOLLOWER, C_PARTITIONS,
    C_REPLICAS, C_TRUNCATE_ON_FETCH, C_UNCLEAN, C_ISR_SHRINK, SHRINK_AFTER_LAG_TIME, SHRINK_BEHIND_LEO, SKIP_SAME_EPOCH,
    SKIP_SAME_LEADER, C_STALE_FETCH, DELAYED_FETCH, DELAYED_FETCH_STALE, STALE_FETCH_FENCED,
    CACHE_COUNT, CACHE_EPOCH, CACHE_START, COMMITTED, CONSUMED,
    CONTROLLER_EPOCH, CRASHES, CUTS, ELR, EPOCH, FOLLOWS, HAS_REMOTE, HW, ISR, JOIN_AT_HW, LEADER, LEO, LOOKUP_KIP_101,
    NEW_FOLLOWER_FETCHES_IF_EPOCH, NEW_FOLLOWER_TRUNCATES, LOG_EPOCH, LOG_MSG, MAX_REPLICAS, PEER_CUT, REMOTE_LEO, REPLICA_WIDTH, RESPONSE,
    RESPONSE_COUNT, RESPONSE_EPOCH, RESPONSE_HW, RESPONSE_MSG, RESPONSE_OFFSET, RESPONSE_OUT_OF_RANGE, ROLE,
    STALE_ISR, STATUS, UNFLUSHED, WRITTEN, ZK_CUT, MAX_MESSAGES,
)
from kafka_mc.model.state import CRASHED, EXPIRED, FENCED, FOLLOWER, LEADER as LEADER_ROLE, NO_LEADER, NO_ROLE, \
    OFFLINE, TRUNCATING, UNKNOWN, UP

# action codes; `ACTION_NAMES[code]` is the model's name
ACTION_NAMES = (
    "ProducerWrite", "LeaderHandleFetchRequest", "FollowerHandleFetchResponse", "LeaderShrinkIsr",
    "BecomeFollower", "LeaderShrinkIsrFails", "ReplicaFlush", "ReplicaCrash", "ReplicaRestart",
    "ControllerNoticeFailure", "ControllerElectLeader", "ZkDisconnect", "ZkReconnect", "PeerDisconnect",
    "PeerReconnect", "FollowerTruncateByLeaderEpoch", "ReplicaDiskFailure", "LeaderSendAlterPartition",
    "ControllerHandleAlterPartition", "FollowerSendDelayedFetch", "LeaderHandleStaleFetch", "LeaderApplyMetadata",
)
(PRODUCER_WRITE, LEADER_HANDLE_FETCH_REQUEST, FOLLOWER_HANDLE_FETCH_RESPONSE, LEADER_SHRINK_ISR, BECOME_FOLLOWER,
 LEADER_SHRINK_ISR_FAILS, REPLICA_FLUSH, REPLICA_CRASH, REPLICA_RESTART, CONTROLLER_NOTICE_FAILURE,
 CONTROLLER_ELECT_LEADER, ZK_DISCONNECT, ZK_RECONNECT, PEER_DISCONNECT, PEER_RECONNECT,
 FOLLOWER_TRUNCATE_BY_LEADER_EPOCH, REPLICA_DISK_FAILURE, LEADER_SEND_ALTER_PARTITION,
 CONTROLLER_HANDLE_ALTER_PARTITION, FOLLOWER_SEND_DELAYED_FETCH, LEADER_HANDLE_STALE_FETCH,
 LEADER_APPLY_METADATA) = range(len(ACTION_NAMES))
# Every function here is compiled once and inlined by LLVM into its callers (`forceinline`), so the
# level loop calls none of them. numba's own inlining (`inline="always"`) typed and lowered a copy of a
# function for each call site: the kernel then compiled in 504 s and 7.6 GB against 61 s and 0.55 GB,
# at the same exploration speed (docs/speed.md). `_nrt=False`: no reference counting of the arrays
# (nothing here allocates; it is also why states are copied cell by cell, `copy_state`). numba's type
# stubs lack the `_nrt` option.
inlined = njit(cache=True, forceinline=True, _nrt=False)  # type: ignore[call-overload]
ANY_EPOCH = int(np.iinfo(np.int16).max) + 1  # above every epoch a cell holds: `keep_cache_entries_below` by start only


def slot_codes(action_names: tuple[str, ...], replicas: int) -> np.ndarray:
    """The action code of every slot of a model (`ReplicationModel.action_index` order)."""
    return np.array([ACTION_NAMES.index(name) for name in action_names for _ in range(replicas)], dtype=np.int64)


# ------------------------------------------------------------------------------- reading


@inlined
def copy_state(s, t):
    """t = s, cell by cell (a slice assignment would need numba's reference-counting runtime)."""
    for cell in range(s.shape[0]):
        t[cell] = s[cell]

@inlined
def popcount(mask):
    count = 0
    while mask:
        mask &= mask - 1
        count += 1
    return count


@inlined
def alive(s, i):
    status = s[i * REPLICA_WIDTH + STATUS]
    return status == UP or status == EXPIRED


@inlined
def acts_as_leader(s, i):
    role = s[i * REPLICA_WIDTH + ROLE]
    return (role == LEADER_ROLE or role == FENCED) and alive(s, i)


@inlined
def leadership_start(s, epoch):
    """`ReplicationModel._leadership_start`: the epoch of the election that began `epoch`'s
    leadership (`epoch` itself without the controller's epoch bumps)."""
    while epoch > 0 and s[BUMPED] >> epoch & 1:
        epoch -= 1
    return epoch


@inlined
def current_leader(s):
    """`ReplicationModel._current_leader`."""
    index = s[LEADER]
    if index != NO_LEADER and acts_as_leader(s, index):
        epoch = s[CONTROLLER_EPOCH]
        if leadership_start(s, epoch) <= s[index * REPLICA_WIDTH + EPOCH] <= epoch:
            return index
    return NO_LEADER


@inlined
def acting_leader(cfg, s, n, epoch):
    if cfg[C_UNFENCED_REQUESTS]:  # `EpochBumpModel._acting_leader`: requests carry no epoch (up to 2.0.1)
        for index in range(n):
            if not acts_as_leader(s, index):
                continue
            leader_epoch = s[index * REPLICA_WIDTH + EPOCH]
            last = s[CONTROLLER_EPOCH] if index == s[LEADER] and current_leader(s) == index else leader_epoch
            if leadership_start(s, leader_epoch) <= epoch <= last:
                return index
        return NO_LEADER
    index = s[LEADER]
    if index != NO_LEADER and s[index * REPLICA_WIDTH + EPOCH] == epoch and acts_as_leader(s, index):
        return index
    for index in range(n):
        if s[index * REPLICA_WIDTH + EPOCH] == epoch and acts_as_leader(s, index):
            return index
    return NO_LEADER


@inlined
def reachable_leader(cfg, s, i):
    if not alive(s, i) or s[PEER_CUT] >> i & 1:
        return NO_LEADER
    leader = acting_leader(cfg, s, cfg[C_REPLICAS], s[i * REPLICA_WIDTH + EPOCH])
    if leader == i or leader == NO_LEADER or s[PEER_CUT] >> leader & 1:
        return NO_LEADER
    return leader


@inlined
def isr_of(s, i):
    """`ReplicationModel._isr_of`: the controller's ISR with the removals its leader has not read; a deposed
    leader's own."""
    return s[ISR] | s[UNSEEN] if i == s[LEADER] else s[i * REPLICA_WIDTH + STALE_ISR]


@inlined
def can_write_isr(s, i):
    return i == s[LEADER] and not s[ZK_CUT] >> i & 1


@inlined
def latest_epoch(s, i):
    count = s[i * REPLICA_WIDTH + CACHE_COUNT]
    return s[i * REPLICA_WIDTH + CACHE_EPOCH + count - 1] if count else UNKNOWN


@inlined
def end_offset_for(cfg, s, leader, requested):
    """KIP-101's `LeaderEpochFileCache.endOffsetFor` (`protocols.end_offset_for`)."""
    count = s[leader * REPLICA_WIDTH + CACHE_COUNT]
    if requested == UNKNOWN or not count:
        return UNKNOWN
    if requested == s[leader * REPLICA_WIDTH + CACHE_EPOCH + count - 1]:
        return s[leader * REPLICA_WIDTH + LEO]
    if requested < s[leader * REPLICA_WIDTH + CACHE_EPOCH] and not cfg[C_EPOCH_ON_ELECTION]:
        return UNKNOWN
    for position in range(count):
        if s[leader * REPLICA_WIDTH + CACHE_EPOCH + position] > requested:
            return s[leader * REPLICA_WIDTH + CACHE_START + position]
    return UNKNOWN


@inlined
def epoch_end(cfg, s, i, requested):
    """`protocols.epoch_end` on replica i's cache and LEO: (epoch, end offset)."""
    count = s[i * REPLICA_WIDTH + CACHE_COUNT]
    if requested == UNKNOWN or not count:
        return UNKNOWN, UNKNOWN
    epochs = i * REPLICA_WIDTH + CACHE_EPOCH
    if requested == s[epochs + count - 1]:
        return requested, s[i * REPLICA_WIDTH + LEO]
    later = UNKNOWN
    for position in range(count):
        if s[epochs + position] > requested:
            later = s[i * REPLICA_WIDTH + CACHE_START + position]
            break
    if later == UNKNOWN:
        return UNKNOWN, UNKNOWN
    earlier = UNKNOWN
    for position in range(count):
        if s[epochs + position] <= requested:
            earlier = s[epochs + position]
    if earlier == UNKNOWN:  # older than the cache
        return (requested, later) if cfg[C_EPOCH_ON_ELECTION] else (UNKNOWN, UNKNOWN)
    return earlier, later


@inlined
def offset_truncation_state(cfg, s, follower, leader_epoch, leader_end):
    """`protocols.offset_truncation_state`: (offset, complete)."""
    if leader_end == UNKNOWN:
        return s[follower * REPLICA_WIDTH + HW], True
    follower_epoch, follower_end = epoch_end(cfg, s, follower, leader_epoch)
    if follower_end == UNKNOWN:
        return leader_end, True
    if follower_epoch != leader_epoch:
        return follower_end, False
    return min(follower_end, leader_end), True


@inlined
def fetch_divergence(cfg, s, leader, follower):
    """The offset a diverging fetch truncates to, or UNKNOWN when it does not diverge."""
    if not cfg[C_TRUNCATE_ON_FETCH]:
        return UNKNOWN
    fetch_epoch = latest_epoch(s, follower)
    if fetch_epoch == UNKNOWN:
        return UNKNOWN
    leader_epoch, leader_end = epoch_end(cfg, s, leader, fetch_epoch)
    if leader_end == UNKNOWN or not (leader_epoch < fetch_epoch or leader_end < s[follower * REPLICA_WIDTH + LEO]):
        return UNKNOWN
    return offset_truncation_state(cfg, s, follower, leader_epoch, leader_end)[0]


@inlined
def may_join_isr(cfg, s, leader, offset):
    if offset < s[leader * REPLICA_WIDTH + HW]:
        return False
    if cfg[C_ISR_JOIN] == JOIN_AT_HW:
        return True
    count = s[leader * REPLICA_WIDTH + CACHE_COUNT]
    return count > 0 and offset >= s[leader * REPLICA_WIDTH + CACHE_START + count - 1]


# ------------------------------------------------------------------------------- writing

@inlined
def remembered(cfg, leader):
    """`ReplicationModel._remembered`, as the FOLLOWS cell holds it."""
    return 0 if cfg[C_FOLLOWER_SKIPS] == SKIP_SAME_EPOCH else leader + 1


@inlined
def clear_memory(t, i):
    """Forget the response in flight, the stale ISR and the view of the others."""
    for position in range(RESPONSE, REMOTE_LEO + MAX_REPLICAS):
        t[i * REPLICA_WIDTH + position] = 0


@inlined
def truncate(t, i, offset, at_end):
    """`protocols.truncate`: cut the log at `offset`; HW and epoch cache never point past it. At or
    past the end only the cache entries starting there go, where `at_end` (a log load, or
    `truncate_at_end`)."""
    leo = t[i * REPLICA_WIDTH + LEO]
    if offset >= leo:
        if not at_end:
            return
        offset = leo
    for position in range(offset, leo):
        t[i * REPLICA_WIDTH + LOG_MSG + position] = 0
        t[i * REPLICA_WIDTH + LOG_EPOCH + position] = 0
    t[i * REPLICA_WIDTH + UNFLUSHED] = max(0, t[i * REPLICA_WIDTH + UNFLUSHED] - (leo - offset))
    t[i * REPLICA_WIDTH + HW] = min(t[i * REPLICA_WIDTH + HW], offset)
    t[i * REPLICA_WIDTH + LEO] = offset
    keep_cache_entries_below(t, i, ANY_EPOCH, offset)


@inlined
def keep_cache_entries_below(t, i, epoch, start):
    """Keep replica i's cache entries whose epoch is below `epoch` and whose start is below `start`,
    in order; zero the rest."""
    count, kept = t[i * REPLICA_WIDTH + CACHE_COUNT], 0
    for position in range(count):
        cached = t[i * REPLICA_WIDTH + CACHE_EPOCH + position]
        cached_start = t[i * REPLICA_WIDTH + CACHE_START + position]
        t[i * REPLICA_WIDTH + CACHE_EPOCH + position] = 0
        t[i * REPLICA_WIDTH + CACHE_START + position] = 0
        if cached < epoch and cached_start < start:
            t[i * REPLICA_WIDTH + CACHE_EPOCH + kept] = cached
            t[i * REPLICA_WIDTH + CACHE_START + kept] = cached_start
            kept += 1
    t[i * REPLICA_WIDTH + CACHE_COUNT] = kept


@inlined
def push_cache_entry(t, i, epoch, start):
    count = t[i * REPLICA_WIDTH + CACHE_COUNT]
    t[i * REPLICA_WIDTH + CACHE_EPOCH + count] = epoch
    t[i * REPLICA_WIDTH + CACHE_START + count] = start
    t[i * REPLICA_WIDTH + CACHE_COUNT] = count + 1


@inlined
def assign_epoch(cfg, t, i, epoch, start):
    """`Protocol.assign_epoch` on replica i's cache (`epoch_assign`)."""
    count = t[i * REPLICA_WIDTH + CACHE_COUNT]
    if not cfg[C_EPOCH_ASSIGN]:
        if not count or epoch > t[i * REPLICA_WIDTH + CACHE_EPOCH + count - 1]:
            push_cache_entry(t, i, epoch, start)
        return
    if count and t[i * REPLICA_WIDTH + CACHE_EPOCH + count - 1] == epoch \
            and start >= t[i * REPLICA_WIDTH + CACHE_START + count - 1]:
        return
    keep_cache_entries_below(t, i, epoch, start)
    push_cache_entry(t, i, epoch, start)


@inlined
def on_become_leader(cfg, t, i, epoch):
    """`Protocol.epochs_on_become_leader` on replica i's cache (`epoch_on_election`, `epoch_assign`)."""
    if cfg[C_EPOCH_ON_ELECTION]:
        if cfg[C_EPOCH_ASSIGN]:
            assign_epoch(cfg, t, i, epoch, t[i * REPLICA_WIDTH + LEO])
        else:
            push_cache_entry(t, i, epoch, t[i * REPLICA_WIDTH + LEO])


@inlined
def append(cfg, t, i, msg, epoch):
    """One record at the end of replica i's log (`ReplicationModel._appended`, one record)."""
    leo = t[i * REPLICA_WIDTH + LEO]
    t[i * REPLICA_WIDTH + LOG_MSG + leo] = msg
    t[i * REPLICA_WIDTH + LOG_EPOCH + leo] = epoch
    t[i * REPLICA_WIDTH + LEO] = leo + 1
    if not cfg[C_FLUSH]:
        t[i * REPLICA_WIDTH + UNFLUSHED] += 1
    if cfg[C_EPOCH_CACHE]:
        assign_epoch(cfg, t, i, epoch, leo)


@inlined
def add_history(t, first, i, hw):
    for offset in range(hw):
        t[first + offset] |= 1 << t[i * REPLICA_WIDTH + LOG_MSG + offset]


@inlined
def advance_hw(cfg, t, index):
    """`ReplicationModel._advance_hw`: over the maximal ISR (`_maximal_isr`), the HW checks against the ISR."""
    if index == NO_LEADER:
        return
    isr = isr_of(t, index)
    maximal = isr | t[PROPOSAL] if index == t[LEADER] else isr
    least = 1 << 30
    for member in range(cfg[C_REPLICAS]):
        if maximal >> member & 1:
            leo = t[index * REPLICA_WIDTH + LEO] if member == index else t[index * REPLICA_WIDTH + REMOTE_LEO + member]
            least = min(least, leo)
    old_hw = t[index * REPLICA_WIDTH + HW]
    hw = max(old_hw, least)
    if cfg[C_HW_NEEDS_MIN_ISR] and popcount(isr) < cfg[C_MIN_ISR]:
        hw = old_hw  # KAFKA-15583: `maybeIncrementLeaderHW` returns while `isUnderMinIsr`
    if hw != old_hw:
        t[index * REPLICA_WIDTH + HW] = hw
        if cfg[C_ACKS] == ACKS_ALL and popcount(maximal) >= cfg[C_MIN_ISR]:
            epoch = t[index * REPLICA_WIDTH + EPOCH]
            start = leadership_start(t, epoch)
            for offset in range(old_hw, hw):
                if start <= t[index * REPLICA_WIDTH + LOG_EPOCH + offset] <= epoch:
                    t[ACKED] |= 1 << t[index * REPLICA_WIDTH + LOG_MSG + offset]
    if not hw:
        return
    add_history(t, CONSUMED, index, hw)
    if index == current_leader(t):
        add_history(t, COMMITTED, index, hw)


@inlined
def drop_proposal(t):
    """`replication.dropped_proposal`: no AlterPartition in flight."""
    t[PROPOSAL] = 0
    t[REREGISTERED] = 0


@inlined
def isr_change(cfg, t, isr, unclean):
    """`ReplicationModel._isr_change`: the controller's ISR becomes `isr`; with eligible leader replicas
    (KIP-966) the ELR empties at min.insync.replicas members or more, else takes the old ISR's members
    less the new ISR's and `unclean`; an ISR that becomes empty keeps the leader, or where there is none its
    last member, as the last known leader."""
    if cfg[C_ELIGIBLE_LEADERS]:
        if popcount(isr) >= cfg[C_MIN_ISR]:
            t[ELR] = 0
        else:
            t[ELR] = (t[ELR] | t[ISR]) & ~isr & ~unclean
        if t[ISR] and not isr:
            t[LAST_KNOWN_ELR] = t[ISR] if t[LEADER] == NO_LEADER else 1 << t[LEADER]
    t[ISR] = isr
    drop_proposal(t)  # a new partition epoch


@inlined
def with_isr(cfg, t, isr, unclean):
    """`ReplicationModel._with_isr`."""
    isr_change(cfg, t, isr, unclean)
    advance_hw(cfg, t, current_leader(t))


@inlined
def controller_removes(cfg, t, isr, unclean):
    """`ReplicationModel._controller_removes`: with metadata lag and a leader, the leader has not read the
    change; its ISR and its pending change stay."""
    if not cfg[C_METADATA_LAG] or t[LEADER] == NO_LEADER or (isr == t[ISR] and not t[UNSEEN]):
        with_isr(cfg, t, isr, unclean)
        return
    proposal, reregistered, unseen = t[PROPOSAL], t[REREGISTERED], t[UNSEEN] | t[ISR] & ~isr
    isr_change(cfg, t, isr, unclean)
    t[PROPOSAL], t[REREGISTERED], t[UNSEEN] = proposal, reregistered, unseen


# ------------------------------------------------------------------------------- actions

@inlined
def producer_write(cfg, s, t, i):
    if s[WRITTEN] >= cfg[C_MESSAGES]:
        return False
    lost_on_wire = cfg[C_ACKS] == ACKS_ZERO and i == s[LEADER] and s[i * REPLICA_WIDTH + STATUS] == CRASHED
    if not (lost_on_wire or s[i * REPLICA_WIDTH + ROLE] == LEADER_ROLE and alive(s, i)):
        return False
    if cfg[C_ACKS] == ACKS_ALL and popcount(isr_of(s, i)) < cfg[C_MIN_ISR]:
        return False
    copy_state(s, t)
    written = s[WRITTEN] + 1
    t[WRITTEN] = written
    if cfg[C_ACKS] != ACKS_ALL:
        t[ACKED] |= 1 << written
    if lost_on_wire:
        return True
    append(cfg, t, i, written, s[i * REPLICA_WIDTH + EPOCH])
    advance_hw(cfg, t, i)
    return True


@inlined
def joins_isr(cfg, t, leader, i, offset):
    """`ReplicationModel._joins_isr`."""
    if isr_of(t, leader) >> i & 1 or t[PROPOSAL] or not may_join_isr(cfg, t, leader, offset) \
            or not can_write_isr(t, leader):
        return False
    return cfg[C_ISR_UPDATES] < ISR_LIVE_MEMBERS or t[i * REPLICA_WIDTH + STATUS] == UP


@inlined
def record_fetch(cfg, t, leader, i, offset, delay, join):
    """`ReplicationModel._record_fetch`."""
    if join and joins_isr(cfg, t, leader, i, offset):
        if delay or t[UNSEEN]:  # in flight; or refused at once (an older partition epoch), pending: no delay spent
            t[PROPOSAL] = 1 << i
            t[REREGISTERED] = 0
            if not t[UNSEEN]:
                t[DELAYS] += 1
        else:
            isr_change(cfg, t, t[ISR] | 1 << i, 0)
    t[leader * REPLICA_WIDTH + REMOTE_LEO + i] = offset
    advance_hw(cfg, t, leader)


@inlined
def controller_handle_alter_partition(cfg, s, t, i):
    """`ReplicationModel.controller_handle_alter_partition`."""
    if s[PROPOSAL] != 1 << i or s[UNSEEN]:
        return False
    status = s[i * REPLICA_WIDTH + STATUS]
    copy_state(s, t)
    if (cfg[C_ISR_UPDATES] >= ISR_LIVE_MEMBERS and (status == OFFLINE or status == EXPIRED)) \
            or (cfg[C_ISR_UPDATES] == ISR_BROKER_EPOCHS and s[REREGISTERED] >> i & 1):
        drop_proposal(t)  # INELIGIBLE_REPLICA
        return True
    with_isr(cfg, t, s[ISR] | 1 << i, 0)
    return True


@inlined
def leader_handle_fetch_request(cfg, s, t, i, delay):
    """`ReplicationModel.leader_handle_fetch_request`; with `delay`, `leader_send_alter_partition`: the
    AlterPartition stays in flight, and the action is enabled only where the fetch sends one. One
    function for both actions, called once (`apply`)."""
    if delay and s[DELAYS] >= cfg[C_DELAYS]:
        return False
    if s[i * REPLICA_WIDTH + RESPONSE] or s[i * REPLICA_WIDTH + ROLE] != FOLLOWER:
        return False
    leader = reachable_leader(cfg, s, i)
    if leader == NO_LEADER:
        return False
    copy_state(s, t)
    respond_to_fetch(cfg, s, t, i, leader, delay)
    return True


@inlined
def respond_to_fetch(cfg, s, t, i, leader, delay):
    """The leader's handling of the follower's fetch in `leader_handle_fetch_request`, into `t` (a copy of
    `s`, or of `s` with the follower added to the ISR, `leader_handle_stale_fetch`), reading the logs from `s`."""
    if s[i * REPLICA_WIDTH + DELAYED_FETCH] and not s[i * REPLICA_WIDTH + DELAYED_FETCH_STALE]:
        t[i * REPLICA_WIDTH + DELAYED_FETCH] = 0  # this is the delayed fetch it waits for
    offset = s[i * REPLICA_WIDTH + LEO]
    diverging = fetch_divergence(cfg, s, leader, i)
    t[i * REPLICA_WIDTH + RESPONSE] = 1
    if diverging == UNKNOWN and offset > s[leader * REPLICA_WIDTH + LEO]:
        t[i * REPLICA_WIDTH + RESPONSE_OFFSET] = s[leader * REPLICA_WIDTH + LEO]
        t[i * REPLICA_WIDTH + RESPONSE_HW] = s[leader * REPLICA_WIDTH + HW]
        t[i * REPLICA_WIDTH + RESPONSE_OUT_OF_RANGE] = 1
        return
    if diverging == UNKNOWN or cfg[C_DIVERGING_FETCH_UPDATES_LEADER]:
        record_fetch(cfg, t, leader, i, offset, delay, True)
    t[i * REPLICA_WIDTH + RESPONSE_HW] = t[leader * REPLICA_WIDTH + HW]
    if diverging != UNKNOWN:
        t[i * REPLICA_WIDTH + RESPONSE_OFFSET] = diverging
        t[i * REPLICA_WIDTH + RESPONSE_OUT_OF_RANGE] = 1
        return
    t[i * REPLICA_WIDTH + RESPONSE_OFFSET] = offset
    leader_leo = t[leader * REPLICA_WIDTH + LEO]
    t[i * REPLICA_WIDTH + RESPONSE_COUNT] = leader_leo - offset
    for position in range(offset, leader_leo):
        t[i * REPLICA_WIDTH + RESPONSE_MSG + position - offset] = t[leader * REPLICA_WIDTH + LOG_MSG + position]
        t[i * REPLICA_WIDTH + RESPONSE_EPOCH + position - offset] = t[leader * REPLICA_WIDTH + LOG_EPOCH + position]


@inlined
def follower_send_delayed_fetch(cfg, s, t, i):
    """`ReplicationModel.follower_send_delayed_fetch`."""
    if s[DELAYS] >= cfg[C_DELAYS] or s[i * REPLICA_WIDTH + DELAYED_FETCH] or s[i * REPLICA_WIDTH + RESPONSE] \
            or s[i * REPLICA_WIDTH + ROLE] != FOLLOWER or reachable_leader(cfg, s, i) == NO_LEADER:
        return False
    copy_state(s, t)
    t[i * REPLICA_WIDTH + DELAYED_FETCH] = s[i * REPLICA_WIDTH + LEO] + 1
    t[DELAYS] = s[DELAYS] + 1
    return True


@inlined
def leader_handle_stale_fetch(cfg, s, t, i):
    """`ReplicationModel.leader_handle_stale_fetch`."""
    leader = current_leader(s)
    if not s[i * REPLICA_WIDTH + DELAYED_FETCH_STALE] or leader == NO_LEADER or leader == i:
        return False
    offset = s[i * REPLICA_WIDTH + DELAYED_FETCH] - 1
    copy_state(s, t)
    t[i * REPLICA_WIDTH + DELAYED_FETCH] = 0
    t[i * REPLICA_WIDTH + DELAYED_FETCH_STALE] = 0
    fenced = cfg[C_STALE_FETCH] == STALE_FETCH_FENCED
    if fenced and alive(s, i):
        return True  # NOT_LEADER_OR_FOLLOWER
    if offset > s[leader * REPLICA_WIDTH + LEO]:
        return True  # OffsetOutOfRange
    if cfg[C_ISR_UPDATES] != ISR_BROKER_EPOCHS:
        record_fetch(cfg, t, leader, i, offset, False, True)
        return True
    if not fenced and not t[UNSEEN] and joins_isr(cfg, t, leader, i, offset) and not s[i * REPLICA_WIDTH + RESPONSE] \
            and s[i * REPLICA_WIDTH + ROLE] == FOLLOWER and reachable_leader(cfg, s, i) == leader:
        # KAFKA-15221's race: the new incarnation's fetch, with the follower in the ISR
        isr_change(cfg, t, t[ISR] | 1 << i, 0)
        respond_to_fetch(cfg, s, t, i, leader, False)
        return True
    record_fetch(cfg, t, leader, i, offset, False, False)
    return True


@inlined
def fence_fetches(cfg, t):
    """`replication.fenced_fetches`: a new leader epoch fences every delayed fetch in flight."""
    for index in range(cfg[C_REPLICAS]):
        t[index * REPLICA_WIDTH + DELAYED_FETCH] = 0
        t[index * REPLICA_WIDTH + DELAYED_FETCH_STALE] = 0


@inlined
def clear_response(t, i):
    for position in range(RESPONSE, RESPONSE_EPOCH + MAX_MESSAGES):
        t[i * REPLICA_WIDTH + position] = 0


@inlined
def follower_handle_fetch_response(cfg, s, t, i):
    if not (alive(s, i) and s[i * REPLICA_WIDTH + RESPONSE]) or s[PEER_CUT] >> i & 1:
        return False
    copy_state(s, t)
    clear_response(t, i)
    response_offset, response_hw = s[i * REPLICA_WIDTH + RESPONSE_OFFSET], s[i * REPLICA_WIDTH + RESPONSE_HW]
    if s[i * REPLICA_WIDTH + RESPONSE_OUT_OF_RANGE]:
        if cfg[C_TRUNCATE_ON_FETCH] and cfg[C_DIVERGING_RESPONSE_HW]:  # `Protocol.handle_out_of_range`
            t[i * REPLICA_WIDTH + HW] = min(t[i * REPLICA_WIDTH + LEO], response_hw)
        truncate(t, i, response_offset, cfg[C_TRUNCATE_AT_END])
    else:
        for position in range(s[i * REPLICA_WIDTH + RESPONSE_COUNT]):
            append(cfg, t, i, s[i * REPLICA_WIDTH + RESPONSE_MSG + position], s[i * REPLICA_WIDTH + RESPONSE_EPOCH + position])
        t[i * REPLICA_WIDTH + HW] = min(t[i * REPLICA_WIDTH + LEO], response_hw)
    return True


@inlined
def leader_shrink_isr(cfg, s, t, i):
    """`ReplicationModel.leader_shrink_isr`."""
    if s[PROPOSAL]:
        return False
    leader = current_leader(s)
    if leader == NO_LEADER or leader == i or not isr_of(s, leader) >> i & 1 or not can_write_isr(s, leader):
        return False
    caught_up = s[leader * REPLICA_WIDTH + REMOTE_LEO + i] >= s[leader * REPLICA_WIDTH + LEO]
    if caught_up and cfg[C_ISR_SHRINK] == SHRINK_BEHIND_LEO:
        return False
    copy_state(s, t)
    if s[UNSEEN]:  # at an older partition epoch: refused, pending until the leader reads the metadata
        t[PROPOSAL] = 1 << leader
        return True
    with_isr(cfg, t, s[ISR] & ~(1 << i), 0)
    return True


@inlined
def leader_shrink_isr_fails(cfg, s, t, i):
    if not (s[i * REPLICA_WIDTH + ROLE] == LEADER_ROLE and alive(s, i)) or can_write_isr(s, i):
        return False
    if i == s[LEADER] and s[PROPOSAL]:
        return False  # no shrink begins while an AlterPartition is in flight
    isr, leo = isr_of(s, i), s[i * REPLICA_WIDTH + LEO]
    out_of_sync = False
    for member in range(cfg[C_REPLICAS]):
        behind = s[i * REPLICA_WIDTH + REMOTE_LEO + member] < leo
        if member != i and isr >> member & 1 and (behind or cfg[C_ISR_SHRINK] == SHRINK_AFTER_LAG_TIME):
            out_of_sync = True
    if not out_of_sync:
        return False
    copy_state(s, t)
    t[i * REPLICA_WIDTH + ROLE] = FENCED
    return True


@inlined
def become_follower(cfg, s, t, i):
    leader = s[LEADER]
    if not alive(s, i) or leader == NO_LEADER or leader == i or s[i * REPLICA_WIDTH + EPOCH] >= s[CONTROLLER_EPOCH]:
        return False
    if s[ZK_CUT] >> i & 1:
        return False
    copy_state(s, t)
    t[i * REPLICA_WIDTH + EPOCH] = s[CONTROLLER_EPOCH]
    skips = cfg[C_FOLLOWER_SKIPS]
    if skips != SKIP_SAME_EPOCH and s[i * REPLICA_WIDTH + FOLLOWS] == leader + 1 \
            and (skips == SKIP_SAME_LEADER or s[CONTROLLER_EPOCH] == s[i * REPLICA_WIDTH + EPOCH] + 1):
        return True  # `Protocol.skips_leader_and_isr`: the leader it follows (to 2.0.1)
    clear_memory(t, i)
    t[i * REPLICA_WIDTH + FOLLOWS] = remembered(cfg, leader)
    new_follower = cfg[C_NEW_FOLLOWER]
    if new_follower == NEW_FOLLOWER_TRUNCATES:
        truncate(t, i, t[i * REPLICA_WIDTH + HW], cfg[C_TRUNCATE_AT_END])
        t[i * REPLICA_WIDTH + ROLE] = FOLLOWER
    elif new_follower == NEW_FOLLOWER_FETCHES_IF_EPOCH and t[i * REPLICA_WIDTH + CACHE_COUNT]:
        t[i * REPLICA_WIDTH + ROLE] = FOLLOWER
    else:
        t[i * REPLICA_WIDTH + ROLE] = TRUNCATING
    return True


@inlined
def replica_flush(cfg, s, t, i):
    if not s[i * REPLICA_WIDTH + UNFLUSHED] or not alive(s, i):
        return False
    copy_state(s, t)
    t[i * REPLICA_WIDTH + UNFLUSHED] = 0
    return True


@inlined
def replica_crash(cfg, s, t, i):
    if not alive(s, i) or s[CRASHES] >= cfg[C_CRASHES]:
        return False
    copy_state(s, t)
    truncate(t, i, s[i * REPLICA_WIDTH + LEO] - s[i * REPLICA_WIDTH + UNFLUSHED], 1)  # a log load
    t[i * REPLICA_WIDTH + STATUS] = OFFLINE if s[i * REPLICA_WIDTH + STATUS] == EXPIRED else CRASHED
    t[i * REPLICA_WIDTH + ROLE] = NO_ROLE
    t[i * REPLICA_WIDTH + EPOCH] = UNKNOWN
    clear_memory(t, i)
    t[i * REPLICA_WIDTH + FOLLOWS] = 0
    if s[i * REPLICA_WIDTH + DELAYED_FETCH]:  # its fetch stays at the leader, from an earlier incarnation
        t[i * REPLICA_WIDTH + DELAYED_FETCH_STALE] = 1
    t[CRASHES] = s[CRASHES] + 1
    return True


@inlined
def replica_disk_failure(cfg, s, t, i):
    """`ReplicationModel.replica_disk_failure`: a crash that loses the disk (the model's slots list it
    only with `disk_failures`), counted where that bound is below the crashes'."""
    if s[DISK_FAILURES] >= cfg[C_DISK_FAILURES] or not replica_crash(cfg, s, t, i):
        return False
    truncate(t, i, 0, 1)
    if cfg[C_DISK_FAILURES] < cfg[C_CRASHES]:
        t[DISK_FAILURES] = s[DISK_FAILURES] + 1
    return True


@inlined
def replica_restart(cfg, s, t, i):
    # `ReplicationModel.replica_restart`: a crashed leader, or any crashed replica with KIP-380, waits for the notice
    if alive(s, i) or (s[i * REPLICA_WIDTH + STATUS] == CRASHED and (s[LEADER] == i or cfg[C_BOUNCE_NOTICED])):
        return False
    if s[ZK_CUT] >> i & 1:
        return False
    copy_state(s, t)
    t[i * REPLICA_WIDTH + STATUS] = UP
    if s[PROPOSAL] >> i & 1:  # a new broker epoch, which an AlterPartition in flight predates
        t[REREGISTERED] |= 1 << i
    if cfg[C_ELIGIBLE_LEADERS] and (s[ISR] | s[ELR]) >> i & 1:
        # a new incarnation, an unclean shutdown: `ReplicationControlManager.handleBrokerUncleanShutdown`
        controller_removes(cfg, t, s[ISR] & ~(1 << i), 1 << i)
    return True


@inlined
def controller_notice_failure(cfg, s, t, i):
    status = s[i * REPLICA_WIDTH + STATUS]
    if not (status == CRASHED or status == UP and s[ZK_CUT] >> i & 1):
        return False
    copy_state(s, t)
    if status == CRASHED:
        t[i * REPLICA_WIDTH + STATUS] = OFFLINE
    else:
        t[i * REPLICA_WIDTH + STATUS] = EXPIRED
        if i == s[LEADER]:
            t[i * REPLICA_WIDTH + STALE_ISR] = isr_of(s, i)
    if s[LEADER] == i:
        t[LEADER] = NO_LEADER
        drop_proposal(t)  # a new partition epoch
        t[UNSEEN] = 0
    remaining = s[ISR] & ~(1 << i)
    if s[ISR] >> i & 1 and (remaining or cfg[C_ELIGIBLE_LEADERS]):
        controller_removes(cfg, t, remaining, 0)  # with eligible leader replicas the ISR may become empty (KIP-966)
    leader = t[LEADER]
    if cfg[C_ISR_BUMPS] and leader != NO_LEADER and leader != i and t[ISR] != s[ISR]:
        # `EpochBumpModel.controller_notice_failure`: the epoch bump, taken by a live leader at once
        epoch = t[CONTROLLER_EPOCH] + 1
        t[CONTROLLER_EPOCH] = epoch
        t[BUMPED] |= 1 << epoch
        fence_fetches(cfg, t)
        if not t[ZK_CUT] >> leader & 1:
            take_bump(cfg, t, leader)
    return True


@inlined
def take_bump(cfg, t, leader):
    """`EpochBumpModel._take_bump`: the controller's leader acts on the bump, unless it crashed."""
    if acts_as_leader(t, leader):
        epoch = t[CONTROLLER_EPOCH]
        t[leader * REPLICA_WIDTH + EPOCH] = epoch
        on_become_leader(cfg, t, leader, epoch)
        advance_hw(cfg, t, leader)


@inlined
def controller_elect_leader(cfg, s, t, i):
    if s[LEADER] != NO_LEADER or s[CONTROLLER_EPOCH] - popcount(s[BUMPED]) >= cfg[C_ELECTIONS]:
        return False
    if s[i * REPLICA_WIDTH + STATUS] != UP or s[ZK_CUT] >> i & 1:
        return False
    n, isr, elr = cfg[C_REPLICAS], s[ISR], s[ELR]
    # KIP-966: while the ISR is empty an ELR member is as good (`PartitionChangeBuilder.isValidNewLeader`)
    eligible = isr if isr else elr
    live_eligible = 0
    for member in range(n):
        if eligible >> member & 1 and s[member * REPLICA_WIDTH + STATUS] == UP:
            live_eligible |= 1 << member
    last_known = s[LAST_KNOWN_ELR]
    if live_eligible >> i & 1:
        new_isr = isr if isr else 1 << i  # an ELR member becomes the only ISR member (`tryElection`)
        elr &= ~(1 << i)
    elif not eligible and popcount(last_known) == 1:
        if last_known != 1 << i:
            return False  # KAFKA-15584: the last known leader, before any unclean election
        new_isr = 1 << i
    elif cfg[C_UNCLEAN] and not live_eligible:
        new_isr, elr = 1 << i, 0  # an unclean election clears the ELR (`maybeUpdateRecordElr`)
    else:
        return False
    epoch = s[CONTROLLER_EPOCH] + 1
    copy_state(s, t)
    fence_fetches(cfg, t)
    t[i * REPLICA_WIDTH + ROLE] = LEADER_ROLE
    t[i * REPLICA_WIDTH + EPOCH] = epoch
    clear_memory(t, i)
    t[i * REPLICA_WIDTH + HAS_REMOTE] = 1
    for member in range(n):
        t[i * REPLICA_WIDTH + REMOTE_LEO + member] = UNKNOWN
    t[i * REPLICA_WIDTH + FOLLOWS] = remembered(cfg, i)
    on_become_leader(cfg, t, i, epoch)
    t[LEADER] = i
    t[CONTROLLER_EPOCH] = epoch
    t[ISR] = new_isr
    t[ELR] = elr
    t[LAST_KNOWN_ELR] = 0
    advance_hw(cfg, t, i)
    return True


@inlined
def follower_truncate_by_leader_epoch(cfg, s, t, i):
    if s[i * REPLICA_WIDTH + ROLE] != TRUNCATING:
        return False
    leader = reachable_leader(cfg, s, i)
    if leader == NO_LEADER:
        return False
    requested = latest_epoch(s, i)
    if cfg[C_EPOCH_LOOKUP] == LOOKUP_KIP_101:
        end = end_offset_for(cfg, s, leader, requested)
        offset, complete = (s[i * REPLICA_WIDTH + HW] if end == UNKNOWN else end), True
    else:
        leader_epoch, leader_end = epoch_end(cfg, s, leader, requested)
        offset, complete = offset_truncation_state(cfg, s, i, leader_epoch, leader_end)
    copy_state(s, t)
    truncate(t, i, offset, cfg[C_TRUNCATE_AT_END])
    if complete:
        t[i * REPLICA_WIDTH + ROLE] = FOLLOWER
    return True


@inlined
def zk_disconnect(cfg, s, t, i):
    if s[CUTS] >= cfg[C_PARTITIONS] or s[i * REPLICA_WIDTH + STATUS] != UP or s[ZK_CUT] >> i & 1:
        return False
    copy_state(s, t)
    t[ZK_CUT] = s[ZK_CUT] | 1 << i
    t[CUTS] = s[CUTS] + 1
    return True


@inlined
def zk_reconnect(cfg, s, t, i):
    if not s[ZK_CUT] >> i & 1:
        return False
    copy_state(s, t)
    t[ZK_CUT] = s[ZK_CUT] & ~(1 << i)
    if t[i * REPLICA_WIDTH + STATUS] == EXPIRED:
        t[i * REPLICA_WIDTH + STATUS] = UP
    if t[i * REPLICA_WIDTH + ROLE] == FENCED and can_write_isr(t, i):
        t[i * REPLICA_WIDTH + ROLE] = LEADER_ROLE
    if cfg[C_ISR_BUMPS] and i == t[LEADER] and t[i * REPLICA_WIDTH + EPOCH] != t[CONTROLLER_EPOCH]:
        take_bump(cfg, t, i)  # `EpochBumpModel.zk_reconnect`: the bump it missed while cut off
    return True


@inlined
def peer_disconnect(cfg, s, t, i):
    if s[CUTS] >= cfg[C_PARTITIONS] or not alive(s, i) or s[PEER_CUT] >> i & 1:
        return False
    copy_state(s, t)
    t[PEER_CUT] = s[PEER_CUT] | 1 << i
    t[CUTS] = s[CUTS] + 1
    return True


@inlined
def peer_reconnect(cfg, s, t, i):
    if not s[PEER_CUT] >> i & 1:
        return False
    copy_state(s, t)
    t[PEER_CUT] = s[PEER_CUT] & ~(1 << i)
    return True


@inlined
def leader_apply_metadata(cfg, s, t, i):
    """`ReplicationModel.leader_apply_metadata`."""
    if not s[UNSEEN] or i != current_leader(s) or s[ZK_CUT] >> i & 1:
        return False
    copy_state(s, t)
    drop_proposal(t)
    t[UNSEEN] = 0
    advance_hw(cfg, t, i)
    return True


@inlined
def apply(cfg, action, s, t, i):
    """The successor of `s` by action code `action` on replica i, into `t`; False when disabled."""
    if action == PRODUCER_WRITE:
        return producer_write(cfg, s, t, i)
    if action == LEADER_HANDLE_FETCH_REQUEST or action == LEADER_SEND_ALTER_PARTITION:
        delay = action == LEADER_SEND_ALTER_PARTITION
        return leader_handle_fetch_request(cfg, s, t, i, delay) and (not delay or t[DELAYS] > s[DELAYS])
    if action == FOLLOWER_HANDLE_FETCH_RESPONSE:
        return follower_handle_fetch_response(cfg, s, t, i)
    if action == LEADER_SHRINK_ISR:
        return leader_shrink_isr(cfg, s, t, i)
    if action == BECOME_FOLLOWER:
        return become_follower(cfg, s, t, i)
    if action == LEADER_SHRINK_ISR_FAILS:
        return leader_shrink_isr_fails(cfg, s, t, i)
    if action == REPLICA_FLUSH:
        return replica_flush(cfg, s, t, i)
    if action == REPLICA_CRASH:
        return replica_crash(cfg, s, t, i)
    if action == REPLICA_RESTART:
        return replica_restart(cfg, s, t, i)
    if action == CONTROLLER_NOTICE_FAILURE:
        return controller_notice_failure(cfg, s, t, i)
    if action == CONTROLLER_ELECT_LEADER:
        return controller_elect_leader(cfg, s, t, i)
    if action == ZK_DISCONNECT:
        return zk_disconnect(cfg, s, t, i)
    if action == ZK_RECONNECT:
        return zk_reconnect(cfg, s, t, i)
    if action == PEER_DISCONNECT:
        return peer_disconnect(cfg, s, t, i)
    if action == PEER_RECONNECT:
        return peer_reconnect(cfg, s, t, i)
    if action == REPLICA_DISK_FAILURE:
        return replica_disk_failure(cfg, s, t, i)
    if action == CONTROLLER_HANDLE_ALTER_PARTITION:
        return controller_handle_alter_partition(cfg, s, t, i)
    if action == FOLLOWER_SEND_DELAYED_FETCH:
        return follower_send_delayed_fetch(cfg, s, t, i)
    if action == LEADER_HANDLE_STALE_FETCH:
        return leader_handle_stale_fetch(cfg, s, t, i)
    if action == LEADER_APPLY_METADATA:
        return leader_apply_metadata(cfg, s, t, i)
    return follower_truncate_by_leader_epoch(cfg, s, t, i)

