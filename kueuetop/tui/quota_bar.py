"""One ClusterQueue flavor/resource quota as a bar of a given width (Rich `Text`).

    ████▓▓··┆·····▒▒▒    ┃  6/8 +3

The scale runs from 0 to the larger of what the queue may hold (nominal + borrowingLimit) and
what it holds now; without a borrowingLimit (unlimited) it ends at max(nominal, reserved). Each
cell shows what its midpoint falls in: admitted usage, reserved-not-admitted, free nominal,
borrowed (anything held beyond nominal), or borrowable headroom. Ticks: `tick_lend` at
nominal − lendingLimit (below it the quota is never lent to the cohort), `tick_borrow` at
nominal + borrowingLimit. Glyphs carry the meaning, colours only reinforce it, so the bar reads
the same in `--ascii` and on a no-colour terminal.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.style import Style
from rich.text import Text

from kueuetop.tui.glyphs import UNICODE, Glyphs
from kueuetop.tui.themes import KueuetopTheme

USED, RESERVED, FREE, BORROWED, HEADROOM, LEND, BORROW = range(7)


def fmt_amount(v: float) -> str:
    """Whole numbers without decimals (GPUs, CPUs), others with up to two."""
    if v == int(v):
        return str(int(v))
    return f"{v:.2f}".rstrip("0").rstrip(".")


def quota_bar(nominal: float, usage: float, width: int, *, reserved: float | None = None,
              borrowing_limit: float | None = None, lending_limit: float | None = None,
              glyphs: Glyphs = UNICODE, theme: KueuetopTheme | None = None,
              fmt: Callable[[float], str] = fmt_amount, numbers: bool = True) -> Text:
    """Bar plus, when it fits, `usage/nominal` and `+borrowed`; exactly `width` cells or fewer."""
    if width <= 0:
        return Text("")
    # Kueue's reservation includes admitted usage; guard against inconsistent or negative input.
    nominal = max(0.0, float(nominal))
    usage = max(0.0, float(usage))
    held = max(usage, float(reserved) if reserved is not None else usage)
    borrowed = max(0.0, held - nominal)

    suffix = ""
    if numbers:
        suffix = f" {fmt(usage)}/{fmt(nominal)}" + (f" +{fmt(borrowed)}" if borrowed > 0 else "")
        if width - len(suffix) < 4:  # too narrow for numbers and a readable bar: bar only
            suffix = ""
    w = width - len(suffix)

    ceiling = nominal + borrowing_limit if borrowing_limit is not None else nominal
    total = max(ceiling, held, nominal)
    kinds = [_kind(((i + 0.5) * total / w) if total > 0 else 0.0, usage, held, nominal, total > 0)
             for i in range(w)]
    if total > 0:
        if lending_limit is not None and 0 < lending_limit <= nominal and lending_limit < nominal:
            kinds[_cell(nominal - lending_limit, total, w)] = LEND
        if borrowing_limit is not None:
            kinds[_cell(nominal + borrowing_limit, total, w)] = BORROW

    chars = {USED: glyphs.bar_used, RESERVED: glyphs.bar_reserved, FREE: glyphs.bar_free,
             BORROWED: glyphs.bar_borrowed, HEADROOM: glyphs.bar_headroom,
             LEND: glyphs.tick_lend, BORROW: glyphs.tick_borrow}
    styles = _styles(theme)
    out = Text(no_wrap=True, overflow="crop")
    run_kind, run_len = None, 0
    for k in [*kinds, None]:
        if k == run_kind:
            run_len += 1
            continue
        if run_kind is not None:
            out.append(chars[run_kind] * run_len, styles.get(run_kind))
        run_kind, run_len = k, 1
    if suffix:
        out.append(suffix, styles.get(BORROWED) if borrowed > 0 else None)
    return out


def _kind(mid: float, usage: float, held: float, nominal: float, any_quota: bool) -> int:
    if not any_quota:
        return FREE
    if mid < min(usage, nominal):
        return USED
    if mid < min(held, nominal):
        return RESERVED
    if mid < nominal:
        return FREE
    if mid < held:
        return BORROWED
    return HEADROOM


def _cell(x: float, total: float, w: int) -> int:
    # The tick marks the boundary x: the cell that ends at or just past it.
    return min(w - 1, max(0, round(x * w / total) - 1))


def _styles(theme: KueuetopTheme | None) -> dict[int, Style]:
    if theme is None or theme.shaded:
        return {BORROWED: Style(bold=True)} if theme is not None else {}
    t = theme.textual
    return {
        USED: Style(color=t.success),
        RESERVED: Style(color=t.primary),
        FREE: Style(color=theme.states["inactive"]),
        BORROWED: Style(color=t.warning, bold=True),
        LEND: Style(color=t.secondary),
        BORROW: Style(color=t.error),
    }
