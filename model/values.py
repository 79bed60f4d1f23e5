"""A state's variables as values, the way every report shows them. `state_values` gives the
replication state's: records are named tuples, sequences lists, sets `SortedSet`s, functions dicts
keyed in order (the ITF writer, the TLC-style text and the Markdown and HTML reports read these).
For any model, `sorted_values` and `plain_values` give its `state_values` sorted, and as JSON."""

from __future__ import annotations

from typing import Any, NamedTuple

from .interface import Model
from .state import NO_LEADER, ROLE_NAMES, STATUS_NAMES, Replica, State, isr_members, record_name, replica_name


class SortedSet(frozenset):
    """A set that iterates in sorted order, so that it is written the same on every run."""

    def __iter__(self):
        return iter(sorted(frozenset.__iter__(self)))


class LogRecord(NamedTuple):
    msg: str
    epoch: int


class FetchResponseVar(NamedTuple):
    offset: int
    hw: int
    records: list[LogRecord]
    outOfRange: bool


class ReplicaVar(NamedTuple):
    log: list[LogRecord]
    unflushed: int
    hw: int
    leo: int
    epochCache: list[tuple[int, int]]
    status: str
    role: str
    leaderEpoch: int
    leaderId: str  # the leader it follows (`Replica.leader_id`); "-": none, as always where the variant never reads it
    response: FetchResponseVar | list  # the FetchResponse in flight to it, or <<>> (none), as the TLA+ twin
    remoteLeos: dict[str, int] | list  # on a leader, its view of every replica's LEO (-1: unknown); else <<>>
    staleIsr: SortedSet  # a deposed leader cut off from the controller: the ISR it still believes in
    reachesZooKeeper: bool
    reachesBrokers: bool


class ControllerVar(NamedTuple):
    leader: str
    epoch: int
    isr: SortedSet


class ControllerElrVar(NamedTuple):
    """The controller of a variant with eligible leader replicas (KIP-966), as the TLA+ twin's."""

    leader: str
    epoch: int
    isr: SortedSet
    elr: SortedSet
    lastKnownElr: SortedSet  # the last known leader (KAFKA-15584)


class AlterPartitionVar(NamedTuple):
    """The leader's AlterPartition in flight: the replica it adds to the ISR (none: no request; the leader
    itself: a shrink refused at an older partition epoch, pending until the leader reads the metadata), and
    those of them registered again since the fetch it is based on."""

    adds: SortedSet
    reregistered: SortedSet


class DelayedFetchVar(NamedTuple):
    """A fetch in flight to the leader, delivered late: its offset, and whether its sender crashed since (stale)."""

    offset: int
    stale: bool


def state_values(state: State, elr: bool = False, delays: bool = False,
                 disk_failures: bool = False, metadata_lag: bool = False) -> dict[str, Any]:
    """The ITF variables of a state as Python values: records are named tuples, sequences
    lists, sets SortedSets, functions dicts keyed in sorted order, tuples plain tuples. `elr`: the
    controller has eligible leader replicas (the variant's `eligible_leaders`), as in the twin.
    `delays`: AlterPartition and fetch requests may be delayed (`Config.delays`); then `alterPartition` is the
    AlterPartition in flight (the replica it adds, those of it registered again since), `delayedFetches` each
    replica's fetch in flight (or <<>>) and `delays` how many were delayed so far. `disk_failures`: the state
    counts its disk failures (`Config.counts_disk_failures`); then `diskFailures` is how many so far.
    `metadata_lag`: the leader reads the controller's ISR changes late (`Config.metadata_lag`); then
    `unseenRemovals` are the ISR members the controller removed that the leader has not yet read, and
    `alterPartition` its pending ISR change."""
    leader, epoch = leader_name(state), state.controller.epoch
    isr = SortedSet(replica_name(m) for m in isr_members(state.controller.isr))
    controller: ControllerVar | ControllerElrVar = ControllerVar(leader, epoch, isr)
    if elr:
        controller = ControllerElrVar(leader, epoch, isr, _names(state.controller.elr),
                                      _names(state.controller.last_known_elr))
    return {
        "replicas": {replica_name(i): _replica_var(state, i) for i in range(len(state.replicas))},
        "controller": controller,
        "written": state.written,
        "crashes": state.crashes,
        "committed": SortedSet((offset, f"m{msg}") for offset, msg in state.committed),
        "consumed": SortedSet((offset, f"m{msg}") for offset, msg in state.consumed),
        "acked": SortedSet(acked_names(state)),
        **({"alterPartition": AlterPartitionVar(_names(state.controller.proposal),
                                                _names(state.controller.reregistered))} if delays or metadata_lag
           else {}),
        **({"delayedFetches": {replica_name(i): DelayedFetchVar(r.delayed_fetch - 1, r.delayed_fetch_stale)
                               if r.delayed_fetch else [] for i, r in enumerate(state.replicas)},
            "delays": state.delays} if delays else {}),
        **({"diskFailures": state.disk_failures} if disk_failures else {}),
        **({"unseenRemovals": _names(state.controller.unseen)} if metadata_lag else {}),
    }


