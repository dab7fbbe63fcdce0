"""Real inputs to start mutating from: the objects, metrics and GPU telemetry of the built-in
scenarios after ten simulated minutes (what `sim serve` would answer), and their YAML."""

from __future__ import annotations

import functools
from typing import Any

from kueuetop.kueue.api_versions import is_kueue_api_version, to_v1beta1
from kueuetop.sim.clock import SimClock
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import SCENARIO_DIR, load_scenario
from kueuetop.sim.wiring import SimParts, build_cluster

PER_KIND = 3  # objects kept of each kind per scenario: variety without a slow sampled_from
SKIP = frozenset({"events", "selfsubjectaccessreviews"})
# The scenarios shipped as YAML (the generated ones are large and add no new shapes).
SCENARIOS = tuple(sorted(p.stem for p in SCENARIO_DIR.glob("*.yaml")))


@functools.cache
def _run(name: str) -> SimParts:
    parts = build_cluster(load_scenario(name), SimClock(VIRTUAL_EPOCH))
    parts.cluster.run_for(600)
    return parts


@functools.cache
def objects_v1beta2() -> tuple[dict[str, Any], ...]:
    out = []
    for name in SCENARIOS:
        store = _run(name).cluster.store
        for (group, plural) in sorted(store._buckets):
            if plural in SKIP:
                continue
            items, _ = store.list(group, plural)
            # The first objects and the last ones (the latest, often with more status).
            out += items[:PER_KIND] + items[PER_KIND:][-PER_KIND:]
    # A kind no shipped scenario has.
    out.append({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadPriorityClass",
                "metadata": {"name": "urgent", "uid": "u-wpc", "resourceVersion": "1"},
                "value": 10000, "description": "urgent work"})
    return tuple(out)


@functools.cache
def kueue_objects_v1beta1() -> tuple[dict[str, Any], ...]:
    return tuple(to_v1beta1(o) for o in objects_v1beta2() if is_kueue_api_version(o.get("apiVersion")))


@functools.cache
def workloads_v1beta2() -> tuple[dict[str, Any], ...]:
    return tuple(o for o in objects_v1beta2() if o.get("kind") == "Workload")


@functools.cache
def exposition_texts() -> tuple[str, ...]:
    from kueuetop.sim.serve import _hooks

    texts = []
    for name in SCENARIOS:
        hooks = _hooks(_run(name))
        for text in (hooks.metrics_text(), hooks.dcgm_text(None)):
            lines = text.splitlines()
            # Short stretches (a HELP/TYPE header and its samples) keep each input small.
            texts += ["\n".join(lines[i:i + 12]) + "\n" for i in range(0, min(len(lines), 600), 12)]
    return tuple(t for t in texts if t.strip())


@functools.cache
def scenario_documents() -> tuple[str, ...]:
    """Each YAML document of the built-in scenarios, as written."""
    docs = []
    for name in SCENARIOS:
        text = (SCENARIO_DIR / f"{name}.yaml").read_text(encoding="utf-8")
        docs += [d.strip() + "\n" for d in text.split("\n---") if d.strip() and "kind:" in d]
    return tuple(docs)
