"""Kueue's own /metrics, derived from the simulated cluster's objects and counters."""

from __future__ import annotations

import math
import subprocess

import pytest

from kueuetop.admission.queue_state import QueueState
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.sim.kueue.metrics import (
    ADMISSION_WAIT_BUCKETS,
    KueueCounters,
    exponential_buckets,
    go_float,
    render_kueue_metrics,
)
from kueuetop.sim.kueue.queue_view import queued_workloads
from kueuetop.sources.exposition import ParseStats, Sample, family_of, parse_exposition
from tests.binaries import require_binary
from tests.builders import (
    admit,
    cluster_queue,
    cohort,
    condition,
    flavor,
    fq,
    group,
    local_queue,
    ts,
    workload,
)

GPU = "nvidia.com/gpu"
NOW = 1_700_000_000.0


def cq_team_a(**kw) -> dict:
    return cluster_queue(
        "team-a",
        group(["cpu", "memory", GPU],
              fq("l4-reserved", cpu="96", memory="384Gi", **{GPU: 8}),
              fq("l4-spot", cpu=("48", "10"), memory="192Gi", **{GPU: ("4", None, "2")})),
        cohort="batch", **kw)


def cq_team_b(**kw) -> dict:
    return cluster_queue("team-b", group(["cpu"], fq("l4-reserved", cpu="1500m")), cohort="batch", **kw)


def pending(name: str, queue: str = "lq", ns: str = "team-a", reason: str | None = None, **kw) -> dict:
    wl = workload(ns, name, queue, {"cpu": "4"}, **kw)
    if reason:
        wl["status"]["conditions"] = [condition("QuotaReserved", False, reason, "couldn't fit")]
    return wl


def gpu_job(name: str, ns: str = "team-a", queue: str = "lq", admitted: bool = True, pc: str = "") -> dict:
    wl = workload(ns, name, queue, {"cpu": "4", "memory": "16Gi", GPU: "1"}, count=2)
    if pc:
        wl["spec"]["priorityClassRef"] = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": pc}
    flavors = {"cpu": "l4-reserved", "memory": "l4-reserved", GPU: "l4-reserved"}
    return admit(wl, "team-a", flavors, admitted=admitted)


def finished(wl: dict) -> dict:
    wl["status"]["conditions"].append(condition("Finished", True, "Succeeded"))
    return wl


def controller_view(cqs, lqs, wls, cohorts=(), parked=(), now=NOW, parked_generation=None):
    """The Kueue controller's snapshot of these objects (what it cannot parse it never holds) and
    its pending workloads: `parked` in its inadmissible set (at `parked_generation`, default: the
    current)."""
    objs = []
    for o in [*cqs, *lqs, *wls, *cohorts, flavor("l4-reserved"), flavor("l4-spot")]:
        try:
            objs.append(parse_object(o))
        except (KueueParseError, AttributeError, TypeError, KeyError):
            continue
    snap = ClusterSnapshot.from_objects(objs)
    inadmissible: dict = {}
    for key in parked:
        wl = snap.workloads[key]
        cq = snap.cluster_queue_of(wl)
        gen = wl.meta.generation if parked_generation is None else parked_generation
        inadmissible.setdefault(cq, {})[key] = gen
    return snap, queued_workloads(snap, QueueState(inadmissible=inadmissible), now)


def render(cqs, lqs, wls, cohorts=(), counters=None, *, parked=(), now=NOW, parked_generation=None,
           **kw) -> tuple[list[Sample], ParseStats, str]:
    snap, q = controller_view(cqs, lqs, wls, cohorts, parked, now, parked_generation)
    text = render_kueue_metrics(snap, q, counters, **kw)
    stats = ParseStats()
    samples = list(parse_exposition(text, stats))
    assert stats.skipped == 0, stats.errors
    return samples, stats, text


