"""The GPU engine's CUDA kernels: one level of the breadth-first search, a phase a kernel.

The transitions, the packing, the fingerprint, the property flags and the meaning of a user's
property's program are the compiled kernel's own `@njit` functions (`checker/kernel/transitions.py`
`apply`, `explore.py` `unpack`, `pack_represented`, `fingerprint`, `invariants.py` `state_flags`,
`follower_truncated`, `user_properties.py` `instruction_value`, `flagged`), called from these
kernels: there is no second encoding of the model or of the programs. Under numba's CUDA simulator
(`NUMBA_ENABLE_CUDASIM=1`) a kernel runs as Python and calls them as the CPU's compiled
functions; on a GPU numba-cuda compiles them for the device with the kernel that calls them. The
kernel's packing copies arrays by slices (`unpack`, `permute`, `pack_represented`), which numba-cuda
compiles only with its runtime on (`NUMBA_CUDA_ENABLE_NRT=1`, which `checker.gpu` sets).

What holds for every kernel here, so that it runs the same in the simulator and on a GPU:
- no allocation: per-thread scratch is `cuda.local.array` sized by constants (a wide state,
  `layout.WIDTH` cells; a packed state, at most `MAX_WORDS` words; a program's registers, at most
  `MAX_REGISTERS`), per-block tables are `cuda.shared.array`;
- the kernel functions are called with local or shared arrays only (the simulator cannot pass a
  device array to an `@njit` function): a frontier row is copied into a local array first, and the
  settings, action slots, packing layout and fields' table into shared arrays, once per block; a
  program's instructions are read from the device array one by one and passed as numbers;
- grid-stride loops, so any launch shape gives the same result (the simulator runs few threads).

Candidates: frontier state j's successor by action slot c is candidate j * slot_count + c (written
whether or not the action is enabled; `cand_flags` says): the order in which the CPU kernel meets a
chunk's successors. The visited table holds fingerprints only (8 bytes a slot); a chunk's own table
(`chunk_keys`, `chunk_best`, as large as twice its enabled candidates, emptied for each chunk) maps
each fingerprint the chunk reached to the least candidate that reached it.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from kafka_mc.model.state import MAX_REPLICAS

from ..kernel.explore import fingerprint, home_slot, pack_represented, unpack
from ..kernel.invariants import follower_truncated, state_flags
from ..kernel.layout import C_REPLICAS, SETTING_COUNT, WIDTH
from ..kernel.transitions import ACTION_NAMES, apply
from ..kernel.user_properties import FIELD_KINDS, flagged, instruction_value

MAX_WORDS = 32  # packed words of a state: 28 at most under the configuration limits (`layout.packing`)
MAX_FIELDS = WIDTH  # packed fields: at most one per wide cell
MAX_SLOTS = len(ACTION_NAMES) * MAX_REPLICAS  # action slots: one per action and replica
SETTINGS = SETTING_COUNT  # cells of `layout.settings`
MAX_REGISTERS = 4096  # instructions of a user's property's program (one register each); kafka-mc's own
# invariants written as a user's functions (`benchmarks/user_properties_bench.py`) take at most 336
# under 3 replicas and 3 messages, 2,464 under the configuration limits (5 replicas, 9 messages)
FIELDS = len(FIELD_KINDS)  # the fields a program reads (`user_properties.CELLS`)
EMPTY = np.uint64(0)  # an empty slot of a table (the fingerprint 0 is stored as 1)
NO_CANDIDATE = np.uint64(0xFFFFFFFFFFFFFFFF)  # `chunk_best` of an empty slot
ENABLED = np.uint8(1)  # `cand_flags`: the action is enabled, the candidate is a successor
TRUNCATED = np.uint8(2)  # `cand_flags`: and a follower's log got shorter (the step witness)


@cuda.jit(device=True)
def _share(source, target, count):
    """Copy `count` cells into a shared array, the block's threads together."""
    for index in range(cuda.threadIdx.x, count, cuda.blockDim.x):
        target[index] = source[index]


