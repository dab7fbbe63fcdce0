"""The triage board on the built-in `incident` scenario, eight simulated minutes in, reached
through the real path (kubeconfig, informers, GPU scrape, Kueue's ConfigMap): every problem
class is on the board, the counts agree with the cluster's own objects, `enter` on every line
opens its evidence, and the detail screen gives the pod reasons the cluster reported."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.pilot import Pilot

from kueuetop.sim.apiserver import ApiServer, write_kubeconfig
from kueuetop.sim.clock import SimClock
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import KUEUE_API_VERSIONS, _hooks
from kueuetop.sim.wiring import build_cluster
from kueuetop.sources.connection import Connection, connect
from kueuetop.sources.gpu_poller import GpuPoller, gpu_source_for
from kueuetop.sources.kube import KubeSources
from kueuetop.sources.kube_http import request
from kueuetop.sources.kueue_config import read_kueue_config
from kueuetop.store import Store
from kueuetop.tui.detail import WorkloadDetailScreen
from kueuetop.tui.views.overview import ProblemList
from tests.tui.screen_text import screen_text
from tests.tui.test_app import make_app, run, table_cells, until
from tests.tui.test_overview import board

AT = 8 * 60.0
CATEGORIES = {"broken", "not running", "waiting", "churn", "waste"}
TABLE_VIEWS = ("workloads", "nodes", "clusterqueues", "localqueues")


@dataclass
class Frozen:
    store: Store
    conn: Connection
    now: float
    config: object


@pytest.fixture(scope="module")
def frozen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Frozen]:
    clock = SimClock(1_767_225_600.0, speed=None)
    parts = build_cluster(load_scenario("incident"), clock)
    parts.cluster.settle()
    parts.cluster.run_for(AT)
    server = ApiServer(parts.cluster.store, port=0, hooks=_hooks(parts),
                       kueue_versions=KUEUE_API_VERSIONS["v1beta2"]).start()
    kubeconfig = write_kubeconfig(Path(tmp_path_factory.mktemp("incident")) / "kubeconfig", server.url)
    conn = connect(str(kubeconfig))
    now = clock.now()
    store = Store(clock=lambda: now)
    sources = KubeSources(conn, store, include_events=True).start()
    try:
        deadline = time.monotonic() + 60
        while not sources.synced() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sources.synced()
        GpuPoller(store, gpu_source_for(conn, scrape_budget=0), interval=3600.0, clock=lambda: now).poll_once()
        config, why = read_kueue_config(conn.api)
        assert why == ""
        yield Frozen(store, conn, now, config)
    finally:
        sources.stop(timeout=2.0)
        conn.close()
        server.stop()


def _listed(conn: Connection, path: str) -> list[dict]:
    return request(conn.api, path)["items"]


def _app(f: Frozen):  # type: ignore[no-untyped-def]
    app = make_app(f.store, clock=lambda: f.now)
    app.ctx.extra["kueue_config"] = f.config
    return app


def test_every_problem_class_with_counts_the_cluster_agrees_with(frozen: Frozen) -> None:
    # What the cluster itself says, read straight from the API server.
    nodes = _listed(frozen.conn, "/api/v1/nodes")
    bad_gpu_nodes = {n["metadata"]["name"] for n in nodes
                     if int((n["status"].get("allocatable") or {}).get("nvidia.com/gpu", "0")) > 0
                     and (n["spec"].get("unschedulable") or any(c["type"] == "Ready" and c["status"] != "True"
                                                                 for c in n["status"].get("conditions") or []))}
    pods = _listed(frozen.conn, "/api/v1/pods")

    def owners_waiting(reasons: set[str]) -> set[str]:
        return {p["metadata"]["ownerReferences"][0]["name"] for p in pods
                if p["metadata"].get("ownerReferences")
                and any((cs.get("state") or {}).get("waiting", {}).get("reason") in reasons
                        for cs in p["status"].get("containerStatuses") or [])}

    app = _app(frozen)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        problems = board(app).problems
        assert {p.category for p in problems} == CATEGORIES, [(p.category, p.kind) for p in problems]
        by_kind = {p.kind: p for p in problems}
        for kind in ("nodes", "gpu-errors", "provreq-failed", "check", "queue", "fragmentation", "image-pull",
                     "crash-loop", "pods-ready", "waiting", "preempted", "evicted", "idle", "unusable-nodes"):
            assert kind in by_kind, (kind, sorted(by_kind))
        assert by_kind["nodes"].count == len(bad_gpu_nodes) > 0
        assert by_kind["image-pull"].count == len(owners_waiting({"ImagePullBackOff", "ErrImagePull"})) > 0
        assert by_kind["crash-loop"].count == len(owners_waiting({"CrashLoopBackOff"})) > 0
        assert "PodsReady timeout in" in by_kind["pods-ready"].text
        text = screen_text(app)
        for title in ("Broken", "Admitted but not running", "Waiting too long", "Churn", "Waste"):
            assert title in text, title

    run(app, body)


def test_enter_on_every_line_opens_its_evidence(frozen: Frozen) -> None:
    app = _app(frozen)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        ids = list(board(app)._targets)
        assert len(ids) == len(board(app).problems)
        for oid in ids:
            target = board(app)._targets[oid]
            lst = app.main.query_one(ProblemList)
            lst.focus()
            lst.highlighted = lst.get_option_index(oid)
            await pilot.press("enter")
            if target.workload is not None:
                assert await until(pilot, lambda t=target: isinstance(app.screen, WorkloadDetailScreen)
                                   and app.screen.key == t.workload), oid
                await pilot.press("escape")
                assert await until(pilot, lambda: not isinstance(app.screen, WorkloadDetailScreen))
            elif target.view:
                assert await until(pilot, lambda t=target: app.switcher.current == t.view), oid
                # The filtered view holds exactly the rows the line counts (one per object).
                if target.view in TABLE_VIEWS:
                    assert await until(pilot, lambda t=target: table_cells(app, t.view)), oid
                if target.view in ("workloads", "nodes"):
                    problem = next(p for p in board(app).problems if p.target == target)
                    assert len(table_cells(app, target.view)) == problem.count, (oid, problem.text)
                await pilot.press("1")
                assert await until(pilot, lambda: app.switcher.current == "overview")
            else:
                assert await until(pilot, lambda: len(app.screen_stack) > 1), oid  # the object's YAML
                await pilot.press("escape")
                assert await until(pilot, lambda: len(app.screen_stack) == 1)

    run(app, body)


def test_the_detail_gives_the_pod_reasons_the_cluster_reported(frozen: Frozen) -> None:
    app = _app(frozen)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        for kind, reason in (("image-pull", "ImagePullBackOff"), ("crash-loop", "CrashLoopBackOff")):
            p = next(p for p in board(app).problems if p.kind == kind)
            assert p.target.workload is not None
            app.open_workload(p.target.workload)
            assert await until(pilot, lambda: isinstance(app.screen, WorkloadDetailScreen)
                               and "Pods and GPUs" in screen_text(app))
            text = screen_text(app)
            assert f"why: {'image pull failing' if kind == 'image-pull' else 'crash looping'}" in text \
                or reason in text, text
            assert reason in text
            await pilot.press("escape")
            assert await until(pilot, lambda: not isinstance(app.screen, WorkloadDetailScreen))

    run(app, body, size=(160, 60))
