"""No full garbage collections while a replay applies records.

Applying a recording builds objects by the hundred thousand (JSON trees, parsed objects, store
entries) that reference counting frees; Python's full collections, started every few hundred
thousand allocations, walk the whole heap each time — on a one-hour `large` recording that was
more than half of a seek's time (benchmarks/replay.py). While a seek runs, full collections are
left to whoever runs them on purpose (the console's idle collector, tui/heap.py); the older
threshold is put back when the last seek ends, unless someone changed it meanwhile.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

FULL_OFF = 1_000_000  # young collections per full one: none during a seek

_lock = threading.Lock()
_state = {"depth": 0, "saved": 0}  # seeks in progress (threads), the threshold they replaced


@contextmanager
def full_collections_off() -> Iterator[None]:
    with _lock:
        if _state["depth"] == 0:
            young, middle, full = gc.get_threshold()
            _state["saved"] = full
            if full < FULL_OFF:
                gc.set_threshold(young, middle, FULL_OFF)
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            young, middle, full = gc.get_threshold()
            if _state["depth"] == 0 and full == FULL_OFF and _state["saved"] < FULL_OFF:
                gc.set_threshold(young, middle, _state["saved"])
