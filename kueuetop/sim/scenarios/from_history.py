"""A scenario from a cluster's recorded history: the same queues, flavors and node pools, each
workload created when it was and running as long as it ran (`kueuetop sim run --from-recording`).

Input: the objects in the order a recording holds them, `(t, kind, wire dict)` with `t` the
recorder's clock (sources/recorder.py). Pure: no files, no clocks.

* Time is the cluster's: creation and condition times as the API server wrote them. Time 0 of
  the scenario (`origin`) is the creation of the oldest Workload not yet finished when first
  seen, so each one that matters is created at its own offset. A change seen later (a queue
  stopped, a workload deactivated) is applied at the cluster's time then, estimated as the
  newest cluster time seen so far (never earlier than the recorder's own clock).
* Queues, flavors, cohorts, checks, priority classes and namespaces: as first seen, at 0; a
  later change of `spec` is an update document at its time (what `kubectl apply` did then).
* Node pools: the recorded nodes grouped by pool label, as `NodePool` documents (machine type,
  GPU model and count, common labels and taints, zones, size at the origin, min and max seen;
  autoscaled when the count moved).
* Workloads: created directly (a Workload stands for a job of its shape) with the recorded spec;
  runtime = Finished minus the start of its first pod (or its admission), as observed; a
  workload still running at the end runs at least as long as it was seen running; one never
  started gets the median observed runtime (the recording says nothing about it).

`recorded_admissions` is the reference the fidelity figure compares with (sim/fidelity.py).
"""

from __future__ import annotations

import copy
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import yaml

from kueuetop.kueue.durations import format_duration
from kueuetop.sim.scenarios.nodes import GPU_MODELS, gpu_product_label, pool_labels

ANN_AT, ANN_RUNTIME = "kueuetop.io/at", "kueuetop.io/runtime"
CONFIG_KINDS = ("namespaces", "priorityclasses", "resourceflavors", "cohorts", "admissionchecks",
                "provisioningrequestconfigs", "clusterqueues", "localqueues")
POOL_LABELS = ("cloud.google.com/gke-nodepool", "eks.amazonaws.com/nodegroup", "karpenter.sh/nodepool",
               "kubernetes.azure.com/agentpool", "node.kubernetes.io/pool")
POOL_ANNOTATION = "kueuetop.io/node-pool"
# Labels each node has its own value of, or that the NodePool sets itself (scenarios/nodes.py).
PER_NODE_LABELS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
                   "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region")
DEFAULT_RUNTIME = 600.0
Key = tuple[str, str]


def _time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _meta(raw: Mapping[str, Any]) -> dict[str, Any]:
    m = raw.get("metadata")
    return m if isinstance(m, dict) else {}


def _key(raw: Mapping[str, Any]) -> Key:
    m = _meta(raw)
    return (str(m.get("namespace") or ""), str(m.get("name") or ""))


def _conditions(raw: Mapping[str, Any]) -> list[dict[str, Any]]:
    status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
    return [c for c in status.get("conditions") or () if isinstance(c, dict)]


def _true_since(raw: Mapping[str, Any], ctype: str) -> float | None:
    for c in _conditions(raw):
        if c.get("type") == ctype and c.get("status") == "True":
            return _time(c.get("lastTransitionTime"))
    return None


def _cluster_times(raw: Mapping[str, Any]) -> list[float]:
    out = [_time(_meta(raw).get("creationTimestamp"))]
    out += [_time(c.get("lastTransitionTime")) for c in _conditions(raw)]
    return [t for t in out if t is not None]


@dataclass
class _Object:
    kind: str
    first: dict[str, Any]
    first_at: float  # cluster time when first seen
    spec_changes: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    last: dict[str, Any] = field(default_factory=dict)


