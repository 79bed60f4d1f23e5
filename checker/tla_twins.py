"""The TLA+ twins of the models, the encoding TLC runs (`checker.tlc`): for each model that has one,
the module TLC checks, the text of every module it needs, the properties it states under
kafka-mc's names, and the TLC configuration (.cfg) of a run checking some of them.

- The replication model: `model/tla/KafkaReplication.tla` mirrors `model/replication.py` value
  for value, `KafkaProtocols.tla` holds the operators the protocols are made of, and each
  variant's module is generated from its declaration in `model/protocols.py`
  (`checker/tla_modules.py`). It states the state invariants of `properties.INVARIANTS`.
- The replication model with the controller's epoch bumps (`control.epoch_bumps.EpochBumpSystem`):
  the same modules, the .cfg setting, from the variant's choice `isr_removal_bump`, the constant
  `EpochBump` (the controller bumps the epoch when it removes a dead follower from the ISR; not the
  KRaft controller from 3.6) and `SkipsSameLeader` (to 2.0.1: a follower's requests carry no epoch,
  `Protocol.followers_skip_bumps`); both are FALSE for the replication model. Whether a follower skips the
  bump of the leader it follows is the variant's `follower_skips`, as for any LeaderAndIsr (the twin's
  `SkipsLeaderAndIsr`). Like the replication model's twin it
  leaves out network failures (`partitions`), and with them the bump a leader cut off from ZooKeeper
  takes when it reconnects.
- Delayed requests (`Config.delays`): the .cfg's `MaxDelays`; the twin's AlterPartition in flight and
  stale fetches read the variant's `isr_updates` and `stale_fetch` (`LiveMembersOnly`,
  `ChecksBrokerEpochs`, `FencesStaleFetches`).
- A leader reading the metadata late (`Config.metadata_lag`): the .cfg's `MetadataLag`; the controller's
  `unseen` (always present, empty without the lag) and `LeaderApplyMetadata`.
- The controller model: `model/tla/KafkaController.tla`, with `OneControllerPerEpoch` as an
  invariant and `StaleControllerIgnored` as an action property.
- The KRaft controller model (`control/kraft.py`): `model/tla/KafkaKRaft.tla`, the release as the
  constant `Release` (0, 1, 2 for 3.2, 3.3, 3.5), with `IsrMembersEligible` and `LeaderIsActive` as
  invariants and `IsrJoinedByRegisteredIncarnation` and `ShutdownAfterLeadershipMoved` as action
  properties; not the model's witnesses nor its goal.

A twin is found by the model's `name` (`twin_of`); `register_twin` adds one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

from kafka_mc.control.controller import ControllerConfig
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.kraft import RELEASES, KRaftConfig, KRaftModel
from kafka_mc.control.replication import model_of
from kafka_mc.model import PROTOCOLS, Config
from kafka_mc.model.epoch_bumps import bounding_config
from kafka_mc.model.interface import Model
from kafka_mc.model.state import replica_name
from kafka_mc.properties import ALWAYS, INVARIANTS, shipped

from .tla_modules import TLA_DIR, module_name, variant_module
from .tla_properties import PROPERTIES_SUFFIX, properties_module, replica_constants

__all__ = ["INVARIANT_NAMES", "TLA_DIR", "TWINS", "TlaTwin", "register_twin", "tla_module_for", "tlc_config_text",
           "twin_of"]

BASE_MODULE = "KafkaReplication"
SHARED_MODULES = (BASE_MODULE, "KafkaProtocols")
INVARIANT_NAMES: tuple[str, ...] = tuple(p.name for p in INVARIANTS if not p.on_step)

# The Config fields the twin maps to TLA+ constants; any other field must keep its default.
_COVERED_FIELDS = frozenset({"protocol", "replicas", "messages", "crashes", "elections", "acks", "min_isr", "unclean",
                             "disk_failures", "delays", "metadata_lag"})
_ACKS_ALL = {"all": "TRUE", "1": "FALSE"}


@dataclass(frozen=True)
class TlaTwin:
    """A model's TLA+ twin. `properties`: what the twin states, by kafka-mc's names (TLC reports
    them under the same names); `witnesses`: those among them stated as never reached, so that
    TLC's violation is where the witness is reached; `config_text(pending)`: the .cfg of a run
    checking `pending`."""

    module: str
    modules: dict[str, str]  # module name -> text, every module TLC needs
    properties: tuple[str, ...]
    config_text: Callable[[tuple[str, ...]], str]
    witnesses: tuple[str, ...] = ()

    def spec_files(self) -> dict[str, str]:
        """The modules and the .cfg checking every property, by file name, ready for `java tlc2.TLC`."""
        files = {f"{name}.tla": text for name, text in self.modules.items()}
        files[f"{self.module}.cfg"] = self.config_text(self.properties)
        return files


# ------------------------------------------------------------------------- replication


def tla_module_for(protocol: str) -> str:
    """The name of the TLA+ module of a protocol variant's twin."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol {protocol!r} is unknown; allowed: {', '.join(PROTOCOLS)}")
    return module_name(PROTOCOLS[protocol])


