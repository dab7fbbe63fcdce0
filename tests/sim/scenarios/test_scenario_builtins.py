"""The built-in scenarios: seed files and generated perf/scale scenarios."""

import functools
import hashlib
import json
from collections import Counter

import pytest

from kueuetop.kueue.durations import parse_duration
from kueuetop.kueue.quantity import parse_quantity
from kueuetop.sim.scenarios.generators import PERF_BASELINE, PERF_LARGE_SCALE
from kueuetop.sim.scenarios.loader import list_builtins, load_scenario
from kueuetop.sim.scenarios.scenario import capacity_limit_at, expand_node_pool

EXPECTED_BUILTINS = ["dws", "incident", "kueue-perf-baseline", "kueue-perf-large", "large", "refarch", "skypilot", "xl"]


@functools.cache
def scenario(name):
    return load_scenario(name)


def kinds(s):
    return Counter(st.obj["kind"] for st in s.steps if st.obj is not None and not st.update)


def test_list_builtins():
    assert list_builtins() == EXPECTED_BUILTINS


@pytest.mark.parametrize("name", EXPECTED_BUILTINS)
def test_every_builtin_loads(name):
    s = scenario(name)
    assert s.name == name
    assert s.steps
    assert [st.at for st in s.steps] == sorted(st.at for st in s.steps)
    for st in s.steps:
        if st.obj is not None and st.obj["apiVersion"].startswith("kueue.x-k8s.io/"):
            assert st.obj["apiVersion"] == "kueue.x-k8s.io/v1beta2"


# --------------------------------------------------------------------------------------
# Scale scenarios


def pool_gpus(s):
    return {p["metadata"]["name"]: p["spec"]["size"] * p["spec"]["gpu"]["count"] for p in s.node_pools}


@pytest.mark.parametrize(("name", "nodes", "cqs", "lqs", "workloads"), [
    ("large", 1_000, 500, 2_000, 20_000),
    ("xl", 5_000, 1_000, 4_000, 100_000),
])
def test_scale_counts(name, nodes, cqs, lqs, workloads):
    s = scenario(name)
    assert sum(p["spec"]["size"] for p in s.node_pools) == nodes
    assert all(p["spec"]["gpu"]["count"] == 8 for p in s.node_pools)
    assert sum(pool_gpus(s).values()) == nodes * 8
    k = kinds(s)
    assert k["ClusterQueue"] == cqs
    assert k["LocalQueue"] == lqs
    assert k["Workload"] == workloads
    assert s.meta["expected"] == {"nodes": nodes, "gpus": nodes * 8, "clusterQueues": cqs,
                                  "localQueues": lqs, "workloads": workloads}


def test_large_quota_matches_capacity_per_flavor():
    s = scenario("large")
    flavors = {f["metadata"]["name"]: f["spec"]["nodeLabels"] for f in s.objects("ResourceFlavor")}
    # Every pool's nodes carry exactly the labels of one flavor.
    capacity: Counter = Counter()
    for p in s.node_pools:
        labels = expand_node_pool(p, 1)[0]["metadata"]["labels"]
        matching = [f for f, sel in flavors.items() if all(labels.get(k) == v for k, v in sel.items())]
        assert len(matching) == 1, (p["metadata"]["name"], matching)
        capacity[matching[0]] += p["spec"]["size"] * 8
    quota: Counter = Counter()
    for cq in s.objects("ClusterQueue"):
        for f in cq["spec"]["resourceGroups"][0]["flavors"]:
            gpu = next(r for r in f["resources"] if r["name"] == "nvidia.com/gpu")
            quota[f["name"]] += int(gpu["nominalQuota"])
    assert quota == capacity
    assert sum(quota.values()) == 8_000


def test_large_cohorts_and_queues():
    s = scenario("large")
    cohorts = Counter(cq["spec"]["cohortName"] for cq in s.objects("ClusterQueue"))
    assert all(5 <= n <= 10 for n in cohorts.values()), cohorts
    cq_names = {cq["metadata"]["name"] for cq in s.objects("ClusterQueue")}
    lqs = {(lq["metadata"]["namespace"], lq["metadata"]["name"]) for lq in s.objects("LocalQueue")}
    assert {lq[0] for lq in lqs} == cq_names
    for wl in s.objects("Workload"):
        assert (wl["metadata"]["namespace"], wl["spec"]["queueName"]) in lqs


