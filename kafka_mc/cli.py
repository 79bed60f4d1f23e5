"""`kafka-mc`: a thin shell that parses options, calls the library, renders, and sets the exit code."""

from __future__ import annotations

import dataclasses
import json
import sys
from enum import Enum
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import typer
from tabulate import tabulate

from kafka_mc import cli_spark, exitcodes
from kafka_mc.checker import Budget, CheckResult, ReplayError, check
from kafka_mc.checker.article import compare as compare_with_article
from kafka_mc.checker.graph import GraphTooLarge, check_leader_again, check_recoverability, state_graph
from kafka_mc.checker.matrix import Axes, run_matrix, run_matrix_on_spark
from kafka_mc.checker.scenario import ScenarioError, load_scenario, replay as replay_scenario
from kafka_mc.checker.symbolic.bmc import EncodingMismatch, bounded_check
from kafka_mc.checker.symbolic.transitions import EncodingError
from kafka_mc.checker.tla_twins import twin_of
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
    PropertyOption,
    ProtocolOption,
    ReplicasOption,
    UncleanOption,
    config_errors,
    counts,
    flag_of,
    load_plugins,
    load_properties,
    network_failure_bound,
    number,
    out_dir,
    out_file,
    print_result,
    refuse_unusable,
    replication_config,
    verdict_code,
    write_violation_reports,
)
from kafka_mc.cli_control import control_command, run_system
from kafka_mc.cli_explore import explore_command, serve
from kafka_mc.explorer.app import Explorer
from kafka_mc.explorer.models import model_settings
from kafka_mc.explorer.paths import trace_path
from kafka_mc.cli_prove import prove_command
from kafka_mc.cli_simulate import simulate_command
from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.failover import FailoverConfig, FailoverModel
from kafka_mc.control.replication import ReplicationSystem, model_of
from kafka_mc.counterexamples import catalogue
from kafka_mc.counterexamples.dot import dot_text
from kafka_mc.counterexamples.files import OutputError, ReportConflict, write_files
from kafka_mc.counterexamples.itf import SettingError
from kafka_mc.counterexamples.reports import read_itf_scenario, write_reports
from kafka_mc.counterexamples.summary import replay_text
from kafka_mc.model import PROTOCOLS, Config
from kafka_mc.model.interface import Model
from kafka_mc.model.values import plain_values
from kafka_mc.progress import ProgressReporter
from kafka_mc.properties import INVARIANTS, PROPERTIES
from kafka_mc.properties.lowering import NotLowered
from kafka_mc.properties.user import UserPropertyError
from kafka_mc.reproduce import SUMMARY_HEADERS, reproduce, summary_rows

app = typer.Typer(add_completion=False, pretty_exceptions_enable=False, no_args_is_help=True,
                  help="Model checking for Apache Kafka's replication protocol.")


class Engine(str, Enum):
    kernel = "kernel"
    python = "python"
    bfs = "bfs"  # the explicit engine's name before the kernel became the default: `python`
    z3 = "z3"
    spark = "spark"
    gpu = "gpu"


class MatrixEngine(str, Enum):
    kernel = "kernel"
    python = "python"
    bfs = "bfs"
    spark = "spark"


# The options of `check` that only some engines take, by engine (every engine takes the model's options,
# --format, --out, --keep-going, --max-seconds and --quiet); any other option given is refused by name.
_EXPLICIT = frozenset({"--workers", "--symmetry", "--max-states", "--dump-dot", "--recoverability", "--write-tla",
                       "--coverage", "--explore"})
CHECK_ENGINE_FLAGS: dict[Engine, frozenset[str]] = {
    Engine.kernel: _EXPLICIT | {"--property"},  # a user's property lowered (properties/lowering.py)
    Engine.python: _EXPLICIT | {"--property"},  # and its former name, bfs
    Engine.z3: frozenset({"--depth", "--write-tla", "--property"}),
    Engine.spark: frozenset({"--symmetry", "--max-states", "--write-tla", "--property", *cli_spark.SPARK_FLAGS}),
    Engine.gpu: _EXPLICIT - {"--workers", "--symmetry"} | {"--property"},  # checker/gpu: its threads, no symmetry
}
# with --controller-failures: the control-plane search over the replication model with failover
FAILOVER_FLAGS = frozenset({"--max-states", "--recoverability"})
SPARK_SEARCH_FLAGS = frozenset({"--spark-master", "--spark-partitions"})  # with --engine spark too
# with --epoch-bumps: the replication model with the controller's epoch bumps (`control.epoch_bumps`)
EPOCH_BUMP_FLAGS = frozenset({"--max-states", "--property", "--coverage", "--write-tla"})
KERNEL_EPOCH_BUMP_FLAGS = frozenset({"--symmetry", "--workers"})  # the kernel's symmetry and threads
Z3_EPOCH_BUMP_FLAGS = frozenset({"--depth"})
SPARK_EPOCH_BUMP_FLAGS = frozenset({"--symmetry", *cli_spark.SPARK_FLAGS})  # the executors run the kernel's bumps
DEFAULT_DEPTH = 10


