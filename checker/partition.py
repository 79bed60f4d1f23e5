"""One share of a breadth-first exploration: the states whose fingerprint falls to it.

A run with N workers splits the visited set over N partitions by `owner_of`, a hash of
the slowly changing part of a state (records written, crashes, the controller's leader
and epoch, the committed history), so that most successors belong to the partition that
generated them and never cross between processes. Each level, every partition expands
its frontier, keeps its own new successors as they come and sends the others, packed, to
the partition that owns them, which keeps the new ones, deduplicated by fingerprint.

Which parent a state keeps, and which violating state a level reports, is decided by a
path key, not by arrival order: the key of an initial state is its index, the key of a
successor is `parent key * A + action index` (A = the number of action slots). Keys of one
level compare as their action paths do lexicographically, so every state keeps the least
shortest path to it, the one a sequential search finds first, whatever N is. A frontier
is expanded in key order, so the first path to a state found in one partition is its least
one there; a state that arrives later from another partition on a lesser path is linked
to that path instead, and the next frontier is sorted by key. With one partition nothing
arrives, node numbers are handed out in key order and stand in for the keys.

Memory per state: 8 bytes in the visited table (`checker.fingerprints`), 7 in the parent
arrays; a frontier holds packed states (`checker.packing`), 48 bytes each for 3 replicas.
"""

from __future__ import annotations

import gc
import time
from array import array
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Iterator

from kafka_mc.model import Config, ReplicationModel, State, fingerprint
from kafka_mc.model.state import owner_hash
from kafka_mc.model.symmetry import canonical
from kafka_mc.properties import ALWAYS, Property

from .fingerprints import FingerprintTable
from .packing import StatePacker

DEADLINE_EVERY = 256  # frontier states between looks at the clock, when a level has a deadline


def past(stop_at: float | None, position: int) -> bool:
    """Whether a level expanding its frontier state `position` is past its deadline `stop_at` (a
    `time.monotonic()` reading, one clock for every process; None: no deadline). The clock is
    read every DEADLINE_EVERY states."""
    return stop_at is not None and position % DEADLINE_EVERY == 0 and time.monotonic() >= stop_at

ROOT = -1


def owner_of(state: State, count: int) -> int:
    """The partition that owns a state: by its `owner_hash`."""
    return owner_hash(state) % count


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


@dataclass
class LevelReport:
    """What one partition saw in one level; `found` maps a property to (key, where)."""

    generated: int = 0
    new_states: int = 0
    frontier: int = 0
    found: dict[str, tuple] = field(default_factory=dict)
    cut: bool = False  # the level stopped at its deadline before every state was expanded
    enabled: Counter = field(default_factory=Counter)  # action name -> successors it generated
    new_by_action: Counter = field(default_factory=Counter)  # action name -> new states it reached first

    def offer(self, name: str, key: int | tuple[int, int], where: tuple) -> None:
        if name not in self.found or key < self.found[name][0]:
            self.found[name] = (key, where)

    def merge(self, other: "LevelReport") -> "LevelReport":
        self.generated += other.generated
        self.new_states += other.new_states
        self.frontier += other.frontier
        self.cut |= other.cut
        self.enabled.update(other.enabled)
        self.new_by_action.update(other.new_by_action)
        for name, (key, where) in other.found.items():
            self.offer(name, key, where)
        return self


@dataclass
class Frontier:
    """The states of one level in one partition, packed, with their node numbers and (with
    several partitions) their path keys."""

    records: bytearray = field(default_factory=bytearray)
    nodes: array = field(default_factory=lambda: array("I"))
    keys: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.nodes)

    def key(self, position: int) -> int:
        return self.keys[position] if self.keys else self.nodes[position]

    def sorted_by_key(self, record_size: int) -> "Frontier":
        order = sorted(range(len(self.keys)), key=self.keys.__getitem__)
        records = memoryview(self.records)
        return Frontier(bytearray(b"".join(records[i * record_size:(i + 1) * record_size] for i in order)),
                        array("I", (self.nodes[i] for i in order)), [self.keys[i] for i in order])


@dataclass
class Outbox:
    """Successors on their way from partition `sender` to the partition that owns them:
    packed with the sender's numbering, and the interned values the owner has not had yet."""

    sender: int
    fingerprints: array = field(default_factory=lambda: array("Q"))
    keys: list[int] = field(default_factory=list)
    parent_nodes: array = field(default_factory=lambda: array("I"))
    actions: array = field(default_factory=lambda: array("H"))
    records: bytearray = field(default_factory=bytearray)
    objects: list = field(default_factory=list)


