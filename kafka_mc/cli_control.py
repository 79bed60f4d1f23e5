"""`kafka-mc control MODEL`: check a control-plane model (the cluster internals article's controller,
partition-fsm and rebalance, README "Sources"; the KRaft controller, kraft) with the breadth-first engine (or the same search
on Spark, `--engine spark`), and its goal on the state graph; or, with `--engine simulate`, walk it
at random as `kafka-mc simulate` walks the replication model.

Registered on the app by `kafka_mc.cli`. Every option sets a field of the model's configuration;
one the model does not have is refused, naming the options it has. Exit codes are `check`'s: 0
every property holds and every witness is reached, 12 a violation (or the goal fails), 13 a
witness unreached, 75 a budget stopped the run, 151 a bad option value.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import typer

from kafka_mc import exitcodes
from kafka_mc.checker import Budget, check
from kafka_mc.checker.graph import GraphTooLarge, check_goal, system_graph
from kafka_mc.checker.simulate import simulate
from kafka_mc.checker.symbolic.bmc import bounded_check
from kafka_mc.checker.symbolic.registry import z3_encoded_models
from kafka_mc.cli_common import (
    Exit, OutputFormat, config_errors, flag_of, number, out_dir, print_result, refuse_unusable, verdict_code,
    write_violation_reports,
)
from kafka_mc.cli_simulate import chosen_seed, simulation_code, simulation_text, simulation_view, with_progress
from kafka_mc.cli_spark import spark_system_search
from kafka_mc.control import MODELS
from kafka_mc.control.kraft import RELEASES as KRAFT_RELEASES
from kafka_mc.counterexamples.views import result_view
from kafka_mc.model.interface import ALWAYS
from kafka_mc.progress import ProgressReporter

DEFAULT_MODEL_HELP = ", ".join(MODELS)


def _defaults(field: str) -> str:
    """Each model's default for a setting, for the help: `controller 3, rebalance 3`."""
    return ", ".join(f"{name} {config_class.__dataclass_fields__[field].default}"
                     for name, (_, config_class) in MODELS.items() if field in config_class.__dataclass_fields__)
ENGINES = ("bfs", "spark", "simulate", "z3")
ENGINE_FLAGS = {  # the engine options each engine takes
    "bfs": ("--max-states", "--no-goal"),
    "spark": ("--max-states", "--no-goal", "--spark-master", "--spark-partitions"),
    "simulate": ("--runs", "--depth", "--seed"),
    "z3": ("--depth",),
}
DEFAULT_Z3_DEPTH = 12
DEFAULT_RUNS, DEFAULT_DEPTH = 1000, 50