def test_large_workload_mix():
    s = scenario("large")
    wls = s.objects("Workload")
    wpcs = {w["metadata"]["name"]: w["value"] for w in s.objects("WorkloadPriorityClass")}
    assert len(wpcs) == 4
    names = Counter()
    gpu_demand = 0
    idle = inactive = multi = late = 0
    for wl in wls:
        names[(wl["metadata"]["namespace"], wl["metadata"]["name"])] += 1
        spec = wl["spec"]
        assert spec["priority"] == wpcs[spec["priorityClassRef"]["name"]]
        gpus = sum(ps["count"] * int(ps["template"]["spec"]["containers"][0]["resources"]["requests"]
                                     .get("nvidia.com/gpu", 0)) for ps in spec["podSets"])
        gpu_demand += gpus
        ann = wl["metadata"]["annotations"]
        parse_duration(ann["kueuetop.io/runtime"])
        idle += ann.get("kueuetop.io/gpu-util") == "idle"
        inactive += spec.get("active") is False
        multi += len(spec["podSets"]) > 1
        late += parse_duration(ann["kueuetop.io/at"]) > 30
        if gpus == 0:
            assert "kueuetop.io/gpu-util" not in ann
    assert max(names.values()) == 1  # names unique per namespace
    # Demand exceeds the 8,000 GPUs, so a backlog waits while most workloads run.
    assert 1.2 * 8_000 < gpu_demand < 2.0 * 8_000
    assert 50 < idle < 600
    assert 100 < inactive < 400
    assert multi > 50
    assert 1_500 < late < 2_500


def test_generation_is_deterministic():
    def digest(s):
        h = hashlib.sha256()
        for st in s.steps:
            h.update(json.dumps([st.at, st.obj], sort_keys=True).encode())
        return h.hexdigest()
    from kueuetop.sim.scenarios.generators import GENERATORS

    assert digest(GENERATORS["large"]()) == digest(scenario("large"))


# --------------------------------------------------------------------------------------
# Kueue's scheduler performance configs (test/performance/scheduler/configs/*/generator.yaml)


def test_perf_config_numbers_are_kueues():
    assert (PERF_BASELINE.cohorts, PERF_BASELINE.queues_per_cohort) == (5, 6)
    assert [(ws.count, ws.creation_interval_ms, ws.workloads[0].class_name, ws.workloads[0].runtime_ms,
             ws.workloads[0].priority, ws.workloads[0].request) for ws in PERF_BASELINE.workloads_sets] == [
        (350, 100, "small", 200, 50, "1"), (100, 500, "medium", 500, 100, "5"),
        (50, 1200, "large", 1000, 200, "20")]
    assert PERF_BASELINE.workloads == 15_000
    assert (PERF_LARGE_SCALE.cohorts, PERF_LARGE_SCALE.queues_per_cohort) == (10, 100)
    assert [(ws.count, ws.creation_interval_ms, ws.workloads[0].class_name, ws.workloads[0].runtime_ms,
             ws.workloads[0].priority, ws.workloads[0].request) for ws in PERF_LARGE_SCALE.workloads_sets] == [
        (35, 60, "small", 150, 50, "1"), (11, 300, "medium", 350, 100, "5"), (4, 700, "large", 700, 200, "20")]
    assert PERF_LARGE_SCALE.workloads == 50_000
    for cfg in (PERF_BASELINE, PERF_LARGE_SCALE):
        assert (cfg.nominal_quota, cfg.borrowing_limit) == ("20", "100")
        assert (cfg.reclaim_within_cohort, cfg.within_cluster_queue) == ("Any", "LowerPriority")


