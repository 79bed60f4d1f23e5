"""The compiled level loop: packing, fingerprints, the visited table and parent links.

One call of `explore_level` expands a frontier, or a part of one (the engine expands a level a part
at a time, so that it can stop within a second of a budget or an interrupt). It works a block of
states at a time:
the successors of a block are computed in parallel (`expand_block`: unpack, every action
slot, pack, fingerprint, the step witness), then inserted one by one in frontier order and
slot order into the visited table (so the first path to a state is its least one, as in the
one-partition BFS engine, whatever the number of threads), then the new states' invariants
and witnesses are evaluated in parallel and scanned in node order.

Visited table: 64-bit fingerprints in a power-of-two array with linear probing, 0 marking an
empty slot (the fingerprint 0 is stored as 1), grown at a load of MAX_LOAD. Parent links: a
state's node number is its discovery order; `parents[node]` is its parent's node (NO_PARENT
for an initial state) and `slots[node]` the action slot (the initial-state index of a root).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .invariants import FOLLOWER_TRUNCATED, follower_truncated, state_flags
from kafka_mc.model.state import NO_LEADER

from .layout import C_REPLICAS, HAS_REMOTE, ISR, LEADER, PEER_CUT, REMOTE_LEO, REPLICA_WIDTH, STALE_ISR, WIDTH, ZK_CUT
from .transitions import apply

MAX_LOAD = 0.875  # linear probing: a miss reads about 4 cache lines at this load
NO_PARENT = np.uint32(0xFFFFFFFF)
NOT_FOUND = -1
BLOCK = 4096  # frontier states per block
THREAD_SHARE = 64  # frontier states a thread takes at a time

_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_SEED = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(33)


@njit(cache=True)
def pack(wide, cells, biases, shifts, words, word_count, out, base):
    for word in range(word_count):
        out[base + word] = 0
    for field in range(cells.shape[0]):
        out[base + words[field]] |= (np.int64(wide[cells[field]]) + biases[field]) << shifts[field]


@njit(cache=True)
def unpack(packed, base, cells, biases, bits, shifts, words, wide):
    wide[:] = 0
    for field in range(cells.shape[0]):
        value = (packed[base + words[field]] >> shifts[field]) & ((np.int64(1) << bits[field]) - 1)
        wide[cells[field]] = value - biases[field]


@njit(cache=True)
def permute(cfg, t, order, u):
    """`model.symmetry.permute`: u is t with replica k taken from replica order[k], and every
    reference to a replica (leader, masks, views of the others) renamed."""
    n = cfg[C_REPLICAS]
    u[:] = t
    for new in range(n):
        old = order[new]
        for offset in range(REPLICA_WIDTH):
            u[new * REPLICA_WIDTH + offset] = t[old * REPLICA_WIDTH + offset]
    for new in range(n):
        base = new * REPLICA_WIDTH
        if u[base + HAS_REMOTE]:
            old_base = order[new] * REPLICA_WIDTH
            for other in range(n):
                u[base + REMOTE_LEO + other] = t[old_base + REMOTE_LEO + order[other]]
        u[base + STALE_ISR] = permute_mask(t[order[new] * REPLICA_WIDTH + STALE_ISR], order, n)
    leader = t[LEADER]
    if leader != NO_LEADER:
        for new in range(n):
            if order[new] == leader:
                u[LEADER] = new
    u[ISR] = permute_mask(t[ISR], order, n)
    u[ZK_CUT] = permute_mask(t[ZK_CUT], order, n)
    u[PEER_CUT] = permute_mask(t[PEER_CUT], order, n)


@njit(cache=True, inline="always")
def permute_mask(mask, order, n):
    permuted = 0
    for new in range(n):
        if mask >> order[new] & 1:
            permuted |= 1 << new
    return permuted


@njit(cache=True)
def pack_represented(cfg, t, orders, u, candidate, cells, biases, shifts, words, word_count, out, base):
    """Pack t, or with several replica `orders` (symmetry) the least of its permutations by
    them, word by word: one representative per class of states equal up to renaming replicas."""
    pack(t, cells, biases, shifts, words, word_count, out, base)
    for index in range(1, orders.shape[0]):
        permute(cfg, t, orders[index], u)
        pack(u, cells, biases, shifts, words, word_count, candidate, 0)
        for word in range(word_count):
            if candidate[word] != out[base + word]:
                if candidate[word] < out[base + word]:
                    out[base:base + word_count] = candidate[:word_count]
                break


@njit(cache=True, inline="always")
def _mix(h):
    h ^= h >> _SHIFT
    h *= _MIX1
    h ^= h >> _SHIFT
    h *= _MIX2
    h ^= h >> _SHIFT
    return h


@njit(cache=True)
def fingerprint(packed, base, word_count):
    """A 64-bit hash of a packed state (murmur3's finalizer over each word in turn)."""
    h = _SEED
    for word in range(word_count):
        h = _mix(h ^ np.uint64(packed[base + word]))
    return h


@njit(cache=True)
def fingerprints(packed, count, word_count):
    """The fingerprint of each of `count` packed states."""
    result = np.empty(count, dtype=np.uint64)
    for index in range(count):
        result[index] = fingerprint(packed, index * word_count, word_count)
    return result


@njit(cache=True)
def insert(table, key):
    """Add a fingerprint to the table; True when it was not there yet."""
    if key == 0:
        key = np.uint64(1)
    mask = table.shape[0] - 1
    slot = np.int64(key & np.uint64(mask))
    while True:
        held = table[slot]
        if held == key:
            return False
        if held == 0:
            table[slot] = key
            return True
        slot = (slot + 1) & mask


@njit(cache=True)
def grown_table(table):
    bigger = np.zeros(table.shape[0] * 2, dtype=np.uint64)
    for slot in range(table.shape[0]):
        if table[slot] != 0:
            insert(bigger, table[slot])
    return bigger


@njit(cache=True)
def _grown(values, needed):
    if needed <= values.shape[0]:
        return values
    bigger = np.empty(max(needed, values.shape[0] + values.shape[0] // 2), dtype=values.dtype)
    bigger[:values.shape[0]] = values
    return bigger


@njit(cache=True, parallel=True)
def expand_block(cfg, slot_codes, orders, cells, biases, bits, shifts, words, word_count, frontier, first, count,
                 out_words, out_fingerprints, out_slots, out_truncated, out_counts):
    """The successors of frontier states first..first+count-1: state j's c-th successor at
    j * slot_count + c, with its fingerprint, action slot and whether a log got shorter; with
    more than one replica order, each successor packed as its class's representative. (The
    transitions are inlined in the parallel loop's body: a call per share of states runs at
    half the speed.)"""
    slot_count, n = slot_codes.shape[0], cfg[C_REPLICAS]
    for share in prange((count + THREAD_SHARE - 1) // THREAD_SHARE):
        s = np.empty(WIDTH, dtype=np.int16)
        t = np.empty(WIDTH, dtype=np.int16)
        u = np.empty(WIDTH, dtype=np.int16)
        candidate = np.empty(word_count, dtype=np.int64)
        for j in range(share * THREAD_SHARE, min(count, (share + 1) * THREAD_SHARE)):
            unpack(frontier, (first + j) * word_count, cells, biases, bits, shifts, words, s)
            made = 0
            for slot in range(slot_count):
                if apply(cfg, slot_codes[slot], s, t, slot % n):
                    out = j * slot_count + made
                    pack_represented(cfg, t, orders, u, candidate, cells, biases, shifts, words, word_count,
                                     out_words, out * word_count)
                    out_fingerprints[out] = fingerprint(out_words, out * word_count, word_count)
                    out_slots[out] = slot
                    out_truncated[out] = follower_truncated(cfg, s, t)
                    made += 1
            out_counts[j] = made


@njit(cache=True)
def flag_states(cfg, cells, biases, bits, shifts, words, word_count, frontier, first, low, high, flags):
    s = np.empty(WIDTH, dtype=np.int16)
    for j in range(low, high):
        unpack(frontier, (first + j) * word_count, cells, biases, bits, shifts, words, s)
        flags[j] = state_flags(cfg, s)


@njit(cache=True, parallel=True)
def flag_block(cfg, cells, biases, bits, shifts, words, word_count, frontier, first, count, flags):
    """The property flags (`invariants.state_flags`) of frontier states first..first+count-1."""
    for share in prange((count + THREAD_SHARE - 1) // THREAD_SHARE):
        flag_states(cfg, cells, biases, bits, shifts, words, word_count, frontier, first, share * THREAD_SHARE,
                    min(count, (share + 1) * THREAD_SHARE), flags)


@njit(cache=True)
def explore_level(cfg, slot_codes, orders, cells, biases, bits, shifts, words, word_count, frontier, frontier_count,
                  first_node, new_node, table, table_count, parents, slots, found_nodes, found_slots, looking,
                  next_capacity, enabled):
    """Expand a frontier, or a part of one (nodes first_node on; the new states numbered from
    new_node on, so a level may be expanded a part at a time, in order). Returns the visited table, its count, the
    parent arrays, the next frontier and its count, and the successors generated (each may be
    a new array when it had to grow). `looking`: bitmask of the properties still searched
    for; the first occurrence of each is written into found_nodes (and found_slots for the
    step witness) and its bit cleared. `next_capacity`: the states the next frontier is expected
    to hold (its buffer grows past it by half, a copy at a time). `enabled[slot]` counts the
    successors generated by each action slot (the coverage of `CheckResult.coverage`)."""
    slot_count = slot_codes.shape[0]
    block_room = BLOCK * slot_count
    out_words = np.empty(block_room * word_count, dtype=np.int64)
    out_fingerprints = np.empty(block_room, dtype=np.uint64)
    out_slots = np.empty(block_room, dtype=np.int64)
    out_truncated = np.empty(block_room, dtype=np.bool_)
    out_counts = np.empty(BLOCK, dtype=np.int64)
    flags = np.empty(block_room, dtype=np.int64)
    next_frontier = np.empty(max(next_capacity, BLOCK) * word_count, dtype=np.int64)
    next_count, generated = 0, 0
    limit = np.int64(MAX_LOAD * table.shape[0])
    step_bit = np.int64(1) << FOLLOWER_TRUNCATED
    for first in range(0, frontier_count, BLOCK):
        count = min(BLOCK, frontier_count - first)
        expand_block(cfg, slot_codes, orders, cells, biases, bits, shifts, words, word_count, frontier, first, count,
                     out_words, out_fingerprints, out_slots, out_truncated, out_counts)
        made = 0
        for j in range(count):
            made += out_counts[j]
        generated += made
        while table_count + made > limit:
            table = grown_table(table)
            limit = np.int64(MAX_LOAD * table.shape[0])
        node = new_node + next_count  # the next new state's node number
        parents = _grown(parents, node + made)
        slots = _grown(slots, node + made)
        next_frontier = _grown(next_frontier, (next_count + made) * word_count)
        block_first = next_count
        for j in range(count):
            for c in range(out_counts[j]):
                out = j * slot_count + c
                enabled[out_slots[out]] += 1
                if looking & step_bit and out_truncated[out]:
                    found_nodes[FOLLOWER_TRUNCATED] = first_node + first + j
                    found_slots[FOLLOWER_TRUNCATED] = out_slots[out]
                    looking &= ~step_bit
                if insert(table, out_fingerprints[out]):
                    table_count += 1
                    parents[node] = first_node + first + j
                    slots[node] = out_slots[out]
                    next_frontier[next_count * word_count:(next_count + 1) * word_count] = \
                        out_words[out * word_count:(out + 1) * word_count]
                    node += 1
                    next_count += 1
        if looking & ~step_bit:
            fresh = next_count - block_first
            flag_block(cfg, cells, biases, bits, shifts, words, word_count, next_frontier, block_first, fresh, flags)
            for j in range(fresh):
                hits = flags[j] & looking
                while hits:
                    found = 0
                    while not hits >> found & 1:
                        found += 1
                    found_nodes[found] = new_node + block_first + j
                    hits &= ~(np.int64(1) << found)
                    looking &= ~(np.int64(1) << found)
    return table, table_count, parents, slots, next_frontier[:next_count * word_count], next_count, generated
