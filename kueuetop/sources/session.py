"""A short-lived live view of a cluster for the headless commands (`snapshot`, `explain`).

`open_session` connects as kubectl would, starts the Kubernetes sources, waits (bounded) until
every informer's first list is in the store, and reads Kueue's queue positions once; `gpu_poll`
reads GPU telemetry once. The console keeps its sources running instead; the headless commands
take one consistent look and stop.

Failures are exceptions with one line for people: `KubeconfigProblem` (bad input: exit 2),
`ConnectionProblem` / `NoKueue` (the cluster: exit 1), `SyncTimeout` (exit 1).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import urllib3

from kueuetop.connection import Connection, ConnectionProblem, discover, load_client
from kueuetop.sources.gpu_poller import GpuPoller, gpu_source_for
from kueuetop.sources.informer import InformerConfig
from kueuetop.sources.kube import KubeSources
from kueuetop.sources.kube_http import ApiError
from kueuetop.store import Store
from kueuetop.store import events as K


class KubeconfigProblem(ConnectionProblem):
    """The kubeconfig itself is missing or unusable (bad input, not a cluster problem)."""


class SyncTimeout(Exception):
    """The first lists did not all arrive in time; `str()` names the missing resources."""


# Short watch/request timeouts: a headless command must never hang on one slow resource.
HEADLESS_INFORMERS = InformerConfig(watch_timeout=30, request_timeout=15, connect_timeout=5)


@dataclass
class LiveSession:
    conn: Connection
    store: Store
    sources: KubeSources
    pollers: list[GpuPoller] = field(default_factory=list)
    positions_from: str = "engine"  # "visibility" when Kueue's visibility API answered

    def gpu_poll(self, prometheus_url: str | None = None, token: str | None = None,
                 headers: Mapping[str, str] | None = None, timeout: float = 10.0) -> GpuPoller:
        """One GPU poll into the store (Prometheus when a URL is given, else the exporter scrape)."""
        poller = GpuPoller(self.store, gpu_source_for(self.conn, prometheus_url, token, headers, timeout=timeout))
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
    except ConnectionProblem as exc:
        raise KubeconfigProblem(exc.message, exc.hint) from None
    try:
        kueue = discover(api, info, timeout)
    except BaseException:
        api.close()
        raise
    return Connection(api, info, kueue)


def open_session(kubeconfig: str | None = None, context: str | None = None, *, timeout: float = 30.0,
                 config: InformerConfig | None = None) -> LiveSession:
    """Connect, start the sources and wait for the initial sync (at most `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    conn = connect_checked(kubeconfig, context, timeout=min(10.0, timeout))
    store = Store()
    try:
        sources = KubeSources(conn, store, config=config or HEADLESS_INFORMERS).start()
    except BaseException:
        conn.close()
        raise
    session = LiveSession(conn, store, sources)
    try:
        while not sources.synced():
            if time.monotonic() > deadline:
                missing = sorted(i.spec.source for i in sources.informers if not store.has_synced(i.spec.source))
                raise SyncTimeout(f"timed out after {timeout:g}s waiting for the first list of "
                                  f"{', '.join(missing)} from {conn.info.server}")
            time.sleep(0.02)
        session.positions_from = _read_positions(sources, store)
    except BaseException:
        session.close()
        raise
    return session


def _read_positions(sources: KubeSources, store: Store) -> str:
    """Ask the visibility API once for every queue with pending work, so positions are current
    in the one look the command takes (the background poller may have run before the sync)."""
    vis = sources.visibility
    if vis is None:
        return "engine"
    try:
        for key in store.keys(K.CLUSTER_QUEUES):
            cq = key[1]
            if store.queue_counts(cq).pending == 0:
                continue
            ev = vis.fetch(cq)
            if ev is not None:
                store.apply(ev)
    except (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError):
        return "engine"  # forbidden, not served, unreachable: the engine's order stands in
    return "visibility"
