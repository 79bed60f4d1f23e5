"""The TLA+ twin's variant modules, generated from the protocol declarations of `model/protocols.py`.

A variant module instantiates `KafkaReplication.tla` with one operator of `KafkaProtocols.tla` per
choice value (`OPERATORS`), as each of Kafka's own TLA+ variants (`Kip101.tla`, `Kip279.tla`)
extends one base module; a choice value without an operator makes `UnencodedChoice`. The modules
in `model/tla/Kafka<Variant>.tla` are these texts, kept for reading (a test holds them equal); TLC
always runs the generated text, so a user's registered variant has a twin too.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from kafka_mc.model import PROTOCOLS, protocols
from kafka_mc.model.protocols import Protocol, require_encoded


def _flag(constant: str) -> dict[object, dict[str, str]]:
    """A boolean choice that the twin reads as one constant of the same truth value."""
    return {False: {constant: "FALSE"}, True: {constant: "TRUE"}}


# each choice value's operators, by the KafkaReplication parameter they instantiate
OPERATORS: dict[str, dict[object, dict[str, str]]] = {
    "epoch_cache": {
        False: {"EpochCache": "FALSE", "EpochsAfterTruncate": "NoCacheAfterTruncate"},
        True: {"EpochCache": "TRUE", "EpochsAfterTruncate": "CacheAfterTruncate"},
    },
    "epoch_on_election": _flag("EpochOnElection"),
    "new_follower": {
        protocols.TRUNCATE_TO_HW: {"BecomeFollowerReplica": "TruncateToHw"},  # defined in the module
        protocols.ASK_LEADER: {"BecomeFollowerReplica": "AskBeforeFetching"},
        protocols.FETCH_IF_EPOCH: {"BecomeFollowerReplica": "FetchAtOnce"},
    },
    "epoch_lookup": {
        protocols.NO_LOOKUP: {"TruncationPoint": "NoTruncationPoint"},
        protocols.KIP_101_LOOKUP: {"TruncationPoint": "Kip101TruncationPoint"},
        protocols.KIP_279_LOOKUP: {"TruncationPoint": "Kip279TruncationPoint"},
    },
    "isr_join": {
        protocols.JOIN_AT_HW: {"MayJoinIsr": "JoinAtHw"},
        protocols.JOIN_PAST_EPOCH_START: {"MayJoinIsr": "JoinPastEpochStart"},
    },
    "truncate_on_fetch": {
        False: {"FetchDivergence": "NoDivergence", "TruncateOnFetch": "FALSE"},
        True: {"FetchDivergence": "FetchDivergenceOffset", "TruncateOnFetch": "TRUE"},
    },
    "diverging_fetch_updates_leader": _flag("RecordsDivergingFetch"),
    "epoch_assign": {
        protocols.NEWER_EPOCH_ONLY: {"AssignEpoch": "NewerEpochOnly", "AssignOnElection": "AppendEntry"},
        protocols.TRUNCATE_CONFLICTING: {"AssignEpoch": "TruncateConflicting", "AssignOnElection": "TruncateConflicting"},
    },
    "truncate_at_end": _flag("TruncateAtEnd"),
    "diverging_response_hw": _flag("DivergingResponseHw"),
    "bounce_noticed": _flag("BounceNoticed"),
    "hw_needs_min_isr": _flag("HwNeedsMinIsr"),
    "eligible_leaders": _flag("EligibleLeaders"),
    "isr_shrink": {protocols.SHRINK_AFTER_LAG_TIME: {"DropsCaughtUp": "TRUE"},
                   protocols.SHRINK_BEHIND_LEO: {"DropsCaughtUp": "FALSE"}},
    # `Protocol.skips_leader_and_isr` and `remembers_leader`: KafkaProtocols' skip rules and the leaderId field
    "follower_skips": {
        protocols.SKIP_SAME_LEADER: {"SkipsLeaderAndIsr": "SkipsLeaderFollowed", "RemembersLeader": "TRUE"},
        protocols.SKIP_NEXT_EPOCH: {"SkipsLeaderAndIsr": "SkipsLeaderFollowedNextEpoch", "RemembersLeader": "TRUE"},
        protocols.SKIP_SAME_EPOCH: {"SkipsLeaderAndIsr": "SkipsOwnEpochOnly", "RemembersLeader": "FALSE"},
    },
    # what the controller refuses of an AlterPartition, and the leader of a stale fetch (the twin's delays)
    "isr_updates": {
        protocols.ZOOKEEPER_WRITES: {"LiveMembersOnly": "FALSE", "ChecksBrokerEpochs": "FALSE"},
        protocols.ALTER_ISR: {"LiveMembersOnly": "FALSE", "ChecksBrokerEpochs": "FALSE"},
        protocols.LIVE_MEMBERS: {"LiveMembersOnly": "TRUE", "ChecksBrokerEpochs": "FALSE"},
        protocols.BROKER_EPOCHS: {"LiveMembersOnly": "TRUE", "ChecksBrokerEpochs": "TRUE"},
    },
    # no operator: the bump model's .cfg sets `EpochBump` and `SkipsSameLeader` (requests carrying no epoch) from
    # it (`tla_twins`); a follower's skip of the bump is `follower_skips`
    "isr_removal_bump": {value: {} for value in (protocols.FOLLOWERS_SKIP_BUMP, protocols.FOLLOWERS_TAKE_BUMP,
                                                 protocols.NO_BUMP)},
    "stale_fetch": {protocols.STALE_FETCH_UPDATES: {"FencesStaleFetches": "FALSE"},
                    protocols.STALE_FETCH_FENCED: {"FencesStaleFetches": "TRUE"}},
}
TLA_DIR = Path(protocols.__file__).resolve().parent / "tla"
PARAMETERS = ("BecomeFollowerReplica", "EpochCache", "AssignEpoch", "AssignOnElection", "EpochsAfterTruncate",
              "TruncationPoint", "MayJoinIsr", "FetchDivergence", "TruncateOnFetch", "RecordsDivergingFetch",
              "EpochOnElection", "TruncateAtEnd", "DivergingResponseHw",
              "BounceNoticed", "HwNeedsMinIsr", "EligibleLeaders", "DropsCaughtUp", "SkipsLeaderAndIsr",
              "RemembersLeader", "LiveMembersOnly", "ChecksBrokerEpochs", "FencesStaleFetches")
WIDTH = 77


def module_name(protocol: Protocol) -> str:
    """`Kafka` and the protocol's name in CamelCase: `kip-279` is `KafkaKip279`."""
    return "Kafka" + "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", protocol.name))