def value(samples: list[Sample], metric: str, /, **labels: str) -> float:
    hits = [s.value for s in samples if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(hits) == 1, (metric, labels, hits)
    return hits[0]


def scenario(counters: KueueCounters | None = None):
    cqs = [cq_team_a(), cq_team_b()]
    lqs = [local_queue("team-a", "lq", "team-a"), local_queue("team-b", "lq", "team-b")]
    wls = [
        gpu_job("running-1", pc="high"),
        gpu_job("running-2"),
        gpu_job("waiting-checks", admitted=False),  # quota reserved, admission checks pending
        finished(gpu_job("done")),
        pending("fresh"),  # never tried: active
        pending("tried", reason="Pending"),  # parked by the controller after a failed attempt
        pending("held", active=False),  # deactivated: in no queue
        pending("orphan", queue="missing-lq"),  # no LocalQueue: in no queue
        pending("b-1", ns="team-b"),
    ]
    return render(cqs, lqs, wls, [cohort("batch", parent="org"), cohort("org")], counters,
                  parked=[("team-a", "tried")])


def test_workload_gauges_match_the_objects():
    samples, _, _ = scenario()
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="active") == 1
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="inadmissible") == 1
    assert value(samples, "kueue_reserving_active_workloads", cluster_queue="team-a") == 3
    assert value(samples, "kueue_admitted_active_workloads", cluster_queue="team-a") == 2
    assert value(samples, "kueue_finished_workloads", cluster_queue="team-a") == 1
    assert value(samples, "kueue_local_queue_pending_workloads", name="lq", namespace="team-a", status="active") == 1
    assert value(samples, "kueue_local_queue_reserving_active_workloads", name="lq", namespace="team-a") == 3
    assert value(samples, "kueue_local_queue_admitted_active_workloads", name="lq", namespace="team-a") == 2


def test_inactive_queue_reports_all_pending_as_inadmissible():
    stopped = cq_team_a(stop_policy="Hold")
    stopped["status"] = {"conditions": [condition("Active", False, "Stopped")]}
    lqs = [local_queue("team-a", "lq", "team-a")]
    samples, _, _ = render([stopped], lqs, [pending("a"), pending("b"), pending("c", reason="Pending")])
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="active") == 0
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="inadmissible") == 3
    assert value(samples, "kueue_cluster_queue_status", cluster_queue="team-a", status="pending") == 1
    assert value(samples, "kueue_cluster_queue_status", cluster_queue="team-a", status="active") == 0
    assert value(samples, "kueue_local_queue_status", name="lq", namespace="team-a", active="False") == 1


def test_backoff_is_inadmissible_until_requeue_at():
    lqs = [local_queue("team-a", "lq", "team-a")]
    wl = pending("backoff")
    wl["status"]["requeueState"] = {"count": 1, "requeueAt": ts(NOW + 60)}
    during, _, _ = render([cq_team_a()], lqs, [wl], now=NOW)
    after, _, _ = render([cq_team_a()], lqs, [wl], now=NOW + 120)
    assert value(during, "kueue_pending_workloads", cluster_queue="team-a", status="inadmissible") == 1
    assert value(after, "kueue_pending_workloads", cluster_queue="team-a", status="active") == 1


def test_inadmissible_is_the_controllers_parked_set_at_the_workloads_generation():
    lqs = [local_queue("team-a", "lq", "team-a")]
    wls = [pending("a"), pending("b", reason="Pending")]  # b's condition alone parks nothing
    samples, _, _ = render([cq_team_a()], lqs, wls, parked=[("team-a", "a")])
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="inadmissible") == 1
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="active") == 1
    # Parked at an older generation: its spec changed since, so Kueue queues it again.
    samples, _, _ = render([cq_team_a()], lqs, wls, parked=[("team-a", "a")], parked_generation=-1)
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="inadmissible") == 0


def test_a_stopped_local_queue_holds_no_pending_workloads():
    """As the controller's LocalQueue status says (pendingWorkloads 0): its workloads are in no queue."""
    lqs = [local_queue("team-a", "lq", "team-a", stop_policy="Hold")]
    samples, _, _ = render([cq_team_a()], lqs, [pending("a")])
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="active") == 0
    assert value(samples, "kueue_pending_workloads", cluster_queue="team-a", status="inadmissible") == 0


