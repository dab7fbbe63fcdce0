"""What a forecast answers, per pending workload: when it is admitted, on which flavors, after whom.

The types shared by the forecast (`admission/forecast.py`), the runtime estimates
(`admission/runtime_estimate.py`), the what-if changes and the views: plain frozen data, so a
forecast computed on the console's worker can be handed to the UI thread as it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

WorkloadKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class RuntimeEstimate:
    """How long a workload runs once admitted (seconds), as a range with the reason for it."""

    expected: float
    optimistic: float  # ≤ expected
    pessimistic: float  # ≥ expected
    basis: str  # "12 finished runs of this shape in team-a/lq-a", "maximumExecutionTimeSeconds 3600", …
    upper_bound: float | None = None  # a hard limit Kueue or the Job enforces, when one is set
    note: str = ""  # why a stated bound was not used ("label … is not a number"), "" when none
    # The runtime the expected forward run gives it, when not `expected`: a quantile of its
    # distribution at its place among its peers, so that they finish spread as they will
    # (runtime_estimate._spread_over_peers).
    in_run: float | None = None

    @property
    def forward(self) -> float:
        """What the expected forward run takes its runtime to be."""
        return self.expected if self.in_run is None else self.in_run


@dataclass(frozen=True, slots=True)
class PodSetFlavors:
    name: str
    flavors: Mapping[str, str]  # resource → flavor


@dataclass(frozen=True, slots=True)
class WorkloadForecast:
    key: WorkloadKey
    cluster_queue: str
    start: float | None  # predicted admission time (epoch seconds) with expected runtimes; None: never
    earliest: float | None = None  # with every runtime at its optimistic end
    latest: float | None = None  # with every runtime at its pessimistic end
    flavors: tuple[PodSetFlavors, ...] = ()  # what the engine assigns it (expected runtimes)
    after: tuple[WorkloadKey, ...] = ()  # the workloads whose completion or eviction lets it in
    preempts: tuple[WorkloadKey, ...] = ()  # what its admission would preempt
    never: str = ""  # why it can never be admitted (explain's verdict), when start is None
    pods_start: float | None = None  # when its pods can run (nodes free or scaled up); None: unknown


@dataclass(frozen=True)
class Forecast:
    at: float  # the snapshot's instant
    horizon: float  # how far virtual time was run (epoch seconds)
    workloads: Mapping[WorkloadKey, WorkloadForecast] = field(default_factory=dict)
    runtimes: Mapping[WorkloadKey, RuntimeEstimate] = field(default_factory=dict)
    complete: bool = True  # False: the horizon or the step limit ended the run before every workload was placed
    ranged: bool = True  # earliest / latest come from runs at the runtimes' ends (False: they are the start)
    pods_placed: bool = False  # pods waited for the node pools' GPUs (pods_start is theirs); else ran when admitted
    pods_note: str = ""  # what the caller knew of the pools, in words ("pods run when admitted (…: why)")


@dataclass(frozen=True, slots=True)
class PoolCapacity:
    """One node pool as the forecast sees it: where admitted pods can run, and how it grows.

    Kueue admits on quota alone; pods then need nodes. A forecast of when pods start reads the
    pools of the flavors' nodes: GPUs free on each Ready, schedulable node now, how many nodes
    the autoscaler may add and how long a new node takes to become Ready."""

    name: str
    node_labels: Mapping[str, str]  # labels every node of the pool carries (a flavor's nodeLabels select it)
    gpus_per_node: int
    free_gpus: tuple[int, ...]  # per current Ready, schedulable node
    max_nodes: int  # the autoscaler's limit (= len(free_gpus) when the pool cannot grow)
    provisioning_delay: float = 0.0  # seconds from a scale-up to a Ready node
    coming: tuple[float, ...] = ()  # when the nodes already asked for (a scale-up in flight) are Ready
    # Grown only for ProvisioningRequests (GKE's queued provisioning): cluster-autoscaler does not
    # scale it for pods that merely wait.
    queued: bool = False
