"""Discovery documents (legacy and aggregated v2), /version and a minimal OpenAPI v3.

The OpenAPI v3 documents declare, per kind, a PATCH operation with the `fieldValidation`
parameter: that is what kubectl looks for to leave validation to the server, so
`kubectl create/apply -f` work without `--validate=false`."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from kueuetop.sim.apiserver.versions import ALL_VERSIONS, ServedVersions
from kueuetop.sim.storage import kinds as K

SERVER_VERSION = {
    "major": "1", "minor": "32", "gitVersion": "v1.32.0", "gitCommit": "kueuetop-sim",
    "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.23.4",
    "compiler": "gc", "platform": "linux/amd64",
}

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"

# Extra subresources per kind (beyond status), as the real servers list them.
_SUBRESOURCES: dict[tuple[str, str], list[tuple[str, str, list[str]]]] = {
    ("", "pods"): [("proxy", "PodProxyOptions", ["create", "delete", "get", "patch", "update"])],
    ("", "namespaces"): [("finalize", "Namespace", ["update"])],
}

# The visibility API's resources (served by Kueue's aggregated API server).
_VISIBILITY = [
    {"name": "clusterqueues", "singularName": "clusterqueue", "namespaced": False, "kind": "ClusterQueue",
     "verbs": ["get"]},
    {"name": "clusterqueues/pendingworkloads", "singularName": "", "namespaced": False,
     "kind": "PendingWorkloadsSummary", "verbs": ["get"]},
    {"name": "localqueues", "singularName": "localqueue", "namespaced": True, "kind": "LocalQueue",
     "verbs": ["get"]},
    {"name": "localqueues/pendingworkloads", "singularName": "", "namespaced": True,
     "kind": "PendingWorkloadsSummary", "verbs": ["get"]},
]


def _hash(s: str) -> str:
    return hashlib.sha256(s.encode()).hexdigest()[:16]


def group_order(served: ServedVersions = ALL_VERSIONS) -> list[str]:
    """Served groups in discovery order; the visibility group last so that `clusterqueues`
    resolves to kueue.x-k8s.io in kubectl."""
    gs = [g for g in served.groups() if g != K.VISIBILITY_GROUP]
    return [*gs, K.VISIBILITY_GROUP]


def api_versions(server_address: str) -> dict[str, Any]:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]}


def _group_doc(group: str, served: ServedVersions) -> dict[str, Any]:
    versions = served.versions(group)
    gvs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(served: ServedVersions = ALL_VERSIONS) -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [_group_doc(g, served) for g in group_order(served)]}


def api_group(group: str, served: ServedVersions = ALL_VERSIONS) -> dict[str, Any] | None:
    if not served.versions(group):
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_doc(group, served)}


def resource_list(group: str, version: str, served: ServedVersions = ALL_VERSIONS) -> dict[str, Any] | None:
    gv = f"{group}/{version}" if group else version
    if group == K.VISIBILITY_GROUP:
        if not served.serves(group, version):
            return None
        return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": _VISIBILITY}
    kinds = served.kinds_in(group, version)
    if not kinds:
        return None
    resources: list[dict[str, Any]] = []
    for k in kinds:
        r: dict[str, Any] = {"name": k.plural, "singularName": k.singular, "namespaced": k.namespaced,
                             "kind": k.kind, "verbs": list(k.verbs)}
        short = served.short_names(k)
        if short:
            r["shortNames"] = list(short)
        if k.categories:
            r["categories"] = list(k.categories)
        r["storageVersionHash"] = _hash(f"{gv}/{k.plural}")
        resources.append(r)
        if k.status_subresource:
            resources.append({"name": f"{k.plural}/status", "singularName": "", "namespaced": k.namespaced,
                              "kind": k.kind, "verbs": list(K.STATUS_VERBS)})
        for sub, sub_kind, verbs in _SUBRESOURCES.get(k.key, []):
            resources.append({"name": f"{k.plural}/{sub}", "singularName": "", "namespaced": k.namespaced,
                              "kind": sub_kind, "verbs": verbs})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}


def _aggregated_version(group: str, version: str, served: ServedVersions) -> dict[str, Any]:
    doc = resource_list(group, version, served) or {"resources": []}
    top: dict[str, dict[str, Any]] = {}
    for r in doc["resources"]:
        name = r["name"]
        if "/" in name:
            parent, sub = name.split("/", 1)
            entry = top.get(parent)
            if entry is None:
                continue
            entry.setdefault("subresources", []).append({
                "subresource": sub,
                "responseKind": {"group": group, "version": version, "kind": r["kind"]},
                "verbs": r["verbs"]})
            continue
        entry = {"resource": name,
                 "responseKind": {"group": group, "version": version, "kind": r["kind"]},
                 "scope": "Namespaced" if r["namespaced"] else "Cluster",
                 "singularResource": r["singularName"], "verbs": r["verbs"]}
        if r.get("shortNames"):
            entry["shortNames"] = r["shortNames"]
        if r.get("categories"):
            entry["categories"] = r["categories"]
        top[name] = entry
    return {"version": version, "resources": list(top.values()), "freshness": "Current"}


def aggregated(core: bool, api_version: str = "apidiscovery.k8s.io/v2",
               served: ServedVersions = ALL_VERSIONS) -> dict[str, Any]:
    """APIGroupDiscoveryList for /api (core) or /apis."""
    if core:
        items = [{"metadata": {"creationTimestamp": None},
                  "versions": [_aggregated_version("", "v1", served)]}]
    else:
        items = []
        for g in group_order(served):
            items.append({"metadata": {"name": g, "creationTimestamp": None},
                          "versions": [_aggregated_version(g, v, served) for v in served.versions(g)]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


# ----------------------------------------------------------------- OpenAPI v3

def _gv_paths(served: ServedVersions) -> list[tuple[str, str, str]]:
    """(url path key, group, version) for every served group version."""
    out = [("api/v1", "", "v1")]
    for g in group_order(served):
        if g == K.VISIBILITY_GROUP:
            continue
        for v in served.versions(g):
            out.append((f"apis/{g}/{v}", g, v))
    return out


def openapi_v3_root(served: ServedVersions = ALL_VERSIONS) -> dict[str, Any]:
    paths = {}
    for key, g, v in _gv_paths(served):
        doc = openapi_v3_doc(g, v)
        digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32].upper()
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return {"paths": paths}


def openapi_v3_doc(group: str, version: str) -> dict[str, Any]:
    prefix = f"/apis/{group}/{version}" if group else "/api/v1"
    paths: dict[str, Any] = {}
    field_validation = {"name": "fieldValidation", "in": "query", "schema": {"type": "string",
                                                                           "uniqueItems": True}}
    dry_run = {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}}
    for k in K.kinds_in(group, version):
        if k.plural == "selfsubjectaccessreviews":
            continue
        gvk = {"group": group, "version": version, "kind": k.kind}
        base = f"{prefix}/namespaces/{{namespace}}/{k.plural}" if k.namespaced else f"{prefix}/{k.plural}"
        op = {"operationId": f"patch{k.kind}", "x-kubernetes-action": "patch",
              "x-kubernetes-group-version-kind": gvk, "parameters": [dry_run, field_validation],
              "responses": {"200": {"description": "OK"}}}
        paths[f"{base}/{{name}}"] = {"patch": op}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": {}}}
