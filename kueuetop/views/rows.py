"""What a table view shows, as data: one `Row` per object, built from the store only.

Views turn store objects into rows here, away from Textual, so filters, sorts and the cells
themselves can be tested without an app. Every cluster string goes through `clean` and ends up
in a plain `Text` (never markup): a condition message can't restyle or rewrite the terminal.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from kueuetop.views.ages import age_text
from kueuetop.views.safe_text import clean


@dataclass(frozen=True, slots=True)
class Row:
    key: Hashable
    cells: tuple[Text, ...]
    # Typed sort values by sort name ("name", "age", "status", "namespace", "priority", "position").
    sort: Mapping[str, Any] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)  # for `/-l key=value`
    state: str = ""  # lower-case state words for `/state:pending`, space separated
    _text: str | None = field(default=None, compare=False, repr=False)
    _lower: str | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        """What `/regex` searches: every visible cell (joined once: filters run over every row)."""
        if self._text is None:
            object.__setattr__(self, "_text", " ".join(c.plain for c in self.cells))
        return self._text  # type: ignore[return-value]

    @property
    def lower(self) -> str:
        """`text` lower-cased, kept: a filter of one plain word is a substring test on it."""
        if self._lower is None:
            object.__setattr__(self, "_lower", self.text.lower())
        return self._lower  # type: ignore[return-value]


# Cells by (type, value, style): most cells repeat (namespaces, queues, states, reasons, ages), and
# a rebuilt row keeps most of its values, so building a row mostly looks cells up instead of
# cleaning strings and making Text objects; the rows of a big table also share them (memory, and
# fewer objects for the garbage collector to walk). Cells are therefore shared: never mutate one
# (`VirtualTable.fit` copies before cutting). Bounded: when full it starts over.
_CELLS: dict[tuple[type, object, object], Text] = {}
CELL_CACHE_MAX = 200_000


def cell(value: object, style: str = "") -> Text:
    """A table cell from untrusted data: cleaned, plain (no markup), one line (shared: read only)."""
    if value is None:
        value = "?"
    key = (value.__class__, value, style)
    try:
        found = _CELLS.get(key)
    except TypeError:  # an unhashable value: not cached
        return _make_cell(value, style)
    if found is None:
        if len(_CELLS) >= CELL_CACHE_MAX:
            _CELLS.clear()
        found = _CELLS[key] = _make_cell(value, style)
    return found


def _make_cell(value: object, style: str) -> Text:
    return Text(clean(value, 512).replace("\n", " "), style=style, no_wrap=True, overflow="ellipsis")


def same(a: tuple[Text, ...], b: tuple[Text, ...]) -> bool:
    """Cells equal as drawn (Text.__eq__ ignores the base style)."""
    return len(a) == len(b) and all(x is y or (x.plain == y.plain and x.style == y.style and x.spans == y.spans)
                                    for x, y in zip(a, b, strict=True))


age = age_text  # k9s-style compact age: 45s, 12m, 3h4m, 2d5h
