"""Kueue's MultiKueue admission check (pkg/controller/admissionchecks/multikueue, controllerName
`kueue.x-k8s.io/multikueue`), run by the manager cluster against its workers.

* MultiKueueCluster (clustersReconciler.Reconcile): the kubeconfig comes from the Secret named
  by `spec.clusterSource.kubeConfig.location` in Kueue's namespace, key `kubeconfig`; a missing
  Secret or key gives `Active=False` reason `BadKubeConfig`, a server that does not answer
  `ClientConnectionFailed`, a connected one `Active=True` reason `Active`, message `Connected`.
* AdmissionCheck (ACReconciler.Reconcile): Active while its MultiKueueConfig exists and at least
  one of its clusters is active (`SomeActiveClusters`), else `BadConfig` / `NoUsableClusters`.
* Workload (wlReconciler.reconcileGroup), for a manager Workload holding quota whose check is not
  Rejected and whose owner is a Job managed by MultiKueue (`spec.managedBy`): a copy of the
  Workload (label `kueue.x-k8s.io/multikueue-origin`) goes to every connected worker of the
  config (the AllAtOnce dispatcher); the first copy Admitted wins: the others are deleted, the
  Job is created on that worker (labelled with the prebuilt workload name), its status copied
  back, the check set Ready with `status.clusterName`. A worker copy Finished finishes the
  manager Workload; evicted on the worker → check Retry. The reserving worker gone: after
  `workerLostTimeout` (15m) the check goes Retry ("Reserving remote lost"), Kueue evicts and
  requeues the Workload, and it is dispatched again to the workers that answer. Evicted on the
  manager (held, preempted, retried) or without quota, every copy is deleted.

The workers are reached through a `Network` (a server URL → an in-process cluster), so the
kubeconfig in the Secret decides which cluster a MultiKueueCluster is, as on a real manager.
"""

from __future__ import annotations

import base64
import binascii
import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml

from kueuetop.kueue.json_copy import clone
from kueuetop.sim.apiserver.tables import parse_time
from kueuetop.sim.jobs.batch_job import MULTIKUEUE_ORIGIN_LABEL, PREBUILT_WORKLOAD_LABEL
from kueuetop.sim.jobs.framework import KUEUE_GROUP, controller_ref, finish_workload, meta_of
from kueuetop.sim.kube.events import (
    EventWriter,
    NullEvents,
    condition_is,
    conditions_of,
    find_condition,
    patch_status,
    set_condition,
)
from kueuetop.sim.kueue import configmap as KC
from kueuetop.sim.storage.objectstore import ObjectStore, StoreError, WatchEvent, rfc3339

_log = logging.getLogger(__name__)

Obj = dict[str, Any]
Key = tuple[str, str]

CONTROLLER_NAME = "kueue.x-k8s.io/multikueue"
SECRET_KEY = "kubeconfig"  # kueue.MultiKueueConfigSecretKey
ORIGIN_UID_ANNOTATION = "kueue.x-k8s.io/multikueue-origin-uid"
WORKER_LOST_SINCE = "kueue.x-k8s.io/multikueue-worker-lost-since"
DEFAULT_ORIGIN = "multikueue"
WORKER_LOST_TIMEOUT = 15 * 60.0  # Configuration multiKueue.workerLostTimeout default


@dataclass
class Remote:
    """A worker as its kubeconfig reaches it: its store, its simulation lock, and whether its
    API answers (a worker that went away does not)."""

    name: str
    store: ObjectStore
    lock: Any
    up: bool = True


@dataclass
class Network:
    """Server URL → worker, for the in-process clusters of one simulated world."""

    by_url: dict[str, Remote] = field(default_factory=dict)
    listeners: list[Callable[[], None]] = field(default_factory=list)

    def register(self, url: str, remote: Remote) -> None:
        self.by_url[url.rstrip("/")] = remote

    def resolve(self, url: str) -> Remote | None:
        return self.by_url.get(url.rstrip("/"))

    def set_up(self, name: str, up: bool) -> bool:
        """A worker goes away or comes back; the managers watching it are told (their watches
        end or reconnect). False when no worker has that name."""
        found = False
        for r in self.by_url.values():
            if r.name == name:
                r.up, found = up, True
        for notify in list(self.listeners):
            notify()
        return found


