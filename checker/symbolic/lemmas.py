"""The shipped strengthening lemmas: with them, `prove` shows NoCommittedDataLoss and
NoLogDivergence for `leader-epoch` (Kafka 0.11.0), `kip-279` (2.0.0), `kafka-7415` (2.0.1) and
`kip-320` (2.1.0) with 2 replicas, acks=all, clean elections, flushed writes and no network
failure, for any number of crashes and elections (2 or 3 messages). `diverging-epoch`,
`kafka-13141`, `kafka-14704` and `kafka-15583` are not proved: `ResponseAtLeo` does not hold for a
diverging fetch's response. `prove` refuses `kip-966` (its ISR may be empty: `LeaderInIsr`) and
`hw_needs_min_isr` with min.insync.replicas above 1 (a new leader's HW stays put: `EmptyLatestAtHw`,
`LeaderHwCoversCommitted`) by name (`induction.UNCOVERED`).

One set serves the variants before and after KAFKA-7415: a new leader's epoch enters its cache at
election (`kafka-7415`, `kip-320`) or with its first appended record (`leader-epoch`, `kip-279`),
and the lemmas that speak of it (`LeaderCacheLatest`, `EmptyLatestAtHw`) say so. It serves them
whatever a follower does with a LeaderAndIsr of the leader it follows (`follower_skips`): one that
skips it takes the epoch only (`ReplicationModel.become_follower`), and no lemma speaks of a
follower's epoch or of the leader it follows (`leader_id`). Since each variant's
consecution is checked against the same set, the set also holds in every state reachable by
mixing the variants' steps (a leader that caches its epoch at one election and not at the next);
`tests/test_prove.py` checks it on every such state of a bounded run.

Each lemma is a plain function from a `SymState` to a Z3 formula; its name names it in the
proof's queries and its docstring's first paragraph says what it claims. They were found from
counterexamples to induction, each checked first against every reachable state of bounded
configurations (`tests/test_prove.py` does so again). Several are about two replicas only (the
one that does not follow led the follower's epoch); with more replicas the proof fails.

The helpers (`log_view`, `response_view`, `committed_at`, `cache_entries`, ...) are there for
users' own lemmas too.
"""

from __future__ import annotations

from itertools import combinations, product
from typing import Iterator, NamedTuple

import z3

from kafka_mc.model.state import CRASHED, EXPIRED, FENCED, FOLLOWER, LEADER, NO_LEADER, NO_ROLE, UNKNOWN, UP

from .layout import SymReplica, SymState
from .lemma import Lemma
from .properties import leader_in_isr
from .terms import alive, latest_epoch, pick
from .truncation import kip_101_truncation_point

# ------------------------------------------------------------------ helpers


class View(NamedTuple):
    """A log as a sequence of records (`present` says whether it exists)."""

    present: z3.BoolRef
    length: z3.ArithRef
    msgs: list
    epochs: list


def log_view(r: SymReplica) -> View:
    """The replica's log."""
    return View(z3.BoolVal(True), r.log_len, list(r.log_msg), list(r.log_epoch))


def response_view(r: SymReplica) -> View:
    """The log the replica will hold once it appends the records of the fetch response in flight
    to it; absent when there is none (or it is an OffsetOutOfRange error)."""
    start = r.resp_offset
    msgs = [z3.If(o < start, r.log_msg[o], pick(r.resp_msg, o - start)) for o in range(len(r.log_msg))]
    epochs = [z3.If(o < start, r.log_epoch[o], pick(r.resp_epoch, o - start)) for o in range(len(r.log_msg))]
    return View(z3.And(r.has_response, z3.Not(r.resp_oor)), start + r.resp_len, msgs, epochs)


def views(s: SymState) -> list[View]:
    """Every log and every log-to-be."""
    return [log_view(r) for r in s.replicas] + [response_view(r) for r in s.replicas]


def records(s: SymState) -> Iterator[tuple[int, z3.BoolRef, z3.ArithRef, z3.ArithRef]]:
    """(offset, present, msg, epoch) of every record slot of every log and log-to-be."""
    for v in views(s):
        for o in range(len(v.msgs)):
            yield o, z3.And(v.present, o < v.length), v.msgs[o], v.epochs[o]


