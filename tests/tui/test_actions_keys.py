"""Every action from a key press (or the command palette) to the changed state on screen.

Each test works on a queue of its own (see action_cluster.py), drives the console with Pilot, and
reads only what is drawn (screen text) and TableView-level selection, never the table widget.
Every wait is bounded; nothing asserts on timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from kueuetop.actions.audit import read_audit
from kueuetop.sim.serve import ServedCluster
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.detail import WorkloadDetailScreen
from kueuetop.tui.screens import ConfirmScreen
from kueuetop.tui.views.base import TableView
from tests.tui.action_cluster import Queues, Watch, viewer_kubeconfig, watch
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until


@pytest.fixture
def viewer(cluster: ServedCluster, tmp_path: Path) -> Iterator[Watch]:
    yield from watch(viewer_kubeconfig(cluster, tmp_path / "viewer.kubeconfig"))


def app_for(w: Watch, **kw: object) -> KueuetopApp:
    class _Live:  # make_app wants something with .conn
        conn = w.conn

    return make_app(w.store, _Live, **kw)  # type: ignore[arg-type]


def line_with(app: KueuetopApp, needle: str) -> str:
    """The first screen line showing `needle` ('' when none does)."""
    return next((line for line in screen_text(app).splitlines() if needle in line), "")


def row_shows(app: KueuetopApp, name: str, word: str) -> bool:
    """A table row (not the title, which repeats the filter) shows `name` and `word`."""
    return any(f" {name} " in line and word in line and "filter:" not in line
               for line in screen_text(app).splitlines())


def table(app: KueuetopApp) -> TableView:
    tv = app.table_view()
    assert tv is not None
    return tv


async def confirm(pilot: Pilot[int], app: KueuetopApp, *keys: str, expect: str = "") -> str:
    """Press `keys`, wait for the confirmation, check it shows `expect`, press y; returns its text."""
    await pilot.press(*keys)
    assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 15), screen_text(app)
    if expect:
        assert await until(pilot, lambda: expect in screen_text(app), 5), screen_text(app)
    text = screen_text(app)
    await pilot.press("y")
    assert await until(pilot, lambda: not isinstance(app.screen, ConfirmScreen), 5)
    return text


def audited(action: str, target: str, result: str = "ok") -> bool:
    return any(r["action"] == action and r["target"] == target and r["result"] == result for r in read_audit())


# ------------------------------------------------------------------ workload actions by key
def test_resume_from_key_press(admin: Watch, queues: Queues) -> None:
    n = queues.new_queue()
    queues.add_workload(f"low-{n}", n, 10, active=False)
    app = app_for(admin, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(f"lq-ui-{n}")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Inactive"), 15), screen_text(app)
        await confirm(pilot, app, "u", expect="resume")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Admitted"), 20), screen_text(app)
        assert await until(pilot, lambda: audited("resume", f"team-a/low-{n}"), 20), read_audit()[-3:]

    run(app, body)


def test_requeue_from_key_press(admin: Watch, queues: Queues) -> None:
    n = queues.low_running_high_waiting()
    app = app_for(admin, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(f"high-{n}")
        assert await until(pilot, lambda: row_shows(app, f"high-{n}", "Pending"), 15), screen_text(app)
        await confirm(pilot, app, "r", expect="requeue")
        # Requeued: back in its queue, still waiting (the GPU is taken), and the result is shown.
        assert await until(pilot, lambda: audited("requeue", f"team-a/high-{n}"), 20), read_audit()[-3:]
        assert await until(pilot, lambda: "requeue" in line_with(app, "requeue:"), 5), (app._last_action, read_audit()[-2:])
        assert await until(pilot, lambda: row_shows(app, f"high-{n}", "Pending"), 10), screen_text(app)

    run(app, body)


def test_preempt_evicts_the_low_one_and_admits_the_waiting_one(admin: Watch, queues: Queues) -> None:
    n = queues.low_running_high_waiting()
    app = app_for(admin, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        tv = table(app)
        tv.set_filter(f"lq-ui-{n}")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Admitted")
                           and row_shows(app, f"high-{n}", "Pending"), 15), screen_text(app)
        tv.sort_by("priority")  # high first, low second
        await pilot.press("down")
        assert await until(pilot, lambda: (row := tv.cursor_row()) is not None and row.key[1] == f"low-{n}")
        # The engine's preview names the workload that gets in; the key is a ctrl key (evicts work).
        text = await confirm(pilot, app, "ctrl+k", expect=f"would admit team-a/high-{n}")
        assert "evicts running work" in text
        assert await until(pilot, lambda: row_shows(app, f"high-{n}", "Admitted"), 20), screen_text(app)
        assert not row_shows(app, f"low-{n}", "Admitted")
        assert await until(pilot, lambda: audited("preempt", f"team-a/low-{n}"), 20), read_audit()[-3:]

    run(app, body)


# ------------------------------------------------------------------ queue actions
def test_queue_stop_drain_resume_from_cluster_queues_view(admin: Watch, queues: Queues) -> None:
    n = queues.low_running_high_waiting()
    app = app_for(admin, initial_view="clusterqueues")
    cq = f"cq-ui-{n}"

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(cq)
        assert await until(pilot, lambda: row_shows(app, cq, "Active"), 15), screen_text(app)
        await confirm(pilot, app, "s", expect=f"cq/{cq}")
        assert await until(pilot, lambda: row_shows(app, cq, "Stopped(Hold)"), 20), screen_text(app)
        await confirm(pilot, app, "u")
        assert await until(pilot, lambda: row_shows(app, cq, "Active"), 20), screen_text(app)
        await confirm(pilot, app, "ctrl+d", expect="evicts running work")
        assert await until(pilot, lambda: row_shows(app, cq, "Stopped(HoldAndDrain)"), 20), screen_text(app)
        # Drained: its admitted workload was evicted.
        assert await until(pilot, lambda: not queues.holds_quota(f"low-{n}"), 20)
        await confirm(pilot, app, "u")
        assert await until(pilot, lambda: row_shows(app, cq, "Active"), 20), screen_text(app)
        for verb in ("stop", "drain", "resume-queue"):
            assert await until(pilot, lambda v=verb: audited(v, f"cq/{cq}"), 20), verb

    run(app, body)


# ------------------------------------------------------------------ from the detail screen
def test_hold_and_resume_from_the_workload_detail_screen(admin: Watch, queues: Queues) -> None:
    n = queues.low_running_high_waiting()
    app = app_for(admin, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(f"low-{n}")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Admitted"), 15), screen_text(app)
        await pilot.press("enter")
        assert await until(pilot, lambda: isinstance(app.screen, WorkloadDetailScreen))
        assert await until(pilot, lambda: f"team-a/low-{n}  Admitted" in screen_text(app), 10), screen_text(app)
        # Same preview as from the table: holding low lets high in.
        await confirm(pilot, app, "h", expect=f"would admit team-a/high-{n}")
        assert isinstance(app.screen, WorkloadDetailScreen)
        assert await until(pilot, lambda: f"team-a/low-{n}  Inactive" in screen_text(app), 20), screen_text(app)
        await confirm(pilot, app, "u", expect="resume")
        assert await until(pilot, lambda: f"team-a/low-{n}  Inactive" not in screen_text(app)
                           and f"team-a/low-{n}  " in screen_text(app), 20), screen_text(app)
        assert await until(pilot, lambda: audited("hold", f"team-a/low-{n}")
                           and audited("resume", f"team-a/low-{n}"), 20), read_audit()[-3:]

    run(app, body)


# ------------------------------------------------------------------ the command palette
async def palette(pilot: Pilot[int], app: KueuetopApp, query: str, shown: str) -> str:
    """Open the palette, type `query`, wait until `shown` is listed; returns the screen text."""
    await pilot.press("ctrl+p")
    assert await until(pilot, lambda: "CommandPalette" in type(app.screen).__name__, 5)
    await pilot.press(*query)
    assert await until(pilot, lambda: shown in screen_text(app), 10), screen_text(app)
    return screen_text(app)


def test_palette_runs_hold_through_the_confirmation(admin: Watch, queues: Queues) -> None:
    n = queues.low_running_high_waiting()
    app = app_for(admin, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(f"low-{n}")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Admitted"), 15), screen_text(app)
        text = await palette(pilot, app, "hold", f"Hold team-a/low-{n}")
        assert "workload.hold" in text  # the action id and key as help
        await pilot.press("down")
        for _ in range(3):  # enter picks the hit, then runs it
            await pilot.press("enter")
            if await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 3):
                break
        assert isinstance(app.screen, ConfirmScreen), screen_text(app)
        assert f"hold team-a/low-{n}?" in screen_text(app) and f"would admit team-a/high-{n}" in screen_text(app)
        await pilot.press("y")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Inactive"), 20), screen_text(app)
        assert await until(pilot, lambda: audited("hold", f"team-a/low-{n}"), 20), [(r["action"], r["target"], r["result"], r["message"]) for r in read_audit()]

    run(app, body)


def test_palette_has_queue_actions_and_view_switches(admin: Watch, queues: Queues) -> None:
    n = queues.new_queue()
    app = app_for(admin, initial_view="clusterqueues")

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(f"cq-ui-{n}")
        assert await until(pilot, lambda: row_shows(app, f"cq-ui-{n}", "Active"), 15), screen_text(app)
        await palette(pilot, app, "drain", f"Drain ClusterQueue cq/cq-ui-{n}")
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1, 5)
        await palette(pilot, app, "view gpus", "View GPUs")
        await pilot.press("down")
        for _ in range(3):
            await pilot.press("enter")
            if await until(pilot, lambda: app.switcher.current == "gpus", 3):
                break
        assert app.switcher.current == "gpus"

    run(app, body)


# ------------------------------------------------------------------ read-only and forbidden
def test_read_only_hides_actions_everywhere(admin: Watch, queues: Queues) -> None:
    n = queues.low_running_high_waiting()
    app = app_for(admin, initial_view="workloads", read_only=True)

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(f"low-{n}")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Admitted"), 15), screen_text(app)
        await palette(pilot, app, "view", "View Workloads")  # the palette works in read-only mode
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1, 5)
        await pilot.press("ctrl+p", *"hold")
        await pilot.pause(1.0)
        assert "CommandPalette" in type(app.screen).__name__ and "hold" in screen_text(app)
        assert "Hold team-a" not in screen_text(app) and "Preempt" not in screen_text(app)
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1, 5)
        await pilot.press("enter")  # the detail screen: no action keys either
        assert await until(pilot, lambda: isinstance(app.screen, WorkloadDetailScreen))
        for key in ("h", "u", "ctrl+k"):
            await pilot.press(key)
        await pilot.pause(0.5)
        assert isinstance(app.screen, WorkloadDetailScreen)
        await pilot.press("escape", "3")
        table(app).set_filter(f"cq-ui-{n}")
        assert await until(pilot, lambda: row_shows(app, f"cq-ui-{n}", "Active"), 10), screen_text(app)
        for key in ("s", "ctrl+d"):
            await pilot.press(key)
        await pilot.pause(0.5)
        assert len(app.screen_stack) == 1 and row_shows(app, f"cq-ui-{n}", "Active")
        assert queues.holds_quota(f"low-{n}")  # nothing was sent

    run(app, body)


def test_forbidden_actions_are_greyed_with_the_reason(viewer: Watch, queues: Queues) -> None:
    n = queues.low_running_high_waiting()
    app = app_for(viewer, initial_view="workloads", check_rbac=True)

    async def body(pilot: Pilot[int]) -> None:
        table(app).set_filter(f"low-{n}")
        assert await until(pilot, lambda: row_shows(app, f"low-{n}", "Admitted"), 15), screen_text(app)
        assert await until(pilot, lambda: app.denied, 10), "RBAC check did not report the viewer's limits"
        assert app.check_binding("workload_action", ("hold",)) is None
        await pilot.press("h")  # greyed: the key does nothing
        await pilot.pause(0.5)
        assert not isinstance(app.screen, ConfirmScreen)
        text = await palette(pilot, app, "hold", "(not allowed)")
        assert "patch workloads.kueue.x-k8s.io" in text  # the reason, as help text
        await pilot.press("escape")
        await pilot.press("3")
        table(app).set_filter(f"cq-ui-{n}")
        assert await until(pilot, lambda: row_shows(app, f"cq-ui-{n}", "Active"), 10)
        assert app.check_binding("queue_action", ("stop",)) is None
        # Forced past the greyed key (a command path): refused before any confirmation, audited.
        table(app).action_queue_action("stop")  # type: ignore[attr-defined]
        assert await until(pilot, lambda: audited("stop", f"cq/cq-ui-{n}", "refused"), 15), read_audit()[-3:]
        assert not isinstance(app.screen, ConfirmScreen)
        assert "forbidden" in screen_text(app)
        assert queues.holds_quota(f"low-{n}")

    run(app, body)
