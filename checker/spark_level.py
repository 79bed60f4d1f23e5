"""The Spark engine's level task on the executors (`checker.spark`): one BFS level, and the
expansion of its new states, as Arrow batches and numpy arrays, never a Spark SQL join or
aggregation per state.

A level's rows (`LEVEL_COLUMNS`, one schema from the shuffle to the Parquet files) are each a
batch, told apart by their (negative) slot; `owner` routes the row to its partition (`routes`):

- `STATES`: a batch of a partition's new states of the level, ascending by fingerprint (`payload`:
  their columns packed, `pack_payloads`: property masks, fingerprints, edge keys, parents' fingerprints
  and action slots, with empty packed states: `state_rows`; `fp` and `key`: the batch's least and
  greatest fingerprint, for lookups; `parent`: the level).
- `VISITED`: a chunk of a partition's new fingerprints, sorted (`payload`: little-endian int64
  bytes; `key`: the partition; `parent`: the level; `fp`: the chunk's index; `props`: the
  level's chunk count for that partition): the visited set on disk.
- `CANDIDATES`: a batch of the next level's candidates that one partition owns (`payload`: owner
  hashes, fingerprints, edge keys, parents, slots and packed states, `pack_payloads`; `key`: how
  many), some thousands a row, so that Spark moves a level's candidates as a few large rows, not
  one row each: its cost per row is the JVM's, its cost per byte a copy. Level 0's are built by the
  driver (`seed_payloads`).

The level's one shuffle (`repartition(P, "owner")` of the level before's CANDIDATES rows, Spark's
hash partitioning: `spark_partition`; with one partition, none) gives the task of partition p every
candidate that p owns, and `level_step` keeps, for each fingerprint, the edge of least (key,
parent, slot) (`least_edges`), drops those in p's visited set (a sorted int64 array,
`positions`), checks the properties on the new states, and returns them as STATES rows with their
VISITED rows; then it expands them in the same task (the kernel's or the model's expansion into
`Candidates`) and returns the next level's CANDIDATES rows, which Spark writes with the level.
One summary goes through an accumulator (counts, the least key of each property's states, what
the expansion generated and the least edge of each step witness it found). The task's rows are
made by a thread of its own, ahead of Spark's writes (`made_ahead`).

p's visited set through level d is also kept beside the executors, as `cache_path(uid, p, d)`
(a `.npy` file in the machine's temporary directory, shared by its executors' Python workers,
read memory-mapped). The expansion drops the candidates it finds there (`unvisited`, once per
flush of `Candidates`), so the shuffle carries few visited states; a level task that does not
find its partition's file reports a miss, and the driver runs the level again with every
partition's `VISITED` rows read from the checkpoint into the shuffle (`from_disk`).
"""

from __future__ import annotations

import contextlib
import os
import queue
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np

LEVEL_COLUMNS = ("owner", "fp", "key", "parent", "slot", "props", "payload")
OWNER, FP, KEY, PARENT, SLOT, PROPS, PAYLOAD = range(len(LEVEL_COLUMNS))
VISITED, STATES, CANDIDATES = -1, -2, -3  # the slots of a level's rows
CHUNK = 1 << 17  # fingerprints in one VISITED row (1 MiB)
BATCH = 1 << 16  # states in one STATES row, candidates in one CANDIDATES row, frontier states in one expansion call


# ------------------------------------------------------------------ Spark's partitioning