def committed_at(s: SymState, offset: int, msg) -> z3.BoolRef:
    """(offset, msg) is in the committed history; `msg` may be a term."""
    m = len(s.replicas[0].log_msg)
    return z3.Or([z3.And(msg == k + 1, s.committed[offset * m + k]) for k in range(m)])


def committed_entries(s: SymState) -> Iterator[tuple[z3.BoolRef, int, int]]:
    """(flag, offset, msg) for every possible entry of the committed history."""
    m = len(s.replicas[0].log_msg)
    for index, flag in enumerate(s.committed):
        yield flag, index // m, index % m + 1


def cache_entries(r: SymReplica) -> Iterator[tuple[z3.BoolRef, z3.ArithRef, z3.ArithRef]]:
    """(present, epoch, start) of every epoch-cache slot."""
    for j in range(len(r.cache_epoch)):
        yield j < r.cache_len, r.cache_epoch[j], r.cache_start[j]


def latest_is(r: SymReplica, epoch) -> z3.BoolRef:
    """The replica's latest cached epoch is `epoch`."""
    return z3.And(r.cache_len > 0, latest_epoch(r) == epoch)


def prefix_of(v: View, r: SymReplica) -> z3.BoolRef:
    """The view holds a prefix of the replica's log."""
    return z3.And(v.length <= r.log_len,
                  *[z3.Implies(o < v.length, z3.And(v.msgs[o] == r.log_msg[o], v.epochs[o] == r.log_epoch[o]))
                    for o in range(len(v.msgs))])


def agree(a: SymReplica, b: SymReplica) -> z3.BoolRef:
    """The two logs hold the same records below the shorter one's end."""
    return z3.And([z3.Implies(z3.And(o < a.log_len, o < b.log_len),
                              z3.And(a.log_msg[o] == b.log_msg[o], a.log_epoch[o] == b.log_epoch[o]))
                   for o in range(len(a.log_msg))])


def holds_epoch(s: SymState, epoch, but: int | None = None) -> z3.BoolRef:
    """Some log, response or epoch cache (but replica `but`'s cache) holds `epoch`."""
    terms = [z3.And(present, e == epoch) for _, present, _, e in records(s)]
    terms += [z3.And(present, e == epoch) for i, r in enumerate(s.replicas) if i != but
              for present, e, _ in cache_entries(r)]
    return z3.Or(terms)


def latest_is_empty(r: SymReplica) -> z3.BoolRef:
    """The replica's latest cached epoch starts at its log end: it holds no record of it."""
    return z3.And(r.cache_len > 0, pick(r.cache_start, r.cache_len - 1) == r.log_len)


def pairs(s: SymState) -> Iterator[tuple[int, SymReplica, int, SymReplica]]:
    """Every ordered pair of distinct replicas, with their indices."""
    for i, first in enumerate(s.replicas):
        for j, second in enumerate(s.replicas):
            if i != j:
                yield i, first, j, second


# ------------------------------------------------------------------ configuration


def NoNetworkFailure(s: SymState):
    """No broker is cut off, so no session expires, no leader is fenced and none keeps a stale
    ISR (no network failures configured)."""
    per_replica = [z3.And(r.status != EXPIRED, r.role != FENCED, *[z3.Not(b) for b in r.stale_isr])
                   for r in s.replicas]
    return z3.And(s.cuts == 0, *[z3.Not(cut) for cut in s.zk_cut + s.peer_cut], *per_replica)


def AllFlushed(s: SymState):
    """No record waits in a page cache (every append is flushed)."""
    return z3.And([r.unflushed == 0 for r in s.replicas])


# ------------------------------------------------------------------ roles and the controller


def DownReplicasForget(s: SymState):
    """A replica that is down has no role, no epoch, no response in flight and no view of the others."""
    return z3.And([z3.Implies(z3.Not(alive(r)), z3.And(r.role == NO_ROLE, r.epoch == UNKNOWN,
                                                       z3.Not(r.has_response), z3.Not(r.leading)))
                   for r in s.replicas])


def LeaderIsControllers(s: SymState):
    """A replica in the leader role is the controller's leader, in the controller's epoch."""
    return z3.And([z3.Implies(r.role == LEADER, z3.And(s.leader == i, r.epoch == s.epoch))
                   for i, r in enumerate(s.replicas)])


