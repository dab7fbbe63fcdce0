"""Kueue's batch/v1 Job integration (built on `sim.jobs.framework`), a minimal Job controller, and Workloads created directly.

Job integration (Kueue pkg/controller/jobframework/reconciler.go, jobs/job/job_controller.go):

* A Job labelled `kueue.x-k8s.io/queue-name` gets a Workload `job-<name>-<hash>`
  (GetWorkloadNameForOwnerWithGVK) owned by the Job, labelled with the job UID, with one pod set
  `main` of min(parallelism, completions) pods and the Job's pod template, and the priority of
  its WorkloadPriorityClass label or its pod PriorityClass (ExtractPriority). The Job is kept
  suspended (Kueue's job webhook suspends it on creation) until the Workload is Admitted; then it
  is unsuspended with the admitted flavors' nodeLabels as nodeSelector, their tolerations, the
  podset and queue labels and the admission checks' podSetUpdates (startJob).
* Evicted=True: the Job is suspended again and its template restored (stopJob); once no pod is
  active, the quota is released (`status_updates.release_quota`). Job Complete → Workload
  Finished=True reason Succeeded. PodsReady follows the Job's ready + succeeded pods.

Job controller (k8s.io/kubernetes pkg/controller/job, the parts a batch Job needs): an unsuspended
Job keeps min(parallelism, completions − succeeded) pods, named `<job>-<5 chars>`; suspending
deletes active pods; status counts active/ready/succeeded, startTime/completionTime, and the
Suspended and Complete conditions.

MultiKueue (pkg/controller/admissionchecks/multikueue): a Job whose `spec.managedBy` names
another controller (`kueue.x-k8s.io/multikueue` on the manager) gets no pods here, as the Job
controller skips it (KEP-4368); Kueue still admits and unsuspends it, and its status is copied
from the worker. A Job labelled `kueue.x-k8s.io/prebuilt-workload-name` (the worker's copy)
uses that Workload instead of creating one and becomes its owner
(jobframework ensurePrebuiltWorkloadOwnership); a Workload carrying the
`kueue.x-k8s.io/multikueue-origin` label waits for that Job rather than running as owner-less.

Workloads created without an owner stand for a job of their shape: once Admitted their pods
(owned by the Workload) run, on eviction the pods are deleted and the quota released, and when
all pods succeeded the Workload is Finished.
"""

from __future__ import annotations

import logging
from typing import Any

from kueuetop.kueue.json_copy import clone
from kueuetop.kueue.workload import PODSET_LABEL
from kueuetop.kueue.workload import QUEUE_NAME_LABEL as QUEUE_LABEL
from kueuetop.sim.jobs.framework import (
    DEFAULT_PODSET,
    KUEUE_GROUP,
    MissingFlavor,
    MissingPriorityClass,
    PodSetInfo,
    controller_ref,
    finish_workload,
    int_or,
    is_active_pod,
    merge_into_template,
    meta_of,
    new_workload,
    owner_ref,
    pod_ready,
    podset_infos,
    release_quota,
    resolve_priority,
    restore_template,
    set_pods_ready,
    sim_annotations,
    workload_name_for_owner,
)
from kueuetop.sim.jobs.perf_runner import runs_workload
from kueuetop.sim.kube.events import (
    JOB_CONTROLLER,
    EventWriter,
    NullEvents,
    condition_is,
    find_condition,
    patch_status,
    set_condition,
)
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent, rfc3339
from kueuetop.sim.work_queue import drain

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

JOB_FINISHED_MESSAGE = "Job finished successfully"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
MULTIKUEUE_ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
JOB_CONTROLLER_MANAGER = "kubernetes.io/job-controller"


def managed_elsewhere(job: Obj) -> bool:
    """spec.managedBy names a controller other than the built-in Job controller (KEP-4368)."""
    mb = (job.get("spec") or {}).get("managedBy")
    return isinstance(mb, str) and mb not in ("", JOB_CONTROLLER_MANAGER)


def waits_for_prebuilt_owner(wl: Obj) -> bool:
    """A MultiKueue copy on a worker: its Job comes later and will own it."""
    return bool((meta_of(wl).get("labels") or {}).get(MULTIKUEUE_ORIGIN_LABEL))


