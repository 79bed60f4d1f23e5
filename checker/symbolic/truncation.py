"""The protocol variants as formulas: one formula per value of each choice that a declaration in
`model/protocols.py` makes, so that every declared variant is encoded as declared.

Appending to a full epoch cache is reported as an overflow (the encoding's caches have a fixed
capacity, which reachable states of a bounded run never exceed; see `layout`).
"""

from __future__ import annotations

import z3

from kafka_mc.model.protocols import (
    ASK_LEADER, FETCH_IF_EPOCH, JOIN_AT_HW, JOIN_PAST_EPOCH_START, KIP_101_LOOKUP, KIP_279_LOOKUP, NEWER_EPOCH_ONLY,
    NO_LOOKUP, TRUNCATE_CONFLICTING, TRUNCATE_TO_HW, ZOOKEEPER_WRITES, ALTER_ISR, LIVE_MEMBERS, BROKER_EPOCHS,
    FOLLOWERS_SKIP_BUMP, FOLLOWERS_TAKE_BUMP, NO_BUMP, SHRINK_AFTER_LAG_TIME, SHRINK_BEHIND_LEO, SKIP_NEXT_EPOCH,
    SKIP_SAME_EPOCH, SKIP_SAME_LEADER, STALE_FETCH_FENCED, STALE_FETCH_UPDATES, Protocol, require_encoded,
)
from kafka_mc.model.state import FOLLOWER, TRUNCATING, UNKNOWN

from .layout import SymReplica, merge, replace
from .terms import count, latest_epoch, numeral, pick, smin


