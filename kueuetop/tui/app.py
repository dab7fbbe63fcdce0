"""KueuetopApp: the console. Views render the store; keys come from the keymap registry.

Layout (no header, to give rows the space): the current view, the `:` command and `/` filter
inputs (hidden until used), the status bar, the footer. Store changes reach the UI through
`StoreBridge` (≤ `max_refresh_rate` redraws a second on average, two at once after a pause,
fewer when a redraw is costly, visible view only); a slow 2 s tick
keeps the data ages in the status bar honest. Input first: while keys come, redraws nobody
asked for (store changes, ages, explanations) wait for them to pause (`defer`, tui/input_first.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Iterable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.suggester import SuggestFromList
from textual.timer import Timer
from textual.widgets import ContentSwitcher, Footer, Input

from kueuetop.kueue.actions import CLUSTER_QUEUE, LOCAL_QUEUE, WORKLOAD, Target
from kueuetop.kueue.workload import Workload
from kueuetop.sources.autoscaler_status import read_autoscaler_status
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.tui import keymap as KM
from kueuetop.tui.action_flow import ActionRunner, Identity
from kueuetop.tui.bridge import StoreBridge, StoreChanged
from kueuetop.tui.context import ViewContext
from kueuetop.tui.detail import WorkloadDetailScreen
from kueuetop.tui.forecaster import Forecaster
from kueuetop.tui.glyphs import glyphs
from kueuetop.tui.heap import BurstHold, HeapFreezer, IdleCollector
from kueuetop.tui.input_first import InputFirst
from kueuetop.tui.messages import JumpTo, OpenWorkload, RunAction, ShowYaml
from kueuetop.tui.palette import KueuetopCommands
from kueuetop.tui.screens import HelpScreen
from kueuetop.tui.statusbar import StatusBar
from kueuetop.tui.themes import ThemeSet, load_themes, no_color, variable_defaults
from kueuetop.tui.views.base import TableView, View
from kueuetop.tui.views.clusterqueues import ClusterQueuesView
from kueuetop.tui.views.cohorts import CohortsView
from kueuetop.tui.views.events import EventsView, follow_for
from kueuetop.tui.views.flavors import FlavorsView
from kueuetop.tui.views.gpus import GpusView
from kueuetop.tui.views.localqueues import LocalQueuesView
from kueuetop.tui.views.nodes import NodesView
from kueuetop.tui.views.overview import OverviewView
from kueuetop.tui.views.workloads import WorkloadsView
from kueuetop.tui.whatif import WhatIfScreen
from kueuetop.tui.yaml_view import ObjectYamlScreen

VIEW_CLASSES: tuple[type[View], ...] = (OverviewView, WorkloadsView, ClusterQueuesView, LocalQueuesView,
                                        CohortsView, FlavorsView, NodesView, GpusView, EventsView)

# (textual action name, params) → registry id, so check_action can ask the keymap about it.
_ACTION_IDS: dict[tuple[str, tuple[object, ...]], str] = {}
for _a in KM.ACTIONS:
    _name, _, _rest = _a.textual_action.partition("(")
    _params = tuple(p.strip().strip("'\"") for p in _rest.rstrip(")").split(",") if p.strip())
    _ACTION_IDS[(_name, _params)] = _a.id

# Actions that need a target kind per view (queue actions share verbs).
_QUEUE_IDS = {("clusterqueues", a): f"clusterqueue.{v}" for a, v in (("stop", "stop"), ("drain", "drain"),
                                                                     ("resume-queue", "resume"))}
# Store kinds the status bar shows (and views that list them in KINDS).
_STATUS_ONLY = frozenset({K.SOURCES})
# Store-driven refreshes that may follow each other at once (then `max_refresh_rate` a second).
_REFRESH_BURST = 2
# Redraws may take at most this share of a core: a refresh that took c seconds is followed by
# the next no sooner than c / share (at 14 ms a refresh, ~18 a second; at 1 ms, the rate cap).
_REFRESH_CPU_SHARE = 0.25
# After a store-driven refresh, its frame is still to be drawn for about this long.
_FRAME_AFTER_REFRESH = 0.1
# Held redraws that are overdue run this long after a key (and after the frame then due): by
# then the key is handled and painted (a few ms on large), so they fall between two keys rather
# than in front of the next one (autorepeat: 33 ms apart and more).
_AFTER_KEY = 1 / 60

_QUEUE_IDS.update({("localqueues", a): f"localqueue.{v}" for a, v in (("stop", "stop"), ("drain", "drain"),
                                                                       ("resume-queue", "resume"))})


class KueuetopApp(App[int]):
    TITLE = "kueuetop"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS: ClassVar = {*App.COMMANDS, KueuetopCommands}
    BINDINGS: ClassVar = [*KM.load_keymap().bindings(KM.GLOBAL),
                          Binding("q", "quit", "Quit", show=False, id="quit-q")]
    CSS = """
    #views { height: 1fr; }
    .prompt { display: none; height: 1; border: none; padding: 0 1; background: $boost; }
    .prompt.-shown { display: block; }
    """

    def __init__(self, store: Store, *, api: Any = None, kueue_version: str = "v1beta2", context: str = "",
                 server: str = "", user: str = "", read_only: bool = False, demo: str | None = None,
                 theme_name: str | None = None, ascii_only: bool = False, namespace: str | None = None,
                 themes: ThemeSet | None = None, keymap: KM.Keymap | None = None,
                 clock: Callable[[], float] = time.time, max_refresh_rate: float = 20.0,
                 initial_view: str = "overview", check_rbac: bool = True, forecast: bool = False,
                 history_dir: Path | None = None, synced: Callable[[], bool] | None = None,
                 forecast_in_process: bool = False) -> None:
        """`forecast`: run the forecast worker (ETAs); `history_dir`: where it keeps the runtimes of
        finished workloads between runs (None: this run only); `synced`: whether every source's
        first list is in the store (the first forecast waits for it); `forecast_in_process`: the
        forecast runs on the worker's thread, not in a child process (`tui/forecast_process.py`)."""
        super().__init__()
        self.read_only = read_only
        self.demo = demo
        self.context_name = context
        self.namespace = namespace
        self.keymap = keymap or KM.load_keymap_file()
        self._themes = themes or load_themes()
        theme, self._theme_notes = self._themes.get(theme_name, no_color=no_color())
        self._theme_notes = [*self._themes.problems, *self._theme_notes]
        for t in self._themes.themes.values():
            self.register_theme(t.textual)
        self.theme = theme.textual.name
        self.input_first = InputFirst()
        self._held_timer: Timer | None = None
        self._overdue_scheduled = False
        self.ctx = ViewContext(store, theme, glyphs(ascii_only), clock, namespace, busy=self._change_in_flight,
                               check_binding=self.check_binding, key_label=self.key_label,
                               last_key=lambda: self.input_first.last_key, defer=self.defer)
        self.bridge = StoreBridge(store, self.post_message)
        self.runner = ActionRunner(self, api, kueue_version=kueue_version, identity=Identity(context, server, user))
        self.api = api
        self.denied: dict[str, str] = {}  # str(Need) → reason, from SelfSubjectAccessReview at start
        self._check_rbac = check_rbac and api is not None and not read_only
        self._fastest = self._min_interval = 1.0 / max_refresh_rate
        # (A change shows within one interval under a steady stream: 50 ms at the cap, so a
        # write reaches the screen well inside 100 ms while the redraw stays cheap.)
        self._last_refresh = 0.0
        self._refresh_cost = 0.0  # seconds a store-driven refresh takes, smoothed
        self._tokens, self._tokens_at = float(_REFRESH_BURST), time.monotonic()
        self._refresh_timer: Timer | None = None
        self._initial_view = initial_view
        self._last_action = ""
        self._last_ok: bool | None = None
        self._ticks = 0
        self._ages_owed = False  # the view's age refresh waits for the main screen to be on top
        self._heap = HeapFreezer(lambda: sum(store.count(k) for k in (K.WORKLOADS, K.PODS, K.NODES)),
                                 churn=lambda: self.bridge.changed_objects)
        self._idle_gc = IdleCollector(busy=self._change_in_flight)
        self._burst_hold = BurstHold()
        self.refresh_count = 0  # redraws driven by store changes (tests and benchmarks read it)
        self.forecaster: Forecaster | None = None
        if forecast:
            self.forecaster = Forecaster(store, server=server, context=context, state_dir=history_dir, clock=clock,
                                         busy=lambda: self._change_in_flight() or self.ctx.keys_active(),
                                         # cluster-autoscaler's status, read on the forecast's thread
                                         pool_limits=partial(read_autoscaler_status, api) if api is not None else None,
                                         ready=synced or (lambda: True),
                                         isolate=False if forecast_in_process else None)

    def get_driver_class(self) -> type[Any]:
        cls = super().get_driver_class()
        if cls.__name__ == "LinuxDriver":  # a real terminal: exit quietly when it goes away
            from kueuetop.tui.tty import HangupSafeDriver

            return HangupSafeDriver
        return cls

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return variable_defaults()

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        with ContentSwitcher(initial=self._initial_view, id="views"):
            for cls in VIEW_CLASSES:
                yield cls(self.ctx)
        yield Input(placeholder=":command  (wl, cq, lq, co, rf, no, gpu, ev, q)", id="command", classes="prompt",
                    suggester=SuggestFromList(KM.command_words(), case_sensitive=False))
        yield Input(placeholder="/filter  regex · !inverse · -l key=value · state:pending", id="filter",
                    classes="prompt")
        yield StatusBar(id="status")
        # Compact, no palette hint (ctrl+p is in `?` help): every view's keys fit in 80 columns.
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        if self.keymap.textual_keymap():
            self.set_keymap(self.keymap.textual_keymap())
        for note in [*self._theme_notes, *self.keymap.problems]:
            self.notify(note, title="configuration", severity="warning", timeout=8)
        self.bridge.start()
        self.refresh_all()
        self._focus_view()
        self.set_interval(2.0, self._tick)
        self._idle_gc.start()
        self.ctx.store.on_burst = self._burst_hold.hold
        self.set_interval(0.5, self._collect_garbage)
        if self.forecaster is not None:
            self.forecaster.start()
            if self.forecaster.warning:
                self.notify(self.forecaster.warning, title="forecast history", severity="warning", timeout=8)
        if self._check_rbac:
            self.run_worker(self._rbac_check, thread=True, group="rbac", exit_on_error=False)
        if self.api is not None:  # actions an earlier kueuetop left unfinished, reported once
            self.run_worker(self.runner.check_unfinished, thread=True, group="journal", exit_on_error=False)
        if self.api is not None and "kueue_config" not in self.ctx.extra:
            self.run_worker(self._read_kueue_config, thread=True, group="kueue-config", exit_on_error=False)

    def _read_kueue_config(self) -> None:  # worker thread
        from kueuetop.sources.kueue_config import read_kueue_config

        config, _why = read_kueue_config(self.api)  # None when unreadable: the board shows the rest
        self.call_from_thread(self.set_kueue_config, config)

    async def action_quit(self) -> None:
        # Actions in flight are cancelled and their requests cut, so the process ends at once
        # (the worker journals what landed) instead of waiting out request timeouts.
        self.runner.shutdown()
        self.exit()

    def on_unmount(self) -> None:
        self.runner.shutdown()  # every other way out (hangup, :q, ctrl+c) too
        self.ctx.store.on_burst = None
        self._burst_hold.release()
        self._idle_gc.stop()
        self.bridge.stop()
        if self.forecaster is not None:
            self.forecaster.stop()

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key) and not event.is_forwarded:
            self.input_first.key()
            self._idle_gc.activity()  # full collections wait until the keys stop
            if self.input_first.overdue() and not self._overdue_scheduled:
                self._overdue_scheduled = True
                self.set_timer(_AFTER_KEY, lambda: self.call_after_refresh(self._run_overdue))
        await super().on_event(event)

    # ------------------------------------------------------------ views
    @property
    def main(self) -> Screen[Any]:
        """The screen holding the views; App.query would search whatever screen is on top."""
        return self.screen_stack[0]

    @property
    def switcher(self) -> ContentSwitcher:
        return self.main.query_one("#views", ContentSwitcher)

    def current_view(self) -> View:
        return self.main.query_one(f"#{self.switcher.current}", View)

    def views(self) -> Iterable[View]:
        return self.main.query(View).results(View)

    def table_view(self) -> TableView | None:
        v = self.current_view()
        return v if isinstance(v, TableView) else None

    def _focus_view(self) -> None:
        v = self.current_view()
        if isinstance(v, TableView):
            v.table.focus()
        else:
            v.focus() if v.can_focus else self.set_focus(None)

    def action_switch_view(self, name: str) -> None:
        if name not in KM.VIEW_NAMES:
            return
        if name == EventsView.VIEW and self.switcher.current != name:
            # Opened from a row: the Events of that object (and of its pods, Job, requests).
            src = self.table_view()
            row = src.cursor_row() if src is not None else None
            events_view = self.main.query_one(f"#{name}", EventsView)
            events_view.follow(follow_for(self.switcher.current, row.key if row is not None else None))
        self.switcher.current = name
        v = self.current_view()
        v.refresh_view()  # hidden views are only marked dirty; catch up now
        self._focus_view()
        self.refresh_bindings()

    def set_kueue_config(self, config: Any) -> None:
        """Kueue's configuration (kueuetop.kueue.config.KueueConfig, or None: unknown)."""
        from kueuetop.tui.views.overview import OverviewView

        self.ctx.extra["kueue_config"] = config
        for v in self.views():
            if isinstance(v, OverviewView):
                v.set_config(config)

    def jump_to(self, view: str, filter_text: str) -> None:
        self.action_switch_view(view)
        tv = self.table_view()
        if tv is not None:
            tv.set_filter(filter_text)

    # ------------------------------------------------------------ store → UI
    def _change_in_flight(self) -> bool:
        """A store write is under way or not yet on screen: no full collection now."""
        return (self.ctx.store.writing or self.bridge.pending or self._refresh_timer is not None
                or time.monotonic() - self._last_refresh < _FRAME_AFTER_REFRESH)

    def _collect_garbage(self) -> None:
        self._burst_hold.release(in_flight=self._change_in_flight())
        collected = self._idle_gc.poll()
        if not self._change_in_flight():
            self._heap.maybe_freeze(quiet=collected or self._idle_gc.is_quiet(), collected=collected)

    def _refill(self) -> float:
        """Refresh tokens now: `max_refresh_rate` a second, at most `_REFRESH_BURST` saved up."""
        now = time.monotonic()
        self._tokens = min(_REFRESH_BURST, self._tokens + (now - self._tokens_at) / self._min_interval)
        self._tokens_at = now
        return self._tokens

    def on_store_changed(self, _: StoreChanged) -> None:
        self._idle_gc.activity()  # full collections wait until the changes stop too
        if self._refresh_timer is not None:
            return  # a coalesced refresh is already scheduled; it will take these kinds too
        if self._live and self.bridge.take_if(_STATUS_ONLY - self.current_view().KINDS) is not None:
            # A source's state or freshness (each poll stamps it): the status bar only, at once,
            # without using up a refresh a change to the view may need next (hidden views catch
            # up when shown: switching refreshes them).
            self._update_status()
            return
        # A token bucket rather than a fixed gap: a change right after an unrelated small one
        # (a queue-position poll) is shown at once; a steady stream still gets the rate.
        tokens = self._refill()
        if tokens < 1:
            self._refresh_timer = self.set_timer((1 - tokens) * self._min_interval, self._store_refresh)
        else:
            self._store_refresh()

    def _store_refresh(self) -> None:
        # Held while keys come (the bridge keeps collecting kinds meanwhile and posts nothing
        # more until the refresh takes them).
        self._refresh_timer = None
        self.defer("store", self._coalesced_refresh)

    def _coalesced_refresh(self) -> None:
        self._refill()
        self._tokens -= 1
        self._last_refresh = time.monotonic()
        kinds = self.bridge.take()
        if kinds:
            self.refresh_count += 1
            started = time.perf_counter()
            self.refresh_for(kinds)
            cost = time.perf_counter() - started
            # Smoothed, so one slow refresh (a full rebuild) does not hold the next ones back long.
            self._refresh_cost = 0.7 * self._refresh_cost + 0.3 * cost
            self._min_interval = max(self._fastest, self._refresh_cost / _REFRESH_CPU_SHARE)
        # Collections resume once the frame showing the burst is painted (or at the next
        # half-second check, while more changes are still coming).
        self.call_after_refresh(self._release_burst_hold)

    def _release_burst_hold(self) -> None:
        self._burst_hold.release(in_flight=self.ctx.store.writing or self.bridge.pending)

    @property
    def _live(self) -> bool:
        """Views exist to be refreshed: not before mount, not while shutting down (a coalesced
        refresh or tick scheduled earlier may fire after the screens are gone)."""
        if not self.screen_stack or self._exit or self._closing or not self._running:
            return False  # `_running` goes False first thing in Textual's shutdown
        return bool(self.main.query(StatusBar))  # composed, and not yet being taken down

    def refresh_for(self, kinds: frozenset[str]) -> None:
        if not self._live:
            return
        self._update_status()
        current = self.switcher.current
        for v in self.views():
            if not (kinds & v.KINDS):
                continue
            if v.id == current:
                v.refresh_view()
            else:
                v.dirty = True
        screen = self.screen
        if isinstance(screen, WorkloadDetailScreen) and kinds & screen.KINDS:
            screen.refresh_view()

    def refresh_all(self) -> None:
        self.refresh_for(frozenset(set().union(*(v.KINDS for v in VIEW_CLASSES))))

    def _tick(self) -> None:
        # Ages in the status bar move with time; the visible view's WAIT/AGE columns every 10 s.
        if not self._live:
            return
        self._update_status()
        self._ticks += 1
        if self._ticks % 5 == 0:
            self._ages_owed = True
        if self._ages_owed and len(self.screen_stack) == 1:
            self._ages_owed = False
            self.defer("ages", self._refresh_ages)

    def _refresh_ages(self) -> None:
        if self._live and len(self.screen_stack) == 1:
            self.current_view().refresh_view()

    # ------------------------------------------------------------ input first
    def defer(self, name: Hashable, work: Callable[[], None]) -> None:
        """Run a redraw nobody asked for now or, while keys come, once they pause (at most
        `input_first.LONGEST` later): a key never queues behind it. One held per `name`."""
        if not self.input_first.hold(name, work):
            work()
        elif self._held_timer is None:
            self._held_timer = self.set_timer(self.input_first.wait() + 0.001, self._run_held)

    def _run_held(self) -> None:
        self._held_timer = None
        self._run(self.input_first.take())
        if self.input_first.held:  # keys came since the timer was set: wait for them to pause
            self._held_timer = self.set_timer(self.input_first.wait() + 0.001, self._run_held)

    def _run_overdue(self) -> None:
        self._overdue_scheduled = False
        self._run(self.input_first.take_overdue())

    def _run(self, work: list[Callable[[], None]]) -> None:
        # Each piece checks for itself whether the views are still there (a store refresh must
        # still take the bridge's kinds, or the bridge would post no more).
        for w in work:
            w()

    def _update_status(self) -> None:
        th = self.ctx.theme
        self.main.query_one(StatusBar).show(
            context=self.context_name, sources=self.ctx.store.sources(), now=self.ctx.now(), demo=self.demo,
            read_only=self.read_only, last_action=self._last_action, last_ok=self._last_ok,
            warn_style=th.textual.warning or "", bad_style=(th.textual.error or "") + " bold")

    def set_last_action(self, text: str, ok: bool | None) -> None:
        self._last_action, self._last_ok = text, ok
        self._update_status()

    # ------------------------------------------------------------ safety: read-only and RBAC
    def check_binding(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        aid = _ACTION_IDS.get((action, tuple(str(p) for p in parameters)))
        if action == "queue_action" and parameters:
            aid = _QUEUE_IDS.get((self.switcher.current, str(parameters[0])))
        if aid is None:
            return True
        return KM.check(aid, read_only=self.read_only, denied=self.denied)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.check_binding(action, parameters)

    def _rbac_check(self) -> None:  # worker thread
        from kueuetop.actions.rbac import check_access

        ns = self.namespace or ""
        probes = {"patch workloads.kueue.x-k8s.io": ("hold", Target(WORKLOAD, "", ns)),
                  "patch clusterqueues.kueue.x-k8s.io": ("stop", Target(CLUSTER_QUEUE, "")),
                  "patch localqueues.kueue.x-k8s.io": ("stop", Target(LOCAL_QUEUE, "", ns))}
        denied = {}
        with self.runner.session() as cc:  # cancelled on quit like the actions' requests
            for need, (action, target) in probes.items():
                res = check_access(cc.api, action, target, timeout=self.runner.request_timeout)
                if not res.allowed:
                    denied[need] = res.reason
        if denied and not self.runner.quitting:
            self.call_from_thread(self._set_denied, denied)

    def _set_denied(self, denied: dict[str, str]) -> None:
        self.denied = denied
        self.refresh_bindings()
        reasons = sorted({KM.disabled_reason(a.id, denied) or "" for a in KM.ACTIONS} - {""})
        self.notify("\n".join(reasons[:4]), title="some actions are not allowed", severity="warning", timeout=10)

    # ------------------------------------------------------------ actions from views
    def start_workload_action(self, action: str, keys: list[tuple[str, str]]) -> None:
        self.runner.start(action, [Target(WORKLOAD, name, ns) for ns, name in keys])

    def start_actions(self, action: str, targets: list[Target]) -> None:
        self.runner.start(action, targets)

    def open_workload(self, key: tuple[str, str]) -> None:
        self.push_screen(WorkloadDetailScreen(self.ctx, key, api=self.api, kueue_version=self.runner.kueue_version))

    # ------------------------------------------------------------ what views ask for (messages up)
    @on(OpenWorkload)
    def _on_open_workload(self, message: OpenWorkload) -> None:
        self.open_workload(message.key)

    @on(JumpTo)
    def _on_jump_to(self, message: JumpTo) -> None:
        self.jump_to(message.view, message.filter_text)

    @on(ShowYaml)
    def _on_show_yaml(self, message: ShowYaml) -> None:
        self.show_yaml(message.kind, message.key)

    @on(RunAction)
    def _on_run_action(self, message: RunAction) -> None:
        self.start_actions(message.action, message.targets)

    def show_yaml(self, kind: str, key: object) -> None:
        if not kind:
            return
        skey = key if isinstance(key, tuple) else ("", str(key))
        # Fetched from the API server in a worker: the store keeps parsed objects only.
        self.push_screen(ObjectYamlScreen(kind, skey, api=self.api, kueue_version=self.runner.kueue_version,
                                          last_seen=self.ctx.store.raw(kind, skey)))

    # ------------------------------------------------------------ global key actions
    def action_help(self) -> None:
        scope = self.switcher.current
        rows = [(", ".join(self.get_key_display(Binding(k, "")) for k in keys.split(", ")), desc, aid)
                for keys, desc, aid in KM.help_rows(self.keymap, scope, read_only=self.read_only)]
        extra = ["Filters: regex · !regex (inverse) · -l key=value (labels) · state:pending",
                 "Commands: " + " ".join(":" + w for w in KM.command_words())]
        if self.read_only:
            extra.append("READ-ONLY: cluster-changing actions are hidden.")
        self.push_screen(HelpScreen(f"kueuetop keys: {scope}", rows, extra))

    def _prompt(self, which: str, value: str = "") -> None:
        for other in self.main.query(".prompt").results(Input):
            other.set_class(other.id == which, "-shown")
        inp = self.main.query_one(f"#{which}", Input)
        inp.value = value
        inp.focus()

    def _hide_prompts(self) -> None:
        for inp in self.main.query(".prompt").results(Input):
            inp.remove_class("-shown")
        self._focus_view()

    def action_command(self) -> None:
        self._prompt("command")

    def action_filter(self) -> None:
        tv = self.table_view()
        if tv is None:
            self.notify("this view has no filter", severity="information")
            return
        self._prompt("filter", tv.model.filter.text)

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            tv = self.table_view()
            if tv is not None:
                tv.set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "filter":
            self._hide_prompts()
            return
        line = event.value
        self._hide_prompts()
        cmd = KM.resolve_command(line)
        if cmd is None:
            if line.strip():
                self.notify(f"unknown command {line.strip()!r} (try :help)", severity="warning")
            return
        if cmd.kind == "quit":
            self.runner.shutdown()
            self.exit(0)
        elif cmd.kind == "help":
            self.action_help()
        elif cmd.kind == "whatif":
            self.open_what_if(cmd.arg)
        elif cmd.kind == "view":
            self.action_switch_view(cmd.target)
            tv = self.table_view()
            if tv is not None and cmd.arg:
                tv.set_filter(cmd.arg.lstrip("/"))

    def action_back(self) -> None:
        if any(i.has_class("-shown") for i in self.main.query(".prompt").results(Input)):
            self._hide_prompts()
        elif len(self.screen_stack) > 1:
            self.pop_screen()
        else:
            tv = self.table_view()
            if tv is not None and (tv.model.filter.text or tv.model.marks):
                tv.model.marks.clear()
                tv.set_filter("")
            elif isinstance(tv, EventsView):
                tv.unfollow()

    def action_forecast_whatif(self) -> None:
        self.open_what_if()

    def open_what_if(self, text: str = "") -> None:
        """The what-if panel; from a pending workload's row, its ClusterQueue's change preselected."""
        if isinstance(self.screen, WhatIfScreen):
            return
        focus_cq = ""
        tv = self.table_view() if len(self.screen_stack) == 1 else None
        row = tv.cursor_row() if tv is not None and tv.raw_kind() == K.WORKLOADS else None
        wl = self.ctx.store.get(K.WORKLOADS, row.key) if row is not None else None  # type: ignore[arg-type]
        if isinstance(wl, Workload) and not wl.is_finished and not wl.has_quota_reservation:
            focus_cq = str(row.sort.get("cq") or "") if row is not None else ""
        fc = self.forecaster
        self.push_screen(WhatIfScreen(self.ctx, history=fc.history if fc is not None else None,
                                      latest=(lambda: fc.latest) if fc is not None else (lambda: None),
                                      focus_cq=focus_cq, text=text))

    def action_drill(self) -> None:
        tv = self.table_view()
        row = tv.cursor_row() if tv else None
        if tv is not None and row is not None:
            tv.drill(row)

    def action_refresh(self) -> None:
        self.refresh_all()

    def action_palette(self) -> None:
        self.action_command_palette()

    def action_mark(self) -> None:
        if (tv := self.table_view()) is not None:
            tv.toggle_mark()

    def action_mark_range(self) -> None:
        if (tv := self.table_view()) is not None:
            tv.mark_range()

    def action_mark_clear(self) -> None:
        if (tv := self.table_view()) is not None:
            tv.clear_marks()

    def _sort(self, name: str) -> None:
        if (tv := self.table_view()) is not None:
            tv.sort_by(name)

    def action_sort_name(self) -> None:
        self._sort("name")

    def action_sort_age(self) -> None:
        self._sort("age")

    def action_sort_status(self) -> None:
        self._sort("status")

    def action_sort_namespace(self) -> None:
        self._sort("namespace")

    def action_sort_column(self) -> None:
        if (tv := self.table_view()) is not None:
            tv.sort_by_column()

    def action_wide(self) -> None:
        if (tv := self.table_view()) is not None:
            tv.toggle_wide()

    def key_label(self, action_id: str) -> str:
        """The first key of an action, as the footer shows it (after the user's remaps)."""
        keys = self.keymap.keys.get(action_id, ())
        return KM.key_label(keys[0]) if keys else action_id

    def action_yaml(self) -> None:
        tv = self.table_view()
        row = tv.cursor_row() if tv else None
        if tv is not None and row is not None:
            self.show_yaml(*tv.yaml_target(row))

    def action_describe(self) -> None:
        tv = self.table_view()
        row = tv.cursor_row() if tv else None
        if tv is None or row is None:
            return
        if tv.raw_kind() == K.WORKLOADS:
            self.open_workload(row.key)  # type: ignore[arg-type]
        else:
            self.show_yaml(*tv.yaml_target(row))

