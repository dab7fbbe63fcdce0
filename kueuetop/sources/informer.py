"""One list+watch informer: keeps the store's copy of one resource in step with the server.

Loop: paginated list (limit=500, continue) → REPLACE event → watch from the list's
resourceVersion with bookmarks → UPSERT/DELETE events. The watch is opened as soon as the list's
first page names its resourceVersion, and read once the list is in the store: the server keeps the
changes made meanwhile for that stream. Opened only after the whole list, the watch would start
from a version the server may already have dropped from its window when the list takes long (a
90,000-Workload list on a busy cluster takes about a minute), and the answer, 410, means listing
all again, which takes as long: a relist every minute, for good. A watch that ends normally is resumed
from the last seen resourceVersion; `410 Gone` (or an ERROR event carrying it) relists, and so
does `504 Too large resource version` (a restarted server); a stream silent past the silence
bound is dropped and resumed, and the liveness probe (sources/liveness.py) marks the data stale
and drops the streams as soon as the API server stops answering;
transport errors, 429 and 5xx retry with exponential backoff (Retry-After honoured);
403/404 mark the source forbidden/unavailable and retry slowly, never affecting other
sources. Objects that fail to parse are kept as wire dicts with the reason, and logged;
parsed objects are stored without their wire dict (store/events.py `Entry`).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import urllib3

from kueuetop.kueue.parse import parse_object
from kueuetop.sources.kube_http import ApiError, Stream, request, status_causes
from kueuetop.store import Entry, SourceState, Store, StoreEvent

_log = logging.getLogger(__name__)

Sink = Callable[[StoreEvent], None]


@dataclass(frozen=True)
class ResourceSpec:
    """What to list and watch, and how to turn its items into store entries."""

    source: str  # source name shown in the status bar, e.g. "workloads", "pods/kueue"
    kind: str  # store kind (plural), shared by several sources for pods
    group: str  # "" for core
    version: str
    plural: str
    api_kind: str  # list items of built-in kinds come without kind/apiVersion: filled in
    namespaced: bool = True
    label_selector: str | None = None
    field_selector: str | None = None
    keep: Callable[[dict[str, Any]], bool] | None = None  # client-side filter (e.g. GPU pods)
    parse: Callable[[Any], Any] | None = parse_object  # None: the wire dict is the object
    # Applied to the entries gathered so far after each list page: a bound on what a list of a
    # resource with very many items (Events) holds before it reaches the store.
    trim: Callable[[list[Entry]], list[Entry]] | None = None

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def path(self) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{base}/{self.plural}"


@dataclass(frozen=True)
class InformerConfig:
    page_size: int = 500
    watch_timeout: int = 300  # server-side timeoutSeconds; client-go picks 5–10 min
    request_timeout: float = 30.0
    connect_timeout: float = 10.0
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    forbidden_retry: float = 60.0  # RBAC or CRDs may change: look again now and then
    # A watch stream silent (no event, no bookmark) for this long is dead: it is closed and
    # resumed. kube-apiserver sends a bookmark to every watcher that asked for them about once a
    # minute (cacher.go bookmarkFrequency), so a healthy stream is never this quiet; a stream a
    # middlebox dropped silently would otherwise be noticed only at the end of its timeoutSeconds.
    silence_bound: float = 150.0
    # How often the API server is asked for /version while streams are open, and how long an
    # answer may take: a held or partitioned connection is noticed within both, not at a stream's
    # read timeout. 0 turns the probe off.
    probe_interval: float = 5.0
    probe_timeout: float = 3.0


class Backoff:
    """Exponential backoff with full jitter, reset after a success."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial, self.maximum = initial, maximum
        self._n = 0

    def next(self) -> float:
        delay = min(self.maximum, self.initial * (2 ** self._n))
        self._n += 1
        return delay / 2 + random.random() * delay / 2

    def reset(self) -> None:
        self._n = 0


class Gone(Exception):
    """The resourceVersion we watch from has been compacted away: relist."""


def object_key(raw: dict[str, Any]) -> tuple[str, str] | None:
    meta = raw.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return None
    ns = meta.get("namespace")
    return (ns if isinstance(ns, str) else "", meta["name"])


