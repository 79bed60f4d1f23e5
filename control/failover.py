"""The replication model with the controller's own failure (Vanlightly's fault-tolerance article,
README "Sources", partition scenario 8).

The replication model's controller never fails. Here it runs on a broker of its own (not one of
the partition's replicas) that can lose ZooKeeper (`ControllerFails`, at most
`controller_failures` times): its session expires and, until another broker wins the race for
/controller (`NewControllerElected`), nobody notices failures or elects leaders. The new
controller reads the partition state (leader, leader epoch, ISR) from ZooKeeper, as it stands,
and resends LeaderAndIsr: in this model brokers already act on that state whenever they are
behind it (`BecomeFollower`), so the resend is that action, and the brokers whose sessions
expired meanwhile are noticed by the new controller (`ControllerNoticeFailure`, enabled again).
The old controller cannot write ZooKeeper; its requests still on their way carry an older
controller epoch and brokers ignore them (`control/controller.py` checks that fencing), so they
are not modelled here. Leaders keep shrinking and expanding their ISR in ZooKeeper, as they do
without a controller.

Everything else is the replication model: the same actions, properties and reports. Left out:
the controller on one of the partition's own brokers, where a broker cut off from ZooKeeper
would take the controller with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple

from kafka_mc.model import Action, Config, State
from kafka_mc.model.config import CHECK_COUNT_LIMIT
from kafka_mc.model.interface import SOMETIMES, Goal, Property
from kafka_mc.properties import PROPERTIES

from .replication import ReplicationSystem
from .system import ControlAction, check_int, parse_control_action

CONTROLLER_ACTIONS = ("ControllerNoticeFailure", "ControllerElectLeader")  # what needs a live controller
FAILS, ELECTED = ControlAction("ControllerFails"), ControlAction("NewControllerElected")


@dataclass(frozen=True)
class FailoverConfig(Config):
    """A replication configuration whose controller may fail `controller_failures` times."""

    controller_failures: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("controller_failures", self.controller_failures, 0, CHECK_COUNT_LIMIT)


class FailoverState(NamedTuple):
    replication: State
    controller_up: bool
    controller_failures: int  # so far


class FailoverModel:
    """The replication model and a controller that fails over (a `model.interface.Model`)."""

    name = "replication-failover"

    def __init__(self, config: FailoverConfig):
        self.config = config
        self.model = ReplicationSystem(config)
        self.action_names = (*self.model.action_names, FAILS.name, ELECTED.name)
        self.properties = (*(_lifted(p) for p in PROPERTIES),
                           Property("ControllerFailover", SOMETIMES,
                                    "Vanlightly's fault-tolerance article, partition scenario 8",
                                    lambda state: state.controller_up and state.controller_failures > 0))
        goal = self.model.goal
        self.goal = Goal(goal.name, goal.source, lambda state: goal.holds(state.replication))

    def initial_states(self) -> list[FailoverState]:
        """The replication model's initial states (index i: replica i leads), the controller up."""
        return [FailoverState(state, True, 0) for state in self.model.initial_states()]

    def successors(self, state: FailoverState) -> Iterator[tuple[Action | ControlAction, FailoverState]]:
        for action, following in self.model.successors(state.replication):
            if state.controller_up or action.name not in CONTROLLER_ACTIONS:
                yield action, state._replace(replication=following)
        if state.controller_up and state.controller_failures < self.config.controller_failures:
            yield FAILS, state._replace(controller_up=False, controller_failures=state.controller_failures + 1)
        if not state.controller_up:
            yield ELECTED, state._replace(controller_up=True)

    def parse_action(self, text: str) -> Action | ControlAction:
        """A replication action (`ProducerWrite(A)`) or `ControllerFails()` / `NewControllerElected()`."""
        if text.strip().startswith((FAILS.name, ELECTED.name)):
            return parse_control_action(text, (FAILS.name, ELECTED.name))
        return self.model.parse_action(text)

    def state_values(self, state: FailoverState) -> dict:
        return {**self.model.state_values(state.replication), "controllerUp": state.controller_up,
                "controllerFailures": state.controller_failures}


def _lifted(prop: Property) -> Property:
    """A replication property over the replication part of a state (or step); a step of the
    controller's own is a step in which the replication state stays as it was."""
    if prop.on_step:
        return Property(prop.name, prop.kind, prop.source,
                        lambda before, action, after: prop.holds(before.replication, action, after.replication),
                        on_step=True)
    return Property(prop.name, prop.kind, prop.source, lambda state: prop.holds(state.replication))
