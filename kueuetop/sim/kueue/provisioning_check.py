"""Kueue's ProvisioningRequest admission check (pkg/controller/admissionchecks/provisioning,
controllerName `kueue.x-k8s.io/provisioning-request`).

An AdmissionCheck of this controller gets `Active=True` when its parameters name an existing
ProvisioningRequestConfig. A Workload holding quota with such a check in
`status.admissionChecks` gets a ProvisioningRequest `<workload>-<check>-<attempt>` (attempt from
1), owned by the Workload, with the config's class and parameters (plus
`provreq.kueue.x-k8s.io/*` annotations), one pod set per needed Workload pod set referencing the
PodTemplate `ppt-<request>-<podset>` (created when the API serves PodTemplates; otherwise only
named). The request's conditions map to the check state as in reference/kueue.md §1.3:
Provisioned → Ready (+ podSetUpdates that make the pods consume the request); Accepted with
Provisioned not True → Pending with the Provisioned message; Failed → Retry (with backoff) while
the attempt ≤ backoffLimitCount, else Rejected; BookingExpired likewise before admission;
CapacityRevoked → Rejected. After a Retry the workload is evicted and requeued by Kueue; the next
reservation creates attempt N+1. Requests of finished workloads are deleted.

The answering side (the cluster autoscaler, GKE's queued provisioning) is the cloud's:
`kueuetop.sim.cloud.provisioning`.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kueuetop.sim.cloud.provisioning import CLASS_ANNOTATION, PR_API, PR_GROUP
from kueuetop.sim.jobs.framework import (
    DEFAULT_PODSET,
    KUEUE_GROUP,
    PROVREQ_ANNOTATION_PREFIX,
    MissingFlavor,
    PodSetInfo,
    merge_into_template,
    meta_of,
    podset_infos,
)
from kueuetop.sim.kube.events import (
    KUEUE,
    EventWriter,
    NullEvents,
    condition_is,
    conditions_of,
    find_condition,
    patch_status,
    set_condition,
)
from kueuetop.sim.kube.scheduler import CONSUME_PROVREQ_ANNOTATION
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent, rfc3339
from kueuetop.sim.work_queue import drain

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

CONTROLLER_NAME = "kueue.x-k8s.io/provisioning-request"
CONFIG_KIND = "ProvisioningRequestConfig"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
POD_TEMPLATE_PREFIX = "ppt"
CHECK_INACTIVE = "the check is not active"
NO_REQUEST_NEEDED = "the provisioning request is not needed"
# Kueue limitObjectName: names over 252 characters are cut and get 5 hex of their sha1.
_MAX_PREFIX = 252 - 5

def limit_object_name(full: str) -> str:
    if len(full) <= _MAX_PREFIX:
        return full
    return f"{full[:_MAX_PREFIX]}-{hashlib.sha1(full.encode()).hexdigest()[:5]}"


def request_name(workload: str, check: str, attempt: int) -> str:
    return limit_object_name(f"{workload}-{check}-{attempt}")


def pod_template_name(request: str, podset: str) -> str:
    return limit_object_name(f"{POD_TEMPLATE_PREFIX}-{request}-{podset}")


def attempt_of(pr_name: str, workload: str, check: str) -> int | None:
    prefix = limit_object_name(f"{workload}-{check}-")
    m = re.fullmatch(re.escape(prefix) + r"([0-9]+)", pr_name)
    return int(m.group(1)) if m else None


def backoff_seconds(retry_count: int, base: int, cap: int) -> int:
    """UpdateAdmissionCheckRequeueState: base·2^(n−1) for the n-th requeue, capped."""
    n = retry_count + 1
    return int(min(base * 2 ** (n - 1), cap))


@dataclass
class _Config:
    name: str
    provisioning_class: str
    parameters: dict[str, str]
    managed_resources: tuple[str, ...]
    backoff_limit: int = 3
    backoff_base: int = 60
    backoff_max: int = 1800
    node_selector_updates: list[tuple[str, str]] = field(default_factory=list)  # (key, detail)
    merge_policy: str = ""


def _config(prc: Obj) -> _Config | None:
    spec = prc.get("spec") or {}
    cls = spec.get("provisioningClassName")
    if not isinstance(cls, str) or not cls:
        return None
    rs = spec.get("retryStrategy") or {}

    def num(key: str, default: int) -> int:
        v = rs.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else default

    updates = []
    for u in ((spec.get("podSetUpdates") or {}).get("nodeSelector") or []):
        if isinstance(u, dict) and u.get("key") and u.get("valueFromProvisioningClassDetail"):
            updates.append((str(u["key"]), str(u["valueFromProvisioningClassDetail"])))
    params = spec.get("parameters") or {}
    return _Config(
        name=meta_of(prc).get("name", ""), provisioning_class=cls,
        parameters={str(k): str(v) for k, v in params.items()} if isinstance(params, dict) else {},
        managed_resources=tuple(str(r) for r in spec.get("managedResources") or []),
        backoff_limit=num("backoffLimitCount", 3), backoff_base=num("backoffBaseSeconds", 60),
        backoff_max=num("backoffMaxSeconds", 1800), node_selector_updates=updates,
        merge_policy=str(spec.get("podSetMergePolicy") or ""))


def _uses(template: Obj, resources: tuple[str, ...]) -> bool:
    spec = template.get("spec") or {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        res = (c or {}).get("resources") or {}
        if any(r in (res.get("requests") or {}) or r in (res.get("limits") or {}) for r in resources):
            return True
    return False


def _limits_as_requests(template: Obj) -> None:
    """workload.UseLimitsAsMissingRequestsInPod."""
    spec = template.get("spec") or {}
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        res = (c or {}).get("resources")
        if not isinstance(res, dict):
            continue
        for r, v in (res.get("limits") or {}).items():
            res.setdefault("requests", {}).setdefault(r, v)



class ProvisioningCheck:
    """Kueue's provisioning admission check controller. `pod_templates` holds the PodTemplates it
    made, by (namespace, name), for an API that does not serve PodTemplates: the autoscaler
    reads them there."""

    name = "provisioning"

    def __init__(self, store: ObjectStore, *, events: EventWriter | None = None) -> None:
        self.store = store
        self.events = events or NullEvents()
        self._dirty_wls: dict[Key, None] = {}
        self._dirty_checks: dict[str, None] = {}
        self._wls_of_check: dict[str, set[Key]] = {}
        self._prs_of_wl: dict[Key, set[str]] = {}
        self.pod_templates: dict[Key, Obj] = {}  # (namespace, PodTemplate name) → template
        self._has_pod_templates = store.serves("", "podtemplates")

    # ------------------------------------------------------------------ events
    def on_event(self, event: WatchEvent) -> None:
        try:
            self._on_event(event)
        except Exception:
            _log.exception("provisioning: cannot handle %s %s", event.type, event.kind.kind)

    def _on_event(self, event: WatchEvent) -> None:
        key = event.kind.key
        m = meta_of(event.obj)
        ns, name = m.get("namespace", ""), m.get("name", "")
        if key == (KUEUE_GROUP, "workloads"):
            wl_key = (ns, name)
            if event.type == "DELETED":
                self._prs_of_wl.pop(wl_key, None)
                return
            checks = {str(c.get("name")) for c in (event.obj.get("status") or {}).get("admissionChecks") or []
                      if isinstance(c, dict)}
            for c in checks:
                self._wls_of_check.setdefault(c, set()).add(wl_key)
            if checks or wl_key in self._prs_of_wl:
                self._dirty_wls[wl_key] = None
        elif key == (PR_GROUP, "provisioningrequests"):
            for r in m.get("ownerReferences") or []:
                if isinstance(r, dict) and r.get("kind") == "Workload":
                    wl_key = (ns, str(r.get("name", "")))
                    prs = self._prs_of_wl.setdefault(wl_key, set())
                    if event.type == "DELETED":
                        prs.discard(name)
                    else:
                        prs.add(name)
                    self._dirty_wls[wl_key] = None
        elif key == (KUEUE_GROUP, "admissionchecks"):
            self._dirty_checks[name] = None
            for wl_key in self._wls_of_check.get(name, ()):
                self._dirty_wls[wl_key] = None
        elif key == (KUEUE_GROUP, "provisioningrequestconfigs"):
            for ac in self.store.list(KUEUE_GROUP, "admissionchecks", copy=False)[0]:
                if ((ac.get("spec") or {}).get("parameters") or {}).get("name") == name:
                    self._dirty_checks[meta_of(ac).get("name", "")] = None
                    for wl_key in self._wls_of_check.get(meta_of(ac).get("name", ""), ()):
                        self._dirty_wls[wl_key] = None

    # ------------------------------------------------------------------ reconcile
    def reconcile(self, now: float) -> bool:
        worked = False
        while self._dirty_checks:
            name = next(iter(self._dirty_checks))
            del self._dirty_checks[name]
            worked = self._reconcile_check(name, now) or worked
        return drain(self._dirty_wls, self._reconcile_workload, now, "provisioning", "workload") or worked

    def next_wakeup(self, now: float) -> float | None:
        return None

    # ------------------------------------------------------------------ Kueue: AdmissionCheck
    def _reconcile_check(self, name: str, now: float) -> bool:
        ac = self.store.try_get(KUEUE_GROUP, "admissionchecks", None, name, copy=False)
        if ac is None or (ac.get("spec") or {}).get("controllerName") != CONTROLLER_NAME:
            return False
        _, error = self._config_for_check(ac)
        status, reason, message = ("True", "Active", "The admission check is active") if error is None \
            else ("False", "BadParametersRef", error)
        cur = find_condition(ac, "Active")
        if cur is not None and cur.get("status") == status:
            return False
        gen = meta_of(ac).get("generation")
        return patch_status(self.store, KUEUE_GROUP, "admissionchecks", None, name,
                            lambda st: set_condition(conditions_of(st), "Active", status, reason, message, now,
                                                     gen if isinstance(gen, int) else None)) is not None

    def _config_for_check(self, ac: Obj) -> tuple[_Config | None, str | None]:
        ref = (ac.get("spec") or {}).get("parameters")
        if not isinstance(ref, dict):
            return None, "missing parameters reference"
        if not ref.get("name"):
            return None, "empty name: bad parameters reference"
        if ref.get("apiGroup") != KUEUE_GROUP:
            return None, f'wrong group "{ref.get("apiGroup", "")}", expecting "{KUEUE_GROUP}": bad parameters reference'
        if ref.get("kind") != CONFIG_KIND:
            return None, f'wrong kind "{ref.get("kind", "")}", expecting "{CONFIG_KIND}": bad parameters reference'
        prc = self.store.try_get(KUEUE_GROUP, "provisioningrequestconfigs", None, str(ref["name"]), copy=False)
        if prc is None:
            return None, f'provisioningrequestconfigs.kueue.x-k8s.io "{ref["name"]}" not found'
        cfg = _config(prc)
        if cfg is None:
            return None, "spec.provisioningClassName: Required value"
        return cfg, None

    # ------------------------------------------------------------------ Kueue: Workload
    def _owned_prs(self, key: Key) -> list[Obj]:
        out = []
        for name in sorted(self._prs_of_wl.get(key, ())):
            pr = self.store.try_get(PR_GROUP, "provisioningrequests", key[0], name, copy=False)
            if pr is not None:
                out.append(pr)
        return out

    def _reconcile_workload(self, key: Key, now: float) -> bool:
        wl = self.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False)
        if wl is None:
            return False
        finished = condition_is(wl, "Finished")
        evicted = condition_is(wl, "Evicted")
        if not condition_is(wl, "QuotaReserved") and not finished and not evicted:
            return False
        owned = self._owned_prs(key)
        if finished:
            return self._delete_prs(owned, keep=set())
        if evicted:
            return False
        configs: dict[str, _Config | None] = {}
        for c in (wl.get("status") or {}).get("admissionChecks") or []:
            name = str((c or {}).get("name", ""))
            ac = self.store.try_get(KUEUE_GROUP, "admissionchecks", None, name, copy=False)
            if ac is None or (ac.get("spec") or {}).get("controllerName") != CONTROLLER_NAME:
                continue
            cfg, _ = self._config_for_check(ac)
            configs[name] = cfg
        if not configs:
            return False
        active: dict[str, Obj] = {}
        for check, cfg in configs.items():
            if cfg is None or not self._needed(wl, cfg):
                continue
            best = None
            for pr in owned:
                attempt = attempt_of(meta_of(pr).get("name", ""), key[1], check)
                if attempt is None or not _synced(pr, cfg):
                    continue
                if best is None or attempt > best[0]:
                    best = (attempt, pr)
            if best is not None:
                active[check] = best[1]
        worked = self._sync_check_states(key, wl, configs, active, now)
        keep = {meta_of(pr).get("name", "") for pr in active.values()}
        worked = self._delete_prs(owned, keep) or worked
        wl = self.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False) or wl
        return self._create_requests(key, wl, configs, active, now) or worked

    def _needed(self, wl: Obj, cfg: _Config) -> bool:
        """reqIsNeeded: some pod set with pods uses a managed resource (any, when none listed)."""
        counts = {psa.get("name"): psa.get("count") for psa in
                  ((wl.get("status") or {}).get("admission") or {}).get("podSetAssignments") or []
                  if isinstance(psa, dict)}
        for ps in (wl.get("spec") or {}).get("podSets") or []:
            if not isinstance(ps, dict):
                continue
            count = ps.get("count", 1)
            if not isinstance(count, int) or count <= 0:
                continue
            if cfg.managed_resources and not _uses(ps.get("template") or {}, cfg.managed_resources):
                continue
            admitted = counts.get(ps.get("name", DEFAULT_PODSET), count)
            if admitted is None or (isinstance(admitted, int) and admitted > 0):
                return True
        return False

    def _sync_check_states(self, key: Key, wl: Obj, configs: Mapping[str, _Config | None],
                           active: Mapping[str, Obj], now: float) -> bool:
        admitted = condition_is(wl, "Admitted")
        active_wl = (wl.get("spec") or {}).get("active") is not False
        messages: list[str] = []

        def update(status: Obj) -> bool:
            changed = False
            for check in status.get("admissionChecks") or []:
                if not isinstance(check, dict) or check.get("name") not in configs:
                    continue
                name = str(check["name"])
                before = check.get("state", "Pending")
                changed = self._sync_one(check, key[1], name, configs[name], active.get(name), wl,
                                         admitted, active_wl, now) or changed
                if check.get("state") != before:
                    check["lastTransitionTime"] = rfc3339(now)
                    msg = f"Admission check {name} updated state from {before} to {check.get('state')}"
                    if check.get("message"):
                        msg += f" with message: {check['message']}"
                    messages.append(msg)
            return changed

        worked = False
        if self._would_change(wl, update):
            worked = patch_status(self.store, KUEUE_GROUP, "workloads", key[0], key[1], update) is not None
        for msg in messages if worked else []:
            self.events.emit(wl, "AdmissionCheckUpdated", msg, component=KUEUE)
        return worked

    @staticmethod
    def _would_change(wl: Obj, update: Any) -> bool:
        probe = copy.deepcopy(wl.get("status") or {})
        return bool(update(probe))

    def _sync_one(self, check: Obj, wl_name: str, name: str, cfg: _Config | None, pr: Obj | None, wl: Obj,
                  admitted: bool, active_wl: bool, now: float) -> bool:
        def put(state: str | None = None, message: str | None = None) -> bool:
            changed = False
            if state is not None and check.get("state") != state:
                check["state"] = state
                changed = True
            if message is not None and check.get("message", "") != message:
                check["message"] = message
                changed = True
            return changed

        if cfg is None:
            return put("Pending", CHECK_INACTIVE)
        if not self._needed(wl, cfg):
            if check.get("state") != "Ready":
                check.pop("podSetUpdates", None)
                return put("Ready", NO_REQUEST_NEEDED)
            return False
        if pr is None:
            return False
        attempt = attempt_of(meta_of(pr).get("name", ""), wl_name, name) or 1
        retries = int(check.get("retryCount") or 0)
        failed = find_condition(pr, "Failed")
        expired = find_condition(pr, "BookingExpired")
        revoked = find_condition(pr, "CapacityRevoked")
        provisioned = find_condition(pr, "Provisioned")
        if failed is not None and failed.get("status") == "True":
            return self._retry_or_reject(check, put, attempt, retries, cfg, "Retrying after failure: ",
                                         str(failed.get("message", "")))
        if revoked is not None and revoked.get("status") == "True":
            if active_wl and not condition_is(wl, "Finished"):
                return put("Rejected", str(revoked.get("message", "")))
            return False
        if expired is not None and expired.get("status") == "True":
            if not admitted:
                return self._retry_or_reject(check, put, attempt, retries, cfg, "Retrying after booking expired: ",
                                             str(expired.get("message", "")))
            return False
        if provisioned is not None and provisioned.get("status") == "True":
            if check.get("state") != "Ready":
                check["podSetUpdates"] = self._pod_set_updates(wl, pr, cfg)
                put("Ready", str(provisioned.get("message", "")))
                return True
            return False
        if condition_is(pr, "Accepted"):
            if provisioned is not None:
                return put("Pending", str(provisioned.get("message", "")))
            return False
        return put("Pending", "")

    @staticmethod
    def _retry_or_reject(check: Obj, put: Any, attempt: int, retries: int, cfg: _Config, prefix: str,
                         message: str) -> bool:
        if attempt <= cfg.backoff_limit:
            changed = put(None, prefix + message)
            if attempt > retries:  # don't retry on an old request
                changed = put("Retry") or changed
                check["requeueAfterSeconds"] = backoff_seconds(retries, cfg.backoff_base, cfg.backoff_max)
                changed = True
            return changed
        return put("Rejected", message)

    @staticmethod
    def _pod_set_updates(wl: Obj, pr: Obj, cfg: _Config) -> list[Obj]:
        pr_name = meta_of(pr).get("name", "")
        by_template = {pod_template_name(pr_name, str(ps.get("name", DEFAULT_PODSET))): str(ps.get("name", DEFAULT_PODSET))
                       for ps in (wl.get("spec") or {}).get("podSets") or [] if isinstance(ps, dict)}
        details = (pr.get("status") or {}).get("provisioningClassDetails") or {}
        out = []
        for ps in (pr.get("spec") or {}).get("podSets") or []:
            ref = str(((ps or {}).get("podTemplateRef") or {}).get("name", ""))
            update: Obj = {"name": by_template.get(ref, ref),
                           "annotations": {CONSUME_PROVREQ_ANNOTATION: pr_name,
                                           CLASS_ANNOTATION: str((pr.get("spec") or {}).get("provisioningClassName", ""))}}
            if cfg.node_selector_updates:
                update["nodeSelector"] = {k: str(details[d]) for k, d in cfg.node_selector_updates if d in details}
            out.append(update)
        return out

    def _delete_prs(self, owned: list[Obj], keep: set[str]) -> bool:
        worked = False
        for pr in owned:
            m = meta_of(pr)
            if m.get("name") in keep:
                continue
            with contextlib.suppress(StoreError):
                self.store.delete(PR_GROUP, "provisioningrequests", m.get("namespace"), m.get("name", ""))
                worked = True
            for ps in (pr.get("spec") or {}).get("podSets") or []:
                ref = str(((ps or {}).get("podTemplateRef") or {}).get("name", ""))
                self.pod_templates.pop((m.get("namespace", ""), ref), None)
        return worked

    def _create_requests(self, key: Key, wl: Obj, configs: Mapping[str, _Config | None],
                         active: dict[str, Obj], now: float) -> bool:
        if not condition_is(wl, "QuotaReserved"):
            return False
        states = {str(c.get("name")): c for c in (wl.get("status") or {}).get("admissionChecks") or []
                  if isinstance(c, dict)}
        worked = False
        for check, cfg in sorted(configs.items()):
            if cfg is None or not self._needed(wl, cfg):
                continue
            state = states.get(check)
            if state is not None and state.get("state") == "Ready":
                continue
            attempt = int((state or {}).get("retryCount") or 0) + 1
            pr = active.get(check)
            if pr is not None:
                retryable = condition_is(pr, "Failed") or (condition_is(pr, "BookingExpired")
                                                           and not condition_is(wl, "Admitted"))
                if not (retryable and state is not None and state.get("state") == "Pending"):
                    continue
                attempt = (attempt_of(meta_of(pr).get("name", ""), key[1], check) or 1) + 1
            worked = self._create_request(key, wl, check, cfg, attempt, now) or worked
        return worked

    def _merged_pod_sets(self, wl: Obj, cfg: _Config) -> list[tuple[str, Obj, int]]:
        """mergePodSets: (name, template with admission applied, count) per needed pod set."""
        try:
            infos = {i.name: i for i in podset_infos(self.store, wl)}
        except MissingFlavor:
            infos = {}
        out: list[tuple[str, Obj, int]] = []
        for ps in (wl.get("spec") or {}).get("podSets") or []:
            if not isinstance(ps, dict):
                continue
            name = str(ps.get("name", DEFAULT_PODSET))
            template = copy.deepcopy(ps.get("template") or {})
            if cfg.managed_resources and not _uses(template, cfg.managed_resources):
                continue
            info = infos.get(name)
            count = info.count if info is not None else int(ps.get("count", 1) or 0)
            if count <= 0:
                continue
            if info is not None:
                # FromAssignment only: flavors' nodeLabels and tolerations (no podset labels).
                merge_into_template(template, PodSetInfo(name, count, dict(info.node_selector),
                                                         list(info.tolerations)))
            _limits_as_requests(template)
            for i, (other, other_tpl, n) in enumerate(out):
                if cfg.merge_policy and _mergeable(other_tpl, template, cfg.merge_policy):
                    out[i] = (other, other_tpl, n + count)
                    break
            else:
                out.append((name, template, count))
        return out

    def _create_request(self, key: Key, wl: Obj, check: str, cfg: _Config, attempt: int, now: float) -> bool:
        name = request_name(key[1], check, attempt)
        params = dict(cfg.parameters)
        for k, v in (meta_of(wl).get("annotations") or {}).items():
            if k.startswith(PROVREQ_ANNOTATION_PREFIX):
                params[k[len(PROVREQ_ANNOTATION_PREFIX):]] = str(v)
        pod_sets = []
        for ps_name, template, count in self._merged_pod_sets(wl, cfg):
            pt_name = pod_template_name(name, ps_name)
            self.pod_templates[(key[0], pt_name)] = template
            if self._has_pod_templates:
                self._create_pod_template(key[0], pt_name, template, wl)
            pod_sets.append({"podTemplateRef": {"name": pt_name}, "count": count})
        wm = meta_of(wl)
        pr: Obj = {
            "apiVersion": PR_API, "kind": "ProvisioningRequest",
            "metadata": {"name": name, "namespace": key[0], "labels": {MANAGED_LABEL: "true"},
                         "ownerReferences": [{"apiVersion": wl.get("apiVersion", "kueue.x-k8s.io/v1beta2"),
                                              "kind": "Workload", "name": key[1], "uid": wm.get("uid", ""),
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"provisioningClassName": cfg.provisioning_class, "podSets": pod_sets},
        }
        if params:
            pr["spec"]["parameters"] = params
        try:
            self.store.create(PR_GROUP, "provisioningrequests", pr)
        except StoreError as exc:
            if exc.code != 409:
                self.events.emit(wl, "FailedCreate", f'Error creating ProvisioningRequest "{name}": {exc.message}',
                                 type_="Warning", component=KUEUE)
            return False
        self._prs_of_wl.setdefault(key, set()).add(name)
        self.events.emit(wl, "ProvisioningRequestCreated", f'Created ProvisioningRequest: "{name}"', component=KUEUE)
        return True

    def _create_pod_template(self, ns: str, name: str, template: Obj, wl: Obj) -> None:
        obj = {"apiVersion": "v1", "kind": "PodTemplate",
               "metadata": {"name": name, "namespace": ns, "labels": {MANAGED_LABEL: "true"},
                            "ownerReferences": [{"apiVersion": wl.get("apiVersion", ""), "kind": "Workload",
                                                 "name": meta_of(wl).get("name", ""),
                                                 "uid": meta_of(wl).get("uid", ""), "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "template": template}
        # Exists already (a retry) or refused: the request still names it.
        with contextlib.suppress(StoreError):
            self.store.create("", "podtemplates", obj)



def _synced(pr: Obj, cfg: _Config) -> bool:
    """provReqSyncedWithConfig: same class, and every config parameter present with its value."""
    spec = pr.get("spec") or {}
    if spec.get("provisioningClassName") != cfg.provisioning_class:
        return False
    params = spec.get("parameters") or {}
    return all(str(params.get(k)) == v for k, v in cfg.parameters.items())


def _mergeable(a: Obj, b: Obj, policy: str) -> bool:
    if policy == "IdenticalPodTemplates":
        return a == b
    if policy == "IdenticalWorkloadSchedulingRequirements":
        sa, sb = a.get("spec") or {}, b.get("spec") or {}

        def reqs(spec: Obj, key: str) -> list[Any]:
            return [((c or {}).get("resources") or {}).get("requests") for c in spec.get(key) or []]

        return all(reqs(sa, k) == reqs(sb, k) for k in ("containers", "initContainers")) and all(
            sa.get(k) == sb.get(k) for k in ("resources", "nodeSelector", "tolerations", "affinity", "resourceClaims"))
    return False



