"""The kernel's two forms of a state and the conversions between them and the model's named tuples.

Wide form: one int16 array of WIDTH cells at fixed offsets, sized for the largest
configuration (MAX_REPLICAS replicas, MAX_MESSAGES records, MAX_CACHE epoch-cache entries),
which the transitions read and write. Every cell a state does not use is 0, so equal states
have equal wide forms. Packed form: the cells a configuration can use, each biased to be
non-negative and given just the bits its range needs, laid into 63-bit fields of int64
words (`Packing`); frontiers hold states in this form and fingerprints hash it.

Replica cells (at `replica * REPLICA_WIDTH`): the log as message numbers and record epochs,
LEO, unflushed count, HW, the epoch cache (count, epochs, start offsets), status, role,
epoch, the fetch response in flight (present, offset, HW, out of range, record count,
records), the stale ISR, the view of the others' LEOs (present, one per replica), the leader
it follows (`Replica.leader_id`, stored plus one so that none is 0) and its delayed fetch in flight
(offset plus one, and whether it is stale).
After the replicas: the controller (leader, epoch, ISR), records written, crashes, acked
writes, the cut masks, cuts, the epochs the controller's bumps made (`model/epoch_bumps.py`), the
controller's eligible leader replicas (KIP-966), the AlterPartition in flight and the delays so far,
the disk failures so far (`State.disk_failures`), the ISR removals the leader has not read
(`Controller.unseen`), and the committed and consumed histories as one bitmask of message numbers per
offset.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kafka_mc.model import Config, Record, Replica, State
from kafka_mc.model import epoch_bumps, protocols
from kafka_mc.model.protocols import PROTOCOLS
from kafka_mc.model.state import MAX_REPLICAS, Controller, FetchResponse

from kafka_mc.model.config import CHECK_COUNT_LIMIT

MAX_MESSAGES = CHECK_COUNT_LIMIT
MAX_CACHE = CHECK_COUNT_LIMIT + 1  # an epoch cache holds at most one entry per epoch 0..elections

# replica cells, relative to the replica's first cell
LOG_MSG = 0
LOG_EPOCH = LOG_MSG + MAX_MESSAGES
LEO = LOG_EPOCH + MAX_MESSAGES
UNFLUSHED = LEO + 1
HW = UNFLUSHED + 1
CACHE_COUNT = HW + 1
CACHE_EPOCH = CACHE_COUNT + 1
CACHE_START = CACHE_EPOCH + MAX_CACHE
STATUS = CACHE_START + MAX_CACHE
ROLE = STATUS + 1
EPOCH = ROLE + 1
RESPONSE = EPOCH + 1
RESPONSE_OFFSET = RESPONSE + 1
RESPONSE_HW = RESPONSE_OFFSET + 1
RESPONSE_OUT_OF_RANGE = RESPONSE_HW + 1
RESPONSE_COUNT = RESPONSE_OUT_OF_RANGE + 1
RESPONSE_MSG = RESPONSE_COUNT + 1
RESPONSE_EPOCH = RESPONSE_MSG + MAX_MESSAGES
STALE_ISR = RESPONSE_EPOCH + MAX_MESSAGES
HAS_REMOTE = STALE_ISR + 1
REMOTE_LEO = HAS_REMOTE + 1
FOLLOWS = REMOTE_LEO + MAX_REPLICAS  # `Replica.leader_id` + 1: 0 for NO_LEADER
DELAYED_FETCH = FOLLOWS + 1  # with delays: `Replica.delayed_fetch` (its offset + 1; 0: none)
DELAYED_FETCH_STALE = DELAYED_FETCH + 1  # with delays: `Replica.delayed_fetch_stale`
REPLICA_WIDTH = DELAYED_FETCH_STALE + 1

# state cells
GLOBAL = MAX_REPLICAS * REPLICA_WIDTH
LEADER = GLOBAL
CONTROLLER_EPOCH = LEADER + 1
ISR = CONTROLLER_EPOCH + 1
WRITTEN = ISR + 1
CRASHES = WRITTEN + 1
ACKED = CRASHES + 1
ZK_CUT = ACKED + 1
PEER_CUT = ZK_CUT + 1
CUTS = PEER_CUT + 1
BUMPED = CUTS + 1  # with the controller's epoch bumps (`model/epoch_bumps.py`): the epochs bumps made
ELR = BUMPED + 1  # with eligible leader replicas (KIP-966, `eligible_leaders`): the controller's ELR mask
LAST_KNOWN_ELR = ELR + 1  # with eligible leader replicas: the last known leader (a mask; `Controller.last_known_elr`)
PROPOSAL = LAST_KNOWN_ELR + 1  # with delays: the replica the AlterPartition in flight adds (a mask; `proposal`)
REREGISTERED = PROPOSAL + 1  # with delays: `Controller.reregistered`
DELAYS = REREGISTERED + 1  # with delays: AlterPartition requests delayed so far
DISK_FAILURES = DELAYS + 1  # where `Config.counts_disk_failures`: crashes so far that lost the disk
UNSEEN = DISK_FAILURES + 1  # with metadata lag: the ISR members removed that the leader has not read (`unseen`)
COMMITTED = UNSEEN + 1
CONSUMED = COMMITTED + MAX_MESSAGES
WIDTH = CONSUMED + MAX_MESSAGES

# the settings the kernel reads, as cells of one int64 array: the bounds (disk failures last) and whether the leader
# reads the metadata late (`Config.metadata_lag`), then one cell per
# protocol choice (`model/protocols.py` CHOICES, in that order), then, for the model with the controller's epoch
# bumps (`model/epoch_bumps.py`), what its choice `isr_removal_bump` means there: whether the controller bumps the
# epoch on ISR removal, and whether a follower's requests then reach the leader in any epoch of its leadership
# (both 0 without the bumps)
(C_REPLICAS, C_MESSAGES, C_CRASHES, C_ELECTIONS, C_ACKS, C_MIN_ISR, C_UNCLEAN, C_FLUSH, C_PARTITIONS, C_DELAYS,
 C_DISK_FAILURES, C_METADATA_LAG, C_EPOCH_CACHE, C_EPOCH_ON_ELECTION, C_NEW_FOLLOWER, C_EPOCH_LOOKUP, C_ISR_JOIN,
 C_TRUNCATE_ON_FETCH, C_DIVERGING_FETCH_UPDATES_LEADER, C_EPOCH_ASSIGN, C_TRUNCATE_AT_END, C_DIVERGING_RESPONSE_HW, C_BOUNCE_NOTICED,
 C_HW_NEEDS_MIN_ISR, C_ELIGIBLE_LEADERS, C_ISR_UPDATES, C_ISR_SHRINK, C_FOLLOWER_SKIPS, C_ISR_REMOVAL_BUMP,
 C_STALE_FETCH, C_ISR_BUMPS, C_UNFENCED_REQUESTS) = range(32)
SETTING_COUNT = C_UNFENCED_REQUESTS + 1
ACKS_CODES = {"all": 0, "1": 1, "0": 2}
ACKS_ALL, ACKS_ONE, ACKS_ZERO = 0, 1, 2

# the protocol choice values the kernel encodes, and their codes in the choice's cell
NEW_FOLLOWER_TRUNCATES, NEW_FOLLOWER_ASKS, NEW_FOLLOWER_FETCHES_IF_EPOCH = 0, 1, 2
LOOKUP_NONE, LOOKUP_KIP_101, LOOKUP_KIP_279 = 0, 1, 2
JOIN_AT_HW, JOIN_PAST_EPOCH_START = 0, 1
ASSIGN_NEWER_EPOCH_ONLY, ASSIGN_TRUNCATE_CONFLICTING = 0, 1
ISR_ZOOKEEPER_WRITES, ISR_ALTER_ISR, ISR_LIVE_MEMBERS, ISR_BROKER_EPOCHS = 0, 1, 2, 3  # ordered: each checks more
SHRINK_AFTER_LAG_TIME, SHRINK_BEHIND_LEO = 0, 1
SKIP_SAME_LEADER, SKIP_NEXT_EPOCH, SKIP_SAME_EPOCH = 0, 1, 2
BUMP_FOLLOWERS_SKIP, BUMP_FOLLOWERS_TAKE, BUMP_NONE = 0, 1, 2
STALE_FETCH_UPDATES, STALE_FETCH_FENCED = 0, 1
CHOICE_CODES: dict[str, dict[object, int]] = {
    "epoch_cache": {False: 0, True: 1},
    "epoch_on_election": {False: 0, True: 1},
    "new_follower": {protocols.TRUNCATE_TO_HW: NEW_FOLLOWER_TRUNCATES, protocols.ASK_LEADER: NEW_FOLLOWER_ASKS,
                     protocols.FETCH_IF_EPOCH: NEW_FOLLOWER_FETCHES_IF_EPOCH},
    "epoch_lookup": {protocols.NO_LOOKUP: LOOKUP_NONE, protocols.KIP_101_LOOKUP: LOOKUP_KIP_101,
                     protocols.KIP_279_LOOKUP: LOOKUP_KIP_279},
    "isr_join": {protocols.JOIN_AT_HW: JOIN_AT_HW, protocols.JOIN_PAST_EPOCH_START: JOIN_PAST_EPOCH_START},
    "truncate_on_fetch": {False: 0, True: 1},
    "diverging_fetch_updates_leader": {False: 0, True: 1},
    "epoch_assign": {protocols.NEWER_EPOCH_ONLY: ASSIGN_NEWER_EPOCH_ONLY,
                     protocols.TRUNCATE_CONFLICTING: ASSIGN_TRUNCATE_CONFLICTING},
    "truncate_at_end": {False: 0, True: 1},
    "diverging_response_hw": {False: 0, True: 1},
    "bounce_noticed": {False: 0, True: 1},
    "hw_needs_min_isr": {False: 0, True: 1},
    "eligible_leaders": {False: 0, True: 1},
    "isr_updates": {protocols.ZOOKEEPER_WRITES: ISR_ZOOKEEPER_WRITES, protocols.ALTER_ISR: ISR_ALTER_ISR,
                    protocols.LIVE_MEMBERS: ISR_LIVE_MEMBERS, protocols.BROKER_EPOCHS: ISR_BROKER_EPOCHS},
    "isr_shrink": {protocols.SHRINK_AFTER_LAG_TIME: SHRINK_AFTER_LAG_TIME,
                   protocols.SHRINK_BEHIND_LEO: SHRINK_BEHIND_LEO},
    "follower_skips": {protocols.SKIP_SAME_LEADER: SKIP_SAME_LEADER, protocols.SKIP_NEXT_EPOCH: SKIP_NEXT_EPOCH,
                       protocols.SKIP_SAME_EPOCH: SKIP_SAME_EPOCH},
    "isr_removal_bump": {protocols.FOLLOWERS_SKIP_BUMP: BUMP_FOLLOWERS_SKIP,
                         protocols.FOLLOWERS_TAKE_BUMP: BUMP_FOLLOWERS_TAKE, protocols.NO_BUMP: BUMP_NONE},
    "stale_fetch": {protocols.STALE_FETCH_UPDATES: STALE_FETCH_UPDATES, protocols.STALE_FETCH_FENCED: STALE_FETCH_FENCED},
}
assert tuple(CHOICE_CODES) == protocols.CHOICE_NAMES == ("epoch_cache", "epoch_on_election", "new_follower",
                                                           "epoch_lookup", "isr_join", "truncate_on_fetch",
                                                           "diverging_fetch_updates_leader", "epoch_assign",
                                                           "truncate_at_end", "diverging_response_hw",
                                                           "bounce_noticed", "hw_needs_min_isr",
                                                           "eligible_leaders", "isr_updates", "isr_shrink",
                                                           "follower_skips", "isr_removal_bump", "stale_fetch")


def settings(config: Config, bumps: bool = False) -> np.ndarray:
    """The settings cells of `config`, with the controller's epoch bumps when `bumps`;
    `UnencodedChoice` for a protocol choice the kernel lacks."""
    protocol = PROTOCOLS[config.protocol]
    protocols.require_encoded("compiled kernel", protocol, {name: tuple(codes) for name, codes in CHOICE_CODES.items()})
    values = [config.replicas, config.messages, config.crashes, config.elections, ACKS_CODES[config.acks],
              config.min_isr, int(config.unclean), int(config.flush), config.partitions, config.delays,
              config.disk_failures, int(config.metadata_lag)]
    values += [CHOICE_CODES[name][value] for name, value in protocol.choices().items()]
    values += [int(bumps and protocol.bumps_on_isr_removal), int(bumps and protocol.followers_skip_bumps)]
    return np.array(values, dtype=np.int64)


def replica_cell(replica: int, cell: int) -> int:
    return replica * REPLICA_WIDTH + cell


# ------------------------------------------------------------------ named tuples <-> wide form

def encode(state: State) -> np.ndarray:
    """The wide form of a model state."""
    wide = np.zeros(WIDTH, dtype=np.int16)
    for index, replica in enumerate(state.replicas):
        base = index * REPLICA_WIDTH
        for offset, record in enumerate(replica.log):
            wide[base + LOG_MSG + offset], wide[base + LOG_EPOCH + offset] = record.msg, record.epoch
        wide[base + LEO], wide[base + UNFLUSHED], wide[base + HW] = len(replica.log), replica.unflushed, replica.hw
        wide[base + CACHE_COUNT] = len(replica.epochs)
        for position, (epoch, start) in enumerate(replica.epochs):
            wide[base + CACHE_EPOCH + position], wide[base + CACHE_START + position] = epoch, start
        wide[base + STATUS], wide[base + ROLE], wide[base + EPOCH] = replica.status, replica.role, replica.epoch
        if replica.response:
            response = replica.response
            wide[base + RESPONSE] = 1
            wide[base + RESPONSE_OFFSET], wide[base + RESPONSE_HW] = response.offset, response.hw
            wide[base + RESPONSE_OUT_OF_RANGE] = int(response.out_of_range)
            wide[base + RESPONSE_COUNT] = len(response.records)
            for position, record in enumerate(response.records):
                wide[base + RESPONSE_MSG + position] = record.msg
                wide[base + RESPONSE_EPOCH + position] = record.epoch
        wide[base + STALE_ISR] = replica.stale_isr
        if replica.remote_leos:
            wide[base + HAS_REMOTE] = 1
            wide[base + REMOTE_LEO:base + REMOTE_LEO + len(replica.remote_leos)] = replica.remote_leos
        wide[base + FOLLOWS] = replica.leader_id + 1
        wide[base + DELAYED_FETCH], wide[base + DELAYED_FETCH_STALE] = replica.delayed_fetch, replica.delayed_fetch_stale
    controller = state.controller
    wide[LEADER], wide[CONTROLLER_EPOCH], wide[ISR] = controller.leader, controller.epoch, controller.isr
    wide[WRITTEN], wide[CRASHES], wide[ACKED] = state.written, state.crashes, state.acked
    wide[ZK_CUT], wide[PEER_CUT], wide[CUTS] = state.zk_cut, state.peer_cut, state.cuts
    wide[BUMPED], wide[ELR], wide[LAST_KNOWN_ELR] = controller.bumped, controller.elr, controller.last_known_elr
    wide[PROPOSAL], wide[REREGISTERED], wide[DELAYS] = controller.proposal, controller.reregistered, state.delays
    wide[DISK_FAILURES], wide[UNSEEN] = state.disk_failures, controller.unseen
    for history, first in ((state.committed, COMMITTED), (state.consumed, CONSUMED)):
        for offset, msg in history:
            wide[first + offset] |= 1 << msg
    return wide


def decode(wide: np.ndarray, replicas: int) -> State:
    """The model state of a wide form."""
    cells = wide.tolist()
    decoded = []
    for index in range(replicas):
        base = index * REPLICA_WIDTH
        leo = cells[base + LEO]
        log = tuple(Record(cells[base + LOG_MSG + k], cells[base + LOG_EPOCH + k]) for k in range(leo))
        epochs = tuple((cells[base + CACHE_EPOCH + k], cells[base + CACHE_START + k])
                       for k in range(cells[base + CACHE_COUNT]))
        response: FetchResponse | tuple[()] = ()
        if cells[base + RESPONSE]:
            records = tuple(Record(cells[base + RESPONSE_MSG + k], cells[base + RESPONSE_EPOCH + k])
                            for k in range(cells[base + RESPONSE_COUNT]))
            response = FetchResponse(cells[base + RESPONSE_OFFSET], cells[base + RESPONSE_HW], records,
                                     bool(cells[base + RESPONSE_OUT_OF_RANGE]))
        remote = tuple(cells[base + REMOTE_LEO:base + REMOTE_LEO + replicas]) if cells[base + HAS_REMOTE] else ()
        decoded.append(Replica(log, cells[base + UNFLUSHED], cells[base + HW], epochs, cells[base + STATUS],
                               cells[base + ROLE], cells[base + EPOCH], response, cells[base + STALE_ISR], remote,
                               cells[base + FOLLOWS] - 1, cells[base + DELAYED_FETCH],
                               bool(cells[base + DELAYED_FETCH_STALE])))

    def history(first: int) -> tuple:
        pairs = []
        for offset in range(MAX_MESSAGES):
            bits = cells[first + offset] & 0xFFFF
            while bits:  # each set bit, lowest first
                pairs.append((offset, (bits & -bits).bit_length() - 1))
                bits &= bits - 1
        return tuple(pairs)

    controller = Controller(cells[LEADER], cells[CONTROLLER_EPOCH], cells[ISR], cells[BUMPED], cells[ELR],
                            cells[PROPOSAL], cells[REREGISTERED], cells[LAST_KNOWN_ELR], cells[UNSEEN])
    return State(tuple(decoded), controller, cells[WRITTEN],
                 cells[CRASHES], history(COMMITTED), history(CONSUMED), cells[ACKED], cells[ZK_CUT],
                 cells[PEER_CUT], cells[CUTS], cells[DELAYS], cells[DISK_FAILURES])


# ------------------------------------------------------------------------------ packed form

@dataclass(frozen=True)
class Packing:
    """Where each used cell of the wide form goes in the packed words of one configuration."""

    cells: np.ndarray  # int64: the wide cell of each field
    biases: np.ndarray  # int64: added before packing, so that every value is non-negative
    bits: np.ndarray  # int64: the field's width
    words: np.ndarray  # int64: the word it lies in
    shifts: np.ndarray  # int64: its lowest bit in that word
    word_count: int


def _ranges(config: Config, bumps: bool = False) -> list[tuple[int, int, int]]:
    """(cell, least value, greatest value) of every cell that can vary under `config` (with the
    controller's epoch bumps when `bumps`: one per failure noticed at most, each an epoch without an election)."""
    if bumps:
        config = epoch_bumps.bounding_config(config)
    n, messages, elections = config.replicas, config.messages, config.elections
    keeps_cache = PROTOCOLS[config.protocol].epoch_cache
    keeps_elr = PROTOCOLS[config.protocol].eligible_leaders
    masks = (1 << n) - 1
    ranges = []
    for index in range(n):
        base = index * REPLICA_WIDTH
        for offset in range(messages):
            ranges += [(base + LOG_MSG + offset, 0, messages), (base + LOG_EPOCH + offset, 0, elections)]
        ranges += [(base + LEO, 0, messages), (base + HW, 0, messages)]
        if not config.flush:
            ranges.append((base + UNFLUSHED, 0, messages))
        if keeps_cache:
            ranges.append((base + CACHE_COUNT, 0, elections + 1))
            for position in range(elections + 1):
                ranges += [(base + CACHE_EPOCH + position, 0, elections), (base + CACHE_START + position, 0, messages)]
        ranges += [(base + STATUS, 0, 3), (base + ROLE, 0, 4), (base + EPOCH, -1, elections)]
        ranges += [(base + RESPONSE, 0, 1), (base + RESPONSE_OFFSET, 0, messages), (base + RESPONSE_HW, 0, messages),
                   (base + RESPONSE_OUT_OF_RANGE, 0, 1), (base + RESPONSE_COUNT, 0, messages)]
        for position in range(messages):
            ranges += [(base + RESPONSE_MSG + position, 0, messages),
                       (base + RESPONSE_EPOCH + position, 0, elections)]
        if config.partitions:
            ranges.append((base + STALE_ISR, 0, masks))
        ranges.append((base + HAS_REMOTE, 0, 1))
        ranges += [(base + REMOTE_LEO + other, -1, messages) for other in range(n)]
        if PROTOCOLS[config.protocol].remembers_leader:
            ranges.append((base + FOLLOWS, 0, n))
        if config.delays:
            ranges += [(base + DELAYED_FETCH, 0, messages + 1), (base + DELAYED_FETCH_STALE, 0, 1)]
    ranges += [(LEADER, -1, n - 1), (CONTROLLER_EPOCH, 0, elections), (ISR, 0, masks), (WRITTEN, 0, messages),
               (CRASHES, 0, config.crashes), (ACKED, 0, (1 << (messages + 1)) - 1)]
    if config.partitions:
        ranges += [(ZK_CUT, 0, masks), (PEER_CUT, 0, masks), (CUTS, 0, config.partitions)]
    if bumps:
        ranges.append((BUMPED, 0, (1 << (elections + 1)) - 1))
    if keeps_elr:
        ranges += [(ELR, 0, masks), (LAST_KNOWN_ELR, 0, masks)]
    if config.delays or config.metadata_lag:  # an ISR change in flight, or refused and pending (`_record_fetch`)
        ranges += [(PROPOSAL, 0, masks), (REREGISTERED, 0, masks)]
    if config.delays:
        ranges.append((DELAYS, 0, config.delays))
    if config.counts_disk_failures:
        ranges.append((DISK_FAILURES, 0, config.disk_failures))
    if config.metadata_lag:
        ranges.append((UNSEEN, 0, masks))
    for first in (COMMITTED, CONSUMED):
        ranges += [(first + offset, 0, (1 << (messages + 1)) - 1) for offset in range(messages)]
    return [(cell, low, high) for cell, low, high in ranges if high > low]


def packing(config: Config, bumps: bool = False) -> Packing:
    cells, biases, bits, words, shifts = [], [], [], [], []
    word, shift = 0, 0
    for cell, low, high in _ranges(config, bumps):
        width = (high - low).bit_length()
        if shift + width > 63:
            word, shift = word + 1, 0
        cells.append(cell)
        biases.append(-low)
        bits.append(width)
        words.append(word)
        shifts.append(shift)
        shift += width
    as_array = lambda values: np.array(values, dtype=np.int64)  # noqa: E731
    return Packing(as_array(cells), as_array(biases), as_array(bits), as_array(words), as_array(shifts), word + 1)
