"""The compiled level loop: packing, fingerprints, the visited table and parent links.

One call of `explore_level` expands a frontier, or a part of one (the engine expands a level a part
at a time, so that it can stop within a second of a budget or an interrupt). It works a block of
BLOCK frontier states at a time, every step but a few short serial sums in parallel:
1. the successors of the block are computed (`expand_block`: unpack, every action slot, pack,
   fingerprint, the step witness); they stand in block order: by frontier state, then action slot;
2. they are inserted into the visited table (`insert_block`): sorted by shard by a stable counting
   sort (`shard_histograms`, `shard_offsets`, `scatter_by_shard`), so each shard's successors keep
   block order, then each shard's successors inserted in that order, the shards in parallel
   (`insert_shards`).
   A successor is new when its fingerprint is not in the table and no successor before it in block
   order has it: exactly the successors that inserting them one by one in block order finds new;
3. the new states are numbered in block order (`tally_block` counts them per share of frontier
   states, a prefix sum gives each share its first number, `link_block` writes their parent links
   and copies them into the next frontier), with the coverage counts and the first step witness;
4. their invariants and witnesses are evaluated in parallel and scanned in node order.
So the first path to a state is its least one, as in the one-partition BFS engine, and the node
numbers, parent links, next frontier and properties found are the same bit for bit whatever the
number of threads: no step's outcome depends on which thread does what or when (a shard, a share
of the sort or of the numbering is one thread's alone, and the shards and shares are fixed
constants, not the number of threads).

Visited table: 64-bit fingerprints, 0 marking an empty slot (the fingerprint 0 is stored as 1), in
SHARDS shards, each an array of its own (a numba typed List of them): shard k holds the fingerprints
whose high SHARD_BITS bits are k, each from a home slot (its low 32 bits scaled to the shard's size)
probed linearly, wrapping around. `counts` tracks each shard's fingerprints; before a block is
inserted, each shard that all of the block's successors in it would take past a load of MAX_LOAD is
replaced by one GROWTH times as large (`grow_shards`, the shards in parallel), so no shard ever fills
up. A shard's size depends only on the fingerprints it was given, so the table is the same for any
number of threads. Parent links: a state's node number is its discovery order; its parent's node
and action slot are kept by the engine (`links.ParentLinks`), to which a call returns its new states'.

Memory per distinct state: the table's 8 bytes a slot at a load between MAX_LOAD / GROWTH and
MAX_LOAD, so 8.9 to 10.7 bytes; while shards grow, each thread holds one shard's old array beside its
new one (1 / SHARDS of the table each). The parent links take 5 bytes (a uint32 parent and a uint8
slot, in pages): about 16 bytes in all at most. Besides: the frontiers, and for a block its
successors, their sort by shard and the shards' counts (a few MB).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.typed import List

from .invariants import FOLLOWER_TRUNCATED, follower_truncated, state_flags
from kafka_mc.model.state import NO_LEADER

from .layout import (C_REPLICAS, ELR, FOLLOWS, HAS_REMOTE, ISR, LAST_KNOWN_ELR, LEADER, PEER_CUT, PROPOSAL, REMOTE_LEO,
                     REPLICA_WIDTH, REREGISTERED, STALE_ISR, UNSEEN, WIDTH, ZK_CUT)
from .transitions import apply

MAX_LOAD = 0.9  # a shard's load before it grows: linear probing, a miss reads about 6 cache lines at this load
GROWTH = 1.2  # a full shard's new size over its old: the load stays between MAX_LOAD / GROWTH and MAX_LOAD
SHARD_BITS = 8
SHARDS = 1 << SHARD_BITS  # the visited table's shards (a constant: the same layout for any number of threads)
NOT_FOUND = -1
BLOCK = 4096  # frontier states per block
THREAD_SHARE = 64  # frontier states a thread takes at a time
SORT_SHARE = 256  # frontier states a thread sorts by shard at a time (a block's rows of shard histograms)

_MIX1 = np.uint64(0xFF51AFD7ED558CCD)
_MIX2 = np.uint64(0xC4CEB9FE1A85EC53)
_SEED = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(33)
_SHARD_SHIFT = np.uint64(64 - SHARD_BITS)
_LOW_BITS = np.uint64(0xFFFFFFFF)
_HOME_SHIFT = np.uint64(32)


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
        u[base + FOLLOWS] = renamed(u[base + FOLLOWS] - 1, order, n) + 1  # the cell holds `leader_id` + 1
    u[LEADER] = renamed(t[LEADER], order, n)
    u[ISR] = permute_mask(t[ISR], order, n)
    u[ELR] = permute_mask(t[ELR], order, n)
    u[LAST_KNOWN_ELR] = permute_mask(t[LAST_KNOWN_ELR], order, n)
    u[PROPOSAL] = permute_mask(t[PROPOSAL], order, n)
    u[REREGISTERED] = permute_mask(t[REREGISTERED], order, n)
    u[UNSEEN] = permute_mask(t[UNSEEN], order, n)
    u[ZK_CUT] = permute_mask(t[ZK_CUT], order, n)
    u[PEER_CUT] = permute_mask(t[PEER_CUT], order, n)


@njit(cache=True, forceinline=True)
def renamed(index, order, n):
    """`model.symmetry._renamed`: the new name of replica `index` (NO_LEADER stays)."""
    for new in range(n):
        if order[new] == index:
            return new
    return NO_LEADER


@njit(cache=True, forceinline=True)
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


@njit(cache=True, forceinline=True)
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


@njit(cache=True, nogil=True)
def fingerprints(packed, count, word_count):
    """The fingerprint of each of `count` packed states."""
    result = np.empty(count, dtype=np.uint64)
    for index in range(count):
        result[index] = fingerprint(packed, index * word_count, word_count)
    return result


@njit(cache=True)
def new_table(slots):
    """An empty visited table of about `slots` slots: SHARDS arrays of the same size. (This and the two
    below are compiled, and cached, as the rest: a typed List used from Python compiles its methods
    afresh in every process.)"""
    table = List()
    for _ in range(SHARDS):
        table.append(np.zeros(max(-(-slots // SHARDS), 1), dtype=np.uint64))
    return table


@njit(cache=True)
def table_slots(table):
    """The slots of a visited table, held or empty."""
    total = 0
    for shard in table:
        total += shard.shape[0]
    return total


@njit(cache=True)
def table_keys(table):
    """The fingerprints a visited table holds."""
    total = 0
    for shard in table:
        total += np.count_nonzero(shard)
    return total


@njit(cache=True, forceinline=True)
def shard_of(key):
    """The shard of a fingerprint: its high SHARD_BITS bits (the same for 0 and the 1 stored for it)."""
    return np.int64(key >> _SHARD_SHIFT)


@njit(cache=True, forceinline=True)
def home_slot(key, size):
    """A fingerprint's home slot in a table (a shard, or the GPU's table) of `size` slots, fewer than
    2^32: its low 32 bits scaled to the size."""
    return np.int64(((key & _LOW_BITS) * np.uint64(size)) >> _HOME_SHIFT)


@njit(cache=True)
def insert_into(shard, key):
    """Add a (non-zero) fingerprint to one shard; True when it was not there yet: from its home slot
    (`home_slot`), linear probing, wrapping around."""
    size = shard.shape[0]
    offset = home_slot(key, size)
    while True:
        held = shard[offset]
        if held == key:
            return False
        if held == 0:
            shard[offset] = key
            return True
        offset += 1
        if offset == size:
            offset = 0


@njit(cache=True)
def insert(table, key):
    """Add a fingerprint to the table (in its shard, `shard_of`); True when it was not there yet."""
    if key == 0:
        key = np.uint64(1)
    return insert_into(table[shard_of(key)], key)


@njit(cache=True)
def regrown(shard, size):
    """A shard's fingerprints in a new shard of `size` slots."""
    bigger = np.zeros(size, dtype=np.uint64)
    for slot in range(shard.shape[0]):
        if shard[slot] != 0:
            insert_into(bigger, shard[slot])
    return bigger


