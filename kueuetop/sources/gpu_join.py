"""GPU → pod → Workload, and which admitted workloads leave their GPUs idle.

Pure functions over plain API dicts (pods, workloads, optional owner objects such as Jobs) and
`GpuSample`s; no I/O, no clock reads.

How a pod finds its Workload (Kueue's job framework, reference/kueue.md):
1. the pod is owned by a Workload (Workloads created directly own their pods);
2. a Workload is owned by the pod itself (plain-pod integration: single pods, and pod groups where
   the group's Workload lists every pod as an owner);
3. the pod's controller (a Job, …) owns a Workload, or a Workload carries that controller's uid in
   the `kueue.x-k8s.io/job-uid` label; followed up the chain (Pod → Job → JobSet …) when the
   intermediate objects are given;
4. the pod carries `batch.kubernetes.io/controller-uid` (or legacy `controller-uid`) naming a Job
   that owns a Workload, for when the Job object itself is not at hand;
5. the pod-group label `kueue.x-k8s.io/pod-group-name` names the group's Workload.

Idle rule: an admitted workload is **idle** when every GPU it holds stayed below `threshold` %
for at least `idle_for` seconds, judged from a utilization history (per-GPU points); with less
history than that it is **low** (below threshold now, not yet for long enough). Workloads with
no telemetry for their pods are **unknown**; with only stale telemetry **stale** — never idle,
because missing data is not 0 % (reference/gpu-telemetry.md §4.3).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.workload import JOB_UID_LABEL
from kueuetop.sources.dcgm import PodRef

__all__ = [
    "BUSY",
    "IDLE",
    "LOW",
    "STALE",
    "UNKNOWN",
    "WorkloadGpuUse",
    "pod_workloads",
    "workload_gpu_use",
]

POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
CONTROLLER_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")
MAX_OWNER_DEPTH = 5  # Pod → Job → JobSet → … ; guards against ownerReference cycles

BUSY, IDLE, LOW, STALE, UNKNOWN = "busy", "idle", "low", "stale", "unknown"

WorkloadKey = tuple[str, str]  # (namespace, name)
GpuKey = tuple[str, str]  # GpuSample.key: (node, gpu)
History = Mapping[GpuKey, Sequence[tuple[float, float | None]]]


@dataclass(frozen=True, slots=True)
class WorkloadGpuUse:
    namespace: str
    name: str
    state: str  # busy | idle | low | stale | unknown
    gpus: tuple[GpuKey, ...] = ()  # devices its pods hold, as seen in telemetry
    pods: tuple[str, ...] = ()  # its pods that hold a GPU (names)
    util_mean: float | None = None  # over its fresh GPUs, now
    util_max: float | None = None
    idle_seconds: float | None = None  # how long all its GPUs have been below threshold (history)

    @property
    def key(self) -> WorkloadKey:
        return (self.namespace, self.name)

    @property
    def admitted_but_idle(self) -> bool:
        return self.state == IDLE


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    m = obj.get("metadata")
    return m if isinstance(m, Mapping) else {}


def _owners(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    refs = _meta(obj).get("ownerReferences")
    return [r for r in refs if isinstance(r, Mapping)] if isinstance(refs, list) else []


def _controller(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    refs = _owners(obj)
    return next((r for r in refs if r.get("controller")), refs[0] if refs else None)


def pod_workloads(pods: Iterable[Mapping[str, Any]], workloads: Iterable[Mapping[str, Any]],
                  owners: Iterable[Mapping[str, Any]] = ()) -> dict[tuple[str, str], WorkloadKey]:
    """(namespace, pod name) → (namespace, workload name) for every pod that belongs to one."""
    wl_by_uid: dict[str, WorkloadKey] = {}  # owner uid (Job, Pod, JobSet, …) → workload
    wl_self: dict[str, WorkloadKey] = {}  # workload uid → workload
    wl_names: set[WorkloadKey] = set()
    for wl in workloads:
        m = _meta(wl)
        key = (str(m.get("namespace", "")), str(m.get("name", "")))
        wl_names.add(key)
        if m.get("uid"):
            wl_self[str(m["uid"])] = key
        for ref in _owners(wl):
            if ref.get("uid"):
                wl_by_uid.setdefault(str(ref["uid"]), key)
        labels = m.get("labels") if isinstance(m.get("labels"), Mapping) else {}
        if labels.get(JOB_UID_LABEL):
            wl_by_uid.setdefault(str(labels[JOB_UID_LABEL]), key)
    parent: dict[str, Mapping[str, Any] | None] = {}  # uid of an intermediate owner → its controller
    for obj in owners:
        uid = _meta(obj).get("uid")
        if uid:
            parent[str(uid)] = _controller(obj)

    def via_chain(ref: Mapping[str, Any] | None) -> WorkloadKey | None:
        for _ in range(MAX_OWNER_DEPTH):
            if ref is None:
                return None
            uid = str(ref.get("uid") or "")
            if ref.get("kind") == "Workload":
                return wl_self.get(uid)
            if uid in wl_by_uid:
                return wl_by_uid[uid]
            ref = parent.get(uid)
        return None

    out: dict[tuple[str, str], WorkloadKey] = {}
    for pod in pods:
        m = _meta(pod)
        ns, name = str(m.get("namespace", "")), str(m.get("name", ""))
        labels = m.get("labels") if isinstance(m.get("labels"), Mapping) else {}
        found: WorkloadKey | None = None
        for ref in _owners(pod):  # rule 1: a Workload owns the pod
            if ref.get("kind") == "Workload" and str(ref.get("apiVersion", "")).startswith("kueue.x-k8s.io/"):
                found = wl_self.get(str(ref.get("uid") or "")) or (ns, str(ref.get("name", "")))
                break
        if found is None and m.get("uid"):  # rule 2: plain-pod integration
            found = wl_by_uid.get(str(m["uid"]))
        if found is None:  # rule 3: controller chain
            found = via_chain(_controller(pod))
        if found is None:  # rule 4: controller uid label
            found = next((wl_by_uid[labels[k]] for k in CONTROLLER_UID_LABELS
                          if labels.get(k) and labels[k] in wl_by_uid), None)
        if found is None and labels.get(POD_GROUP_LABEL):  # rule 5: pod group
            group = (ns, str(labels[POD_GROUP_LABEL]))
            found = group if group in wl_names else None
        if found is not None:
            out[(ns, name)] = found
    return out


def _conditions(wl: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = wl.get("status") if isinstance(wl.get("status"), Mapping) else {}
    conds = status.get("conditions") if isinstance(status.get("conditions"), list) else []
    return {str(c.get("type")): c for c in conds if isinstance(c, Mapping)}


def _admitted(wl: Mapping[str, Any]) -> bool:
    conds = _conditions(wl)
    return (conds.get("Admitted") or {}).get("status") == "True" and \
        (conds.get("Finished") or {}).get("status") != "True"


def _admitted_at(wl: Mapping[str, Any]) -> float | None:
    """Epoch seconds of the Admitted condition's lastTransitionTime (RFC 3339), if readable."""
    raw = (_conditions(wl).get("Admitted") or {}).get("lastTransitionTime")
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _below_since(points: Sequence[tuple[float, float | None]], threshold: float) -> float | None:
    """Start of the trailing run of points below threshold (None when the last point is not)."""
    since: float | None = None
    for t, v in sorted(points, key=lambda p: p[0]):
        if v is None or v >= threshold:
            since = None  # a gap is not idleness: the run restarts after it
        elif since is None:
            since = t
    return since


