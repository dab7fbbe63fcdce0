import pytest

from kueuetop.kueue.api_versions import to_v1beta1, to_v1beta2
from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse import parse_object
from tests.builders import admit, cluster_queue, fq, group, workload

CQ_V1BETA1 = {
    "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "team-a"},
    "spec": {
        "cohort": "team-a-b", "admissionChecks": ["dws-prov"], "namespaceSelector": {},
        "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
        "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority",
                       "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 100}},
        "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
            {"name": "reserved", "resources": [{"name": "cpu", "nominalQuota": "9"},
                                                {"name": "nvidia.com/gpu", "nominalQuota": 4,
                                                 "borrowingLimit": 2, "lendingLimit": "1"}]}]}],
    },
    "status": {"pendingWorkloadsStatus": {"clusterQueuePendingWorkload": []}},
}


def test_v1beta1_cluster_queue_renames():
    cq = parse_object(CQ_V1BETA1)
    assert cq.cohort == "team-a-b"
    assert [c.name for c in cq.admission_checks] == ["dws-prov"]
    assert cq.fungibility.when_can_borrow == "MayStopSearch"
    assert cq.fungibility.when_can_preempt == "MayStopSearch"
    assert cq.preemption.borrow_within_cohort == "LowerPriority"
    assert cq.preemption.max_priority_threshold == 100
    gpu = cq.resource_groups[0].flavors[0].resources["nvidia.com/gpu"]
    assert (gpu.nominal, gpu.borrowing_limit, gpu.lending_limit) == (4, 2, 1)
    assert cq.resource_groups[0].flavors[0].resources["cpu"].nominal == 9000


def test_v1beta2_round_trip_of_renamed_fields():
    v2 = to_v1beta2(CQ_V1BETA1)
    assert v2["spec"]["cohortName"] == "team-a-b" and "cohort" not in v2["spec"]
    assert "pendingWorkloadsStatus" not in v2["status"]
    back = to_v1beta1(v2)
    assert back["spec"]["cohort"] == "team-a-b"
    assert back["spec"]["admissionChecks"] == ["dws-prov"]
    assert CQ_V1BETA1["spec"]["cohort"] == "team-a-b"  # input not mutated


def test_v1beta1_workload_priority_class_and_typo_field():
    wl = workload("ns", "w", "lq")
    wl["apiVersion"] = "kueue.x-k8s.io/v1beta1"
    wl["spec"]["priorityClassName"] = "high"
    wl["spec"]["priorityClassSource"] = "scheduling.k8s.io/priorityclass"
    wl["status"] = {"accumulatedPastExexcutionTimeSeconds": 42}
    parsed = parse_object(wl)
    assert (parsed.priority_class_name, parsed.priority_class_kind) == ("high", "PriorityClass")
    assert parsed.accumulated_execution_seconds == 42
    assert to_v1beta1(to_v1beta2(wl))["spec"]["priorityClassSource"] == "scheduling.k8s.io/priorityclass"


def test_v1beta1_local_queue_flavor_usage_singular():
    lq = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
          "metadata": {"name": "lq", "namespace": "ns"}, "spec": {"clusterQueue": "cq"},
          "status": {"flavorUsage": [{"name": "f", "resources": [{"name": "cpu", "total": "3"}]}],
                     "flavors": [{"name": "f"}]}}
    parsed = parse_object(lq)
    assert parsed.flavors_usage[0].total == 3000


def test_pod_set_requests_as_kueue_computes_them():
    spec = {"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}},
        {"name": "b", "resources": {"limits": {"cpu": "500m", "nvidia.com/gpu": "1"}}},  # limits as requests
    ], "initContainers": [
        {"name": "init-big", "resources": {"requests": {"cpu": "4"}}},  # regular init: max with containers
        {"name": "sidecar", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}},
        {"name": "init-after", "resources": {"requests": {"memory": "3Gi"}}},  # sees the sidecar running
    ], "overhead": {"cpu": "100m"}}
    wl = workload("ns", "w", "lq")
    wl["spec"]["podSets"][0]["template"]["spec"] = spec
    wl["spec"]["podSets"][0]["count"] = 2
    ps = parse_object(wl).pod_sets[0]
    # containers 1.5 cpu + sidecar .25 = 1.75 < init peak 4 → 4; + overhead .1 = 4.1 cpu
    # memory: containers 1Gi + sidecar 1Gi = 2Gi < init-after 3Gi + sidecar 1Gi = 4Gi → 4Gi
    assert ps.requests == {"cpu": 4100, "memory": 4 * 2**30, "nvidia.com/gpu": 1}
    assert ps.total() == {"cpu": 8200, "memory": 8 * 2**30, "nvidia.com/gpu": 2}