@app.command("check")
def check_command(
    ctx: typer.Context,
    protocol: ProtocolOption = "hw",
    plugin: PluginOption = None,
    user_properties: PropertyOption = None,
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
    controller_failures: str = typer.Option("0", "--controller-failures", metavar="N",
                                            help="Failures of the controller itself, at most (another broker takes "
                                                 "over; the python and spark engines only)."),
    epoch_bumps: bool = typer.Option(False, "--epoch-bumps",
                                     help="The controller bumps the leader epoch when it removes a dead follower "
                                          "from the ISR, as Kafka's ZooKeeper controller does (the kernel, python "
                                          "and z3 engines, and --write-tla)."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format",
                                               help="text, or json: one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, help="Write a report set for every violation into this directory."),
    keep_going: bool = typer.Option(False, "--keep-going", "--continue",
                                    help="Explore everything; report the shortest violation of each invariant."),
    workers: str = typer.Option("1", metavar="N", help="Worker processes sharing the exploration (same results)."),
    symmetry: bool = typer.Option(False, "--symmetry",
                                  help="Count states equal up to renaming replicas once (same verdicts, concrete traces)."),
    max_states: Optional[str] = typer.Option(None, metavar="N", help="Stop after this many distinct states (run incomplete)."),
    max_seconds: Optional[str] = typer.Option(None, metavar="SECONDS", help="Stop after this many seconds (run incomplete)."),
    dump_dot: Optional[Path] = typer.Option(None, "--dump-dot", help="Write the state graph in TLC's DOT layout."),
    recoverability: bool = typer.Option(False, "--recoverability",
                                        help="Check that every reachable state can reach agreement again, and a "
                                             "live leader unless the elections bound is spent."),
    write_tla: Optional[Path] = typer.Option(None, "--write-tla", metavar="DIR",
                                             help="Also write the TLA+ twin and its TLC .cfg for this configuration."),
    explore_after: bool = typer.Option(False, "--explore",
                                       help="After the run, serve the explorer (kafka-mc explore) on its shortest "
                                            "counterexample, or on the initial state when there is none."),
    coverage: bool = typer.Option(False, "--coverage",
                                  help="Print each action's coverage, as TLC's -coverage: how often it was enabled "
                                       "and the new states it reached (always in --format json)."),
    engine: Engine = typer.Option(Engine.kernel, "--engine",
                                  help="kernel: explore every reachable state, compiled (numba); python (or bfs): "
                                       "the same in Python, the reference; z3: bounded model checking to --depth; "
                                       "spark: the exploration on a Spark cluster; gpu: the kernel's search on "
                                       "an NVIDIA GPU (numba-cuda)."),
    depth: Optional[str] = typer.Option(None, metavar="K",
                                        help=f"With --engine z3: search behaviours of up to K steps (default {DEFAULT_DEPTH})."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress on stderr."),
    spark_master: Optional[str] = typer.Option(None, "--spark-master", metavar="URL",
                                               help="With --engine spark: the Spark master (default local[*])."),
    spark_partitions: Optional[str] = typer.Option(None, "--spark-partitions", metavar="N",
                                                   help="With --engine spark: partitions of the state space."),
    # str, not Path: a URI's `//` must reach Hadoop as given (Path("hdfs://nn/x") is hdfs:/nn/x)
    checkpoint_dir: Optional[str] = typer.Option(None, "--checkpoint-dir", metavar="DIR",
                                                 help="With --engine spark: keep every BFS level here (a path, "
                                                      "or a URI: hdfs://, s3a://, file://)."),
    resume: Optional[str] = typer.Option(None, "--resume", metavar="DIR",
                                         help="With --engine spark: finish the interrupted run checkpointed in DIR."),
) -> None:
    """Explore every reachable state of one configuration (or, with --engine z3, every behaviour up
    to a depth) and check the properties."""
    load_plugins(plugin)
    config, flags = replication_config(ctx, protocol=protocol, replicas=replicas, messages=messages, crashes=crashes,
                                       elections=elections, acks=acks, min_isr=min_isr, unclean=unclean,
                                       no_flush=no_flush, network_failures=network_failures, partitions=partitions,
                                       disk_failures=disk_failures, replaced_disks=replaced_disks, delays=delays,
                                       metadata_lag=metadata_lag)
    budget = Budget(number("--max-states", max_states, positive=True),
                    number("--max-seconds", max_seconds, float, positive=True))
    worker_count = number("--workers", workers, positive=True)
    out = out_dir(out)
    dump_dot = out_file(dump_dot, "--dump-dot")
    failures = number("--controller-failures", controller_failures)
    given = {"--workers": worker_count != 1, "--symmetry": symmetry, "--max-states": budget.max_states is not None,
             "--property": bool(user_properties),
             "--dump-dot": dump_dot is not None, "--recoverability": recoverability,
             "--write-tla": write_tla is not None, "--depth": depth is not None, "--coverage": coverage,
             "--explore": explore_after,
             **dict.fromkeys(cli_spark.SPARK_FLAGS, False),
             **dict.fromkeys(cli_spark.spark_options_given(spark_master, spark_partitions, checkpoint_dir, resume), True)}
    if epoch_bumps:
        takes = EPOCH_BUMP_FLAGS | {Engine.kernel: KERNEL_EPOCH_BUMP_FLAGS, Engine.z3: Z3_EPOCH_BUMP_FLAGS,
                                    Engine.spark: SPARK_EPOCH_BUMP_FLAGS}.get(engine, set())
        refuse_unusable("--epoch-bumps", takes, {"--controller-failures": bool(failures), **given},
                        why=" (the controller's failure, the state graph and the python engine's workers and "
                            "symmetry do not model the epoch bump)")
    if failures:
        takes = FAILOVER_FLAGS | (SPARK_SEARCH_FLAGS if engine is Engine.spark else set())
        refuse_unusable("--controller-failures", takes, {"--engine z3": engine is Engine.z3, **given},
                        why=" (the kernel, Z3, the TLA+ twin and Spark's checkpoints do not model the "
                            "controller's failure)")
        search = cli_spark.spark_system_search(spark_master, spark_partitions) if engine is Engine.spark else None
        _check_with_controller_failures(
            config, failures, flags, keep_going=keep_going, budget=budget, quiet=quiet, output_format=output_format,
            out=out, recoverability=recoverability, search=search)
    if explore_after and output_format is OutputFormat.json:
        raise Exit(exitcodes.BAD_INPUT, "--explore: not with --format json (the explorer's URL is printed on stdout)")
    takes = CHECK_ENGINE_FLAGS[Engine.python if engine is Engine.bfs else engine]
    refuse_unusable(f"--engine {engine.value}", takes, given, {e.value: flags for e, flags in CHECK_ENGINE_FLAGS.items()})
    chosen = load_properties(user_properties) or PROPERTIES
    with config_errors(flags):
        bumped = EpochBumpSystem(config, chosen) if epoch_bumps else None
    if write_tla is not None:
        _write_tla(bumped or model_of(config, chosen), out_dir(write_tla, "--write-tla"))
    if engine is Engine.z3:
        searched = EpochBumpSystem(config, chosen if user_properties else INVARIANTS) if epoch_bumps else config
        result = _bounded_check(searched, depth, keep_going, budget.max_seconds, quiet,
                                chosen if user_properties and not epoch_bumps else None)
        written = write_violation_reports(result, out) if out else []
        print_result(result, (), output_format, written)
        raise typer.Exit(verdict_code(result))
    if engine is Engine.spark:
        cli_spark.run_spark(bumped or ReplicationSystem(config, chosen), keep_going=keep_going, symmetry=symmetry,
                            budget=budget, quiet=quiet,
                            spark_master=spark_master, spark_partitions=spark_partitions,
                            checkpoint_dir=checkpoint_dir, resume=resume, output_format=output_format, out=out)
    explore: Callable[..., CheckResult] = check
    if engine is Engine.kernel:
        from kafka_mc.checker.kernel import kernel_check  # deferred: numba (~0.5 s), for the kernel only

        explore = kernel_check
    if engine is Engine.gpu:
        from kafka_mc.checker.gpu import GpuUnavailable, gpu_check, require_gpu  # deferred: numba's CUDA target

        try:
            require_gpu()
        except GpuUnavailable as error:
            raise Exit(exitcodes.BAD_INPUT, str(error)) from None
        explore = gpu_check
    subject = (bumped, None) if epoch_bumps else (config, chosen)
    reporter = ProgressReporter(enabled=not quiet)
    try:
        result = explore(*subject, keep_going=keep_going, symmetry=symmetry, workers=worker_count,
                         budget=budget, progress=reporter)
    except UserPropertyError as error:
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error}") from None
    except NotLowered as error:
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error} for --engine {engine.value}; the python engine runs "
                                       "any Python (--engine python)") from None
    finally:
        reporter.close()
    goals: tuple = ()
    if dump_dot is not None or recoverability:
        try:
            graph = state_graph(config)
        except GraphTooLarge as error:
            raise Exit(exitcodes.BAD_INPUT, f"--dump-dot/--recoverability: {error}") from None
        if dump_dot is not None:
            print(f"wrote {write_files(dump_dot.parent, {dump_dot.name: dot_text(graph)})[0]}", file=sys.stderr)
        if recoverability:
            goals = (check_recoverability(config, graph), check_leader_again(config, graph))
    written = write_violation_reports(result, out) if out else []
    print_result(result, goals, output_format, written, coverage=coverage,
                 model=EpochBumpSystem.name if epoch_bumps else ReplicationSystem.name)
    code = verdict_code(result)
    if code == exitcodes.OK and not all(goal.holds for goal in goals):
        code = exitcodes.VIOLATION
    if explore_after:
        _explore(result)
    raise typer.Exit(code)