def workload_gpu_use(samples: Iterable[GpuSample], pods: Iterable[Mapping[str, Any]],
                     workloads: Iterable[Mapping[str, Any]], *, now: float,
                     owners: Iterable[Mapping[str, Any]] = (),
                     sharers: Mapping[GpuKey, Sequence[PodRef]] | None = None,
                     history: History | None = None, threshold: float = 5.0,
                     idle_for: float = 600.0, since_admission: bool = True) -> dict[WorkloadKey, WorkloadGpuUse]:
    """GPU use of every admitted workload.

    `sharers` (from `GpuReading.sharers`) attributes a time-sliced GPU to every pod on it.
    `history` maps GPU key → [(t, util %)], e.g. `PrometheusSource.util_history(...).series` or
    the store's per-GPU ring; `now` is the time the history is judged at (same clock).
    `since_admission`: idleness counts from the Admitted condition's time at the earliest — the
    GPU was idle before because nobody held it. Turn it off when workload timestamps and the
    history are on different clocks (a simulator running faster than real time)."""
    workloads = list(workloads)
    pods = list(pods)
    pod_wl = pod_workloads(pods, workloads, owners)
    admitted = {(str(_meta(w).get("namespace", "")), str(_meta(w).get("name", ""))): w
                for w in workloads if _admitted(w)}
    held: dict[WorkloadKey, dict[GpuKey, GpuSample]] = {k: {} for k in admitted}
    held_pods: dict[WorkloadKey, set[str]] = {k: set() for k in admitted}
    for s in samples:
        holders = list(sharers.get(s.key, ())) if sharers else []
        if not holders and s.pod:
            holders = [PodRef(s.namespace, s.pod, s.container)]
        for h in holders:
            wl = pod_wl.get((h.namespace, h.pod))
            if wl in held:
                held[wl][s.key] = s
                held_pods[wl].add(h.pod)
    out: dict[WorkloadKey, WorkloadGpuUse] = {}
    for key in sorted(admitted):
        gpus = held[key]
        fresh = [s for s in gpus.values() if not s.stale and s.util is not None]
        utils = [s.util for s in fresh if s.util is not None]
        mean = sum(utils) / len(utils) if utils else None
        peak = max(utils) if utils else None
        idle_seconds: float | None = None
        if not gpus:
            state = UNKNOWN
        elif not fresh:
            state = STALE
        elif peak is not None and peak >= threshold:
            state = BUSY
        else:
            state = LOW
            if history is not None:
                starts = [_below_since(history.get(g, ()), threshold) for g in gpus]
                if all(s is not None for s in starts):
                    start = max(s for s in starts if s is not None)
                    admitted_at = _admitted_at(admitted[key]) if since_admission else None
                    if admitted_at is not None:
                        start = max(start, admitted_at)
                    idle_seconds = max(0.0, now - start)
                    if idle_seconds >= idle_for:
                        state = IDLE
        out[key] = WorkloadGpuUse(key[0], key[1], state, tuple(sorted(gpus)), tuple(sorted(held_pods[key])),
                                  mean, peak, idle_seconds)
    return out
