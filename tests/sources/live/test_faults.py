"""Faults on the wire: the store ends identical to the server, and sources report state."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.connection import connect
from kueuetop.store import SourceState

from .conftest import ADMIN_TOKEN, KUEUE, Live, assert_converges, frozen, wait_until


def admin_post(served: ServedCluster, path: str, body: dict) -> dict:
    req = urllib.request.Request(served.url + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {ADMIN_TOKEN}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_dropped_streams_every_few_hundred_ms(served: ServedCluster, live: Live) -> None:
    before = {i.spec.source: i.lists for i in live.sources.informers}
    served.server.faults.update({"dropWatchesEverySeconds": 0.3})
    time.sleep(2.0)  # the simulation keeps changing objects meanwhile
    served.server.faults.update({"dropWatchesEverySeconds": 0})
    assert_converges(served, live.store)
    # A dropped stream resumes from its resourceVersion: no relist needed.
    assert {i.spec.source: i.lists for i in live.sources.informers} == before


def test_forced_compaction_mid_watch_relists(served: ServedCluster, live: Live) -> None:
    wl = live.sources.informer("workloads")
    before = wl.lists
    with frozen(served):  # no simulated write may land between the bump and the compaction
        # A change the workloads watch does not see moves the global resourceVersion past it.
        served.parts.cluster.store.patch("", "namespaces", None, "team-a", lambda o: {
            **o, "metadata": {**o["metadata"], "labels": {**(o["metadata"].get("labels") or {}),
                                                          "bump": str(time.time())}}})
        admin_post(served, "/kueuetop/v1/faults", {"compactNow": True})
        admin_post(served, "/kueuetop/v1/faults", {"dropWatchesNow": True})
    assert wait_until(lambda: wl.lists > before, 10), "no relist after 410"
    assert_converges(served, live.store)


def test_429_and_500_at_a_rate(served: ServedCluster, live: Live) -> None:
    for code in (429, 500):
        served.server.faults.update({"errorRate": 0.4, "errorCode": code, "retryAfterSeconds": 0, "seed": code,
                                     "dropWatchesEverySeconds": 0.4})
        time.sleep(1.5)
    served.server.faults.update({"errorRate": 0, "dropWatchesEverySeconds": 0})
    assert_converges(served, live.store)
    assert wait_until(lambda: all(s.state is SourceState.LIVE for s in live.store.sources().values()), 10)


def test_added_latency(served: ServedCluster, live: Live) -> None:
    faults = served.server.faults
    before = faults.delayed
    faults.update({"latencyMs": 80, "dropWatchesEverySeconds": 0.5})
    # Streams are dropped and resumed under the delay: every resume pays it, and the store keeps up.
    assert wait_until(lambda: faults.delayed >= before + 2 * len(live.sources.informers), 15)
    faults.update({"dropWatchesEverySeconds": 0})
    assert_converges(served, live.store)
    states = lambda: {s.state for n, s in live.store.sources().items() if n != "visibility"}  # noqa: E731
    assert states() == {SourceState.LIVE}
    # A delay beyond the liveness probe's bound (2 s in these tests) is felt: the data is marked
    # stale, not shown as live; once the delay goes, it is live again and equal to the server.
    faults.update({"latencyMs": 3000})
    assert wait_until(lambda: SourceState.STALE in states(), 10), states()
    faults.update({"latencyMs": 0})
    assert wait_until(lambda: states() == {SourceState.LIVE}, 15), states()
    assert_converges(served, live.store)


def test_forbidden_resource_keeps_others_live(served: ServedCluster, viewer_kubeconfig: Path, live_factory,
                                              monkeypatch) -> None:
    # The simulator's viewer role reads everything; forbid nodes for it, as a narrower RBAC would.
    authz = served.server.authz
    original = authz.check

    def check(user, verb, group, resource, *args, **kw):  # type: ignore[no-untyped-def]
        if user.role == "viewer" and resource == "nodes":
            from kueuetop.sim.apiserver.auth import forbidden
            raise forbidden(user, verb, group, resource, "", "", "", "")
        return original(user, verb, group, resource, *args, **kw)

    monkeypatch.setattr(authz, "check", check)
    conn = connect(str(viewer_kubeconfig))
    try:
        lv: Live = live_factory(conn)
        nodes = lv.store.source("nodes")
        assert nodes.state is SourceState.FORBIDDEN and 'cannot list resource "nodes"' in nodes.message
        assert lv.store.count("nodes") == 0
        def others() -> dict:
            return {n: s.state for n, s in lv.store.sources().items() if n != "nodes"}

        # Polled sources (queue positions) report after their first round, which may trail the sync.
        wait_until(lambda: set(others().values()) == {SourceState.LIVE}, 10)
        assert set(others().values()) == {SourceState.LIVE}, others()
        # ...and keep receiving changes.
        key = sorted(lv.store.keys("workloads"))[0]
        rv = lv.store.entry("workloads", key).resource_version
        served.parts.cluster.store.patch(KUEUE, "workloads", key[0], key[1],
                                         lambda o: {**o, "metadata": {**o["metadata"], "labels": {
                                             **(o["metadata"].get("labels") or {}), "touched": "1"}}})
        assert wait_until(lambda: lv.store.entry("workloads", key).resource_version != rv, 10)
    finally:
        monkeypatch.setattr(authz, "check", original)
    # Once allowed again, the forbidden source recovers by itself.
    assert wait_until(lambda: lv.store.source("nodes").state is SourceState.LIVE, 10)
    assert wait_until(lambda: lv.store.count("nodes") > 0, 10)
    conn.close()


def test_malformed_object_never_breaks_the_source(served: ServedCluster, live: Live) -> None:
    bad = {"apiVersion": f"{KUEUE}/v1beta2", "kind": "ResourceFlavor",
           "metadata": {"name": "broken-flavor"}, "spec": {"nodeLabels": "not-a-map", "nodeTaints": 7}}
    served.parts.cluster.store.create(KUEUE, "resourceflavors", bad)
    try:
        assert wait_until(lambda: ("", "broken-flavor") in live.store.unparsed("resourceflavors"), 10)
        assert live.store.get("resourceflavors", ("", "broken-flavor")) is None
        assert "broken-flavor" not in live.store.snapshot().flavors
        st = live.store.source("resourceflavors")
        assert st.state is SourceState.LIVE and st.skipped >= 1
        # Still live: a good flavor created afterwards arrives.
        good = {"apiVersion": f"{KUEUE}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "fine-flavor"},
                "spec": {}}
        served.parts.cluster.store.create(KUEUE, "resourceflavors", good)
        assert wait_until(lambda: live.store.get("resourceflavors", ("", "fine-flavor")) is not None, 10)
        assert_converges(served, live.store)
    finally:
        for name in ("broken-flavor", "fine-flavor"):
            if served.parts.cluster.store.try_get(KUEUE, "resourceflavors", None, name) is not None:
                served.parts.cluster.store.delete(KUEUE, "resourceflavors", None, name)