class SymbolicProtocol:
    """The formulas of one protocol declaration (`model.protocols.Protocol`), one per choice value;
    `UnencodedChoice` for a value without one. `overflow` collects conditions under which a cache
    append would not fit (the transition is then disabled)."""

    ENCODED: dict[str, tuple] = {
        "epoch_cache": (False, True),
        "epoch_on_election": (False, True),
        "new_follower": (TRUNCATE_TO_HW, ASK_LEADER, FETCH_IF_EPOCH),
        "epoch_lookup": (NO_LOOKUP, KIP_101_LOOKUP, KIP_279_LOOKUP),
        "isr_join": (JOIN_AT_HW, JOIN_PAST_EPOCH_START),
        "truncate_on_fetch": (False, True),
        "diverging_fetch_updates_leader": (False, True),
        "epoch_assign": (NEWER_EPOCH_ONLY, TRUNCATE_CONFLICTING),
        "truncate_at_end": (False, True),
        "diverging_response_hw": (False, True),
        "bounce_noticed": (False, True),
        "hw_needs_min_isr": (False, True),  # `SymbolicModel.advance_hw`
        "eligible_leaders": (False, True),  # `Shape.elr`, `SymbolicModel.isr_change` and the actions it names
        # the ISR expansion (`SymbolicModel.joins_isr`: KIP-841's live member) and the controller's refusals of a
        # delayed AlterPartition (`SymbolicModel.controller_handle_alter_partition`: KIP-841, KIP-903)
        "isr_updates": (ZOOKEEPER_WRITES, ALTER_ISR, LIVE_MEMBERS, BROKER_EPOCHS),
        "isr_shrink": (SHRINK_AFTER_LAG_TIME, SHRINK_BEHIND_LEO),  # `SymbolicModel.leader_shrink_isr(_fails)`
        # `Shape.leader_ids` and `SymbolicModel.skips_leader_and_isr`
        "follower_skips": (SKIP_SAME_LEADER, SKIP_NEXT_EPOCH, SKIP_SAME_EPOCH),
        "isr_removal_bump": (FOLLOWERS_SKIP_BUMP, FOLLOWERS_TAKE_BUMP, NO_BUMP),  # `SymbolicModel(bumps=True)`
        # read only for a delayed fetch (`SymbolicModel.leader_handle_stale_fetch`)
        "stale_fetch": (STALE_FETCH_UPDATES, STALE_FETCH_FENCED),
    }

    def __init__(self, protocol: Protocol):
        require_encoded("Z3 encoding", protocol, self.ENCODED)
        self.declaration = protocol
        self.name = protocol.name

    def become_follower(self, model, replica: SymReplica) -> SymReplica:
        """`Protocol.become_follower` (`new_follower`)."""
        new_follower = self.declaration.new_follower
        if new_follower == TRUNCATE_TO_HW:
            return replace(model.truncate(replica, replica.hw), role=model.num(FOLLOWER))
        if new_follower == FETCH_IF_EPOCH:
            return replace(replica, role=z3.If(replica.cache_len > 0, model.num(FOLLOWER), model.num(TRUNCATING)))
        return replace(replica, role=model.num(TRUNCATING))

    def after_append(self, model, replica: SymReplica, epochs: list, count, offset) -> SymReplica:
        """`Protocol.epochs_after_append`: each of the first `count` records' epoch assigned at its offset."""
        if not self.declaration.epoch_cache:
            return replica
        for position, epoch in enumerate(epochs):
            replica = self.assign(model, replica, epoch, offset + position, position < count)
        return replica

    def assign(self, model, replica: SymReplica, epoch, start, when=True) -> SymReplica:
        """`Protocol.assign_epoch` where `when` holds (`epoch_assign`). Under `truncate-conflicting`
        the entries kept are a prefix, as starts and epochs rise along every reachable cache."""
        length = replica.cache_len
        if self.declaration.epoch_assign == NEWER_EPOCH_ONLY:
            return pushed(model, replica, epoch, start,
                          z3.And(when, z3.Or(length == 0, epoch > pick(replica.cache_epoch, length - 1))))
        add = z3.And(when, z3.Or(length == 0, epoch != pick(replica.cache_epoch, length - 1),
                                 start < pick(replica.cache_start, length - 1)))
        kept = kept_prefix(replica, lambda cached, cached_start: z3.And(cached < epoch, cached_start < start))
        return merge(add, pushed(model, kept, epoch, start, add), replica)

    def after_truncate(self, replica: SymReplica, offset) -> SymReplica:
        """Keep the entries that start below `offset` (a prefix: starts rise along the cache)."""
        if not self.declaration.epoch_cache:
            return replica
        return kept_prefix(replica, lambda _, start: start < offset)

    def on_become_leader(self, model, replica: SymReplica, epoch) -> SymReplica:
        """`Protocol.epochs_on_become_leader` (`epoch_on_election`, `epoch_assign`)."""
        if not self.declaration.epoch_on_election:
            return replica
        if self.declaration.epoch_assign == TRUNCATE_CONFLICTING:
            return self.assign(model, replica, epoch, replica.log_len)
        return pushed(model, replica, epoch, replica.log_len, z3.BoolVal(True))

    def truncation_point(self, leader: SymReplica, follower: SymReplica):
        """(offset, complete), as `Protocol.truncation_point` (`epoch_lookup`)."""
        on_election = self.declaration.epoch_on_election
        if self.declaration.epoch_lookup == KIP_101_LOOKUP:
            return kip_101_truncation_point(leader, follower, on_election)
        leader_epoch, leader_end = epoch_end(leader, latest_epoch(follower), on_election)
        return offset_truncation_state(leader_epoch, leader_end, follower, on_election)

    def may_join_isr(self, leader: SymReplica, offset):
        """`Protocol.may_join_isr` (`isr_join`)."""
        if self.declaration.isr_join == JOIN_PAST_EPOCH_START:
            start = pick(leader.cache_start, leader.cache_len - 1)
            return z3.And(offset >= leader.hw, leader.cache_len > 0, offset >= start)
        return offset >= leader.hw

    def fetch_divergence(self, leader: SymReplica, follower: SymReplica):
        """(diverges, offset to truncate to), as `Protocol.fetch_divergence` (`truncate_on_fetch`)."""
        if not self.declaration.truncate_on_fetch:
            return z3.BoolVal(False), follower.log_len
        on_election = self.declaration.epoch_on_election
        fetch_epoch = latest_epoch(follower)
        leader_epoch, leader_end = epoch_end(leader, fetch_epoch, on_election)
        diverges = z3.And(fetch_epoch != UNKNOWN, leader_end != UNKNOWN,
                          z3.Or(leader_epoch < fetch_epoch, leader_end < follower.log_len))
        return diverges, offset_truncation_state(leader_epoch, leader_end, follower, on_election)[0]

    def handle_out_of_range(self, model, follower: SymReplica, offset, hw) -> SymReplica:
        """The follower truncates to the response's offset, first taking the response's HW (at most
        its LEO) where out-of-range means a diverging epoch."""
        if self.declaration.truncate_on_fetch and self.declaration.diverging_response_hw:
            follower = replace(follower, hw=smin(follower.log_len, hw))
        return model.truncate(follower, offset)


def pushed(model, replica: SymReplica, epoch, start, when) -> SymReplica:
    """The replica with (epoch, start) after its cache's entries where `when` holds; an overflow
    (the transition disabled) where it would not fit."""
    length = replica.cache_len
    model.overflow(z3.And(when, length >= len(replica.cache_epoch)))
    return replace(replica, cache_len=z3.If(when, length + 1, length),
                   cache_epoch=[z3.If(z3.And(when, length == j), epoch, e) for j, e in enumerate(replica.cache_epoch)],
                   cache_start=[z3.If(z3.And(when, length == j), start, s) for j, s in enumerate(replica.cache_start)])


