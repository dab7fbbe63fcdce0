"""What every view needs from the app, in one object (so views don't import the app)."""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from kueuetop.store import Store
from kueuetop.tui.glyphs import UNICODE, Glyphs
from kueuetop.tui.themes import KueuetopTheme

# Seconds without a key before work on other threads (explanations, forecasts) goes on: it takes
# the interpreter from the UI thread (held redraws have their own, shorter, pause: input_first.QUIET).
INPUT_QUIET = 0.4


@dataclass
class ViewContext:
    store: Store
    theme: KueuetopTheme
    glyphs: Glyphs = UNICODE
    clock: Callable[[], float] = time.time
    namespace: str | None = None  # --namespace: views show only this namespace's objects
    idle_below: float = 5.0  # GPU util % under which an allocated GPU counts as idle
    extra: dict[str, object] = field(default_factory=dict)
    # A store change is on its way to the screen: background work (orders computed ahead) waits,
    # so as not to take the interpreter from it. Called from worker threads.
    busy: Callable[[], bool] = lambda: False
    # Set by the app (attributes down): whether a key's action is enabled now (read-only mode,
    # RBAC), and an action's first key as the footer shows it.
    check_binding: Callable[[str, tuple[object, ...]], bool | None] = lambda action, parameters: True
    key_label: Callable[[str], str] = lambda action_id: action_id
    # The monotonic time of the user's last key (0: none yet), set by the app: redraws nobody asked
    # for (ages moving, headlines computed off-thread) wait while keys come, so a key never queues
    # behind one.
    last_key: Callable[[], float] = lambda: 0.0
    # Set by the app: run a redraw nobody asked for now, or, while keys come, once they pause
    # (tui/input_first.py); a newer request under the same name replaces a held one.
    defer: Callable[[Hashable, Callable[[], None]], None] = lambda name, work: work()

    def keys_active(self, quiet: float = INPUT_QUIET) -> bool:
        """A key came less than `quiet` seconds ago."""
        return time.monotonic() - self.last_key() < quiet

    def now(self) -> float:
        return self.clock()

    def state_style(self, state: str) -> str:
        """Colour for a workload state word (pending, admitted, evicted, inactive, finished, stale)."""
        if self.theme.shaded:
            return "bold" if state in ("evicted", "pending") else ""
        return self.theme.states.get(state, "")