def _explore(result: CheckResult) -> None:
    """Serve the explorer on the run's shortest counterexample (the initial state without one),
    until Ctrl-C."""
    shortest = result.violations[0] if result.violations else None
    if shortest is None:
        serve(Explorer("replication", result.config.to_dict()))
        return
    name, settings = model_settings(shortest.trace.model)
    serve(Explorer(name, settings, trace_path(shortest.trace), f"{shortest.invariant} violated"))


def _bounded_check(config: Config | Model, depth: Optional[str], keep_going: bool, max_seconds: Optional[float],
                   quiet: bool, properties: Optional[tuple] = None) -> CheckResult:
    """Bounded model checking with Z3 to `--depth` (of the invariants, or of `properties`), progress per
    depth on stderr."""
    bound = DEFAULT_DEPTH if depth is None else number("--depth", depth)
    if bound < 0:
        raise Exit(exitcodes.BAD_INPUT, f"--depth must be 0 or more, not {depth}")
    reporter = ProgressReporter(enabled=not quiet)
    try:
        return bounded_check(config, bound, properties, keep_going=keep_going, max_seconds=max_seconds,
                             progress=lambda report: reporter.note(report.describe()))
    except UserPropertyError as error:
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error}") from None
    except NotLowered as error:
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error} for --engine z3; the python engine runs any Python "
                                       "(--engine python)") from None
    except EncodingError as error:
        raise Exit(exitcodes.BAD_INPUT, f"--engine z3: {error}") from None
    except EncodingMismatch as error:
        raise Exit(exitcodes.INTERNAL, f"internal error: the Z3 encoding disagrees with the model: {error}") from None
    finally:
        reporter.close()


