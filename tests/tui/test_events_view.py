"""The Events view (`:ev`, key 9) against the served `incident` scenario: every component's Events
newest first, `/` filtering, following the row it was opened from (a workload's own Events, its
pods' and its Job's, its ProvisioningRequests' conditions), the bounded Events informer, and an SVG
snapshot."""

from __future__ import annotations

import html
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources.connection import connect
from kueuetop.sources.event_retention import EventRetention
from kueuetop.sources.kube import WITHOUT_KUEUE_PENDING, KubeSources
from kueuetop.store import Entry, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.events import Op
from kueuetop.tui import screenshot
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.views.events import EventsView, Followed
from tests.tui.conftest import Live
from tests.tui.screen_text import screen_text
from tests.tui.test_app import column, make_app, run, until
from tests.waiting import FAST, wait_until


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("incident")
    s = start_served(load_scenario("incident"), speed=30, kubeconfig=str(d / "kubeconfig"))
    yield s
    s.stop()


@pytest.fixture
def ev_live(incident: ServedCluster) -> Iterator[Live]:
    conn = connect(str(incident.kubeconfig))
    store = Store()
    sources = KubeSources(conn, store, config=FAST, visibility_interval=0.5, include_events=True).start()
    assert wait_until(sources.synced, 10), store.sources()
    yield Live(conn, store, sources, None)
    sources.stop(timeout=2.0)
    conn.close()


def events_view(app: KueuetopApp) -> EventsView:
    return app.main.query_one("#events", EventsView)


def reasons(app: KueuetopApp) -> list[str]:
    return [r.strip() for r in column(app, "events", "REASON")]


def workload_of_job(live: Live, ns: str, job: str) -> tuple[str, str]:
    for key in live.store.keys(K.WORKLOADS):
        wl = live.store.get(K.WORKLOADS, key)
        if key[0] == ns and wl is not None and any(r.name == job for r in wl.meta.owners):
            return key
    raise AssertionError(f"no workload for {ns}/{job}")


def test_every_components_events_newest_first_through_the_command_and_the_key(ev_live: Live) -> None:
    # Four simulated minutes (8 s at speed 30): scale-ups, image pulls, preemption, node faults.
    assert wait_until(lambda: any((ev_live.store.wire(K.EVENTS, k) or {}).get("reason") == "NodeNotSchedulable"
                                  for k in ev_live.store.keys(K.EVENTS)), 30)
    app = make_app(ev_live.store, ev_live)

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("colon", *"ev", "enter")
        assert await until(pilot, lambda: app.switcher.current == "events")
        want = {"QuotaReserved", "Admitted", "Preempted", "TriggeredScaleUp", "NotTriggerScaleUp",
                "FailedScheduling", "Scheduled", "BackOff", "Failed", "NodeNotReady", "NodeNotSchedulable"}
        assert await until(pilot, lambda: want <= set(reasons(app))), sorted(want - set(reasons(app)))
        assert "Pending" not in reasons(app)  # Kueue's per-workload Pending Events are not watched
        rows = events_view(app).model.visible_rows()
        ages = [r.sort["age"] for r in rows]
        assert ages == sorted(ages)  # newest first
        assert "Events (" in screen_text(app)
        text = screen_text(app)
        assert "cluster-autoscaler" in text and "default-scheduler" in text and "kueue-admission" in text
        await pilot.press("1")
        await pilot.press("9")
        assert await until(pilot, lambda: app.switcher.current == "events")
        assert events_view(app).following is None  # opened from the Overview: every Event

    run(app, body)


def test_slash_filters_events(ev_live: Live) -> None:
    assert wait_until(lambda: any((ev_live.store.wire(K.EVENTS, k) or {}).get("reason") == "NotTriggerScaleUp"
                                  for k in ev_live.store.keys(K.EVENTS)), 30)
    app = make_app(ev_live.store, ev_live, initial_view="events")

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: "NotTriggerScaleUp" in reasons(app))
        await pilot.press("slash", *"NotTriggerScaleUp", "enter")
        assert await until(pilot, lambda: set(reasons(app)) == {"NotTriggerScaleUp"})
        assert all("pod didn't trigger scale-up" in m for m in column(app, "events", "MESSAGE"))
        await pilot.press("escape")
        assert await until(pilot, lambda: len(set(reasons(app))) > 1)

    run(app, body)


