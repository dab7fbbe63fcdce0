"""Line charts over time rendered by plotext into Rich `Text` sized to a region.

Used for GPUs by model over time and pending/admitted workloads per ClusterQueue over time.
Series are (epoch seconds, value) points; the x axis is seconds, minutes or hours (by the span) before the newest point, so the
chart reads the same whatever the clock. Written against the plotext 6 API (`plotext.figure`).
plotext keeps one global figure, so rendering is serialised with a lock (the console renders
from worker threads). Backgrounds are dropped so the chart sits on the theme's own background.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from rich.style import Style
from rich.text import Span, Text

from kueuetop.tui.glyphs import UNICODE, Glyphs
from kueuetop.tui.themes import KueuetopTheme
from kueuetop.views.safe_text import clean

Series = Mapping[str, Sequence[tuple[float, float]]]

_LOCK = threading.Lock()
_MARKERS = "*o+x#%"
MIN_WIDTH, MIN_HEIGHT = 20, 6  # below this plotext's axes and labels leave no plot area

# --ascii: plotext has no ASCII line style, so its box drawing is translated afterwards.
_ASCII_BOX = str.maketrans({
    "┌": "+", "┐": "+", "└": "+", "┘": "+", "─": "-", "│": "|", "┤": "+", "├": "+", "┬": "+",
    "┴": "+", "┼": "+", "╭": "+", "╮": "+", "╰": "+", "╯": "+",
})


def line_chart(series: Series, width: int, height: int, *, title: str = "", theme: KueuetopTheme | None = None,
               glyphs: Glyphs = UNICODE, y_label: str = "") -> Text:
    """Exactly `height` lines of at most `width` cells; empty or too-small → a 'no data' box."""
    width, height = max(0, width), max(0, height)
    pts = {clean(name, limit=40): sorted(p for p in points if _finite(p)) for name, points in series.items()}
    pts = {n: p for n, p in pts.items() if p}
    if not pts or width < MIN_WIDTH or height < MIN_HEIGHT:
        why = "no data" if not pts else "too small"
        return _placeholder(f"{clean(title)}: {why}" if title else why, width, height)
    newest = max(p[-1][0] for p in pts.values())
    unit, per = _time_unit(newest - min(p[0][0] for p in pts.values()))
    colourless = theme is not None and theme.shaded
    with _LOCK:
        import plotext  # imported late: plotext builds its docs registry on import (~100 ms)

        f = plotext.figure
        f.clear()
        f.plot_size(width, height)
        f.theme("colorless" if colourless else "default")
        f.canvas("default")
        for i, (name, p) in enumerate(pts.items()):
            # Without colour, series must differ by marker or the legend can't tell them apart.
            marker = "hd" if glyphs.unicode and not colourless else _MARKERS[i % len(_MARKERS)]
            xs = [(t - newest) / per for t, _ in p]
            ys = [v for _, v in p]
            f.draw(f.signal(xs, ys, marker=marker).lines().label(name))
        head = clean(title, limit=width)
        if y_label:
            head = f"{head} ({clean(y_label, limit=20)}, x: {unit} ago)" if head else y_label
        if head:
            f.title(head)
        raw = str(f.build())
        f.clear()
    if not glyphs.unicode:
        raw = raw.translate(_ASCII_BOX)
    text = _without_backgrounds(Text.from_ansi(raw, no_wrap=True))
    return _fit(text, width, height)


def _time_unit(span: float) -> tuple[str, float]:
    """Axis unit for a history `span` seconds long: whole numbers on the ticks, whatever the age."""
    if span < 120:
        return "seconds", 1.0
    if span < 2 * 3600:
        return "minutes", 60.0
    return "hours", 3600.0


def _finite(p: tuple[float, float]) -> bool:
    t, v = p
    return v is not None and t - t == 0 and v - v == 0  # drops NaN / inf: plotext can't scale them


def _without_backgrounds(text: Text) -> Text:
    spans = []
    for s in text.spans:
        st = s.style if isinstance(s.style, Style) else Style.parse(str(s.style))
        if st.color is None and not st.bold:
            continue
        spans.append(Span(s.start, s.end, Style(color=st.color, bold=st.bold)))
    return Text(text.plain, spans=spans, no_wrap=True, overflow="crop")


def _fit(text: Text, width: int, height: int) -> Text:
    lines = text.split("\n", allow_blank=True)[:height]
    out = Text(no_wrap=True, overflow="crop")
    for i in range(height):
        line = lines[i] if i < len(lines) else Text("")
        line.truncate(width)
        out.append_text(line)
        if i < height - 1:
            out.append("\n")
    return out


def _placeholder(message: str, width: int, height: int) -> Text:
    if width <= 0 or height <= 0:
        return Text("")
    rows = [""] * height
    msg = message[:width]
    rows[height // 2] = msg.center(width).rstrip()
    return Text("\n".join(rows), style=Style(dim=True), no_wrap=True, overflow="crop")


def gpus_by_model(history: Mapping[str, Sequence[tuple[float, float]]], width: int, height: int,
                  **kw: object) -> Text:
    """GPU count per model over time (the GPU dashboard's 'number and type of GPUs' panel)."""
    return line_chart(history, width, height, title="GPUs by model", y_label="GPUs", **kw)  # type: ignore[arg-type]


def queue_workloads(pending: Sequence[tuple[float, float]], admitted: Sequence[tuple[float, float]],
                    cluster_queue: str, width: int, height: int, **kw: object) -> Text:
    """Pending and admitted workloads of one ClusterQueue over time."""
    return line_chart({"pending": pending, "admitted": admitted}, width, height,
                      title=f"cq/{clean(cluster_queue, limit=60)}", y_label="workloads", **kw)  # type: ignore[arg-type]