def ControllersLeaderLeadsOrCrashed(s: SymState):
    """The controller's leader is up in the leader role, or crashed and not yet noticed."""
    return z3.And([z3.Implies(s.leader == i, z3.Or(z3.And(r.status == UP, r.role == LEADER), r.status == CRASHED))
                   for i, r in enumerate(s.replicas)])


def LeaderInIsr(s: SymState):
    """The controller's leader is in the ISR, and the ISR is never empty (the invariant LeaderInIsr, and
    a non-empty ISR: no eligible leader replicas, KIP-966, which `prove` refuses with these lemmas)."""
    return z3.And(z3.Or(s.isr), leader_in_isr(s))


def LeaderlessIsrSingle(s: SymState):
    """Without a leader, the ISR does not hold every replica: the controller removed the failed
    leader (with two replicas, one member is left)."""
    return z3.Implies(s.leader == NO_LEADER, z3.Not(z3.And(s.isr)))


def ResponseToFollower(s: SymState):
    """Only a replica in the follower role has a fetch response in flight."""
    return z3.And([z3.Implies(r.has_response, r.role == FOLLOWER) for r in s.replicas])


def ResponseAtLeo(s: SymState):
    """A response carries records from its follower's LEO on (an OffsetOutOfRange one names an
    offset below it)."""
    return z3.And([z3.Implies(r.has_response, z3.If(r.resp_oor, r.resp_offset < r.log_len,
                                                    r.resp_offset == r.log_len))
                   for r in s.replicas])


def NoOutOfRange(s: SymState):
    """No fetch is ever beyond its leader's log end: no response is an OffsetOutOfRange error."""
    return z3.And([z3.Not(r.resp_oor) for r in s.replicas])


# ------------------------------------------------------------------ records


def WrittenBound(s: SymState):
    """Every record, committed entry and acknowledgement is of a message already written."""
    terms = [z3.Implies(present, msg <= s.written) for _, present, msg, _ in records(s)]
    terms += [z3.Implies(flag, s.written >= msg) for flag, _, msg in committed_entries(s)]
    terms += [z3.Implies(flag, s.written >= k + 1) for k, flag in enumerate(s.acked)]
    return z3.And(terms)


def MessageUnique(s: SymState):
    """A message sits at one offset, with one epoch, in every log and response that holds it."""
    terms = []
    for (o1, p1, m1, e1), (o2, p2, m2, e2) in combinations(list(records(s)), 2):
        if o1 == o2:
            terms.append(z3.Implies(z3.And(p1, p2, m1 == m2), e1 == e2))
        else:
            terms.append(z3.Implies(z3.And(p1, p2), m1 != m2))
    return z3.And(terms)


def LeaderHoldsItsEpoch(s: SymState):
    """Every record of the controller's epoch, in any log or response, is in the controller's
    leader's log at the same offset."""
    terms = []
    for j, leader in enumerate(s.replicas):
        for o, present, msg, epoch in records(s):
            terms.append(z3.Implies(z3.And(s.leader == j, present, epoch == s.epoch),
                                    z3.And(o < leader.log_len, leader.log_msg[o] == msg)))
    return z3.And(terms)


def FollowerPrefixOfOther(s: SymState):
    """A replica in the follower role holds a prefix of the other replica's log, and will once it
    appends its response: the other led the follower's epoch and has not truncated since (two
    replicas)."""
    return z3.And([z3.Implies(z3.And(follower.role == FOLLOWER, v.present), prefix_of(v, other))
                   for _, follower, _, other in pairs(s) for v in (log_view(follower), response_view(follower))])


def RemoteLeoPrefix(s: SymState):
    """What a leader knows of an ISR member's LEO is at most that LEO, and the two logs agree
    below it."""
    terms = []
    for _, leader, q, other in pairs(s):
        known = leader.remote_leo[q]
        terms.append(z3.Implies(z3.And(leader.role == LEADER, s.isr[q]), z3.And(
            known <= other.log_len,
            *[z3.Implies(o < known, z3.And(o < leader.log_len, leader.log_msg[o] == other.log_msg[o]))
              for o in range(len(leader.log_msg))])))
    return z3.And(terms)


# ------------------------------------------------------------------ commitment


