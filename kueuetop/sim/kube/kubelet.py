"""The simulated kubelets: run the pods the scheduler bound, finish them.

A bound pod starts at once (`start_delay`), runs for `kueuetop.io/runtime` (pod annotation;
the Job and Workload integrations copy it from their owner) or `default_runtime`, then
succeeds and frees its node in the scheduler's ledger; a scenario's pod faults make it fail
instead (`pod_faults`). The scheduler (`sim.kube.scheduler`) and the kubelets take one
controller turn together (`KubeNodes`), in the order a node sees it.
"""

from __future__ import annotations

import heapq
import logging
import zlib
from collections.abc import Mapping
from typing import Any

from kueuetop.kueue.durations import DurationError, parse_duration
from kueuetop.sim.kube.events import KUBELET, EventWriter, NullEvents
from kueuetop.sim.kube.pod_faults import CRASH_LOOP, PodFaults, pod_fault
from kueuetop.sim.kube.scheduler import TERMINAL, PodKey, Scheduler, patch_pod_status
from kueuetop.sim.scenarios.scenario import ANN_RUNTIME
from kueuetop.sim.storage.objectstore import ObjectStore, WatchEvent, rfc3339

_log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEFAULT_RUNTIME = 300.0


def pod_runtime(pod: Mapping[str, Any], default: float = DEFAULT_RUNTIME) -> float:
    """How long a pod runs: its `kueuetop.io/runtime` annotation, else `default`."""
    ann = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANN_RUNTIME)
    if ann is None:
        return default
    try:
        return parse_duration(ann)
    except DurationError:
        _log.warning("pod %s: bad %s %r, using %ss", (pod.get("metadata") or {}).get("name"),
                     ANN_RUNTIME, ann, default)
        return default



class Kubelets:
    """The kubelets of every node: start bound pods, finish them when their runtime is over."""

    name = "kubelets"

    def __init__(self, store: ObjectStore, scheduler: Scheduler, *, default_runtime: float = DEFAULT_RUNTIME,
                 start_delay: float = 0.0, events: EventWriter | None = None) -> None:
        self.store = store
        self.scheduler = scheduler
        self.default_runtime = default_runtime
        self.start_delay = start_delay
        self.events = events or NullEvents()
        self._to_start: dict[PodKey, float] = {}
        self._timers: list[tuple[float, PodKey]] = []
        self.faults = PodFaults(store, self.events, self._patch_status)  # pods a scenario makes fail

    def pod_bound(self, key: PodKey, now: float) -> bool:
        """The scheduler bound this pod: start it after `start_delay` (True: not at once)."""
        self._to_start[key] = now + self.start_delay
        return self.start_delay > 0

    def on_event(self, event: WatchEvent) -> None:
        """After the scheduler's ledger saw the event: a bound Pending pod is started, a
        deleted one forgotten."""
        if event.kind.key != ("", "pods"):
            return
        meta = event.obj.get("metadata") or {}
        key = (meta.get("namespace", ""), meta.get("name", ""))
        if event.type == "DELETED":
            self._to_start.pop(key, None)
            self.faults.forget(key)
            return
        phase = (event.obj.get("status") or {}).get("phase", "Pending")
        if phase in TERMINAL or not (event.obj.get("spec") or {}).get("nodeName"):
            return
        state = self.scheduler.pods.get(key)
        if (state is not None and phase == "Pending" and not state.running and key not in self._to_start
                and key not in self.faults):
            self._to_start[key] = 0.0  # start as soon as possible

    def next_wakeup(self, now: float) -> float | None:
        times = []
        while self._timers:
            t, key = self._timers[0]
            st = self.scheduler.pods.get(key)
            if st is None or st.ends_at != t:
                heapq.heappop(self._timers)  # stale
                continue
            times.append(t)
            break
        if self._to_start:
            times.append(min(self._to_start.values()))
        fault_at = self.faults.next_wakeup()
        if fault_at is not None:
            times.append(fault_at)
        times = [t for t in times if t > now]  # anything due was handled by this instant's reconcile
        return min(times) if times else None

    def start_due(self, now: float) -> bool:
        if not self._to_start:
            return False
        return self._start_due(now)

    def _start_due(self, now: float) -> bool:
        due = [k for k, t in self._to_start.items() if t <= now]
        worked = False
        for key in due:
            del self._to_start[key]
            state = self.scheduler.pods.get(key)
            if state is None or not state.counted:
                continue
            pod = self.store.try_get("", "pods", key[0], key[1], copy=False)
            if pod is None or (pod.get("status") or {}).get("phase", "Pending") != "Pending":
                continue
            fault = pod_fault(pod)
            if fault is not None:
                # The scenario asked this pod's container to fail: it never runs to completion.
                state.running = fault == CRASH_LOOP
                self.faults.start(key, fault, state.node, now)
                worked = True
                continue
            runtime = pod_runtime(pod, self.default_runtime)
            state.running = True
            state.ends_at = now + runtime
            heapq.heappush(self._timers, (state.ends_at, key))
            self._patch_status(key, lambda cur, n=state.node: _running_status(cur, n, now))
            self.events.emit(pod, "Started", "Started container " + _first_container(pod),
                             component=KUBELET, host=state.node)
            worked = True
        return worked

    def finish_due(self, now: float) -> bool:
        worked = False
        while self._timers and self._timers[0][0] <= now:
            t, key = heapq.heappop(self._timers)
            state = self.scheduler.pods.get(key)
            if state is None or state.ends_at != t:
                continue
            self.scheduler.release(key, state)
            self._patch_status(key, lambda cur: _succeeded_status(cur, now))
            worked = True
        return worked


    def _patch_status(self, key: PodKey, fn: Any) -> None:
        patch_pod_status(self.store, key, fn)


