"""The main job: check and replay the documented cases under both protocols and write the reports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tabulate import tabulate

from kafka_mc.control.replication import ReplicationSystem
from kafka_mc.checker import CheckResult, check
from kafka_mc.checker.graph import Recoverability, check_recoverability, state_graph
from kafka_mc.checker.scenario import Replay, Scenario, documented_scenarios, load_scenario, replay
from kafka_mc.counterexamples.files import write_files
from kafka_mc.counterexamples.reports import write_reports
from kafka_mc.counterexamples.summary import config_text, invariant_verdicts


FINDINGS = "findings"


@dataclass(frozen=True)
class Replayed:
    """A scenario replayed, with the reports of its steps."""

    scenario: Scenario
    replay: Replay
    reports: tuple[Path, ...]

    @property
    def problems(self) -> list[str]:
        """Where the model disagrees with what the scenario documents."""
        return list(self.replay.mismatches)


def replay_with_reports(path: Path, out_dir: Path, title: str) -> Replayed:
    scenario = load_scenario(path)
    replayed = replay(scenario)
    reports = write_reports(scenario.trace, next(iter(replayed.first_breaks), None), out_dir, path.stem,
                            title.format(title=scenario.title))
    return Replayed(scenario, replayed, tuple(reports))


@dataclass(frozen=True)
class CaseOutcome(Replayed):
    """A documented case: its replay, and every reachable state of its configuration checked."""

    result: CheckResult
    recoverability: Recoverability

    @property
    def problems(self) -> list[str]:
        found = super().problems
        expected = self.scenario.exhaustive_violations
        if expected is not None and set(expected) != set(self.result.violated):
            found.append(f"exhaustive check violates {sorted(self.result.violated)}, "
                         f"the scenario documents {sorted(expected)}")
        if not self.result.complete:
            found.append(f"exhaustive check incomplete: {self.result.stopped_because}")
        found += [f"witness {name} not reached" for name in self.result.unreached_witnesses]
        return found


def reproduce_case(path: Path, out_dir: Path) -> CaseOutcome:
    replayed = replay_with_reports(path, out_dir, "{title} (documented steps)")
    scenario, stem, reports = replayed.scenario, path.stem, list(replayed.reports)
    result = check(scenario.config, keep_going=True)
    for violation in result.violations:
        assert isinstance(violation.trace.model, ReplicationSystem)  # a replication model's check
        reports += write_reports(violation.trace, violation.invariant, out_dir,
                                 f"{stem}.shortest-{violation.invariant}",
                                 f"{scenario.title}: shortest violation of {violation.invariant}")
    recoverability = check_recoverability(scenario.config, state_graph(scenario.config))
    if recoverability.example is not None:
        assert isinstance(recoverability.example.model, ReplicationSystem)  # the replication model's graph
        reports += write_reports(recoverability.example, None, out_dir, f"{stem}.unrecoverable",
                                 f"{scenario.title}: a shortest path to a state that can never recover")
    return CaseOutcome(scenario, replayed.replay, tuple(reports), result, recoverability)


def reproduce(out_dir: Path, on_case: Callable[[Replayed], None] | None = None
              ) -> tuple[list[CaseOutcome], list[Replayed]]:
    """The documented cases (replayed and checked) and the findings beyond them (replayed)."""
    cases, findings = [], []
    for path in documented_scenarios():
        cases.append(reproduce_case(path, out_dir))
        if on_case:
            on_case(cases[-1])
    for path in documented_scenarios(FINDINGS):
        findings.append(replay_with_reports(path, out_dir / FINDINGS, "{title}"))
        if on_case:
            on_case(findings[-1])
    write_files(out_dir, {"README.md": index_markdown(cases, findings)})
    return cases, findings


def summary_rows(outcomes: list[CaseOutcome]) -> list[tuple]:
    rows = []
    for outcome in outcomes:
        verdicts = invariant_verdicts(outcome.result)
        breaks = ", ".join(f"{name} at step {n}" for name, n in outcome.replay.first_breaks.items()) or "none"
        rows.append((
            outcome.scenario.path.stem,
            outcome.scenario.config.protocol,
            "yes" if not outcome.replay.mismatches else "NO",
            breaks,
            outcome.result.stats.distinct_states,
            verdicts["NoCommittedDataLoss"],
            verdicts["NoLogDivergence"],
            "holds" if outcome.recoverability.holds else
            f"fails ({outcome.recoverability.unrecoverable} states)",
        ))
    return rows


SUMMARY_HEADERS = ("case", "protocol", "figures reproduced", "replay breaks", "distinct states",
                   "NoCommittedDataLoss", "NoLogDivergence", "recoverability")


def index_markdown(outcomes: list[CaseOutcome], findings: list[Replayed]) -> str:
    lines = ["# Documented cases, reproduced by `kafka-mc reproduce`", "",
             "Generated; do not edit. Each case replays the documented steps, then checks every "
             "reachable state of the same configuration.", "",
             tabulate(summary_rows(outcomes), headers=SUMMARY_HEADERS, tablefmt="github"), ""]
    for outcome in outcomes:
        scenario = outcome.scenario
        lines += [f"## {scenario.title}", "", f"Source: {scenario.source}. Configuration: "
                  f"`{config_text(scenario.config)}`.", "", scenario.description.strip(), "", "Reports:", ""]
        lines += [f"- [{path.name}]({path.name})" for path in outcome.reports]
        lines.append("")
    lines += ["# Findings beyond the documents", "",
              "Replayed step sequences that the exhaustive checks found (see the project README).", ""]
    for finding in findings:
        scenario = finding.scenario
        breaks = ", ".join(f"{n} at step {i}" for n, i in finding.replay.first_breaks.items()) or "none"
        lines += [f"## {scenario.title}", "", f"Source: {scenario.source}. Configuration: "
                  f"`{config_text(scenario.config)}`. Invariants broken: {breaks}.", "",
                  scenario.description.strip(), "", "Reports:", ""]
        lines += [f"- [{path.name}]({FINDINGS}/{path.name})" for path in finding.reports]
        lines.append("")
    return "\n".join(lines)
