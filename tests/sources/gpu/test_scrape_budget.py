"""The budgeted direct scrape against real exporters served through the simulated API server's pod
proxy: bytes counted by the source and by a relay in front of the server, priority nodes, fair
rotation, the status text, and the bound on scrapes in flight."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sim.scenarios.generators import ScaleSpec, scale_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources import scrape_budget
from kueuetop.sources.gpu_poller import SCRAPE_SOURCE, GpuPoller
from kueuetop.sources.scrape import ScrapeSource
from kueuetop.sources.scrape_budget import (
    AUTO,
    AUTO_FLOOR,
    DEFAULT_BUDGET,
    ByteBudget,
    auto_budget,
    budget_text,
    parse_budget,
    refresh_note,
    short_note,
)
from kueuetop.store import Store
from kueuetop.tui.statusbar import summarize_sources
from tests.byte_counter import ByteCounter
from tests.fault_proxy import FaultProxy
from tests.waiting import wait_until

NODES = 30  # 8-GPU nodes, one dcgm-exporter each (~55 KB per read)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("fleet")
    spec = ScaleSpec("budget-fleet", nodes=NODES, cluster_queues=5, local_queues_per_cq=1, workloads=40, seed=3)
    s = start_served(scale_scenario(spec), speed=20, kubeconfig=str(d / "kubeconfig"))
    # The server answers while the first instant settles: under load a list taken then holds
    # only the exporter pods made so far. The tests count on one per node.
    assert s.caught_up.wait(60)
    yield s
    s.stop()


@pytest.fixture
def counted(fleet: ServedCluster, tmp_path: Path) -> Iterator[tuple[client.ApiClient, ByteCounter]]:
    relay = ByteCounter(fleet.url)
    api = config.new_client_from_config(str(write_kubeconfig(tmp_path / "counted", relay.url)))
    yield api, relay
    api.close()
    relay.stop()


class FakeTime:
    """The source's clocks, moved by the test: a poll every `step` seconds without waiting them."""

    def __init__(self) -> None:
        self.t = 0.0
        self.epoch = time.time()

    def mono(self) -> float:
        return self.t

    def wall(self) -> float:
        return self.epoch + self.t


def _exporter_nodes(src: ScrapeSource) -> set[str]:
    return {str(p["spec"]["nodeName"]) for p in src._listed or ()}


# ------------------------------------------------------------------ (a) bytes within the budget

def test_bytes_per_minute_stay_within_budget_counted_at_client_and_server(
        counted: tuple[client.ApiClient, ByteCounter]) -> None:
    api, relay = counted
    budget = 600_000  # ~10 exporter reads a minute; unbudgeted, 30 exporters every 0.1 s
    # A whole minute's budget may go at once: the 60 s window is what holds it.
    src = ScrapeSource(api, budget=budget, burst_seconds=60.0)
    store = Store()
    poller = GpuPoller(store, src, interval=0.1).start()
    try:
        # Polls go on until the minute's budget is spent and nothing more fits.
        assert wait_until(lambda: poller.polls >= 20 and src.budget.last_minute() > budget - 60_000, 30), (
            poller.polls, src.budget.last_minute())
        polls_then, seen = poller.polls, relay.total
        assert wait_until(lambda: poller.polls >= polls_then + 20, 30)
    finally:
        poller.stop()
    # Everything moved within one minute (the test is far shorter): at most one budget, both ways,
    # as the relay in front of the API server counted it, and as the source counted it.
    assert relay.max_in_window(60.0) <= budget, relay.total
    assert src.bytes_fetched <= budget
    assert relay.total <= src.bytes_fetched  # the source's count (bodies + 1 KB of headers) is the larger
    assert relay.total - seen < 20_000  # 20 polls later: not one more exporter read
    assert relay.bytes_out > budget // 2  # and the budget was used, not merely not reached
    assert len({n for n, c in src.scraped.items() if c}) < NODES  # fewer reads than the fleet


def test_paced_budget_spends_about_its_rate(counted: tuple[client.ApiClient, ByteCounter]) -> None:
    api, relay = counted
    budget = 1_200_000  # 20 kB a second
    src = ScrapeSource(api, budget=budget)  # default pacing: 5 s' worth at once, then 90 % of the rate
    polls = 0
    start = time.monotonic()
    while time.monotonic() - start < 4.0:  # polls 50 ms apart, as fast as the machine allows
        src.gpus()
        polls += 1
        time.sleep(0.05)
    elapsed = time.monotonic() - start
    # Burst (5 s of budget) + the pace over the run + the first list, which is never refused.
    allowed = budget / 60 * (5 + 0.9 * elapsed) + 120_000
    assert relay.total <= allowed, (relay.total, allowed, polls)
    assert relay.total <= src.bytes_fetched
    assert src.bytes_fetched > budget / 60 * 5  # at least the first burst went


