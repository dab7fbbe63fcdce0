"""What the simulated cluster reports about trouble: scheduler, autoscaler, kubelet and node texts."""

import yaml

from kueuetop.sim.clock import SimClock
from kueuetop.sim.cloud.gpu_telemetry import render_dcgm
from kueuetop.sim.scenarios.scenario import ScenarioError, parse_scenario
from kueuetop.sim.wiring import build_cluster
from tests.sim.helpers import GPU_TOLERATION, T0, Sim, cond, node_pool
from tests.sim.kube.test_kubelet import bare_pod


def events_of(sim, name, reason=None, ns="default"):
    out = [e for e in sim.list("events", ns) if e["involvedObject"].get("name") == name]
    return [e for e in out if reason is None or e["reason"] == reason]


def test_fit_error_sorts_count_and_reason_as_strings_like_kube_scheduler():
    # framework.FitError.Error() sorts the "<count> <reason>" strings: "12 node(s)…" < "3 Insufficient…".
    pools = (node_pool("a100", size=3, gpus=8, model="NVIDIA A100-SXM4-40GB", machine="a2-highgpu-8g")
             + "---\n" + node_pool("l4", size=12, gpus=1))
    sim = Sim(pools, events=True)
    sim.run(1)
    sim.create(bare_pod("big", gpus=16, tolerations=GPU_TOLERATION,
                        selector={"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}))
    sim.run(1)
    msg = cond(sim.get("pods", "default", "big"), "PodScheduled")["message"]
    assert msg == ("0/15 nodes are available: 12 node(s) didn't match Pod's node affinity/selector, "
                   "3 Insufficient nvidia.com/gpu. preemption: 0/15 nodes are available: "
                   "12 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.")
    [ev] = events_of(sim, "big", "FailedScheduling")
    assert ev["type"] == "Warning" and ev["source"]["component"] == "default-scheduler" and ev["message"] == msg


def test_autoscaler_says_why_a_pod_did_not_trigger_scale_up():
    sim = Sim(node_pool("spot", size=0, minSize=0, maxSize=1, gpus=1, autoscaling=True, provisioningDelay="30s"),
              events=True)
    sim.run(1)
    for i in range(2):
        sim.create(bare_pod(f"p{i}", gpus=1, cpu="20", tolerations=GPU_TOLERATION, runtime="10m",
                            selector={"cloud.google.com/gke-nodepool": "spot"}))
    sim.create(bare_pod("nowhere", gpus=1, tolerations=GPU_TOLERATION,
                        selector={"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}))
    sim.run(1)
    up = [e for i in range(2) for e in events_of(sim, f"p{i}", "TriggeredScaleUp")]
    assert up and up[0]["message"] == "pod triggered scale-up: [{spot 0->1 (max: 1)}]"
    assert up[0]["source"]["component"] == "cluster-autoscaler"
    [no] = events_of(sim, "nowhere", "NotTriggerScaleUp")
    assert no["message"] == "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector"
    sim.run(40)  # the node came: one pod runs, the other is left with the pool at its maximum
    waiting = [f"p{i}" for i in range(2) if sim.get("pods", "default", f"p{i}")["status"]["phase"] == "Pending"]
    assert len(waiting) == 1
    [full] = events_of(sim, waiting[0], "NotTriggerScaleUp")
    assert full["message"] == "pod didn't trigger scale-up: 1 max node group size reached"
    sim.run(30)  # nothing changed: the same Event, not a new one each loop
    assert len(events_of(sim, waiting[0], "NotTriggerScaleUp")) == 1


def faulty_pod(name, fault, image="registry.example.com/team-a/trainer:v2-typo"):
    pod = bare_pod(name, cpu="1")
    pod["metadata"]["annotations"] = {"kueuetop.io/fault": fault}
    pod["spec"]["containers"][0]["image"] = image
    return pod


def test_image_pull_back_off_as_the_kubelet_reports_it():
    sim = Sim(node_pool("cpu", size=1, machine="e2-standard-8"), events=True)
    sim.run(1)
    sim.create(faulty_pod("pull", "ImagePullBackOff"))
    sim.run(0.5)
    pod = sim.get("pods", "default", "pull")
    assert pod["status"]["phase"] == "Pending" and pod["spec"]["nodeName"]
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ErrImagePull"
    sim.run(30)
    pod = sim.get("pods", "default", "pull")
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting == {"reason": "ImagePullBackOff",
                       "message": 'Back-off pulling image "registry.example.com/team-a/trainer:v2-typo"'}
    assert cond(pod, "Ready")["status"] == "False" and cond(pod, "Ready")["reason"] == "ContainersNotReady"
    by_reason = {(e["reason"], e["message"].split(":")[0]): e for e in events_of(sim, "pull")}
    assert ("Failed", "Error") in by_reason and ("BackOff", 'Back-off pulling image "registry.example.com/team-a/trainer') in by_reason
    failed = [e["message"] for e in events_of(sim, "pull", "Failed")]
    assert "Error: ErrImagePull" in failed and "Error: ImagePullBackOff" in failed
    assert any(m.startswith('Failed to pull image "registry.example.com/team-a/trainer:v2-typo": rpc error: '
                            "code = NotFound") for m in failed)
    pulls = events_of(sim, "pull", "Pulling")
    assert pulls[0]["count"] >= 2  # retried after the 10 s back-off, folded into one Event
    assert all(e["source"] == {"component": "kubelet", "host": pod["spec"]["nodeName"]} for e in pulls)


def test_crash_loop_back_off_restarts_with_growing_back_off():
    sim = Sim(node_pool("cpu", size=1, machine="e2-standard-8"), events=True)
    sim.run(1)
    sim.create(faulty_pod("crash", "CrashLoopBackOff", image="busybox"))
    sim.run(60)
    pod = sim.get("pods", "default", "crash")
    st = pod["status"]["containerStatuses"][0]
    assert pod["status"]["phase"] == "Running" and cond(pod, "Ready")["status"] == "False"
    # starts at 0, 15, 40 (crash after 5 s, back-off 10 s then 20 s): two restarts by 60 s
    assert st["restartCount"] == 2
    assert st["lastState"]["terminated"]["exitCode"] == 1
    uid = pod["metadata"]["uid"]
    [backoff] = events_of(sim, "crash", "BackOff")
    assert backoff["type"] == "Warning"
    assert backoff["message"] == f"Back-off restarting failed container c in pod crash_default({uid})"
    sim.run(5)
    st = sim.get("pods", "default", "crash")["status"]["containerStatuses"][0]
    assert st["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert st["state"]["waiting"]["message"] == f"back-off 40s restarting failed container=c pod=crash_default({uid})"


def _node_fault_scenario(extra: str = "") -> str:
    docs = [yaml.safe_load(node_pool("gpu", size=2, gpus=8, model="NVIDIA H100 80GB HBM3", machine="a3-highgpu-8g"))]
    for at, action, target, value in (("30s", "gpu-xid", "nodepool/gpu", "3=79"),
                                      ("30s", "gpu-ecc", "nodepool/gpu/1", "0=2"),
                                      ("1m", "node-not-ready", "nodepool/gpu/1", None),
                                      ("1m", "cordon", "nodepool/gpu", None)):
        spec = {"at": at, "action": action, "target": target}
        if value:
            spec["value"] = value
        docs.append({"apiVersion": "kueuetop.io/v1", "kind": "Action", "metadata": {}, "spec": spec})
    return yaml.safe_dump_all(docs) + extra


def test_node_fault_actions_mark_nodes_as_a_real_cluster_would():
    parts = build_cluster(parse_scenario(_node_fault_scenario(), "faults.yaml"), SimClock(T0))
    parts.cluster.run_for(20)
    store = parts.cluster.store
    names = sorted(n["metadata"]["name"] for n in store.list("", "nodes")[0])
    assert len(names) == 2
    assert "kueuetop.io/gpu-xid" not in (store.get("", "nodes", None, names[0])["metadata"].get("annotations") or {})
    parts.cluster.run_for(50)
    first, second = (store.get("", "nodes", None, n) for n in names)
    assert first["metadata"]["annotations"]["kueuetop.io/gpu-xid"] == "3=79"
    assert second["metadata"]["annotations"]["kueuetop.io/gpu-ecc-dbe"] == "0=2"
    assert first["spec"]["unschedulable"] is True
    assert {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}.items() <= first["spec"]["taints"][-1].items()
    ready = cond(second, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")
    assert any(t["key"] == "node.kubernetes.io/not-ready" for t in second["spec"]["taints"])
    events = {(e["involvedObject"]["name"], e["reason"]): e for e in store.list("", "events", "default")[0]}
    assert events[(names[1], "NodeNotReady")]["message"] == f"Node {names[1]} status is now: NodeNotReady"
    assert events[(names[0], "NodeNotSchedulable")]["message"] == f"Node {names[0]} status is now: NodeNotSchedulable"
    assert parts.extra["node-faults"].errors == []
    # The exporter reports them: XID on GPU 3 of the first node, the ECC counter on the second.
    xid = [line for line in render_dcgm(first, [], 0.0).splitlines()
           if line.startswith('DCGM_FI_DEV_XID_ERRORS{gpu="3"')]
    assert xid and xid[0].endswith(" 79")
    ecc = [line for line in render_dcgm(second, [], 0.0).splitlines()
           if line.startswith('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu="0"')]
    assert ecc and ecc[0].endswith(" 2")


def test_node_fault_actions_are_checked_when_the_scenario_loads():
    bad = yaml.safe_dump({"apiVersion": "kueuetop.io/v1", "kind": "Action", "metadata": {},
                          "spec": {"at": "1m", "action": "gpu-xid", "target": "nodepool/gpu", "value": "79"}})
    try:
        parse_scenario(bad, "bad.yaml")
    except ScenarioError as exc:
        assert 'spec.value' in str(exc) and "GPU=CODE" in str(exc)
    else:
        raise AssertionError("a malformed XID value was accepted")
    wrong = bad.replace("nodepool/gpu", "team-a/wl-1").replace('"79"', '"0=79"').replace("value: '79'", "value: 0=79")
    try:
        parse_scenario(wrong, "bad.yaml")
    except ScenarioError as exc:
        assert "needs a node" in str(exc)
    else:
        raise AssertionError("a node fault on a workload was accepted")


def test_kueues_events_are_bounded_like_the_other_components():
    from kueuetop.sim.scenarios.loader import load_scenario

    parts = build_cluster(load_scenario("incident"), SimClock(T0))
    parts.kueue.max_events = 10
    parts.cluster.run_for(180)
    # The scheduler's and the workload controller's Events, named by generateName as Kueue's
    # recorder does (the job integration's go through EventWriter, capped apart).
    kueue = [e for e in parts.cluster.store.list("", "events")[0] if "generateName" in e["metadata"]]
    assert len(kueue) == 10  # the newest ten; the oldest were deleted
    times = sorted(e["lastTimestamp"] for e in kueue)
    assert times[0] > "2023-11-14T22:13:20Z"  # not the first instant's Events (T0)
