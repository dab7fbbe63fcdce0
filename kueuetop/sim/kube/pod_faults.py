"""Container faults a scenario asks for: image pulls that fail, containers that crash.

A Job, Pod or Workload annotated `kueuetop.io/fault: ImagePullBackOff` (or `CrashLoopBackOff`)
gets pods whose first container never becomes ready, reported the way the kubelet reports it:

* ImagePullBackOff: the pod stays `Pending` on its node, its container `waiting` with reason
  `ErrImagePull` (right after a pull) then `ImagePullBackOff`; Events `Pulling`, `Failed`
  (containerd's NotFound text, then `Error: ErrImagePull`), `BackOff` ("Back-off pulling image")
  and `Failed` (`Error: ImagePullBackOff`). Pulls are retried after the kubelet's back-off,
  10 s doubling up to 5 min (kubelet's `backOffPeriod` / `MaxContainerBackOff`).
* CrashLoopBackOff: the pod is `Running` but not Ready; the container starts (`Pulled`,
  `Created`, `Started`), exits with code 1 a few seconds later, and waits with reason
  `CrashLoopBackOff` ("back-off 10s restarting failed container=…"), `restartCount` growing and
  a Warning `BackOff` Event ("Back-off restarting failed container main in pod NAME_NS(UID)").

Such pods never finish: they hold their node's resources until deleted (Kueue's
waitForPodsReady timeout evicts their workload, which is the point of asking for them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kueuetop.sim.kube.events import KUBELET, EventWriter
from kueuetop.sim.storage.objectstore import ObjectStore, rfc3339

Obj = dict[str, Any]
PodKey = tuple[str, str]

ANN_FAULT = "kueuetop.io/fault"
IMAGE_PULL = "ImagePullBackOff"
CRASH_LOOP = "CrashLoopBackOff"
FAULTS = (IMAGE_PULL, CRASH_LOOP)
BACKOFF_BASE = 10.0  # kubelet: backOffPeriod
BACKOFF_MAX = 300.0  # kubelet: MaxContainerBackOff
CRASH_AFTER = 5.0  # simulated seconds a crashing container runs before it exits
_PULL_TO_BACKOFF = 1.0  # the next pod sync after a failed pull reports the back-off


def pod_fault(pod: Mapping[str, Any]) -> str | None:
    """The fault asked for on this pod (its annotation), or None."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    value = ann.get(ANN_FAULT) if isinstance(ann, Mapping) else None
    return value if value in FAULTS else None


def backoff(attempt: int) -> float:
    """Seconds before retry number `attempt` (1-based): 10 s doubling, at most 5 min."""
    return min(BACKOFF_MAX, BACKOFF_BASE * (2 ** max(0, attempt - 1)))


@dataclass
class _Faulty:
    fault: str
    node: str
    attempt: int  # pulls tried / container starts so far
    next_at: float
    phase: str  # what happens at next_at: "pull", "backoff", "start", "crash"


class PodFaults:
    """Drives the faulty pods' container states over time (part of the kubelet)."""

    def __init__(self, store: ObjectStore, events: EventWriter,
                 patch_status: Callable[[PodKey, Callable[[Obj], Obj]], None]) -> None:
        self.store = store
        self.events = events
        self._patch_status = patch_status
        self._pods: dict[PodKey, _Faulty] = {}

    def start(self, key: PodKey, fault: str, node: str, now: float) -> None:
        first = "pull" if fault == IMAGE_PULL else "start"
        self._pods[key] = _Faulty(fault, node, 0, now, first)

    def forget(self, key: PodKey) -> None:
        self._pods.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def next_wakeup(self) -> float | None:
        return min((f.next_at for f in self._pods.values()), default=None)

    def reconcile(self, now: float) -> bool:
        worked = False
        for key, f in list(self._pods.items()):
            if f.next_at > now:
                continue
            pod = self.store.try_get("", "pods", key[0], key[1], copy=False)
            if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                self._pods.pop(key, None)
                continue
            if f.phase == "pull":
                self._pull_failed(key, pod, f, now)
            elif f.phase == "backoff":
                self._pull_backoff(key, pod, f, now)
            elif f.phase == "start":
                self._container_started(key, pod, f, now)
            else:
                self._container_crashed(key, pod, f, now)
            worked = True
        return worked

    # ------------------------------------------------------------------ image pulls
    def _pull_failed(self, key: PodKey, pod: Obj, f: _Faulty, now: float) -> None:
        f.attempt += 1
        image = _image(pod)
        # containerd's answer for a tag that does not exist, as the kubelet relays it.
        detail = (f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
                  f'failed to resolve reference "{image}": {image}: not found')
        self._emit(pod, f, "Pulling", f'Pulling image "{image}"')
        self._emit(pod, f, "Failed", f'Failed to pull image "{image}": {detail}', warning=True)
        self._emit(pod, f, "Failed", "Error: ErrImagePull", warning=True)
        self._patch_status(key, lambda cur: _waiting_status(cur, f.node, now, "ErrImagePull", detail, 0,
                                                            phase="Pending"))
        f.phase, f.next_at = "backoff", now + _PULL_TO_BACKOFF

    def _pull_backoff(self, key: PodKey, pod: Obj, f: _Faulty, now: float) -> None:
        image = _image(pod)
        message = f'Back-off pulling image "{image}"'
        self._emit(pod, f, "BackOff", message)
        self._emit(pod, f, "Failed", "Error: ImagePullBackOff", warning=True)
        self._patch_status(key, lambda cur: _waiting_status(cur, f.node, now, "ImagePullBackOff", message, 0,
                                                            phase="Pending"))
        f.phase, f.next_at = "pull", now + backoff(f.attempt)

    # ------------------------------------------------------------------ crash loops
    def _container_started(self, key: PodKey, pod: Obj, f: _Faulty, now: float) -> None:
        f.attempt += 1
        name = _container(pod)
        if f.attempt == 1:
            self._emit(pod, f, "Pulled", f'Container image "{_image(pod)}" already present on machine')
        self._emit(pod, f, "Created", f"Created container: {name}")
        self._emit(pod, f, "Started", f"Started container {name}")
        self._patch_status(key, lambda cur: _crash_running_status(cur, f.node, now, f.attempt - 1))
        f.phase, f.next_at = "crash", now + CRASH_AFTER

    def _container_crashed(self, key: PodKey, pod: Obj, f: _Faulty, now: float) -> None:
        meta = pod.get("metadata") or {}
        who = f"{meta.get('name', '')}_{meta.get('namespace', '')}({meta.get('uid', '')})"
        delay = backoff(f.attempt)
        message = f"back-off {int(delay)}s restarting failed container={_container(pod)} pod={who}"
        self._emit(pod, f, "BackOff", f"Back-off restarting failed container {_container(pod)} in pod {who}",
                   warning=True)
        # restartCount is the exited container's own index (kubelet: the runtime's restart count).
        self._patch_status(key, lambda cur: _waiting_status(cur, f.node, now, CRASH_LOOP, message, f.attempt - 1,
                                                            phase="Running", exited_at=now))
        f.phase, f.next_at = "start", now + delay

    def _emit(self, pod: Obj, f: _Faulty, reason: str, message: str, *, warning: bool = False) -> None:
        self.events.emit(pod, reason, message, type_="Warning" if warning else "Normal",
                         component=KUBELET, host=f.node)


