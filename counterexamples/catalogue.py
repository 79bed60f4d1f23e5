"""The failure catalogue as text: the matrix table, its JSON, and the Markdown report that
compares the model with the table of ways to lose data and the partition scenarios of
Vanlightly's fault-tolerance article (README "Sources")."""

from __future__ import annotations

from tabulate import tabulate

from kafka_mc.checker.article import Comparison
from kafka_mc.checker.matrix import DATA_PROPERTIES, Cell

SETTINGS = ("protocol", "acks", "min.isr", "unclean", "flush")


def _settings(cell: Cell) -> list:
    c = cell.config
    return [c.protocol, c.acks, c.min_isr, "yes" if c.unclean else "no", "yes" if c.flush else "no"]


def _mark(cell: Cell, invariant: str, link: str | None = None) -> str:
    length = cell.shortest(invariant)
    if length is None:
        return "holds" if cell.decided else "?"
    text = f"✗ {length}"
    return f"[{text}]({link})" if link else text


def matrix_table(cells: list[Cell], tablefmt: str = "simple", links: bool = False) -> str:
    """One row per cell: its settings, then each data property (✗ and the shortest length, or holds)."""
    rows = [
        _settings(cell)
        + [_mark(cell, name, f"cells/{cell.name}/{name}.md" if links else None) for name in DATA_PROPERTIES]
        + [cell.result.stats.distinct_states]
        for cell in cells
    ]
    return tabulate(rows, headers=[*SETTINGS, *DATA_PROPERTIES, "states"], tablefmt=tablefmt)


def matrix_json(cells: list[Cell]) -> list[dict]:
    return [
        {
            "config": cell.config.to_dict(),
            "decided": cell.decided,
            "distinct_states": cell.result.stats.distinct_states,
            "verdicts": {name: {"violated": cell.shortest(name) is not None, "shortest": cell.shortest(name)}
                         for name in DATA_PROPERTIES},
        }
        for cell in cells
    ]


def _yes_no(value: bool | None, unknown: str = "-") -> str:
    return unknown if value is None else ("yes" if value else "no")


def comparison_table(comparisons: list[Comparison], tablefmt: str = "github") -> str:
    rows = []
    for comparison in comparisons:
        claim = comparison.claim
        scenario = comparison.scenario
        broken = ", ".join(f"{name} at step {step}" for name, step in comparison.replayed.first_breaks.items()) \
            if comparison.replayed else "-"
        closing = ", ".join(f"{key}={value}" for key, value in claim.closed_by.items()) or "-"
        agrees = {True: "agrees", False: "**disagrees**", None: "no catalogue scenario"}[comparison.agrees]
        rows.append([
            claim.case,
            claim.says,
            _yes_no(claim.loses_acked),
            f"`{scenario.path.name}`" if scenario else "-",
            broken or "nothing",
            closing,
            _yes_no(comparison.closed, "-" if not claim.closed_by else "?"),
            agrees,
        ])
    return tabulate(rows, headers=["case", "the article says", "acked loss (article)", "scenario",
                                   "the replay breaks", "closed by", "closed in the model", "verdict"],
                    tablefmt=tablefmt)


def catalogue_markdown(cells: list[Cell], comparisons: list[Comparison], bounds: str) -> str:
    """The generated report: the matrix, then the comparison with the article, row by row."""
    disagreements = [c for c in comparisons if c.agrees is False]
    lines = [
        "# Failure catalogue",
        "",
        f"Every cell was explored breadth-first with {bounds}, with symmetry, to the last reachable",
        "state or until every property was violated (`states` counts the states explored). `✗ N`: the",
        "property is violated, the shortest counterexample has N steps (each links to its report);",
        "`holds`: no reachable state violates it; `?`: the budget ran out first.",
        "",
        matrix_table(cells, "github", links=True),
        "",
        "## The model against Vanlightly's fault-tolerance article",
        "",
        "Each case of the article's table of ways to lose acknowledged writes (rows 1-5), of its network",
        "partition scenarios (1-8) and the performance article's example is replayed from its catalogue scenario; the",
        "setting the article says closes the hole is checked exhaustively on the scenario's configuration.",
        "",
        comparison_table(comparisons),
        "",
    ]
    if disagreements:
        lines += ["### Where the model disagrees, and why", ""]
        for comparison in disagreements:
            assert comparison.scenario is not None  # a disagreement is about a replayed scenario
            description = " ".join(comparison.scenario.description.split())
            lines += [f"- **{comparison.claim.case}**: {description}", ""]
    return "\n".join(lines)
