"""`kueuetop --replay`: Pilot drives the console on a recording (tests/recordings.py's history:
three workloads queued at 10–12 s, w0 admitted at 20 s, w2 deleted at 31 s, the GPU source
failing at 33 s). The views show the recorded moment; the timeline marks the triage board's
problems; the keys play, step, jump and follow a workload; actions are off."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kueuetop.sources.replay import Recording, Replay
from kueuetop.tui.keymap import load_keymap
from kueuetop.tui.replay_app import ReplayApp, Timeline
from kueuetop.tui.themes import load_themes
from kueuetop.views.replay_time import utc
from tests.builders import T0
from tests.recordings import Live, Wrap, record_history
from tests.tui.screen_text import screen_text

from .test_app import NO_USER, column, until


def _app(path: Path, **kw: Any) -> ReplayApp:
    return ReplayApp(Recording.open(str(path)), themes=load_themes(user=NO_USER), keymap=load_keymap(),
                     history_slices=33, **kw)


def run(app: ReplayApp, body: Callable[[Pilot[int]], Awaitable[None]]) -> None:
    async def main() -> None:
        async with app.run_test(size=(160, 40), notifications=True) as pilot:
            await pilot.pause()
            await body(pilot)

    try:
        asyncio.run(asyncio.wait_for(main(), 120))
    finally:
        app.recording.close()


def keys(text: str) -> list[str]:
    return [{"-": "minus", ":": "colon", ".": "full_stop"}.get(c, c) for c in text]


def _timeline(app: ReplayApp) -> str:
    return str(app.main.query_one(Timeline).render())


def test_replay_console_shows_the_moment_and_marks_the_timeline(tmp_path: Path) -> None:
    path = tmp_path / "r.ktrec"
    record_history(path)
    app = _app(path, initial_view="workloads", at=T0 + 13)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: app.history_ready)
        text = screen_text(app)
        assert " REPLAY " in text and "READ-ONLY" not in text
        assert sorted(s.strip() for s in column(app, "workloads", "NAME")) == ["w0", "w1", "w2"]
        states = dict(zip((s.strip() for s in column(app, "workloads", "NAME")),
                          (s.strip() for s in column(app, "workloads", "STATE")), strict=True))
        assert states["w0"].startswith("Pending")
        # The timeline: one cell per second here; the failing GPU source at 33 s is "broken".
        tl = _timeline(app)
        assert "█" in tl and tl.index("█") > tl.index("[")
        # Actions are off: the hold key does nothing, and its binding is not offered.
        await pilot.press("h")
        await pilot.pause()
        assert len(app.screen_stack) == 1 and app.api is None
        # Step forward ten steps (a step: 1 s here, the recording being short): w0 is admitted.
        await pilot.press("right_curly_bracket")
        assert await until(pilot, lambda: any(s.strip().startswith("Admitted")
                                              for s in column(app, "workloads", "STATE")))
        assert app.at == T0 + 23
        await pilot.press("left_square_bracket")
        assert await until(pilot, lambda: app.at == T0 + 22)
        # The console's store (swapped in from checkpoints and steps) is the replay's at that moment.
        fresh = Recording.open(str(path))
        assert Live.state(Wrap(app.ctx.store)) == Live.state(Wrap(Replay(fresh).seek(app.at)))
        fresh.close()
        # Jump to a typed time: the end (-0s), where w2 is gone.
        await pilot.press("t")
        await pilot.press(*keys("-0s"), "enter")
        assert await until(pilot, lambda: sorted(s.strip() for s in column(app, "workloads", "NAME"))
                           == ["w0", "w1"]), (column(app, "workloads", "NAME"), app.at - T0)
        assert app.at == app.recording.end_time
        # A bad moment is a notification, not a crash.
        await pilot.press("t")
        await pilot.press(*keys("99:99"), "enter")
        assert await until(pilot, lambda: "invalid time of day" in screen_text(app))

    run(app, body)


def test_next_event_of_the_selected_workload_and_play(tmp_path: Path) -> None:
    path = tmp_path / "r.ktrec"
    record_history(path)
    app = _app(path, initial_view="workloads", at=T0 + 10.5)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: app.history_ready and column(app, "workloads", "NAME"))
        names = [s.strip() for s in column(app, "workloads", "NAME")]
        # Put the cursor on w0 (created at 10 s, admitted at 20 s): `n` jumps to its admission.
        for _ in range(names.index("w0")):
            await pilot.press("down")
        assert app.selected_workload() == ("ns", "w0")
        await pilot.press("n")
        assert await until(pilot, lambda: app.at == T0 + 20), utc(app.at)
        await pilot.press("n")
        assert await until(pilot, lambda: "no later change of ns/w0" in screen_text(app))
        # Play from here: time moves on by itself, and stops at the end.
        before = app.at
        await pilot.press("p")
        assert await until(pilot, lambda: app.at > before)
        assert "▶" in _timeline(app)
        assert await until(pilot, lambda: not app.playing, 30)
        assert app.at == app.recording.end_time

    run(app, body)
