"""A table's rows, sort, `/` filter, marks and keyed change batches, as data (no Textual).

The model is a dict row id → `Row` (every row built, shown or not), the ids of all rows in sort
order, and the ids that pass the filter (`order`); a widget draws the rows of `order` that are on
screen and forwards keys here.

Work per refresh follows what changed, not the table's size: the store's change notifications
are collected by kind (`note_changes`, store thread) and taken by the next refresh
(`take_changes`); rows are rebuilt by key (`rebuild`); kept sort orders follow changed rows by
bisection (`SortCache.moved`) rather than a re-sort; a rebuilt row equal to the old one is
dropped; the filter runs over changed rows only, and earlier filter texts keep their results.
Orders of the sort keys (and the rows' filter text) can be computed ahead on another thread
(`ahead_input`, `compute_ahead`, `install_ahead`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import islice
from typing import Any

from kueuetop.views.filtering import Move, RowFilter, SortCache, narrows, parse_filter, sort_orders, widens
from kueuetop.views.rows import Row, same

# More changed keys than this between two refreshes: rebuild everything (cheaper than tracking).
MAX_DIRTY = 50_000
# More changed rows than this in one refresh: those on screen first, the rest after the frame.
LATER_OVER = 200
# … and those are built this many at a time (a few milliseconds each), in at most so many steps.
CATCH_UP_STEP = 250
CATCH_UP_STEPS = 4
# Rows built since the last computation ahead past this many: compute again for their filter text
# (a `/` typed later would otherwise join the cells of every row rebuilt meanwhile).
TEXT_AHEAD = 256
# Filter results kept for the last few filter texts: backspace, or typing a filter again, finds
# them instead of testing every row.
FILTER_MEMO = 8

Orders = dict[tuple[str, bool], list[str]]


def row_id(key: Hashable) -> str:
    return "/".join(key) if isinstance(key, tuple) else str(key)


class TableModel:
    """Rows by id, the sort, the filter and the marks of one table."""

    def __init__(self, kinds: Iterable[str] = (), default_sort: str | None = "name",
                 sort_keys: Sequence[str] = ("name", "age", "status", "namespace"), marks: bool = False) -> None:
        self.kinds = frozenset(kinds)  # store kinds whose changes reach this table
        self.sort_keys = tuple(sort_keys)  # sorts whose orders are computed ahead
        self.marks_enabled = marks
        self.filter: RowFilter = parse_filter("")
        self.sort_name: str | None = default_sort
        self.sort_reverse = False
        self.marks: set[str] = set()
        self.rows: dict[str, Row] = {}  # row id → row, for every row built (shown or filtered out)
        self.order: list[str] = []  # ids shown, top to bottom
        self._sorted: list[str] | None = None  # every id in sort order
        self._passes: dict[str, bool] = {}  # row id → passes the current filter
        self._memo: dict[str, dict[str, bool]] = {}  # earlier filter texts → their `_passes`
        self._lowers: tuple[list[str], list[str]] | None = None  # (`_sorted`, its rows' `Row.lower`)
        self.sorts = SortCache()  # orders by sort name, following row changes
        self.later: set[Hashable] = set()  # changed keys whose rows are built after the next frame
        self.later_step = CATCH_UP_STEP  # … this many at a time
        self.new_rows = 0  # rows built since the last computation ahead took its copy of the rows
        self._lock = threading.Lock()
        self._dirty: dict[str, set[Any]] = {}  # store kind → keys changed since the last refresh
        self._full = True  # next refresh rebuilds every row

    @property
    def total(self) -> int:
        return len(self.rows)

    # ------------------------------------------------------------ changes (store thread)
    def note_changes(self, keys: Mapping[str, Iterable[Any]]) -> None:
        """Store thread: keys that changed, by kind (kinds of other tables are ignored)."""
        mine = {k: v for k, v in keys.items() if k in self.kinds and v}
        if not mine:
            return
        with self._lock:
            if self._full:
                return
            for kind, ks in mine.items():
                self._dirty.setdefault(kind, set()).update(ks)
            if sum(len(v) for v in self._dirty.values()) > MAX_DIRTY:
                self._full, self._dirty = True, {}

    def rebuild_all_next(self) -> None:
        """The next refresh rebuilds every row (what the rows show changed as a whole)."""
        with self._lock:
            self._full, self._dirty = True, {}

    def take_changes(self) -> tuple[bool, dict[str, set[Any]]]:
        """(rebuild everything, keys changed by kind) since the last call."""
        with self._lock:
            full, dirty = self._full, self._dirty
            self._full, self._dirty = False, {}
        return full, dirty

    # ------------------------------------------------------------ rows
    def replace_all(self, rows: Iterable[Row]) -> None:
        """Every row built again: kept filter results and orders start over."""
        self.later = set()
        self.rows = {row_id(r.key): r for r in rows}
        self.new_rows = len(self.rows)
        self._passes = {}
        self._memo.clear()
        self._lowers = None
        self.sorts.invalidate()

    def split_batch(self, keys: set[Hashable], on_screen: set[Hashable]) -> tuple[set[Hashable], bool]:
        """Changed keys (plus those left from before): (those to build now, whether some are
        left for after the frame, `take_later`). Many changed rows: those on screen now, so a
        burst of changes reaches the screen at the cost of a screenful."""
        keys = keys | self.later
        self.later = set()
        if len(keys) > LATER_OVER:
            self.later = keys - on_screen
            # Each step costs a pass over the kept order too: a few steps at most (the first list
            # of a big cluster is one burst).
            self.later_step = max(CATCH_UP_STEP, -(-len(self.later) // CATCH_UP_STEPS))
            return keys & on_screen, True
        return keys, False

    def take_later(self) -> set[Hashable]:
        """The next step of the keys left for after the frame (empty: none left)."""
        step = self.later_step
        if len(self.later) > step:
            keys = set(islice(self.later, step))
            self.later -= keys
        else:
            keys, self.later = self.later, set()
        return keys

    def rebuild(self, keys: Iterable[Hashable], build_row: Callable[[Hashable], Row | None], check_sort: bool,
                more: bool = False) -> tuple[set[str], bool]:
        """Build these rows again; (ids whose rows changed, whether some order moved).

        `build_row` gives a key's row, None when it is gone. `more`: more changed rows follow
        (`SortCache.moved`). `check_sort` False: rows rebuilt only because they are on screen
        (their ages move) keep the sort values of their last change, so they don't wander while
        watched and every kept order still matches the rows."""
        changed: set[str] = set()
        moves: dict[str, Move] = {}
        for key in keys:
            rid = row_id(key)
            row = build_row(key)
            old = self.rows.get(rid)
            if row is None:
                if old is not None:
                    del self.rows[rid]
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
            self.rows[rid] = row
            self.new_rows += 1
            changed.add(rid)
            self._unfilter(rid)
        if moves:
            # The order on screen is patched whatever the number of moves; others when few.
            self.sorts.moved(self.rows, moves, keep=(self.sort_name, self.sort_reverse), more=more)
        return changed, bool(moves)

    def _unfilter(self, rid: str) -> None:
        """This row changed: every kept filter result for it is out of date."""
        self._lowers = None
        self._passes.pop(rid, None)
        for passes in self._memo.values():
            passes.pop(rid, None)

    def keys_in(self, top: int, height: int) -> set[Hashable]:
        """Keys of the rows shown from line `top`, `height` lines."""
        rows = self.rows
        return {rows[rid].key for rid in self.order[top: top + height] if rid in rows}

    def visible_rows(self) -> list[Row]:
        """The rows shown, in order."""
        return [self.rows[rid] for rid in self.order]

    # ------------------------------------------------------------ order
    def refresh_order(self) -> list[str]:
        """Sort (when needed) and filter: the ids shown, top to bottom."""
        # Kept orders follow row changes (`rebuild`), so this is a look-up unless the order is new.
        self._sorted = self.sorts.sorted_ids(self.rows, self.sort_name, self.sort_reverse)
        if self.filter.literal is not None:
            # One word: a substring test down the rows' text in sort order, kept while no row
            # changes (typing on, backspace and sorts go without a look-up per row).
            lowers = self._lowers
            if lowers is None or lowers[0] is not self._sorted:
                lowers = self._lowers = (self._sorted, self._lowers_of(self._sorted))
            self.order = self.filter.select(self._sorted, lowers[1], self.rows)
        elif self.filter.predicates:
            passes = self._passes
            missing = [rid for rid in self._sorted if rid not in passes]
            if missing:
                passes.update(self.filter.passes(self.rows, missing))
            self.order = [rid for rid in self._sorted if passes[rid]]
        else:
            self.order = self._sorted
        return self.order

    def _lowers_of(self, ids: list[str]) -> list[str]:
        """`Row.lower` of these rows, in order (the slot read directly: joined ahead, mostly)."""
        rows = self.rows
        lowers = [rows[rid]._lower for rid in ids]
        if None in lowers:
            lowers = [low if low is not None else rows[rid].lower for rid, low in zip(ids, lowers, strict=True)]
        return lowers  # type: ignore[return-value]

    def set_filter(self, text: str) -> bool:
        """`/text`; False when it is the filter already (nothing to test again)."""
        old = self.filter
        if text == old.text:
            return False
        self.filter = parse_filter(text)
        if old.predicates and old.literal is None and old.text != text:
            self._memo.pop(old.text, None)
            self._memo[old.text] = self._passes
            while len(self._memo) > FILTER_MEMO:
                del self._memo[next(iter(self._memo))]
        if self.filter.literal is not None:
            self._passes = {}  # not used: `refresh_order` tests every row's text in one pass
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
        return True

    def sort_by(self, name: str) -> None:
        """A sort key: that sort, or the same one the other way round."""
        if self.sort_name == name:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_name, self.sort_reverse = name, False
        self._sorted = None

    # ------------------------------------------------------------ marks
    def toggle_mark(self, rid: str) -> bool:
        """Mark or unmark a row; False when this table has no marks."""
        if not self.marks_enabled:
            return False
        self.marks.symmetric_difference_update({rid})
        return True

    def mark_range(self, cursor: str) -> bool:
        """k9s: mark everything between the last mark and the cursor; False when nothing is
        marked yet (or the cursor's row is not shown)."""
        order = self.order
        marked = [i for i, r in enumerate(order) if r in self.marks]
        if not marked or cursor not in order:
            return False
        lo, hi = sorted((marked[-1], order.index(cursor)))
        self.marks.update(order[lo:hi + 1])
        return True

    def selected(self, cursor: str | None) -> list[Row]:
        """Marked rows that are still shown, else the row under the cursor."""
        marked = [self.rows[r] for r in self.order if r in self.marks]
        if marked:
            return marked
        row = self.rows.get(cursor) if cursor else None
        return [row] if row else []

    def title_parts(self, title: str) -> list[str]:
        """The title line's words: counts, filter, sort, marks."""
        parts = [f"{title} ({len(self.order)}/{self.total})"]
        if self.filter.text:
            parts.append(f"filter: {self.filter.text}")
        if self.sort_name:
            parts.append(f"sort: {self.sort_name}{'↓' if self.sort_reverse else '↑'}")
        if self.marks:
            parts.append(f"marked: {len(self.marks)}")
        return parts

    # ------------------------------------------------------------ orders ahead
    def wants_ahead(self) -> bool:
        """Some sort key's order is missing, or many rows were built since the last time."""
        return self.new_rows > TEXT_AHEAD or bool(self.sorts.missing(self.sort_keys))

    def ahead_input(self) -> tuple[dict[str, Row], int, list[tuple[str, bool]]] | None:
        """What a computation ahead works on (rows, generation, orders wanted); None: nothing."""
        wanted = self.sorts.missing(self.sort_keys)
        if (not wanted and self.new_rows <= TEXT_AHEAD) or not self.rows:
            return None
        self.new_rows = 0
        # Rows are immutable: a copy of the dict will do.
        return dict(self.rows), self.sorts.generation, wanted

    def compute_ahead(self, rows: Mapping[str, Row], wanted: Iterable[tuple[str, bool]],
                      between: Callable[[], None] = lambda: None) -> Orders:
        """Any thread: every row's filter text, then the wanted orders (`between` runs between steps)."""
        for row in rows.values():
            _ = row.lower  # and `text`
        return sort_orders(rows, wanted, self.sorts.tiebreak, between=between)

    def install_ahead(self, orders: Mapping[tuple[str, bool], list[str]], generation: int) -> None:
        """Orders computed ahead from the rows as they were at `generation`."""
        self.sorts.install(orders, generation)
