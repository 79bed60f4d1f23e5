"""The KRaft controller: the metadata log, broker registration, heartbeats and fencing, controlled
shutdown and AlterPartition, for one partition replicated on every broker (Kafka's
`QuorumController` and the managers it drives, read at the release tags of `release`).

The controller keeps no state of its own beside the log, except what Kafka keeps in memory
(`BrokerHeartbeatManager`): each broker's metadata offset from its last heartbeat and its
controlled-shutdown offset. Everything else is a fold of the metadata log (`view`), an ordered
sequence of records, each committed when appended:

- `RegisterBroker(b)`: b's registration; its broker epoch is the record's offset, and it starts
  fenced (`ClusterControlManager.registerBroker`).
- `Unfence(b)`, `Fence(b)`, `ControlledShutdown(b)`: `BrokerRegistrationChangeRecord`s. The last
  exists from 3.3 on (`ReplicationControlManager.handleBrokerInControlledShutdown`; in 3.2 the
  controller knew of a controlled shutdown only in memory).
- `PartitionChange(leader, isr, leader epoch, partition epoch)`: the partition's whole state after
  a `PartitionChangeRecord` (`PartitionChangeBuilder.build`). The leader epoch rises when the
  leader changes or the ISR loses a member (`triggerLeaderEpochBumpIfNeeded`); the partition
  epoch at every change.

Each broker replays the log at its own pace (`BrokerReplay`), so its view (the fold of the
prefix it replayed) lags the controller's: a broker may still think it leads after the
controller has moved the leadership. Its heartbeats (`BrokerHeartbeat`) carry the offset it
replayed and what it wants, and the controller answers as
`BrokerHeartbeatManager.calculateNextBrokerState` decides and
`ReplicationControlManager.processBrokerHeartbeat` writes:

- a fenced broker is unfenced once it has replayed its own registration (3.3 on; 3.2: the whole
  log as the controller has committed it), and a partition without a leader elects it if it is
  in the ISR (`handleBrokerUnfenced`);
- a broker that wants to shut down and leads the partition enters controlled shutdown: it leaves
  the ISR (unless it is the ISR alone) and the leadership moves to the first acceptable ISR
  member, or to none; its controlled-shutdown offset is the log's end. It is told to shut down
  once it leads nothing and every active broker (unfenced, not shutting down) has reported that
  offset (`lowestActiveOffset`). A broker that leads nothing shuts down at once, fenced.
- `BrokerStartBeforeFence(b)`, at most `early_registrations` times: a crashed broker restarts
  and registers after its session expired but before the controller fenced it.
  `ClusterControlManager.registerBroker` refuses a new incarnation only while the old session is
  valid; once it has expired it removes that session (`heartbeatManager.remove`), so the fence
  that `maybeFenceOneStaleBroker` would have written at the session's deadline never comes, and
  nothing takes the broker out of the ISR: it stays there, fenced, and keeps the leadership if
  it had it. The unclean-shutdown handling that removes it at registration
  (`ReplicationControlManager.handleBrokerUncleanShutdown`) came with KIP-966 in 3.8, and only
  where the metadata version supports eligible leader replicas (3.7.0's `registerBroker` has a
  TODO there).
- `SessionTimeout(b)`: the controller fences a broker whose heartbeats stopped
  (`maybeFenceOneStaleBroker` -> `handleBrokerFenced`): it leaves the ISR (unless it is the ISR
  alone) and loses the leadership. It is enabled for a broker that is down, and for a live one
  (missed heartbeats) at most `fencings` times.

The leader adds a follower to the ISR through AlterPartition: a follower fetches from the broker
its view names leader, in the leader epoch its view has (`FollowerFetch`; the leader accepts only
its own epoch, KIP-320); the leader, in its view, proposes the follower with the broker epoch of
that fetch (`LeaderProposeIsr`); the controller takes the request later
(`ControllerHandleAlterPartition`, `validateAlterPartitionData`): the sender's broker epoch, the
leader epoch and partition epoch must be current; from 3.3 the new member must be registered,
unfenced and not shutting down (KIP-841, `ineligibleReplicasForIsr`), and the leader checks the
same in its own view before it proposes (`Partition.isReplicaIsrEligible`); from 3.5 the broker
epoch of the fetch must be the follower's registered epoch (KIP-903), at the leader and at the
controller. An acceptable leader is unfenced (3.2), and not in controlled shutdown (3.3 on,
`ClusterControlManager.isActive`).

Properties: `IsrMembersEligible` (KIP-841: an ISR of two or more holds only unfenced brokers
that are not shutting down), `LeaderIsActive` (the partition's leader is unfenced and not
shutting down), `IsrJoinedByRegisteredIncarnation` (a step: the incarnation that fetched is the
one the controller adds, KIP-903), and `ShutdownAfterLeadershipMoved` (a step: a broker is let
go only when no active broker's view names it leader). 3.2 breaks the first two, 3.3 the third.
Witnesses: `StaleLeaderView`, `BrokerRejoins`, `ControlledShutdownCompletes`, `PartitionOffline`,
`IsrExpanded`. Goal: `PartitionLed` (the partition can always be led by a live broker again).

Simplified, and why: the metadata log is committed as it is appended (the Raft quorum of
controllers and its failover are Vanlightly's `kraft/kip_853` specification's subject, not this
model's); one active controller, whose in-memory heartbeat state is never lost; one partition,
its replicas on every broker in broker order; a broker keeps the log prefix it replayed across a
restart (its metadata log is on disk); a heartbeat and its
answer are one step; no data (the replication model's business: the same rules with logs, HW and
replaced disks are its `isr_updates` choices); no unclean election, no reassignment.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Iterator, NamedTuple, TypeGuard

from kafka_mc.model.config import ConfigError, check_str
from kafka_mc.model.interface import ALWAYS, SOMETIMES, Goal, Property

from .system import ControlAction, ModelConfig, bit_members, check_int, parse_control_action, put

RELEASES = ("3.2", "3.3", "3.5")
NONE = -1
REGISTER, UNFENCE, FENCE, CONTROLLED_SHUTDOWN, PARTITION = range(5)
RECORD_NAMES = ("RegisterBroker", "Unfence", "Fence", "ControlledShutdown", "PartitionChange")
NO_FETCH = (NONE, NONE, NONE)
SOURCE = "Kafka's QuorumController, BrokerHeartbeatManager and ReplicationControlManager"


@dataclass(frozen=True)
class KRaftConfig(ModelConfig):
    """`brokers`, each with a replica of the one partition; at most `failures` broker crashes,
    `fencings` session timeouts of a live broker, `shutdowns` controlled shutdowns and
    `early_registrations` restarts registered before the crashed incarnation's fence per
    behaviour; the controller and brokers of `release`."""

    brokers: int = 2
    failures: int = 1
    fencings: int = 0
    shutdowns: int = 1
    release: str = "3.5"
    early_registrations: int = 0

    def __post_init__(self) -> None:
        check_int("brokers", self.brokers, 2, 3)
        check_int("failures", self.failures, 0, 2)
        check_int("fencings", self.fencings, 0, 2)
        check_int("shutdowns", self.shutdowns, 0, 2)
        check_int("early_registrations", self.early_registrations, 0, 2)
        check_str("release", self.release, RELEASES)
        if self.release not in RELEASES:
            raise ConfigError("release", f"release must be one of {', '.join(RELEASES)}, not {self.release!r}")


class KRaftState(NamedTuple):
    log: tuple[tuple[int, ...], ...]  # the metadata log's records, (kind, broker, ...): `view`
    alive: tuple[bool, ...]  # per broker: its process runs
    epoch: tuple[int, ...]  # per broker: the broker epoch of its incarnation, NONE when down
    replayed: tuple[int, ...]  # per broker: the records of the log it has replayed
    shutting: tuple[bool, ...]  # per broker: it wants to shut down (its heartbeats say so)
    reported: tuple[int, ...]  # per broker: the replayed count of its last heartbeat (the controller's memory),
    #                            kept only while a broker is in controlled shutdown (`_forget_offsets`)
    shutdown_offset: tuple[int, ...]  # per broker: its controlled-shutdown offset, NONE (the controller's memory)
    fetched: tuple[tuple[int, int, int], ...]  # per follower: (leader, leader epoch, broker epoch) of its last fetch
    pending: tuple[int, ...]  # an AlterPartition in flight: (leader, its broker epoch, leader epoch,
    #                           partition epoch, follower, the follower's broker epoch), or ()
    failures: int
    fencings: int
    shutdowns: int
    early_registrations: int


class Registration(NamedTuple):
    epoch: int
    fenced: bool
    in_shutdown: bool  # a ControlledShutdown record (3.3 on)


class View(NamedTuple):
    """The fold of a log prefix: each broker's registration (None before one) and the partition."""

    registrations: tuple[Registration | None, ...]
    leader: int
    isr: int  # bit mask
    leader_epoch: int
    partition_epoch: int


