"""Input first: redraws nobody asked for wait while keys come.

A key is handled on the UI thread; so are the redraws that data moving asks for (store changes,
the 10 s age refresh, explanations computed off-thread). A whole-board redraw takes a 60 Hz frame
or more on a big cluster, and a key that arrives meanwhile waits for it. So while keys come such
work is held, one piece per name (a newer request replaces the held one: the redraw reads the
data as they are when it runs), and runs once no key came for `quiet` seconds, or, while keys
keep coming, once the oldest piece has waited `longest` seconds (the screen never goes stale
for longer than that). No Textual here: the app owns the timers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

# A pause between keys this long ends a run of keys: autorepeat and fast typing come every
# 30–100 ms, so a held redraw rarely starts just before the next key.
QUIET = 0.15
# Held data reach the screen at most this late while keys keep coming.
LONGEST = 1.0

Work = Callable[[], None]


class InputFirst:
    """Held redraws, keyed by name, and when they may run."""

    def __init__(self, *, quiet: float = QUIET, longest: float = LONGEST,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.longest = longest
        self._clock = clock
        self.last_key = 0.0  # clock time of the last key (0: none yet)
        self._held: dict[Hashable, Work] = {}
        self._since: float | None = None  # when the oldest held work was held

    def key(self) -> None:
        """A key arrived."""
        self.last_key = self._clock()

    def keys_active(self, quiet: float | None = None) -> bool:
        """A key came less than `quiet` (default: this gate's) seconds ago."""
        return self._clock() - self.last_key < (self.quiet if quiet is None else quiet)

    def hold(self, name: Hashable, work: Work) -> bool:
        """Keep `work` under `name` while keys come (True); False: none are coming, run it now."""
        if not self.keys_active():
            return False
        self._held[name] = work
        if self._since is None:
            self._since = self._clock()
        return True

    @property
    def held(self) -> bool:
        return bool(self._held)

    def holds(self, name: Hashable) -> bool:
        return name in self._held

    def overdue(self) -> bool:
        """Held work has waited `longest`: it runs between keys rather than after them."""
        return self._since is not None and self._clock() - self._since >= self.longest

    def wait(self) -> float:
        """Seconds until the keys will have paused for `quiet` (0: they have)."""
        return max(0.0, self.last_key + self.quiet - self._clock())

    def take(self) -> list[Work]:
        """The held work, in the order first held, if the keys paused; else nothing (it stays held)."""
        return self._take_all() if not self.keys_active() else []

    def take_overdue(self) -> list[Work]:
        """The held work if it has waited `longest` (or the keys paused): the app calls this right
        after a key's frame, so it runs in the gap before the next key."""
        return self._take_all() if self.overdue() or not self.keys_active() else []

    def _take_all(self) -> list[Work]:
        work, self._held, self._since = list(self._held.values()), {}, None
        return work
