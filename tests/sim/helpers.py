"""A small simulated cluster for the core controllers, with a scripted stand-in for Kueue.

`FakeKueue` only does what a test tells it: reserve quota (and admit when every admission check
is Ready) for named workloads, evict them. It writes Workload status with the same
`status_updates.apply_decision` the real admission controller uses, so the integrations under
test see exactly what Kueue writes.
"""

from __future__ import annotations

from typing import Any

from kueuetop.admission import status_updates
from kueuetop.admission.decisions import Admit, Evict, MarkAdmitted, Preempt
from kueuetop.kueue.workload import PodSetAssignment, parse_workload
from kueuetop.sim.clock import SimClock
from kueuetop.sim.cloud.node_pools import NodePoolController
from kueuetop.sim.cloud.provisioning import ProvisioningAutoscaler
from kueuetop.sim.cluster import OneTurn, SimCluster
from kueuetop.sim.jobs.batch_job import JobIntegration
from kueuetop.sim.jobs.perf_runner import PerfRunner
from kueuetop.sim.jobs.pods import PodIntegration
from kueuetop.sim.kube.events import EventWriter
from kueuetop.sim.kube.kubelet import KubeNodes
from kueuetop.sim.kueue.provisioning_check import ProvisioningCheck
from kueuetop.sim.scenarios.scenario import parse_scenario
from kueuetop.sim.storage.objectstore import WatchEvent

T0 = 1_700_000_000.0
KUEUE = "kueue.x-k8s.io"


def cond(obj: dict | None, type_: str) -> dict | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == type_:
            return c
    return None


def is_true(obj: dict | None, type_: str) -> bool:
    c = cond(obj, type_)
    return c is not None and c.get("status") == "True"


class FakeKueue:
    """Reserves quota for the workloads a test names; admits once their checks are Ready."""

    name = "fake-kueue"

    def __init__(self, cluster: SimCluster) -> None:
        self.cluster = cluster
        self.store = cluster.store
        self.plans: dict[tuple[str, str], tuple[str, dict[str, str], tuple[str, ...]]] = {}
        self.auto: tuple[str, dict[str, str], tuple[str, ...]] | None = None
        self._dirty = True

    def admit(self, ns: str, name: str, cq: str = "cq", flavors: dict[str, str] | None = None,
              checks: tuple[str, ...] = ()) -> None:
        self.plans[(ns, name)] = (cq, flavors or {}, checks)
        self._dirty = True
        self.cluster.wake.set()

    def admit_all(self, cq: str = "cq", flavors: dict[str, str] | None = None, checks: tuple[str, ...] = ()) -> None:
        self.auto = (cq, flavors or {}, checks)
        self._dirty = True

    def evict(self, ns: str, name: str, reason: str = "Preempted") -> None:
        wl = self.store.get(KUEUE, "workloads", ns, name)
        self.plans.pop((ns, name), None)
        if reason == "Preempted":
            d: Any = Preempt((ns, name), ("x", "y"), "InClusterQueue", "Preempted to accommodate a workload")
        else:
            d = Evict((ns, name), reason, f"Evicted: {reason}")
        self.store.update_status(KUEUE, "workloads", status_updates.apply_decision(wl, d, self.cluster.now))

    def on_event(self, event: WatchEvent) -> None:
        if event.kind.plural == "workloads":
            self._dirty = True

    def next_wakeup(self, now: float) -> float | None:
        return None

    def reconcile(self, now: float) -> bool:
        if not self._dirty:
            return False
        self._dirty = False
        worked = False
        items, _ = self.store.list(KUEUE, "workloads")
        for wl in items:
            m = wl["metadata"]
            key = (m["namespace"], m["name"])
            plan = self.plans.get(key) or self.auto
            if plan is None or is_true(wl, "Finished") or wl["spec"].get("active") is False:
                continue
            if not is_true(wl, "QuotaReserved"):
                if is_true(wl, "Evicted") and (key not in self.plans):
                    continue  # auto mode admits only fresh workloads
                parsed = parse_workload(wl)
                cq, flavors, checks = plan
                psas = tuple(PodSetAssignment(ps.name, dict(flavors), ps.total(), ps.count) for ps in parsed.pod_sets)
                new = status_updates.apply_decision(wl, Admit(key, cq, psas, checks), now)
                self.store.update_status(KUEUE, "workloads", new)
                worked = True
            elif not is_true(wl, "Admitted") and all(
                    c.get("state") == "Ready" for c in wl["status"].get("admissionChecks") or []):
                new = status_updates.apply_decision(wl, MarkAdmitted(key), now)
                self.store.update_status(KUEUE, "workloads", new)
                worked = True
        return worked


