"""Kueue's configuration reaches the console as on a real cluster: the simulator holds it in the
ConfigMap Kueue's manifests install, the console reads it (a missing, forbidden or malformed one
leaves it unknown, with a reason, never an error), and the triage board then tells PodsReady
timeouts."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from kueuetop.kueue.config import KueueConfig, parse_kueue_config
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sim.wiring import kueue_config_of
from kueuetop.sources.connection import connect
from kueuetop.sources.kueue_config import read_kueue_config
from tests.binaries import require_binary
from tests.builders import condition
from tests.tui.conftest import Live
from tests.tui.test_app import make_app, run, until
from tests.tui.test_overview import board, incident_store
from tests.views.cluster import NOW, admitted, pod, put

WHERE = ("kueue-system", "kueue-manager-config")


@pytest.fixture(scope="module")
def incident(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("kueue-config")
    s = start_served(load_scenario("incident"), speed=1, kubeconfig=str(d / "kubeconfig"))
    yield s
    s.stop()


def kubectl(served: ServedCluster, *args: str) -> str:
    require_binary("kubectl")
    env = {**os.environ, "KUBECONFIG": str(served.kubeconfig), "HOME": str(Path(served.kubeconfig).parent)}
    return subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, check=True,
                          timeout=60).stdout


def test_the_simulated_kueue_config_is_served_and_read_back(incident: ServedCluster) -> None:
    cm = json.loads(kubectl(incident, "get", "configmap", "-n", WHERE[0], WHERE[1], "-o", "json"))
    doc = cm["data"]["controller_manager_config.yaml"]
    assert "kind: Configuration" in doc and "config.kueue.x-k8s.io/" in doc
    want = kueue_config_of(load_scenario("incident"))
    assert want.wait_for_pods_ready is not None and want.wait_for_pods_ready.timeout_seconds == 120
    conn = connect(str(incident.kubeconfig))
    try:
        config, why = read_kueue_config(conn.api)
    finally:
        conn.close()
    assert why == "" and config == want


def test_missing_or_malformed_config_is_unknown_with_a_reason(tmp_path: Path) -> None:
    served = start_served(load_scenario("refarch"), speed=1, kubeconfig=str(tmp_path / "kubeconfig"))
    conn = connect(str(served.kubeconfig))
    try:
        kubectl(served, "patch", "configmap", "-n", WHERE[0], WHERE[1], "--type=merge",
                "-p", json.dumps({"data": {"controller_manager_config.yaml": "waitForPodsReady: [not, a, map"}}))
        config, why = read_kueue_config(conn.api)
        assert config is None and "does not parse" in why and "\n" not in why
        kubectl(served, "delete", "configmap", "-n", WHERE[0], WHERE[1])
        config, why = read_kueue_config(conn.api)
        assert config is None and why == "Kueue's configuration: no configmap kueue-system/kueue-manager-config"
    finally:
        conn.close()
        served.stop()


def test_the_board_tells_pods_ready_timeouts_once_the_config_arrives() -> None:
    store = incident_store()
    # Admitted 5 minutes ago, its pod still pulling its image: Kueue says PodsReady=False.
    put(store, admitted("team-a", "slow", "cq-spot", "gpu-l4-spot", 0, at=NOW - 300,
                        extra=[condition("PodsReady", False, "PodsReady", "Not all pods are ready or succeeded",
                                         NOW - 300)]),
        pod("team-a", "slow-0", "slow", 0, node_name="spot-1", waiting="ContainerCreating"))
    app = make_app(store, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: any(p.kind == "image" or "image" in p.text for p in board(app).problems))
        assert not any(p.kind == "pods-ready" for p in board(app).problems)  # unknown config: not guessed
        app.set_kueue_config(parse_kueue_config({"waitForPodsReady": {"enable": True, "timeout": "10m"}}))
        assert await until(pilot, lambda: any(p.kind == "pods-ready" for p in board(app).problems))
        line = next(p for p in board(app).problems if p.kind == "pods-ready")
        # 10 minutes from admission, 5 of them gone; Kueue's default backoff base is 60 s.
        assert "PodsReady timeout in 5m for team-a/slow" in line.text and "then backoff 1m" in line.text

    run(app, body)


def test_the_console_reads_it_when_it_starts(live: Live) -> None:
    """The running console asks the cluster for it (a worker, off the UI thread) and hands it
    to the board."""
    app = make_app(live.store, live)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: isinstance(app.ctx.extra.get("kueue_config"), KueueConfig))
        assert board(app).model.config is app.ctx.extra["kueue_config"]

    run(app, body)
