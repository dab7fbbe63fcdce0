"""Never silently stale: a held or partitioned connection turns the data stale within the probe's
bound, a restarted server's versions trigger a relist, and the store ends equal to the server."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources.connection import connect
from kueuetop.store import SourceState
from kueuetop.tui.statusbar import summarize_sources
from tests.fault_proxy import FaultProxy
from tests.waiting import FAST

from .conftest import ADMIN_TOKEN, KUEUE, Live, assert_converges, frozen, wait_until


def kube_states(live: Live) -> set[SourceState]:
    return {live.store.source(i.spec.source).state for i in live.sources.informers}


@pytest.fixture
def proxied(served: ServedCluster, tmp_path: Path, live_factory: Callable[..., Live]) -> Iterator[tuple[FaultProxy, Live]]:
    with FaultProxy(served.url) as proxy:
        kc = write_kubeconfig(tmp_path / "proxied", proxy.url, token=ADMIN_TOKEN)
        conn = connect(str(kc))
        try:
            yield proxy, live_factory(conn)
        finally:
            proxy.release()
            conn.close()


def test_held_traffic_turns_the_data_stale_and_release_makes_it_live(
        served: ServedCluster, proxied: tuple[FaultProxy, Live]) -> None:
    proxy, live = proxied
    assert wait_until(lambda: kube_states(live) == {SourceState.LIVE}, 10)
    proxy.hold()  # the streams stay open and say nothing, as behind a stalled middlebox
    # The probe (every 0.5 s, 2 s to answer) notices; the watches' own read timeout would take 15 s.
    # It marks the streams one by one: wait for the one read below, not only the first.
    assert wait_until(lambda: "no answer from the API server" in live.store.source("workloads").message, 8), \
        live.store.source("workloads").message
    assert SourceState.STALE in kube_states(live), kube_states(live)
    status = dict((label, (text, bad)) for label, text, bad in summarize_sources(live.store.sources(),
                                                                                 time.time()))
    assert status["kube"][0].startswith("stale") and status["kube"][1], status
    proxy.release()
    assert wait_until(lambda: kube_states(live) == {SourceState.LIVE}, 15), kube_states(live)
    assert_converges(served, live.store)


def test_partition_then_heal_converges_without_a_relist(
        served: ServedCluster, proxied: tuple[FaultProxy, Live]) -> None:
    proxy, live = proxied
    # Counted once every stream has had its first list (a list still in flight would count later).
    assert wait_until(lambda: kube_states(live) == {SourceState.LIVE}, 10), kube_states(live)
    lists = {i.spec.source: i.lists for i in live.sources.informers}
    proxy.partition()
    assert wait_until(lambda: SourceState.STALE in kube_states(live), 8)
    proxy.heal()
    assert wait_until(lambda: kube_states(live) == {SourceState.LIVE}, 15), kube_states(live)
    assert_converges(served, live.store)
    # The streams resumed from their resourceVersions: nothing needed a full list again.
    assert {i.spec.source: i.lists for i in live.sources.informers} == lists


def test_a_late_probe_keeps_the_streams_that_still_deliver(
        served: ServedCluster, tmp_path: Path, live_factory: Callable[..., Live]) -> None:
    """A busy API server answers /version late (a big list in flight) while its watches stream:
    the Workloads stream, which delivers, is kept (no resume, no relist, never stale). (A stream
    with nothing to say, bookmarks aside, is suspected as before: the held-traffic test.)"""
    with FaultProxy(served.url) as proxy:
        conn = connect(str(write_kubeconfig(tmp_path / "proxied", proxy.url, token=ADMIN_TOKEN)))
        try:
            # Watches that end on their own only after a minute: any new one here is a resume.
            _late_probe(served, proxy, live_factory(conn, config=dataclasses.replace(FAST, watch_timeout=60)))
        finally:
            proxy.release()
            conn.close()


def _late_probe(served: ServedCluster, proxy: FaultProxy, live: Live) -> None:
    assert wait_until(lambda: kube_states(live) == {SourceState.LIVE}, 10)
    st = served.parts.cluster.store
    meta = st.list(KUEUE, "workloads", copy=False)[0][0]["metadata"]
    stop = threading.Event()

    def tick(obj: dict, n: int) -> dict:
        obj["metadata"] = {**obj["metadata"], "annotations": {**(obj["metadata"].get("annotations") or {}),
                                                              "tick": str(n)}}
        return obj

    def write() -> None:  # a change every 0.1 s: the Workloads stream always has something to say
        n = 0
        while not stop.wait(0.1):
            n += 1
            st.patch(KUEUE, "workloads", meta["namespace"], meta["name"], lambda o, n=n: tick(o, n))

    def workload_watches() -> int:
        return sum(1 for r in proxy.requests("GET", "/workloads") if "watch=true" in r.path)

    watches = workload_watches()
    lists = {i.spec.source: i.lists for i in live.sources.informers}
    seen: set[SourceState] = set()
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    proxy.rule(lambda method, path: "delay:3" if path.startswith("/version") else "pass")
    try:
        slow = len(proxy.requests("GET", "/version"))
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:  # probes every 0.5 s, each given up after 2 s
            seen.add(live.store.source("workloads").state)
            time.sleep(0.05)
        assert len(proxy.requests("GET", "/version")) > slow + 2, "the probes went unanswered"
    finally:
        proxy.rule(None)
        stop.set()
        writer.join(2)
    assert seen == {SourceState.LIVE}, seen
    assert workload_watches() == watches
    assert {i.spec.source: i.lists for i in live.sources.informers} == lists
    assert wait_until(lambda: kube_states(live) == {SourceState.LIVE}, 15), kube_states(live)
    assert_converges(served, live.store)


def test_a_live_source_reports_its_real_data_age(proxied: tuple[FaultProxy, Live]) -> None:
    proxy, live = proxied
    assert wait_until(lambda: kube_states(live) == {SourceState.LIVE}, 10)
    probes = live.sources.liveness.probes
    # Confirmed by the probe while the streams are open: fresh even when nothing changes.
    assert wait_until(lambda: live.sources.liveness.probes > probes + 1, 5)
    ages = [live.store.source(i.spec.source).age(time.time()) for i in live.sources.informers]
    assert all(a is not None and a < 5 for a in ages), ages
    proxy.hold()
    assert wait_until(lambda: SourceState.STALE in kube_states(live), 8)
    # Held, nothing confirms the data: its age grows past the probe interval and the bar shows it.
    assert wait_until(lambda: min(live.store.source(i.spec.source).age(time.time())
                                  for i in live.sources.informers) > 2, 8)
    text = dict((label, text) for label, text, _ in summarize_sources(live.store.sources(), time.time()))
    assert text["kube"].split()[0] == "stale" and text["kube"].split()[1].endswith("s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_restarted_with_fresh_versions_leaves_no_ghost(tmp_path: Path,
                                                              live_factory: Callable[..., Live]) -> None:
    port = free_port()
    first = start_served(load_scenario("refarch"), port=port, speed=60, kubeconfig=str(tmp_path / "a"))
    second = None
    conn = connect(str(first.kubeconfig))
    try:
        live = live_factory(conn)
        # An object the restarted server will not have, and versions it will not reach soon: the
        # restarted one runs at real speed, so a few thousand versions ahead stays ahead for minutes.
        ghost = {"apiVersion": f"{KUEUE}/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "ghost-flavor"}}
        with frozen(first):
            first.parts.cluster.store.create(KUEUE, "resourceflavors", ghost)
            for i in range(3000):
                first.parts.cluster.store.patch("", "namespaces", None, "team-a", lambda o, i=i: {
                    **o, "metadata": {**o["metadata"], "labels": {"bump": str(i)}}})
        assert wait_until(lambda: ("", "ghost-flavor") in live.store.keys("resourceflavors"), 10)
        relists = live.sources.informer("resourceflavors").lists
        first.stop()
        second = start_served(load_scenario("refarch"), port=port, speed=1, kubeconfig=str(tmp_path / "b"))
        # The watch resumes at a version the new server has not reached: 504, then a relist.
        assert wait_until(lambda: live.sources.informer("resourceflavors").lists > relists, 15)
        assert wait_until(lambda: ("", "ghost-flavor") not in live.store.keys("resourceflavors"), 10)
        assert_converges(second, live.store)
    finally:
        conn.close()
        if second is not None:
            second.stop()
        else:
            first.stop()