def tlc_config_text(config: Config, invariants: tuple[str, ...] = INVARIANT_NAMES,
                    users: tuple[tuple[str, bool], ...] = (), bumps: bool = False) -> str:
    """The TLC configuration (.cfg) of `config` for the twin module, checking `invariants` (of
    kafka-mc's own, and of `users`: the users' properties the module states, each name with
    whether it is a step property); with `bumps`, of the replication model with the controller's
    epoch bumps (`model/epoch_bumps.py`). ValueError for a setting the twin does not model."""
    module = tla_module_for(config.protocol) + (PROPERTIES_SUFFIX if users else "")
    for field in dataclasses.fields(config):
        if field.name not in _COVERED_FIELDS and getattr(config, field.name) != field.default:
            raise ValueError(f"the TLA+ twin does not model the setting {field.name}="
                             f"{getattr(config, field.name)!r}; it covers: {', '.join(sorted(_COVERED_FIELDS))}")
    if config.acks not in _ACKS_ALL:
        raise ValueError(f"the TLA+ twin does not model acks={config.acks!r}; it covers: {', '.join(_ACKS_ALL)}")
    steps = {name for name, on_step in users if on_step}
    known = INVARIANT_NAMES + tuple(name for name, _ in users)
    unknown = [name for name in invariants if name not in known]
    if unknown:
        raise ValueError(f"the TLA+ twin has no invariant {', '.join(unknown)}; it has: {', '.join(known)}")
    names = [replica_name(index) for index in range(config.replicas)]
    protocol = PROTOCOLS[config.protocol]
    settings = ", ".join(f"{key}={value!r}" for key, value in config.to_dict().items())
    lines = [
        f"\\* TLC configuration of {module} for kafka-mc Config({settings})"
        + (" with the controller's epoch bumps" if bumps else ""),
        "CONSTANTS",
        f"    Replicas = {{{', '.join(names)}}}",
        f"    MaxMessages = {config.messages}",
        f"    MaxCrashes = {config.crashes}",
        f"    MaxElections = {config.elections}",
        f"    AcksAll = {_ACKS_ALL[config.acks]}",
        f"    MinIsr = {config.min_isr}",
        f"    Unclean = {'TRUE' if config.unclean else 'FALSE'}",
        f"    EpochBump = {'TRUE' if bumps and protocol.bumps_on_isr_removal else 'FALSE'}",
        f"    SkipsSameLeader = {'TRUE' if bumps and protocol.followers_skip_bumps else 'FALSE'}",
        f"    MaxDiskFailures = {config.disk_failures}",
        f"    MaxDelays = {config.delays}",
        f"    MetadataLag = {'TRUE' if config.metadata_lag else 'FALSE'}",
    ]
    if users:
        lines += [f"    {constant} = {name}" for constant, name in zip(replica_constants(config), names)]
    lines.append("SPECIFICATION Spec")
    state_invariants = [name for name in invariants if name not in steps]
    if state_invariants:
        lines += ["INVARIANTS", *(f"    {name}" for name in state_invariants)]
    step_properties = [name for name in invariants if name in steps]
    if step_properties:
        lines += ["PROPERTIES", *(f"    {name}" for name in step_properties)]
    return "\n".join(lines) + "\n"


