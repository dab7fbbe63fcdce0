"""The informer and liveness probe of sources/informer.py and sources/liveness.py as coroutines
on the shared watch loop (sources/watch_loop.py): the same list pages, watch opened at the list's
first page, watch query, event handling, relist and backoff policy (`Informer._recover`) and
source states, with the requests made by sources/aio_http.py instead of a thread blocked in urllib3."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from kueuetop.sources import aio_http
from kueuetop.sources.aio_http import Endpoint
from kueuetop.sources.informer import Backoff, Informer, InformerConfig, ResourceSpec, Sink
from kueuetop.sources.kube_http import ApiError
from kueuetop.sources.liveness import LivenessProbe, Probed
from kueuetop.sources.watch_loop import Job, WatchLoop
from kueuetop.store import Entry, SourceState, Store

PARSE_SLICE = 200  # list items parsed between two turns of the loop


class _LoopStream:
    """An open watch as `Informer.suspect` and `stop` close it: from any thread."""

    def __init__(self, loop: WatchLoop, resp: aio_http.Response) -> None:
        self._loop, self._resp = loop, resp

    @property
    def response(self) -> aio_http.Response:
        return self._resp

    def close(self) -> None:
        self._loop.call(self._resp.abort)


class _OnLoop:
    """Stop and join for a reader whose work is one job on the shared loop (`_job`)."""

    _job: Job | None

    def stop(self) -> None:
        super().stop()  # type: ignore[misc]
        if self._job is not None:
            self._job.cancel()

    def join(self, timeout: float | None = None) -> None:
        if self._job is not None:
            self._job.wait(timeout)


class LoopInformer(_OnLoop, Informer):
    def __init__(self, api: Any, spec: ResourceSpec, store: Store, sink: Sink,
                 config: InformerConfig | None = None, *, loop: WatchLoop, endpoint: Endpoint) -> None:
        super().__init__(api, spec, store, sink, config)
        self.loop = loop
        self.endpoint = endpoint
        self._job: Job | None = None

    def start(self) -> LoopInformer:
        self.store.set_source_state(self.spec.source, SourceState.CONNECTING)
        self._job = self.loop.spawn(self._arun)
        return self

    @property
    def alive(self) -> bool:
        return self._job is not None and not self._job.done

    async def _arun(self) -> None:
        backoff = Backoff(self.config.backoff_initial, self.config.backoff_max)
        need_list = True
        try:
            while not self._stop.is_set():
                try:
                    if need_list:
                        self._relisting()
                        await self._alist()
                        need_list = False
                        self._listed(backoff)
                    await self._awatch()
                    backoff.reset()
                except Exception as e:
                    step = self._recover(e, need_list, backoff)
                    if step is None:
                        break
                    need_list, delay = step
                    if delay > 0:
                        await asyncio.sleep(delay)
        finally:
            self._state(SourceState.STOPPED, "")

    async def _alist(self) -> None:
        cfg = self.config
        entries: list[Entry] = []
        token: str | None = None
        rv = ""
        self._drop_early()
        try:
            while True:
                try:
                    resp = await aio_http.get(self.endpoint, self.spec.path, self._page_query(token),
                                              connect_timeout=cfg.connect_timeout, read_timeout=cfg.request_timeout)
                    page = await resp.json()
                except ApiError as e:
                    if e.status == 410 and token:
                        # The continue token expired mid-list: start over for a consistent view.
                        entries, token, rv = [], None, ""
                        self._drop_early()
                        continue
                    raise
                entries, token, rv = await self._take_page_in_slices(page, entries, rv)
                if token and rv and self._early is None:
                    await self._aopen_early(rv)  # as Informer._list: hold the server's changes from rv
                if not token or self._stop.is_set():
                    break
        except BaseException:
            self._drop_early()
            raise
        self._list_done(entries, rv)

    async def _aopen_early(self, rv: str) -> None:
        query, read_timeout = self._watch_query(rv)
        try:
            resp = await aio_http.get(self.endpoint, self.spec.path, query,
                                      connect_timeout=self.config.connect_timeout, read_timeout=read_timeout)
        except (ApiError, OSError, ValueError):
            return  # opened after the list instead
        self._early = _LoopStream(self.loop, resp)
        if self._stop.is_set():
            self._drop_early()

    async def _take_page_in_slices(self, page: Any, entries: list[Entry],
                                   rv: str) -> tuple[list[Entry], str | None, str]:
        """`_take_page` a slice of items at a time, the other clusters' reads running between
        slices: parsing a page of thousands of Workloads would otherwise hold the loop long
        enough for their reads' and probes' timeouts to fire."""
        items = page.get("items") if isinstance(page, dict) else None
        if not isinstance(items, list) or len(items) <= PARSE_SLICE:
            out = self._take_page(page, entries, rv)
            await asyncio.sleep(0)
            return out
        token: str | None = None
        for i in range(0, len(items), PARSE_SLICE):
            entries, token, rv = self._take_page({**page, "items": items[i:i + PARSE_SLICE]}, entries, rv)
            await asyncio.sleep(0)
        return entries, token, rv

    async def _awatch(self) -> None:
        early, self._early = self._early, None  # opened during the list, from the list's version
        if early is not None:
            resp = early.response
        else:
            query, read_timeout = self._watch_query()
            resp = await aio_http.get(self.endpoint, self.spec.path, query,
                                      connect_timeout=self.config.connect_timeout, read_timeout=read_timeout)
        try:
            if not self._opened(_LoopStream(self.loop, resp)):
                return
            async for ev in resp.events():
                if self._stop.is_set():
                    return
                self._handle(ev)
        finally:
            self._closed()
            resp.abort()


class LoopLivenessProbe(_OnLoop, LivenessProbe):
    """`/version` every `interval` seconds, as a coroutine on the watch loop."""

    def __init__(self, api: Any, targets: list[Probed], *, interval: float, timeout: float,
                 loop: WatchLoop, endpoint: Endpoint) -> None:
        super().__init__(api, targets, interval=interval, timeout=timeout)
        self.loop = loop
        self.endpoint = endpoint
        self._job: Job | None = None

    def start(self) -> LoopLivenessProbe:
        if self.interval > 0:
            self._job = self.loop.spawn(self._arun)
        return self


    async def _arun(self) -> None:
        while not self._stop.is_set():
            await asyncio.sleep(self.interval)
            await self.aprobe_once()

    async def aprobe_once(self) -> bool:
        """`probe_once` on the loop."""
        self.probes += 1
        asked = time.monotonic()
        try:
            resp = await aio_http.get(self.endpoint, "/version", None, connect_timeout=self.timeout,
                                      read_timeout=self.timeout)
            await resp.json()
        except ApiError as e:
            if e.status < 500:  # 401/403/404 on /version: it answered, which is all we ask
                return self._answered()
            return self._silent(f"{e.status} {e.reason or 'error'}", asked)
        except (OSError, ValueError) as e:
            return self._silent(type(e).__name__, asked)
        return self._answered()