def HwCommitted(s: SymState):
    """Every record below a replica's HW, or below the HW a response carries, is committed."""
    terms = []
    for r in s.replicas:
        v = response_view(r)
        for o in range(len(r.log_msg)):
            terms.append(z3.Implies(o < r.hw, committed_at(s, o, r.log_msg[o])))
            terms.append(z3.Implies(z3.And(v.present, o < r.resp_hw, o < v.length), committed_at(s, o, v.msgs[o])))
    return z3.And(terms)


def CommittedInIsr(s: SymState):
    """Every committed record is in the log of every ISR member, at its offset."""
    return z3.And([z3.Implies(z3.And(flag, s.isr[i]), z3.And(o < r.log_len, r.log_msg[o] == msg))
                   for i, r in enumerate(s.replicas) for flag, o, msg in committed_entries(s)])


def LeaderHwCoversCommitted(s: SymState):
    """Every committed offset is below the HW of the controller's leader."""
    return z3.And([z3.Implies(z3.And(flag, s.leader == j), o < r.hw)
                   for j, r in enumerate(s.replicas) for flag, o, _ in committed_entries(s)])


def HwWithinLog(s: SymState):
    """Every replica's HW is at most its LEO."""
    return z3.And([r.hw <= r.log_len for r in s.replicas])


def ResponseHwCoversHw(s: SymState):
    """A fetch response in flight carries a HW at least its follower's HW."""
    return z3.And([z3.Implies(r.has_response, r.resp_hw >= r.hw) for r in s.replicas])


# ------------------------------------------------------------------ epoch caches


def CacheSorted(s: SymState):
    """Epoch-cache entries rise in epoch and do not fall in start offset."""
    terms = []
    for r in s.replicas:
        for j in range(len(r.cache_epoch) - 1):
            terms.append(z3.Implies(j + 1 < r.cache_len, z3.And(r.cache_epoch[j] < r.cache_epoch[j + 1],
                                                                 r.cache_start[j] <= r.cache_start[j + 1])))
    return z3.And(terms)


def CacheBounds(s: SymState):
    """Cache entries start within their log and name no epoch beyond the controller's."""
    return z3.And([z3.Implies(present, z3.And(start <= r.log_len, epoch <= s.epoch))
                   for r in s.replicas for present, epoch, start in cache_entries(r)])


def CacheCoversLog(s: SymState):
    """A replica with records has a cache entry starting at offset 0."""
    return z3.And([z3.Implies(r.log_len > 0, z3.And(r.cache_len > 0, r.cache_start[0] == 0))
                   for r in s.replicas if r.cache_epoch])


def CacheExact(s: SymState):
    """Every record's epoch is the epoch of the last cache entry starting at or before it."""
    terms = []
    for r in s.replicas:
        k = len(r.cache_epoch)
        for j in range(k):
            for o in range(len(r.log_msg)):
                last = [j < r.cache_len, r.cache_start[j] <= o]
                if j + 1 < k:
                    last.append(z3.Or(j + 1 >= r.cache_len, r.cache_start[j + 1] > o))
                terms.append(z3.Implies(z3.And(o < r.log_len, *last), r.cache_epoch[j] == r.log_epoch[o]))
    return z3.And(terms)


def SameEpochSameStart(s: SymState):
    """Two replicas that cache the same epoch cache it with the same start."""
    terms = []
    for a, b in combinations(s.replicas, 2):
        for (p1, e1, s1), (p2, e2, s2) in product(cache_entries(a), cache_entries(b)):
            terms.append(z3.Implies(z3.And(p1, p2, e1 == e2), s1 == s2))
    return z3.And(terms)


def LeaderCacheLatest(s: SymState):
    """The controller's leader, up or crashed, has the controller's epoch as its latest cached
    epoch, or no log, response or epoch cache holds that epoch yet: under KAFKA-7415 a new leader
    caches its epoch at election, before it with its first appended record."""
    return z3.And([z3.Implies(s.leader == i, z3.Or(latest_is(r, s.epoch), z3.Not(holds_epoch(s, s.epoch))))
                   for i, r in enumerate(s.replicas) if r.cache_epoch])


def EmptyLatestAtHw(s: SymState):
    """A replica whose latest cached epoch starts at its log end has its HW at its LEO: it cached
    that epoch when elected in it (KAFKA-7415) and appended nothing in it, and a new leader's HW
    reaches its LEO (it is the only ISR member then). Vacuous before KAFKA-7415, where every
    cached epoch starts at a record."""
    return z3.And([z3.Implies(latest_is_empty(r), r.hw == r.log_len) for r in s.replicas if r.cache_epoch])


