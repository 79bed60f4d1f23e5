"""Users' own properties in the compiled kernel: a lowered property (`properties.lowering`) as a
straight-line program over the wide form, run by one compiled interpreter.

`program` numbers the distinct subexpressions of a property's two expressions (when it fails,
when it would raise) in dependency order; each becomes one instruction that writes a register
from earlier registers, a constant or a cell of the state before or after the step. The
interpreter (`run`, a loop over `instruction_value`, which the GPU engine's kernels call too) is
compiled once for every property: a new property costs no compilation.
`flagged_states` runs a state property over a frontier; `step_blocks` expands a frontier again
(the kernel's own `expand_block`), and `StepBlock.flags` runs a step property on each (state,
action, successor). Each says whether each state (or step) is flagged: where an invariant fails or
may raise, where a witness holds. `kernel_check` wants the first in node and slot order, and stops
there (`UserChecks`, `step_hits`); the Spark engine's executors want every one (`step_flags`, or
`StepBlock.every_flag` on the expansion's own blocks, `batch.KernelBatch.expand_flagging`). Then
the engine evaluates the user's Python there (`confirm`), so a verdict and an error are always the
user's function's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np
from numba import njit

from kafka_mc.model import Config
from kafka_mc.model.interface import ALWAYS
from kafka_mc.model.replication import ACTION_NAMES
from kafka_mc.model.state import MAX_REPLICAS
from kafka_mc.properties.expressions import FIELDS, OPERATORS, Node, distinct_subexpressions
from kafka_mc.properties.lowering import Lowered, NotLowered, lower

from .explore import BLOCK, expand_block, unpack
from .layout import (
    ACKED, BUMPED, C_REPLICAS, CACHE_COUNT, CACHE_EPOCH, CACHE_START, COMMITTED, CONSUMED, CONTROLLER_EPOCH, CRASHES,
    CUTS, DELAYED_FETCH, DELAYED_FETCH_STALE, DELAYS, DISK_FAILURES, ELR, EPOCH, FOLLOWS, HAS_REMOTE, HW, ISR,
    LAST_KNOWN_ELR, LEADER, LEO, LOG_EPOCH, LOG_MSG, MAX_MESSAGES, PEER_CUT, PROPOSAL, REMOTE_LEO, REREGISTERED,
    REPLICA_WIDTH, RESPONSE, RESPONSE_COUNT, RESPONSE_EPOCH, RESPONSE_HW, RESPONSE_MSG, RESPONSE_OFFSET,
    RESPONSE_OUT_OF_RANGE, ROLE, STALE_ISR, STATUS, UNFLUSHED, UNSEEN, WIDTH, WRITTEN, ZK_CUT,
)

# where each field lies in the wide form: (kind, first cell, positions); kinds below (REPLICA_PLUS_ONE: a
# replica's cell that holds the field's value plus one, `layout.FOLLOWS`)
GLOBAL_CELL, REPLICA_CELL, REPLICA_POSITION, HISTORY_BIT, REPLICA_PLUS_ONE = 0, 1, 2, 3, 4
CELLS: dict[str, tuple[int, int, int]] = {
    "leader": (GLOBAL_CELL, LEADER, 0), "controller_epoch": (GLOBAL_CELL, CONTROLLER_EPOCH, 0),
    "isr": (GLOBAL_CELL, ISR, 0), "elr": (GLOBAL_CELL, ELR, 0), "last_known_elr": (GLOBAL_CELL, LAST_KNOWN_ELR, 0),
    "unseen": (GLOBAL_CELL, UNSEEN, 0), "proposal": (GLOBAL_CELL, PROPOSAL, 0),
    "reregistered": (GLOBAL_CELL, REREGISTERED, 0), "bumped": (GLOBAL_CELL, BUMPED, 0),
    "delays": (GLOBAL_CELL, DELAYS, 0),
    "disk_failures": (GLOBAL_CELL, DISK_FAILURES, 0),
    "written": (GLOBAL_CELL, WRITTEN, 0),
    "crashes": (GLOBAL_CELL, CRASHES, 0),
    "acked": (GLOBAL_CELL, ACKED, 0), "zk_cut": (GLOBAL_CELL, ZK_CUT, 0), "peer_cut": (GLOBAL_CELL, PEER_CUT, 0),
    "cuts": (GLOBAL_CELL, CUTS, 0),
    "committed": (HISTORY_BIT, COMMITTED, MAX_MESSAGES), "consumed": (HISTORY_BIT, CONSUMED, MAX_MESSAGES),
    "leo": (REPLICA_CELL, LEO, 0), "unflushed": (REPLICA_CELL, UNFLUSHED, 0), "hw": (REPLICA_CELL, HW, 0),
    "status": (REPLICA_CELL, STATUS, 0), "role": (REPLICA_CELL, ROLE, 0), "epoch": (REPLICA_CELL, EPOCH, 0),
    "stale_isr": (REPLICA_CELL, STALE_ISR, 0), "cache_count": (REPLICA_CELL, CACHE_COUNT, 0),
    "delayed_fetch": (REPLICA_CELL, DELAYED_FETCH, 0), "delayed_fetch_stale": (REPLICA_CELL, DELAYED_FETCH_STALE, 0),
    "leader_id": (REPLICA_PLUS_ONE, FOLLOWS, 0),
    "response": (REPLICA_CELL, RESPONSE, 0), "response_offset": (REPLICA_CELL, RESPONSE_OFFSET, 0),
    "response_hw": (REPLICA_CELL, RESPONSE_HW, 0), "response_out_of_range": (REPLICA_CELL, RESPONSE_OUT_OF_RANGE, 0),
    "response_count": (REPLICA_CELL, RESPONSE_COUNT, 0), "has_remote": (REPLICA_CELL, HAS_REMOTE, 0),
    "log_msg": (REPLICA_POSITION, LOG_MSG, MAX_MESSAGES), "log_epoch": (REPLICA_POSITION, LOG_EPOCH, MAX_MESSAGES),
    "cache_epoch": (REPLICA_POSITION, CACHE_EPOCH, MAX_MESSAGES + 1),
    "cache_start": (REPLICA_POSITION, CACHE_START, MAX_MESSAGES + 1),
    "response_msg": (REPLICA_POSITION, RESPONSE_MSG, MAX_MESSAGES),
    "response_epoch": (REPLICA_POSITION, RESPONSE_EPOCH, MAX_MESSAGES),
    "remote_leo": (REPLICA_POSITION, REMOTE_LEO, MAX_REPLICAS),
}
assert set(CELLS) == set(FIELDS), "every field of properties.expressions has a place in the wide form"

# instruction codes: CONST, FIELD, ACTION_NAME, ACTION_REPLICA, then one per operator of OPERATORS
CONST, FIELD, ACTION_NAME, ACTION_REPLICA = 0, 1, 2, 3
OPERATOR_CODES = {name: 4 + index for index, name in enumerate(OPERATORS)}
(ADD, SUB, MUL, NEG, BIT_AND, BIT_OR, BIT_XOR, BIT_NOT, SHL, SHR, EQ, NE, LT, LE, AND, OR, NOT, ITE, MIN,
 MAX) = (OPERATOR_CODES[name] for name in OPERATORS)
assert tuple(OPERATORS) == ("add", "sub", "mul", "neg", "bit_and", "bit_or", "bit_xor", "bit_not", "shl", "shr",
                            "eq", "ne", "lt", "le", "and", "or", "not", "ite", "min", "max")
NOT_FOUND = -1


@dataclass(frozen=True)
class Program:
    """A lowered property as instructions (rows of code, which, a, b, c): registers are numbered
    as the instructions; `fails` and `raises` are the registers of the two results."""

    name: str
    on_step: bool
    witness: bool  # flagged where it holds (a `sometimes` property), not where it fails
    instructions: np.ndarray
    fails: int
    raises: int


def program(lowered: Lowered, witness: bool = False) -> Program:
    """The lowered property as instructions: one per distinct subexpression, in dependency order
    (`expressions.distinct_subexpressions`)."""
    nodes, (fails, raises) = distinct_subexpressions(lowered.fails, lowered.raises)
    rows = [_instruction(node) for node in nodes]
    return Program(lowered.name, lowered.on_step, witness, np.array(rows, dtype=np.int64).reshape(-1, 5),
                   fails, raises)


def _instruction(node: Node) -> tuple[int, int, int, int, int]:
    """A node's row (code, which, a, b, c): its operands' registers, or a constant, or a field's place."""
    expr, (a, b, c) = node.expr, (*node.operands, 0, 0, 0)[:3]
    kind = expr[0]
    if kind == "const":
        return CONST, 0, expr[1], 0, 0
    if kind == "field":
        return FIELD, expr[1], list(CELLS).index(expr[2]), a, b
    if kind == "action":
        return ACTION_NAME if expr[1] == "name" else ACTION_REPLICA, 0, 0, 0, 0
    return OPERATOR_CODES[kind], 0, a, b, c


