"""Record what the store receives, as it receives it, into a recording file (recording_format.py).

The recorder taps the one live path (the store's `tap`, store/state.py): every batch the
informers' applier writes, every GPU poll, every change of a source's state, in the order the
store applied them. Objects go in as their (pruned, recording_privacy.py) wire JSON, so a replay
parses them with the same parsers as the live path; the store keeps no wire dicts of parsed
objects, so `WireKeeper` holds each one from its parse (informer thread) until the store takes the
parsed object (applier thread).

Records (the JSON list of a D frame; `t`: the store's clock when it applied the write):

    {"t", "op": "batch", "events": [e...]}          e is one of
        {"op": "upsert", "kind", "source", "obj", "wire"?, "at"?}
        {"op": "delete", "kind", "source", "key": [namespace, name]}
        {"op": "replace", "kind", "source", "objs": [obj...], "wire"?}
        {"op": "positions", "source", "cq", "items": [[namespace, name, inClusterQueue,
                                                       inLocalQueue, localQueue, priority]...]}
      ("wire": the kind is kept unparsed, as Events are)
    {"t", "op": "gpus", "source", "at", "samples": [[values in the header's gpuFields order]...]}
    {"t", "op": "source", "status": {name, state, message, lastOk, since, staleAfter, skipped}}

A K frame (keyframe, every `keyframe_every` seconds) holds the whole state at its time, so a
replay seeks without reading from the start: {"t", "objects": [[kind, source, wire, [obj...]]...],
"synced": [source...], "positions": {cq: items}, "gpus": {source: [sample...]},
"sources": [status...]}.

The writer runs on its own thread: the tap only appends to a queue (it runs under the store's
lock); serialising, compressing and writing happen there, a frame every `flush_every` seconds.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import IO, Any

from kueuetop import __version__
from kueuetop.kueue.gpu import GpuSample
from kueuetop.sources.recording_format import DATA, FORMAT, HEADER, KEYFRAME, MAGIC, VERSION, encode_frame
from kueuetop.sources.recording_privacy import keep_kind, prune
from kueuetop.store import Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.events import Entry, Op
from kueuetop.store.sources import SourceStatus

_log = logging.getLogger(__name__)

GPU_FIELDS = tuple(f.name for f in dataclasses.fields(GpuSample))
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class WireKeeper:
    """Each parsed object's pruned wire dict, from its parse until the recorder takes it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # id(obj) → [obj, wire, pending count]: the object is held so its id is not reused; a
        # ParseCache may hand out one object for two parses, hence the count.
        self._held: dict[int, list[Any]] = {}

    def wrap(self, parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
        def parse_keeping(raw: Any) -> Any:
            obj = parse(raw)
            wire = prune(raw)
            with self._lock:
                held = self._held.get(id(obj))
                if held is None:
                    self._held[id(obj)] = [obj, wire, 1]
                else:
                    held[1], held[2] = wire, held[2] + 1
            return obj
        return parse_keeping

    def take(self, obj: Any) -> dict[str, Any] | None:
        with self._lock:
            held = self._held.get(id(obj))
            if held is None:
                return None
            held[2] -= 1
            if held[2] <= 0:
                del self._held[id(obj)]
            return held[1]

    def __len__(self) -> int:
        with self._lock:
            return len(self._held)


def status_json(st: SourceStatus) -> dict[str, Any]:
    return {"name": st.name, "state": st.state.value, "message": st.message, "lastOk": st.last_ok,
            "since": st.since, "staleAfter": st.stale_after, "skipped": st.skipped}


def _sample(s: GpuSample) -> list[Any]:
    return [getattr(s, f) for f in GPU_FIELDS]


class _Mirror:
    """The recorded state (as JSON text per object), kept by the writer for keyframes; follows the
    store's rules for what a write replaces (store/state.py)."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[tuple[str, str], tuple[str, str, bool]]] = {}  # kind → key → (source, json, wire)
        self.groups: set[tuple[str, str, bool]] = set()  # (kind, source, wire) listed at least once
        self.positions: dict[str, list[list[Any]]] = {}
        self.gpus: dict[tuple[str, str], tuple[str, list[Any]]] = {}  # (node, gpu) → (source, sample)

    def upsert(self, kind: str, source: str, key: tuple[str, str], text: str, wire: bool) -> None:
        self.objects.setdefault(kind, {})[key] = (source, text, wire)

    def delete(self, kind: str, key: tuple[str, str]) -> None:
        if self.objects.get(kind, {}).pop(key, None) is not None:
            self._gone(kind, key)

    def replace(self, kind: str, source: str, items: list[tuple[tuple[str, str], str]], wire: bool) -> None:
        self.groups.add((kind, source, wire))
        objs = self.objects.setdefault(kind, {})
        fresh = {k for k, _ in items}
        for key in [k for k, v in objs.items() if v[0] == source and k not in fresh]:
            del objs[key]
            self._gone(kind, key)
        for key, text in items:
            objs[key] = (source, text, wire)

    def _gone(self, kind: str, key: tuple[str, str]) -> None:
        if kind == K.NODES:
            for gkey in [g for g in self.gpus if g[0] == key[1]]:
                del self.gpus[gkey]
        elif kind == K.WORKLOADS:
            for items in self.positions.values():
                items[:] = [i for i in items if (i[0], i[1]) != key]

    def put_gpus(self, source: str, samples: list[list[Any]]) -> None:
        node_i, gpu_i = GPU_FIELDS.index("node"), GPU_FIELDS.index("gpu")
        nodes = {s[node_i] for s in samples}
        fresh = {(s[node_i], s[gpu_i]) for s in samples}
        for gkey in [g for g, (src, _) in self.gpus.items() if g[0] in nodes and src == source and g not in fresh]:
            del self.gpus[gkey]
        for s in samples:
            self.gpus[(s[node_i], s[gpu_i])] = (source, s)

    def keyframe(self, t: float, sources: list[dict[str, Any]], synced: list[str]) -> str:
        groups: dict[tuple[str, str, bool], list[str]] = {g: [] for g in self.groups}
        for kind, objs in self.objects.items():
            for source, text, wire in objs.values():
                groups.setdefault((kind, source, wire), []).append(text)
        parts = [f"[{_dumps(kind)},{_dumps(source)},{_dumps(wire)},[{','.join(texts)}]]"
                 for (kind, source, wire), texts in sorted(groups.items())]
        gpus: dict[str, list[list[Any]]] = {}
        for source, s in self.gpus.values():
            gpus.setdefault(source, []).append(s)
        return (f'{{"t":{_dumps(t)},"objects":[{",".join(parts)}],"synced":{_dumps(synced)},'
                f'"positions":{_dumps(self.positions)},"gpus":{_dumps(gpus)},"sources":{_dumps(sources)}}}')


class Recorder:
    """A StoreTap that writes a recording of `store` to `path` (a new file) until `stop()`."""

    def __init__(self, path: str, store: Store, keeper: WireKeeper, *, server: str = "", context: str = "",
                 kueue_api: str = "", flush_every: float = 1.0, keyframe_every: float = 300.0,
                 keyframe_bytes: int = 16_000_000, clock: Callable[[], float] = time.time) -> None:
        """A keyframe every `keyframe_every` seconds or `keyframe_bytes` of data frames, whichever
        comes first: a busy cluster's replay then never reads more than that from a keyframe."""
        self.path = path
        self.store = store
        self.keeper = keeper
        self.flush_every = flush_every
        self.keyframe_every = keyframe_every
        self.keyframe_bytes = keyframe_bytes
        self._since_keyframe = 0  # bytes of data frames written since the last keyframe (writer thread)
        self._want_keyframe = False  # set by the writer, read by the tap
        self._clock = clock
        self._header = {"format": FORMAT, "version": VERSION, "kueuetop": __version__, "server": server,
                        "context": context, "kueueApi": kueue_api, "start": clock(), "gpuFields": list(GPU_FIELDS)}
        self._q: queue.SimpleQueue[tuple[Any, ...] | None] = queue.SimpleQueue()
        self._mirror = _Mirror()
        self._file: IO[bytes] | None = None
        self._thread = threading.Thread(target=self._run, name="kueuetop-recorder", daemon=True)
        self._keyframe_at = 0.0
        self._stopped = threading.Event()
        self.missing = 0  # parsed objects whose wire dict was not kept (not recorded; logged)
        self.frames = 0
        self.bytes = 0
        self.error = ""  # why writing stopped ("" while all is well)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Recorder:
        """Create the file (never over an existing one), write the header and attach to the store."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._file = os.fdopen(fd, "wb")
        self._write(MAGIC)
        t = self._header["start"]
        self._write(encode_frame(HEADER, t, t, _dumps(self._header).encode()))
        # The first keyframe, then the tap: attach before the sources start (what the store
        # already holds is not in the recording; the keyframe says what its sources were).
        self._keyframe_at = self._clock()
        self._q.put(("keyframe", self._keyframe_at, *self._store_sources()))
        self.store.tap = self
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Detach, write what is queued and close the file."""
        if self.store.tap is self:
            self.store.tap = None
        self._q.put(None)
        self._thread.join(timeout)
        if self._file is not None and not self._thread.is_alive():
            self._file.close()

    # ------------------------------------------------------------------ the tap (store lock held)
    def batch(self, events: Sequence[StoreEvent], now: float) -> None:
        self._maybe_keyframe(now)  # the state before this write: the write follows it in the file
        out: list[tuple[Any, ...]] = []
        for ev in events:
            if not keep_kind(ev.kind):
                continue
            if ev.op is Op.UPSERT and ev.entry is not None:
                got = self._wire(ev.entry)
                if got is not None:
                    out.append(("upsert", ev.kind, ev.source, ev.entry.key, got[0], got[1], ev.at))
            elif ev.op is Op.DELETE and ev.key is not None:
                out.append(("delete", ev.kind, ev.source, ev.key))
            elif ev.op is Op.REPLACE:
                wired = [(e.key, *w) for e in ev.entries if (w := self._wire(e)) is not None]
                out.append(("replace", ev.kind, ev.source, wired))
            elif ev.op is Op.POSITIONS:
                items = [[k[0], k[1], p.in_cluster_queue, p.in_local_queue, p.local_queue, p.priority]
                         for k, p in ev.positions]
                out.append(("positions", ev.source, ev.key[1] if ev.key else "", items))
        if out:
            self._q.put(("batch", now, out))

    def gpus(self, samples: Sequence[GpuSample], at: float, source: str, now: float) -> None:
        self._maybe_keyframe(now)
        self._q.put(("gpus", now, source, at, [_sample(s) for s in samples]))

    def source(self, status: SourceStatus, now: float) -> None:
        self._q.put(("source", now, status_json(status)))

    def _wire(self, entry: Entry) -> tuple[dict[str, Any], bool] | None:
        if isinstance(entry.obj, dict):
            return entry.obj, True  # a kind kept as its wire dict (Events): pruned by the writer
        if entry.obj is None:
            return (entry.raw, False) if entry.raw is not None else None
        wire = self.keeper.take(entry.obj)
        if wire is None:
            self.missing += 1
            _log.warning("recorder: no wire copy of %s/%s (not recorded)", *entry.key)
            return None
        return wire, False

    def _store_sources(self) -> tuple[list[dict[str, Any]], list[str]]:
        sts = self.store.sources()
        return [status_json(s) for _, s in sorted(sts.items())], sorted(n for n in sts if self.store.has_synced(n))

    def _maybe_keyframe(self, now: float) -> None:
        if now - self._keyframe_at >= self.keyframe_every or self._want_keyframe:
            self._keyframe_at = now
            self._want_keyframe = False
            self._q.put(("keyframe", now, *self._store_sources()))

    # ------------------------------------------------------------------ the writer thread
    def _run(self) -> None:
        pending: list[str] = []
        t0 = t1 = 0.0
        deadline = time.monotonic() + self.flush_every
        while True:
            try:
                item = self._q.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                item = ()
            if item:
                if item[0] == "keyframe":
                    self._flush(pending, t0, t1)
                    pending = []
                    self._since_keyframe = 0
                    self._emit(encode_frame(KEYFRAME, item[1], item[1],
                                            self._mirror.keyframe(item[1], item[2], item[3]).encode()))
                else:
                    if not pending:
                        t0 = item[1]
                    t1 = item[1]
                    pending.append(self._record(item))
            if item is None or time.monotonic() >= deadline:
                self._flush(pending, t0, t1)
                pending = []
                deadline = time.monotonic() + self.flush_every
            if item is None:
                self._stopped.set()
                return

    def _flush(self, pending: list[str], t0: float, t1: float) -> None:
        if pending:
            frame = encode_frame(DATA, t0, t1, ("[" + ",".join(pending) + "]").encode())
            self._emit(frame)
            self._since_keyframe += len(frame)
            if self._since_keyframe >= self.keyframe_bytes:
                self._want_keyframe = True

    def _emit(self, frame: bytes) -> None:
        if self.error:
            return
        try:
            self._write(frame)
            self.frames += 1
        except OSError as exc:  # disk full, file removed: say so once, keep the console running
            self.error = f"cannot write {self.path}: {exc.strerror or exc}"
            _log.error("recorder: %s", self.error)

    def _write(self, data: bytes) -> None:
        assert self._file is not None
        self._file.write(data)
        self._file.flush()  # a frame is readable (and survives a crash of this process) once written
        self.bytes += len(data)

    def _record(self, item: tuple[Any, ...]) -> str:
        op, t = item[0], item[1]
        m = self._mirror
        if op == "gpus":
            _, _, source, at, samples = item
            m.put_gpus(source, samples)
            return _dumps({"t": t, "op": "gpus", "source": source, "at": at, "samples": samples})
        if op == "source":
            return _dumps({"t": t, "op": "source", "status": item[2]})
        events: list[str] = []
        for ev in item[2]:
            kind = ev[0]
            if kind == "upsert":
                _, k, source, key, raw, wire, at = ev
                text = _dumps(prune(raw))
                m.upsert(k, source, key, text, wire)
                extra = (',"wire":true' if wire else "") + (f',"at":{_dumps(at)}' if at is not None else "")
                events.append(f'{{"op":"upsert","kind":{_dumps(k)},"source":{_dumps(source)},"obj":{text}{extra}}}')
            elif kind == "delete":
                _, k, source, key = ev
                m.delete(k, key)
                events.append(_dumps({"op": "delete", "kind": k, "source": source, "key": list(key)}))
            elif kind == "replace":
                _, k, source, wired = ev
                wire = bool(wired) and all(w for _, _, w in wired)
                texts = [(key, _dumps(prune(raw))) for key, raw, _ in wired]
                m.replace(k, source, texts, wire)
                extra = ',"wire":true' if wire else ""
                events.append(f'{{"op":"replace","kind":{_dumps(k)},"source":{_dumps(source)},'
                              f'"objs":[{",".join(t_ for _, t_ in texts)}]{extra}}}')
            else:  # positions
                _, source, cq, items = ev
                m.positions[cq] = items
                events.append(_dumps({"op": "positions", "source": source, "cq": cq, "items": items}))
        return f'{{"t":{_dumps(t)},"op":"batch","events":[{",".join(events)}]}}'
