"""The replication model with the controller's epoch bump on ISR removal
(`model.epoch_bumps.EpochBumpModel`) as a `model.interface.Model`: the replication model's
actions, properties and reports. Not a `ReplicationSystem`: the compiled kernel, the Z3 encoding and
the TLA+ twin encode it in a mode of their own (found by this model's name), the engines that take
any model (the Python explorer, simulation) run its Python transitions, its states kept whole (the
default capabilities), and the others refuse it by name."""

from __future__ import annotations

from typing import Any

from kafka_mc.model import State
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.model.values import SortedSet

from .replication import ReplicationBehaviour


class EpochBumpSystem(ReplicationBehaviour):
    """One partition's replication under `config`, the controller bumping the epoch when it
    removes a dead follower from the ISR."""

    name = "replication-epoch-bumps"
    transitions_for = EpochBumpModel

    def state_values(self, state: State) -> dict[str, Any]:
        """The replication model's values, and the epochs the controller's bumps made."""
        bumped = state.controller.bumped
        return {**super().state_values(state),
                "bumpedEpochs": SortedSet(epoch for epoch in range(state.controller.epoch + 1) if bumped >> epoch & 1)}
