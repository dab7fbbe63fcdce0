"""GPU heatmaps as Rich `Text`: the fleet (one cell per GPU) and utilization over time.

Pure functions: samples and a size in, text out; no clock, no I/O, deterministic. The fleet map
groups nodes by pool and packs two pixel rows into each character line with `▀` (foreground =
upper pixel, background = lower pixel); with `--ascii` or a shaded (no-colour) theme it uses one
row per line and shade glyphs. When the fleet does not fit, several GPUs share a cell (mean or
max, named in the legend), and cell sizes follow node boundaries where they can. A GPU without a
current value (stale series, N/A sentinel) is drawn as stale, never as 0 %. Given `now`, a pool
whose samples were not all read lately (a budgeted scrape reads nodes in turn) says how old they
are in its header ("read 4s–6m ago").
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from rich.style import Style
from rich.text import Span, Text

from kueuetop.kueue.gpu import GpuSample
from kueuetop.store.history import util_buckets
from kueuetop.tui.charts import wrap_words
from kueuetop.tui.glyphs import UNICODE, Glyphs
from kueuetop.tui.themes import KueuetopTheme
from kueuetop.views.safe_text import clean

LEVELS = 32  # colour steps the scale is quantised to: finer than the eye tells apart in a cell
STALE, IDLE, EMPTY = -1, -2, -3  # pixel codes besides levels 0..LEVELS-1
NO_POOL = "(no pool)"
AGE_SHOWN_OVER = 30.0  # seconds: younger samples are as fresh as a 15–30 s DCGM interval allows


@dataclass(frozen=True, slots=True)
class Metric:
    key: str
    label: str
    unit: str
    lo: float  # value drawn with the first scale colour
    hi: float  # value drawn with the last one


METRICS: Mapping[str, Metric] = {
    "util": Metric("util", "GPU util", "%", 0.0, 100.0),
    "mem": Metric("mem", "GPU memory", "%", 0.0, 100.0),
    "temp": Metric("temp", "GPU temp", "°C", 30.0, 90.0),  # idle board ~30 °C, throttling from ~85 °C
    "power": Metric("power", "GPU power", "W", 0.0, 700.0),  # 700 W: H100 SXM board limit
}


@dataclass(frozen=True, slots=True)
class _PoolLayout:
    name: str
    first_line: int  # first pixel line (after the pool's header line)
    lines: int
    row_width: int  # cells per pixel row
    node_gap: bool  # one column between nodes (k = 1 layout)
    slot: int  # cells per node incl. the gap (node_gap layout)
    keys: tuple[GpuSample, ...]  # the pool's GPUs in drawing order
    node_starts: tuple[int, ...]  # index in keys where each node begins (node_gap layout)


@dataclass(frozen=True, slots=True)
class FleetHeatmap:
    text: Text
    gpus_per_cell: int
    aggregate: str  # "mean" | "max"
    rows_per_line: int  # 2 with half blocks, 1 with glyphs
    pools: tuple[_PoolLayout, ...]
    clipped: bool  # even the coarsest packing did not fit: pools at the bottom were cut

    def gpus_at(self, x: int, line: int) -> tuple[tuple[str, str], ...]:
        """The GPUs (node, gpu) a character cell shows; both pixels of a half-block line."""
        for p in self.pools:
            if not p.first_line <= line < p.first_line + p.lines:
                continue
            out: list[tuple[str, str]] = []
            for sub in range(self.rows_per_line):
                row = (line - p.first_line) * self.rows_per_line + sub
                if p.node_gap:
                    node, col = divmod(x, p.slot)
                    ni = row * (p.row_width // p.slot) + node
                    if x >= (p.row_width // p.slot) * p.slot or ni >= len(p.node_starts):
                        continue
                    start = p.node_starts[ni]
                    end = p.node_starts[ni + 1] if ni + 1 < len(p.node_starts) else len(p.keys)
                    if start + col < end:
                        out.append(p.keys[start + col].key)
                elif x < p.row_width:
                    cell = row * p.row_width + x
                    out.extend(g.key for g in p.keys[cell * self.gpus_per_cell:(cell + 1) * self.gpus_per_cell])
            return tuple(out)
        return ()


_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=1 << 16)  # node names repeat frame after frame
def _natural(s: str) -> tuple[object, ...]:
    # node-2 before node-10, GPU "2" before "10"; (int, str) pairs keep mixed keys comparable
    return tuple((int(t), "") if t.isdigit() else (-1, t) for t in _DIGITS.split(s))


def normalise(s: GpuSample, metric: Metric) -> float | None:
    """The sample's value for `metric` mapped to 0..1; None when there is no current value."""
    if s.stale:
        return None
    if metric.key == "util":
        v = s.util
    elif metric.key == "mem":
        if s.mem_used_mib is None or not s.mem_total_mib:
            return None
        v = 100.0 * s.mem_used_mib / s.mem_total_mib
    elif metric.key == "temp":
        v = s.temp_c
    else:
        v = s.power_w
    if v is None or v - v != 0:  # NaN / ±inf: sentinel-like, unknown
        return None
    f = (v - metric.lo) / (metric.hi - metric.lo)
    return 0.0 if f < 0.0 else 1.0 if f > 1.0 else f


