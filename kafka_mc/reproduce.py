"""The main job: check and replay the documented cases under both protocols and write the reports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tabulate import tabulate

from kafka_mc.checker import CheckResult, check
from kafka_mc.checker.graph import Recoverability, check_recoverability, state_graph
from kafka_mc.checker.scenario import Replay, Scenario, documented_scenarios, load_scenario, replay
from kafka_mc.counterexamples.reports import write_files, write_reports
from kafka_mc.counterexamples.summary import config_text, invariant_verdicts


@dataclass(frozen=True)
class CaseOutcome:
    scenario: Scenario
    replay: Replay
    result: CheckResult
    recoverability: Recoverability
    reports: tuple[Path, ...]

    @property
    def problems(self) -> list[str]:
        """Where the model disagrees with what the scenario documents."""
        found = list(self.replay.mismatches)
        expected = self.scenario.exhaustive_violations
        if expected is not None and set(expected) != set(self.result.violated):
            found.append(f"exhaustive check violates {sorted(self.result.violated)}, "
                         f"the scenario documents {sorted(expected)}")
        if not self.result.complete:
            found.append(f"exhaustive check incomplete: {self.result.stopped_because}")
        found += [f"witness {name} not reached" for name in self.result.unreached_witnesses]
        return found


def reproduce_case(path: Path, out_dir: Path) -> CaseOutcome:
    scenario = load_scenario(path)
    replayed = replay(scenario)
    stem = path.stem
    breaks = replayed.first_breaks
    reports = write_reports(scenario.trace, next(iter(breaks), None), out_dir, stem,
                            f"{scenario.title} (documented steps)")
    result = check(scenario.config, keep_going=True)
    for violation in result.violations:
        reports += write_reports(violation.trace, violation.invariant, out_dir,
                                 f"{stem}.shortest-{violation.invariant}",
                                 f"{scenario.title}: shortest violation of {violation.invariant}")
    recoverability = check_recoverability(scenario.config, state_graph(scenario.config))
    if recoverability.example is not None:
        reports += write_reports(recoverability.example, None, out_dir, f"{stem}.unrecoverable",
                                 f"{scenario.title}: a shortest path to a state that can never recover")
    return CaseOutcome(scenario, replayed, result, recoverability, tuple(reports))


def reproduce(out_dir: Path, on_case: Callable[[CaseOutcome], None] | None = None) -> list[CaseOutcome]:
    outcomes = []
    for path in documented_scenarios():
        outcome = reproduce_case(path, out_dir)
        outcomes.append(outcome)
        if on_case:
            on_case(outcome)
    write_files(out_dir, {"README.md": index_markdown(outcomes)})
    return outcomes


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


def index_markdown(outcomes: list[CaseOutcome]) -> str:
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
    return "\n".join(lines)
