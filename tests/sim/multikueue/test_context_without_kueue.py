"""A context whose cluster answers as a Kubernetes API server but does not serve Kueue (a plain
HTTP server on loopback: /version and discovery without kueue.x-k8s.io), beside
`sim serve multikueue`: its row says so in one line, every other cluster keeps its data, in
`kueuetop clusters` and in the console across contexts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from kueuetop.sim.scenarios.multicluster import load_multicluster
from kueuetop.sim.serve_world import ServedWorld, start_served_world
from kueuetop.sources.multi_context import ContextPool
from kueuetop.tui.clusters_app import ClustersApp
from kueuetop.views.clusters import cluster_reads
from tests.tui.test_clusters_console import _cells, _until

WORKERS = ("us-central1", "europe-west4", "asia-southeast1")
DISCOVERY = {
    "/version": {"major": "1", "minor": "31", "gitVersion": "v1.31.0"},
    "/api": {"kind": "APIVersions", "versions": ["v1"]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
        {"name": "apps", "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
         "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}}]},
}


class _NoKueue(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = DISCOVERY.get(self.path.split("?")[0])
        status = 200 if body is not None else 404
        data = json.dumps(body if body is not None else {
            "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def world_and_plain(tmp_path: Path) -> Iterator[tuple[ServedWorld, list[str]]]:
    s = start_served_world(load_multicluster("multikueue"), speed=30, kubeconfig=str(tmp_path / "kubeconfig"))
    plain = ThreadingHTTPServer(("127.0.0.1", 0), _NoKueue)
    t = threading.Thread(target=plain.serve_forever, daemon=True)
    t.start()
    kc = yaml.safe_load(s.kubeconfig.read_text())
    kc["clusters"].append({"name": "plain", "cluster": {"server": f"http://127.0.0.1:{plain.server_port}"}})
    kc["users"].append({"name": "plain", "user": {}})
    kc["contexts"].append({"name": "plain", "context": {"cluster": "plain", "user": "plain"}})
    s.kubeconfig.write_text(yaml.safe_dump(kc))
    assert s.caught_up.wait(30)
    yield s, [*s.contexts, "plain"]
    plain.shutdown()
    plain.server_close()
    s.stop()


def test_clusters_command_keeps_the_others(world_and_plain: tuple[ServedWorld, list[str]]) -> None:
    served, _ = world_and_plain
    out = subprocess.run([sys.executable, "-m", "kueuetop", "clusters", "--kubeconfig", str(served.kubeconfig),
                          "--all-contexts", "-o", "json", "--timeout", "8s"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    rows = {r["context"]: r for r in json.loads(out.stdout)["clusters"]}
    assert set(rows) == {"manager", *WORKERS, "plain"}
    assert rows["plain"]["reachable"] is False
    assert rows["plain"]["error"].startswith("Kueue is not installed on http://127.0.0.1:")
    assert "\n" not in rows["plain"]["error"]
    assert all(rows[c]["reachable"] and rows[c]["kueueApi"] == "v1beta2" for c in ("manager", *WORKERS))


def test_console_row_says_no_kueue_and_the_others_show(world_and_plain: tuple[ServedWorld, list[str]]) -> None:
    served, contexts = world_and_plain
    pool = ContextPool(str(served.kubeconfig), contexts, timeout=5)

    async def go() -> None:
        app = ClustersApp(lambda: cluster_reads(pool.refresh()), interval=0.5)
        async with app.run_test(size=(200, 40)) as pilot:
            await _until(pilot, lambda: len(_cells(app, "clusters")) == 5
                         and any(r[2] == "dispatched" for r in _cells(app, "workloads")), 30)
            rows = {r[0]: r for r in _cells(app, "clusters")}
            assert rows["plain"][1] == "no" and "Kueue is not installed" in rows["plain"][6]
            assert all(rows[c][1] == "yes" for c in ("manager", *WORKERS))
            await pilot.press("colon", *"wl", "enter")
            await pilot.pause()
            assert "plain" not in {r[0] for r in _cells(app, "allwl")} and _cells(app, "allwl")
    try:
        asyncio.run(go())
    finally:
        pool.close()
