"""The workload detail screen's Events: fetched from the API server on demand (both Event
shapes), refreshed while open, and a clear line instead of a crash when they can't be had."""

from __future__ import annotations

import socket

from kubernetes.client import ApiClient, Configuration
from textual.pilot import Pilot

from kueuetop.kueue.workload import Workload
from kueuetop.sources.object_events import fetch_object_events, parse_events
from kueuetop.store import events as K
from tests.tui.conftest import Live
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, until


def _admitted(live: Live) -> tuple[str, str]:
    for key, wl in live.store.objects(K.WORKLOADS).items():
        if isinstance(wl, Workload) and wl.admission is not None and wl.condition("QuotaReserved"):
            return key
    raise AssertionError("no admitted workload in the served scenario")


def test_detail_shows_the_events_kueue_recorded_for_the_workload(live: Live) -> None:
    key = _admitted(live)
    # The same request through the real client: the simulated Kueue recorded these Events.
    fetched = fetch_object_events(live.conn.api, key[0], "Workload", key[1])
    reasons = [e.reason for e in fetched]
    assert "QuotaReserved" in reasons, reasons
    assert all(e.time is not None for e in fetched)
    app = make_app(live.store, live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        app.open_workload(key)

        def event_line() -> str | None:  # the conditions section says QuotaReserved before the Events come
            return next((x for x in screen_text(app).splitlines() if "QuotaReserved" in x and "Normal" in x), None)

        assert await until(pilot, lambda: event_line() is not None and "Events" in screen_text(app))
        line = event_line()
        assert line is not None and "kueue-admission" in line and "Quota reserved in ClusterQueue" in line

    run(app, body)


def test_events_unavailable_is_said_and_the_rest_of_the_detail_stays(live: Live) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = Configuration()
    cfg.host = f"http://127.0.0.1:{port}"
    cfg.retries = 0
    dead = ApiClient(cfg)
    key = _admitted(live)
    app = make_app(live.store, live, initial_view="workloads")
    app.api = dead

    async def body(pilot: Pilot[int]) -> None:
        app.open_workload(key)
        assert await until(pilot, lambda: "events unavailable" in screen_text(app))
        text = screen_text(app)
        assert "Why (explain)" in text and "Conditions" in text

    try:
        run(app, body)
    finally:
        dead.close()


def test_both_event_shapes_are_read_and_bad_items_skipped() -> None:
    items = [
        {"type": "Normal", "reason": "Admitted", "message": "Admitted by ClusterQueue cq",
         "lastTimestamp": "2026-01-01T00:00:10Z", "count": 1, "source": {"component": "kueue-admission"}},
        {"type": "Warning", "reason": "Pending", "message": "couldn't assign flavors",
         "eventTime": "2026-01-01T00:00:01.000000Z", "series": {"count": 7, "lastObservedTime": "2026-01-01T00:00:05Z"},
         "reportingComponent": "kueue-admission"},
        "not an object",
        {"reason": "NoTime", "count": "x"},
    ]
    evs = parse_events(items)
    assert [e.reason for e in evs] == ["NoTime", "Pending", "Admitted"]
    pending = evs[1]
    assert pending.count == 7 and pending.time == 1_767_225_605.0 and pending.source == "kueue-admission"
    assert evs[0].time is None and evs[0].count == 1
