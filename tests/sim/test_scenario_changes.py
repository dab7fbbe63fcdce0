"""The forecast's what-if changes made to a scenario's documents (sim/scenario_changes.py)."""

from __future__ import annotations

import copy

import pytest

from kueuetop.admission.forecast_changes import parse_changes
from kueuetop.sim.scenario_changes import apply_to_documents

DOCS = [
    {"kind": "ClusterQueue", "metadata": {"name": "cq"}, "spec": {"resourceGroups": [{
        "coveredResources": ["cpu", "nvidia.com/gpu"],
        "flavors": [{"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "8"},
                                                   {"name": "nvidia.com/gpu", "nominalQuota": 4}]}]}]}},
    {"kind": "NodePool", "metadata": {"name": "spot-np"}, "spec": {"size": 2, "minSize": 0, "maxSize": 6}},
    {"kind": "Workload", "metadata": {"namespace": "team-b", "name": "a"}, "spec": {"queueName": "lq"}},
    {"kind": "Workload", "metadata": {"namespace": "team-b", "name": "a", "annotations": {"kueuetop.io/at": "5m"}},
     "spec": {"active": True}},
    {"kind": "Workload", "metadata": {"namespace": "team-c", "name": "b"}, "spec": {"queueName": "lq"}},
]


def test_changes_move_pools_quota_and_hold_workloads_without_touching_the_input() -> None:
    before = copy.deepcopy(DOCS)
    out = apply_to_documents(DOCS, parse_changes(["nodes spot-np=+8", "quota cq nvidia.com/gpu=+2",
                                                  "quota cq cpu=500m", "hold team-b/*"]))
    assert before == DOCS
    assert out[1]["spec"] == {"size": 10, "minSize": 8, "maxSize": 14}
    res = {r["name"]: r["nominalQuota"] for r in out[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"]}
    assert res == {"cpu": "500m", "nvidia.com/gpu": "6"}
    wls = [d for d in out if d["kind"] == "Workload"]
    # team-b/a is created inactive and the later document that activated it is gone.
    assert [(d["metadata"]["name"], d["spec"].get("active")) for d in wls] == [("a", False), ("b", None)]


@pytest.mark.parametrize(("spec", "message"), [
    ("nodes gpu=+1", "unknown node pool 'gpu' (pools: spot-np)"),
    ("nodes spot-np=-3", "node pool spot-np starts with 2 node(s); cannot remove 3"),
    ("quota other cpu=+1", "unknown ClusterQueue 'other' (ClusterQueues: cq)"),
    ("quota cq memory=+1", "ClusterQueue cq has no quota for 'memory'"),
    ("hold team-z/*", "no workload matches team-z/*"),
])
def test_unknown_names_are_one_line_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError) as err:
        apply_to_documents(DOCS, parse_changes([spec]))
    assert message in str(err.value) and "\n" not in str(err.value)