FIELD_KINDS = np.array([CELLS[name][0] for name in CELLS], dtype=np.int64)
FIELD_FIRSTS = np.array([CELLS[name][1] for name in CELLS], dtype=np.int64)
FIELD_POSITIONS = np.array([CELLS[name][2] for name in CELLS], dtype=np.int64)


@njit(cache=True)
def _read(wide, replicas, kind, first, positions, a, b):
    if kind == GLOBAL_CELL:
        return np.int64(wide[first])
    if kind == HISTORY_BIT:
        if 0 <= a < positions and 0 <= b <= positions:
            return (np.int64(wide[first + a]) >> b) & 1
        return np.int64(0)
    if a < 0 or a >= replicas:
        return np.int64(0)
    if kind == REPLICA_CELL:
        return np.int64(wide[a * REPLICA_WIDTH + first])
    if kind == REPLICA_PLUS_ONE:
        return np.int64(wide[a * REPLICA_WIDTH + first]) - 1
    if 0 <= b < positions:
        return np.int64(wide[a * REPLICA_WIDTH + first + b])
    return np.int64(0)


# forceinline: LLVM inlines it into its callers' loops; _nrt=False: no reference counting of its
# arrays (it allocates nothing), which would make `run` about four times slower. numba's type stubs
# lack the `_nrt` option.
@njit(cache=True, forceinline=True, _nrt=False)  # type: ignore[call-overload]
def instruction_value(code, which, a, b, c, replicas, kinds, firsts, positions, s, t, action_name, action_replica,
                      registers):
    """The value of one instruction (code, which, a, b, c) on a state (s) or a step (s, the action,
    t), its operands read from the registers: the programs' one definition, looped over by `run` and
    by the GPU engine's kernels (`checker/gpu/device.py`)."""
    if code == CONST:
        return a
    if code == FIELD:
        wide = t if which else s
        return _read(wide, replicas, kinds[a], firsts[a], positions[a], registers[b], registers[c])
    if code == ACTION_NAME:
        return np.int64(action_name)
    if code == ACTION_REPLICA:
        return np.int64(action_replica)
    x, y = registers[a], registers[b]
    if code == ADD:
        return x + y
    if code == SUB:
        return x - y
    if code == MUL:
        return x * y
    if code == NEG:
        return -x
    if code == BIT_AND:
        return x & y
    if code == BIT_OR:
        return x | y
    if code == BIT_XOR:
        return x ^ y
    if code == BIT_NOT:
        return ~x
    if code == SHL:
        return x << y if 0 <= y < 63 else np.int64(0)
    if code == SHR:
        return x >> y if 0 <= y < 63 else np.int64(0 if x >= 0 else -1)
    if code == EQ:
        return np.int64(1 if x == y else 0)
    if code == NE:
        return np.int64(1 if x != y else 0)
    if code == LT:
        return np.int64(1 if x < y else 0)
    if code == LE:
        return np.int64(1 if x <= y else 0)
    if code == AND:
        return np.int64(1 if x != 0 and y != 0 else 0)
    if code == OR:
        return np.int64(1 if x != 0 or y != 0 else 0)
    if code == NOT:
        return np.int64(1 if x == 0 else 0)
    if code == ITE:
        return y if x != 0 else registers[c]
    if code == MIN:
        return min(x, y)
    return max(x, y)


