"""What-if changes for the forecast: parsing each `--with` spec, applying it, and every error."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kueuetop.admission.forecast_changes import (
    HoldChange,
    NodesChange,
    QuotaChange,
    apply_changes,
    parse_change,
    run_forecast,
)
from kueuetop.admission.forecast_result import PoolCapacity, RuntimeEstimate
from tests.builders import (
    T0,
    admit,
    cluster_queue,
    flavor,
    fq,
    group,
    local_queue,
    namespace,
    snapshot,
    workload,
)

GPU = "nvidia.com/gpu"


def _world():
    return snapshot(
        namespace("team-a"), namespace("team-b"),
        flavor("reserved"), flavor("spot"), flavor("default"), flavor("mem"),
        cluster_queue("cq-a", group(["cpu", GPU], fq("reserved", cpu="8", **{GPU: 4}),
                                    fq("spot", cpu="8", **{GPU: 4}))),
        cluster_queue("cq-b", group([GPU], fq("default", **{GPU: 4})), group(["memory"], fq("mem", memory="64Gi"))),
        local_queue("team-a", "lq", "cq-a"), local_queue("team-b", "lq", "cq-b"), local_queue("team-a", "lqb", "cq-b"),
        admit(workload("team-b", "run", "lq", {GPU: "4"}), "cq-b", {GPU: "default"}),
        workload("team-b", "wait", "lq", {GPU: "4"}, created=T0 + 1),
        workload("team-a", "other", "lqb", {GPU: "4"}, created=T0 + 2),
    )


def _nominal(snap, cq: str, flavor: str, resource: str) -> int:
    for g in snap.cluster_queues[cq].resource_groups:
        for f in g.flavors:
            if f.name == flavor and resource in f.resources:
                return f.resources[resource].nominal
    raise KeyError((cq, flavor, resource))


POOLS = {"l4": PoolCapacity("l4", {"pool": "l4"}, 2, (0, 2, 1, 2), 4)}


# ---------------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize("spec, want", [
    ("quota cq-a nvidia.com/gpu=+4", QuotaChange("cq-a", GPU, "+", Fraction(4))),
    ("quota cq-a reserved/nvidia.com/gpu=-2", QuotaChange("cq-a", "reserved/" + GPU, "-", Fraction(2))),
    ("quota cq-b memory=64Gi", QuotaChange("cq-b", "memory", "=", Fraction(64 * 2**30))),
    ("quota cq-a cpu=+500m", QuotaChange("cq-a", "cpu", "+", Fraction(1, 2))),
    ("hold team-b/*", HoldChange("team-b", "*")),
    ("nodes l4=+3", NodesChange("l4", 3)),
    ("  nodes   l4=-1 ", NodesChange("l4", -1)),
])
def test_parse(spec: str, want) -> None:
    got = parse_change(spec)
    assert type(got) is type(want)
    assert {k: getattr(got, k) for k in got.__slots__ if k != "spec"} == \
        {k: getattr(want, k) for k in want.__slots__ if k != "spec"}
    assert got.spec == spec


@pytest.mark.parametrize("spec, needle", [
    ("", "empty change"),
    ("grow cq-a cpu=+1", "unknown change 'grow'"),
    ("quota cq-a", "quota CQ [FLAVOR/]RESOURCE=+N"),
    ("quota cq-a cpu+1", "quota CQ [FLAVOR/]RESOURCE=+N"),
    ("quota cq-a cpu=+lots", "not a quantity"),
    ("quota cq-a cpu=+-1", "sign once"),
    ("hold team-b", "hold NAMESPACE/NAME"),
    ("hold a/b/c", "hold NAMESPACE/NAME"),
    ("nodes l4=3", "nodes POOL=+N"),
    ("nodes l4=+1.5", "nodes POOL=+N"),
    ("nodes l4", "nodes POOL=+N"),
])
def test_parse_errors_are_one_line(spec: str, needle: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_change(spec)
    assert needle in str(exc.value) and "\n" not in str(exc.value)


# ---------------------------------------------------------------------------------------- quota
def test_quota_relative_absolute_and_flavor() -> None:
    snap = _world()
    new, pools = apply_changes(snap, POOLS, [parse_change("quota cq-b nvidia.com/gpu=+4"),
                                             parse_change("quota cq-a spot/nvidia.com/gpu=-3"),
                                             parse_change("quota cq-a reserved/cpu=+500m"),
                                             parse_change("quota cq-b memory=32Gi")])
    assert _nominal(new, "cq-b", "default", GPU) == 8
    assert _nominal(new, "cq-a", "spot", GPU) == 1
    assert _nominal(new, "cq-a", "reserved", GPU) == 4  # the other flavor is left alone
    assert _nominal(new, "cq-a", "reserved", "cpu") == 8500  # milli-cpu, as Kueue counts it
    assert _nominal(new, "cq-b", "mem", "memory") == 32 * 2**30
    # Nothing given was changed; the untouched parts are shared.
    assert _nominal(snap, "cq-b", "default", GPU) == 4 and _nominal(snap, "cq-a", "spot", GPU) == 4
    assert new.workloads is snap.workloads and pools == POOLS


def test_quota_may_reach_zero_but_not_below() -> None:
    new, _ = apply_changes(_world(), {}, [parse_change("quota cq-b nvidia.com/gpu=-4")])
    assert _nominal(new, "cq-b", "default", GPU) == 0
    with pytest.raises(ValueError, match=r"nominalQuota of default/nvidia.com/gpu in ClusterQueue cq-b is 4; "
                                         r"it cannot go below 0"):
        apply_changes(_world(), {}, [parse_change("quota cq-b nvidia.com/gpu=-5")])


@pytest.mark.parametrize("spec, message", [
    ("quota cq-x nvidia.com/gpu=+1", "unknown ClusterQueue 'cq-x' (ClusterQueues: cq-a, cq-b)"),
    ("quota cq-b cpu=+1", "ClusterQueue cq-b has no quota for 'cpu' (its resources: memory, nvidia.com/gpu)"),
    ("quota cq-a nvidia.com/gpu=+1", "nvidia.com/gpu in ClusterQueue cq-a has several flavors (reserved, spot): "
                                     "name one, as FLAVOR/nvidia.com/gpu"),
    ("quota cq-a ondemand/nvidia.com/gpu=+1", "ClusterQueue cq-a has no flavor 'ondemand' for nvidia.com/gpu "
                                              "(its flavors: reserved, spot)"),
])
def test_quota_errors(spec: str, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        apply_changes(_world(), {}, [parse_change(spec)])
    assert str(exc.value) == f"{spec}: {message}"


# ---------------------------------------------------------------------------------------- hold
def test_hold_globs_deactivate_unfinished_workloads_only() -> None:
    snap = _world()
    new, _ = apply_changes(snap, {}, [parse_change("hold team-?/w*")])
    assert not new.workloads[("team-b", "wait")].active
    assert new.workloads[("team-b", "run")].active and new.workloads[("team-a", "other")].active
    assert snap.workloads[("team-b", "wait")].active  # the input is unchanged
    assert new.cluster_queues is snap.cluster_queues and new.workload_delta is None
    new, _ = apply_changes(snap, {}, [parse_change("hold team-b/*")])
    assert {k for k, w in new.workloads.items() if not w.active} == {("team-b", "run"), ("team-b", "wait")}


def test_hold_without_a_match_names_the_pattern() -> None:
    with pytest.raises(ValueError, match=r"^hold team-z/\*: no unfinished workload matches team-z/\*$"):
        apply_changes(_world(), {}, [parse_change("hold team-z/*")])


# ---------------------------------------------------------------------------------------- nodes
def test_nodes_added_are_free_and_raise_the_limit() -> None:
    _, pools = apply_changes(_world(), POOLS, [parse_change("nodes l4=+2")])
    assert pools["l4"].free_gpus == (0, 2, 1, 2, 2, 2) and pools["l4"].max_nodes == 6
    assert POOLS["l4"].free_gpus == (0, 2, 1, 2)


def test_nodes_removed_are_the_emptiest() -> None:
    _, pools = apply_changes(_world(), POOLS, [parse_change("nodes l4=-3")])
    assert pools["l4"].free_gpus == (0,) and pools["l4"].max_nodes == 1
    with pytest.raises(ValueError, match=r"node pool l4 has 4 Ready node\(s\); cannot remove 5"):
        apply_changes(_world(), POOLS, [parse_change("nodes l4=-5")])


def test_unknown_pool() -> None:
    with pytest.raises(ValueError, match=r"^nodes a100=\+1: unknown node pool 'a100' \(pools: l4\)$"):
        apply_changes(_world(), POOLS, [parse_change("nodes a100=+1")])


# ---------------------------------------------------------------------------------------- forecast
def test_changes_move_the_forecast() -> None:
    """cq-b holds 4 GPUs, all taken by team-b/run (1h left); team-b/wait and team-a/other queue for them."""
    snap = _world()
    hour = RuntimeEstimate(3600.0, 3600.0, 3600.0, "fixed")
    runtimes = {k: hour for k in snap.workloads}
    now = T0 + 60
    before = run_forecast(snap, {}, runtimes, now, resolution=0)  # these runtimes are exact: no grid
    assert before.workloads[("team-b", "wait")].start == T0 + 3600
    assert before.workloads[("team-a", "other")].start == T0 + 7200
    # As estimates, finishes are on the grid from `now`: wait's, 7,140 s on, is rounded to a 120-s step.
    gridded = run_forecast(snap, {}, runtimes, now)
    assert gridded.workloads[("team-b", "wait")].start == T0 + 3600  # run's finish is 3,540 s on: 60-s step
    assert gridded.workloads[("team-a", "other")].start == now + 60 * 120
    more, pools = apply_changes(snap, {}, [parse_change("quota cq-b nvidia.com/gpu=+4")])
    after = run_forecast(more, pools, runtimes, now, resolution=0)
    assert after.workloads[("team-b", "wait")].start == now
    assert after.workloads[("team-a", "other")].start == T0 + 3600
    held, pools = apply_changes(snap, {}, [parse_change("hold team-b/*")])
    after = run_forecast(held, pools, runtimes, now)
    assert after.workloads[("team-a", "other")].start == now  # team-b/run is evicted at once
    assert after.workloads[("team-b", "wait")].start is None
    assert "held" in after.workloads[("team-b", "wait")].never
