"""Fewer young-generation garbage collections while a simulation or a forecast runs.

Both allocate in bursts (every status write builds a new object tree; a forecast's engine builds
and drops assignments, statuses and usage maps by the million) and their objects are trees, not
cycles, so reference counting frees nearly all of it. Python's default collector still runs a
young collection every 700 net allocations: on `xl` (100,000 Workloads) that was about a fifth
of the CPU of a scheduling cycle, and a fifth of a `large` forecast's on the console's worker,
for nothing found. While a run is in progress the young threshold is raised to 100,000 and the
older two to at least 50; when the last run ends each threshold is put back, unless somebody
else (the console's collectors, `tui/heap.py`) changed it meanwhile: theirs stays.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 100_000  # net allocations between young collections (Python's default: 700)
OLDER_THRESHOLD = 50  # young collections per generation-1 collection, and those per full one

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, ...] = ()  # the thresholds before the outermost run
_set: tuple[int, ...] = ()  # the thresholds it set


def _after_fork_in_child() -> None:
    """A forecast child (`tui/forecast_process.py`) starts with no run of its own under way,
    whatever thread of the console held the lock at the fork."""
    global _lock, _depth
    _lock, _depth = threading.Lock(), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@contextmanager
def sparse_collections() -> Iterator[None]:
    """Raise the collector's thresholds for the duration; nested and concurrent runs share one
    setting, restored when the outermost exits."""
    global _depth, _saved, _set
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            young = max(_saved[0], YOUNG_THRESHOLD) if _saved[0] else 0  # 0: collection disabled by the caller
            _set = (young, max(_saved[1], OLDER_THRESHOLD), max(_saved[2], OLDER_THRESHOLD))
            gc.set_threshold(*_set)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                now = gc.get_threshold()
                gc.set_threshold(*(old if cur == mine else cur for old, mine, cur in zip(_saved, _set, now, strict=True)))
