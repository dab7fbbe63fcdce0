"""Keep Python's full garbage collections out of key presses on big clusters.

A full (generation 2) collection walks every tracked object: with 20,000 Workloads in the store
that is a 0.5 s pause, and it lands on whichever key press allocated last (`benchmarks/tui.py`
measured three of them in 177 presses). The store's objects live for the whole session, so once
loaded they are moved to the permanent generation (`gc.freeze`), which collections skip.
Garbage among them is still freed by reference counting; only reference cycles created before a
freeze wait, and freezes happen only when the store has grown by half or a quarter of it was
replaced, so that stays bounded.
"""

from __future__ import annotations

import gc
import math
import threading
import time
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

    def maybe_freeze(self, *, quiet: bool = True, collected: bool = False) -> bool:
        """Freeze when the store is big and has grown, or had a quarter of it replaced, since the
        last freeze; True if it did.

        `quiet`: nobody is typing and no change is on its way to the screen, so a full
        collection may run now (a store that only had objects replaced waits for such a moment);
        `collected`: a full collection just ran, so none is needed first."""
        n, churn = self._count(), self._churn()
        if n < MIN_OBJECTS:
            return False
        grown = n >= self.frozen_at * GROWTH
        replaced = self.frozen_at and churn - self.churn_at >= self.frozen_at * CHURN
        if not (grown or replaced):
            return False
        full = bool(replaced and not grown)
        if full and not (quiet or collected):
            return False
        # Garbage out first, so it is not frozen with the store: young garbage only at the first
        # freeze; a full collection (of what is not frozen yet) when objects were replaced.
        if not (full and collected):
            self._collect(2 if full else 1)
        self._freeze()
        self.frozen_at, self.churn_at = n, churn
        return True


FULL_THRESHOLD_OFF = 1_000_000  # gen-2 threshold that keeps Python from starting full collections


class IdleCollector:
    """Full collections when nobody is typing, instead of whenever Python decides.

    What the freeze leaves (rows redrawn, workloads re-parsed on every change) still adds up to
    a full collection every few seconds on a busy cluster, 20-400 ms each, and Python starts it
    on whichever allocation tips the count: often a key press. While the console runs, Python's
    own full collections are switched off; `poll` (from the console's timer) runs one once as
    many younger collections have passed as Python would have waited for, when no key came for
    `quiet` seconds — or after `longest` seconds whatever, so memory stays bounded.

    Store changes count as activity too (a change shown late is as bad as a key answered late),
    and `busy` (a change on its way to the screen) holds every collection back, overdue or not:
    a full collection never lands between a store write and the frame that shows it.
    """

    def __init__(self, *, quiet: float = 1.0, longest: float = 30.0, clock: Callable[[], float] | None = None,
                 collect: Callable[[int], object] = gc.collect,
                 get_count: Callable[[], tuple[int, int, int]] = gc.get_count,
                 busy: Callable[[], bool] = lambda: False) -> None:
        self.quiet, self.longest = quiet, longest
        self._clock = clock or time.monotonic
        self._collect, self._get_count = collect, get_count
        self._busy = busy
        self._saved: tuple[int, ...] | None = None
        self._active_at = self._collected_at = self._clock()
        self.collections = 0

    @property
    def due_after(self) -> int:
        return self._saved[2] if self._saved else 10

    def start(self) -> None:
        if self._saved is None:
            self._saved = gc.get_threshold()
            gc.set_threshold(self._saved[0], self._saved[1], FULL_THRESHOLD_OFF)

    def stop(self) -> None:
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None

    def activity(self) -> None:
        self._active_at = self._clock()

    def is_quiet(self) -> bool:
        """No key or change for `quiet` seconds, and nothing on its way to the screen."""
        return self._clock() - self._active_at >= self.quiet and not self._busy()

    def poll(self) -> bool:
        """Collect now if due and quiet (or overdue), never while busy; True if it did."""
        if self._get_count()[2] < self.due_after or self._busy():
            return False
        now = self._clock()
        if now - self._active_at < self.quiet and now - self._collected_at < self.longest:
            return False
        self._collect(2)
        self._collected_at = now
        self.collections += 1
        return True


class BurstHold:
    """No automatic collection between a burst of store changes and the frame that shows it.

    Younger collections still run on whichever allocation tips their count: during a burst of
    1,000 changed workloads that is several 1-10 ms pauses between the store write and the
    frame. `hold` (called by the store before a big batch, on its thread) switches Python's
    automatic collections off; `release` (the console, once the change is on screen) switches
    them back on, and the next allocation collects what piled up, after the frame. A hold ends
    after `longest` seconds whatever happens, and none starts for `rest` seconds after that,
    so a cluster that never stops changing still gets collected.
    """

    def __init__(self, *, longest: float = 2.0, rest: float = 1.0, clock: Callable[[], float] | None = None,
                 disable: Callable[[], None] = gc.disable, enable: Callable[[], None] = gc.enable,
                 is_enabled: Callable[[], bool] = gc.isenabled) -> None:
        self.longest, self.rest = longest, rest
        self._clock = clock or time.monotonic
        self._disable, self._enable, self._is_enabled = disable, enable, is_enabled
        self._lock = threading.Lock()
        self._held_at: float | None = None
        self._released_at = -math.inf
        self._forced = False

    @property
    def held(self) -> bool:
        return self._held_at is not None

    def hold(self) -> None:
        with self._lock:
            now = self._clock()
            if self._held_at is not None:
                return
            if self._forced and now - self._released_at < self.rest:
                return
            if not self._is_enabled():  # someone else switched collections off: not ours to manage
                return
            self._disable()
            self._held_at, self._forced = now, False

    def release(self, *, in_flight: bool = False) -> bool:
        """Switch collections back on unless a change is still `in_flight` (and the hold is not
        overdue); True if it did."""
        with self._lock:
            if self._held_at is None:
                return False
            now = self._clock()
            overdue = now - self._held_at >= self.longest
            if in_flight and not overdue:
                return False
            self._enable()
            self._held_at, self._released_at, self._forced = None, now, overdue
            return True
