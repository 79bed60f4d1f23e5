"""`gpu_check`: the compiled kernel's breadth-first search, a level at a time on a GPU.

The same counts, verdicts and traces as `checker.kernel.kernel_check` (and so as `checker.bfs.check`):
the same transitions, packing and fingerprints (`checker/gpu/device.py` calls the kernel's own
functions), and the same choices where threads race. A level is expanded a chunk of frontier
states at a time, each chunk in four phases:

1. `expand`: a thread per frontier state computes its successor by every action slot (candidate
   j * slot_count + c), packed, fingerprinted, and whether a follower's log got shorter;
2. `insert`: every successor's fingerprint goes into the chunk's own table (open addressing,
   inserted by `atomic.cas`), each of whose slots keeps the least candidate that reached it
   (`atomic.min`): candidate order is the order the CPU kernel meets the chunk's successors in;
3. `mark_new`: a candidate is new when it is its fingerprint's least in the chunk and the visited
   table (fingerprints only, the same open addressing) did not hold the fingerprint, which it then
   gets. The new candidates, in candidate order (`flagged_indices`: counted and written on the device a
   SEGMENT at a time, the segments' counts summed on the host), get the next node numbers, their parent
   links and action slots (`device.edges_of`, kept on the host in `kernel.links.ParentLinks`), and are
   gathered into the next frontier: the CPU kernel's numbering. The successors per action slot are
   counted on the device too (`device.count_slots`), so the host reads back a few counts and the new
   states' links (5 bytes each), not a byte a candidate;
4. `flag`: the property flags of the new states; the first in node order of each property still
   looked for is the one kept, and the step witness is the first candidate in candidate order whose
   step shortened a log, as the CPU kernel finds them.

Memory per distinct state: the visited table's 8 bytes a slot at a load between `explore.MAX_LOAD` /
`explore.GROWTH` and MAX_LOAD, as the CPU kernel's (8.9 to 10.7 bytes), and the parent links' 5 bytes on
the host. The table grows on the device, the old one beside the new, while the device's free memory holds
both; else through the host (`GpuSearch._make_room`): its fingerprints copied out, the old table freed,
and rehashed into the new one from the host a slice at a time, so that the device never holds more than
the new table and a slice.

Users' own properties (a `Property` with its Python `predicate`) run as the CPU kernel runs them:
lowered once into a program (`gpu_programs`: `checker/kernel/user_properties.py` `lowered_program`;
one that does not lower is refused with `NotLowered`, one longer than `device.MAX_REGISTERS` with
`ProgramTooLong`), whose instructions the kernels `flag_states` (on the initial states and each
chunk's new states) and `flag_steps` (on each chunk's candidates, after `expand`) run with the
kernel's own `instruction_value`. The first flagged in node order (for a step, in candidate order:
frontier state, then action slot) is the one kept (`UserChecks`), and the user's function is
evaluated at the end of its trace (`UserChecks.confirm`), so the verdict and its errors are the
function's.

Traces are rebuilt on the host from the parent links and replayed through the explicit model
(`checker.bfs.concrete_trace`), as the CPU kernel does.

What the GPU engine leaves out, refusing it by name: symmetry reduction, worker threads and models
other than the replication model.

Where it runs: on an NVIDIA GPU through numba-cuda, with its runtime on (`NUMBA_CUDA_ENABLE_NRT=1`,
which `checker.gpu` sets before numba reads it, and `require_gpu` sets again in numba's config);
or, slowly, in numba's CUDA simulator (`NUMBA_ENABLE_CUDASIM=1` in the environment before numba
is imported), which is how the tests run it. Without either, `GpuUnavailable` says so.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Callable, Iterable

import numba
import numpy as np
from numba import cuda

from kafka_mc.control.replication import model_of
from kafka_mc.model import Config, ReplicationModel
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.model.interface import Model
from kafka_mc.properties import PROPERTIES, Property
from kafka_mc.properties.lowering import NotLowered

from ..bfs import Budget, Progress, search_result
from ..kernel.engine import (collision_probability, encoded_bumps, explore_levels, lowering_config, path_trace,
                             shipped, slot_coverage)
from ..kernel.explore import GROWTH, MAX_LOAD, fingerprint, pack_represented, unpack
from ..kernel.invariants import FOLLOWER_TRUNCATED, PROPERTY_NAMES, state_flags
from ..kernel.layout import WIDTH, encode, packing, settings
from ..kernel.links import NO_PARENT, ParentLinks
from ..kernel.transitions import slot_codes
from ..kernel.user_properties import (
    CONST, FIELD_FIRSTS, FIELD_KINDS, FIELD_POSITIONS, Program, UserChecks, lowered_program,
)
from ..result import CheckResult, Coverage, KernelStats, Trace
from . import device
from .device import EMPTY, MAX_REGISTERS, MAX_SLOTS, MAX_WORDS, NO_CANDIDATE, SETTINGS, TRUNCATED

NOT_FOUND = -1
INITIAL_TABLE_SLOTS = 1 << 16
CHUNK_LOAD = 0.5  # a chunk's own table: twice its enabled candidates' slots
CHUNK_BYTES = 1 << 30  # device memory for one chunk's candidates; a chunk is also where a run may stop
GROWTH_MARGIN = 1 << 28  # device memory left free beside a table grown on the device
HOST_SLICE = 1 << 24  # fingerprints sent back at a time to a table grown through the host
SEGMENT = 1 << 10  # cells a thread of `device.compact_flagged` walks
CANDIDATE_BYTES = 8 + 1 + 8 + 1 + 1 + 2 * 16  # per candidate, beside its packed words: fingerprint, flags, its
# slot in the chunk's table, new, a user's step property's flag, and the chunk's table (two slots of 16 bytes)


class GpuUnavailable(RuntimeError):
    """No GPU to run on (and the simulator not chosen): the message says why and what to do."""


class ProgramTooLong(NotLowered, ValueError):
    """A user's property whose program has more instructions than the kernels hold registers for
    (`device.MAX_REGISTERS`); a `NotLowered`, so the command line reports it as it reports those."""


def simulated() -> bool:
    """Whether numba's CUDA simulator runs the kernels (NUMBA_ENABLE_CUDASIM=1 when numba was imported)."""
    return bool(getattr(numba.config, "ENABLE_CUDASIM", 0))


