"""How long finished workloads ran, per queue and shape, kept across runs of kueuetop.

A fresh console on a long-lived cluster should not start its runtime estimates from nothing: the
runs the store saw finish are kept in a JSON file the caller names (the console and the CLI use
`xdg.state_dir() / "run-history.json"`, i.e. `$XDG_STATE_HOME/kueuetop/run-history.json`).

- A run is one finished Workload: runtime = its Finished transition − its Admitted transition
  (QuotaReserved when it never had an Admitted condition), keyed by ClusterQueue, LocalQueue and
  shape (`shape_key`: pod sets' counts and per-pod requests). Its pods' start is kept too (the
  PodsReady transition, which Kueue's job reconciler writes for every admitted job): a forecast
  that places pods on node pools reads the runs from there (`from_pods`), as it adds the wait for
  nodes itself.
- Bounded: at most `per_key` runs per (ClusterQueue, LocalQueue, shape), the most recently
  finished kept, and at most `max_runs` in all.
- A run is counted once: by Workload UID, so a restart that lists the same finished Workloads
  again adds nothing.
- Scoped by cluster: one file holds the runs of every cluster the user watched, each under the
  caller's scope string (server URL and context name), so two clusters never mix.
- The file is written atomically (a temporary file, then rename), under an advisory lock so two
  consoles on two clusters do not drop each other's runs; a file that cannot be read is kept as
  `<name>.bad`, reported in one line, and the history starts empty: never a crash, never a silent loss.
"""

from __future__ import annotations

import bisect
import math
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.kueue.run_times import admitted_at, pods_ready_at
from kueuetop.kueue.workload import PodSet, Workload
from kueuetop.store import cluster_state_file as SF
from kueuetop.store import events as K
from kueuetop.store.events import Changes
from kueuetop.store.state import Store

FILE_NAME = "run-history.json"  # in kueuetop's state directory (xdg.state_dir())
FILE_VERSION = 1
WHAT = "run history"  # the file's kind, in its warnings
PER_KEY = 200
MAX_RUNS = 20_000

RunKey = tuple[str, str, str, str]  # (cluster queue, namespace, local queue, shape)


def cluster_scope(server: str, context: str = "") -> str:
    """The key one cluster's runs are kept under: its API server URL (two kubeconfig contexts on
    one server watch the same cluster and share its runs), else the context name."""
    server = server.strip().rstrip("/")
    return server if server else f"context:{context}"


def shape_key(pod_sets: Sequence[PodSet]) -> str:
    """A stable text for "the same kind of job": every pod set's name, count and per-pod requests
    (Kueue resource values), e.g. `main:4x{cpu=8000,nvidia.com/gpu=8}`. Placement constraints are
    left out: they decide where a job runs, not how long."""
    parts = []
    for ps in sorted(pod_sets, key=lambda p: p.name):
        reqs = ",".join(f"{r}={v}" for r, v in sorted(ps.requests.items()))
        parts.append(f"{ps.name}:{ps.count}x{{{reqs}}}")
    return ";".join(parts)


@dataclass(frozen=True, slots=True)
class RunRecord:
    uid: str
    namespace: str
    local_queue: str
    cluster_queue: str
    shape: str
    admitted_at: float
    finished_at: float
    started_at: float | None = None  # its pods all ready (PodsReady), when known

    @property
    def runtime(self) -> float:
        return self.finished_at - self.admitted_at

    @property
    def pods_runtime(self) -> float:
        """From its pods' start, or its admission when that is not known."""
        return self.finished_at - (self.started_at if self.started_at is not None else self.admitted_at)

    @property
    def key(self) -> RunKey:
        return (self.cluster_queue, self.namespace, self.local_queue, self.shape)

    def to_json(self) -> dict[str, Any]:
        out = {"uid": self.uid, "ns": self.namespace, "lq": self.local_queue, "cq": self.cluster_queue,
               "shape": self.shape, "admitted": self.admitted_at, "finished": self.finished_at}
        if self.started_at is not None:
            out["started"] = self.started_at
        return out


