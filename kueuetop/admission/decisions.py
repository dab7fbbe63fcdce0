"""What the engine decides. The simulator writes these into API objects as Kueue would;
explain and what-if read them. Every decision names its workload (or queue) by key."""

from __future__ import annotations

from dataclasses import dataclass

from kueuetop.kueue.workload import PodSetAssignment

WorkloadKey = tuple[str, str]

# Eviction reasons (Evicted condition / kueue_evicted_workloads_total{reason}).
PREEMPTED = "Preempted"
PODS_READY_TIMEOUT = "PodsReadyTimeout"
ADMISSION_CHECK = "AdmissionCheck"
CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
DEACTIVATED = "Deactivated"

# Preempted condition reasons.
IN_CLUSTER_QUEUE = "InClusterQueue"
IN_COHORT_RECLAMATION = "InCohortReclamation"
IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

# Deactivation causes (DeactivationTarget reason / underlying_cause).
REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"
MAXIMUM_EXECUTION_TIME_EXCEEDED = "MaximumExecutionTimeExceeded"


@dataclass(frozen=True, slots=True)
class Admit:
    """Reserve quota (QuotaReserved=True); Admitted too when no admission check applies."""

    workload: WorkloadKey
    cluster_queue: str
    assignments: tuple[PodSetAssignment, ...]
    checks: tuple[str, ...] = ()  # admission checks the workload must pass before Admitted
    borrowing: bool = False

    @property
    def admitted(self) -> bool:
        return not self.checks


@dataclass(frozen=True, slots=True)
class Preempt:
    """Evict `victim` (reason Preempted) to make room for `preemptor`."""

    victim: WorkloadKey
    preemptor: WorkloadKey
    reason: str  # InClusterQueue | InCohortReclamation | InCohortFairSharing | InCohortReclaimWhileBorrowing
    message: str


@dataclass(frozen=True, slots=True)
class Pending:
    """Not admitted this cycle: QuotaReserved=False with Kueue's reason and message."""

    workload: WorkloadKey
    reason: str
    message: str
    inadmissible: bool = False  # parked in the inadmissible set (BestEffortFIFO)
    preempting: int = 0  # victims this workload waits for


@dataclass(frozen=True, slots=True)
class Evict:
    """Evict for a reason other than preemption (stop policy, PodsReady timeout, checks, deactivation)."""

    workload: WorkloadKey
    reason: str
    message: str
    underlying_cause: str = ""
    requeue_at: float | None = None  # backoff end for PodsReadyTimeout / AdmissionCheck retries
    requeue_count: int | None = None


@dataclass(frozen=True, slots=True)
class ReleaseReservation:
    """Drop a quota reservation that never became Admitted (queue put on Hold)."""

    workload: WorkloadKey
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Deactivate:
    """Set spec.active=false (DeactivationTarget) for a cause."""

    workload: WorkloadKey
    cause: str
    message: str


@dataclass(frozen=True, slots=True)
class Requeue:
    """Requeued=True: the workload may be considered again (backoff over, reactivated, queue resumed)."""

    workload: WorkloadKey
    reason: str  # BackoffFinished | Reactivated | ClusterQueueRestarted | LocalQueueRestarted
    message: str


@dataclass(frozen=True, slots=True)
class MarkAdmitted:
    """QuotaReserved and every admission check Ready → Admitted=True."""

    workload: WorkloadKey
    message: str = "The workload is admitted"


@dataclass(frozen=True, slots=True)
class ResetRequeueState:
    """An inactive workload that is already evicted: drop status.requeueState and DeactivationTarget.

    Kueue's workload controller does this for deactivated workloads (the deactivation "prepare"
    step), which is how deactivate + reactivate resets a backoff.
    """

    workload: WorkloadKey


Decision = (Admit | Preempt | Pending | Evict | ReleaseReservation | Deactivate | Requeue | MarkAdmitted
            | ResetRequeueState)