_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def spark_hash(values) -> np.ndarray:
    """Spark's `hash` of 64-bit ints (`Murmur3_x86_32.hashLong`, seed 42), as int32."""
    v = np.asarray(values, dtype=np.int64).view(np.uint64)
    h = np.full(len(v), 42, dtype=np.uint32)
    with np.errstate(over="ignore"):
        for k in ((v & np.uint64(0xFFFFFFFF)).astype(np.uint32), (v >> np.uint64(32)).astype(np.uint32)):
            k = _rotl(k * _C1, 15) * _C2
            h = _rotl(h ^ k, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        h ^= np.uint32(8)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def spark_partition(values, partitions: int) -> np.ndarray:
    """The partition `repartition(partitions, column)` sends each 64-bit value of a column to:
    `pmod(hash(column), partitions)`, Spark's `HashPartitioning`."""
    return np.mod(spark_hash(values).astype(np.int64), partitions)


def routes(partitions: int) -> list[int]:
    """For each partition, the least non-negative owner value Spark sends there (how a level's row
    reaches the partition it is for)."""
    found = np.full(partitions, -1, dtype=np.int64)
    start, width = 0, max(1024, 4 * partitions)
    while (found < 0).any():
        values = np.arange(start, start + width, dtype=np.int64)
        targets = spark_partition(values, partitions)
        firsts, where = np.unique(targets, return_index=True)
        unset = found[firsts] < 0
        found[firsts[unset]] = values[where[unset]]
        start += width
    return found.tolist()


# ------------------------------------------------------------------ deduplication


RADIX_BITS = 11  # a radix sort's digit: 6 passes over 64 bits, 2,048 buckets
SIGN = np.uint64(1 << 63)


def least_edges(fps: np.ndarray, keys: np.ndarray, parents: np.ndarray, slots: np.ndarray,
                runs: bool = False) -> np.ndarray:
    """For each distinct fingerprint of `fps`, in ascending order, the index of its edge of least
    (key, parent, slot), the first such in `fps` order: one sort by fingerprint, then one pass over
    each run of equal ones (numba). The sort is a radix sort (numba, `radix_order`: a third of numpy's
    quicksort's time for a batch's fingerprints); with `runs`, `fps` is a few ascending runs one after
    another, which numpy's merge sort takes in far less."""
    if not len(fps):
        return np.empty(0, dtype=np.intp)
    if runs:
        order = np.argsort(fps, kind="stable")
    else:
        order = _compiled("radix_order")(np.ascontiguousarray(fps, dtype=np.int64))
    chosen = np.empty(len(order), dtype=np.intp)
    count = _compiled("least")(order, fps, keys, parents, slots, chosen)
    return chosen[:count]


_COMPILED: dict = {}


def _compiled(name: str):
    """The numba functions of this module, compiled (or loaded from numba's cache) on first use: an
    executor that never needs one does not import numba for it."""
    if not _COMPILED:
        from numba import njit

        from .numba_cache import register_shipped_locator

        register_shipped_locator()  # run from a Spark job's zip: cached by this module's source, not by the job's zip

        @njit(cache=True, nogil=True)
        def least(order, fps, keys, parents, slots, chosen):  # pragma: no cover - compiled
            size, count, i = order.shape[0], 0, 0
            while i < size:
                best = order[i]
                fp = fps[best]
                j = i + 1
                while j < size and fps[order[j]] == fp:
                    other = order[j]
                    if keys[other] < keys[best] or (keys[other] == keys[best] and (
                            parents[other] < parents[best] or (parents[other] == parents[best]
                                                               and slots[other] < slots[best]))):
                        best = other
                    j += 1
                chosen[count] = best
                count += 1
                i = j
            return count

        @njit(cache=True, nogil=True)
        def gallop(haystack, needles, where, found):  # pragma: no cover - compiled
            size, low = haystack.shape[0], 0
            for k in range(needles.shape[0]):
                needle = needles[k]
                if k and needle < needles[k - 1]:
                    low = 0
                bound = 1
                while low + bound < size and haystack[low + bound] < needle:
                    bound *= 2
                left, right = low + bound // 2, min(low + bound, size)
                while left < right:
                    middle = (left + right) // 2
                    if haystack[middle] < needle:
                        left = middle + 1
                    else:
                        right = middle
                low = left
                where[k] = low
                found[k] = low < size and haystack[low] == needle

        @njit(cache=True, nogil=True)
        def radix_order(values):  # pragma: no cover - compiled
            """The indices of `values` (int64) in ascending order of value, equal values in index order:
            a least-significant-digit radix sort, RADIX_BITS at a time."""
            size, buckets = values.shape[0], 1 << RADIX_BITS
            order, spare = np.arange(size), np.empty(size, dtype=np.intp)
            counts = np.empty(buckets + 1, dtype=np.int64)
            mask = np.uint64(buckets - 1)
            for shift in range(0, 64, RADIX_BITS):
                counts[:] = 0
                for index in range(size):  # the sign bit flipped: signed order
                    digit = ((np.uint64(values[index]) ^ SIGN) >> np.uint64(shift)) & mask
                    counts[np.int64(digit) + 1] += 1
                if counts.max() == size:  # every value has this digit: the order stands
                    continue
                for bucket in range(buckets):
                    counts[bucket + 1] += counts[bucket]
                for place in range(size):
                    index = order[place]
                    digit = np.int64(((np.uint64(values[index]) ^ SIGN) >> np.uint64(shift)) & mask)
                    spare[counts[digit]] = index
                    counts[digit] += 1
                order, spare = spare, order
            return order

        @njit(cache=True, nogil=True)
        def gather_bytes(offsets, data, rows, out, at):  # pragma: no cover - compiled
            """Append the byte strings `rows` of (offsets, data) to `out` from `at`; the end."""
            for row in rows:
                for index in range(offsets[row], offsets[row + 1]):  # a loop: a slice per row costs more
                    out[at] = data[index]
                    at += 1
            return at

        @njit(cache=True, nogil=True)
        def merge_at(values, more, where, out):  # pragma: no cover - compiled
            """`values` with each of `more` put before `values[where[j]]` (`where` ascending), into `out`."""
            done, at = 0, 0
            for j in range(more.shape[0]):
                size = where[j] - done
                out[at:at + size] = values[done:where[j]]
                at += size
                out[at] = more[j]
                at += 1
                done = where[j]
            out[at:] = values[done:]

        _COMPILED.update(least=least, gallop=gallop, radix_order=radix_order, gather_bytes=gather_bytes,
                         merge_at=merge_at)
    return _COMPILED[name]


def least_pair(keys: np.ndarray, parents: np.ndarray) -> tuple[int, int] | None:
    """The least (key, parent) of two arrays, None when they are empty."""
    if not len(keys):
        return None
    best = np.lexsort((parents, keys))[0]
    return int(keys[best]), int(parents[best])


def binary_buffers(array) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow binary (or large binary) array's byte strings as (ends, data), read in place: the int64
    end of each string in `data`, its uint8 bytes (the first string starts at 0)."""
    import pyarrow as pa

    width = 8 if pa.types.is_large_binary(array.type) else 4
    ends = np.frombuffer(array.buffers()[1], dtype=f"<i{width}", count=len(array) + 1, offset=width * array.offset)
    buffer = array.buffers()[2]
    first, last = int(ends[0]), int(ends[-1])
    data = np.frombuffer(buffer, dtype=np.uint8)[first:last] if buffer is not None else np.empty(0, dtype=np.uint8)
    return ends[1:].astype(np.int64) - first, data


def flat_bytes(arrays: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The byte strings of Arrow binary arrays, one after another, as (offsets, data): int64
    offsets (one more than strings) into one uint8 array (a copy: writable, as numba wants)."""
    offsets, datas, base = [np.zeros(1, dtype=np.int64)], [], 0
    for array in arrays:
        ends, data = binary_buffers(array)
        offsets.append(ends + base)
        datas.append(data)
        base += len(data)
    return np.concatenate(offsets), np.concatenate(datas) if datas else np.empty(0, dtype=np.uint8)


def fixed_width(offsets: np.ndarray) -> int:
    """The one length of every byte string of (offsets, data) (`flat_bytes`), or 0 when they differ
    (the kernel's packed states have one length; a model's pickles need not)."""
    lengths = np.diff(offsets)
    return int(lengths[0]) if len(lengths) and lengths[0] and (lengths == lengths[0]).all() else 0


def gather_into(offsets: np.ndarray, data: np.ndarray, width: int, rows: np.ndarray, out: np.ndarray,
                at: int) -> None:
    """Copy the byte strings `rows` of (offsets, data) one after another into `out` from `at`
    (`width`: `fixed_width(offsets)`: numpy's take of whole rows, else a compiled loop)."""
    if width:
        out[at:at + width * len(rows)] = data.reshape(-1, width).take(rows, axis=0).reshape(-1)
    else:
        _compiled("gather_bytes")(offsets, data, np.asarray(rows, dtype=np.int64), out, at)


def take_bytes(offsets: np.ndarray, data: np.ndarray, width: int, rows: np.ndarray):
    """The byte strings `rows` of (offsets, data) (`flat_bytes`; `width`: `fixed_width(offsets)`) as
    an Arrow binary array."""
    import pyarrow as pa

    ends = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum(offsets[rows + 1] - offsets[rows], out=ends[1:])
    out = np.empty(int(ends[-1]), dtype=np.uint8)
    gather_into(offsets, data, width, rows, out, 0)
    return pa.Array.from_buffers(pa.binary(), len(rows), [None, pa.py_buffer(ends), pa.py_buffer(out)])


_STORES: list[np.ndarray] = []  # a finished expansion's store of packed states, for the next in this process


class Candidates:
    """An expansion's candidates (`add`: a frontier batch's, ascending by fingerprint, each once with
    its least edge), deduplicated again across the batches (`least_edges`) when `limit` of them
    wait or the expansion ends (`flush`), so the shuffle carries a state reached from several
    batches once, less those this machine knows visited through level `depth - 1` (`unvisited`:
    one sweep of the visited sets for all the waiting candidates, ascending); and what the
    expansion generated and found (`note`), which the level task reports. `place`: the
    checkpoint's uid, the candidates' level `depth` and the partition count. The expansions of
    the kernel (`spark_kernel.kernel_expander`) and of any model (`spark._expander`) hand their
    batches to one."""

    def __init__(self, place: tuple[str, int, int], schema, limit: int = 1 << 20, limit_bytes: int = 1 << 29):
        self.uid, self.depth, self.partitions = place
        self.schema, self.limit, self.limit_bytes = schema, limit, limit_bytes
        self.parts: list[tuple] = []
        self.waiting, self.generated = 0, 0
        self.steps: dict[int, tuple[int, int]] = {}
        # the waiting candidates' packed states, one after another (reused from flush to flush, and by the
        # next level's task in this Python worker: `release`)
        self.data = _STORES.pop() if _STORES else np.empty(0, dtype=np.uint8)
        self.used, self.ends = 0, [np.zeros(1, dtype=np.int64)]

    def release(self) -> None:
        """Leave the store to this process's next expansion, grown and its pages mapped (a level
        task's first flush grew it by copies, 0.7 s of a 1.47e7-state run)."""
        _STORES[:] = [self.data]
        self.data, self.used, self.ends = np.empty(0, dtype=np.uint8), 0, self.ends[:1]

    def note(self, generated: int, steps: dict[int, tuple[int, int]]) -> None:
        """Successors a batch generated, and per step witness its least (key, parent) edge."""
        self.generated += generated
        for index, pair in steps.items():
            self.steps[index] = min(self.steps.get(index, pair), pair)

    def add(self, owners: np.ndarray, fps: np.ndarray, keys: np.ndarray, parents: np.ndarray, slots: np.ndarray,
            states, chosen: np.ndarray | None = None) -> Iterator[Any]:
        """Keep a batch's candidates; the CANDIDATES rows due, if any. `states`: their packed states, an
        Arrow binary array; or, with `chosen`, a (count, words) int64 array of packed rows of which
        rows `chosen` are the candidates' (the kernel's successors, taken straight into the store)."""
        if len(fps):
            self.parts.append((owners, fps, keys, parents, slots))
            self.waiting += len(fps)
            if chosen is None:
                ends, data = binary_buffers(states)
                start = self._room(len(data))
                self.data[start:self.used] = data
                self.ends.append(ends + start)
            else:
                width = 8 * states.shape[1]
                start = self._room(width * len(chosen))
                into = self.data[start:self.used].view(np.int64).reshape(len(chosen), states.shape[1])
                np.take(states, chosen, axis=0, out=into, mode="clip")  # "clip": unbuffered (`chosen` are rows)
                self.ends.append(start + width * np.arange(1, len(chosen) + 1, dtype=np.int64))
        due = self.waiting >= self.limit or self.used >= self.limit_bytes
        return self.flush() if due else iter(())

    def _room(self, size: int) -> int:
        """Where `size` more bytes of states go in the store (grown by half as needed)."""
        start, self.used = self.used, self.used + size
        if self.used > len(self.data):
            grown = np.empty(max(self.used, len(self.data) * 3 // 2), dtype=np.uint8)
            grown[:start] = self.data[:start]
            self.data = grown
        return start

    def flush(self) -> Iterator[Any]:
        """The waiting candidates, once per fingerprint, as CANDIDATES rows, each of one partition's
        (ascending by fingerprint)."""
        if self.parts:
            columns = tuple(np.concatenate(column) for column in zip(*self.parts))
            offsets, data = np.concatenate(self.ends), self.data[:self.used]
            self.parts, self.waiting, self.used, self.ends = [], 0, 0, self.ends[:1]
            owners, fps, keys, parents, slots = columns
            chosen = least_edges(fps, keys, parents, slots, runs=True)
            targets = spark_partition(owners[chosen], self.partitions)
            order, bounds = by_partition(targets, self.partitions)
            order = order[unvisited(self.uid, self.depth - 1, fps[chosen], order, bounds)[order]]
            chosen, bounds = chosen[order], np.searchsorted(targets[order], np.arange(self.partitions + 1))
            yield candidate_rows(self.schema, columns, offsets, data, chosen, bounds)


def candidate_rows(schema, columns: tuple[np.ndarray, ...], offsets: np.ndarray, data: np.ndarray,
                   chosen: np.ndarray, bounds: np.ndarray):
    """CANDIDATES rows of the candidates `chosen` (row indices into `columns`, owners, fps, keys,
    parents, slots, and into the packed states (offsets, data); grouped by partition, partition p's
    from `bounds[p]` to `bounds[p + 1]`), a row per partition and BATCH of them."""
    route_of, routed, parts = routes_of(len(bounds) - 1), [], []
    for partition in np.flatnonzero(np.diff(bounds)).tolist():
        for start in range(bounds[partition], bounds[partition + 1], BATCH):
            routed.append(route_of[partition])
            parts.append(chosen[start:min(start + BATCH, bounds[partition + 1])])
    return _rows(schema, CANDIDATES, routed, keys=[len(part) for part in parts],
                 payloads=pack_payloads(columns, offsets, data, parts))


def seed_payloads(schema, partitions: int, owners: Sequence[int], fps: Sequence[int], indices: Sequence[int],
                  states: Sequence[bytes]):
    """Level 0's CANDIDATES rows (`schema`: the level's Spark schema), as a list of row tuples: the
    initial states (their owner hashes, fingerprints, indices among the model's initial states and
    packed states), each one's edge key and slot its index, its parent 0; of those of one
    fingerprint, the level step keeps the first (the least key)."""
    import pyarrow as pa

    hashes, prints, places = (np.asarray(column, dtype=np.int64) for column in (owners, fps, indices))
    offsets, data = flat_bytes([pa.array(list(states), pa.binary())])
    targets = spark_partition(hashes, partitions)
    order, bounds = by_partition(targets, partitions)
    columns = (hashes, prints, places, np.zeros(len(prints), dtype=np.int64), places)
    rows = candidate_rows(arrow_schema(schema), columns, offsets, data, order, bounds)
    return [tuple(row.values()) for row in rows.to_pylist()]


def pack_payloads(columns: tuple[np.ndarray, ...], offsets: np.ndarray, data: np.ndarray,
                  parts: Sequence[np.ndarray]):
    """An Arrow binary array of payloads (CANDIDATES and STATES rows), one per part (row indices into
    `columns`: four int64 arrays and the slots; and into the packed states' byte strings, (offsets,
    data) as `flat_bytes` gives them), built in one buffer. A payload, little-endian: the count n,
    the part's four int64 columns (CANDIDATES: owners, fps, keys, parents; STATES: property masks,
    fps, keys, parents), its slots (int32), the n + 1 offsets of their packed states in the bytes
    that follow (int32), then those bytes."""
    import pyarrow as pa

    lengths = offsets[1:] - offsets[:-1]
    sizes = [8 + 40 * len(part) + 4 + int(lengths[part].sum()) for part in parts]
    bounds = np.zeros(len(parts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    out, width = np.empty(int(bounds[-1]), dtype=np.uint8), fixed_width(offsets)
    for part, at in zip(parts, bounds[:-1].tolist()):
        count = len(part)
        out[at:at + 8] = np.array([count], dtype="<i8").view(np.uint8)
        at += 8
        for column in columns[:4]:
            out[at:at + 8 * count] = column[part].astype("<i8").view(np.uint8)
            at += 8 * count
        out[at:at + 4 * count] = columns[4][part].astype("<i4").view(np.uint8)
        at += 4 * count
        ends = np.zeros(count + 1, dtype="<i4")
        np.cumsum(lengths[part], out=ends[1:])
        out[at:at + 4 * (count + 1)] = ends.view(np.uint8)
        if len(data):
            gather_into(offsets, data, width, part, out, at + 4 * (count + 1))
    return pa.Array.from_buffers(pa.binary(), len(parts), [None, pa.py_buffer(bounds.astype(np.int32)),
                                                            pa.py_buffer(out)])


def unpack_payload(payload) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]:
    """The four int64 columns, the slots and the states (an Arrow binary array) of a payload
    (`pack_payloads`; an Arrow buffer), the arrays read in place."""
    import pyarrow as pa

    count = int(np.frombuffer(payload, dtype="<i8", count=1)[0])
    columns = [np.frombuffer(payload, dtype="<i8", count=count, offset=8 * (1 + k * count)) for k in range(4)]
    at = 8 * (1 + 4 * count)
    slots = np.frombuffer(payload, dtype="<i4", count=count, offset=at)
    at += 4 * count
    offsets = payload.slice(at, 4 * (count + 1))
    at += 4 * (count + 1)
    states = pa.Array.from_buffers(pa.binary(), count, [None, offsets, payload.slice(at)])
    return (*columns, slots, states)


# ------------------------------------------------------------------ sorted fingerprint sets


def positions(haystack: np.ndarray, needles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the index in `haystack` of each of `needles`, or where it would go; whether it is there):
    `np.searchsorted` and a membership test, for `needles` ascending (as a level's fingerprints
    come), by a galloping search from the previous needle's place (numba): one sweep of a visited set
    of millions for a flush's candidates, where a binary search per candidate misses the cache at
    every step. Unsorted needles are answered too, each from the start."""
    where, found = np.empty(len(needles), dtype=np.int64), np.empty(len(needles), dtype=np.bool_)
    if len(needles):
        _compiled("gallop")(np.asarray(haystack, dtype=np.int64), np.asarray(needles, dtype=np.int64), where, found)
    return where, found


def inserted(values: np.ndarray, where: np.ndarray, more: np.ndarray) -> np.ndarray:
    """`np.insert(values, where, more)` for `where` ascending (`positions`' places of `more`, ascending),
    by one compiled merge: half of numpy's time for a level's fingerprints into a visited set of millions."""
    out = np.empty(len(values) + len(more), dtype=np.int64)
    _compiled("merge_at")(np.asarray(values, dtype=np.int64), np.asarray(more, dtype=np.int64),
                          np.asarray(where, dtype=np.int64), out)
    return out


# ------------------------------------------------------------------ visited sets beside the executors


def cache_dir(uid: str) -> Path:
    """Where this machine keeps the visited sets of the checkpoint `uid`."""
    return Path(tempfile.gettempdir()) / f"kafka-mc-visited-{uid}"


def cache_path(uid: str, partition: int, depth: int) -> Path:
    return cache_dir(uid) / f"p{partition:05d}-{depth:05d}.npy"


def load_visited(uid: str, partition: int, depth: int) -> np.ndarray | None:
    """Partition `partition`'s visited fingerprints through level `depth`, sorted (empty before
    level 0), or None when this machine does not have them."""
    if depth < 0:
        return np.empty(0, dtype=np.int64)
    try:
        return np.load(cache_path(uid, partition, depth), mmap_mode="r")
    except (OSError, ValueError):
        return None


_MAPPED: dict[tuple[str, int, int], np.ndarray] = {}  # (uid, partition, depth) -> visited set, in this process


def by_partition(targets: np.ndarray, partitions: int) -> tuple[np.ndarray, np.ndarray]:
    """(the indices of `targets` by partition, in their order within each; where each partition's
    begin, and the end): rows grouped by the partition Spark sends them to (`spark_partition`)."""
    order = np.argsort(targets, kind="stable")
    return order, np.searchsorted(targets[order], np.arange(partitions + 1))


def unvisited(uid: str, depth: int, fps: np.ndarray, order: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Which candidates (their fingerprints, ascending; grouped by partition, `by_partition`) are not
    visited through level `depth`, as far as this machine knows: a partition whose visited set
    through `depth` is not here yet (its level task has not run) is swept with its set through
    `depth - 1`, and one with neither keeps its candidates (the level step decides them). Dropping
    the visited ones before the shuffle spares it most of a level's candidates."""
    keep = np.ones(len(fps), dtype=bool)
    if depth < 0 or not len(fps):
        return keep
    for key in [key for key in _MAPPED if key[0] != uid or key[2] < depth - 1]:
        del _MAPPED[key]
    for partition in np.flatnonzero(np.diff(bounds)).tolist():
        visited = _mapped(uid, partition, depth)
        if visited is None:
            visited = _mapped(uid, partition, depth - 1)
            if visited is None:
                continue
        rows = order[bounds[partition]:bounds[partition + 1]]
        if len(visited):
            keep[rows[positions(visited, fps[rows])[1]]] = False
    return keep


def _mapped(uid: str, partition: int, depth: int) -> np.ndarray | None:
    """`load_visited`, kept mapped in this process."""
    visited = _MAPPED.get((uid, partition, depth))
    if visited is None:
        visited = load_visited(uid, partition, depth)
        if visited is not None:
            _MAPPED[(uid, partition, depth)] = visited
    return visited


def save_visited(uid: str, partition: int, depth: int, visited: np.ndarray) -> None:
    """Keep a partition's visited set through level `depth` on this machine: written to a
    temporary name, then renamed (a reader sees the whole file or none); the files before
    level `depth - 1` of the partition are removed (level `depth` may run again). Where it
    cannot be written (a full disk), it is not kept: the next level misses it, and reads it
    from the checkpoint."""
    folder = cache_dir(uid)
    target = cache_path(uid, partition, depth)
    temporary = folder / f".{target.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with open(temporary, "wb") as out:
            np.save(out, np.ascontiguousarray(visited, dtype=np.int64))
        os.replace(temporary, target)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
        return
    for old in folder.glob(f"p{partition:05d}-*.npy"):
        try:
            if int(old.stem.split("-")[1]) < depth - 1:
                old.unlink()
        except (ValueError, OSError):
            pass


def drop_cache(uid: str) -> None:
    """Remove this machine's visited sets of the checkpoint `uid`."""
    import shutil

    shutil.rmtree(cache_dir(uid), ignore_errors=True)


# ------------------------------------------------------------------ Arrow helpers


def arrow_schema(schema):
    """The Arrow schema of a Spark `StructType`."""
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)


def _rows(schema, slots, owners: Sequence[int], payloads, fps: Sequence[int] | None = None,
          keys: Sequence[int] | None = None, parents: Sequence[int | None] | None = None,
          props: Sequence[int] | None = None):
    """A batch of a level's rows, one per owner: `slots` one slot or one per row; `payloads` a
    sequence of bytes or an Arrow binary array; a column not given is 0 (`parent`: null)."""
    import pyarrow as pa

    count = len(owners)
    zeros = [0] * count
    return pa.RecordBatch.from_arrays(
        [pa.array(owners, pa.int64()), pa.array(zeros if fps is None else fps, pa.int64()),
         pa.array(zeros if keys is None else keys, pa.int64()),
         pa.array([None] * count if parents is None else parents, pa.int64()),
         pa.array([slots] * count if isinstance(slots, int) else slots, pa.int32()),
         pa.array(zeros if props is None else props, pa.int64()),
         payloads if isinstance(payloads, pa.Array) else pa.array(payloads, pa.binary())], schema=schema)


def _visited_rows(route: int, partition: int, depth: int, fps: np.ndarray, schema):
    """The VISITED rows of a partition's new fingerprints (sorted), one at least."""
    count = max(1, -(-len(fps) // CHUNK))
    data = np.ascontiguousarray(fps, dtype="<i8")
    chunks = [data[i * CHUNK:(i + 1) * CHUNK].tobytes() for i in range(count)]
    return _rows(schema, VISITED, [route] * count, fps=range(count), keys=[partition] * count,
                 parents=[depth] * count, props=[count] * count, payloads=chunks)


def state_rows(route: int, depth: int, columns: tuple[np.ndarray, ...], rows: np.ndarray, schema):
    """The STATES rows of a partition's new states, `rows` (indices into `columns`: property masks,
    fps, keys, parents, slots), ascending by fingerprint: a row per BATCH of them, with its least and
    greatest fingerprint. Their packed states are left out (each payload's are empty): a trace is
    replayed from its action slots, and a resumed run expands the CANDIDATES rows, which hold theirs;
    the JVM writes 40 bytes a state fewer (the kernel's states of leader-epoch r=3 m=4 c=2 e=1)."""
    parts = [rows[start:start + BATCH] for start in range(0, len(rows), BATCH)]
    fps = columns[1]
    empty_states = np.zeros(len(fps) + 1, dtype=np.int64), np.empty(0, dtype=np.uint8)  # (offsets, data)
    return _rows(schema, STATES, [route] * len(parts), fps=[int(fps[part[0]]) for part in parts],
                 keys=[int(fps[part[-1]]) for part in parts], parents=[depth] * len(parts),
                 payloads=pack_payloads(columns, *empty_states, parts))


def read_states(payloads: Sequence[Any]) -> dict[int, tuple[int, int, int, int]]:
    """The states of STATES rows' payloads (Arrow buffers or bytes), by fingerprint: (key, parent,
    slot, property mask)."""
    import pyarrow as pa

    found = {}
    for payload in payloads:
        props, fps, keys, parents, slots, _ = unpack_payload(payload if isinstance(payload, pa.Buffer)
                                                             else pa.py_buffer(payload))
        for fp, key, parent, slot, mask in zip(fps.tolist(), keys.tolist(), parents.tolist(), slots.tolist(),
                                               props.tolist()):
            found[fp] = (key, parent, slot, mask)
    return found


def _from_disk(partition: int, depth: int, chunks: dict[int, dict[int, tuple[int, bytes]]]) -> np.ndarray:
    """A partition's visited set through level `depth - 1` from its VISITED rows (level -> chunk
    index -> (chunk count, bytes)); ValueError when one is missing."""
    parts = []
    for level in range(depth):
        found = chunks.get(level, {})
        count = next(iter(found.values()))[0] if found else 0
        if not found or sorted(found) != list(range(count)):
            raise ValueError(f"the checkpoint lacks visited rows of partition {partition} at level {level}")
        parts += [np.frombuffer(found[index][1], dtype="<i8") for index in range(count)]
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)


# ------------------------------------------------------------------ the level step


def level_step(depth: int, uid: str, partitions: int, from_disk: bool, flags: Callable[[], Callable],
               names: dict[str, int], expand: Callable, summaries, schema):
    """mapInArrow over one partition of a level's candidates (after its shuffle): the new states
    of level `depth` that the partition owns as STATES rows, with their property bits (`flags()`
    gives, on the executor, a function of a binary column of packed states to an int64 mask;
    `names`: the property bit of each name still wanted), then the partition's VISITED rows, then
    the next level's candidates (CANDIDATES rows) from `expand(frontier, candidates)`, the
    kernel's or the model's expansion: it yields the rows of `Candidates` it fills with the
    successors of `frontier`'s batches, (fingerprints, packed states as an Arrow binary array).
    Adds one summary to `summaries` (an accumulator of lists): the partition, a miss (its visited
    set is not on this machine), the new states, per property name the least key of a new state
    with its bit and that state's fingerprint, the successors the expansion generated, and per
    step witness the least (key, parent) of an edge out of the new states where it holds.
    `from_disk`: the visited set comes from the VISITED rows in the input (levels 0 to
    depth - 1), not from this machine's files."""

    def step(batches: Iterator[Any]) -> Iterator[Any]:
        return made_ahead(lambda: rows_of(batches))

    def rows_of(batches: Iterator[Any]) -> Iterator[Any]:
        from pyspark import TaskContext

        context = TaskContext.get()
        assert context is not None, "the level step runs in a Spark task"
        partition = context.partitionId()
        arrow = arrow_schema(schema)
        kept: list[tuple] = []  # (owners, fps, keys, parents, slots, states) of the candidates, part by part
        chunks: dict[int, dict[int, tuple[int, bytes]]] = {}

        def keep(part: tuple) -> None:
            if not len(part[1]):
                return
            # this Spark sends owners where the engine expects (a few of the first part suffice)
            if not kept and (spark_partition(part[0][:8], partitions) != partition).any():
                raise RuntimeError("this Spark partitions rows otherwise than the engine computes")
            kept.append(part)

        for batch in batches:
            slots, payloads = batch.column(SLOT).to_numpy(), batch.column(PAYLOAD)
            for row in range(batch.num_rows):  # a few rows: each a batch of candidates or a chunk of a visited set
                slot = int(slots[row])
                if slot == CANDIDATES:
                    keep(unpack_payload(payloads[row].as_buffer()))
                elif slot == VISITED:
                    key = batch.column(KEY)[row].as_py()
                    if key != partition:
                        raise RuntimeError(f"visited rows of partition {key} reached partition {partition}: "
                                           "this Spark partitions rows otherwise than the engine computes")
                    level, index = batch.column(PARENT)[row].as_py(), batch.column(FP)[row].as_py()
                    chunks.setdefault(level, {})[index] = (batch.column(PROPS)[row].as_py(),
                                                           payloads[row].as_py())
                else:
                    raise RuntimeError(f"a level's input holds a row of slot {slot}, not candidates or visited")
        found: dict[str, list[int]] = {}
        summary: dict[str, Any] = {"partition": partition, "miss": False, "new": 0, "generated": 0,
                                   "found": found, "steps": {}}
        visited = _from_disk(partition, depth, chunks) if from_disk else load_visited(uid, partition, depth - 1)
        if visited is None:
            summary["miss"] = True
            summaries.add([summary])
            return
        if kept:
            owners, fps, keys, parents, slots = (np.concatenate(column) for column in zip(*(p[:5] for p in kept)))
            offsets, data = flat_bytes([p[5] for p in kept])
            width = fixed_width(offsets)
            del kept
            chosen = least_edges(fps, keys, parents, slots, runs=True)  # each expansion batch's in order
            unique = fps[chosen]
            where, seen = positions(visited, unique)
            fresh = ~seen
            new_rows, new_fps, where = chosen[fresh], unique[fresh], where[fresh]
        else:
            new_rows, new_fps = np.empty(0, dtype=np.intp), np.empty(0, dtype=np.int64)
            where = np.empty(0, dtype=np.int64)
        count = len(new_rows)
        route = routes_of(partitions)[partition]
        if count:
            props = np.zeros(len(fps), dtype=np.int64)
            if names:
                of = flags()
                for start in range(0, count, BATCH):
                    rows = new_rows[start:start + BATCH]
                    props[rows] = of(take_bytes(offsets, data, width, rows))
            yield state_rows(route, depth, (props, fps, keys, parents, slots), new_rows, arrow)
            new_props, new_keys = props[new_rows], keys[new_rows]
            for name, bit in names.items():
                having = np.flatnonzero((new_props & bit) != 0)
                if len(having):
                    least = having[np.lexsort((new_fps[having], new_keys[having]))[0]]
                    found[name] = [int(new_keys[least]), int(new_fps[least])]
        yield _visited_rows(route, partition, depth, new_fps, arrow)
        visited = inserted(visited, where, new_fps) if count else visited
        summary["new"] = count
        if count:  # the next level's candidates: the new states expanded
            # the visited set's file written beside the expansion, whose sweep reads this partition's in memory
            saving = threading.Thread(target=save_visited, args=(uid, partition, depth, visited))
            saving.start()
            mine = (uid, partition, depth)
            _MAPPED[mine] = visited
            try:
                candidates = Candidates((uid, depth + 1, partitions), arrow)
                frontier = ((new_fps[start:start + BATCH],
                             take_bytes(offsets, data, width, new_rows[start:start + BATCH]))
                            for start in range(0, count, BATCH))
                yield from expand(frontier, candidates)
                yield from candidates.flush()
                candidates.release()
            finally:
                saving.join()
                _MAPPED.pop(mine, None)
            summary["generated"] = candidates.generated
            summary["steps"] = {index: list(pair) for index, pair in candidates.steps.items()}
        else:
            save_visited(uid, partition, depth, visited)
        del visited
        summaries.add([summary])

    return step


def made_ahead(produce: Callable[[], Iterator[Any]], room: int = 2) -> Iterator[Any]:
    """The items of `produce()`, made by a thread of their own up to `room` ahead of the caller's
    use: a level task's rows are computed while Spark's JVM writes those before them, instead of
    the task's Python waiting on the JVM at each row it hands over (the kernel and the compiled
    helpers release the GIL). The producer's exception is raised here; closing this generator
    stops the producer at its next item and closes its generator."""
    items: queue.Queue = queue.Queue(maxsize=room)
    stop, end = threading.Event(), object()

    def put(item: tuple[bool, Any]) -> bool:
        while not stop.is_set():
            with contextlib.suppress(queue.Full):
                items.put(item, timeout=0.05)
                return True
        return False

    def run() -> None:
        made = produce()
        try:
            for item in made:
                if not put((True, item)):
                    return
            put((True, end))
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, which raises it
            put((False, error))
        finally:
            getattr(made, "close", lambda: None)()

    producer = threading.Thread(target=run, name="kafka-mc-level-rows", daemon=True)
    producer.start()
    try:
        while True:
            ok, item = items.get()
            if not ok:
                raise item
            if item is end:
                return
            yield item
    finally:
        stop.set()
        producer.join()


_ROUTES: dict[int, list[int]] = {}


def routes_of(partitions: int) -> list[int]:
    """`routes(partitions)`, computed once per process."""
    if partitions not in _ROUTES:
        _ROUTES[partitions] = routes(partitions)
    return _ROUTES[partitions]


class SummaryList:
    """The parameter of the accumulator the level steps add their summaries to: lists, joined."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, total: list, more: list) -> list:
        total.extend(more)
        return total
