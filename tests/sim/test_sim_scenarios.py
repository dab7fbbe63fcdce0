"""Built-in scenarios run to completion and tell their seed's story; invariants hold at every step."""

from collections import defaultdict

import pytest

from kueuetop.kueue.parse import parse_object
from kueuetop.sim.clock import SimClock
from kueuetop.sim.report import build_report
from kueuetop.sim.runner import VIRTUAL_EPOCH, run_scenario
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster

KUEUE = "kueue.x-k8s.io"


_GPUS: dict[int, tuple[dict, int]] = {}  # id(stored object) → (object, its GPUs)


def _gpus(obj: dict) -> int:
    """GPUs a stored pod requests or a stored node has. The store never changes an object in
    place, so a count is kept per object (parsing every pod at every check was most of the
    `large` test's time)."""
    hit = _GPUS.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    gpus = parse_object(obj).gpus
    if len(_GPUS) >= 200_000:
        _GPUS.clear()
    _GPUS[id(obj)] = (obj, gpus)
    return gpus


def check_invariants(parts) -> None:
    """No CQ above nominal + borrowingLimit; no flat cohort above its members' nominal; no node overcommitted."""
    snap = parts.kueue.snapshot()
    usage: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    for wl in snap.workloads.values():
        if wl.admission is not None and wl.has_quota_reservation and not wl.is_finished:
            for fr, v in wl.usage().items():
                usage[wl.admission.cluster_queue][fr] += v
    cohort_use: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    cohort_cap: dict[str, dict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    for name, cq in snap.cluster_queues.items():
        for g in cq.resource_groups:
            for fq in g.flavors:
                for r, q in fq.resources.items():
                    used = usage[name].get((fq.name, r), 0)
                    if q.borrowing_limit is not None or not cq.cohort:
                        limit = q.nominal + (q.borrowing_limit or 0)
                        assert used <= limit, f"{name} {fq.name}/{r}: {used} > {limit}"
                    if cq.cohort:
                        cohort_use[cq.cohort][(fq.name, r)] += used
                        cohort_cap[cq.cohort][(fq.name, r)] += q.nominal
    for cohort, use in cohort_use.items():
        if cohort in snap.cohorts:
            continue  # explicit cohorts may add their own pool
        for fr, v in use.items():
            assert v <= cohort_cap[cohort][fr], f"cohort {cohort} {fr}: {v} > {cohort_cap[cohort][fr]}"
    store = parts.cluster.store
    alloc: dict[str, int] = defaultdict(int)
    pods, _ = store.list("", "pods", copy=False)
    for p in pods:
        node = (p.get("spec") or {}).get("nodeName")
        if node and (p.get("status") or {}).get("phase") in ("Pending", "Running"):
            alloc[node] += _gpus(p)
    for node, gpus in alloc.items():
        n = store.try_get("", "nodes", None, node, copy=False)
        assert n is not None and gpus <= _gpus(n), f"node {node} has {gpus} GPUs allocated"


def run_checked(name: str, duration: float):
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(load_scenario(name), clock)
    times: list[float] = []

    def on_step(cluster) -> None:
        times.append(cluster.clock.now())
        check_invariants(parts)

    parts.cluster.run_for(duration, until_idle=True, on_step=on_step)
    assert times == sorted(times), "simulated time ran backwards"
    store = parts.cluster.store
    wls, _ = store.list(KUEUE, "workloads", copy=False)
    cqs, _ = store.list(KUEUE, "clusterqueues", copy=False)
    lqs, _ = store.list(KUEUE, "localqueues", copy=False)
    report = build_report(name, clock.start, clock.now(), wls, cqs, lqs, parts.recorder.events,
                          parts.cluster.errors + parts.actions.errors)
    return parts, report


# Workloads that wait forever by design, holding quota while their admission check is Pending:
# the seed's H100 DWS request is "still queued after 3 days"; SkyPilot's check-capacity request
# for an empty A100 pool answers CapacityIsNotFound (check-capacity never scales a pool up).
# By name without Kueue's owner-UID hash suffix (`job-<job>-<hash>`): the hash follows the UIDs
# the simulator hands out, which any object created earlier shifts.
STILL_WAITING = {
    "dws": {"job-sample-job-h100": "quotaReserved"},
    "skypilot": {"pod-sky-a100-bench-3f19-head": "quotaReserved"},
}


@pytest.mark.parametrize("name", ["refarch", "dws", "skypilot"])
def test_builtin_runs_to_completion(name):
    _, report = run_checked(name, 6 * 3600)
    assert report["errors"] == []
    assert report["workloads"], "the scenario created no workloads"
    unfinished = {w["name"].rsplit("-", 1)[0]: w["state"] for w in report["workloads"] if w["state"] != "finished"}
    assert unfinished == STILL_WAITING.get(name, {})


def test_refarch_tells_the_seed_story():
    _, report = run_checked("refarch", 3 * 3600)
    events = report["events"]
    wl = {(w["namespace"], w["name"]): w for w in report["workloads"]}
    preempted = [e for e in events if e["type"] == "preempted"]
    assert preempted, "high-priority jobs never preempted anything"
    for e in preempted:
        assert "low-priority" in e["name"] and e["clusterQueue"].endswith("-lp")
        assert e["reason"] in ("InCohortReclamation", "InClusterQueue")
        # the victim comes back and finishes on spot capacity
        victim = wl[(e["namespace"], e["name"])]
        assert victim["state"] == "finished" and victim["flavors"]["nvidia.com/gpu"] == "gpu-l4-spot"
    victims = {(e["namespace"], e["name"]) for e in preempted}
    # they had been running on reserved capacity borrowed from the paired high-priority queue
    first_flavors = {}
    for e in events:
        if e["type"] == "admitted" and (e["namespace"], e["name"]) in victims:
            first_flavors.setdefault((e["namespace"], e["name"]), e)
    assert first_flavors.keys() == victims
    hp = [w for w in report["workloads"] if w["clusterQueue"].endswith("-hp")]
    assert hp and all(w["flavors"]["nvidia.com/gpu"] in ("gpu-l4-reserved", "gpu-l4-ondemand") for w in hp)
    compact = [w for w in report["workloads"] if w["clusterQueue"].endswith("-compact")]
    assert compact and all(w["flavors"]["nvidia.com/gpu"] == "gpu-a100-compact-spot" for w in compact)
    # lp queues have no nominal reserved quota: running there means borrowing within the cohort
    lp_on_reserved = [w for w in report["workloads"]
                      if w["clusterQueue"].endswith("-lp") and w["flavors"].get("nvidia.com/gpu") == "gpu-l4-reserved"]
    assert lp_on_reserved


def test_dws_walks_the_provisioning_states():
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(load_scenario("dws"), clock)
    seen: list[tuple[str, str, str, str]] = []

    def watch(ev) -> None:
        obj = ev.obj
        if ev.kind.kind == "ProvisioningRequest":
            for c in (obj.get("status") or {}).get("conditions") or []:
                item = (obj["metadata"]["name"], c["type"], c["status"], c.get("reason", ""))
                if item not in seen:
                    seen.append(item)
        elif ev.kind.kind == "Workload":
            for c in (obj.get("status") or {}).get("conditions") or []:
                if c["type"] in ("QuotaReserved", "Admitted", "Finished") and c["status"] == "True":
                    item = (obj["metadata"]["name"], c["type"], "True", c.get("reason", ""))
                    if item not in seen:
                        seen.append(item)

    parts.cluster.store.subscribe(watch)
    parts.cluster.run_for(2 * 3600, until_idle=True)
    a100 = next(n for n, *_ in seen if "a100" in n and "-dws-prov-" in n)
    wl = a100.split("-dws-prov-")[0]
    order = [(t, s, r) for n, t, s, r in seen if n in (a100, wl)]
    want = [("QuotaReserved", "True", "QuotaReserved"), ("Accepted", "True", "SuccessfullyQueued"),
            ("Provisioned", "False", "ResourcePoolExhausted"), ("Provisioned", "True"),
            ("Admitted", "True", "Admitted"), ("Finished", "True", "Succeeded")]
    pos = -1
    for w in want:
        idx = next(i for i, o in enumerate(order) if o[:len(w)] == w)
        assert idx > pos, f"{w} out of order in {order}"
        pos = idx


def test_run_scenario_reports_stats():
    report, stats = run_scenario(load_scenario("skypilot"), 3600, until_idle=True)
    assert stats["cycles"] > 0 and stats["wallSeconds"] >= 0
    stopped = [e for e in report["events"] if e["type"] == "evicted" and e.get("reason") == "ClusterQueueStopped"]
    resumed_later = {(e["namespace"], e["name"]) for e in report["events"] if e["type"] == "admitted"}
    assert all((e["namespace"], e["name"]) in resumed_later for e in stopped)
