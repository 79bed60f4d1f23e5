"""The visited set: 64-bit fingerprints in one open-addressing table of machine words.

A Python set of ints costs about 65 bytes per member at 10^7 members (the int object
and a 16-byte slot at a load of at most 3/5); this table costs 8 bytes per slot at a load
of at most 7/10, with linear probing. Fingerprints are CPython tuple hashes, well mixed
in their low bits, so the home slot is the fingerprint's low bits. The word 0 marks an
empty slot; the fingerprint 0 is stored as 1 (a collision of two fingerprints, the risk
every fingerprinting model checker takes).
"""

from __future__ import annotations

from array import array

MAX_LOAD = 0.7


class FingerprintTable:
    __slots__ = ("_table", "_mask", "_count", "_limit")

    def __init__(self, slots_log2: int = 16):
        self._allocate(slots_log2)

    def _allocate(self, slots_log2: int) -> None:
        """An empty table of 2**slots_log2 slots."""
        self._table = array("Q", bytes(8 << slots_log2))
        self._mask = (1 << slots_log2) - 1
        self._count = 0
        self._limit = int(MAX_LOAD * (1 << slots_log2))

    def __len__(self) -> int:
        return self._count

    def __contains__(self, fingerprint: int) -> bool:
        fingerprint = fingerprint or 1
        table, mask = self._table, self._mask
        slot = fingerprint & mask
        while True:
            held = table[slot]
            if held == fingerprint:
                return True
            if not held:
                return False
            slot = (slot + 1) & mask

    def add(self, fingerprint: int) -> bool:
        """Insert a fingerprint; True when it was not there yet."""
        fingerprint = fingerprint or 1
        table, mask = self._table, self._mask
        slot = fingerprint & mask
        while True:
            held = table[slot]
            if held == fingerprint:
                return False
            if not held:
                table[slot] = fingerprint
                self._count += 1
                if self._count > self._limit:
                    self._grow()
                return True
            slot = (slot + 1) & mask

    def _grow(self) -> None:
        old, count = self._table, self._count
        self._allocate(self._mask.bit_length() + 1)
        table, mask = self._table, self._mask
        for fingerprint in old:
            if fingerprint:
                slot = fingerprint & mask
                while table[slot]:
                    slot = (slot + 1) & mask
                table[slot] = fingerprint
        self._count = count
