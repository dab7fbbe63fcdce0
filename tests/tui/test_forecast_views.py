"""Where users see the forecast: the Workloads view's ETA, the LocalQueues view's next admission,
the detail screen's sentence (when, after whom, on what basis, how old), the sort by ETA; and the
worker behind them (recomputed only when the store changed, slower after a slow run, its history
of finished runs kept between consoles)."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from pathlib import Path

import pytest
from textual.pilot import Pilot

from kueuetop.admission.forecast_result import Forecast, WorkloadForecast
from kueuetop.sim.serve import ServedCluster
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.store.sources import SourceState
from kueuetop.tui.detail import detail_text
from kueuetop.tui.forecaster import DUTY, Forecaster, _moved
from kueuetop.tui.views.base import TableView
from tests.builders import (
    T0,
    admission_check,
    admit,
    cluster_queue,
    condition,
    flavor,
    fq,
    group,
    local_queue,
    ts,
    workload,
)
from tests.tui.test_app import make_app, run, table_cells, until
from tests.views.cluster import put

from .conftest import Live

GPU = "nvidia.com/gpu"
NOW = T0 + 120


def _store() -> Store:
    """4 GPUs; `r` runs since T0 (its Job's limit: 10 minutes); `a` and `b` (4 GPUs each, 5 minutes
    at most) wait in FIFO order: a at T0+600, b at T0+900."""
    store = Store()
    limit = {"kueue.x-k8s.io/max-exec-time-seconds": "600"}
    r = admit(workload("team-a", "r", "lq", {GPU: "4"}, created=T0 - 60), "cq", {GPU: "l4"}, at=T0)
    r["spec"]["maximumExecutionTimeSeconds"] = 600
    a = workload("team-a", "a", "lq", {GPU: "4"}, created=T0 + 1)
    b = workload("team-a", "b", "lq", {GPU: "4"}, created=T0 + 2)
    for w in (a, b):
        w["spec"]["maximumExecutionTimeSeconds"] = 300
        w["metadata"]["labels"] = dict(limit)
        w["status"] = {"conditions": [condition("QuotaReserved", False, "Pending", "insufficient quota", T0 + 3)]}
    put(store, flavor("l4"), cluster_queue("cq", group(GPU, fq("l4", **{GPU: 4}))),
        local_queue("team-a", "lq", "cq"), r, a, b)
    return store


def test_the_worker_forecasts_only_when_the_store_changed_and_slows_down_after_a_slow_run(tmp_path: Path) -> None:
    store = _store()
    f = Forecaster(store, state_dir=tmp_path, clock=lambda: NOW)
    first = f.run_once()
    assert isinstance(first, Forecast) and store.forecast() is first
    # The upper bounds (Kueue's maximumExecutionTimeSeconds) are the expected runtimes: nothing ran before.
    assert (first.workloads[("team-a", "a")].start, first.workloads[("team-a", "b")].start) == (T0 + 600, T0 + 900)
    assert f.run_once() is None  # nothing changed since
    f.last_seconds = 2.0
    assert f.wait_seconds() == 2.0 / DUTY
    f.last_seconds = 0.01
    assert f.wait_seconds() == f.interval


def _first_forecast_shown(f: Forecaster, store: Store) -> None:
    deadline = time.monotonic() + 10
    while f.runs == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert f.runs == 1 and isinstance(store.forecast(), Forecast)


def test_the_first_forecast_waits_for_the_store_to_hold_the_cluster_then_runs_at_once() -> None:
    store = _store()
    listed = threading.Event()
    # A long interval: were the first forecast run on the half-listed store, the next would wait for it.
    f = Forecaster(store, clock=lambda: NOW, interval=600.0, ready=listed.is_set).start()
    try:
        time.sleep(0.5)
        assert f.runs == 0 and store.forecast() is None  # nothing forecast while the lists are not all in
        listed.set()
        _first_forecast_shown(f, store)
    finally:
        f.stop()


def test_the_store_change_that_completes_the_lists_starts_the_first_forecast_without_waiting_for_a_poll(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kueuetop.tui import forecaster

    monkeypatch.setattr(forecaster, "_READY_POLL", 120.0)  # a poll would come long after the test's end
    store = _store()
    listed = threading.Event()
    f = Forecaster(store, clock=lambda: NOW, interval=600.0, ready=listed.is_set).start()
    try:
        time.sleep(0.3)  # the thread is waiting
        listed.set()
        store.apply_batch([])  # nothing changed: no look yet
        time.sleep(0.3)
        assert f.runs == 0
        store.set_source_state("kube", SourceState.LIVE)  # the last list is in: the store says so
        _first_forecast_shown(f, store)
    finally:
        f.stop()


def test_the_worker_keeps_no_virtual_workloads_between_forecasts() -> None:
    """The engine's index after a forecast is of the forecast's last virtual instant: kept, it held
    tens of MB on a big cluster between runs. Only the parsed conditions and pod sets stay."""
    store = _store()
    f = Forecaster(store, clock=lambda: NOW)
    parse = f.cache.parse
    f.run_once()
    assert f.cache.parse is parse
    assert not f.cache.index.entries and not f.cache.candidates
    again = Forecaster(store, clock=lambda: NOW).run_once()
    f._version = -1
    assert f.run_once() == again  # the same answers from the fresh cache


def test_the_worker_tells_the_views_which_rows_moved() -> None:
    store = _store()
    seen: list[set] = []
    store.subscribe(lambda changes: seen.append(set(changes.get(K.FORECAST))))
    f = Forecaster(store, clock=lambda: NOW)
    first = f.run_once()
    # The first forecast shows its expected starts, then their ranges: both rows move twice.
    assert first is not None and first.ranged
    assert seen == [{("team-a", "a"), ("team-a", "b")}] * 2
    Forecaster(store, clock=lambda: NOW).run_once()  # the same answers again: no row moved, nothing to redraw
    assert len(seen) == 2
    Forecaster(store, clock=lambda: NOW + 60).run_once()  # a minute on, r has run longer: its optimistic end moved
    assert seen[-1] == {("team-a", "a"), ("team-a", "b")} and len(seen) == 3


def test_the_first_forecast_shows_its_expected_starts_before_their_ranges() -> None:
    store = _store()
    shown: list[Forecast] = []
    store.subscribe(lambda changes: K.FORECAST in changes and shown.append(store.forecast()))
    Forecaster(store, clock=lambda: NOW).run_once()
    assert [f.ranged for f in shown] == [False, True]
    expected, ranged = shown
    a = ("team-a", "a")
    # The same starts; the ranges only widen them (a's runtime estimate has a spread).
    assert expected.workloads[a].start == ranged.workloads[a].start
    assert expected.workloads[a].earliest == expected.workloads[a].latest == expected.workloads[a].start
    assert ranged.workloads[a].earliest < ranged.workloads[a].start <= ranged.workloads[a].latest
    # A later forecast replaces the ranged one whole: the console never goes back to bare starts.
    Forecaster(store, clock=lambda: NOW + 60).run_once()
    assert [f.ranged for f in shown[2:]] == [True]


def test_a_first_forecast_that_runs_long_shows_the_starts_it_has_placed(monkeypatch: pytest.MonkeyPatch) -> None:
    import kueuetop.tui.forecaster as forecaster

    monkeypatch.setattr(forecaster, "SHOW_WITHIN", 0.0)  # "long": past it at the first round
    store = _store()
    shown: list[Forecast] = []
    store.subscribe(lambda changes: K.FORECAST in changes and shown.append(store.forecast()))
    worker = Forecaster(store, clock=lambda: NOW)
    worker.run_once()
    assert [(f.complete, f.ranged) for f in shown] == [(False, False), (True, False), (True, True)]
    early, whole = shown[0], shown[1]
    assert worker.early_seconds is not None and worker.early_seconds <= worker.first_seconds
    # Shown once it has a start to show (an early view of "beyond" everywhere says nothing).
    assert worker.early_answered == sum(1 for w in early.workloads.values() if w.start is not None) >= 1
    # As far as it got: what it placed is where the whole run places it, the rest is beyond.
    assert NOW <= early.horizon < whole.horizon and all(
        w.start is None or w.start == whole.workloads[k].start for k, w in early.workloads.items())
    assert any(w.start is None for w in early.workloads.values())  # b: after its horizon
    # With a forecast on screen nothing partial replaces it.
    Forecaster(store, clock=lambda: NOW + 60).run_once()
    assert [(f.complete, f.ranged) for f in shown[3:]] == [(True, True)]


def test_rows_placed_by_neither_forecast_are_redrawn_when_the_horizon_they_read_moved() -> None:
    a, b, c = ("team-a", "a"), ("team-a", "b"), ("team-a", "c")
    early = Forecast(at=NOW, horizon=NOW + 660, complete=False, workloads={
        a: WorkloadForecast(a, "cq", NOW + 300), b: WorkloadForecast(b, "cq", None),
        c: WorkloadForecast(c, "cq", None, never="needs 512 GPUs")})
    whole = dataclasses.replace(early, horizon=NOW + 5340)
    # b reads ">11m" on the early view and ">1h29m" on the whole run's: its row is drawn again;
    # a (placed) and c ("never") read the same on both.
    assert _moved(early, whole) == {b}
    assert _moved(whole, whole) == set()  # the same reach: nothing to redraw
    assert _moved(whole, dataclasses.replace(whole, complete=True)) == {b}  # ">1h29m" becomes "-"


def test_the_early_view_counts_the_starts_it_showed(monkeypatch: pytest.MonkeyPatch) -> None:
    import kueuetop.tui.forecaster as forecaster

    monkeypatch.setattr(forecaster, "SHOW_WITHIN", 0.0)
    done = Forecaster(_store(), clock=lambda: NOW).run_once()  # a and b both placed
    assert done is not None
    store = _store()  # nothing on screen yet: the early view is published
    worker = Forecaster(store, clock=lambda: NOW)
    job = forecaster._Job(snap=store.snapshot(), now=NOW, history=worker.history, pools=None, placements=None,
                          checks=None, max_steps=100, pods_note="", started=time.monotonic(), early=True)
    worker._take(job, "early", done)
    assert store.forecast() is not None and worker.early_seconds is not None
    assert worker.early_answered == sum(1 for w in done.workloads.values() if w.start is not None) == 2


def test_finished_runs_are_kept_for_the_next_console(tmp_path: Path) -> None:
    store = _store()
    done = admit(workload("team-a", "done", "lq", {GPU: "4"}, created=T0 - 2000), "cq", {GPU: "l4"}, at=T0 - 1900)
    done["status"]["conditions"].append(condition("Finished", True, "Succeeded", "Job finished", T0 - 1500))
    put(store, done)
    f = Forecaster(store, state_dir=tmp_path, server="https://k8s.example:6443", clock=lambda: NOW).start()
    f.stop()
    saved = tmp_path / "run-history.json"
    (run,) = json.loads(saved.read_text())["clusters"]["https://k8s.example:6443"]
    assert (run["uid"], run["finished"] - run["admitted"]) == ("uid-team-a-done", 400)  # from its conditions
    again = Forecaster(Store(), state_dir=tmp_path, server="https://k8s.example:6443", clock=lambda: NOW)
    assert len(again.history.records()) == 1 and again.warning == ""


def _cells(app: object, view: str) -> dict[str, dict[str, str]]:
    """Rows on screen by workload (or queue) name, in screen order: column → text."""
    tv = app.main.query_one(f"#{view}", TableView)  # type: ignore[attr-defined]
    names = list(tv._column_keys)
    return {r[names.index("NAME")]: dict(zip(names, r, strict=True)) for r in table_cells(app, view)}  # type: ignore[arg-type]


def test_eta_in_the_workloads_and_localqueues_views_the_detail_line_and_the_sort() -> None:
    store = _store()
    app = make_app(store, initial_view="workloads", forecast=True, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("ctrl+w")  # every column
        assert await until(pilot, lambda: _cells(app, "workloads").get("a", {}).get("ETA", "-") != "-")
        cells = _cells(app, "workloads")
        # r's 600 s limit ends at T0+600, 8 minutes from now; at its optimistic end (a quarter of
        # the bound, as no run is known) r ends at T0+150, 30 s from now. b follows a's 300 s.
        assert cells["a"]["ETA"] == "~8m (30s–8m)", cells["a"]
        assert cells["b"]["ETA"].startswith("~13m ("), cells["b"]
        assert cells["r"]["ETA"] == "-"  # running: nothing to forecast
        await pilot.press("E")
        assert await until(pilot, lambda: list(_cells(app, "workloads"))[:2] == ["a", "b"])
        await pilot.press("E")  # again: reversed
        assert await until(pilot, lambda: (lambda order: order.index("b") < order.index("a"))(list(_cells(app, "workloads"))))
        text = " ".join(detail_text(app.ctx, ("team-a", "a")).plain.split())
        assert "Forecast: expected to start in ~8m (30s–8m) when team-a/r finish" in text, text
        assert "basis: maximumExecutionTimeSeconds 600" in text and "forecast 0s old" in text, text
        await pilot.press("4")
        assert await until(pilot, lambda: _cells(app, "localqueues").get("lq", {}).get("NEXT ADMISSION")
                           == "~8m (30s–8m)")

    run(app, body)


def test_a_live_console_forecasts_the_pending_workloads_it_is_shown(served: ServedCluster, live: Live) -> None:
    # The served refarch cluster is shared by the package's tests and may have run out of
    # pending work by now: one workload that stays pending (more GPUs than any quota) is added.
    probe = workload("team-a", "forecast-probe", "lq-team-a-hp", {GPU: "512"}, uid="uid-forecast-probe")
    probe.pop("status", None)
    with served.parts.cluster.lock:
        if served.parts.cluster.store.try_get("kueue.x-k8s.io", "workloads", "team-a", "forecast-probe") is None:
            served.parts.cluster.store.create("kueue.x-k8s.io", "workloads", probe)
    app = make_app(live.store, live, initial_view="workloads", forecast=True)

    async def body(pilot: Pilot[int]) -> None:
        def forecast_shown() -> bool:
            rows = _cells(app, "workloads").values()
            return any(r["STATE"] in ("Pending", "Blocked", "Backoff") and r["ETA"] not in ("-", "") for r in rows)

        assert await until(pilot, forecast_shown, timeout=60)
        f = live.store.forecast()
        assert isinstance(f, Forecast) and f.workloads
        assert set(f.workloads) <= set(live.store.objects(K.WORKLOADS))  # answers only for workloads the store has
        assert all(w.start is None or w.start >= f.at for w in f.workloads.values())

    run(app, body)


def test_the_detail_of_a_workload_waiting_for_its_admission_checks_says_which() -> None:
    """It holds quota, so the forecast gives it no ETA: its ETA cell reads "checks" and the
    detail says which check and what it reported."""
    store = _store()
    w = admit(workload("team-a", "dws", "lq", {GPU: "4"}, created=T0 - 30), "cq", {GPU: "l4"}, at=T0, admitted=False)
    w["status"]["admissionChecks"] = [{"name": "dws-prov", "state": "Pending", "lastTransitionTime": ts(T0),
                                       "message": "Waiting for resources. Currently there are not enough resources"}]
    put(store, w)
    app = make_app(store, initial_view="workloads", forecast=False, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("ctrl+w")  # every column
        assert await until(pilot, lambda: "dws" in _cells(app, "workloads"))
        assert _cells(app, "workloads")["dws"]["ETA"] == "checks"
        text = " ".join(detail_text(app.ctx, ("team-a", "dws")).plain.split())
        assert ("Forecast: holds quota; admitted when its admission checks pass (dws-prov Pending: Waiting for "
                "resources. Currently there are not enough resources), which the forecast does not time (only "
                "ProvisioningRequests on known node pools)") in text

    run(app, body)


def test_a_workload_waiting_for_its_provisioning_request_shows_when_the_pools_admit_it() -> None:
    """With node pools the forecast times a ProvisioningRequest check: it passes when the
    workload's pods find nodes. r holds the pool's one node for 10 minutes (from T0); the pool
    cannot grow; the check is check-capacity: dws is admitted when r's GPUs free, at T0 + 600."""
    from kueuetop.admission.check_timing import node_checks
    from kueuetop.admission.forecast import forecast
    from kueuetop.admission.forecast_result import PoolCapacity, RuntimeEstimate
    from kueuetop.kueue.meta import Meta
    from kueuetop.kueue.provisioning import CHECK_CAPACITY, ProvisioningRequestConfig

    store = _store()
    w = admit(workload("team-a", "dws", "lq", {GPU: "4"}, created=T0 - 30), "cq", {GPU: "l4"}, at=T0, admitted=False)
    w["status"]["admissionChecks"] = [{"name": "dws-prov", "state": "Pending", "lastTransitionTime": ts(T0),
                                       "message": "Capacity is not found, CA will try to find it later."}]
    check = admission_check("dws-prov")
    check["spec"]["parameters"] = {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": "cc"}
    put(store, check, w)
    snap = store.snapshot()
    checks = node_checks(snap.admission_checks, [ProvisioningRequestConfig(Meta(name="cc"), CHECK_CAPACITY)])
    pools = {"l4": PoolCapacity("l4", {}, 4, (0,), 1)}
    est = {k: RuntimeEstimate(600, 600, 600, "limit") for k in snap.workloads}
    fc = forecast(snap, est, NOW, pools=pools, placements={("team-a", "r"): (("l4", 0, 4),)}, checks=checks)
    assert fc.workloads[("team-a", "dws")].start == T0 + 600
    store.set_forecast(fc, set(fc.workloads))
    app = make_app(store, initial_view="workloads", forecast=False, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        await pilot.press("ctrl+w")  # every column
        assert await until(pilot, lambda: "dws" in _cells(app, "workloads"))
        assert _cells(app, "workloads")["dws"]["ETA"] == "~8m"  # T0 + 600 seen from T0 + 120
        text = " ".join(detail_text(app.ctx, ("team-a", "dws")).plain.split())
        assert ("Forecast: holds quota, waits for dws-prov Pending: Capacity is not found, CA will try to find "
                "it later.; expected to start in ~8m when team-a/r finish") in text

    run(app, body)
