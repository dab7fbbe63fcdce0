"""The built-in `incident` scenario: every problem class of the triage board happens in its first
ten simulated minutes, and the cluster reports each the way a real one would (objects, conditions
and Events as served)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections import defaultdict
from typing import Any

from kueuetop.sim.clock import SimClock
from kueuetop.sim.cloud.gpu_telemetry import render_dcgm
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster

KUEUE = "kueue.x-k8s.io"
TEN_MINUTES = 600.0


def cond(obj: dict | None, type_: str) -> dict:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return {}


class Run:
    """The scenario run for ten simulated minutes, with what was seen along the way (pods and
    workloads change: a pod in ImagePullBackOff is deleted when Kueue evicts its workload)."""

    def __init__(self) -> None:
        self.parts = build_cluster(load_scenario("incident"), SimClock(VIRTUAL_EPOCH))
        self.store = self.parts.cluster.store
        self.waiting_reasons: dict[str, set[str]] = defaultdict(set)  # job → container waiting reasons
        self.unschedulable: dict[str, set[str]] = defaultdict(set)  # job → PodScheduled messages
        self.checks_pending: set[str] = set()  # workloads holding quota while a check is Pending
        self.pods_ready_waiting: set[str] = set()  # admitted, PodsReady False (the timeout runs)
        self.cq_usage: dict[str, int] = {}  # research: most GPUs in use when finetune was unschedulable
        self.parts.cluster.run_for(TEN_MINUTES, on_step=self._observe)

    def _observe(self, _cluster: Any) -> None:
        for pod in self.store.list("", "pods", copy=False)[0]:
            job = (pod["metadata"].get("labels") or {}).get("job-name") or pod["metadata"]["name"]
            for st in (pod.get("status") or {}).get("containerStatuses") or []:
                reason = (st.get("state") or {}).get("waiting", {}).get("reason")
                if reason:
                    self.waiting_reasons[job].add(reason)
            c = cond(pod, "PodScheduled")
            if c.get("status") == "False":
                self.unschedulable[job].add(c.get("message", ""))
        for wl in self.store.list(KUEUE, "workloads", copy=False)[0]:
            name = f"{wl['metadata']['namespace']}/{wl['metadata']['name']}"
            st = wl.get("status") or {}
            if cond(wl, "QuotaReserved").get("status") == "True" and any(
                    c.get("state") == "Pending" for c in st.get("admissionChecks") or []):
                self.checks_pending.add(name)
            if cond(wl, "Admitted").get("status") == "True" and cond(wl, "PodsReady").get("status") == "False":
                self.pods_ready_waiting.add(name)

    def list(self, group: str, plural: str, ns: str | None = None) -> list[dict]:
        return self.store.list(group, plural, ns)[0]

    def get(self, group: str, plural: str, ns: str | None, name: str) -> dict | None:
        return self.store.try_get(group, plural, ns, name)

    def events(self, reason: str | None = None) -> list[dict]:
        evs = self.list("", "events")
        return [e for e in evs if reason is None or e["reason"] == reason]

    def workload_of(self, ns: str, job: str) -> dict:
        for wl in self.list(KUEUE, "workloads", ns):
            if any(r.get("name") == job for r in wl["metadata"].get("ownerReferences") or []):
                return wl
        raise AssertionError(f"no workload for job {ns}/{job}")

    def pool_nodes(self, pool: str) -> list[dict]:
        return sorted((n for n in self.list("", "nodes")
                       if n["metadata"].get("annotations", {}).get("kueuetop.io/node-pool") == pool),
                      key=lambda n: n["metadata"]["name"])


@functools.cache
def run() -> Run:
    return Run()


def test_waiting_too_long_no_flavor_fits_limit_reached_stopped_and_inactive_queues():
    r = run()
    giant = cond(r.workload_of("team-vision", "giant-sweep"), "QuotaReserved")
    assert giant["status"] == "False"
    assert "couldn't assign flavors to pod set main" in giant["message"]
    assert "insufficient quota for nvidia.com/gpu in flavor l4-spot" in giant["message"]
    waiting = [cond(r.workload_of("team-vision", f"augment-{i}"), "QuotaReserved") for i in range(4)]
    assert any("insufficient unused quota for nvidia.com/gpu in flavor l4-spot" in c.get("message", "")
               for c in waiting if c.get("status") == "False")
    nightly = cond(r.workload_of("team-platform", "nightly-report"), "QuotaReserved")
    assert nightly["status"] == "False" and "LocalQueue reports is inactive" in nightly["message"]
    assert r.get(KUEUE, "localqueues", "team-platform", "reports")["spec"]["stopPolicy"] == "Hold"
    for ns, job in (("team-legacy", "old-benchmark"), ("team-nlp", "eval-h100")):
        c = cond(r.workload_of(ns, job), "QuotaReserved")
        assert c["status"] == "False" and "is inactive" in c["message"], (job, c)
    pending = r.events("Pending")
    assert pending and all(e["type"] == "Warning" and e["source"]["component"] == "kueue-admission"
                           for e in pending)


def test_admitted_but_not_running_scale_up_provisioning_image_pull_crash_loop_pods_ready():
    r = run()
    up = [e["message"] for e in r.events("TriggeredScaleUp") if e["involvedObject"]["kind"] == "Pod"]
    assert any(m.startswith("pod triggered scale-up: [{l4-spot 0->1 (max: 7)}]") for m in up)
    no_up = [e["message"] for e in r.events("NotTriggerScaleUp")]
    assert any(m.startswith("pod didn't trigger scale-up: ") and "1 max node group size reached" in m
               for m in no_up), no_up
    assert "team-research/" + r.workload_of("team-research", "eval-flex")["metadata"]["name"] in r.checks_pending
    assert {"ErrImagePull", "ImagePullBackOff"} <= r.waiting_reasons["feature-store-sync"]
    assert "CrashLoopBackOff" in r.waiting_reasons["metrics-exporter"]
    failed = {e["message"] for e in r.events("Failed")}
    assert {"Error: ErrImagePull", "Error: ImagePullBackOff"} <= failed
    assert any(e["message"].startswith("Back-off restarting failed container main in pod metrics-exporter-")
               for e in r.events("BackOff"))
    sync = "team-platform/" + r.workload_of("team-platform", "feature-store-sync")["metadata"]["name"]
    assert sync in r.pods_ready_waiting
    sched = r.events("FailedScheduling")
    assert sched and all(e["message"].startswith("0/") and " preemption: 0/" in e["message"] for e in sched)


def test_fragmentation_quota_free_but_no_node_has_the_gpus():
    r = run()
    msgs = r.unschedulable["finetune-4gpu"]
    assert any("3 Insufficient nvidia.com/gpu" in m for m in msgs), msgs
    # Quota was there: finetune-4gpu held a reservation in the reserved A100 flavor.
    wl = r.workload_of("team-research", "finetune-4gpu")
    flavors = {f for ps in ((wl["status"].get("admission") or {}).get("podSetAssignments") or [])
               for f in (ps.get("flavors") or {}).values()}
    evicted = [c for c in wl["status"].get("conditions") or [] if c["type"] == "Evicted"]
    assert flavors == {"a100-reserved"} or evicted
    # … and every A100 node kept 2 free GPUs: the three trainings hold 6 of 8 each.
    trains = [p for p in r.list("", "pods", "team-research") if p["metadata"]["name"].startswith("train-resnet-")]
    assert len({p["spec"]["nodeName"] for p in trains}) == 3


def test_churn_preemption_and_a_workload_evicted_more_than_twice():
    r = run()
    preempted = r.events("Preempted")
    assert any(e["involvedObject"]["name"].startswith("job-hparam-sweep-") for e in preempted)
    sweeps = [r.workload_of("team-nlp", f"hparam-sweep-{i}") for i in range(2)]
    assert any((w["status"].get("requeueState") or {}).get("count", 0) >= 1 or cond(w, "Evicted").get("reason") == "Preempted"
               for w in sweeps)
    sync = r.workload_of("team-platform", "feature-store-sync")
    assert sync["status"]["requeueState"]["count"] >= 3
    assert any(e["involvedObject"]["name"] == sync["metadata"]["name"]
               for e in r.events("EvictedDueToPodsReadyTimeout"))


def test_waste_idle_gpus_and_gpu_nodes_no_flavor_matches():
    r = run()
    idle = [p for p in r.list("", "pods", "team-research")
            if p["metadata"].get("annotations", {}).get("kueuetop.io/gpu-util") == "idle"]
    assert idle and idle[0]["status"]["phase"] == "Running"
    flavors = [f.get("spec", {}).get("nodeLabels") or {} for f in r.list(KUEUE, "resourceflavors")]
    orphans = r.pool_nodes("t4-orphan")
    assert len(orphans) == 2
    for node in orphans:
        labels = node["metadata"]["labels"]
        assert int(node["status"]["allocatable"]["nvidia.com/gpu"]) == 4
        assert not any(fl and all(labels.get(k) == v for k, v in fl.items()) for fl in flavors)


def test_broken_nodes_gpus_provisioning_checks_and_queues():
    r = run()
    h100 = r.pool_nodes("h100-train")
    assert cond(h100[1], "Ready")["status"] == "False"
    assert h100[0]["spec"].get("unschedulable") is True
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in r.events()}
    assert (h100[1]["metadata"]["name"], "NodeNotReady") in reasons
    assert (h100[0]["metadata"]["name"], "NodeNotSchedulable") in reasons
    a100 = r.pool_nodes("a100-reserved")
    xid = [line for line in render_dcgm(a100[0], [], 0.0).splitlines()
           if line.startswith('DCGM_FI_DEV_XID_ERRORS{gpu="3"')]
    assert xid and xid[0].endswith(" 79")
    ecc = [line for line in render_dcgm(a100[1], [], 0.0).splitlines()
           if line.startswith('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="5"')]
    assert ecc and ecc[0].endswith(" 2")
    prs = r.list("autoscaling.x-k8s.io", "provisioningrequests", "team-research")
    failed = [cond(p, "Failed") for p in prs if cond(p, "Failed").get("status") == "True"]
    assert failed and failed[0]["reason"] == "CapacityIsNotFound"
    llm = r.workload_of("team-research", "llm-finetune-16")
    assert llm["spec"]["active"] is False  # Kueue gave up after its retry: check Rejected
    assert cond(r.get(KUEUE, "admissionchecks", None, "dws-h100"), "Active")["status"] == "False"
    assert cond(r.get(KUEUE, "admissionchecks", None, "flex-prov"), "Active")["status"] == "True"
    for name in ("legacy", "dws-h100"):
        assert cond(r.get(KUEUE, "clusterqueues", None, name), "Active")["status"] == "False", name
    assert cond(r.get(KUEUE, "clusterqueues", None, "vision"), "Active")["status"] == "True"
    assert r.parts.extra["node-faults"].errors == [] and r.parts.cluster.errors == []


def test_kueue_events_for_the_workloads_lifecycle():
    r = run()
    by_reason = {e["reason"] for e in r.events() if e["source"]["component"] == "kueue-admission"}
    assert {"QuotaReserved", "Admitted", "Pending", "Preempted", "EvictedDueToPodsReadyTimeout"} <= by_reason
    quota = r.events("QuotaReserved")
    assert any(e["message"].startswith("Quota reserved in ClusterQueue vision, wait time since queued was ")
               for e in quota)


def test_sim_run_reports_the_incident_from_the_command_line():
    out = subprocess.run([sys.executable, "-m", "kueuetop", "sim", "run", "incident", "--for", "600s",
                          "--report", "json"], capture_output=True, text=True, timeout=300, check=True)
    report = json.loads(out.stdout)
    assert report["errors"] == []
    wls = {(w["namespace"], w["job"]): w for w in report["workloads"]}
    sync = wls[("team-platform", "feature-store-sync")]
    assert [e["reason"] for e in sync["evictions"]][:3] == ["PodsReadyTimeout"] * 3
    assert any(e["reason"] == "Preempted" for w in report["workloads"] for e in w["evictions"])
    assert wls[("team-vision", "giant-sweep")]["state"] == "pending"
    assert wls[("team-research", "llm-finetune-16")]["state"] == "inactive"


def test_demo_incident_serves_the_problems_to_kubectl() -> None:
    """`kueuetop --demo incident`: the demo cluster process, read with the real kubectl."""
    from kueuetop.tui.launch import start_demo
    from tests.binaries import require_binary
    from tests.waiting import wait_until

    kubectl = require_binary("kubectl")
    demo = start_demo("incident", speed=30)
    try:
        def column(args: list[str]) -> str:
            out = subprocess.run([kubectl, "--kubeconfig", str(demo.kubeconfig), *args], capture_output=True,
                                 text=True, timeout=30)
            return out.stdout

        assert wait_until(lambda: "ErrImagePull" in column(["get", "pods", "-n", "team-platform"])
                          or "ImagePullBackOff" in column(["get", "pods", "-n", "team-platform"]), 60)
        assert wait_until(lambda: "pod triggered scale-up: [{l4-spot 0->1 (max: 7)}]" in column(
            ["get", "events", "-n", "team-vision", "--field-selector", "reason=TriggeredScaleUp",
             "-o", "custom-columns=M:.message"]), 60)
        assert wait_until(lambda: "NotReady" in column(["get", "nodes"]), 60)
    finally:
        demo.stop()
