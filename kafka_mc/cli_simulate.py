"""`kafka-mc simulate`: random walks through the model, reported as `check` reports.

Registered on the app by `kafka_mc.cli` (`app.command("simulate")(simulate_command)`); the
options and helpers it shares with `check` are `kafka_mc.cli_common`'s.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeRemainingColumn

from kafka_mc import exitcodes
from kafka_mc.checker.simulate import SimulationProgress, SimulationResult, simulate
from kafka_mc.cli_common import (
    AcksOption,
    CrashesOption,
    DeprecatedNetworkFailuresOption,
    ElectionsOption,
    Exit,
    MessagesOption,
    MinIsrOption,
    NetworkFailuresOption,
    NoFlushOption,
    DiskFailuresOption,
    DeprecatedReplacedDisksOption,
    DelaysOption,
    MetadataLagOption,
    OutputFormat,
    PluginOption,
    ProtocolOption,
    ReplicasOption,
    UncleanOption,
    load_plugins,
    number,
    out_dir,
    print_result,
    replication_config,
    write_violation_reports,
)
from kafka_mc.counterexamples.views import result_view

DEFAULT_RUNS, DEFAULT_DEPTH = 10_000, 100


class SimulationReporter:
    """Progress on stderr: a progress bar on a terminal, plain lines (at most one a second) otherwise."""

    def __init__(self, total_runs: int, enabled: bool = True, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.enabled = enabled
        self.total_runs = total_runs
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._last_line = 0.0

    @staticmethod
    def describe(p: SimulationProgress) -> str:
        return f"run {p.runs}/{p.total_runs}: {p.steps:,} steps, {p.steps_per_second:,.0f} steps/s"

    def __call__(self, p: SimulationProgress) -> None:
        if not self.enabled:
            return
        if self.console.is_terminal:
            if self._bar is None:
                self._bar = Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(),
                                     TextColumn("{task.description}"), TimeRemainingColumn(),
                                     console=self.console, transient=True)
                self._bar.start()
                self._task = self._bar.add_task("", total=p.total_runs)
            assert self._task is not None  # added with the bar
            self._bar.update(self._task, completed=p.runs,
                             description=f"runs, {p.steps:,} steps, {p.steps_per_second:,.0f} steps/s")
        elif time.monotonic() - self._last_line >= 1.0 or p.runs == p.total_runs:
            self._last_line = time.monotonic()
            self.console.print(self.describe(p), highlight=False, soft_wrap=True)

    def note(self, text: str) -> None:
        if self.enabled:
            self.console.print(text, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def simulation_code(result: SimulationResult) -> int:
    """12 for a violation; 75 when the time budget cut the runs short; 0 when every run was made
    without one (which proves nothing beyond those runs)."""
    if result.violations:
        return exitcodes.VIOLATION
    if not result.all_runs_done:
        return exitcodes.INCOMPLETE
    return exitcodes.OK


def simulation_view(result: SimulationResult, written: list[Path], view: dict | None = None) -> dict:
    """`check`'s JSON summary (or the given `view` of the result) with what a simulation adds."""
    view = result_view(result) if view is None else view
    view.update({
        "seed": result.seed,
        "runs": result.runs,
        "runs_requested": result.runs_requested,
        "depth_bound": result.depth_bound,
        "steps": result.steps,
        "steps_per_second": round(result.steps_per_second, 1),
        "failing_run": result.failing_run,
        "reproduce": f"--seed {result.seed}",
        "reports": [str(path) for path in written],
    })
    return view


