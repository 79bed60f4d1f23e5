"""One share of a breadth-first exploration: the states whose fingerprint falls to it.

A run with N workers splits the visited set over N partitions by `owner_of`, a hash of
the slowly changing part of a state (records written, crashes, the controller's leader
and epoch, the committed history), so that most successors belong to the partition that
generated them and never cross between processes. Each level, every partition expands
its frontier and sends each successor to the partition that owns it, which keeps the
new ones, deduplicated by their full fingerprint.

Which parent a state keeps, and which violating state a level reports, is decided by a
path key, not by arrival order: the key of an initial state is its index, the key of a
successor is `parent key * A + action index` (A = the number of action slots). Keys of one
level compare as their action paths do lexicographically, so every state keeps the least
shortest path to it, the one a sequential search finds first, whatever N is.
"""

from __future__ import annotations

import gc
from array import array
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, NamedTuple

from kafka_mc.model import Config, ReplicationModel, State, fingerprint
from kafka_mc.model.symmetry import canonical
from kafka_mc.properties import ALWAYS, Property

ROOT = -1


def owner_of(state: State, count: int) -> int:
    """The partition that owns a state: a stable hash (ints only) of its slowly changing part."""
    controller = state.controller
    return hash((state.written, state.crashes, controller.epoch, controller.leader, state.committed)) % count


@contextmanager
def without_cyclic_gc():
    """States are acyclic tuples of ints, freed by reference counting; the cyclic collector
    would only walk the growing frontier and visited set again and again (on a 6.5e5-state run
    it took more than half the time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Candidate(NamedTuple):
    """A successor on its way to the partition that owns its fingerprint."""

    key: int
    fingerprint: int
    parent_partition: int
    parent_node: int
    action: int
    state: State


@dataclass
class LevelReport:
    """What one partition saw in one level; `found` maps a property to (key, where)."""

    generated: int = 0
    new_states: int = 0
    frontier: int = 0
    found: dict[str, tuple] = field(default_factory=dict)

    def offer(self, name: str, key: int, where: tuple) -> None:
        if name not in self.found or key < self.found[name][0]:
            self.found[name] = (key, where)

    def merge(self, other: "LevelReport") -> "LevelReport":
        self.generated += other.generated
        self.new_states += other.new_states
        self.frontier += other.frontier
        for name, (key, where) in other.found.items():
            self.offer(name, key, where)
        return self


class Partition:
    def __init__(self, config: Config, properties: tuple[Property, ...], index: int, count: int,
                 symmetry: bool):
        self.model = ReplicationModel(config)
        self.index, self.count = index, count
        self.represent: Callable[[State], State] = canonical if symmetry else (lambda state: state)
        self.invariants = [p for p in properties if p.kind == ALWAYS]
        self.state_witnesses = [p for p in properties if p.kind != ALWAYS and not p.on_step]
        self.step_witnesses = [p for p in properties if p.kind != ALWAYS and p.on_step]
        self.seen: set[int] = set()  # the fingerprints of every state this partition owns
        self.parent_partition = array("b")
        self.parent_node = array("q")
        self.action = array("q")  # the action index, or the initial-state index of a root
        self.frontier: list[tuple[int, int, State]] = []  # (node, key, state)
        self.slots = len(self.model.action_names) * config.replicas

    def __len__(self) -> int:
        return len(self.parent_node)

    def settle(self, names: set[str]) -> None:
        """Stop looking for properties whose first occurrence is known."""
        for group in (self.invariants, self.state_witnesses, self.step_witnesses):
            group[:] = [p for p in group if p.name not in names]

    def seed(self) -> LevelReport:
        """Take the initial states this partition owns."""
        candidates = []
        for index, state in enumerate(self.model.initial_states()):
            state = self.represent(state)
            candidates.append(Candidate(index, fingerprint(state), ROOT, ROOT, index, state))
        report = self.absorb([[c for c in candidates if owner_of(c.state, self.count) == self.index]])
        report.generated = len(candidates) if self.index == 0 else 0
        return report

    def expand(self) -> tuple[list[list[Candidate]], LevelReport]:
        """Every successor of the frontier, sorted by owning partition, and the step witnesses seen."""
        outboxes: list[list[Candidate]] = [[] for _ in range(self.count)]
        report = LevelReport()
        for node, key, slot, following in self._successors(report):
            outboxes[owner_of(following, self.count)].append(
                Candidate(key * self.slots + slot, fingerprint(following), self.index, node, slot, following))
        return outboxes, report

    def _successors(self, report: LevelReport):
        """(node, key, action slot, successor) for the whole frontier, which it empties,
        in key order; counts them and offers the step witnesses to `report`."""
        frontier, self.frontier = self.frontier, []
        slots, successors, represent = self.slots, self.model.indexed_successors, self.represent
        for node, key, state in frontier:
            for slot, following in successors(state):
                report.generated += 1
                for prop in self.step_witnesses:
                    if prop.holds(state, following):
                        report.offer(prop.name, key * slots + slot, (self.index, node, slot))
                yield node, key, slot, represent(following)

    def absorb(self, batches: list[list[Candidate]]) -> LevelReport:
        """Keep the successors never seen before, each with its least-key parent, and check them."""
        best: dict[int, Candidate] = {}
        for batch in batches:
            for candidate in batch:
                key = candidate.fingerprint
                if key in self.seen:
                    continue
                known = best.get(key)
                if known is None or candidate.key < known.key:
                    best[key] = candidate
        report = LevelReport()
        for fingerprint_, c in sorted(best.items(), key=lambda item: item[1].key):
            self._keep(fingerprint_, c.parent_partition, c.parent_node, c.action, c.key, c.state, report)
        report.frontier = len(self.frontier)
        return report

    def _keep(self, fingerprint_: int, parent_partition: int, parent_node: int, action: int, key: int,
              state: State, report: LevelReport) -> None:
        """Number a new state, link it to its parent, queue it and check it."""
        node = len(self.parent_node)
        self.seen.add(fingerprint_)
        self.parent_partition.append(parent_partition)
        self.parent_node.append(parent_node)
        self.action.append(action)
        self.frontier.append((node, key, state))
        report.new_states += 1
        for prop in self.invariants:
            if not prop.holds(state):
                report.offer(prop.name, key, (self.index, node))
        for prop in self.state_witnesses:
            if prop.holds(state):
                report.offer(prop.name, key, (self.index, node))

    def level_alone(self) -> LevelReport:
        """`level` for the only partition of a run: the frontier is in key order and each
        state's successors come in action order, so the first path to a new state is its
        least one; successors are kept as they come, with no candidates and no sorting."""
        report = LevelReport()
        seen, slots = self.seen, self.slots
        for node, key, slot, following in self._successors(report):
            fingerprint_ = fingerprint(following)
            if fingerprint_ not in seen:
                self._keep(fingerprint_, self.index, node, slot, key * slots + slot, following, report)
        report.frontier = len(self.frontier)
        return report

    def level(self, exchange: Callable[[list[list[Candidate]]], list[list[Candidate]]]) -> LevelReport:
        """Expand the frontier, hand the successors to their owners through `exchange` (which
        returns the batches addressed to this partition) and absorb what arrives."""
        outboxes, report = self.expand()
        return report.merge(self.absorb(exchange(outboxes)))

    def link(self, node: int) -> tuple[int, int, int]:
        """(parent partition, parent node, action index) of a node; ROOT partition for an
        initial state, whose action is its initial-state index."""
        return self.parent_partition[node], self.parent_node[node], self.action[node]
