"""Seed 003's claims about how Kafka loses acknowledged writes, checked against the model.

Each claim names a catalogue scenario (`scenarios/catalogue`, key `article`) that replays the
article's story, whether the article says acknowledged data is lost there, and the setting
the article says closes the hole. `compare` replays the scenario and, when a setting closes
the hole, checks the scenario's configuration with that setting exhaustively.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

from kafka_mc.model import Config

from .matrix import check_cell
from .scenario import Replay, Scenario, documented_scenarios, load_scenario, replay

ACKED = "NoAckedDataLoss"


@dataclass(frozen=True)
class Claim:
    case: str  # an ARTICLE_CASES id
    says: str
    loses_acked: bool
    closed_by: dict  # Config settings the article says prevent the loss; {} for none


CLAIMS = (
    Claim("row-1", "leader fails; acks=1 loses writes the leader acknowledged before followers copied them",
          True, {"acks": "all"}),
    Claim("row-2", "unclean election to an out-of-sync replica loses acknowledged writes, even with acks=all",
          True, {"unclean": False}),
    Claim("row-3", "a leader cut off from ZooKeeper keeps acknowledging acks=1 writes that are truncated when it "
          "rejoins", True, {"acks": "all"}),
    Claim("row-4", "a fully isolated leader whose ISR had shrunk to itself loses even acks=all writes when "
          "min.insync.replicas=1", True, {"min_isr": 2}),
    Claim("row-5", "all replicas failing at once lose acknowledged records not yet flushed; no setting closes it "
          "(only flushing every write)", True, {"flush": True}),
    Claim("partition-1", "follower cut from the leader: dropped from the ISR, rejoins after catching up; no loss",
          False, {}),
    Claim("partition-2", "leader cut from every follower: the ISR shrinks to the leader; no loss", False, {}),
    Claim("partition-3", "follower cut from ZooKeeper only: keeps fetching; no effect", False, {}),
    Claim("partition-4", "leader cut from ZooKeeper: a new leader is elected, the old one accepts acks=1 writes "
          "until a failed ISR shrink; those writes are lost", True, {"acks": "all"}),
    Claim("partition-5", "follower fully isolated: dropped from the ISR, catches up later; no loss", False, {}),
    Claim("partition-6", "leader fully isolated: as scenario 4, a short split brain losing acks=1 writes", True,
          {"acks": "all"}),
    Claim("partition-7", "controller cannot reach a broker: it cannot become leader; at worst a short split "
          "brain", False, {}),
    Claim("partition-8", "controller cannot reach ZooKeeper: another controller takes over; no effect", False, {}),
    Claim("seed-004", "three replicas: uncommitted m3 is truncated when the old leader rejoins; nothing "
          "acknowledged is lost", False, {}),
)


@dataclass(frozen=True)
class Comparison:
    claim: Claim
    scenario: Scenario | None  # None: the model cannot express the case
    replayed: Replay | None
    closed: bool | None  # the exhaustive check with the closing setting: True when no acked write is lost

    @property
    def model_loses_acked(self) -> bool | None:
        return None if self.replayed is None else ACKED in self.replayed.first_breaks

    @property
    def agrees(self) -> bool | None:
        if self.replayed is None:
            return None
        return self.model_loses_acked == self.claim.loses_acked and self.closed is not False

    def closing_config(self) -> Config | None:
        if self.scenario is None or not self.claim.closed_by:
            return None
        return dataclasses.replace(self.scenario.config, **self.claim.closed_by)


def catalogue_scenarios() -> dict[str, Scenario]:
    """The catalogue scenarios shipped with kafka-mc, by the article case they illustrate."""
    scenarios = (load_scenario(path) for path in documented_scenarios("catalogue"))
    return {scenario.article: scenario for scenario in scenarios if scenario.article}


def compare(cases: Iterable[str] | None = None) -> list[Comparison]:
    """Every claim (or those of `cases`) against the model: the replayed story, and the closing
    setting checked."""
    scenarios = catalogue_scenarios()
    comparisons = []
    for claim in CLAIMS:
        if cases is not None and claim.case not in cases:
            continue
        scenario = scenarios.get(claim.case)
        if scenario is None:
            comparisons.append(Comparison(claim, None, None, None))
            continue
        comparison = Comparison(claim, scenario, replay(scenario), None)
        closing = comparison.closing_config()
        if closing is not None:
            cell = check_cell(closing)
            closed = cell.shortest(ACKED) is None if cell.decided else None
            comparison = dataclasses.replace(comparison, closed=closed)
        comparisons.append(comparison)
    return comparisons
