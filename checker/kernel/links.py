"""Parent links: for each state, by node number, its parent's node and the action slot that reached it.

Five bytes a state: a uint32 parent (`NO_PARENT` for an initial state, whose slot is then its index
among the initial states) and a uint8 slot. They are kept in pages of PAGE states, so the links grow a
page at a time: nothing kept is ever copied, and at most one page is allocated beyond the states held
(an unwritten page's memory is not touched). The CPU kernel and the GPU engine append each part of a
level's links as it is numbered (`extend`); the traces and the coverage read them back.
"""

from __future__ import annotations

import numpy as np

NO_PARENT = np.uint32(0xFFFFFFFF)
PAGE = 1 << 20  # states a page holds: 5 MiB a page
BYTES_PER_STATE = 5  # a uint32 parent and a uint8 slot


class ParentLinks:
    """The links of nodes 0..count-1, in pages."""

    def __init__(self) -> None:
        self._parents: list[np.ndarray] = []
        self._slots: list[np.ndarray] = []
        self.count = 0

    def extend(self, parents: np.ndarray, slots: np.ndarray) -> None:
        """Append the links of the next len(parents) nodes."""
        done = 0
        while done < len(parents):
            page, at = divmod(self.count, PAGE)
            if page == len(self._parents):
                self._parents.append(np.empty(PAGE, dtype=np.uint32))
                self._slots.append(np.empty(PAGE, dtype=np.uint8))
            size = min(PAGE - at, len(parents) - done)
            self._parents[page][at:at + size] = parents[done:done + size]
            self._slots[page][at:at + size] = slots[done:done + size]
            done += size
            self.count += size

    def parent(self, node: int) -> int:
        """The node's parent (NO_PARENT for an initial state)."""
        return int(self._parents[node // PAGE][node % PAGE])

    def slot(self, node: int) -> int:
        """The action slot that reached the node (an initial state's index for a root)."""
        return int(self._slots[node // PAGE][node % PAGE])

    def slot_counts(self, first: int, slot_count: int) -> np.ndarray:
        """How many of nodes first..count-1 each action slot reached."""
        counts = np.zeros(slot_count, dtype=np.int64)
        for page, slots in enumerate(self._slots):
            low, high = max(first - page * PAGE, 0), min(self.count - page * PAGE, PAGE)
            if low < high:
                counts += np.bincount(slots[low:high], minlength=slot_count)[:slot_count]
        return counts

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """All the parents and slots, as two arrays (a copy)."""
        if not self.count:
            return np.empty(0, dtype=np.uint32), np.empty(0, dtype=np.uint8)
        return (np.concatenate(self._parents)[:self.count], np.concatenate(self._slots)[:self.count])

    @property
    def nbytes(self) -> int:
        """The memory the pages hold (allocated, whether written or not)."""
        return len(self._parents) * PAGE * BYTES_PER_STATE
