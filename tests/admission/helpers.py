"""Shared objects for the admission-controller tables."""

from __future__ import annotations

from typing import Any

from tests.builders import (
    T0,
    admit,
    cluster_queue,
    condition,
    flavor,
    fq,
    group,
    local_queue,
    snapshot,
    ts,
    workload,
)

NS = "team-a"


def cq(stop: str | None = None, checks: list | None = None, cpu: str = "4") -> dict:
    return cluster_queue("cq", group("cpu", fq("default", cpu=cpu)), stop_policy=stop, checks=checks)


def lq(stop: str | None = None) -> dict:
    return local_queue(NS, "lq", "cq", stop_policy=stop)


def pending(name: str = "a", **kw: Any) -> dict:
    return workload(NS, name, "lq", {"cpu": "1"}, **kw)


def admitted(name: str = "a", at: float = T0, admitted_: bool = True, **kw: Any) -> dict:
    return admit(pending(name, **kw), "cq", {"cpu": "default"}, at=at, admitted=admitted_)


def with_conditions(wl: dict, *conds: dict) -> dict:
    out = {**wl, "status": dict(wl.get("status") or {})}
    by_type = {c["type"]: c for c in out["status"].get("conditions", [])}
    for c in conds:
        by_type[c["type"]] = c
    out["status"]["conditions"] = list(by_type.values())
    return out


def with_status(wl: dict, **fields: Any) -> dict:
    out = {**wl, "status": dict(wl.get("status") or {})}
    out["status"].update(fields)
    return out


def inactive(wl: dict) -> dict:
    return {**wl, "spec": {**wl["spec"], "active": False}}


def check(name: str, state: str, message: str = "", at: float = T0, requeue_after: int | None = None,
          retry_count: int | None = None) -> dict:
    c: dict[str, Any] = {"name": name, "state": state, "lastTransitionTime": ts(at), "message": message}
    if requeue_after is not None:
        c["requeueAfterSeconds"] = requeue_after
    if retry_count is not None:
        c["retryCount"] = retry_count
    return c


def world(*wls: dict, cq_obj: dict | None = None, lq_obj: dict | None = None, config: Any = None,
          extra: tuple = ()):
    return snapshot(flavor("default"), cq_obj or cq(), lq_obj or lq(), *extra, *wls, config=config)


__all__ = ["NS", "T0", "admitted", "check", "condition", "cq", "inactive", "lq", "pending", "ts",
           "with_conditions", "with_status", "world"]
