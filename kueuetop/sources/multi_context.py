"""Read several kubeconfig contexts at once (a MultiKueue manager and its workers): each gets its
own connection and informer set, all opened side by side, so one unreachable cluster costs its
own timeout and never the others' data. What each cluster gave, or the one line that says why
it could not be read, goes to `views.clusters`."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from kueuetop.sources.connection import ConnectionProblem
from kueuetop.sources.session import LiveSession, SyncTimeout, open_session
from kueuetop.sources.watch_loop import WatchLoop

KUEUE = "kueue.x-k8s.io"
WATCH_THREADS_ENV = "KUEUETOP_WATCH_THREADS"


@dataclass
class ContextRead:
    """One context: its synced session (the caller closes it) and MultiKueue objects, or why not."""

    context: str
    session: LiveSession | None = None
    error: str = ""
    multikueue_clusters: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    note: str = ""  # a part that could not be read (the rest stands)
    read_at: float = 0.0  # time.time() when its data was complete

ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"


def _list(api: k8s.ApiClient, version: str, plural: str, timeout: float, label: str | None = None) -> list[dict[str, Any]]:
    co = k8s.CustomObjectsApi(api)
    kwargs: dict[str, Any] = {"_preload_content": False, "_request_timeout": timeout}
    if label:
        kwargs["label_selector"] = label
    resp = co.list_cluster_custom_object(KUEUE, version, plural, **kwargs)
    items = json.loads(resp.data).get("items") or []
    return [i for i in items if isinstance(i, dict)]


def read_context(kubeconfig: str | None, context: str, timeout: float,
                 watch_loop: WatchLoop | None = None) -> ContextRead:
    """One context: a synced session, its MultiKueueClusters and the Workloads MultiKueue placed
    (all of a manager's, a worker's copies), or the error. `watch_loop`: where its informers run."""
    try:
        session = open_session(kubeconfig, context, timeout=timeout, watch_loop=watch_loop)
    except ConnectionProblem as exc:
        return ContextRead(context, error=exc.describe())
    except SyncTimeout as exc:
        return ContextRead(context, error=str(exc))
    except Exception as exc:  # anything else this cluster answers must not stop the others
        return ContextRead(context, error=f"{type(exc).__name__}: {exc}")
    out = ContextRead(context, session=session)
    conn = session.conn
    try:
        if conn.kueue.serves("multikueueclusters"):
            out.multikueue_clusters = _list(conn.api, conn.kueue.version, "multikueueclusters", timeout)
        # A manager's placement is on its own Workloads; a worker's copies carry the origin label.
        out.workloads = _list(conn.api, conn.kueue.version, "workloads", timeout,
                              None if out.multikueue_clusters else ORIGIN_LABEL)
    except Exception as exc:  # e.g. 403 on multikueueclusters: the rest of the row stands
        out.note = f"MultiKueue objects not read: {type(exc).__name__}: {getattr(exc, 'reason', exc)}"
    out.read_at = time.time()
    return out


def read_contexts(kubeconfig: str | None, contexts: Sequence[str], timeout: float) -> list[ContextRead]:
    """Every context read side by side; the result keeps the order asked for."""
    results: dict[str, ContextRead] = {}
    started = time.monotonic()

    def one(ctx: str) -> None:
        results[ctx] = read_context(kubeconfig, ctx, timeout)

    threads = [threading.Thread(target=one, args=(c,), name=f"kueuetop-context-{i}", daemon=True)
               for i, c in enumerate(contexts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, timeout + 5 - (time.monotonic() - started)))
    return [results.get(c) or ContextRead(c, error=f"timed out after {timeout:g}s") for c in contexts]


def _poll_gpus(read: ContextRead) -> None:
    """One GPU telemetry poll into the cluster's store (the exporter scrape through its API
    server, within the scrape budget); a cluster without telemetry keeps the rest of its row."""
    session = read.session
    assert session is not None
    try:
        if session.pollers:
            session.pollers[0].poll_once()
        else:
            session.gpu_poll(timeout=5.0)
    except Exception as exc:  # the poller reports through the store; this is a last guard
        read.note = f"GPU telemetry not read: {type(exc).__name__}: {exc}"


class ContextPool:
    """Live sessions for several contexts, kept open between refreshes: one informer set per
    cluster keeps its store current, every cluster's lists and watches on one shared loop
    (sources/watch_loop.py, one thread) unless `shared_loop` is False; each refresh re-reads the MultiKueue objects and retries
    the contexts that could not be opened. A cluster that stops answering keeps its last data
    (with its age) and gets the error; it never holds up the others."""

    def __init__(self, kubeconfig: str | None, contexts: Sequence[str], timeout: float = 10.0,
                 gpus: bool = False, shared_loop: bool | None = None) -> None:
        self.kubeconfig = kubeconfig
        if shared_loop is None:  # KUEUETOP_WATCH_THREADS=1: a thread per watch, as the one-cluster console
            shared_loop = os.environ.get(WATCH_THREADS_ENV, "") != "1"
        self.watch_loop = WatchLoop() if shared_loop else None
        self.contexts = list(contexts)
        self.timeout = timeout
        self.gpus = gpus  # poll each cluster's GPU telemetry on every refresh (the console's heatmap)
        self._reads: dict[str, ContextRead] = {}
        self._inflight: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def _refresh_one(self, ctx: str) -> None:
        try:
            with self._lock:
                cur = self._reads.get(ctx)
            if cur is None or cur.session is None:
                fresh = read_context(self.kubeconfig, ctx, self.timeout, self.watch_loop)
            else:
                fresh = ContextRead(ctx, session=cur.session, multikueue_clusters=cur.multikueue_clusters,
                                    workloads=cur.workloads, read_at=cur.read_at)
                conn = cur.session.conn
                try:
                    if conn.kueue.serves("multikueueclusters"):
                        fresh.multikueue_clusters = _list(conn.api, conn.kueue.version, "multikueueclusters",
                                                          self.timeout)
                    fresh.workloads = _list(conn.api, conn.kueue.version, "workloads", self.timeout,
                                            None if fresh.multikueue_clusters else ORIGIN_LABEL)
                    fresh.read_at = time.time()
                except Exception as exc:  # gone away: keep the last data, say why it is old
                    fresh.error = f"unreachable: {type(exc).__name__}: {getattr(exc, 'reason', None) or exc}"
            if self.gpus and fresh.session is not None and not fresh.error:
                _poll_gpus(fresh)
            with self._lock:
                self._reads[ctx] = fresh
        finally:
            with self._lock:
                self._inflight.pop(ctx, None)

    def refresh(self, wait: float | None = None) -> list[ContextRead]:
        """Start a read of every context not already being read, wait for them at most `wait`
        seconds (default: the whole timeout), and return what each has now: a context still
        being read keeps its last data, or says it is connecting. A slow cluster thus delays
        no other's rows when the caller gives a short `wait` (the console does)."""
        budget = self.timeout + 5 if wait is None else wait
        with self._lock:
            for i, c in enumerate(self.contexts):
                if c not in self._inflight:
                    t = threading.Thread(target=self._refresh_one, args=(c,), daemon=True, name=f"kueuetop-ctx-{i}")
                    self._inflight[c] = t
                    t.start()
            pending = list(self._inflight.values())
        deadline = time.monotonic() + budget
        for t in pending:
            t.join(max(0.0, deadline - time.monotonic()))
        with self._lock:
            return [self._reads.get(c) or ContextRead(c, error="connecting…" if c in self._inflight
                                                      else f"timed out after {self.timeout:g}s")
                    for c in self.contexts]

    def session(self, context: str) -> LiveSession | None:
        """The context's live session (actions use its client), None when it is not open."""
        with self._lock:
            read = self._reads.get(context)
        return read.session if read is not None else None

    def close(self) -> None:
        with self._lock:
            reads, self._reads = list(self._reads.values()), {}
        for r in reads:
            if r.session is not None:
                r.session.close()
        if self.watch_loop is not None:
            self.watch_loop.stop()