def test_quota_gauges_in_kueue_units():
    samples, _, _ = scenario()
    labels = {"cluster_queue": "team-a", "cohort": "batch", "flavor": "l4-reserved"}
    assert value(samples, "kueue_cluster_queue_nominal_quota", resource="cpu", **labels) == 96
    assert value(samples, "kueue_cluster_queue_nominal_quota", resource="memory", **labels) == 384 * 2**30
    assert value(samples, "kueue_cluster_queue_nominal_quota", resource=GPU, **labels) == 8
    assert value(samples, "kueue_cluster_queue_nominal_quota", cluster_queue="team-b", resource="cpu") == 1.5
    assert value(samples, "kueue_cluster_queue_borrowing_limit", resource="cpu", **labels) == math.inf
    spot = {**labels, "flavor": "l4-spot"}
    assert value(samples, "kueue_cluster_queue_borrowing_limit", resource="cpu", **spot) == 10
    assert value(samples, "kueue_cluster_queue_lending_limit", resource=GPU, **spot) == 2
    assert value(samples, "kueue_cluster_queue_lending_limit", resource="cpu", **spot) == math.inf


def test_reservation_and_usage():
    samples, _, text = scenario()
    labels = {"cluster_queue": "team-a", "flavor": "l4-reserved"}
    # Three workloads hold quota (2 pods × 4 cpu, 16Gi, 1 GPU each); two of them are admitted.
    assert value(samples, "kueue_cluster_queue_resource_reservation", resource="cpu", **labels) == 24
    assert value(samples, "kueue_cluster_queue_resource_usage", resource="cpu", **labels) == 16
    assert value(samples, "kueue_cluster_queue_resource_reservation", resource="memory", **labels) == 3 * 32 * 2**30
    assert value(samples, "kueue_cluster_queue_resource_usage", resource=GPU, **labels) == 4
    assert value(samples, "kueue_cluster_queue_resource_usage", resource=GPU, cluster_queue="team-a",
                 flavor="l4-spot") == 0
    assert value(samples, "kueue_local_queue_resource_usage", name="lq", namespace="team-a", flavor="l4-reserved",
                 resource=GPU) == 4
    # Memory prints as client_golang does.
    assert 'resource="memory"} 1.03079215104e+11' in text


def test_quotas_in_any_quantity_form_report_kueues_values():
    """Kueue exports its int64 resource values (milli-cpu, whole units rounded up otherwise) as
    floats (v0.19: pkg/resources/amount.go AsApproximateFloat64, via clusterQueue.reportResourceMetrics):
    the spelling of a quantity changes nothing, and sums are exact."""
    cqs = [cluster_queue("dec", group(["cpu", "memory"], fq("l4-reserved", cpu="0.5", memory="1Gi"),
                                      fq("l4-spot", cpu="333m", memory="1.5"))),
           cluster_queue("milli", group(["cpu", "memory"], fq("l4-reserved", cpu="500m", memory="1073741824"),
                                        fq("l4-spot", cpu="0.333", memory="2"))),
           # Past int64 (Kueue: AmountFromQuantity's Unlimited), exported as +Inf.
           cluster_queue("huge", group(["cpu", "memory"], fq("l4-reserved", cpu="1E", memory="1000000000Ti")))]
    lqs = [local_queue("team-a", "lq", "dec")]
    wls = [admit(workload("team-a", f"w{i}", "lq", {"cpu": "100m"}), "dec", {"cpu": "l4-reserved"})
           for i in range(3)]
    samples, _, _ = render(cqs, lqs, wls)

    def quota(cq: str, flavor: str, resource: str) -> float:
        return value(samples, "kueue_cluster_queue_nominal_quota", cluster_queue=cq, flavor=flavor, resource=resource)

    for cq in ("dec", "milli"):
        assert quota(cq, "l4-reserved", "cpu") == 0.5
        assert quota(cq, "l4-reserved", "memory") == 1073741824
        assert quota(cq, "l4-spot", "cpu") == 0.333
        assert quota(cq, "l4-spot", "memory") == 2  # 1.5 bytes: Kueue's Value() rounds up
    assert quota("huge", "l4-reserved", "cpu") == math.inf
    assert quota("huge", "l4-reserved", "memory") == math.inf
    # 3 × 100m is 300 milli-cpu, exported as 0.3 (not 0.1 + 0.1 + 0.1).
    assert value(samples, "kueue_cluster_queue_resource_reservation", cluster_queue="dec", flavor="l4-reserved",
                 resource="cpu") == 0.3
    assert value(samples, "kueue_local_queue_resource_usage", name="lq", namespace="team-a", flavor="l4-reserved",
                 resource="cpu") == 0.3


