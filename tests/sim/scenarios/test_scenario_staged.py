"""Scenarios cut at their first instant (what `sim serve` loads before it listens): generated
timelines build their later steps on first use and stay the same timeline."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.scenarios.scenario import (
    LazySteps,
    parse_scenario,
    split_first_instant,
    staged_steps_from_objects,
    steps_from_objects,
)


def _objects() -> list[tuple[int, float, dict[str, Any]]]:
    ns = [(n, 0.0, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"ns-{n}"}}) for n in (1, 2, 4)]
    wl = [(n, at, {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
                   "metadata": {"name": f"w-{n}", "namespace": "ns-1"}, "spec": {"queueName": "q"}})
          for n, at in ((3, 5.0), (5, 1.0), (6, 5.0), (7, 0.5))]
    return ns + wl


def test_staged_timeline_is_the_one_built_in_one_go() -> None:
    objs = _objects()
    built = []

    def later():
        built.append(True)
        return [o for o in objs if o[1] > 0]

    staged = staged_steps_from_objects("t", [o for o in objs if o[1] == 0], later)
    assert isinstance(staged.steps, LazySteps)
    assert [s.obj["metadata"]["name"] for s in staged.steps.head] == ["ns-1", "ns-2", "ns-4"]
    assert not built, "the later steps are built only when first needed"
    whole = steps_from_objects("t", [(at, obj) for _, at, obj in sorted(objs, key=lambda o: o[0])])
    assert staged.steps == whole.steps
    assert [s.origin for s in staged.steps] == [s.origin for s in whole.steps]
    assert staged.end == 5.0 and len(staged.steps) == 7
    assert built == [True], "built once"


def test_staged_objects_must_be_on_the_right_side_of_t0() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}}
    with pytest.raises(ValueError, match="first-instant"):
        staged_steps_from_objects("t", [(1, 2.0, ns)], list)
    late = staged_steps_from_objects("t", [], lambda: [(1, 0.0, ns)])
    with pytest.raises(ValueError, match="due at t=0"):
        list(late.steps)
    pool = {"apiVersion": "kueuetop.io/v1", "kind": "NodePool", "metadata": {"name": "p"}, "spec": {"size": 1}}
    late_pool = staged_steps_from_objects("t", [], lambda: [(1, 5.0, pool)])
    with pytest.raises(ValueError, match="NodePool"):
        list(late_pool.steps)


def test_split_a_file_scenario_at_its_first_instant() -> None:
    s = parse_scenario(textwrap.dedent("""
        apiVersion: v1
        kind: Namespace
        metadata: {name: a}
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: b, annotations: {kueuetop.io/at: "10s"}}
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: c, annotations: {kueuetop.io/at: "0s"}}
        """), "t.yaml")
    first, later = split_first_instant(s)
    assert [st.obj["metadata"]["name"] for st in first.steps] == ["a", "c"]
    assert [st.obj["metadata"]["name"] for st in later()] == ["b"]
    assert first.config == s.config and first.name == s.name


@pytest.mark.parametrize("name", ["kueue-perf-baseline", "large"])
def test_generated_builtins_split_without_building_workloads(name: str) -> None:
    s = load_scenario(name)
    first, later = split_first_instant(s)
    assert isinstance(s.steps, LazySteps) and "not built yet" in repr(s.steps)
    assert first.steps and all(st.at == 0 for st in first.steps)
    kinds = {st.obj["kind"] for st in first.steps}
    assert kinds >= {"ClusterQueue", "LocalQueue", "Namespace"}
    assert ("NodePool" in kinds) == (name == "large")  # Kueue's perf harness runs without nodes
    assert "Workload" not in {st.obj["kind"] for st in first.steps}
    assert "not built yet" in repr(s.steps)
    rest = later()
    assert rest and all(st.at > 0 for st in rest)
    assert tuple(first.steps) + tuple(rest) == tuple(s.steps)
    assert first.node_pools == s.node_pools
