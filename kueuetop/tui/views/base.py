"""Views: `View` (any screen in the main area) and `TableView`, a table widget over a
`TableModel` (views/table_model.py: rows, sort, `/` filter, marks, keyed change batches).

The widget builds rows from the store (all at once, or one key at a time for views that can),
draws the model's order with a `VirtualTable` (only the rows on screen), and forwards keys to the
model. The rows on screen are rebuilt on every refresh, so their ages move; a burst of changes
reaches them first, the other rows right after that frame. Orders of the sort keys (and the
rows' filter text) are computed ahead on a worker.
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.timer import Timer

from kueuetop.store import Changes
from kueuetop.tui import keymap as KM
from kueuetop.tui.context import ViewContext
from kueuetop.tui.gpu_focus import report_gpu_focus
from kueuetop.tui.messages import ShowYaml
from kueuetop.tui.oneline import OneLine
from kueuetop.tui.virtual_table import VirtualTable
from kueuetop.views.rows import Row
from kueuetop.views.table_model import TableModel

# Orders are computed ahead this long after a refresh left some missing (not on every refresh of
# a busy cluster: each costs a sort of every row, off the UI thread but not off the interpreter).
_AHEAD_DELAY = 0.5
# The worker's steps wait this long at a time while a store change is on its way to the screen,
# at most the second figure in all per run.
_AHEAD_YIELD_STEP = 0.005
_AHEAD_YIELD_MAX = 1.0


class View(Vertical):
    """Any view: a name (the keymap scope), a refresh entry point, kinds it depends on."""

    VIEW: ClassVar[str] = ""
    TITLE: ClassVar[str] = ""
    KINDS: ClassVar[frozenset[str]] = frozenset()  # store kinds whose changes this view shows
    DEFAULT_CSS = """
    View { height: 1fr; }
    View > .view-title { height: 1; padding: 0 1; background: $panel; color: $text; }
    """

    def __init__(self, ctx: ViewContext, **kw: Any) -> None:
        super().__init__(id=self.VIEW, **kw)
        self.ctx = ctx
        self.dirty = True

    def refresh_view(self) -> None:
        self.dirty = False
        # Only the visible view refreshes: it decides whose queue positions are worth polling,
        # and whose GPUs a budgeted scrape reads first.
        self.ctx.store.set_position_focus(self.position_focus())
        report_gpu_focus(self.ctx, "view", self.gpu_focus())

    def position_focus(self) -> set[str]:
        """ClusterQueues whose queue positions this view shows (none by default)."""
        return set()

    def gpu_focus(self) -> set[str]:
        """Nodes whose GPUs this view shows (none by default)."""
        return set()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.ctx.check_binding(action, parameters)

    def on_resize(self) -> None:
        if self.display:
            self.refresh_view()


class TableView(View):
    """A table widget over a `TableModel`: builds rows from the store, draws the model's order,
    forwards keys (filter, sorts, marks) to the model, and computes orders ahead on a worker."""

    COLUMNS: ClassVar[tuple[str, ...]] = ()
    # Per column, how early it gives way on a narrow terminal (0: never; empty: none ever does).
    PRIORITIES: ClassVar[tuple[int, ...]] = ()
    MARKS: ClassVar[bool] = False
    DEFAULT_SORT: ClassVar[str | None] = "name"
    # Sorts a key asks for: their orders (both ways) are computed ahead, off the UI thread, so the
    # first press of a sort key finds its order ready.
    SORT_KEYS: ClassVar[tuple[str, ...]] = ("name", "age", "status", "namespace")

    class OrdersReady(Message):
        """Orders computed ahead from the rows as they were at `generation` (worker thread)."""

        def __init__(self, generation: int, orders: dict[tuple[str, bool], list[str]]) -> None:
            super().__init__()
            self.generation, self.orders = generation, orders

    DEFAULT_CSS = """
    TableView > VirtualTable { height: 1fr; }
    """

    def __init__(self, ctx: ViewContext, **kw: Any) -> None:
        super().__init__(ctx, **kw)
        self.model = TableModel(self.KINDS, self.DEFAULT_SORT, self.SORT_KEYS, self.MARKS)
        self._ahead_timer: Timer | None = None
        self._ahead_running = False
        self._unsubscribe: Any = None

    def compose(self) -> ComposeResult:
        yield OneLine(self.TITLE, classes="view-title")
        yield VirtualTable(self.COLUMNS, self._cells_of, marks=self.model.marks if self.MARKS else None,
                           ellipsis=self.ctx.glyphs.ellipsis, priorities=self.PRIORITIES or None)

    @property
    def _column_keys(self) -> list[str]:
        return (["_mark"] if self.MARKS else []) + list(self.COLUMNS)

    @property
    def table(self) -> VirtualTable:
        return self.query_one(VirtualTable)

    def _cells_of(self, rid: str) -> Sequence[Text] | None:
        row = self.model.rows.get(rid)
        return row.cells if row is not None else None

    # ------------------------------------------------------------ rows
    def build_rows(self) -> list[Row]:
        raise NotImplementedError

    def build_row(self, key: Hashable) -> Row | None:
        """The row of one key, None when it is gone (or not shown); NotImplementedError: views that
        only build all rows at once."""
        raise NotImplementedError

    def row_keys_for(self, changes: Mapping[str, set[Any]]) -> set[Hashable] | None:
        """Row keys that changed store keys (kind → keys) affect; None: don't know, rebuild all."""
        return None

    def _on_store_changes(self, changes: Changes) -> None:  # store thread
        self.model.note_changes(changes.keys)

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def refresh_view(self) -> None:
        super().refresh_view()
        if not self.is_mounted:
            return
        if self._unsubscribe is None:  # subscribe before the first full build: nothing is missed
            # Before the console's bridge: when it asks for a redraw, the changed keys are here.
            self._unsubscribe = self.ctx.store.subscribe(self._on_store_changes, stage=-1)
        changed, resort = self._update_rows()
        self._show(changed, resort)
        self.after_refresh()

    def _update_rows(self) -> tuple[set[str] | None, bool]:
        """Bring the model's rows up to date; (ids whose rows changed or None for all, whether to
        re-sort). Many changed rows: those on screen now, the others right after the frame that
        shows them (`_catch_up`)."""
        model = self.model
        full, dirty = model.take_changes()
        keys = None if full else self.row_keys_for(dirty) if dirty else set()
        if keys is not None:
            try:
                on_screen = self._keys_on_screen()
                keys, later = model.split_batch(keys, on_screen)
                if later:
                    self.table.call_after_paint(self._catch_up)
                changed, resort = model.rebuild(keys, self.build_row, check_sort=True, more=bool(model.later))
                visible, _ = model.rebuild(on_screen - keys, self.build_row, check_sort=False)
                return changed | visible, resort
            except NotImplementedError:
                pass
        model.replace_all(self.build_rows())
        return None, True

    def on_resize(self, event: events.Resize) -> None:
        # Rows don't depend on the height (the table draws whichever are on screen, and keeps its
        # cursor in view): no rebuild when the filter prompt opens or the terminal is resized,
        # only the queues whose positions are polled, and the pane under the table, follow.
        event.prevent_default()  # not View's handler too
        if self.display and self.is_mounted and self._unsubscribe is not None:
            self.ctx.store.set_position_focus(self.position_focus())
            report_gpu_focus(self.ctx, "view", self.gpu_focus())
            self.after_refresh()
        elif self.display:
            self.refresh_view()

    def _catch_up(self) -> None:
        """The changed rows left for after the frame (unless a refresh took them meanwhile), a
        step at a time: keys pressed meanwhile are handled between steps, not after them all."""
        model = self.model
        if not model.later or not self.is_mounted:
            return
        keys = model.take_later()
        if model.later:
            self.call_later(self._catch_up)
        changed, resort = model.rebuild(keys, self.build_row, check_sort=True, more=bool(model.later))
        if changed or resort:
            self._show(changed, resort)
            self.after_refresh()

    def _keys_on_screen(self) -> set[Hashable]:
        t = self.table
        return self.model.keys_in(int(t.scroll_y), t.size.height)

    def _show(self, changed: set[str] | None = None, resort: bool = False) -> None:
        """Sort (when needed), filter and hand the ids to the table; the cursor keeps its row."""
        self.table.set_order(self.model.refresh_order(), changed)
        self._update_title()
        self._plan_ahead()

    # ------------------------------------------------------------ orders ahead
    def _plan_ahead(self) -> None:
        """Some sort key's order is missing, or many rows were built: compute the orders and
        the rows' filter text off the UI thread a little later."""
        if self._ahead_timer is None and not self._ahead_running and self.is_mounted and self.model.wants_ahead():
            self._ahead_timer = self.set_timer(_AHEAD_DELAY, self._start_ahead)

    def _start_ahead(self) -> None:
        self._ahead_timer = None
        if self._ahead_running or not self.is_mounted:
            return
        work = self.model.ahead_input()
        if work is None:
            return
        self._ahead_running = True
        # The copy of the rows reaches the worker in a box it empties: a finished Worker lives on
        # in reference cycles until a full collection (for good once the heap freezer froze it,
        # tui/heap.py), and a closure over the copy kept every row it held, replaced or not.
        box = [work]
        self.run_worker(lambda: self._compute_ahead(*box.pop()), thread=True,
                        group="orders-ahead", exit_on_error=False)

    def _compute_ahead(self, rows: dict[str, Row], generation: int, wanted: list[tuple[str, bool]]) -> None:
        """Worker thread: the missing orders, and every row's filter text (the first `/` then
        only searches); each step waits while a change is on its way to the screen."""
        orders: dict[tuple[str, bool], list[str]] = {}
        deadline = time.monotonic() + _AHEAD_YIELD_MAX
        try:
            self._yield_to_changes(deadline)
            orders = self.model.compute_ahead(rows, wanted, between=lambda: self._yield_to_changes(deadline))
        finally:
            self.post_message(self.OrdersReady(generation, orders))

    def _yield_to_changes(self, deadline: float) -> None:
        """Worker thread: wait (without the interpreter lock) while the console is busy showing a
        store change, up to `deadline` (a steady stream of changes does not starve the orders)."""
        busy = self.ctx.busy
        while busy() and time.monotonic() < deadline:
            time.sleep(_AHEAD_YIELD_STEP)

    def on_table_view_orders_ready(self, message: OrdersReady) -> None:
        message.stop()
        self._ahead_running = False
        self.model.install_ahead(message.orders, message.generation)
        self._plan_ahead()  # rows moved meanwhile: those orders again, later

    def after_refresh(self) -> None:
        """Hook for views with a pane under the table."""

    def _update_title(self) -> None:
        parts = self.model.title_parts(self.TITLE)
        parts.extend(self.title_extra())
        if hidden := self.table.hidden_columns:
            parts.append(f"+{len(hidden)} columns ({self.ctx.key_label('wide')}: wide)")
        # Filter text is the user's own input but still untrusted-looking: plain Text, no markup.
        self.query_one(".view-title", OneLine).show_text(Text("  ".join(parts)))

    def title_extra(self) -> list[str]:
        """More words for the title line (views with a setting worth showing)."""
        return []

    def on_virtual_table_columns_hidden(self, event: VirtualTable.ColumnsHidden) -> None:
        event.stop()
        self._update_title()

    def toggle_wide(self) -> None:
        """k9s' ctrl-w: every column, scrolling sideways, or only those that fit."""
        self.table.wide = not self.table.wide

    # ------------------------------------------------------------ selection
    def cursor_id(self) -> str | None:
        return self.table.cursor_key if self.is_mounted else None

    def cursor_row(self) -> Row | None:
        rid = self.cursor_id()
        return self.model.rows.get(rid) if rid else None

    def selected(self) -> list[Row]:
        """Marked rows that are still shown, else the row under the cursor."""
        return self.model.selected(self.cursor_id())

    def toggle_mark(self) -> None:
        rid = self.cursor_id()
        if rid is None or not self.model.toggle_mark(rid):
            return
        self._reshow()
        t = self.table
        t.move_cursor(t.cursor_row + 1)

    def mark_range(self) -> None:
        """k9s: mark everything between the last mark and the cursor (no mark yet: this row)."""
        if not self.MARKS:
            return
        cur = self.cursor_id()
        if cur is None or not self.model.mark_range(cur):
            self.toggle_mark()
            return
        self.refresh_view()

    def clear_marks(self) -> None:
        self.model.marks.clear()
        self._reshow()

    def _reshow(self) -> None:
        """Show the rows again after a filter, sort or mark change (no row is rebuilt)."""
        if self.is_mounted and self._unsubscribe is not None:
            self._show(set())
            self.after_refresh()
        else:
            self.refresh_view()

    def set_filter(self, text: str) -> None:
        # The prompt opening with the filter as it is: nothing to test or re-fit.
        if self.model.set_filter(text) and self.is_mounted:
            self.table.reset_widths()
            self.table.empty_text = "no rows match the filter" if self.model.filter.predicates else "no rows"
        self._reshow()

    def sort_by(self, name: str) -> None:
        self.model.sort_by(name)
        self._reshow()

    def sort_by_column(self) -> None:
        """`O`: sort by the column under the cursor, when the view knows a sort for it."""
        col = self.table.cursor_column
        if 0 <= col < len(self.COLUMNS):
            name = self.COLUMNS[col].lower()
            self.sort_by(name)

    # ------------------------------------------------------------ drill down / yaml
    def on_virtual_table_row_selected(self, event: VirtualTable.RowSelected) -> None:
        event.stop()
        row = self.model.rows.get(event.row_key)
        if row is not None:
            self.drill(row)

    def drill(self, row: Row) -> None:
        """`enter` on a row; default: show its YAML."""
        self.post_message(ShowYaml(*self.yaml_target(row)))

    def raw_kind(self) -> str:
        return ""

    def yaml_target(self, row: Row) -> tuple[str, Hashable]:
        """(store kind, key) of the object behind a row, for `y` and `d`."""
        return self.raw_kind(), row.key


def scope_bindings(scope: str) -> list[Any]:
    """Default bindings of a view scope (user remaps are applied by id through set_keymap)."""
    return KM.load_keymap().bindings(scope)