@njit(cache=True)
def run(instructions, replicas, kinds, firsts, positions, s, t, action_name, action_replica, registers):
    """Run a program on a state (s) or a step (s, the action, t); the registers hold every value."""
    for k in range(instructions.shape[0]):
        registers[k] = instruction_value(instructions[k, 0], instructions[k, 1], instructions[k, 2],
                                         instructions[k, 3], instructions[k, 4], replicas, kinds, firsts, positions,
                                         s, t, action_name, action_replica, registers)


@njit(cache=True)
def flagged(registers, fails, raises, witness):
    """Whether a program's run flags its state or step: where an invariant fails or may raise,
    where a witness holds."""
    if witness:
        return registers[fails] == 0 and registers[raises] == 0
    return registers[fails] != 0 or registers[raises] != 0


@njit(cache=True)
def state_flags(cfg, instructions, fails, raises, witness, kinds, firsts, positions, cells, biases, bits, shifts,
                words, word_count, frontier, count, out, first_only):
    """out[j]: whether the state property flags frontier state j (`flagged`), for j < count, or with
    `first_only` up to the first it flags; that first state, or NOT_FOUND."""
    s = np.empty(WIDTH, dtype=np.int16)
    registers = np.zeros(max(instructions.shape[0], 1), dtype=np.int64)
    found = NOT_FOUND
    for j in range(count):
        unpack(frontier, j * word_count, cells, biases, bits, shifts, words, s)
        run(instructions, cfg[C_REPLICAS], kinds, firsts, positions, s, s, 0, 0, registers)
        out[j] = flagged(registers, fails, raises, witness)
        if out[j] and found == NOT_FOUND:
            found = j
            if first_only:
                break
    return found