@lru_cache(maxsize=1 << 16)
def view(log: tuple[tuple[int, ...], ...], brokers: int) -> View:
    """What the records `log` say, replayed in order."""
    registrations: list[Registration | None] = [None] * brokers
    leader, isr, leader_epoch, partition_epoch = NONE, 0, 0, 0
    for offset, record in enumerate(log):
        kind, broker = record[0], record[1]
        current = registrations[broker]
        if kind == REGISTER:
            registrations[broker] = Registration(offset, True, False)
        elif kind == PARTITION:
            leader, isr, leader_epoch, partition_epoch = record[1:]
        elif current is not None and current.epoch == record[2]:
            if kind == CONTROLLED_SHUTDOWN:
                registrations[broker] = current._replace(in_shutdown=True)
            else:
                registrations[broker] = current._replace(fenced=kind == FENCE)
    return View(tuple(registrations), leader, isr, leader_epoch, partition_epoch)


def record_text(record: tuple[int, ...]) -> str:
    """A record as the reports show it."""
    kind = record[0]
    if kind == PARTITION:
        leader, isr, leader_epoch, partition_epoch = record[1:]
        members = ", ".join(map(str, bit_members(isr)))
        return (f"PartitionChange(leader={leader if leader != NONE else 'none'}, isr={{{members}}}, "
                f"leaderEpoch={leader_epoch}, partitionEpoch={partition_epoch})")
    if kind == REGISTER:
        return f"RegisterBroker({record[1]})"
    return f"{RECORD_NAMES[kind]}({record[1]}, brokerEpoch={record[2]})"