@cuda.jit(device=True)
def _share_layout(cells, biases, bits, shifts, words, shared_cells, shared_biases, shared_bits, shared_shifts,
                  shared_words):
    """The packing layout (`layout.packing`'s arrays) into shared arrays, the block's threads together."""
    fields = cells.shape[0]
    _share(cells, shared_cells, fields)
    _share(biases, shared_biases, fields)
    _share(bits, shared_bits, fields)
    _share(shifts, shared_shifts, fields)
    _share(words, shared_words, fields)


@cuda.jit(device=True)
def _unpack_row(rows, index, word_count, row, cells, biases, bits, shifts, words, wide):
    """Packed row `index` of `rows` (a device array) into the local `row`, then unpacked into `wide`
    (`unpack` takes local and shared arrays only)."""
    for word in range(word_count):
        row[word] = rows[index * word_count + word]
    unpack(row, 0, cells, biases, bits, shifts, words, wide)


@cuda.jit
def expand(cfg, slot_codes, cells, biases, bits, shifts, words, word_count, frontier, first, count,
           cand_words, cand_fingerprints, cand_flags):
    """Frontier rows first..first+count-1: each thread unpacks a row and writes its candidates."""
    shared_cfg = cuda.shared.array(SETTINGS, np.int64)
    shared_codes = cuda.shared.array(MAX_SLOTS, np.int64)
    shared_orders = cuda.shared.array((1, MAX_REPLICAS), np.int64)
    shared_cells = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_biases = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_bits = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_shifts = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_words = cuda.shared.array(MAX_FIELDS, np.int64)
    fields, slot_count = cells.shape[0], slot_codes.shape[0]
    _share(cfg, shared_cfg, SETTINGS)
    _share(slot_codes, shared_codes, slot_count)
    _share_layout(cells, biases, bits, shifts, words, shared_cells, shared_biases, shared_bits, shared_shifts,
                  shared_words)
    if cuda.threadIdx.x == 0:
        for replica in range(MAX_REPLICAS):  # the identity order: no symmetry
            shared_orders[0, replica] = replica
    cuda.syncthreads()
    the_cells, the_biases, the_bits = shared_cells[:fields], shared_biases[:fields], shared_bits[:fields]
    the_shifts, the_words = shared_shifts[:fields], shared_words[:fields]
    n = shared_cfg[C_REPLICAS]
    s = cuda.local.array(WIDTH, np.int16)
    t = cuda.local.array(WIDTH, np.int16)
    u = cuda.local.array(WIDTH, np.int16)
    row = cuda.local.array(MAX_WORDS, np.int64)
    packed = cuda.local.array(MAX_WORDS, np.int64)
    candidate = cuda.local.array(MAX_WORDS, np.int64)
    for j in range(cuda.grid(1), count, cuda.gridsize(1)):
        _unpack_row(frontier, first + j, word_count, row, the_cells, the_biases, the_bits, the_shifts, the_words, s)
        for slot in range(slot_count):
            out = j * slot_count + slot
            if apply(shared_cfg, shared_codes[slot], s, t, slot % n):
                pack_represented(shared_cfg, t, shared_orders, u, candidate, the_cells, the_biases, the_shifts,
                                 the_words, word_count, packed, 0)
                for word in range(word_count):
                    cand_words[out * word_count + word] = packed[word]
                cand_fingerprints[out] = fingerprint(packed, 0, word_count)
                if follower_truncated(shared_cfg, s, t):
                    cand_flags[out] = ENABLED | TRUNCATED
                else:
                    cand_flags[out] = ENABLED
            else:
                cand_flags[out] = 0


@cuda.jit(device=True)
def _claim(keys, key):
    """The slot of a hash table holding `key`, and whether this call put it there: from its home slot
    (the kernel's `home_slot`, as its shards), probing linearly and wrapping around, inserting by
    compare-and-swap where it is absent."""
    size = keys.shape[0]
    slot = home_slot(key, size)
    while True:
        held = cuda.atomic.cas(keys, slot, EMPTY, key)
        if held == EMPTY:
            return slot, True
        if held == key:
            return slot, False
        slot += 1
        if slot == size:
            slot = 0


