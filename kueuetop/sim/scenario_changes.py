"""The forecast's what-if changes (`--with`, admission/forecast_changes.py) made to a scenario's
documents, for `kueuetop sim run --from-recording FILE --with SPEC`:

    nodes POOL=+N | =-N      the NodePool has N more (fewer) nodes from the start: size, and the
                             autoscaler's minSize and maxSize, move by N
    quota CQ [FLAVOR/]RES=…  the ClusterQueue's nominalQuota changes in every document of it (its
                             creation and each later update), resolved exactly as the forecast does
    hold NS/NAME (globs)     the matching Workloads are created inactive, and later documents
                             that would activate them are dropped

The specs are parsed by `parse_changes` (one grammar for both commands); an unknown pool,
ClusterQueue, flavor, resource or a glob matching no workload is a ValueError of one line naming it.

Pure: documents in, new documents out (the input is never changed).
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Iterable, Sequence
from typing import Any

from kueuetop.admission.forecast_changes import (
    Change,
    HoldChange,
    NodesChange,
    QuotaChange,
    name_list,
    with_quota_change,
)
from kueuetop.kueue.cluster_queue import parse_cluster_queue
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.quantity import format_quantity_for_api

Doc = dict[str, Any]


def _is(doc: Doc, kind: str) -> bool:
    return isinstance(doc, dict) and doc.get("kind") == kind


def _name(doc: Doc) -> str:
    return str((doc.get("metadata") or {}).get("name") or "")


def _ns(doc: Doc) -> str:
    return str((doc.get("metadata") or {}).get("namespace") or "default")


def apply_to_documents(documents: Sequence[Doc], changes: Iterable[Change]) -> list[Doc]:
    """The scenario's documents with every change made, in order."""
    docs = copy.deepcopy(list(documents))
    for ch in changes:
        if isinstance(ch, NodesChange):
            _nodes(docs, ch)
        elif isinstance(ch, QuotaChange):
            _quota(docs, ch)
        elif isinstance(ch, HoldChange):
            docs = _hold(docs, ch)
        else:  # pragma: no cover - the union is closed
            raise ValueError(f"unknown change {ch!r}")
    return docs


def _nodes(docs: list[Doc], ch: NodesChange) -> None:
    pools = {_name(d): d for d in docs if _is(d, "NodePool")}
    doc = pools.get(ch.pool)
    if doc is None:
        raise ValueError(f"{ch.spec}: unknown node pool {ch.pool!r} (pools: {name_list(pools)})")
    spec = doc.setdefault("spec", {})
    size = int(spec.get("size") or 0)
    if size + ch.delta < 0:
        raise ValueError(f"{ch.spec}: node pool {ch.pool} starts with {size} node(s); cannot remove {-ch.delta}")
    spec["size"] = size + ch.delta
    # The autoscaler keeps the pool within [minSize, maxSize]: both move too, so the extra nodes
    # stay (a scale-down would take them back) and the pool can still grow as far beyond them.
    for key in ("minSize", "maxSize"):
        if key in spec:
            spec[key] = max(0, int(spec[key] or 0) + ch.delta)
    if "maxSize" in spec:
        spec["maxSize"] = max(spec["maxSize"], spec["size"])


def _quota(docs: list[Doc], ch: QuotaChange) -> None:
    mine = [d for d in docs if _is(d, "ClusterQueue") and _name(d) == ch.cluster_queue]
    if not mine:
        names = {_name(d) for d in docs if _is(d, "ClusterQueue")}
        raise ValueError(f"{ch.spec}: unknown ClusterQueue {ch.cluster_queue!r} (ClusterQueues: {name_list(names)})")
    for doc in mine:
        try:
            cq = parse_cluster_queue(doc)
        except KueueParseError as exc:
            raise ValueError(f"{ch.spec}: ClusterQueue {ch.cluster_queue} is not valid: {exc}") from None
        changed = with_quota_change({cq.name: cq}, ch)
        for group in changed.resource_groups:
            for fq in group.flavors:
                for resource, rq in fq.resources.items():
                    _set_nominal(doc, fq.name, resource, format_quantity_for_api(resource, rq.nominal))


def _set_nominal(doc: Doc, flavor: str, resource: str, value: str) -> None:
    for g in (doc.get("spec") or {}).get("resourceGroups") or ():
        for fq in g.get("flavors") or ():
            if fq.get("name") != flavor:
                continue
            for r in fq.get("resources") or ():
                if r.get("name") == resource:
                    r["nominalQuota"] = value


def _hold(docs: list[Doc], ch: HoldChange) -> list[Doc]:
    def hit(d: Doc) -> bool:
        return (_is(d, "Workload") and fnmatch.fnmatchcase(_ns(d), ch.namespace)
                and fnmatch.fnmatchcase(_name(d), ch.name))

    created: set[tuple[str, str]] = set()
    out: list[Doc] = []
    for d in docs:
        if not hit(d):
            out.append(d)
            continue
        key = (_ns(d), _name(d))
        if key not in created:  # the creation: inactive from the start
            created.add(key)
            d.setdefault("spec", {})["active"] = False
            out.append(d)
        elif "active" not in (d.get("spec") or {}):
            out.append(d)  # a later update that does not (re)activate it
    if not created:
        raise ValueError(f"{ch.spec}: no workload matches {ch.namespace}/{ch.name}")
    return out
