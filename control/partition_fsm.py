"""The controller's partition state machine (the cluster internals article, README "Sources";
Kafka's `PartitionStateMachine`).

A topic's partitions move between NonExistentPartition, NewPartition, OnlinePartition and
OfflinePartition, driven by the controller's handlers: topic creation (NonExistent -> New),
leader election (New or Offline -> Online: the first live replica of the assignment for a new
partition, the first live ISR member for an offline one, or with unclean election any live
replica), a preferred replica election (Online -> Online), broker failure (the partitions it
led go Offline; it leaves the ISR of the others, never emptying one), broker recovery and a
recovered follower rejoining the ISR, and topic deletion (every partition Offline, Offline ones
staying so, then each NonExistent). Kafka allows exactly the edges in
`LEGAL` (its `validPreviousStates`); the property `OnlyLegalTransitions` checks every step
against that table, and a witness per edge shows each one is taken.

`delete_online=True` is a negative control: deletion drops partitions straight to
NonExistent, skipping OfflinePartition, an edge Kafka refuses.

Simplified: what Kafka does in one controller event is sometimes two steps here (creation, then
the first election), so this model allows more interleavings, never fewer; one topic, its
replicas assigned by `control.assignment` with the first broker leading partition 0; no
reassignment or controlled-shutdown elections; a topic is created at most `creations` times.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple

from .assignment import assign_replicas
from kafka_mc.model.interface import ALWAYS, SOMETIMES, Goal, Property

from .system import ControlAction, ModelConfig, bit_members, check_bool, check_int, parse_control_action, put

NON_EXISTENT, NEW, ONLINE, OFFLINE = range(4)
STATE_NAMES = ("NonExistentPartition", "NewPartition", "OnlinePartition", "OfflinePartition")
LEGAL = frozenset({(NON_EXISTENT, NEW), (NEW, ONLINE), (NEW, OFFLINE), (ONLINE, ONLINE), (ONLINE, OFFLINE),
                   (OFFLINE, ONLINE), (OFFLINE, OFFLINE), (OFFLINE, NON_EXISTENT)})
NO_LEADER = -1
SOURCE = ("cluster internals article: NonExistentPartition -> NewPartition -> OnlinePartition <-> OfflinePartition"
          " -> NonExistent")


@dataclass(frozen=True)
class PartitionFsmConfig(ModelConfig):
    """One topic of `partitions` partitions, each on `replication_factor` of `brokers` brokers;
    at most `failures` broker failures and `creations` topic creations per behaviour."""

    brokers: int = 2
    partitions: int = 1
    replication_factor: int = 2
    failures: int = 2
    creations: int = 2
    unclean: bool = False
    delete_online: bool = False

    def __post_init__(self) -> None:
        check_int("brokers", self.brokers, 1, 4)
        check_int("partitions", self.partitions, 1, 3)
        check_int("replication_factor", self.replication_factor, 1, self.brokers)
        check_int("failures", self.failures, 0, 4)
        check_int("creations", self.creations, 1, 3)
        check_bool("unclean", self.unclean)
        check_bool("delete_online", self.delete_online)


class PartitionFsmState(NamedTuple):
    states: tuple[int, ...]  # per partition, an index into STATE_NAMES
    leaders: tuple[int, ...]  # per partition, a broker or NO_LEADER
    isr: tuple[int, ...]  # per partition, a bit mask of brokers
    live: int  # bit b: broker b is up
    deleting: bool  # the topic is being deleted
    creations: int
    failures: int


class PartitionFsmModel:
    """The partition state machine as a transition system (`control.system`)."""

    name = "partition-fsm"
    action_names = ("CreateTopic", "ControllerElectLeader", "BrokerFailure", "BrokerStartup",
                    "PreferredReplicaElection", "FollowerJoinsIsr", "DeleteTopic", "TopicDeletionCompletes")

    def __init__(self, config: PartitionFsmConfig):
        self.config = config
        self.assignment = assign_replicas(range(config.brokers), config.partitions, config.replication_factor,
                                          start=0, shift=0)
        self.partitions = range(config.partitions)
        self.properties = PROPERTIES
        self.goal = SETTLED

    def parse_action(self, text: str) -> ControlAction:
        """`SessionExpire(0)` and the like; ValueError naming the bad part and what is allowed."""
        return parse_control_action(text, self.action_names)

    def initial_states(self) -> list[PartitionFsmState]:
        count = self.config.partitions
        return [PartitionFsmState((NON_EXISTENT,) * count, (NO_LEADER,) * count, (0,) * count,
                                  (1 << self.config.brokers) - 1, False, 0, 0)]

    def successors(self, state: PartitionFsmState) -> Iterator[tuple[ControlAction, PartitionFsmState]]:
        config = self.config
        if all(s == NON_EXISTENT for s in state.states) and state.creations < config.creations:
            yield ControlAction("CreateTopic"), state._replace(states=(NEW,) * config.partitions,
                                                               creations=state.creations + 1)
        for p in self.partitions:
            elected = self._elect(state, p)
            if elected is not None:
                yield ControlAction("ControllerElectLeader", (p,)), elected
        for b in range(config.brokers):
            if state.live >> b & 1 and state.failures < config.failures:
                yield ControlAction("BrokerFailure", (b,)), self._fail(state, b)
            if not state.live >> b & 1:
                yield ControlAction("BrokerStartup", (b,)), state._replace(live=state.live | 1 << b)
        for p in self.partitions:
            preferred = self.assignment[p][0]
            if (state.states[p] == ONLINE and not state.deleting and state.leaders[p] != preferred
                    and state.live >> preferred & 1 and state.isr[p] >> preferred & 1):
                yield ControlAction("PreferredReplicaElection", (p,)), state._replace(
                    leaders=put(state.leaders, p, preferred))
        for p in self.partitions:
            for b in self.assignment[p]:
                if state.states[p] == ONLINE and state.live >> b & 1 and not state.isr[p] >> b & 1:
                    yield ControlAction("FollowerJoinsIsr", (p, b)), state._replace(
                        isr=put(state.isr, p, state.isr[p] | 1 << b))
        if not state.deleting and any(s != NON_EXISTENT for s in state.states):
            yield ControlAction("DeleteTopic"), self._start_deletion(state)
        for p in self.partitions:
            if state.deleting and state.states[p] == OFFLINE:
                states = put(state.states, p, NON_EXISTENT)
                yield ControlAction("TopicDeletionCompletes", (p,)), state._replace(
                    states=states, isr=put(state.isr, p, 0), deleting=any(s != NON_EXISTENT for s in states))

    def _elect(self, state: PartitionFsmState, p: int) -> PartitionFsmState | None:
        """New or Offline -> Online, when the partition has a leader to elect and is not being deleted."""
        if state.deleting or state.states[p] not in (NEW, OFFLINE):
            return None
        replicas = [b for b in self.assignment[p] if state.live >> b & 1]
        if state.states[p] == NEW:
            isr = sum(1 << b for b in replicas)
        else:
            in_sync = [b for b in replicas if state.isr[p] >> b & 1]
            isr = sum(1 << b for b in in_sync) if in_sync else (1 << replicas[0] if replicas and self.config.unclean
                                                               else 0)
        if not isr:
            return None
        leader = next(b for b in self.assignment[p] if isr >> b & 1)
        return state._replace(states=put(state.states, p, ONLINE), leaders=put(state.leaders, p, leader),
                              isr=put(state.isr, p, isr))

    def _fail(self, state: PartitionFsmState, broker: int) -> PartitionFsmState:
        """The broker goes down: partitions it led go Offline; it leaves every ISR it is not the last of."""
        states, leaders, isr = list(state.states), list(state.leaders), list(state.isr)
        for p in self.partitions:
            if leaders[p] == broker:
                states[p], leaders[p] = OFFLINE, NO_LEADER
            if isr[p] >> broker & 1 and isr[p] != 1 << broker:
                isr[p] &= ~(1 << broker)
        return state._replace(states=tuple(states), leaders=tuple(leaders), isr=tuple(isr),
                              live=state.live & ~(1 << broker), failures=state.failures + 1)

    def _start_deletion(self, state: PartitionFsmState) -> PartitionFsmState:
        """Every partition of the topic goes Offline (or, with `delete_online`, straight to NonExistent)."""
        count = self.config.partitions
        if self.config.delete_online:
            return state._replace(states=(NON_EXISTENT,) * count, leaders=(NO_LEADER,) * count, isr=(0,) * count)
        states = tuple(OFFLINE if s != NON_EXISTENT else s for s in state.states)
        return state._replace(states=states, leaders=(NO_LEADER,) * count, deleting=True)

    def state_values(self, state: PartitionFsmState) -> dict:
        return {
            "partitionState": {p: STATE_NAMES[s] for p, s in enumerate(state.states)},
            "leader": {p: leader if leader != NO_LEADER else "none" for p, leader in enumerate(state.leaders)},
            "isr": {p: frozenset(bit_members(mask)) for p, mask in enumerate(state.isr)},
            "assignment": {p: list(replicas) for p, replicas in self.assignment.items()},
            "liveBrokers": frozenset(bit_members(state.live)),
            "topicDeletionInProgress": state.deleting,
            "creations": state.creations,
            "failures": state.failures,
        }



def only_legal_transitions(before: PartitionFsmState, action: ControlAction, after: PartitionFsmState) -> bool:
    return all(edge in LEGAL for edge in zip(before.states, after.states) if edge[0] != edge[1])


def online_means_led(state: PartitionFsmState) -> bool:
    """An OnlinePartition has a live leader in its ISR; no other partition has a leader."""
    return all((s == ONLINE) == (leader != NO_LEADER and bool(state.live >> leader & 1 and isr >> leader & 1))
               for s, leader, isr in zip(state.states, state.leaders, state.isr))


SELF_LOOPS = {(ONLINE, ONLINE): "PreferredReplicaElection", (OFFLINE, OFFLINE): "DeleteTopic"}


def _takes(edge: tuple[int, int]):
    """A step takes `edge` when some partition goes along it; a self-loop is taken when the
    handler that makes it (`SELF_LOOPS`) leaves a partition in that state."""
    def taken(before: PartitionFsmState, action: ControlAction, after: PartitionFsmState) -> bool:
        if edge[0] == edge[1] and action.name != SELF_LOOPS[edge]:
            return False
        return any(pair == edge for pair in zip(before.states, after.states))
    return taken


def edge_name(edge: tuple[int, int]) -> str:
    """The name of a state-machine edge's witness: `NewToOnline`."""
    return f"{STATE_NAMES[edge[0]].removesuffix('Partition')}To{STATE_NAMES[edge[1]].removesuffix('Partition')}"


EDGE_WITNESSES = tuple(
    Property(edge_name(edge), SOMETIMES,
                    f"Kafka's PartitionStateMachine allows {STATE_NAMES[edge[0]]} -> {STATE_NAMES[edge[1]]}",
                    _takes(edge), on_step=True)
    for edge in sorted(LEGAL))
PROPERTIES = (
    Property("OnlyLegalTransitions", ALWAYS, SOURCE, only_legal_transitions, on_step=True),
    Property("OnlineMeansLed", ALWAYS, "cluster internals article: an online partition has a leader", online_means_led),
    *EDGE_WITNESSES,
)
SETTLED = Goal("PartitionsSettled", "every partition can again be online or deleted",
               lambda state: not state.deleting and all(s in (NON_EXISTENT, ONLINE) for s in state.states))
