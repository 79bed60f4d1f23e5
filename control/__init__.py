"""The control plane of seed 001: replica assignment and preferred-leader rebalancing."""

from .assignment import AssignmentError, assign_replicas
from .rebalance import DEFAULT_IMBALANCE_PERCENTAGE, Cluster, Move, fail, imbalance, rebalance, recover

__all__ = ["AssignmentError", "Cluster", "DEFAULT_IMBALANCE_PERCENTAGE", "Move", "assign_replicas", "fail",
           "imbalance", "rebalance", "recover"]