def test_an_admitted_workload_counts_until_evicted_even_when_deactivated():
    """Kueue's cache counts a workload in admitted_active_workloads while it holds an admission,
    spec.active or not (clusterQueue.updateWorkloadUsage), as ClusterQueue status does; the
    eviction that follows deactivation releases it."""
    wl = gpu_job("switched-off")
    wl["spec"]["active"] = False
    samples, _, _ = render([cq_team_a()], [local_queue("team-a", "lq", "team-a")], [wl])
    assert value(samples, "kueue_admitted_active_workloads", cluster_queue="team-a") == 1
    assert value(samples, "kueue_local_queue_admitted_active_workloads", name="lq", namespace="team-a") == 1


def test_the_controllers_kept_totals_are_the_snapshots_sums():
    """The served /metrics reads the QueueTotals the Kueue controller keeps; they must say what
    summing the snapshot's workloads says (at a busy instant of a built-in scenario)."""
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.runner import VIRTUAL_EPOCH
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.wiring import build_cluster

    parts = build_cluster(load_scenario("incident"), SimClock(VIRTUAL_EPOCH))
    parts.cluster.run_for(300)
    kueue = parts.kueue
    snap = kueue.snapshot()
    q = queued_workloads(snap, kueue.state, parts.cluster.now, kueue.cache.workload_index(snap))
    kept = render_kueue_metrics(snap, q, totals=kueue.queue_totals)
    assert "kueue_cluster_queue_resource_reservation{" in kept
    assert kept == render_kueue_metrics(snap, q)


def test_reclaimable_pods_release_quota():
    wl = gpu_job("shrinking")
    wl["status"]["reclaimablePods"] = [{"name": "main", "count": 1}]
    samples, _, _ = render([cq_team_a()], [local_queue("team-a", "lq", "team-a")], [wl])
    assert value(samples, "kueue_cluster_queue_resource_usage", cluster_queue="team-a", flavor="l4-reserved",
                 resource="cpu") == 4


def test_cohort_metrics():
    samples, _, _ = scenario()
    assert value(samples, "kueue_cohort_info", cohort="batch") == 1
    batch = next(s for s in samples if s.name == "kueue_cohort_info" and s.labels["cohort"] == "batch")
    assert batch.labels["parent_cohort"] == "org" and batch.labels["root_cohort"] == "org"
    info = next(s for s in samples if s.name == "kueue_cluster_queue_info" and s.labels["cluster_queue"] == "team-b")
    assert info.labels == {"cluster_queue": "team-b", "parent_cohort": "batch", "root_cohort": "org",
                           "replica_role": "standalone"}
    # Subtree quota: sum of members' nominal quota, capped by each member's lendingLimit.
    assert value(samples, "kueue_cohort_subtree_quota", cohort="batch", flavor="l4-reserved", resource="cpu") == 97.5
    assert value(samples, "kueue_cohort_subtree_quota", cohort="batch", flavor="l4-spot", resource=GPU) == 2
    assert value(samples, "kueue_cohort_subtree_quota", cohort="org", flavor="l4-spot", resource=GPU) == 2
    assert value(samples, "kueue_cohort_subtree_resource_reservations", cohort="org", flavor="l4-reserved",
                 resource=GPU) == 6
    assert value(samples, "kueue_cohort_subtree_admitted_active_workloads", cohort="org") == 2


def test_cohort_cycle_does_not_hang():
    samples, _, _ = render([cq_team_a()], [], [], [cohort("x", parent="y"), cohort("y", parent="x"),
                                                    cohort("batch", parent="x")])
    assert value(samples, "kueue_cohort_info", cohort="batch") == 1
    # Kueue: clusterQueue.parentAndRootCohort is empty under a cycle; collectCohortMetricPoints
    # reports no subtree series for it.
    info = next(s for s in samples if s.name == "kueue_cluster_queue_info")
    assert info.labels["parent_cohort"] == "" and info.labels["root_cohort"] == ""
    assert not [s for s in samples if s.name.startswith("kueue_cohort_subtree")]


