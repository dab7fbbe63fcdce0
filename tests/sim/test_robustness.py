"""Malformed objects are logged and skipped; the controllers keep working."""

from .helpers import Sim, job, node_pool


def test_malformed_objects_do_not_stop_the_controllers():
    sim = Sim(node_pool("cpu", size=1, machine="e2-standard-8"))
    sim.run(1)
    store = sim.store
    store.create("batch", "jobs", {"metadata": {"name": "weird", "namespace": "default",
                                                "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                                   "spec": {"parallelism": "two", "template": 5, "suspend": "yes"}})
    store.create("kueue.x-k8s.io", "workloads", {"metadata": {"name": "odd", "namespace": "default"},
                                                 "spec": {"podSets": "none"},
                                                 "status": {"conditions": "Admitted", "admission": 3}})
    store.create("", "nodes", {"metadata": {"name": "broken-node"}, "status": {"allocatable": {"cpu": "many"}}})
    store.create("", "pods", {"metadata": {"name": "p", "namespace": "default",
                                           "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
                              "spec": {"containers": "c"}})
    store.create("autoscaling.x-k8s.io", "provisioningrequests",
                 {"metadata": {"name": "pr", "namespace": "default"},
                  "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "podSets": [7]}})
    sim.run(30)
    # A well-formed Job created afterwards still gets its Workload.
    sim.create(job("fine", ns="default"))
    sim.run(1)
    assert sim.workload_of_job("default", "fine") is not None
