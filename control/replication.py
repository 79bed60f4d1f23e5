"""The replication model as a `model.interface.Model`: the transitions of
`model.replication.ReplicationModel`, the properties to check (`properties.PROPERTIES` unless given)
and the recoverability goal (`properties.recovery.GOAL`), with the capabilities of
`model.interface.Capabilities` its own: states packed by `model.state.pack_state`, partitioned by
`owner_hash`, and fixed action slots."""

from __future__ import annotations

from typing import Any, Iterable, Iterator

from kafka_mc.model import PROTOCOLS, Action, Config, ReplicationModel, State, parse_action
from kafka_mc.model.interface import Model, Property
from kafka_mc.model.state import owner_hash, pack_state, unpack_state
from kafka_mc.model.values import state_values
from kafka_mc.properties import PROPERTIES
from kafka_mc.properties.recovery import GOAL


class ReplicationBehaviour:
    """The `model.interface.Model` methods of a system whose transitions are a
    `model.replication.ReplicationModel` (or a subclass: `model.epoch_bumps`)."""

    name = "replication"
    goal = GOAL
    transitions: ReplicationModel

    def __init__(self, config: Config, properties: Iterable[Property] = PROPERTIES):
        self.config = config
        self.properties = tuple(properties)
        self.transitions = self.transitions_for(config)
        self.action_names = self.transitions.action_names

    transitions_for = ReplicationModel

    def __reduce__(self):
        return type(self), (self.config,) if self.properties == PROPERTIES else (self.config, self.properties)

    def __eq__(self, other: object) -> bool:
        """The same transition system: the same configuration (the properties are what a run
        checks, not part of a behaviour, so traces of runs that checked different ones compare equal)."""
        return type(other) is type(self) and self.config == other.config  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self.config)

    def initial_states(self) -> list[State]:
        """Index i: replica i leads (`ReplicationModel.initial_states`)."""
        return self.transitions.initial_states()

    def successors(self, state: State) -> Iterator[tuple[Action, State]]:
        return self.transitions.successors(state)

    def indexed_successors(self, state: State) -> Iterator[tuple[int, State]]:
        """The successors with their action slots (`ReplicationModel.action_index`)."""
        return self.transitions.indexed_successors(state)

    def action_at(self, slot: int) -> Action:
        return self.transitions.action_at(slot)

    def next_state(self, state: State, action: Action) -> State | None:
        return self.transitions.next_state(state, action)

    def parse_action(self, text: str) -> Action:
        """`ProducerWrite(A)` and the like; ValueError naming the bad part and what is allowed."""
        return parse_action(text, self.action_names, self.config.replicas)

    def state_values(self, state: State) -> dict[str, Any]:
        return state_values(state, PROTOCOLS[self.config.protocol].eligible_leaders, bool(self.config.delays),
                            self.config.counts_disk_failures, self.config.metadata_lag)


class ReplicationSystem(ReplicationBehaviour):
    """One partition's replication under `config`, with `properties` to check. The engines know
    it by its type: they run its configuration's compiled, packed or symbolic encodings."""

    # its `model.interface.Capabilities`
    pack_state, unpack_state = staticmethod(pack_state), staticmethod(unpack_state)
    owner_hash = staticmethod(owner_hash)


def model_of(model: Model | Config, properties: Iterable[Property] | None = None,
             default: Iterable[Property] = PROPERTIES) -> Model:
    """What an engine runs: `model` itself (whose properties are its own: ValueError if others are
    given), or for a `Config` the replication model checking `properties` (`default` unless given)."""
    if isinstance(model, Config):
        return ReplicationSystem(model, default if properties is None else properties)
    if properties is not None:
        raise ValueError(f"the {model.name} model checks its own properties; give a Config to choose them")
    return model
