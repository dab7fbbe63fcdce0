"""The replay's timeline bar: the recording from start to end, the triage board's problems
marked along it, and where the console is now. Pure text; the console draws it (tui/replay_app.py).

One cell per slice of the recording; a cell's mark is the most severe problem the triage board
(views/triage.py) showed at the slice's moment: `█` broken, `▆` admitted but not running, `▄`
waiting too long, `▂` churn or waste, `·` nothing. The cell under the cursor is drawn reversed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from kueuetop.views.triage import BROKEN, CHURN, NOT_RUNNING, WAITING

MARKS = ((BROKEN, "█"), (NOT_RUNNING, "▆"), (WAITING, "▄"), (CHURN, "▂"))
QUIET = "·"
ASCII_MARKS = {"█": "#", "▆": "!", "▄": "w", "▂": "-", QUIET: "."}


def mark_of(severity: int | None) -> str:
    """The cell for the most severe problem of a moment (None: the board was empty)."""
    if severity is None:
        return QUIET
    for least, mark in MARKS:
        if severity >= least:
            return mark
    return "▂"


def bucket_times(start: float, end: float, cells: int) -> list[float]:
    """The moment each cell stands for: the end of its slice."""
    span = max(0.0, end - start)
    return [start + span * (i + 1) / cells for i in range(cells)] if cells > 0 else []


def cell_of(t: float, start: float, end: float, cells: int) -> int:
    if cells <= 0 or end <= start:
        return 0
    return min(cells - 1, max(0, int((t - start) / (end - start) * cells)))


def resample(marks: Sequence[str], cells: int) -> str:
    """`marks` (one per computed slice) shown in `cells` cells: the most severe mark of the slices
    each cell covers."""
    if not marks or cells <= 0:
        return QUIET * max(0, cells)
    order = {m: i for i, (_, m) in enumerate(MARKS)}
    out = []
    n = len(marks)
    for c in range(cells):
        part = marks[c * n // cells: max(c * n // cells + 1, (c + 1) * n // cells)]
        out.append(min(part, key=lambda m: order.get(m, len(MARKS))))
    return "".join(out)


def clock_text(t: float, with_date: bool = False) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S", time.localtime(t))


def timeline_line(marks: Sequence[str], start: float, end: float, at: float, width: int,
                  playing: bool = False, ascii_only: bool = False) -> tuple[str, int]:
    """The bar's text and the index of the cursor cell in it: `HH:MM:SS ▶ [marks] HH:MM:SS`."""
    head = f"{clock_text(at)} {'>' if ascii_only else '▶'} " if playing else f"{clock_text(at)} {'=' if ascii_only else '⏸'} "
    tail = f" {clock_text(end)}"
    left = f"{clock_text(start)} "
    cells = max(1, width - len(head) - len(left) - len(tail) - 2)
    bar = resample(marks, cells)
    if ascii_only:
        bar = "".join(ASCII_MARKS.get(m, m) for m in bar)
    cursor = cell_of(at, start, end, cells)
    text = f"{head}{left}[{bar}]{tail}"
    return text, len(head) + len(left) + 1 + cursor
