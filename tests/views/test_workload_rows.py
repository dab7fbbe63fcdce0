"""One row builder: `kueuetop snapshot` and the console's Workloads view show the same values."""

from kueuetop.store import StoreEvent
from kueuetop.store import events as K
from kueuetop.store.events import Op, QueuePosition
from kueuetop.tui.context import ViewContext
from kueuetop.tui.themes import load_themes
from kueuetop.tui.views.workloads import workload_row as console_row
from kueuetop.views.ages import age_text
from kueuetop.views.snapshot import workload_rows as cli_rows
from kueuetop.views.workload_rows import wait_seconds
from tests.builders import admit, condition, workload
from tests.views.cluster import GPU, NOW, admitted, base_objects, gpu, node, pod, put

WAITED = 240.0  # each admitted workload got its quota this long after it was created


def _store():
    from kueuetop.store import Store

    store = Store()
    finished = admitted("team-a", "done", "cq-spot", "gpu-l4-spot", 1, at=NOW - 900)
    finished["status"]["conditions"].append(condition("Finished", True, "Succeeded", "Job finished", NOW - 300))
    running = admitted("team-a", "running", "cq-spot", "gpu-l4-spot", 2, at=NOW - 600)
    # Quota reserved, an admission check still pending: it no longer waits in the queue.
    reserved = admit(workload("team-a", "reserved", "lq", {GPU: "1"}, created=NOW - 800 - WAITED), "cq-spot",
                     {GPU: "gpu-a100"}, at=NOW - 800, admitted=False)
    evicted = workload("team-a", "evicted", "lq", {GPU: "4"}, created=NOW - 1200, priority=5)
    evicted["status"] = {"conditions": [
        condition("QuotaReserved", False, "Pending", "couldn't assign flavors", NOW - 100),
        condition("Evicted", True, "Preempted", "Preempted to accommodate a higher priority workload", NOW - 110),
        condition("Requeued", True, "Preempted", "", NOW - 100)],
        "schedulingStats": {"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 2}]}}
    pending = workload("team-a", "pending", "lq", {GPU: "16"}, created=NOW - 50)
    put(store, *base_objects(), node("spot-0", 8, {"pool": "spot"}),
        finished, running, reserved, evicted, pending,
        pod("team-a", "running-0", "running", 2, node_name="spot-0", phase="Running"))
    store.put_gpu_samples([gpu("spot-0", 0, util=30.0, pod=("team-a", "running-0")),
                           gpu("spot-0", 1, util=70.0, pod=("team-a", "running-0"))], NOW, "dcgm")
    store.apply(StoreEvent(Op.POSITIONS, K.POSITIONS, "visibility", key=("", "cq-spot"), positions=(
        (("team-a", "evicted"), QueuePosition("cq-spot", 0, 0, "lq", 5)),
        (("team-a", "pending"), QueuePosition("cq-spot", 1, 1, "lq", 0)))))
    return store


def test_the_cli_and_the_console_show_the_same_values_for_every_workload() -> None:
    store = _store()
    ctx = ViewContext(store, load_themes().themes["dark"], clock=lambda: NOW)
    cli = {(r["namespace"], r["name"]): r for r in cli_rows(store, store.snapshot(), NOW)}
    states = set()
    for key, wl in store.objects(K.WORKLOADS).items():
        cells = [c.plain for c in console_row(ctx, key, wl, NOW).cells]
        r = cli[key]
        states.add(r["state"])
        shown = lambda v: "-" if v is None else str(v)  # noqa: E731 (the console's empty cell)
        want = [r["namespace"], r["name"], r["queue"], shown(r["clusterQueue"]), str(r["priority"]), r["state"],
                shown(r["reason"]), shown(r["position"]), ",".join(dict.fromkeys(r["flavors"].values())) or "-",
                age_text(r["waitSeconds"]), "-",  # ETA: the console's forecast (none in this store)
                "-" if r["gpuUtil"] is None else f"{r['gpuUtil']:.0f}%",
                shown(r["evictions"] or None)]
        assert cells == want, key
    assert states == {"Finished", "Admitted", "QuotaReserved", "Pending"}
    # The values themselves: a finished workload still shows how long it waited for quota, as
    # does one whose quota is reserved; a queued one waits until now; an evicted one queues again.
    assert cli[("team-a", "done")]["waitSeconds"] == 60  # `admitted` creates it 60 s before its quota
    assert cli[("team-a", "reserved")]["waitSeconds"] == WAITED
    assert cli[("team-a", "pending")]["waitSeconds"] == 50
    assert cli[("team-a", "evicted")]["waitSeconds"] == 1200
    assert cli[("team-a", "evicted")]["position"] == 1 and cli[("team-a", "pending")]["position"] == 2
    assert cli[("team-a", "running")]["gpuUtil"] == 50.0 and cli[("team-a", "evicted")]["evictions"] == 2


def test_wait_of_a_finished_workload_that_never_had_quota_is_unknown() -> None:
    from kueuetop.kueue.parse import parse_object

    wl = workload("team-a", "gone", "lq", {GPU: "1"}, created=NOW - 100)
    wl["status"] = {"conditions": [condition("Finished", True, "FailedToStart", "", NOW - 10)]}
    assert wait_seconds(parse_object(wl), NOW) is None  # type: ignore[arg-type]
    wl["status"] = {}
    assert wait_seconds(parse_object(wl), NOW) == 100  # type: ignore[arg-type]
