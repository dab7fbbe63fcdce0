"""Actions through a hostile network (tests/fault_proxy.py) with the real client against `sim serve`.

A lost reply, a partition, a kill -9 in the middle: the journal says what landed, read back from
the server, and how to finish it; nothing is sent twice. An action that can't be journaled, or
whose access review is answered 401/403, is refused before any request about the target.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kueuetop.actions.executor import Executor
from kueuetop.kueue.actions import parse_target
from kueuetop.sim.apiserver import auth as sim_auth
from kueuetop.sim.apiserver import server as sim_server
from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.serve import ServedCluster
from tests.fault_proxy import FaultProxy
from tests.waiting import wait_until

from .conftest import ADMIN_TOKEN, NS, Kueue
from .test_cli_actions import audit_lines, kueuetop

HELD = "partly applied: held"


@pytest.fixture
def proxy(served: ServedCluster) -> Iterator[FaultProxy]:
    with FaultProxy(served.url) as p:
        yield p


@pytest.fixture
def proxied(proxy: FaultProxy, tmp_path: Path) -> Path:
    """A kubeconfig whose server is the proxy."""
    return write_kubeconfig(tmp_path / "proxied.kubeconfig", proxy.url, token=ADMIN_TOKEN)


@pytest.fixture
def proxied_api(proxied: Path) -> Iterator[client.ApiClient]:
    c = config.new_client_from_config(config_file=str(proxied))
    yield c
    c.close()


def entries(home: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in audit_lines(home)]


def target_requests(proxy: FaultProxy, name: str) -> list[str]:
    return [f"{s.method} {s.path}" for s in proxy.requests() if f"/workloads/{name}" in s.path]


def test_lost_reply_to_the_first_patch_of_a_preempt(proxy: FaultProxy, proxied: Path,
                                                    low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    k = low_running_high_waiting
    lost: list[str] = []

    def rule(method: str, path: str) -> str:
        if method == "PATCH" and not lost:
            lost.append(path)
            return "lose-reply"  # the deactivation lands; the client never hears so
        return "pass"

    proxy.rule(rule)
    p = kueuetop("preempt", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied), home=tmp_path)
    assert len(proxy.requests("PATCH")) == 1  # sent once, never re-sent blindly
    assert k.wl("low")["spec"]["active"] is False  # what the server has: the preempt became a hold
    assert p.returncode == 1, p.stderr
    assert len(p.stderr.splitlines()) == 1, p.stderr
    assert p.stderr.startswith(f"kueuetop: preempt {NS}/low: {HELD}"), p.stderr
    assert f"`kueuetop resume {NS}/low`" in p.stderr and "cannot reach the API server" not in p.stderr
    journal = entries(tmp_path)
    assert [e["entry"] for e in journal] == ["intent", "step", "outcome"]
    assert journal[-1]["landed"] == HELD and f"kueuetop resume {NS}/low" in journal[-1]["next"]
    # Following the hint finishes the preempt: back in its queue.
    p = kueuetop("resume", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied), home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert k.wl("low")["spec"]["active"] is True


@pytest.mark.parametrize("at", ["wait-step", "reactivation"])
def test_partition_after_the_first_patch_then_heal(proxy: FaultProxy, proxied_api: client.ApiClient,
                                                   low_running_high_waiting: Kueue, at: str) -> None:
    """Partitioned right after the deactivation landed (the wait step's poll hangs), or while the
    reactivation is on its way (it waits in the network and is delivered at the heal): the
    outcome is what the server has once the network heals."""
    k = low_running_high_waiting
    patches: list[str] = []
    partitioned = threading.Event()

    def rule(method: str, path: str) -> str:
        if method == "PATCH":
            patches.append(path)
        if partitioned.is_set():
            return "pass"
        if (at == "reactivation" and len(patches) == 2) or (at == "wait-step" and method == "GET" and patches):
            partitioned.set()
            proxy.partition()  # once: from this request on, nothing moves until the heal
        return "pass"

    proxy.rule(rule)
    reading_back = threading.Event()
    results: list[Any] = []
    ex = Executor(proxied_api, poll_interval=0.05, wait_timeout=30, request_timeout=2, readback_timeout=60)

    def act() -> None:
        results.append(ex.run("preempt", parse_target(f"{NS}/low"),
                              on_step=lambda i, _: reading_back.set() if i == -1 else None))

    t = threading.Thread(target=act, daemon=True)
    t.start()
    assert reading_back.wait(90), "the executor never started reading back"
    proxy.heal()  # what waited in the network is delivered now, while the executor reads back
    t.join(90)
    assert results, "the executor did not finish"
    res = results[0]
    truth = k.wl("low")
    expected = "applied" if truth["spec"]["active"] is True else HELD
    assert res.landed == expected, (res, truth["spec"])
    assert res.ok == (expected == "applied") and res.summary["active"] == truth["spec"]["active"]
    if at == "wait-step":
        assert res.landed == HELD and len(proxy.requests("PATCH")) == 1  # the reactivation was never sent
        assert f"`kueuetop resume {NS}/low`" in res.message
    else:
        assert len(proxy.requests("PATCH")) == 2  # each PATCH sent once


def hold_after_first_patch(proxy: FaultProxy, name: str) -> tuple[threading.Event, Callable[[str, str], str]]:
    """A proxy rule: once a PATCH went through, the first read of `name` (the wait step's first
    poll) is held with all traffic: the action is stuck between its steps. Returns (stuck, rule)."""
    patched = threading.Event()
    stuck = threading.Event()

    def rule(method: str, path: str) -> str:
        if method == "PATCH":
            patched.set()
        elif method == "GET" and patched.is_set() and path.endswith(f"/workloads/{name}") and not stuck.is_set():
            stuck.set()
            proxy.hold()
        return "pass"
    return stuck, rule


def test_kill_mid_action_is_reported_by_the_next_command(proxy: FaultProxy, proxied: Path,
                                                         low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    k = low_running_high_waiting
    stuck, rule = hold_after_first_patch(proxy, "low")  # killed between steps

    proxy.rule(rule)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "KUEUETOP_", "KUBECONFIG"))}
    env |= {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "preempt", f"{NS}/low", "--yes", "--no-preview",
                             "--kubeconfig", str(proxied)], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert wait_until(stuck.is_set, 60), "the preempt never reached its wait step"
    finally:
        proc.kill()
        proc.wait(30)
    proxy.release()
    journal = entries(tmp_path)
    assert [e["entry"] for e in journal] == ["intent", "step"]  # no outcome: killed
    assert k.wl("low")["spec"]["active"] is False

    p = kueuetop("hold", f"{NS}/high", "--yes", "--no-preview", "--kubeconfig", str(proxied), home=tmp_path)
    assert p.returncode == 0, p.stderr
    report = [line for line in p.stderr.splitlines() if "interrupted action" in line]
    assert len(report) == 1, p.stderr
    assert f"preempt {NS}/low" in report[0] and HELD in report[0] and "spec.active=false" in report[0]
    assert f"`kueuetop resume {NS}/low`" in report[0]
    reconciled = [e for e in entries(tmp_path) if e["entry"] == "reconciled"]
    assert len(reconciled) == 1 and reconciled[0]["id"] == journal[0]["id"] and reconciled[0]["landed"] == HELD
    # Reported once.
    p = kueuetop("resume", f"{NS}/high", "--yes", "--no-preview", "--kubeconfig", str(proxied), home=tmp_path)
    assert p.returncode == 0 and "interrupted" not in p.stderr, p.stderr


def test_ctrl_c_mid_action_journals_it_interrupted(proxy: FaultProxy, proxied: Path,
                                                  low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    k = low_running_high_waiting
    stuck, rule = hold_after_first_patch(proxy, "low")

    proxy.rule(rule)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "KUEUETOP_", "KUBECONFIG"))}
    env |= {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state")}
    # A request timeout far longer than the test needs to send Ctrl-C: with 2 s, a loaded machine
    # let the held request time out first (an "outcome unknown" line instead of "interrupted").
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "preempt", f"{NS}/low", "--yes", "--no-preview",
                             "--request-timeout", "60s", "--kubeconfig", str(proxied)], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # Ctrl-C as a terminal delivers it: a test runner's worker may ignore SIGINT,
                            # and an ignored SIGINT is inherited (Python then installs no handler).
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert wait_until(stuck.is_set, 60), "the preempt never reached its wait step"
        proc.send_signal(signal.SIGINT)  # still held: the quick read-back can't get through either
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1 and len(err.splitlines()) == 1, err
    assert f"preempt {NS}/low: interrupted: unknown" in err and "next kueuetop action command" in err
    out = entries(tmp_path)[-1]
    assert out["entry"] == "outcome" and out["result"] == "interrupted" and out["landed"] == "unknown"
    assert k.wl("low")["spec"]["active"] is False
    # An unknown outcome is checked by the next command, once the network is back.
    proxy.release()
    p = kueuetop("hold", f"{NS}/high", "--yes", "--no-preview", "--kubeconfig", str(proxied), home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"interrupted action preempt {NS}/low" in p.stderr and HELD in p.stderr, p.stderr


def test_unwritable_audit_log_refuses_and_sends_nothing(proxy: FaultProxy, proxied: Path,
                                                        low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "state").write_text("")  # XDG_STATE_HOME is a file: the log's directory can't be made
    p = kueuetop("hold", f"{NS}/low", "--yes", "--kubeconfig", str(proxied), home=home)
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"kueuetop: refusing to hold {NS}/low: audit log "), p.stderr
    assert "not writable" in lines[0]
    # Nothing but the check that the server is a Kubernetes API server (GET /version).
    assert [r.path for r in proxy.requests()] in ([], ["/version"])
    assert low_running_high_waiting.wl("low")["spec"]["active"] is True


def test_401_on_the_access_review_refuses(served: ServedCluster, proxy: FaultProxy,
                                          low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    bad = write_kubeconfig(tmp_path / "bad.kubeconfig", proxy.url, token="revoked-token-000000")
    p = kueuetop("hold", f"{NS}/low", "--yes", "--kubeconfig", str(bad), home=tmp_path)
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert "401" in lines[0] and f'patch "workloads" in API group "kueue.x-k8s.io" in namespace "{NS}"' in lines[0]
    assert proxy.requests("POST", "selfsubjectaccessreviews")
    assert target_requests(proxy, "low") == []  # neither read nor patched
    assert entries(tmp_path)[-1]["result"] == "refused"


def test_403_on_the_access_review_refuses(served: ServedCluster, proxy: FaultProxy, proxied: Path,
                                          low_running_high_waiting: Kueue, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # The simulator lets every authenticated user create reviews (as `system:basic-user` does);
    # a cluster whose RBAC lacks that binding answers 403 with the authorizer's wording.
    def forbidden_review(user: sim_auth.User, body: dict) -> dict:
        raise sim_auth.forbidden(user, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", "", "")

    monkeypatch.setattr(sim_server, "review", forbidden_review)
    p = kueuetop("preempt", f"{NS}/low", "--yes", "--kubeconfig", str(proxied), home=tmp_path)
    assert p.returncode == 1
    lines = p.stderr.splitlines()
    assert len(lines) == 1, p.stderr
    assert "403" in lines[0] and f'patch "workloads" in API group "kueue.x-k8s.io" in namespace "{NS}"' in lines[0]
    assert proxy.requests("PATCH") == [] and target_requests(proxy, "low") == []
    assert low_running_high_waiting.holds_quota("low")