def flagged_states(cfg, prog: Program, layout, frontier: np.ndarray, count: int,
                   first_only: bool = False) -> tuple[np.ndarray, int]:
    """Per packed state of `frontier` (the first `count`, or with `first_only` up to the first it
    flags): whether the state property `prog` flags it; and the first it flags, or NOT_FOUND."""
    out = np.zeros(count, dtype=np.bool_)
    found = state_flags(cfg, prog.instructions, prog.fails, prog.raises, prog.witness, FIELD_KINDS, FIELD_FIRSTS,
                        FIELD_POSITIONS, layout.cells, layout.biases, layout.bits, layout.shifts, layout.words,
                        layout.word_count, frontier, count, out, first_only)
    return out, int(found)


@njit(cache=True)
def step_block_flags(cfg, slot_names, slot_replicas, instructions, fails, raises, witness, kinds, firsts, positions,
                     cells, biases, bits, shifts, words, word_count, frontier, first, count, slot_count, out_words,
                     out_slots, out_counts, out, first_only):
    """out[j * slot_count + c]: whether the step property flags the c-th step out of frontier state
    first + j (its successors expanded by `explore.expand_block`, unrepresented), for c < out_counts[j],
    or with `first_only` up to the first it flags; that first step's place, or NOT_FOUND."""
    s = np.empty(WIDTH, dtype=np.int16)
    t = np.empty(WIDTH, dtype=np.int16)
    registers = np.zeros(max(instructions.shape[0], 1), dtype=np.int64)
    found = NOT_FOUND
    for j in range(count):
        unpack(frontier, (first + j) * word_count, cells, biases, bits, shifts, words, s)
        for c in range(out_counts[j]):
            at = j * slot_count + c
            unpack(out_words, at * word_count, cells, biases, bits, shifts, words, t)
            slot = out_slots[at]
            run(instructions, cfg[C_REPLICAS], kinds, firsts, positions, s, t, slot_names[slot], slot_replicas[slot],
                registers)
            out[at] = flagged(registers, fails, raises, witness)
            if out[at] and found == NOT_FOUND:
                found = at
                if first_only:
                    return found
    return found