def test_opened_from_a_workload_row_it_follows_the_workload_its_pods_and_its_job(ev_live: Live) -> None:
    def pulls_failed_twice() -> bool:  # evicted once (2 simulated minutes): a second pod failed too
        pods = {(ev_live.store.wire(K.EVENTS, k) or {}).get("involvedObject", {}).get("name") for k in ev_live.store.keys(K.EVENTS)
                if (ev_live.store.wire(K.EVENTS, k) or {}).get("message") == "Error: ImagePullBackOff"}
        return len(pods) >= 2

    assert wait_until(pulls_failed_twice, 40)
    key = workload_of_job(ev_live, "team-platform", "feature-store-sync")
    app = make_app(ev_live.store, ev_live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("slash", *key[1], "enter")
        assert await until(pilot, lambda: [r.key for r in app.table_view().model.visible_rows()] == [key])
        await pilot.press("9")
        view = events_view(app)
        assert await until(pilot, lambda: app.switcher.current == "events" and view.following is not None)
        assert f"of workload {key[0]}/{key[1]}" in screen_text(app)
        got = set(reasons(app))
        assert await until(pilot, lambda: {"QuotaReserved", "Failed", "BackOff", "Pulling", "CreatedWorkload"}
                           <= set(reasons(app))), reasons(app)
        objects = {o.strip().split("/")[0] for o in column(app, "events", "OBJECT")}
        assert objects == {"Workload", "Pod", "Job"}, objects
        assert all("feature-store-sync" in o for o in column(app, "events", "OBJECT")), got
        pods = {o.strip() for o in column(app, "events", "OBJECT") if o.strip().startswith("Pod/")}
        assert len(pods) >= 2, pods  # the pod of the first admission, deleted at its eviction, too
        assert "NodeNotReady" not in reasons(app)
        await pilot.press("escape")  # every Event again
        assert await until(pilot, lambda: view.following is None and "NodeNotReady" in reasons(app))

    run(app, body)


def test_provisioning_request_conditions_show_with_the_workload(ev_live: Live) -> None:
    def failed() -> bool:
        for k in ev_live.store.keys(K.PROVISIONING_REQUESTS):
            pr = ev_live.store.get(K.PROVISIONING_REQUESTS, k)
            if pr is not None and any(c.type == "Failed" and c.is_true for c in pr.conditions):
                return True
        return False

    assert wait_until(failed, 30)
    key = workload_of_job(ev_live, "team-research", "llm-finetune-16")
    app = make_app(ev_live.store, ev_live, initial_view="workloads")

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("slash", *key[1], "enter")
        assert await until(pilot, lambda: [r.key for r in app.table_view().model.visible_rows()] == [key])
        await pilot.press("9")
        assert await until(pilot, lambda: "Failed=True CapacityIsNotFound" in reasons(app)), reasons(app)
        row = next(r for r in events_view(app).model.visible_rows() if "Failed=True" in r.cells[2].plain)
        assert row.cells[1].plain == "Warning" and row.cells[5].plain == "condition"
        assert row.cells[6].plain == "CA could not find requested capacity"
        assert "ProvisioningRequestCreated" in reasons(app)  # Kueue's own Event about the request

    run(app, body)


def test_kueue_pending_events_are_watched_only_when_asked(incident: ServedCluster) -> None:
    """Kueue's Pending Events (most of a big cluster's Event traffic) stay on the server unless
    `--all-events` (an empty selector); every other reason comes either way."""
    served = incident.parts.cluster.store.list("", "events", copy=False)[0]
    assert any(e.get("reason") == "Pending" for e in served)  # the cluster does record them
    conn = connect(str(incident.kubeconfig))
    try:
        seen: dict[str, set[str]] = {}
        for selector in (WITHOUT_KUEUE_PENDING, ""):
            store = Store()
            sources = KubeSources(conn, store, config=FAST, include_events=True, events_selector=selector).start()
            try:
                assert wait_until(sources.synced, 10)
                seen[selector] = {str((store.wire(K.EVENTS, k) or {}).get("reason")) for k in store.keys(K.EVENTS)}
            finally:
                sources.stop(timeout=2.0)
        assert "Pending" not in seen[WITHOUT_KUEUE_PENDING] and "Pending" in seen[""]
        assert {"QuotaReserved", "Admitted"} <= seen[WITHOUT_KUEUE_PENDING]
    finally:
        conn.close()


def test_the_events_view_says_what_it_leaves_out(ev_live: Live) -> None:
    app = make_app(ev_live.store, ev_live)
    app.ctx.extra["events_selector"] = ev_live.sources.events_selector

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("9")
        assert await until(pilot, lambda: app.switcher.current == "events")
        assert await until(pilot, lambda: "Kueue's Pending Events: in each workload's detail" in screen_text(app))

    run(app, body)


def test_the_events_informer_keeps_a_bounded_number(incident: ServedCluster) -> None:
    conn = connect(str(incident.kubeconfig))
    store = Store()
    sources = KubeSources(conn, store, config=FAST, include_events=True, max_events=40).start()
    try:
        assert wait_until(sources.synced, 10)
        served = len(incident.parts.cluster.store.list("", "events", copy=False)[0])
        assert served > 40  # the cluster has more than the bound
        assert store.count(K.EVENTS) == 40
        # New Events push the oldest out; the store never holds more than the bound.
        seen = wait_until(lambda: sources.event_retention.dropped > served - 40, 30)
        assert seen and store.count(K.EVENTS) <= 40
    finally:
        sources.stop(timeout=2.0)
        conn.close()


def _event(name: str, ts: str) -> StoreEvent:
    raw = {"metadata": {"namespace": "ns", "name": name}, "reason": "R", "lastTimestamp": ts,
           "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "p"}}
    return StoreEvent.upsert(K.EVENTS, K.EVENTS, Entry(("ns", name), raw, raw))


def test_event_retention_drops_the_oldest_and_the_expired() -> None:
    out: list[StoreEvent] = []
    r = EventRetention(out.append, max_events=2, max_age=1800)
    r.put(StoreEvent(Op.REPLACE, K.EVENTS, K.EVENTS, entries=(_event("old", "2026-01-01T00:10:00Z").entry,
                                        _event("a", "2026-01-01T00:50:00Z").entry,
                                        _event("b", "2026-01-01T00:55:00Z").entry)))
    # "old" is 45 minutes older than the newest: past the bound (ages count from the newest Event)
    assert [e.key for e in out[0].entries] == [("ns", "a"), ("ns", "b")]
    out.clear()
    r.put(_event("c", "2026-01-01T00:59:00Z"))
    assert [(e.op, e.entry.key if e.entry else e.key) for e in out] == [("upsert", ("ns", "c")), ("delete", ("ns", "a"))]
    assert len(r) == 2 and r.dropped == 2


def test_events_view_svg_snapshots_match_fresh_renderings(tmp_path: Path) -> None:
    fresh = screenshot.render_event_svgs()
    stale = []
    for name, svg in fresh.items():
        assert svg.startswith("<svg"), name
        stored = Path(__file__).resolve().parent / "snapshots" / name
        if not stored.exists() or stored.read_text(encoding="utf-8") != svg:
            (tmp_path / name).write_text(svg, encoding="utf-8")
            stale.append(name)
    assert not stale, f"Events SVG snapshots differ: {stale} (fresh ones in {tmp_path}): python -m kueuetop.tui.screenshot --svg tests/tui/snapshots"
    for name, svg in fresh.items():
        text = html.unescape(svg).replace("\xa0", " ")
        for w in ("Events (", "REASON", "FailedScheduling", "0/17 nodes are available"):
            assert w in text, (name, w)


def test_a_followed_jobs_earlier_pods_stay_in_view() -> None:
    f = Followed(frozenset({("Workload", "ns", "job-sync-1"), ("Job", "ns", "sync")}), frozenset({("ns", "sync")}))
    assert ("Pod", "ns", "sync-abcde") in f  # a pod Kueue deleted at an eviction
    assert ("Pod", "ns", "sync-3-abcde") in f  # Indexed Job
    assert ("Pod", "ns", "sync-v2-abcde") not in f and ("Pod", "other", "sync-abcde") not in f
    assert ("Pod", "ns", "sync-abc") not in f and ("Job", "ns", "sync") in f


def test_malformed_events_neither_stop_the_informer_path_nor_the_view() -> None:
    from kueuetop.tui.context import ViewContext
    from kueuetop.tui.themes import load_themes
    from kueuetop.tui.views.events import event_row

    bad = {"metadata": "x", "source": 5, "series": [], "involvedObject": ["Pod"], "reason": "R\x1b[2J",
           "message": 7}
    out: list[StoreEvent] = []
    r = EventRetention(out.append, max_events=2)
    r.put(StoreEvent.upsert(K.EVENTS, K.EVENTS, Entry(("ns", "bad"), bad, bad)))
    assert [e.op for e in out] == ["upsert"]
    ctx = ViewContext(Store(), load_themes().themes["dark"])
    row = event_row(ctx, ("ns", "bad"), bad, 0.0)
    assert "\x1b" not in row.text and row.cells[3].plain == "-" and row.cells[6].plain == "-"


def test_a_long_list_is_trimmed_to_the_newest_while_it_is_gathered() -> None:
    r = EventRetention(lambda e: None, max_events=2)
    entries = [_event(f"e{i}", f"2026-01-01T00:0{i}:00Z").entry for i in (3, 1, 5, 0)]
    assert r.trim(entries) is entries  # up to twice the bound: kept as it is
    entries.append(_event("e4", "2026-01-01T00:04:00Z").entry)
    assert [e.key[1] for e in r.trim(entries)] == ["e5", "e4"]  # the newest, in list order
    assert r.dropped == 3
