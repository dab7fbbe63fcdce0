"""Generated built-in scenarios: Kueue's scheduler performance configs and the scale scenarios.

These are built in Python rather than shipped as YAML because they hold 15,000 to 100,000
objects. Generation is deterministic (seeded RNG, no clock) and avoids re-validation; nested
dicts that are identical between objects (pod sets, priority refs) are shared to keep memory
down, which is why scenario objects are read-only data (see `scenario.py`).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from kueuetop.kueue.api_versions import V1BETA2
from kueuetop.kueue.durations import format_duration
from kueuetop.sim.jobs.perf_runner import PERF_CLASS_LABEL, PERF_CLEANUP_LABEL, PERF_RUNTIME_LABEL
from kueuetop.sim.scenarios.scenario import (
    ANN_AT,
    ANN_GPU_UTIL,
    ANN_RUNTIME,
    KUEUETOP_API_VERSION,
    Scenario,
    staged_steps_from_objects,
)

Obj = dict[str, Any]

# --------------------------------------------------------------------------------------
# Kueue scheduler performance configurations
#
# Numbers from kubernetes-sigs/kueue main @ ff69552e (2026-08-22):
#   test/performance/scheduler/configs/baseline/generator.yaml
#   test/performance/scheduler/configs/large-scale/generator.yaml
# Object shapes from test/performance/scheduler/runner/generator/generator.go (generateQueue,
# generateWlSet) and pkg/util/testing/v1beta2/wrappers.go (MakeClusterQueue, MakeWorkload).
# Published expectations from the sibling rangespec.yaml files.



@dataclass(frozen=True)
class PerfWorkloadClass:
    class_name: str
    runtime_ms: int
    priority: int
    request: str  # cpu


@dataclass(frozen=True)
class PerfWorkloadsSet:
    count: int
    creation_interval_ms: int
    workloads: tuple[PerfWorkloadClass, ...]


@dataclass(frozen=True)
class PerfConfig:
    """One `cohorts[]` entry of generator.yaml with its single `queuesSets[]` entry."""

    source: str
    cohort_class: str
    cohorts: int
    queue_class: str
    queues_per_cohort: int
    nominal_quota: str
    borrowing_limit: str
    reclaim_within_cohort: str
    within_cluster_queue: str
    workloads_sets: tuple[PerfWorkloadsSet, ...]
    rangespec: dict[str, Any]

    @property
    def cluster_queues(self) -> int:
        return self.cohorts * self.queues_per_cohort

    @property
    def workloads_per_queue(self) -> int:
        return sum(s.count * len(s.workloads) for s in self.workloads_sets)

    @property
    def workloads(self) -> int:
        return self.cluster_queues * self.workloads_per_queue


PERF_BASELINE = PerfConfig(
    source="test/performance/scheduler/configs/baseline/generator.yaml",
    cohort_class="cohort", cohorts=5, queue_class="cq", queues_per_cohort=6,
    nominal_quota="20", borrowing_limit="100",
    reclaim_within_cohort="Any", within_cluster_queue="LowerPriority",
    workloads_sets=(
        PerfWorkloadsSet(350, 100, (PerfWorkloadClass("small", 200, 50, "1"),)),
        PerfWorkloadsSet(100, 500, (PerfWorkloadClass("medium", 500, 100, "5"),)),
        PerfWorkloadsSet(50, 1200, (PerfWorkloadClass("large", 1000, 200, "20"),)),
    ),
    # configs/baseline/rangespec.yaml
    rangespec={"maxWallMs": 425_000, "clusterQueueClassesMinUsage": {"cq": 50.0},
               "wlClassesMaxAvgTimeToAdmissionMs": {"large": 23_000, "medium": 90_000,
                                                    "small": 260_000}},
)

PERF_LARGE_SCALE = PerfConfig(
    source="test/performance/scheduler/configs/large-scale/generator.yaml",
    cohort_class="cohort", cohorts=10, queue_class="cq", queues_per_cohort=100,
    nominal_quota="20", borrowing_limit="100",
    reclaim_within_cohort="Any", within_cluster_queue="LowerPriority",
    workloads_sets=(
        PerfWorkloadsSet(35, 60, (PerfWorkloadClass("small", 150, 50, "1"),)),
        PerfWorkloadsSet(11, 300, (PerfWorkloadClass("medium", 350, 100, "5"),)),
        PerfWorkloadsSet(4, 700, (PerfWorkloadClass("large", 700, 200, "20"),)),
    ),
    # configs/large-scale/rangespec.yaml
    rangespec={"maxWallMs": 1_416_000, "clusterQueueClassesMinUsage": {"cq": 31.6},
               "wlClassesMaxAvgTimeToAdmissionMs": {"large": 128_000, "medium": 308_000,
                                                    "small": 841_000}},
)

PERF_FLAVOR = "rf"  # generator.go defaultResourceFlavorName


def _perf_pod_sets(cfg: PerfConfig) -> dict[str, list[Obj]]:
    # Pod sets are identical per class: share one per class (objects are read-only data).
    return {wlt.class_name: [{
        "name": "main", "count": 1,
        "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "resources": {"requests": {"cpu": wlt.request}}}]}}}]
        for s in cfg.workloads_sets for wlt in s.workloads}


def _perf_queue_names(cfg: PerfConfig) -> Iterator[tuple[int, str, str]]:
    """(queue index, cohort, name) in generation order. Document numbers: 1 is the flavor, 2
    the node pool, then each queue takes its ClusterQueue, Namespace, LocalQueue and Workloads."""
    i = 0
    for c in range(cfg.cohorts):
        cohort = f"{cfg.cohort_class}-{c}"
        for q in range(cfg.queues_per_cohort):
            # generator.go: "%s-%d-%d-%s" (className, queueSetIdx, queueIndex, cohortName);
            # the namespace and the LocalQueue take the ClusterQueue's name.
            yield i, cohort, f"{cfg.queue_class}-0-{q}-{cohort}"
            i += 1


def _perf_first(cfg: PerfConfig) -> Iterator[tuple[int, float, Obj]]:
    """The objects at t=0: the flavor, and per queue its ClusterQueue, Namespace, LocalQueue."""
    cleanup = {PERF_CLEANUP_LABEL: "true"}
    yield 1, 0.0, {"apiVersion": V1BETA2, "kind": "ResourceFlavor",
                   "metadata": {"name": PERF_FLAVOR, "labels": cleanup}, "spec": {}}
    # Kueue's harness runs on envtest: no nodes, no pods; its controller plays the jobs
    # (sim/jobs/perf_runner.py).
    cq_spec_common = {
        "namespaceSelector": {},
        "queueingStrategy": "BestEffortFIFO",
        "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        "preemption": {"reclaimWithinCohort": cfg.reclaim_within_cohort,
                       "withinClusterQueue": cfg.within_cluster_queue},
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{
            "name": PERF_FLAVOR,
            "resources": [{"name": "cpu", "nominalQuota": cfg.nominal_quota,
                           "borrowingLimit": cfg.borrowing_limit}]}]}],
    }
    cq_labels = {PERF_CLASS_LABEL: cfg.queue_class, **cleanup}
    per_queue = 3 + cfg.workloads_per_queue
    for i, cohort, name in _perf_queue_names(cfg):
        n = 3 + i * per_queue
        yield n, 0.0, {"apiVersion": V1BETA2, "kind": "ClusterQueue",
                       "metadata": {"name": name, "labels": cq_labels},
                       "spec": {"cohortName": cohort, **cq_spec_common}}
        yield n + 1, 0.0, {"apiVersion": "v1", "kind": "Namespace",
                           "metadata": {"name": name, "labels": cleanup}}
        yield n + 2, 0.0, {"apiVersion": V1BETA2, "kind": "LocalQueue",
                           "metadata": {"name": name, "namespace": name},
                           "spec": {"clusterQueue": name}}


def _perf_later(cfg: PerfConfig) -> Iterator[tuple[int, float, Obj]]:
    """Every queue's Workloads (all due after t=0)."""
    pod_sets = _perf_pod_sets(cfg)
    per_queue = 3 + cfg.workloads_per_queue
    for i, _, name in _perf_queue_names(cfg):
        first = 3 + i * per_queue + 3
        for j, (at, obj) in enumerate(_perf_workloads(cfg, name, pod_sets)):
            yield first + j, at, obj