def _names(mask: int) -> SortedSet:
    return SortedSet(replica_name(m) for m in isr_members(mask))


def _replica_var(state: State, index: int) -> ReplicaVar:
    replica = state.replicas[index]
    return ReplicaVar(
        log=[LogRecord(record_name(r), r.epoch) for r in replica.log],
        unflushed=replica.unflushed,
        hw=replica.hw,
        leo=replica.leo,
        epochCache=list(replica.epochs),
        status=STATUS_NAMES[replica.status],
        role=ROLE_NAMES[replica.role],
        leaderEpoch=replica.epoch,
        leaderId=followed_name(replica),
        response=FetchResponseVar(replica.response.offset, replica.response.hw,
                                  [LogRecord(record_name(r), r.epoch) for r in replica.response.records],
                                  replica.response.out_of_range) if replica.response else [],
        remoteLeos={replica_name(i): leo for i, leo in enumerate(replica.remote_leos)} if replica.remote_leos else [],
        staleIsr=SortedSet(replica_name(m) for m in isr_members(replica.stale_isr)),
        reachesZooKeeper=not state.zk_cut >> index & 1,
        reachesBrokers=not state.peer_cut >> index & 1,
    )


def acked_names(state: State) -> list[str]:
    return [f"m{msg}" for msg in range(1, state.acked.bit_length()) if state.acked >> msg & 1]


def leader_name(state: State) -> str:
    return _name_or_none(state.controller.leader)


def followed_name(replica: Replica) -> str:
    """The leader the replica follows, itself as leader (`Replica.leader_id`), or "-" for none, as
    `leader_name` writes the controller's: a follower skips a LeaderAndIsr naming it (`follower_skips`)."""
    return _name_or_none(replica.leader_id)


def _name_or_none(index: int) -> str:
    return "-" if index == NO_LEADER else replica_name(index)


def sorted_values(model: Model, state) -> dict[str, Any]:
    """A state's variables (`model.state_values`) with every set sorted and every map keyed in order."""
    return {name: _sorted(value) for name, value in model.state_values(state).items()}


def plain_values(model: Model, state) -> dict[str, Any]:
    """A state's variables as JSON values (sets as sorted lists, map keys as strings): what the JSON
    summary shows and what a scenario's checkpoints are compared with."""
    return plain_value(sorted_values(model, state))


def plain_value(value: Any) -> Any:
    """A value of `control_values` as JSON: sets as sorted lists, named tuples as objects."""
    if isinstance(value, frozenset):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {str(key): plain_value(v) for key, v in value.items()}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {key: plain_value(v) for key, v in zip(value._fields, value)}  # as `_asdict()`
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


def _sorted(value: Any) -> Any:
    if isinstance(value, frozenset):
        return SortedSet(_sorted(v) for v in value)
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value
