"""The console end to end: Pilot drives KueuetopApp against an in-process simulated cluster.

Every wait is bounded; nothing asserts on timing.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from kueuetop.actions.audit import read_audit
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase, derive_state
from kueuetop.store import Entry, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.keymap import load_keymap
from kueuetop.tui.screens import ConfirmScreen
from kueuetop.tui.themes import load_themes
from kueuetop.tui.views.base import TableView
from kueuetop.tui.virtual_table import VirtualTable
from tests.tui.screen_text import screen_text

from .conftest import Live

NO_USER = Path("/nonexistent-kueuetop-themes")


def make_app(store: Store, live: Live | None = None, **kw: Any) -> KueuetopApp:
    kw.setdefault("themes", load_themes(user=NO_USER))
    kw.setdefault("keymap", load_keymap())
    kw.setdefault("check_rbac", False)
    return KueuetopApp(store, api=live.conn.api if live else None, context="kueuetop-sim", **kw)


def run(app: KueuetopApp, body: Callable[[Pilot[int]], Awaitable[None]], size: tuple[int, int] = (160, 48)) -> None:
    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            await pilot.pause()
            await body(pilot)

    asyncio.run(asyncio.wait_for(main(), 120))


async def until(pilot: Pilot[int], pred: Callable[[], Any], timeout: float = 30.0, step: float = 0.1) -> Any:
    """Let the app run until `pred()` holds or a generous deadline passes; returns its last value.
    Every wait on the app goes through here: a condition, never a fixed pause."""
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value or time.monotonic() > deadline:
            return value
        await pilot.pause(step)


def table_cells(app: KueuetopApp, view: str) -> list[list[str]]:
    tv = app.main.query_one(f"#{view}", TableView)
    t: VirtualTable = tv.table
    return [[getattr(c, "plain", str(c)) for c in t.get_row_at(i)] for i in range(t.row_count)]


def column(app: KueuetopApp, view: str, name: str) -> list[str]:
    tv = app.main.query_one(f"#{view}", TableView)
    idx = tv._column_keys.index(name)
    return [row[idx] for row in table_cells(app, view)]


def test_every_view_renders_the_scenario(live: Live) -> None:
    app = make_app(live.store, live, max_refresh_rate=4.0)  # a low cap, so the coalescing below shows

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: "reserved-np" in screen_text(app)), screen_text(app)
        text = screen_text(app)
        assert "CLUSTERQUEUE" in text and "cq-team-a-hp" in text and "GPU fleet" in text and "kube:live" in text
        expected = {"2": ("workloads", "NAMESPACE", "team-a"), "3": ("clusterqueues", "NAME", "cq-team-a-lp"),
                    "4": ("localqueues", "NAME", "lq-team-b-hp"), "5": ("cohorts", "NAME", "team-a-b"),
                    "6": ("flavors", "NAME", "gpu-l4-spot"), "7": ("nodes", "POOL", "reserved-np")}
        for key, (view, col, value) in expected.items():
            await pilot.press(key)
            assert await until(pilot, lambda v=view, c=col, x=value: any(x in s for s in column(app, v, c))), \
                (view, table_cells(app, view)[:3])
        # Queue status, quota bars and the per-flavor pane of ClusterQueues.
        await pilot.press("3")
        assert "Active" in [s.strip() for s in column(app, "clusterqueues", "STATUS")]
        assert any("/" in q for q in column(app, "clusterqueues", "QUOTA"))
        assert "quota" in screen_text(app) and "nvidia.com/gpu" in screen_text(app)
        await pilot.press("8")
        assert await until(pilot, lambda: "GPU util" in screen_text(app) and "reserved-np" in screen_text(app))
        await pilot.press("m")
        assert await until(pilot, lambda: "GPU memory" in screen_text(app))
        # Detail of a workload: explain verdict, conditions timeline, YAML.
        await pilot.press("2")
        await pilot.press("enter")
        assert await until(pilot, lambda: "Why (explain)" in screen_text(app))
        text = screen_text(app)
        assert "Conditions" in text and "Pods and GPUs" in text
        await pilot.press("escape")
        assert await until(pilot, lambda: len(app.screen_stack) == 1)
        # Store changes are coalesced: over a stretch of 20 store batches from the live cluster,
        # no more than the token bucket allows (two at once, then the app's rate cap a second).
        batches = [0]
        unsubscribe = live.store.subscribe(lambda _: batches.__setitem__(0, batches[0] + 1))
        started, count = time.monotonic(), app.refresh_count
        assert await until(pilot, lambda: batches[0] >= 20, 60), batches
        unsubscribe()
        assert app.refresh_count - count <= (time.monotonic() - started) / app._fastest + 2

    run(app, body)


def test_filter_and_sort_change_rows(live: Live) -> None:
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: len(table_cells(app, "workloads")) >= 8)
        await pilot.press("slash", *"team-b", "enter")
        assert await until(pilot, lambda: set(column(app, "workloads", "NAMESPACE")) == {"team-b"})
        tv = app.main.query_one("#workloads", TableView)
        tv.set_filter("!team-b")
        assert "team-b" not in column(app, "workloads", "NAMESPACE")
        tv.set_filter("-l kueue.x-k8s.io/job-uid state:admitted")
        states = column(app, "workloads", "STATE")
        assert states and set(states) <= {"Admitted"}, states
        tv.set_filter("")
        await pilot.press("R")  # priority, highest first
        prios = [int(p) for p in column(app, "workloads", "PRIO")]
        assert prios == sorted(prios, reverse=True)
        await pilot.press("N")  # name, ascending; again: descending
        names = column(app, "workloads", "NAME")
        assert names == sorted(names)
        await pilot.press("N")
        assert column(app, "workloads", "NAME") == sorted(names, reverse=True)
        await pilot.press("escape")  # clears filter and marks

    run(app, body)


def _holdable(store: Store, tried: frozenset = frozenset()) -> tuple[str, str] | None:
    now = time.time()
    for phase in (Phase.PENDING, Phase.ADMITTED):
        for key in sorted(store.workloads_in_phase(phase)):
            wl = store.get(K.WORKLOADS, key)
            if key not in tried and isinstance(wl, Workload) and wl.active and derive_state(wl, now).phase is phase:
                return key
    return None


def test_hold_from_key_press_to_inactive_row(live: Live) -> None:
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        tried: set = set()
        # The demo cluster runs at 30× speed: a workload picked while admitted may finish (a few
        # minutes of simulated runtime) before the hold reaches it. Its row then rightly says
        # Finished, and the hold is tried on another one.
        for _ in range(3):
            key = await until(pilot, lambda: _holdable(live.store, frozenset(tried)))
            assert key, "no pending or admitted workload to hold"
            tried.add(key)
            tv = app.main.query_one("#workloads", TableView)
            tv.set_filter(key[1])
            assert await until(pilot, lambda k=key: column(app, "workloads", "NAME") == [k[1]])
            await pilot.press("h")
            assert await until(pilot, lambda: isinstance(app.screen, ConfirmScreen), 15), screen_text(app)
            assert await until(pilot, lambda: "hold" in screen_text(app)), screen_text(app)  # drawn, not only pushed
            await pilot.press("y")
            assert await until(pilot, lambda: column(app, "workloads", "STATE") in (["Inactive"], ["Finished"]), 20), \
                (table_cells(app, "workloads"), app._last_action)
            if column(app, "workloads", "STATE") == ["Inactive"]:
                break
            wl = live.store.get(K.WORKLOADS, key)
            assert isinstance(wl, Workload) and wl.is_finished, (key, table_cells(app, "workloads"))
        assert column(app, "workloads", "STATE") == ["Inactive"], tried
        assert "hold" in screen_text(app)  # the status bar shows the result
        records = read_audit()
        assert any(r["action"] == "hold" and r["target"] == f"{key[0]}/{key[1]}" and r["result"] == "ok"
                   for r in records), records

    run(app, body)


def test_read_only_hides_actions(live: Live) -> None:
    app = make_app(live.store, live, initial_view="workloads", read_only=True)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: table_cells(app, "workloads"))
        text = screen_text(app)
        assert "READ-ONLY" in text
        assert " Hold " not in text and "Preempt" not in text  # not in the footer
        assert app.check_binding("workload_action", ("hold",)) is False
        # Keys are handled in order: once "3" has switched the view, "h" was handled before it. A
        # hold that started would have said so in the status line and started its preview worker
        # right in the key's handler.
        await pilot.press("h", "3")
        assert await until(pilot, lambda: app.switcher.current == "clusterqueues")
        assert (app._last_action, [w.name for w in app.workers if w.group == "action"]) == ("", [])
        assert not isinstance(app.screen, ConfirmScreen)
        assert app.check_binding("queue_action", ("drain",)) is False
        assert "Drain" not in screen_text(app)

    run(app, body)


def test_rbac_denied_greys_out_with_reason() -> None:
    app = make_app(Store(), initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        app._set_denied({"patch workloads.kueue.x-k8s.io": 'forbidden: user "bob" may not hold'})
        assert app.check_binding("workload_action", ("hold",)) is None  # shown, disabled
        assert app.check_binding("workload_action", ("preempt",)) is None
        assert app.check_binding("sort_name", ()) is True

    run(app, body)


def test_broken_theme_file_falls_back_with_notification(tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text('name = "broken"\n[ui\nprimary = ')
    (tmp_path / "badcolour.toml").write_text('name = "badcolour"\nextends = "dark"\n[ui]\nprimary = "nope"\n')
    notes: list[str] = []

    class Recording(KueuetopApp):
        def notify(self, message: str, **kw: Any) -> None:  # type: ignore[override]
            notes.append(str(message))
            super().notify(message, **kw)

    app = Recording(Store(), themes=load_themes(user=tmp_path), keymap=load_keymap(), theme_name="badcolour",
                    check_rbac=False)

    async def body(pilot: Pilot[int]) -> None:
        assert app.theme == "dark"
        joined = "\n".join(notes)
        assert "badcolour" in joined and "not found" in joined
        assert "broken.toml" in joined and "TOML" in joined

    run(app, body)


EVIL = "\x1b[31mRED\x1b[0m \x07bell \x1b]0;pwned\x07 [bold]markup[/bold]"


def _evil_workload() -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "evil", "namespace": "team-a", "uid": "uid-evil", "resourceVersion": "1",
                         "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"x": EVIL}},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending\x1b[2J",
                                       "message": EVIL, "lastTransitionTime": "2026-01-01T00:00:01Z"}]}}


def test_escape_sequences_in_cluster_strings_render_inert() -> None:
    store = Store()
    raw = _evil_workload()
    store.apply(StoreEvent.upsert(K.WORKLOADS, "workloads", Entry(("team-a", "evil"), raw, parse_object(raw),
                                                                    "uid-evil", "1")))
    app = make_app(store, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: table_cells(app, "workloads"))
        await pilot.press("enter")
        assert await until(pilot, lambda: "RED" in screen_text(app))
        for text in (screen_text(app), app.export_screenshot()):
            assert "\x1b" not in text and "\x07" not in text
        assert "[bold]markup[/bold]" in screen_text(app)  # shown literally, not interpreted

    run(app, body)




def test_refreshes_two_at_once_after_a_pause_then_at_the_rate_and_none_for_a_source_state() -> None:
    """Store changes after a quiet moment are shown at once, twice in a row (a queue-position
    poll right before a change does not hold it back), then at `max_refresh_rate`; a source's
    state alone only updates the status bar."""
    from kueuetop.store import SourceState
    from kueuetop.tui.app import _REFRESH_BURST

    store = Store()
    # Half a refresh a second: the third change waits up to 2 s for its token, far more than the
    # app needs to handle the three changes even on a loaded machine.
    app = make_app(store, initial_view="workloads", max_refresh_rate=0.5)

    def change(i: int) -> None:
        raw = {**_evil_workload(), "metadata": {"name": f"w{i}", "namespace": "team-a", "uid": f"u{i}",
                                                 "resourceVersion": "1"}}
        store.apply(StoreEvent.upsert(K.WORKLOADS, "workloads", Entry(("team-a", f"w{i}"), raw, parse_object(raw),
                                                                        f"u{i}", "1")))

    def handled() -> bool:
        """The app has taken the last change: shown, or a refresh is scheduled for it."""
        return not app.bridge.pending or app._refresh_timer is not None

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: app._refill() >= _REFRESH_BURST)  # the bucket is full again
        start = app.refresh_count
        store.set_source_state("watch:workloads", SourceState.LIVE, ok=True)
        assert app.bridge.pending  # announced; the app takes it in its own time
        assert await until(pilot, handled, step=0)
        assert app.refresh_count == start and app._refresh_timer is None
        shown = []
        for i in range(3):
            change(i)
            assert await until(pilot, handled, step=0)
            shown.append((app.refresh_count - start, app._refresh_timer is not None))
        assert shown == [(1, False), (2, False), (2, True)]  # the third waits for the rate
        assert await until(pilot, lambda: app.refresh_count == start + 3)
        assert await until(pilot, lambda: len(table_cells(app, "workloads")) == 3)

    run(app, body)


def test_a_burst_of_changes_holds_garbage_collections_until_it_is_on_screen() -> None:
    import gc

    def wl(i: int) -> Entry:
        raw = {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
               "metadata": {"name": f"burst-{i}", "namespace": "team-a", "uid": f"u{i}", "resourceVersion": "1"},
               "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                   "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}}
        return Entry(("team-a", f"burst-{i}"), raw, parse_object(raw), f"u{i}", "1")

    store = Store()
    app = make_app(store, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        assert gc.isenabled()
        store.apply_batch([StoreEvent.upsert(K.WORKLOADS, "workloads", wl(i)) for i in range(store.burst_size)])
        assert not gc.isenabled()  # between the write and the frame that shows it
        assert await until(pilot, gc.isenabled, timeout=5.0)
        assert app.main.query_one("#workloads", TableView).model.total == store.burst_size

    run(app, body)
    assert gc.isenabled() and store.on_burst is None