def _perf_workloads(cfg: PerfConfig, namespace: str, pod_sets: dict[str, list[Obj]]
                    ) -> Iterator[tuple[float, Obj]]:
    # generateWlSet: the sets of a queue run concurrently; inside a set each workload waits
    # creationIntervalMs before it is created, so the k-th (0-based) comes at (k+1)·interval.
    for set_idx, wl_set in enumerate(cfg.workloads_sets):
        step = 0
        for si in range(wl_set.count):
            for i, wlt in enumerate(wl_set.workloads):
                step += 1
                at = step * wl_set.creation_interval_ms / 1000.0
                yield at, {
                    "apiVersion": V1BETA2, "kind": "Workload",
                    "metadata": {
                        "name": f"{wlt.class_name}-{set_idx}-{si}-{i}", "namespace": namespace,
                        "labels": {PERF_RUNTIME_LABEL: str(wlt.runtime_ms), PERF_CLASS_LABEL: wlt.class_name},
                        "annotations": {ANN_AT: format_duration(at)},
                    },
                    "spec": {"queueName": namespace, "priority": wlt.priority,
                             "podSets": pod_sets[wlt.class_name]},
                }


def perf_scenario(name: str, cfg: PerfConfig) -> Scenario:
    meta = {"kueueSource": cfg.source, "kueueRangespec": cfg.rangespec,
            "expected": {"clusterQueues": cfg.cluster_queues, "localQueues": cfg.cluster_queues,
                         "workloads": cfg.workloads}}
    return staged_steps_from_objects(name, _perf_first(cfg), lambda: _perf_later(cfg),
                                     config={"clusterName": "kueue-perf"}, meta=meta)


