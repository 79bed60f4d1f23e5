"""kafka-mc's pytest plugin (entry point `pytest11`): your own properties of the replication model,
checked in your own tests.

A property is a Python function of a `State` (it must hold in every reachable state) or of a step,
`(state, action, next_state)` (it must hold for every transition). It fails by returning False or
by failing an `assert`; anything else is a pass. Declare it with the `always` decorator, which
turns it into a test,

    @always(Config(protocol="kip-279", replicas=3, messages=2))
    def test_leader_holds_every_committed_record(state): ...

or check it from any test through the `kafka_mc` fixture: `kafka_mc.check(config, predicate)`. A
witness, which must hold in at least one reachable state (step), is declared with `sometimes` (or
`kafka_mc.check(config, predicate, sometimes=True)`): it passes once reached.

Engines: `kernel` explores every reachable state with the compiled kernel, the property lowered
(`properties.lowering`: written once in Python, evaluated compiled); `bfs` explores every reachable
state in Python, running the property as written; both give the shortest counterexample.
`hypothesis` runs the model's RuleBasedStateMachine (`checker.machine`) and shrinks what it finds.
`auto` (the default), within `check`'s bounds: the kernel up to AUTO_KERNEL_MAX_STATES states, or,
for a property that does not lower, the Python engine up to AUTO_MAX_STATES; larger ones go to
Hypothesis. On failure the assertion message holds
the trace as a step table, the report files written (ITF, text, Markdown, HTML) and how to
reproduce it.

A pass is only a PASSED when every reachable state was explored. A test that checked a property by
sampling (Hypothesis) and found nothing reads SAMPLED (counted as "sampled" in pytest's summary
line, listed with its runs, states met and seed at the end); `--kafka-mc-require-exhaustive` makes
it fail instead. Hypothesis keeps the examples it finds failing in its example database
(`.hypothesis/` in the working directory) and tries them first on the next run.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest
from tabulate import tabulate

from kafka_mc.model import Config
from kafka_mc.model.config import CHECK_COUNT_LIMIT, BOUNDED_COUNTS
from kafka_mc.properties import ALWAYS, SOMETIMES, Property
from kafka_mc.properties.lowering import NotLowered
from kafka_mc.properties.user import arity, user_property

ENGINES = ("auto", "kernel", "bfs", "hypothesis")
AUTO_KERNEL_MAX_STATES = 10_000_000  # auto: the kernel explores up to this many distinct states, then Hypothesis
AUTO_MAX_STATES = 100_000  # auto, for a property the kernel cannot take: the Python engine up to this many
SAMPLED = "kafka_mc_sampled"  # a test's user property: a property it checked by sampling, and how
DEFAULT_MAX_EXAMPLES = 200
DEFAULT_STEPS = 50  # Hypothesis: steps per example
_OPTIONS = pytest.StashKey["PluginOptions"]()


@dataclass(frozen=True)
class PluginOptions:
    engine: str
    max_examples: int
    seed: int
    seed_given: bool
    reports: Path | None
    require_exhaustive: bool


class PropertyFailed(AssertionError):
    """A user's property does not hold; the message says where, why, and how to reproduce it."""


@dataclass(frozen=True)
class Outcome:
    """How a property that holds was checked."""

    engine: str
    complete: bool  # every reachable state was explored
    states: int  # distinct states met
    examples: int  # Hypothesis examples (0 for bfs)


# --------------------------------------------------------------------------- pytest hooks


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-mc", "kafka-mc model properties")
    group.addoption("--kafka-mc-engine", default="auto", metavar="|".join(ENGINES),
                    help="Engine for kafka-mc properties: auto (exhaustive: the compiled kernel up to "
                         f"{AUTO_KERNEL_MAX_STATES:,} states, or Python up to {AUTO_MAX_STATES:,} for a property "
                         "that does not lower; else Hypothesis), kernel, bfs or hypothesis. Default: auto.")
    group.addoption("--kafka-mc-max-examples", default=str(DEFAULT_MAX_EXAMPLES), metavar="N",
                    help=f"Hypothesis examples per property. Default: {DEFAULT_MAX_EXAMPLES}.")
    group.addoption("--kafka-mc-seed", default=None, metavar="S",
                    help="Seed of the Hypothesis engine (default: a random one, shown in the header).")
    group.addoption("--kafka-mc-require-exhaustive", action="store_true", default=False,
                    help="Fail a property that was checked by sampling (Hypothesis) instead of on every "
                         "reachable state. Without it such a test reports SAMPLED, not PASSED.")
    group.addoption("--kafka-mc-reports", default=None, metavar="DIR",
                    help="Write the reports of failing properties here (default: under pytest's basetemp).")


