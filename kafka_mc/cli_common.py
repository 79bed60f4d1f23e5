"""What the `kafka-mc` commands share: leaving with a message and an exit code, parsing option
values, the replication model's options (declared once, used by check, matrix, simulate and
prove), and how a replication run's verdict is printed, written and turned into an exit code.

The command modules (`cli`, `cli_control`, `cli_prove`, `cli_simulate`, `cli_spark`) import from
here; this module imports none of them.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import runpy
import sys
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Annotated, Collection, Iterator, Mapping, Optional, overload

import typer

from kafka_mc import exitcodes
from kafka_mc.checker import CheckResult
from kafka_mc.checker.result import Trace
from kafka_mc.counterexamples.files import OutputError, ReportConflict, check_output_dir, check_output_file
from kafka_mc.counterexamples.reports import write_reports
from kafka_mc.counterexamples.summary import result_text
from kafka_mc.counterexamples.text import trace_text
from kafka_mc.counterexamples.views import result_view
from kafka_mc.model import PROTOCOLS, Config, ConfigError
from kafka_mc.model.config import SIMULATION_COUNT_LIMIT
from kafka_mc.model.shape import raised
from kafka_mc.properties import ALWAYS, Property
from kafka_mc.properties.user import user_property


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


class Exit(Exception):
    """Leave with a message on stderr and an exit code."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def flag_of(field: str) -> str:
    """The flag of a configuration field: `min_isr` -> `--min-isr`."""
    return "--" + field.replace("_", "-")


# The largest value each numeric option takes (the smallest is 0, or above 0 where `positive`):
# enough for every documented run, small enough that no value exhausts memory, file descriptors
# or processes before the run starts.
LIMITS: dict[str, int | float] = {
    "--workers": 64,
    "--max-states": 10**12,
    "--max-seconds": 10**7,  # about 116 days
    "--runs": 10**9,
    "--depth": 10**6,
    "--seed": 2**64 - 1,
    "--spark-partitions": 10**5,
    "--k": 32,  # prove: k-induction
    "--bmc-depth": 1000,  # prove: the search after a failed proof
    "--epoch-cache": SIMULATION_COUNT_LIMIT + 1,  # prove: the exact cache of the most elections a bounded run takes
    "--port": 65535,  # explore: the TCP port (0: a free one)
}


