"""The triage model: each problem class from objects in a store, with its count, age and target;
and the model kept from change sets equals one rebuilt from scratch."""

from __future__ import annotations

from kueuetop.kueue.config import KueueConfig, WaitForPodsReady
from kueuetop.store import Changes, Store
from kueuetop.store import events as K
from kueuetop.store.sources import SourceState
from kueuetop.views.triage import Problem, TriageModel, name_filter
from tests.builders import admission_check, cluster_queue, condition, fq, group, local_queue, ts, workload
from tests.views.cluster import (
    GPU,
    NOW,
    admitted,
    base_objects,
    delete,
    gpu,
    node,
    pod,
    put,
)

UNSCHED = (False, "Unschedulable", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")


def spot_pool() -> list[dict]:
    """Three spot nodes of 4 GPUs, each half used by a running pod of `busy`: 2 free on each."""
    objs = [node(f"spot-{i}", 4, {"pool": "spot"}) for i in range(3)]
    objs.append(admitted("team-a", "busy", "cq-spot", "gpu-l4-spot", 2, count=3))
    objs += [pod("team-a", f"busy-{i}", "busy", 2, node_name=f"spot-{i}", phase="Running",
                 scheduled=(True, "", "")) for i in range(3)]
    return objs


def make(*objs: dict, config: KueueConfig | None = None) -> tuple[Store, TriageModel]:
    store = Store(clock=lambda: NOW)
    put(store, *base_objects(), *objs)
    model = TriageModel(store, config=config)
    model.update(None, NOW)
    return store, model


def only(problems: list[Problem], kind: str) -> Problem:
    found = [p for p in problems if p.kind == kind]
    assert len(found) == 1, (kind, [(p.kind, p.text) for p in problems])
    return found[0]


def kinds(problems: list[Problem]) -> set[str]:
    return {p.kind for p in problems}


def test_fragmentation_is_named_with_the_pool_and_what_its_nodes_have() -> None:
    _, model = make(*spot_pool(), admitted("team-a", "big", "cq-spot", "gpu-l4-spot", 4),
                        pod("team-a", "big-0", "big", 4, scheduled=UNSCHED))
    p = only(model.problems(NOW), "fragmentation")
    assert "quota is free, but no node in gpu-l4-spot has 4 free GPUs: 3 nodes have 2" in p.text
    assert p.count == 1 and p.oldest == 600 and p.category == "not running"
    assert p.target.workload == ("team-a", "big")


def test_more_than_the_pool_has_free_is_unschedulable_with_the_schedulers_message() -> None:
    _, model = make(*spot_pool(), admitted("team-a", "huge", "cq-spot", "gpu-l4-spot", 8),
                    pod("team-a", "huge-0", "huge", 8, scheduled=UNSCHED),
                    admitted("team-a", "huge2", "cq-spot", "gpu-l4-spot", 8),
                    pod("team-a", "huge2-0", "huge2", 8, scheduled=UNSCHED))
    p = only(model.problems(NOW), "unschedulable")
    assert p.count == 2 and "3 Insufficient nvidia.com/gpu" in p.text and "(2 pods)" in p.text
    assert "fragmentation" not in kinds(model.problems(NOW))
    assert p.target.view == "workloads" and p.target.filter == name_filter([("team-a", "huge"), ("team-a", "huge2")])


def test_a_pool_without_nodes_waits_for_scale_up_and_a_provisioning_pod_for_its_request() -> None:
    _, model = make(admitted("team-a", "a100", "cq-spot", "gpu-a100", 8),
                    pod("team-a", "a100-0", "a100", 8, scheduled=UNSCHED),
                    admitted("team-a", "dws", "cq-spot", "gpu-a100", 8),
                    pod("team-a", "dws-0", "dws", 8, scheduled=UNSCHED,
                        annotations={"autoscaling.x-k8s.io/consume-provisioning-request": "dws-prov-1"}))
    problems = model.problems(NOW)
    assert only(problems, "scale-up").count == 1 and "no ready node of flavor gpu-a100" in only(problems, "scale-up").text
    assert only(problems, "provisioning").count == 1 and "dws-prov-1" in only(problems, "provisioning").text


def test_image_pull_and_crash_loop_come_from_container_waiting_reasons() -> None:
    _, model = make(*spot_pool(), admitted("team-a", "img", "cq-spot", "gpu-l4-spot", 1),
                    pod("team-a", "img-0", "img", 1, node_name="spot-0", waiting="ImagePullBackOff",
                        scheduled=(True, "", "")),
                    admitted("team-a", "crash", "cq-spot", "gpu-l4-spot", 1),
                    pod("team-a", "crash-0", "crash", 1, node_name="spot-1", phase="Running",
                        waiting="CrashLoopBackOff", restarts=5, scheduled=(True, "", "")))
    problems = model.problems(NOW)
    assert "ImagePullBackOff" in only(problems, "image-pull").text
    crash = only(problems, "crash-loop")
    assert "5 restarts, last exit Error" in crash.text and crash.count == 1


def test_pods_ready_timeout_shows_time_left_requeues_and_backoff() -> None:
    cfg = KueueConfig(wait_for_pods_ready=WaitForPodsReady(timeout_seconds=900, backoff_base_seconds=60))
    wl = admitted("team-a", "slow", "cq-spot", "gpu-a100", 8,
                  extra=[condition("PodsReady", False, "PodsReady", "Not all pods are ready", NOW - 600)])
    wl["status"]["requeueState"] = {"count": 2}
    _, model = make(wl, pod("team-a", "slow-0", "slow", 8, scheduled=UNSCHED), config=cfg)
    p = only(model.problems(NOW), "pods-ready")
    # Admitted 600 s ago, 900 s timeout: 5 minutes left; the third eviction backs off 60·2² s.
    assert "timeout in 5m" in p.text and "requeued 2 times" in p.text and "backoff 4m" in p.text, p.text
    _, without = make(wl, pod("team-a", "slow-0", "slow", 8, scheduled=UNSCHED))
    assert "pods-ready" not in kinds(without.problems(NOW))  # Kueue's config unknown: no clock to show


def test_waiting_too_long_per_cluster_queue_with_the_explain_headline() -> None:
    pend = [workload("team-a", f"p{i}", "lq", {GPU: "32"}, created=NOW - 3600 + i) for i in range(3)]
    fresh = workload("team-a", "fresh", "lq", {GPU: "1"}, created=NOW - 10)
    _, model = make(*pend, fresh)
    p = only(model.problems(NOW), "waiting")
    assert p.count == 3 and p.oldest == 3600 and p.cluster_queue == "cq-spot"
    assert "ClusterQueue cq-spot: 3 workloads pending over 5m, oldest 1h" in p.text
    assert "nvidia.com/gpu" in p.text or "fit" in p.text, p.text  # the verdict: 32 GPUs never fit 16
    assert p.target.view == "workloads" and p.target.filter == name_filter([("team-a", f"p{i}") for i in range(3)])
    lines = model.queue_lines(NOW)
    assert [(q.name, q.pending, q.admitted) for q in lines] == [("cq-spot", 4, 0)]


def test_explain_runs_once_per_resource_version(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import kueuetop.views.triage as T

    calls = []
    real = T.explain

    def counting(*a, **kw):  # type: ignore[no-untyped-def]
        calls.append(a[1])
        return real(*a, **kw)

    monkeypatch.setattr(T, "explain", counting)
    store, model = make(workload("team-a", "old", "lq", {GPU: "32"}, created=NOW - 3600))
    model.problems(NOW)
    model.problems(NOW + 5)
    assert calls == [("team-a", "old")]
    wl = workload("team-a", "old", "lq", {GPU: "32"}, created=NOW - 3600)
    seen: list[Changes] = []
    store.subscribe(seen.append)
    put(store, wl)  # a new resourceVersion: explained again
    model.update(seen[-1].keys, NOW)
    model.problems(NOW + 10)
    assert len(calls) == 2


def test_without_a_budget_explains_are_left_to_the_caller_and_lines_are_folded() -> None:
    store = Store(clock=lambda: NOW)
    objs = base_objects()
    for c in range(4):
        objs += [cluster_queue(f"cq{c}", group([GPU], fq("gpu-l4-spot", **{GPU: 1}))), local_queue(f"ns{c}", "lq", f"cq{c}"),
                 workload(f"ns{c}", "old", "lq", {GPU: "2"}, created=NOW - 3600 + c)]
    put(store, *objs)
    model = TriageModel(store, explain_budget=0, max_lines=2)
    model.update(None, NOW)
    problems = model.problems(NOW)
    waiting = [p for p in problems if p.kind == "waiting"]
    assert [p.cluster_queue for p in waiting] == ["cq0", "cq1"] and all(":" not in p.text.split("oldest")[1] for p in waiting)
    more = only(problems, "waiting-more")
    assert more.count == 2 and "... and 2 more ClusterQueues with 2 workloads pending" in more.text
    assert model.wanted_explains() == [("ns0", "old"), ("ns1", "old")] and model.wanted_explains() == []
    assert "gpu" in model.explain_now(("ns0", "old"), NOW)
    first = next(p for p in model.problems(NOW) if p.kind == "waiting")
    assert first.cluster_queue == "cq0" and first.text.endswith(model.explain_now(("ns0", "old"), NOW))


def test_churn_by_reason_and_queue_with_rate_and_thrashing() -> None:
    objs = []
    for i in range(3):
        wl = workload("team-a", f"ev{i}", "lq", {GPU: "1"}, created=NOW - 900)
        wl["status"]["conditions"] = [condition("Evicted", True, "Preempted", "preempted", NOW - 120 * (i + 1)),
                                      condition("Preempted", True, "InCohortReclamation", "reclaimed", NOW - 120 * (i + 1))]
        objs.append(wl)
    objs[0]["status"]["schedulingStats"] = {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 4}]}
    old = workload("team-a", "old-ev", "lq", {GPU: "1"}, created=NOW - 9000)
    old["status"]["conditions"] = [condition("Evicted", True, "PodsReadyTimeout", "", NOW - 3000)]
    _, model = make(*objs, old)
    problems = model.problems(NOW)
    pre = only(problems, "preempted")
    assert pre.count == 3 and "ClusterQueue cq-spot (InCohortReclamation), 0.3/min" in pre.text, pre.text
    assert pre.oldest == 360
    thrash = only(problems, "thrashing")
    assert thrash.count == 1 and "team-a/ev0 evicted 4 times" in thrash.text and thrash.target.workload == ("team-a", "ev0")
    assert "evicted" not in kinds(problems)  # the PodsReadyTimeout eviction is older than ten minutes


