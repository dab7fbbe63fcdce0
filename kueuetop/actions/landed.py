"""What an action actually changed, read back from the cluster after its outcome became unknown.

A PATCH whose reply was lost may or may not have landed, and a multi-step action (requeue,
preempt: deactivate, wait for Kueue, reactivate) may stop between its steps. Nothing is re-sent
blindly: the target is read back and compared with the plan's patches.

- `applied`: the object carries the plan's last patch, and (for a multi-step plan) it changed
  after we began, so it is our whole action that landed;
- `not applied`: the object carries none of the plan's patches, or is unchanged since we began;
- `partly applied: held`: a workload deactivated by the first step and not reactivated: it holds
  no quota and stays out of its queue until someone resumes it;
- `unknown`: the target could not be read back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueuetop.actions.plan import WORKLOAD, Patch, Target, plan

APPLIED, NOT_APPLIED, HELD, UNKNOWN, GONE = (
    "applied", "not applied", "partly applied: held", "unknown", "target deleted")

# Unset fields read as the API's defaults: a Workload is active, a queue has no stop policy.
_DEFAULTS: dict[tuple[str, ...], Any] = {("spec", "active"): True, ("spec", "stopPolicy"): "None"}


def _leaves(body: Mapping[str, Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = []
    for k, v in body.items():
        if isinstance(v, Mapping):
            out += _leaves(v, (*path, str(k)))
        else:
            out.append(((*path, str(k)), v))
    return out


def carries(obj: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    """Does the object hold every value the merge patch sets?"""
    for path, want in _leaves(body):
        cur: Any = obj
        for p in path:
            cur = cur.get(p) if isinstance(cur, Mapping) else None
        if cur is None:
            cur = _DEFAULTS.get(path)
        if cur != want:
            return False
    return True


def _generation(obj: Mapping[str, Any] | None) -> int | None:
    meta = (obj or {}).get("metadata")
    gen = meta.get("generation") if isinstance(meta, Mapping) else None
    return gen if isinstance(gen, int) else None


def what_landed(action: str, target: Target, obj: Mapping[str, Any] | None, *, sent: int,
                generation_before: int | None) -> str:
    """Classify the read-back `obj` after `sent` patches of the plan may have gone out."""
    if sent <= 0:
        return NOT_APPLIED
    if obj is None:
        return GONE
    patches = [s.body for s in plan(action, target) if isinstance(s, Patch)]
    if not patches:
        return APPLIED
    gen = _generation(obj)
    changed = gen is None or generation_before is None or gen > generation_before
    if carries(obj, patches[-1]):
        # One patch: its value is there. Several: the last value equals the starting one
        # (active=true), so only a change since we began says the steps went through.
        return APPLIED if len(patches) == 1 or changed else NOT_APPLIED
    if len(patches) > 1 and target.kind == WORKLOAD and carries(obj, patches[0]):
        return HELD
    return NOT_APPLIED


def advice(action: str, target: Target, landed: str) -> str:
    """What the cluster is left with, and how to finish or undo it; one line."""
    if landed == HELD:
        return (f"{target} is held (spec.active=false): the {action} stopped after its first step. Run "
                f"`kueuetop resume {target}` to put it back in its queue, or leave it held")
    if landed == APPLIED:
        return f"the {action} of {target} did land"
    if landed == NOT_APPLIED:
        return f"nothing changed on {target}"
    if landed == GONE:
        return f"{target} no longer exists"
    kind = {"workload": "workload", "clusterqueue": "clusterqueue", "localqueue": "localqueue"}[target.kind]
    ns = f" -n {target.namespace}" if target.namespace else ""
    return (f"the outcome is unknown: the API server did not answer the read-back; kueuetop checks it at "
            f"its next start, or see `kubectl get {kind}{ns} {target.name} -o yaml`")
