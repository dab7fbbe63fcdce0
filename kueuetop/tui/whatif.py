"""The what-if panel (`w`, `:whatif`): type or pick a change, see whose ETA it moves and by how much.

The console's face of `kueuetop forecast --with …`: the same change syntax (several separated by
`;`), the same comparison (`views/what_if.run_what_if`). The forecasts run in a thread worker, never
on the UI thread; the answer comes back as a message and is dropped when a newer request replaced
it. Every string from the cluster is cleaned and drawn as plain Text (no markup is read from it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from kueuetop.admission.forecast_changes import Change, parse_changes
from kueuetop.admission.runtime_estimate import RunSamples
from kueuetop.kueue.core import Node
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.messages import OpenWorkload
from kueuetop.views.forecast_report import change_cell
from kueuetop.views.safe_text import clean
from kueuetop.views.what_if import Latest, Suggestion, WhatIfAnswer, focus_index, run_what_if, suggestions

HINT = ("quota CQ [FLAVOR/]RESOURCE=+N|-N|=N  ·  hold NS/NAME (globs: hold team-b/*)  ·  nodes POOL=+N|-N  ·  "
        "several: separate with ;  ·  ↓ suggestions, enter runs")
COMPUTING = "computing…"
_KEYS_QUIET = 0.4  # the engine's rounds wait while keys come less than this many seconds apart


class _Replaced(Exception):
    """A newer request (or closing the panel) made this computation moot."""


def split_specs(text: str) -> list[str]:
    return [s.strip() for s in text.split(";") if s.strip()]


class WhatIfScreen(Screen[None]):
    BINDINGS: ClassVar = [Binding("escape", "close", "Close"),
                          Binding("down", "suggestions", "Suggestions", show=False)]
    DEFAULT_CSS = """
    WhatIfScreen > .page-title { height: 1; background: $panel; padding: 0 1; }
    WhatIfScreen > #whatif-input { margin: 0 1; }
    WhatIfScreen > #whatif-hint { height: auto; padding: 0 1; color: $text-muted; }
    WhatIfScreen > #whatif-suggestions { height: auto; max-height: 8; margin: 0 1; }
    WhatIfScreen > #whatif-summary { height: auto; padding: 0 1; margin-top: 1; }
    WhatIfScreen > #whatif-moves { height: 1fr; margin: 0 1; }
    """

    class Computed(Message):
        """The worker's answer to request `request`."""

        def __init__(self, request: int, answer: WhatIfAnswer) -> None:
            super().__init__()
            self.request, self.answer = request, answer

    def __init__(self, ctx: ViewContext, *, history: RunSamples | None = None,
                 latest: Callable[[], Latest | None] = lambda: None,
                 focus_cq: str = "", text: str = "") -> None:
        """`history`: the forecast worker's runs (runtimes when no forecast ran yet); `latest`: its
        latest forecast with the snapshot it ran on and the pools it placed pods on; `focus_cq`: the ClusterQueue whose suggestion
        is preselected; `text`: a change to run at once (`:whatif quota …`)."""
        super().__init__()
        self.ctx = ctx
        self.history = history
        self.latest = latest
        self.focus_cq = focus_cq
        self.initial = text
        self.request = 0  # the request whose answer is wanted; older answers are dropped
        self.answer: WhatIfAnswer | None = None
        self.suggested: list[Suggestion] = []
        self._row_keys: list[tuple[str, str]] = []

    def compose(self) -> ComposeResult:
        yield Static(Text("What-if: ETAs before and after a change   esc: close"), classes="page-title")
        yield Input(placeholder="a change, e.g. quota CQ nvidia.com/gpu=+4", id="whatif-input")
        yield Static(Text(HINT), id="whatif-hint")
        yield OptionList(id="whatif-suggestions")
        yield Static(Text("Pick a suggestion or type a change, then enter.", style="dim"), id="whatif-summary")
        table: DataTable[Text] = DataTable(id="whatif-moves", cursor_type="row", zebra_stripes=True)
        table.add_columns("WORKLOAD", "CLUSTERQUEUE", "BEFORE", "AFTER", "CHANGE")
        yield table
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        store = self.ctx.store
        nodes = [n for n in store.objects(K.NODES).values() if isinstance(n, Node)]
        self.suggested = suggestions(store.snapshot(), nodes, self.focus_cq)
        options = self.query_one("#whatif-suggestions", OptionList)
        options.add_options([self._option(s) for s in self.suggested])
        at = focus_index(self.suggested, self.focus_cq)
        options.highlighted = at if at is not None else (0 if self.suggested else None)
        inp = self.query_one("#whatif-input", Input)
        inp.focus()
        if self.initial:
            inp.value = self.initial
            self.submit(self.initial)

    @staticmethod
    def _option(s: Suggestion) -> Option:
        text = Text(clean(s.spec))
        text.append(f"   {clean(s.note)}", style="dim")
        return Option(text)

    # ------------------------------------------------------------ input
    def action_suggestions(self) -> None:
        if self.suggested:
            self.query_one("#whatif-suggestions", OptionList).focus()

    def action_close(self) -> None:
        self.request += 1  # a computation under way stops at its next pause
        self.app.pop_screen()

    @on(OptionList.OptionSelected, "#whatif-suggestions")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        inp = self.query_one("#whatif-input", Input)
        inp.value = self.suggested[event.option_index].spec
        inp.cursor_position = len(inp.value)
        inp.focus()

    @on(Input.Submitted, "#whatif-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()  # the app's own prompts handle their Submitted; this one is the panel's
        self.submit(event.value)

    def submit(self, text: str) -> None:
        """Parse at once (a bad spec is said right away), then forecast in a worker."""
        self.request += 1
        specs = split_specs(text)
        if not specs:
            self._say("Type a change first (or pick a suggestion).", error=True)
            return
        try:
            changes = parse_changes(specs)
        except ValueError as exc:
            self._say(str(exc), error=True)
            return
        self._say(f"{COMPUTING}  ({'; '.join(specs)})")
        request = self.request
        # exclusive: the previous computation is cancelled; its thread stops at its next pause.
        self.run_worker(partial(self._compute, request, changes, self.ctx.now()), thread=True,
                        group="whatif", exclusive=True, exit_on_error=False)

    # ------------------------------------------------------------ worker
    def _compute(self, request: int, changes: Sequence[Change], now: float) -> None:  # worker thread
        worker = get_current_worker()

        def pause() -> None:
            # Keys first: the engine's rounds wait while the user types; a newer request stops it.
            while self.ctx.keys_active(_KEYS_QUIET) and not worker.is_cancelled and request == self.request:
                time.sleep(0.01)
            if worker.is_cancelled or request != self.request:
                raise _Replaced

        try:
            answer = run_what_if(self.ctx.store, changes, now, history=self.history, latest=self.latest(),
                                 pause=pause)
        except _Replaced:
            return
        except ValueError as exc:  # a change that does not apply to this cluster: one line
            answer = WhatIfAnswer(tuple(c.spec for c in changes), error=str(exc))
        except Exception as exc:  # never takes the console down
            answer = WhatIfAnswer(tuple(c.spec for c in changes), error=f"what-if failed: {type(exc).__name__}: {exc}")
        self.post_message(self.Computed(request, answer))

    def on_what_if_screen_computed(self, message: Computed) -> None:
        if message.request != self.request:
            return  # replaced while it ran
        self.show(message.answer)

    # ------------------------------------------------------------ drawing
    def _say(self, line: str, *, error: bool = False) -> None:
        style = (self.ctx.state_style("evicted") or "bold") if error else ""
        self.query_one("#whatif-summary", Static).update(Text(clean(line).splitlines()[0] if line else "",
                                                              style=style))
        if error:
            self._fill([])

    def show(self, answer: WhatIfAnswer) -> None:
        self.answer = answer
        if answer.error:
            self._say(answer.error, error=True)
            return
        head = Text(clean(answer.summary["text"]), style="bold")
        basis = "the console's latest forecast" if answer.reused else "a forecast run now"
        head.append(f"\nwith {clean('; '.join(answer.specs))}; before: {basis}; {answer.pods}", style="dim")
        if not answer.moves:
            head.append("\nNo workload's ETA moved.")
        self.query_one("#whatif-summary", Static).update(head)
        self._fill(answer.moves)

    def _fill(self, moves: Sequence[dict[str, Any]]) -> None:
        table: DataTable[Text] = self.query_one("#whatif-moves", DataTable)
        table.clear()
        self._row_keys = []
        answer = self.answer
        sooner, later = self.ctx.state_style("admitted"), self.ctx.state_style("pending")
        for m in moves:
            key = answer.key_of(m) if answer is not None else (m["namespace"], m["name"])
            self._row_keys.append(key)
            style = sooner if m["change"] in ("sooner", "starts") else later
            table.add_row(Text(f"{m['namespace']}/{m['name']}"), Text(m["clusterQueue"] or "-"),
                          Text(m["before"]["text"]), Text(m["after"]["text"]),
                          Text(clean(change_cell(m)), style=style))

    @on(DataTable.RowSelected, "#whatif-moves")
    def _open(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self._row_keys):
            self.post_message(OpenWorkload(self._row_keys[event.cursor_row]))

    def rows(self) -> list[list[str]]:
        """The moved workloads as drawn (tests read them)."""
        table: DataTable[Text] = self.query_one("#whatif-moves", DataTable)
        return [[c.plain if isinstance(c, Text) else str(c) for c in table.get_row_at(i)]
                for i in range(table.row_count)]
