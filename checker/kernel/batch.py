"""The kernel a slice at a time, for engines that keep their own visited set (the Spark
executors): packed states in, successors with their fingerprints, action slots and step
witness out; property flags of packed states; named-tuple states for traces and reports.

A packed state is a row of `word_count` int64 words (`layout.packing`); its fingerprint, a
signed 64-bit int here (`as_signed`), is a function of the row alone, so any process computes
the same one. With symmetry, every state is packed as its class's representative, the one
`kernel_check` picks.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
from numba import njit

from kafka_mc.model import Config, ReplicationModel, State
from kafka_mc.model.epoch_bumps import EpochBumpModel
from kafka_mc.properties import ALWAYS, PROPERTIES
from kafka_mc.testing import Expansion

from .cache import compile_lock
from .engine import replica_orders
from .explore import BLOCK, expand_block, fingerprints, flag_block, pack_represented, unpack
from .invariants import PROPERTY_NAMES
from .layout import WIDTH, decode, encode, packing, settings
from .transitions import slot_codes
from .user_properties import CONST, Program, StepBlock, flagged_states, slot_actions, step_flags


@njit(cache=True, nogil=True)
def gather_successors(out_counts, block, slot_count, first, words, out_words, out_fingerprints, out_slots,
                      out_truncated, parents, slots, fps, successors, truncated, made):
    """A block's successors (`explore.expand_block`'s output: frontier state j's at j * slot_count on)
    appended from `made` on, in order, with their parent's index (first + j); the new count."""
    for j in range(block):
        for out in range(j * slot_count, j * slot_count + out_counts[j]):
            parents[made], slots[made] = first + j, out_slots[out]
            fps[made], truncated[made] = out_fingerprints[out], out_truncated[out]
            successors[made * words:(made + 1) * words] = out_words[out * words:(out + 1) * words]
            made += 1
    return made


