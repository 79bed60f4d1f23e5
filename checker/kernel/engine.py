"""`kernel_check`: the breadth-first search of `checker.bfs.check`, run by the compiled kernel.

The same counts, verdicts and traces as the BFS engine: levels are expanded in node order and
slot order, a state keeps the first (least) path to it, and the first occurrence of each
property in a level is the one reported. Traces are rebuilt from the parent links and
replayed through the explicit model (`checker.bfs.concrete_trace`), so reports are unchanged.

With `symmetry`, a state's representative is the least of its replica permutations in the
packed form (not `model.symmetry.canonical`, the least in tuple order): the same classes, so
the same counts, verdicts and shortest lengths as the BFS engine with symmetry; a trace is the
least path over these representatives, renamed onto concrete states (`concrete_trace`), so it
may differ from the BFS engine's while being as short.

Users' own properties (a `Property` with its Python `predicate`) run lowered (`properties.lowering`,
`user_properties`): where the kernel flags one, the user's function is evaluated on the trace's
last state, so its verdict and its errors are its own. One that does not lower is refused
(`NotLowered`, naming the construct and line); `checker.bfs.check` runs any Python.
"""

from __future__ import annotations

import time
from collections import Counter
from itertools import permutations
from typing import Callable, Iterable

import numba
import numpy as np

from kafka_mc.control.epoch_bumps import EpochBumpSystem
from kafka_mc.control.replication import ReplicationSystem, model_of
from kafka_mc.model import Config, ReplicationModel, State
from kafka_mc.model.epoch_bumps import EpochBumpModel, bounding_config
from kafka_mc.model.interface import Model
from kafka_mc.properties import ALWAYS, PROPERTIES, Property, shipped

from ..bfs import Budget, Progress, concrete_trace, search_result, stop_reason
from ..interrupts import Interrupted, deferred_interrupts
from ..result import CheckResult, Coverage, KernelStats, Trace, coverage_of
from .cache import compile_lock
from .explore import (NOT_FOUND, SHARDS, explore_level, fingerprints, insert_all, new_table, table_slots,
                      pack_represented, unpack)
from .invariants import FOLLOWER_TRUNCATED, PROPERTY_NAMES, state_flags
from .layout import WIDTH, decode, encode, packing, settings
from .links import NO_PARENT, ParentLinks
from .transitions import slot_codes
from .user_properties import UserChecks, lowered_program

INITIAL_TABLE_SLOTS = 1 << 16
PART = 1 << 16  # frontier states a kernel call expands: about 0.1 s on one core, so a run stops
# within a second of its time budget or an interrupt


def replica_orders(replicas: int, symmetry: bool) -> np.ndarray:
    """The replica orders a state is represented under: every permutation, identity first, with
    symmetry; the identity alone without."""
    orders = list(permutations(range(replicas))) if symmetry else [tuple(range(replicas))]
    return np.array(orders, dtype=np.int64)


_compiled = False


def compile_kernel() -> float:
    """Compile (or load from numba's cache) every kernel function, once per process, by exploring
    a tiny configuration; the seconds it took, 0 when already done."""
    global _compiled
    if _compiled:
        return 0.0
    started = time.perf_counter()
    with compile_lock():
        _Search(Config("hw", replicas=2, messages=1, crashes=0, elections=0), PROPERTIES).run_level()
    _compiled = True
    return time.perf_counter() - started


