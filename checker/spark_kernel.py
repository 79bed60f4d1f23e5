"""The Spark engine's executors run by the compiled kernel (`checker.kernel.batch`).

A level's rows are those of `checker.spark` with the kernel's encoding: `state` is the packed
row (`word_count` int64 words as bytes), `fp` the kernel's fingerprint of it, and `owner` the
fingerprint too. Frontiers reach the executors as Arrow batches (`mapInArrow`): the kernel
expands a whole batch per call and the batch's successors are deduplicated with numpy, so no
Python runs per state. Each Python worker builds its kernel once per configuration, with numba
on one thread (Spark runs a task per core), after `warm_up` has compiled it or loaded it from
numba's cache.
"""

from __future__ import annotations

import numpy as np

from kafka_mc.model import Config

_MIX1, _MIX2, _GOLDEN = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0x9E3779B97F4A7C15
_MASK = (1 << 64) - 1


def edge_key(parent_fp: int, slot: int) -> int:
    """The key of the edge `slot` out of the state `parent_fp` (a signed 64-bit int): a
    splitmix64 mix of the two, so the least key over the edges into a state picks one of them
    the same way on any partitioning. `edge_keys` computes it for arrays."""
    x = ((parent_fp & _MASK) * _GOLDEN + slot + 1) & _MASK
    x = ((x ^ (x >> 30)) * _MIX1) & _MASK
    x = ((x ^ (x >> 27)) * _MIX2) & _MASK
    x ^= x >> 31
    return x - (1 << 64) if x >> 63 else x


def edge_keys(parent_fps: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """`edge_key` of every (parent fingerprint, slot) pair, as int64."""
    with np.errstate(over="ignore"):
        x = parent_fps.astype(np.int64).view(np.uint64) * np.uint64(_GOLDEN) + slots.astype(np.uint64) + np.uint64(1)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(_MIX1)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(_MIX2)
        x ^= x >> np.uint64(31)
    return x.view(np.int64)


_BATCHES: dict = {}


def kernel_batch(config: Config, symmetry: bool):
    """The configuration's `KernelBatch`, built once per Python worker."""
    batch = _BATCHES.get((config, symmetry))
    if batch is None:
        import numba

        from .kernel.batch import KernelBatch

        numba.set_num_threads(1)
        batch = _BATCHES[(config, symmetry)] = KernelBatch(config, symmetry)
    return batch


def packed_rows(column, word_count: int) -> np.ndarray:
    """The (count, word_count) int64 rows of an Arrow binary column of packed states."""
    import pyarrow as pa

    width = 8 if pa.types.is_large_binary(column.type) else 4
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int64 if width == 8 else np.int32,
                            count=len(column) + 1, offset=column.offset * width)
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    # a writable copy: numba compiles every function again for read-only arrays, as Arrow's are
    return np.require(data.view(np.int64).reshape(len(column), word_count), requirements=("C", "A", "W"))


def binary_column(rows: np.ndarray):
    """An Arrow binary column holding each packed row as its bytes."""
    import pyarrow as pa

    rows = np.ascontiguousarray(rows, dtype=np.int64)
    count, width = len(rows), rows.shape[1] * 8
    offsets = np.arange(count + 1, dtype=np.int32) * width
    return pa.Array.from_buffers(pa.binary(), count, [None, pa.py_buffer(offsets), pa.py_buffer(rows.tobytes())])


def _long(values: np.ndarray, valid: np.ndarray | None = None):
    import pyarrow as pa

    return pa.array(values, type=pa.int64(), mask=None if valid is None else ~valid)


def kernel_expander(config: Config, symmetry: bool, steps: tuple[bool, ...], schema):
    """mapInArrow over a frontier (fp, state): each batch's successors once per batch with their
    least edge key (ties: least parent, then slot), how many times each was generated, and for
    each step witness still wanted (`steps`: the kernel's one step witness, FollowerTruncated)
    the least key and parent of an edge into it where a log got shorter. Rows of `schema`
    (`checker.spark`'s successor schema)."""

    def expand(batches):
        import pyarrow as pa

        kernel = kernel_batch(config, symmetry)
        for batch in batches:
            if not batch.num_rows:
                continue
            parent_fps = batch.column(0).to_numpy()
            parents, slots, fps, rows, truncated = kernel.expand(packed_rows(batch.column(1), kernel.word_count))
            if not len(fps):
                continue
            parent_fp = parent_fps[parents]
            keys = edge_keys(parent_fp, slots)
            order = np.lexsort((slots, parent_fp, keys, fps))  # by fp, then the least edge first
            sorted_fps = fps[order]
            starts = np.flatnonzero(np.r_[True, sorted_fps[1:] != sorted_fps[:-1]])
            chosen = order[starts]
            columns = [fps[chosen], fps[chosen], keys[chosen], parent_fp[chosen], slots[chosen].astype(np.int32)]
            arrays = [_long(c) for c in columns[:4]] + [pa.array(columns[4], type=pa.int32()),
                                                        binary_column(rows[chosen]),
                                                        _long(np.diff(np.r_[starts, len(order)]))]
            group = np.cumsum(np.r_[True, sorted_fps[1:] != sorted_fps[:-1]]) - 1
            hits = np.flatnonzero(truncated[order])  # sorted positions of truncating edges, least key first per group
            first_groups, first_hits = np.unique(group[hits], return_index=True)
            for wanted in steps:
                step_key = np.zeros(len(chosen), dtype=np.int64)
                step_parent = np.zeros(len(chosen), dtype=np.int64)
                valid = np.zeros(len(chosen), dtype=bool)
                if wanted and len(first_groups):
                    positions = order[hits[first_hits]]
                    step_key[first_groups], step_parent[first_groups] = keys[positions], parent_fp[positions]
                    valid[first_groups] = True
                arrays += [_long(step_key, valid), _long(step_parent, valid)]
            yield pa.RecordBatch.from_arrays(arrays, schema=_arrow_schema(schema))

    return expand


def kernel_checker(config: Config, symmetry: bool, bits: dict[str, int], schema):
    """mapInArrow over new states (owner, fp, key, parent, slot, state): each row with its
    `props` mask, bit `bits[name]` for every property `name` it violates (an invariant) or
    reaches (a state witness)."""

    def check(batches):
        import pyarrow as pa

        kernel = kernel_batch(config, symmetry)
        wanted = [(kernel.property_names.index(name), bit) for name, bit in bits.items()]
        for batch in batches:
            flags = kernel.flags(packed_rows(batch.column(5), kernel.word_count))
            mask = np.zeros(len(flags), dtype=np.int64)
            for index, bit in wanted:
                mask |= ((flags >> index) & 1) * bit
            yield pa.RecordBatch.from_arrays(list(batch.columns) + [_long(mask)], schema=_arrow_schema(schema))

    return check


def seed_rows(config: Config, symmetry: bool) -> list[tuple]:
    """The level-0 rows (owner, fp, key, parent, slot, state) of the distinct initial states."""
    from .kernel.batch import KernelBatch

    kernel = KernelBatch(config, symmetry)
    rows, seen = [], set()
    for index, state in enumerate(kernel.model.initial_states()):
        row = kernel.pack(state)
        fp = int(kernel.fingerprints(row[None, :])[0])
        if fp not in seen:
            seen.add(fp)
            rows.append((fp, fp, index, None, index, row.tobytes()))
    return rows


def _arrow_schema(schema):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema)