@njit(cache=True, parallel=True)
def grow_shards(table, counts, starts):
    """Grow each shard that `starts[shard + 1] - starts[shard]` more fingerprints would take past
    MAX_LOAD: by GROWTH, or more if they need it (the shards in parallel, each replaced alone)."""
    for index in prange(SHARDS):
        shard = np.int64(index)  # a typed List takes a signed index
        size, needed = table[shard].shape[0], counts[shard] + starts[shard + 1] - starts[shard]
        if needed > MAX_LOAD * size:
            table[shard] = regrown(table[shard], max(np.int64(size * GROWTH) + 1, np.int64(needed / MAX_LOAD) + 1))


@njit(cache=True, parallel=True)
def shard_histograms(keys, key_counts, count, stride, histograms):
    """histograms[group, shard]: the keys of sources group * SORT_SHARE.. (group + 1) * SORT_SHARE - 1
    in each shard (source j's keys: keys[j * stride:j * stride + key_counts[j]])."""
    for group in prange((count + SORT_SHARE - 1) // SORT_SHARE):
        histograms[group, :] = 0
        for j in range(group * SORT_SHARE, min(count, (group + 1) * SORT_SHARE)):
            for out in range(j * stride, j * stride + key_counts[j]):
                histograms[group, shard_of(keys[out])] += 1


@njit(cache=True)
def shard_offsets(histograms, groups, starts):
    """Each histogram count becomes the place of its group's first key in the keys sorted by shard
    and then by group; starts[shard]: the place of the shard's first key (starts[SHARDS]: all)."""
    place = 0
    for shard in range(SHARDS):
        starts[shard] = place
        for group in range(groups):
            size = histograms[group, shard]
            histograms[group, shard] = place
            place += size
    starts[SHARDS] = place


@njit(cache=True, parallel=True)
def scatter_by_shard(keys, key_counts, count, stride, offsets, sorted_keys, sorted_at):
    """The keys sorted by shard, stably (`shard_offsets`): sorted_keys, and their places in keys."""
    for group in prange((count + SORT_SHARE - 1) // SORT_SHARE):
        fill = offsets[group]
        for j in range(group * SORT_SHARE, min(count, (group + 1) * SORT_SHARE)):
            for out in range(j * stride, j * stride + key_counts[j]):
                shard = shard_of(keys[out])
                sorted_keys[fill[shard]] = keys[out]
                sorted_at[fill[shard]] = out
                fill[shard] += 1


@njit(cache=True, parallel=True)
def insert_shards(table, counts, starts, sorted_keys, sorted_at, is_new):
    """Insert each shard's keys in their order, the shards in parallel (a shard's slots and count
    are its thread's alone); is_new[place] for the key from that place: whether it was not there."""
    for shard in prange(SHARDS):
        added, slots = 0, table[np.int64(shard)]  # a typed List takes a signed index
        for position in range(starts[shard], starts[shard + 1]):
            key = sorted_keys[position]
            fresh = insert_into(slots, key if key != 0 else np.uint64(1))
            is_new[sorted_at[position]] = fresh
            added += fresh
        counts[shard] += added


@njit(cache=True)
def insert_block(table, counts, keys, key_counts, count, stride, is_new, histograms, starts, sorted_keys, sorted_at):
    """Insert the keys of sources 0..count-1 (source j's: keys[j * stride:j * stride + key_counts[j]])
    as if one by one in source order and then key order: is_new[place] is True for the first
    occurrence of a fingerprint when the table did not hold it, whatever the number of threads.
    `counts`: the fingerprints in each shard (updated). A shard is grown first (`grow_shards`) where
    all its keys would take it past a load of MAX_LOAD. histograms, starts, sorted_keys, sorted_at:
    room for the sort by shard (histograms: a row per SORT_SHARE sources)."""
    groups = (count + SORT_SHARE - 1) // SORT_SHARE
    shard_histograms(keys, key_counts, count, stride, histograms)
    shard_offsets(histograms, groups, starts)
    grow_shards(table, counts, starts)
    scatter_by_shard(keys, key_counts, count, stride, histograms, sorted_keys, sorted_at)
    insert_shards(table, counts, starts, sorted_keys, sorted_at, is_new)


@njit(cache=True)
def insert_all(table, counts, keys):
    """`insert_block` of keys, in order: is_new."""
    count = keys.shape[0]
    is_new = np.zeros(count, dtype=np.bool_)
    insert_block(table, counts, keys, np.full(1, count, dtype=np.int64), 1, count, is_new,
                 np.empty((1, SHARDS), dtype=np.int64), np.empty(SHARDS + 1, dtype=np.int64),
                 np.empty(count, dtype=np.uint64), np.empty(count, dtype=np.int64))
    return is_new


@njit(cache=True, parallel=True)
def tally_block(out_counts, count, slot_count, out_slots, out_truncated, is_new, fresh, enabled, truncated):
    """Per share of THREAD_SHARE frontier states: fresh[share], its new states; enabled[share, slot],
    its successors by each action slot; truncated[share], its first successor whose step shortened
    a log (-1 for none)."""
    for share in prange((count + THREAD_SHARE - 1) // THREAD_SHARE):
        made = 0
        enabled[share, :] = 0
        truncated[share] = -1
        for j in range(share * THREAD_SHARE, min(count, (share + 1) * THREAD_SHARE)):
            for out in range(j * slot_count, j * slot_count + out_counts[j]):
                made += is_new[out]
                enabled[share, out_slots[out]] += 1
                if out_truncated[out] and truncated[share] < 0:
                    truncated[share] = out
        fresh[share] = made


@njit(cache=True, parallel=True)
def link_block(out_counts, count, slot_count, out_slots, out_words, word_count, is_new, firsts, parent,
               parents, slots, next_frontier, next_count):
    """Number the new states in block order, in parallel by share: the new states of a share go
    to the next frontier, and their links to parents and slots, from next_count + firsts[share];
    a state's parent is parent + j for frontier state j."""
    for share in prange((count + THREAD_SHARE - 1) // THREAD_SHARE):
        place = firsts[share]
        for j in range(share * THREAD_SHARE, min(count, (share + 1) * THREAD_SHARE)):
            for out in range(j * slot_count, j * slot_count + out_counts[j]):
                if is_new[out]:
                    parents[next_count + place] = parent + j
                    slots[next_count + place] = out_slots[out]
                    base = (next_count + place) * word_count
                    for word in range(word_count):
                        next_frontier[base + word] = out_words[out * word_count + word]
                    place += 1


@njit(cache=True)
def _grown(values, needed):
    if needed <= values.shape[0]:
        return values
    bigger = np.empty(max(needed, values.shape[0] + values.shape[0] // 2), dtype=values.dtype)
    bigger[:values.shape[0]] = values
    return bigger


@njit(cache=True, nogil=True, parallel=True)
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


@njit(cache=True, nogil=True, parallel=True)
def flag_block(cfg, cells, biases, bits, shifts, words, word_count, frontier, first, count, flags):
    """The property flags (`invariants.state_flags`) of frontier states first..first+count-1."""
    for share in prange((count + THREAD_SHARE - 1) // THREAD_SHARE):
        flag_states(cfg, cells, biases, bits, shifts, words, word_count, frontier, first, share * THREAD_SHARE,
                    min(count, (share + 1) * THREAD_SHARE), flags)


@njit(cache=True)
def explore_level(cfg, slot_codes, orders, cells, biases, bits, shifts, words, word_count, frontier, frontier_count,
                  first_node, new_node, table, counts, found_nodes, found_slots, looking, next_capacity, enabled):
    """Expand a frontier, or a part of one (nodes first_node on; the new states numbered from
    new_node on, so a level may be expanded a part at a time, in order). Returns the new states'
    parent links (their parents' nodes and action slots, `links.ParentLinks`), the next frontier, its count and the
    successors generated. The visited table (a shard may be replaced by a larger one) and `counts`, the fingerprints
    in each of its shards, are updated. `looking`: bitmask of the properties still searched
    for; the first occurrence of each is written into found_nodes (and found_slots for the
    step witness) and its bit cleared. `next_capacity`: the states the next frontier is expected
    to hold (its buffer grows past it by half, a copy at a time). `enabled[slot]` counts the
    successors generated by each action slot (the coverage of `CheckResult.coverage`)."""
    slot_count = slot_codes.shape[0]
    block_room = BLOCK * slot_count
    shares = (BLOCK + THREAD_SHARE - 1) // THREAD_SHARE
    out_words = np.empty(block_room * word_count, dtype=np.int64)
    out_fingerprints = np.empty(block_room, dtype=np.uint64)
    out_slots = np.empty(block_room, dtype=np.int64)
    out_truncated = np.empty(block_room, dtype=np.bool_)
    out_counts = np.empty(BLOCK, dtype=np.int64)
    is_new = np.empty(block_room, dtype=np.bool_)
    histograms = np.empty(((BLOCK + SORT_SHARE - 1) // SORT_SHARE, SHARDS), dtype=np.int64)
    starts = np.empty(SHARDS + 1, dtype=np.int64)
    sorted_keys = np.empty(block_room, dtype=np.uint64)
    sorted_at = np.empty(block_room, dtype=np.int64)
    fresh = np.empty(shares, dtype=np.int64)
    share_enabled = np.empty((shares, slot_count), dtype=np.int64)
    truncated = np.empty(shares, dtype=np.int64)
    flags = np.empty(block_room, dtype=np.int64)
    next_frontier = np.empty(max(next_capacity, BLOCK) * word_count, dtype=np.int64)
    parents = np.empty(max(next_capacity, BLOCK), dtype=np.uint32)
    slots = np.empty(max(next_capacity, BLOCK), dtype=np.uint8)
    next_count, generated = 0, 0
    step_bit = np.int64(1) << FOLLOWER_TRUNCATED
    for first in range(0, frontier_count, BLOCK):
        count = min(BLOCK, frontier_count - first)
        expand_block(cfg, slot_codes, orders, cells, biases, bits, shifts, words, word_count, frontier, first, count,
                     out_words, out_fingerprints, out_slots, out_truncated, out_counts)
        insert_block(table, counts, out_fingerprints, out_counts, count, slot_count, is_new, histograms, starts,
                     sorted_keys, sorted_at)
        made = starts[SHARDS]
        generated += made
        tally_block(out_counts, count, slot_count, out_slots, out_truncated, is_new, fresh, share_enabled, truncated)
        block_new = 0
        for share in range((count + THREAD_SHARE - 1) // THREAD_SHARE):  # fresh becomes each share's first place
            share_new = fresh[share]
            fresh[share] = block_new
            block_new += share_new
            for slot in range(slot_count):
                enabled[slot] += share_enabled[share, slot]
            if looking & step_bit and truncated[share] >= 0:
                out = truncated[share]
                found_nodes[FOLLOWER_TRUNCATED] = first_node + first + out // slot_count
                found_slots[FOLLOWER_TRUNCATED] = out_slots[out]
                looking &= ~step_bit
        parents = _grown(parents, next_count + block_new)
        slots = _grown(slots, next_count + block_new)
        next_frontier = _grown(next_frontier, (next_count + block_new) * word_count)
        link_block(out_counts, count, slot_count, out_slots, out_words, word_count, is_new, fresh, first_node + first,
                   parents, slots, next_frontier, next_count)
        block_first = next_count
        next_count += block_new
        if looking & ~step_bit:
            flag_block(cfg, cells, biases, bits, shifts, words, word_count, next_frontier, block_first, block_new,
                       flags)
            for j in range(block_new):
                hits = flags[j] & looking
                while hits:
                    found = 0
                    while not hits >> found & 1:
                        found += 1
                    found_nodes[found] = new_node + block_first + j
                    hits &= ~(np.int64(1) << found)
                    looking &= ~(np.int64(1) << found)
    return parents[:next_count], slots[:next_count], next_frontier[:next_count * word_count], next_count, generated