def server_of_kubeconfig(text: str) -> str:
    """The server URL of a kubeconfig's current context (ValueError says what is wrong)."""
    try:
        cfg = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"failed to parse kubeconfig: {str(exc).splitlines()[0]}") from None
    if not isinstance(cfg, dict):
        raise ValueError("failed to parse kubeconfig: not a mapping")
    contexts = {c.get("name"): c.get("context") or {} for c in cfg.get("contexts") or [] if isinstance(c, dict)}
    clusters = {c.get("name"): c.get("cluster") or {} for c in cfg.get("clusters") or [] if isinstance(c, dict)}
    ctx = contexts.get(cfg.get("current-context")) or (next(iter(contexts.values())) if contexts else {})
    cluster = clusters.get(ctx.get("cluster")) if isinstance(ctx, dict) else None
    if cluster is None and len(clusters) == 1:
        cluster = next(iter(clusters.values()))
    server = (cluster or {}).get("server") if isinstance(cluster, dict) else None
    if not isinstance(server, str) or not server:
        raise ValueError("invalid configuration: no server found for cluster")
    return server


def _checks(wl: Obj) -> list[Obj]:
    return [c for c in (wl.get("status") or {}).get("admissionChecks") or [] if isinstance(c, dict)]


def _has_quota(wl: Obj) -> bool:
    return condition_is(wl, "QuotaReserved") and bool((wl.get("status") or {}).get("admission"))


def _ltt(cond: Obj) -> str:
    return str(cond.get("lastTransitionTime") or "")


def clone_for_create(local: Obj, origin: str) -> Obj:
    """cloneForCreate: the Workload as a worker gets it: same name, namespace, labels (plus the
    origin label), annotations, spec; no owner, no status."""
    m = meta_of(local)
    labels = dict(m.get("labels") or {})
    labels[MULTIKUEUE_ORIGIN_LABEL] = origin
    ann = {k: v for k, v in (m.get("annotations") or {}).items() if k != WORKER_LOST_SINCE}
    ann[ORIGIN_UID_ANNOTATION] = str(m.get("uid", ""))
    return {"apiVersion": local.get("apiVersion", f"{KUEUE_GROUP}/v1beta2"), "kind": "Workload",
            "metadata": {"name": m.get("name"), "namespace": m.get("namespace"), "labels": labels,
                         "annotations": ann},
            "spec": clone(local.get("spec") or {})}


def remote_job_for(local_job: Obj, workload: str, origin: str) -> Obj:
    """batchJobAdapter.SyncJob's new remote Job: the manager's Job without its managedBy, status
    or owner, labelled with the prebuilt workload and the origin; suspended until the worker's
    Kueue starts it."""
    m = meta_of(local_job)
    labels = dict(m.get("labels") or {})
    labels[PREBUILT_WORKLOAD_LABEL] = workload
    labels[MULTIKUEUE_ORIGIN_LABEL] = origin
    spec = clone(local_job.get("spec") or {})
    spec.pop("managedBy", None)
    spec.pop("selector", None)
    spec["suspend"] = True
    tmeta = (spec.get("template") or {}).get("metadata")
    if isinstance(tmeta, dict) and isinstance(tmeta.get("labels"), dict):
        for k in ("controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"):
            tmeta["labels"].pop(k, None)
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": m.get("name"), "namespace": m.get("namespace"), "labels": labels,
                         "annotations": dict(m.get("annotations") or {})},
            "spec": spec}


def _forget_placement(status: Obj) -> bool:
    status.pop("clusterName", None)
    status.pop("nominatedClusterNames", None)
    return True


