"""Kubeconfig resolution, exec credentials, discovery, and the clear connection errors."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.apiserver.kubeconfig import kubeconfig_dict
from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.connection import ConnectionProblem, NoKueue, connect, discover, load_client

from .conftest import ADMIN_TOKEN


def test_connect_reports_context_and_versions(served: ServedCluster) -> None:
    conn = connect(str(served.kubeconfig))
    try:
        assert conn.info.server == served.url and conn.info.context == "kueuetop-sim"
        assert conn.kueue.version == "v1beta2" and conn.kueue.visibility_version == "v1beta2"
        assert conn.kueue.serves("workloads") and conn.kueue.provisioning_version == "v1"
    finally:
        conn.close()


def test_kubeconfig_env_with_several_files_and_context_flag(served: ServedCluster, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    a = write_kubeconfig(tmp_path / "a", "http://127.0.0.1:9", context="dead")
    b = write_kubeconfig(tmp_path / "b", served.url, token=ADMIN_TOKEN, context="sim")
    monkeypatch.setenv("KUBECONFIG", f"{a}:{tmp_path / 'missing'}:{b}")
    _, info = load_client()
    assert info.context == "dead"  # the first file's current-context wins, as in kubectl
    conn = connect(context="sim")
    assert conn.info.server == served.url
    conn.close()


def test_exec_credential_plugin(served: ServedCluster, tmp_path: Path) -> None:
    plugin = tmp_path / "fake-auth-plugin"
    cred = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
            "status": {"token": ADMIN_TOKEN}}
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(cred))})\n")
    plugin.chmod(0o755)
    cfg = kubeconfig_dict(served.url, context="gke")
    cfg["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                        "command": str(plugin), "interactiveMode": "Never"}}
    path = tmp_path / "exec.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    conn = connect(str(path))  # the server requires a token: only the plugin provides it
    assert conn.kueue.version == "v1beta2"
    conn.close()


def test_missing_exec_plugin_is_a_clear_error(served: ServedCluster, tmp_path: Path) -> None:
    cfg = kubeconfig_dict(served.url, context="gke")
    cfg["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                        "command": "gke-gcloud-auth-plugin-not-installed"}}
    path = tmp_path / "exec.kubeconfig"
    path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConnectionProblem) as err:
        connect(str(path))
    assert "\n" not in str(err.value) and err.value.hint


@pytest.mark.parametrize("case", ["missing-file", "broken-yaml", "missing-context", "unreachable", "no-context"])
def test_connection_problems_are_one_line(case: str, tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    context = None
    if case == "broken-yaml":
        path.write_text("apiVersion: v1\nclusters: [ {name: x\n")
    elif case == "missing-context":
        write_kubeconfig(path, "http://127.0.0.1:9")
        context = "prod-eu"
    elif case == "unreachable":
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        write_kubeconfig(path, f"http://127.0.0.1:{port}")
    elif case == "no-context":
        cfg = kubeconfig_dict("http://127.0.0.1:9")
        cfg["current-context"] = ""
        path.write_text(yaml.safe_dump(cfg))
    with pytest.raises(ConnectionProblem) as err:
        connect(str(path), context=context, timeout=2)
    e = err.value
    assert "\n" not in str(e) and "Traceback" not in str(e) and e.hint
    assert not isinstance(e, NoKueue)
    expected = {"missing-file": "does not exist", "broken-yaml": "cannot read kubeconfig",
                "missing-context": "'prod-eu' not found", "unreachable": "connection refused",
                "no-context": "no current context"}[case]
    assert expected in str(e)


class _Stub(BaseHTTPRequestHandler):
    """A tiny API server: /version, plus whatever groups the test puts in `docs`."""

    docs: ClassVar[dict[str, dict]] = {}

    def do_GET(self) -> None:
        doc = {"/version": {"major": "1", "minor": "30", "gitVersion": "v1.30.0"}, **self.docs}.get(
            self.path.split("?")[0])
        body = json.dumps(doc or {"kind": "Status", "code": 404, "reason": "NotFound"}).encode()
        self.send_response(200 if doc else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub(tmp_path: Path) -> Iterator[tuple[type[_Stub], Path]]:
    handler = type("Handler", (_Stub,), {"docs": {}})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield handler, write_kubeconfig(tmp_path / "stub", f"http://127.0.0.1:{srv.server_address[1]}")
    srv.shutdown()
    srv.server_close()


def test_cluster_without_kueue(stub: tuple[type[_Stub], Path]) -> None:
    _, path = stub
    with pytest.raises(NoKueue) as err:
        connect(str(path))
    assert "Kueue is not installed" in str(err.value) and err.value.hint


def test_old_kueue_serves_only_v1beta1(stub: tuple[type[_Stub], Path]) -> None:
    handler, path = stub
    gv = {"groupVersion": "kueue.x-k8s.io/v1beta1", "version": "v1beta1"}
    handler.docs = {
        "/apis/kueue.x-k8s.io": {"kind": "APIGroup", "name": "kueue.x-k8s.io", "versions": [gv],
                                 "preferredVersion": gv},
        "/apis/kueue.x-k8s.io/v1beta1": {"kind": "APIResourceList", "resources": [
            {"name": "workloads"}, {"name": "workloads/status"}, {"name": "clusterqueues"}]},
        "/apis/visibility.kueue.x-k8s.io": {"versions": [{"version": "v1alpha1"}]},
    }
    api, info = load_client(str(path))
    kueue = discover(api, info)
    assert kueue.version == "v1beta1" and kueue.resources == {"workloads", "clusterqueues"}
    assert kueue.visibility_version == "v1alpha1" and kueue.provisioning_version is None
    api.close()