def require_gpu() -> None:
    """`GpuUnavailable` unless a CUDA GPU (or the simulator) is there to run on."""
    if simulated():
        return
    try:
        available = cuda.is_available()
    except Exception:  # a driver that cannot even be asked
        available = False
    if not available:
        raise GpuUnavailable("--engine gpu: no CUDA GPU found (numba.cuda.is_available() is false); run on a "
                             "machine with an NVIDIA GPU (and numba-cuda installed), or set "
                             "NUMBA_ENABLE_CUDASIM=1 for the (slow) simulator")
    setattr(numba.config, "CUDA_ENABLE_NRT", True)  # numba-cuda reads it when it compiles a kernel


# launch shape: the kernels loop over their work with a grid stride, so any shape gives the same
# result; the simulator runs every thread as a Python thread, so it gets few
THREADS, MAX_BLOCKS = (8, 2) if simulated() else (128, 1 << 14)


def launch(kernel: Any, work: int, *args: Any) -> None:
    """Run `kernel` over `work` items. A small launch (a short level's) is meant: numba-cuda's warning
    that it leaves the GPU idle is silenced for it, here only."""
    if work > 0:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*Grid size .* will likely result in GPU under-utilization")
            kernel[max(1, min(MAX_BLOCKS, -(-work // THREADS))), THREADS](*args)


def zeros(count: int, dtype: Any, value: Any = 0) -> Any:
    """A device array of `count` cells, each `value`."""
    array = cuda.device_array(max(count, 1), dtype=dtype)
    launch(device.fill, array.shape[0], array, dtype(value))
    return array


def flagged_indices(flags: Any, mask: Any, total: int) -> tuple[Any, int]:
    """The indices below `total` whose cell of the device array `flags` has a bit of `mask`, in
    increasing order, as a device array, and how many there are: counted a SEGMENT at a time on the
    device, the counts summed on the host, the indices written on the device (`device.compact_flagged`)."""
    segments = -(-total // SEGMENT)
    counts = zeros(segments, np.int64)
    launch(device.count_flagged, total, flags, mask, total, SEGMENT, counts)
    held = counts.copy_to_host()[:segments]
    offsets = np.zeros(segments, dtype=np.int64)
    np.cumsum(held[:-1], out=offsets[1:])
    found = int(held.sum())
    chosen = cuda.device_array(max(found, 1), dtype=np.int64)
    launch(device.compact_flagged, segments, flags, mask, total, SEGMENT, cuda.to_device(offsets), chosen)
    return chosen, found


def first_flagged(flags: Any, mask: Any, total: int) -> int | None:
    """The least index below `total` whose cell of the device array `flags` has a bit of `mask`, or None."""
    first = zeros(1, np.uint64, NO_CANDIDATE)
    launch(device.first_flagged, total, flags, mask, total, first)
    value = first.copy_to_host()[0]
    return None if value == NO_CANDIDATE else int(value)


def device_has_room(size: int) -> bool:
    """Whether the device's free memory holds `size` bytes more and GROWTH_MARGIN (the simulator's always does)."""
    if simulated():
        return True
    free, _ = cuda.current_context().get_memory_info()
    return free >= size + GROWTH_MARGIN


def grown(array: Any, needed: int, used: int) -> Any:
    """`array`, or a larger device array holding its first `used` cells, when it has fewer than `needed`."""
    if needed <= array.shape[0]:
        return array
    bigger = cuda.device_array(max(needed, array.shape[0] + array.shape[0] // 2), dtype=array.dtype)
    launch(device.copy, used, array, used, bigger)
    return bigger


_compiled = False


def compile_gpu() -> float:
    """Compile every kernel, once per process, by exploring a tiny configuration on the GPU; the
    seconds it took, 0 when already done or simulated (nothing is compiled for the simulator)."""
    global _compiled
    if _compiled or simulated():
        return 0.0
    started = time.perf_counter()
    # and a state and a step program that flag nothing (the constant 0), so that their kernels compile too
    nothing = np.array([[CONST, 0, 0, 0, 0]], dtype=np.int64)
    programs = [Program(f"compile {kind}", on_step, False, nothing, 0, 0) for kind, on_step in
                (("state", False), ("step", True))]
    search = GpuSearch(Config("hw", replicas=2, messages=1, crashes=0, elections=0), PROPERTIES, programs=programs)
    while search.frontier_count:
        search.run_level()
    cuda.synchronize()
    _compiled = True
    return time.perf_counter() - started


def gpu_programs(properties: Iterable[Property], config: Config) -> list[Program]:
    """The users' properties among `properties` as the kernel's programs (`lowered_program`, which
    refuses one that does not lower), each refused by name (`ProgramTooLong`) when it has more
    instructions than the kernels hold registers for."""
    programs = [lowered_program(p, config) for p in properties if not shipped(p)]
    for prog in programs:
        if len(prog.instructions) > MAX_REGISTERS:
            raise ProgramTooLong(f"property {prog.name} lowers to {len(prog.instructions):,} instructions under "
                                 f"{config}, more than the GPU engine's kernels hold ({MAX_REGISTERS:,}): check it "
                                 "with --engine kernel (checker.kernel.kernel_check)")
    return programs


class GpuSearch:
    """One run's arrays: on the device the frontier, the visited table (fingerprints) and one chunk's
    candidates with their table; on the host the parent links and the properties found.
    `programs`: the users' properties among `properties`, lowered already (lowered here when None)."""

    def __init__(self, config: Config, properties: Iterable[Property], chunk: int | None = None,
                 programs: list[Program] | None = None, bumps: bool = False, host_growth: bool | None = None):
        properties = tuple(properties)
        self.host_growth = host_growth  # the table grows through the host: always, never, or (None) when it must
        self.model = EpochBumpModel(config) if bumps else ReplicationModel(config)
        self.cfg = settings(config, bumps)
        self.slot_codes = slot_codes(self.model.action_names, config.replicas)
        self.slot_count = len(self.slot_codes)
        self.layout = layout = packing(config, bumps)
        self.words = words = layout.word_count
        if words > MAX_WORDS or len(self.cfg) != SETTINGS or self.slot_count > MAX_SLOTS:
            raise ValueError(f"the GPU engine's kernels hold {MAX_WORDS} packed words, {SETTINGS} settings and "
                             f"{MAX_SLOTS} action slots; {config} needs {words}, {len(self.cfg)} and "
                             f"{self.slot_count}")
        self.chunk = chunk or max(1, CHUNK_BYTES // (self.slot_count * (CANDIDATE_BYTES + 8 * words)))
        self.enabled = np.zeros(self.slot_count, dtype=np.int64)  # successors generated, per action slot
        wanted = {p.name for p in properties if shipped(p)}
        users = [p for p in properties if not shipped(p)]
        self.user = UserChecks(self.model, users, self.slot_count,
                               gpu_programs(users, lowering_config(config, bumps)) if programs is None else programs)
        self.looking = sum(1 << index for index, name in enumerate(PROPERTY_NAMES) if name in wanted)
        self.found_nodes = np.full(len(PROPERTY_NAMES), NOT_FOUND, dtype=np.int64)
        self.found_slots = np.full(len(PROPERTY_NAMES), NOT_FOUND, dtype=np.int64)
        self.links = ParentLinks()
        self.distinct = self.generated = 0
        self.first_node = 0  # the frontier's first node
        self.growth = 1.0  # the last level's size over the one before
        self.device_cfg = cuda.to_device(self.cfg)
        self.device_codes = cuda.to_device(self.slot_codes)
        self.device_layout = tuple(cuda.to_device(values) for values in
                                   (layout.cells, layout.biases, layout.bits, layout.shifts, layout.words))
        self.keys = zeros(INITIAL_TABLE_SLOTS, np.uint64, EMPTY)
        self.room = 0  # candidates the scratch arrays hold
        self.flags = zeros(1, np.int64)
        self.device_programs = {prog.name: cuda.to_device(prog.instructions) for prog in self.user.programs}
        self.device_fields = tuple(cuda.to_device(values) for values in (FIELD_KINDS, FIELD_FIRSTS, FIELD_POSITIONS))
        self.device_actions = (cuda.to_device(self.user.action_names), cuda.to_device(self.user.action_replicas))
        self.user_flags = zeros(1, np.uint8)
        self.frontier, self.frontier_count = self._seed()

    def _seed(self) -> tuple[Any, int]:
        """The initial states, each kept when new, checked, numbered in order, their fingerprints in the
        visited table."""
        words, layout = self.words, self.layout
        initial_states = self.model.initial_states()
        self.generated = len(initial_states)
        identity = np.arange(self.model.config.replicas, dtype=np.int64).reshape(1, -1)
        rows: list[np.ndarray] = []
        keys: list[np.uint64] = []
        indices: list[int] = []  # each kept state's index among the initial states (a root's slot)
        seen: set[np.uint64] = set()
        for index, state in enumerate(initial_states):
            row, wide = np.zeros(words, dtype=np.int64), encode(state)
            pack_represented(self.cfg, wide, identity, np.empty_like(wide), np.empty(words, np.int64), layout.cells,
                             layout.biases, layout.shifts, layout.words, words, row, 0)
            key = np.uint64(fingerprint(row, 0, words)) or np.uint64(1)
            if key in seen:
                continue
            seen.add(key)
            indices.append(index)
            self._offer(int(state_flags(self.cfg, self.unpacked(row))), len(rows))
            rows.append(row)
            keys.append(key)
        self.links.extend(np.full(len(rows), NO_PARENT, dtype=np.uint32), np.array(indices, dtype=np.uint8))
        self._make_room(len(keys))
        launch(device.rehash, len(keys), cuda.to_device(np.array(keys, dtype=np.uint64)), self.keys)
        self.distinct = self.roots = len(rows)
        frontier = cuda.to_device(np.concatenate(rows))
        self._user_states(frontier, 0, len(rows), 0)
        return frontier, len(rows)

    def unpacked(self, row: np.ndarray) -> np.ndarray:
        layout, wide = self.layout, np.empty(WIDTH, dtype=np.int16)
        unpack(row, 0, layout.cells, layout.biases, layout.bits, layout.shifts, layout.words, wide)
        return wide

    def _offer(self, flags: int, node: int) -> None:
        hits = flags & self.looking
        for index in range(len(PROPERTY_NAMES)):
            if hits >> index & 1:
                self.found_nodes[index] = node
                self.looking &= ~(1 << index)

    def _scratch(self, count: int) -> None:
        """Candidate arrays for `count` frontier states."""
        total = count * self.slot_count
        if total <= self.room:
            return
        self.room = total
        self.cand_words = cuda.device_array(total * self.words, dtype=np.int64)
        self.cand_fingerprints = cuda.device_array(total, dtype=np.uint64)
        self.cand_flags = cuda.device_array(total, dtype=np.uint8)
        self.cand_slots = cuda.device_array(total, dtype=np.int64)
        self.new = cuda.device_array(total, dtype=np.uint8)
        self.chunk_keys = cuda.device_array(int(total / CHUNK_LOAD) + 1, dtype=np.uint64)
        self.chunk_best = cuda.device_array(int(total / CHUNK_LOAD) + 1, dtype=np.uint64)

    def _make_room(self, incoming: int) -> None:
        """Grow the visited table, as the CPU kernel grows a shard (`explore.MAX_LOAD`, `explore.GROWTH`),
        when `incoming` more keys would take it past MAX_LOAD: on the device where its free memory holds the
        new table beside the old one, else (or with `host_growth`) through the host."""
        size, needed = self.keys.shape[0], self.distinct + incoming
        if needed <= MAX_LOAD * size:
            return
        slots = max(int(size * GROWTH) + 1, int(needed / MAX_LOAD) + 1)
        if self.host_growth is False or (self.host_growth is None and device_has_room(8 * slots)):
            keys = zeros(slots, np.uint64, EMPTY)
            launch(device.rehash, size, self.keys, keys)
            self.keys = keys
        else:
            self._grow_through_host(slots)

    def _grow_through_host(self, slots: int) -> None:
        """The visited table's fingerprints into a new one of `slots` slots, the old one freed first: they go
        to the host and come back HOST_SLICE at a time."""
        held = self.keys.copy_to_host()
        held = held[held != EMPTY]
        self.keys = None
        if not simulated():
            cuda.current_context().deallocations.clear()  # the old table's memory, now
        self.keys = zeros(slots, np.uint64, EMPTY)
        for start in range(0, len(held), HOST_SLICE):
            part = cuda.to_device(held[start:start + HOST_SLICE])
            launch(device.rehash, part.shape[0], part, self.keys)

    def run_level(self, stop: Callable[[], bool] = lambda: False) -> int | None:
        """Expand the frontier, a chunk at a time, asking `stop` between chunks; the number of new
        states, or None when `stop` said yes before the level was done (the counts are then those
        reached so far)."""
        words, slot_count, step_bit = self.words, self.slot_count, 1 << FOLLOWER_TRUNCATED
        new_node = self.first_node + self.frontier_count
        capacity = int(self.frontier_count * max(self.growth, 1.0) * 1.1) + 1
        following = cuda.device_array(capacity * words, dtype=np.int64)
        made = 0
        for start in range(0, self.frontier_count, self.chunk):
            if start and stop():
                return None
            count = min(self.chunk, self.frontier_count - start)
            total, parent = count * slot_count, self.first_node + start
            self._scratch(count)
            launch(device.expand, count, self.device_cfg, self.device_codes, *self.device_layout, words,
                   self.frontier, start, count, self.cand_words, self.cand_fingerprints, self.cand_flags)
            per_slot = zeros(slot_count, np.int64)
            launch(device.count_slots, total, self.cand_flags, total, slot_count, per_slot)
            per_slot_held = per_slot.copy_to_host()
            self.enabled += per_slot_held
            enabled = int(per_slot_held.sum())
            self.generated += enabled
            if self.looking & step_bit:
                truncated = first_flagged(self.cand_flags, TRUNCATED, total)
                if truncated is not None:
                    self.found_nodes[FOLLOWER_TRUNCATED] = parent + truncated // slot_count
                    self.found_slots[FOLLOWER_TRUNCATED] = truncated % slot_count
                    self.looking &= ~step_bit
            self._user_steps(start, count, parent)
            self._make_room(enabled)
            size = int(enabled / CHUNK_LOAD) + 1
            chunk_keys, chunk_best = self.chunk_keys[:size], self.chunk_best[:size]
            launch(device.fill, size, chunk_keys, EMPTY)
            launch(device.fill, size, chunk_best, NO_CANDIDATE)
            launch(device.insert, total, self.cand_fingerprints, self.cand_flags, total, chunk_keys, chunk_best,
                   self.cand_slots)
            launch(device.mark_new, total, self.cand_fingerprints, self.cand_flags, total, chunk_best, self.cand_slots,
                   self.keys, self.new)
            fresh, added = flagged_indices(self.new, np.uint8(1), total)  # candidate order: the nodes' order
            if not added:
                continue
            node = new_node + made
            parents, slots = cuda.device_array(added, dtype=np.uint32), cuda.device_array(added, dtype=np.uint8)
            launch(device.edges_of, added, fresh, added, slot_count, parent, parents, slots)
            self.links.extend(parents.copy_to_host(), slots.copy_to_host())
            following = grown(following, (made + added) * words, made * words)
            launch(device.gather, added * words, self.cand_words, words, fresh, added, following, made)
            if self.looking & ~step_bit:
                self._flag(following, made, added, node)
            self._user_states(following, made, added, node)
            made += added
            self.distinct += added
        self.first_node = new_node
        self.growth = made / max(self.frontier_count, 1)
        self.frontier, self.frontier_count = following, made
        return made

    def _flag(self, rows: Any, first: int, count: int, node: int) -> None:
        """The first of rows first..first+count-1 (nodes node..) with each property still looked for."""
        self.flags = grown(self.flags, count, 0)
        launch(device.flag, count, self.device_cfg, *self.device_layout, self.words, rows, first, count, self.flags)
        firsts = zeros(len(PROPERTY_NAMES), np.uint64, NO_CANDIDATE)
        launch(device.first_of_each_bit, count, self.flags, count, np.int64(self.looking & ~(1 << FOLLOWER_TRUNCATED)),
               firsts)
        for index, where in enumerate(firsts.copy_to_host()):
            if where != NO_CANDIDATE:
                self.found_nodes[index] = node + int(where)
                self.looking &= ~(1 << index)

    def _user_states(self, rows: Any, first: int, count: int, node: int) -> None:
        """The first of rows first..first+count-1 (nodes node..) that each state property still looked
        for flags (`device.flag_states`)."""
        for prog in self.user.looked_for(on_step=False) if count else ():
            self.user_flags = grown(self.user_flags, count, 0)
            launch(device.flag_states, count, self.device_cfg, *self.device_layout, self.words, rows, first, count,
                   self.device_programs[prog.name], prog.fails, prog.raises, prog.witness, *self.device_fields,
                   self.user_flags)
            hit = first_flagged(self.user_flags, np.uint8(1), count)
            if hit is not None:
                self.user.found[prog.name] = (node + hit, None)

    def _user_steps(self, start: int, count: int, parent: int) -> None:
        """The first step out of frontier rows start..start+count-1 (nodes parent..), in candidate
        order (state, then action slot), that each step property still looked for flags
        (`device.flag_steps`, on the chunk's candidates)."""
        total = count * self.slot_count
        for prog in self.user.looked_for(on_step=True):
            self.user_flags = grown(self.user_flags, total, 0)
            launch(device.flag_steps, total, self.device_cfg, *self.device_actions, *self.device_layout, self.words,
                   self.frontier, start, count, self.cand_words, self.cand_flags, self.device_programs[prog.name],
                   prog.fails, prog.raises, prog.witness, *self.device_fields, self.user_flags)
            hit = first_flagged(self.user_flags, np.uint8(1), total)
            if hit is not None:
                self.user.found[prog.name] = (parent + hit // self.slot_count, hit % self.slot_count)

    def coverage(self) -> tuple[Coverage, ...]:
        return slot_coverage(self.model, self.enabled, self.links.slot_counts(self.roots, len(self.enabled)))

    def found_names(self) -> set[str]:
        """The properties found so far."""
        return {PROPERTY_NAMES[i] for i in range(len(PROPERTY_NAMES)) if self.found_nodes[i] != NOT_FOUND} | \
            set(self.user.found)

    def found(self) -> dict[str, Trace]:
        """The trace to the first occurrence of every property found; a user's property is confirmed by
        its own function at the trace's end (`UserChecks.confirm`), as the kernel does."""
        traces = {name: path_trace(self.model, self.links, int(self.found_nodes[index]),
                                   int(self.found_slots[index]) if index == FOLLOWER_TRUNCATED else None)
                  for index, name in enumerate(PROPERTY_NAMES) if self.found_nodes[index] != NOT_FOUND}
        for name, (node, step) in self.user.found.items():
            traces[name] = path_trace(self.model, self.links, node, step)
            self.user.confirm(name, traces[name], symmetry=False)
        return traces


def gpu_check(
    model_or_config: Config | Model,
    properties: Iterable[Property] | None = None,
    *,
    keep_going: bool = False,
    symmetry: bool = False,
    workers: int = 1,
    budget: Budget = Budget(),
    progress: Callable[[Progress], None] | None = None,
    chunk: int | None = None,
    host_growth: bool | None = None,
) -> CheckResult:
    """`checker.kernel.kernel_check` on a GPU: the same counts, verdicts and traces. `chunk`: the
    frontier states a kernel launch expands (default: as many as about 1 GiB of candidates hold);
    any value gives the same result. `host_growth`: the visited table grows through the host (True),
    on the device (False), or on the device while its free memory holds the old table and the new
    (None, the default); any gives the same result. A user's property runs lowered, as the kernel runs it
    (`gpu_programs`: one that does not lower, or too long, is refused by name). It runs the replication
    model, or with the controller's epoch bumps (`control.epoch_bumps`), as the kernel does. Refused by
    name: another model, `symmetry`, `workers` other than 1, and no GPU (`GpuUnavailable`)."""
    model = model_of(model_or_config, properties)
    bumps = encoded_bumps(model, "the GPU engine")
    config: Config = model.config
    properties = tuple(model.properties)
    if symmetry:
        raise ValueError("the GPU engine has no symmetry reduction; use checker.kernel.kernel_check for it")
    if workers != 1:
        raise ValueError(f"the GPU engine takes no worker count (workers={workers!r}): the GPU's threads are its "
                         "workers")
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
        raise ValueError(f"chunk must be a positive integer, not {chunk!r}")
    if not (host_growth is None or isinstance(host_growth, bool)):
        raise ValueError(f"host_growth must be True, False or None, not {host_growth!r}")
    programs = gpu_programs(properties, lowering_config(config, bumps))  # refused before compiling
    require_gpu()
    settings(config, bumps)  # a protocol choice the kernel lacks is refused (UnencodedChoice) before compiling
    compile_seconds = compile_gpu()
    started = time.perf_counter()
    search = GpuSearch(config, properties, chunk, programs, bumps, host_growth)
    depth, stopped_because = explore_levels(search, properties, keep_going, budget, progress, started)
    traces = search.found()
    seconds = time.perf_counter() - started
    return search_result(
        "gpu" + (" (CUDA simulator)" if simulated() else ""), config, properties, traces,
        not search.frontier_count and not stopped_because,
        KernelStats(search.distinct, search.generated, depth, seconds, compile_seconds,
                    collision_probability(search.distinct, search.generated),
                    search.keys.shape[0] * 8 + search.links.nbytes),
        stopped_because, search.coverage())