class _Search:
    """The kernel's arrays for one run: frontier, visited table, parent links, found properties.
    `programs`: the users' properties among `properties`, lowered already (lowered here when None)."""

    def __init__(self, config: Config, properties: tuple[Property, ...], symmetry: bool = False,
                 programs: list | None = None, bumps: bool = False):
        self.model = EpochBumpModel(config) if bumps else ReplicationModel(config)
        self.symmetry = symmetry
        self.orders = replica_orders(config.replicas, symmetry)
        self.cfg = settings(config, bumps)
        self.slot_codes = slot_codes(self.model.action_names, config.replicas)
        self.enabled = np.zeros(len(self.slot_codes), dtype=np.int64)  # successors generated, per action slot
        self.layout = packing(config, bumps)
        wanted = {p.name for p in properties if shipped(p)}
        users = [p for p in properties if not shipped(p)]
        self.user = UserChecks(self.model, users, len(self.slot_codes),
                               [lowered_program(p, lowering_config(config, bumps)) for p in users]
                               if programs is None else programs)
        self.looking = sum(1 << index for index, name in enumerate(PROPERTY_NAMES) if name in wanted)
        self.found_nodes = np.full(len(PROPERTY_NAMES), NOT_FOUND, dtype=np.int64)
        self.found_slots = np.full(len(PROPERTY_NAMES), NOT_FOUND, dtype=np.int64)
        self.table = new_table(INITIAL_TABLE_SLOTS)  # the visited table (`explore.insert_block`)
        self.shard_counts = np.zeros(SHARDS, dtype=np.int64)  # the fingerprints in each of its shards
        self.links = ParentLinks()
        self.distinct = self.generated = 0
        self.first_node = 0  # the frontier's first node
        self.growth = 1.0  # the last level's size over the one before
        self.frontier, self.frontier_count = self._seed()

    def _seed(self) -> tuple[np.ndarray, int]:
        """The initial states, each kept when new, checked, numbered in order."""
        words = self.layout.word_count
        initial_states = self.model.initial_states()
        self.generated = len(initial_states)
        packed = np.zeros(len(initial_states) * words, dtype=np.int64)
        for index, state in enumerate(initial_states):
            self.represent_into(encode(state), packed, index * words)
        fresh = np.flatnonzero(insert_all(self.table, self.shard_counts, fingerprints(packed, len(initial_states), words)))
        frontier = np.zeros(len(initial_states) * words, dtype=np.int64)
        count = 0
        for index in fresh.tolist():
            frontier[count * words:(count + 1) * words] = packed[index * words:(index + 1) * words]
            self._offer(state_flags(self.cfg, self.unpacked(frontier[count * words:(count + 1) * words])), count)
            count += 1
        self.links.extend(np.full(count, NO_PARENT, dtype=np.uint32), fresh.astype(np.uint8))
        self.distinct = self.roots = count
        self.user.states(self.cfg, self.layout, frontier, count, 0)
        return frontier[:count * words], count

    def represent_into(self, wide: np.ndarray, out: np.ndarray, base: int) -> None:
        """Pack a wide state (its representative, with symmetry) into out[base:]."""
        layout = self.layout
        pack_represented(self.cfg, wide, self.orders, np.empty_like(wide), np.empty(layout.word_count, np.int64),
                         layout.cells, layout.biases, layout.shifts, layout.words, layout.word_count, out, base)

    def unpacked(self, row: np.ndarray) -> np.ndarray:
        layout, wide = self.layout, np.empty(WIDTH, dtype=np.int16)
        unpack(row, 0, layout.cells, layout.biases, layout.bits, layout.shifts, layout.words, wide)
        return wide

    def represent(self, state: State) -> State:
        """The representative of a model state, as the kernel picks it."""
        row = np.zeros(self.layout.word_count, dtype=np.int64)
        self.represent_into(encode(state), row, 0)
        return decode(self.unpacked(row), self.model.config.replicas)

    def _offer(self, flags: int, node: int) -> None:
        hits = flags & self.looking
        for index in range(len(PROPERTY_NAMES)):
            if hits >> index & 1:
                self.found_nodes[index] = node
                self.looking &= ~(1 << index)

    def run_level(self, stop: Callable[[], bool] = lambda: False) -> int | None:
        """Expand the frontier, `PART` states a call, asking `stop` between calls; the number of
        new states, or None when `stop` said yes before the level was done (the search is then
        partial: its counts are those reached so far)."""
        layout, words = self.layout, self.layout.word_count
        new_node = self.first_node + self.frontier_count
        parts, made = [], 0
        for start in range(0, self.frontier_count, PART):
            if start and stop():
                return None
            count = min(PART, self.frontier_count - start)
            part = self.frontier[start * words:(start + count) * words]
            self.user.steps(self.cfg, self.slot_codes, layout, part, count, self.first_node + start)
            parents, slots, frontier, new, generated = explore_level(
                self.cfg, self.slot_codes, self.orders, layout.cells, layout.biases, layout.bits, layout.shifts,
                layout.words, words, part, count, self.first_node + start, new_node + made, self.table,
                self.shard_counts, self.found_nodes, self.found_slots, self.looking, self._next_capacity(count),
                self.enabled)
            self.links.extend(parents, slots)
            self.distinct += new
            self.looking = sum(1 << index for index in range(len(PROPERTY_NAMES))
                               if self.looking >> index & 1 and self.found_nodes[index] == NOT_FOUND)
            self.user.states(self.cfg, layout, frontier, new, new_node + made)
            self.generated += generated
            parts.append(frontier)
            made += new
        self.first_node = new_node
        self.growth = made / max(self.frontier_count, 1)
        self.frontier = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else self.frontier[:0]
        self.frontier_count = made
        return made

    def _next_capacity(self, count: int) -> int:
        """The new states `count` frontier states make if the level grows as the last one did, and a
        tenth more."""
        return int(count * max(self.growth, 1.0) * 1.1)

    def coverage(self) -> tuple[Coverage, ...]:
        return slot_coverage(self.model, self.enabled, self.links.slot_counts(self.roots, len(self.enabled)))

    def found_names(self) -> set[str]:
        """The properties found so far."""
        return {PROPERTY_NAMES[i] for i in range(len(PROPERTY_NAMES)) if self.found_nodes[i] != NOT_FOUND} | \
            set(self.user.found)

    def found(self) -> dict[str, Trace]:
        """The trace to the first occurrence of every property found; a user's property is confirmed by
        its own function at the trace's end (`UserChecks.confirm`)."""
        traces = {}
        for index, name in enumerate(PROPERTY_NAMES):
            node = int(self.found_nodes[index])
            if node != NOT_FOUND:
                step = int(self.found_slots[index]) if index == FOLLOWER_TRUNCATED else None
                traces[name] = self.trace(node, step)
        for name, (node, step) in self.user.found.items():
            traces[name] = self.trace(node, step)
            self.user.confirm(name, traces[name], self.symmetry)
        return traces

    def trace(self, node: int, step: int | None) -> Trace:
        return path_trace(self.model, self.links, node, step, self.symmetry, self.represent)