def kept_prefix(replica: SymReplica, keeps) -> SymReplica:
    """The replica with the longest prefix of its cache whose entries satisfy `keeps(epoch, start)`,
    the rest zero."""
    kept, keep = [], z3.BoolVal(True)
    for j, (epoch, start) in enumerate(zip(replica.cache_epoch, replica.cache_start)):
        keep = z3.And(keep, j < replica.cache_len, keeps(epoch, start))
        kept.append(keep)
    return replace(replica, cache_len=count(kept, replica.cache_len) if kept else replica.cache_len,
                   cache_epoch=[z3.If(k, e, 0) for k, e in zip(kept, replica.cache_epoch)],
                   cache_start=[z3.If(k, s, 0) for k, s in zip(kept, replica.cache_start)])


def kip_101_truncation_point(leader: SymReplica, follower: SymReplica, epoch_on_election: bool):
    """(offset, complete): the leader's end offset for the follower's latest epoch, or the
    follower's HW when it is undefined (Kafka 0.11)."""
    end = end_offset_for(leader, latest_epoch(follower), epoch_on_election)
    return z3.If(end == UNKNOWN, follower.hw, end), z3.BoolVal(True)


def _later_start(replica: SymReplica, requested):
    """The start of the first cached epoch after `requested`, and whether there is one."""
    start, exists = numeral(UNKNOWN, requested), z3.BoolVal(False)
    for j in reversed(range(len(replica.cache_epoch))):
        later = z3.And(j < replica.cache_len, replica.cache_epoch[j] > requested)
        start, exists = z3.If(later, replica.cache_start[j], start), z3.Or(later, exists)
    return start, exists


def end_offset_for(leader: SymReplica, requested, epoch_on_election: bool):
    """`LeaderEpochFileCache.endOffsetFor` of Kafka 0.11 (see `model.protocols.end_offset_for`)."""
    if not leader.cache_epoch:
        return numeral(UNKNOWN, leader.log_len)
    undefined = z3.Or(requested == UNKNOWN, leader.cache_len == 0)
    if not epoch_on_election:
        undefined = z3.Or(undefined, z3.And(requested != latest_epoch(leader), requested < leader.cache_epoch[0]))
    later, _ = _later_start(leader, requested)
    return z3.If(undefined, UNKNOWN, z3.If(requested == latest_epoch(leader), leader.log_len, later))


def epoch_end(replica: SymReplica, requested, epoch_on_election: bool):
    """(epoch, end) as `model.protocols.epoch_end`: the largest cached epoch at or below the
    requested one and where it ends; for one older than the cache, (the requested one, the first
    start) under KAFKA-7415 (`epoch_on_election`), else undefined."""
    if not replica.cache_epoch:
        return numeral(UNKNOWN, replica.log_len), numeral(UNKNOWN, replica.log_len)
    latest = requested == latest_epoch(replica)
    later, has_later = _later_start(replica, requested)
    earlier, has_earlier = requested, z3.BoolVal(False)
    for j, epoch in enumerate(replica.cache_epoch):
        at_or_below = z3.And(j < replica.cache_len, epoch <= requested)
        earlier, has_earlier = z3.If(at_or_below, epoch, earlier), z3.Or(has_earlier, at_or_below)
    undefined = z3.Or(requested == UNKNOWN, replica.cache_len == 0)
    if not epoch_on_election:
        undefined = z3.Or(undefined, z3.And(z3.Not(latest), z3.Not(has_earlier)))
    epoch = z3.If(undefined, UNKNOWN, z3.If(latest, requested, z3.If(has_later, earlier, UNKNOWN)))
    end = z3.If(undefined, UNKNOWN, z3.If(latest, replica.log_len, z3.If(has_later, later, UNKNOWN)))
    return epoch, end


def offset_truncation_state(leader_epoch, leader_end, follower: SymReplica, epoch_on_election: bool):
    """(offset, complete) as `model.protocols.offset_truncation_state`."""
    follower_epoch, follower_end = epoch_end(follower, leader_epoch, epoch_on_election)
    offset = z3.If(leader_end == UNKNOWN, follower.hw,
                   z3.If(follower_end == UNKNOWN, leader_end,
                         z3.If(follower_epoch != leader_epoch, follower_end, smin(follower_end, leader_end))))
    complete = z3.Or(leader_end == UNKNOWN, follower_end == UNKNOWN, follower_epoch == leader_epoch)
    return offset, complete
