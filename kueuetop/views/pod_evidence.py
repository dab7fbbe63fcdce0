"""Why a pod of an admitted workload is where it is, read from what the cluster reported.

One cause per pod, from the pod's own status first (the kubelet's container waiting reasons,
the kube-scheduler's `PodScheduled` condition), then from the nodes of its flavor: free GPUs per
node (allocatable minus the requests of the pods placed there) tell fragmentation (enough GPUs
free in the pool, none on one node) from a pool that has no node yet (an autoscaler scale-up).
Events, when the caller has them (the detail screen fetches a pod's), name the autoscaler's
verdict: `TriggeredScaleUp` / `NotTriggerScaleUp`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kueuetop.kueue.core import GPU_RESOURCE, Node, Pod
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.kueue.workload import PODSET_LABEL, Workload

RUNNING = "running"
DONE = "done"
FAILED = "failed"
GATED = "gated"  # scheduling gates (Kueue's topology or provisioning gates) not lifted yet
STARTING = "starting"  # scheduled, containers being created
SCALE_UP = "scale-up"  # no node of its pool yet, or the autoscaler said it is scaling up
PROVISIONING = "provisioning"  # consumes a ProvisioningRequest whose nodes are not there yet
FRAGMENTED = "fragmentation"  # the pool has the GPUs free, but not on one node
UNSCHEDULABLE = "unschedulable"
IMAGE_PULL = "image-pull"
CRASH_LOOP = "crash-loop"

# How bad each cause is, to pick one per workload (the worst of its pods).
CAUSE_RANK = {IMAGE_PULL: 9, CRASH_LOOP: 9, FAILED: 8, FRAGMENTED: 7, UNSCHEDULABLE: 6, PROVISIONING: 5,
              SCALE_UP: 4, GATED: 3, STARTING: 2, DONE: 1, RUNNING: 0}
NOT_RUNNING = frozenset(CAUSE_RANK) - {RUNNING, DONE}

# Kubelet waiting reasons (kubelet/images and kuberuntime): pulling the image failed …
IMAGE_PULL_REASONS = frozenset({"ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull",
                                "RegistryUnavailable", "SignatureValidationFailed"})
# … or the container keeps failing to start or run.
CRASH_REASONS = frozenset({"CrashLoopBackOff", "RunContainerError", "CreateContainerError",
                           "CreateContainerConfigError", "PreStartHookError", "PostStartHookError"})
CONSUME_PROVREQ_ANNOTATION = "autoscaling.x-k8s.io/consume-provisioning-request"


@dataclass(frozen=True, slots=True)
class PodCause:
    cause: str
    message: str = ""  # the cluster's own words (scheduler message, waiting reason…), or ours


@dataclass(frozen=True, slots=True)
class PoolFit:
    """A flavor's nodes against what one pod needs."""

    flavor: str
    need: int  # GPUs one pod requests
    nodes: int  # nodes of the flavor (labels match)
    ready: int  # … Ready and schedulable
    fit: int  # … with `need` GPUs free
    free: int  # free GPUs on ready nodes, in all
    by_free: tuple[tuple[int, int], ...]  # (free GPUs, nodes with that many), most free first; 0 left out

    @property
    def fragmented(self) -> bool:
        return self.need > 0 and self.fit == 0 and self.free >= self.need

    def text(self) -> str:
        """`gpu-l4-spot: 3 nodes, none with 4 free GPUs: 3 nodes have 2` (people's words)."""
        if not self.nodes:
            return f"no node of flavor {self.flavor} exists (yet)"
        head = f"{self.flavor}: {self.ready}/{self.nodes} nodes ready, {self.fit} with {self.need} free GPUs"
        return head + (f"; {have_text(self.by_free)}" if self.by_free else "; no GPU free")


def have_text(by_free: Sequence[tuple[int, int]], most: int = 3) -> str:
    parts = [f"{n} node{'s' if n != 1 else ''} {'have' if n != 1 else 'has'} {free}" for free, n in by_free[:most]]
    if len(by_free) > most:
        parts.append(f"{sum(n for _, n in by_free[most:])} more have less")
    return ", ".join(parts)


def fragmentation_text(fit: PoolFit) -> str:
    return f"quota is free, but no node in {fit.flavor} has {fit.need} free GPUs: {have_text(fit.by_free)}"


def flavor_matches_node(flavor: ResourceFlavor, node: Node) -> bool:
    """The flavor's nodeLabels are on the node (Kueue injects them as the pod's nodeSelector)."""
    labels = node.meta.labels
    return all(labels.get(k) == v for k, v in flavor.node_labels.items())


def pool_fit(flavor: ResourceFlavor, need: int, nodes: Iterable[Node], free: Mapping[str, int]) -> PoolFit:
    """`free`: free GPUs by node name (allocatable minus placed pods' requests)."""
    n = ready = fit = total = 0
    hist: dict[int, int] = {}
    for node in nodes:
        if not flavor_matches_node(flavor, node):
            continue
        n += 1
        if not node.ready or node.unschedulable:
            continue
        ready += 1
        f = max(0, free.get(node.name, node.gpus))
        total += f
        fit += f >= need
        if f:
            hist[f] = hist.get(f, 0) + 1
    return PoolFit(flavor.name, need, n, ready, fit, total, tuple(sorted(hist.items(), reverse=True)))