@cuda.jit(device=True)
def _key(cand_fingerprints, index):
    """A candidate's fingerprint as the tables hold it (0 is stored as 1)."""
    key = cand_fingerprints[index]
    return np.uint64(1) if key == EMPTY else key


@cuda.jit
def insert(cand_fingerprints, cand_flags, total, chunk_keys, chunk_best, cand_slots):
    """Every enabled candidate's fingerprint into the chunk's table; each of its slots keeps the least
    candidate that reached it (`atomic.min`: the order threads run in does not matter)."""
    for index in range(cuda.grid(1), total, cuda.gridsize(1)):
        if cand_flags[index] & ENABLED:
            slot, _ = _claim(chunk_keys, _key(cand_fingerprints, index))
            cuda.atomic.min(chunk_best, slot, np.uint64(index))
            cand_slots[index] = slot


@cuda.jit
def mark_new(cand_fingerprints, cand_flags, total, chunk_best, cand_slots, keys, new):
    """A candidate is a new state when it is the least of the chunk's candidates to reach its
    fingerprint and the visited table did not hold that fingerprint: it goes in now (the chunk's
    least candidates have distinct fingerprints, so none of them races another for a key)."""
    for index in range(cuda.grid(1), total, cuda.gridsize(1)):
        fresh = 0
        if cand_flags[index] & ENABLED and chunk_best[cand_slots[index]] == np.uint64(index):
            _, inserted = _claim(keys, _key(cand_fingerprints, index))
            if inserted:
                fresh = 1
        new[index] = fresh


@cuda.jit
def gather(cand_words, word_count, chosen, count, target, first):
    """Candidates `chosen[0..count-1]` into rows first.. of `target`, in that order."""
    for index in range(cuda.grid(1), count * word_count, cuda.gridsize(1)):
        row, word = index // word_count, index % word_count
        target[(first + row) * word_count + word] = cand_words[chosen[row] * word_count + word]


@cuda.jit
def count_slots(cand_flags, total, slot_count, per_slot):
    """per_slot[c] += the enabled candidates (successors) among candidates 0..total-1 by action slot c."""
    for index in range(cuda.grid(1), total, cuda.gridsize(1)):
        if cand_flags[index] & ENABLED:
            cuda.atomic.add(per_slot, index % slot_count, 1)


