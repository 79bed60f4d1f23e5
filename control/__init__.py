"""The control plane of the cluster internals article (README "Sources"): replica assignment and
preferred-leader rebalancing as functions, and controller election, the partition state machine
and rebalancing as models (`model.interface.Model`) for the engines; and the KRaft controller
(`kraft`: the metadata log, broker registration, fencing and controlled shutdown, AlterPartition)."""

from typing import Any

from .assignment import AssignmentError, assign_replicas
from .controller import ControllerConfig, ControllerModel
from .kraft import KRaftConfig, KRaftModel
from .partition_fsm import PartitionFsmConfig, PartitionFsmModel
from .rebalance import DEFAULT_IMBALANCE_PERCENTAGE, Cluster, Move, fail, imbalance, rebalance, recover
from .rebalance_model import RebalanceConfig, RebalanceModel
from .system import ModelConfig

# name -> (the model's class, a `model.interface.Model`; its configuration's class)
MODELS: dict[str, tuple[type[Any], type[ModelConfig]]] = {
    ControllerModel.name: (ControllerModel, ControllerConfig),
    PartitionFsmModel.name: (PartitionFsmModel, PartitionFsmConfig),
    RebalanceModel.name: (RebalanceModel, RebalanceConfig),
    KRaftModel.name: (KRaftModel, KRaftConfig),
}

__all__ = ["AssignmentError", "Cluster", "ControllerConfig", "ControllerModel", "DEFAULT_IMBALANCE_PERCENTAGE", "KRaftConfig", "KRaftModel",
           "MODELS", "Move", "PartitionFsmConfig", "PartitionFsmModel", "RebalanceConfig", "RebalanceModel",
           "assign_replicas", "fail", "imbalance", "rebalance", "recover"]