class MultiKueueController:
    """The manager's MultiKueue controllers. `wake` is called when a worker's change needs the
    manager's next turn (remote watches arrive on other threads)."""

    name = "multikueue"

    def __init__(self, store: ObjectStore, network: Network, *, origin: str = DEFAULT_ORIGIN,
                 worker_lost_timeout: float = WORKER_LOST_TIMEOUT, namespace: str = KC.NAMESPACE,
                 events: EventWriter | None = None, wake: Callable[[], None] | None = None) -> None:
        self.store = store
        self.network = network
        self.origin = origin
        self.worker_lost_timeout = worker_lost_timeout
        self.namespace = namespace
        self.events = events or NullEvents()
        self._wake = wake or (lambda: None)
        self._dirty_wls: dict[Key, None] = {}
        self._deleted_wls: dict[Key, None] = {}
        self._clusters_dirty = True
        self._checks_dirty = True
        self._remote_events: deque[Key] = deque()  # manager workload keys, from worker watches
        self._connected: dict[str, Remote] = {}  # MultiKueueCluster name → connected worker
        self._subscribed: dict[int, Callable[[], None]] = {}  # id(store) → unsubscribe
        self._timers: dict[Key, float] = {}  # workload → when its worker-lost grace ends
        self._lock = threading.Lock()
        self.dispatched = 0  # multikueue_workloads_dispatched_total, all queues and clusters
        network.listeners.append(self._network_changed)

    # ------------------------------------------------------------------ events
    def _network_changed(self) -> None:
        with self._lock:
            self._clusters_dirty = True
        self._wake()

    def on_event(self, event: WatchEvent) -> None:
        key = event.kind.key
        if key == (KUEUE_GROUP, "workloads"):
            m = meta_of(event.obj)
            wl_key = (m.get("namespace", ""), m.get("name", ""))
            if event.type == "DELETED":
                self._deleted_wls[wl_key] = None
            elif _checks(event.obj) or wl_key in self._timers:
                self._dirty_wls[wl_key] = None
        elif key in ((KUEUE_GROUP, "multikueueclusters"), ("", "secrets")):
            if key == (KUEUE_GROUP, "multikueueclusters") or meta_of(event.obj).get("namespace") == self.namespace:
                self._clusters_dirty = True
        elif key in ((KUEUE_GROUP, "admissionchecks"), (KUEUE_GROUP, "multikueueconfigs")):
            self._checks_dirty = True

    def _on_remote_event(self, event: WatchEvent) -> None:
        """A worker's watch (any thread): its copies of our Workloads and their Jobs."""
        m = meta_of(event.obj)
        labels = m.get("labels") or {}
        if labels.get(MULTIKUEUE_ORIGIN_LABEL) != self.origin:
            return
        if event.kind.key == (KUEUE_GROUP, "workloads"):
            name = m.get("name", "")
        elif event.kind.key == ("batch", "jobs"):
            name = labels.get(PREBUILT_WORKLOAD_LABEL, "")
        else:
            return
        self._remote_events.append((m.get("namespace", ""), name))
        self._wake()

    # ------------------------------------------------------------------ loop
    def has_work(self) -> bool:
        return bool(self._dirty_wls or self._deleted_wls or self._remote_events or self._clusters_dirty
                    or self._checks_dirty)

    def reconcile(self, now: float) -> bool:
        worked = False
        with self._lock:
            clusters_dirty, self._clusters_dirty = self._clusters_dirty, False
        if clusters_dirty:
            worked = self._reconcile_clusters(now) or worked
            self._checks_dirty = True
        if self._checks_dirty:
            self._checks_dirty = False
            worked = self._reconcile_checks(now) or worked
        while self._remote_events:
            self._dirty_wls[self._remote_events.popleft()] = None
        for key, due in list(self._timers.items()):
            if due <= now:
                del self._timers[key]
                self._dirty_wls[key] = None
        while self._deleted_wls:
            key = next(iter(self._deleted_wls))
            del self._deleted_wls[key]
            self._dirty_wls.pop(key, None)
            worked = self._remove_everywhere(key) or worked
        while self._dirty_wls:
            key = next(iter(self._dirty_wls))
            del self._dirty_wls[key]
            try:
                worked = self._reconcile_workload(key, now) or worked
            except StoreError as exc:
                _log.info("multikueue: workload %s/%s: %s", key[0], key[1], exc.message)
            except Exception:
                _log.exception("multikueue: workload %s/%s failed", *key)
        return worked

    def next_wakeup(self, now: float) -> float | None:
        return min(self._timers.values()) if self._timers else None

    # ------------------------------------------------------------------ clusters
    def _kubeconfig_of(self, mkc: Obj) -> tuple[str | None, str, str]:
        """(server URL, reason, message) for a MultiKueueCluster (loadClientConfig)."""
        source = (mkc.get("spec") or {}).get("clusterSource") or {}
        kc = source.get("kubeConfig") if isinstance(source, dict) else None
        if not isinstance(kc, dict):
            if isinstance(source, dict) and source.get("clusterProfileRef"):
                return None, "MultiKueueClusterProfileFeatureDisabled", \
                    "load client config failed: MultiKueueClusterProfile feature gate is disabled"
            return None, "BadKubeConfig", "load client config failed: kubeconfig reference is nil"
        location = str(kc.get("location", ""))
        if kc.get("locationType", "Secret") != "Secret":
            return None, "BadKubeConfig", \
                f"load client config failed: open {location}: no such file or directory"
        secret = self.store.try_get("", "secrets", self.namespace, location, copy=False)
        if secret is None:
            return None, "BadKubeConfig", f'load client config failed: secrets "{location}" not found'
        raw = (secret.get("data") or {}).get(SECRET_KEY)
        if not isinstance(raw, str):
            return None, "BadKubeConfig", \
                f'load client config failed: key "{SECRET_KEY}" not found in secret "{location}"'
        try:
            text = base64.b64decode(raw, validate=True).decode()
            return server_of_kubeconfig(text), "", ""
        except (binascii.Error, UnicodeDecodeError):
            return None, "BadKubeConfig", "load client config failed: the kubeconfig is not valid base64 text"
        except ValueError as exc:
            return None, "BadKubeConfig", f"load client config failed: {exc}"

    def _reconcile_clusters(self, now: float) -> bool:
        worked = False
        mkcs = {meta_of(o).get("name", ""): o for o in self.store.list(KUEUE_GROUP, "multikueueclusters", copy=False)[0]}
        for name in list(self._connected):
            if name not in mkcs:
                del self._connected[name]  # stopAndRemoveCluster
        for name, mkc in mkcs.items():
            if meta_of(mkc).get("deletionTimestamp"):
                self._connected.pop(name, None)
                continue
            server, reason, message = self._kubeconfig_of(mkc)
            remote = self.network.resolve(server) if server else None
            was = self._connected.get(name)
            if server is not None:
                if remote is None or not remote.up:
                    reason, message = "ClientConnectionFailed", (
                        f'Get "{server}/api?timeout=32s": dial tcp: connect: connection refused')
                    remote = None
                else:
                    reason, message = "Active", "Connected"
            if remote is not None:
                self._connected[name] = remote
                self._watch(remote)
                if was is not remote:
                    self._resync(remote)  # a new watch lists the worker: every copy is looked at
            else:
                self._connected.pop(name, None)
                if was is not None:
                    self._requeue_all()  # the watch ended: reconcile every group (queueWatchEndedEvent)
            worked = self._set_mkc_active(mkc, remote is not None, reason, message, now) or worked
        return worked

    def _watch(self, remote: Remote) -> None:
        sid = id(remote.store)
        if sid not in self._subscribed:
            self._subscribed[sid] = remote.store.subscribe(self._on_remote_event)

    def _resync(self, remote: Remote) -> None:
        """On (re)connect: every copy this manager made on the worker is reconciled, and copies
        whose manager Workload is gone are deleted (remoteClient.runGC)."""
        for wl in remote.store.list(KUEUE_GROUP, "workloads", copy=False)[0]:
            m = meta_of(wl)
            if (m.get("labels") or {}).get(MULTIKUEUE_ORIGIN_LABEL) != self.origin:
                continue
            key = (m.get("namespace", ""), m.get("name", ""))
            if self.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False) is None:
                self._remove_remote(remote, key)
            else:
                self._dirty_wls[key] = None

    def _requeue_all(self) -> None:
        for wl in self.store.list(KUEUE_GROUP, "workloads", copy=False)[0]:
            if _checks(wl):
                m = meta_of(wl)
                self._dirty_wls[(m.get("namespace", ""), m.get("name", ""))] = None

    def _set_mkc_active(self, mkc: Obj, active: bool, reason: str, message: str, now: float) -> bool:
        cur = find_condition(mkc, "Active")
        status = "True" if active else "False"
        if cur is not None and (cur.get("status"), cur.get("reason"), cur.get("message")) == (status, reason, message):
            return False
        gen = meta_of(mkc).get("generation")
        return patch_status(self.store, KUEUE_GROUP, "multikueueclusters", None, meta_of(mkc).get("name", ""),
                            lambda st: set_condition(conditions_of(st), "Active", status, reason, message, now,
                                                     gen if isinstance(gen, int) else None)) is not None

    # ------------------------------------------------------------------ admission checks
    def _our_checks(self) -> dict[str, Obj]:
        return {meta_of(ac).get("name", ""): ac for ac in self.store.list(KUEUE_GROUP, "admissionchecks", copy=False)[0]
                if (ac.get("spec") or {}).get("controllerName") == CONTROLLER_NAME}

    def _config_of(self, ac: Obj) -> tuple[Obj | None, str]:
        """MultiKueueStoreHelper.ConfigFromRef: the check's parameters must name a MultiKueueConfig."""
        params = (ac.get("spec") or {}).get("parameters")
        if not isinstance(params, dict) or params.get("kind") != "MultiKueueConfig" \
                or params.get("apiGroup") != KUEUE_GROUP:
            return None, "missing parameters reference or wrong kind, expecting MultiKueueConfig"
        name = str(params.get("name", ""))
        cfg = self.store.try_get(KUEUE_GROUP, "multikueueconfigs", None, name, copy=False)
        if cfg is None:
            return None, f'multikueueconfigs.kueue.x-k8s.io "{name}" not found'
        return cfg, ""

    def _reconcile_checks(self, now: float) -> bool:
        worked = False
        for name, ac in self._our_checks().items():
            status, reason, message = "True", "Active", "The admission check is active"
            cfg, err = self._config_of(ac)
            if cfg is None:
                status, reason, message = "False", "BadConfig", f"Cannot load the AdmissionChecks parameters: {err}"
            else:
                clusters = [str(c) for c in (cfg.get("spec") or {}).get("clusters") or []]
                missing, inactive = [], []
                for c in clusters:
                    mkc = self.store.try_get(KUEUE_GROUP, "multikueueclusters", None, c, copy=False)
                    if mkc is None:
                        missing.append(c)
                    elif not condition_is(mkc, "Active"):
                        inactive.append(c)
                if missing or inactive:
                    if len(missing) + len(inactive) < len(clusters):
                        reason = "SomeActiveClusters"
                    else:
                        status, reason = "False", "NoUsableClusters"
                    parts = [f"Missing clusters: [{' '.join(missing)}]"] if missing else []
                    if inactive:
                        parts.append(f"Inactive clusters: [{' '.join(inactive)}]")
                    message = ", ".join(parts)
            cur = find_condition(ac, "Active")
            if cur is not None and (cur.get("status"), cur.get("reason"), cur.get("message")) == (status, reason, message):
                continue
            worked = patch_status(self.store, KUEUE_GROUP, "admissionchecks", None, name,
                                  lambda st, s=status, r=reason, m=message: set_condition(
                                      conditions_of(st), "Active", s, r, m, now)) is not None or worked
        return worked

    # ------------------------------------------------------------------ workloads
    def _remotes_for(self, ac: Obj) -> tuple[dict[str, Remote], list[str]]:
        """remoteClientsForAC: the config's clusters that are connected, and those that are not."""
        cfg, _ = self._config_of(ac)
        available: dict[str, Remote] = {}
        unavailable: list[str] = []
        for c in [str(x) for x in ((cfg or {}).get("spec") or {}).get("clusters") or []]:
            remote = self._connected.get(c)
            if remote is not None and remote.up:
                available[c] = remote
            else:
                unavailable.append(c)
        return available, unavailable

    def _set_check(self, key: Key, check: str, state: str, message: str, now: float,
                   extra: Callable[[Obj], None] | None = None) -> bool:
        def fn(st: Obj) -> bool:
            for c in st.get("admissionChecks") or []:
                if isinstance(c, dict) and c.get("name") == check:
                    if c.get("state") != state or c.get("message") != message:
                        c["lastTransitionTime"] = rfc3339(now)
                    c["state"], c["message"] = state, message
            if extra is not None:
                extra(st)
            return True
        return patch_status(self.store, KUEUE_GROUP, "workloads", key[0], key[1], fn) is not None

    def _reconcile_workload(self, key: Key, now: float) -> bool:
        wl = self.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False)
        if wl is None:
            return self._remove_everywhere(key)
        ours = self._our_checks()
        acs = next((c for c in _checks(wl) if c.get("name") in ours), None)
        if acs is None or acs.get("state") == "Rejected":
            return False
        check = str(acs.get("name"))
        owner = controller_ref(wl)
        if owner is None or owner.get("kind") != "Job" or not str(owner.get("apiVersion", "")).startswith("batch/"):
            msg = "No multikueue adapter found" if owner is None else \
                f'No multikueue adapter found for owner kind "{owner.get("kind")}.{str(owner.get("apiVersion", "")).split("/")[0]}"'
            return self._set_check(key, check, "Rejected", msg, now)
        job = self.store.try_get("batch", "jobs", key[0], str(owner.get("name", "")), copy=False)
        if job is None:
            return False
        managed_by = (job.get("spec") or {}).get("managedBy")
        if managed_by != CONTROLLER_NAME:
            # batchJobAdapter.IsJobManagedByKueue
            return self._set_check(key, check, "Rejected",
                                   "The owner is not managed by Kueue: Expecting spec.managedBy to be "
                                   f'"{CONTROLLER_NAME}" not "{managed_by or ""}"', now)
        available, unavailable = self._remotes_for(ours[check])
        remotes: dict[str, Obj | None] = {}
        for c, r in available.items():
            with r.lock:
                remotes[c] = r.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False)
        return self._reconcile_group(key, wl, job, acs, check, available, unavailable, remotes, now)

    def _reconcile_group(self, key: Key, wl: Obj, job: Obj, acs: Obj, check: str, available: dict[str, Remote],
                         unavailable: list[str], remotes: dict[str, Obj | None], now: float) -> bool:
        status = wl.get("status") or {}
        if condition_is(wl, "Evicted") and _has_quota(wl):
            # Evicted on the manager (held, preempted, check Retry): the worker's copy goes (Kueue
            # marks it for eviction there, SetDeactivationTarget; here it is removed at once,
            # its Job with it), and the manager's Job, which never had pods of its own, stops
            # counting the worker's, so the eviction need not wait for them.
            worked = False
            for c, rwl in remotes.items():
                if rwl is not None:
                    worked = self._remove_remote(available[c], key) or worked
            return self._clear_job_activity(key, job) or worked
        # 2. Finished or without quota: no copy anywhere (and no cluster: the eviction reset it,
        #    workload.UnsetQuotaReservationWithCondition).
        if condition_is(wl, "Finished") or not _has_quota(wl):
            worked = False
            for c, rwl in remotes.items():
                if rwl is not None:
                    worked = self._remove_remote(available[c], key) or worked
            if not condition_is(wl, "Finished") and (status.get("clusterName") or status.get("nominatedClusterNames")):
                worked = patch_status(self.store, KUEUE_GROUP, "workloads", key[0], key[1],
                                      _forget_placement) is not None or worked
            return worked
        # 3. A worker's copy finished: the Job's status comes back and the Workload finishes.
        finished, where = self._best_match(remotes, "Finished")
        if finished is not None:
            self._sync_job(available[where], key, job, create=False)
            return finish_workload(self.store, wl, str(finished.get("reason", "")),
                                   str(finished.get("message", "")), now)
        # 4. Evicted on the worker while the check was Ready: reset for re-admission.
        evicted, where = self._best_match(remotes, "Evicted")
        if evicted is not None:
            if condition_is(wl, "Evicted"):
                return self._sync_job(available[where], key, job, create=False)
            if acs.get("state") == "Ready":
                msg = (f'Workload evicted on worker cluster: "{status.get("clusterName", "")}", '
                       f'resetting for re-admission. Previously: "Ready"')
                self.events.emit(wl, "MultiKueue", msg)
                return self._set_check(key, check, "Retry", msg, now)
        # 6. The first worker whose copy is Admitted. ClusterName is immutable once set
        #    (syncReservingRemoteState), so only that worker's copy can count then.
        cluster_name = status.get("clusterName") or ""
        candidates = {c: r for c, r in remotes.items() if not cluster_name or c == cluster_name}
        admitted, reserving = self._best_match(candidates, "Admitted")
        if admitted is None and acs.get("state") == "Ready":
            if not cluster_name or cluster_name in unavailable:
                return self._worker_lost(key, wl, check, now)
            return self._set_check(key, check, "Retry", "Reserving remote no longer exists or is not admitted", now)
        if admitted is not None:
            worked = False
            for c, rwl in remotes.items():
                if rwl is not None and c != reserving:
                    worked = self._remove_remote(available[c], key) or worked
            worked = self._sync_job(available[reserving], key, job, create=True) or worked
            if acs.get("state") not in ("Retry", "Rejected", "Ready") or cluster_name != reserving:
                msg = f'The workload got reservation on "{reserving}"'

                def place(st: Obj) -> None:
                    st["clusterName"] = reserving
                    st.pop("nominatedClusterNames", None)

                worked = self._set_check(key, check, "Ready", msg, now, place) or worked
                self.events.emit(wl, "MultiKueue", msg)
            if WORKER_LOST_SINCE in (meta_of(wl).get("annotations") or {}):
                worked = self._clear_worker_lost(key) or worked
            self._timers.pop(key, None)
            return worked
        # 8. Nominate: only while the check is Pending and the Workload is not being evicted.
        if acs.get("state") != "Pending" or condition_is(wl, "Evicted"):
            return False
        return self._nominate(key, wl, available, remotes)

    def _clear_job_activity(self, key: Key, job: Obj) -> bool:
        st = job.get("status") or {}
        if not st.get("active") and not st.get("ready"):
            return False

        def clear(status: Obj) -> bool:
            status.pop("active", None)
            status["ready"] = 0
            return True
        return patch_status(self.store, "batch", "jobs", key[0], meta_of(job).get("name", ""), clear) is not None

    def _best_match(self, remotes: dict[str, Obj | None], ctype: str) -> tuple[Obj | None, str]:
        """wlGroup.bestMatchByCondition: the copy whose condition turned True first."""
        best, where = None, ""
        for c in sorted(remotes):
            rwl = remotes[c]
            cond = find_condition(rwl, ctype) if rwl is not None else None
            if cond is not None and cond.get("status") == "True" and (best is None or _ltt(cond) < _ltt(best)):
                best, where = cond, c
        return best, where

    def _nominate(self, key: Key, wl: Obj, available: dict[str, Remote], remotes: dict[str, Obj | None]) -> bool:
        """nominateAndSynchronizeWorkers, AllAtOnce dispatcher: every connected worker gets a copy."""
        nominated = sorted(available)
        worked = False
        if sorted((wl.get("status") or {}).get("nominatedClusterNames") or []) != nominated:
            def nominate(st: Obj) -> bool:
                if nominated:
                    st["nominatedClusterNames"] = list(nominated)
                else:
                    st.pop("nominatedClusterNames", None)
                return True
            worked = patch_status(self.store, KUEUE_GROUP, "workloads", key[0], key[1], nominate) is not None
        for c in nominated:
            if remotes.get(c) is not None:
                continue
            r = available[c]
            with r.lock:
                try:
                    r.store.create(KUEUE_GROUP, "workloads", clone_for_create(wl, self.origin))
                    self.dispatched += 1
                    worked = True
                except StoreError as exc:
                    # e.g. the worker has no such namespace: that worker cannot take it.
                    _log.info("multikueue: creating %s/%s on %s: %s", key[0], key[1], c, exc.message)
        return worked

    def _worker_lost(self, key: Key, wl: Obj, check: str, now: float) -> bool:
        """The reserving worker does not answer: wait workerLostTimeout from the first time this
        was seen (recordWorkerLost), then Retry, which makes Kueue evict and requeue."""
        ann = meta_of(wl).get("annotations") or {}
        since = ann.get(WORKER_LOST_SINCE)
        worked = False
        lost_since = parse_time(since) if since else None
        if lost_since is None:
            lost_since = now
            stamp = rfc3339(now)

            def mark(cur: Obj) -> Obj:
                cur.setdefault("metadata", {}).setdefault("annotations", {})[WORKER_LOST_SINCE] = stamp
                return cur
            self.store.patch(KUEUE_GROUP, "workloads", key[0], key[1], mark, copy=False)
            worked = True
        due = lost_since + self.worker_lost_timeout
        if due > now:
            self._timers[key] = due
            return worked
        self._timers.pop(key, None)
        self.events.emit(wl, "MultiKueue", "Reserving remote lost")
        return self._set_check(key, check, "Retry", "Reserving remote lost", now) or worked

    def _clear_worker_lost(self, key: Key) -> bool:
        def clear(cur: Obj) -> Obj:
            (cur.get("metadata") or {}).get("annotations", {}).pop(WORKER_LOST_SINCE, None)
            return cur
        try:
            self.store.patch(KUEUE_GROUP, "workloads", key[0], key[1], clear, copy=False)
            return True
        except StoreError:
            return False

    # ------------------------------------------------------------------ remote objects
    def _sync_job(self, remote: Remote, key: Key, local_job: Obj, *, create: bool) -> bool:
        """batchJobAdapter.SyncJob: create the worker's Job, or copy its status to ours."""
        jm = meta_of(local_job)
        with remote.lock:
            rjob = remote.store.try_get("batch", "jobs", key[0], jm.get("name", ""), copy=False)
            if rjob is None:
                if not create:
                    return False
                try:
                    remote.store.create("batch", "jobs", remote_job_for(local_job, key[1], self.origin))
                    return True
                except StoreError as exc:
                    _log.info("multikueue: creating job %s/%s on %s: %s", key[0], jm.get("name"), remote.name,
                              exc.message)
                    return False
            rstatus = clone(rjob.get("status") or {})
        if (local_job.get("status") or {}) == rstatus:
            return False

        def copy_status(st: Obj) -> bool:
            st.clear()
            st.update(rstatus)
            return True
        return patch_status(self.store, "batch", "jobs", key[0], jm.get("name", ""), copy_status) is not None

    def _remove_remote(self, remote: Remote, key: Key) -> bool:
        """wlGroup.RemoveRemoteObjects: the worker's Job (only one this manager made), then its
        Workload."""
        worked = False
        with remote.lock:
            for rjob in remote.store.list("batch", "jobs", key[0], copy=False)[0]:
                labels = meta_of(rjob).get("labels") or {}
                if labels.get(PREBUILT_WORKLOAD_LABEL) == key[1] and labels.get(MULTIKUEUE_ORIGIN_LABEL) == self.origin:
                    try:
                        remote.store.delete("batch", "jobs", key[0], meta_of(rjob).get("name", ""),
                                            propagation="Background")
                        worked = True
                    except StoreError:
                        pass
            if remote.store.try_get(KUEUE_GROUP, "workloads", key[0], key[1], copy=False) is not None:
                try:
                    remote.store.delete(KUEUE_GROUP, "workloads", key[0], key[1])
                    worked = True
                except StoreError:
                    pass
        return worked

    def _remove_everywhere(self, key: Key) -> bool:
        worked = False
        for remote in self._connected.values():
            if remote.up:
                worked = self._remove_remote(remote, key) or worked
        self._timers.pop(key, None)
        return worked

