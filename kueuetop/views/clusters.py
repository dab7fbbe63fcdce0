"""Several clusters at once (a MultiKueue manager and its workers): one row per cluster, where
each manager Workload went, and why, from the manager's and the workers' own objects.

Pure: the caller brings each cluster's snapshot document (views/snapshot.build_snapshot), its
MultiKueueClusters and the MultiKueue placement of its Workloads (raw API dicts), or the one-line
error that kept it from being read. A worker is matched to a MultiKueueCluster by name: the
context name, as `sim serve multikueue` writes them (the console cannot read the kubeconfig
Secrets that say it otherwise).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.workload_state import Phase
from kueuetop.views.safe_text import clean as _clean

ADMITTED_STATES = (Phase.ADMITTED.value, Phase.EVICTING.value)
# Waiting for quota or, with quota reserved, for an admission check (MultiKueue's included).
PENDING_STATES = (Phase.PENDING.value, Phase.BLOCKED.value, Phase.BACKOFF.value, Phase.RESERVED.value,
                  Phase.GATED.value)


def clean(value: Any, limit: int = 300) -> str:
    """Cluster text on one line, without control characters (safe_text.clean)."""
    return " ".join(_clean(value, limit).split()) if value is not None else ""


@dataclass
class ClusterRead:
    """What was read from one context: a snapshot document and MultiKueue objects, or an error."""

    context: str
    error: str = ""
    doc: Mapping[str, Any] | None = None
    multikueue_clusters: Sequence[Mapping[str, Any]] = ()
    workloads: Sequence[Mapping[str, Any]] = ()  # raw Workloads (placement, checks, conditions)
    age: float | None = None  # seconds since this cluster's data was read
    gpus: Sequence[GpuSample] = ()  # GPU telemetry, when the reader polled it
    pools: Mapping[str, str] = field(default_factory=dict)  # node → its pool (node labels)


@dataclass
class Placement:
    namespace: str
    name: str
    manager: str
    state: str  # the manager's view: dispatched, offered, pending, finished, rejected
    cluster: str  # where it runs (status.clusterName) or ""
    nominated: list[str] = field(default_factory=list)
    check: str = ""  # the MultiKueue check's state and message on the manager
    copies: dict[str, str] = field(default_factory=dict)  # worker → its copy's state


def _cond(obj: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for c in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == ctype:
            return c
    return None


def _true(obj: Mapping[str, Any], ctype: str) -> bool:
    c = _cond(obj, ctype)
    return c is not None and c.get("status") == "True"


def copy_state(wl: Mapping[str, Any] | None) -> str:
    """A worker copy's state in a few words, with Kueue's message when it waits."""
    if wl is None:
        return "no copy"
    if _true(wl, "Finished"):
        return "finished"
    if _true(wl, "Admitted"):
        return "admitted"
    if _true(wl, "QuotaReserved"):
        return "quota reserved"
    c = _cond(wl, "QuotaReserved")
    msg = clean(c.get("message")) if c else ""
    return f"pending: {msg}" if msg else "pending"


def cluster_reads(reads: Sequence[Any]) -> list[ClusterRead]:
    """ContextReads (sources) as views.clusters.ClusterRead: each live store's snapshot document,
    the MultiKueue objects, the data's age; a cluster gone away keeps its last document."""
    from kueuetop.kueue.core import Node
    from kueuetop.kueue.node_pool import node_pool
    from kueuetop.store import events as K
    from kueuetop.views.snapshot import build_snapshot

    out = []
    now = time.time()
    for r in reads:
        doc = None
        gpus: list[GpuSample] = []
        pools: dict[str, str] = {}
        if r.session is not None:
            conn, store = r.session.conn, r.session.store
            doc = build_snapshot(store, now=now, context=r.context, server=conn.info.server,
                                 kueue_api=conn.kueue.version, positions=r.session.positions_from)
            gpus = list(store.gpus().values())
            if gpus:
                pools = {n.name: node_pool(n) for n in store.objects(K.NODES).values() if isinstance(n, Node)}
        out.append(ClusterRead(r.context, error=r.error, doc=doc, multikueue_clusters=r.multikueue_clusters,
                               workloads=r.workloads, age=max(0.0, now - r.read_at) if r.read_at else None,
                               gpus=gpus, pools=pools))
    return out


def gpus_by_cluster(reads: Sequence[ClusterRead]) -> tuple[list[GpuSample], dict[str, str]]:
    """Every cluster's GPU samples for one fleet heatmap grouped by cluster: each node named
    `cluster/node` (two clusters may both have a `gpu-node-0`) and its group `cluster · pool`."""
    samples: list[GpuSample] = []
    group: dict[str, str] = {}
    for r in reads:
        ctx = clean(r.context)
        for s in r.gpus:
            node = f"{ctx}/{s.node}"
            samples.append(replace(s, node=node))
            if node not in group:
                pool = r.pools.get(s.node) or ""
                group[node] = f"{ctx} · {pool}" if pool else ctx
    return samples, group