@dataclass
class StepBlock:
    """A block of frontier states expanded for the step properties (`step_blocks`): state first + j's
    c-th step leads to the successor at j * slot_count + c of `words` (c < counts[j]), by `slots`."""

    first: int
    counts: np.ndarray
    slots: np.ndarray
    words: np.ndarray
    slot_count: int

    def flags(self, cfg, slot_names, slot_replicas, prog: Program, layout, frontier, out: np.ndarray,
              first_only: bool) -> int:
        """`step_block_flags` of one program over this block into `out`: the place of the first step it
        flags, or NOT_FOUND."""
        return int(step_block_flags(cfg, slot_names, slot_replicas, prog.instructions, prog.fails, prog.raises,
                                    prog.witness, FIELD_KINDS, FIELD_FIRSTS, FIELD_POSITIONS, layout.cells,
                                    layout.biases, layout.bits, layout.shifts, layout.words, layout.word_count,
                                    frontier, self.first, len(self.counts), self.slot_count, self.words,
                                    self.slots, self.counts, out, first_only))

    def every_flag(self, cfg, slot_names, slot_replicas, programs: list[Program], layout, frontier) -> np.ndarray:
        """Per program, whether it flags each of this block's steps, in state and slot order."""
        made = np.flatnonzero(np.arange(self.slot_count)[None, :] < self.counts[:, None])  # the steps, in order
        out = np.empty(len(self.counts) * self.slot_count, dtype=np.bool_)
        flags = np.empty((len(programs), len(made)), dtype=np.bool_)
        for index, prog in enumerate(programs):
            self.flags(cfg, slot_names, slot_replicas, prog, layout, frontier, out, first_only=False)
            flags[index] = out[made]
        return flags


def step_blocks(cfg, slot_codes, layout, frontier, count: int) -> Iterator[StepBlock]:
    """The frontier's steps a block of states at a time, each block expanded once for all the step
    properties (the kernel's own `expand_block`, no replica renaming, so each successor is the
    action's successor itself). The blocks share their buffers: one at a time."""
    slot_count, word_count = slot_codes.shape[0], layout.word_count
    identity = np.arange(cfg[C_REPLICAS], dtype=np.int64).reshape(1, -1)
    room = BLOCK * slot_count
    out_words = np.empty(room * word_count, dtype=np.int64)
    out_fingerprints = np.empty(room, dtype=np.uint64)
    out_slots = np.empty(room, dtype=np.int64)
    out_truncated = np.empty(room, dtype=np.bool_)
    out_counts = np.empty(BLOCK, dtype=np.int64)
    for first in range(0, count, BLOCK):
        block = min(BLOCK, count - first)
        expand_block(cfg, slot_codes, identity, layout.cells, layout.biases, layout.bits, layout.shifts, layout.words,
                     word_count, frontier, first, block, out_words, out_fingerprints, out_slots, out_truncated,
                     out_counts)
        yield StepBlock(first, out_counts[:block], out_slots, out_words, slot_count)