def _record_from_json(d: object) -> RunRecord | None:
    if not isinstance(d, dict):
        return None
    text = [d.get(k) for k in ("uid", "ns", "lq", "cq", "shape")]
    times = [d.get(k) for k in ("admitted", "finished")]
    if not all(isinstance(v, str) for v in text):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in times):
        return None
    started = d.get("started")  # absent in files of older kueuetops: not known
    if not (isinstance(started, (int, float)) and not isinstance(started, bool) and math.isfinite(started)
            and times[0] <= started <= times[1]):  # type: ignore[operator]
        started = None
    rec = RunRecord(*text, float(times[0]), float(times[1]), started)  # type: ignore[arg-type]
    return rec if rec.uid and rec.cluster_queue and rec.runtime >= 0 else None


def run_of(wl: Workload, cluster_queue: str | None = None) -> RunRecord | None:
    """The run a finished Workload stands for, or None when it cannot say (not finished, never
    admitted, no ClusterQueue, timestamps missing or out of order)."""
    fin = wl.condition("Finished")
    if fin is None or not fin.is_true or fin.last_transition is None:
        return None
    start = admitted_at(wl)
    cq = wl.admission.cluster_queue if wl.admission is not None else cluster_queue
    if start is None or not cq or fin.last_transition < start:
        return None
    uid = wl.uid or f"{wl.namespace}/{wl.name}@{start}"  # objects from the API always carry one
    return RunRecord(uid, wl.namespace, wl.queue_name, cq, shape_key(wl.pod_sets), start, fin.last_transition,
                     pods_ready_at(wl, start, fin.last_transition))


Measure = Callable[[RunRecord], float]  # what a run is measured by


def _from_admission(r: RunRecord) -> float:
    return r.runtime


def _from_pods(r: RunRecord) -> float:
    return r.pods_runtime


