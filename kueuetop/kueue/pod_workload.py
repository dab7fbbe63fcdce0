"""Which Workload a Pod runs for: Kueue's linking (reference kueue.md §4.4), as one rule.

The console's store indexes it for every pod it watches; the simulator's observer and the
forecast's node pools read running workloads' GPUs through the same rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from kueuetop.kueue.core import Pod
from kueuetop.kueue.workload import JOB_UID_LABEL, Workload

KUEUE_GROUP_PREFIX = "kueue.x-k8s.io/"
Key = tuple[str, str]


def owner_uids(wl: Workload) -> list[str]:
    """The UIDs a Workload is found by from its pods: its owners' (the Job's) and the job-uid label."""
    return [*(o.uid for o in wl.meta.owners), wl.meta.labels.get(JOB_UID_LABEL, "")]


def workload_of_pod(pod: Pod, by_owner_uid: Callable[[str], Iterable[Key]]) -> Key | None:
    """A pod owned by a Workload directly, else the Workload owned by the pod's job (its
    controller's UID, then the pod's own for the plain-pod integration, then other owners)."""
    for o in pod.meta.owners:
        if o.kind == "Workload" and o.api_version.startswith(KUEUE_GROUP_PREFIX):
            return (pod.namespace, o.name)
    for uid in (*(o.uid for o in pod.meta.owners if o.controller), pod.meta.uid,
                *(o.uid for o in pod.meta.owners if not o.controller)):
        for wkey in by_owner_uid(uid):
            if wkey[0] == pod.namespace:
                return wkey
    return None
