"""Line charts over time rendered by plotext into Rich `Text` sized to a region.

Used for GPUs by model over time and pending/admitted workloads per ClusterQueue over time.
Series are (epoch seconds, value) points; the x axis is time before the newest point ("-5m …
now"), so the chart reads the same whatever the clock; the y axis starts at 0 (whole numbers for
counts, 0–100 for percentages); the caption sits above the plot and the legend under it (or
beside a short caption), neither over the data. Written against the plotext 6 API (`plotext.figure`).
plotext keeps one global figure, so rendering is serialised with a lock (the console renders
from worker threads). Backgrounds are dropped so the chart sits on the theme's own background.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence

from rich.color import Color
from rich.style import Style
from rich.text import Span, Text

from kueuetop.tui.glyphs import UNICODE, Glyphs
from kueuetop.tui.themes import KueuetopTheme
from kueuetop.views.safe_text import clean

Series = Mapping[str, Sequence[tuple[float, float]]]

_LOCK = threading.Lock()
_MARKERS = "*o+x#%"
# plotext's default series colours, in order (ANSI 256 codes: defaults.pixel_sequence), for the legend.
_SERIES_COLOURS = (12, 10, 9, 14, 13, 11, 0, 15, 8, 7, 1, 2, 3, 4, 5, 6)
MIN_WIDTH, MIN_HEIGHT = 20, 6
COUNT, PERCENT = "count", "percent"  # what the y axis shows (line_chart's y_kind)
MIN_SPAN = 60.0  # seconds: the shortest time axis  # below this plotext's axes and labels leave no plot area

# --ascii: plotext has no ASCII line style, so its box drawing is translated afterwards.
_ASCII_BOX = str.maketrans({
    "┌": "+", "┐": "+", "└": "+", "┘": "+", "─": "-", "│": "|", "┤": "+", "├": "+", "┬": "+",
    "┴": "+", "┼": "+", "╭": "+", "╮": "+", "╰": "+", "╯": "+",
})


def line_chart(series: Series, width: int, height: int, *, title: str = "", theme: KueuetopTheme | None = None,
               glyphs: Glyphs = UNICODE, y_label: str = "", y_kind: str = COUNT) -> Text:
    """Exactly `height` lines of at most `width` cells; empty or too-small → a 'no data' box.

    The caption (title and what the y axis counts) is wrapped, never cut; the legend is a line
    under the plot (or beside a short caption), never a box over the data. The x axis is time before the newest point
    ("-5m … now"); the y axis starts at 0, with whole-number ticks for counts (`y_kind`
    COUNT, 0…1 when every value is 0) and 0–100 for PERCENT."""
    width, height = max(0, width), max(0, height)
    pts = {clean(name, limit=40): sorted(p for p in points if _finite(p)) for name, points in series.items()}
    pts = {n: p for n, p in pts.items() if p}
    colourless = theme is not None and theme.shaded
    legend = _legend(list(pts), width, glyphs, colourless) if pts else []
    name = clean(title, limit=300)
    unit = clean(y_label, limit=20)
    # The caption names the chart and what the y axis counts; in a cramped region the unit goes
    # first (the legend says what the lines are), the name is never cut.
    for head in ([f"{name} ({unit})" if name else unit] if unit else []) + [name]:
        header, below = _header(head, legend, width)
        plot_height = height - len(header) - len(below)
        if plot_height >= MIN_HEIGHT:
            break
    if not pts or width < MIN_WIDTH or plot_height < MIN_HEIGHT:
        why = "no data" if not pts else "too small"
        return _placeholder(f"{clean(title)}: {why}" if title else why, width, height)
    newest = max(p[-1][0] for p in pts.values())
    # At least a minute of axis: a history of one sample reads "-1m … now", not "-1s now".
    span = max(newest - min(p[0][0] for p in pts.values()), MIN_SPAN)
    values = [v for p in pts.values() for _, v in p]
    with _LOCK:
        import plotext  # imported late: plotext builds its docs registry on import (~100 ms)

        # The chart is sized to its region, not to the terminal plotext would otherwise clamp it
        # to (a pipe or a test reports 80 columns, whatever the console's size).
        plotext.terminal.limit(False, False)
        f = plotext.figure
        f.clear()
        f.plot_size(width, plot_height)
        f.theme("colorless" if colourless else "default")
        f.canvas("default")
        f.legend(False)
        for i, p in enumerate(pts.values()):
            # Without colour, series must differ by marker or the legend can't tell them apart.
            marker = "hd" if glyphs.unicode and not colourless else _MARKERS[i % len(_MARKERS)]
            f.draw(f.signal([t - newest for t, _ in p], [v for _, v in p], marker=marker).lines())
        xs, xlabels = time_ticks(span, max(2, (width - 8) // 12))  # labels up to "-2h45m" and a gap
        f.ruler("x").lim(-span, 0)
        f.ruler("x").ticks(xs, xlabels)
        ys, ylabels = value_ticks(values, y_kind, max(2, plot_height // 2))
        f.ruler("y").lim(ys[0], ys[-1])
        f.ruler("y").ticks(ys, ylabels)
        raw = str(f.build())
        f.clear()
    if not glyphs.unicode:
        raw = raw.translate(_ASCII_BOX)
    plot = _fit(_without_backgrounds(Text.from_ansi(raw, no_wrap=True)), width, plot_height)
    out = Text(no_wrap=True, overflow="crop")
    for line in header:
        out.append_text(line)
        out.append("\n")
    out.append_text(plot)
    for line in below:
        out.append("\n")
        out.append_text(line)
    return out


def _header(head: str, legend: list[Text], width: int) -> tuple[list[Text], list[Text]]:
    """(lines above the plot, lines under it): the caption, wrapped, above; the legend under
    the plot, or beside a one-line caption when both fit on that line."""
    caption = wrap_words(head, width) if head else []
    if len(caption) <= 1 and len(legend) == 1 and len(caption[0] if caption else "") + 3 + len(legend[0].plain) <= width:
        line = Text(caption[0] if caption else "", style=Style(bold=True))
        if caption:
            line.append("   ")
        line.append_text(legend[0])
        return [line], []
    return [Text(c.center(width).rstrip(), style=Style(bold=True)) for c in caption], legend


# Tick steps for the time axis, in seconds: each a whole number of the unit its labels use.
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400)


def time_ticks(span: float, most: int) -> tuple[list[float], list[str]]:
    """Ticks (seconds before now, ≤ 0) and labels ("-5m", "-1h30m", "now") for a time axis
    `span` seconds long, at most `most` of them, on a whole-number step."""
    most = max(2, most)
    fitting = [s for s in _TIME_STEPS if s <= span]  # steps that put a tick before "now"
    step = next((s for s in fitting if span / s <= most - 1), fitting[-1] if fitting else _TIME_STEPS[0])
    while span / step > most - 1 and step * 2 <= span:
        step *= 2
    n = int(span // step)
    ticks = [-k * step for k in range(n, -1, -1)]
    return [float(t) for t in ticks], [_ago(-t) for t in ticks]


def _ago(seconds: float) -> str:
    s = round(seconds)
    if s == 0:
        return "now"
    if s < 60:
        return f"-{s}s"
    if s < 3600:
        m, r = divmod(s, 60)
        return f"-{m}m{r}s" if r else f"-{m}m"
    if s < 86400:
        h, r = divmod(s // 60, 60)
        return f"-{h}h{r}m" if r else f"-{h}h"
    d, r = divmod(s // 3600, 24)
    return f"-{d}d{r}h" if r else f"-{d}d"


def value_ticks(values: Sequence[float], kind: str, most: int) -> tuple[list[float], list[str]]:
    """y ticks from 0: 0–100 for percentages; whole numbers on a 1-2-5 step for counts (0–1
    when every value is 0, so a flat zero line is not drawn on a -1…1 axis)."""
    if kind == PERCENT:
        ticks = [0, 50, 100] if most < 5 else [0, 25, 50, 75, 100]
        return [float(t) for t in ticks], [f"{t}%" for t in ticks]
    top = max([0.0, *values])
    low = min([0.0, *values])
    if top <= low:
        top = low + 1
    raw = (top - low) / max(1, most - 1)
    step = 1
    while step < raw:
        for m in (2, 5, 10):
            if step * m >= raw or m == 10:
                step = step * m if step * m >= raw else step * 10
                break
    first = math.floor(low / step) * step
    last = math.ceil(top / step) * step
    ticks = list(range(int(first), int(last) + 1, step))
    return [float(t) for t in ticks], [str(t) for t in ticks]


def wrap_words(text: str, width: int) -> list[str]:
    """Words onto lines of at most `width` cells (a word longer than a line is split, not cut)."""
    if width <= 0:
        return []
    lines: list[str] = []
    for word in text.split():
        while len(word) > width:
            lines.append(word[:width])
            word = word[width:]
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def _legend(names: Sequence[str], width: int, glyphs: Glyphs, colourless: bool) -> list[Text]:
    """One entry per series (its colour, or its marker without colour), wrapped onto lines."""
    lines: list[Text] = []
    line = Text(no_wrap=True, overflow="crop")
    for i, name in enumerate(names):
        if colourless or not glyphs.unicode:
            entry = Text(f"{_MARKERS[i % len(_MARKERS)]} {name}")
        else:
            entry = Text("━━", style=Style(color=Color.from_ansi(_SERIES_COLOURS[i % len(_SERIES_COLOURS)])))
            entry.append(f" {name}")
        pieces = wrap_words(entry.plain, width)
        if len(pieces) > 1:  # a name longer than the line: on lines of its own
            if line.plain:
                lines.append(line)
            lines.extend(Text(p) for p in pieces)
            line = Text(no_wrap=True, overflow="crop")
            continue
        if line.plain and len(line.plain) + 3 + len(entry.plain) > width:
            lines.append(line)
            line = Text(no_wrap=True, overflow="crop")
        if line.plain:
            line.append("   ")
        line.append_text(entry)
    if line.plain:
        lines.append(line)
    return lines


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
    lines = wrap_words(message, width)[:height]  # wrapped, not cut (cut only when taller than the region)
    top = max(0, (height - len(lines)) // 2)
    for i, line in enumerate(lines):
        rows[top + i] = line.center(width).rstrip()
    return Text("\n".join(rows), style=Style(dim=True), no_wrap=True, overflow="crop")


def gpus_by_model(history: Mapping[str, Sequence[tuple[float, float]]], width: int, height: int,
                  **kw: object) -> Text:
    """GPU count per model over time (the GPU dashboard's 'number and type of GPUs' panel)."""
    return line_chart(history, width, height, title="GPUs by model", y_label="GPUs", y_kind=COUNT,
                      **kw)  # type: ignore[arg-type]


def queue_workloads(pending: Sequence[tuple[float, float]], admitted: Sequence[tuple[float, float]],
                    cluster_queue: str, width: int, height: int, **kw: object) -> Text:
    """Pending and admitted workloads of one ClusterQueue over time."""
    return line_chart({"pending": pending, "admitted": admitted}, width, height,
                      title=f"cq/{clean(cluster_queue, limit=253)}", y_label="workloads", y_kind=COUNT,
                      **kw)  # type: ignore[arg-type]