def slot_coverage(model: ReplicationModel, enabled: np.ndarray, new: np.ndarray) -> tuple[Coverage, ...]:
    """Per action: the successors its slots generated (`enabled`, per slot), and the states first
    reached by them (`new`, per slot: `ParentLinks.slot_counts` of the non-initial states)."""
    generated: Counter = Counter()
    reached: Counter = Counter()
    for slot in range(len(enabled)):
        name = model.action_at(slot).name
        generated[name] += int(enabled[slot])
        reached[name] += int(new[slot])
    return coverage_of(model.action_names, generated, reached)


def path_trace(model: ReplicationModel, links: ParentLinks, node: int, step: int | None,
               symmetry: bool = False, represent: Callable[[State], State] | None = None) -> Trace:
    """The trace along the parent links to `node`, then the action slot `step` when given (a step
    property's or witness's step)."""
    path = [] if step is None else [step]
    while links.parent(node) != NO_PARENT:
        path.append(links.slot(node))
        node = links.parent(node)
    actions = [model.action_at(slot) for slot in reversed(path)]
    if represent is None:
        return concrete_trace(model, links.slot(node), actions, symmetry)
    return concrete_trace(model, links.slot(node), actions, symmetry, represent)


def explore_levels(search, properties: tuple[Property, ...], keep_going: bool, budget: Budget,
                   progress: Callable[[Progress], None] | None, started: float) -> tuple[int, str]:
    """Expand `search` (the kernel's or the GPU's) a level at a time until the properties are settled,
    the frontier is empty or the budget is spent: the depth reached and why it stopped early (""
    when it did not). Ctrl-C ends it within a part of a level, as `Interrupted`."""
    invariants = {p.name for p in properties if p.kind == ALWAYS}
    depth, stopped_because = 0, ""
    with deferred_interrupts() as interrupt:
        def stop() -> bool:
            return interrupt.arrived or bool(budget.out_of_time(time.perf_counter() - started))

        while search.frontier_count:
            stopped_because = stop_reason(search.found_names(), invariants, len(properties), keep_going, budget,
                                          search.distinct, time.perf_counter() - started)
            if stopped_because or interrupt.arrived:
                break
            made = search.run_level(stop)
            if made is None:  # stopped inside the level: by Ctrl-C (raised below) or the time budget
                stopped_because = "" if interrupt.arrived else budget.time_up
                break
            depth += 1 if made else 0
            if progress:
                progress(Progress(depth, search.generated, search.distinct, search.frontier_count,
                                  time.perf_counter() - started))
    if interrupt.arrived:
        raise Interrupted(f"after {search.distinct:,} distinct states to depth {depth} in "
                          f"{time.perf_counter() - started:.1f} s: a partial run, no verdict")
    return depth, stopped_because


