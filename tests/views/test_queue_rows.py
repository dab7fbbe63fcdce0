"""One queue row: `kueuetop snapshot` and the console's queue views show the same counts and the
same status, Kueue's own (the queue's status, as `kubectl get clusterqueues` shows them)."""

from kueuetop.store import Store
from kueuetop.tui.context import ViewContext
from kueuetop.tui.themes import load_themes
from kueuetop.tui.views.clusterqueues import cluster_queue_rows as console_cq_rows
from kueuetop.tui.views.localqueues import local_queue_rows as console_lq_rows
from kueuetop.views.snapshot import cluster_queue_rows as cli_rows
from kueuetop.views.snapshot import render_text
from tests.builders import cluster_queue, condition, fq, group, local_queue
from tests.views.cluster import GPU, NOW, put


def _with_status(obj: dict, pending: int, reserving: int, admitted: int, *conditions: dict) -> dict:
    obj["status"] = {"pendingWorkloads": pending, "reservingWorkloads": reserving, "admittedWorkloads": admitted,
                     "conditions": list(conditions)}
    return obj


def _store() -> Store:
    store = Store()
    flavors = group([GPU], fq("gpu-a100", **{GPU: 8}))
    put(store,
        # Kueue counts admitted workloads among the reserving ones: 3 reserving, 2 of them admitted.
        _with_status(cluster_queue("cq-busy", flavors), 4, 3, 2, condition("Active", True, "Ready", "Can admit")),
        _with_status(cluster_queue("cq-bad", flavors), 1, 0, 0,
                     condition("Active", False, "FlavorNotFound", "Can't admit new workloads: flavor missing")),
        _with_status(cluster_queue("cq-held", flavors, stop_policy="Hold"), 2, 0, 0,
                     condition("Active", True, "Ready", "Can admit")),
        cluster_queue("cq-new", flavors),  # Kueue has not written its status yet
        _with_status(local_queue("team-a", "lq", "cq-busy"), 4, 3, 2, condition("Active", True, "Ready", "ok")))
    return store


def test_the_cli_and_the_console_show_kueues_counts_and_status_for_every_queue() -> None:
    store = _store()
    ctx = ViewContext(store, load_themes().themes["dark"], clock=lambda: NOW)
    cli = {r["name"]: r for r in cli_rows(store, store.snapshot())}
    console = {r.key: [c.plain.strip() for c in r.cells] for r in console_cq_rows(ctx)}
    assert set(cli) == set(console) == {"cq-busy", "cq-bad", "cq-held", "cq-new"}
    for name, r in cli.items():
        cells = console[name]
        assert cells[3:7] == [str(r["pending"]), str(r["reserving"]), str(r["admitted"]), r["status"]], name
    assert (cli["cq-busy"]["pending"], cli["cq-busy"]["reserving"], cli["cq-busy"]["admitted"]) == (4, 3, 2)
    assert [cli[n]["status"] for n in ("cq-busy", "cq-bad", "cq-held", "cq-new")] == \
        ["Active", "Inactive(FlavorNotFound)", "Stopped(Hold)", "?"]
    assert (cli["cq-bad"]["active"], cli["cq-bad"]["inactiveReason"]) == \
        (False, "FlavorNotFound: Can't admit new workloads: flavor missing")
    assert cli["cq-new"]["active"] is None and cli["cq-busy"]["active"] is True
    lq = [[c.plain.strip() for c in r.cells] for r in console_lq_rows(ctx)]
    assert lq == [["team-a", "lq", "cq-busy", "4", "3", "2", "Active", "-"]]  # no forecast yet: no next admission


def test_the_text_snapshot_says_the_same_status_words() -> None:
    store = _store()
    doc = {"generatedAt": "", "cluster": {"context": "", "server": "", "kueueApi": "", "positions": "engine"},
           "sources": [], "clusterQueues": cli_rows(store, store.snapshot()), "workloads": [], "nodes": [], "gpus": []}
    text = render_text(doc)
    for word in ("Inactive(FlavorNotFound)", "Stopped(Hold)"):
        assert word in text, text