def test_idle_gpus_and_nodes_no_flavor_can_use() -> None:
    store, model = make(*spot_pool(), node("odd-0", 8, {"pool": "odd"}),
                        node("spot-t", 4, {"pool": "spot"}, taints=[{"key": "dedicated", "value": "infer",
                                                                     "effect": "NoSchedule"}]))
    store.put_gpu_samples([gpu(f"spot-{i}", j, util=1.0, pod=("team-a", f"busy-{i}")) for i in range(3)
                           for j in range(2)], NOW, "dcgm")
    seen: list[Changes] = []
    store.subscribe(seen.append)
    store.put_gpu_samples([gpu(f"spot-{i}", j, util=1.0, pod=("team-a", f"busy-{i}")) for i in range(3)
                           for j in range(2)], NOW, "dcgm")
    model.update(seen[-1].keys, NOW)
    problems = model.problems(NOW)
    idle = only(problems, "idle")
    assert idle.count == 1 and "leave 6 GPUs idle" in idle.text and idle.target.workload == ("team-a", "busy")
    unusable = only(problems, "unusable-nodes")
    assert unusable.count == 2 and "12 GPUs" in unusable.text, unusable.text
    assert unusable.target.view == "nodes"


def test_broken_nodes_gpus_provisioning_checks_queues_and_sources() -> None:
    pr_failed = {"apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
                 "metadata": {"name": "dws-job-prov-1", "namespace": "team-a", "creationTimestamp": ts(NOW - 900),
                              "ownerReferences": [{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                                                   "name": "dws-job", "uid": "u", "controller": True}]},
                 "spec": {"provisioningClassName": "queued-provisioning.gke.io", "podSets": []},
                 "status": {"conditions": [condition("Failed", True, "ResourcePoolExhausted", "no capacity", NOW - 60)]}}
    pr_stuck = {**pr_failed, "metadata": {**pr_failed["metadata"], "name": "other-prov-1"},
                "status": {"conditions": [condition("Provisioned", False, "Waiting", "waiting for capacity", NOW - 900)]}}
    store, model = make(node("bad-0", 8, {"pool": "spot"}, ready=False), node("bad-1", 8, {"pool": "spot"}, cordoned=True),
                        node("cpu-0", 0), pr_failed, pr_stuck, admission_check("prov", active=False),
                        cluster_queue("cq-held", group([GPU], fq("gpu-a100", **{GPU: 8})), stop_policy="Hold"),
                        local_queue("team-b", "lq-b", "cq-spot", stop_policy="HoldAndDrain"))
    store.put_gpu_samples([gpu("bad-0", 0, xid=79), gpu("bad-0", 1), gpu("bad-1", 2, ecc=3.0)], NOW, "dcgm")
    store.set_source_state("kube:pods", SourceState.ERROR, "connection refused")
    model.update(None, NOW)
    problems = model.problems(NOW)
    nodes = only(problems, "nodes")
    assert nodes.count == 2 and "NotReady or cordoned" in nodes.text and "16 GPUs out" in nodes.text, nodes.text
    assert nodes.oldest == 120
    errs = only(problems, "gpu-errors")
    assert errs.count == 2 and "XID 79" in errs.text
    assert only(problems, "provreq-failed").target.workload == ("team-a", "dws-job")
    assert "not provisioned after 15m" in only(problems, "provreq-stuck").text
    check = only(problems, "check")
    assert "AdmissionCheck prov is not Active" in check.text and check.target.kind == K.ADMISSION_CHECKS
    queues = [p for p in problems if p.kind == "queue"]
    assert sorted(p.text for p in queues) == ["ClusterQueue cq-held Stopped(Hold)",
                                              "LocalQueue team-b/lq-b Stopped(HoldAndDrain)"]
    src = [p for p in problems if p.kind == "source"]
    assert any("kube:pods is error" in p.text and "connection refused" in p.text for p in src)
    # Ranked: broken first, the sources' before all.
    assert problems[0].kind == "source"
    assert all(p.text.isascii() for p in problems)  # drawn under --ascii and printed by the CLI too


