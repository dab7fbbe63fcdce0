"""Core Kubernetes kinds kueuetop reads: Node, Pod, Job, Namespace."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kueuetop.kueue.fields import Fields, object_fields
from kueuetop.kueue.meta import Condition, Meta, condition_true, parse_conditions, parse_meta
from kueuetop.kueue.pod_requests import PodShape, parse_pod_shape
from kueuetop.kueue.scheduling_terms import Taint, parse_taints

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache

GPU_RESOURCE = "nvidia.com/gpu"


@dataclass(frozen=True, slots=True)
class Node:
    meta: Meta
    capacity: Mapping[str, int] = field(default_factory=dict)
    allocatable: Mapping[str, int] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    conditions: tuple[Condition, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def ready(self) -> bool:
        return condition_true(self.conditions, "Ready")

    @property
    def gpus(self) -> int:
        return self.allocatable.get(GPU_RESOURCE, self.capacity.get(GPU_RESOURCE, 0))


def parse_node(data: Mapping, cache: ParseCache | None = None) -> Node:
    f, _, _ = object_fields(data, "Node", cache)
    spec = f.sub("spec")
    status = f.sub("status")
    return Node(
        meta=parse_meta(f),
        capacity=status.resources("capacity"),
        allocatable=status.resources("allocatable"),
        taints=parse_taints(spec, "taints"),
        unschedulable=spec.bool("unschedulable", False),
        conditions=parse_conditions(status),
    )


@dataclass(frozen=True, slots=True)
class ContainerState:
    """One container's status as the kubelet reports it (status.containerStatuses[])."""

    name: str
    ready: bool = False
    restarts: int = 0
    waiting_reason: str = ""  # ImagePullBackOff, ErrImagePull, CrashLoopBackOff, ContainerCreating…
    waiting_message: str = ""
    terminated_reason: str = ""  # Error, OOMKilled, Completed…
    last_terminated_reason: str = ""  # lastState.terminated.reason: why it restarted
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class Pod:
    meta: Meta
    shape: PodShape
    node_name: str = ""
    phase: str = "Pending"
    scheduling_gates: tuple[str, ...] = ()
    conditions: tuple[Condition, ...] = ()
    start_time: float | None = None
    containers: tuple[ContainerState, ...] = ()  # regular and init containers, as reported

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def gpus(self) -> int:
        return self.shape.requests.get(GPU_RESOURCE, 0)

    @property
    def restarts(self) -> int:
        return sum(c.restarts for c in self.containers)


def _container_states(status: Fields) -> tuple[ContainerState, ...]:
    if not status.raw("containerStatuses") and not status.raw("initContainerStatuses"):
        return ()  # the usual case of a pod not yet started: nothing to parse
    out = []
    for key in ("initContainerStatuses", "containerStatuses"):
        for c in status.items(key):
            state, last = c.sub("state"), c.sub("lastState")
            waiting, term = state.sub("waiting"), state.sub("terminated")
            out.append(ContainerState(
                name=c.str("name"), ready=c.bool("ready", False), restarts=c.int("restartCount", 0, minimum=0),
                waiting_reason=waiting.str("reason"), waiting_message=waiting.str("message"),
                terminated_reason=term.str("reason"), last_terminated_reason=last.sub("terminated").str("reason"),
                exit_code=term.opt_int("exitCode") if state.has("terminated") else None))
    return tuple(out)


def parse_pod(data: Mapping, cache: ParseCache | None = None) -> Pod:
    f, _, _ = object_fields(data, "Pod", cache)
    spec = f.sub("spec")
    status = f.sub("status")
    return Pod(
        meta=parse_meta(f),
        shape=parse_pod_shape(spec),
        node_name=spec.str("nodeName"),
        phase=status.str("phase", "Pending"),
        scheduling_gates=tuple(g.str("name") for g in spec.items("schedulingGates")),
        conditions=parse_conditions(status),
        start_time=status.time("startTime"),
        containers=_container_states(status),
    )


@dataclass(frozen=True, slots=True)
class Job:
    meta: Meta
    shape: PodShape
    parallelism: int = 1
    completions: int | None = None
    suspend: bool = False
    active: int = 0
    succeeded: int = 0
    failed: int = 0
    start_time: float | None = None
    completion_time: float | None = None
    conditions: tuple[Condition, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def namespace(self) -> str:
        return self.meta.namespace

    @property
    def pod_count(self) -> int:
        """Pods Kueue asks quota for: parallelism, capped by completions (jobframework)."""
        if self.completions is not None:
            return min(self.parallelism, self.completions)
        return self.parallelism


def parse_job(data: Mapping, cache: ParseCache | None = None) -> Job:
    f, _, _ = object_fields(data, "Job", cache)
    spec = f.sub("spec")
    status = f.sub("status")
    return Job(
        meta=parse_meta(f),
        shape=parse_pod_shape(spec.sub("template").sub("spec")),
        parallelism=spec.int("parallelism", 1, minimum=0),
        completions=spec.opt_int("completions", minimum=0),
        suspend=spec.bool("suspend", False),
        active=status.int("active"),
        succeeded=status.int("succeeded"),
        failed=status.int("failed"),
        start_time=status.time("startTime"),
        completion_time=status.time("completionTime"),
        conditions=parse_conditions(status),
    )


@dataclass(frozen=True, slots=True)
class Namespace:
    meta: Meta

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def labels(self) -> Mapping[str, str]:
        # The API server always sets this label; Kueue's namespaceSelector can rely on it.
        return {"kubernetes.io/metadata.name": self.meta.name, **self.meta.labels}


def parse_namespace(data: Mapping, cache: ParseCache | None = None) -> Namespace:
    f, _, _ = object_fields(data, "Namespace", cache)
    return Namespace(parse_meta(f))
