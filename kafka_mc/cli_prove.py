"""`kafka-mc prove`: inductive proofs with Z3 (strengthening lemmas, or Spacer with none).

Registered on the app by `kafka_mc.cli` (`app.command("prove")(prove_command)`); the options and
helpers it shares with `check` are `kafka_mc.cli_common`'s.

Exit codes: 0 proved; 12 a property is violated (bounded model checking after a failed proof, or
Spacer, found a reachable violation); 1 not proved (a counterexample to induction whose
reachability is not established, i.e. no violation within the search depth); 75 unknown or out of
time; 150 a --lemmas file that cannot be used (it fails at import, its LEMMAS is not a list of
named functions, or a lemma raises or gives no Z3 formula); 151 a bad option value; 255 an
internal error (the encoding disagrees with the model).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer
import z3
from tabulate import tabulate

from kafka_mc import exitcodes
from kafka_mc.checker.symbolic.bmc import EncodingMismatch
from kafka_mc.checker.symbolic.budget import Deadline
from kafka_mc.checker.symbolic.induction import DEFAULT_CACHE, DEFAULT_PROPERTIES, Lemma, prove, reachability
from kafka_mc.checker.symbolic.lemma import LemmaError
from kafka_mc.checker.symbolic.lemmas import LEMMAS
from kafka_mc.checker.symbolic.properties import SYMBOLIC_INVARIANTS
from kafka_mc.checker.symbolic.spacer import spacer_prove
from kafka_mc.checker.symbolic.transitions import EncodingError
from kafka_mc.cli_common import (
    AcksOption,
    DelaysOption,
    LIMITS,
    DeprecatedNetworkFailuresOption,
    Exit,
    MessagesOption,
    MetadataLagOption,
    MinIsrOption,
    NetworkFailuresOption,
    NoFlushOption,
    OutputFormat,
    PluginOption,
    ProtocolOption,
    ReplicasOption,
    UncleanOption,
    load_plugins,
    load_properties,
    number,
    out_dir,
    replication_config,
    run_user_file,
)
from kafka_mc.counterexamples.reports import write_reports
from kafka_mc.counterexamples.text import trace_text
from kafka_mc.counterexamples.views import TABLE_HEADERS, isr_text, replica_rows, state_view, trace_view
from kafka_mc.model import Config
from kafka_mc.model.config import SIMULATION_COUNT_LIMIT
from kafka_mc.properties.user import UserPropertyError
from kafka_mc.model.shape import raised, short_repr
from kafka_mc.progress import ProgressReporter
from kafka_mc.model.values import leader_name

ANY = "any"
METHODS = ("lemmas", "spacer")
DEFAULT_BMC_DEPTH = 12
DEFAULT_SPACER_SECONDS = 600.0
DEFAULT_SEARCH_SECONDS = 300.0  # the search after a failed proof, when --max-seconds does not bound it


def prove_command(
    ctx: typer.Context,
    protocol: ProtocolOption = "hw",
    plugin: PluginOption = None,
    replicas: ReplicasOption = "2",
    messages: MessagesOption = "2",
    # prove's own --crashes and --elections: they also take `any`, no bound, their default
    crashes: str = typer.Option(ANY, metavar="N|any", help="Replica crashes, at most; any: no bound (default)."),
    elections: str = typer.Option(ANY, metavar="N|any",
                                  help="Leader elections after the initial one, at most; any: no bound (default)."),
    acks: AcksOption = "all",
    min_isr: MinIsrOption = "1",
    unclean: UncleanOption = False,
    no_flush: NoFlushOption = False,
    network_failures: NetworkFailuresOption = "0",
    partitions: DeprecatedNetworkFailuresOption = None,
    delays: DelaysOption = "0",
    metadata_lag: MetadataLagOption = False,
    properties: Optional[list[str]] = typer.Option(None, "--property", metavar="NAME|FILE:NAME",
                                                   help="A property to prove (repeatable; default "
                                                        "NoCommittedDataLoss and NoLogDivergence): a shipped "
                                                        "invariant, or your own state invariant, the function NAME "
                                                        "in the Python file FILE (lowered to Z3; --method lemmas)."),
    method: str = typer.Option("lemmas", metavar="lemmas|spacer",
                               help="lemmas: the strengthening lemmas; spacer: Z3's Spacer looks for an invariant."),
    k: str = typer.Option("1", "--k", metavar="N",
                          help=f"k-induction: the lemmas on N consecutive states imply the next (1 to {LIMITS['--k']})."),
    lemma_file: Optional[Path] = typer.Option(None, "--lemmas", metavar="FILE",
                                              help="A Python file whose LEMMAS list adds lemmas (functions of the "
                                                   "symbolic state) to the shipped ones."),
    no_shipped: bool = typer.Option(False, "--no-shipped-lemmas", help="Use only the lemmas of --lemmas."),
    epoch_cache: Optional[str] = typer.Option(None, "--epoch-cache", metavar="N",
                                              help="Epoch-cache capacity when elections are unbounded (default 4; 1 "
                                                   f"to {LIMITS['--epoch-cache']}): the proof covers behaviours whose caches "
                                                   "stay within N entries."),
    bmc_depth: str = typer.Option(str(DEFAULT_BMC_DEPTH), "--bmc-depth", metavar="K",
                                  help="After a failed proof, search behaviours of up to K steps for a violation "
                                       f"(0 to {LIMITS['--bmc-depth']:,}; 0: do not search; at most "
                                       f"{DEFAULT_SEARCH_SECONDS:g} s unless --max-seconds bounds it)."),
    max_seconds: Optional[str] = typer.Option(None, metavar="SECONDS",
                                              help="Stop after this many seconds in all (above 0, at most "
                                                   f"{LIMITS['--max-seconds']:,}): unknown, exit 75 (Spacer: default "
                                                   f"{DEFAULT_SPACER_SECONDS:g})."),
    output_format: str = typer.Option("text", "--format", metavar="text|json",
                                      help="text, or json: one JSON object on stdout."),
    out: Optional[Path] = typer.Option(None, help="Write the counterexample's reports (and a violation's) here."),
    quiet: bool = typer.Option(False, "--quiet", help="No progress on stderr."),
) -> None:
    """Prove properties for any number of crashes and elections (replicas and messages bounded),
    with strengthening lemmas checked for initiation, consecution and safety, or with Spacer."""
    started = time.perf_counter()  # --max-seconds counts from here
    load_plugins(plugin)
    formats = {f.value: f for f in OutputFormat}
    if output_format not in formats:
        raise Exit(exitcodes.BAD_INPUT, f"--format must be one of {', '.join(formats)}, not {output_format!r}")
    if method not in METHODS:
        raise Exit(exitcodes.BAD_INPUT, f"--method must be one of {', '.join(METHODS)}, not {method!r}")
    chosen: list = []
    for name in properties or DEFAULT_PROPERTIES:
        if ":" in name:
            chosen += load_properties([name])
        elif name not in SYMBOLIC_INVARIANTS:
            raise Exit(exitcodes.BAD_INPUT, f"--property {name!r} is unknown; allowed: "
                                            f"{', '.join(SYMBOLIC_INVARIANTS)}, or FILE:NAME for your own")
        else:
            chosen.append(name)
    depth = number("--k", k, positive=True)
    search_depth = number("--bmc-depth", bmc_depth)
    budget = number("--max-seconds", max_seconds, float, positive=True)
    cache = number("--epoch-cache", epoch_cache, positive=True)
    out = out_dir(out)
    lifted: set[str] = set()  # the bounds given as ANY
    bounds: dict[str, str] = {}
    for flag, text in (("crashes", crashes), ("elections", elections)):
        if text.strip().lower() == ANY:
            lifted.add(flag)
            bounds[flag] = "0"  # a placeholder: the bound is lifted
        else:
            try:
                int(text)
            except ValueError:
                raise Exit(exitcodes.BAD_INPUT, f"--{flag} must be a number from 0 to {SIMULATION_COUNT_LIMIT} or "
                                                f"'{ANY}', not {text!r}") from None
            bounds[flag] = text
    config, _ = replication_config(ctx, protocol=protocol, replicas=replicas, messages=messages,
                                   crashes=bounds["crashes"], elections=bounds["elections"], acks=acks,
                                   min_isr=min_isr, unclean=unclean, no_flush=no_flush,
                                   network_failures=network_failures, partitions=partitions, simulation=True,
                                   delays=delays, metadata_lag=metadata_lag)
    unbounded = frozenset(lifted)
    if cache is None and "elections" in unbounded:
        cache = DEFAULT_CACHE
    deadline = Deadline(budget, started)
    lemmas, from_file = _lemmas(lemma_file, no_shipped)
    fmt = formats[output_format]
    reporter = ProgressReporter(enabled=not quiet)
    # the search after a failed proof: within what is left of --max-seconds, or its own limit
    search_deadline = deadline if budget is not None else None
    try:
        if method == "spacer":
            if budget is None:
                deadline = Deadline(DEFAULT_SPACER_SECONDS)
            reporter.note(f"Spacer: looking for an inductive invariant (at most {deadline.seconds:g} s)")
            spacer_result = spacer_prove(config, chosen, unbounded=unbounded, cache=cache, deadline=deadline)
            found = None
            if spacer_result.status == "refuted" and search_depth:
                found = _search(config, unbounded, chosen, search_depth, None, search_deadline, reporter)
            return _finish_spacer(spacer_result, found, unbounded, fmt, out)
        progress = _Progress(reporter)
        result = prove(config, lemmas, properties=chosen, unbounded=unbounded, k=depth, cache=cache,
                       deadline=deadline, progress=progress)
        found = None
        if result.status == "failed" and search_depth:
            found = _search(config, unbounded, chosen, search_depth, result.counterexample, search_deadline,
                            reporter)
        _finish_proof(result, found, fmt, out)
    except LemmaError as error:
        if error.lemma in from_file:
            raise Exit(exitcodes.BAD_SPEC, f"--lemmas {lemma_file}: {error}") from None
        raise Exit(exitcodes.INTERNAL, f"internal error: shipped {error}") from None
    except EncodingError as error:
        raise Exit(exitcodes.BAD_INPUT, f"prove: {error}") from None
    except UserPropertyError as error:
        raise Exit(exitcodes.BAD_SPEC, f"--property: {error}") from None
    except EncodingMismatch as error:
        raise Exit(exitcodes.INTERNAL, f"internal error: the Z3 encoding disagrees with the model: {error}") from None
    except ValueError as error:  # a lemma that builds no formula, a bad property
        raise Exit(exitcodes.BAD_INPUT, f"prove: {error}") from None
    finally:
        reporter.close()


class _Progress:
    """One stderr line per kind of query and per action slot of the consecution queries."""

    def __init__(self, reporter):
        self.reporter, self.last = reporter, None

    def __call__(self, query) -> None:
        key = (query.kind, query.action, query.depth)
        if key != self.last:
            self.last = key
            where = f" {query.action}" if query.action else (f" depth {query.depth}" if query.depth else "")
            self.reporter.note(f"{query.kind}{where}")


def _lemmas(path: Optional[Path], no_shipped: bool) -> tuple[list, set[str]]:
    """The lemmas to prove with, and the names of those from `path`. The file runs guarded:
    whatever it raises (SystemExit and KeyboardInterrupt included), or a LEMMAS that is not a
    list of named functions with string docstrings, is an error in the file (exit 150)."""
    extra: list[Lemma] = []
    if path is not None:
        if not path.is_file():
            raise Exit(exitcodes.BAD_INPUT, f"--lemmas {path}: no such file")
        namespace = run_user_file(path, f"--lemmas {path}")
        listed = namespace.get("LEMMAS")
        if not isinstance(listed, (list, tuple)):
            raise Exit(exitcodes.BAD_SPEC, f"--lemmas {path} must define LEMMAS, a list of functions of the "
                                           f"symbolic state, not {short_repr(listed)}")
        try:
            for position, item in enumerate(list(listed)):
                try:
                    extra.append(Lemma.of(item))
                except LemmaError as error:
                    raise Exit(exitcodes.BAD_SPEC, f"--lemmas {path}: LEMMAS[{position}]: {error}") from None
        except Exit:
            raise
        except BaseException as error:  # a list subclass whose iteration raises
            raise Exit(exitcodes.BAD_SPEC, f"--lemmas {path}: reading LEMMAS raised {raised(error)}") from None
    elif no_shipped:
        raise Exit(exitcodes.BAD_INPUT, "--no-shipped-lemmas needs --lemmas FILE")
    chosen = extra if no_shipped else [*LEMMAS, *extra]
    names = [item.name for item in chosen]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise Exit(exitcodes.BAD_SPEC, f"--lemmas {path}: lemma names must be distinct"
                                       f"{'' if no_shipped else ', the shipped ones included'}; "
                                       f"repeated: {', '.join(repeated)}")
    return chosen, {item.name for item in extra}


def _search(config, unbounded, properties, depth, counterexample, deadline, reporter):
    """Bounded model checking after a failed proof or a refutation: until `deadline`, or for
    DEFAULT_SEARCH_SECONDS without one."""
    reporter.note(f"bounded model checking up to {depth} steps for a reachable violation")
    target = counterexample.states[0] if counterexample and counterexample.kind == "consecution" else None
    return reachability(config, unbounded, properties, depth, target, DEFAULT_SEARCH_SECONDS, deadline=deadline)


def _config_view(config: Config, unbounded: frozenset[str]) -> dict:
    view = config.to_dict()
    for counter in unbounded:
        view[counter] = ANY
    return view


def _counterexample_view(counterexample) -> dict:
    return {
        "kind": counterexample.kind,
        "lemma": counterexample.lemma,
        "action": str(counterexample.action) if counterexample.action else None,
        "actions": [str(action) for action in counterexample.actions],
        "states": [state_view(state) for state in counterexample.states],
        "replayed": counterexample.trace is not None,
        "note": counterexample.note or None,
    }


def _found_view(found) -> dict | None:
    if found is None:
        return None
    return {
        "bound": found.bound,
        "depth_searched": found.depth,
        "complete": found.complete,
        "seconds": round(found.seconds, 3),
        "violated": found.violated,
        "violation": trace_view(found.violation) if found.violation else None,
        # None when the search stopped before its bound: unreachability is then not established
        "counterexample_reachable": True if found.reaches else (False if found.complete else None),
        "reason": found.reason,
    }


def _exit_code(status: str, found) -> int:
    if status == "proved":
        return exitcodes.OK
    if found is not None and found.violation is not None:
        return exitcodes.VIOLATION
    return exitcodes.INCOMPLETE if status == "unknown" else exitcodes.FAILED


def _write(result, found, out: Path) -> list[Path]:
    written = []
    counterexample = result.counterexample
    protocol = result.config.protocol
    if counterexample is not None and counterexample.trace is not None:
        kind = {"consecution": "cti", "initiation": "initiation", "safety": "safety"}[counterexample.kind]
        title = {"consecution": f"Counterexample to induction: {counterexample.action} breaks lemma "
                                f"{counterexample.lemma} under {protocol}",
                 "initiation": f"Lemma {counterexample.lemma} fails in a reachable state under {protocol}",
                 "safety": f"The lemmas hold and {counterexample.lemma} does not, under {protocol}",
                 }[counterexample.kind]
        written += write_reports(counterexample.trace, counterexample.lemma, out,
                                 f"{protocol}-{kind}-{counterexample.lemma}", title)
    if found is not None and found.violation is not None:
        written += write_reports(found.violation, found.violated, out, f"{protocol}-{found.violated}",
                                 f"{found.violated} violated under {protocol} (bounded model checking after a "
                                 "failed proof)")
    return written


def _finish_proof(result, found, fmt, out: Optional[Path]) -> None:
    written = _write(result, found, out) if out else []
    code = _exit_code(result.status, found)
    if fmt is OutputFormat.json:
        kinds: dict[str, dict] = {}
        for query in result.queries:
            entry = kinds.setdefault(query.kind, {"queries": 0, "seconds": 0.0})
            entry["queries"] += 1
            entry["seconds"] += query.seconds
        slowest = max(result.queries, key=lambda q: q.seconds, default=None)
        view = {
            "command": "prove",
            "method": "lemmas",
            "protocol": result.config.protocol,
            "config": _config_view(result.config, result.unbounded),
            "properties": list(result.properties),
            "scope": result.scope,
            "epoch_cache": result.cache if result.config.protocol != "hw" else None,
            "k": result.k,
            "lemmas": list(result.lemmas),
            "status": result.status,
            "proved": result.proved,
            "reason": result.reason,
            "seconds": round(result.seconds, 3),
            "z3_version": z3.get_version_string(),
            "queries": {kind: {"queries": entry["queries"], "seconds": round(entry["seconds"], 3)}
                        for kind, entry in kinds.items()},
            "slowest_query": None if slowest is None else {
                "kind": slowest.kind, "lemma": slowest.lemma,
                "action": str(slowest.action) if slowest.action else None, "seconds": round(slowest.seconds, 3)},
            "counterexample": _counterexample_view(result.counterexample) if result.counterexample else None,
            "reachability": _found_view(found),
            "exit_code": code,
            "reports": [str(path) for path in written],
        }
        print(json.dumps(view, indent=2))
        raise typer.Exit(code)
    print(_proof_text(result, found))
    for path in written:
        print(f"wrote {path}")
    raise typer.Exit(code)


def _proof_text(result, found) -> str:
    lines = [f"Proving {', '.join(result.properties)} for {result.scope}.",
             f"Method: {len(result.lemmas)} lemmas, {'induction' if result.k == 1 else f'{result.k}-induction'}; "
             f"Z3 {z3.get_version_string()}."]
    rows: dict[str, tuple[int, float]] = {}  # query kind -> (count, solver seconds)
    for query in result.queries:
        count, seconds = rows.get(query.kind, (0, 0.0))
        rows[query.kind] = (count + 1, seconds + query.seconds)
    if rows:
        lines += ["", tabulate([(kind, count, f"{seconds:.2f}") for kind, (count, seconds) in rows.items()],
                               headers=("queries", "count", "solver seconds"))]
    lines.append("")
    if result.status == "proved":
        lines.append(f"PROVED: {result.reason} ({result.seconds:.1f} s).")
        return "\n".join(lines)
    if result.status == "unknown":
        lines.append(f"UNKNOWN: {result.reason} ({result.seconds:.1f} s): this is not a proof.")
        return "\n".join(lines)
    lines.append(f"NOT PROVED: {result.reason} ({result.seconds:.1f} s).")
    counterexample = result.counterexample
    if counterexample is not None:
        lines += ["", *_counterexample_text(counterexample)]
    lines += ["", *_found_text(found, counterexample)]
    return "\n".join(lines)


def _state_table(state) -> list[str]:
    c = state.controller
    return [f"controller: leader {leader_name(state)}, epoch {c.epoch}, ISR {isr_text(state)}; written "
            f"{state.written}, crashes {state.crashes}, committed "
            f"{' '.join(f'm{m}@{o}' for o, m in state.committed) or '-'}",
            tabulate(replica_rows(state), headers=TABLE_HEADERS)]


def _counterexample_text(counterexample) -> list[str]:
    count = len(counterexample.states)
    if counterexample.kind == "consecution":
        lines = [f"Counterexample to induction: every lemma holds in the state{'s' if count > 2 else ''} before; "
                 f"after {counterexample.action}, lemma {counterexample.lemma} does not."]
        labels = ["State before"] if count == 2 else [f"State {i}" for i in range(count - 1)]
        labels += [f"State after {counterexample.action}"]
        if count > 2:
            labels = labels[:1] + [f"{label} (after {action})" for label, action
                                   in zip(labels[1:-1], counterexample.actions)] + labels[-1:]
    elif counterexample.kind == "initiation":
        lines = [f"Lemma {counterexample.lemma} does not hold in a state reachable from an initial state:"]
        labels = ["Initial state"] + [f"After {action}" for action in counterexample.actions]
    else:
        lines = [f"A state where every lemma holds and {counterexample.lemma} does not:"]
        labels = ["State"]
    for label, state in zip(labels, counterexample.states):
        lines += ["", f"{label}:", *_state_table(state)]
    if counterexample.note:
        lines += ["", counterexample.note]
    return lines


def _found_text(found, counterexample) -> list[str]:
    if found is None:
        return ["Whether a property is violated was not searched (--bmc-depth 0): the lemmas are not "
                "inductive, which says nothing yet about the properties."]
    if found.violation is not None:
        return [f"Bounded model checking: {found.violated} is VIOLATED in {len(found.violation)} steps "
                f"({found.seconds:.1f} s); the behaviour, replayed by the explicit model:", "",
                trace_text(found.violation, found.violated)]
    reach = ""
    if counterexample is not None and counterexample.kind == "consecution":
        reach = (" The counterexample's first state is reachable: the lemma itself is false."
                 if found.reaches else
                 f" Its first state is not reachable in {found.depth} steps or fewer." if found.complete else "")
    if found.complete:
        return [f"Bounded model checking: {found.reason} ({found.seconds:.1f} s).{reach} "
                "The properties are neither proved nor refuted."]
    return [f"Bounded model checking stopped after {found.depth} steps ({found.reason}).{reach}"]


def _finish_spacer(result, found, unbounded, fmt, out: Optional[Path]) -> None:
    written = []
    if out and found is not None and found.violation is not None:
        written = write_reports(found.violation, found.violated, out, f"{result.config.protocol}-{found.violated}",
                                f"{found.violated} violated under {result.config.protocol}")
    code = exitcodes.OK if result.status == "proved" else (
        exitcodes.VIOLATION if result.status == "refuted" else exitcodes.INCOMPLETE)
    if fmt is OutputFormat.json:
        print(json.dumps({
            "command": "prove", "method": "spacer", "protocol": result.config.protocol,
            "config": _config_view(result.config, unbounded), "properties": list(result.properties),
            "scope": result.scope, "status": result.status, "proved": result.proved, "reason": result.reason,
            "seconds": round(result.seconds, 3), "z3_version": z3.get_version_string(),
            "invariant": result.invariant or None, "reachability": _found_view(found), "exit_code": code,
            "reports": [str(path) for path in written]}, indent=2))
        raise typer.Exit(code)
    print(f"Proving {', '.join(result.properties)} for {result.scope}.")
    print(f"Method: Spacer (constrained Horn clauses, no lemmas); Z3 {z3.get_version_string()}.")
    verdict = {"proved": "PROVED", "refuted": "REFUTED", "unknown": "UNKNOWN"}[result.status]
    print(f"{verdict}: {result.reason} ({result.seconds:.1f} s)"
          + (": this is not a proof." if result.status == "unknown" else "."))
    if result.invariant:
        print(f"Spacer's invariant: {len(result.invariant)} characters of Z3 formulas (all of it with --format json).")
    if found is not None:
        print("\n".join(_found_text(found, None)))
    for path in written:
        print(f"wrote {path}")
    raise typer.Exit(code)