def test_incremental_updates_equal_a_rebuild_and_never_rebuild() -> None:
    store, model = make(*spot_pool(), admitted("team-a", "big", "cq-spot", "gpu-l4-spot", 4),
                        pod("team-a", "big-0", "big", 4, scheduled=UNSCHED))
    seen: list[Changes] = []
    store.subscribe(seen.append)

    def step(*objs: dict) -> None:
        seen.clear()
        put(store, *objs)
        for c in seen:
            model.update(c.keys, NOW)

    assert "fragmentation" in kinds(model.problems(NOW))
    put(store, cluster_queue("cq-calm", group([GPU], fq("gpu-l4-spot", **{GPU: 1}))))
    model.update({K.CLUSTER_QUEUES: {("", "cq-calm")}}, NOW)
    assert [q.name for q in model.queue_lines(NOW)] == ["cq-spot", "cq-calm"]  # `big` is stuck in cq-spot
    # `busy` finishes on spot-0: 4 GPUs free there, so `big` now fits (scheduler not yet run).
    step(pod("team-a", "busy-0", "busy", 2, node_name="spot-0", phase="Succeeded"))
    assert "fragmentation" not in kinds(model.problems(NOW))
    # … it is scheduled and runs: nothing is wrong with it any more.
    step(pod("team-a", "big-0", "big", 4, node_name="spot-0", phase="Running", scheduled=(True, "", "")))
    assert not {"unschedulable", "fragmentation", "scale-up"} & kinds(model.problems(NOW))
    step(pod("team-a", "img-0", "img", 1, node_name="spot-1", waiting="ErrImagePull"),
         admitted("team-a", "img", "cq-spot", "gpu-l4-spot", 1),
         workload("team-a", "late", "lq", {GPU: "1"}, created=NOW - 7200))
    seen.clear()
    delete(store, K.PODS, ("team-a", "busy-1"))
    for c in seen:
        model.update(c.keys, NOW)
    fresh = TriageModel(store)
    fresh.update(None, NOW)
    strip = [(p.kind, p.text, p.count, p.oldest) for p in model.problems(NOW)]
    assert strip == [(p.kind, p.text, p.count, p.oldest) for p in fresh.problems(NOW)]
    assert {"image-pull", "waiting"} <= kinds(model.problems(NOW))
    assert model.free_gpus() == fresh.free_gpus() == {"spot-0": 0, "spot-1": 3, "spot-2": 2}
    assert model.rebuilds == 1


