"""`kueuetop --replay FILE`: the console on a recording, at a chosen moment.

Every view, explain and the workload detail read the console's store as they do live; here that
store is made to hold what the recorded one held at the moment shown (sources/replay.py
`sync_store`), and the console's clock reads that moment, so ages and waits are as they were.
Actions are off (read-only, and no API client: a replay never writes to any cluster); the status
bar says REPLAY. A timeline bar above it marks the triage board's problems along the recording.

Keys: `p` play/pause, `]` / `[` a step forward/back, `}` / `{` ten steps, `t` jump to a time
typed as `03:12`, `-2h`, `+10m` or an ISO time, `n` the next change of the selected workload.
"""

from __future__ import annotations

import gc
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.timer import Timer
from textual.widgets import Input

from kueuetop.sources.recording_format import RecordingError
from kueuetop.sources.replay import Recording, Replay, sync_store
from kueuetop.store import Store
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.detail import WorkloadDetailScreen
from kueuetop.tui.oneline import OneLine
from kueuetop.tui.replay_history import ReplayHistory, scan_history
from kueuetop.tui.statusbar import StatusBar
from kueuetop.tui.views.workloads import WorkloadsView
from kueuetop.views.replay_time import MomentError, parse_moment
from kueuetop.views.timeline import clock_text, timeline_line

STEPS = 200  # a step is this fraction of the recording (at least a second)
PLAY_EVERY = 0.25  # seconds between steps while playing


