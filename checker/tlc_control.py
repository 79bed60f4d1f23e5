"""TLC on the TLA+ twin of the controller model (`model/tla/KafkaController.tla`), to cross-check
the control-plane engines as `checker.tlc` cross-checks the replication engines: the same distinct
states, the same states generated, and the same shortest violations (`OneControllerPerEpoch` as an
invariant, `StaleControllerIgnored` as an action property)."""

from __future__ import annotations

from kafka_mc.control.controller import ControllerConfig

from .tlc import TLA_DIR, TlcResult, run_until_clean

MODULE = "KafkaController"
INVARIANTS = ("OneControllerPerEpoch",)
ACTION_PROPERTIES = ("StaleControllerIgnored",)


def controller_config_text(config: ControllerConfig, pending: tuple[str, ...]) -> str:
    """The .cfg of one TLC run checking the `pending` properties."""
    brokers = ", ".join(str(b) for b in range(config.brokers))
    lines = ["CONSTANTS", f"    Brokers = {{{brokers}}}", f"    MaxExpirations = {config.expirations}",
             f"    FenceEpochs = {str(config.fence_epochs).upper()}",
             f"    AtomicEpoch = {str(config.atomic_epoch).upper()}", "SPECIFICATION Spec"]
    lines += [f"INVARIANT {name}" for name in INVARIANTS if name in pending]
    lines += [f"PROPERTY {name}" for name in ACTION_PROPERTIES if name in pending]
    return "\n".join(lines) + "\n"


def run_controller_tlc(config: ControllerConfig, timeout: float = 300.0) -> TlcResult:
    """TLC's state counts and shortest violations for the controller model's `config`."""
    return run_until_clean(MODULE, {MODULE: (TLA_DIR / f"{MODULE}.tla").read_text(encoding="utf-8")}, (*INVARIANTS, *ACTION_PROPERTIES),
                           lambda pending: controller_config_text(config, pending), 1, timeout)
