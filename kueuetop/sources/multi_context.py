"""Read several kubeconfig contexts at once (a MultiKueue manager and its workers): each gets its
own connection and informer set, all opened side by side, so one unreachable cluster costs its
own timeout and never the others' data. What each cluster gave, or the one line that says why
it could not be read, goes to `views.clusters`."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client as k8s

from kueuetop.sources.connection import ConnectionProblem
from kueuetop.sources.session import LiveSession, SyncTimeout, open_session

KUEUE = "kueue.x-k8s.io"


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


def read_context(kubeconfig: str | None, context: str, timeout: float) -> ContextRead:
    """One context: a synced session, its MultiKueueClusters and the Workloads MultiKueue placed
    (all of a manager's, a worker's copies), or the error."""
    try:
        session = open_session(kubeconfig, context, timeout=timeout)
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