class KRaftModel:
    """The KRaft controller and its brokers as a transition system (`control.system`)."""

    name = "kraft"
    action_names = ("BrokerStart", "BrokerStartBeforeFence", "BrokerReplay", "BrokerHeartbeat", "BrokerBeginShutdown",
                    "BrokerCrash", "SessionTimeout", "FollowerFetch", "LeaderProposeIsr", "ControllerHandleAlterPartition")

    def __init__(self, config: KRaftConfig):
        self.config = config
        self.brokers = range(config.brokers)
        self.release = RELEASES.index(config.release)  # 0: 3.2, 1: 3.3, 2: 3.5
        self.properties = PROPERTIES
        self.goal = PARTITION_LED

    def parse_action(self, text: str) -> ControlAction:
        """`BrokerCrash(0)` and the like; ValueError naming the bad part and what is allowed."""
        return parse_control_action(text, self.action_names)

    # ------------------------------------------------------------------ views

    def controller(self, state: KRaftState) -> View:
        return view(state.log, self.config.brokers)

    def broker_view(self, state: KRaftState, broker: int) -> View:
        return view(state.log[:state.replayed[broker]], self.config.brokers)

    def active(self, known: View, broker: int) -> bool:
        """An acceptable leader: unfenced, and from 3.3 not in controlled shutdown
        (`ClusterControlManager.isActive`)."""
        registration = known.registrations[broker]
        return _unfenced(registration) and (self.release == 0 or not registration.in_shutdown)

    def eligible(self, known: View, broker: int) -> bool:
        """KIP-841: may join the ISR (3.3 on, where it is `active`; every broker in 3.2)."""
        return self.release == 0 or self.active(known, broker)

    # ------------------------------------------------------------------ the controller's records

    def partition_change(self, known: View, remove: int = NONE, add: int = NONE) -> tuple[tuple[int, ...], ...]:
        """`generateLeaderAndIsrUpdates(brokerToRemove, brokerToAdd)` through
        `PartitionChangeBuilder`: the ISR without `remove` (unless that empties it), the current
        leader kept if still valid, else the first valid ISR member, else none; () when nothing
        changes."""
        def acceptable(replica: int) -> bool:
            return replica != remove and (replica == add or self.active(known, replica))

        target = known.isr & ~(1 << remove) if remove != NONE else known.isr

        def valid(replica: int) -> bool:
            return replica != NONE and bool(target >> replica & 1) and acceptable(replica)

        leader = known.leader if valid(known.leader) else next((r for r in self.brokers if valid(r)), NONE)
        isr = target or known.isr
        if leader == known.leader and isr == known.isr:
            return ()
        bump = leader != known.leader or (known.isr & ~isr) != 0
        return ((PARTITION, leader, isr, known.leader_epoch + bump, known.partition_epoch + 1),)

    def fence(self, known: View, broker: int) -> tuple[tuple[int, ...], ...]:
        """`handleBrokerFenced`: the partition change without `broker`, then its Fence record."""
        registration = known.registrations[broker]
        assert registration is not None
        return self.partition_change(known, remove=broker) + ((FENCE, broker, registration.epoch),)

    # ------------------------------------------------------------------ transitions

    def initial_states(self) -> list[KRaftState]:
        """Every broker registered, unfenced and caught up; broker 0 leads, every broker in the ISR."""
        n = self.config.brokers
        log: tuple[tuple[int, ...], ...] = tuple((REGISTER, b) for b in self.brokers)
        log += tuple((UNFENCE, b, b) for b in self.brokers)
        log += ((PARTITION, 0, (1 << n) - 1, 0, 0),)
        end = len(log)
        return [KRaftState(log, (True,) * n, tuple(self.brokers), (end,) * n, (False,) * n, (NONE,) * n,
                           (NONE,) * n, (NO_FETCH,) * n, (), 0, 0, 0, 0)]

    def successors(self, state: KRaftState) -> Iterator[tuple[ControlAction, KRaftState]]:
        known = self.controller(state)
        for b in self.brokers:
            registration = known.registrations[b]
            if state.alive[b]:
                continue
            if not _unfenced(registration):
                yield ControlAction("BrokerStart", (b,)), self._start(state, b)
            elif state.early_registrations < self.config.early_registrations:
                # its session expired, the fence not yet written: `registerBroker` removes the old
                # session (no fence follows) and the ISR keeps the broker, now fenced
                yield ControlAction("BrokerStartBeforeFence", (b,)), _forget_offsets(self._start(state, b)._replace(
                    early_registrations=state.early_registrations + 1))
        for b in self.brokers:
            if state.alive[b] and state.replayed[b] < len(state.log):
                yield ControlAction("BrokerReplay", (b,)), state._replace(replayed=put(state.replayed, b,
                                                                                          len(state.log)))
        for b in self.brokers:
            registration = known.registrations[b]
            if state.alive[b] and registration is not None and registration.epoch == state.epoch[b]:
                yield ControlAction("BrokerHeartbeat", (b,)), self._heartbeat(state, known, b)
        for b in self.brokers:
            if state.alive[b] and not state.shutting[b] and state.shutdowns < self.config.shutdowns:
                yield ControlAction("BrokerBeginShutdown", (b,)), state._replace(
                    shutting=put(state.shutting, b, True), shutdowns=state.shutdowns + 1)
        for b in self.brokers:
            if state.alive[b] and state.failures < self.config.failures:
                yield ControlAction("BrokerCrash", (b,)), self._stop(state, b)._replace(failures=state.failures + 1)
        for b in self.brokers:
            registration = known.registrations[b]
            if _unfenced(registration) and \
                    (not state.alive[b] or state.fencings < self.config.fencings):
                log = state.log + self.fence(known, b)
                yield ControlAction("SessionTimeout", (b,)), _forget_offsets(state._replace(
                    log=log, reported=put(state.reported, b, NONE), shutdown_offset=put(state.shutdown_offset, b, NONE),
                    fencings=state.fencings + state.alive[b]))
        for f in self.brokers:
            fetch = self._fetch(state, f)
            if fetch is not None and fetch != state.fetched[f]:
                yield ControlAction("FollowerFetch", (f,)), state._replace(fetched=put(state.fetched, f, fetch))
        if not state.pending:
            for leader in self.brokers:
                for f in self.brokers:
                    request = self._proposal(state, leader, f)
                    if request:
                        yield ControlAction("LeaderProposeIsr", (leader, f)), state._replace(pending=request)
        if state.pending:
            yield ControlAction("ControllerHandleAlterPartition", (state.pending[0], state.pending[4])), \
                state._replace(log=state.log + self._alter_partition(known, state.pending), pending=())

    def _start(self, state: KRaftState, broker: int) -> KRaftState:
        """The broker's process starts and registers: a RegisterBroker record, its offset the epoch."""
        offset = len(state.log)
        return state._replace(log=state.log + ((REGISTER, broker),), alive=put(state.alive, broker, True),
                              epoch=put(state.epoch, broker, offset), reported=put(state.reported, broker, NONE),
                              shutdown_offset=put(state.shutdown_offset, broker, NONE))

    def _stop(self, state: KRaftState, broker: int) -> KRaftState:
        """The broker's process ends (a crash, or a shutdown granted); what it replayed stays on disk."""
        return state._replace(alive=put(state.alive, broker, False), epoch=put(state.epoch, broker, NONE),
                              shutting=put(state.shutting, broker, False))

    def _heartbeat(self, state: KRaftState, known: View, broker: int) -> KRaftState:
        """`processBrokerHeartbeat`: the next state `calculateNextBrokerState` decides, its records,
        then `touch` (the broker's offset remembered)."""
        registration = known.registrations[broker]
        assert registration is not None
        replayed = state.replayed[broker]
        caught_up = replayed > registration.epoch  # it replayed its own registration record
        records: tuple[tuple[int, ...], ...] = ()
        shutdown_offset = state.shutdown_offset[broker]
        stop = False
        if registration.fenced:
            if state.shutting[broker]:
                records, stop = self.fence(known, broker), True
            elif caught_up and (self.release > 0 or replayed >= len(state.log)):
                records = ((UNFENCE, broker, registration.epoch),)
                if known.leader == NONE:
                    records += self.partition_change(view(state.log + records, self.config.brokers), add=broker)
        elif shutdown_offset == NONE:
            if state.shutting[broker]:
                if known.leader == broker:
                    if self.release > 0:
                        records = ((CONTROLLED_SHUTDOWN, broker, registration.epoch),)
                    records += self.partition_change(view(state.log + records, self.config.brokers), remove=broker)
                    shutdown_offset = len(state.log) + len(records)
                else:
                    records, stop = self.fence(known, broker), True
        elif known.leader != broker and shutdown_offset <= self._lowest_active_offset(state, known, broker):
            records, stop = self.fence(known, broker), True
        fenced = stop or (registration.fenced and not records)
        after = _forget_offsets(state._replace(
            log=state.log + records, reported=put(state.reported, broker, replayed),
            shutdown_offset=put(state.shutdown_offset, broker, NONE if fenced else shutdown_offset)))
        return self._stop(after, broker) if stop else after

    def _lowest_active_offset(self, state: KRaftState, known: View, broker: int) -> float:
        """The least offset reported by an active broker (unfenced, not shutting down), as the
        heartbeat manager tracks them; infinite when there is none."""
        offsets = [state.reported[b] for b in self.brokers
                   if b != broker and _unfenced(known.registrations[b]) and state.shutdown_offset[b] == NONE]
        return min(offsets, default=float("inf"))

    def _fetch(self, state: KRaftState, follower: int) -> tuple[int, int, int] | None:
        """The (leader, leader epoch, broker epoch) of a fetch `follower` can send now and its leader
        accepts (to the leader of its view, in its view's epoch, which must be the leader's own) and
        remembers for an ISR expansion (the follower is outside the ISR of the leader's view)."""
        if not state.alive[follower] or state.epoch[follower] == NONE:
            return None
        seen = self.broker_view(state, follower)
        leader = seen.leader
        if leader in (NONE, follower) or not state.alive[leader]:
            return None
        theirs = self.broker_view(state, leader)
        if theirs.leader != leader or theirs.leader_epoch != seen.leader_epoch or theirs.isr >> follower & 1:
            return None  # (a fetch of an ISR member is never read: it leaves the ISR only with a new epoch)
        return leader, seen.leader_epoch, state.epoch[follower]

    def _proposal(self, state: KRaftState, leader: int, follower: int) -> tuple[int, ...]:
        """The AlterPartition the leader sends to add `follower`, as its view and the follower's
        last fetch allow (`Partition.maybeExpandIsr`), or ()."""
        if not state.alive[leader] or leader == follower:
            return ()
        seen = self.broker_view(state, leader)
        fetch_leader, fetch_epoch, broker_epoch = state.fetched[follower]
        if seen.leader != leader or seen.isr >> follower & 1 or (fetch_leader, fetch_epoch) != (leader, seen.leader_epoch):
            return ()
        if not self.eligible(seen, follower):
            return ()
        registration = seen.registrations[follower]
        if self.release == 2 and (registration is None or registration.epoch != broker_epoch):
            return ()
        return (leader, state.epoch[leader], seen.leader_epoch, seen.partition_epoch, follower, broker_epoch)

    def _alter_partition(self, known: View, request: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
        """`alterPartition` -> `validateAlterPartitionData`: the new ISR's record, or () when refused."""
        leader, leader_broker_epoch, leader_epoch, partition_epoch, follower, broker_epoch = request
        sender = known.registrations[leader]
        if sender is None or sender.epoch != leader_broker_epoch:  # checkBrokerEpoch: STALE_BROKER_EPOCH
            return ()
        if (known.leader, known.leader_epoch, known.partition_epoch) != (leader, leader_epoch, partition_epoch):
            return ()  # INVALID_REQUEST, FENCED_LEADER_EPOCH or INVALID_UPDATE_VERSION
        if not self.eligible(known, follower):
            return ()  # INELIGIBLE_REPLICA (KIP-841)
        registration = known.registrations[follower]
        if self.release == 2 and (registration is None or registration.epoch != broker_epoch):
            return ()  # INELIGIBLE_REPLICA: broker epoch mismatch (KIP-903)
        return ((PARTITION, leader, known.isr | 1 << follower, leader_epoch, partition_epoch + 1),)

    # ------------------------------------------------------------------ reports

    def state_values(self, state: KRaftState) -> dict:
        known = self.controller(state)

        def broker(b: int) -> str:
            if not state.alive[b]:
                return "down"
            registration = known.registrations[b]
            status = "fenced" if not _unfenced(registration) else "unfenced"
            if _shutting_down(state, known, b):
                status += ", in controlled shutdown"
            elif state.shutting[b]:
                status += ", wants to shut down"
            return f"epoch {state.epoch[b]}, {status}, replayed {state.replayed[b]} of {len(state.log)}"

        pending = state.pending
        return {
            "metadataLog": [record_text(record) for record in state.log],
            "brokers": {b: broker(b) for b in self.brokers},
            "leader": known.leader if known.leader != NONE else "none",
            "isr": frozenset(bit_members(known.isr)),
            "leaderEpoch": known.leader_epoch,
            "brokerViews": {b: record_text((PARTITION, *self.broker_view(state, b)[1:])) for b in self.brokers},
            "heartbeatOffsets": {b: state.reported[b] for b in self.brokers},
            "controlledShutdownOffsets": {b: state.shutdown_offset[b] for b in self.brokers},
            "alterPartitionInFlight": (f"leader {pending[0]} adds {pending[4]} (broker epoch {pending[5]}) in leader "
                                       f"epoch {pending[2]}" if pending else "none"),
            "failures": state.failures,
            "fencings": state.fencings,
            "shutdowns": state.shutdowns,
            "earlyRegistrations": state.early_registrations,
        }


def _unfenced(registration: Registration | None) -> TypeGuard[Registration]:
    return registration is not None and not registration.fenced


def _shutting_down(state: KRaftState, known: View, broker: int) -> bool:
    """In controlled shutdown as the controller knows it: its heartbeat state (every release) or
    its registration (3.3 on)."""
    registration = known.registrations[broker]
    return state.shutdown_offset[broker] != NONE or (registration is not None and registration.in_shutdown)


def _forget_offsets(state: KRaftState) -> KRaftState:
    """`state` with the heartbeat offsets forgotten while no broker is in controlled shutdown:
    only `lowestActiveOffset` reads them, against a controlled-shutdown offset, which is the log's
    end when a broker enters controlled shutdown and so above every offset reported before. Two
    states that differ only there behave alike."""
    if all(offset == NONE for offset in state.shutdown_offset):
        return state._replace(reported=(NONE,) * len(state.reported))
    return state


# ---------------------------------------------------------------------- properties

def _model(state: KRaftState) -> tuple[View, int]:
    return view(state.log, len(state.alive)), len(state.alive)


def isr_members_eligible(state: KRaftState) -> bool:
    """KIP-841: an ISR of two or more holds only registered, unfenced brokers that are not in
    controlled shutdown (the controller's view and memory)."""
    known, _ = _model(state)
    members = bit_members(known.isr)
    if len(members) < 2:
        return True
    return all(_unfenced(known.registrations[b]) and not _shutting_down(state, known, b) for b in members)


def leader_is_active(state: KRaftState) -> bool:
    """The partition's leader, if any, is registered, unfenced and not in controlled shutdown."""
    known, _ = _model(state)
    if known.leader == NONE:
        return True
    return _unfenced(known.registrations[known.leader]) and not _shutting_down(state, known, known.leader)


def _added_to_isr(before: KRaftState, action: ControlAction, after: KRaftState) -> int:
    """The broker an AlterPartition added to the ISR in this step, or NONE."""
    if action.name != "ControllerHandleAlterPartition" or len(after.log) == len(before.log):
        return NONE
    return before.pending[4]


def isr_joined_by_registered_incarnation(before: KRaftState, action: ControlAction, after: KRaftState) -> bool:
    """KIP-903: a broker joins the ISR only in the incarnation whose fetch the leader saw."""
    follower = _added_to_isr(before, action, after)
    if follower == NONE:
        return True
    registration = view(before.log, len(before.alive)).registrations[follower]
    return registration is not None and registration.epoch == before.pending[5]


def _granted_shutdown(before: KRaftState, action: ControlAction, after: KRaftState) -> int:
    """The broker let go from controlled shutdown in this step, or NONE."""
    if action.name != "BrokerHeartbeat":
        return NONE
    b = action.args[0]
    return b if before.shutdown_offset[b] != NONE and before.alive[b] and not after.alive[b] else NONE


def shutdown_after_leadership_moved(before: KRaftState, action: ControlAction, after: KRaftState) -> bool:
    """A broker leaves controlled shutdown only when no live active broker's view names it leader."""
    b = _granted_shutdown(before, action, after)
    if b == NONE:
        return True
    known, brokers = _model(before)
    for other in range(brokers):
        registration = known.registrations[other]
        if other == b or not before.alive[other] or not _unfenced(registration) \
                or before.shutdown_offset[other] != NONE:
            continue
        if view(before.log[:before.replayed[other]], brokers).leader == b:
            return False
    return True


def stale_leader_view(state: KRaftState) -> bool:
    """A live broker still thinks it leads in an older leader epoch than the controller's."""
    known, brokers = _model(state)
    for b in range(brokers):
        seen = view(state.log[:state.replayed[b]], brokers)
        if state.alive[b] and seen.leader == b and seen.leader_epoch < known.leader_epoch:
            return True
    return False


def broker_rejoins(state: KRaftState) -> bool:
    """A broker runs unfenced again in a later incarnation (registered after the initial log's
    registrations, unfencings and partition record)."""
    known, brokers = _model(state)
    return any(state.alive[b] and state.epoch[b] > 2 * brokers and _unfenced(known.registrations[b])
               for b in range(brokers))


def partition_led(state: KRaftState) -> bool:
    """The partition has a leader whose process runs."""
    known, _ = _model(state)
    return known.leader != NONE and state.alive[known.leader]


PROPERTIES = (
    Property("IsrMembersEligible", ALWAYS,
             "KIP-841 (3.3): fenced or shutting-down replicas stay out of the ISR (ineligibleReplicasForIsr)",
             isr_members_eligible),
    Property("LeaderIsActive", ALWAYS,
             "KIP-841 (3.3): a leader is elected among active brokers only (ClusterControlManager.isActive)",
             leader_is_active),
    Property("IsrJoinedByRegisteredIncarnation", ALWAYS,
             "KIP-903 (3.5): AlterPartition carries the broker epoch of the fetch; a stale one is refused",
             isr_joined_by_registered_incarnation, on_step=True),
    Property("ShutdownAfterLeadershipMoved", ALWAYS,
             "BrokerHeartbeatManager: controlled shutdown ends once active brokers reached its offset",
             shutdown_after_leadership_moved, on_step=True),
    Property("StaleLeaderView", SOMETIMES, "brokers replay the metadata log at their own pace",
             stale_leader_view),
    Property("BrokerRejoins", SOMETIMES, "a restarted broker registers with a new epoch and is unfenced",
             broker_rejoins),
    Property("ControlledShutdownCompletes", SOMETIMES, "BrokerHeartbeatManager: CONTROLLED_SHUTDOWN -> SHUTDOWN_NOW",
             lambda before, action, after: _granted_shutdown(before, action, after) != NONE, on_step=True),
    Property("PartitionOffline", SOMETIMES, "no acceptable ISR member: the partition has no leader",
             lambda state: _model(state)[0].leader == NONE),
    Property("IsrExpanded", SOMETIMES, "the controller accepts an AlterPartition",
             lambda before, action, after: _added_to_isr(before, action, after) != NONE, on_step=True),
)
PARTITION_LED = Goal("PartitionLed", SOURCE, partition_led)