def test_name_filter_keeps_exactly_those_workload_rows() -> None:
    from kueuetop.views.filtering import parse_filter
    from kueuetop.views.rows import Row, cell

    f = parse_filter(name_filter([("team-a", "job.1"), ("team-a", "job-2"), ("team-b", "x")]))
    rows = {(ns, n): Row((ns, n), (cell(ns), cell(n), cell("lq"))) for ns, n in
            [("team-a", "job.1"), ("team-a", "job-2"), ("team-a", "job-22"), ("team-a", "jobx1"),
             ("team-b", "x"), ("team-a", "x"), ("team-bb", "x")]}
    assert sorted(k for k, r in rows.items() if f(r)) == [("team-a", "job-2"), ("team-a", "job.1"), ("team-b", "x")]



def _pod_event(store: Store, name: str, pod: str, reason: str, message: str, at: float, count: int = 1) -> Changes:
    """A core/v1 Event about a pod, as the store keeps Events (the wire dict), one change set."""
    from kueuetop.store import Entry, StoreEvent

    raw = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "team-a"},
           "involvedObject": {"kind": "Pod", "namespace": "team-a", "name": pod},
           "reason": reason, "message": message, "type": "Normal", "count": count,
           "lastTimestamp": ts(at), "source": {"component": "cluster-autoscaler"}}
    store.apply(StoreEvent.upsert(K.EVENTS, "events", Entry(("team-a", name), None, raw, f"uid-{name}", name)))
    return {K.EVENTS: {("team-a", name)}}


