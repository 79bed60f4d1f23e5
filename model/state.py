"""The state encoding: immutable named tuples whose leaves are ints and bools only.

Because every leaf is an int (no str, no None), the CPython hash of a state does not
depend on PYTHONHASHSEED, so it serves as a cheap, stable 64-bit fingerprint (see
`fingerprint`). Sets of replicas are bitmasks, so equal states are equal tuples. A state as bytes
(`pack_state`, for the Spark engine's levels) is the same tuples, plain, in `marshal` format.
"""

from __future__ import annotations

import marshal
from typing import Any, NamedTuple, TypeVar


MIN_REPLICAS, MAX_REPLICAS = 2, 5  # a set of replicas is a bitmask of at most MAX_REPLICAS bits

NO_LEADER = -1
UNKNOWN = -1  # an epoch or offset a replica does not know

# Replica.status: liveness, and whether the controller has noticed a crash; EXPIRED: the
# broker runs, but the controller has seen its ZooKeeper session expire.
UP, CRASHED, OFFLINE, EXPIRED = 0, 1, 2, 3
STATUS_NAMES = ("up", "crashed", "offline", "expired")

# Replica.role: the in-memory role, set by LeaderAndIsr; NO_ROLE after a restart. FENCED: a
# leader that failed to write an ISR change to ZooKeeper and refuses writes since.
NO_ROLE, LEADER, TRUNCATING, FOLLOWER, FENCED = 0, 1, 2, 3, 4
ROLE_NAMES = ("-", "leader", "truncating", "follower", "fenced leader")

FINGERPRINT_MASK = (1 << 64) - 1


_NamedTupleClass = TypeVar("_NamedTupleClass", bound=type[NamedTuple])


def _fast_replace(cls: _NamedTupleClass) -> _NamedTupleClass:
    """Give a NamedTuple a `_replace` that builds the new tuple directly from a list, without
    the `_make` classmethod hop; successor generation calls it about 14 times per state."""
    positions, new = {name: position for position, name in enumerate(cls._fields)}, tuple.__new__

    def _replace(self: tuple[Any, ...], /, **changes: Any) -> Any:
        values = list(self)
        try:
            for name, value in changes.items():
                values[positions[name]] = value
        except KeyError as unknown:
            raise ValueError(f"{cls.__name__} has no field {unknown.args[0]!r}") from None
        return new(cls, values)

    setattr(cls, "_replace", _replace)  # mypy forbids assigning to a NamedTuple's method
    return cls


class Record(NamedTuple):
    """A producer record: a unique message number (m1, m2, ...) and the leader epoch it was written in."""

    msg: int
    epoch: int


class FetchResponse(NamedTuple):
    """A FetchResponse built by the leader and not yet handled by the follower.

    `out_of_range` marks the OffsetOutOfRange error: the follower fetched beyond the
    leader's log end, and `offset` is then the leader's LEO.
    """

    offset: int
    hw: int
    records: tuple[Record, ...]
    out_of_range: bool


@_fast_replace
class Replica(NamedTuple):
    # durable: survives a crash (except the unflushed tail of the log)
    log: tuple[Record, ...]
    unflushed: int  # how many records at the end of the log are in the page cache only
    hw: int  # the replication-offset-checkpoint
    epochs: tuple[tuple[int, int], ...]  # leader-epoch-checkpoint: (epoch, start offset)
    status: int
    # in memory: lost in a crash
    role: int
    epoch: int  # the leader epoch of the last LeaderAndIsr it acted on
    response: FetchResponse | tuple[()]  # () or a FetchResponse in flight to this replica
    stale_isr: int  # a deposed leader cut off from the controller: the ISR it still believes in
    remote_leos: tuple[int, ...]  # leader only: its view of every replica's LEO
    # the leader named by the last LeaderAndIsr it acted on, itself as leader (`Partition.leaderReplicaIdOpt`);
    # NO_LEADER after a start, and always where the variant never reads it (`Protocol.remembers_leader`)
    leader_id: int = NO_LEADER
    # a fetch of this replica in flight to the leader, delivered late (`Config.delays`): its fetch offset + 1, 0: none;
    # it is at the leader, so a crash keeps it, marking it stale: sent by an earlier incarnation (an older broker epoch)
    delayed_fetch: int = 0
    delayed_fetch_stale: bool = False

    @property
    def leo(self) -> int:
        return len(self.log)

    @property
    def alive(self) -> bool:
        """The broker process runs (its ZooKeeper session may have expired)."""
        return self.status == UP or self.status == EXPIRED

    @property
    def acts_as_leader(self) -> bool:
        return (self.role == LEADER or self.role == FENCED) and self.alive