def _check_with_controller_failures(config: Config, failures: int, flags: dict[str, str], *, keep_going: bool,
                                    budget: Budget, quiet: bool, output_format: OutputFormat, out: Optional[Path],
                                    recoverability: bool, search) -> None:
    """`check` of the replication model with the controller's own failure (`control.failover`):
    the control-plane models' search over that model (on Spark with `--engine spark`), reported as
    `kafka-mc control` reports. `flags`: the flags of configuration fields, for errors."""
    with config_errors(flags):
        system = FailoverModel(FailoverConfig(**dataclasses.asdict(config), controller_failures=failures))
    run_system(system, keep_going=keep_going, budget=budget, goal=recoverability, quiet=quiet,
               as_json=output_format is OutputFormat.json, out=out, search=search)


def _write_tla(model: Model, out: Path) -> None:
    """The model's TLA+ twin and its .cfg, with the users' properties it checks lowered into it."""
    try:
        files = twin_of(model).spec_files()
    except NotLowered as error:
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error} for --write-tla; the python engine runs any Python "
                                       "(--engine python)") from None
    except ValueError as error:
        raise Exit(exitcodes.BAD_INPUT, f"--write-tla: {error}") from None
    for path in write_files(out, files):
        print(f"wrote {path}", file=sys.stderr)


