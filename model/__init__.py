"""The replication model: configuration, state encoding, actions and truncation protocols."""

from .actions import Action, parse_action
from .config import Config, ConfigError
from .protocols import PROTOCOLS, Protocol, register_protocol
from .replication import ReplicationModel
from .state import Record, Replica, State, fingerprint, replica_name

__all__ = [
    "Action", "Config", "ConfigError", "PROTOCOLS", "Record", "Replica", "ReplicationModel",
    "Protocol", "State", "fingerprint", "register_protocol", "parse_action", "replica_name",
]