def kernel_check(
    model_or_config: Config | Model,
    properties: Iterable[Property] | None = None,
    *,
    keep_going: bool = False,
    symmetry: bool = False,
    workers: int = 1,
    budget: Budget = Budget(),
    progress: Callable[[Progress], None] | None = None,
) -> CheckResult:
    """`checker.bfs.check` by the compiled kernel, with `workers` threads (the same results for
    any number); a user's property runs lowered, and one that does not lower is refused
    (`NotLowered`). The kernel encodes the replication model: a `Config` of it, or the model itself
    (`control.replication.model_of`), or the replication model with the controller's epoch bumps
    (`control.epoch_bumps`); another model is refused by name."""
    model = model_of(model_or_config, properties)
    bumps = encoded_bumps(model, "the compiled kernel")
    config: Config = model.config
    properties = tuple(model.properties)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, not {workers!r}")
    programs = [lowered_program(p, lowering_config(config, bumps))  # refused before compiling
                for p in properties if not shipped(p)]
    compile_seconds = compile_kernel()
    # numba.config sets its NUMBA_* settings at run time, from the environment
    numba.set_num_threads(min(workers, numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]
    started = time.perf_counter()
    search = _Search(config, properties, symmetry, programs, bumps)
    depth, stopped_because = explore_levels(search, properties, keep_going, budget, progress, started)
    traces = search.found()
    seconds = time.perf_counter() - started
    return search_result(
        "kernel" + ("+symmetry" if symmetry else "") + (f" ({workers} threads)" if workers > 1 else ""),
        config, properties, traces, not search.frontier_count and not stopped_because,
        KernelStats(search.distinct, search.generated, depth, seconds, compile_seconds,
                    collision_probability(search.distinct, search.generated),
                    table_slots(search.table) * 8 + search.links.nbytes),
        stopped_because, search.coverage())


def encoded_bumps(model: Model, encoding: str) -> bool:
    """Whether the kernel's encoding runs `model` with the controller's epoch bumps (the replication
    model: False); ValueError naming `encoding` for any other model."""
    if model.name not in (ReplicationSystem.name, EpochBumpSystem.name):
        raise ValueError(f"{encoding} encodes the replication model only, not the {model.name} model; "
                         "check it with checker.bfs.check or checker.spark.spark_check")
    return model.name == EpochBumpSystem.name


def lowering_config(config: Config, bumps: bool) -> Config:
    """The configuration whose bounds a user's property is lowered within: with the controller's
    epoch bumps, epochs run further than the elections bound (`model.epoch_bumps.bounding_config`)."""
    return bounding_config(config) if bumps else config


def collision_probability(distinct: int, generated: int) -> float:
    """TLC's optimistic estimate that two of the distinct states share a fingerprint."""
    return distinct * max(generated - distinct, 0) / 2.0 ** 64