def number(flag: str, text: Optional[str], kind: type = int, positive: bool = False):
    """The option's value as an int (or a finite float), above 0 where `positive`, from 0 to
    `LIMITS[flag]` where the flag has a limit; Exit naming the option, the value and the allowed
    range otherwise."""
    if text is None:
        return None
    noun = "an integer" if kind is int else "a number"
    shown = text if len(text) <= 40 else f"{text[:20]}...({len(text)} characters)"
    try:
        value = kind(text)
    except (ValueError, OverflowError):  # int() of more than 4,300 digits is a ValueError too
        raise Exit(exitcodes.BAD_INPUT, f"{flag} must be {noun}, not {shown!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise Exit(exitcodes.BAD_INPUT, f"{flag} must be a finite number, not {shown!r}")
    high = LIMITS.get(flag)
    if high is None and not positive:
        return value  # a count of the model: the configuration checks its range
    if value < 0 or (positive and value == 0) or (high is not None and value > high):
        if kind is float:
            allowed = "greater than 0" if positive else "0 or more"
            allowed += f" and at most {high:,}" if high is not None else ""
        else:
            allowed = f"from {int(positive)} to {high:,}" if high is not None else f"of at least {int(positive)}"
        raise Exit(exitcodes.BAD_INPUT, f"{flag} must be {noun} {allowed}, not {shown}")
    return value


def counts(flags: Mapping[str, str] | None = None, /, **options: str) -> dict[str, int]:
    """Integer options by their Config field name, each parsed with its flag named in errors:
    `--field-name`, or the flag `flags` gives for the field."""
    flags = flags or {}
    return {name: number(flags.get(name) or flag_of(name), value) for name, value in options.items()}


@contextmanager
def config_errors(flags: Mapping[str, str] | None = None) -> Iterator[None]:
    """A ConfigError becomes a bad-input exit naming the option and the allowed values. `flags`
    gives the flag of a field whose flag is not `--field-name` (the message then opens with it)."""
    try:
        yield
    except ConfigError as error:
        flag = (flags or {}).get(error.field)
        message = str(error)
        if flag is None:
            raise Exit(exitcodes.BAD_INPUT, f"{flag_of(error.field)}: {message}") from None
        if message.startswith(f"{error.field} "):
            message = message[len(error.field) + 1:]
            raise Exit(exitcodes.BAD_INPUT, f"{flag} {message}") from None
        raise Exit(exitcodes.BAD_INPUT, f"{flag}: {message}") from None


@overload
def out_dir(out: Path, flag: str = "--out") -> Path: ...


@overload
def out_dir(out: None, flag: str = "--out") -> None: ...


def out_dir(out: Optional[Path], flag: str = "--out") -> Optional[Path]:
    """The output folder given as `flag`, if given, checked before any work: Exit when it cannot be
    created or written (a file in its place, a name too long, a folder that cannot be written)."""
    if out is None:
        return None
    try:
        return check_output_dir(out, flag)
    except OutputError as error:
        raise Exit(exitcodes.BAD_INPUT, str(error)) from None


def out_file(path: Optional[Path], flag: str) -> Optional[Path]:
    """An output file given as `flag`, if given, checked before any work: Exit when it cannot be
    written, and when it exists and kafka-mc did not write it (it is never overwritten)."""
    if path is None:
        return None
    try:
        return check_output_file(path, flag)
    except (OutputError, ReportConflict) as error:
        raise Exit(exitcodes.BAD_INPUT, str(error)) from None


def verdict_code(result: CheckResult) -> int:
    """`check`'s exit code for a result: a violation, an incomplete run, an unreached witness, or OK."""
    if result.violations:
        return exitcodes.VIOLATION
    if result.bounded_to is not None:
        return exitcodes.OK if result.stats.depth == result.bounded_to else exitcodes.INCOMPLETE
    if not result.complete and not result.every_witness_reached:
        return exitcodes.INCOMPLETE
    if result.unreached_witnesses:
        return exitcodes.WITNESS_UNREACHED
    return exitcodes.OK


def write_violation_reports(result: CheckResult, out: Path) -> list[Path]:
    """A report set in `out` for every violation of a run of any model, named after the replication
    model's protocol or the model."""
    written: list[Path] = []
    for violation in result.violations:
        model = violation.trace.model
        where = result.config.protocol if model.name == "replication" else model.name
        written += write_reports(violation.trace, violation.invariant, out, f"{where}-{violation.invariant}",
                                 f"{violation.invariant} violated "
                                 + (f"under {where}" if model.name == "replication" else f"in the {where} model"))
    return written


def shared_traces(result: CheckResult) -> list[tuple[Trace, tuple[str, ...]]]:
    """Each distinct violation trace with the invariants it violates, shortest first."""
    grouped: dict[Trace, list[str]] = {}
    for violation in result.violations:
        grouped.setdefault(violation.trace, []).append(violation.invariant)
    return [(trace, tuple(names)) for trace, names in grouped.items()]


def print_result(result: CheckResult, goals: tuple, output_format: OutputFormat, written: list[Path],
                 model: str = "replication", invariants: tuple[str, ...] | None = None,
                 coverage: bool = False) -> None:
    """A run of the model named `model` on stdout: TLC-style traces (a trace that violates several
    invariants printed once) and the summary (with each action's `coverage` if asked), or one JSON
    object; `goals`, the AG EF verdicts decided (`checker.graph.check_goal`, `check_recoverability`,
    `check_leader_again`)."""
    if output_format is OutputFormat.json:
        view = result_view(result, model)
        if goals:
            view["goals"] = [{"property": goal.property, "holds": goal.holds,
                              "unrecoverable_states": goal.unrecoverable,
                              "example": [str(a) for a in goal.example.actions] if goal.example else None}
                             for goal in goals]
        view["reports"] = [str(path) for path in written]
        print(json.dumps(view, indent=2))
        return
    for trace, names in shared_traces(result):
        print(trace_text(trace, names))
        print()
    for goal in goals:
        if goal.example is not None:
            print(f"{goal.property} can never be reached again from the last state of this trace:")
            print(trace_text(goal.example, None))
            print()
    if model != "replication":
        print(f"The {model} model.")
    print(result_text(result, goals, invariants, coverage))
    for path in written:
        print(f"wrote {path}")


# ---------------------------------------------------------------- the replication model's options
# Each command gives its own default (`replicas: ReplicasOption = "2"`); `prove` declares its own
# --crashes and --elections, which also take `any`, and `matrix` its own --acks, --min-isr and
# --unclean, which take lists.

ProtocolOption = Annotated[str, typer.Option("--protocol", metavar="NAME",
                                             help=f"Truncation protocol: {', '.join(PROTOCOLS)}.")]
ReplicasOption = Annotated[str, typer.Option("--replicas", metavar="N", help="Number of replicas, 2 to 5.")]
MessagesOption = Annotated[str, typer.Option("--messages", metavar="N", help="Producer writes, at most.")]
CrashesOption = Annotated[str, typer.Option("--crashes", metavar="N", help="Replica crashes, at most.")]
ElectionsOption = Annotated[str, typer.Option("--elections", metavar="N",
                                              help="Leader elections after the initial one, at most.")]
AcksOption = Annotated[str, typer.Option("--acks", metavar="all|1|0", help="Producer acks: all, 1 or 0.")]
MinIsrOption = Annotated[str, typer.Option("--min-isr", metavar="N",
                                           help="min.insync.replicas (acks=all writes need this many in the ISR).")]
UncleanOption = Annotated[bool, typer.Option("--unclean", help="Enable unclean leader election.")]
NoFlushOption = Annotated[bool, typer.Option("--no-flush",
                                             help="Acknowledge from the page cache: a crash loses what was not "
                                                  "flushed.")]
DiskFailuresOption = Annotated[str, typer.Option("--disk-failures", metavar="N",
                                                help="Crashes that also lose the broker's disk, at most (each counts "
                                                     "against --crashes too): it starts again with no log, HW "
                                                     "checkpoint or epoch cache, as on a replaced disk.")]
DISK_FAILURES = "--disk-failures"
DEPRECATED_REPLACED_DISKS = "--replaced-disks"  # before --disk-failures: any crash may lose the disk
DeprecatedReplacedDisksOption = Annotated[bool, typer.Option(DEPRECATED_REPLACED_DISKS, hidden=True)]
DelaysOption = Annotated[str, typer.Option("--delays", metavar="N",
                                          help="Delayed requests, at most: an AlterPartition the controller "
                                               "handles late, or a fetch the leader handles late (after its sender "
                                               "restarted, a stale one), other events happening meanwhile (variants "
                                               "from 2.7 on).")]
MetadataLagOption = Annotated[bool, typer.Option("--metadata-lag",
                                                 help="The leader reads the controller's own ISR changes (a failure "
                                                      "noticed, an unclean registration) late, in the metadata log; "
                                                      "until then the controller refuses its ISR changes (KRaft "
                                                      "variants).")]
NETWORK_FAILURES = "--network-failures"
DEPRECATED_NETWORK_FAILURES = "--partitions"  # the flag's name before it became --network-failures
NetworkFailuresOption = Annotated[str, typer.Option(NETWORK_FAILURES, metavar="N",
                                                    help="Network failures, at most (a broker cut off from "
                                                         "ZooKeeper or the brokers).")]
DeprecatedNetworkFailuresOption = Annotated[Optional[str], typer.Option(DEPRECATED_NETWORK_FAILURES, metavar="N",
                                                                        hidden=True)]


def refuse_unusable(context: str, takes: Collection[str], given: Mapping[str, bool],
                    takers: Mapping[str, Collection[str]] | None = None, why: str = "") -> None:
    """Leave with a bad-input exit naming every option given (`given[flag]` true) that `context`
    (an engine, or a mode such as --controller-failures) does not take, and the engines of
    `takers` (engine -> the options it takes) that take them all."""
    refused = [flag for flag, is_given in given.items() if is_given and flag not in takes]
    if not refused:
        return
    others = [engine for engine, flags in (takers or {}).items() if set(refused) <= set(flags)]
    where = f" (only with --engine {' or '.join(others)})" if others else ""
    raise Exit(exitcodes.BAD_INPUT, f"{', '.join(refused)}: not with {context}{where}{why}")


PluginOption = Annotated[Optional[list[str]], typer.Option(
    "--plugin", metavar="MODULE",
    help="Import this module first (a module name, or a .py file): e.g. one that registers a protocol "
         "variant with kafka_mc.model.register_protocol. Repeatable.")]


def load_plugins(plugins: Optional[list[str]]) -> None:
    """Import each `--plugin` (a module name, found from the working directory too, or a .py file);
    a bad-spec exit naming the plugin when one cannot be imported."""
    for plugin in plugins or ():
        try:
            if plugin.endswith(".py"):
                path = Path(plugin)
                if not path.is_file():
                    raise FileNotFoundError(f"no such file: {path}")
                spec = importlib.util.spec_from_file_location(path.stem, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[path.stem] = module
                spec.loader.exec_module(module)
            else:
                if os.getcwd() not in sys.path:
                    sys.path.insert(0, os.getcwd())
                importlib.import_module(plugin)
        except BaseException as error:  # a user's code: SystemExit and KeyboardInterrupt at import too
            raise Exit(exitcodes.BAD_SPEC, f"--plugin {plugin}: it cannot be imported: {raised(error)}") from None


def run_user_file(path: Path, what: str) -> dict:
    """A user's Python file (`--lemmas FILE`, `--property FILE:NAME`, named `what` in errors) run
    guarded: its namespace; a bad-spec exit when it raises anything at import, SystemExit and
    KeyboardInterrupt included (never a verdict)."""
    try:
        return runpy.run_path(str(path))
    except BaseException as error:
        raise Exit(exitcodes.BAD_SPEC, f"{what}: raised {raised(error)} at import") from None


PropertyOption = Annotated[Optional[list[str]], typer.Option(
    "--property", metavar="FILE:NAME",
    help="Check this property instead of kafka-mc's own: the function NAME in the Python file FILE (or in "
         "an importable module, e.g. kafka_mc.properties.anchors:leader_candidate_completeness), of a "
         "state or of (state, action, next_state), that returns False or fails an assert where it does not "
         "hold (a function made a test with kafka_mc's @always works too; one made with @sometimes is a "
         "witness, reached where it holds). Repeatable. The python and spark engines run it as written; the "
         "kernel, gpu, z3 and --write-tla lower it (docs: Write your own property).")]


def property_namespace(source: str, spec: str) -> dict:
    """The namespace of `--property`'s FILE: a Python file, run guarded, or else a module name, imported
    (a module of kafka-mc's, `kafka_mc.properties.anchors`, or one found from the working directory);
    a bad-spec exit when it is neither, or raises anything at import."""
    if Path(source).is_file():
        return run_user_file(Path(source), f"--property {spec}")
    if source.endswith(".py") or not all(part.isidentifier() for part in source.split(".")):
        raise Exit(exitcodes.BAD_SPEC, f"--property {spec}: no such file: {source}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return vars(importlib.import_module(source))
    except ModuleNotFoundError as error:
        if error.name is not None and source.startswith(error.name):
            raise Exit(exitcodes.BAD_SPEC, f"--property {spec}: no such file or module: {source}") from None
        raise Exit(exitcodes.BAD_SPEC, f"--property {spec}: raised {raised(error)} at import") from None
    except BaseException as error:  # a user's code: SystemExit and KeyboardInterrupt at import too
        raise Exit(exitcodes.BAD_SPEC, f"--property {spec}: raised {raised(error)} at import") from None


def load_properties(specs: Optional[list[str]]) -> tuple[Property, ...]:
    """The `--property FILE:NAME` functions as properties, each file run guarded: whatever it
    raises at import, a missing NAME, or a function of the wrong signature is a bad-spec exit
    naming it. The properties raise UserPropertyError for an error inside them."""
    loaded: list[Property] = []
    modules: dict[str, dict] = {}
    for spec in specs or ():
        file, _, name = spec.rpartition(":")
        if not file or not name.isidentifier():
            raise Exit(exitcodes.BAD_INPUT, f"--property {spec!r}: give FILE:NAME, e.g. props.py:leader_has_all")
        if file not in modules:
            modules[file] = property_namespace(file, spec)
        namespace = modules[file]
        if name not in namespace:
            found = sorted(key for key, value in namespace.items() if callable(value) and not key.startswith("_"))
            raise Exit(exitcodes.BAD_SPEC, f"--property {spec}: {file} has no {name}; its functions: "
                                           f"{', '.join(found) or 'none'}")
        predicate = getattr(namespace[name], "kafka_mc_property", namespace[name])  # an @always test's predicate
        kind = getattr(namespace[name], "kafka_mc_kind", ALWAYS)  # SOMETIMES for a @sometimes test's
        try:
            loaded.append(user_property(predicate, name, guarded=True, kind=kind))
        except TypeError as error:
            raise Exit(exitcodes.BAD_SPEC, f"--property {spec}: {error}") from None
    names = [prop.name for prop in loaded]
    if len(set(names)) != len(names):
        raise Exit(exitcodes.BAD_INPUT, f"--property: each name once, not {', '.join(names)}")
    return tuple(loaded)


def replication_config(ctx: typer.Context, *, protocol: str, replicas: str, messages: str, crashes: str,
                       elections: str, acks: str, min_isr: str, unclean: bool, no_flush: bool, network_failures: str,
                       partitions: Optional[str], simulation: bool = False,
                       disk_failures: str = "0", replaced_disks: bool = False,
                       delays: str = "0", metadata_lag: bool = False) -> tuple[Config, dict[str, str]]:
    """The replication model's configuration from its options as every command declares them (the
    `*Option` types above; `simulation`: `Config.for_simulation`'s wider bounds), a bad value
    refused naming its flag; and the flags whose name is not `--field-name`, for later messages."""
    failures_flag, failures_text = network_failure_bound(ctx, network_failures, partitions)
    flags = {"partitions": failures_flag}
    if replaced_disks:
        flags["disk_failures"] = disk_failures_flag(ctx)
        disk_failures = crashes
    bounds = counts(flags, replicas=replicas, messages=messages, crashes=crashes, elections=elections,
                    min_isr=min_isr, partitions=failures_text, delays=delays, disk_failures=disk_failures)
    with config_errors(flags):
        make = Config.for_simulation if simulation else Config
        return make(protocol=protocol, acks=acks, unclean=unclean, flush=not no_flush, metadata_lag=metadata_lag,
                    **bounds), flags


def disk_failures_flag(ctx: typer.Context) -> str:
    """--replaced-disks, the deprecated form of --disk-failures equal to --crashes (any crash may lose
    its disk): it still works and warns once on stderr. Giving both is refused."""
    return deprecated_flag(ctx, DISK_FAILURES, DEPRECATED_REPLACED_DISKS,
                           f"form of {DISK_FAILURES} N with N the crashes", f"{DISK_FAILURES} N (here N = --crashes)")


def network_failure_bound(ctx: typer.Context, value: str, deprecated: Optional[str]) -> tuple[str, str]:
    """The flag and the text of the network-failure bound: --network-failures, or --partitions,
    its deprecated name, which still works and warns once on stderr. Giving both is refused."""
    if deprecated is None:
        return NETWORK_FAILURES, value
    return deprecated_flag(ctx, NETWORK_FAILURES, DEPRECATED_NETWORK_FAILURES, f"name of {NETWORK_FAILURES}",
                           NETWORK_FAILURES), deprecated


def deprecated_flag(ctx: typer.Context, current: str, deprecated: str, meaning: str, use: str) -> str:
    """`deprecated`, given in place of `current` (it is the deprecated `meaning`): refused when `current`
    is given too, else a warning on stderr naming `use`; the flag to name in later messages."""
    name = next(param.name for param in ctx.command.params if current in param.opts)
    source = ctx.get_parameter_source(name)  # typer's own click's ParameterSource: compared by name
    if source is not None and source.name == "COMMANDLINE":
        raise Exit(exitcodes.BAD_INPUT, f"{deprecated} is the deprecated {meaning}: give only {current}")
    print(f"warning: {deprecated} is deprecated; use {use}", file=sys.stderr)
    return deprecated
