"""`kueuetop sim serve multikueue`: a manager and its workers, each behind its own
Kubernetes-compatible API on a loopback port, with one kubeconfig holding a context per cluster
(`kubectl --context us-central1 get workloads -A`). One simulation thread drives them all on one
clock (`sim.world`). A worker taken down (`set_worker_up(name, False)` or a scenario's
`cluster-down` action) stops listening: clients get connection refused, the manager's
MultiKueue sees it inactive; brought back, it listens on the same port again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kueuetop.sim.apiserver import ApiServer
from kueuetop.sim.apiserver.kubeconfig import write_secret_file
from kueuetop.sim.clock import SimClock
from kueuetop.sim.scenarios.multicluster import MultiClusterScenario
from kueuetop.sim.serve import KUEUE_API_VERSIONS, cluster_hooks, load_first_instant
from kueuetop.sim.world import World, build_world
from kueuetop.xdg import private_dir


def multi_kubeconfig(urls: dict[str, str], current: str) -> dict[str, Any]:
    """One kubeconfig, one context (and cluster and user) per cluster, named after it."""
    return {"apiVersion": "v1", "kind": "Config",
            "clusters": [{"name": n, "cluster": {"server": u}} for n, u in urls.items()],
            "users": [{"name": n, "user": {}} for n in urls],
            "contexts": [{"name": n, "context": {"cluster": n, "user": n}} for n in urls],
            "current-context": current, "preferences": {}}


@dataclass
class ServedWorld:
    world: World
    servers: dict[str, ApiServer]
    kubeconfig: Path
    thread: threading.Thread
    caught_up: threading.Event
    _lock: threading.Lock

    def url(self, cluster: str) -> str:
        return self.servers[cluster].url

    @property
    def contexts(self) -> list[str]:
        return list(self.servers)

    def set_worker_up(self, worker: str, up: bool) -> None:
        self.world.set_worker_up(worker, up)

    def _server_fault(self, worker: str, up: bool) -> None:
        with self._lock:
            server = self.servers[worker]
            if not up:
                server.stop()
                return
            if server._httpd is not None:  # already listening
                return
            parts = self.world.parts[worker]
            again = ApiServer(parts.cluster.store, port=server.port, hooks=cluster_hooks(parts),
                              kueue_versions=server.served.kueue)
            # The port was ours a moment ago; another process may take it meanwhile, then the
            # worker stays away (its clients see it unreachable), which is a real outcome too.
            with contextlib.suppress(OSError):
                self.servers[worker] = again.start()

    def stop(self) -> None:
        self.world.stop()
        for s in self.servers.values():
            s.stop()
        self.thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self.kubeconfig.unlink()


def start_served_world(scenario: MultiClusterScenario, *, speed: float = 1.0, port: int = 0,
                       kubeconfig: str | None = None) -> ServedWorld:
    """Build every cluster, serve each on loopback (the manager on `port`, workers on the next
    ports when `port` is given, else free ones), write the kubeconfig, start the simulation."""
    clock = SimClock(time.time(), speed)
    world = build_world(scenario, clock)
    for p in world.parts.values():
        load_first_instant(p)
    servers: dict[str, ApiServer] = {}
    try:
        for i, decl in enumerate(scenario.clusters):
            parts = world.parts[decl.name]
            servers[decl.name] = ApiServer(parts.cluster.store, port=port + i if port else 0,
                                           hooks=cluster_hooks(parts),
                                           kueue_versions=KUEUE_API_VERSIONS[decl.kueue_api]).start()
        urls = {n: s.url for n, s in servers.items()}
        path = Path(kubeconfig) if kubeconfig else private_dir() / f"sim-{scenario.name.replace('/', '_')}-" \
            f"{servers[scenario.manager].port}.kubeconfig"
        if not kubeconfig:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        write_secret_file(path, yaml.safe_dump(multi_kubeconfig(urls, scenario.manager), sort_keys=False).encode())
    except BaseException:
        for s in servers.values():
            s.stop()
        raise
    world.connect({w: servers[w].url for w in scenario.workers})
    caught_up = threading.Event()

    def simulate() -> None:
        world.settle()
        caught_up.set()
        world.run_forever()

    thread = threading.Thread(target=simulate, name="kueuetop-sim-world", daemon=True)
    served = ServedWorld(world, servers, path, thread, caught_up, threading.Lock())
    world.on_cluster_fault = served._server_fault
    thread.start()
    return served