class KernelBatch:
    """One configuration's kernel, for slices of packed states."""

    def __init__(self, config: Config, symmetry: bool = False, bumps: bool = False, warm: bool = True):
        """`bumps`: with the controller's epoch bumps (`model/epoch_bumps.py`). `warm`: every function
        a batch uses is compiled or loaded now (`warm_up`); without it, each on its first call, which
        the caller makes under `compile_lock` (a driver that packs a few states loads two functions,
        not the kernel)."""
        self.config = config
        self.model = EpochBumpModel(config) if bumps else ReplicationModel(config)
        self.cfg = settings(config, bumps)
        self.slot_codes = slot_codes(self.model.action_names, config.replicas)
        self.layout = packing(config, bumps)
        self.orders = replica_orders(config.replicas, symmetry)
        self.word_count = self.layout.word_count
        self.property_names = PROPERTY_NAMES  # bit p of a flag is property p
        self.slot_names, self.slot_replicas = slot_actions(self.model, len(self.slot_codes))
        if warm:
            warm_up()

    def pack(self, state: State) -> np.ndarray:
        """The packed row of a state (of its representative, with symmetry)."""
        layout, row, wide = self.layout, np.zeros(self.word_count, dtype=np.int64), encode(state)
        pack_represented(self.cfg, wide, self.orders, np.empty_like(wide), np.empty(self.word_count, np.int64),
                         layout.cells, layout.biases, layout.shifts, layout.words, self.word_count, row, 0)
        return row

    def represent(self, state: State) -> State:
        """The state that represents `state` (itself, without symmetry)."""
        return self.state(self.pack(state))

    def state(self, row: np.ndarray) -> State:
        layout, wide = self.layout, np.empty(WIDTH, dtype=np.int16)
        unpack(np.ascontiguousarray(row, dtype=np.int64), 0, layout.cells, layout.biases, layout.bits,
               layout.shifts, layout.words, wide)
        return decode(wide, self.config.replicas)

    def fingerprints(self, rows: np.ndarray) -> np.ndarray:
        """The signed 64-bit fingerprint of every row of a (count, word_count) array."""
        flat = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1)
        return as_signed(fingerprints(flat, len(flat) // self.word_count, self.word_count))

    def expand(self, rows: np.ndarray):
        """The successors of the rows of a (count, word_count) array, in row order and slot
        order: (parent row index, action slot, fingerprint, successor rows, a log got shorter)."""
        return self.expand_flagging(rows, [])[0]

    def expand_flagging(self, rows: np.ndarray, programs: list[Program]):
        """`expand`'s successors, and per program of a user's step property whether it flags each step
        (`step_flags`): read from the expansion's own blocks where its successors are the steps'
        own (without symmetry), else from the rows expanded again."""
        layout, words, slot_count = self.layout, self.word_count, len(self.slot_codes)
        frontier = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1)
        count = len(frontier) // words
        room = BLOCK * slot_count
        out_words, out_fingerprints = np.empty(room * words, dtype=np.int64), np.empty(room, dtype=np.uint64)
        out_slots, out_truncated = np.empty(room, dtype=np.int64), np.empty(room, dtype=np.bool_)
        out_counts = np.empty(BLOCK, dtype=np.int64)
        parents, slots = np.empty(count * slot_count, dtype=np.int64), np.empty(count * slot_count, dtype=np.int64)
        fps, truncated = np.empty(count * slot_count, dtype=np.uint64), np.empty(count * slot_count, dtype=np.bool_)
        successors, made = np.empty(count * slot_count * words, dtype=np.int64), 0
        inline = bool(programs) and len(self.orders) == 1  # one order, the identity: successors unrepresented
        flagged = []
        for first in range(0, count, BLOCK):
            block = min(BLOCK, count - first)
            expand_block(self.cfg, self.slot_codes, self.orders, layout.cells, layout.biases, layout.bits, layout.shifts,
                         layout.words, words, frontier, first, block, out_words, out_fingerprints, out_slots,
                         out_truncated, out_counts)
            if inline:
                flagged.append(StepBlock(first, out_counts[:block], out_slots, out_words, slot_count).every_flag(
                    self.cfg, self.slot_names, self.slot_replicas, programs, layout, frontier))
            made = gather_successors(out_counts, block, slot_count, first, words, out_words, out_fingerprints,
                                     out_slots, out_truncated, parents, slots, fps, successors, truncated, made)
        expansion = (parents[:made], slots[:made], as_signed(fps[:made]),
                     successors[:made * words].reshape(made, words), truncated[:made])
        if not programs:
            flags = np.zeros((0, made), dtype=np.bool_)
        elif inline:
            flags = np.concatenate(flagged, axis=1) if flagged else np.zeros((len(programs), 0), dtype=np.bool_)
        else:
            flags = self.step_flags(rows, programs)
        return expansion, flags

    def flags(self, rows: np.ndarray) -> np.ndarray:
        """Per row, bit p set when invariant p of `property_names` is violated or state witness p holds."""
        layout, words = self.layout, self.word_count
        frontier = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1)
        count = len(frontier) // words
        flags = np.empty(count, dtype=np.int64)
        for first in range(0, count, BLOCK):
            block = min(BLOCK, count - first)
            part = np.empty(block, dtype=np.int64)
            flag_block(self.cfg, layout.cells, layout.biases, layout.bits, layout.shifts, layout.words, words,
                       frontier, first, block, part)
            flags[first:first + block] = part
        return flags

    def state_flags(self, rows: np.ndarray, prog: Program) -> np.ndarray:
        """Per row, 1 where a user's state property (its program, `user_properties.lowered_program`)
        is flagged: an invariant fails or may raise, a witness holds."""
        frontier = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1)
        flags, _ = flagged_states(self.cfg, prog, self.layout, frontier, len(frontier) // self.word_count)
        return flags.astype(np.int64)

    def step_flags(self, rows: np.ndarray, programs: list[Program]) -> np.ndarray:
        """Per program of a user's step property, whether it flags each step out of the rows, in
        `expand`'s order; the steps' successors unrepresented, as the Python engine sees them."""
        frontier = np.ascontiguousarray(rows, dtype=np.int64).reshape(-1)
        return step_flags(self.cfg, self.slot_codes, self.slot_names, self.slot_replicas, programs, self.layout,
                          frontier, len(frontier) // self.word_count)


_warm = False


def warm_up() -> None:
    """Compile every function a batch uses, or load them from numba's cache, under
    `compile_lock`, once per process (every `KernelBatch` calls it): a Spark executor's Python
    workers start together, and two processes writing one function's cache at once leave an index
    that crashes the next process to load it."""
    global _warm
    if _warm:
        return
    _warm = True  # the batch below calls warm_up again
    try:
        with compile_lock():
            batch = KernelBatch(Config("hw", replicas=2, messages=1, crashes=0, elections=0), symmetry=True)
            rows = batch.pack(batch.model.initial_states()[0])[None, :]
            batch.flags(batch.expand(rows)[3])
            batch.fingerprints(rows)
            constant = Program("warm-up", False, False, np.array([[CONST, 0, 0, 0, 0]], dtype=np.int64), 0, 0)
            batch.state_flags(rows, constant)
            batch.step_flags(rows, [constant])
            batch.expand_flagging(rows, [constant])
    except BaseException:
        _warm = False
        raise


def as_signed(fingerprints: np.ndarray) -> np.ndarray:
    return fingerprints.view(np.int64)


class KernelEncoding:
    """The compiled kernel as an `Encoding` for `kafka_mc.testing.check_conformance`: successors in
    slot order, every state property from its flags, and the step witness from its truncation bit."""

    name = "compiled kernel"
    ordered = True

    def __init__(self, bumps: bool = False):
        self.bumps = bumps  # held to `model.epoch_bumps.EpochBumpModel` instead
        self._decoded: tuple[Config | None, dict[bytes, State]] = (None, {})

    def expand(self, config: Config, states: Sequence[State]) -> Iterator[Expansion]:
        batch = KernelBatch(config, bumps=self.bumps)
        if self._decoded[0] != config:  # a packed row decoded once per configuration: states recur as successors
            self._decoded = (config, {})
        decoded = self._decoded[1]

        def state_of(row: np.ndarray) -> State:
            key = row.tobytes()
            if key not in decoded:
                decoded[key] = batch.state(row)
            return decoded[key]

        rows = np.stack([batch.pack(state) for state in states])
        parents, slots, fingerprints, successors, truncated = batch.expand(rows)
        if not np.array_equal(fingerprints, batch.fingerprints(successors)):
            raise AssertionError("a successor's fingerprint is not the fingerprint of its packed row")
        flags = batch.flags(rows)
        ends = np.searchsorted(parents, np.arange(len(states) + 1))
        for index, state in enumerate(states):
            if state_of(rows[index]) != state:
                raise AssertionError(f"packing does not round-trip {state}")
            made = range(ends[index], ends[index + 1])
            yield Expansion(
                tuple((int(slots[k]), state_of(successors[k])) for k in made),
                {name: bool(flags[index] >> bit & 1) != (KINDS[name] == ALWAYS)
                 for bit, name in enumerate(PROPERTY_NAMES) if name in KINDS},
                tuple({STEP_WITNESS: bool(truncated[k])} for k in made))


KINDS = {prop.name: prop.kind for prop in PROPERTIES if not prop.on_step}  # the state properties
STEP_WITNESS = next(prop.name for prop in PROPERTIES if prop.on_step)
