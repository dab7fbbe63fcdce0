"""The real kubectl binary against the simulated API server."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from kueuetop.sim.storage.objectstore import ObjectStore

from .conftest import KUEUE, Clock, Kubectl, cluster_queue, workload

pytestmark = pytest.mark.needs_binary


def _seed(store: ObjectStore) -> None:
    cq_a = cluster_queue("cq-a", "co")
    cq_a["spec"]["queueingStrategy"] = "BestEffortFIFO"
    store.create(KUEUE, "clusterqueues", cq_a)
    store.create(KUEUE, "clusterqueues", {**cluster_queue("cq-b"),
                                          "spec": {**cluster_queue("cq-b")["spec"], "queueingStrategy": "StrictFIFO"}})
    cq = store.get(KUEUE, "clusterqueues", None, "cq-a")
    cq["status"] = {"pendingWorkloads": 3, "admittedWorkloads": 2}
    store.update_status(KUEUE, "clusterqueues", cq)
    store.create(KUEUE, "workloads", workload("w1", "team-a"))
    store.create(KUEUE, "workloads", workload("w2", "team-b"))


def _table(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_get_clusterqueues_columns(kubectl: Kubectl, store: ObjectStore) -> None:
    _seed(store)
    out = kubectl.run("get", "clusterqueues").stdout
    lines = out.strip().splitlines()
    assert lines[0].split() == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert lines[1].split() == ["cq-a", "co", "3"]
    assert lines[2].split() == ["cq-b"]
    wide = kubectl.run("get", "cq", "-o", "wide").stdout.strip().splitlines()
    assert wide[0].split() == ["NAME", "COHORT", "STRATEGY", "PENDING", "WORKLOADS", "ADMITTED", "WORKLOADS"]
    assert wide[1].split() == ["cq-a", "co", "BestEffortFIFO", "3", "2"]
    assert wide[2].split() == ["cq-b", "StrictFIFO"]


def test_get_json_and_all_namespaces(kubectl: Kubectl, store: ObjectStore) -> None:
    _seed(store)
    doc = json.loads(kubectl.run("get", "clusterqueues", "-o", "json").stdout)
    assert doc["kind"] == "List"
    assert [i["metadata"]["name"] for i in doc["items"]] == ["cq-a", "cq-b"]
    assert doc["items"][0]["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    rows = _table(kubectl.run("get", "workloads", "-A").stdout)
    assert rows[0] == ["NAMESPACE", "NAME", "QUEUE", "RESERVED", "IN", "ADMITTED", "FINISHED", "AGE"]
    assert [(r[0], r[1], r[2]) for r in rows[1:]] == [("team-a", "w1", "lq"), ("team-b", "w2", "lq")]
    one = json.loads(kubectl.run("get", "kwl", "w1", "-n", "team-a", "-o", "json").stdout)
    assert one["spec"]["queueName"] == "lq"


def test_core_kinds_print_like_the_real_server(kubectl: Kubectl, store: ObjectStore, clock: Clock) -> None:
    store.create("", "nodes", {"metadata": {"name": "gpu-1", "labels": {"node-role.kubernetes.io/worker": ""}},
                               "spec": {"unschedulable": True},
                               "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                          "nodeInfo": {"kubeletVersion": "v1.32.1"}}})
    clock.t += 3600
    rows = _table(kubectl.run("get", "nodes").stdout)
    assert rows == [["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
                    ["gpu-1", "Ready,SchedulingDisabled", "worker", "60m", "v1.32.1"]]
    store.create("", "pods", {"metadata": {"name": "p1", "namespace": "team-a"},
                              "spec": {"nodeName": "gpu-1", "containers": [{"name": "c", "image": "i"}]},
                              "status": {"phase": "Running", "containerStatuses": [
                                  {"name": "c", "ready": True, "restartCount": 0, "state": {"running": {}}}]}})
    rows = _table(kubectl.run("get", "pods", "-n", "team-a", "-o", "wide").stdout)
    assert rows[0][:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
    assert rows[1][:7] == ["p1", "1/1", "Running", "0", "0s", "<none>", "gpu-1"]


def test_create_apply_patch_delete(kubectl: Kubectl, store: ObjectStore, tmp_path: Path) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a", "co"))
    manifest = tmp_path / "lq.yaml"
    manifest.write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: lq\n"
                        "  namespace: team-a\nspec:\n  clusterQueue: cq-a\n")
    assert kubectl.run("create", "-f", str(manifest)).stdout.strip() == "localqueue.kueue.x-k8s.io/lq created"
    assert store.get(KUEUE, "localqueues", "team-a", "lq")["spec"]["clusterQueue"] == "cq-a"
    manifest.write_text(manifest.read_text() + "  stopPolicy: Hold\n")
    out = kubectl.run("apply", "-f", str(manifest)).stdout.strip()
    assert out == "localqueue.kueue.x-k8s.io/lq configured"
    lq = store.get(KUEUE, "localqueues", "team-a", "lq")
    assert lq["spec"]["stopPolicy"] == "Hold"
    assert "kubectl.kubernetes.io/last-applied-configuration" in lq["metadata"]["annotations"]
    # apply of an immutable change is refused with the server's message.
    manifest.write_text(manifest.read_text().replace("cq-a", "cq-b"))
    proc = kubectl.run("apply", "-f", str(manifest), check=False)
    assert proc.returncode != 0
    assert 'spec.clusterQueue: Invalid value: "string": field is immutable' in proc.stderr
    out = kubectl.run("patch", "cq", "cq-a", "--type=merge", "-p", '{"spec":{"stopPolicy":"HoldAndDrain"}}').stdout
    assert out.strip() == "clusterqueue.kueue.x-k8s.io/cq-a patched"
    assert store.get(KUEUE, "clusterqueues", None, "cq-a")["spec"]["stopPolicy"] == "HoldAndDrain"
    kubectl.run("patch", "clusterqueue", "cq-a", "--type=json",
                "-p", '[{"op":"replace","path":"/spec/cohortName","value":"co2"}]')
    assert store.get(KUEUE, "clusterqueues", None, "cq-a")["spec"]["cohortName"] == "co2"
    out = kubectl.run("delete", "localqueue", "lq", "-n", "team-a").stdout.strip()
    assert out == 'localqueue.kueue.x-k8s.io "lq" deleted'
    assert store.try_get(KUEUE, "localqueues", "team-a", "lq") is None


def test_errors_print_like_kubectl_does(kubectl: Kubectl) -> None:
    proc = kubectl.run("get", "cq", "nope", check=False)
    assert proc.returncode == 1
    assert proc.stderr.strip() == 'Error from server (NotFound): clusterqueues.kueue.x-k8s.io "nope" not found'
    proc = kubectl.run("get", "workloads", "-n", "team-a", check=False)
    assert proc.returncode == 0 and "No resources found in team-a namespace." in proc.stderr
    proc = kubectl.run("create", "-f", "-", check=False,
                       input='{"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload",'
                             '"metadata":{"name":"bad","namespace":"team-a"},"spec":{"podSets":[]}}')
    assert proc.returncode == 1
    assert 'The Workload "bad" is invalid: spec.podSets: Required value' in proc.stderr


def test_watch_prints_updates(kubectl: Kubectl, store: ObjectStore) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a", "co"))
    proc = subprocess.Popen([kubectl.binary, "get", "clusterqueues", "-w", "--request-timeout=4s"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kubectl.env)
    try:
        time.sleep(1.5)
        store.patch(KUEUE, "clusterqueues", None, "cq-a",
                    lambda o: {**o, "spec": {**o["spec"], "cohortName": "moved"}})
        out, _ = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    rows = _table(out)
    assert rows[0] == ["NAME", "COHORT", "PENDING", "WORKLOADS"]
    assert ["cq-a", "co"] in rows
    assert ["cq-a", "moved"] in rows
