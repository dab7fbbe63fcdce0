"""Keep Python's full garbage collections out of key presses on big clusters.

A full (generation 2) collection walks every tracked object: with 20,000 Workloads in the store
that is a 0.5 s pause, and it lands on whichever key press allocated last (`benchmarks/tui.py`
measured three of them in 177 presses). The store's objects live for the whole session, so once
loaded they are moved to the permanent generation (`gc.freeze`), which collections skip.
Garbage among them is still freed by reference counting; only reference cycles created before a
freeze wait, and freezes happen only when the store has grown by half, so that stays bounded.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

MIN_OBJECTS = 5_000  # below this a full collection is quick: leave the collector alone
GROWTH = 1.5  # freeze again once the store holds this many times what it held at the last freeze


class HeapFreezer:
    def __init__(self, count: Callable[[], int], *, freeze: Callable[[], None] = gc.freeze) -> None:
        self._count = count
        self._freeze = freeze
        self.frozen_at = 0  # store size at the last freeze

    def maybe_freeze(self) -> bool:
        """Freeze when the store is big and has grown since the last freeze; True if it did."""
        n = self._count()
        if n < MIN_OBJECTS or n < self.frozen_at * GROWTH:
            return False
        gc.collect(1)  # young garbage out first, so it is not frozen with the store
        self._freeze()
        self.frozen_at = n
        return True