# The conditions an owner-less Workload's reconcile reads (directly or via needs_quota_release).
_INPUT_CONDITIONS = frozenset(("Admitted", "Evicted", "Finished", "PodsReady", "QuotaReserved"))


def _workload_inputs(wl: Obj | None) -> tuple:
    """What _reconcile_workload reads from the Workload itself (its pods come as pod events and
    flavors as ResourceFlavor events). A write that leaves these alone, like most status writes
    (Kueue's own, or this controller's PodsReady once written), cannot change its outcome:
    about two reconciles in three are skipped this way."""
    if not isinstance(wl, dict):
        return (None,)
    m = meta_of(wl)
    status = wl.get("status")
    status = status if isinstance(status, dict) else {}
    conds = status.get("conditions")
    # Only which of them are true, and PodsReady as a whole (it is rewritten when its reason or
    # message would change); Kueue's Pending messages change every cycle and matter not here.
    true, pods_ready = set(), None
    for c in conds if isinstance(conds, list) else ():
        if isinstance(c, dict) and c.get("type") in _INPUT_CONDITIONS:
            if c.get("status") == "True":
                true.add(c.get("type"))
            if c.get("type") == "PodsReady":
                pods_ready = (c.get("status"), c.get("reason"), c.get("message"))
    relevant = (frozenset(true), pods_ready)
    return (wl.get("spec"), m.get("ownerReferences"), m.get("generation"), status.get("admission"), relevant)


def _pod_inputs(pod: Obj | None) -> tuple:
    """What owners' reconciles read from a pod: phase, readiness, deletion, pod set, owner."""
    if not isinstance(pod, dict):
        return (None,)
    m = meta_of(pod)
    status = pod.get("status")
    phase = status.get("phase") if isinstance(status, dict) else None
    return (phase, condition_is(pod, "Ready"), m.get("deletionTimestamp"),
            (m.get("labels") or {}).get(PODSET_LABEL), controller_ref(pod))