def step_hits(cfg, slot_codes, slot_names, slot_replicas, programs: list[Program], layout, frontier,
              count: int) -> list[tuple[int, int]]:
    """For each step property, the first (frontier state, action slot) whose step it flags, or
    (NOT_FOUND, 0), in state and slot order; each program stops at its first."""
    slot_count = slot_codes.shape[0]
    hits = [(NOT_FOUND, 0)] * len(programs)
    out = np.empty(BLOCK * slot_count, dtype=np.bool_)
    for block in step_blocks(cfg, slot_codes, layout, frontier, count):
        for index, prog in enumerate(programs):
            if hits[index][0] == NOT_FOUND:
                at = block.flags(cfg, slot_names, slot_replicas, prog, layout, frontier, out, first_only=True)
                if at != NOT_FOUND:
                    hits[index] = (block.first + at // slot_count, int(block.slots[at]))
        if all(hit != NOT_FOUND for hit, _ in hits):
            break
    return hits


def step_flags(cfg, slot_codes, slot_names, slot_replicas, programs: list[Program], layout, frontier,
               count: int) -> np.ndarray:
    """Per program, whether it flags each step out of the frontier's first `count` states, the
    steps in state and slot order (as `batch.KernelBatch.expand` lists the successors)."""
    parts = [block.every_flag(cfg, slot_names, slot_replicas, programs, layout, frontier)
             for block in step_blocks(cfg, slot_codes, layout, frontier, count)]
    return np.concatenate(parts, axis=1) if parts else np.zeros((len(programs), 0), dtype=np.bool_)


def slot_actions(model, slots: int) -> tuple[np.ndarray, np.ndarray]:
    """Each action slot's action name code (`ACTION_NAMES`) and replica."""
    actions = [model.action_at(slot) for slot in range(slots)]
    return (np.array([ACTION_NAMES.index(a.name) for a in actions], dtype=np.int64),
            np.array([a.replica for a in actions], dtype=np.int64))


def evaluate_wide(prog: Program, config: Config, s: np.ndarray, t: np.ndarray | None = None,
                  action_name: int = 0, action_replica: int = 0) -> tuple[int, int]:
    """(fails, raises) of a program on one wide state (or step): for tests and reports."""
    registers = np.zeros(max(len(prog.instructions), 1), dtype=np.int64)
    run(prog.instructions, config.replicas, FIELD_KINDS, FIELD_FIRSTS, FIELD_POSITIONS, s,
        s if t is None else t, action_name, action_replica, registers)
    return int(registers[prog.fails]), int(registers[prog.raises])


def lowered_program(prop, config: Config) -> Program:
    """A user's property (`Property.predicate`) as the kernel's program under `config`; NotLowered
    naming the property and the construct, ValueError for a property without a Python function."""
    if getattr(prop, "predicate", None) is None:
        raise ValueError(f"property {prop.name} has no Python function the kernel could lower; "
                         "check it with --engine python (checker.bfs.check)")
    try:
        lowered = lower(prop.predicate, config, prop.name)
    except NotLowered as error:
        raise NotLowered(f"property {prop.name}: {error}") from None
    return program(lowered, witness=prop.kind != ALWAYS)


class UserChecks:
    """The user's properties of one kernel run (`Property.predicate`, lowered under the run's
    configuration), and the first state or step where each was flagged: (node, action slot or None)."""

    def __init__(self, model, properties, slots: int, programs: list[Program]):
        self.properties = tuple(properties)
        self.programs = programs  # `lowered_program` of each property
        self.action_names, self.action_replicas = slot_actions(model, slots)
        self.found: dict[str, tuple[int, int | None]] = {}

    def looked_for(self, on_step: bool) -> list[Program]:
        """The programs of the step (or state) properties not found yet."""
        return [prog for prog in self.programs if prog.on_step == on_step and prog.name not in self.found]

    def confirm(self, name: str, trace, symmetry: bool) -> None:
        """`confirm` the property `name` at the end of `trace`."""
        confirm(next(p for p in self.properties if p.name == name), trace, symmetry)

    def states(self, cfg, layout, frontier: np.ndarray, count: int, first_node: int) -> None:
        """Look for the state properties in `count` packed states numbered from first_node."""
        for prog in self.looked_for(on_step=False) if count else ():
            _, hit = flagged_states(cfg, prog, layout, frontier, count, first_only=True)
            if hit != NOT_FOUND:
                self.found[prog.name] = (first_node + hit, None)

    def steps(self, cfg, slot_codes, layout, frontier: np.ndarray, count: int, first_node: int) -> None:
        """Look for the step properties on every step out of `count` packed states numbered from first_node."""
        pending = self.looked_for(on_step=True)
        if pending and count:
            for prog, (hit, slot) in zip(pending, step_hits(cfg, slot_codes, self.action_names,
                                                            self.action_replicas, pending, layout, frontier, count)):
                if hit != NOT_FOUND:
                    self.found[prog.name] = (first_node + hit, slot)


def confirm(prop, trace, symmetry: bool) -> None:
    """Evaluate the user's own function where the kernel flagged `prop`, at the end of `trace`: its error
    is raised as the Python engine raises it; a verdict the function does not give is a lowering
    fault, reported."""
    states = trace.states()
    if prop.on_step:
        holds = prop.check(states[-2], trace.actions[-1], states[-1])
    else:
        holds = prop.check(None, None, states[-1])
    if holds == (prop.kind == ALWAYS):
        why = " (with --symmetry a property must not depend on which replica is which)" if symmetry else ""
        raise RuntimeError(f"the compiled kernel's lowering of property {prop.name} disagrees with its Python "
                           f"function at the end of this trace{why}: {', '.join(map(str, trace.actions))}")