def test_admitted_usage_by_flavor_and_reclaimable_pods():
    wl = admit(workload("ns", "w", "lq", {"cpu": "2", "nvidia.com/gpu": "1"}, count=4),
               "cq", {"cpu": "default", "nvidia.com/gpu": "l4"})
    parsed = parse_object(wl)
    assert parsed.usage() == {("default", "cpu"): 8000, ("l4", "nvidia.com/gpu"): 4}
    wl["status"]["reclaimablePods"] = [{"name": "main", "count": 3}]
    assert parse_object(wl).usage() == {("default", "cpu"): 2000, ("l4", "nvidia.com/gpu"): 1}


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda o: o["spec"].__setitem__("podSets", "nope"), "spec.podSets"),
    (lambda o: o["spec"].__setitem__("podSets", []), "spec.podSets"),
    (lambda o: o["spec"]["podSets"][0].__setitem__("count", "three"), "spec.podSets[0].count"),
    (lambda o: o["spec"]["podSets"][0].__setitem__("minCount", 5), "spec.podSets[0].minCount"),
    (lambda o: o["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]
     .__setitem__("cpu", "lots"), "spec.podSets[0].template.spec.containers[0].resources.requests.cpu"),
    (lambda o: o["spec"].__setitem__("active", "yes"), "spec.active"),
    (lambda o: o["metadata"].__setitem__("creationTimestamp", "yesterday"), "metadata.creationTimestamp"),
    (lambda o: o["metadata"].pop("name"), "metadata.name"),
    (lambda o: o["status"].__setitem__("conditions", [{"status": "True"}]), "status.conditions[0].type"),
    (lambda o: o["status"].__setitem__("admissionChecks", [{"name": "c", "state": "Maybe"}]),
     "status.admissionChecks[0].state"),
])
def test_malformed_workload_names_object_and_field(mutate, field):
    wl = workload("team-a", "bad", "lq")
    mutate(wl)
    with pytest.raises(KueueParseError) as exc:
        parse_object(wl)
    assert exc.value.field == field
    assert "Workload team-a/" in str(exc.value) or "Workload team-a" in exc.value.obj


@pytest.mark.parametrize(("mutate", "field"), [
    (lambda o: o["spec"].__setitem__("queueingStrategy", "Random"), "spec.queueingStrategy"),
    (lambda o: o["spec"].__setitem__("stopPolicy", "Pause"), "spec.stopPolicy"),
    (lambda o: o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].__setitem__("nominalQuota", "9 cores"),
     "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"),
    (lambda o: o["spec"]["resourceGroups"][0].__setitem__("coveredResources", ["cpu", "memory"]),
     "spec.resourceGroups[0].flavors[0].resources"),
    (lambda o: o["spec"]["namespaceSelector"].__setitem__("matchExpressions", [{"key": "a", "operator": "Near"}]),
     "spec.namespaceSelector.matchExpressions[0].operator"),
])
def test_malformed_cluster_queue_names_field(mutate, field):
    cq = cluster_queue("cq", group("cpu", fq("f", cpu="1")))
    mutate(cq)
    with pytest.raises(KueueParseError) as exc:
        parse_object(cq)
    assert exc.value.field == field
    assert exc.value.obj == "ClusterQueue cq"


@pytest.mark.parametrize("junk", [None, 3, "x", [], {"apiVersion": "v1"}, {"kind": "Pod"},
                                  {"apiVersion": "v9", "kind": "Spaceship", "metadata": {"name": "x"}}])
def test_not_an_object_is_a_parse_error(junk):
    with pytest.raises(KueueParseError):
        parse_object(junk)


def test_all_kinds_parse():
    objs = [
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "spot"},
         "spec": {"nodeLabels": {"cloud.google.com/gke-spot": "true"},
                  "nodeTaints": [{"key": "spot", "value": "true", "effect": "NoSchedule"}]}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "c"},
         "spec": {"parentName": "root", "fairSharing": {"weight": "500m"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck", "metadata": {"name": "dws"},
         "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                  "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig",
                                 "name": "dws-config"}}},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass", "metadata": {"name": "hi"},
         "value": 1000},
        {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
         "metadata": {"name": "dws-config"},
         "spec": {"provisioningClassName": "queued-provisioning.gke.io", "managedResources": ["nvidia.com/gpu"]}},
        {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
         "metadata": {"name": "wl-dws-1", "namespace": "ns"},
         "spec": {"provisioningClassName": "queued-provisioning.gke.io",
                  "podSets": [{"podTemplateRef": {"name": "ppt-wl-dws-1-main"}, "count": 2}]},
         "status": {"conditions": [{"type": "Provisioned", "status": "False", "reason": "ResourcePoolExhausted",
                                    "message": "no capacity", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}, "value": 5},
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"a": "b"}},
         "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
         "status": {"capacity": {"nvidia.com/gpu": "8", "cpu": "96", "memory": "680Gi"},
                    "allocatable": {"nvidia.com/gpu": "8", "cpu": "95500m"},
                    "conditions": [{"type": "Ready", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
         "spec": {"nodeName": "n1", "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                  "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]},
         "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00+00:00"}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns",
                                                               "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
         "spec": {"parallelism": 4, "completions": 2, "suspend": True,
                  "template": {"spec": {"containers": [{"name": "c"}]}}}},
    ]
    parsed = [parse_object(o) for o in objs]
    flavor, cohort, check, wpc, prc, pr, pc, node, pod, job = parsed
    assert flavor.node_taints[0].effect == "NoSchedule"
    assert cohort.parent == "root" and cohort.fair_weight == 0.5
    assert check.parameters_name == "dws-config" and check.active
    assert wpc.value == 1000 and wpc.kueue
    assert prc.retry.backoff_limit_count == 3 and prc.managed_resources == ("nvidia.com/gpu",)
    assert pr.pod_sets == (("ppt-wl-dws-1-main", 2),) and pr.conditions[0].reason == "ResourcePoolExhausted"
    assert pc.value == 5 and not pc.kueue
    assert node.gpus == 8 and node.ready and node.allocatable["cpu"] == 95500
    assert pod.gpus == 2 and pod.scheduling_gates == ("kueue.x-k8s.io/admission",) and pod.phase == "Running"
    assert job.pod_count == 2 and job.suspend
