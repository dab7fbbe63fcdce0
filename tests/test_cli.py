"""The headless CLI: exit codes, error messages, no Textual import in any headless command, sim run and
sim serve."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.binaries import require_binary
from tests.waiting import wait_until

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


_ACTION_COMMANDS = ("hold", "resume", "requeue", "preempt", "preempt-and-hold", "stop", "drain", "resume-queue")

# Every headless subcommand, found by walking the CLI's argparse tree (a new subcommand fails
# this test until it gets an invocation below), run in its own interpreter through `main`, which
# then reports whether any `textual` module was imported. The console (no COMMAND) is the only
# command allowed to load Textual, and is not in the tree.
_NO_TEXTUAL_PROBE = """
import json, sys
from kueuetop.cli import main
report, argv = sys.argv[1], sys.argv[2:]
try:
    rc = main(argv)
except SystemExit as exc:  # argparse's --help/--version and usage errors
    rc = exc.code
bad = sorted(m for m in sys.modules if m == "textual" or m.startswith("textual."))
with open(report, "w") as fh:
    json.dump({"rc": rc, "textual": bad}, fh)
"""


def headless_commands() -> set[tuple[str, ...]]:
    """Every runnable command path below `kueuetop`: each subparser, also those with subcommands
    of their own (`kueuetop sim` alone prints its help)."""
    import argparse

    from kueuetop.cli import build_parser

    found: set[tuple[str, ...]] = set()

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.add((*path, name))
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


def _probe(report: Path, *argv: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", _NO_TEXTUAL_PROBE, str(report), *argv], env=env, text=True,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _probe_result(proc: subprocess.Popen[str], report: Path, timeout: float = 120) -> dict:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert report.exists(), f"{proc.args[3:]} exited {proc.returncode} without reaching the check: {err[-2000:]}"
    return json.loads(report.read_text()) | {"stdout": out, "stderr": err}


def _conditions(wl: dict) -> dict[str, str]:
    return {c["type"]: c["status"] for c in (wl.get("status") or {}).get("conditions") or []}


def _admitted_and_pending(kubeconfig: Path) -> tuple[str, str] | None:
    """An admitted Workload of the scenario, and one the test adds that can never fit (so it stays
    pending): the targets the workload actions accept."""
    from kubernetes import client, config

    with config.new_client_from_config(config_file=str(kubeconfig)) as api:
        crd = client.CustomObjectsApi(api)
        items = crd.list_cluster_custom_object("kueue.x-k8s.io", "v1beta2", "workloads")["items"]
        admitted = [w for w in items if _conditions(w).get("QuotaReserved") == "True"
                    and _conditions(w).get("Finished") != "True"]
        if not admitted:
            return None
        if not any(w["metadata"]["name"] == "never-fits" for w in items):
            crd.create_namespaced_custom_object("kueue.x-k8s.io", "v1beta2", "team-a", "workloads", {
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                "metadata": {"name": "never-fits", "namespace": "team-a"},
                "spec": {"queueName": "lq-team-a-hp", "podSets": [{"name": "main", "count": 1, "template": {
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "4096"}}}]}}}]}})
    name = admitted[0]["metadata"]
    return f"{name['namespace']}/{name['name']}", "team-a/never-fits"


def test_headless_commands_never_import_textual(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "KUEUETOP_", "KUBECONFIG"))}
    env |= {"HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"),
            "XDG_RUNTIME_DIR": str(tmp_path / "run")}
    (tmp_path / "run").mkdir(mode=0o700)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SMALL)
    kc = tmp_path / "kubeconfig"
    # `sim serve` is probed too, and is the cluster the live commands talk to.
    serve_report = tmp_path / "serve.json"
    serve = _probe(serve_report, "sim", "serve", "refarch", "--speed", "1", "--kubeconfig", str(kc), env=env)
    results: dict[tuple[str, ...], list[dict]] = {}
    try:
        assert wait_until(lambda: kc.exists() or serve.poll() is not None, timeout=60) and kc.exists(), \
            serve.stderr.read() if serve.poll() is not None else "sim serve wrote no kubeconfig"
        targets = wait_until(lambda: _try(_admitted_and_pending, kc), timeout=60)
        assert targets, "no Workload was admitted on the served cluster"
        workload, pending = targets
        live = ("--kubeconfig", str(kc))
        queue_target = "cq/cq-team-a-hp"
        recording = str(tmp_path / "r.ktrec")
        invocations: dict[tuple[str, ...], list[tuple[int, tuple[str, ...]]]] = {
            ("version",): [(0, ("version",))],
            # First: the recording the replaying commands below read.
            ("record",): [(0, ("record", *live, "-o", recording, "--for", "3s"))],
            ("sim",): [(2, ("sim",))],
            ("sim", "list"): [(0, ("sim", "list"))],
            ("sim", "run"): [(0, ("sim", "run", str(scenario), "--for", "2m", "--report", "json",
                                  "-o", str(tmp_path / "r.json"))),
                             (0, ("sim", "run", str(scenario), "--for", "2m", "--report", "table")),
                             (0, ("sim", "run", "--from-recording", recording, "--report", "json"))],
            ("sim", "serve"): [],  # probed above, checked after it stops
            ("explain",): [(0, ("explain", "team-a/high", "--scenario", str(scenario), "--at", "2m")),
                           (0, ("explain", workload, *live)),
                           (0, ("explain", workload, "-o", "json", *live))],
            ("snapshot",): [(0, ("snapshot", *live)), (0, ("snapshot", "-o", "json", *live)),
                            (0, ("snapshot", "--replay", recording, "--at", "-1s", "-o", "json"))],
            ("clusters",): [(0, ("clusters", "--all-contexts", *live)), (0, ("clusters", "-o", "json", *live))],
            ("forecast",): [(0, ("forecast", "--scenario", str(scenario), "--at", "2m")),
                            (0, ("forecast", *live)),
                            (0, ("forecast", "-o", "json", "--with", "hold team-a/*", *live))],
        }
        for action in _ACTION_COMMANDS:
            target = (queue_target if action in ("stop", "drain", "resume-queue")
                      else pending if action in ("requeue", "resume") else workload)
            invocations[(action,)] = [(0, (action, target, "--dry-run", *live))]
        assert set(invocations) == headless_commands(), "give each new headless subcommand an invocation here"
        for command, runs in invocations.items():
            for i, (_, argv) in enumerate(runs):
                report = tmp_path / f"{'-'.join(command)}-{i}.json"
                results.setdefault(command, []).append(_probe_result(_probe(report, *argv, env=env), report))
    finally:
        serve.send_signal(signal.SIGTERM)
    results[("sim", "serve")] = [_probe_result(serve, serve_report, timeout=30)]
    expected_rc = {(c, i): rc for c, runs in invocations.items() for i, (rc, _) in enumerate(runs)}
    expected_rc[(("sim", "serve"), 0)] = 0
    failures = [f"{' '.join(c)} #{i}: exit {r['rc']}: {r['stderr'][-300:]}" for c, rs in results.items()
                for i, r in enumerate(rs) if r["rc"] != expected_rc[(c, i)]]
    assert not failures, "a headless command did not run to its end:\n" + "\n".join(failures)
    imported = {" ".join(c): r["textual"][:3] for c, rs in results.items() for r in rs if r["textual"]}
    assert imported == {}, "headless commands must not import Textual"


def _try(fn, *args):
    try:
        return fn(*args)
    except Exception:
        return None


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
