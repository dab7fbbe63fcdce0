"""A short-lived live view of a cluster for the headless commands (`snapshot`, `explain`).

`open_session` connects as kubectl would, starts the Kubernetes sources, waits (bounded) until
every informer's first list is in the store, and reads Kueue's queue positions once; `gpu_poll`
reads GPU telemetry once. The console keeps its sources running instead; the headless commands
take one consistent look and stop.

Failures are exceptions with one line for people: `KubeconfigProblem` (bad input: exit 2),
`ConnectionProblem` / `NoKueue` / `ExecPluginFailed` (the cluster or its login: exit 1), `SyncTimeout` (exit 1).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

import urllib3

from kueuetop.sources.connection import Connection, ConnectionProblem, ExecPluginFailed, discover, load_client
from kueuetop.sources.gpu_poller import GpuPoller, gpu_source_for
from kueuetop.sources.informer import InformerConfig
from kueuetop.sources.kube import KubeSources
from kueuetop.sources.kube_http import ApiError
from kueuetop.sources.scrape_budget import DEFAULT_BUDGET
from kueuetop.sources.watch_loop import WatchLoop
from kueuetop.store import Store, StoreEvent
from kueuetop.store import events as K


class KubeconfigProblem(ConnectionProblem):
    """The kubeconfig itself is missing or unusable (bad input, not a cluster problem)."""


class SyncTimeout(Exception):
    """The first lists did not all arrive in time; `str()` names the missing resources."""


POSITION_FETCHES = 8  # visibility GETs in flight at once
POSITION_BUDGET = 1.0  # seconds the headless commands spend on them in all

# Short watch/request timeouts: a headless command must never hang on one slow resource.
HEADLESS_INFORMERS = InformerConfig(watch_timeout=30, request_timeout=15, connect_timeout=5, page_size=5000)


@dataclass
class LiveSession:
    conn: Connection
    store: Store
    sources: KubeSources
    pollers: list[GpuPoller] = field(default_factory=list)
    positions_from: str = "engine"  # "visibility" when Kueue's visibility API answered for every
    # queue, "visibility+engine" when the time budget left some to the engine

    def gpu_poll(self, prometheus_url: str | None = None, token: str | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float = 10.0,
                 scrape_budget: int | None = None) -> GpuPoller:
        """One GPU poll into the store (Prometheus when a URL is given, else the exporter scrape,
        which may spend a whole minute of `scrape_budget` on this one look)."""
        budget = DEFAULT_BUDGET if scrape_budget is None else scrape_budget
        poller = GpuPoller(self.store, gpu_source_for(self.conn, prometheus_url, token, headers, timeout=timeout,
                                                      scrape_budget=budget, burst_seconds=60.0))
        self.pollers.append(poller)
        poller.poll_once()
        return poller

    def close(self) -> None:
        for p in self.pollers:
            p.stop(timeout=1.0)
        self.sources.stop(timeout=2.0)
        self.conn.close()


def connect_checked(kubeconfig: str | None, context: str | None, timeout: float = 10.0) -> Connection:
    """`connection.connect`, with kubeconfig problems told apart from cluster problems."""
    try:
        api, info = load_client(kubeconfig, context)
    except ExecPluginFailed:
        raise  # the kubeconfig is fine; its credentials could not be had (an expired login): exit 1
    except ConnectionProblem as exc:
        raise KubeconfigProblem(exc.message, exc.hint) from None
    try:
        kueue = discover(api, info, timeout)
    except BaseException:
        api.close()
        raise
    return Connection(api, info, kueue)


def open_session(kubeconfig: str | None = None, context: str | None = None, *, timeout: float = 30.0,
                 config: InformerConfig | None = None,
                 alongside: Callable[[LiveSession], object] | None = None,
                 watch_loop: WatchLoop | None = None) -> LiveSession:
    """Connect, start the sources and wait for the initial sync (at most `timeout` seconds).

    `alongside(session)` runs in a thread while the lists arrive (the GPU poll of `snapshot`:
    a thousand exporter scrapes need not wait for 20,000 workloads to be parsed); it is joined
    before the session is returned. `watch_loop`: the lists and watches run there (a
    ContextPool's clusters share one)."""
    deadline = time.monotonic() + timeout
    conn = connect_checked(kubeconfig, context, timeout=min(10.0, timeout))
    store = Store()
    try:
        sources = KubeSources(conn, store, config=config or HEADLESS_INFORMERS,
                              watch_loop=watch_loop).start()
    except BaseException:
        conn.close()
        raise
    session = LiveSession(conn, store, sources)
    side: threading.Thread | None = None
    if alongside is not None:
        side = threading.Thread(target=alongside, args=(session,), name="kueuetop-alongside", daemon=True)
        side.start()
    positions = PositionReader(sources, store)
    try:
        while not sources.synced():
            if time.monotonic() > deadline:
                missing = sorted(i.spec.source for i in sources.informers if not store.has_synced(i.spec.source))
                raise SyncTimeout(f"timed out after {timeout:g}s waiting for the first list of "
                                  f"{', '.join(missing)} from {conn.info.server}")
            if not positions.started and store.has_synced(K.CLUSTER_QUEUES):
                # The queues are listed long before 20,000 workloads are: ask Kueue for their
                # positions while the workloads arrive rather than after.
                positions.start(_queues_by_pending(store))
            time.sleep(0.02)
        positions.start(_queues_by_pending(store))  # (a no-op when already started)
        session.positions_from = positions.finish(
            [key[1] for key in store.keys(K.CLUSTER_QUEUES) if store.queue_counts(key[1]).pending])
        if side is not None:
            side.join(max(0.0, deadline - time.monotonic()))
    except BaseException:
        positions.abandon()
        session.close()
        raise
    return session


def _queues_by_pending(store: Store) -> list[str]:
    """Every ClusterQueue, those whose status counts the most pending workloads first (the
    workloads themselves may not be listed yet; a queue that turns out to have none costs one
    small answer)."""
    cqs = [(store.get(K.CLUSTER_QUEUES, key), key[1]) for key in store.keys(K.CLUSTER_QUEUES)]
    cqs.sort(key=lambda c: (-(getattr(c[0], "pending_workloads", 0) or 0), c[1]))
    return [name for _, name in cqs]


class PositionReader:
    """Ask the visibility API for the queues' positions, so they are current in the one look
    a headless command takes (the background poller may have run before the sync).

    Bounded twice: POSITION_FETCHES in flight, and `budget` seconds after the sync for what is
    still out. Kueue answers from memory, but a cluster of 500 busy queues is 500 requests; what
    has not come back by then is left to the engine's own order of the same queues
    (views/snapshot.py), and the snapshot says so ("visibility+engine")."""

    def __init__(self, sources: KubeSources, store: Store, budget: float = POSITION_BUDGET) -> None:
        self.vis = sources.visibility
        self.store = store
        self.budget = budget
        self.started = False
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[str, Future[StoreEvent | None]] = {}

    def start(self, cqs: list[str]) -> None:
        if self.started:
            return
        self.started = True
        if self.vis is None:
            return
        self._pool = ThreadPoolExecutor(max_workers=POSITION_FETCHES, thread_name_prefix="kueuetop-positions")
        for cq in cqs:
            self._futures[cq] = self._pool.submit(self._fetch, cq)

    def _fetch(self, cq: str) -> StoreEvent | None:
        ev = self.vis.fetch(cq) if self.vis is not None else None
        if ev is not None:
            self.store.apply(ev)
        return ev

    def finish(self, wanted: list[str]) -> str:
        """Wait (within the budget) for the queues that have pending workloads; say where the
        positions came from."""
        if self.vis is None:
            return "engine"
        if not wanted:
            self.abandon()
            return "visibility"
        assert self._pool is not None
        for cq in wanted:  # queues created after the early start
            if cq not in self._futures:
                self._futures[cq] = self._pool.submit(self._fetch, cq)
        answered = 0
        try:
            for fut in as_completed([self._futures[cq] for cq in wanted], timeout=self.budget):
                fut.result()
                answered += 1
        except TimeoutError:
            pass  # the budget is spent: the engine's order stands in for the rest
        except (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError):
            answered = 0  # forbidden, not served, unreachable: the engine's order stands in
        finally:
            self.abandon()
        if answered == len(wanted):
            return "visibility"
        return "visibility+engine" if answered else "engine"

    def abandon(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