# ------------------------------------------------------------------ (b), (c) priority and rotation

def test_priority_nodes_every_poll_the_rest_rotated_fairly(fleet: ServedCluster) -> None:
    api = config.new_client_from_config(str(fleet.kubeconfig))
    clock = FakeTime()
    # 3 MB a minute, one poll every 5 s: ~225 kB a poll, 4 exporter reads.
    src = ScrapeSource(api, budget=3_000_000, clock=clock.wall, monotonic=clock.mono)
    try:
        src.gpus()
        nodes = sorted(_exporter_nodes(src))
        assert len(nodes) == NODES
        hot = set(nodes[5:7])
        src.set_priority_nodes(hot)
        before = dict(src.scraped)
        polls = 30
        read_at: dict[str, float] = {}
        for _ in range(polls):
            clock.t += 5.0
            src.gpus()
            for e in src.exporters:
                if e.last_success is not None:
                    read_at[e.node] = e.last_success
        counts = {n: src.scraped.get(n, 0) - before.get(n, 0) for n in nodes}
        # (b) the nodes on screen are read on every poll …
        assert all(counts[n] == polls for n in hot), {n: counts[n] for n in hot}
        # … the others in turn, more slowly, and (c) every one of them, evenly (round-robin).
        cold = [counts[n] for n in nodes if n not in hot]
        assert max(cold) < polls and min(cold) >= 1, counts
        assert max(cold) - min(cold) <= 1, counts
        # Samples keep the time they were read: a node off screen shows an older time than a hot one.
        reading = src._last
        assert reading is not None
        at = {s.node: s.at for s in reading.samples}
        assert all(at[n] == clock.wall() for n in hot)
        assert min(at.values()) < clock.wall() - 5.0
        assert all(at[n] == read_at[n] for n in nodes), "a sample's time is that of its node's last read"
        assert not any(s.stale for s in reading.samples)  # within their turn: old, not stale
    finally:
        api.close()


# ------------------------------------------------------------------ (d) the status text

def test_status_says_when_the_budget_cannot_keep_the_fleet_fresh(fleet: ServedCluster) -> None:
    api = config.new_client_from_config(str(fleet.kubeconfig))
    try:
        for budget, expect_note in ((500_000, True), (50_000_000, False), (DEFAULT_BUDGET, False)):
            clock = FakeTime()
            store = Store()
            src = ScrapeSource(api, budget=budget, clock=clock.wall, monotonic=clock.mono)
            poller = GpuPoller(store, src, interval=5.0, clock=clock.wall)
            for _ in range(3):
                clock.t += 5.0
                poller.poll_once()
            message = store.source(SCRAPE_SOURCE).message
            short = dict((label, text) for label, text, _ in summarize_sources(store.sources(), clock.wall()))
            if expect_note:
                # 30 exporters × ~55 kB at 0.4 MB a minute for reads: about 4 minutes a sweep.
                assert message.startswith("scrape budget 500kB/min: 30 nodes refresh every "), message
                assert "use --prometheus" in message and "--scrape-budget" in message
                assert short_note(message) is not None
                text = short[SCRAPE_SOURCE]
                assert text.startswith("budget 500kB/min: 30 nodes refresh every") and "--prometheus" in text
                assert len(text) < 70
            else:
                assert "scrape budget" not in message and short_note(message) is None, message
                assert "budget" not in short[SCRAPE_SOURCE]
            poller.stop()
    finally:
        api.close()


# ------------------------------------------------------------------ (e) scrapes in flight

def test_scrapes_in_flight_never_exceed_the_bound(fleet: ServedCluster) -> None:
    api = config.new_client_from_config(str(fleet.kubeconfig))
    fleet.server.faults.update({"latencyMs": 40})  # requests overlap: a bound has something to hold
    try:
        src = ScrapeSource(api, budget=0, concurrency=3)  # unlimited: all 30 exporters each round
        for _ in range(3):
            src.gpus()
        assert sum(src.scraped.values()) >= 3 * NODES
        assert src.max_in_flight == 3, src.max_in_flight
        assert src.in_flight == 0
    finally:
        fleet.server.faults.update({"latencyMs": 0})
        api.close()


# ------------------------------------------------------------------ the bookkeeping alone