def pod_flavor(wl: Workload | None, pod: Pod) -> str:
    """The flavor Kueue assigned to the pod's pod set for GPUs (else its first flavor)."""
    if wl is None or wl.admission is None:
        return ""
    ps = pod.meta.labels.get(PODSET_LABEL, "")
    psas = wl.admission.pod_set_assignments
    psa = next((a for a in psas if a.name == ps), psas[0] if len(psas) == 1 else None)
    if psa is None:
        return ""
    return psa.flavors.get(GPU_RESOURCE) or next(iter(psa.flavors.values()), "")


def scheduled_condition(pod: Pod) -> tuple[str, str, str] | None:
    """(status, reason, message) of PodScheduled, if the scheduler wrote it."""
    c = next((c for c in pod.conditions if c.type == "PodScheduled"), None)
    return (c.status, c.reason, c.message) if c is not None else None


# Pod Events that tell where a pending pod stands (kube-scheduler's, cluster-autoscaler's).
SCHEDULING_EVENT_REASONS = frozenset({"FailedScheduling", "TriggeredScaleUp", "NotTriggerScaleUp"})


def pod_cause(pod: Pod, fit: PoolFit | None = None, events: Sequence[tuple[str, str]] = ()) -> PodCause:
    """The one cause of where `pod` is. `fit`: its flavor's nodes against its request;
    `events`: its (reason, message) Events, oldest first, when the caller fetched them."""
    for c in pod.containers:
        if c.waiting_reason in IMAGE_PULL_REASONS:
            return PodCause(IMAGE_PULL, f"{c.name}: {c.waiting_reason}" + (f": {c.waiting_message}" if c.waiting_message else ""))
    for c in pod.containers:
        if c.waiting_reason in CRASH_REASONS:
            why = f", last exit {c.last_terminated_reason}" if c.last_terminated_reason else ""
            return PodCause(CRASH_LOOP, f"{c.name}: {c.waiting_reason} ({c.restarts} restarts{why})")
    if pod.phase == "Succeeded":
        return PodCause(DONE)
    if pod.phase == "Failed":
        reason = next((c.terminated_reason for c in pod.containers if c.terminated_reason), "")
        return PodCause(FAILED, reason)
    if pod.phase == "Running":
        return PodCause(RUNNING)
    if pod.scheduling_gates:
        return PodCause(GATED, "scheduling gates: " + ", ".join(pod.scheduling_gates))
    sched = scheduled_condition(pod)
    if pod.node_name or (sched is not None and sched[0] == "True"):
        waiting = next((c for c in pod.containers if c.waiting_reason), None)
        return PodCause(STARTING, f"{waiting.name}: {waiting.waiting_reason}" if waiting else "on " + (pod.node_name or "?"))
    message = sched[2] if sched is not None else ""
    # The autoscaler's latest word about this pod, newer than the scheduler's last failure.
    autoscaler = ""
    for reason, text in reversed(events):
        if reason == "TriggeredScaleUp":
            return PodCause(SCALE_UP, text)  # a node is coming: that is what the pod waits for
        if reason == "NotTriggerScaleUp":
            autoscaler = text
            break
        if reason == "FailedScheduling":
            message = message or text
            break
    if pod.meta.annotations.get(CONSUME_PROVREQ_ANNOTATION):
        return PodCause(PROVISIONING, f"waiting for the nodes of ProvisioningRequest "
                                      f"{pod.meta.annotations[CONSUME_PROVREQ_ANNOTATION]}")
    if fit is not None and fit.fragmented:
        # Named first even when the autoscaler declined: free GPUs scattered over the pool's
        # nodes are the cause, and no new node is coming to hide it.
        return PodCause(FRAGMENTED, fragmentation_text(fit) + (f"; autoscaler: {autoscaler}" if autoscaler else ""))
    if autoscaler:
        return PodCause(UNSCHEDULABLE, f"{message}; autoscaler: {autoscaler}" if message else autoscaler)
    if fit is not None and fit.ready == 0:
        return PodCause(SCALE_UP, f"no ready node of flavor {fit.flavor} yet" + (f" ({message})" if message else ""))
    if sched is None:
        return PodCause(STARTING, "not scheduled yet")
    return PodCause(UNSCHEDULABLE, message or sched[1] or "unschedulable")


def free_gpus(nodes: Iterable[Node], pods: Iterable[Pod]) -> dict[str, int]:
    """Free GPUs by node: allocatable minus the GPU requests of the pods placed there that still
    hold them (not Succeeded or Failed)."""
    used: dict[str, int] = {}
    for p in pods:
        if p.node_name and p.phase not in ("Succeeded", "Failed"):
            used[p.node_name] = used.get(p.node_name, 0) + p.gpus
    return {n.name: n.gpus - used.get(n.name, 0) for n in nodes}