class Sim:
    """A SimCluster in virtual time with the core controllers wired as the product wires them."""

    def __init__(self, yaml_text: str = "", *, events: bool = False, default_runtime: float = 300.0) -> None:
        scenario = parse_scenario(yaml_text or "", "test.yaml")
        self.clock = SimClock(T0)
        self.cluster = SimCluster(scenario, self.clock)
        self.store = self.cluster.store
        ev = EventWriter(self.store, self.clock.now) if events else None
        self.kueue = FakeKueue(self.cluster)
        self.kubelet = KubeNodes(self.store, default_runtime=default_runtime, events=ev)
        self.jobs = JobIntegration(self.store, events=ev)
        self.pods = PodIntegration(self.store, events=ev)
        self.pools = NodePoolController(self.store, self.kubelet.scheduler, events=ev)
        self.pools.install(self.cluster)
        self.provisioning = ProvisioningCheck(self.store, events=ev)
        self.autoscaler = ProvisioningAutoscaler(self.store, self.kubelet.scheduler, self.pools,
                                                 pod_templates=self.provisioning.pod_templates, events=ev)
        self.perf = PerfRunner(self.store)
        for c in (self.kueue, self.jobs, self.pods, self.perf, OneTurn(self.provisioning, self.autoscaler),
                  self.pools, self.kubelet):
            self.cluster.add_controller(c)
        self.times: list[float] = []

    def run(self, seconds: float) -> None:
        self.cluster.run_for(seconds, on_step=lambda c: self.times.append(c.now))

    @property
    def t(self) -> float:
        return self.clock.now() - T0

    def get(self, plural: str, ns: str | None, name: str, group: str = "") -> dict | None:
        g = group or {"workloads": KUEUE, "jobs": "batch", "provisioningrequests": "autoscaling.x-k8s.io",
                      "admissionchecks": KUEUE}.get(plural, "")
        return self.store.try_get(g, plural, ns, name)

    def list(self, plural: str, ns: str | None = None, group: str = "") -> list[dict]:
        g = group or {"workloads": KUEUE, "jobs": "batch", "provisioningrequests": "autoscaling.x-k8s.io"}.get(plural, "")
        return self.store.list(g, plural, ns)[0]

    def create(self, obj: dict) -> dict:
        return self.store.create_object(obj)

    def pods_of(self, ns: str) -> list[dict]:
        return self.list("pods", ns)

    def workload_of_job(self, ns: str, job: str) -> dict | None:
        j = self.get("jobs", ns, job)
        for wl in self.list("workloads", ns):
            for r in wl["metadata"].get("ownerReferences") or []:
                if j is not None and r.get("uid") == j["metadata"]["uid"]:
                    return wl
        return None


def node_pool(name: str, *, size: int = 1, gpus: int = 0, model: str = "NVIDIA L4", machine: str = "g2-standard-24",
              labels: dict | None = None, taints: list | None = None, **extra: Any) -> str:
    """A NodePool document as YAML text."""
    import yaml

    spec: dict[str, Any] = {"machineType": machine, "size": size, **extra}
    if gpus:
        spec["gpu"] = {"model": model, "count": gpus}
    if labels:
        spec["nodeLabels"] = labels
    if taints is not None:
        spec["nodeTaints"] = taints
    return yaml.safe_dump({"apiVersion": "kueuetop.io/v1", "kind": "NodePool", "metadata": {"name": name},
                           "spec": spec})


def job(name: str, ns: str = "team-a", *, queue: str | None = "lq", parallelism: int = 1,
        completions: int | None = None, gpus: int = 0, cpu: str = "1", runtime: str | None = "120s",
        node_selector: dict | None = None, tolerations: list | None = None, suspend: bool = True,
        labels: dict | None = None, priority_class: str | None = None) -> dict:
    requests: dict[str, Any] = {"cpu": cpu, "memory": "1Gi"}
    if gpus:
        requests["nvidia.com/gpu"] = gpus
    spec: dict[str, Any] = {"restartPolicy": "Never",
                            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": requests}}]}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta: dict[str, Any] = {"name": name, "namespace": ns, "labels": dict(labels or {})}
    if queue:
        meta["labels"]["kueue.x-k8s.io/queue-name"] = queue
    if runtime:
        meta["annotations"] = {"kueuetop.io/runtime": runtime}
    jspec: dict[str, Any] = {"parallelism": parallelism, "suspend": suspend, "template": {"spec": spec}}
    if completions is not None:
        jspec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": jspec}


GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