def _container(pod: Obj) -> str:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return str((containers[0] or {}).get("name", "main"))


def _image(pod: Obj) -> str:
    containers = (pod.get("spec") or {}).get("containers") or [{}]
    return str((containers[0] or {}).get("image", "") or "busybox")


def _not_ready_conditions(status: Obj, t: str, names: list[str]) -> list[Obj]:
    unready = f"containers with unready status: [{' '.join(names)}]"
    prior = {c.get("type"): c for c in status.get("conditions") or [] if isinstance(c, dict)}

    def since(type_: str, value: str) -> str:
        c = prior.get(type_)
        return c.get("lastTransitionTime", t) if c is not None and c.get("status") == value else t

    return [
        {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": None,
         "lastTransitionTime": since("PodReadyToStartContainers", "True")},
        {"type": "Initialized", "status": "True", "lastProbeTime": None, "lastTransitionTime": since("Initialized", "True")},
        {"type": "Ready", "status": "False", "lastProbeTime": None, "lastTransitionTime": since("Ready", "False"),
         "reason": "ContainersNotReady", "message": unready},
        {"type": "ContainersReady", "status": "False", "lastProbeTime": None,
         "lastTransitionTime": since("ContainersReady", "False"), "reason": "ContainersNotReady", "message": unready},
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": since("PodScheduled", "True")},
    ]


def _statuses(cur: Obj, first_state: Obj, restarts: int, last_state: Obj | None) -> list[Obj]:
    out = []
    for i, c in enumerate((cur.get("spec") or {}).get("containers") or []):
        if not isinstance(c, dict):
            continue
        st: Obj = {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "",
                   "ready": False, "started": False, "restartCount": restarts if i == 0 else 0,
                   "state": first_state if i == 0 else {"waiting": {"reason": "PodInitializing"}}}
        if i == 0 and last_state is not None:
            st["lastState"] = last_state
        out.append(st)
    return out


def _waiting_status(cur: Obj, node: str, now: float, reason: str, message: str, restarts: int, *,
                    phase: str, exited_at: float | None = None) -> Obj:
    t = rfc3339(now)
    status = cur.setdefault("status", {})
    names = [str(c.get("name", "")) for c in (cur.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    last = None
    if exited_at is not None:
        prev = _first_status(status)
        started = (((prev or {}).get("state") or {}).get("running") or {}).get("startedAt", t)
        last = {"terminated": {"exitCode": 1, "reason": "Error", "startedAt": started, "finishedAt": t}}
    status.update({"phase": phase, "startTime": status.get("startTime") or t,
                   "conditions": _not_ready_conditions(status, t, names),
                   "containerStatuses": _statuses(cur, {"waiting": {"reason": reason, "message": message}},
                                                  restarts, last)})
    return cur


def _crash_running_status(cur: Obj, node: str, now: float, restarts: int) -> Obj:
    t = rfc3339(now)
    status = cur.setdefault("status", {})
    names = [str(c.get("name", "")) for c in (cur.get("spec") or {}).get("containers") or [] if isinstance(c, dict)]
    prev = _first_status(status)
    last = (prev or {}).get("lastState")
    # Ready stays False: the container never lives long enough to pass its readiness check.
    status.update({"phase": "Running", "startTime": status.get("startTime") or t,
                   "conditions": _not_ready_conditions(status, t, names),
                   "containerStatuses": _statuses(cur, {"running": {"startedAt": t}}, restarts, last)})
    return cur


def _first_status(status: Obj) -> Obj | None:
    sts = status.get("containerStatuses")
    return sts[0] if isinstance(sts, list) and sts and isinstance(sts[0], dict) else None