class Watching:
    """The properties a breadth-first search still looks for, by kind (`watch`); `settle` stops
    looking for those whose first occurrence is known. The base of every visited set's level."""

    def watch(self, properties: tuple[Property, ...]) -> None:
        self.invariants = [p for p in properties if p.kind == ALWAYS and not p.on_step]
        self.step_invariants = [p for p in properties if p.kind == ALWAYS and p.on_step]
        self.state_witnesses = [p for p in properties if p.kind != ALWAYS and not p.on_step]
        self.step_witnesses = [p for p in properties if p.kind != ALWAYS and p.on_step]

    def settle(self, names: set[str]) -> None:
        """Stop looking for properties whose first occurrence is known."""
        for group in (self.invariants, self.step_invariants, self.state_witnesses, self.step_witnesses):
            group[:] = [p for p in group if p.name not in names]


class Partition(Watching):
    def __init__(self, config: Config, properties: tuple[Property, ...], index: int, count: int,
                 symmetry: bool):
        self.model = ReplicationModel(config)
        self.index, self.count = index, count
        self.represent: Callable[[State], State] = canonical if symmetry else (lambda state: state)
        self.watch(properties)
        self.visited = FingerprintTable()  # the fingerprints of every state this partition owns
        self.parent_partition = array("b")
        self.parent_node = array("I")
        self.action = array("H")  # the action index, or the initial-state index of a root
        self.packer = StatePacker(self.model.initial_states()[0])
        self.frontier = Frontier()
        self.slots = len(self.model.action_names) * config.replicas
        self._shared = [0] * count  # how many of our interned values each partition has had
        self._received: list[list] = [[] for _ in range(count)]  # every partition's interned values
        self._violations: list[tuple[str, int]] = []  # (invariant or witness, frontier position)

    def seed(self) -> LevelReport:
        """Take the initial states this partition owns."""
        initial_states = self.model.initial_states()
        report = LevelReport(generated=len(initial_states) if self.index == 0 else 0)
        for index, state in enumerate(initial_states):
            state = self.represent(state)
            if owner_of(state, self.count) == self.index and self.visited.add(fingerprint(state)):
                self._keep(ROOT, 0, index, index, state, report)
        return self._close(report, self.frontier)

    def level_alone(self, stop_at: float | None = None) -> LevelReport:
        """A level of the only partition of a run: each new successor is kept as it comes (until
        `time.monotonic()` passes `stop_at`, if given: the report is then `cut`)."""
        report = LevelReport()
        current, self.frontier = self.frontier, Frontier()
        visited, index = self.visited, self.index
        for node, _, slot, following in self._successors(current, report, stop_at):
            if visited.add(fingerprint(following)):
                self._keep(index, node, slot, None, following, report)
        return self._close(report, self.frontier)

    def level(self, exchange: Callable[[list[Outbox]], list[Outbox]], stop_at: float | None = None) -> LevelReport:
        """A level of one of several partitions: keep our own new successors as they come, hand
        the others to their owners through `exchange` (which returns the outboxes addressed to
        us), then keep or relink what arrives and sort the next frontier by key. Past `stop_at`
        the expansion stops (the report is `cut`) and what was made is still exchanged."""
        report = LevelReport()
        current, self.frontier = self.frontier, Frontier()
        visited, index, count, slots = self.visited, self.index, self.count, self.slots
        fresh: dict[int, int] = {}  # fingerprint -> frontier position, for this level's new states
        outboxes = [Outbox(index) for _ in range(count)]
        sent: list[set[int]] = [set() for _ in range(count)]
        for node, key, slot, following in self._successors(current, report, stop_at):
            fingerprint_ = fingerprint(following)
            owner = owner_of(following, count)
            if owner == index:
                if visited.add(fingerprint_):
                    fresh[fingerprint_] = len(self.frontier)
                    self._keep(index, node, slot, key * slots + slot, following, report)
            elif fingerprint_ not in sent[owner]:  # the first one sent has the least key
                sent[owner].add(fingerprint_)
                self._post(outboxes[owner], fingerprint_, key * slots + slot, node, slot, following)
        for outbox in exchange(self._share(outboxes)):
            self._receive(outbox, fresh, report)
        return self._close(report, self.frontier)

    def _successors(self, current: Frontier, report: LevelReport,
                    stop_at: float | None = None) -> Iterator[tuple[int, int, int, State]]:
        """(node, key, action slot, successor) for a whole frontier, in key order (or until
        `stop_at`: `report.cut`); counts them and offers to `report` each step invariant broken
        and each step witness reached."""
        slots, successors, represent = self.slots, self.model.indexed_successors, self.represent
        step_properties = self.step_invariants or self.step_witnesses
        enabled = [0] * slots
        try:
            for position, state in enumerate(self.packer.unpack(current.records)):
                if past(stop_at, position):
                    report.cut = True
                    return
                node, key = current.nodes[position], current.key(position)
                for slot, following in successors(state):
                    enabled[slot] += 1
                    action = self.model.action_at(slot) if step_properties else None
                    for prop in self.step_invariants:
                        if not prop.holds(state, action, following):
                            report.offer(prop.name, key * slots + slot, (self.index, node, slot))
                    for prop in self.step_witnesses:
                        if prop.holds(state, action, following):
                            report.offer(prop.name, key * slots + slot, (self.index, node, slot))
                    yield node, key, slot, represent(following)
        finally:
            report.generated += sum(enabled)
            report.enabled.update(self._by_action_name(enabled))

    def _by_action_name(self, counts: list[int]) -> Counter:
        """Counts per action slot summed per action name."""
        named: Counter = Counter()
        for slot, count in enumerate(counts):
            if count:
                named[self.model.action_at(slot).name] += count
        return named

    def _keep(self, parent_partition: int, parent_node: int, action: int, key: int | None, state: State,
              report: LevelReport) -> None:
        """Number a new state, link it to its parent, queue it and check it; `key` is None when
        node numbers stand in for keys."""
        node = len(self.parent_node)
        self.parent_partition.append(parent_partition)
        self.parent_node.append(parent_node)
        self.action.append(action)
        frontier = self.frontier
        position = len(frontier)
        frontier.records += self.packer.pack(state)
        frontier.nodes.append(node)
        if key is not None:
            frontier.keys.append(key)
        report.new_states += 1
        for prop in self.invariants:
            if not prop.holds(state):
                self._violations.append((prop.name, position))
        for prop in self.state_witnesses:
            if prop.holds(state):
                self._violations.append((prop.name, position))

    def _post(self, outbox: Outbox, fingerprint_: int, key: int, parent_node: int, action: int,
              state: State) -> None:
        outbox.fingerprints.append(fingerprint_)
        outbox.keys.append(key)
        outbox.parent_nodes.append(parent_node)
        outbox.actions.append(action)
        outbox.records += self.packer.pack(state)

    def _share(self, outboxes: list[Outbox]) -> list[Outbox]:
        """Add to each outbox the interned values its partition has not had from us yet."""
        objects = self.packer.objects
        for target, outbox in enumerate(outboxes):
            outbox.objects = objects[self._shared[target]:]
            self._shared[target] = len(objects)
        return outboxes

    def _receive(self, outbox: Outbox, fresh: dict[int, int], report: LevelReport) -> None:
        """Keep the new states of another partition's outbox; relink one of this level to a
        lesser path when the outbox brings one."""
        objects = self._received[outbox.sender]
        objects.extend(outbox.objects)
        frontier, size = self.frontier, self.packer.size
        for position, fingerprint_ in enumerate(outbox.fingerprints):
            key = outbox.keys[position]
            if self.visited.add(fingerprint_):
                record = outbox.records[position * size:(position + 1) * size]
                fresh[fingerprint_] = len(frontier)
                self._keep(outbox.sender, outbox.parent_nodes[position], outbox.actions[position], key,
                           next(self.packer.unpack(record, objects)), report)
                continue
            mine = fresh.get(fingerprint_)
            if mine is not None and key < frontier.keys[mine]:
                node = frontier.nodes[mine]
                self.parent_partition[node] = outbox.sender
                self.parent_node[node] = outbox.parent_nodes[position]
                self.action[node] = outbox.actions[position]
                frontier.keys[mine] = key

    def _close(self, report: LevelReport, frontier: Frontier) -> LevelReport:
        """Offer the level's violations and witnesses under their final keys; count the new states
        by the action of their final parent link; put the next frontier in key order."""
        new = [0] * self.slots
        for node in frontier.nodes:
            if self.parent_partition[node] != ROOT:
                new[self.action[node]] += 1
        report.new_by_action.update(self._by_action_name(new))
        for name, position in self._violations:
            report.offer(name, frontier.key(position), (self.index, frontier.nodes[position]))
        self._violations.clear()
        if frontier.keys:
            self.frontier = frontier.sorted_by_key(self.packer.size)
        report.frontier = len(frontier)
        return report

    def link(self, node: int) -> tuple[int, int, int]:
        """(parent partition, parent node, action index) of a node; ROOT partition for an
        initial state, whose action is its initial-state index."""
        return self.parent_partition[node], self.parent_node[node], self.action[node]