def test_counters_and_histograms():
    c = KueueCounters()
    for wait in (0.5, 3.0, 42.0, 99999.0):
        c.record_admitted("team-a", "team-a", "lq", "high", wait)
    c.record_quota_reserved("team-a", "team-a", "lq", "high", 2.0)
    c.record_eviction("team-a", "team-a", "lq", "Deactivated", "RequeuingLimitExceeded", "high")
    c.record_eviction("team-a", "team-a", "lq", "Preempted", "", "")
    c.record_preemption("team-b", "InCohortReclamation")
    c.record_admission_attempt("success", 0.004)
    c.record_admission_attempt("inadmissible", 0.2)
    c.record_finished("team-a", "team-a", "lq", "high", 3600.0)
    samples, stats, _ = scenario(c)
    assert value(samples, "kueue_admitted_workloads_total", cluster_queue="team-a", priority_class="high") == 4
    assert value(samples, "kueue_evicted_workloads_total", cluster_queue="team-a", reason="Deactivated",
                 underlying_cause="RequeuingLimitExceeded", priority_class="high") == 1
    assert value(samples, "kueue_evicted_workloads_total", reason="Preempted", underlying_cause="") == 1
    assert value(samples, "kueue_preempted_workloads_total", preempting_cluster_queue="team-b",
                 reason="InCohortReclamation") == 1
    assert value(samples, "kueue_admission_attempts_total", result="inadmissible") == 1
    assert value(samples, "kueue_local_queue_evicted_workloads_total", name="lq", reason="Deactivated") == 1
    assert value(samples, "kueue_cohort_subtree_admitted_workloads_total", cohort="org", priority_class="high") == 4
    # Histogram: Kueue's buckets (1, 2.5, 5 … 40960), cumulative counts, +Inf = count.
    assert stats.types["kueue_admission_wait_time_seconds"] == "histogram"
    buckets = [s for s in samples if s.name == "kueue_admission_wait_time_seconds_bucket"]
    les = [s.labels["le"] for s in buckets]
    assert les == [go_float(b) for b in ADMISSION_WAIT_BUCKETS] + ["+Inf"]
    assert les[:4] == ["1", "2.5", "5", "10"] and les[-2] == "40960"
    counts = [s.value for s in buckets]
    assert counts[0] == 1 and counts[1] == 1 and counts[2] == 2 and counts[-2] == 3 and counts[-1] == 4
    assert counts == sorted(counts)
    assert value(samples, "kueue_admission_wait_time_seconds_count") == 4
    assert value(samples, "kueue_admission_wait_time_seconds_sum") == 0.5 + 3 + 42 + 99999
    assert all(family_of(s.name, stats.types) == "kueue_admission_wait_time_seconds"
               for s in samples if s.name.startswith("kueue_admission_wait_time_seconds"))


def test_label_names_and_replica_role():
    c = KueueCounters()
    c.record_admitted("team-a", "team-a", "lq", "", 1.0)
    c.record_eviction("team-a", "team-a", "lq", "Preempted", "", "")
    c.record_preemption("team-a", "InClusterQueue")
    samples, _, _ = scenario(c)
    expected = {
        "kueue_pending_workloads": {"cluster_queue", "status"},
        "kueue_reserving_active_workloads": {"cluster_queue"},
        "kueue_admitted_active_workloads": {"cluster_queue"},
        "kueue_admitted_workloads_total": {"cluster_queue", "priority_class"},
        "kueue_evicted_workloads_total": {"cluster_queue", "reason", "underlying_cause", "priority_class"},
        "kueue_preempted_workloads_total": {"preempting_cluster_queue", "reason"},
        "kueue_cluster_queue_status": {"cluster_queue", "status"},
        "kueue_cluster_queue_resource_reservation": {"cohort", "cluster_queue", "flavor", "resource"},
        "kueue_cluster_queue_resource_usage": {"cohort", "cluster_queue", "flavor", "resource"},
        "kueue_cluster_queue_nominal_quota": {"cohort", "cluster_queue", "flavor", "resource"},
        "kueue_cluster_queue_borrowing_limit": {"cohort", "cluster_queue", "flavor", "resource"},
        "kueue_cluster_queue_lending_limit": {"cohort", "cluster_queue", "flavor", "resource"},
        "kueue_local_queue_pending_workloads": {"name", "namespace", "status"},
        "kueue_local_queue_status": {"name", "namespace", "active"},
        "kueue_cohort_info": {"cohort", "parent_cohort", "root_cohort"},
        "kueue_admission_wait_time_seconds_bucket": {"cluster_queue", "priority_class", "le"},
    }
    seen = set()
    for s in samples:
        if s.name in expected:
            seen.add(s.name)
            assert set(s.labels) == expected[s.name] | {"replica_role"}, s
        if s.name == "kueue_build_info":
            assert "replica_role" not in s.labels and s.value == 1
            assert set(s.labels) == {"git_version", "git_commit", "build_date", "go_version", "compiler",
                                     "platform"}
        else:
            assert s.labels["replica_role"] == "standalone"
    assert seen == set(expected)