def simulate_command(
    ctx: typer.Context,
    protocol: ProtocolOption = "hw",
    plugin: PluginOption = None,
    replicas: ReplicasOption = "2",
    messages: MessagesOption = "2",
    crashes: CrashesOption = "2",
    elections: ElectionsOption = "1",
    acks: AcksOption = "all",
    min_isr: MinIsrOption = "1",
    unclean: UncleanOption = False,
    no_flush: NoFlushOption = False,
    disk_failures: DiskFailuresOption = "0",
    replaced_disks: DeprecatedReplacedDisksOption = False,
    delays: DelaysOption = "0",
    metadata_lag: MetadataLagOption = False,
    network_failures: NetworkFailuresOption = "0",
    partitions: DeprecatedNetworkFailuresOption = None,
    runs: str = typer.Option(str(DEFAULT_RUNS), metavar="N", help="Random runs to make."),
    depth: str = typer.Option(str(DEFAULT_DEPTH), metavar="K", help="Steps per run, at most."),
    seed: Optional[str] = typer.Option(None, metavar="S",
                                       help="Seed of the random runs (default: a random one, printed)."),
    max_seconds: Optional[str] = typer.Option(None, metavar="SECONDS",
                                              help="Stop after this many seconds (exit 75 if runs are left)."),
    keep_going: bool = typer.Option(False, "--keep-going", "--continue",
                                    help="Make every run; report the shortest violation found of each invariant."),
    output_format: str = typer.Option("text", "--format", metavar="text|json",
                                      help="text, or json: one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, help="Write a report set for every violation into this directory."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress on stderr."),
) -> None:
    """Random walks through the model (as TLC's -simulate): far beyond what `check` can explore,
    never a proof. A violation is reported as `check` reports one; the same seed gives the same runs."""
    load_plugins(plugin)
    formats = {f.value: f for f in OutputFormat}
    if output_format not in formats:
        raise Exit(exitcodes.BAD_INPUT, f"--format must be one of {', '.join(formats)}, not {output_format!r}")
    run_count = number("--runs", runs, positive=True)
    depth_bound = number("--depth", depth, positive=True)
    budget = number("--max-seconds", max_seconds, float, positive=True)
    seed_value = chosen_seed(seed)
    out = out_dir(out)
    config, _ = replication_config(ctx, protocol=protocol, replicas=replicas, messages=messages, crashes=crashes,
                                   elections=elections, acks=acks, min_isr=min_isr, unclean=unclean,
                                   no_flush=no_flush, network_failures=network_failures, partitions=partitions,
                                   disk_failures=disk_failures, replaced_disks=replaced_disks, delays=delays,
                                   metadata_lag=metadata_lag, simulation=True)
    result = with_progress(lambda reporter: simulate(config, runs=run_count, depth=depth_bound, seed=seed_value,
                                                     keep_going=keep_going, max_seconds=budget, progress=reporter),
                           run_count, depth_bound, seed_value, quiet)
    written = write_violation_reports(result, out) if out else []
    if formats[output_format] is OutputFormat.json:
        print(json.dumps(simulation_view(result, written), indent=2))
    else:
        print_result(result, (), OutputFormat.text, written)
        print(simulation_text(result))
    raise typer.Exit(simulation_code(result))


def with_progress(run: Callable[[SimulationReporter], SimulationResult], run_count: int, depth_bound: int,
                  seed: int, quiet: bool) -> SimulationResult:
    """`run(reporter)`, with the runs announced and their progress shown on stderr unless `quiet`."""
    reporter = SimulationReporter(run_count, enabled=not quiet)
    reporter.note(f"simulating {run_count} runs of up to {depth_bound} steps with seed {seed}")
    try:
        return run(reporter)
    finally:
        reporter.close()


def simulation_text(result: SimulationResult) -> str:
    """What a simulation adds to `check`'s text: runs, steps, speed and how to reproduce it."""
    lines = [f"Simulated {result.runs:,} of {result.runs_requested:,} runs of up to {result.depth_bound} steps "
             f"with seed {result.seed}: {result.steps:,} steps ({result.stats.states_generated:,} states with the "
             f"runs' initial states), {result.steps_per_second:,.0f} steps/s."]
    if result.violations:
        lines.append(f"Use --seed {result.seed} to reproduce (run {result.failing_run:,} has the first violation).")
    return "\n".join(lines)


def chosen_seed(seed: Optional[str]) -> int:
    """The --seed given, or a random one; Exit naming a bad value."""
    chosen = number("--seed", seed)
    return random.SystemRandom().randrange(2**32) if chosen is None else chosen
