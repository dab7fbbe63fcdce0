"""The status bar: context, connection state, data age per source, badges, last action result.

Informer sources are summarised as one `kube` entry (worst state wins, oldest data age); polling
sources (visibility, GPU metrics) show their data age too: every entry says how old its data is.
A budgeted GPU scrape that cannot keep the whole fleet fresh shows that instead, in short
("budget auto 2.7MB/min: 1000 nodes refresh every 25m — use --prometheus"); the source's message in
the store has the full sentence.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text

from kueuetop.sources.scrape_budget import short_note
from kueuetop.store import SourceState, SourceStatus
from kueuetop.tui.oneline import OneLine
from kueuetop.views.rows import age
from kueuetop.views.safe_text import clean

_SEVERITY = {SourceState.LIVE: 0, SourceState.CONNECTING: 1, SourceState.RELISTING: 2, SourceState.UNAVAILABLE: 0,
             SourceState.FORBIDDEN: 2, SourceState.STALE: 3, SourceState.STOPPED: 3, SourceState.ERROR: 3}
_POLLING = ("visibility", "gpu", "prom", "dcgm", "scrape")


def _is_polling(name: str) -> bool:
    return name.startswith(_POLLING)


def summarize_sources(sources: Mapping[str, SourceStatus], now: float) -> list[tuple[str, str, bool]]:
    """(label, text, bad) per shown entry."""
    out: list[tuple[str, str, bool]] = []
    kube = [s for n, s in sources.items() if not _is_polling(n)]
    if kube:
        worst = max(kube, key=lambda s: _SEVERITY.get(s.state, 3))
        # The data age: how long ago the oldest watched resource was last known current (an event,
        # a bookmark, a list, or a liveness probe answered while its stream was open).
        ages = [a for s in kube if s.state not in (SourceState.FORBIDDEN, SourceState.UNAVAILABLE)
                and (a := s.age(now)) is not None]
        txt = worst.state.value + (f" {age(max(ages))}" if ages else "")
        out.append(("kube", txt, worst.state not in (SourceState.LIVE, SourceState.UNAVAILABLE)))
    else:
        out.append(("kube", "connecting", True))
    for name, s in sorted(sources.items()):
        if not _is_polling(name):
            continue
        if s.state is SourceState.UNAVAILABLE:
            out.append((name, "n/a", False))
            continue
        a = s.age(now)
        note = short_note(s.message) if s.state is SourceState.LIVE else None
        if note:  # the scrape's budget cannot keep the fleet fresh: say so, not a fresh-looking age
            out.append((name, note, s.stale(now)))
            continue
        out.append((name, (s.state.value if s.state is not SourceState.LIVE else "") + (
            f" {age(a)}" if a is not None else ""), s.stale(now)))
    if not any(_is_polling(n) and n.startswith(("gpu", "prom", "dcgm", "scrape")) for n in sources):
        out.append(("gpu", "none", False))
    return out


class StatusBar(OneLine):
    DEFAULT_CSS = """
    StatusBar { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def show(self, *, context: str, sources: Mapping[str, SourceStatus], now: float, demo: str | None,
             read_only: bool, last_action: str, last_ok: bool | None, warn_style: str, bad_style: str,
             badge: str = "") -> None:
        """`badge`: a mode shown first (REPLAY)."""
        t = Text(no_wrap=True, overflow="ellipsis")
        if badge:
            t.append(f" {clean(badge)} ", style="reverse bold")
            t.append(" ")
        if demo:
            t.append(" DEMO ", style="reverse bold")
            t.append(" ")
        if read_only:
            t.append(" READ-ONLY ", style="reverse bold")
            t.append(" ")
        t.append(clean(context) or "(no context)", style="bold")
        for label, text, bad in summarize_sources(sources, now):
            t.append("  ")
            t.append(f"{label}:", style="dim")
            t.append(text.strip() or "live", style=bad_style if bad else "")
        if last_action:
            t.append("  │ ")
            t.append(clean(last_action), style=bad_style if last_ok is False else (warn_style if last_ok is None else ""))
        self.show_text(t)
