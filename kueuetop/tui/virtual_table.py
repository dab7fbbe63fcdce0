"""A table that draws only the rows in its viewport (Textual's line API).

The table does not own rows: it holds an ordered list of row ids (already filtered and sorted
by its owner) and a function from id to cells. Drawing a screenful costs the same for 50 rows as
for 100,000; a change to a few rows costs as much as those rows (`set_order(..., changed=ids)`).

- Column headers stay on line 0; rows scroll under them. Columns are as wide as the widest cell
  seen on screen (never narrower, up to `max_column_width`); longer cells end in an ellipsis
  (`~` with `--ascii`).
- Columns have priorities (0: always shown). When they don't all fit the width, the least
  important ones are left out — as k9s keeps NAME and STATUS on an 80-column terminal — until
  `wide` is set (k9s' ctrl-w), which shows every column with horizontal scroll. The first
  column of priority 1 that does not fit whole is drawn cut short in the space left (when at
  least `SQUEEZE_MIN` cells are), rather than vanishing because one long cell widened it.
- The cursor follows its row id across re-sorts, filters and updates; when that row goes away it
  stays at the same position. `RowHighlighted` / `RowSelected` mirror DataTable's messages.
- An optional first column shows marks (`*`) from a set the owner shares with the table.
- Colours come from component classes, so themes style it like any Textual widget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Offset, Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

CellsOf = Callable[[str], Sequence[Text] | None]
PAD = 1  # spaces either side of a cell, as DataTable's default cell_padding
MARK_WIDTH = 1
STRIP_CACHE = 2000  # rows kept drawn; a few screens' worth, bounded whatever the table's size
SQUEEZE_MIN = 10  # narrowest a priority-1 column is cut to rather than left out
_NULL = Style.null()
_BOLD = Style(bold=True)


def fit(cell: Text, width: int, ellipsis: str) -> Text:
    """`cell` cut to `width` cells, ending in `ellipsis` when it had to be cut."""
    if cell.cell_len <= width:
        return cell
    out = cell.copy()
    out.truncate(max(0, width - len(ellipsis)), overflow="crop")
    out.append(ellipsis[:width])
    return out


class VirtualTable(ScrollView, can_focus=True):
    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "vtable--header", "vtable--header-cursor", "vtable--cursor", "vtable--even-row", "vtable--empty",
    }
    DEFAULT_CSS = """
    VirtualTable {
        background: $surface;
        color: $foreground;
        height: 1fr;
        & > .vtable--header { text-style: bold; background: $panel; color: $foreground; }
        & > .vtable--header-cursor { text-style: bold; background: $accent-darken-1; color: $foreground; }
        & > .vtable--even-row { background: $surface-lighten-1 50%; }
        & > .vtable--empty { color: $text-muted; text-style: italic; }
        & > .vtable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus > .vtable--cursor {
            background: $block-cursor-background;
            color: $block-cursor-foreground;
            text-style: $block-cursor-text-style;
        }
        &:dark > .vtable--even-row { background: $surface-darken-1 40%; }
        &:ansi > .vtable--header { background: ansi_bright_blue; color: ansi_default; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("left", "column_left", "Left", show=False),
        Binding("right", "column_right", "Right", show=False),
        Binding("enter", "select_cursor", "Select", show=False),
    ]

    class RowHighlighted(Message):
        """The cursor moved to another row (`row_key` None: the table is empty)."""

        def __init__(self, table: VirtualTable, row_key: str | None, cursor_row: int) -> None:
            super().__init__()
            self.table, self.row_key, self.cursor_row = table, row_key, cursor_row

        @property
        def control(self) -> VirtualTable:
            return self.table

    class ColumnsHidden(Message):
        """The columns left out to fit the width changed (empty: all are shown)."""

        def __init__(self, table: VirtualTable, hidden: tuple[str, ...]) -> None:
            super().__init__()
            self.table, self.hidden = table, hidden

        @property
        def control(self) -> VirtualTable:
            return self.table

    class RowSelected(Message):
        """`enter` (or a double click) on a row."""

        def __init__(self, table: VirtualTable, row_key: str, cursor_row: int) -> None:
            super().__init__()
            self.table, self.row_key, self.cursor_row = table, row_key, cursor_row

        @property
        def control(self) -> VirtualTable:
            return self.table

    def __init__(self, columns: Sequence[str], cells_of: CellsOf, *, marks: set[str] | None = None,
                 ellipsis: str = "…", empty_text: str = "no rows", zebra_stripes: bool = True,
                 max_column_width: int = 48, priorities: Sequence[int] | None = None,
                 name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.columns = tuple(columns)
        self.priorities = tuple(priorities) if priorities is not None else (0,) * len(self.columns)
        if len(self.priorities) != len(self.columns):
            raise ValueError("one priority per column")
        self._wide = False
        self._shown = list(range(len(self.columns)))  # indices of the columns drawn, left to right
        self._hidden: tuple[str, ...] = ()
        self._cells_of = cells_of
        self.marks = marks  # None: no mark column
        self.ellipsis = ellipsis
        self.empty_text = empty_text
        self.zebra_stripes = zebra_stripes
        self.max_column_width = max_column_width
        self._order: list[str] = []
        self._widths = [len(c) for c in self.columns]
        self._squeezed: dict[int, int] = {}  # column index → width it is drawn at this frame
        self._strips: dict[str, tuple[bool, Strip]] = {}  # row id → (marked, line as drawn)
        self._styles: dict[str, Style] = {}  # cell style string → parsed
        self.cursor_row = 0
        self.cursor_column = 0
        self._highlighted: str | None = None
        self._frame: tuple[Style, Style, Style, Offset, int] | None = None  # set while a frame renders
        self.lines_rendered = 0  # render_line calls for rows (tests check that only visible ones are drawn)
        self._after_paint: list[Callable[[], object]] = []

    # ------------------------------------------------------------ model
    @property
    def order(self) -> Sequence[str]:
        return self._order

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def cursor_key(self) -> str | None:
        return self._order[self.cursor_row] if 0 <= self.cursor_row < len(self._order) else None

    def set_order(self, order: list[str], changed: Iterable[str] | None = None) -> None:
        """Show `order` (row ids, top to bottom); `changed`: ids whose cells changed (None: all).

        The cursor stays on its row id if that row is still shown."""
        key = self.cursor_key
        self._order = order
        if changed is None:
            self._strips.clear()
        else:
            for rid in changed:
                self._strips.pop(rid, None)
        if key is not None and not (self.cursor_row < len(order) and order[self.cursor_row] == key):
            # When the row went away the cursor stays at its position, on the row after it.
            with suppress(ValueError):
                self.cursor_row = order.index(key)
        self.cursor_row = max(0, min(self.cursor_row, len(order) - 1))
        self._update_virtual_size()
        self._scroll_cursor_visible()
        self.refresh()
        self._announce()

    def get_row_at(self, index: int) -> tuple[Text, ...]:
        """Cells of the row at `index`, every column shown or not (the mark first when there is a mark column)."""
        rid = self._order[index]
        cells = tuple(self._cells_of(rid) or ())
        if self.marks is None:
            return cells
        return (Text("*" if rid in self.marks else " "), *cells)

    def refresh_rows(self, ids: Iterable[str]) -> None:
        """Redraw these rows (their cells or marks changed)."""
        for rid in ids:
            self._strips.pop(rid, None)
        self.refresh()

    def call_after_paint(self, callback: Callable[[], object]) -> None:
        """Call `callback` once a frame has drawn the table. (`call_after_refresh` may run first:
        the screen hears that the table needs drawing by a message, and runs its after-refresh
        callbacks at once when it has not heard yet.)"""
        self._after_paint.append(callback)
        self.refresh()

    def reset_widths(self) -> None:
        """Fit columns to what will be on screen next (after a filter, widths may shrink)."""
        self._widths = [len(c) for c in self.columns]
        self._strips.clear()
        self.refresh()

    @property
    def wide(self) -> bool:
        return self._wide

    @wide.setter
    def wide(self, value: bool) -> None:
        self._wide = value
        self._strips.clear()
        self.refresh()

    @property
    def shown_columns(self) -> tuple[str, ...]:
        return tuple(self.columns[i] for i in self._shown)

    @property
    def hidden_columns(self) -> tuple[str, ...]:
        return self._hidden

    # ------------------------------------------------------------ cursor
    @property
    def _page(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def move_cursor(self, row: int) -> None:
        if not self._order:
            return
        before, scrolled = self.cursor_row, self.scroll_offset
        self.cursor_row = max(0, min(row, len(self._order) - 1))
        self._scroll_cursor_visible()
        if self.scroll_offset == scrolled and self.is_mounted:
            self._refresh_row(before)  # only the two rows whose cursor style changed
            self._refresh_row(self.cursor_row)
        else:
            self.refresh()
        self._announce()

    def on_resize(self) -> None:
        self._scroll_cursor_visible()  # a shorter table: the cursor's row stays on screen

    def _refresh_row(self, index: int) -> None:
        y = index - int(self.scroll_y) + 1  # line 0 is the header
        if 1 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _announce(self) -> None:
        key = self.cursor_key
        if key != self._highlighted:
            self._highlighted = key
            self.post_message(self.RowHighlighted(self, key, self.cursor_row))

    def _scroll_cursor_visible(self) -> None:
        if not self.is_mounted:
            return
        top, page = int(self.scroll_y), self._page
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + page:
            self.scroll_to(y=self.cursor_row - page + 1, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - self._page)

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + self._page)

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self._order) - 1)

    def action_column_left(self) -> None:
        self._move_column(-1)

    def action_column_right(self) -> None:
        self._move_column(1)

    def _move_column(self, step: int) -> None:
        shown = self._shown
        pos = shown.index(self.cursor_column) if self.cursor_column in shown else 0
        pos = max(0, min(pos + step, len(shown) - 1))
        self.cursor_column = shown[pos]
        start = self._column_offset(pos)
        end = start + self._width(self.cursor_column) + 2 * PAD
        width = self.scrollable_content_region.width
        if start < self.scroll_x:
            self.scroll_to(x=start, animate=False, immediate=True)
        elif end > self.scroll_x + width:
            self.scroll_to(x=end - width, animate=False, immediate=True)
        self.refresh()

    def action_select_cursor(self) -> None:
        key = self.cursor_key
        if key is not None:
            self.post_message(self.RowSelected(self, key, self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        if event.y < 1:
            return
        row = int(self.scroll_y) + event.y - 1
        if 0 <= row < len(self._order):
            self.move_cursor(row)
            if event.chain >= 2:
                self.action_select_cursor()

    # ------------------------------------------------------------ layout
    def _mark_width(self) -> int:
        return 0 if self.marks is None else MARK_WIDTH + 2 * PAD

    def _width(self, i: int) -> int:
        """The width column `i` is drawn at: its fitted width, or less when squeezed."""
        return self._squeezed.get(i, self._widths[i])

    def _column_offset(self, pos: int) -> int:
        """Where the `pos`-th shown column starts."""
        return self._mark_width() + sum(self._width(i) + 2 * PAD for i in self._shown[:pos])

    def _update_virtual_size(self) -> None:
        width = self._column_offset(len(self._shown))
        self.virtual_size = Size(width, len(self._order) + 1)

    def _choose_columns(self, width: int) -> None:
        """Columns by priority (then position) while they fit `width`; priority 0 always; the
        first priority-1 column that doesn't fit whole is cut to the space left."""
        squeezed: dict[int, int] = {}
        if self._wide or width <= 0:
            shown = list(range(len(self.columns)))
        else:
            used = self._mark_width()
            keep = set()
            for i in sorted(range(len(self.columns)), key=lambda i: (self.priorities[i], i)):
                w = self._widths[i] + 2 * PAD
                # A column that doesn't fit is skipped, not the end: a narrower, less important
                # one after it may still fit.
                if self.priorities[i] == 0 or used + w <= width:
                    keep.add(i)
                    used += w
                elif self.priorities[i] == 1 and not squeezed and width - used - 2 * PAD >= SQUEEZE_MIN:
                    # One long reason must not cost the whole column at 80 columns (k9s cuts a
                    # cell short; it does not drop the column the row needs).
                    squeezed[i] = width - used - 2 * PAD
                    keep.add(i)
                    used = width
            shown = sorted(keep)
        if shown != self._shown or squeezed != self._squeezed:
            self._shown = shown
            self._squeezed = squeezed
            self._strips.clear()
            self._update_virtual_size()
        hidden = tuple(c for i, c in enumerate(self.columns) if i not in shown)
        if hidden != self._hidden:
            self._hidden = hidden
            # Not posted from here: drawing runs in the screen's context, and a message whose
            # sender is the parent stops bubbling there.
            self.call_later(self._announce_hidden)

    def _announce_hidden(self) -> None:
        self.post_message(self.ColumnsHidden(self, self._hidden))

    def _fit_widths(self, top: int, height: int) -> bool:
        """Widen columns for the rows about to be drawn (widths only grow, so rows don't jump)."""
        widths = list(self._widths)
        for rid in self._order[top: top + height]:
            for i, c in enumerate(self._cells_of(rid) or ()):
                if i < len(widths) and c.cell_len > widths[i]:
                    widths[i] = min(c.cell_len, self.max_column_width)
        if widths != self._widths:
            self._widths = widths
            self._strips.clear()
            self._update_virtual_size()
            return True
        return False

    def render_lines(self, crop: Region) -> list[Strip]:
        shown = self._shown
        widened = self._fit_widths(int(self.scroll_y), self.scrollable_content_region.height)
        self._choose_columns(self.scrollable_content_region.width)
        if widened or shown != self._shown:
            crop = Region(0, 0, self.size.width, self.size.height)  # every line moves, not just these
        # Styles and geometry once per frame, not per line (resolving a rich style walks the DOM).
        base = self.rich_style
        self._frame = (base, base + self.get_component_rich_style("vtable--cursor"),
                       base + self.get_component_rich_style("vtable--even-row"),
                       self.scroll_offset, self.scrollable_content_region.width)
        try:
            return super().render_lines(crop)
        finally:
            self._frame = None
            if self._after_paint:
                # Messages to the table: handled once this frame is done.
                callbacks, self._after_paint = self._after_paint, []
                for callback in callbacks:
                    self.call_later(callback)

    # ------------------------------------------------------------ drawing
    def render_line(self, y: int) -> Strip:
        frame = self._frame
        if frame is None:
            base = self.rich_style
            frame = (base, base + self.get_component_rich_style("vtable--cursor"),
                     base + self.get_component_rich_style("vtable--even-row"),
                     self.scroll_offset, self.scrollable_content_region.width)
        base, cursor_style, even_style, (scroll_x, scroll_y), width = frame
        if y == 0:
            return self._header().crop_extend(scroll_x, scroll_x + width, base)
        index = scroll_y + y - 1
        if not self._order:
            if y == 1:
                style = base + self.get_component_rich_style("vtable--empty")
                return Strip([*Text(f" {self.empty_text}", style=style).render(self.app.console)]) \
                    .crop_extend(0, width, base)
            return Strip.blank(width, base)
        if index >= len(self._order):
            return Strip.blank(width, base)
        self.lines_rendered += 1
        rid = self._order[index]
        style = base
        if index == self.cursor_row:
            style = cursor_style
        elif self.zebra_stripes and index % 2:
            style = even_style
        return self._row_strip(rid).apply_style(style).crop_extend(scroll_x, scroll_x + width, style)

    def _header(self) -> Strip:
        style = self.get_component_rich_style("vtable--header")
        cursor = self.get_component_rich_style("vtable--header-cursor")
        line = Text(" " * self._mark_width(), style=style, no_wrap=True, end="")
        for i in self._shown:
            label, w = self.columns[i], self._width(i)
            cell = fit(Text(label), w, self.ellipsis)
            line.append(" " * PAD + cell.plain.ljust(w) + " " * PAD,
                        cursor if i == self.cursor_column and self.has_focus else style)
        return Strip(list(line.render(self.app.console)))

    def _row_strip(self, rid: str) -> Strip:
        marked = self.marks is not None and rid in self.marks
        cached = self._strips.get(rid)
        if cached is not None and cached[0] == marked:
            return cached[1]
        strip = Strip(self._row_segments(rid, marked))
        if len(self._strips) > STRIP_CACHE:  # scrolled through a long table: start over
            self._strips.clear()
        self._strips[rid] = (marked, strip)
        return strip

    def _row_segments(self, rid: str, marked: bool) -> list[Segment]:
        """A row as segments: padding runs unstyled, each cell in its own style.

        Built directly rather than by assembling a Text and rendering it (rich's span pass):
        a screenful of new rows (a sort, a filter, a page) is most of a key's frame otherwise.
        Cells with spans of their own still go through rich."""
        out: list[Segment] = []
        pad = ""  # unstyled text waiting to be emitted (padding, unstyled cells)
        if self.marks is not None:
            out.append(Segment(" " * PAD + ("*" if marked else " ") + " " * PAD, _BOLD))
        cells = self._cells_of(rid) or ()
        for i in self._shown:
            if i >= len(cells):
                break
            c, w = cells[i], self._width(i)
            cell = fit(c, w, self.ellipsis)
            pad += " " * PAD
            if cell.spans:
                line = Text(no_wrap=True, end="")
                line.append_text(cell)
                for seg in line.render(self.app.console):
                    if seg.style:
                        if pad:
                            out.append(Segment(pad, _NULL))
                        out.append(seg)
                        pad = ""
                    else:  # unstyled runs join the padding, as in one rendered line
                        pad += seg.text
            else:
                style = self._style_of(cell.style)
                if style is _NULL or not cell.plain:
                    pad += cell.plain
                else:
                    if pad:
                        out.append(Segment(pad, _NULL))
                    out.append(Segment(cell.plain, style))
                    pad = ""
            pad += " " * (w - cell.cell_len + PAD)
        if pad:
            out.append(Segment(pad, _NULL))
        return out

    def _style_of(self, style: str | Style) -> Style:
        if isinstance(style, Style):
            return style or _NULL
        found = self._styles.get(style)
        if found is None:
            found = self._styles[style] = (self.app.console.get_style(style, default=_NULL) or _NULL) \
                if style else _NULL
        return found
