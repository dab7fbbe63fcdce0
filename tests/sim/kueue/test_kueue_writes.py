"""The admission controller's status writes: a Pending verdict that changes nothing is not
written again, and one that changes something always is."""

from kueuetop.admission.decisions import Pending
from kueuetop.sim.kueue.controller import KueueController
from kueuetop.sim.storage.objectstore import ObjectStore
from tests.builders import T0, workload

KUEUE = "kueue.x-k8s.io"
KEY = ("ns", "w")


def _quota_reserved(store: ObjectStore) -> tuple[str, str]:
    obj = store.get(KUEUE, "workloads", *KEY)
    c = next(c for c in obj["status"]["conditions"] if c["type"] == "QuotaReserved")
    return c["reason"], c["message"]


def test_pending_verdicts_are_written_only_when_they_change_the_workload():
    store = ObjectStore()
    store.create(KUEUE, "workloads", workload("ns", "w", "lq", {"cpu": "1"}))
    kueue = KueueController(store, record_events=False)
    snap = kueue.snapshot()
    first = Pending(KEY, "Pending", "couldn't assign flavors to pod set main")
    assert kueue._write(KEY, first, T0, snap)
    rv = store.get(KUEUE, "workloads", *KEY)["metadata"]["resourceVersion"]
    # The same verdict on the same stored object: nothing to write, cycle after cycle.
    assert not kueue._write(KEY, first, T0 + 1, snap)
    assert not kueue._write(KEY, first, T0 + 2, snap)
    assert store.get(KUEUE, "workloads", *KEY)["metadata"]["resourceVersion"] == rv
    # Another message for the same object is written.
    second = Pending(KEY, "Pending", "insufficient quota for cpu in flavor f1")
    assert kueue._write(KEY, second, T0 + 3, snap)
    assert _quota_reserved(store) == ("Pending", second.message)
    # Someone else rewrites the status: the first verdict, though seen before, is written again.
    assert kueue._write(KEY, first, T0 + 4, snap)
    status = store.get(KUEUE, "workloads", *KEY)["status"]
    status["conditions"] = [c for c in status["conditions"] if c["type"] != "QuotaReserved"]
    store.replace_status(KUEUE, "workloads", *KEY, status)
    assert kueue._write(KEY, first, T0 + 5, snap)
    assert _quota_reserved(store) == ("Pending", first.message)
