"""A table view: rows from the store, `/` filter, capital-letter sorts, marks, keyed updates.

The model is a dict row id → `Row` (every row built, shown or not), the ids of all rows in sort
order, and the ids that pass the filter; the `VirtualTable` draws only the rows on screen.

Work per refresh follows what changed, not the table's size: the view subscribes to the store
and collects the keys that changed; views that can build one row (`build_row` and
`row_keys_for`) rebuild only those rows, others rebuild all (small tables). Kept sort orders
follow changed rows by bisection (`SortCache.moved`) rather than a re-sort, and the orders of
the sort keys (and the filter text of rows built meanwhile) are computed ahead on a worker; a
rebuilt row equal to the old one is dropped for it; the filter runs over changed rows only, and
earlier filter texts keep their results. The rows on screen are rebuilt on every refresh, so
their ages move; a burst of changes reaches them first, the other rows right after that frame.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from itertools import islice
from typing import TYPE_CHECKING, Any, ClassVar

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
from kueuetop.tui.oneline import OneLine
from kueuetop.tui.virtual_table import VirtualTable
from kueuetop.views.filtering import Move, RowFilter, SortCache, narrows, parse_filter, sort_orders, widens
from kueuetop.views.rows import Row, same

if TYPE_CHECKING:
    from kueuetop.tui.app import KueuetopApp

# More changed keys than this between two refreshes: rebuild everything (cheaper than tracking).
_MAX_DIRTY = 50_000
# Orders are computed ahead this long after a refresh left some missing (not on every refresh of
# a busy cluster: each costs a sort of every row, off the UI thread but not off the interpreter).
_AHEAD_DELAY = 0.5
# More changed rows than this in one refresh: those on screen first, the rest after the frame.
_LATER_OVER = 200
# … and those are built this many at a time (a few milliseconds each), in at most so many steps.
_CATCH_UP_STEP = 250
_CATCH_UP_STEPS = 4
# The worker's steps wait this long at a time while a store change is on its way to the screen,
# at most the second figure in all per run.
_AHEAD_YIELD_STEP = 0.005
_AHEAD_YIELD_MAX = 1.0
# Rows built since the worker last ran past this many: it runs again for their filter text (a `/`
# typed later would otherwise join the cells of every row rebuilt meanwhile: position polls, ticks).
_TEXT_AHEAD = 256
# Filter results kept for the last few filter texts: backspace, or typing a filter again, finds
# them instead of testing every row.
_FILTER_MEMO = 8


def row_id(key: Hashable) -> str:
    return "/".join(key) if isinstance(key, tuple) else str(key)


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

    @property
    def kapp(self) -> KueuetopApp:
        return self.app  # type: ignore[return-value]

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
        return self.kapp.check_binding(action, parameters)

    def on_resize(self) -> None:
        if self.display:
            self.refresh_view()


class TableView(View):
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
        self.filter: RowFilter = parse_filter("")
        self.sort_name: str | None = self.DEFAULT_SORT
        self.sort_reverse = False
        self.marks: set[str] = set()
        self._rows: dict[str, Row] = {}  # row id → row, for every row built (shown or filtered out)
        self._order: list[str] = []  # ids shown, top to bottom
        self._sorted: list[str] | None = None  # every id in sort order; None: sort again
        self._passes: dict[str, bool] = {}  # row id → passes the current filter
        self._memo: dict[str, dict[str, bool]] = {}  # earlier filter texts → their `_passes`
        self._lowers: tuple[list[str], list[str]] | None = None  # (`_sorted`, its rows' `Row.lower`)
        self._sorts = SortCache()  # orders by sort name, following row changes
        self._ahead_timer: Timer | None = None
        self._later: set[Hashable] = set()  # changed keys whose rows are built after the next frame
        self._later_step = _CATCH_UP_STEP  # … this many at a time
        self._ahead_running = False
        self._new_rows = 0  # rows built since the last worker took its copy of the rows
        self.total = 0
        self._lock = threading.Lock()
        self._dirty: dict[str, set[Any]] = {}  # store kind → keys changed since the last refresh
        self._full = True  # next refresh rebuilds every row
        self._unsubscribe: Any = None

    def compose(self) -> ComposeResult:
        yield OneLine(self.TITLE, classes="view-title")
        yield VirtualTable(self.COLUMNS, self._cells_of, marks=self.marks if self.MARKS else None,
                           ellipsis=self.ctx.glyphs.ellipsis, priorities=self.PRIORITIES or None)

    @property
    def _column_keys(self) -> list[str]:
        return (["_mark"] if self.MARKS else []) + list(self.COLUMNS)

    @property
    def table(self) -> VirtualTable:
        return self.query_one(VirtualTable)

    def _cells_of(self, rid: str) -> Sequence[Text] | None:
        row = self._rows.get(rid)
        return row.cells if row is not None else None

    # ------------------------------------------------------------ model
    def build_rows(self) -> list[Row]:
        raise NotImplementedError

    def build_row(self, key: Hashable) -> Row | None:
        """The row of one key, None when it is gone (or not shown); NotImplementedError: views that
        only build all rows at once."""
        raise NotImplementedError

    def row_keys_for(self, changes: Mapping[str, set[Any]]) -> set[Hashable] | None:
        """Row keys that changed store keys (kind → keys) affect; None: don't know, rebuild all."""
        return None

    def visible_rows(self) -> list[Row]:
        """The rows shown, in order (tests and tools; the view itself works on ids)."""
        return [self._rows[rid] for rid in self._order]

    def _on_store_changes(self, changes: Changes) -> None:  # store thread
        mine = {k: v for k, v in changes.keys.items() if k in self.KINDS and v}
        if not mine:
            return
        with self._lock:
            if self._full:
                return
            for kind, keys in mine.items():
                self._dirty.setdefault(kind, set()).update(keys)
            if sum(len(v) for v in self._dirty.values()) > _MAX_DIRTY:
                self._full, self._dirty = True, {}

    def _take_dirty(self) -> tuple[bool, dict[str, set[Any]]]:
        with self._lock:
            full, dirty = self._full, self._dirty
            self._full, self._dirty = False, {}
        return full, dirty

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
        """Bring `_rows` up to date; (ids whose rows changed or None for all, whether to re-sort).

        Many changed rows: those on screen now, the others right after the frame that shows
        them (`_catch_up`), so a burst of changes reaches the screen at the cost of a screenful."""
        full, dirty = self._take_dirty()
        keys = None if full else self.row_keys_for(dirty) if dirty else set()
        if keys is not None:
            keys |= self._later
            self._later = set()
            try:
                on_screen = self._keys_on_screen()
                if len(keys) > _LATER_OVER:
                    self._later = keys - on_screen
                    # Each step costs a pass over the kept order too: a few steps at most (the
                    # first list of a big cluster is one burst).
                    self._later_step = max(_CATCH_UP_STEP, -(-len(self._later) // _CATCH_UP_STEPS))
                    keys = keys & on_screen
                    self.table.call_after_paint(self._catch_up)
                changed, resort = self._rebuild(keys, check_sort=True, more=bool(self._later))
                visible, _ = self._rebuild(on_screen - keys, check_sort=False)
                return changed | visible, resort
            except NotImplementedError:
                pass
        self._later = set()
        self._rows = {row_id(r.key): r for r in self.build_rows()}
        self._new_rows = len(self._rows)
        self._passes = {}
        self._memo.clear()
        self._lowers = None
        self._sorts.invalidate()
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
        if not self._later or not self.is_mounted:
            return
        step = self._later_step
        if len(self._later) > step:
            keys = set(islice(self._later, step))
            self._later -= keys
            self.call_later(self._catch_up)
        else:
            keys, self._later = self._later, set()
        changed, resort = self._rebuild(keys, check_sort=True, more=bool(self._later))
        if changed or resort:
            self._show(changed, resort)
            self.after_refresh()

    def _rebuild(self, keys: set[Hashable], check_sort: bool, more: bool = False) -> tuple[set[str], bool]:
        """Build these rows again; (ids whose rows changed, whether some order moved).

        `more`: more changed rows follow after the frame (`SortCache.moved`).

        `check_sort` False: rows rebuilt only because they are on screen (their ages move) keep
        the sort values of their last change, so they don't wander while watched and every kept
        order still matches the rows."""
        changed: set[str] = set()
        moves: dict[str, Move] = {}
        for key in keys:
            rid = row_id(key)
            row = self.build_row(key)
            old = self._rows.get(rid)
            if row is None:
                if old is not None:
                    del self._rows[rid]
                    self._unfilter(rid)
                    moves[rid] = (old, None)
                    changed.add(rid)
                continue
            if old is not None and not check_sort and old.sort != row.sort:
                row = replace(row, sort=old.sort)
            if old is None:
                moves[rid] = (None, row)
            elif old.sort == row.sort:
                if same(old.cells, row.cells) and old.labels == row.labels and old.state == row.state:
                    continue  # the row as it was (with its filter text joined already)
            else:
                moves[rid] = (old, row)
            self._rows[rid] = row
            self._new_rows += 1
            changed.add(rid)
            self._unfilter(rid)
        if moves:
            # The order on screen is patched whatever the number of moves; others when few.
            self._sorts.moved(self._rows, moves, keep=(self.sort_name, self.sort_reverse), more=more)
        return changed, bool(moves)

    def _unfilter(self, rid: str) -> None:
        """This row changed: every kept filter result for it is out of date."""
        self._lowers = None
        self._passes.pop(rid, None)
        for passes in self._memo.values():
            passes.pop(rid, None)

    def _keys_on_screen(self) -> set[Hashable]:
        t = self.table
        top = int(t.scroll_y)
        return {self._rows[rid].key for rid in self._order[top: top + t.size.height] if rid in self._rows}

    def _show(self, changed: set[str] | None = None, resort: bool = False) -> None:
        """Sort (when needed), filter and hand the ids to the table; the cursor keeps its row."""
        # Kept orders follow row changes (`_rebuild`), so this is a look-up unless the order is new.
        self._sorted = self._sorts.sorted_ids(self._rows, self.sort_name, self.sort_reverse)
        if self.filter.literal is not None:
            # One word: a substring test down the rows' text in sort order, kept while no row
            # changes (typing on, backspace and sorts go without a look-up per row).
            lowers = self._lowers
            if lowers is None or lowers[0] is not self._sorted:
                lowers = self._lowers = (self._sorted, self._lowers_of(self._sorted))
            self._order = self.filter.select(self._sorted, lowers[1], self._rows)
        elif self.filter.predicates:
            passes = self._passes
            missing = [rid for rid in self._sorted if rid not in passes]
            if missing:
                passes.update(self.filter.passes(self._rows, missing))
            self._order = [rid for rid in self._sorted if passes[rid]]
        else:
            self._order = self._sorted
        self.total = len(self._rows)
        self.table.set_order(self._order, changed)
        self._update_title()
        self._plan_ahead()

    def _lowers_of(self, ids: list[str]) -> list[str]:
        """`Row.lower` of these rows, in order (the slot read directly: joined ahead, mostly)."""
        rows = self._rows
        lowers = [rows[rid]._lower for rid in ids]
        if None in lowers:
            lowers = [low if low is not None else rows[rid].lower for rid, low in zip(ids, lowers, strict=True)]
        return lowers  # type: ignore[return-value]

    # ------------------------------------------------------------ orders ahead
    def _plan_ahead(self) -> None:
        """Some sort key's order is missing, or many rows were built: compute the orders and
        the rows' filter text off the UI thread a little later."""
        if self._ahead_timer is None and not self._ahead_running and self.is_mounted \
                and (self._new_rows > _TEXT_AHEAD or self._sorts.missing(self.SORT_KEYS)):
            self._ahead_timer = self.set_timer(_AHEAD_DELAY, self._start_ahead)

    def _start_ahead(self) -> None:
        self._ahead_timer = None
        wanted = self._sorts.missing(self.SORT_KEYS)
        if (not wanted and self._new_rows <= _TEXT_AHEAD) or not self._rows or self._ahead_running \
                or not self.is_mounted:
            return
        self._ahead_running = True
        self._new_rows = 0
        rows, generation = dict(self._rows), self._sorts.generation  # rows are immutable: a copy of the dict will do
        self.run_worker(lambda: self._compute_ahead(rows, generation, wanted), thread=True,
                        group="orders-ahead", exit_on_error=False)

    def _compute_ahead(self, rows: dict[str, Row], generation: int, wanted: list[tuple[str, bool]]) -> None:
        """Worker thread: the missing orders, and every row's filter text (the first `/` then
        only searches); each step waits while a change is on its way to the screen."""
        orders: dict[tuple[str, bool], list[str]] = {}
        deadline = time.monotonic() + _AHEAD_YIELD_MAX
        try:
            self._yield_to_changes(deadline)
            for row in rows.values():
                _ = row.lower  # and `text`
            orders = sort_orders(rows, wanted, self._sorts.tiebreak, between=lambda: self._yield_to_changes(deadline))
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
        self._sorts.install(message.orders, message.generation)
        self._plan_ahead()  # rows moved meanwhile: those orders again, later

    def after_refresh(self) -> None:
        """Hook for views with a pane under the table."""

    def _update_title(self) -> None:
        parts = [f"{self.TITLE} ({len(self._order)}/{self.total})"]
        if self.filter.text:
            parts.append(f"filter: {self.filter.text}")
        if self.sort_name:
            parts.append(f"sort: {self.sort_name}{'↓' if self.sort_reverse else '↑'}")
        if self.marks:
            parts.append(f"marked: {len(self.marks)}")
        parts.extend(self.title_extra())
        if hidden := self.table.hidden_columns:
            parts.append(f"+{len(hidden)} columns ({self.kapp.key_label('wide')}: wide)")
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
        return self._rows.get(rid) if rid else None

    def selected(self) -> list[Row]:
        """Marked rows that are still shown, else the row under the cursor."""
        marked = [self._rows[r] for r in self._order if r in self.marks]
        if marked:
            return marked
        row = self.cursor_row()
        return [row] if row else []

    def toggle_mark(self) -> None:
        if not self.MARKS:
            return
        rid = self.cursor_id()
        if rid is None:
            return
        self.marks.symmetric_difference_update({rid})
        self._reshow()
        t = self.table
        t.move_cursor(t.cursor_row + 1)

    def clear_marks(self) -> None:
        self.marks.clear()
        self._reshow()

    def _reshow(self) -> None:
        """Show the rows again after a filter, sort or mark change (no row is rebuilt)."""
        if self.is_mounted and self._unsubscribe is not None:
            self._show(set())
            self.after_refresh()
        else:
            self.refresh_view()

    def set_filter(self, text: str) -> None:
        old = self.filter
        if text == old.text:  # the prompt opening with the filter as it is: nothing to test or re-fit
            self._reshow()
            return
        self.filter = parse_filter(text)
        if old.predicates and old.literal is None and old.text != text:
            self._memo.pop(old.text, None)
            self._memo[old.text] = self._passes
            while len(self._memo) > _FILTER_MEMO:
                del self._memo[next(iter(self._memo))]
        if self.filter.literal is not None:
            self._passes = {}  # not used: `_show` tests every row's text in one pass
        elif text in self._memo and self.filter.predicates:
            # Typed before (backspace, or the same filter again): rows that changed since were
            # dropped from it (`_unfilter`) and are tested again.
            self._passes = self._memo.pop(text)
        elif narrows(old.text, text) and old.predicates:
            # Typing on: rows the shorter filter dropped stay dropped; test only the others.
            self._passes = {rid: False for rid, ok in self._passes.items() if not ok}
        elif widens(old.text, text) and self.filter.predicates:
            # Backspace: rows the longer filter kept are kept.
            self._passes = {rid: True for rid, ok in self._passes.items() if ok}
        else:
            self._passes = {}
        if self.is_mounted:
            self.table.reset_widths()
            self.table.empty_text = "no rows match the filter" if self.filter.predicates else "no rows"
        self._reshow()

    def sort_by(self, name: str) -> None:
        if self.sort_name == name:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_name, self.sort_reverse = name, False
        self._sorted = None
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
        row = self._rows.get(event.row_key)
        if row is not None:
            self.drill(row)

    def drill(self, row: Row) -> None:
        """`enter` on a row; default: show its YAML."""
        self.kapp.show_yaml(*self.yaml_target(row))

    def raw_kind(self) -> str:
        return ""

    def yaml_target(self, row: Row) -> tuple[str, Hashable]:
        """(store kind, key) of the object behind a row, for `y` and `d`."""
        return self.raw_kind(), row.key


def scope_bindings(scope: str) -> list[Any]:
    """Default bindings of a view scope (user remaps are applied by id through set_keymap)."""
    return KM.load_keymap().bindings(scope)