@pytest.mark.parametrize(("name", "cqs", "classes", "intervals", "runtimes", "last"), [
    ("kueue-perf-baseline", 30, {"small": 10_500, "medium": 3_000, "large": 1_500},
     {"small": 0.1, "medium": 0.5, "large": 1.2}, {"small": 0.2, "medium": 0.5, "large": 1.0}, 60.0),
    ("kueue-perf-large", 1_000, {"small": 35_000, "medium": 11_000, "large": 4_000},
     {"small": 0.06, "medium": 0.3, "large": 0.7}, {"small": 0.15, "medium": 0.35, "large": 0.7}, 3.3),
])
def test_perf_scenarios(name, cqs, classes, intervals, runtimes, last):
    s = scenario(name)
    k = kinds(s)
    assert (k["ClusterQueue"], k["LocalQueue"], k["Namespace"], k["ResourceFlavor"]) == (cqs, cqs, cqs, 1)
    cq_names = set()
    for cq in s.objects("ClusterQueue"):
        spec = cq["spec"]
        cq_names.add(cq["metadata"]["name"])
        assert cq["metadata"]["name"] == f"cq-0-{cq['metadata']['name'].split('-')[2]}-{spec['cohortName']}"
        assert spec["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
        assert spec["namespaceSelector"] == {}
        assert spec["resourceGroups"] == [{"coveredResources": ["cpu"], "flavors": [{"name": "rf", "resources": [
            {"name": "cpu", "nominalQuota": "20", "borrowingLimit": "100"}]}]}]
    assert len({cq["spec"]["cohortName"] for cq in s.objects("ClusterQueue")}) == cqs // (6 if cqs == 30 else 100)
    by_class = Counter()
    times: dict[tuple[str, str], list[float]] = {}
    priorities = {"small": 50, "medium": 100, "large": 200}
    requests = {"small": "1", "medium": "5", "large": "20"}
    for st in s.steps:
        wl = st.obj
        if wl["kind"] != "Workload":
            continue
        cls = wl["metadata"]["labels"]["kueue.x-k8s.io/performance-scheduler-class"]
        by_class[cls] += 1
        assert wl["metadata"]["namespace"] in cq_names and wl["spec"]["queueName"] == wl["metadata"]["namespace"]
        assert wl["spec"]["priority"] == priorities[cls]
        assert wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] == {
            "cpu": requests[cls]}
        # Kueue's harness reads the running time from this label (sim/jobs/perf_runner.py); no pods run.
        assert "kueuetop.io/runtime" not in wl["metadata"]["annotations"]
        assert wl["metadata"]["labels"]["kueue.x-k8s.io/performance-scheduler-running-ms"] == str(
            round(runtimes[cls] * 1000))
        times.setdefault((wl["metadata"]["namespace"], cls), []).append(st.at)
    assert by_class == classes
    ns_times = times[(sorted(cq_names)[0], "small")]
    assert ns_times[:3] == pytest.approx([intervals["small"], 2 * intervals["small"], 3 * intervals["small"]])
    for cls, interval in intervals.items():
        got = times[(sorted(cq_names)[0], cls)]
        assert got[-1] == pytest.approx(len(got) * interval)
    assert s.end == pytest.approx(last)
    assert s.meta["kueueRangespec"]["wlClassesMaxAvgTimeToAdmissionMs"].keys() == {"small", "medium", "large"}


# --------------------------------------------------------------------------------------
# Seed scenarios