def control_command(
    model: str = typer.Argument(..., metavar="MODEL", help=f"The model: {DEFAULT_MODEL_HELP}."),
    brokers: Optional[str] = typer.Option(None, metavar="N", help=f"Brokers (default: {_defaults('brokers')})."),
    expirations: Optional[str] = typer.Option(None, metavar="N", help=f"ZooKeeper session expiries, at most ({_defaults('expirations')})."),
    no_fencing: bool = typer.Option(False, "--no-fencing",
                                    help="controller: brokers obey requests of older controller epochs (broken)."),
    non_atomic_epoch: bool = typer.Option(False, "--non-atomic-epoch",
                                          help="controller: read and write /controller_epoch in two steps (broken)."),
    partitions: Optional[str] = typer.Option(None, metavar="N", help=f"Partitions of the topic ({_defaults('partitions')})."),
    replication_factor: Optional[str] = typer.Option(None, "--replication-factor", metavar="N",
                                                     help=f"Replicas per partition ({_defaults('replication_factor')})."),
    failures: Optional[str] = typer.Option(None, metavar="N", help=f"Broker failures, at most ({_defaults('failures')})."),
    creations: Optional[str] = typer.Option(None, metavar="N", help=f"Topic creations, at most ({_defaults('creations')})."),
    unclean: bool = typer.Option(False, "--unclean", help="partition-fsm: unclean leader election."),
    delete_online: bool = typer.Option(False, "--delete-online",
                                       help="partition-fsm: deletion skips OfflinePartition (broken)."),
    fencings: Optional[str] = typer.Option(None, metavar="N",
                                           help=f"Session timeouts of a live broker, at most ({_defaults('fencings')})."),
    shutdowns: Optional[str] = typer.Option(None, metavar="N",
                                            help=f"Controlled shutdowns, at most ({_defaults('shutdowns')})."),
    early_registrations: Optional[str] = typer.Option(
        None, "--early-registrations", metavar="N",
        help=f"kraft: restarts registered before the crashed incarnation's fence, at most "
             f"({_defaults('early_registrations')})."),
    release: Optional[str] = typer.Option(None, metavar="VERSION",
                                          help=f"kraft: the Kafka release, {', '.join(KRAFT_RELEASES)} "
                                               f"({_defaults('release')})."),
    imbalance_percentage: Optional[str] = typer.Option(None, "--imbalance-percentage", metavar="PCT",
                                                       help="leader.imbalance.per.broker.percentage "
                                                            f"({_defaults('imbalance_percentage')})."),
    output_format: str = typer.Option("text", "--format", metavar="text|json", help="text, or json on stdout."),
    out: Optional[Path] = typer.Option(None, help="Write a report set for every violation into this directory."),
    keep_going: bool = typer.Option(False, "--keep-going", "--continue",
                                    help="Explore everything; report the shortest violation of each invariant."),
    max_states: Optional[str] = typer.Option(None, metavar="N", help="Stop after this many distinct states (run incomplete)."),
    max_seconds: Optional[str] = typer.Option(None, metavar="SECONDS", help="Stop after this many seconds (run incomplete)."),
    no_goal: bool = typer.Option(False, "--no-goal", help="Skip the goal (AG EF) check on the state graph."),
    engine: str = typer.Option("bfs", "--engine", metavar="bfs|spark|simulate|z3",
                               help="bfs: every reachable state; spark: the same on a Spark cluster; simulate: "
                                    "random walks (never a proof); z3: bounded model checking to --depth "
                                    "(controller, partition-fsm)."),
    spark_master: Optional[str] = typer.Option(None, "--spark-master", metavar="URL",
                                               help="With --engine spark: the Spark master (default local[*])."),
    spark_partitions: Optional[str] = typer.Option(None, "--spark-partitions", metavar="N",
                                                   help="With --engine spark: partitions of the state space."),
    runs: Optional[str] = typer.Option(None, metavar="N", help=f"With --engine simulate: runs (default {DEFAULT_RUNS})."),
    depth: Optional[str] = typer.Option(None, metavar="K",
                                        help=f"With --engine simulate: steps per run, at most (default {DEFAULT_DEPTH}); "
                                             f"with --engine z3: the depth searched (default {DEFAULT_Z3_DEPTH})."),
    seed: Optional[str] = typer.Option(None, metavar="S", help="With --engine simulate: the seed (default random)."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress on stderr."),
) -> None:
    """Check a control-plane model: every reachable state, its properties and its goal."""
    if model not in MODELS:
        raise Exit(exitcodes.BAD_INPUT, f"model {model!r} is unknown; allowed: {DEFAULT_MODEL_HELP}")
    if output_format not in {f.value for f in OutputFormat}:
        raise Exit(exitcodes.BAD_INPUT, f"--format {output_format!r} is not allowed; allowed: text, json")
    if engine not in ENGINES:
        raise Exit(exitcodes.BAD_INPUT, f"--engine {engine!r} is not allowed; allowed: {', '.join(ENGINES)}")
    given = {"--runs": runs is not None, "--depth": depth is not None, "--seed": seed is not None,
             "--spark-master": spark_master is not None, "--spark-partitions": spark_partitions is not None,
             "--max-states": max_states is not None, "--no-goal": no_goal}
    refuse_unusable(f"--engine {engine}", ENGINE_FLAGS[engine], given, ENGINE_FLAGS)
    system_class, config_class = MODELS[model]
    numbers = {"brokers": brokers, "expirations": expirations, "partitions": partitions,
             "replication_factor": replication_factor, "failures": failures, "creations": creations,
             "imbalance_percentage": imbalance_percentage, "fencings": fencings, "shutdowns": shutdowns,
             "early_registrations": early_registrations}
    settings: dict[str, object] = {name: number(flag_of(name), text) for name, text in numbers.items()
                                   if text is not None}
    if release is not None:
        settings["release"] = release
    switches = {"fence_epochs": (no_fencing, False), "atomic_epoch": (non_atomic_epoch, False),
                "unclean": (unclean, True), "delete_online": (delete_online, True)}
    settings |= {name: value for name, (flag_given, value) in switches.items() if flag_given}
    fields = [field.name for field in dataclasses.fields(config_class)]
    for name in settings:
        if name not in fields:
            raise Exit(exitcodes.BAD_INPUT, f"{_switch_flag(name)}: not an option of the {model} model; its options: "
                                            + ", ".join(_switch_flag(field) for field in fields))
    budget = Budget(number("--max-states", max_states, positive=True),
                    number("--max-seconds", max_seconds, float, positive=True))
    out = out_dir(out)
    with config_errors():
        system = system_class(config_class(**settings))
    if engine == "z3":
        _bounded(system, model, depth, keep_going, budget.max_seconds, output_format == "json", out)
    if engine == "simulate":
        _simulate(system, runs, depth, seed, keep_going, budget.max_seconds, quiet, output_format == "json", out)
    search = None
    if engine == "spark":
        search = spark_system_search(spark_master, spark_partitions)
    run_system(system, keep_going=keep_going, budget=budget, goal=not no_goal, quiet=quiet,
               as_json=output_format == "json", out=out, search=search)


def run_system(system, *, keep_going: bool, budget, goal: bool, quiet: bool, as_json: bool,
               out: Optional[Path], search=None) -> None:
    """Explore every state of `system` (with `search`, by default `checker.bfs.check`), check
    its goal if asked, print and write the reports as `check` does, and exit with `check`'s code."""
    reporter = ProgressReporter(enabled=not quiet)
    try:
        result = (search or check)(system, keep_going=keep_going, budget=budget, progress=reporter)
    finally:
        reporter.close()
    goals = (_check_goal(system),) if goal else ()
    written = write_violation_reports(result, out) if out else []
    _print(system, result, goals, as_json, written)
    code = verdict_code(result)
    if code == exitcodes.OK and not all(decided.holds for decided in goals):
        code = exitcodes.VIOLATION
    raise typer.Exit(code)


def _simulate(system, runs, depth, seed, keep_going, max_seconds, quiet, as_json, out) -> None:
    """Random walks through the model, reported as `kafka-mc simulate` reports them; exits."""
    run_count = number("--runs", runs or str(DEFAULT_RUNS), positive=True)
    depth_bound = number("--depth", depth or str(DEFAULT_DEPTH), positive=True)
    seed_value = chosen_seed(seed)
    result = with_progress(lambda reporter: simulate(system, runs=run_count, depth=depth_bound, seed=seed_value,
                                                            keep_going=keep_going, max_seconds=max_seconds,
                                                            progress=reporter),
                           run_count, depth_bound, seed_value, quiet)
    written = write_violation_reports(result, out) if out else []
    if as_json:
        print(json.dumps(simulation_view(result, written, result_view(result, system.name)), indent=2))
    else:
        _print(system, result, (), False, written)
        print(simulation_text(result))
    raise typer.Exit(simulation_code(result))


def _bounded(system, model: str, depth: Optional[str], keep_going: bool, max_seconds: Optional[float],
             as_json: bool, out: Optional[Path]) -> None:
    """Bounded model checking with Z3 to `depth`, reported as `check --engine z3` reports; exits."""
    encoded = [name for name in MODELS if name in z3_encoded_models()]
    if model not in encoded:
        raise Exit(exitcodes.BAD_INPUT, f"--engine z3: the {model} model has no Z3 encoding; models with one: "
                                        + ", ".join(encoded))
    bound = number("--depth", depth if depth is not None else str(DEFAULT_Z3_DEPTH))
    if bound < 0:
        raise Exit(exitcodes.BAD_INPUT, f"--depth must be 0 or more, not {depth}")
    result = bounded_check(system, bound, keep_going=keep_going, max_seconds=max_seconds)
    _print(system, result, (), as_json, write_violation_reports(result, out) if out else [])
    raise typer.Exit(verdict_code(result))


def _switch_flag(field: str) -> str:
    """The flag that sets a configuration field."""
    return {"fence_epochs": "--no-fencing", "atomic_epoch": "--non-atomic-epoch"}.get(field, flag_of(field))


def _check_goal(system):
    try:
        return check_goal(system, system_graph(system))
    except GraphTooLarge as error:
        raise Exit(exitcodes.BAD_INPUT, f"the goal check needs the state graph: {error}; or pass --no-goal") \
            from None


def _print(system, result, goals: tuple, as_json: bool, written: list[Path]) -> None:
    print_result(result, goals, OutputFormat.json if as_json else OutputFormat.text, written, system.name,
                 tuple(p.name for p in system.properties if p.kind == ALWAYS))