# --------------------------------------------------------------------------------------
# Scale scenarios (ARCHITECTURE §5)


@dataclass(frozen=True)
class ScaleSpec:
    name: str
    nodes: int
    cluster_queues: int
    local_queues_per_cq: int
    workloads: int
    seed: int
    gpus_per_node: int = 8


LARGE = ScaleSpec("large", nodes=1_000, cluster_queues=500, local_queues_per_cq=4, workloads=20_000, seed=1)
XL = ScaleSpec("xl", nodes=5_000, cluster_queues=1_000, local_queues_per_cq=4, workloads=100_000, seed=2)


@dataclass(frozen=True)
class _Flavor:
    name: str
    gpu_model: str
    machine: str
    node_labels: dict[str, str]
    cpu_per_gpu: int
    mem_per_gpu_gi: int


_FLAVORS = {
    "h100-reserved": _Flavor("h100-reserved", "NVIDIA H100 80GB HBM3", "a3-highgpu-8g",
                             {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
                              "cloud.google.com/reservation-name": "h100-reservation"}, 26, 230),
    "h100-spot": _Flavor("h100-spot", "NVIDIA H100 80GB HBM3", "a3-highgpu-8g",
                         {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb",
                          "cloud.google.com/gke-spot": "true"}, 26, 230),
    "a100-ondemand": _Flavor("a100-ondemand", "NVIDIA A100-SXM4-80GB", "a2-ultragpu-8g",
                             {"cloud.google.com/gke-accelerator": "nvidia-a100-80gb",
                              "cloud.google.com/gke-provisioning": "standard"}, 12, 170),
    "l4-ondemand": _Flavor("l4-ondemand", "NVIDIA L4", "g2-standard-96",
                           {"cloud.google.com/gke-accelerator": "nvidia-l4",
                            "cloud.google.com/gke-provisioning": "standard"}, 12, 48),
}

# (pool, flavor, share of nodes, spot, zones); shares sum to 1.
_POOLS = (
    ("h100-res-a", "h100-reserved", 0.20, False, ("us-central1-a",)),
    ("h100-res-b", "h100-reserved", 0.20, False, ("us-central1-b",)),
    ("h100-spot", "h100-spot", 0.20, True, ("us-central1-a", "us-central1-b", "us-central1-c")),
    ("a100-od-a", "a100-ondemand", 0.125, False, ("us-central1-a",)),
    ("a100-od-c", "a100-ondemand", 0.125, False, ("us-central1-c",)),
    ("l4-od", "l4-ondemand", 0.15, False, ("us-central1-b", "us-central1-c")),
)
# Home flavors a cohort can get (spot is everyone's second choice).
_HOME_FLAVORS = ("h100-reserved", "a100-ondemand", "l4-ondemand")

_PRIORITIES = (("prod-high", 1000, 0.05), ("prod", 500, 0.25), ("research", 100, 0.55),
               ("best-effort", 0, 0.15))
_DEPARTMENTS = ("research", "product", "platform", "ads", "search", "speech", "vision",
                "robotics", "data", "safety")
_LQ_NAMES = ("train", "finetune", "eval", "batch")
_LQ_WEIGHTS = (0.4, 0.25, 0.2, 0.15)