def _state_before(model, error: ReplayError) -> str:
    """The state a replay stopped in, one variable a line, for its error message."""
    if error.state is None:
        return ""
    values = plain_values(model, error.state)
    return "\nThe state before it:\n" + "\n".join(f"  {name} = {json.dumps(value)}" for name, value in values.items())


_TWIN = "For an ITF trace of the TLA+ twin (by another tool): "


@app.command("replay")
def replay_command(
    file: Path = typer.Argument(..., help="A scenario file (TOML) with a configuration and steps, the name "
                                          "of a shipped one (e.g. case-l-hw), or an ITF trace kafka-mc wrote "
                                          "(NAME.itf.json), or one of the TLA+ twin another tool wrote."),
    out: Optional[Path] = typer.Option(None, help="Also write the report set for the replayed trace here."),
    protocol: Optional[str] = typer.Option(None, "--protocol", metavar="NAME", help=_TWIN + "its protocol "
                                           "(needed unless its #meta.source names the variant's module)."),
    replicas: Optional[str] = typer.Option(None, "--replicas", metavar="N", help=_TWIN + "replicas (inferred)."),
    messages: Optional[str] = typer.Option(None, "--messages", metavar="N",
                                           help=_TWIN + "producer writes, at most (default: as many as it has)."),
    crashes: Optional[str] = typer.Option(None, "--crashes", metavar="N",
                                          help=_TWIN + "crashes, at most (default: as many as it has)."),
    elections: Optional[str] = typer.Option(None, "--elections", metavar="N",
                                            help=_TWIN + "elections, at most (default: as many as it has)."),
    acks: Optional[str] = typer.Option(None, "--acks", metavar="all|1|0", help=_TWIN + "producer acks (default all)."),
    min_isr: Optional[str] = typer.Option(None, "--min-isr", metavar="N",
                                          help=_TWIN + "min.insync.replicas (default 1)."),
    unclean: bool = typer.Option(False, "--unclean", help=_TWIN + "unclean leader election enabled."),
) -> None:
    """Run a documented step sequence, printing a table per step and where invariants break. An ITF
    trace replays through the model (each recorded state must be the one the model gives) and must
    break the invariant it records. One of the TLA+ twin that another tool wrote (Apalache, Quint:
    no kafka-mc #meta) replays each of its steps as the model's action that leads there, under the
    options given and what the trace shows."""
    given = {"protocol": protocol, "acks": acks, "unclean": unclean or None,
             **{name: number(flag_of(name), text) for name, text in
                (("replicas", replicas), ("messages", messages), ("crashes", crashes), ("elections", elections),
                 ("min_isr", min_isr))}}
    settings = {name: value for name, value in given.items() if value is not None}
    if settings and not file.name.endswith(".json"):
        raise Exit(exitcodes.BAD_INPUT, f"{', '.join(map(flag_of, settings))}: only for an ITF trace without "
                                        "kafka-mc's #meta (a scenario file gives its configuration)")
    out = out_dir(out)
    try:
        scenario = read_itf_scenario(file, settings) if file.name.endswith(".json") else load_scenario(file)
        replayed = replay_scenario(scenario)
    except ReplayError as error:
        raise Exit(exitcodes.BAD_SPEC, f"{file}: {error}{_state_before(scenario.trace.model, error)}") from None
    except SettingError as error:  # an option an ITF trace of the TLA+ twin needs, or contradicts
        raise Exit(exitcodes.BAD_INPUT, str(error)) from None
    except (ScenarioError, ValueError) as error:  # a scenario, or an ITF trace, that cannot be used
        raise Exit(exitcodes.BAD_SPEC, str(error)) from None
    print(replay_text(replayed))
    if out:
        broken = next(iter(replayed.first_breaks), None)
        written = write_reports(scenario.trace, broken, out, file.stem, scenario.title)
        for path in written:
            print(f"wrote {path}")
    raise typer.Exit(exitcodes.FAILED if replayed.mismatches else exitcodes.OK)