class Informer:
    def __init__(self, api: Any, spec: ResourceSpec, store: Store, sink: Sink,
                 config: InformerConfig | None = None) -> None:
        self.api = api
        self.spec = spec
        self.store = store
        self.sink = sink
        self.config = config or InformerConfig()
        self.resource_version = ""
        self.skipped = 0  # malformed objects seen
        self.lists = 0  # full lists done (1 + relists): tests and the debug view read it
        # time.monotonic() of the last thing the open stream delivered (an event or a bookmark):
        # a stream that delivers while a probe goes unanswered is alive (see `suspect`).
        self.delivered_at = float("-inf")
        self._stop = threading.Event()
        self._lock = threading.Lock()  # the open stream, between this informer and the probe
        self._watching = False  # a stream is open and has been answered
        self._stream: Any = None  # the open watch: anything with close()
        self._early: Any = None  # the watch opened during a list, read once the list is stored
        self._thread: threading.Thread | None = None
        self._listed_once = False

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> Informer:
        self.store.set_source_state(self.spec.source, SourceState.CONNECTING)
        self._thread = threading.Thread(target=self._run, name=f"kueuetop-informer:{self.spec.source}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        for stream in (self._stream, self._early):
            if stream is not None:
                stream.close()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None:
            self._thread.join(timeout)

    def confirm(self) -> None:
        """The API server just answered a probe: an open, answered stream is as fresh as now."""
        with self._lock:
            if self._watching:
                self._state(SourceState.LIVE, ok=True)

    def suspect(self, message: str, since: float | None = None) -> None:
        """The API server stopped answering: say the data may be behind, and drop the open stream
        so the loop resumes from its resourceVersion once the server answers again. `since`
        (time.monotonic() when the unanswered probe was sent): a stream that has delivered since
        then is kept, as it is: an API server too busy to answer a probe in time (a big list in
        flight) that still streams is not stalled, and dropping its streams would only add a
        resume, or a whole relist once its version has gone, to its load."""
        with self._lock:
            if self._stop.is_set() or not self._listed_once:
                return
            if since is not None and self._watching and self.delivered_at >= since:
                return
            self._state(SourceState.STALE, message)
            stream, self._watching = self._stream, False
        if stream is not None:
            stream.close()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # ----------------------------------------------------------------- main loop
    def _run(self) -> None:
        backoff = Backoff(self.config.backoff_initial, self.config.backoff_max)
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._relisting()
                    self._list()
                    need_list = False
                    self._listed(backoff)
                self._watch()
                backoff.reset()
            except Exception as e:
                step = self._recover(e, need_list, backoff)
                if step is None:
                    break
                need_list, delay = step
                self._sleep(delay)
        self._state(SourceState.STOPPED, "")

    def _relisting(self) -> None:
        if self._listed_once:
            self._state(SourceState.RELISTING, "relisting")

    def _listed(self, backoff: Backoff) -> None:
        self._listed_once = True
        backoff.reset()
        self._state(SourceState.LIVE, ok=True)

    def _recover(self, e: Exception, need_list: bool, backoff: Backoff) -> tuple[bool, float] | None:
        """What a failed list or watch means: (list again?, seconds to wait first); None: stopped.
        Shared by this thread's loop and the shared watch loop (sources/loop_informer.py)."""
        src = self.spec.source
        if isinstance(e, Gone):
            # Relisting right away is what Kubernetes expects; the jittered pause only
            # keeps a server that compacts constantly from being hammered.
            return True, min(backoff.next(), 1.0)
        if isinstance(e, ApiError):
            if e.status == 410 or e.too_large_resource_version:
                # 410: our version was compacted away. Too large: the server has not reached
                # it (it restarted and its versions started over): what we hold may include
                # objects it no longer has, so only a fresh list is the truth.
                return True, (min(backoff.next(), 1.0) if e.status != 410 else 0.0)
            if e.status in (401, 403):
                msg = (f"not allowed to list {self.spec.plural}"
                       + (f" ({e.message})" if e.message else ""))
                self._state(SourceState.FORBIDDEN, msg)
                return True, self.config.forbidden_retry
            if e.status == 404:
                self._state(SourceState.UNAVAILABLE, f"the server does not serve {self.spec.path}")
                return True, self.config.forbidden_retry
            delay = backoff.next()
            if e.retry_after is not None:
                delay = max(delay, e.retry_after)
            self._state(SourceState.ERROR if need_list else SourceState.RELISTING,
                        f"{e.status} {e.reason or 'error'}, retrying in {delay:.0f}s")
            return need_list, delay
        if isinstance(e, (urllib3.exceptions.HTTPError, OSError, ValueError)):
            if self._stop.is_set():
                return None
            delay = backoff.next()
            current = self.store.source(src)
            if not need_list and current is not None and current.state is SourceState.STALE:
                pass  # the probe already said why; keep its word until the stream is back
            else:
                self._state(SourceState.ERROR if need_list else SourceState.RELISTING,
                            f"connection problem ({type(e).__name__}), retrying in {delay:.0f}s")
            _log.debug("%s: %s", src, e)
            return need_list, delay
        # A bug here must not kill the informer: report and retry from a list.
        _log.error("informer %s failed", src, exc_info=e)
        self._state(SourceState.ERROR, "internal error, see log; retrying")
        return True, backoff.next()

    def _sleep(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _state(self, state: SourceState, message: str = "", ok: bool = False) -> None:
        self.store.set_source_state(self.spec.source, state, message, ok=ok, skipped=self.skipped)

    def _query(self) -> dict[str, Any]:
        return {"labelSelector": self.spec.label_selector, "fieldSelector": self.spec.field_selector}

    # ----------------------------------------------------------------- list
    def _list(self) -> None:
        entries: list[Entry] = []
        token: str | None = None
        rv = ""
        self._drop_early()
        try:
            while True:
                try:
                    page = request(self.api, self.spec.path, self._page_query(token),
                                   timeout=(self.config.connect_timeout, self.config.request_timeout))
                except ApiError as e:
                    if e.status == 410 and token:
                        # The continue token expired mid-list: start over for a consistent view.
                        entries, token, rv = [], None, ""
                        self._drop_early()
                        continue
                    raise
                entries, token, rv = self._take_page(page, entries, rv)
                if token and rv and self._early is None:
                    self._open_early(rv)  # more pages to come: hold the server's changes from rv
                if not token or self._stop.is_set():
                    break
        except BaseException:
            self._drop_early()
            raise
        self._list_done(entries, rv)

    def _open_early(self, rv: str) -> None:
        """Open the watch from the list's version now (see the module docstring). When the server
        refuses it, the watch is opened after the list as before."""
        query, read_timeout = self._watch_query(rv)
        try:
            self._early = Stream(self.api, self.spec.path, query, timeout=(self.config.connect_timeout, read_timeout))
        except (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError) as e:
            _log.debug("%s: watch during the list not opened: %s", self.spec.source, e)
            self._early = None
        if self._stop.is_set():
            self._drop_early()

    def _drop_early(self) -> None:
        early, self._early = self._early, None
        if early is not None:
            early.close()

    def _page_query(self, token: str | None) -> dict[str, Any]:
        return {**self._query(), "limit": self.config.page_size, "continue": token}

    def _take_page(self, page: Any, entries: list[Entry], rv: str) -> tuple[list[Entry], str | None, str]:
        """One list page into `entries`: (entries, the next page's continue token, the list's version)."""
        if not isinstance(page, dict):
            raise ValueError("list answer is not a JSON object")
        meta = page.get("metadata") if isinstance(page.get("metadata"), dict) else {}
        rv = rv or str(meta.get("resourceVersion") or "")
        for item in page.get("items") or ():
            entry = self._entry(item)
            if entry is not None:
                entries.append(entry)
        if self.spec.trim is not None:
            entries = self.spec.trim(entries)
        return entries, meta.get("continue") or None, rv

    def _list_done(self, entries: list[Entry], rv: str) -> None:
        self.resource_version = rv
        self.lists += 1
        self.sink(StoreEvent.replace(self.spec.kind, self.spec.source, entries))

    # ----------------------------------------------------------------- watch
    def _watch_query(self, rv: str | None = None) -> tuple[dict[str, Any], float]:
        """The watch's query (from `rv`, else the last seen version) and how long one read may wait."""
        cfg = self.config
        # Spread reconnects of many informers (and many consoles) over time.
        timeout = int(cfg.watch_timeout * (0.8 + 0.2 * random.random())) or 1
        query = {**self._query(), "watch": "true", "resourceVersion": rv or self.resource_version,
                 "allowWatchBookmarks": "true", "timeoutSeconds": timeout}
        # Each read waits at most the silence bound: a stream with nothing to say still sends
        # bookmarks, so a longer silence means it is dead.
        return query, min(timeout + 30, cfg.silence_bound)

    def _opened(self, stream: Any) -> bool:
        """A watch answered: it is the one `suspect` and `stop` close. False: stopped meanwhile."""
        with self._lock:
            self._stream = stream
            self._watching = not self._stop.is_set()
            if self._watching:
                self._state(SourceState.LIVE)
            return self._watching

    def _closed(self) -> None:
        with self._lock:
            self._stream = None
            self._watching = False

    def _watch(self) -> None:
        stream, self._early = self._early, None  # opened during the list, from the list's version
        if stream is None:
            query, read_timeout = self._watch_query()
            stream = Stream(self.api, self.spec.path, query, timeout=(self.config.connect_timeout, read_timeout))
        try:
            if not self._opened(stream):
                return
            for ev in stream:
                if self._stop.is_set():
                    return
                self._handle(ev)
        finally:
            self._closed()
            stream.close()

    def _handle(self, ev: Any) -> None:
        self.delivered_at = time.monotonic()
        if not isinstance(ev, dict):
            return
        typ = ev.get("type")
        obj = ev.get("object")
        if not isinstance(obj, dict):
            return
        if typ == "ERROR":
            code = obj.get("code")
            if code == 410:
                raise Gone()
            raise ApiError(int(code) if isinstance(code, int) else 500, str(obj.get("reason") or ""),
                           str(obj.get("message") or ""), causes=status_causes(obj))
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        rv = meta.get("resourceVersion")
        if typ == "BOOKMARK":
            if rv:
                self.resource_version = str(rv)
            self._state(SourceState.LIVE, ok=True)
            return
        key = object_key(obj)
        if key is None:
            self._skip(obj, "metadata.name is missing")
        elif typ in ("ADDED", "MODIFIED"):
            entry = self._entry(obj)
            if entry is not None:
                self.sink(StoreEvent.upsert(self.spec.kind, self.spec.source, entry))
                if entry.obj is None:
                    self._state(SourceState.LIVE)  # publishes the new skipped count
            elif self.spec.keep is not None:
                # It no longer passes the client-side filter: forget our copy.
                self.sink(StoreEvent.delete(self.spec.kind, self.spec.source, key))
        elif typ == "DELETED":
            self.sink(StoreEvent.delete(self.spec.kind, self.spec.source, key))
        if rv:
            self.resource_version = str(rv)

    # ----------------------------------------------------------------- entries
    def _entry(self, raw: Any) -> Entry | None:
        if not isinstance(raw, dict):
            self._skip(raw, "not a JSON object")
            return None
        key = object_key(raw)
        if key is None:
            self._skip(raw, "metadata.name is missing")
            return None
        if self.spec.keep is not None and not self.spec.keep(raw):
            return None
        raw.setdefault("apiVersion", self.spec.api_version)
        raw.setdefault("kind", self.spec.api_kind)
        meta = raw["metadata"]
        uid, rv = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        if self.spec.parse is None:
            return Entry(key, None, raw, uid, rv)  # the wire dict is the object
        try:
            obj = self.spec.parse(raw)
        except Exception as e:  # KueueParseError, or a parser bug: the object degrades, we go on
            self.skipped += 1
            _log.warning("%s: skipping malformed %s %s/%s: %s", self.spec.source, self.spec.api_kind,
                         key[0], key[1], e)
            return Entry(key, raw, None, uid, rv, error=str(e) or type(e).__name__)
        return Entry(key, None, obj, uid, rv)

    def _skip(self, raw: Any, why: str) -> None:
        self.skipped += 1
        _log.warning("%s: skipping an object: %s", self.spec.source, why)