def test_the_autoscalers_events_say_whether_a_pending_pod_waits_for_scale_up() -> None:
    store, model = make(*spot_pool(), admitted("team-a", "huge", "cq-spot", "gpu-l4-spot", 8),
                        pod("team-a", "huge-0", "huge", 8, scheduled=UNSCHED))
    assert "unschedulable" in kinds(model.problems(NOW))
    # The pool is at its maximum: still unschedulable, and the autoscaler's reason is on the line.
    model.update(_pod_event(store, "e1", "huge-0", "NotTriggerScaleUp",
                            "pod didn't trigger scale-up: 1 max node group size reached", NOW - 60), NOW)
    p = only(model.problems(NOW), "unschedulable")
    assert "autoscaler: pod didn't trigger scale-up: 1 max node group size reached" in p.text
    # Then the autoscaler finds room (a newer Event): the pod waits for its new node.
    model.update(_pod_event(store, "e2", "huge-0", "TriggeredScaleUp",
                            "pod triggered scale-up: [{spot 3->4 (max: 10)}]", NOW - 10), NOW)
    problems = model.problems(NOW)
    assert "unschedulable" not in kinds(problems)
    assert "pod triggered scale-up: [{spot 3->4 (max: 10)}]" in only(problems, "scale-up").text
    # An Event of another component or another kind of object changes nothing.
    model.update(_pod_event(store, "e3", "busy-0", "Pulled", "image pulled", NOW - 5), NOW)
    assert only(model.problems(NOW), "scale-up").count == 1
    assert model.rebuilds == 1  # every step from the change sets