class JobIntegration:
    """Jobs and owner-less Workloads. Wire with `cluster.add_controller(JobIntegration(store))`."""

    name = "job-integration"

    def __init__(self, store: ObjectStore, *, events: EventWriter | None = None) -> None:
        self.store = store
        self.events = events or NullEvents()
        self._dirty_jobs: dict[Key, None] = {}
        self._dirty_wls: dict[Key, None] = {}
        self._deleted_jobs: list[tuple[str, str]] = []  # (namespace, uid)
        self._wl_of_owner: dict[str, Key] = {}  # owner (Job) uid → workload key
        self._pods_of_owner: dict[str, set[Key]] = {}  # owner (Job or Workload) uid → pod keys
        self._waiting_priority: set[Key] = set()
        self._waiting_flavor_jobs: set[Key] = set()
        self._waiting_flavor_wls: set[Key] = set()
        self._prebuilt_jobs: dict[Key, Key] = {}  # prebuilt workload key → job key waiting for it

    # ------------------------------------------------------------------ events
    def on_event(self, event: WatchEvent) -> None:
        try:
            self._on_event(event)
        except Exception:
            _log.exception("job integration: cannot handle %s %s", event.type, event.kind.kind)

    def _on_event(self, event: WatchEvent) -> None:
        key = event.kind.key
        obj = event.obj
        m = meta_of(obj)
        ns, name = m.get("namespace", ""), m.get("name", "")
        if key == ("batch", "jobs"):
            if event.type == "DELETED":
                self._deleted_jobs.append((ns, m.get("uid", "")))
                self._dirty_jobs.pop((ns, name), None)
            else:
                self._dirty_jobs[(ns, name)] = None
        elif key == (KUEUE_GROUP, "workloads"):
            ref = controller_ref(obj)
            if ref is None:
                prebuilt_for = self._prebuilt_jobs.get((ns, name))
                if prebuilt_for is not None:
                    self._dirty_jobs[prebuilt_for] = None
                if waits_for_prebuilt_owner(obj):
                    return
                if not meta_of(obj).get("ownerReferences") and not runs_workload(obj) and (
                        event.type != "MODIFIED" or _workload_inputs(event.old) != _workload_inputs(obj)):
                    self._dirty_wls[(ns, name)] = None
                return
            if ref.get("kind") == "Job" and str(ref.get("apiVersion", "")).startswith("batch/"):
                uid = str(ref.get("uid", ""))
                if event.type == "DELETED":
                    if self._wl_of_owner.get(uid) == (ns, name):
                        del self._wl_of_owner[uid]
                else:
                    self._wl_of_owner[uid] = (ns, name)
                self._dirty_jobs[(ns, str(ref.get("name", "")))] = None
        elif key == ("", "pods"):
            ref = controller_ref(obj)
            if ref is None:
                return
            uid = str(ref.get("uid", ""))
            if ref.get("kind") == "Job":
                target = self._dirty_jobs
            elif ref.get("kind") == "Workload":
                target = self._dirty_wls
            else:
                return
            if event.type == "MODIFIED" and _pod_inputs(event.old) == _pod_inputs(obj):
                return  # e.g. the scheduler's binding: nothing an owner counts has changed
            pods = self._pods_of_owner.setdefault(uid, set())
            if event.type == "DELETED":
                pods.discard((ns, name))
                if not pods:
                    self._pods_of_owner.pop(uid, None)
            else:
                pods.add((ns, name))
            target[(ns, str(ref.get("name", "")))] = None
        elif key in ((KUEUE_GROUP, "workloadpriorityclasses"), ("scheduling.k8s.io", "priorityclasses")):
            if event.type != "DELETED" and self._waiting_priority:
                for k in self._waiting_priority:
                    self._dirty_jobs[k] = None
                self._waiting_priority.clear()
        elif key == (KUEUE_GROUP, "resourceflavors") and event.type != "DELETED":
            # Admitted onto a flavor that did not exist yet: Kueue retries the start.
            for k in self._waiting_flavor_jobs:
                self._dirty_jobs[k] = None
            for k in self._waiting_flavor_wls:
                self._dirty_wls[k] = None
            self._waiting_flavor_jobs.clear()
            self._waiting_flavor_wls.clear()

    # ------------------------------------------------------------------ reconcile
    def reconcile(self, now: float) -> bool:
        worked = False
        for ns, uid in self._deleted_jobs:
            worked = self._cleanup_deleted_job(ns, uid) or worked
        self._deleted_jobs.clear()
        worked = drain(self._dirty_jobs, self._reconcile_job, now, "job integration", "job") or worked
        return drain(self._dirty_wls, self._reconcile_workload, now, "job integration", "workload") or worked

    def next_wakeup(self, now: float) -> float | None:
        return None  # purely event driven: pods finish through the kubelet's timers

    def _cleanup_deleted_job(self, ns: str, uid: str) -> bool:
        # ownerReference GC removes these for Background/Foreground deletes; an Orphan delete
        # leaves them, and Kueue still deletes the Workload of a deleted Job.
        worked = False
        wl_key = self._wl_of_owner.pop(uid, None)
        if wl_key is not None:
            worked = self._delete("kueue.x-k8s.io", "workloads", wl_key) or worked
        return worked

    def _delete(self, group: str, plural: str, key: Key) -> bool:
        try:
            self.store.delete(group, plural, key[0], key[1])
            return True
        except StoreError:
            return False

    # ------------------------------------------------------------------ jobs
    def _reconcile_job(self, key: Key, now: float) -> bool:
        job = self.store.try_get("batch", "jobs", key[0], key[1], copy=False)
        if job is None or meta_of(job).get("deletionTimestamp"):
            return False
        worked = False
        labels = meta_of(job).get("labels") or {}
        if labels.get(QUEUE_LABEL) and controller_ref(job) is None:
            worked = self._kueue_job(key, job, now)
            job = self.store.try_get("batch", "jobs", key[0], key[1], copy=False)
            if job is None:
                return worked
        return self._job_controller(key, job, now) or worked

    def _workload_of(self, job: Obj) -> Obj | None:
        m = meta_of(job)
        prebuilt = (m.get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL)
        if prebuilt:
            ns = m.get("namespace", "")
            self._prebuilt_jobs[(ns, prebuilt)] = (ns, m.get("name", ""))
            return self.store.try_get(KUEUE_GROUP, "workloads", ns, prebuilt, copy=False)
        wl_key = self._wl_of_owner.get(m.get("uid", ""))
        if wl_key is None:
            name = workload_name_for_owner(m.get("name", ""), m.get("uid", ""), "Job", "batch")
            wl_key = (m.get("namespace", ""), name)
        return self.store.try_get(KUEUE_GROUP, "workloads", wl_key[0], wl_key[1], copy=False)

    def _kueue_job(self, key: Key, job: Obj, now: float) -> bool:
        wl = self._workload_of(job)
        finished_cond = _job_finished(job)
        prebuilt = (meta_of(job).get("labels") or {}).get(PREBUILT_WORKLOAD_LABEL)
        if prebuilt and wl is not None and controller_ref(wl) is None:
            return self._own_prebuilt(job, wl)
        if wl is None:
            if finished_cond is not None or prebuilt:
                return False  # a prebuilt Workload is never created here: wait for it
            if not _suspended(job):
                # Kueue's job webhook suspends a queued Job on creation; a Job that lost its
                # Workload is stopped before a new one is created.
                return self._stop_job(job, None, "Not admitted by cluster queue", now)
            if _job_active(job):
                return False  # wait until the pods are gone
            return self._create_job_workload(key, job, now)
        if condition_is(wl, "Finished"):
            return False
        if finished_cond is not None:
            success = finished_cond.get("type") == "Complete"
            msg = JOB_FINISHED_MESSAGE if success else str(finished_cond.get("message", ""))
            done = finish_workload(self.store, wl, "Succeeded" if success else "Failed", msg, now)
            if done:
                self.events.emit(job, "FinishedWorkload",
                                 f"Workload '{key[0]}/{meta_of(wl).get('name')}' is declared finished")
            return done
        worked = False
        admitted = condition_is(wl, "Admitted")
        if admitted or find_condition(wl, "PodsReady") is not None:
            ready = int_or((job.get("status") or {}).get("ready")) + int_or((job.get("status") or {}).get("succeeded"))
            worked = set_pods_ready(self.store, wl, admitted and ready >= _pod_count(job), now)
        evicted = find_condition(wl, "Evicted")
        if evicted is not None and evicted.get("status") == "True":
            worked = self._stop_job(job, wl, str(evicted.get("message", "")), now) or worked
            job = self.store.try_get("batch", "jobs", key[0], key[1], copy=False) or job
            if not _job_active(job) and not self._pods_active(meta_of(job).get("uid", "")):
                worked = release_quota(self.store, wl, now) or worked
            return worked
        if (wl.get("spec") or {}).get("active") is False:
            # Deactivated: the workload controller will evict it; the Job must not run meanwhile.
            return self._stop_job(job, wl, "The workload is deactivated", now) or worked
        if _suspended(job):
            if admitted:
                return self._start_job(job, wl, now) or worked
            return self._sync_queue_name(job, wl) or worked
        if not admitted:
            return self._stop_job(job, wl, "Not admitted by cluster queue", now) or worked
        return worked

    def _own_prebuilt(self, job: Obj, wl: Obj) -> bool:
        """jobframework ensurePrebuiltWorkloadOwnership: the Job becomes the Workload's controller."""
        ref = owner_ref(job)

        def own(cur: Obj) -> Obj:
            refs = [r for r in meta_of(cur).get("ownerReferences") or [] if isinstance(r, dict)]
            cur.setdefault("metadata", {})["ownerReferences"] = [*refs, ref]
            return cur

        wm = meta_of(wl)
        try:
            self.store.patch(KUEUE_GROUP, "workloads", wm.get("namespace"), wm.get("name", ""), own)
            return True
        except StoreError:
            return False

    def _pods_active(self, uid: str) -> bool:
        for ns, name in self._pods_of_owner.get(uid, ()):
            pod = self.store.try_get("", "pods", ns, name, copy=False)
            if pod is not None and is_active_pod(pod):
                return True
        return False

    def _create_job_workload(self, key: Key, job: Obj, now: float) -> bool:
        m = meta_of(job)
        spec = job.get("spec") or {}
        template = clone(spec.get("template") or {})
        t_meta = template.get("metadata") or {}
        labels = {k: v for k, v in (t_meta.get("labels") or {}).items() if k != PODSET_LABEL}
        ps_template: Obj = {"spec": template.get("spec") or {}}
        if labels or t_meta.get("annotations"):
            ps_template["metadata"] = {k: v for k, v in (("labels", labels),
                                                         ("annotations", t_meta.get("annotations"))) if v}
        try:
            ref, priority = resolve_priority(self.store, m.get("labels") or {}, ps_template["spec"])
        except MissingPriorityClass as exc:
            if key not in self._waiting_priority:
                self._waiting_priority.add(key)
                self.events.emit(job, "ErrWorkloadCompose", str(exc), type_="Warning")
            return False
        self._waiting_priority.discard(key)
        wl = new_workload(job, "Job", "batch", [{"name": DEFAULT_PODSET, "count": _pod_count(job),
                                                 "template": ps_template}], ref, priority)
        try:
            created = self.store.create(KUEUE_GROUP, "workloads", wl)
        except StoreError as exc:
            _log.info("creating workload for job %s/%s: %s", key[0], key[1], exc.message)
            return False
        self._wl_of_owner[m.get("uid", "")] = (key[0], created["metadata"]["name"])
        self.events.emit(job, "CreatedWorkload", f"Created Workload: {key[0]}/{created['metadata']['name']}")
        return True

    def _sync_queue_name(self, job: Obj, wl: Obj) -> bool:
        """handleQueueNameChange: a suspended Job's queue label moves its Workload (not while reserved)."""
        q = (meta_of(job).get("labels") or {}).get(QUEUE_LABEL, "")
        if (wl.get("spec") or {}).get("queueName") == q or condition_is(wl, "QuotaReserved"):
            return False

        def move(cur: Obj) -> Obj:
            cur.setdefault("spec", {})["queueName"] = q
            return cur

        try:
            self.store.patch(KUEUE_GROUP, "workloads", meta_of(wl).get("namespace"), meta_of(wl)["name"], move)
            return True
        except StoreError:
            return False

    def _start_job(self, job: Obj, wl: Obj, now: float) -> bool:
        m = meta_of(job)
        try:
            infos = podset_infos(self.store, wl)
        except MissingFlavor:
            self._waiting_flavor_jobs.add((m.get("namespace", ""), m.get("name", "")))
            return False
        except ValueError as exc:
            return finish_workload(self.store, wl, "FailedToStart", str(exc), now)
        if len(infos) != 1:
            return finish_workload(self.store, wl, "FailedToStart",
                                   f"invalid podset infos: expecting 1 got {len(infos)}", now)
        info = infos[0]

        def start(cur: Obj) -> Obj:
            spec = cur.setdefault("spec", {})
            spec["suspend"] = False
            merge_into_template(spec.setdefault("template", {}), info)
            return cur

        try:
            self.store.patch("batch", "jobs", m.get("namespace"), m.get("name", ""), start)
        except ValueError as exc:
            return finish_workload(self.store, wl, "FailedToStart", str(exc), now)
        except StoreError as exc:
            _log.info("unsuspending job %s/%s: %s", m.get("namespace"), m.get("name"), exc.message)
            return False
        cq = ((wl.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
        self.events.emit(job, "Started", f"Admitted by clusterQueue {cq}")
        return True

    def _stop_job(self, job: Obj, wl: Obj | None, message: str, now: float) -> bool:
        """stopJob: suspend, reset startTime, restore the template from the Workload."""
        m = meta_of(job)
        original = None
        if wl is not None:
            for ps in (wl.get("spec") or {}).get("podSets") or []:
                if isinstance(ps, dict) and ps.get("name", DEFAULT_PODSET) == DEFAULT_PODSET:
                    original = ps.get("template") or {}
        worked = False
        if not _suspended(job) or (original is not None and _template_differs(job, original)):
            def stop(cur: Obj) -> Obj:
                spec = cur.setdefault("spec", {})
                spec["suspend"] = True
                if original is not None:
                    restore_template(spec.setdefault("template", {}), original)
                return cur

            was_running = not _suspended(job)
            try:
                self.store.patch("batch", "jobs", m.get("namespace"), m.get("name", ""), stop)
                worked = True
            except StoreError as exc:
                _log.info("suspending job %s/%s: %s", m.get("namespace"), m.get("name"), exc.message)
                return False
            if was_running and wl is not None:
                self.events.emit(job, "Stopped", message)
        if (job.get("status") or {}).get("startTime"):
            worked = patch_status(self.store, "batch", "jobs", m.get("namespace"), m.get("name", ""),
                                  lambda st: st.pop("startTime", None) is not None) is not None or worked
        return worked

    # ------------------------------------------------------------------ job controller
    def _job_controller(self, key: Key, job: Obj, now: float) -> bool:
        m = meta_of(job)
        spec = job.get("spec") or {}
        status = job.get("status") or {}
        uid = m.get("uid", "")
        pods = [p for p in (self.store.try_get("", "pods", ns, n, copy=False)
                            for ns, n in sorted(self._pods_of_owner.get(uid, ()))) if p is not None]
        active = [p for p in pods if is_active_pod(p)]
        succeeded = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Failed")
        succeeded = max(succeeded, int_or(status.get("succeeded")))  # pods may be gone, counts stay
        finished = _job_finished(job) is not None
        suspended = _suspended(job)
        worked = False
        completions = spec.get("completions") if isinstance(spec.get("completions"), int) else None
        parallelism = int_or(spec.get("parallelism"), 1)
        complete_now = (not finished and not active and
                        ((completions is not None and succeeded >= completions)
                         or (completions is None and succeeded > 0)))
        if managed_elsewhere(job):
            return False  # another controller (MultiKueue) owns this Job's pods and status
        if suspended or finished or complete_now:
            for p in active:
                pm = meta_of(p)
                worked = self._delete("", "pods", (pm.get("namespace", ""), pm.get("name", ""))) or worked
            active = []
        else:
            want = parallelism if completions is None else min(parallelism, completions - succeeded)
            if completions is None and succeeded > 0:
                want = 0
            for _ in range(max(0, want - len(active))):
                pod = self._create_job_pod(job)
                if pod is not None:
                    active.append(pod)
                    worked = True
        ready = sum(1 for p in active if pod_ready(p))
        new = dict(status)
        new.update(active=len(active), ready=ready, succeeded=succeeded)
        if failed:
            new["failed"] = failed
        for k in ("active", "succeeded"):
            if not new[k]:
                new.pop(k)
        new.setdefault("uncountedTerminatedPods", {})
        conds = clone(list(status.get("conditions") or []))
        if suspended and not finished:
            set_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended", now)
        elif find_condition(job, "Suspended") is not None:
            set_condition(conds, "Suspended", "False", "JobResumed", "Job resumed", now)
        if not suspended and not finished and not new.get("startTime"):
            new["startTime"] = rfc3339(now)
        if complete_now:
            msg = "Reached expected number of succeeded pods"
            set_condition(conds, "SuccessCriteriaMet", "True", "CompletionsReached", msg, now)
            set_condition(conds, "Complete", "True", "CompletionsReached", msg, now)
            new["completionTime"] = rfc3339(now)
            self.events.emit(job, "Completed", "Job completed", component=JOB_CONTROLLER)
        if conds:
            new["conditions"] = conds
        if new != status:
            patch_status(self.store, "batch", "jobs", key[0], key[1], lambda st: _replace(st, new))
            worked = True
        return worked

    def _create_job_pod(self, job: Obj) -> Obj | None:
        m = meta_of(job)
        template = clone((job.get("spec") or {}).get("template") or {})
        t_meta = template.get("metadata") or {}
        labels = dict(t_meta.get("labels") or {})
        uid = m.get("uid", "")
        labels.update({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": m.get("name", ""),
                       "controller-uid": uid, "job-name": m.get("name", "")})
        created = self._create_pod(job, f"{m.get('name', '')}-", labels, template, "job")
        if created is None:
            return None
        self.events.emit(job, "SuccessfulCreate", f"Created pod: {created['metadata']['name']}",
                         component=JOB_CONTROLLER)
        return created

    # ------------------------------------------------------------------ workloads without owner
    def _reconcile_workload(self, key: Key, now: float) -> bool:
        wl = self.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False)
        if (wl is None or meta_of(wl).get("ownerReferences") or condition_is(wl, "Finished") or runs_workload(wl)
                or waits_for_prebuilt_owner(wl)):
            return False  # runs_workload: Kueue's perf harness plays that job (perf_runner.py)
        uid = meta_of(wl).get("uid", "")
        pod_keys = sorted(self._pods_of_owner.get(uid, ()))
        pods = [p for p in (self.store.try_get("", "pods", ns, n, copy=False) for ns, n in pod_keys)
                if p is not None]
        evicted = condition_is(wl, "Evicted")
        if evicted or (wl.get("spec") or {}).get("active") is False or not condition_is(wl, "Admitted"):
            worked = False
            for p in pods:  # the job stops: all its pods go; a new admission starts afresh
                pm = meta_of(p)
                worked = self._delete("", "pods", (pm.get("namespace", ""), pm.get("name", ""))) or worked
            if evicted:
                worked = release_quota(self.store, wl, now) or worked
                if find_condition(wl, "PodsReady") is not None and not condition_is(wl, "Admitted"):
                    fresh = self.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False)
                    if fresh is not None:
                        worked = set_pods_ready(self.store, fresh, False, now) or worked
            return worked
        try:
            infos = podset_infos(self.store, wl)
        except MissingFlavor:
            self._waiting_flavor_wls.add(key)
            return False
        except ValueError as exc:
            return finish_workload(self.store, wl, "FailedToStart", str(exc), now)
        by_set: dict[str, list[Obj]] = {}
        for p in pods:
            by_set.setdefault((meta_of(p).get("labels") or {}).get(PODSET_LABEL, ""), []).append(p)
        total = succeeded = ready = 0
        worked = False
        templates = {ps.get("name", DEFAULT_PODSET): ps.get("template") or {}
                     for ps in (wl.get("spec") or {}).get("podSets") or [] if isinstance(ps, dict)}
        for info in infos:
            mine = by_set.get(info.name, [])
            done = sum(1 for p in mine if (p.get("status") or {}).get("phase") == "Succeeded")
            active = [p for p in mine if is_active_pod(p)]
            total += info.count
            succeeded += done
            ready += done + sum(1 for p in active if pod_ready(p))
            for _ in range(max(0, info.count - done - len(active))):
                worked = self._create_workload_pod(wl, info, templates.get(info.name, {})) or worked
        if total and succeeded >= total:
            return finish_workload(self.store, wl, "Succeeded", JOB_FINISHED_MESSAGE, now) or worked
        return set_pods_ready(self.store, wl, ready >= total, now) or worked

    def _create_workload_pod(self, wl: Obj, info: PodSetInfo, template: Obj) -> bool:
        m = meta_of(wl)
        tpl = clone(template)
        try:
            merge_into_template(tpl, info)
        except ValueError as exc:
            _log.warning("workload %s/%s: %s", m.get("namespace"), m.get("name"), exc)
            return False
        labels = dict((tpl.get("metadata") or {}).get("labels") or {})
        return self._create_pod(wl, f"{m.get('name', '')}-{info.name}-", labels, tpl, "workload") is not None

    def _create_pod(self, owner: Obj, generate_name: str, labels: dict[str, str], template: Obj,
                    what: str) -> Obj | None:
        """Create one pod of `owner` from its pod template (a Job's, or a Workload's pod set)."""
        m = meta_of(owner)
        t_meta = template.get("metadata") or {}
        annotations = {**sim_annotations(owner), **(t_meta.get("annotations") or {})}
        pod: Obj = {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": generate_name, "namespace": m.get("namespace", ""),
                         "labels": labels, "ownerReferences": [owner_ref(owner)]},
            "spec": template.get("spec") or {},
            "status": {"phase": "Pending"},
        }
        if annotations:
            pod["metadata"]["annotations"] = annotations
        pod["spec"].setdefault("restartPolicy", "Never")
        try:
            created = self.store.create("", "pods", pod, copy=False)
        except StoreError as exc:
            _log.info("creating a pod for %s %s/%s: %s", what, m.get("namespace"), m.get("name"), exc.message)
            return None
        self._pods_of_owner.setdefault(m.get("uid", ""), set()).add(
            (created["metadata"]["namespace"], created["metadata"]["name"]))
        return created



def _replace(status: Obj, new: Obj) -> bool:
    status.clear()
    status.update(clone(new))
    return True


def _suspended(job: Obj) -> bool:
    return (job.get("spec") or {}).get("suspend") is True


def _job_active(job: Obj) -> bool:
    return int_or((job.get("status") or {}).get("active")) > 0


def _job_finished(job: Obj) -> Obj | None:
    for t in ("Complete", "Failed"):
        c = find_condition(job, t)
        if c is not None and c.get("status") == "True":
            return c
    return None


def _pod_count(job: Obj) -> int:
    """Job.podsCount: parallelism (default 1), capped by completions."""
    spec = job.get("spec") or {}
    count = int_or(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if isinstance(completions, int) and completions < count:
        count = completions
    return count


def _template_differs(job: Obj, original: Obj) -> bool:
    probe = clone((job.get("spec") or {}).get("template") or {})
    return restore_template(probe, original)
