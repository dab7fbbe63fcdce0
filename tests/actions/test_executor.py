"""Every action against the served refarch cluster with the real client: Kueue reacts as it would."""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client, config

from kueuetop.actions import executor as ex_mod
from kueuetop.actions.executor import Executor
from kueuetop.kueue.actions import parse_target
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.workload_state import derive_state
from kueuetop.sim.serve import ServedCluster

from .conftest import CQ, KUEUE, LQ, NS, V2, Kueue, conds, scheduling_passes, wait_until


def state(wl: dict) -> str:
    return derive_state(parse_object(wl), time.time()).phase.value


def run(api: client.ApiClient, action: str, target: str, **kw: object):
    return Executor(api, poll_interval=0.05, wait_timeout=10).run(action, parse_target(target), **kw)


def test_hold_evicts_an_admitted_workload(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    res = run(api, "hold", f"{NS}/low")
    assert res.ok and res.steps_done == 1 and res.summary["active"] is False
    wait_until(lambda: conds(k.wl("low")).get("Evicted") == ("True", "Deactivated"), what="low evicted")
    wait_until(lambda: not k.holds_quota("low"), what="quota released")
    assert k.wl("low")["spec"]["active"] is False


def test_hold_and_resume_a_pending_workload(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    assert run(api, "hold", f"{NS}/high").ok
    # Kueue marks even a pending workload Evicted/Deactivated: it is now inactive, not pending.
    wait_until(lambda: conds(k.wl("high")).get("Evicted") == ("True", "Deactivated"), what="high inactive")
    assert state(k.wl("high")) == "Inactive"
    res = run(api, "resume", f"{NS}/high")
    assert res.ok and res.summary["active"] is True
    wait_until(lambda: state(k.wl("high")) == "Pending", what="high pending again")
    assert k.holds_quota("low") and not k.holds_quota("high")


def test_hold_then_resume_an_admitted_workload_requeues_it(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    assert run(api, "hold", f"{NS}/low").ok
    wait_until(lambda: k.holds_quota("high"), what="high admitted in the freed quota")
    wait_until(lambda: conds(k.wl("low")).get("Requeued") == ("False", "Deactivated"), what="low not requeued")
    assert run(api, "resume", f"{NS}/low").ok
    wait_until(lambda: conds(k.wl("low")).get("Requeued") == ("True", "Reactivated"), what="low reactivated")
    assert state(k.wl("low")) == "Pending"


def _backing_off(k: Kueue, name: str) -> None:
    """Put `name` in PodsReadyTimeout backoff, as Kueue writes it (Evicted, Requeued=False, requeueState)."""
    wl = k.wl(name)
    c = [x for x in wl["status"]["conditions"] if x["type"] not in ("Evicted", "Requeued")]
    t = c[0]["lastTransitionTime"]
    c += [{"type": "Evicted", "status": "True", "reason": "PodsReadyTimeout", "message": "Exceeded the PodsReady "
           "timeout", "lastTransitionTime": t, "observedGeneration": 1},
          {"type": "Requeued", "status": "False", "reason": "PodsReadyTimeout", "message": "Exceeded the PodsReady "
           "timeout", "lastTransitionTime": t, "observedGeneration": 1}]
    k.co.patch_namespaced_custom_object_status(KUEUE, V2, NS, "workloads", name, {
        "status": {"conditions": c, "requeueState": {"count": 3, "requeueAt": "2099-01-01T00:00:00Z"}}})


def test_requeue_resets_backoff_of_a_pending_workload(api, served: ServedCluster,
                                                     low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    _backing_off(k, "high")
    scheduling_passes(served, what="scheduling passes after the backoff was written")
    assert k.wl("high")["status"]["requeueState"]["count"] == 3  # Kueue keeps a backoff until requeueAt
    res = run(api, "requeue", f"{NS}/high")
    assert res.ok and res.steps_done == 3, res
    wait_until(lambda: state(k.wl("high")) == "Pending", what="out of backoff")
    high = k.wl("high")
    assert high["spec"]["active"] is True and "requeueState" not in high["status"]
    assert conds(high)["Requeued"][0] == "True"


def test_requeue_of_a_plain_pending_workload(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    res = run(api, "requeue", f"{NS}/high")
    assert res.ok and res.steps_done == 3 and res.summary["active"] is True
    wait_until(lambda: state(k.wl("high")) == "Pending", what="pending")


def test_requeue_refuses_an_admitted_workload(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    before = k.wl("low")["metadata"]["resourceVersion"]
    res = run(api, "requeue", f"{NS}/low")
    assert not res.ok and res.error == "precondition" and "holds quota" in res.message
    assert k.wl("low")["metadata"]["resourceVersion"] == before


def test_preempt_releases_quota_and_admits_the_waiting_workload(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    res = run(api, "preempt", f"{NS}/low")
    assert res.ok and res.steps_done == 3, res
    wait_until(lambda: k.holds_quota("high"), what="high admitted")
    wait_until(lambda: conds(k.wl("low")).get("Requeued") == ("True", "Reactivated"), what="low reactivated")
    low = k.wl("low")
    c = conds(low)
    assert low["spec"]["active"] is True and c["Evicted"] == ("True", "Deactivated")
    assert c["QuotaReserved"][0] == "False"  # back in its queue, behind high
    usage = {r["name"]: r["total"] for f in k.cq()["status"]["flavorsUsage"] for r in f["resources"]}
    assert usage["nvidia.com/gpu"] == "1"  # only high's GPU


def test_preempt_and_hold_keeps_it_inactive(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    res = run(api, "preempt-and-hold", f"{NS}/low")
    assert res.ok and res.steps_done == 2
    assert res.summary["active"] is False and res.summary["conditions"]["QuotaReserved"].startswith("False")
    wait_until(lambda: k.holds_quota("high"), what="high admitted")
    assert conds(k.wl("low"))["Evicted"] == ("True", "Deactivated")


def test_preempt_refuses_a_pending_workload(api, low_running_high_waiting: Kueue) -> None:
    res = run(api, "preempt", f"{NS}/high")
    assert not res.ok and res.error == "precondition" and "holds no quota" in res.message


@pytest.mark.parametrize("kind", ["cq", "lq"])
def test_queue_stop_drain_resume(api, low_running_high_waiting: Kueue, kind: str) -> None:
    k = low_running_high_waiting
    target = f"cq/{CQ}" if kind == "cq" else f"lq/{NS}/{LQ}"
    get = k.cq if kind == "cq" else k.lq
    stopped = "ClusterQueueStopped" if kind == "cq" else "LocalQueueStopped"
    restarted = "ClusterQueueRestarted" if kind == "cq" else "LocalQueueRestarted"

    res = run(api, "stop", target)
    assert res.ok and res.summary["stopPolicy"] == "Hold"
    wait_until(lambda: conds(get()).get("Active") == ("False", "Stopped"), what="queue stopped")
    assert k.holds_quota("low")  # Hold keeps admitted work running

    assert run(api, "drain", target).ok
    wait_until(lambda: conds(k.wl("low")).get("Evicted") == ("True", stopped), what=f"low evicted {stopped}")
    wait_until(lambda: not k.holds_quota("low"), what="quota released")
    assert not k.holds_quota("high")  # nothing is admitted while the queue is stopped

    assert run(api, "resume-queue", target).ok
    wait_until(lambda: conds(get()).get("Active", ("True", ""))[0] == "True", what="queue active")
    wait_until(lambda: k.holds_quota("high"), what="high admitted after resume")
    wait_until(lambda: conds(k.wl("low")).get("Requeued") == ("True", restarted), what=f"low {restarted}")


@pytest.mark.parametrize("action,target", [("hold", f"{NS}/low"), ("preempt", f"{NS}/low"),
                                           ("requeue", f"{NS}/high"), ("drain", f"cq/{CQ}"),
                                           ("stop", f"lq/{NS}/{LQ}")])
def test_dry_run_changes_nothing(api, low_running_high_waiting: Kueue, action: str, target: str) -> None:
    k = low_running_high_waiting
    before = {n: k.wl(n)["metadata"]["resourceVersion"] for n in ("low", "high")}
    queues = (k.cq()["metadata"]["resourceVersion"], k.lq()["metadata"]["resourceVersion"])
    res = run(api, action, target, dry_run=True)
    assert res.ok and res.dry_run and "dry run" in res.message
    # The server answered as if applied...
    assert res.summary.get("active", True) is not None
    # ...and stored nothing.
    assert {n: k.wl(n)["metadata"]["resourceVersion"] for n in ("low", "high")} == before
    assert (k.cq()["metadata"]["resourceVersion"], k.lq()["metadata"]["resourceVersion"]) == queues


def test_dry_run_answer_shows_the_patched_object(api, low_running_high_waiting: Kueue) -> None:
    res = run(api, "hold", f"{NS}/low", dry_run=True)
    assert res.summary["active"] is False
    assert low_running_high_waiting.wl("low")["spec"]["active"] is True


def test_not_found(api) -> None:
    res = run(api, "hold", f"{NS}/no-such-workload")
    assert not res.ok and res.error == "not-found" and "not found" in res.message
    res = run(api, "drain", "cq/no-such-queue")
    assert not res.ok and res.error == "not-found"


def test_viewer_forced_past_ssar_gets_the_403_message(viewer_api, low_running_high_waiting: Kueue) -> None:
    res = run(viewer_api, "hold", f"{NS}/low")
    assert not res.ok and res.error == "forbidden"
    assert res.message.startswith('forbidden: user "bob" lacks RBAC permission to patch "workloads" in API group '
                                  '"kueue.x-k8s.io" in namespace "team-a"')
    assert 'cannot patch resource "workloads"' in res.message  # the server's own words follow
    assert low_running_high_waiting.wl("low")["spec"]["active"] is True
    res = run(viewer_api, "drain", f"cq/{CQ}")
    assert not res.ok and 'patch "clusterqueues"' in res.message and "at cluster scope" in res.message


def _provoke_conflicts(monkeypatch: pytest.MonkeyPatch, k: Kueue, name: str, times: int) -> list[int]:
    """Right after the executor reads the workload, another client writes it (a real 409 follows)."""
    real_get = Executor.get
    statuses: list[int] = []
    left = [times]

    def racing_get(self: Executor, target):  # type: ignore[no-untyped-def]
        obj = real_get(self, target)
        if left[0] > 0:
            left[0] -= 1
            k.co.patch_namespaced_custom_object(KUEUE, V2, NS, "workloads", name,
                                                {"metadata": {"labels": {"touched": str(left[0])}}})
        return obj

    real_patch = Executor.patch

    def counting_patch(self: Executor, target, body, **kw):  # type: ignore[no-untyped-def]
        try:
            out = real_patch(self, target, body, **kw)
        except ex_mod.ApiException as exc:
            statuses.append(exc.status)
            raise
        statuses.append(200)
        return out

    monkeypatch.setattr(Executor, "get", racing_get)
    monkeypatch.setattr(Executor, "patch", counting_patch)
    return statuses


def test_conflict_is_reread_and_retried_once(api, low_running_high_waiting: Kueue,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    k = low_running_high_waiting
    statuses = _provoke_conflicts(monkeypatch, k, "high", times=1)
    res = run(api, "hold", f"{NS}/high")
    assert statuses == [409, 200] and res.ok
    wl = k.wl("high")
    assert wl["spec"]["active"] is False and wl["metadata"]["labels"]["touched"] == "0"


def test_second_conflict_gives_up(api, low_running_high_waiting: Kueue, monkeypatch: pytest.MonkeyPatch) -> None:
    k = low_running_high_waiting
    statuses = _provoke_conflicts(monkeypatch, k, "high", times=5)
    res = run(api, "hold", f"{NS}/high")
    assert statuses == [409, 409]
    assert not res.ok and res.error == "conflict" and "after one retry" in res.message
    assert k.wl("high")["spec"]["active"] is True


def test_wait_times_out_and_cancels(api, served: ServedCluster, low_running_high_waiting: Kueue) -> None:
    served.parts.cluster.stop()  # Kueue stops reacting; the API server still answers
    # … once the step it may be in has ended: a step still running could release the quota.
    served.thread.join(timeout=10)
    assert not served.thread.is_alive()
    ex = Executor(api, poll_interval=0.05, wait_timeout=0.5)
    res = ex.run("preempt", parse_target(f"{NS}/low"))
    assert not res.ok and res.error == "timeout" and res.steps_done == 1 and "quota-released" in res.message
    # Cancelled while waiting (the deactivation has landed): stopped at once, and it says that the
    # caller has to read back what landed.
    cancel = threading.Event()
    res = Executor(api, poll_interval=0.05, wait_timeout=30).run(
        "preempt-and-hold", parse_target(f"{NS}/low"), cancel=cancel,
        on_step=lambda i, text: cancel.set() if text.startswith("wait") else None)
    assert not res.ok and res.error == "cancelled" and res.steps_done == 1 and res.landed == "unknown"


def test_network_error_is_a_clear_message() -> None:
    cfg = client.Configuration()
    cfg.host = "http://127.0.0.1:9"  # discard port: nothing listens
    cfg.retries = False
    res = Executor(client.ApiClient(cfg), request_timeout=2).run("hold", parse_target("team-a/x"))
    assert not res.ok and res.error == "network" and "cannot reach the API server at http://127.0.0.1:9" in res.message


def test_falls_back_to_v1beta1(api, low_running_high_waiting: Kueue) -> None:
    ex = Executor(api, version="v1alpha9", fallback_version="v1beta1", poll_interval=0.05, wait_timeout=10)
    res = ex.run("hold", parse_target(f"{NS}/high"))
    assert res.ok and ex.version == "v1beta1"
    assert low_running_high_waiting.wl("high")["spec"]["active"] is False


def test_uses_a_kubeconfig_context(served: ServedCluster, low_running_high_waiting: Kueue) -> None:
    c = config.new_client_from_config(config_file=str(served.kubeconfig), context="kueuetop-sim")
    assert Executor(c).run("stop", parse_target(f"cq/{CQ}")).ok


def test_actions_are_recorded_under_kueuetop_in_managed_fields(api, low_running_high_waiting: Kueue) -> None:
    k = low_running_high_waiting
    assert run(api, "hold", f"{NS}/low").ok
    owners = {e["manager"]: e for e in k.wl("low")["metadata"].get("managedFields") or []}
    assert "f:active" in owners["kueuetop"]["fieldsV1"]["f:spec"] and owners["kueuetop"]["operation"] == "Update"
