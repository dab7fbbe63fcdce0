"""What an action left on the cluster, decided from the target read back (never from guesses).

After a transport error or timeout the client cannot know whether a PATCH landed; only a read of
the target can tell. `what_landed` compares the object read back with the state the action
aims for and with the state before our first PATCH (its `generation`: the API server bumps it on
every spec change, so an unchanged generation means no spec write of ours landed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kueuetop.kueue.actions import CLUSTER_QUEUE, LOCAL_QUEUE, Target

APPLIED, NOT_APPLIED, HELD, UNKNOWN = "applied", "not applied", "partly applied: held", "unknown"

# The spec each action leaves behind when every step landed.
_FINAL_ACTIVE = {"hold": False, "resume": True, "requeue": True, "preempt": True, "preempt-and-hold": False}
_FINAL_POLICY = {"stop": "Hold", "drain": "HoldAndDrain", "resume-queue": "None"}


def before_state(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """The few fields of the target, before our first PATCH, that `what_landed` compares with."""
    if not obj:
        return {}
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    return {"generation": int(meta.get("generation") or 0), "resourceVersion": str(meta.get("resourceVersion") or ""),
            "active": spec.get("active", True) is not False, "stopPolicy": spec.get("stopPolicy") or "None"}


def what_landed(action: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> str:
    """applied | not applied | partly applied: held, from the target read back (`after`).

    `before` is `before_state` of the object our first PATCH was built on, or None when no PATCH
    was ever sent (then nothing of ours can have landed).
    """
    if not before:
        return NOT_APPLIED
    if after is None:
        return NOT_APPLIED  # deleted meanwhile: nothing of ours is left to undo
    spec = after.get("spec") or {}
    if action in _FINAL_POLICY:
        return APPLIED if (spec.get("stopPolicy") or "None") == _FINAL_POLICY[action] else NOT_APPLIED
    active = spec.get("active", True) is not False
    want = _FINAL_ACTIVE[action]
    if action in ("requeue", "preempt"):
        # Two writes: off, then on. Inactive now, and it was active before us: only the first landed.
        if not active:
            return HELD if before.get("active", True) else NOT_APPLIED
        changed = int((after.get("metadata") or {}).get("generation") or 0) > int(before.get("generation") or 0)
        return APPLIED if changed else NOT_APPLIED
    return APPLIED if active == want else NOT_APPLIED


def kubectl_check(target: Target) -> str:
    if target.kind == CLUSTER_QUEUE:
        return f"kubectl get clusterqueue {target.name} -o jsonpath='{{.spec.stopPolicy}}'"
    if target.kind == LOCAL_QUEUE:
        return f"kubectl get localqueue -n {target.namespace} {target.name} -o jsonpath='{{.spec.stopPolicy}}'"
    return f"kubectl get workload -n {target.namespace} {target.name} -o jsonpath='{{.spec.active}}'"


def next_step(action: str, target: Target, landed: str) -> str:
    """What the cluster is left as, and how to finish or undo it; "" when nothing is left to do."""
    if landed == HELD:
        return (f"{target} is held (spec.active=false): run `kueuetop resume {target}` to put it back in its "
                "queue, or leave it held")
    if landed == NOT_APPLIED:
        return f"nothing changed; run `kueuetop {action} {target}` to try again"
    if landed == UNKNOWN:
        return (f"could not read {target} back; the next kueuetop action command checks it again, "
                f"or check it yourself: {kubectl_check(target)}")
    return ""


def describe_state(target: Target, obj: Mapping[str, Any] | None) -> str:
    """One short phrase of the target's current state, for messages."""
    if obj is None:
        return f"{target} no longer exists"
    spec = obj.get("spec") or {}
    if target.kind in (CLUSTER_QUEUE, LOCAL_QUEUE):
        return f"{target} has spec.stopPolicy={spec.get('stopPolicy') or 'None'}"
    conds = {c.get("type"): c.get("status") for c in (obj.get("status") or {}).get("conditions") or []
             if isinstance(c, Mapping)}
    quota = "holds quota" if conds.get("QuotaReserved") == "True" else "holds no quota"
    return f"{target} has spec.active={'false' if spec.get('active', True) is False else 'true'} and {quota}"
