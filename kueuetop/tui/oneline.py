"""A one-line label (view titles, the status bar) whose text changes on every refresh.

Its height is fixed at 1 and its width is the container's, so new text never moves anything:
it is repainted without a layout pass of the whole screen (Static's default for any update),
and not at all when the text is the same.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class OneLine(Static):
    DEFAULT_CSS = """
    OneLine { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    _shown: Text | None = None

    def show_text(self, text: Text) -> None:
        if self._shown is not None and text == self._shown and text.style == self._shown.style:
            return
        self._shown = text
        self.update(text, layout=False)
