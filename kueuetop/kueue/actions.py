"""What each kueuetop action sends, as data: JSON merge patches and the waits between them.

Only what Kueue supports (reference/kueue.md §5, ARCHITECTURE §3): `spec.active` on a Workload
and `spec.stopPolicy` on ClusterQueues and LocalQueues, exactly the patches kueuectl sends.
  hold             = deactivate (kueuectl stop workload)
  resume           = reactivate (kueuectl resume workload)
  requeue          = deactivate, wait until Kueue has seen it, reactivate (resets backoff)
  preempt          = deactivate, wait until the quota is released, reactivate (back in its queue)
  preempt-and-hold = deactivate, wait until the quota is released, stay inactive
  stop / drain / resume-queue = stopPolicy Hold / HoldAndDrain / None
The same plan drives live API calls (actions/executor), the simulator's scripted actions
(sim/scripted_actions) and the what-if preview (admission/what_if): one action vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

WORKLOAD_ACTIONS = ("hold", "resume", "requeue", "preempt", "preempt-and-hold")
QUEUE_ACTIONS = ("stop", "drain", "resume-queue")
DANGEROUS = frozenset({"preempt", "preempt-and-hold", "drain"})

WORKLOAD, CLUSTER_QUEUE, LOCAL_QUEUE = "workload", "clusterqueue", "localqueue"

QUOTA_RELEASED = "quota-released"
DEACTIVATION_SEEN = "deactivation-seen"


@dataclass(frozen=True, slots=True)
class Target:
    kind: str  # workload | clusterqueue | localqueue
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        if self.kind == CLUSTER_QUEUE:
            return f"cq/{self.name}"
        if self.kind == LOCAL_QUEUE:
            return f"lq/{self.namespace}/{self.name}"
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class Patch:
    body: Mapping[str, Any]  # application/merge-patch+json


@dataclass(frozen=True, slots=True)
class WaitFor:
    condition: str  # QUOTA_RESERVED | DEACTIVATION_SEEN
    timeout_seconds: float = 300.0


Step = Patch | WaitFor


# What the API server accepts as names (apimachinery validation): a namespace is a DNS-1123
# label; Workloads, ClusterQueues and LocalQueues are DNS-1123 subdomains. Anything else would be
# sent as a path: "." and ".." are dropped by the HTTP client, turning a PATCH of one object into
# one of the whole list, and control characters reach the terminal in the preview.
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?")


def parse_target(text: str) -> Target:
    """`NS/NAME` (workload), `cq/NAME`, `lq/NS/NAME`; ValueError with a usable message otherwise."""
    parts = text.split("/")
    if len(parts) == 2 and parts[0] in ("cq", "clusterqueue") and parts[1]:
        target = Target(CLUSTER_QUEUE, parts[1])
    elif len(parts) == 3 and parts[0] in ("lq", "localqueue") and parts[1] and parts[2]:
        target = Target(LOCAL_QUEUE, parts[2], parts[1])
    elif len(parts) == 2 and all(parts):
        target = Target(WORKLOAD, parts[1], parts[0])
    else:
        raise ValueError(f"bad target {text!r}: use NAMESPACE/WORKLOAD, cq/NAME or lq/NAMESPACE/NAME")
    if target.namespace and not _LABEL.fullmatch(target.namespace):
        raise ValueError(f"bad target {text!r}: {target.namespace!r} is not a namespace name "
                         "(lowercase letters, digits and '-')")
    if not _SUBDOMAIN.fullmatch(target.name):
        raise ValueError(f"bad target {text!r}: {target.name!r} is not an object name "
                         "(lowercase letters, digits, '-' and '.', starting and ending with a letter or digit)")
    return target


def plan(action: str, target: Target) -> tuple[Step, ...]:
    if action in WORKLOAD_ACTIONS and target.kind != WORKLOAD:
        raise ValueError(f"{action} applies to a workload, not {target}")
    if action in QUEUE_ACTIONS and target.kind == WORKLOAD:
        raise ValueError(f"{action} applies to a queue (cq/NAME or lq/NS/NAME), not a workload")
    off: Patch = Patch({"spec": {"active": False}})
    on: Patch = Patch({"spec": {"active": True}})
    plans: dict[str, tuple[Step, ...]] = {
        "hold": (off,),
        "resume": (on,),
        "requeue": (off, WaitFor(DEACTIVATION_SEEN), on),
        "preempt": (off, WaitFor(QUOTA_RELEASED), on),
        "preempt-and-hold": (off, WaitFor(QUOTA_RELEASED)),
        "stop": (Patch({"spec": {"stopPolicy": "Hold"}}),),
        "drain": (Patch({"spec": {"stopPolicy": "HoldAndDrain"}}),),
        "resume-queue": (Patch({"spec": {"stopPolicy": "None"}}),),
    }
    if action not in plans:
        raise ValueError(f"unknown action {action!r}: one of {', '.join(WORKLOAD_ACTIONS + QUEUE_ACTIONS)}")
    return plans[action]


def _conds(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {c.get("type"): c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, Mapping)}


def wait_satisfied(condition: str, workload: Mapping[str, Any] | None) -> bool:
    """Has Kueue done what the wait is for? A deleted workload satisfies every wait."""
    if workload is None:
        return True
    conds = _conds(workload)
    if condition == QUOTA_RELEASED:
        qr = conds.get("QuotaReserved")
        return qr is None or qr.get("status") != "True"
    if condition == DEACTIVATION_SEEN:
        # Kueue marks even a pending workload Evicted=True (reason Deactivated…) once it has seen
        # spec.active=false and cleared its backoff; only then does reactivating reset it.
        ev = conds.get("Evicted")
        rq = conds.get("Requeued")
        return bool((ev and ev.get("status") == "True" and str(ev.get("reason", "")).startswith("Deactivated"))
                    or (rq and rq.get("status") == "False" and str(rq.get("reason", "")).startswith("Deactivated")))
    raise ValueError(f"unknown wait condition {condition!r}")
