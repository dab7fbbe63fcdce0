"""A table view: rows from the store, `/` filter, capital-letter sorts, marks, keyed updates.

The DataTable is updated by key inside one `batch_update`: unchanged order → only changed cells
are rewritten; pure removals → `remove_row`; pure appends → `add_row`; anything else (a re-sort,
inserts in the middle) → the rows are rebuilt. The cursor stays on the same object either way.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from kueuetop.tui import keymap as KM
from kueuetop.tui.context import ViewContext
from kueuetop.tui.filtering import RowFilter, parse_filter, sort_rows
from kueuetop.tui.rows import Row, same

if TYPE_CHECKING:
    from kueuetop.tui.app import KueuetopApp

_REBUILD_REMOVALS = 64  # beyond this many removals a rebuild is cheaper than remove_row each


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
        # Only the visible view refreshes: it decides whose queue positions are worth polling.
        self.ctx.store.set_position_focus(self.position_focus())

    def position_focus(self) -> set[str]:
        """ClusterQueues whose queue positions this view shows (none by default)."""
        return set()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.kapp.check_binding(action, parameters)

    def on_resize(self) -> None:
        if self.display:
            self.refresh_view()


class TableView(View):
    COLUMNS: ClassVar[tuple[str, ...]] = ()
    MARKS: ClassVar[bool] = False
    DEFAULT_SORT: ClassVar[str | None] = "name"
    DEFAULT_CSS = """
    TableView > DataTable { height: 1fr; }
    """

    def __init__(self, ctx: ViewContext, **kw: Any) -> None:
        super().__init__(ctx, **kw)
        self.filter: RowFilter = parse_filter("")
        self.sort_name: str | None = self.DEFAULT_SORT
        self.sort_reverse = False
        self.marks: set[str] = set()
        self._rows: dict[str, Row] = {}  # row id → row as shown
        self._order: list[str] = []
        self._shown: dict[str, tuple[Text, ...]] = {}  # row id → cells as drawn (with the mark)
        self.total = 0

    def compose(self) -> ComposeResult:
        yield Static(self.TITLE, classes="view-title")
        table: DataTable[Text] = DataTable(cursor_type="row", zebra_stripes=True)
        for label in (("",) if self.MARKS else ()) + self.COLUMNS:
            table.add_column(label, key=label or "_mark")
        yield table

    @property
    def _column_keys(self) -> list[str]:
        return (["_mark"] if self.MARKS else []) + list(self.COLUMNS)

    @property
    def table(self) -> DataTable[Text]:
        return self.query_one(DataTable)

    # ------------------------------------------------------------ model
    def build_rows(self) -> list[Row]:
        raise NotImplementedError

    def visible_rows(self) -> list[Row]:
        rows = self.build_rows()
        self.total = len(rows)
        rows = self.filter.apply(rows)
        return sort_rows(rows, self.sort_name, self.sort_reverse)

    def refresh_view(self) -> None:
        super().refresh_view()
        if not self.is_mounted:
            return
        self._sync(self.visible_rows())
        self._update_title()
        self.after_refresh()

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
        # Filter text is the user's own input but still untrusted-looking: plain Text, no markup.
        self.query_one(".view-title", Static).update(Text("  ".join(parts)))

    def _cells(self, row: Row) -> tuple[Text, ...]:
        if not self.MARKS:
            return row.cells
        rid = row_id(row.key)
        mark = Text("*" if rid in self.marks else " ", style="bold")
        return (mark, *row.cells)

    def _sync(self, rows: list[Row]) -> None:
        t = self.table
        want = [row_id(r.key) for r in rows]
        new = {row_id(r.key): r for r in rows}
        cursor = self.cursor_id()
        with self.app.batch_update():
            if want == self._order:
                for rid in want:
                    a, b = self._cells(new[rid]), self._shown.get(rid, ())
                    if not same(a, b):
                        for col, (x, y) in enumerate(zip(a, b, strict=False)):
                            if not same((x,), (y,)):
                                t.update_cell(rid, self._column_keys[col], x)
                        self._shown[rid] = a
            elif [k for k in self._order if k in new] == want and len(self._order) - len(want) <= _REBUILD_REMOVALS:
                for rid in self._order:
                    if rid not in new:
                        t.remove_row(rid)
                        self._shown.pop(rid, None)
                self._order = want
                self._rows = new
                self._sync(rows)  # now the same order: update changed cells
                return
            elif self._order == want[:len(self._order)]:
                for rid in want[len(self._order):]:
                    cells = self._cells(new[rid])
                    t.add_row(*cells, key=rid)
                    self._shown[rid] = cells
                self._order = want
                self._rows = new
                self._sync(rows)
                return
            else:
                t.clear()
                self._shown = {}
                for rid in want:
                    cells = self._cells(new[rid])
                    t.add_row(*cells, key=rid)
                    self._shown[rid] = cells
            self._order = want
            self._rows = new
            if cursor is not None and cursor in new:
                idx = t.get_row_index(cursor)
                if idx != t.cursor_row:
                    t.move_cursor(row=idx, animate=False, scroll=True)

    # ------------------------------------------------------------ selection
    def cursor_id(self) -> str | None:
        t = self.table
        if not t.row_count:
            return None
        try:
            return t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        except Exception:  # cursor out of range while rows change
            return None

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
        self.refresh_view()
        t = self.table
        if t.cursor_row < t.row_count - 1:
            t.move_cursor(row=t.cursor_row + 1)

    def clear_marks(self) -> None:
        self.marks.clear()
        self.refresh_view()

    def set_filter(self, text: str) -> None:
        self.filter = parse_filter(text)
        self.refresh_view()

    def sort_by(self, name: str) -> None:
        if self.sort_name == name:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_name, self.sort_reverse = name, False
        self.refresh_view()

    def sort_by_column(self) -> None:
        """`O`: sort by the column under the cursor, when the view knows a sort for it."""
        t = self.table
        col = t.cursor_column - (1 if self.MARKS else 0)
        if 0 <= col < len(self.COLUMNS):
            name = self.COLUMNS[col].lower()
            self.sort_by(name)

    # ------------------------------------------------------------ drill down / yaml
    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        row = self._rows.get(event.row_key.value or "")
        if row is not None:
            self.drill(row)

    def drill(self, row: Row) -> None:
        """`enter` on a row; default: show its YAML."""
        self.kapp.show_yaml(self.raw_kind(), row.key)

    def raw_kind(self) -> str:
        return ""


def scope_bindings(scope: str) -> list[Any]:
    """Default bindings of a view scope (user remaps are applied by id through set_keymap)."""
    return KM.load_keymap().bindings(scope)