def EmptyLatestUnshared(s: SymState):
    """A replica whose latest cached epoch starts at its log end is that epoch's only holder: no log
    or response, and no other replica's cache, holds it. Such an entry is a leader's own, cached
    at its election (KAFKA-7415) before it appended anything, so loading the log after a crash,
    which drops it, leaves the epoch held nowhere. Vacuous before KAFKA-7415."""
    return z3.And([z3.Implies(latest_is_empty(r), z3.Not(holds_epoch(s, latest_epoch(r), but=i)))
                   for i, r in enumerate(s.replicas) if r.cache_epoch])


def IsrRespectsCaches(s: SymState):
    """In the log of the controller's leader and of every ISR member, and in what they will hold
    once they append a response, a record at or after the start of any replica's cached epoch is
    of that epoch or a later one."""
    terms = []
    for q, member in enumerate(s.replicas):
        counted = z3.Or(s.isr[q], s.leader == q)
        for v in (log_view(member), response_view(member)):
            for r in s.replicas:
                for present, epoch, start in cache_entries(r):
                    for o in range(len(v.msgs)):
                        terms.append(z3.Implies(z3.And(counted, v.present, present, o < v.length, start <= o),
                                                v.epochs[o] >= epoch))
    return z3.And(terms)


def IsrAgreesWithNewerCaches(s: SymState):
    """An ISR member's log and the log of any other replica whose latest cached epoch is at least
    the member's are prefixes of one another (an empty cache has no latest epoch, below every
    epoch; vacuous without epoch caches)."""
    return z3.And([z3.Implies(z3.And(s.isr[a], latest_epoch(other) >= latest_epoch(member)), agree(member, other))
                   for a, member, _, other in pairs(s) if other.cache_epoch])


def IsrPrefixOfLeader(s: SymState):
    """The log of every ISR member is a prefix of the log of the controller's leader, up or
    crashed: a leader is elected as the only ISR member, and the other joins by fetching from it
    (two replicas)."""
    return z3.And([z3.Implies(z3.And(s.isr[a], s.leader == h), prefix_of(log_view(member), leader))
                   for a, member, h, leader in pairs(s)])


def SafeTruncationPoint(s: SymState):
    """Below the offset a replica would truncate to on the answer of the controller's leader or of
    an ISR member to OffsetsForLeaderEpoch as Kafka 0.11.0 gives it (`endOffsetFor` of the
    replica's latest epoch; its own HW when that is undefined, as it is for an epoch older than
    the answering cache's first), its log agrees with that replica's log. The lemma speaks of
    0.11.0's answer whatever the variant proved: it is a fact about the logs and caches, not about
    the variant's own lookup."""
    terms = []
    for q, leader, _, other in pairs(s):
        offset, _ = kip_101_truncation_point(leader, other, epoch_on_election=False)
        answering = z3.Or(s.isr[q], s.leader == q)
        for o in range(len(other.log_msg)):
            terms.append(z3.Implies(z3.And(answering, o < offset, o < other.log_len),
                                    z3.And(o < leader.log_len, leader.log_msg[o] == other.log_msg[o])))
    return z3.And(terms)


LEMMAS: tuple[Lemma, ...] = tuple(Lemma.of(function) for function in (
    NoNetworkFailure, AllFlushed,
    DownReplicasForget, LeaderIsControllers, ControllersLeaderLeadsOrCrashed, LeaderInIsr, LeaderlessIsrSingle,
    ResponseToFollower, ResponseAtLeo, NoOutOfRange,
    WrittenBound, MessageUnique, LeaderHoldsItsEpoch, FollowerPrefixOfOther, RemoteLeoPrefix,
    HwCommitted, CommittedInIsr, LeaderHwCoversCommitted, HwWithinLog, ResponseHwCoversHw,
    CacheSorted, CacheBounds, CacheCoversLog, CacheExact, SameEpochSameStart, LeaderCacheLatest, EmptyLatestAtHw,
    EmptyLatestUnshared, IsrRespectsCaches, IsrAgreesWithNewerCaches, IsrPrefixOfLeader, SafeTruncationPoint,
))
"""The lemma set that proves NoCommittedDataLoss and NoLogDivergence (see the module docstring)."""
