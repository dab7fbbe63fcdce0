"""`kueuetop sim serve` as a process: serves every built-in, honours --kueue-api, and stops
cleanly (exit 0, port released) on SIGINT and SIGTERM. A scale scenario serves its whole
first instant from the first answer, then Kueue catches up and watchers see it."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

KUEUE = "kueue.x-k8s.io"
READY_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def start(tmp_path: Path, scenario: str, *extra: str) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", scenario, "--port", str(port),
                             "--kubeconfig", str(tmp_path / "kubeconfig"), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if http_get(url + "/readyz")[0] == 200:
                return proc, url
        except OSError:
            time.sleep(0.05)
    proc.kill()
    _, err = proc.communicate(timeout=10)
    raise AssertionError(f"sim serve {scenario} did not answer within {READY_TIMEOUT}s:\n{err}")


def stop(proc: subprocess.Popen[str], sig: int) -> int:
    proc.send_signal(sig)
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=10)
        raise AssertionError(f"sim serve did not stop on signal {sig}") from None
    return proc.returncode


def port_is_free(url: str) -> bool:
    """True when nothing listens on the port any more (SO_REUSEADDR ignores TIME_WAIT leftovers)."""
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.mark.parametrize("scenario", ["refarch", "dws", "skypilot"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_builtin_serves_and_stops_cleanly(tmp_path: Path, scenario: str, sig: int) -> None:
    proc, url = start(tmp_path, scenario)
    try:
        status, body = http_get(url + f"/apis/{KUEUE}/v1beta2/clusterqueues")
        assert status == 200
        assert json.loads(body)["items"], "the scenario's ClusterQueues exist from the first request"
    finally:
        code = stop(proc, sig)
    assert code == 0
    assert port_is_free(url)


def test_signal_during_startup_still_exits_0(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", "refarch", "--port", str(port),
                             "--kubeconfig", str(tmp_path / "kubeconfig")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # Wait until the handler is in place (the kubeconfig is written once the server listens),
    # then stop at once, before any request is served.
    deadline = time.monotonic() + READY_TIMEOUT
    while not (tmp_path / "kubeconfig").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert stop(proc, signal.SIGTERM) == 0


def test_kueue_api_v1beta1_flag(tmp_path: Path) -> None:
    proc, url = start(tmp_path, "refarch", "--kueue-api", "v1beta1")
    try:
        status, body = http_get(url + f"/apis/{KUEUE}")
        assert status == 200
        assert [v["version"] for v in json.loads(body)["versions"]] == ["v1beta1"]
        assert http_get(url + f"/apis/{KUEUE}/v1beta2/clusterqueues")[0] == 404
        status, body = http_get(url + f"/apis/{KUEUE}/v1beta1/clusterqueues")
        items = json.loads(body)["items"]
        assert status == 200 and items
        assert all("cohortName" not in cq["spec"] for cq in items)
        assert any("cohort" in cq["spec"] for cq in items)
    finally:
        assert stop(proc, signal.SIGINT) == 0


def _first_answer(url: str, proc: subprocess.Popen[str]) -> tuple[int, bytes]:
    """The first answered request, whatever the server is still doing."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            return http_get(url)
        except OSError:
            time.sleep(0.02)
    raise AssertionError(f"no answer from {url}")


def test_large_serves_its_first_instant_from_the_first_answer(tmp_path: Path) -> None:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", "large", "--port", str(port),
                             "--kubeconfig", str(tmp_path / "kubeconfig")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        status, body = _first_answer(url + "/api/v1/nodes", proc)
        assert status == 200
        assert len(json.loads(body)["items"]) == 1_000
        cqs = json.loads(http_get(url + f"/apis/{KUEUE}/v1beta2/clusterqueues")[1])
        assert len(cqs["items"]) == 500
        assert len(json.loads(http_get(url + f"/apis/{KUEUE}/v1beta2/localqueues")[1])["items"]) == 2_000
        names = {ns["metadata"]["name"] for ns in json.loads(http_get(url + "/api/v1/namespaces")[1])["items"]}
        assert {cq["metadata"]["name"] for cq in cqs["items"]} <= names
        # Kueue catches up after the server listens: a watch from the listed version sees
        # every ClusterQueue become Active, then the scenario's Workloads arrive.
        active: set[str] = {cq["metadata"]["name"] for cq in cqs["items"] if _active(cq)}
        watch = (url + f"/apis/{KUEUE}/v1beta2/clusterqueues?watch=true&timeoutSeconds=60"
                 f"&resourceVersion={cqs['metadata']['resourceVersion']}")
        with urllib.request.urlopen(watch, timeout=60) as resp:
            for line in resp if len(active) < 500 else ():
                event = json.loads(line)
                if event["type"] == "MODIFIED" and _active(event["object"]):
                    active.add(event["object"]["metadata"]["name"])
                if len(active) == 500:
                    break
        assert len(active) == 500
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            wls = json.loads(http_get(url + f"/apis/{KUEUE}/v1beta2/workloads?limit=5")[1])["items"]
            if wls:
                break
            time.sleep(0.2)
        assert wls, "the scenario's Workloads arrive once the simulation runs"
    finally:
        assert stop(proc, signal.SIGTERM) == 0


def _active(cq: dict) -> bool:
    return any(c.get("type") == "Active" and c.get("status") == "True"
               for c in (cq.get("status") or {}).get("conditions") or [])



def test_says_when_its_first_instant_is_served(tmp_path: Path) -> None:
    """The line a start-up time counts to: printed once the first instant's workloads are served."""
    proc, url = start(tmp_path, "refarch")
    try:
        assert proc.stdout is not None
        lines = []
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            lines.append(line)
            if "first instant served" in line or not line:
                break
        said = [ln for ln in lines if "first instant served" in ln]
        assert said, lines
        status, body = http_get(url + f"/apis/{KUEUE}/v1beta2/workloads")
        served = len(json.loads(body)["items"])
        count = int(said[0].split("(")[1].split()[0])
        assert status == 200 and count > 0 and served >= count
    finally:
        assert stop(proc, signal.SIGTERM) == 0