def test_parse_budget_units_and_errors() -> None:
    assert parse_budget("10MB") == 10_000_000
    assert parse_budget("20MiB") == 20 * 2**20
    assert parse_budget("500k") == 500_000
    assert parse_budget("1.5GB/min") == 1_500_000_000
    assert parse_budget("0") == 0 and parse_budget("unlimited") == 0
    for bad in ("", "ten", "10XB", "-5MB", "100"):
        with pytest.raises(ValueError):
            parse_budget(bad)


def test_auto_budget_is_two_percent_of_the_seeds_scrape_loop_with_a_floor() -> None:
    assert DEFAULT_BUDGET == AUTO and parse_budget("auto") == AUTO and parse_budget(" Auto ") == AUTO
    assert budget_text(AUTO) == "auto" and budget_text(2_750_000, auto=True) == "auto 2.8MB/min"
    # `large`: 1,000 exporters, 68.7 MB a round; the seeds read every one every 30 s (137 MB a
    # minute), 2 % of which is 2.75 MB a minute.
    assert auto_budget(68_736_189) == 2_749_447
    assert auto_budget(5 * 68_736_189) == 5 * 2_749_447 + 2  # `xl`: five times the fleet
    assert auto_budget(10 * 70_000) == AUTO_FLOOR  # ten nodes: the floor
    assert auto_budget(0) == AUTO_FLOOR


def test_budget_limit_can_follow_the_fleet() -> None:
    t = [0.0]
    b = ByteBudget(600_000, clock=lambda: t[0])
    assert b.try_reserve(50_000)
    b.settle(50_000, 50_000)
    b.set_per_minute(100_000)  # smaller: the minute's window now holds at 100 kB
    t[0] += 30.0
    assert not b.try_reserve(60_000), "the bytes already settled count against the new limit"
    assert b.try_reserve(40_000)
    # A full bucket stays full when the limit moves by a byte (estimates change each poll).
    b = ByteBudget(600_000, clock=lambda: t[0])
    b.set_per_minute(600_001)
    assert b.try_reserve(60_000), "a full bucket lets a request bigger than itself go"
    unlimited = ByteBudget(0)
    unlimited.set_per_minute(100_000)
    assert unlimited.unlimited, "an unlimited budget is not limited by the fleet"


def test_auto_budget_follows_the_exporters_answers(fleet: ServedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the floor out of the way (and a share that lets 30 exporters be read in minutes), the
    source's limit is the share of the seeds' loop over the exporters it has read: their answers'
    sizes, not a guess; the status note says "auto"."""
    monkeypatch.setattr(scrape_budget, "AUTO_FLOOR", 1)
    monkeypatch.setattr(scrape_budget, "AUTO_SHARE", 0.1)
    api = config.new_client_from_config(str(fleet.kubeconfig))
    clock = FakeTime()
    src = ScrapeSource(api, budget=AUTO, clock=clock.wall, monotonic=clock.mono)
    try:
        for _ in range(200):  # every exporter read at least once (~5 simulated minutes)
            clock.t += 5.0
            src.gpus()
            if len(src.exporters) == NODES:
                break
        assert len(src.exporters) == NODES, src.status.message
        sizes = sum(st.size for st in src._pods.values() if st.size is not None)
        assert src.budget.per_minute == pytest.approx(auto_budget(sizes), rel=1e-3)
        assert auto_budget(sizes) == int(0.2 * sizes)
        assert src.status.message.startswith("scrape budget auto "), src.status.message
    finally:
        api.close()


def test_window_holds_whatever_the_pace() -> None:
    t = [0.0]
    b = ByteBudget(600_000, burst_seconds=60.0, clock=lambda: t[0])
    taken = 0
    for _ in range(600):  # a request every 0.5 s for 5 minutes
        t[0] += 0.5
        if b.try_reserve(50_000):
            b.settle(50_000, 50_000)
            taken += 1
        assert b.last_minute() <= 600_000
    assert 5 * 12 - 12 <= taken <= 5 * 12 + 12  # about the budget's 12 a minute, not fewer


def test_refresh_note_threshold() -> None:
    assert refresh_note(10_000_000, 1000, 55_000_000) is not None
    assert refresh_note(10_000_000, 10, 550_000) is None
    assert refresh_note(0, 1000, 55_000_000) is None  # unlimited: every poll reads everything


def test_exporters_that_appear_after_an_empty_list_are_found_on_the_next_poll(fleet: ServedCluster) -> None:
    """A cluster still starting (or an operator still installing) has no exporter yet: the empty
    list is looked at again on every poll, not after the budget's relist interval."""
    api = config.new_client_from_config(str(fleet.kubeconfig))
    clock = FakeTime()
    src = ScrapeSource(api, namespace="late-gpu", clock=clock.wall, monotonic=clock.mono)
    try:
        assert src.gpus().status.message == "no dcgm-exporter pods found"
        core = client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": "late-gpu"}}, _preload_content=False)
        node = sorted(_exporter_nodes_of(api))[0]
        core.create_namespaced_pod("late-gpu", {
            "metadata": {"name": "nvidia-dcgm-exporter-late", "labels": {"app": "nvidia-dcgm-exporter"}},
            "spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}], "containers": [{
                "name": "nvidia-dcgm-exporter", "image": "nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2",
                "ports": [{"name": "metrics", "containerPort": 9400}]}]},
        }, _preload_content=False)

        def found() -> bool:
            clock.t += 1.0  # well inside the 30 s a non-empty list is kept
            return bool(src.gpus().samples)

        assert wait_until(found, 10, step=0.2)
        assert clock.t < 30 and {s.node for s in src._last.samples} == {node}  # type: ignore[union-attr]
    finally:
        # The fleet is shared by the module: its one exporter per node stays so.
        client.CoreV1Api(api).delete_namespace("late-gpu", _preload_content=False)
        assert wait_until(lambda: not any(p["metadata"]["namespace"] == "late-gpu"
                                          for p in ScrapeSource(api).list_exporters()), 10)
        api.close()


