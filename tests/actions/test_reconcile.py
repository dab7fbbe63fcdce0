"""Actions through a hostile network: journaled before they start, read back when a reply is lost,
never re-sent, never reported as a plain failure when something landed; an action killed midway is
found and reported by the next run; an unwritable journal or a refused access check sends nothing."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import config

from kueuetop.actions.executor import Executor
from kueuetop.actions.journal import Identity, Journal
from kueuetop.actions.landed import APPLIED, HELD, NOT_APPLIED, UNKNOWN
from kueuetop.actions.plan import Target
from kueuetop.actions.rbac import check_access
from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.serve import ServedCluster
from tests.fault_proxy import FaultProxy

from .conftest import ADMIN_TOKEN, NS, Kueue, wait_until

LOW = Target("workload", "low", NS)


@pytest.fixture
def proxy(served: ServedCluster) -> Iterator[FaultProxy]:
    with FaultProxy(served.url) as p:
        yield p


@pytest.fixture
def proxied_kubeconfig(proxy: FaultProxy, tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path / "proxied.kubeconfig", proxy.url, token=ADMIN_TOKEN)


def nth_patch(n: int, verdict: str, then: object = None) -> object:
    """A proxy rule: `verdict` for the n-th PATCH (1-based), pass for everything else."""
    count = itertools.count(1)

    def rule(method: str, path: str) -> str:
        if method != "PATCH":
            return "pass"
        i = next(count)
        if i == n:
            if callable(then):
                then()
            return verdict
        return "pass"
    return rule


def kueuetop(*args: str, home: Path, **kw: object) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "KUEUETOP_", "KUBECONFIG"))}
    env |= {"HOME": str(home), "XDG_STATE_HOME": str(home / "state")}
    return subprocess.Popen([sys.executable, "-m", "kueuetop", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env, **kw)


def journal_of(home: Path) -> list[dict]:
    p = home / "state" / "kueuetop" / "audit.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def test_lost_reply_to_the_first_patch_of_a_preempt_is_read_back_as_held(
        low_running_high_waiting: Kueue, proxy: FaultProxy, proxied_kubeconfig: Path, tmp_path: Path) -> None:
    k = low_running_high_waiting
    proxy.rule(nth_patch(1, "lose-reply"))
    p = kueuetop("preempt", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied_kubeconfig),
                 home=tmp_path)
    out, err = p.communicate(timeout=90)
    assert p.returncode == 1, (out, err)
    # The deactivation landed; the preempt stopped there. Said as such, with the way out.
    assert k.wl("low")["spec"]["active"] is False
    assert err.count("\n") == 1 and f"[{HELD}]" in err and f"kueuetop resume {NS}/low" in err, err
    assert "cannot reach the API server" in err  # the cause, kept, but not the verdict
    # Sent at most once: exactly one PATCH ever left.
    assert len(proxy.requests("PATCH")) == 1
    recs = journal_of(tmp_path)
    assert [r["phase"] for r in recs] == ["intent", "step", "outcome"]
    assert recs[-1]["landed"] == HELD and recs[-1]["result"] == "error"


def test_lost_request_is_read_back_as_not_applied(
        low_running_high_waiting: Kueue, proxy: FaultProxy, proxied_kubeconfig: Path, tmp_path: Path) -> None:
    k = low_running_high_waiting
    proxy.rule(nth_patch(1, "lose-request"))
    p = kueuetop("hold", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied_kubeconfig),
                 home=tmp_path)
    _out, err = p.communicate(timeout=90)
    assert p.returncode == 1 and f"nothing changed on {NS}/low" in err, err
    assert k.wl("low")["spec"]["active"] is True
    assert journal_of(tmp_path)[-1]["landed"] == NOT_APPLIED


def test_lost_reply_of_a_hold_that_landed_is_a_success(
        low_running_high_waiting: Kueue, proxy: FaultProxy, proxied_kubeconfig: Path, tmp_path: Path) -> None:
    proxy.rule(nth_patch(1, "lose-reply"))
    p = kueuetop("hold", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied_kubeconfig),
                 home=tmp_path)
    out, err = p.communicate(timeout=90)
    assert p.returncode == 0, err
    assert f"the hold of {NS}/low did land" in out
    assert low_running_high_waiting.wl("low")["spec"]["active"] is False
    assert journal_of(tmp_path)[-1]["landed"] == APPLIED


def test_partition_after_the_first_patch_then_heal(
        low_running_high_waiting: Kueue, proxy: FaultProxy, proxied_kubeconfig: Path, tmp_path: Path) -> None:
    """The reactivation is held by a partition: the outcome is unknown then, and once the network
    heals the buffered PATCH lands and the next run finds the preempt complete."""
    k = low_running_high_waiting
    proxy.rule(nth_patch(2, "pass", then=proxy.partition))
    api = config.new_client_from_config(config_file=str(proxied_kubeconfig))
    journal = Journal(Identity("ctx", "cluster", "alice"), path=tmp_path / "audit.jsonl")
    ex = Executor(api, request_timeout=2.0, poll_interval=0.2)
    action_id = journal.begin("preempt", LOW)
    res = ex.run("preempt", LOW, before_send=journal.before_send(action_id, "preempt", LOW))
    assert not res.ok and res.landed == UNKNOWN, res
    assert "outcome is unknown" in res.message
    journal.finish(action_id, "preempt", LOW, "error", res.message, landed=res.landed)
    proxy.heal()
    wait_until(lambda: k.wl("low")["spec"]["active"] is True, what="the buffered reactivation delivered")
    # A later run reads it back: the unknown outcome was in fact a complete preempt.
    ex2 = Executor(config.new_client_from_config(config_file=str(proxied_kubeconfig)))
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    steps = [r for r in records if r.get("phase") == "step"]
    assert len(steps) == 2
    obj, readable = ex2.read_back(LOW)
    from kueuetop.actions.landed import what_landed
    assert readable and what_landed("preempt", LOW, obj, sent=2, generation_before=steps[0]["generation"]) == APPLIED
    api.close()


def test_killed_mid_action_is_reported_by_the_next_run(
        low_running_high_waiting: Kueue, proxy: FaultProxy, proxied_kubeconfig: Path, tmp_path: Path) -> None:
    k = low_running_high_waiting
    stuck = threading.Event()
    proxy.rule(nth_patch(2, "pass", then=lambda: (stuck.set(), proxy.hold())))
    p = kueuetop("preempt", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied_kubeconfig),
                 home=tmp_path)
    try:
        wait_until(stuck.is_set, 60, what="the reactivation on its way")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        proxy.rule(None)
    # The held reactivation never arrives: the connection it was on belonged to the dead process.
    proxy.drop_connections()
    proxy.release()
    assert [r["phase"] for r in journal_of(tmp_path)] == ["intent", "step", "step"]
    assert k.wl("low")["spec"]["active"] is False
    # The next run, whatever it is for, first reports what the killed one left behind.
    nxt = kueuetop("hold", f"{NS}/high", "--yes", "--no-preview", "--kubeconfig", str(proxied_kubeconfig),
                   home=tmp_path)
    _out, err = nxt.communicate(timeout=90)
    assert nxt.returncode == 0, err
    assert f"an earlier preempt of {NS}/low" in err and f"was interrupted: {HELD}" in err
    assert f"kueuetop resume {NS}/low" in err
    assert [r["phase"] for r in journal_of(tmp_path)][-1] == "outcome"
    assert "reconciled" in [r["phase"] for r in journal_of(tmp_path)]
    # Reported once.
    again = kueuetop("resume", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied_kubeconfig),
                     home=tmp_path)
    _out, err = again.communicate(timeout=90)
    assert again.returncode == 0 and "interrupted" not in err, err
    assert k.wl("low")["spec"]["active"] is True


def test_unwritable_journal_refuses_and_sends_nothing(
        low_running_high_waiting: Kueue, proxy: FaultProxy, proxied_kubeconfig: Path, tmp_path: Path) -> None:
    (tmp_path / "state").write_text("not a directory")  # XDG_STATE_HOME is a file: nothing can be written
    p = kueuetop("hold", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(proxied_kubeconfig),
                 home=tmp_path)
    _out, err = p.communicate(timeout=90)
    assert p.returncode == 1 and err.count("\n") == 1, err
    assert "refusing to act without a record of it" in err
    assert proxy.requests("PATCH") == []
    assert low_running_high_waiting.wl("low")["spec"]["active"] is True


def test_rejected_credentials_on_the_access_check_refuse(
        low_running_high_waiting: Kueue, served: ServedCluster, proxy: FaultProxy, tmp_path: Path) -> None:
    bad = write_kubeconfig(tmp_path / "bad.kubeconfig", proxy.url, token="not-a-token")
    p = kueuetop("hold", f"{NS}/low", "--yes", "--no-preview", "--kubeconfig", str(bad), home=tmp_path)
    _out, err = p.communicate(timeout=90)
    assert p.returncode == 1 and "rejected the credentials (401)" in err and "refusing" in err, err
    assert proxy.requests("PATCH") == []


def test_forbidden_access_review_refuses_naming_the_permission(
        low_running_high_waiting: Kueue, served: ServedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a cluster whose RBAC no longer grants system:basic-user's create on access reviews.
    from kueuetop.sim.apiserver import server as server_module
    from kueuetop.sim.apiserver.auth import forbidden

    def review(user, body):  # type: ignore[no-untyped-def]
        raise forbidden(user, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", "", "")

    monkeypatch.setattr(server_module, "review", review)
    api = config.new_client_from_config(config_file=str(served.kubeconfig))
    access = check_access(api, "hold", LOW)
    api.close()
    assert not access.allowed and access.known
    assert 'create "selfsubjectaccessreviews" in API group "authorization.k8s.io"' in access.reason