def _gpu_sort_key(s: GpuSample) -> tuple[int, str]:
    # Length first: "2" before "10" for device indexes, and MIG "0/1" labels in their own order.
    return (len(s.gpu), s.gpu)


def _values(samples: list[GpuSample], m: Metric) -> list[float | None]:
    """`normalise` over a pool; utilization (the default view) inlined: it runs 40,000 times."""
    if m.key != "util":
        return [normalise(s, m) for s in samples]
    lo, hi = m.lo, m.hi
    span = hi - lo
    # `u - u != 0` is true for NaN and ±inf: sentinel-like values are unknown, not 0 % or 100 %.
    return [None if s.stale or (u := s.util) is None or u - u != 0
            else 0.0 if u <= lo else 1.0 if u >= hi else (u - lo) / span
            for s in samples]


def is_idle(s: GpuSample, idle_below: float) -> bool:
    """Allocated to a pod, with a current utilization under the threshold."""
    return bool(s.pod) and not s.stale and s.util is not None and s.util < idle_below


@lru_cache(maxsize=32)
def _levels(scale: tuple[str, ...]) -> tuple[str, ...]:
    """The scale resampled to LEVELS colours by linear RGB interpolation between stops."""
    rgb = [tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)) for c in scale]
    out = []
    for i in range(LEVELS):
        pos = i / (LEVELS - 1) * (len(rgb) - 1)
        lo = min(int(pos), len(rgb) - 2)
        t = pos - lo
        a, b = rgb[lo], rgb[lo + 1]
        out.append("#" + "".join(f"{round(a[j] + (b[j] - a[j]) * t):02x}" for j in range(3)))
    return tuple(out)


def level_colour(theme: KueuetopTheme, fraction: float) -> str:
    """Colour the heatmap gives to a value fraction in 0..1 (for tests and legends)."""
    return _levels(theme.heatmap_scale)[_level(fraction)]


def _level(f: float) -> int:
    return int(f * (LEVELS - 1) + 0.5)


@lru_cache(maxsize=8192)  # ~1,000 fg/bg pairs per scale; building Styles dominates small frames
def _style(fg: str, bg: str | None) -> Style:
    return Style(color=fg, bgcolor=bg)