def _exporter_nodes_of(api: client.ApiClient) -> set[str]:
    src = ScrapeSource(api)
    return {str(p["spec"]["nodeName"]) for p in src.list_exporters()}


def test_first_poll_reads_even_when_the_list_outweighs_a_polls_share(fleet: ServedCluster) -> None:
    """The first list of a big fleet (~2 KB a node) can cost more than a poll's few seconds of
    budget: it is held to the minute's window, not charged to the pace, so the first poll still
    reads an exporter and the source is live, not an error, from the start."""
    api = config.new_client_from_config(str(fleet.kubeconfig))
    clock = FakeTime()
    store = Store()
    # 5 s of 600 kB a minute = 50 kB: less than the 30-pod list (~60 kB).
    src = ScrapeSource(api, budget=600_000, clock=clock.wall, monotonic=clock.mono)
    poller = GpuPoller(store, src, interval=5.0, clock=clock.wall)
    try:
        assert poller.poll_once(), src.status
        assert src.exporters and src.exporters[0].ok and store.gpus()
        assert src.budget.last_minute() <= 600_000
    finally:
        poller.stop()
        api.close()


def test_exporters_down_behind_a_working_api_server_do_not_relist_every_poll(fleet: ServedCluster,
                                                                             tmp_path: Path) -> None:
    proxy = FaultProxy(fleet.url).start()
    api = config.new_client_from_config(str(write_kubeconfig(tmp_path / "proxied", proxy.url)))
    core = client.CoreV1Api(config.new_client_from_config(str(fleet.kubeconfig)))
    clock = FakeTime()
    try:
        core.create_namespace({"metadata": {"name": "broken-gpu"}}, _preload_content=False)
        node = sorted(_exporter_nodes_of(core.api_client))[0]
        core.create_namespaced_pod("broken-gpu", {
            # Not an exporter the pod proxy can reach: it answers 503, as for a crashed exporter.
            "metadata": {"name": "broken-exporter", "labels": {"app": "broken-exporter"}},
            "spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}], "containers": [{
                "name": "exporter", "image": "busybox", "ports": [{"name": "metrics", "containerPort": 9400}]}]},
        }, _preload_content=False)
        src = ScrapeSource(api, selectors=("app=broken-exporter",), namespace="broken-gpu",
                           clock=clock.wall, monotonic=clock.mono)
        assert wait_until(lambda: src.gpus() and src.exporters, 10)
        assert not src.exporters[0].ok and src.exporters[0].error.startswith("HTTP 503")
        lists = len(proxy.requests("GET", "/namespaces/broken-gpu/pods?"))
        for _ in range(4):  # 20 s: within the 30 s a list is kept
            clock.t += 5.0
            src.gpus()
        assert not src.status.ok and "HTTP 503" in src.status.message
        assert len(proxy.requests("GET", "/namespaces/broken-gpu/pods?")) == lists  # no list per poll
        assert len(proxy.requests("GET", "/proxy/metrics")) >= 5  # the exporter was tried each poll
    finally:
        core.delete_namespace("broken-gpu", _preload_content=False)
        core.api_client.close()
        api.close()
        proxy.stop()
