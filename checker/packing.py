"""States packed into fixed-size records, for frontiers and for states sent between workers.

A state is a handful of ints around a few nested values (the replicas, the controller,
the histories), and few of those nested values are distinct: on a 6.5e5-state space there
are 810 distinct replicas, 36 controllers and 4 histories. Each nested value is interned,
numbered once in a table of objects, and a state is packed as the numbers of its nested
values and its ints, 48 bytes for three replicas instead of several hundred of objects.
Unpacking rebuilds the state from the table, sharing the interned values.
"""

from __future__ import annotations

import struct
from typing import Iterator

from kafka_mc.model import State


class StatePacker:
    """One table of interned values and the record layout of a state with `replicas` replicas."""

    def __init__(self, example: State):
        self.replicas = len(example.replicas)
        # after the replicas, whether each field is an int (kept as it is) or a nested value (interned)
        self._plain = tuple(isinstance(value, int) for value in example[1:])
        self._record = struct.Struct("<" + "I" * (self.replicas + len(self._plain)))
        self.size = self._record.size
        self.objects: list = []  # the interned values, by number
        self._numbers: dict = {}
        # the numbers of the interned objects themselves, by identity: a successor shares most of
        # its nested values with its parent, which was unpacked from this table (an interned
        # object lives as long as the table, so its id is never another object's)
        self._numbers_by_id: dict[int, int] = {}

    def _intern(self, value) -> int:
        number = self._numbers_by_id.get(id(value))
        if number is None:
            number = self._numbers.get(value)
            if number is None:
                number = self._numbers[value] = len(self.objects)
                self._numbers_by_id[id(value)] = number
                self.objects.append(value)
        return number

    def pack(self, state: State) -> bytes:
        intern = self._intern
        values: list[object] = [intern(replica) for replica in state.replicas]
        values.extend(value if plain else intern(value) for plain, value in zip(self._plain, state[1:]))
        return self._record.pack(*values)

    def unpack(self, records: bytes | bytearray, objects: list | None = None) -> Iterator[State]:
        """The states of packed records, numbered in `objects` (by default, this packer's table)."""
        objects = self.objects if objects is None else objects
        replicas, plain, new = self.replicas, self._plain, tuple.__new__
        for values in self._record.iter_unpack(records):
            fields = [tuple([objects[number] for number in values[:replicas]])]
            fields.extend(value if is_plain else objects[value] for is_plain, value in zip(plain, values[replicas:]))
            yield new(State, fields)
