"""The compact stores behind exploration: the fingerprint table and packed states."""

import random

from kafka_mc.checker.fingerprints import FingerprintTable
from kafka_mc.checker.packing import StatePacker
from kafka_mc.model import Config, ReplicationModel


def test_fingerprint_table_is_a_set_of_64_bit_words_through_growth():
    table, reference = FingerprintTable(slots_log2=4), set()
    rng = random.Random(7)
    numbers = [rng.getrandbits(64) for _ in range(5000)] + [0, 1, 2**64 - 1]
    for number in numbers + numbers[:100]:
        assert table.add(number) == ((number or 1) not in reference)  # 0 is stored as 1
        reference.add(number or 1)
    assert len(table) == len(reference) == 5002
    assert all(number in table for number in numbers)
    assert not any(number + 1 in table for number in numbers[:100] if number + 1 not in reference)


def test_packed_states_unpack_equal_and_share_interned_values():
    model = ReplicationModel(Config(protocol="leader-epoch", replicas=3, messages=2, crashes=1, partitions=1))
    states, frontier = [], model.initial_states()
    for _ in range(6):
        frontier = list({following: None for state in frontier for _, following in model.successors(state)})
        states += frontier
    packer = StatePacker(states[0])
    records = b"".join(packer.pack(state) for state in states)
    assert len(records) == packer.size * len(states)
    unpacked = list(packer.unpack(records))
    assert unpacked == states and [hash(s) for s in unpacked] == [hash(s) for s in states]
    assert len(packer.objects) < len(states)
    # another packer reads them with the first one's table, as a worker reads another's outbox
    assert list(StatePacker(states[0]).unpack(records, packer.objects)) == states
