"""Preferred-leader rebalancing as a transition system (the cluster internals article, README
"Sources"), over `control.rebalance`.

Brokers fail and restart (`fail`, `recover`: leaders move to surviving in-sync replicas and do
not move back by themselves); the controller's periodic task (`rebalance`) moves leadership
back to preferred replicas of every broker whose share of partitions led elsewhere exceeds
`leader.imbalance.per.broker.percentage`. A run of the task that moves nothing is not a step.
The task is one step: Kafka's controller handles it as one event, between failures.

Properties: every leader is alive and in its partition's ISR; a partition loses its leader only
when that leader fails (never during a move); after a run of the task, every partition whose
preferred replica is alive and in the ISR is led by it. The last holds only while every
non-preferred leader pushes its preferred broker over the threshold (10% does so for fewer than
ten partitions per broker); with a larger percentage the checker shows the imbalance the task
leaves, and the goal `PreferredLeadersCanReturn` (AG EF balanced) fails with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple

from .assignment import assign_replicas
from .rebalance import Cluster, fail, rebalance, recover
from kafka_mc.model.interface import ALWAYS, SOMETIMES, Goal, Property

from .system import ControlAction, ModelConfig, bit_members, check_int, parse_control_action

NO_LEADER = -1
SOURCE = "cluster internals article: leader.imbalance.per.broker.percentage and the preferred replica election"


@dataclass(frozen=True)
class RebalanceConfig(ModelConfig):
    """One topic of `partitions` partitions on `replication_factor` of `brokers` brokers, at most
    `failures` broker failures per behaviour."""

    brokers: int = 3
    partitions: int = 3
    replication_factor: int = 2
    failures: int = 2
    imbalance_percentage: int = 10

    def __post_init__(self) -> None:
        check_int("brokers", self.brokers, 2, 4)
        check_int("partitions", self.partitions, 1, 6)
        check_int("replication_factor", self.replication_factor, 1, self.brokers)
        check_int("failures", self.failures, 0, 4)
        check_int("imbalance_percentage", self.imbalance_percentage, 0, 100)


class RebalanceState(NamedTuple):
    leaders: tuple[int, ...]  # per partition, a broker or NO_LEADER (offline)
    isr: tuple[int, ...]  # per partition, a bit mask of brokers
    live: int  # bit b: broker b is up
    failures: int


class RebalanceModel:
    """Failures, recoveries and the rebalance task (`control.system`)."""

    name = "rebalance"
    action_names = ("AutoLeaderRebalance", "BrokerFailure", "BrokerStartup")

    def __init__(self, config: RebalanceConfig):
        self.config = config
        self.assignment = assign_replicas(range(config.brokers), config.partitions, config.replication_factor,
                                          start=0, shift=0)
        self.properties = (
            *BASE_PROPERTIES,
            Property("PreferredLeadersRestored", ALWAYS, SOURCE, self._restored, on_step=True),
            Property("LeaderNotPreferred", SOMETIMES, "cluster internals article: after failures leaders pile up on "
                            "surviving brokers", lambda state: not self.balanced(state)),
        )
        self.goal = Goal("PreferredLeadersCanReturn", SOURCE, self.balanced)

    def parse_action(self, text: str) -> ControlAction:
        """`SessionExpire(0)` and the like; ValueError naming the bad part and what is allowed."""
        return parse_control_action(text, self.action_names)

    def initial_states(self) -> list[RebalanceState]:
        return [self._state(Cluster.created(self.assignment), 0)]

    def successors(self, state: RebalanceState) -> Iterator[tuple[ControlAction, RebalanceState]]:
        cluster = self.cluster(state)
        balanced, moves = rebalance(cluster, self.config.imbalance_percentage)
        if moves:
            yield ControlAction("AutoLeaderRebalance"), self._state(balanced, state.failures)
        for b in range(self.config.brokers):
            if state.live >> b & 1 and state.failures < self.config.failures:
                yield ControlAction("BrokerFailure", (b,)), self._state(fail(cluster, b), state.failures + 1)
            if not state.live >> b & 1:
                yield ControlAction("BrokerStartup", (b,)), self._state(recover(cluster, b), state.failures)

    def cluster(self, state: RebalanceState) -> Cluster:
        return Cluster(self.assignment,
                       {p: None if leader == NO_LEADER else leader for p, leader in enumerate(state.leaders)},
                       {p: frozenset(bit_members(mask)) for p, mask in enumerate(state.isr)},
                       frozenset(bit_members(state.live)))

    @staticmethod
    def _state(cluster: Cluster, failures: int) -> RebalanceState:
        partitions = sorted(cluster.assignment)
        leaders = (cluster.leaders[p] for p in partitions)
        return RebalanceState(tuple(NO_LEADER if leader is None else leader for leader in leaders),
                              tuple(sum(1 << b for b in cluster.isr[p]) for p in partitions),
                              sum(1 << b for b in cluster.live), failures)

    def balanced(self, state: RebalanceState) -> bool:
        """Every partition whose preferred replica is alive and in the ISR is led by it."""
        return all(state.leaders[p] == replicas[0] for p, replicas in self.assignment.items()
                   if state.live >> replicas[0] & 1 and state.isr[p] >> replicas[0] & 1)

    def _restored(self, before: RebalanceState, action: ControlAction, after: RebalanceState) -> bool:
        """After a run of the rebalance task the cluster is balanced."""
        return action.name != "AutoLeaderRebalance" or self.balanced(after)

    def state_values(self, state: RebalanceState) -> dict:
        return {
            "leader": {p: leader if leader != NO_LEADER else "none" for p, leader in enumerate(state.leaders)},
            "isr": {p: frozenset(bit_members(mask)) for p, mask in enumerate(state.isr)},
            "assignment": {p: list(replicas) for p, replicas in self.assignment.items()},
            "liveBrokers": frozenset(bit_members(state.live)),
            "failures": state.failures,
        }


def leaders_live_and_in_sync(state: RebalanceState) -> bool:
    return all(leader == NO_LEADER or (state.live >> leader & 1 and isr >> leader & 1)
               for leader, isr in zip(state.leaders, state.isr))


def leader_lost_only_by_failure(before: RebalanceState, action: ControlAction, after: RebalanceState) -> bool:
    """A partition that had a leader still has one, unless this step is that leader's failure."""
    return all(old == NO_LEADER or new != NO_LEADER or action == ControlAction("BrokerFailure", (old,))
               for old, new in zip(before.leaders, after.leaders))


BASE_PROPERTIES = (
    Property("LeadersLiveAndInSync", ALWAYS, "cluster internals article: a leader is elected from the live ISR",
                    leaders_live_and_in_sync),
    Property("NoLeaderlessMove", ALWAYS, "cluster internals article: leadership moves from the old leader to the new",
                    leader_lost_only_by_failure, on_step=True),
    Property("LeadershipMovesBack", SOMETIMES, SOURCE,
                    lambda before, action, after: action.name == "AutoLeaderRebalance", on_step=True),
)