@dataclass(frozen=True)
class _Shape:
    """A workload class: launcher pods (cpu only) plus worker pods with GPUs."""

    name: str
    share: float
    gpus_per_pod: int
    pods: int
    cpu: str
    memory: str
    launcher: bool
    runtime_min_s: float
    runtime_max_s: float

    @property
    def gpus(self) -> int:
        return self.gpus_per_pod * self.pods


# Two thirds of the workloads are CPU-only (data prep, evaluation); the GPU ones range from
# 1-GPU notebooks to 4×8-GPU training gangs. Overall GPU demand ≈ 1.6× capacity, so most
# workloads run and a backlog of GPU work waits.
_SHAPES = (
    _Shape("data-prep", 0.45, 0, 1, "2", "8Gi", False, 300, 7200),
    _Shape("eval-cpu", 0.20, 0, 1, "4", "16Gi", False, 600, 7200),
    _Shape("notebook", 0.12, 1, 1, "8", "32Gi", False, 7200, 28800),
    _Shape("finetune-1g", 0.14, 1, 1, "10", "40Gi", False, 1800, 21600),
    _Shape("finetune-2g", 0.05, 2, 1, "20", "80Gi", False, 3600, 28800),
    _Shape("train-4g", 0.025, 4, 1, "40", "160Gi", False, 3600, 43200),
    _Shape("train-8g", 0.01, 8, 1, "80", "320Gi", False, 7200, 43200),
    _Shape("train-2x8g", 0.004, 8, 2, "80", "320Gi", True, 7200, 43200),
    _Shape("train-4x8g", 0.001, 8, 4, "80", "320Gi", True, 14400, 86400),
)
CLASS_LABEL = "kueuetop.io/class"  # a scale scenario's workload class (a _Shape's name)


def class_runtime_range(labels: Mapping[str, str]) -> tuple[float, float] | None:
    """(min, max) seconds a scale-scenario workload with these labels runs, its runtime drawn
    log-uniform between them; None for any other workload. For benchmarks that ask what knowing
    the true runtime distributions would give a forecast."""
    shape = _SHAPE_BY_NAME.get(labels.get(CLASS_LABEL, ""))
    return (shape.runtime_min_s, shape.runtime_max_s) if shape is not None else None


_SHAPE_BY_NAME = {s.name: s for s in _SHAPES}
_IDLE_SHARE = 0.05       # admitted GPU workloads that leave their GPUs idle
_INACTIVE_SHARE = 0.01   # created held (spec.active=false)
_LATE_SHARE = 0.10       # arrive during the first hour instead of at start-up
_GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