@cuda.jit
def count_flagged(flags, mask, total, segment, counts):
    """counts[k] += the cells among flags[k * segment:(k + 1) * segment] (below `total`) that have a bit
    of `mask`: the first pass of `compact_flagged`."""
    for index in range(cuda.grid(1), total, cuda.gridsize(1)):
        if flags[index] & mask:
            cuda.atomic.add(counts, index // segment, 1)


@cuda.jit
def compact_flagged(flags, mask, total, segment, offsets, chosen):
    """The indices below `total` whose cell of `flags` has a bit of `mask`, in increasing order, into
    `chosen`: a thread walks a segment of `segment` cells in order and writes its indices from
    offsets[k] on (the counts of `count_flagged` summed over the segments before k)."""
    for k in range(cuda.grid(1), offsets.shape[0], cuda.gridsize(1)):
        at = offsets[k]
        for index in range(k * segment, min(total, (k + 1) * segment)):
            if flags[index] & mask:
                chosen[at] = index
                at += 1


@cuda.jit
def edges_of(chosen, count, slot_count, parent, parents, slots):
    """The parent links of candidates chosen[0..count-1] of frontier nodes parent..: parents[i], the node
    of the frontier state that candidate chosen[i] came from; slots[i], its action slot."""
    for i in range(cuda.grid(1), count, cuda.gridsize(1)):
        index = chosen[i]
        parents[i] = np.uint32(parent + index // slot_count)
        slots[i] = np.uint8(index % slot_count)


@cuda.jit
def first_flagged(flags, mask, total, first):
    """first[0]: the least index below `total` whose cell of `flags` has a bit of `mask` (left as it
    was, NO_CANDIDATE, where none has)."""
    for index in range(cuda.grid(1), total, cuda.gridsize(1)):
        if flags[index] & mask:
            cuda.atomic.min(first, 0, np.uint64(index))


@cuda.jit
def first_of_each_bit(flags, count, looking, firsts):
    """firsts[b]: the least j below `count` where bit b of flags[j] and of `looking` is set (left as it
    was, NO_CANDIDATE, where none is)."""
    for j in range(cuda.grid(1), count, cuda.gridsize(1)):
        hits = flags[j] & looking
        bit = 0
        while hits != 0:
            if hits & 1:
                cuda.atomic.min(firsts, bit, np.uint64(j))
            hits >>= 1
            bit += 1


@cuda.jit
def copy(source, count, target):
    for index in range(cuda.grid(1), count, cuda.gridsize(1)):
        target[index] = source[index]


@cuda.jit
def fill(target, value):
    for index in range(cuda.grid(1), target.shape[0], cuda.gridsize(1)):
        target[index] = value


@cuda.jit
def rehash(old_keys, keys):
    """Every key of a table (or of an array of distinct keys) into another, larger one."""
    for index in range(cuda.grid(1), old_keys.shape[0], cuda.gridsize(1)):
        key = old_keys[index]
        if key != EMPTY:
            _claim(keys, key)


@cuda.jit
def flag(cfg, cells, biases, bits, shifts, words, word_count, rows, first, count, flags):
    """`state_flags` of rows first..first+count-1 into flags[0..count-1]."""
    shared_cfg = cuda.shared.array(SETTINGS, np.int64)
    shared_cells = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_biases = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_bits = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_shifts = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_words = cuda.shared.array(MAX_FIELDS, np.int64)
    fields = cells.shape[0]
    _share(cfg, shared_cfg, SETTINGS)
    _share_layout(cells, biases, bits, shifts, words, shared_cells, shared_biases, shared_bits, shared_shifts,
                  shared_words)
    cuda.syncthreads()
    s = cuda.local.array(WIDTH, np.int16)
    row = cuda.local.array(MAX_WORDS, np.int64)
    for j in range(cuda.grid(1), count, cuda.gridsize(1)):
        _unpack_row(rows, first + j, word_count, row, shared_cells[:fields], shared_biases[:fields],
                    shared_bits[:fields], shared_shifts[:fields], shared_words[:fields], s)
        flags[j] = state_flags(shared_cfg, s)


@cuda.jit(device=True)
def _share_fields(kinds, firsts, positions, shared_kinds, shared_firsts, shared_positions):
    """The table of where each field lies (`user_properties.FIELD_KINDS`, ...) into shared arrays."""
    _share(kinds, shared_kinds, FIELDS)
    _share(firsts, shared_firsts, FIELDS)
    _share(positions, shared_positions, FIELDS)


@cuda.jit(device=True)
def _run(instructions, replicas, kinds, firsts, positions, s, t, action_name, action_replica, registers):
    """`user_properties.run`: the program's instructions, read from the device, each by `instruction_value`."""
    for k in range(instructions.shape[0]):
        registers[k] = instruction_value(instructions[k, 0], instructions[k, 1], instructions[k, 2],
                                         instructions[k, 3], instructions[k, 4], replicas, kinds, firsts, positions,
                                         s, t, action_name, action_replica, registers)


@cuda.jit
def flag_states(cfg, cells, biases, bits, shifts, words, word_count, rows, first, count, instructions, fails, raises,
                witness, kinds, firsts, positions, flags):
    """A state property's program (`kernel.user_properties`) on rows first..first+count-1: flags[j]
    is 1 where it flags row first+j (`user_properties.flagged`), else 0."""
    shared_cfg = cuda.shared.array(SETTINGS, np.int64)
    shared_cells = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_biases = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_bits = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_shifts = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_words = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_kinds = cuda.shared.array(FIELDS, np.int64)
    shared_firsts = cuda.shared.array(FIELDS, np.int64)
    shared_positions = cuda.shared.array(FIELDS, np.int64)
    fields = cells.shape[0]
    _share(cfg, shared_cfg, SETTINGS)
    _share_layout(cells, biases, bits, shifts, words, shared_cells, shared_biases, shared_bits, shared_shifts,
                  shared_words)
    _share_fields(kinds, firsts, positions, shared_kinds, shared_firsts, shared_positions)
    cuda.syncthreads()
    s = cuda.local.array(WIDTH, np.int16)
    row = cuda.local.array(MAX_WORDS, np.int64)
    registers = cuda.local.array(MAX_REGISTERS, np.int64)
    for j in range(cuda.grid(1), count, cuda.gridsize(1)):
        _unpack_row(rows, first + j, word_count, row, shared_cells[:fields], shared_biases[:fields],
                    shared_bits[:fields], shared_shifts[:fields], shared_words[:fields], s)
        _run(instructions, shared_cfg[C_REPLICAS], shared_kinds, shared_firsts, shared_positions, s, s, 0, 0,
             registers)
        flags[j] = 1 if flagged(registers, fails, raises, witness) else 0


@cuda.jit
def flag_steps(cfg, slot_names, slot_replicas, cells, biases, bits, shifts, words, word_count, frontier, first,
               count, cand_words, cand_flags, instructions, fails, raises, witness, kinds, firsts, positions, flags):
    """A step property's program on the candidates of frontier rows first..first+count-1 (`expand`):
    flags[index] is 1 where candidate index is a successor (ENABLED) and the program flags the step
    from row first + index // slot_count by its action slot to it, else 0. Without symmetry the
    packed candidate is the successor itself."""
    shared_cfg = cuda.shared.array(SETTINGS, np.int64)
    shared_names = cuda.shared.array(MAX_SLOTS, np.int64)
    shared_replicas = cuda.shared.array(MAX_SLOTS, np.int64)
    shared_cells = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_biases = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_bits = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_shifts = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_words = cuda.shared.array(MAX_FIELDS, np.int64)
    shared_kinds = cuda.shared.array(FIELDS, np.int64)
    shared_firsts = cuda.shared.array(FIELDS, np.int64)
    shared_positions = cuda.shared.array(FIELDS, np.int64)
    fields, slot_count = cells.shape[0], slot_names.shape[0]
    _share(cfg, shared_cfg, SETTINGS)
    _share(slot_names, shared_names, slot_count)
    _share(slot_replicas, shared_replicas, slot_count)
    _share_layout(cells, biases, bits, shifts, words, shared_cells, shared_biases, shared_bits, shared_shifts,
                  shared_words)
    _share_fields(kinds, firsts, positions, shared_kinds, shared_firsts, shared_positions)
    cuda.syncthreads()
    the_cells, the_biases, the_bits = shared_cells[:fields], shared_biases[:fields], shared_bits[:fields]
    the_shifts, the_words = shared_shifts[:fields], shared_words[:fields]
    s = cuda.local.array(WIDTH, np.int16)
    t = cuda.local.array(WIDTH, np.int16)
    row = cuda.local.array(MAX_WORDS, np.int64)
    registers = cuda.local.array(MAX_REGISTERS, np.int64)
    for index in range(cuda.grid(1), count * slot_count, cuda.gridsize(1)):
        flags[index] = 0
        if cand_flags[index] & ENABLED:
            j, slot = index // slot_count, index % slot_count
            _unpack_row(frontier, first + j, word_count, row, the_cells, the_biases, the_bits, the_shifts, the_words,
                        s)
            _unpack_row(cand_words, index, word_count, row, the_cells, the_biases, the_bits, the_shifts, the_words, t)
            _run(instructions, shared_cfg[C_REPLICAS], shared_kinds, shared_firsts, shared_positions, s, t,
                 shared_names[slot], shared_replicas[slot], registers)
            if flagged(registers, fails, raises, witness):
                flags[index] = 1
