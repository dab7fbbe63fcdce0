"""The headless CLI: exit codes, error messages, no Textual import, sim run and sim serve."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.binaries import require_binary

SMALL = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: default
      resources: [{name: cpu, nominalQuota: "4"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: low, namespace: team-a}
spec:
  queueName: lq
  priority: 10
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "3"}}}]}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: high, namespace: team-a, annotations: {kueuetop.io/at: "60s"}}
spec:
  queueName: lq
  priority: 100
  podSets:
  - name: main
    count: 1
    template: {spec: {containers: [{name: c, resources: {requests: {cpu: "3"}}}]}}
"""


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kueuetop", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_headless_commands_never_import_textual(tmp_path):
    code = ("import sys; from kueuetop.cli import main; "
            f"rc = main(['sim', 'run', {str(tmp_path / 's.yaml')!r}, '--for', '2m', '--report', 'json', "
            f"'-o', {str(tmp_path / 'r.json')!r}]); "
            "bad = [m for m in sys.modules if m == 'textual' or m.startswith('textual.')]; "
            "print(rc, bad)")
    (tmp_path / "s.yaml").write_text(SMALL)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "0 []", out.stderr


def test_sim_run_json_report_tells_the_preemption(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SMALL)
    r = run_cli("sim", "run", str(f), "--for", "5m", "--report", "json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    wl = {w["name"]: w for w in report["workloads"]}
    assert wl["high"]["state"] == "admitted" and wl["high"]["admittedAt"] == 60.0
    assert wl["high"]["flavors"] == {"cpu": "default"}
    assert wl["low"]["state"] == "pending"
    assert wl["low"]["evictions"] == [{"time": 60.0, "reason": "Preempted"}]
    types = [(e["type"], e["name"]) for e in report["events"] if e["type"] != "created"]
    assert types.index(("preempted", "low")) < types.index(("admitted", "high"))
    cq = report["clusterQueues"][0]
    assert cq["usage"]["default"]["cpu"] == {"used": 3000, "nominal": 4000, "borrowed": 0}


@pytest.mark.parametrize(("args", "needle"), [
    (("sim", "run", "no-such-scenario"), "no-such-scenario"),
    (("sim", "run", "refarch", "--for", "ten minutes"), "invalid"),
    (("explain", "bad-name", "--scenario", "refarch"), "NAMESPACE/NAME"),
])
def test_bad_input_exits_2_with_a_message(args, needle):
    r = run_cli(*args)
    assert r.returncode == 2
    assert needle in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_scenario_file_names_document_and_field(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text(SMALL.replace('kueuetop.io/at: "60s"', 'kueuetop.io/at: "soon"'))
    r = run_cli("sim", "run", str(f))
    assert r.returncode == 2
    assert "bad.yaml: document 6" in r.stderr and "kueuetop.io/at" in r.stderr


def test_explain_on_a_scenario(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SMALL.replace("priority: 100", "priority: 1"))  # high can't preempt now
    r = run_cli("explain", "team-a/high", "--scenario", str(f), "--at", "2m")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("team-a/high:")
    assert "cpu" in r.stdout and "short" in r.stdout
    r = run_cli("explain", "team-a/nope", "--scenario", str(f), "--at", "2m")
    assert r.returncode == 1 and "not found" in r.stderr


def _kubectl_or_skip() -> str:
    return require_binary("kubectl")


def test_sim_serve_with_kubectl(tmp_path):
    kubectl = _kubectl_or_skip()
    kubeconfig = tmp_path / "kc"
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", "refarch", "--speed", "10",
                             "--kubeconfig", str(kubeconfig)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        t0 = time.monotonic()
        while not kubeconfig.exists() and time.monotonic() - t0 < 20:
            time.sleep(0.05)
        assert kubeconfig.exists(), proc.stderr.read() if proc.poll() is not None else "no kubeconfig"
        out = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "get", "clusterqueues"],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        header = out.stdout.splitlines()[0].split()
        assert header[:3] == ["NAME", "COHORT", "PENDING"]
        assert "cq-team-a-hp" in out.stdout
        # merge patch through kubectl reaches the embedded Kueue
        out = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "patch", "clusterqueue", "cq-team-a-hp",
                              "--type=merge", "-p", '{"spec":{"stopPolicy":"Hold"}}'],
                             capture_output=True, text=True, timeout=30)
        assert out.returncode == 0, out.stderr
        deadline = time.monotonic() + 10
        reason = ""
        while time.monotonic() < deadline:
            got = subprocess.run([kubectl, "--kubeconfig", str(kubeconfig), "get", "clusterqueue", "cq-team-a-hp",
                                  "-o", "jsonpath={.status.conditions[?(@.type=='Active')].reason}"],
                                 capture_output=True, text=True, timeout=30)
            reason = got.stdout.strip()
            if reason == "Stopped":
                break
            time.sleep(0.2)
        assert reason == "Stopped"
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert proc.returncode == 0
    assert not Path(kubeconfig).exists()  # it held the server's admin token: removed on exit