def _choices(flag: str, text: str, allowed: Mapping[str, object]) -> tuple:
    """A comma-separated list of values, each one of `allowed` (by its spelling)."""
    values = [value.strip() for value in text.split(",") if value.strip()]
    bad = [value for value in values if value not in allowed]
    if bad or not values:
        raise Exit(exitcodes.BAD_INPUT, f"{flag}: {', '.join(map(repr, bad)) or 'nothing'} is not allowed; "
                                        f"give a comma-separated list of {', '.join(allowed)}")
    return tuple(dict.fromkeys(allowed[value] for value in values))


_YES_NO = {"no": False, "yes": True}


@app.command("matrix")
def matrix_command(
    ctx: typer.Context,
    protocols: str = typer.Option(",".join(PROTOCOLS), metavar="LIST", help="Protocols, comma-separated."),
    acks: str = typer.Option("all,1,0", metavar="LIST", help="Producer acks values, comma-separated."),
    min_isr: str = typer.Option("1,2", "--min-isr", metavar="LIST", help="min.insync.replicas values."),
    unclean: str = typer.Option("no,yes", metavar="LIST", help="Unclean leader election: no, yes or both."),
    flush: str = typer.Option("yes,no", metavar="LIST", help="Flush every write: yes, no or both."),
    replicas: ReplicasOption = "2",
    messages: MessagesOption = "2",
    crashes: CrashesOption = "2",
    elections: ElectionsOption = "1",
    network_failures: NetworkFailuresOption = "1",
    partitions: DeprecatedNetworkFailuresOption = None,
    workers: Optional[str] = typer.Option(None, metavar="N",
                                          help="Cells checked at once, one process each (default 1; not with --engine spark)."),
    engine: MatrixEngine = typer.Option(MatrixEngine.kernel, "--engine",
                                        help="kernel: cells by the compiled kernel; python (or bfs): by the "
                                             "reference explorer; spark: every cell a Spark job (the kernel on "
                                             "executors)."),
    spark_master: Optional[str] = typer.Option(None, "--spark-master", metavar="URL",
                                               help="With --engine spark: the Spark master (default local[*])."),
    max_states: Optional[str] = typer.Option(None, metavar="N", help="Per cell: stop after this many states."),
    compare: bool = typer.Option(True, "--compare/--no-compare",
                                 help="Also compare the model with the article's table and partition scenarios."),
    output_format: OutputFormat = typer.Option(OutputFormat.text, "--format", help="text, or json on stdout."),
    out: Optional[Path] = typer.Option(None, help="Write catalogue.md and a report per violated cell property here."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress on stderr."),
) -> None:
    """Which data properties each configuration can violate (protocol x acks x min.insync.replicas x
    unclean x flush), with the shortest counterexample behind every cell."""
    failures_flag, failures_text = network_failure_bound(ctx, network_failures, partitions)
    flags = {"partitions": failures_flag}
    out = out_dir(out)
    axes = Axes(
        protocols=_choices("--protocols", protocols, {name: name for name in PROTOCOLS}),
        acks=_choices("--acks", acks, {"all": "all", "1": "1", "0": "0"}),
        min_isr=_choices("--min-isr", min_isr, {str(n): n for n in range(1, 6)}),
        unclean=_choices("--unclean", unclean, _YES_NO),
        flush=_choices("--flush", flush, _YES_NO),
    )
    numbers: dict[str, Any] = counts(flags, replicas=replicas, messages=messages, crashes=crashes,
                                     elections=elections, partitions=failures_text)
    with config_errors(flags):
        bounds = Config(**numbers)
        configs = list(axes.configs(bounds))
    budget = Budget(number("--max-states", max_states, positive=True))
    if engine is MatrixEngine.spark:
        if workers is not None:
            raise Exit(exitcodes.BAD_INPUT, "--workers: not with --engine spark (Spark runs as many cells at once "
                                            "as the cluster has cores)")
        master = cli_spark.spark_master_url(spark_master)
    elif spark_master is not None:
        raise Exit(exitcodes.BAD_INPUT, f"--spark-master: only with --engine spark (not --engine {engine.value})")
    else:
        worker_count = number("--workers", workers or "1", positive=True)
    reporter = ProgressReporter(enabled=not quiet)
    done = iter(range(1, len(configs) + 1))

    def noted(cell) -> None:
        reporter.note(f"cell {next(done)}/{len(configs)}: {cell.name}")

    try:
        if engine is MatrixEngine.spark:
            cells = run_matrix_on_spark(axes, bounds, master=master, budget=budget, progress=noted)
        else:
            cells = run_matrix(axes, bounds, workers=worker_count, budget=budget, progress=noted,
                               kernel=engine is MatrixEngine.kernel)
        comparisons = []
        if compare:
            reporter.note("comparing with the article")
            comparisons = compare_with_article()
    finally:
        reporter.close()
    described = (f"{bounds.replicas} replicas, {bounds.messages} messages, {bounds.crashes} crashes, "
                 f"{bounds.elections} elections and {bounds.partitions} network failures")
    if out is not None:
        _write_catalogue(out, cells, comparisons, described)
    if output_format is OutputFormat.json:
        print(json.dumps({"bounds": described, "cells": catalogue.matrix_json(cells)}, indent=2))
    else:
        print(catalogue.matrix_table(cells))
        if comparisons:
            print()
            print(catalogue.comparison_table(comparisons, "simple"))
    undecided = [cell for cell in cells if not cell.decided]
    raise typer.Exit(exitcodes.INCOMPLETE if undecided else exitcodes.OK)


def _write_catalogue(out: Path, cells, comparisons, described: str) -> None:
    for cell in cells:
        for violation in cell.result.violations:
            write_reports(violation.trace, violation.invariant, out / "cells" / cell.name, violation.invariant,
                          f"{violation.invariant} violated: {cell.name}")
    for path in write_files(out, {"catalogue.md": catalogue.catalogue_markdown(cells, comparisons, described)}):
        print(f"wrote {path}", file=sys.stderr)


@app.command("reproduce")
def reproduce_command(
    out: Path = typer.Option(Path("counterexamples/documented"), help="Directory for the reports."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress on stderr."),
) -> None:
    """Replay and check the documented cases (Case L, Case D) under both protocols; write the reports."""
    out = out_dir(out)
    reporter = ProgressReporter(enabled=not quiet)
    cases, findings = reproduce(out, on_case=lambda o: reporter.note(f"{o.scenario.path.stem}: done"))
    print(tabulate(summary_rows(cases), headers=SUMMARY_HEADERS))
    problems = [f"{o.scenario.path.stem}: {p}" for o in (*cases, *findings) for p in o.problems]
    for problem in problems:
        print(f"MISMATCH {problem}")
    print(f"reports written to {out}")
    raise typer.Exit(exitcodes.FAILED if problems else exitcodes.OK)


def main(argv: Optional[list[str]] = None) -> int:
    """Run the CLI; errors become a message and an exit code, never a traceback."""
    try:
        app(args=argv, prog_name="kafka-mc")  # standalone: usage errors print and exit 2
    except SystemExit as done:  # typer turns Ctrl-C into a silent exit 130: say so
        interrupt = _interrupt_behind(done)
        if interrupt is not None:
            return _interrupted(interrupt)
        return done.code if isinstance(done.code, int) else exitcodes.OK
    except Exit as error:
        print(f"kafka-mc: {error}", file=sys.stderr)
        return error.code
    except (ReportConflict, OutputError) as error:  # an output that would replace a user's file, or cannot be written
        print(f"kafka-mc: {error}", file=sys.stderr)
        return exitcodes.BAD_INPUT
    except KeyboardInterrupt as interrupt:
        return _interrupted(interrupt)
    except Exception as error:  # an internal error: say so plainly, no traceback
        print(f"kafka-mc: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return exitcodes.INTERNAL
    return exitcodes.OK  # not reached: in standalone mode the app always leaves by SystemExit


def _interrupt_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C an exception was raised because of, if any."""
    seen: BaseException | None = error
    while seen is not None and not isinstance(seen, KeyboardInterrupt):
        seen = seen.__cause__ or seen.__context__
    return seen


def _interrupted(interrupt: KeyboardInterrupt) -> int:
    """One line on stderr, with how far the run got where the engine says (`Interrupted`); exit 130."""
    said = f"interrupted {interrupt}" if str(interrupt) else "interrupted: a partial run, no verdict"
    print(f"kafka-mc: {said}", file=sys.stderr)
    return exitcodes.INTERRUPTED


# Commands defined in modules of their own, registered last (the order `kafka-mc --help` lists them in).
app.command("simulate")(simulate_command)
app.command("prove")(prove_command)
app.command("control")(control_command)
app.command("explore")(explore_command)
