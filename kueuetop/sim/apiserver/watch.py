"""Watch streams: one JSON event per line over chunked HTTP."""

from __future__ import annotations

import queue
import time
from collections.abc import Callable
from typing import Any, Protocol

from kueuetop.sim.apiserver import codec, tables
from kueuetop.sim.apiserver.faults import Faults
from kueuetop.sim.apiserver.resources import Ctx, Resources
from kueuetop.sim.apiserver.status import bad_request, parse_rv, status_body, too_large_resource_version
from kueuetop.sim.storage.objectstore import Expired, ObjectStore, Watcher, WatchEvent

Obj = dict[str, Any]
DEFAULT_TIMEOUT = 1800.0
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


class EventSink(Protocol):
    def start(self, content_type: str, headers: dict[str, str]) -> None: ...
    def send(self, data: bytes) -> None: ...
    def end(self) -> None: ...


class WatchStream:
    def __init__(self, ctx: Ctx, store: ObjectStore, resources: Resources, faults: Faults,
                 bookmark_interval: float, register: Callable[[Watcher], None],
                 unregister: Callable[[Watcher], None]) -> None:
        self.ctx = ctx
        self.store = store
        self.resources = resources
        self.faults = faults
        self.bookmark_interval = bookmark_interval
        self.register = register
        self.unregister = unregister
        self.kind = ctx.route.kind
        assert self.kind is not None
        self.version = ctx.route.version
        self.sent_headers = False

    def _object(self, obj: Obj) -> Obj:
        assert self.kind is not None
        out = codec.to_version(self.kind, self.version, obj)
        if self.ctx.accept.table:
            t = tables.table(self.kind, self.version, [out], self.store.now(),
                             resource_version=out.get("metadata", {}).get("resourceVersion", ""),
                             include_object=self.ctx.query.get("includeObject", "Metadata"),
                             headers=not self.sent_headers)
            self.sent_headers = True
            return t
        return out

    def _bookmark(self, rv: int, initial_end: bool = False) -> Obj:
        assert self.kind is not None
        meta: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            meta["annotations"] = {INITIAL_EVENTS_END: "true"}
        if self.ctx.accept.table:
            return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
                    "columnDefinitions": [], "rows": []}
        return {"kind": self.kind.kind, "apiVersion": self.kind.api_version(self.version), "metadata": meta}

    def run(self, sink: EventSink) -> None:
        assert self.kind is not None
        q = self.ctx.query
        pred, _ = self.resources._filters(self.ctx, self.kind)
        send_initial = q.get("sendInitialEvents") == "true"
        rv = None if send_initial else parse_rv(q.get("resourceVersion"))
        bookmarks = q.get("allowWatchBookmarks") == "true"
        try:
            timeout = float(q.get("timeoutSeconds") or DEFAULT_TIMEOUT)
        except ValueError:
            raise bad_request(f"invalid timeoutSeconds: {q.get('timeoutSeconds')}") from None
        headers = self.resources._warnings(self.ctx, self.kind)
        content_type = "application/json"
        if rv is not None and rv > self.store.resource_version:
            raise too_large_resource_version(rv, self.store.resource_version)
        try:
            watcher, initial = self.store.watch(self.kind.group, self.kind.plural,
                                                self.ctx.route.namespace or None, rv)
        except Expired as e:
            # Like the watch cache: the stream opens, then one ERROR event says 410.
            sink.start(content_type, headers)
            body = status_body(410, e.message, "Expired")
            sink.send(codec.dumps({"type": "ERROR", "object": body}) + b"\n")
            sink.end()
            return
        self.register(watcher)
        try:
            sink.start(content_type, headers)
            self._stream(sink, watcher, initial, pred, timeout, bookmarks, send_initial)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError, OSError):
            return
        finally:
            self.unregister(watcher)
            watcher.stop()

    def _emit(self, sink: EventSink, etype: str, obj: Obj) -> None:
        sink.send(codec.dumps({"type": etype, "object": self._object(obj)}) + b"\n")

    def _deliver(self, sink: EventSink, ev: WatchEvent, pred: Callable[[Obj], bool] | None) -> None:
        if pred is None:
            self._emit(sink, ev.type, ev.obj)
            return
        new_ok = pred(ev.obj)
        if ev.type == "MODIFIED":
            old_ok = ev.old is not None and pred(ev.old)
            if old_ok and new_ok:
                self._emit(sink, "MODIFIED", ev.obj)
            elif new_ok:
                self._emit(sink, "ADDED", ev.obj)
            elif old_ok:
                self._emit(sink, "DELETED", ev.obj)
        elif new_ok:
            self._emit(sink, ev.type, ev.obj)

    def _stream(self, sink: EventSink, watcher: Watcher, initial: list[WatchEvent],
                pred: Callable[[Obj], bool] | None, timeout: float, bookmarks: bool,
                send_initial: bool) -> None:
        start = time.monotonic()
        deadline = start + timeout
        drop_at = self.faults.watch_deadline(start)
        last_rv = 0
        for ev in initial:
            self._deliver(sink, ev, pred)
            last_rv = max(last_rv, ev.rv)
        if send_initial and bookmarks:
            rv = self._safe_rv(watcher) or last_rv
            sink.send(codec.dumps({"type": "BOOKMARK", "object": self._bookmark(rv, True)}) + b"\n")
        next_bookmark = time.monotonic() + self.bookmark_interval
        while True:
            now = time.monotonic()
            if now >= deadline:
                if bookmarks:
                    rv = self._safe_rv(watcher)
                    if rv is not None:
                        sink.send(codec.dumps({"type": "BOOKMARK", "object": self._bookmark(rv)}) + b"\n")
                break
            if drop_at is not None and now >= drop_at:
                break
            wait = min(deadline - now, 0.5)
            if bookmarks:
                wait = min(wait, max(0.0, next_bookmark - now))
            if drop_at is not None:
                wait = min(wait, max(0.0, drop_at - now))
            try:
                ev = watcher.get(timeout=max(wait, 0.001))
            except queue.Empty:
                if bookmarks and time.monotonic() >= next_bookmark:
                    rv = self._safe_rv(watcher)
                    if rv is not None:
                        sink.send(codec.dumps({"type": "BOOKMARK", "object": self._bookmark(rv)}) + b"\n")
                    next_bookmark = time.monotonic() + self.bookmark_interval
                # Pick up a drop schedule set after the stream started.
                if drop_at is None:
                    drop_at = self.faults.watch_deadline(start)
                continue
            if ev is None:
                break
            self._deliver(sink, ev, pred)
        sink.end()

    def _safe_rv(self, watcher: Watcher) -> int | None:
        """Current version, if nothing for this watcher is still queued (bookmark safety)."""
        return self.store.quiescent_version(watcher)