@dataclass
class History:
    """Everything the scenario needs, gathered in one pass over the recording."""

    objects: dict[tuple[str, Key], _Object] = field(default_factory=dict)
    admitted: dict[Key, float] = field(default_factory=dict)  # first Admitted=True transition seen
    finished: dict[Key, float] = field(default_factory=dict)
    pod_start: dict[str, float] = field(default_factory=dict)  # owner uid → earliest pod startTime
    # pool → (recorder time, cluster time, nodes) after each change
    node_counts: dict[str, list[tuple[float, float, int]]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # node name → last version
    pool_nodes: dict[str, set[str]] = field(default_factory=dict)
    newest: float = 0.0  # the newest cluster time seen

    def add(self, t: float, kind: str, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, dict) or not _meta(raw).get("name"):
            return
        self.newest = max(self.newest, t, *_cluster_times(raw))
        key = _key(raw)
        if kind == "pods":
            start = _time((raw.get("status") or {}).get("startTime"))
            if start is not None:
                for uid in (str(o.get("uid") or "") for o in _meta(raw).get("ownerReferences") or ()):
                    if uid and (uid not in self.pod_start or start < self.pod_start[uid]):
                        self.pod_start[uid] = start
            return
        if kind == "nodes":
            self._node(t, key[1], raw, present=True)
            return
        if kind not in CONFIG_KINDS and kind != "workloads":
            return
        obj = self.objects.get((kind, key))
        if obj is None:
            self.objects[(kind, key)] = obj = _Object(kind, copy.deepcopy(raw), self.newest)
        elif raw.get("spec") != obj.last.get("spec"):
            obj.spec_changes.append((self.newest, copy.deepcopy(raw.get("spec") or {})))
        obj.last = raw
        if kind == "workloads":
            adm = _true_since(raw, "Admitted")
            if adm is not None and key not in self.admitted:
                self.admitted[key] = adm  # the first admission seen
            fin = _true_since(raw, "Finished")
            if fin is not None:
                self.finished[key] = fin

    def delete(self, t: float, kind: str, key: Key) -> None:
        if kind == "nodes":
            self._node(t, key[1], None, present=False)

    def _node(self, t: float, name: str, raw: Mapping[str, Any] | None, *, present: bool) -> None:
        if raw is not None:
            self.nodes[name] = dict(raw)
        node = self.nodes.get(name)
        if node is None:
            return
        pool = _pool_of(node)
        members = self.pool_nodes.setdefault(pool, set())
        before = len(members)
        (members.add if present else members.discard)(name)
        if len(members) != before:
            self.node_counts.setdefault(pool, []).append((t, max(self.newest, t), len(members)))


def _pool_of(node: Mapping[str, Any]) -> str:
    labels = _meta(node).get("labels") or {}
    for k in POOL_LABELS:
        if labels.get(k):
            return str(labels[k])
    return str((_meta(node).get("annotations") or {}).get(POOL_ANNOTATION) or "nodes")


def gather(records: Iterable[tuple[float, str, str, Any]]) -> History:
    """`(t, op, kind, payload)`: op "object" with a wire dict, or "delete" with a key."""
    h = History()
    for t, op, kind, payload in records:
        if op == "object":
            h.add(t, kind, payload)
        elif op == "delete":
            h.delete(t, kind, payload)
    return h


# ---------------------------------------------------------------------------- documents
def _clean_meta(raw: Mapping[str, Any], at: float | None = None, runtime: float | None = None) -> dict[str, Any]:
    m = _meta(raw)
    out: dict[str, Any] = {"name": m.get("name")}
    if m.get("namespace"):
        out["namespace"] = m["namespace"]
    if m.get("labels"):
        out["labels"] = dict(m["labels"])
    ann = {k: v for k, v in (m.get("annotations") or {}).items() if not str(k).startswith("kueuetop.io/")}
    if at is not None and at > 0:
        ann[ANN_AT] = format_duration(at)
    if runtime is not None:
        ann[ANN_RUNTIME] = format_duration(max(1.0, round(runtime)))
    if ann:
        out["annotations"] = ann
    return out


def _doc(raw: Mapping[str, Any], spec: Any = None, **meta_kw: Any) -> dict[str, Any]:
    out = {"apiVersion": raw.get("apiVersion"), "kind": raw.get("kind"), "metadata": _clean_meta(raw, **meta_kw)}
    for k in ("value", "globalDefault", "preemptionPolicy", "description"):  # PriorityClass fields
        if k in raw:
            out[k] = raw[k]
    s = raw.get("spec") if spec is None else spec
    if s is not None:
        out["spec"] = copy.deepcopy(s)
    return out


def _gpu_model(label: str) -> str:
    return next((m for m in GPU_MODELS if gpu_product_label(m) == label), label.replace("-", " "))


def _node_pool(pool: str, nodes: list[dict[str, Any]], changes: list[tuple[float, float, int]],
               origin: float) -> dict[str, Any]:
    first = nodes[0]
    labels = dict(_meta(first).get("labels") or {})
    for n in nodes[1:]:
        other = _meta(n).get("labels") or {}
        labels = {k: v for k, v in labels.items() if other.get(k) == v}
    zones = sorted({str((_meta(n).get("labels") or {}).get("topology.kubernetes.io/zone") or "") for n in nodes} - {""})
    alloc = (first.get("status") or {}).get("allocatable") or {}
    gpus = int(str(alloc.get("nvidia.com/gpu") or "0") or 0)
    spec: dict[str, Any] = {"machineType": labels.get("node.kubernetes.io/instance-type") or "n2-standard-32"}
    if gpus:
        spec["gpu"] = {"model": _gpu_model(str(labels.get("nvidia.com/gpu.product") or "NVIDIA-L4")), "count": gpus}
    if zones:
        spec["zones"] = zones
    if labels.get("cloud.google.com/gke-spot") == "true":
        spec["spot"] = True
    if labels.get("cloud.google.com/gke-queued") == "true":
        spec["queuedProvisioning"] = True
    generated = pool_labels({"metadata": {"name": pool}, "spec": spec}, zones[0] if zones else "zone-a")
    own = {k: v for k, v in labels.items() if k not in PER_NODE_LABELS and generated.get(k) != v
           and not k.startswith(("nvidia.com/", "cloud.google.com/gke-", "kubernetes.io/", "node.kubernetes.io/"))}
    if own:
        spec["nodeLabels"] = own
    taints = [t for t in (first.get("spec") or {}).get("taints") or () if isinstance(t, dict)
              and all(t in ((n.get("spec") or {}).get("taints") or ()) for n in nodes)]
    if taints:
        spec["nodeTaints"] = [{k: t[k] for k in ("key", "value", "effect") if k in t} for t in taints]
    # One count per write the recorder saw (a list of 30 nodes is one change, not 30).
    per_write: dict[float, tuple[float, int]] = {}
    for t_rec, t_cluster, count in changes:
        per_write[t_rec] = (max(t_cluster, per_write.get(t_rec, (t_cluster, 0))[0]), count)
    counts = sorted(per_write.values())
    at_origin = [c for t, c in counts if t <= origin]
    size = at_origin[-1] if at_origin else counts[0][1] if counts else len(nodes)
    seen = [c for _, c in counts] or [len(nodes)]
    moved = len(set(seen)) > 1
    spec.update({"size": size, "autoscaling": moved})
    if moved:
        spec.update({"minSize": min(seen), "maxSize": max(seen)})
    return {"apiVersion": "kueuetop.io/v1", "kind": "NodePool", "metadata": {"name": pool}, "spec": spec}


@dataclass
class Built:
    documents: list[dict[str, Any]]
    origin: float  # cluster time of scenario time 0
    end: float  # the recording's last moment, in scenario time
    recorded_admissions: dict[Key, float]  # workload → admission time (scenario time)

    def yaml(self) -> str:
        return yaml.safe_dump_all(self.documents, sort_keys=False)


def build(h: History, cluster_name: str = "") -> Built:
    """The scenario of a gathered history."""
    wls = {k: o for (kind, k), o in h.objects.items() if kind == "workloads"}
    live = {k: o for k, o in wls.items() if _true_since(o.first, "Finished") is None}
    creations = [c for o in live.values() if (c := _time(_meta(o.first).get("creationTimestamp"))) is not None]
    origin = min(creations) if creations else min((o.first_at for o in h.objects.values()), default=h.newest)
    docs: list[dict[str, Any]] = [{"apiVersion": "kueuetop.io/v1", "kind": "SimConfig", "metadata": {"name": "recorded"},
                                   "spec": {"clusterName": cluster_name or "recorded"}}]
    # Namespaces that hold queues or workloads (the others, kube-system and the like, the
    # simulated cluster has or does not need).
    used = {key[0] for (kind, key) in h.objects if kind in ("localqueues", "workloads")}
    for kind in CONFIG_KINDS:
        for (k, key), o in sorted(h.objects.items(), key=lambda kv: kv[0][1]):
            if k != kind or (kind == "namespaces" and key[1] not in used):
                continue
            docs.append(_doc(o.first))
            for t, spec in o.spec_changes:
                docs.append(_doc(o.first, spec, at=max(0.0, t - origin)))
    for pool in sorted(h.pool_nodes.keys() | h.node_counts.keys()):
        nodes = [n for n in h.nodes.values() if _pool_of(n) == pool]
        if nodes:
            docs.append(_node_pool(pool, nodes, h.node_counts.get(pool, []), origin))
    runtimes: dict[Key, float | None] = {}
    for key, o in live.items():
        started = _started(h, o)
        fin = h.finished.get(key)
        if started is not None and fin is not None:
            runtimes[key] = max(0.0, fin - started)
        elif started is not None:
            runtimes[key] = max(0.0, h.newest - started)  # still running: at least this long
        else:
            runtimes[key] = None
    observed = [r for k, r in runtimes.items() if r is not None and k in h.finished]
    fallback = statistics.median(observed) if observed else DEFAULT_RUNTIME
    for key in sorted(live, key=lambda k: (_time(_meta(live[k].first).get("creationTimestamp")) or 0.0, k)):
        o = live[key]
        created = _time(_meta(o.first).get("creationTimestamp")) or o.first_at
        at = max(0.0, created - origin)
        runtime = runtimes[key] if runtimes[key] is not None else fallback
        spec = copy.deepcopy(o.first.get("spec") or {})
        docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                     "metadata": _clean_meta(o.first, at=at, runtime=runtime), "spec": spec})
        active = spec.get("active", True)
        for t, later in o.spec_changes:
            if later.get("active", True) != active:
                active = later.get("active", True)
                docs.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                             "metadata": _clean_meta(o.first, at=max(at, t - origin)), "spec": {"active": active}})
    admissions = {k: t - origin for k, t in h.admitted.items() if k in live}
    return Built(docs, origin, h.newest - origin, admissions)


def _started(h: History, o: _Object) -> float | None:
    """When the workload's pods started (the earliest pod of its owner, or of itself), else its admission."""
    m = _meta(o.last)
    uids = [str(m.get("uid") or "")] + [str(r.get("uid") or "") for r in m.get("ownerReferences") or ()]
    starts = [h.pod_start[u] for u in uids if u and u in h.pod_start]
    if starts:
        return min(starts)
    return _true_since(o.last, "Admitted")