def _apportion(total: int, weights: list[float]) -> list[int]:
    """Integers proportional to weights that sum exactly to total (largest remainder)."""
    wsum = sum(weights)
    raw = [total * w / wsum for w in weights]
    out = [int(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: (out[i] - raw[i], i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    return out


def _cohort_sizes(rng: random.Random, total: int) -> list[int]:
    """Cohort sizes of 5-10 summing to total (total ≥ 5)."""
    sizes = []
    rest = total
    while rest:
        size = rest if rest <= 10 else rng.randint(5, min(10, rest - 5))
        sizes.append(size)
        rest -= size
    return sizes


def _pod_sets(shape: _Shape) -> list[Obj]:
    requests: Obj = {"cpu": shape.cpu, "memory": shape.memory}
    if shape.gpus_per_pod:
        requests["nvidia.com/gpu"] = str(shape.gpus_per_pod)
    worker = {"name": "worker" if shape.launcher else "main", "count": shape.pods,
              "template": {"spec": {"restartPolicy": "Never", "tolerations": _GPU_TOLERATION,
                                    "containers": [{"name": "main", "resources": {"requests": requests}}]}}}
    if not shape.launcher:
        return [worker]
    launcher = {"name": "launcher", "count": 1,
                "template": {"spec": {"restartPolicy": "Never", "tolerations": _GPU_TOLERATION,
                                      "containers": [{"name": "launcher", "resources": {
                                          "requests": {"cpu": "2", "memory": "8Gi"}}}]}}}
    return [launcher, worker]


def _node_pools(spec: ScaleSpec) -> list[Obj]:
    sizes = _apportion(spec.nodes, [share for _, _, share, _, _ in _POOLS])
    pools = []
    for (pool, flavor_name, _, spot, zones), size in zip(_POOLS, sizes, strict=True):
        flavor = _FLAVORS[flavor_name]
        labels = {k: v for k, v in flavor.node_labels.items()
                  if k.startswith("cloud.google.com/reservation")}
        pools.append({
            "apiVersion": KUEUETOP_API_VERSION, "kind": "NodePool", "metadata": {"name": pool},
            "spec": {"machineType": flavor.machine,
                     "gpu": {"model": flavor.gpu_model, "count": spec.gpus_per_node},
                     "nodeLabels": labels, "zones": list(zones), "size": size,
                     "minSize": size, "maxSize": size, "autoscaling": False, "spot": spot},
        })
    return pools


def scale_scenario(spec: ScaleSpec) -> Scenario:
    """The large / xl scenario: `spec.nodes` 8-GPU nodes, queues in cohorts, a workload mix."""
    rng = random.Random(spec.seed)
    objects: list[tuple[float, Obj]] = []
    add = objects.append
    for name, value, _ in _PRIORITIES:
        add((0.0, {"apiVersion": V1BETA2, "kind": "WorkloadPriorityClass", "metadata": {"name": name},
                   "value": value, "description": f"{name} workloads"}))
    for flavor in _FLAVORS.values():
        add((0.0, {"apiVersion": V1BETA2, "kind": "ResourceFlavor", "metadata": {"name": flavor.name},
                   "spec": {"nodeLabels": dict(flavor.node_labels)}}))
    pools = _node_pools(spec)
    objects.extend((0.0, p) for p in pools)
    gpus_by_flavor: dict[str, int] = {}
    for pool, (_, flavor_name, *_rest) in zip(pools, _POOLS, strict=True):
        gpus_by_flavor[flavor_name] = gpus_by_flavor.get(flavor_name, 0) + pool["spec"]["size"] * spec.gpus_per_node

    # Cohorts of 5-10 queues; each cohort gets a home flavor, weighted by that flavor's GPUs.
    sizes = _cohort_sizes(rng, spec.cluster_queues)
    home_weights = [gpus_by_flavor[f] for f in _HOME_FLAVORS]
    cq_home: list[str] = []
    cq_cohort: list[str] = []
    for c, size in enumerate(sizes):
        home = rng.choices(_HOME_FLAVORS, weights=home_weights)[0]
        cohort = f"{_DEPARTMENTS[c % len(_DEPARTMENTS)]}-{c:03d}"
        cq_home += [home] * size
        cq_cohort += [cohort] * size
    # Every flavor's GPUs are split exactly among the queues that list it.
    cq_weight = [rng.uniform(0.5, 1.5) for _ in range(spec.cluster_queues)]
    quota: list[dict[str, int]] = [{} for _ in range(spec.cluster_queues)]
    for flavor_name in _FLAVORS:
        members = [i for i in range(spec.cluster_queues)
                   if flavor_name == "h100-spot" or cq_home[i] == flavor_name]
        shares = _apportion(gpus_by_flavor[flavor_name], [cq_weight[i] for i in members])
        for i, gpus in zip(members, shares, strict=True):
            quota[i][flavor_name] = gpus

    # Reclaim only from lower priorities: with `Any`, a queue whose workloads were preempted by a
    # borrower (borrowWithinCohort) reclaims its quota back from that borrower at once, which
    # preempts again — the two policies undo each other for ever.
    preemption = {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "LowerPriority",
                  "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}}
    cq_names = []
    lq_refs: list[list[str]] = []
    for i in range(spec.cluster_queues):
        team = f"{cq_cohort[i].rsplit('-', 1)[0]}-team-{i:04d}"
        cq_names.append(team)
        flavors = []
        for flavor_name in (cq_home[i], "h100-spot"):
            f = _FLAVORS[flavor_name]
            gpus = quota[i][flavor_name]
            flavors.append({"name": flavor_name, "resources": [
                {"name": "cpu", "nominalQuota": str(gpus * f.cpu_per_gpu)},
                {"name": "memory", "nominalQuota": f"{gpus * f.mem_per_gpu_gi}Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": str(gpus)}]})
        add((0.0, {"apiVersion": V1BETA2, "kind": "ClusterQueue", "metadata": {"name": team},
                   "spec": {"cohortName": cq_cohort[i], "namespaceSelector": {},
                            "queueingStrategy": "BestEffortFIFO", "preemption": preemption,
                            "resourceGroups": [{"coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
                                                "flavors": flavors}]}}))
        add((0.0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team}}))
        lqs = []
        for lq in _LQ_NAMES[: spec.local_queues_per_cq]:
            add((0.0, {"apiVersion": V1BETA2, "kind": "LocalQueue",
                       "metadata": {"name": lq, "namespace": team}, "spec": {"clusterQueue": team}}))
            lqs.append(lq)
        lq_refs.append(lqs)

    # Workloads: spread over queues in proportion to their GPU quota. They are built only when
    # the later steps are first needed, from the generator's state at this point.
    per_cq = _apportion(spec.workloads, [sum(q.values()) for q in quota])
    state = rng.getstate()

    def later() -> Iterator[tuple[int, float, Obj]]:
        wl_rng = random.Random()
        wl_rng.setstate(state)
        for n, (at, obj) in enumerate(_scale_workloads(wl_rng, spec, cq_names, lq_refs, per_cq),
                                      start=len(objects) + 1):
            yield n, at, obj

    meta = {"expected": {
        "nodes": spec.nodes, "gpus": spec.nodes * spec.gpus_per_node,
        "clusterQueues": spec.cluster_queues,
        "localQueues": spec.cluster_queues * spec.local_queues_per_cq, "workloads": spec.workloads}}
    first = ((n, at, obj) for n, (at, obj) in enumerate(objects, start=1))
    # Kueue as a platform team running many borrowing queues would configure it: with
    # PrioritizePreemptorWorkloads (alpha in 0.20), a workload waiting for its preemptions goes
    # first, which ends the preempt / re-admit thrash of Kueue#13662. These queues hit that loop
    # (a reclaiming low-priority workload, a borrowing high-priority one re-admitted ahead of the
    # preemptor), and simulated evictions complete at once, so without the gate it spins at one instant.
    config = {"clusterName": f"kueuetop-{spec.name}", "featureGates": {"PrioritizePreemptorWorkloads": True}}
    return staged_steps_from_objects(spec.name, first, later, config=config, meta=meta)


def _scale_workloads(rng: random.Random, spec: ScaleSpec, cq_names: list[str],
                     lq_refs: list[list[str]], per_cq: list[int]) -> Iterator[tuple[float, Obj]]:
    shape_weights = [s.share for s in _SHAPES]
    pod_sets = {s.name: _pod_sets(s) for s in _SHAPES}
    prio_refs = {name: ({"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": name}, value)
                 for name, value, _ in _PRIORITIES}
    prio_names = [name for name, _, _ in _PRIORITIES]
    prio_weights = [w for _, _, w in _PRIORITIES]
    lq_weights = list(_LQ_WEIGHTS[: spec.local_queues_per_cq])
    random_ = rng.random
    for cq, lqs, count in zip(cq_names, lq_refs, per_cq, strict=True):
        shapes = rng.choices(_SHAPES, weights=shape_weights, k=count)
        prios = rng.choices(prio_names, weights=prio_weights, k=count)
        queues = rng.choices(lqs, weights=lq_weights, k=count)
        for n, (shape, prio, lq) in enumerate(zip(shapes, prios, queues, strict=True)):
            # Start-up burst over 30 s, then a trickle of arrivals for an hour; none at t=0 itself,
            # so the first instant is the cluster and its queues (what `sim serve` loads first).
            at = max(0.001, round(random_() * 3600.0 if random_() < _LATE_SHARE else random_() * 30.0, 3))
            runtime = shape.runtime_min_s * (shape.runtime_max_s / shape.runtime_min_s) ** random_()
            annotations = {ANN_AT: format_duration(at), ANN_RUNTIME: format_duration(round(runtime))}
            if shape.gpus:
                annotations[ANN_GPU_UTIL] = ("idle" if random_() < _IDLE_SHARE
                                             else str(int(35 + 63 * random_() ** 0.5)))
            ref, value = prio_refs[prio]
            wl_spec: Obj = {"queueName": lq, "priority": value, "priorityClassRef": ref,
                            "podSets": pod_sets[shape.name]}
            if random_() < _INACTIVE_SHARE:
                wl_spec["active"] = False
            yield at, {"apiVersion": V1BETA2, "kind": "Workload",
                       "metadata": {"name": f"{shape.name}-{n:04d}", "namespace": cq,
                                    "labels": {CLASS_LABEL: shape.name},
                                    "annotations": annotations},
                       "spec": wl_spec}


GENERATORS: dict[str, Callable[[], Scenario]] = {
    "kueue-perf-baseline": lambda: perf_scenario("kueue-perf-baseline", PERF_BASELINE),
    "kueue-perf-large": lambda: perf_scenario("kueue-perf-large", PERF_LARGE_SCALE),
    "large": lambda: scale_scenario(LARGE),
    "xl": lambda: scale_scenario(XL),
}