class RunHistory:
    """The finished runs of one cluster (thread-safe: the store's writer thread adds, the forecast's
    worker reads)."""

    def __init__(self, cluster: str, *, per_key: int = PER_KEY, max_runs: int = MAX_RUNS) -> None:
        self.cluster = cluster
        self.per_key = max(1, per_key)
        self.max_runs = max(1, max_runs)
        self._lock = threading.Lock()
        self._by_key: dict[RunKey, list[RunRecord]] = {}  # each sorted by finished_at, oldest first
        # The keys per ClusterQueue (field 0) or per shape (field 3), built when first asked for
        # and dropped when a key comes or goes: a forecast reads every ClusterQueue's runs.
        self._keys_by: dict[int, dict[str, list[RunKey]]] = {}
        self._uids: set[str] = set()
        self._count = 0
        self.unsaved = 0  # runs added since the last load or save

    # ------------------------------------------------------------------ adding
    def record(self, wl: Workload, cluster_queue: str | None = None) -> bool:
        """Add the run of a finished Workload; False when it is not one, or already counted."""
        rec = run_of(wl, cluster_queue)
        return rec is not None and self.add(rec)

    def record_all(self, workloads: Iterable[Workload]) -> int:
        """Add the runs of every finished Workload in `workloads` (e.g. a snapshot's, or a
        simulation's up to some instant); how many were new."""
        return sum(self.record(wl) for wl in workloads)

    def add(self, rec: RunRecord) -> bool:
        with self._lock:
            added = self._add(rec)
            if added:
                self.unsaved += 1
            return added

    def _add(self, rec: RunRecord) -> bool:
        if rec.uid in self._uids:
            return False
        runs = self._by_key.get(rec.key)
        if runs is None:
            runs = self._by_key[rec.key] = []
            self._keys_by.clear()
        if len(runs) >= self.per_key and rec.finished_at <= runs[0].finished_at:
            return False  # older than every run kept for its key: it would be the one dropped
        bisect.insort(runs, rec, key=lambda r: r.finished_at)
        self._uids.add(rec.uid)
        self._count += 1
        if len(runs) > self.per_key:
            self._drop(runs, 0)
        if self._count > self.max_runs:
            oldest = min(self._by_key.values(), key=lambda rs: rs[0].finished_at)
            self._drop(oldest, 0)
        return True

    def _drop(self, runs: list[RunRecord], i: int) -> None:
        gone = runs.pop(i)
        self._uids.discard(gone.uid)
        self._count -= 1
        if not runs:
            del self._by_key[gone.key]
            self._keys_by.clear()

    # ------------------------------------------------------------------ reading
    def shape_of(self, wl: Workload) -> str:
        return shape_key(wl.pod_sets)

    def of_shape(self, namespace: str, local_queue: str, shape: str, cluster_queue: str | None = None,
                 measure: Measure = _from_admission) -> list[float]:
        """Runtimes of finished runs of this shape from this LocalQueue (oldest first)."""
        with self._lock:
            if cluster_queue is not None:
                runs = self._by_key.get((cluster_queue, namespace, local_queue, shape), [])
                return [measure(r) for r in runs]
            found = [r for k, rs in self._by_key.items() if k[1:] == (namespace, local_queue, shape) for r in rs]
        found.sort(key=lambda r: r.finished_at)
        return [measure(r) for r in found]

    def of_shape_anywhere(self, shape: str, limit: int | None = PER_KEY,
                          measure: Measure = _from_admission) -> list[float]:
        """Runtimes of the most recently finished runs of this shape in any queue (oldest first)."""
        return self._recent_of(3, shape, limit, measure)

    def of_cluster_queue(self, cluster_queue: str, limit: int | None = PER_KEY,
                         measure: Measure = _from_admission) -> list[float]:
        """Runtimes of the most recently finished runs in this ClusterQueue, any shape (oldest first)."""
        return self._recent_of(0, cluster_queue, limit, measure)

    def of_cluster(self, limit: int | None = PER_KEY, measure: Measure = _from_admission) -> list[float]:
        """Runtimes of the most recently finished runs in the whole cluster, any queue or shape
        (oldest first)."""
        return self._recent(lambda key: True, limit, measure)

    def _recent_of(self, field: int, value: str, limit: int | None, measure: Measure) -> list[float]:
        """The runs whose key has `value` at `field` (0: ClusterQueue, 3: shape), as `_recent`."""
        with self._lock:
            index = self._keys_by.get(field)
            if index is None:
                index = self._keys_by[field] = {}
                for k in self._by_key:
                    index.setdefault(k[field], []).append(k)
            found = [r for k in index.get(value, ()) for r in self._by_key[k]]
        return self._latest(found, limit, measure)

    def _recent(self, wanted: Callable[[RunKey], bool], limit: int | None, measure: Measure) -> list[float]:
        with self._lock:
            found = [r for k, rs in self._by_key.items() if wanted(k) for r in rs]
        return self._latest(found, limit, measure)

    @staticmethod
    def _latest(found: list[RunRecord], limit: int | None, measure: Measure) -> list[float]:
        found.sort(key=lambda r: r.finished_at)
        if limit is not None:
            found = found[-limit:]
        return [measure(r) for r in found]

    def held(self) -> threading.Lock:
        """The lock over the runs: held across a fork (`tui/forecast_process.py`), so that no
        child starts with another thread inside it."""
        return self._lock

    def from_pods(self) -> PodRuns:
        """The same runs, each measured from its pods' start (for a forecast that places pods)."""
        return PodRuns(self)

    def records(self) -> list[RunRecord]:
        with self._lock:
            out = [r for rs in self._by_key.values() for r in rs]
        out.sort(key=lambda r: r.finished_at)
        return out

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[RunRecord]:
        return iter(self.records())


