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
CHURN = 0.25  # … or once this share of it was replaced


class HeapFreezer:
    """`count`: objects in the store; `churn`: objects changed so far (a running total), so a
    store that keeps its size but replaces its objects (status updates) is frozen again too:
    each replaced object leaves a new, unfrozen one that every full collection walks."""

    def __init__(self, count: Callable[[], int], *, churn: Callable[[], int] = lambda: 0,
                 freeze: Callable[[], None] = gc.freeze,
                 collect: Callable[[int], object] = gc.collect) -> None:
        self._count = count
        self._churn = churn
        self._freeze = freeze
        self._collect = collect
        self.frozen_at = 0  # store size at the last freeze
        self.churn_at = 0  # churn total at the last freeze

    def maybe_freeze(self) -> bool:
        """Freeze when the store is big and has grown, or had a quarter of it replaced, since the
        last freeze; True if it did."""
        n, churn = self._count(), self._churn()
        if n < MIN_OBJECTS:
            return False
        grown = n >= self.frozen_at * GROWTH
        replaced = self.frozen_at and churn - self.churn_at >= self.frozen_at * CHURN
        if not (grown or replaced):
            return False
        # Garbage out first, so it is not frozen with the store: young garbage only at the first
        # freeze; a full collection (of what is not frozen yet) when objects were replaced.
        self._collect(2 if replaced and not grown else 1)
        self._freeze()
        self.frozen_at, self.churn_at = n, churn
        return True
