"""`sim serve --token-file` serves HTTPS with a generated CA in its kubeconfig, so the real
kubectl (client-go sends bearer tokens only over TLS) authenticates; without a token file the
API stays open over plain HTTP but the fault switches need the kubeconfig's admin token."""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kueuetop.sim.apiserver.tls import generate_server_tls
from tests.binaries import require_binary

ADMIN, VIEWER = "tls-admin-token-0123", "tls-viewer-token-4567"


def _serve(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], Path]:
    kc = tmp_path / "kubeconfig"
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", "refarch", "--kubeconfig", str(kc),
                             *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "HOME": str(tmp_path)})
    assert proc.stdout is not None
    for line in proc.stdout:
        if "kubeconfig written to" in line:
            return proc, kc
    proc.wait(10)
    raise AssertionError(proc.stderr.read() if proc.stderr else "sim serve ended")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


@pytest.fixture
def tls_served(tmp_path: Path) -> Iterator[Path]:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"{ADMIN}: {{user: alice, role: admin}}\n{VIEWER}: {{user: bob, role: viewer}}\n")
    proc, kc = _serve(tmp_path, "--token-file", str(tokens))
    try:
        yield kc
    finally:
        _stop(proc)


def _kubectl(kc: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([require_binary("kubectl"), "--kubeconfig", str(kc), *args], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "HOME": str(kc.parent)})


def test_kubectl_authenticates_over_tls(tls_served: Path) -> None:
    cluster = yaml.safe_load(tls_served.read_text())["clusters"][0]["cluster"]
    assert cluster["server"].startswith("https://127.0.0.1:") and cluster["certificate-authority-data"]
    out = _kubectl(tls_served, "get", "clusterqueues")
    assert out.returncode == 0, out.stderr
    assert "cq-team-a-hp" in out.stdout
    who = _kubectl(tls_served, "auth", "whoami", "-o", "json")
    if who.returncode == 0:  # kubectl >= 1.28
        assert json.loads(who.stdout)["status"]["userInfo"]["username"] == "alice"


def test_kubectl_with_a_wrong_token_is_refused(tls_served: Path) -> None:
    out = _kubectl(tls_served, "--token", "not-a-token", "get", "clusterqueues")
    assert out.returncode != 0 and "You must be logged in to the server" in out.stderr  # 401
    viewer = _kubectl(tls_served, "--token", VIEWER, "delete", "clusterqueue", "cq-team-a-hp")
    assert viewer.returncode != 0 and "forbidden" in viewer.stderr.lower()


def test_kubectl_refuses_a_server_the_ca_did_not_sign(tls_served: Path, tmp_path: Path) -> None:
    doc = yaml.safe_load(tls_served.read_text())
    other = generate_server_tls()
    doc["clusters"][0]["cluster"]["certificate-authority-data"] = base64.b64encode(other.ca_pem).decode()
    forged = tmp_path / "other-ca.kubeconfig"
    forged.write_text(yaml.safe_dump(doc))
    out = _kubectl(forged, "get", "clusterqueues")
    assert out.returncode != 0 and "certificate" in out.stderr


def test_python_client_verifies_the_generated_certificate(tmp_path: Path) -> None:
    tls = generate_server_tls()
    ctx = ssl.create_default_context(cadata=tls.ca_pem.decode())
    server_ctx = tls.server_context()
    import socket
    import threading

    with socket.socket() as lsock:
        lsock.bind(("127.0.0.1", 0))
        lsock.listen()
        port = lsock.getsockname()[1]

        def accept() -> None:
            conn, _ = lsock.accept()
            with server_ctx.wrap_socket(conn, server_side=True) as s:
                s.sendall(s.recv(5))

        t = threading.Thread(target=accept, daemon=True)
        t.start()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                ctx.wrap_socket(raw, server_hostname="127.0.0.1") as s:
            s.sendall(b"hello")
            assert s.recv(5) == b"hello"
        t.join(10)


def _post_faults(url: str, token: str | None) -> int:
    req = urllib.request.Request(url + "/kueuetop/v1/faults", data=json.dumps({"latencyMs": 1}).encode(),
                                 method="POST", headers={"Content-Type": "application/json",
                                                         **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code


def test_fault_switches_need_the_admin_token_without_a_token_file(tmp_path: Path) -> None:
    proc, kc = _serve(tmp_path)
    try:
        doc = yaml.safe_load(kc.read_text())
        url = doc["clusters"][0]["cluster"]["server"]
        token = doc["users"][0]["user"]["token"]
        assert url.startswith("http://") and len(token) >= 24
        assert _post_faults(url, None) == 403
        assert _post_faults(url, "guessed") == 403
        assert _post_faults(url, token) == 200
        with urllib.request.urlopen(url + "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", timeout=10) as resp:
            assert resp.status == 200  # the API itself stays open on loopback, as the tests and demo use it
    finally:
        _stop(proc)


def test_kubectl_auth_can_i_is_answered_per_role(tls_served: Path) -> None:
    # kubectl sends the SelfSubjectAccessReview as protobuf: the server must read it (415 before).
    admin = _kubectl(tls_served, "auth", "can-i", "patch", "workloads.kueue.x-k8s.io", "-n", "team-a")
    assert (admin.returncode, admin.stdout.strip()) == (0, "yes"), admin.stderr
    viewer = _kubectl(tls_served, "--token", VIEWER, "auth", "can-i", "patch", "workloads.kueue.x-k8s.io",
                      "-n", "team-a")
    assert (viewer.returncode, viewer.stdout.strip()) == (1, "no"), viewer.stderr
    reads = _kubectl(tls_served, "--token", VIEWER, "auth", "can-i", "list", "clusterqueues.kueue.x-k8s.io")
    assert (reads.returncode, reads.stdout.strip()) == (0, "yes"), reads.stderr
