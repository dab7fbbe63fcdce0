"""Every keyboard action also in the command palette (`ctrl+p`), built from the keymap registry.

The entries are computed from the screen the palette was opened on: workload actions act on the
marked workloads (or the one under the cursor, or the one a detail screen shows), queue actions
on the marked/selected queues of the ClusterQueues or LocalQueues view, and every view can be
switched to. Read-only mode drops cluster-changing entries, as it drops their keys; an action
RBAC denies stays listed, marked "not allowed", with the API server's reason as help text, and
choosing it only repeats the reason (nothing is started).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from kueuetop.kueue.actions import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD, Target
from kueuetop.tui import keymap as KM

if TYPE_CHECKING:
    from textual.screen import Screen
    from textual.widgets import ContentSwitcher

    from kueuetop.tui.views.base import TableView

# Queue action id → the plan verb the runner takes.
_QUEUE_VERBS = {"stop": "stop", "drain": "drain", "resume": "resume-queue"}


class PaletteHost(Protocol):
    """What the palette needs of the app (the app is one; this module does not import it)."""

    read_only: bool
    denied: dict[str, str]
    keymap: KM.Keymap
    main: Screen[Any]
    switcher: ContentSwitcher
    screen_stack: list[Screen[Any]]

    def table_view(self) -> TableView | None: ...

    def notify(self, message: str, *, title: str = ..., severity: Any = ..., timeout: float | None = ...) -> None: ...

    def start_actions(self, action: str, targets: list[Target]) -> None: ...

    def pop_screen(self) -> Any: ...

    def action_switch_view(self, name: str) -> None: ...


@dataclass(frozen=True)
class Entry:
    title: str  # what is matched and shown, e.g. "Hold team-a/job-1"
    help: str
    run: Callable[[], None]
    allowed: bool = True  # False: RBAC denied; `run` only explains why


def _plan_verb(action: KM.Action) -> str:
    # "workload_action('preempt-and-hold')" → "preempt-and-hold"
    return action.textual_action.partition("(")[2].rstrip(")").strip("'\"")


def _describe(targets: list[Target]) -> str:
    if len(targets) == 1:
        return str(targets[0])
    return f"{len(targets)} marked"


def workload_targets(app: PaletteHost, screen: Screen[Any]) -> list[Target]:
    """The workloads a palette action acts on: the detail screen's, else the view's selection."""
    from kueuetop.tui.detail import WorkloadDetailScreen

    if isinstance(screen, WorkloadDetailScreen):
        return [Target(WORKLOAD, screen.key[1], screen.key[0])]
    if screen is not app.main or app.switcher.current != "workloads":
        return []
    tv = app.table_view()
    return [Target(WORKLOAD, r.key[1], r.key[0]) for r in tv.selected()] if tv else []  # type: ignore[index]


def queue_targets(app: PaletteHost, screen: Screen[Any], scope: str) -> list[Target]:
    if screen is not app.main or app.switcher.current != scope:
        return []
    tv = app.table_view()
    if tv is None:
        return []
    if scope == "clusterqueues":
        return [Target(CLUSTER_QUEUE, str(r.key)) for r in tv.selected()]
    return [Target(LOCAL_QUEUE, r.key[1], r.key[0]) for r in tv.selected()]  # type: ignore[index]


def entries(app: PaletteHost, screen: Screen[Any]) -> Iterator[Entry]:
    """What the palette offers on `screen` now (actions first, then view switches)."""
    groups = (("workloads", workload_targets(app, screen)),
              ("clusterqueues", queue_targets(app, screen, "clusterqueues")),
              ("localqueues", queue_targets(app, screen, "localqueues")))
    for scope, targets in groups:
        if not targets:
            continue
        for a in app.keymap.actions(scope, read_only=app.read_only):
            if not a.dangerous:
                continue
            verb = _plan_verb(a) if scope == "workloads" else _QUEUE_VERBS[a.id.split(".")[-1]]
            noun = "" if scope == "workloads" else ("ClusterQueue " if scope == "clusterqueues" else "LocalQueue ")
            title = f"{a.description} {noun}{_describe(targets)}"
            keys = ", ".join(a.keys)
            reason = KM.disabled_reason(a.id, app.denied)
            if reason:
                yield Entry(f"{title} (not allowed)", reason,
                            partial(app.notify, reason, title="not allowed", severity="warning"), allowed=False)
                continue
            help_ = f"{a.id} [{keys}]" + (" · evicts running work" if a.evicts else "")
            yield Entry(title, help_, partial(app.start_actions, verb, list(targets)))
    for v in KM.VIEWS:
        yield Entry(f"View {v.title}", f"view.{v.name} [{v.key}] · :{v.aliases[0]}",
                    partial(_switch, app, v.name))


def _switch(app: PaletteHost, name: str) -> None:
    while len(app.screen_stack) > 1:  # from a detail screen: back to the views first
        app.pop_screen()
    app.action_switch_view(name)


class KueuetopCommands(Provider):
    """The palette's kueuetop entries; greyed (dim) when RBAC denies them."""

    def _entries(self) -> list[Entry]:
        return list(entries(self.app, self.screen))  # type: ignore[arg-type]

    async def discover(self) -> Hits:
        for e in self._entries():
            yield DiscoveryHit(self._display(e), e.run, text=e.title, help=e.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for e in self._entries():
            score = matcher.match(e.title)
            if score > 0 and e.title.lower().startswith(query.strip().lower()):
                score = 1.0  # the verb typed first wins: "hold" → Hold before Preempt+hold
            if score > 0:
                shown = matcher.highlight(e.title)
                if not e.allowed:
                    shown = shown.stylize("dim")
                yield Hit(score, shown, e.run, text=e.title, help=e.help)

    @staticmethod
    def _display(e: Entry) -> Content:
        return Content(e.title) if e.allowed else Content.styled(e.title, "dim")
