"""`kueuetop hold|…|drain NS/NAME` as a script runs it: exit codes, one-line errors, audit, no token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from kueuetop.sim.serve import ServedCluster

from .conftest import ADMIN_TOKEN, CQ, NS, VIEWER_TOKEN, Kueue, conds, wait_until


def kueuetop(*args: str, home: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "KUEUETOP_", "KUBECONFIG"))}
    env |= {"HOME": str(home), "XDG_STATE_HOME": str(home / "state")}
    return subprocess.run([sys.executable, "-m", "kueuetop", *args], capture_output=True, text=True, env=env,
                          input=stdin if stdin is not None else "", timeout=60)


def audit_lines(home: Path) -> list[str]:
    p = home / "state" / "kueuetop" / "audit.jsonl"
    return p.read_text().splitlines() if p.exists() else []


def test_hold_with_yes_then_audit(served: ServedCluster, low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    k = low_running_high_waiting
    kc = str(served.kubeconfig)
    assert ADMIN_TOKEN in Path(kc).read_text()
    p = kueuetop("preempt", f"{NS}/low", "--yes", "--kubeconfig", kc, home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert f"would admit {NS}/high in {CQ}" in p.stdout
    assert f"kueuetop: preempt {NS}/low: done" in p.stdout and p.stderr == ""
    wait_until(lambda: k.holds_quota("high"), what="high admitted")
    lines = audit_lines(tmp_path)
    entries = [json.loads(line) for line in lines]
    # Journaled: the intent (with the plan), a step entry before each of the two PATCHes, the outcome.
    assert [e["entry"] for e in entries] == ["intent", "step", "step", "outcome"]
    assert len({e["id"] for e in entries}) == 1 and entries[0]["id"]
    assert entries[0]["plan"] == ['patch {"spec": {"active": false}}', "wait for quota-released",
                                  'patch {"spec": {"active": true}}']
    assert [e["step"] for e in entries[1:3]] == [0, 2] and entries[1]["before"]["active"] is True
    out = entries[-1]
    assert out["result"] == "ok" and out["landed"] == "applied" and out["user"] == "alice"
    assert out["context"] == "kueuetop-sim" and f"would admit {NS}/high" in lines[-1]
    text = (tmp_path / "state" / "kueuetop" / "audit.jsonl").read_text()
    assert ADMIN_TOKEN not in text and "Bearer" not in text and "authorization" not in text.lower()


def test_dry_run_needs_no_confirmation_and_changes_nothing(served: ServedCluster, low_running_high_waiting: Kueue,
                                                          tmp_path: Path) -> None:
    k = low_running_high_waiting
    rv = k.cq()["metadata"]["resourceVersion"]
    p = kueuetop("drain", f"cq/{CQ}", "--dry-run", "--kubeconfig", str(served.kubeconfig), home=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "(dry run)" in p.stdout and "dry run accepted by the server" in p.stdout
    assert k.cq()["metadata"]["resourceVersion"] == rv and conds(k.cq())["Active"][0] == "True"
    assert '"dryRun": true' in audit_lines(tmp_path)[0]


def test_an_action_the_target_does_not_allow_is_refused_before_its_preview(
        served: ServedCluster, low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    """Preempting a pending workload would only requeue it: refused with the reason, and no
    preview of an eviction that will not happen is printed first."""
    p = kueuetop("preempt", f"{NS}/high", "--yes", "--kubeconfig", str(served.kubeconfig), home=tmp_path)
    assert p.returncode == 1 and p.stdout == ""
    assert p.stderr.splitlines() == [f"kueuetop: preempt {NS}/high: workload {NS}/high holds no quota; nothing to "
                                     "preempt (use requeue or hold)"]
    assert low_running_high_waiting.wl("high")["spec"]["active"] is True
    assert json.loads(audit_lines(tmp_path)[-1])["result"] == "refused"


def test_refuses_without_a_terminal_or_yes(served: ServedCluster, low_running_high_waiting: Kueue,
                                           tmp_path: Path) -> None:
    p = kueuetop("hold", f"{NS}/low", "--kubeconfig", str(served.kubeconfig), home=tmp_path)
    assert p.returncode == 2
    assert p.stderr.splitlines() == [f"kueuetop: refusing to hold {NS}/low without confirmation: stdin is not a "
                                     "terminal (pass --yes to confirm)"]
    assert low_running_high_waiting.wl("low")["spec"]["active"] is True


def test_viewer_is_refused_up_front(served: ServedCluster, viewer_kubeconfig: Path,
                                    low_running_high_waiting: Kueue, tmp_path: Path) -> None:
    p = kueuetop("hold", f"{NS}/low", "--yes", "--kubeconfig", str(viewer_kubeconfig), home=tmp_path)
    assert p.returncode == 1
    assert p.stderr.splitlines() == [f'kueuetop: forbidden: user "bob" may not hold {NS}/low: missing RBAC '
                                     'permission to patch "workloads" in API group "kueue.x-k8s.io" in namespace '
                                     f'"{NS}"']
    # Forced past the review, the server's 403 says the same.
    p = kueuetop("hold", f"{NS}/low", "--yes", "--no-access-check", "--no-preview",
                 "--kubeconfig", str(viewer_kubeconfig), home=tmp_path)
    assert p.returncode == 1 and len(p.stderr.splitlines()) == 1
    assert 'cannot patch resource "workloads" in API group "kueue.x-k8s.io"' in p.stderr
    text = "\n".join(audit_lines(tmp_path))
    assert '"result": "refused"' in text and '"error": "forbidden"' in text and VIEWER_TOKEN not in text
    assert low_running_high_waiting.wl("low")["spec"]["active"] is True


def test_failures_and_bad_usage(served: ServedCluster, tmp_path: Path) -> None:
    kc = str(served.kubeconfig)
    p = kueuetop("hold", f"{NS}/no-such", "--yes", "--no-preview", "--kubeconfig", kc, home=tmp_path)
    assert p.returncode == 1 and p.stderr.strip() == f"kueuetop: hold {NS}/no-such: workload {NS}/no-such not found"
    p = kueuetop("hold", "cq/x", "--yes", "--kubeconfig", kc, home=tmp_path)
    assert p.returncode == 2 and "applies to a workload" in p.stderr
    p = kueuetop("drain", "not-a-target", "--yes", "--kubeconfig", kc, home=tmp_path)
    assert p.returncode == 2 and p.stderr.startswith("kueuetop: ") and len(p.stderr.splitlines()) == 1
    p = kueuetop("stop", "cq/x", "--yes", "--kubeconfig", str(tmp_path / "missing"), home=tmp_path)
    assert p.returncode == 2 and "missing does not exist" in p.stderr and len(p.stderr.splitlines()) == 1
    p = kueuetop("stop", "cq/x", "--yes", "--kubeconfig", kc, "--context", "nope", home=tmp_path)
    assert p.returncode == 2 and "context 'nope' not found" in p.stderr and len(p.stderr.splitlines()) == 1
