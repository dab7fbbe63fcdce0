"""Store → UI: changes arrive on the informer thread, the UI redraws on its own thread.

The store calls us once per applied batch, on the applier thread. We only record which kinds
changed and post *one* `StoreChanged` message until the UI has taken them (`take`); bursts
collapse into one message. The app then refreshes at most `max_rate` times a second, and only
the visible view. No timer runs while nothing changes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from textual.message import Message

from kueuetop.store import Changes, Store


class StoreChanged(Message):
    """Something in the store changed; call `StoreBridge.take()` for the kinds."""


class StoreBridge:
    def __init__(self, store: Store, post: Callable[[Message], object]) -> None:
        self.store = store
        self._post = post
        self._lock = threading.Lock()
        self._pending: set[str] = set()
        self._posted = False
        self._unsubscribe: Callable[[], None] | None = None
        self.changed_objects = 0  # running total of changed keys (the heap freezer reads it)

    def start(self) -> None:
        self._unsubscribe = self.store.subscribe(self._on_changes)

    def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_changes(self, changes: Changes) -> None:  # store thread
        kinds = {k for k, v in changes.keys.items() if v}
        if not kinds:
            return
        with self._lock:
            self.changed_objects += sum(len(v) for v in changes.keys.values())
            self._pending |= kinds
            if self._posted:
                return
            self._posted = True
        self._post(StoreChanged())  # Textual's post_message is thread-safe

    @property
    def pending(self) -> bool:
        """Changes were announced and the UI has not taken them yet."""
        return self._posted

    def take_if(self, only: frozenset[str]) -> frozenset[str] | None:
        """`take`, but only when every kind changed since is one of `only` (else None)."""
        with self._lock:
            if not self._pending or not self._pending <= only:
                return None
            kinds, self._pending, self._posted = frozenset(self._pending), set(), False
        return kinds

    def take(self) -> frozenset[str]:
        """The kinds changed since the last take; re-arms posting."""
        with self._lock:
            kinds, self._pending, self._posted = frozenset(self._pending), set(), False
        return kinds