class Timeline(OneLine):
    DEFAULT_CSS = """
    Timeline { height: 1; background: $panel; color: $text; padding: 0 1; }
    """

    def draw(self, marks: list[str], start: float, end: float, at: float, playing: bool, ascii_only: bool) -> None:
        width = max(20, self.size.width - 2 if self.size.width else 80)
        text, cursor = timeline_line(marks, start, end, at, width, playing=playing, ascii_only=ascii_only)
        t = Text(text, no_wrap=True)
        t.stylize("reverse bold", cursor, cursor + 1)
        self.show_text(t)

    def on_resize(self) -> None:
        app = self.app
        if isinstance(app, ReplayApp):
            app.draw_timeline()


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class ReplayApp(KueuetopApp):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "replay_play", "Play/pause", priority=True),
        Binding("right_square_bracket", "replay_step(1)", "Step", show=False, priority=True),
        Binding("left_square_bracket", "replay_step(-1)", "Back", show=False, priority=True),
        Binding("right_curly_bracket", "replay_step(10)", "10 steps", show=False, priority=True),
        Binding("left_curly_bracket", "replay_step(-10)", "10 back", show=False, priority=True),
        Binding("t", "replay_jump", "Jump to", priority=True),
        Binding("n", "replay_next", "Next event", priority=True),
    ]

    def __init__(self, recording: Recording, *, at: float | None = None, history_slices: int = 240,
                 **kw: Any) -> None:
        self.recording = recording
        self.replay = Replay(recording)
        start, end = recording.start, recording.end_time
        self.at = end if at is None else min(max(at, start), end)
        self._replay_clock = _Clock(self.at)
        store = Store(clock=self._replay_clock)
        h = recording.header
        kw.setdefault("context", str(h.get("context") or h.get("server") or recording.name))
        kw.update(api=None, read_only=True, forecast=False, check_rbac=False, clock=self._replay_clock,
                  history_dir=None)
        super().__init__(store, server=str(h.get("server") or ""), **kw)
        self.history = ReplayHistory()
        self.history_slices = history_slices
        self.history_ready = False
        self.playing = False
        self._play_timer: Timer | None = None
        self.step = max(1.0, (end - start) / STEPS)
        self._ascii = bool(kw.get("ascii_only"))
        self._show(self.at)

    # ------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, StatusBar):
                yield Input(placeholder="jump to  03:12 · -2h · +10m · 2026-03-10T03:12:00Z · start · end",
                            id="replay-time", classes="prompt")
                yield Timeline(id="timeline")
            yield widget

    def on_mount(self) -> None:
        super().on_mount()
        self.draw_timeline()
        self.run_worker(self._scan, thread=True, group="replay-history", exit_on_error=False)

    def _scan(self) -> None:  # worker thread
        try:
            history = scan_history(self.recording, self.history_slices)
        except RecordingError as exc:
            self.call_from_thread(self.notify, str(exc), title="replay", severity="warning")
            return
        self.call_from_thread(self._history_done, history)

    def _history_done(self, history: ReplayHistory) -> None:
        self.history = history
        self.replay.checkpoints = history.checkpoints  # same file, same frames: jumps start there
        # They stay for the session: out of the collector's walks (as the store's objects, tui/heap.py).
        gc.freeze()
        self.history_ready = True
        self.draw_timeline()

    # ------------------------------------------------------------ the moment shown
    def _show(self, t: float) -> None:
        """Make the console's store what the recorded one was at `t`."""
        source = self.replay.seek(t)
        self.at = t
        self._replay_clock.t = t
        sync_store(self.ctx.store, source)

    def seek(self, t: float) -> None:
        start, end = self.recording.start, self.recording.end_time
        self._show(min(max(t, start), end))
        self.draw_timeline()
        self._update_status()

    def draw_timeline(self) -> None:
        try:
            tl = self.main.query_one(Timeline)
        except Exception:  # not composed yet (or being torn down)
            return
        tl.draw(self.history.marks, self.recording.start, self.recording.end_time, self.at, self.playing,
                self._ascii)

    def _update_status(self) -> None:
        th = self.ctx.theme
        self.main.query_one(StatusBar).show(
            context=self.context_name, sources=self.ctx.store.sources(), now=self.ctx.now(), demo=None,
            read_only=False, last_action=self._last_action, last_ok=self._last_ok,
            warn_style=th.textual.warning or "", bad_style=(th.textual.error or "") + " bold",
            badge=f"REPLAY {clock_text(self.at, with_date=True)}")

    # ------------------------------------------------------------ keys
    def action_replay_play(self) -> None:
        self.playing = not self.playing
        if self.playing:
            if self.at >= self.recording.end_time:
                self.seek(self.recording.start)  # from the top, as a player does at the end
            self._play_timer = self.set_interval(PLAY_EVERY, self._play_tick)
        elif self._play_timer is not None:
            self._play_timer.stop()
            self._play_timer = None
        self.draw_timeline()

    def _play_tick(self) -> None:
        if self.at >= self.recording.end_time:
            self.action_replay_play()  # stop at the end
            return
        self.seek(self.at + self.step)

    def action_replay_step(self, steps: int) -> None:
        self.seek(self.at + int(steps) * self.step)

    def action_replay_jump(self) -> None:
        self._prompt("replay-time")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id != "replay-time":
            super().on_input_submitted(event)
            return
        event.stop()
        self._hide_prompts()
        try:
            t = parse_moment(event.value, self.recording.start, self.recording.end_time)
        except MomentError as exc:
            self.notify(str(exc), title="jump", severity="warning")
            return
        self.seek(t)

    def selected_workload(self) -> tuple[str, str] | None:
        top = self.screen_stack[-1]
        if isinstance(top, WorkloadDetailScreen):
            return top.key
        view = self.current_view()
        if isinstance(view, WorkloadsView):
            row = view.cursor_row()
            return row.key if row is not None else None
        return None

    def action_replay_next(self) -> None:
        key = self.selected_workload()
        if key is None:
            self.notify("select a workload first (2: Workloads)", title="next event", severity="warning")
            return
        if not self.history_ready:
            self.notify("still reading the recording", title="next event")
            return
        t = self.history.next_change(key, self.at)
        if t is None:
            self.notify(f"no later change of {key[0]}/{key[1]} in the recording", title="next event")
            return
        self.seek(t)