class PodRuns:
    """A RunHistory's runs measured from their pods' start rather than their admission: what a
    forecast that makes pods wait for nodes needs, or each run's wait would be counted twice.
    A run whose pods' start is not known counts from its admission."""

    measured_from_pods = True

    def __init__(self, history: RunHistory) -> None:
        self.history = history

    def shape_of(self, wl: Workload) -> str:
        return self.history.shape_of(wl)

    def of_shape(self, namespace: str, local_queue: str, shape: str, cluster_queue: str | None = None) -> list[float]:
        return self.history.of_shape(namespace, local_queue, shape, cluster_queue, measure=_from_pods)

    def of_shape_anywhere(self, shape: str, limit: int | None = PER_KEY) -> list[float]:
        return self.history.of_shape_anywhere(shape, limit, measure=_from_pods)

    def of_cluster_queue(self, cluster_queue: str, limit: int | None = PER_KEY) -> list[float]:
        return self.history.of_cluster_queue(cluster_queue, limit, measure=_from_pods)

    def of_cluster(self, limit: int | None = PER_KEY) -> list[float]:
        return self.history.of_cluster(limit, measure=_from_pods)


# ====================================================================== feeding from the store
def record_changes(store: Store, history: RunHistory, changes: Changes) -> int:
    """Add the runs of the Workloads in `changes` that are finished; how many were new. A Workload
    whose admission is gone is counted in its LocalQueue's ClusterQueue."""
    added = 0
    for key in changes.get(K.WORKLOADS):
        wl = store.get(K.WORKLOADS, key)
        if not isinstance(wl, Workload) or not wl.is_finished:
            continue
        cq = None
        if wl.admission is None:
            lq = store.get(K.LOCAL_QUEUES, (wl.namespace, wl.queue_name))
            cq = lq.cluster_queue if isinstance(lq, LocalQueue) else None
        added += history.record(wl, cq)
    return added


def follow_store(store: Store, history: RunHistory) -> Callable[[], None]:
    """Keep `history` fed with every Workload the store sees finish (its initial list included:
    finished Workloads still in the cluster are runs too). Returns the unsubscribe function.
    Subscribed at stage 1 (bookkeeping nobody waits for); saving stays with the caller."""
    return store.subscribe(lambda changes: record_changes(store, history, changes), stage=1)


# ====================================================================== the file
def load_run_history(path: Path | str, cluster: str, *, per_key: int = PER_KEY,
                     max_runs: int = MAX_RUNS) -> tuple[RunHistory, str]:
    """The runs kept for `cluster` in the file at `path`, and a one-line warning ("" when none).

    Never raises on the file's content: a missing file is an empty history; an unreadable or
    corrupt one is renamed to `<name>.bad` and the history starts empty; malformed runs inside a
    good file are skipped and counted in the warning."""
    path = Path(path)
    history = RunHistory(cluster, per_key=per_key, max_runs=max_runs)
    records, warning = SF.read_entries(path, WHAT, FILE_VERSION, cluster, _record_from_json, "run")
    for rec in records:
        history.add(rec)
    history.unsaved = 0
    return history, warning


def save_run_history(path: Path | str, history: RunHistory) -> str:
    """Write `history` as its cluster's runs in the file at `path`, keeping the other clusters'
    runs; atomic (temporary file, fsync, rename). Returns a one-line warning ("" when none): a
    file found corrupt is kept as `.bad` first; a failed write leaves the old file as it was."""
    path = Path(path)
    try:
        warning = SF.write_cluster(path, WHAT, FILE_VERSION, history.cluster, [r.to_json() for r in history.records()])
    except SF.Unreadable:
        return f"run history {path} could not be saved: the file there cannot be read"
    except OSError as exc:
        return f"run history {path} could not be saved ({exc.strerror or exc})"
    history.unsaved = 0
    return warning