def pytest_configure(config: pytest.Config) -> None:
    engine = config.getoption("--kafka-mc-engine")
    if engine not in ENGINES:
        raise pytest.UsageError(f"--kafka-mc-engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    max_examples = _positive(config.getoption("--kafka-mc-max-examples"), "--kafka-mc-max-examples", 1)
    seed_text = config.getoption("--kafka-mc-seed")
    seed = (random.SystemRandom().randrange(2**32) if seed_text is None
            else _positive(seed_text, "--kafka-mc-seed", 0))
    reports = config.getoption("--kafka-mc-reports")
    if reports is not None:
        reports = Path(reports)
        if reports.exists() and not reports.is_dir():
            raise pytest.UsageError(f"--kafka-mc-reports {reports} exists and is not a directory")
    config.stash[_OPTIONS] = PluginOptions(engine, max_examples, seed, seed_text is not None, reports,
                                           config.getoption("--kafka-mc-require-exhaustive"))


def _positive(text: str, flag: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        kind = "a positive integer" if least else "a non-negative integer"
        raise pytest.UsageError(f"{flag} must be {kind}, not {text!r}")
    return value


def pytest_report_header(config: pytest.Config) -> str:
    options = config.stash[_OPTIONS]
    reports = options.reports if options.reports is not None else "<basetemp>/kafka-mc-reports"
    return (f"kafka-mc: engine {options.engine}, max examples {options.max_examples}, "
            f"seed {options.seed}, reports {reports}")


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    """A test that passed having checked a property by sampling reads SAMPLED, not PASSED (counted
    as "sampled" in pytest's summary line; the exit status stays 0)."""
    if report.when == "call" and report.passed and any(key == SAMPLED for key, _ in report.user_properties):
        return "sampled", "S", ("SAMPLED", {"yellow": True})
    return None


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Which properties were sampled, how, and how to check every state instead."""
    sampled = terminalreporter.stats.get("sampled", [])
    if not sampled:
        return
    terminalreporter.section("kafka-mc: properties checked by sampling, not on every state", yellow=True)
    for report in sampled:
        for key, text in report.user_properties:
            if key == SAMPLED:
                terminalreporter.line(f"{report.nodeid}: {text}")
    terminalreporter.line("Each held in every state its runs met, but other states were never explored. A "
                          "configuration with fewer states (auto explores up to "
                          f"{AUTO_KERNEL_MAX_STATES:,} with the kernel) or --kafka-mc-engine kernel or bfs "
                          "checks every state; --kafka-mc-require-exhaustive makes a sampled property fail.")


@pytest.fixture
def kafka_mc(request: pytest.FixtureRequest) -> "KafkaMc":
    """Check your own properties of the replication model: `kafka_mc.check(config, predicate)`."""
    return KafkaMc(request)


# --------------------------------------------------------------------------- the user's API


def always(config: Config, *, name: str | None = None, engine: str | None = None,
           max_examples: int | None = None, steps: int | None = None) -> Callable:
    """Make a test of a property: a function of a State, or of (state, action, next_state), that must
    hold in every reachable state (every step) of `config`. `engine`, `max_examples` and `steps`
    (Hypothesis steps per example) override the command line for this property."""
    return _test_of(config, ALWAYS, name=name, engine=engine, max_examples=max_examples, steps=steps)


def sometimes(config: Config, *, name: str | None = None, engine: str | None = None,
              max_examples: int | None = None, steps: int | None = None) -> Callable:
    """Make a test of a witness: a function of a State, or of (state, action, next_state), that must
    hold in at least one reachable state (step) of `config`, as TLC's and Stateright's `sometimes`.
    It passes where a run reaches it; it fails when every reachable state was explored without
    reaching it, or, sampled, when no run reached it (which proves nothing: the message says so)."""
    return _test_of(config, SOMETIMES, name=name, engine=engine, max_examples=max_examples, steps=steps)


def _test_of(config: Config, kind: str, **options) -> Callable:
    """The decorator of `always` (kind ALWAYS) and `sometimes`."""
    if not isinstance(config, Config):
        raise TypeError(f"{'always' if kind == ALWAYS else 'sometimes'}() takes a kafka_mc.model.Config, "
                        f"not {config!r}")

    def decorate(predicate: Callable) -> Callable:
        arity(predicate)  # a wrong signature is an error at import, not at run time

        def test(kafka_mc: KafkaMc) -> None:
            __tracebackhide__ = True
            kafka_mc.check(config, predicate, sometimes=kind == SOMETIMES, **options)

        test.__name__ = predicate.__name__
        test.__qualname__ = predicate.__qualname__
        test.__module__ = predicate.__module__
        test.__doc__ = predicate.__doc__
        setattr(test, "kafka_mc_property", predicate)  # mypy knows no attributes of a function but its own
        setattr(test, "kafka_mc_kind", kind)
        return test

    return decorate


class KafkaMc:
    """The `kafka_mc` fixture: checks properties with the engine and options of the session."""

    def __init__(self, request: pytest.FixtureRequest):
        self.request = request
        self.options: PluginOptions = request.config.stash[_OPTIONS]

    def check(self, config: Config, predicate: Callable, *, sometimes: bool = False, name: str | None = None,
              engine: str | None = None, max_examples: int | None = None, steps: int | None = None) -> Outcome:
        """Check that `predicate` holds in every reachable state (or step) of `config`, or with
        `sometimes` in at least one; PropertyFailed (an AssertionError) with the trace, the reports and
        how to reproduce it otherwise (for a witness: how much was explored without reaching it)."""
        __tracebackhide__ = True
        name = name or predicate.__name__
        engine = engine or self.options.engine
        if getattr(predicate, "_hypothesis_internal_use_reproduce_failure", None):
            engine = "hypothesis"  # the property replays a Hypothesis example
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
        prop = user_property(predicate, name, kind=SOMETIMES if sometimes else ALWAYS)
        exhaustive_bounds = all(getattr(config, count) <= CHECK_COUNT_LIMIT for count in BOUNDED_COUNTS)
        if engine in ("kernel", "bfs") and not exhaustive_bounds:
            raise ValueError(f"the {engine} engine explores at most {CHECK_COUNT_LIMIT} of each of "
                             f"{', '.join(BOUNDED_COUNTS)}; use engine hypothesis or auto for {config}")
        if engine == "hypothesis":
            why = "--kafka-mc-engine hypothesis"
        elif not exhaustive_bounds:
            why = "auto: bounds beyond the exhaustive search's (Config.for_simulation)"
        else:
            searches = [("kernel", AUTO_KERNEL_MAX_STATES), ("bfs", AUTO_MAX_STATES)] if engine == "auto" \
                else [(engine, None)]
            reasons = []
            for search, most in searches:
                try:
                    result = _EXHAUSTIVE[search](config, prop, most)
                except NotLowered as error:
                    if engine == "kernel":
                        raise ValueError(f"{name}: {error} for the kernel; --kafka-mc-engine bfs runs any "
                                         "Python") from None
                    reasons.append(f"the kernel cannot take it: {error}")
                    continue
                if result.complete or _settled(result, prop):
                    return self._verdict(result, prop, predicate, search, complete=result.complete)
                reasons.append(f"more than {most:,} states for the {'kernel' if search == 'kernel' else 'Python engine'}")
                break
            why = "auto: " + "; ".join(reasons)
        result = self._hypothesis(config, prop, predicate, max_examples, steps)
        outcome = self._verdict(result, prop, predicate, "hypothesis", complete=False, why=why)
        if prop.kind == ALWAYS:  # a witness reached is reached, however it was found
            self._sampled(name, outcome, why, steps or DEFAULT_STEPS, result.seed)
        return outcome

    def _sampled(self, name: str, outcome: Outcome, why: str, steps: int, seed: int) -> None:
        """Mark the test: a property held in every state of `outcome.examples` random runs, not in
        every reachable state. With --kafka-mc-require-exhaustive that is a failure."""
        __tracebackhide__ = True
        text = (f"{name} held in {outcome.examples} Hypothesis runs of up to {steps} steps "
                f"({outcome.states:,} distinct states met, seed {seed}; {why}): sampled, not exhaustive")
        if self.options.require_exhaustive:
            pytest.fail(f"kafka-mc: {text}; --kafka-mc-require-exhaustive asks for every state", pytrace=False)
        self.request.node.user_properties.append((SAMPLED, text))

    def _hypothesis(self, config: Config, prop: Property, predicate: Callable, max_examples: int | None,
                    steps: int | None):
        """Hypothesis' run, seeded by the session, or by `@seed` on the predicate; `@reproduce_failure`
        on the predicate replays that example."""
        from hypothesis import HealthCheck, settings

        from kafka_mc.checker.machine import hypothesis_check

        seed = getattr(predicate, "_hypothesis_internal_use_seed", None)
        reproduce = getattr(predicate, "_hypothesis_internal_use_reproduce_failure", None)
        chosen = settings(max_examples=max_examples or self.options.max_examples,
                          stateful_step_count=steps or DEFAULT_STEPS, deadline=None,
                          print_blob=True, report_multiple_bugs=False,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.filter_too_much])
        return hypothesis_check(config, [prop], settings=chosen, seed=self.options.seed if seed is None else seed,
                                reproduce=reproduce)

    def _verdict(self, result, prop: Property, predicate: Callable, engine: str, complete: bool,
                 why: str = "") -> Outcome:
        __tracebackhide__ = True
        outcome = Outcome(engine, complete, result.stats.distinct_states, getattr(result, "examples", 0))
        if prop.kind != ALWAYS:
            if result.witnesses.get(prop.name):
                return outcome
            raise PropertyFailed(self._unreached(prop, engine, result, why))
        trace = _counterexample(result, prop)
        if trace is None:
            return outcome
        raise PropertyFailed(self._message(trace, prop, predicate, engine, result))

    def _unreached(self, prop: Property, engine: str, result, why: str) -> str:
        """Why a witness failed: every state explored without reaching it, or no sampled run reached it."""
        where = "step out of" if prop.on_step else "state among"
        if engine in ("kernel", "bfs"):
            return (f"kafka-mc: witness {prop.name} is never reached: no {where} the "
                    f"{result.stats.distinct_states:,} reachable states of {_config_text(result.config)} "
                    f"satisfies it (every state explored by the {'kernel' if engine == 'kernel' else 'Python engine'}).")
        return (f"kafka-mc: witness {prop.name} was not reached in {result.examples} Hypothesis runs "
                f"({result.stats.distinct_states:,} distinct states met, seed {result.seed}; {why}): sampled, "
                "not exhaustive, so it may still be reachable. A configuration the kernel explores whole "
                "(--kafka-mc-engine kernel or bfs) decides it.")

    def _message(self, trace, prop: Property, predicate: Callable, engine: str, result) -> str:
        from kafka_mc.counterexamples.files import ReportConflict
        from kafka_mc.counterexamples.reports import write_reports

        node = self.request.node
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"{node.path.stem}-{node.name}").strip("-")
        out = self.options.reports
        if out is None:
            out = self.request.getfixturevalue("tmp_path_factory").getbasetemp() / "kafka-mc-reports"
        kind = "step property" if prop.on_step else "property"
        how = ("found by exhaustive search: a shortest counterexample" if engine in ("kernel", "bfs")
               else f"found and shrunk by Hypothesis in {result.examples} examples")
        lines = [f"kafka-mc: {kind} {prop.name} is violated after {len(trace)} steps ({how}).",
                 f"Configuration: {_config_text(trace.config)}", ""]
        if not prop.on_step:
            reason = _assertion(predicate, trace.states()[-1])
        else:
            states = trace.states()
            reason = _assertion(predicate, states[-2], trace.actions[-1], states[-1])
        if reason:
            lines += [f"Assertion: {reason}", ""]
        lines += [step_table(trace, prop), ""]
        try:
            written = write_reports(trace, prop.name, out, stem, f"{prop.name} violated ({node.nodeid})")
            itf = next(path for path in written if path.name.endswith(".itf.json"))
            html = next(path for path in written if path.name.endswith(".html"))
            lines += [f"ITF report: {itf}", f"HTML report: {html}",
                      f"(also {', '.join(str(p) for p in written if p not in (itf, html))})"]
        except ReportConflict as error:
            lines.append(f"No reports written: {error}")
        lines.append("")
        if engine in ("kernel", "bfs"):
            lines.append(f"Reproduce: pytest '{node.nodeid}' --kafka-mc-engine {engine} (exhaustive search is "
                         "deterministic).")
        else:
            lines.append(f"Reproduce: pytest '{node.nodeid}' --kafka-mc-engine hypothesis "
                         f"--kafka-mc-seed {result.seed}")
            if result.reproduce_blob:
                lines.append(f"or put Hypothesis' {result.reproduce_blob} between @always(...) and the "
                             "property's def (from hypothesis import reproduce_failure).")
        return "\n".join(lines)


# --------------------------------------------------------------------------- properties and engines


def _assertion(predicate: Callable, *arguments) -> str:
    """The message of the predicate's failing assert on these arguments, if it has one."""
    try:
        predicate(*arguments)
    except AssertionError as error:
        return str(error) or "assert failed"
    return ""


def _bfs(config: Config, prop: Property, max_states: int | None):
    """Exhaustive search. A step invariant becomes the `sometimes` witness of its failure: the checker
    looks at every transition for witnesses, and the first one it reaches is at a least depth."""
    from kafka_mc.checker import Budget, check

    budget = Budget(max_states=max_states)
    if not prop.on_step or prop.kind != ALWAYS:
        return check(config, [prop], budget=budget)
    failure = Property(prop.name, SOMETIMES, prop.source, lambda before, action, after: not prop.holds(before, action, after),
                       on_step=True)
    return check(config, [failure], budget=budget)


def _kernel(config: Config, prop: Property, max_states: int | None):
    """Exhaustive search by the compiled kernel, the property lowered; NotLowered when it does not lower."""
    from kafka_mc.checker import Budget
    from kafka_mc.checker.kernel import kernel_check

    return kernel_check(config, [prop], budget=Budget(max_states=max_states))


_EXHAUSTIVE = {"kernel": _kernel, "bfs": _bfs}


def _settled(result, prop: Property) -> bool:
    """Whether an incomplete run decided the property: a counterexample found, a witness reached."""
    if prop.kind != ALWAYS:
        return bool(result.witnesses.get(prop.name))
    return _counterexample(result, prop) is not None


def _counterexample(result, prop: Property):
    """The trace of the property's violation in an engine's result, or None."""
    for violation in result.violations:
        if violation.invariant == prop.name:
            return violation.trace
    if prop.on_step and result.witnesses.get(prop.name):
        return result.witness_traces[prop.name]
    return None


# --------------------------------------------------------------------------- the message


def _config_text(config: Config) -> str:
    return ", ".join(f"{key}={value}" for key, value in config.to_dict().items())


def step_table(trace, prop: Property) -> str:
    """One row per step: the action, each replica's log (epochs), HW and role, the controller, and
    where the property fails."""
    from kafka_mc.counterexamples.views import isr_text, log_text
    from kafka_mc.model.values import leader_name
    from kafka_mc.model.state import ROLE_NAMES, STATUS_NAMES, replica_name

    steps = trace.steps()
    replicas = len(steps[0][1].replicas)
    rows = []
    before = None
    for number, (action, state) in enumerate(steps):
        cells = []
        for index, replica in enumerate(state.replicas):
            status = "" if replica.alive else f" ({STATUS_NAMES[replica.status]})"
            cells.append(f"[{log_text(replica)}] HW {replica.hw} {ROLE_NAMES[replica.role]}{status}")
        controller = f"{leader_name(state)} e{state.controller.epoch} {isr_text(state)}"
        broken = (before is not None and not prop.holds(before, action, state)) if prop.on_step else not prop.holds(state)
        rows.append((number, "Init" if action is None else str(action), *cells, controller,
                     "✗ violated" if broken else ""))
        before = state
    headers = ("step", "action", *(replica_name(i) for i in range(replicas)), "leader, epoch, ISR", "property")
    return tabulate(rows, headers=headers)
