"""Sparklines: a metric's recent history in one line of level glyphs (per-GPU utilization)."""

from __future__ import annotations

from collections.abc import Sequence

from kueuetop.tui.glyphs import UNICODE, Glyphs


def sparkline(values: Sequence[float | None], width: int, *, lo: float = 0.0, hi: float = 100.0,
              glyphs: Glyphs = UNICODE) -> str:
    """The newest `width` values on a fixed lo–hi scale (so two GPUs' lines compare); a missing
    or stale value is the stale glyph, never the lowest level. Shorter histories are left-padded."""
    if width <= 0:
        return ""
    levels = glyphs.spark
    top = len(levels) - 1
    span = (hi - lo) or 1.0
    out = []
    for v in list(values)[-width:]:
        if v is None or v != v:
            out.append(glyphs.stale)
            continue
        f = min(1.0, max(0.0, (v - lo) / span))
        out.append(levels[round(f * top)])
    return " " * (width - len(out)) + "".join(out)
