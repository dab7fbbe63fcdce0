"""The what-if panel's parts without Textual: the changes offered, and a what-if with node pools."""

from __future__ import annotations

import pytest

from kueuetop.admission.forecast_changes import parse_change
from kueuetop.kueue.core import Node
from kueuetop.store import events as K
from kueuetop.views.what_if import POD_NOTE_POOLS, POD_NOTE_RUN, focus_index, run_what_if, suggestions
from tests.tui.test_forecast_views import NOW, _store
from tests.views.cluster import node, pod, put

POOL = {"cloud.google.com/gke-nodepool": "spot-np"}


def _with_nodes():  # type: ignore[no-untyped-def]
    """The forecast views' cluster on a pool of one 4-GPU node, where r's pod runs."""
    store = _store()
    put(store, node("n1", 4, POOL), node("n2", 4, {**POOL, "x": "1"}),
        pod("team-a", "r-0", "r", 4, node_name="n1", phase="Running"))
    return store


def test_suggestions_offer_quota_holds_and_nodes_enough_for_the_largest_request() -> None:
    store = _with_nodes()
    nodes = [n for n in store.objects(K.NODES).values() if isinstance(n, Node)]
    got = suggestions(store.snapshot(), nodes)
    assert [(s.spec, s.note) for s in got] == [
        ("quota cq nvidia.com/gpu=+4", "2 pending, 8 nvidia.com/gpu asked"),
        ("hold team-a/*", "2 pending"),
        ("nodes spot-np=+1", "2 nodes of 4 GPUs"),
    ]
    assert focus_index(got, "cq") == 0 and focus_index(got, "other") is None


def test_a_nodes_change_models_the_pools_and_an_unknown_pool_is_one_line() -> None:
    store = _with_nodes()
    answer = run_what_if(store, [parse_change("nodes spot-np=+1")], NOW)
    assert answer.pods == POD_NOTE_POOLS and not answer.error
    # Quota, not nodes, holds a and b back: one more node moves nobody.
    assert answer.moves == [] and answer.summary["text"].startswith("0 workloads start sooner")
    quota = run_what_if(store, [parse_change("quota cq nvidia.com/gpu=+4")], NOW)
    assert quota.pods == POD_NOTE_RUN and [m["name"] for m in quota.moves] == ["a", "b"]
    with pytest.raises(ValueError, match="unknown node pool 'nope'"):
        run_what_if(store, [parse_change("nodes nope=+1")], NOW)


def test_pods_are_placed_as_the_consoles_forecast_placed_them() -> None:
    from kueuetop.kueue.pool_growth import AutoscalerRead
    from kueuetop.tui.forecaster import Forecaster
    from kueuetop.views.forecast_report import POD_NOTE_FIXED

    store = _with_nodes()
    # No autoscaler status and no Karpenter node: the console's forecast placed pods on the pools.
    f = Forecaster(store, clock=lambda: NOW, pool_limits=lambda: AutoscalerRead(None, "no configmap", absent=True))
    fc = f.run_once()
    assert fc is not None and fc.pods_placed and f.latest is not None and f.latest[2] is not None
    change = [parse_change("quota cq nvidia.com/gpu=+4")]
    placed = run_what_if(store, change, NOW, latest=f.latest)
    assert placed.reused and placed.pods == POD_NOTE_FIXED  # the same forecast, the same pools, its note
    # Without the pools the console's forecast is not a "before" for it: both are run anew.
    unplaced = run_what_if(store, change, NOW, latest=(*f.latest[:2], None))
    assert not unplaced.reused and unplaced.pods == POD_NOTE_RUN
