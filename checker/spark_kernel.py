"""The Spark engine's executors run by the compiled kernel (`checker.kernel.batch`).

A level's payloads are those of `checker.spark_level` with the kernel's encoding: a state is its
packed row (`word_count` int64 words as bytes), its fingerprint the kernel's, and its owner hash
the fingerprint too. A level task expands its new states in batches: the kernel expands a whole
batch per call and the batch's successors are deduplicated with numpy, so no Python runs per
state; the level step checks the new states' properties with the kernel too
(`kernel_flags`). Users' own properties run lowered, as the kernel's programs
(`kernel.user_properties`): state properties in the level step, step properties on the
expansion's steps. Each Python worker builds its kernel once per configuration, with numba on one
thread (Spark runs a task per core), after `warm_up` has compiled it or loaded it from numba's
cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from kafka_mc.model import Config

from .spark_level import Candidates, binary_buffers, least_edges, least_pair, seed_payloads

if TYPE_CHECKING:
    from .kernel.user_properties import Program

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


def kernel_batch(config: Config, symmetry: bool, bumps: bool):
    """The configuration's `KernelBatch` (`bumps`: with the controller's epoch bumps), built once per
    Python worker. Then what the worker has loaded (numba, the compiled kernel) is frozen out of the
    garbage collector (`gc.freeze`): PySpark's worker runs a full collection after every task
    (pyspark/daemon.py, `gc.collect()` after each reused task), which with numba loaded walked some
    120,000 objects, 0.07 to 0.13 s a task and so up to a quarter of a second a level."""
    batch = _BATCHES.get((config, symmetry, bumps))
    if batch is None:
        import gc

        import numba

        from .kernel.batch import KernelBatch

        numba.set_num_threads(1)
        batch = _BATCHES[(config, symmetry, bumps)] = KernelBatch(config, symmetry, bumps)
        gc.collect()
        gc.freeze()
    return batch


def packed_rows(column, word_count: int) -> np.ndarray:
    """The (count, word_count) int64 rows of an Arrow binary column of packed states."""
    _, data = binary_buffers(column)
    # a writable copy: numba compiles every function again for read-only arrays, as Arrow's are
    return np.require(data.view(np.int64).reshape(len(column), word_count), requirements=("C", "A", "W"))


def kernel_expander(config: Config, symmetry: bool, bumps: bool, steps: tuple[tuple[int, Program | None], ...]):
    """The kernel's expansion for a level task (`spark_level.level_step`): `expand(frontier,
    candidates)` gives `candidates` (`spark_level.Candidates`) the successors of each batch of
    `frontier` (fingerprints, packed states as an Arrow binary column), each once per batch with its
    least edge key (ties: least parent, then slot; `spark_level.least_edges`; owner the
    fingerprint), as class representatives under symmetry, and yields the CANDIDATES rows they
    flush; it notes how many successors each batch generated, and for each step property still
    wanted (`steps`: its index among the step properties, and its program,
    `user_properties.lowered_program`, or None for the kernel's own step witness, FollowerTruncated)
    the least key and parent of an edge where it is found (a witness holds, an invariant is
    broken). `bumps`: the model with the controller's epoch bumps."""
    programs = [prog for _, prog in steps if prog is not None]

    def expand(frontier: Iterator[tuple[np.ndarray, Any]], candidates: Candidates) -> Iterator[Any]:
        kernel = kernel_batch(config, symmetry, bumps)
        for parent_fps, states in frontier:
            (parents, slots, fps, rows, truncated), flags = kernel.expand_flagging(
                packed_rows(states, kernel.word_count), programs)
            if not len(fps):
                continue
            parent_fp = parent_fps[parents]
            keys = edge_keys(parent_fp, slots)
            flagged = iter(flags)
            found = {}
            for index, prog in steps:
                where = truncated if prog is None else next(flagged)
                least = least_pair(keys[where], parent_fp[where])
                if least:
                    found[index] = least
            candidates.note(len(fps), found)
            chosen = least_edges(fps, keys, parent_fp, slots)
            yield from candidates.add(fps[chosen], fps[chosen], keys[chosen], parent_fp[chosen], slots[chosen],
                                      rows, chosen)

    return expand


def kernel_flags(config: Config, symmetry: bool, bumps: bool, bits: dict[str, int], programs: dict[str, Program]):
    """A function, built on the executor, of a binary column of packed states to their property
    masks: bit `bits[name]` for every property `name` a state violates (an invariant) or
    reaches (a state witness); a user's property by its program (`programs[name]`,
    `user_properties.lowered_program`), the kernel's own by its flags."""

    def build():
        kernel = kernel_batch(config, symmetry, bumps)
        wanted = [(kernel.property_names.index(name), bit) for name, bit in bits.items() if name not in programs]
        users = [(programs[name], bit) for name, bit in bits.items() if name in programs]

        def flags(states) -> np.ndarray:
            rows = packed_rows(states, kernel.word_count)
            found = kernel.flags(rows)
            mask = np.zeros(len(found), dtype=np.int64)
            for index, bit in wanted:
                mask |= ((found >> index) & 1) * bit
            for prog, bit in users:
                mask |= kernel.state_flags(rows, prog) * bit
            return mask

        return flags

    return build


def seed_rows(config: Config, symmetry: bool, bumps: bool, partitions: int, schema) -> list[tuple]:
    """Level 0's CANDIDATES rows (`spark_level.seed_payloads`) of the initial states (the level step
    keeps one of each fingerprint, the first: its edge key is its index)."""
    from .kernel.batch import KernelBatch
    from .kernel.cache import compile_lock

    kernel = KernelBatch(config, symmetry, bumps, warm=False)  # the driver packs: two functions, not the kernel
    with compile_lock():
        rows = [kernel.pack(state) for state in kernel.model.initial_states()]
        fps = [int(kernel.fingerprints(row[None, :])[0]) for row in rows]
    return seed_payloads(schema, partitions, fps, fps, range(len(rows)), [row.tobytes() for row in rows])
