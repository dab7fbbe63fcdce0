"""Fixtures: an in-process simulated API server on a free loopback port."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kueuetop.sim.apiserver import ApiServer, write_kubeconfig
from kueuetop.sim.storage.objectstore import ObjectStore
from tests.binaries import require_binary

ADMIN_TOKEN = "admin-token-123"
VIEWER_TOKEN = "viewer-token-456"
TOKENS = {ADMIN_TOKEN: {"user": "alice", "role": "admin"},
          VIEWER_TOKEN: {"user": "bob", "role": "viewer"}}

KUEUE = "kueue.x-k8s.io"


def cluster_queue(name: str, cohort: str | None = None, nominal: str = "8") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"],
                            "flavors": [{"name": "default-flavor",
                                         "resources": [{"name": "cpu", "nominalQuota": nominal},
                                                       {"name": "nvidia.com/gpu", "nominalQuota": "4"}]}]}],
    }
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": f"{KUEUE}/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name}, "spec": spec}


def workload(name: str, ns: str, queue: str = "lq", priority: int = 0, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{KUEUE}/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "labels": {"team": ns}},
            "spec": {"queueName": queue, "priority": priority,
                     "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": [
                         {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}],
                     **spec}}


class Clock:
    """A settable clock so ages and timestamps are deterministic."""

    def __init__(self, t: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> ObjectStore:
    s = ObjectStore(now=clock, seed=7)
    for ns in ("default", "team-a", "team-b"):
        s.create("", "namespaces", {"metadata": {"name": ns}, "status": {"phase": "Active"}})
    return s


@pytest.fixture
def server(store: ObjectStore) -> Iterator[ApiServer]:
    srv = ApiServer(store, bookmark_interval=0.2).start()
    yield srv
    srv.stop()


@pytest.fixture
def auth_server(store: ObjectStore) -> Iterator[ApiServer]:
    srv = ApiServer(store, tokens=TOKENS).start()
    yield srv
    srv.stop()


def make_client(url: str, token: str | None = None) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = url
    if token:
        cfg.api_key = {"authorization": token}
        cfg.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(cfg)


@pytest.fixture
def api(server: ApiServer) -> Iterator[client.ApiClient]:
    c = make_client(server.url)
    yield c
    c.close()


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


# ----------------------------------------------------------------- kubectl

def kubectl_path() -> str:
    return require_binary("kubectl")


class Kubectl:
    def __init__(self, binary: str, kubeconfig: Path, home: Path) -> None:
        self.binary = binary
        self.kubeconfig = kubeconfig
        self.env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(kubeconfig),
                    "KUBECACHEDIR": str(home / "cache")}

    def run(self, *args: str, input: str | None = None, timeout: float = 20,
            check: bool = True) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run([self.binary, *args], input=input, capture_output=True, text=True,
                              env=self.env, timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
        return proc


@pytest.fixture
def kubectl(server: ApiServer, tmp_path: Path) -> Kubectl:
    binary = kubectl_path()
    kc = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    return Kubectl(binary, kc, tmp_path)
