"""Each model's Z3 encoding (`encoding.SymbolicEncoding`), found by the model's name: the
replication model's (`transitions.SymbolicModel`) and, with the controller's epoch bumps, the bump
model's (`SymbolicModel` with `bumps`), the controller's and the partition state machine's
(`control.py`), the KRaft controller's (`kraft.py`), and any a plugin registers. A model without one is refused by name."""

from __future__ import annotations

from typing import Any, Callable

from kafka_mc.control.controller import ControllerModel
from kafka_mc.control.kraft import KRaftModel
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.partition_fsm import PartitionFsmModel
from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.model.interface import Model

from .control import ControllerEncoding, PartitionFsmEncoding
from .encoding import SymbolicEncoding
from .kraft import KRaftEncoding
from .transitions import EncodingError, SymbolicModel

EncodingFactory = Callable[[Any], SymbolicEncoding]  # of a model of the name it is registered for

_FACTORIES: dict[str, EncodingFactory] = {
    ReplicationSystem.name: lambda model: SymbolicModel(model.config),
    EpochBumpSystem.name: lambda model: SymbolicModel(model.config, bumps=True),
    ControllerModel.name: ControllerEncoding,
    PartitionFsmModel.name: PartitionFsmEncoding,
    KRaftModel.name: KRaftEncoding,
}


class NoEncoding(EncodingError):
    """A model no Z3 encoding is registered for."""


def register_z3_encoding(model_name: str, factory: EncodingFactory) -> None:
    """Encode the model named `model_name` with `factory(model)` from now on."""
    _FACTORIES[model_name] = factory


def z3_encoded_models() -> tuple[str, ...]:
    """The names of the models with an encoding, in the order they were registered."""
    return tuple(_FACTORIES)


def z3_encoding(model: Model) -> SymbolicEncoding:
    """`model`'s encoding; `NoEncoding` naming the model and those with one. The encoding may
    refuse the model's configuration (`EncodingError`, naming what it lacks)."""
    factory = _FACTORIES.get(model.name)
    if factory is None:
        raise NoEncoding(f"the {model.name} model has no Z3 encoding; models with one: "
                         + ", ".join(z3_encoded_models()))
    return factory(model)
