"""Controller election and failover (the cluster internals article, README "Sources"; Kafka's
`KafkaController` with ZooKeeper).

Brokers race to create the ephemeral `/controller` znode; the winner bumps `/controller_epoch`
and sends every broker a LeaderAndIsr request stamped with that epoch. A ZooKeeper session
can expire: the znode disappears with it and the race starts again, but the old controller
learns of it only later (`ControllerResign`), so for a while two brokers act as controller.
Brokers keep the newest controller epoch they obeyed and ignore requests of an older one
(`ReplicaManager` answers them `STALE_CONTROLLER_EPOCH`); that fencing is what keeps a
deposed controller harmless.

Two switches turn off what Kafka relies on, as negative controls: `fence_epochs=False`
makes brokers obey every request, and `atomic_epoch=False` makes the winner read
`/controller_epoch` in one step and write it back unconditionally in another (Kafka writes
it conditionally on the znode's version and resigns when that fails).

Simplified: a request's content is only its epoch (the partition states it carries are the
replication model's business); a controller resends to a broker at most one request per epoch
at a time; brokers are never down, only their sessions expire (a broker restart is a session
expiry as far as the controller is concerned); the watchers' notifications are the moves of
the race itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple

from kafka_mc.model.interface import ALWAYS, SOMETIMES, Goal, Property

from .system import ControlAction, ModelConfig, bit_members, check_bool, check_int, parse_control_action, put

NONE = -1
SOURCE = "cluster internals article: controller election through the ephemeral /controller znode, controller epoch"


@dataclass(frozen=True)
class ControllerConfig(ModelConfig):
    """`brokers` racing; `expirations` ZooKeeper session expiries a behaviour may contain."""

    brokers: int = 3
    expirations: int = 1
    fence_epochs: bool = True
    atomic_epoch: bool = True

    def __post_init__(self) -> None:
        check_int("brokers", self.brokers, 2, 4)
        check_int("expirations", self.expirations, 0, 4)
        check_bool("fence_epochs", self.fence_epochs)
        check_bool("atomic_epoch", self.atomic_epoch)


class ControllerState(NamedTuple):
    holder: int  # the broker whose session owns /controller, or NONE
    zk_epoch: int  # /controller_epoch
    sessions: int  # bit b: broker b has a live ZooKeeper session
    acting: tuple[int, ...]  # per broker: the controller epoch it acts in, 0 when not a controller
    reading: tuple[int, ...]  # per broker: the epoch it is about to write (non-atomic increment), 0 none
    obeyed: tuple[int, ...]  # per broker: the controller epoch of the last request it obeyed
    in_flight: tuple[tuple[int, int, int], ...]  # LeaderAndIsr requests (epoch, sender, target), sorted
    expirations: int  # session expiries so far


class ControllerModel:
    """Controller election and failover as a transition system (`control.system`)."""

    name = "controller"
    action_names = ("BrokerWinsElection", "BrokerCreatesControllerZnode", "ControllerWritesEpoch", "ControllerResign",
                    "ControllerSendLeaderAndIsr", "BrokerHandleLeaderAndIsr", "SessionExpire", "BrokerReconnect")

    def __init__(self, config: ControllerConfig):
        self.config = config
        self.brokers = range(config.brokers)
        self.properties = PROPERTIES
        self.goal = LIVE_CONTROLLER

    def parse_action(self, text: str) -> ControlAction:
        """`SessionExpire(0)` and the like; ValueError naming the bad part and what is allowed."""
        return parse_control_action(text, self.action_names)

    def initial_states(self) -> list[ControllerState]:
        zeros = (0,) * self.config.brokers
        return [ControllerState(NONE, 0, (1 << self.config.brokers) - 1, zeros, zeros, zeros, (), 0)]

    def successors(self, state: ControllerState) -> Iterator[tuple[ControlAction, ControllerState]]:
        for b in self.brokers:
            if state.holder == NONE and state.sessions >> b & 1 and not state.acting[b] and not state.reading[b]:
                if self.config.atomic_epoch:
                    yield (ControlAction("BrokerWinsElection", (b,)),
                           _start_acting(state._replace(holder=b), b, state.zk_epoch + 1))
                else:
                    yield (ControlAction("BrokerCreatesControllerZnode", (b,)),
                           state._replace(holder=b, reading=put(state.reading, b, state.zk_epoch + 1)))
        for b in self.brokers:
            if state.reading[b]:
                yield ControlAction("ControllerWritesEpoch", (b,)), _start_acting(state, b, state.reading[b])
        for b in self.brokers:
            if state.acting[b] and state.holder != b:
                yield ControlAction("ControllerResign", (b,)), state._replace(acting=put(state.acting, b, 0))
        for b in self.brokers:
            for target in self.brokers:
                request = (state.acting[b], b, target)
                if state.acting[b] and request not in state.in_flight:
                    yield (ControlAction("ControllerSendLeaderAndIsr", (b, target)),
                           state._replace(in_flight=tuple(sorted((*state.in_flight, request)))))
        for request in state.in_flight:
            epoch, sender, target = request
            rest = tuple(r for r in state.in_flight if r != request)
            stale = epoch < state.obeyed[target]
            obeyed = state.obeyed if stale and self.config.fence_epochs else put(state.obeyed, target, epoch)
            yield (ControlAction("BrokerHandleLeaderAndIsr", (target, epoch, sender)),
                   state._replace(in_flight=rest, obeyed=obeyed))
        for b in self.brokers:
            if state.sessions >> b & 1 and state.expirations < self.config.expirations:
                yield ControlAction("SessionExpire", (b,)), state._replace(
                    sessions=state.sessions & ~(1 << b), holder=NONE if state.holder == b else state.holder,
                    expirations=state.expirations + 1)
        for b in self.brokers:
            if not state.sessions >> b & 1:
                yield ControlAction("BrokerReconnect", (b,)), state._replace(sessions=state.sessions | 1 << b)

    def state_values(self, state: ControllerState) -> dict:
        return {
            "controllerZnode": state.holder if state.holder != NONE else "none",
            "controllerEpoch": state.zk_epoch,
            "liveSessions": frozenset(bit_members(state.sessions)),
            "actsAsControllerInEpoch": dict(enumerate(state.acting)),
            "epochBeingWritten": dict(enumerate(state.reading)),
            "obeyedControllerEpoch": dict(enumerate(state.obeyed)),
            "leaderAndIsrInFlight": frozenset(state.in_flight),
            "expirations": state.expirations,
        }



def _start_acting(state: ControllerState, broker: int, epoch: int) -> ControllerState:
    """`broker` holds /controller_epoch = `epoch` and sends every broker a LeaderAndIsr in it."""
    requests = {*state.in_flight, *((epoch, broker, target) for target in range(len(state.acting)))}
    return state._replace(zk_epoch=epoch, acting=put(state.acting, broker, epoch),
                          reading=put(state.reading, broker, 0), in_flight=tuple(sorted(requests)))


def one_controller_per_epoch(state: ControllerState) -> bool:
    """No two brokers act, or have requests in flight, in the same controller epoch."""
    senders: dict[int, set[int]] = {}
    for broker, epoch in enumerate(state.acting):
        if epoch:
            senders.setdefault(epoch, set()).add(broker)
    for epoch, sender, _ in state.in_flight:
        senders.setdefault(epoch, set()).add(sender)
    return all(len(brokers) == 1 for brokers in senders.values())


def _is_stale_request(before: ControllerState, action: ControlAction) -> bool:
    return action.name == "BrokerHandleLeaderAndIsr" and action.args[1] < before.obeyed[action.args[0]]


def stale_request_ignored(before: ControllerState, action: ControlAction, after: ControllerState) -> bool:
    """A request older than the newest controller epoch a broker obeyed changes nothing there."""
    return not _is_stale_request(before, action) or after.obeyed == before.obeyed


def live_controller(state: ControllerState) -> bool:
    """The /controller znode's owner has a live session and acts in the current epoch."""
    holder = state.holder
    return holder != NONE and bool(state.sessions >> holder & 1) and state.acting[holder] == state.zk_epoch


PROPERTIES = (
    Property("OneControllerPerEpoch", ALWAYS, SOURCE, one_controller_per_epoch),
    Property("StaleControllerIgnored", ALWAYS,
                    "cluster internals article: brokers ignore commands of an older controller epoch",
                    stale_request_ignored, on_step=True),
    Property("ControllerFailover", SOMETIMES,
                    "cluster internals article: a new race once the controller's session expires",
                    lambda state: max(state.acting) >= 2),
    Property("TwoBrokersActAsController", SOMETIMES,
                    "a deposed controller acts until it notices: why requests carry the epoch",
                    lambda state: sum(epoch > 0 for epoch in state.acting) >= 2),
    Property("StaleRequestArrives", SOMETIMES,
                    "a deposed controller's request reaches a broker that obeyed a newer one",
                    lambda before, action, after: _is_stale_request(before, action), on_step=True),
)
LIVE_CONTROLLER = Goal("LiveController", SOURCE, live_controller)
