"""Generated multi-cluster scenarios: `multikueue-xl`, one manager and ten workers of 1,000
GPU nodes each, built as documents and read through the same parser as the files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from kueuetop.kueue.durations import parse_duration
from kueuetop.sim.scenarios.multicluster import ANN_CLUSTER, MultiClusterScenario, parse_multicluster
from kueuetop.sim.scenarios.scenario import ANN_AT, steps_from_objects

XL_REGIONS = ("us-central1", "us-east4", "us-west1", "europe-west4", "europe-west1", "europe-north1",
              "asia-southeast1", "asia-northeast1", "asia-south1", "australia-southeast1")
_GPUS = (("g2-standard-96", "NVIDIA L4", 8, "l4"), ("a2-highgpu-8g", "NVIDIA A100-SXM4-40GB", 8, "a100"))


def _for(cluster: str, doc: dict[str, Any]) -> dict[str, Any]:
    doc.setdefault("metadata", {}).setdefault("annotations", {})[ANN_CLUSTER] = cluster
    return doc


def _queue_docs(cluster: str, flavor: str, gpus: int, namespaces: list[str], checks: list[str]) -> list[dict]:
    cq: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": "gpu-cluster-queue"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{
            "coveredResources": ["cpu", "memory", "nvidia.com/gpu"],
            "flavors": [{"name": flavor, "resources": [
                {"name": "cpu", "nominalQuota": gpus * 12}, {"name": "memory", "nominalQuota": f"{gpus * 48}Gi"},
                {"name": "nvidia.com/gpu", "nominalQuota": gpus}]}]}]}}
    if checks:
        cq["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    docs = [_for(cluster, cq)]
    for ns in namespaces:
        docs.append(_for(cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
        docs.append(_for(cluster, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                                   "metadata": {"name": "gpu", "namespace": ns},
                                   "spec": {"clusterQueue": "gpu-cluster-queue"}}))
    return docs


def multikueue_docs(workers: list[str], nodes_per_worker: int, jobs: int, teams: int = 10) -> list[dict[str, Any]]:
    """A manager dispatching `jobs` single-node GPU Jobs to `workers`, each with one pool."""
    namespaces = [f"team-{i:02d}" for i in range(teams)]
    docs: list[dict[str, Any]] = [{"apiVersion": "kueuetop.io/v1", "kind": "Cluster", "metadata": {"name": "manager"},
                                   "spec": {"role": "manager"}}]
    docs += [{"apiVersion": "kueuetop.io/v1", "kind": "Cluster", "metadata": {"name": w},
              "spec": {"role": "worker", "region": w}} for w in workers]
    m = "manager"
    docs.append(_for(m, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                         "metadata": {"name": "default-flavor"}}))
    docs.append(_for(m, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
                         "metadata": {"name": "multikueue"},
                         "spec": {"controllerName": "kueue.x-k8s.io/multikueue", "parameters": {
                             "apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "multikueue"}}}))
    docs.append(_for(m, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
                         "metadata": {"name": "multikueue"}, "spec": {"clusters": list(workers)}}))
    for w in workers:
        docs.append(_for(m, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                             "metadata": {"name": w}, "spec": {"clusterSource": {"kubeConfig": {
                                 "locationType": "Secret", "location": f"{w}-kubeconfig"}}}}))
    total_gpus = sum(_GPUS[i % 2][2] for i in range(len(workers))) * nodes_per_worker
    docs += _queue_docs(m, "default-flavor", total_gpus, namespaces, ["multikueue"])
    for i, w in enumerate(workers):
        machine, model, count, short = _GPUS[i % 2]
        flavor = f"{short}-{'spot' if i % 3 == 0 else 'reserved'}"
        docs.append(_for(w, {"apiVersion": "kueuetop.io/v1", "kind": "NodePool", "metadata": {"name": f"{flavor}-pool"},
                             "spec": {"machineType": machine, "gpu": {"model": model, "count": count},
                                      "spot": i % 3 == 0, "zones": [f"{w}-a"], "size": nodes_per_worker,
                                      "minSize": nodes_per_worker, "maxSize": nodes_per_worker,
                                      "autoscaling": False}}))
        docs.append(_for(w, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
                             "metadata": {"name": flavor},
                             "spec": {"nodeLabels": {"cloud.google.com/gke-nodepool": f"{flavor}-pool"}}}))
        docs += _queue_docs(w, flavor, count * nodes_per_worker, namespaces, [])
    for j in range(jobs):
        gpus = (1, 2, 4, 8)[j % 4]
        docs.append(_for(m, {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": f"job-{j:05d}", "namespace": namespaces[j % teams],
                         "labels": {"kueue.x-k8s.io/queue-name": "gpu"},
                         "annotations": {"kueuetop.io/at": f"{j % 600}s",
                                         "kueuetop.io/runtime": f"{20 + j % 40}m"}},
            "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "parallelism": 1, "completions": 1, "suspend": True,
                     "template": {"spec": {"restartPolicy": "Never",
                                           "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                            "effect": "NoSchedule"}],
                                           "containers": [{"name": "main", "image": "trainer", "resources": {
                                               "requests": {"cpu": str(gpus), "memory": f"{gpus * 4}Gi",
                                                            "nvidia.com/gpu": gpus},
                                               "limits": {"nvidia.com/gpu": gpus}}}]}}}}))
    return docs


def scenario_from_docs(name: str, docs: list[dict[str, Any]]) -> MultiClusterScenario:
    """The generated documents as a scenario without a YAML round trip (20,000 Jobs would take
    minutes to dump and re-parse): the Cluster documents are read as the parser reads them, the
    rest goes to its cluster already valid (steps_from_objects)."""
    decls = [d for d in docs if d.get("kind") == "Cluster"]
    head = parse_multicluster(yaml.safe_dump_all(decls, sort_keys=False), name, name=name)
    per: dict[str, list[tuple[float, dict[str, Any]]]] = {c.name: [] for c in head.clusters}
    for d in docs:
        if d.get("kind") == "Cluster":
            continue
        ann = d["metadata"].get("annotations") or {}
        per[ann.get(ANN_CLUSTER) or head.manager].append((parse_duration(ann.get(ANN_AT, "0s")), d))
    head.scenarios = {c: steps_from_objects(f"{name}/{c}", objs) for c, objs in per.items()}
    return head


def multikueue_xl() -> MultiClusterScenario:
    return scenario_from_docs("multikueue-xl", multikueue_docs(list(XL_REGIONS), nodes_per_worker=1000, jobs=20_000))


MULTI_GENERATORS: dict[str, Callable[[], MultiClusterScenario]] = {"multikueue-xl": multikueue_xl}
