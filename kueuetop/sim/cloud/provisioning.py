"""ProvisioningRequests answered by the cloud: cluster-autoscaler's provisioning classes and GKE's
queued provisioning (Dynamic Workload Scheduler). Kueue's side, which creates the requests from
a Workload's admission check, is `kueuetop.sim.kueue.provisioning_check`.

  once; while the matching queued-provisioning pool cannot grow enough (maxSize, capacity limit
  over time, requests ahead in the queue) `Provisioned=False reason ResourcePoolExhausted`;
  then the pool scales up and after its provisioningDelay the nodes appear with
  `Provisioned=True reason Provisioned`. Wording from GKE (seeds/000).
* `best-effort-atomic-scale-up.autoscaling.x-k8s.io`: the same all-or-nothing scale-up on
  ordinary autoscaling pools, with the open-source autoscaler's reasons (CapacityIsNotFound,
  CapacityIsProvisioned).
* `check-capacity.autoscaling.x-k8s.io`: `Provisioned=True reason CapacityIsFound` when the pods
  fit the free capacity right now, else `False reason CapacityIsNotFound` (rechecked whenever
  capacity changes); never scales. Requests checked in one pass, oldest first, take capacity in
  turn: a found one's pods are booked before the next is checked (cluster-autoscaler's
  checkcapacity provisioning class commits each found request to its cluster snapshot), and stay
  booked in later passes until they are bound or `BOOKING_SECONDS` have gone by (its
  provisioning-request pods injector: booked capacity, `DefaultReservationTime`).

The pool serving a request is one whose node template accepts the request's pods as Kueue sends
them (the flavor's nodeLabels merged into the template, e.g. `cloud.google.com/gke-nodepool`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.fields import Fields
from kueuetop.kueue.pod_requests import parse_pod_shape
from kueuetop.kueue.scheduling_terms import Toleration
from kueuetop.sim.cloud.node_pools import NodePoolController, ScaleUp
from kueuetop.sim.kube.events import (
    CLUSTER_AUTOSCALER,
    EventWriter,
    NullEvents,
    condition_is,
    conditions_of,
    find_condition,
    patch_status,
    set_condition,
)
from kueuetop.sim.kube.scheduler import QUEUED_TAINT, Placement, Scheduler
from kueuetop.sim.storage.objectstore import ObjectStore, WatchEvent

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

PR_GROUP = "autoscaling.x-k8s.io"
PR_API = "autoscaling.x-k8s.io/v1"
CHECK_CAPACITY = "check-capacity.autoscaling.x-k8s.io"
BEST_EFFORT_ATOMIC = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
QUEUED_PROVISIONING = "queued-provisioning.gke.io"
CLASS_ANNOTATION = "autoscaling.x-k8s.io/provisioning-class-name"

# What the autoscalers write (cluster-autoscaler provisioningrequest/conditions; GKE, seeds/000).
MSG_QUEUED = "Provisioning Request was successfully queued."
MSG_EXHAUSTED = "Waiting for resources. Currently there are not enough resources available to fulfill the request."
MSG_PROVISIONED = "Provisioning Request was successfully provisioned."
MSG_CA_ACCEPTED = "ProvisioningRequest is accepted by ClusterAutoscaler"
MSG_FOUND = "Capacity is found in the cluster"
MSG_NOT_FOUND = "Capacity is not found, CA will try to find it later."
MSG_NO_RETRY = "CA could not find requested capacity"
BOOKING_SECONDS = 600.0  # cluster-autoscaler provreq DefaultReservationTime: found capacity held for the pods
CONSUME_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"



class ProvisioningAutoscaler:
    """Answers ProvisioningRequests: accepts them, scales node pools all-or-nothing (queued
    provisioning, best-effort atomic scale-up) or checks free capacity (check-capacity), and
    sets Provisioned/Failed. `pod_templates` are templates known without the API (see
    `ProvisioningCheck.pod_templates`), looked up before the served PodTemplates."""

    name = "provisioning-autoscaler"

    def __init__(self, store: ObjectStore, scheduler: Scheduler, pools: NodePoolController, *,
                 pod_templates: Mapping[Key, Obj] | None = None, events: EventWriter | None = None) -> None:
        self.store = store
        self.scheduler = scheduler
        self.pools = pools
        self.events = events or NullEvents()
        self._dirty_prs: dict[Key, None] = {}
        self._waiting: dict[Key, None] = {}  # requests the autoscaler will look at again
        self._in_flight: dict[Key, list[ScaleUp]] = {}
        self._templates: Mapping[Key, Obj] = pod_templates if pod_templates is not None else {}
        self._capacity_changed = False
        self._retry_at: float | None = None
        self._has_pod_templates = store.serves("", "podtemplates")
        # check-capacity requests found, with their pods and until when their capacity is held
        self._booked: dict[Key, tuple[list[Placement], float]] = {}

    # ------------------------------------------------------------------ events
    def on_event(self, event: WatchEvent) -> None:
        try:
            self._on_event(event)
        except Exception:
            _log.exception("provisioning: cannot handle %s %s", event.type, event.kind.kind)

    def _on_event(self, event: WatchEvent) -> None:
        key = event.kind.key
        if key == (PR_GROUP, "provisioningrequests"):
            m = event.obj.get("metadata") or {}
            pr_key = (m.get("namespace", ""), m.get("name", ""))
            if event.type == "DELETED":
                self._waiting.pop(pr_key, None)
                self._in_flight.pop(pr_key, None)
                self._booked.pop(pr_key, None)
            else:
                self._dirty_prs[pr_key] = None
        elif key == ("", "nodes") or (key == ("", "pods") and (
                event.type == "DELETED" or (event.obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"))):
            self._capacity_changed = True

    # ------------------------------------------------------------------ reconcile
    def reconcile(self, now: float) -> bool:
        if self._capacity_changed:
            self._capacity_changed = False
            for k in self._waiting:
                self._dirty_prs[k] = None
        for k, scale_ups in self._in_flight.items():
            if all(s.done for s in scale_ups):
                self._dirty_prs[k] = None
        if self._retry_at is not None and self._retry_at <= now:
            self._retry_at = None
            for k in self._waiting:
                self._dirty_prs[k] = None
        if not self._dirty_prs:
            return False
        keys = sorted(self._dirty_prs, key=self._pr_order)
        self._dirty_prs.clear()
        return self._autoscale(keys, now)

    def next_wakeup(self, now: float) -> float | None:
        times = [s.ready_at for ups in self._in_flight.values() for s in ups if not s.done]
        if self._retry_at is not None and self._waiting:
            times.append(self._retry_at)
        times = [t for t in times if t > now]
        return min(times) if times else None


    def _pr_order(self, key: Key) -> tuple[str, str, str]:
        pr = self.store.try_get(PR_GROUP, "provisioningrequests", key[0], key[1], copy=False)
        return (str(_meta(pr).get("creationTimestamp", "")) if pr else "", key[0], key[1])

    def _placements(self, pr: Obj, queued: bool) -> list[Placement] | None:
        ns = _meta(pr).get("namespace", "")
        extra = (Toleration(QUEUED_TAINT, "Exists", "", "NoSchedule"),) if queued else ()
        out: list[Placement] = []
        for ps in (pr.get("spec") or {}).get("podSets") or []:
            if not isinstance(ps, dict):
                return None
            ref = str((ps.get("podTemplateRef") or {}).get("name", ""))
            template = self._templates.get((ns, ref))
            if template is None and self._has_pod_templates:
                obj = self.store.try_get("", "podtemplates", ns, ref, copy=False)
                template = (obj or {}).get("template")
            if not isinstance(template, dict):
                return None
            try:
                shape = parse_pod_shape(Fields(template.get("spec") or {}, "PodTemplate", "template.spec"))
            except KueueParseError:
                return None
            count = ps.get("count", 0)
            out.extend([Placement.from_shape(shape, extra)] * (count if isinstance(count, int) else 0))
        return out

    def _autoscale(self, keys: list[Key], now: float) -> bool:
        worked = False
        blocked_pools: set[str] = set()  # queued requests ahead of this one are waiting there
        booked: dict[str, dict[str, int]] = {}  # free capacity less what found requests hold
        for key in keys:
            pr = self.store.try_get(PR_GROUP, "provisioningrequests", key[0], key[1], copy=False)
            if pr is None:
                continue
            cls = str((pr.get("spec") or {}).get("provisioningClassName", ""))
            try:
                if cls == CHECK_CAPACITY:
                    worked = self._check_capacity(key, pr, now, booked) or worked
                elif cls in (QUEUED_PROVISIONING, BEST_EFFORT_ATOMIC):
                    worked = self._scale_for(key, pr, cls, now, blocked_pools) or worked
            except (AttributeError, TypeError, ValueError, KeyError) as exc:
                _log.warning("provisioning: skipping malformed request %s/%s: %r", *key, exc)
            except Exception:
                _log.exception("provisioning: request %s/%s failed", *key)
        return worked

    def _set(self, key: Key, pr: Obj, type_: str, status: str, reason: str, message: str, now: float) -> bool:
        c = find_condition(pr, type_)
        if c is not None and (c.get("status"), c.get("reason"), c.get("message")) == (status, reason, message):
            return False
        gen = _meta(pr).get("generation")
        return patch_status(self.store, PR_GROUP, "provisioningrequests", key[0], key[1],
                            lambda st: set_condition(conditions_of(st), type_, status, reason, message, now,
                                                     gen if isinstance(gen, int) else None)) is not None

    def _accept(self, key: Key, pr: Obj, cls: str, now: float) -> bool:
        if condition_is(pr, "Accepted"):
            return False
        if cls == QUEUED_PROVISIONING:
            return self._set(key, pr, "Accepted", "True", "SuccessfullyQueued", MSG_QUEUED, now)
        return self._set(key, pr, "Accepted", "True", "Accepted", MSG_CA_ACCEPTED, now)

    def _check_capacity(self, key: Key, pr: Obj, now: float, booked: dict[str, dict[str, int]]) -> bool:
        worked = self._accept(key, pr, CHECK_CAPACITY, now)
        if condition_is(pr, "Provisioned") or condition_is(pr, "Failed"):
            self._waiting.pop(key, None)
            return worked
        placements = self._placements(pr, queued=False)
        if placements is None:
            return worked
        if not booked:
            booked.update(self._unbooked(now))
        trial = {n: dict(f) for n, f in booked.items()}
        if self.scheduler.simulate(placements, trial) >= len(placements):
            booked.update(trial)  # found: its pods hold that capacity for the requests after it
            self._booked[key] = (placements, now + BOOKING_SECONDS)
            self._waiting.pop(key, None)
            return self._set(key, pr, "Provisioned", "True", "CapacityIsFound", MSG_FOUND, now) or worked
        return self._not_found(key, pr, now) or worked

    def _unbooked(self, now: float) -> dict[str, dict[str, int]]:
        """Free capacity per node less what found check-capacity requests still hold: their pods
        not bound yet, while the booking lasts."""
        free = self.scheduler.free_now()
        if not self._booked:
            return free
        bound: dict[Key, int] = {}
        for pod in self.store.list("", "pods", copy=False)[0]:
            m = pod.get("metadata") or {}
            pr = (m.get("annotations") or {}).get(CONSUME_ANNOTATION)
            if pr and (pod.get("spec") or {}).get("nodeName"):
                k = (m.get("namespace", ""), str(pr))
                bound[k] = bound.get(k, 0) + 1
        for key, (placements, until) in list(self._booked.items()):
            left = placements[bound.get(key, 0):]
            if until <= now or not left:
                del self._booked[key]
                continue
            self.scheduler.simulate(left, free)
        return free

    def _not_found(self, key: Key, pr: Obj, now: float) -> bool:
        """No capacity: Provisioned=False (retried while capacity changes), or with the
        `noRetry: "true"` parameter Failed=True, which Kueue's check turns into Retry/Rejected
        (cluster-autoscaler setCapacityNotFoundCondition)."""
        if str(((pr.get("spec") or {}).get("parameters") or {}).get("noRetry", "")) == "true":
            self._waiting.pop(key, None)
            return self._set(key, pr, "Failed", "True", "CapacityIsNotFound", MSG_NO_RETRY, now)
        self._waiting[key] = None
        return self._set(key, pr, "Provisioned", "False", "CapacityIsNotFound", MSG_NOT_FOUND, now)

    def _scale_for(self, key: Key, pr: Obj, cls: str, now: float, blocked: set[str]) -> bool:
        worked = self._accept(key, pr, cls, now)
        if condition_is(pr, "Provisioned") or condition_is(pr, "Failed"):
            self._waiting.pop(key, None)
            return worked
        queued = cls == QUEUED_PROVISIONING
        in_flight = self._in_flight.get(key)
        if in_flight is not None:
            if not all(s.done for s in in_flight):
                return worked
            del self._in_flight[key]
            self._waiting.pop(key, None)
            if queued:
                return self._set(key, pr, "Provisioned", "True", "Provisioned", MSG_PROVISIONED, now) or worked
            return self._set(key, pr, "Provisioned", "True", "CapacityIsProvisioned", MSG_FOUND, now) or worked
        placements = self._placements(pr, queued)
        if placements is None:
            return worked
        plan = self._plan(placements, queued, now, blocked)
        if plan is None:
            self._waiting[key] = None
            self._note_retry(placements, queued, now)
            if queued:
                return self._set(key, pr, "Provisioned", "False", "ResourcePoolExhausted", MSG_EXHAUSTED, now) or worked
            return self._not_found(key, pr, now) or worked
        self._waiting.pop(key, None)
        owner = f"{key[0]}/{key[1]}"
        self._in_flight[key] = [self.pools.request_nodes(pool, n, now, owner) for pool, n in plan.items() if n]
        if not self._in_flight[key]:
            self._in_flight[key] = [ScaleUp("", 0, now, owner, done=True)]
        self.events.emit(pr, "TriggeredScaleUp", f"Provisioning Request triggered scale-up: {dict(plan)}",
                         component=CLUSTER_AUTOSCALER)
        return True

    def _plan(self, placements: list[Placement], queued: bool, now: float, blocked: set[str]) -> dict[str, int] | None:
        """Nodes to add per pool so every pod gets a fresh node (all or nothing), or None."""
        by_pool: dict[str, list[Placement]] = {}
        for p in placements:
            pools = self.pools.pools_for(p, queued=queued)
            if not queued:
                pools = [n for n in pools if self.pools.pools[n].autoscaling]
            if not pools:
                return None
            by_pool.setdefault(pools[0], []).append(p)
        plan: dict[str, int] = {}
        for pool, ps in by_pool.items():
            needed = self.pools.nodes_needed(pool, ps)
            if needed is None or pool in blocked or needed > self.pools.room(pool, now):
                blocked.add(pool)  # FIFO: later requests for this pool wait behind this one
                return None
            plan[pool] = needed
        return plan

    def _note_retry(self, placements: list[Placement], queued: bool, now: float) -> None:
        """Look again when the capacity limit of a pool that could serve these pods changes."""
        pools = {n for p in placements[:1] for n in self.pools.pools_for(p, queued=queued)}
        times = [t for t in (self.pools.next_limit_change(n, now) for n in pools) if t is not None]
        if times:
            t = min(times)
            self._retry_at = t if self._retry_at is None else min(self._retry_at, t)



def _meta(obj: Obj | None) -> Obj:
    return (obj or {}).get("metadata") or {}

