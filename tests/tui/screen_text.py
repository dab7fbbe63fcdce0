"""Plain text of what a running app shows (for assertions): the composed screen, line by line."""

from __future__ import annotations

from textual.app import App


def screen_text(app: App) -> str:
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(seg.text for seg in strip) for strip in strips)
