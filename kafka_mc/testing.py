"""Conformance: hold an encoding of the replication model to the model, state by state.

As Hypothesis ships `run_conformance_test` for its backends, kafka-mc ships `check_conformance` for
encodings of its model (the compiled kernel, the Z3 encoding, a user's own): the model enumerates
every reachable state of each configuration, the encoding expands each state, and every
successor (with its action slot) and every property value it computes must equal the model's.

A list of configurations proves little if it never exercises a rule, so the harness also asks
that across the list every action of the model fires and every value of every protocol choice
(`model.protocols.CHOICES`) runs under a configuration where an action that reads it fires;
`CONFORMANCE_CONFIGS` is such a list. Usage, for any `Encoding`:

    report = check_conformance(my_encoding, CONFORMANCE_CONFIGS)
    assert report.ok, report.summary()
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Protocol, Sequence

from kafka_mc.model import PROTOCOLS, Config, ReplicationModel, State
from kafka_mc.model.protocols import CHOICES
from kafka_mc.model.replication import ACTION_NAMES
from kafka_mc.properties import ALWAYS, PROPERTIES

# Every protocol choice value and every action, replicas 2 to 5, acks all/1/0, min.insync.replicas
# above 1, unclean election, unflushed writes, network failures, replaced disks, delayed AlterPartition
# requests and a leader reading the metadata late, each in a configuration small
# enough to compare on every reachable state (`check_conformance` checks that they are covered).
CONFORMANCE_CONFIGS: tuple[Config, ...] = (
    Config("hw", messages=2, crashes=2, elections=1),
    Config("hw", messages=1, crashes=1, elections=1, min_isr=2, acks="1"),
    Config("hw", replicas=4, messages=1, crashes=0, elections=1),
    Config("leader-epoch", messages=1, crashes=1, elections=1, acks="1", flush=False),
    Config("leader-epoch", messages=2, crashes=1, elections=1, acks="0"),
    Config("leader-epoch", replicas=5, messages=0, crashes=0, elections=0, min_isr=3, acks="0"),
    Config("kip-279", messages=1, crashes=1, elections=1, unclean=True),
    Config("kip-279", messages=1, crashes=0, elections=1, partitions=1),
    Config("kafka-7415", replicas=3, messages=0, crashes=2, elections=2),
    Config("kip-320", replicas=3, messages=1, crashes=1, elections=1),
    Config("diverging-epoch", messages=2, crashes=1, elections=2),
    Config("diverging-epoch", messages=1, crashes=0, elections=1, partitions=1, flush=False),
    Config("kafka-14704", messages=2, crashes=1, elections=2, unclean=True),
    Config("kafka-13141", messages=1, crashes=0, elections=1, partitions=2, acks="1"),
    Config("kip-320", replicas=3, messages=1, crashes=1, elections=1, disk_failures=1),
    Config("kafka-15583", replicas=3, messages=1, crashes=1, elections=1, min_isr=2),
    Config("kip-966", replicas=3, messages=1, crashes=1, elections=1, min_isr=2, unclean=True),
    Config("kip-966", messages=1, crashes=2, elections=2, min_isr=2, unclean=True),
    Config("kafka-13141", messages=1, crashes=1, elections=1, delays=1),
    Config("kafka-14704", messages=1, crashes=1, elections=1, partitions=1, delays=1),
    Config("kip-966", messages=1, crashes=2, elections=1, delays=1, disk_failures=1),  # counted: 1 of 2 crashes
    Config("kip-966", replicas=3, messages=0, crashes=1, elections=1, min_isr=2, delays=1, metadata_lag=True),
    Config("kip-966", messages=1, crashes=1, elections=1, min_isr=2, metadata_lag=True),
)


@dataclass(frozen=True)
class Expansion:
    """What an encoding computes for one state: its successors as (action slot, state), and the
    values of the properties it evaluates (name -> holds; state properties on the state, step
    properties per successor, in successor order). An encoding leaves out what it does not compute."""

    successors: tuple[tuple[int, State], ...]
    state_properties: dict[str, bool] = field(default_factory=dict)
    step_properties: tuple[dict[str, bool], ...] = ()


class Encoding(Protocol):
    """An encoding of the replication model: `expand` gives one `Expansion` per state, in order.
    `ordered`: its successors come in the model's slot order (else they are compared as sets)."""

    name: str
    ordered: bool

    def expand(self, config: Config, states: Sequence[State]) -> Iterable[Expansion]: ...


@dataclass(frozen=True)
class Mismatch:
    config: Config
    state: State
    what: str

    def __str__(self) -> str:
        return f"{self.what}\n  in {self.state}\n  under {self.config}"


@dataclass
class ConformanceReport:
    encoding: str
    states: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    unexercised: list[str] = field(default_factory=list)  # see `coverage_gaps`

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.unexercised

    def summary(self, shown: int = 5) -> str:
        lines = [f"{self.encoding}: {self.states} states compared, {len(self.mismatches)} mismatches"]
        lines += [str(mismatch) for mismatch in self.mismatches[:shown]]
        lines += [f"not exercised: {what}" for what in self.unexercised]
        return "\n".join(lines)