def test_fragmentation_stays_named_when_the_autoscaler_declines() -> None:
    store, model = make(*spot_pool(), admitted("team-a", "big", "cq-spot", "gpu-l4-spot", 4),
                        pod("team-a", "big-0", "big", 4, scheduled=UNSCHED))
    model.update(_pod_event(store, "e1", "big-0", "NotTriggerScaleUp",
                            "pod didn't trigger scale-up: 1 max node group size reached", NOW - 30), NOW)
    p = only(model.problems(NOW), "fragmentation")
    assert "no node in gpu-l4-spot has 4 free GPUs: 3 nodes have 2" in p.text
    assert "unschedulable" not in kinds(model.problems(NOW))
    # The pod's own cause (the detail screen's line) carries the autoscaler's reason too.
    from kueuetop.views import pod_evidence as PE

    pod_obj = store.get(K.PODS, ("team-a", "big-0"))
    fit = PE.PoolFit("gpu-l4-spot", 4, 3, 3, 0, 6, ((2, 3),))  # 3 ready nodes with 2 free each
    cause = PE.pod_cause(pod_obj, fit, [("NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached")])
    assert cause.cause == PE.FRAGMENTED and "autoscaler: pod didn't trigger scale-up" in cause.message


def test_churn_sums_are_kept_between_refreshes_and_follow_time_and_changes() -> None:
    """The evictions in the window are summed once and reused while nothing changes; a new
    eviction, a workload gone, or the oldest eviction leaving the window all show at once, and the
    board always equals one rebuilt from scratch."""
    def evicted(name: str, ago: float, reason: str = "InCohortReclamation") -> dict:
        wl = workload("team-a", name, "lq", {GPU: "1"}, created=NOW - 9000)
        wl["status"]["conditions"] = [condition("Evicted", True, "Preempted", "preempted", NOW - ago),
                                      condition("Preempted", True, reason, "reclaimed", NOW - ago)]
        return wl

    store, model = make(evicted("a", 100), evicted("b", 500), evicted("c", 590, "InClusterQueue"))
    seen: list[Changes] = []
    store.subscribe(seen.append)

    def board(now: float) -> list[tuple]:
        return [(p.kind, p.text, p.count, p.oldest) for p in model.problems(now) if p.category == "churn"]

    def rebuilt(now: float) -> list[tuple]:
        fresh = TriageModel(store)
        fresh.update(None, now)
        return [(p.kind, p.text, p.count, p.oldest) for p in fresh.problems(now) if p.category == "churn"]

    first = board(NOW)
    assert first == rebuilt(NOW) and {k for k, *_ in first} == {"preempted"} and len(first) == 2
    digest = model._churn
    assert board(NOW + 5) == rebuilt(NOW + 5) and model._churn is digest  # nothing moved: the same sums
    # c's eviction (590 s ago) leaves the 600 s window at NOW + 10: its line goes.
    assert board(NOW + 11) == rebuilt(NOW + 11) and len(board(NOW + 11)) == 1 and model._churn is not digest
    # A new eviction in the window, then a workload deleted: each shows at the next refresh.
    seen.clear()
    put(store, evicted("d", -10))
    for c in seen:
        model.update(c.keys, NOW + 12)
    assert board(NOW + 12) == rebuilt(NOW + 12) and board(NOW + 12)[0][2] == 3
    seen.clear()
    delete(store, K.WORKLOADS, ("team-a", "a"))
    for c in seen:
        model.update(c.keys, NOW + 13)
    assert board(NOW + 13) == rebuilt(NOW + 13) and board(NOW + 13)[0][2] == 2
    lines = {q.name: q for q in model.queue_lines(NOW + 13)}
    assert lines["cq-spot"].trouble >= 2e3  # the two evictions still count on the queue's line
