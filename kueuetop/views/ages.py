"""Ages as people read them in a terminal, k9s style: 45s, 12m, 3h4m, 2d5h."""

from __future__ import annotations


def age_text(seconds: float | None) -> str:
    """k9s-style compact age; "-" when unknown."""
    if seconds is None:
        return "-"
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        h, m = divmod(s // 60, 60)
        return f"{h}h{m}m" if m else f"{h}h"
    d, h = divmod(s // 3600, 24)
    return f"{d}d{h}h" if h else f"{d}d"