def reachable_states(config: Config, *others: Config,
                     transitions: Callable[[Config], ReplicationModel] = ReplicationModel) -> Iterator[State]:
    """Every state reachable under `config`, breadth first, in the model's order; with `others`,
    every state reachable when each step may be a step of any of these configurations (variants
    mixed: a new leader that caches its epoch at one election and not at the next, ...).
    `transitions`: the model's class (`model.epoch_bumps.EpochBumpModel`: with the epoch bumps)."""
    for state, _ in _expanded([transitions(each) for each in (config, *others)]):
        yield state


def _expanded(models: Sequence[ReplicationModel]) -> Iterator[tuple[State, list[tuple[int, State]]]]:
    """Every state reachable when each step is a step of any of `models`, breadth first, in the
    models' order, with its successors under each model in turn ((slot, state) pairs), each
    computed once."""
    frontier = list(dict.fromkeys(state for model in models for state in model.initial_states()))
    seen = set(frontier)
    while frontier:
        following = []
        for state in frontier:
            successors = [edge for model in models for edge in model.indexed_successors(state)]
            yield state, successors
            for _, successor in successors:
                if successor not in seen:
                    seen.add(successor)
                    following.append(successor)
        frontier = following


def check_conformance(encoding: Encoding, configs: Sequence[Config] = CONFORMANCE_CONFIGS,
                      batch: int = 4096, require_coverage: bool = True,
                      transitions: Callable[[Config], ReplicationModel] = ReplicationModel) -> ConformanceReport:
    """Compare `encoding` with the model (`transitions`' class of it) on every reachable state of
    every configuration, and (unless `require_coverage` is off) report every action and choice
    value left unexercised."""
    report = ConformanceReport(encoding.name)
    fired_by_config = []
    for config in configs:
        model = transitions(config)
        fired: set[str] = set()
        pending: list[tuple[State, list[tuple[int, State]]]] = []  # states with their successors, in order

        def compare_pending() -> None:
            expansions = list(encoding.expand(config, [state for state, _ in pending]))
            if len(expansions) != len(pending):
                raise ValueError(f"{encoding.name} gave {len(expansions)} expansions for {len(pending)} states")
            for (state, expected), expansion in zip(pending, expansions):
                _compare(model, encoding, state, expected, expansion, report, fired)
            pending.clear()

        for state, expected in _expanded([model]):  # the successors compared are those explored
            pending.append((state, expected))
            report.states += 1
            if len(pending) == batch:
                compare_pending()
        if pending:
            compare_pending()
        fired_by_config.append((config, fired))
    if require_coverage:
        report.unexercised = _gaps(fired_by_config)
    return report


def coverage_gaps(configs: Sequence[Config]) -> list[str]:
    """The actions and choice values that no configuration of `configs` exercises (the model alone)."""
    fired_by_config = []
    for config in configs:
        model = ReplicationModel(config)
        fired = {model.action_names[slot // config.replicas] for _, edges in _expanded([model]) for slot, _ in edges}
        fired_by_config.append((config, fired))
    return _gaps(fired_by_config)


def _gaps(fired_by_config: list[tuple[Config, set[str]]]) -> list[str]:
    """A choice value is exercised when a configuration whose protocol has it fires an action that
    reads the choice (`Choice.actions`)."""
    fired = set().union(*(names for _, names in fired_by_config))
    exercised = {(choice.name, getattr(PROTOCOLS[config.protocol], choice.name))
                 for config, names in fired_by_config for choice in CHOICES if names & set(choice.actions)}
    gaps = [f"action {name}" for name in ACTION_NAMES if name not in fired]
    gaps += [f"{choice.name} = {value!r} (no configuration with it fires {' or '.join(choice.actions)})"
             for choice in CHOICES for value in choice.values if (choice.name, value) not in exercised]
    return gaps


def _compare(model: ReplicationModel, encoding: Encoding, state: State, expected: list[tuple[int, State]],
             expansion: Expansion, report: ConformanceReport, fired: set[str]) -> None:
    config = model.config
    fired.update(model.action_names[slot // config.replicas] for slot, _ in expected)
    got = list(expansion.successors)
    if (got != expected) if encoding.ordered else (set(got) != set(expected)):
        extra = [model.action_at(slot) for slot, s in got if (slot, s) not in expected]
        missing = [model.action_at(slot) for slot, s in expected if (slot, s) not in got]
        detail = f"admits {extra} " * bool(extra) + f"misses {missing}" * bool(missing) or "order differs"
        report.mismatches.append(Mismatch(config, state, f"successors: {encoding.name} {detail.strip()}"))
    for prop in PROPERTIES:
        if prop.on_step:
            for (slot, after), values in zip(expected, expansion.step_properties):
                if prop.name in values and values[prop.name] != prop.holds(state, model.action_at(slot), after):
                    report.mismatches.append(Mismatch(config, state, f"step property {prop.name} after "
                                                                     f"{model.action_at(slot)}: {values[prop.name]}"))
        elif prop.name in expansion.state_properties and expansion.state_properties[prop.name] != prop.holds(state):
            kind = "invariant" if prop.kind == ALWAYS else "witness"
            report.mismatches.append(Mismatch(config, state, f"{kind} {prop.name} is "
                                                             f"{expansion.state_properties[prop.name]} in {encoding.name}"))