def replication_twin(model: Model, bumps: bool = False) -> TlaTwin:
    """The twin of the replication model's configuration (with `bumps`, of the replication model
    with the controller's epoch bumps): the shared modules and the variant's, generated from its
    declaration, stating kafka-mc's own invariants among the model's properties; with users' own
    properties, a module extending the variant's states them too (`tla_properties.properties_module`,
    within the bounds the model's values keep; NotLowered for one it cannot state)."""
    config: Config = model.config
    tlc_config_text(config, bumps=bumps)  # a ValueError for what the twin does not cover, before any run
    protocol = PROTOCOLS[config.protocol]
    modules = {name: (TLA_DIR / f"{name}.tla").read_text(encoding="utf-8") for name in SHARED_MODULES}
    variant = module_name(protocol)
    modules[variant] = variant_module(protocol)
    chosen = {p.name for p in model.properties if shipped(p)}
    own = tuple(name for name in INVARIANT_NAMES if name in chosen)
    users = tuple(p for p in model.properties if not shipped(p))
    if not users:
        return TlaTwin(variant, modules, own, lambda pending: tlc_config_text(config, pending, bumps=bumps))
    module = variant + PROPERTIES_SUFFIX
    # with the bumps, epochs run past the elections bound (`model.epoch_bumps.bounding_config`)
    modules[module] = properties_module(module, variant, users, bounding_config(config) if bumps else config,
                                        modules.values())
    kinds = tuple((p.name, p.on_step) for p in users)
    return TlaTwin(module, modules, own + tuple(p.name for p in users),
                   lambda pending: tlc_config_text(config, pending, kinds, bumps),
                   tuple(p.name for p in users if p.kind != ALWAYS))


def epoch_bump_twin(model: Model) -> TlaTwin:
    """The twin of the replication model with the controller's epoch bumps
    (`control.epoch_bumps.EpochBumpSystem`): the replication model's, run with `EpochBump`."""
    return replication_twin(model, bumps=True)


# ------------------------------------------------------------------ the control-plane models


def control_twin(module: str, invariants: tuple[str, ...], action_properties: tuple[str, ...],
                 constants: dict[str, str]) -> TlaTwin:
    """The twin of a control-plane model: one module, whose .cfg sets `constants` (name -> TLA+
    value) and checks the pending ones of its `invariants` and `action_properties`."""

    def config_text(pending: tuple[str, ...]) -> str:
        lines = ["CONSTANTS", *(f"    {name} = {value}" for name, value in constants.items()), "SPECIFICATION Spec"]
        lines += [f"INVARIANT {name}" for name in invariants if name in pending]
        lines += [f"PROPERTY {name}" for name in action_properties if name in pending]
        return "\n".join(lines) + "\n"

    text = (TLA_DIR / f"{module}.tla").read_text(encoding="utf-8")
    return TlaTwin(module, {module: text}, (*invariants, *action_properties), config_text)


def _brokers(count: int) -> str:
    return "{" + ", ".join(str(b) for b in range(count)) + "}"


def controller_twin(model: Model) -> TlaTwin:
    """The twin of the controller model's configuration (`KafkaController.tla`)."""
    config: ControllerConfig = model.config
    return control_twin("KafkaController", ("OneControllerPerEpoch",), ("StaleControllerIgnored",),
                        {"Brokers": _brokers(config.brokers), "MaxExpirations": str(config.expirations),
                         "FenceEpochs": str(config.fence_epochs).upper(),
                         "AtomicEpoch": str(config.atomic_epoch).upper()})


def kraft_twin(model: Model) -> TlaTwin:
    """The twin of the KRaft controller model's configuration (`KafkaKRaft.tla`)."""
    config: KRaftConfig = model.config
    return control_twin("KafkaKRaft", ("IsrMembersEligible", "LeaderIsActive"),
                        ("IsrJoinedByRegisteredIncarnation", "ShutdownAfterLeadershipMoved"),
                        {"Brokers": _brokers(config.brokers), "MaxFailures": str(config.failures),
                         "MaxFencings": str(config.fencings), "MaxShutdowns": str(config.shutdowns),
                         "MaxEarlyRegistrations": str(config.early_registrations),
                         "Release": str(RELEASES.index(config.release))})


# ---------------------------------------------------------------------------- registry

TWINS: dict[str, Callable[[Model], TlaTwin]] = {"replication": replication_twin, "controller": controller_twin,
                                                 EpochBumpSystem.name: epoch_bump_twin, KRaftModel.name: kraft_twin}


def register_twin(model_name: str, twin: Callable[[Model], TlaTwin]) -> None:
    """Give the models named `model_name` a TLA+ twin (`twin(model)` builds it for a model's configuration)."""
    TWINS[model_name] = twin


def twin_of(model: Model | Config) -> TlaTwin:
    """The TLA+ twin of `model` (a Config: of the replication model); ValueError naming the model
    when it has none, or naming the setting its twin does not model."""
    model = model_of(model)
    if model.name not in TWINS:
        raise ValueError(f"the {model.name} model has no TLA+ twin; models with one: {', '.join(TWINS)}")
    return TWINS[model.name](model)
