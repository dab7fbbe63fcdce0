"""Modal and full screens: help (`?`), action confirmation, YAML text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Static

from kueuetop.views.safe_text import clean


class HelpScreen(ModalScreen[None]):
    """Keys of the current view first, then the global ones; `esc`, `?` or `q` close it."""

    BINDINGS: ClassVar = [Binding("escape,question_mark,q", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; max-width: 95%; height: auto; max-height: 90%;
                                  border: round $primary; background: $surface; padding: 0 1; }
    """

    def __init__(self, title: str, rows: Iterable[tuple[str, str, str]], extra: Sequence[str] = ()) -> None:
        super().__init__()
        self._title = title
        self._rows = list(rows)
        self._extra = extra

    def compose(self) -> ComposeResult:
        text = Text(self._title + "\n\n", style="bold")
        for keys, desc, aid in self._rows:
            text.append(f"{keys:<14}", style="bold")
            text.append(f"{desc:<26}")
            text.append(f"{aid}\n", style="dim")
        for line in self._extra:
            text.append("\n" + line)
        with VerticalScroll():
            yield Static(text)

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss(None)


@dataclass(frozen=True)
class Confirmation:
    confirmed: bool
    dry_run: bool


class ConfirmScreen(ModalScreen[Confirmation]):
    """What will be sent and what the engine expects it to cause; `y` sends, `n`/`esc` cancels."""

    BINDINGS: ClassVar = [
        Binding("y", "confirm", "Confirm"),
        Binding("n,escape", "cancel", "Cancel"),
        Binding("d", "toggle_dry_run", "Dry run"),
    ]
    DEFAULT_CSS = """
    ConfirmScreen { align: center middle; }
    ConfirmScreen > Vertical { width: 90; max-width: 95%; height: auto; max-height: 90%;
                               border: thick $warning; background: $surface; padding: 0 1; }
    ConfirmScreen #confirm-body { height: auto; max-height: 20; }
    ConfirmScreen Horizontal { height: auto; margin-top: 1; }
    ConfirmScreen Button { margin-right: 2; }
    """

    def __init__(self, title: str, lines: Sequence[str], *, evicts: bool, dry_run: bool = False) -> None:
        super().__init__()
        self._title = title
        self._lines = lines
        self._evicts = evicts
        self._dry_run = dry_run

    def compose(self) -> ComposeResult:
        body = Text()
        for line in self._lines:
            body.append(clean(line) + "\n")
        if self._evicts:
            body.append("\nThis evicts running work.\n", style="bold")
        with Vertical():
            yield Static(Text(self._title, style="bold"))
            with VerticalScroll(id="confirm-body"):
                yield Static(body)
            yield Checkbox("dry run (server-side, dryRun=All: changes nothing)", self._dry_run, id="dry-run")
            with Horizontal():
                yield Button("Confirm (y)", id="confirm", variant="error" if self._evicts else "warning")
                yield Button("Cancel (n)", id="cancel")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()  # enter on a stray key press must not send anything

    def _dry(self) -> bool:
        return self.query_one("#dry-run", Checkbox).value

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "confirm":
            self.action_confirm()
        else:
            self.action_cancel()

    def action_confirm(self) -> None:
        self.dismiss(Confirmation(True, self._dry()))

    def action_cancel(self) -> None:
        self.dismiss(Confirmation(False, self._dry()))

    def action_toggle_dry_run(self) -> None:
        cb = self.query_one("#dry-run", Checkbox)
        cb.value = not cb.value
