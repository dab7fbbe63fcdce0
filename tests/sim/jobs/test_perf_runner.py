"""Kueue's scheduler-perf harness controller (runner/controller/controller.go): it plays the
jobs of Workloads labelled with a running time — no pods, Finished ByTest once admitted for
that long, evictions finished by unsetting the quota reservation."""

import logging

from kueuetop.sim.jobs.perf_runner import PERF_RUNTIME_LABEL, runs_workload
from tests.sim.helpers import Sim, cond, is_true

# As in Kueue's harness: no nodes at all.
BASE = """
{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "perf"}}
---
{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "rf"}, "spec": {}}
"""


def workload(name: str, running_ms: str = "1500", **meta) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": "perf", "labels": {PERF_RUNTIME_LABEL: running_ms}, **meta},
            "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}}


def test_runs_workload_only_for_labelled_workloads_without_owner():
    assert runs_workload(workload("a"))
    plain = workload("b")
    del plain["metadata"]["labels"]
    assert not runs_workload(plain)
    owned = workload("c", ownerReferences=[{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}])
    assert not runs_workload(owned)
    assert not runs_workload(None) and not runs_workload({"metadata": "x"})


def test_admitted_workload_finishes_by_test_after_its_running_time_without_pods():
    sim = Sim(BASE)
    sim.run(1)
    sim.create(workload("small-0"))
    sim.kueue.admit("perf", "small-0", flavors={"cpu": "rf"})
    sim.run(1.4)
    wl = sim.get("workloads", "perf", "small-0")
    assert is_true(wl, "Admitted") and not is_true(wl, "Finished")
    assert sim.pods_of("perf") == []  # the harness runs no pods, nor a PodsReady condition
    assert cond(wl, "PodsReady") is None
    sim.run(0.2)
    fin = cond(sim.get("workloads", "perf", "small-0"), "Finished")
    assert fin is not None and (fin["status"], fin["reason"], fin["message"]) == ("True", "ByTest", "By test runner")
    assert sim.pods_of("perf") == []


def test_eviction_is_finished_by_unsetting_the_reservation_and_the_clock_restarts():
    sim = Sim(BASE)
    sim.run(1)
    sim.create(workload("big", running_ms="10000"))
    sim.kueue.admit("perf", "big", flavors={"cpu": "rf"})
    sim.run(5)
    sim.kueue.evict("perf", "big")
    sim.run(0.5)
    wl = sim.get("workloads", "perf", "big")
    qr = cond(wl, "QuotaReserved")
    assert (qr["status"], qr["reason"], qr["message"]) == ("False", "Pending", "Evicted by the test runner")
    assert "admission" not in wl["status"] and not is_true(wl, "Admitted")
    sim.kueue.admit("perf", "big", flavors={"cpu": "rf"})
    sim.run(9.5)  # admitted again at ~6.5 s: the 10 s start again from there
    assert not is_true(sim.get("workloads", "perf", "big"), "Finished")
    sim.run(1)
    assert is_true(sim.get("workloads", "perf", "big"), "Finished")


def test_bad_running_time_is_taken_as_zero_and_logged(caplog):
    sim = Sim(BASE)
    sim.run(1)
    sim.create(workload("odd", running_ms="soon"))
    sim.kueue.admit("perf", "odd", flavors={"cpu": "rf"})
    # Own level: the console quiets the `kueuetop` loggers, and other tests run it in-process.
    with caplog.at_level(logging.WARNING, logger="kueuetop.sim.jobs.perf_runner"):
        sim.run(0.5)
    assert is_true(sim.get("workloads", "perf", "odd"), "Finished")
    assert "cannot parse" in caplog.text