class _Painter:
    """Turns pixel codes into characters and styles; caches Style objects by code pair."""

    def __init__(self, theme: KueuetopTheme, glyphs: Glyphs) -> None:
        self.half = glyphs.half_block is not None and not theme.shaded
        self.glyphs = glyphs
        self.coloured = not theme.shaded
        self.colours: dict[int, str] = dict(enumerate(_levels(theme.heatmap_scale)))
        self.colours[STALE] = theme.states["stale"]
        self.colours[IDLE] = theme.idle
        self._styles: dict[tuple[int, int], Style | None] = {}
        self.cells: dict[tuple[int, int], tuple[str, Style | None]] = {}
        sh = glyphs.shades
        self._shade = [sh[min(len(sh) - 1, i * len(sh) // LEVELS)] for i in range(LEVELS)]

    @property
    def rows_per_line(self) -> int:
        return 2 if self.half else 1

    def char(self, top: int, bottom: int) -> str:
        if self.half:
            if top == EMPTY:
                return " " if bottom == EMPTY else "▄"
            return "▀"
        if top == EMPTY:
            return " "
        if top == STALE:
            return self.glyphs.stale
        if top == IDLE:
            return self.glyphs.idle
        return self._shade[top]

    def style(self, top: int, bottom: int) -> Style | None:
        key = (top, bottom)
        st = self._styles.get(key, False)
        if st is not False:
            return st  # type: ignore[return-value]
        c = self.colours
        if not self.coloured:
            st = Style(bold=True) if top == IDLE else Style(dim=True) if top == STALE else None
        elif self.half:
            if top == EMPTY:
                st = None if bottom == EMPTY else _style(c[bottom], None)
            else:
                st = _style(c[top], None if bottom == EMPTY else c[bottom])
        else:
            st = None if top == EMPTY else _style(c[top], None)
        self._styles[key] = st
        return st


def _emit_line(painter: _Painter, top: Sequence[int], bottom: Sequence[int] | None, width: int,
               plain: list[str], spans: list[Span], offset: int) -> int:
    """Append one character line; returns the new offset. Runs of one style share a span."""
    cache = painter.cells
    run_start, run_style = 0, None
    chars = []
    nt = len(top)
    nb = 0 if bottom is None else len(bottom)
    for x in range(width):
        key = (top[x] if x < nt else EMPTY, bottom[x] if x < nb else EMPTY)  # type: ignore[index]
        cell = cache.get(key)
        if cell is None:
            cell = cache[key] = (painter.char(*key), painter.style(*key))
        chars.append(cell[0])
        st = cell[1]
        if st is not run_style:
            if run_style is not None:
                spans.append(Span(offset + run_start, offset + x, run_style))
            run_start, run_style = x, st
    if run_style is not None:
        spans.append(Span(offset + run_start, offset + width, run_style))
    line = "".join(chars).rstrip()
    plain.append(line)
    return offset + len(line) + 1


def fleet_heatmap(samples: Iterable[GpuSample], width: int, height: int, *, theme: KueuetopTheme,
                  glyphs: Glyphs = UNICODE, metric: str = "util", aggregate: str = "mean",
                  pool_of: Mapping[str, str] | None = None, idle_below: float = 5.0,
                  now: float | None = None) -> FleetHeatmap:
    """Nodes × GPUs grouped by pool, fitted to width × height character cells.

    Layout: one header line per pool, then its GPUs; the last line is the legend. With one GPU
    per cell, nodes sit side by side with a one-column gap. Otherwise each cell aggregates
    `gpus_per_cell` consecutive GPUs (node-major order) by `aggregate`; the cell count per node
    is kept whole where it can so nodes line up in columns. Idle: at least half the cell's GPUs
    are allocated with utilization under `idle_below` %.
    """
    m = METRICS[metric]
    if aggregate not in ("mean", "max"):
        raise ValueError(f"aggregate must be mean or max, not {aggregate!r}")
    painter = _Painter(theme, glyphs)
    rpl = painter.rows_per_line
    width = max(0, width)

    by_node: dict[str, list[GpuSample]] = {}
    for smp in samples:
        lst = by_node.get(smp.node)
        if lst is None:
            lst = by_node[smp.node] = []
        lst.append(smp)
    pools: dict[str, list[str]] = {}
    pool_get = (pool_of or {}).get
    for node in by_node:
        pools.setdefault(pool_get(node) or NO_POOL, []).append(node)

    groups = []
    for pname in sorted(pools, key=_natural):
        ordered: list[GpuSample] = []
        starts: list[int] = []
        per_node = 1
        for node in sorted(pools[pname], key=_natural):
            starts.append(len(ordered))
            gpus = by_node[node]
            if len(gpus) > 1:
                gpus.sort(key=_gpu_sort_key)
                per_node = max(per_node, len(gpus))
            ordered.extend(gpus)
        vals = _values(ordered, m)
        idles = [1 if s.pod and s.util is not None and s.util < idle_below and not s.stale else 0
                 for s in ordered]
        groups.append((pname, ordered, vals, idles, starts, per_node))

    body = max(0, height - 1)  # the legend takes the last line
    k, gap, clipped = _choose_packing(groups, width, body, rpl)

    plain: list[str] = []
    spans: list[Span] = []
    offset = 0
    line_no = 0
    layouts: list[_PoolLayout] = []
    for pname, keys, vals, idles, starts, per_node in groups:
        if line_no >= body:
            clipped = True
            break
        offset = _header(pname, vals, idles, len(starts), m, width, plain, spans, offset, glyphs,
                         _read_ago(keys, now))
        line_no += 1
        if gap:
            slot = per_node + 1
            per_row = max(1, (width + 1) // slot)
            rows = _node_rows(vals, idles, starts, per_node, per_row)
            row_width = per_row * slot
        else:
            row_width = _row_width(width, per_node, k)
            rows = _cell_rows(vals, idles, k, aggregate, row_width)
        lines = math.ceil(len(rows) / rpl)
        shown = min(lines, body - line_no)
        clipped |= shown < lines
        layouts.append(_PoolLayout(clean(pname), line_no, shown, row_width, gap, per_node + 1,
                                   tuple(keys), tuple(starts)))  # keys: the pool's samples, in order
        for li in range(shown):
            top = rows[li * rpl]
            bottom = rows[li * rpl + 1] if rpl == 2 and li * rpl + 1 < len(rows) else None
            offset = _emit_line(painter, top, bottom, width, plain, spans, offset)
        line_no += shown

    _legend(m, k, aggregate, width, painter, theme, glyphs, clipped, plain, spans, offset)
    text = Text("\n".join(plain), spans=spans, no_wrap=True, overflow="crop")
    return FleetHeatmap(text, k, aggregate, rpl, tuple(layouts), clipped)


def _row_width(width: int, per_node: int, k: int) -> int:
    # Keep a whole number of nodes per row so a node's GPUs stay in the same columns row to row.
    cells_per_node = per_node / k
    if cells_per_node >= 1 and cells_per_node == int(cells_per_node) and width >= cells_per_node:
        return int(width // cells_per_node * cells_per_node)
    return max(1, width)


def _choose_packing(groups: list, width: int, body: int, rpl: int) -> tuple[int, bool, bool]:
    """(GPUs per cell, node-gap layout?, clipped?) — the finest packing whose lines fit."""
    if not groups or width <= 0:
        return 1, False, False

    def lines_needed(k: int, gap: bool) -> int:
        total = 0
        for _, keys, _, _, starts, per_node in groups:
            if gap:
                per_row = max(1, (width + 1) // (per_node + 1))
                rows = math.ceil(len(starts) / per_row)
            else:
                rows = math.ceil(math.ceil(len(keys) / k) / _row_width(width, per_node, k))
            total += 1 + math.ceil(rows / rpl)
        return total

    widest = max(g[5] for g in groups)
    if widest + 1 <= width + 1 and lines_needed(1, True) <= body:
        return 1, True, False
    # Candidates: divisors of a node's GPU count, then whole multiples of it (cells = whole nodes).
    divisors = [d for d in range(1, widest + 1) if widest % d == 0]
    for k in divisors:
        if lines_needed(k, False) <= body:
            return k, False, False
    total_gpus = sum(len(g[1]) for g in groups)
    # Lower bound on k from the pixel area, so the search is short even for tiny windows.
    area = max(1, (body - len(groups)) * rpl * width)
    mult = max(2, math.ceil(total_gpus / area / widest))
    limit = max(mult, math.ceil(total_gpus / widest)) + 1
    for mm in range(mult, limit + 1):
        if lines_needed(widest * mm, False) <= body:
            return widest * mm, False, False
    return widest * limit, False, True


def _code(v: float | None, idle: int) -> int:
    if idle:
        return IDLE
    if v is None:
        return STALE
    return _level(v)


def _node_rows(vals: list, idles: list, starts: list[int], per_node: int, per_row: int) -> list[list[int]]:
    rows: list[list[int]] = []
    n = len(vals)
    for i, st in enumerate(starts):
        if i % per_row == 0:
            rows.append([])
        row = rows[-1]
        if row:
            row.append(EMPTY)  # the gap between nodes
        end = starts[i + 1] if i + 1 < len(starts) else n
        row.extend(_code(vals[j], idles[j]) for j in range(st, end))
        row.extend([EMPTY] * (per_node - (end - st)))
    return rows


def _cell_rows(vals: list, idles: list, k: int, aggregate: str, row_width: int) -> list[list[int]]:
    top = LEVELS - 1
    if k == 1:
        codes = [IDLE if i else STALE if v is None else int(v * top + 0.5) for v, i in zip(vals, idles, strict=True)]
    else:
        # Strided slices zipped together give the k-GPU chunks without slicing per cell.
        n = len(vals)
        full = n - n % k
        chunks: list[tuple] = list(zip(*(vals[i:full:k] for i in range(k)), strict=True))
        idle_n = list(map(sum, zip(*(idles[i:full:k] for i in range(k)), strict=True)))
        if full < n:
            chunks.append(tuple(vals[full:]))
            idle_n.append(sum(idles[full:]))
        agg = max if aggregate == "max" else None
        codes = []
        for chunk, ic in zip(chunks, idle_n, strict=True):
            if ic * 2 >= len(chunk):
                codes.append(IDLE)
                continue
            if None in chunk:
                chunk = [v for v in chunk if v is not None]
                if not chunk:
                    codes.append(STALE)
                    continue
            v = agg(chunk) if agg else sum(chunk) / len(chunk)
            codes.append(int(v * top + 0.5))
    return [codes[i:i + row_width] for i in range(0, len(codes), row_width)]


def _fmt(v: float) -> str:
    return f"{v:.0f}"


def _read_ago(samples: Sequence[GpuSample], now: float | None) -> str:
    """"read 4s–6m ago" when some of the pool's current samples are older than `AGE_SHOWN_OVER`."""
    if now is None:
        return ""
    ats = [s.at for s in samples if s.at and not s.stale]
    if not ats:
        return ""
    oldest, newest = now - min(ats), now - max(ats)
    if oldest <= AGE_SHOWN_OVER:
        return ""
    lo, hi = _age(max(0.0, newest)), _age(oldest)
    return f"read {hi} ago" if lo == hi else f"read {lo}–{hi} ago"


def _header(pool: str, vals: list, idles: list, nodes: int, m: Metric, width: int,
            plain: list[str], spans: list[Span], offset: int, glyphs: Glyphs, read_ago: str = "") -> int:
    known = [v for v in vals if v is not None]
    parts = [f"{nodes} node{'s' * (nodes != 1)}", f"{len(vals)} GPU{'s' * (len(vals) != 1)}"]
    if known:
        parts.append(f"mean {_fmt(m.lo + sum(known) / len(known) * (m.hi - m.lo))}{_unit(m, glyphs)}")
    if any(idles):
        parts.append(f"{sum(idles)} idle")
    stale = len(vals) - len(known)
    if stale:
        parts.append(f"{stale} stale")
    if read_ago:
        parts.append(read_ago if glyphs.unicode else read_ago.replace("–", "-"))
    name = clean(pool, limit=80)  # cluster string: no escapes; Text() never parses markup
    sep = " · " if glyphs.unicode else ", "
    line = _fit(f"{name}  {sep.join(parts)}", width, glyphs.ellipsis)
    spans.append(Span(offset, offset + min(len(name), len(line)), Style(bold=True)))
    plain.append(line)
    return offset + len(line) + 1


def _fit(s: str, width: int, ellipsis: str = "…") -> str:
    if len(s) <= width:
        return s
    return s[:max(0, width - 1)] + ellipsis if width > 0 else ""


def _legend(m: Metric, k: int, aggregate: str, width: int, painter: _Painter, theme: KueuetopTheme,
            glyphs: Glyphs, clipped: bool, plain: list[str], spans: list[Span], offset: int) -> None:
    """The most verbose variant that fits; the packing (GPUs per cell) is kept the longest."""
    unit = _unit(m, glyphs)
    cells = "1 cell = 1 GPU" if k == 1 else f"1 cell = {k} GPUs ({aggregate})"
    short = "1 GPU/cell" if k == 1 else f"{k} GPUs/cell {aggregate}"
    clip = " (clipped)" if clipped else ""
    variants = [(f"{m.label} ", 8, " idle  ", " stale/n/a  ", cells),
                ("", 8, " idle  ", " stale  ", cells),
                ("", 4, " idle ", " n/a ", short),
                ("", 2, "idle ", "n/a ", short)]
    for label, swatches, idle_word, stale_word, packing in variants:
        pieces: list[tuple[str, Style | None]] = [(f"{label}{_fmt(m.lo)}{unit} ", None)]
        for i in range(swatches):
            code = round(i * (LEVELS - 1) / (swatches - 1))
            pieces.append((_swatch(painter, code), painter.style(code, code)))
        pieces += [(f" {_fmt(m.hi)}{unit}  ", None), (_swatch(painter, IDLE), painter.style(IDLE, IDLE)),
                   (idle_word, None), (_swatch(painter, STALE), painter.style(STALE, STALE)),
                   (stale_word, None), (packing + clip, None)]
        if sum(len(t) for t, _ in pieces) <= width:
            break
    line = ""
    for text, st in pieces:
        if st is not None and len(line) + len(text) <= width:
            spans.append(Span(offset + len(line), offset + len(line) + len(text), st))
        line += text
    plain.append(_fit(line, width, glyphs.ellipsis))


def _unit(m: Metric, glyphs: Glyphs) -> str:
    return m.unit if glyphs.unicode else m.unit.replace("°", "")


def _swatch(painter: _Painter, code: int) -> str:
    if painter.half:
        return "█"  # fg colour fills the whole cell
    return painter.char(code, code)


# ----------------------------------------------------------------------------------------------
# Distribution over time: x = time, y = utilization bucket, colour = how many GPUs are there.


def bucketize(values: Iterable[float | None], buckets: int = 10) -> tuple[list[int], int]:
    """Counts per equal-width 0–100 % bucket (100 % goes in the top one), and the n/a count."""
    frame = util_buckets(values, buckets)  # one definition: the store records the same frames
    return list(frame.counts), frame.na


def distribution_heatmap(frames: Sequence[tuple[float, Sequence[int]]], width: int, height: int, *,
                         theme: KueuetopTheme, glyphs: Glyphs = UNICODE, label: str = "GPU util") -> Text:
    """`frames`: (time, counts per bucket, low → high) in time order, e.g. from `bucketize`.

    Columns are time (newest at the right; several frames share a column when there are more
    than the width), rows are buckets (100 % at the top). Colour: count relative to the busiest
    bucket; an empty bucket is blank; a column without any sample is drawn stale.
    """
    painter = _Painter(theme, glyphs)
    axis_w = 5
    plot_w = max(0, width - axis_w)
    nb = len(frames[0][1]) if frames else 10
    if not frames or plot_w == 0 or height <= 2:
        return Text(_fit(f"{label}: no data", width), no_wrap=True)
    # The caption is wrapped, never cut: its lines come out of the plot's height (the peak it
    # names depends on the rows drawn, so until the line count settles).
    caption_lines = 1
    for _ in range(3):
        plain, spans, caption = _distribution_lines(frames, nb, width, max(1, height - 1 - caption_lines),
                                                    painter, glyphs, label)
        if len(caption) <= caption_lines or height - 1 - len(caption) < 1:
            break
        caption_lines = len(caption)
    plain.extend(caption[:max(1, height - len(plain))])
    return Text("\n".join(plain), spans=spans, no_wrap=True, overflow="crop")


def _distribution_lines(frames: Sequence[tuple[float, Sequence[int]]], nb: int, width: int, plot_lines: int,
                        painter: _Painter, glyphs: Glyphs, label: str) -> tuple[list[str], list[Span], list[str]]:
    """(plot and time axis lines, their spans, caption lines) with `plot_lines` lines of plot."""
    rpl = painter.rows_per_line
    axis_w = 5
    plot_w = max(0, width - axis_w)
    # Columns: right-aligned, frames grouped evenly when there are more than fit.
    n = len(frames)
    ncols = min(n, plot_w)
    cols: list[list[int]] = []
    for c in range(ncols):
        a, b = c * n // ncols, (c + 1) * n // ncols
        acc = [0] * nb
        for _, counts in frames[a:b]:
            for i in range(min(nb, len(counts))):
                acc[i] += counts[i]
        cols.append(acc)
    peak = max((max(c) for c in cols), default=0) or 1
    pad = plot_w - ncols

    # Fewer pixel rows than buckets: merge neighbouring buckets rather than drop any.
    avail = plot_lines * rpl
    group = math.ceil(nb / avail)
    if group > 1:
        cols = [[sum(c[i:i + group]) for i in range(0, nb, group)] for c in cols]
        peak = max(max(c) for c in cols) or 1
    nrows = len(cols[0])
    step = 100.0 / nrows

    # Pixel rows, top = highest bucket; each bucket repeated to use the height.
    rep = max(1, avail // nrows)
    rows: list[list[int]] = []
    row_bucket: list[int] = []
    for bucket in range(nrows - 1, -1, -1):
        row = [EMPTY] * pad
        for col in cols:
            cnt = col[bucket]
            row.append(STALE if not any(col) else EMPTY if cnt == 0 else _level(0.15 + 0.85 * cnt / peak))
        rows.extend([row] * rep)
        row_bucket.extend([bucket] * rep)

    plain: list[str] = []
    spans: list[Span] = []
    offset = 0
    lines = math.ceil(len(rows) / rpl)
    for li in range(lines):
        # Label a line with the upper bound of the bucket its top pixel shows, at top/middle/bottom.
        b = row_bucket[li * rpl]
        lab = ""
        if li == 0 or li == lines // 2:
            lab = f"{(b + 1) * step:.0f}%"
        elif li == lines - 1:
            lab = "0%"
        prefix = f"{lab:>4} "
        top = rows[li * rpl]
        bottom = rows[li * rpl + 1] if rpl == 2 and li * rpl + 1 < len(rows) else None
        offset = _emit_line(painter, top, bottom, plot_w, plain, spans, offset + len(prefix))
        plain[-1] = prefix + plain[-1]
    span_s = frames[-1][0] - frames[0][0]
    left = f"-{_age(span_s)}" if span_s > 0 else ""
    axis = " " * axis_w + left + " " * max(1, plot_w - len(left) - 3) + "now"
    plain.append(_fit(axis, width))
    caption = wrap_words(f"{label}: colour = GPUs per bucket (max {peak}); {glyphs.stale} = no samples", width)
    return plain, spans, caption




def _age(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.0f}h"
    if seconds >= 60:
        return f"{seconds / 60:.0f}m"
    return f"{seconds:.0f}s"