def test_text_format_is_client_golang_shaped():
    samples, stats, text = scenario()
    names = [ln.split()[2] for ln in text.splitlines() if ln.startswith("# HELP ")]
    assert names == sorted(names) and len(names) == len(set(names))
    # Multi-line help texts are escaped onto one line and come back intact.
    assert "\n- \"inadmissible\" means" in stats.helps["kueue_pending_workloads"]
    # Series inside a family are sorted by label values; labels by name.
    pend = [s for s in samples if s.name == "kueue_pending_workloads"]
    assert [(s.labels["cluster_queue"], s.labels["status"]) for s in pend] == [
        ("team-a", "active"), ("team-a", "inadmissible"), ("team-b", "active"), ("team-b", "inadmissible")]
    assert all(list(s.labels) == sorted(s.labels) for s in samples if not s.name.endswith("_bucket"))


def test_resource_metrics_can_be_off():
    _, stats, _ = render([cq_team_a()], [], [], resource_metrics=False)
    assert "kueue_cluster_queue_nominal_quota" not in stats.types
    assert "kueue_pending_workloads" in stats.types


def test_promtool_accepts_the_text():
    promtool = require_binary("promtool")
    c = KueueCounters()
    c.record_admitted("team-a", "team-a", "lq", "high", 12.0)
    c.record_admission_attempt("success", 0.01)
    c.record_eviction("team-a", "team-a", "lq", "Preempted", "", "high")
    _, _, text = scenario(c)
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (proc.stdout + proc.stderr).strip() == ""


def test_malformed_objects_are_not_counted():
    """What the controller cannot parse is in its snapshot nowhere, so in no series either."""
    weird = [None, {}, {"metadata": {"name": "w"}, "spec": "x", "status": {"conditions": "nope"}},
             {"metadata": {"namespace": "team-a", "name": "bad-qty"}, "spec": {"queueName": "lq"},
              "status": {"conditions": [condition("QuotaReserved", True, "QuotaReserved")],
                         "admission": {"clusterQueue": "team-a", "podSetAssignments": [
                             {"name": "main", "flavors": {"cpu": "l4-reserved"}, "resourceUsage": {"cpu": "lots"}},
                             "garbage"]}}}]
    bad_cq = cluster_queue("broken", group(["cpu"], fq("f", cpu="not-a-quantity")))
    samples, _, _ = render([cq_team_a(), bad_cq, {"metadata": {}}], [local_queue("team-a", "lq", "team-a"), {}],
                           [*weird, gpu_job("ok")])
    assert value(samples, "kueue_reserving_active_workloads", cluster_queue="team-a") == 1
    assert not [s for s in samples if s.labels.get("cluster_queue") == "broken"]


@pytest.mark.parametrize(("number", "text"), [
    (1.0, "1"), (0.0, "0"), (2.5, "2.5"), (1e6, "1e+06"), (123456.0, "123456"), (1234567.0, "1.234567e+06"),
    (34359738368.0, "3.4359738368e+10"), (0.0001, "0.0001"), (0.00001, "1e-05"), (-3.5, "-3.5"),
    (math.inf, "+Inf"), (-math.inf, "-Inf"), (math.nan, "NaN"), (0.1 + 0.2, "0.30000000000000004"),
])
def test_go_float(number, text):
    assert go_float(number) == text


def test_bucket_layout():
    assert exponential_buckets(14) == (1, 2.5, 5, 10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5120, 10240)