def _comment(text: str) -> list[str]:
    """A TLA+ comment box of `text`, wrapped to the module's width."""
    inner = WIDTH - 6
    lines = []
    for paragraph in text.split("\n\n"):
        lines += textwrap.wrap(paragraph, inner) or [""]
        lines.append("")
    return ["(" + "*" * (WIDTH - 2) + ")", *(f"(* {line:<{inner}} *)" for line in lines[:-1]),
            "(" + "*" * (WIDTH - 2) + ")"]


def variant_module(protocol: Protocol) -> str:
    """The text of `protocol`'s variant module."""
    require_encoded("TLA+ twin", protocol, {name: tuple(values) for name, values in OPERATORS.items()})
    name = module_name(protocol)
    chosen: dict[str, str] = {}
    for choice, value in protocol.choices().items():
        chosen |= OPERATORS[choice][value]
    head = f" MODULE {name} "
    dashes = WIDTH - len(head)
    lines = ["-" * (dashes // 2) + head + "-" * (dashes - dashes // 2)]
    summary = (f"Variant `{protocol.name}` (Kafka {protocol.release}): {protocol.summary}.\n\n{protocol.doc}\n\n"
               + "; ".join(f"{choice} = {value!r}" for choice, value in protocol.choices().items())
               + ".\n\nGenerated from model/protocols.py by checker/tla_modules.py: do not edit.")
    lines += _comment(summary)
    lines += ["EXTENDS Integers, Sequences, KafkaProtocols", "",
              "CONSTANTS Replicas, MaxMessages, MaxCrashes, MaxElections, AcksAll, MinIsr, Unclean, EpochBump,",
              "          SkipsSameLeader, MaxDiskFailures, MaxDelays, MetadataLag", "",
              "VARIABLES replicas, controller, written, crashes, committed, acked, delays, diskFailures", ""]
    if protocol.new_follower == protocols.TRUNCATE_TO_HW:
        lines += [f"TruncateToHw(rep) == HwBecomeFollower(rep, {chosen['EpochsAfterTruncate']})", ""]
    width = max(len(parameter) for parameter in PARAMETERS)
    instance = [f"    {parameter:<{width}} <- {chosen[parameter]}" for parameter in PARAMETERS]
    lines += ["INSTANCE KafkaReplication WITH", ",\n".join(instance), "",
              "Next == BaseNext", "", "Spec == Init /\\ [][Next]_vars", "", "=" * WIDTH]
    return "\n".join(lines) + "\n"



def write_variant_modules(folder: Path = TLA_DIR) -> list[Path]:
    """Write every registered variant's module into `folder`; the paths written."""
    written = []
    for protocol in PROTOCOLS.values():
        path = folder / f"{module_name(protocol)}.tla"
        path.write_text(variant_module(protocol), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    for written_path in write_variant_modules():
        print(written_path)
