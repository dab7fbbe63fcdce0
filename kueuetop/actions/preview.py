"""The engine's preview of an action: what Kueue would admit, evict or preempt because of it.

Runs `admission.what_if` on the cluster's current objects, either already fetched (the console
passes its store's dicts) or listed here through the API. A preview is advice shown before
confirmation: any failure to build it becomes a line saying so, never an exception.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from kueuetop.actions.executor import GROUP
from kueuetop.admission.what_if import Change, WhatIfResult, what_if
from kueuetop.kueue.actions import Target, plan

# (group, version or None for the Kueue version, plural, kind) of what admission looks at.
_LISTS: tuple[tuple[str, str | None, str, str], ...] = (
    (GROUP, None, "clusterqueues", "ClusterQueue"),
    (GROUP, None, "localqueues", "LocalQueue"),
    (GROUP, None, "workloads", "Workload"),
    (GROUP, None, "resourceflavors", "ResourceFlavor"),
    (GROUP, None, "cohorts", "Cohort"),
    (GROUP, None, "admissionchecks", "AdmissionCheck"),
    (GROUP, None, "workloadpriorityclasses", "WorkloadPriorityClass"),
    ("", "v1", "namespaces", "Namespace"),
    ("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass"),
)


@dataclass(frozen=True)
class Preview:
    lines: tuple[str, ...]
    ok: bool
    result: WhatIfResult | None = None
    admitted: tuple[str, ...] = ()
    evicted: tuple[str, ...] = ()
    preempted: tuple[str, ...] = ()
    target_state: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)  # kinds that could not be listed


def _wl(key: tuple[str, str]) -> str:
    return f"{key[0]}/{key[1]}"


def summary_lines(result: WhatIfResult) -> list[str]:
    """One line per consequence, in the words the confirmation prompt shows."""
    out = [f"would admit {_wl(c.workload)} in {c.cluster_queue}" for c in result.admitted]
    for c in result.preempted:
        out.append(f"would preempt {_wl(c.workload)} ({c.reason})" + (f" by {_wl(c.by)}" if c.by else "")
                   + (" then readmit it" if c.readmitted else ""))
    for c in result.evicted:
        out.append(f"would evict {_wl(c.workload)} ({c.reason})" + (" then readmit it" if c.readmitted else ""))
    if result.target_state:
        out.append(f"target would be {result.target_state}")
    return out or ["no admission changes"]


def _names(changes: Iterable[Change]) -> tuple[str, ...]:
    return tuple(_wl(c.workload) for c in changes)


def _server_now(headers: Mapping[str, str] | None) -> float | None:
    """The API server's clock from its Date header: a simulated cluster may run ahead of ours."""
    date = (headers or {}).get("Date") or (headers or {}).get("date")
    if not date:
        return None
    try:
        return email.utils.parsedate_to_datetime(date).timestamp()
    except (TypeError, ValueError):
        return None


def fetch_objects(api_client: client.ApiClient, version: str = "v1beta2",
                  timeout: float = 30.0) -> tuple[list[dict], float | None, list[str]]:
    """List what admission needs as plain dicts; (objects, server time, kinds that failed)."""
    custom = client.CustomObjectsApi(api_client)
    objects: list[dict] = []
    failed: list[str] = []
    server_now: float | None = None
    for group, ver, plural, kind in _LISTS:
        try:
            if group == GROUP:
                resp = custom.list_cluster_custom_object(group, ver or version, plural, _preload_content=False,
                                                         _request_timeout=timeout)
            elif plural == "namespaces":
                resp = client.CoreV1Api(api_client).list_namespace(_preload_content=False, _request_timeout=timeout)
            else:
                resp = client.SchedulingV1Api(api_client).list_priority_class(_preload_content=False,
                                                                              _request_timeout=timeout)
            data = json.loads(resp.data)
            server_now = server_now or _server_now(dict(resp.headers or {}))
        except (ApiException, Urllib3Error, OSError, ValueError):
            failed.append(plural)  # e.g. no Cohort CRD, or no permission to list namespaces
            continue
        api_version = f"{group}/{ver or version}" if group else ver
        for item in data.get("items") or []:
            if isinstance(item, dict):
                item.setdefault("apiVersion", api_version)  # list items may omit their type
                item.setdefault("kind", kind)
                objects.append(item)
    return objects, server_now, failed


def preview(action: str, target: Target, objects: Iterable[Mapping[str, Any]] | None = None, *,
            api_client: client.ApiClient | None = None, now: float | None = None,
            version: str = "v1beta2") -> Preview:
    """What `action` on `target` would cause; from `objects`, or listed through `api_client`."""
    notes: list[str] = []
    server_now: float | None = None
    try:
        plan(action, target)  # an action the target can't take fails before any listing
        if objects is None:
            if api_client is None:
                raise ValueError("preview needs objects or an API client")
            fetched, server_now, failed = fetch_objects(api_client, version)
            objects = fetched
            notes = [f"could not list {p}" for p in failed]
        result = what_if(list(objects), action, target, now if now is not None else (server_now or time.time()))
    except KeyError:
        # Not found because nothing could be listed is not "not found": say what failed.
        unlisted = [n.removeprefix("could not list ") for n in notes]
        why = ("could not list " + ", ".join(unlisted)) if unlisted else f"{target} not found in the listed objects"
        return Preview((f"preview unavailable: {why}",), False, notes=tuple(notes))
    except Exception as exc:  # the preview is advice; it must never stop the action flow
        return Preview((f"preview unavailable: {type(exc).__name__}: {exc}",), False, notes=tuple(notes))
    return Preview(tuple(summary_lines(result)), True, result, _names(result.admitted), _names(result.evicted),
                   _names(result.preempted), result.target_state, tuple(notes))