def cluster_rows(reads: Sequence[ClusterRead]) -> list[dict[str, Any]]:
    """One row per context: reachable, Kueue API, GPUs, workloads, and (on a manager) the
    Active condition of each MultiKueueCluster."""
    rows = []
    for r in reads:
        row: dict[str, Any] = {"context": clean(r.context), "reachable": r.error == "", "error": clean(r.error) or None,
                               "dataAgeSeconds": None if r.age is None else round(r.age, 1)}
        if r.doc is not None:
            nodes = r.doc.get("nodes") or []
            wls = r.doc.get("workloads") or []
            row.update({
                "kueueApi": clean((r.doc.get("cluster") or {}).get("kueueApi")) or None,
                "gpus": sum(int(n.get("gpus") or 0) for n in nodes),
                "gpusAllocated": sum(int(n.get("gpusAllocated") or 0) for n in nodes),
                "pending": sum(1 for w in wls if w.get("state") in PENDING_STATES),
                "admitted": sum(1 for w in wls if w.get("state") in ADMITTED_STATES),
            })
        mk = {}
        for mkc in r.multikueue_clusters:
            c = _cond(mkc, "Active") or {}
            mk[clean((mkc.get("metadata") or {}).get("name"))] = {
                "active": c.get("status") == "True", "reason": clean(c.get("reason")) or None,
                "message": clean(c.get("message")) or None}
        row["multiKueueClusters"] = mk
        rows.append(row)
    return rows


def _mk_check(wl: Mapping[str, Any]) -> Mapping[str, Any] | None:
    # The MultiKueue check is the one whose name the manager's placement fields refer to; its
    # controller is not on the Workload, so any check on a Workload with placement fields counts,
    # else the single check.
    checks = [c for c in (wl.get("status") or {}).get("admissionChecks") or [] if isinstance(c, dict)]
    return checks[0] if len(checks) == 1 else next(
        (c for c in checks if "reservation on" in str(c.get("message", "")) or "multikueue" in str(c.get("name", ""))),
        checks[0] if checks else None)


def placements(reads: Sequence[ClusterRead]) -> list[Placement]:
    """Every manager Workload with a MultiKueue check: where it went and each worker copy's state."""
    by_context = {r.context: r for r in reads}
    out = []
    for r in reads:
        workers = [clean((m.get("metadata") or {}).get("name")) for m in r.multikueue_clusters]
        if not workers:
            continue  # not a manager
        for wl in r.workloads:
            check = _mk_check(wl)
            if check is None:
                continue
            meta = wl.get("metadata") or {}
            ns, name = clean(meta.get("namespace")), clean(meta.get("name"))
            status = wl.get("status") or {}
            cluster = clean(status.get("clusterName"))
            copies = {}
            for w in workers:
                wr = by_context.get(w)
                if wr is None or wr.error:
                    copies[w] = "unreachable" if wr is not None else "not read"
                    continue
                copies[w] = copy_state(next((c for c in wr.workloads if (c.get("metadata") or {}).get("name") == name
                                             and (c.get("metadata") or {}).get("namespace") == ns), None))
            if _true(wl, "Finished"):
                state = "finished"
            elif check.get("state") == "Rejected":
                state = "rejected"
            elif cluster and _true(wl, "Admitted"):
                state = "dispatched"
            elif status.get("nominatedClusterNames"):
                state = "offered"
            else:
                state = "pending"
            out.append(Placement(ns, name, r.context, state, cluster,
                                 [clean(c) for c in status.get("nominatedClusterNames") or []],
                                 f"{clean(check.get('state'))}: {clean(check.get('message'))}".rstrip(": "), copies))
    return out


def explain_placement(p: Placement) -> str:
    """Why a manager Workload runs where it does, or waits, in a sentence per cluster."""
    if p.state == "dispatched":
        others = [f"{w}: {s}" for w, s in p.copies.items() if w != p.cluster]
        head = f"dispatched to {p.cluster} ({p.copies.get(p.cluster, '?')} there; check {p.check})"
        return head + (f"; not chosen: {'; '.join(others)}" if others else "")
    if p.state == "finished":
        return f"finished on {p.cluster or 'a worker'}"
    if p.state == "rejected":
        return f"rejected by MultiKueue: {p.check}"
    if p.state == "offered":
        parts = [f"{w}: {p.copies.get(w, 'not read')}" for w in p.nominated]
        return "offered to " + ", ".join(p.nominated) + "; no worker admitted it yet: " + "; ".join(parts)
    return f"waiting on the manager (check {p.check or 'not set'})"


def render_text(rows: Sequence[Mapping[str, Any]], places: Sequence[Placement]) -> str:
    lines = ["CONTEXT               REACHABLE  KUEUE-API  GPUS(USED/ALL)  PENDING  ADMITTED  AGE   MULTIKUEUE"]
    for r in rows:
        if not r["reachable"]:
            lines.append(f"{r['context']:<21} no         -          -               -        -         -     {r['error']}")
            continue
        mk = ", ".join(f"{n}={'Active' if v['active'] else (v['reason'] or 'inactive')}"
                       for n, v in sorted(r["multiKueueClusters"].items())) or "-"
        gpus = f"{r.get('gpusAllocated', 0)}/{r.get('gpus', 0)}"
        age = "-" if r["dataAgeSeconds"] is None else f"{r['dataAgeSeconds']:.0f}s"
        lines.append(f"{r['context']:<21} yes        {r.get('kueueApi') or '-':<10} {gpus:<15} "
                     f"{r.get('pending', 0):<8} {r.get('admitted', 0):<9} {age:<5} {mk}")
    if places:
        lines += ["", "WORKLOAD (MANAGER)                          CLUSTER          STATE       WHY"]
        for p in places:
            lines.append(f"{p.namespace + '/' + p.name:<43} {p.cluster or '-':<16} {p.state:<11} {explain_placement(p)}")
    return "\n".join(lines) + "\n"