@_fast_replace
class Controller(NamedTuple):
    """The partition state the controller keeps in ZooKeeper."""

    leader: int
    epoch: int
    isr: int  # bitmask of replica indices
    bumped: int = 0  # bitmask over epochs: those the controller's epoch bumps made (`model/epoch_bumps.py`)
    elr: int = 0  # bitmask of replica indices: the eligible leader replicas (KIP-966, `eligible_leaders`)
    # the leader's AlterPartition in flight to the controller (`isr_updates`, `Config.delays`): a bitmask of the
    # replica it adds to the ISR (0: none), and of those of them registered again since (a new broker epoch)
    proposal: int = 0
    reregistered: int = 0
    # KIP-966 (`eligible_leaders`): the last known leader, kept when the ISR becomes empty and elected when the
    # ISR and the ELR are both empty (KAFKA-15584, `PartitionChangeBuilder.lastKnownElr`); a bitmask, 0: none
    last_known_elr: int = 0
    # KRaft (`Config.metadata_lag`): the ISR members the controller removed on its own (a failure noticed, an unclean
    # registration) that its leader has not yet read in the metadata log; the leader's ISR is `isr | unseen` until then
    unseen: int = 0


@_fast_replace
class State(NamedTuple):
    replicas: tuple[Replica, ...]
    controller: Controller
    written: int  # producer records written so far
    crashes: int  # crashes so far
    committed: tuple[tuple[int, int], ...]  # history: every (offset, msg) once below the leader's HW
    consumed: tuple[tuple[int, int], ...]  # history: every (offset, msg) once below the HW of any
    # replica acting as leader, so readable by a consumer (a deposed leader's too)
    acked: int  # bitmask over message numbers: writes acknowledged to the producer
    zk_cut: int  # bitmask: brokers cut off from ZooKeeper and the controller
    peer_cut: int  # bitmask: brokers cut off from the other brokers
    cuts: int  # network failures so far
    delays: int = 0  # requests delayed so far: AlterPartition and fetch requests
    disk_failures: int = 0  # crashes so far that lost the disk (counted where `Config.counts_disk_failures`)

    @property
    def leader(self) -> Replica | None:
        index = self.controller.leader
        return None if index == NO_LEADER else self.replicas[index]


def replica_name(index: int) -> str:
    return "ABCDE"[index]


def replica_index(name: str, replicas: int) -> int:
    names = [replica_name(i) for i in range(replicas)]
    if name not in names:
        raise ValueError(f"replica {name!r} does not exist; replicas are {', '.join(names)}")
    return names.index(name)


def isr_members(isr: int) -> tuple[int, ...]:
    """The replica indices of a bitmask of replicas, in order."""
    return _MEMBERS[isr]


_MEMBERS = tuple(tuple(i for i in range(MAX_REPLICAS) if isr >> i & 1) for isr in range(1 << MAX_REPLICAS))


def record_name(record: Record) -> str:
    return f"m{record.msg}"


def fingerprint(state: State) -> int:
    """A stable unsigned 64-bit fingerprint: CPython's tuple hash over int-only leaves."""
    return hash(state) & FINGERPRINT_MASK


def owner_hash(state: State) -> int:
    """A stable hash (ints only) of a state's slowly changing part: states that share it share a
    partition (`checker.partition.owner_of`, the Spark engine's shuffle)."""
    controller = state.controller
    return hash((state.written, state.crashes, controller.epoch, controller.leader, state.committed))


def _plain(value):
    """A state (or any part of it) as nested plain tuples, which `marshal` writes."""
    if isinstance(value, tuple):
        return tuple([_plain(item) for item in value])
    return value


def pack_state(state: State) -> bytes:
    """The state as bytes: nested plain tuples of ints in `marshal` format (`unpack_state` reads them)."""
    return marshal.dumps(_plain(state), 4)


_REPLICAS: dict = {}  # per process: plain replica -> Replica, shared between the states unpacked


def _replica(plain: tuple) -> Replica:
    replica = _REPLICAS.get(plain)
    if replica is None:
        (log, unflushed, hw, epochs, status, role, epoch, response, stale_isr, remote_leos, leader_id, delayed_fetch,
         delayed_fetch_stale) = plain
        if response:
            offset, response_hw, records, out_of_range = response
            response = FetchResponse(offset, response_hw, tuple([Record(*r) for r in records]), out_of_range)
        replica = Replica(tuple([Record(*r) for r in log]), unflushed, hw, epochs, status, role, epoch,
                          response, stale_isr, remote_leos, leader_id)
        if len(_REPLICAS) > 500_000:
            _REPLICAS.clear()
        _REPLICAS[plain] = replica
    return replica


def unpack_state(blob: bytes) -> State:
    """The state `pack_state` wrote."""
    plain = marshal.loads(blob)
    return State(tuple([_replica(r) for r in plain[0]]), Controller(*plain[1]), *plain[2:])