def test_refarch_queues_follow_the_seed():
    s = scenario("refarch")
    cqs = {cq["metadata"]["name"]: cq["spec"] for cq in s.objects("ClusterQueue")}
    teams = ["team-a", "team-b", "team-c", "team-d"]
    assert set(cqs) == {f"cq-{t}-{q}" for t in teams for q in ("hp", "lp", "compact")} | {"dws-cluster-queue"}
    for t in teams:
        cohort = "team-a-b" if t in ("team-a", "team-b") else "team-c-d"
        for q in ("hp", "lp", "compact"):
            spec = cqs[f"cq-{t}-{q}"]
            assert spec["cohortName"] == cohort
            assert spec["queueingStrategy"] == "StrictFIFO"
            assert spec["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": t}}
        assert cqs[f"cq-{t}-hp"]["preemption"] == {"reclaimWithinCohort": "LowerPriority",
                                                   "withinClusterQueue": "LowerPriority"}
        assert "preemption" not in cqs[f"cq-{t}-lp"]
        assert [f["name"] for f in cqs[f"cq-{t}-hp"]["resourceGroups"][0]["flavors"]] == [
            "gpu-l4-reserved", "gpu-l4-ondemand"]
        lp = cqs[f"cq-{t}-lp"]["resourceGroups"][0]["flavors"]
        assert [f["name"] for f in lp] == ["gpu-l4-reserved", "gpu-l4-spot"]
        assert lp[0]["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 0, "borrowingLimit": 4}
        assert lp[1]["resources"][2] == {"name": "nvidia.com/gpu", "nominalQuota": 12, "borrowingLimit": 4}
    dws = cqs["dws-cluster-queue"]
    assert dws["admissionChecksStrategy"] == {"admissionChecks": [{"name": "dws-prov"}]}
    lqs = {(lq["metadata"]["namespace"], lq["metadata"]["name"]) for lq in s.objects("LocalQueue")}
    assert {("team-a", "lq-team-a-hp"), ("team-d", "lq-team-d-compact"), ("team-b", "dws-local-queue")} <= lqs
    assert len(lqs) == 14
    pcs = {pc["metadata"]["name"]: pc["value"] for pc in s.objects("PriorityClass")}
    assert pcs == {"default-priority-nonpreempting": 10, "high-priority-preempting": 20,
                   "compact-priority-preempting": 15}
    prc = s.objects("ProvisioningRequestConfig")[0]
    assert prc["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert s.objects("AdmissionCheck")[0]["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"


def test_refarch_waves():
    s = scenario("refarch")
    jobs = [st for st in s.steps if st.obj["kind"] == "Job"]
    waves = Counter()
    for st in jobs:
        job = st.obj
        name = job["metadata"]["name"]
        assert job["spec"]["suspend"] is True
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        requests = job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]
        assert int(requests["nvidia.com/gpu"]) >= 1
        parse_duration(job["metadata"]["annotations"]["kueuetop.io/runtime"])
        wave = next(w for w in ("low-priority", "high-priority", "compact", "finetune") if w in name)
        waves[wave] += 1
        start = {"low-priority": 0, "high-priority": 300, "compact": 960, "finetune": 2580}[wave]
        assert start <= st.at < start + 12
    assert waves == {"low-priority": 16, "high-priority": 16, "compact": 16, "finetune": 2}
    jobsets = s.objects("Workload")
    assert len(jobsets) == 16
    assert all(w["spec"]["podSets"][0]["name"] == "worker" and w["spec"]["queueName"].endswith("-lp")
               for w in jobsets)
    idle = [st.obj["metadata"]["name"] for st in s.steps
            if st.obj["metadata"].get("annotations", {}).get("kueuetop.io/gpu-util") == "idle"]
    assert sorted(idle) == ["team-c-high-priority-job-0", "team-d-high-priority-job-1"]
    # the DWS objects arrive just before the DWS jobs
    dws_cq = next(st for st in s.steps if st.obj["metadata"]["name"] == "dws-cluster-queue")
    assert 2500 < dws_cq.at < 2580


def test_refarch_node_pools_match_flavors():
    s = scenario("refarch")
    flavors = {f["metadata"]["name"]: f.get("spec", {}).get("nodeLabels", {}) for f in s.objects("ResourceFlavor")}
    pools = {p["metadata"]["name"]: p for p in s.node_pools}
    expect = {"reserved-np": "gpu-l4-reserved", "ondemand-np": "gpu-l4-ondemand", "spot-np": "gpu-l4-spot",
              "team-b-2-compact": "gpu-a100-compact-spot"}
    for pool, flavor in expect.items():
        labels = expand_node_pool(pools[pool], 1)[0]["metadata"]["labels"]
        assert all(labels.get(k) == v for k, v in flavors[flavor].items()), (pool, flavor)
    reserved = expand_node_pool(pools["reserved-np"], pools["reserved-np"]["spec"]["size"])
    assert len(reserved) == 4
    assert all(n["metadata"]["name"].startswith("gke-gke-batch-refarch-reserved-np-") for n in reserved)
    assert sum(int(n["status"]["capacity"]["nvidia.com/gpu"]) for n in reserved) == 8
    assert (pools["ondemand-np"]["spec"]["maxSize"], pools["spot-np"]["spec"]["maxSize"]) == (24, 36)
    assert len([p for p in pools if p.endswith("-compact")]) == 16


def test_dws_walkthrough():
    s = scenario("dws")
    assert s.objects("ProvisioningRequestConfig")[0]["spec"]["provisioningClassName"] == "queued-provisioning.gke.io"
    assert s.objects("AdmissionCheck")[0]["spec"]["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    cq = s.objects("ClusterQueue")[0]
    assert cq["spec"]["admissionChecksStrategy"]["admissionChecks"] == [{"name": "dws-prov"}]
    pools = {p["metadata"]["name"]: p for p in s.node_pools}
    for name in ("dws-t4-nodepool", "dws-a100-nodepool", "gpu-pool"):
        spec = pools[name]["spec"]
        assert spec["size"] == 0 and spec["autoscaling"] and spec["queuedProvisioning"]
        assert parse_duration(spec["provisioningDelay"]) > 0
        node = expand_node_pool(pools[name], 1)[0]
        assert node["metadata"]["labels"]["cloud.google.com/gke-queued"] == "true"
        assert node["metadata"]["labels"]["cloud.google.com/gke-provisioning"] == "standard"
    by_name = {st.obj["metadata"]["name"]: st for st in s.steps}
    a100 = by_name["sample-job-a100"]
    pool = a100.obj["spec"]["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-nodepool"]
    assert capacity_limit_at(pools[pool], a100.at) == 0        # first: ResourcePoolExhausted
    assert capacity_limit_at(pools[pool], a100.at + 600) is None  # later: capacity found
    assert capacity_limit_at(pools["dws-h100-nodepool"], 1e6) == 0
    head = by_name["skypilot-dws-00b5-head"]
    assert capacity_limit_at(pools["gpu-pool"], head.at) == 0
    assert capacity_limit_at(pools["gpu-pool"], head.at + 130) is None
    assert head.obj["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
    for st in s.steps:
        if st.obj["kind"] == "Job":
            assert st.obj["spec"]["template"]["spec"]["nodeSelector"]["cloud.google.com/gke-nodepool"] in pools


def test_skypilot_two_teams():
    s = scenario("skypilot")
    assert {n["metadata"]["name"] for n in s.objects("Namespace")} == {"team1", "team2"}
    assert s.objects("Cohort")[0]["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    cqs = {cq["metadata"]["name"]: cq["spec"] for cq in s.objects("ClusterQueue")}
    assert set(cqs) == {"skypilot-cluster-queue-team1", "skypilot-cluster-queue-team2"}
    assert all(spec["cohortName"] == "skypilot-cohort" for spec in cqs.values())
    assert all(spec["admissionChecksStrategy"]["admissionChecks"] == [{"name": "skypilot-kueue-prov"}]
               for spec in cqs.values())
    prc = s.objects("ProvisioningRequestConfig")[0]["spec"]
    assert prc["provisioningClassName"] == "check-capacity.autoscaling.x-k8s.io"
    queued = [p for p in s.objects("Pod") if "kueue.x-k8s.io/queue-name" in p["metadata"].get("labels", {})]
    assert len(queued) == 10
    for p in queued:
        team = p["metadata"]["namespace"]
        assert p["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == f"skypilot-local-queue-{team}"
        assert p["spec"]["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
        assert int(p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]) >= 1
    gpus = sum(int(p["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"]) for p in queued
               if p["spec"]["nodeSelector"]["cloud.google.com/gke-accelerator"] == "nvidia-l4")
    l4 = next(p for p in s.node_pools if p["metadata"]["name"] == "gpu-l4")["spec"]
    assert gpus > l4["maxSize"] * l4["gpu"]["count"]  # some pods have to wait
    assert [(a.at, a.action.action) for a in s.actions()] == [(900.0, "stop"), (1500.0, "resume-queue")]


def test_quantities_in_builtins_parse():
    for name in ("refarch", "dws", "skypilot"):
        for cq in scenario(name).objects("ClusterQueue"):
            for group in cq["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    for r in flavor["resources"]:
                        parse_quantity(r["nominalQuota"])
