"""What views and screens ask of the app, as messages (Textual: attributes down, messages up).

A view posts one of these; it bubbles up to the app, which opens the screen, switches the view
or starts the action. Views therefore never import the app (no import cycle between them).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from textual.message import Message

from kueuetop.kueue.actions import Target


class OpenWorkload(Message):
    """Open a workload's detail screen."""

    def __init__(self, key: tuple[str, str]) -> None:
        super().__init__()
        self.key = key


class JumpTo(Message):
    """Switch to a view with this `/` filter."""

    def __init__(self, view: str, filter_text: str) -> None:
        super().__init__()
        self.view, self.filter_text = view, filter_text


class ShowYaml(Message):
    """Show the YAML of an object (store kind, key)."""

    def __init__(self, kind: str, key: Hashable) -> None:
        super().__init__()
        self.kind, self.key = kind, key


class RunAction(Message):
    """Start an action (its preview, confirmation and flow) on these targets."""

    def __init__(self, action: str, targets: Sequence[Target]) -> None:
        super().__init__()
        self.action, self.targets = action, list(targets)