class KubeNodes:
    """The kube-scheduler and the kubelets, one controller turn in the order a node sees it:
    PodGC, pods that ended free their node, the scheduler places pods on what is free, the
    pods it bound start, scenario pod faults play. Events reach the scheduler's ledger first."""

    name = "kubelet"

    def __init__(self, store: ObjectStore, *, default_runtime: float = DEFAULT_RUNTIME,
                 start_delay: float = 0.0, events: EventWriter | None = None) -> None:
        self.scheduler = Scheduler(store, events=events)
        self.kubelets = Kubelets(store, self.scheduler, default_runtime=default_runtime,
                                 start_delay=start_delay, events=events)
        self.scheduler.on_bind = self.kubelets.pod_bound

    def on_event(self, event: WatchEvent) -> None:
        self.scheduler.on_event(event)
        try:
            self.kubelets.on_event(event)
        except Exception:  # a malformed object must not break the writer's thread
            _log.exception("kubelet: cannot handle %s %s", event.type, event.kind.kind)

    def reconcile(self, now: float) -> bool:
        worked = self.scheduler.collect_garbage()
        worked = self.kubelets.finish_due(now) or worked
        worked = self.scheduler.schedule(now) or worked
        worked = self.kubelets.start_due(now) or worked
        return self.kubelets.faults.reconcile(now) or worked

    def next_wakeup(self, now: float) -> float | None:
        return self.kubelets.next_wakeup(now)


def _first_container(pod: Obj) -> str:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return str((containers[0] or {}).get("name", "main"))


def _container_statuses(pod: Obj, state: Obj, ready: bool) -> list[Obj]:
    out = []
    for c in (pod.get("spec") or {}).get("containers") or []:
        if not isinstance(c, dict):
            continue
        out.append({"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "",
                    "containerID": f"containerd://{_h(str(pod['metadata'].get('uid')) + str(c.get('name'))):08x}",
                    "ready": ready, "started": ready, "restartCount": 0, "state": state})
    return out


def _running_status(cur: Obj, node: str, now: float) -> Obj:
    t = rfc3339(now)
    status = cur.setdefault("status", {})
    status.update({
        "phase": "Running", "startTime": status.get("startTime") or t, "hostIP": _node_ip(node),
        "podIP": _pod_ip(cur), "qosClass": "Burstable",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None, "lastTransitionTime": t},
            {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": t},
            {"type": "Ready", "status": "True", "lastProbeTime": None, "lastTransitionTime": t},
            {"type": "ContainersReady", "status": "True", "lastProbeTime": None, "lastTransitionTime": t},
            {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": t},
        ],
        "containerStatuses": _container_statuses(cur, {"running": {"startedAt": t}}, True),
    })
    return cur


def _succeeded_status(cur: Obj, now: float) -> Obj:
    t = rfc3339(now)
    status = cur.setdefault("status", {})
    started = status.get("startTime") or t
    status["phase"] = "Succeeded"
    for c in status.get("conditions") or []:
        if c.get("type") in ("Ready", "ContainersReady", "PodReadyToStartContainers"):
            c.update(status="False", lastTransitionTime=t)
            if c["type"] in ("Ready", "ContainersReady"):
                c["reason"] = "PodCompleted"
    status["containerStatuses"] = _container_statuses(
        cur, {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": t}}, False)
    return cur


def _h(text: str) -> int:
    return zlib.crc32(text.encode())  # deterministic, unlike hash()


def _node_ip(node: str) -> str:
    h = _h(node)
    return f"10.128.{(h >> 8) % 256}.{h % 254 + 1}"


def _pod_ip(pod: Obj) -> str:
    h = _h(str((pod.get("metadata") or {}).get("uid", "")))
    return f"10.{64 + (h >> 16) % 64}.{(h >> 8) % 256}.{h % 254 + 1}"

