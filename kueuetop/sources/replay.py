"""Replay a recording: a store rebuilt as the recorded one was at a chosen moment.

`Recording.open(path)` reads the header and indexes the frames (their heads only, plus a CRC
check); `Replay(recording).seek(t)` loads the last keyframe at or before `t` into a fresh store
and applies the records after it up to `t`, through the same store methods the live path used
(objects are parsed by the same parsers, the store's clock reads the recorded times). Moving
forward applies only the records in between; moving back starts again from a keyframe.

Nothing here talks to a cluster: a replay never writes anywhere.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.sources.informer import object_key
from kueuetop.sources.recording_format import (
    DATA,
    HEADER,
    KEYFRAME,
    FrameInfo,
    RecordingError,
    check_header,
    read_payload,
    scan,
)
from kueuetop.store import Entry, QueuePosition, SourceState, SourceStatus, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.events import Op

WIRE_KINDS = frozenset({K.EVENTS})  # kinds the live path keeps unparsed (sources/kube.py)


@dataclass
class Recording:
    """An open recording: its header and frame index (re-scanned by `refresh` as it grows)."""

    path: str
    header: dict[str, Any]
    frames: list[FrameInfo]
    end: int
    torn: str = ""
    _file: BinaryIO | None = field(default=None, repr=False)

    @classmethod
    def open(cls, path: str) -> Recording:
        name = os.path.basename(path) or path
        try:
            f = open(path, "rb")  # noqa: SIM115 — kept open for seeks, closed by close()
        except OSError as exc:
            raise RecordingError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            sc = scan(f, name)
            if not sc.frames or sc.frames[0].type != HEADER:
                raise RecordingError(f"{name} is truncated: it has no complete header")
            header = check_header(read_payload(f, sc.frames[0], name), name)
        except BaseException:
            f.close()
            raise
        return cls(path, header, sc.frames, sc.end, sc.torn, f)

    @property
    def name(self) -> str:
        return os.path.basename(self.path) or self.path

    def refresh(self) -> bool:
        """Index frames written since (a recording still being written); True when some were."""
        before = len(self.frames)
        sc = scan(self._f, self.name, self.end, self.frames)
        self.end, self.torn = sc.end, sc.torn
        return len(self.frames) > before

    @property
    def _f(self) -> BinaryIO:
        assert self._file is not None
        return self._file

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def start(self) -> float:
        return float(self.header.get("start") or (self.frames[0].t0 if self.frames else 0.0))

    @property
    def end_time(self) -> float:
        return max((fr.t1 for fr in self.frames), default=self.start)

    def payload(self, frame: FrameInfo) -> Any:
        return read_payload(self._f, frame, self.name)

    def records(self, first: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
        """(frame index, record) of the data frames from frame `first` on."""
        for i in range(first, len(self.frames)):
            if self.frames[i].type == DATA:
                for rec in self.payload(self.frames[i]):
                    yield i, rec


@dataclass(frozen=True)
class Checkpoint:
    """A replayed store's state kept in memory (parsed entries shared with the store, not copied)."""

    t: float  # the last record applied
    next: tuple[int, int]  # (frame, record) to apply next
    objects: tuple[tuple[str, str, bool, tuple[Entry, ...]], ...]  # (kind, source, synced, entries)
    positions: tuple[tuple[str, tuple[tuple[tuple[str, str], QueuePosition], ...]], ...]
    gpu_source: str
    gpus: tuple[GpuSample, ...]
    sources: tuple[SourceStatus, ...]


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Replay:
    """A store as the recorded one was at `self.at` (after `seek`)."""

    def __init__(self, recording: Recording, *, checkpoint_bytes: int = 0) -> None:
        """`checkpoint_bytes`: while moving forward, keep the store's state in memory after every
        this many bytes of data frames (0: none), so later seeks back start from the nearest one
        instead of a keyframe in the file (no decoding or parsing: the entries are shared)."""
        self.recording = recording
        self.gpu_fields = [str(f) for f in recording.header.get("gpuFields") or ()]
        self._clock = _Clock(recording.start)
        self.store = Store(clock=self._clock)
        self.at = float("-inf")
        self._next = (0, 0)  # (frame index, record index) of the next record to apply
        self._parse_cache = ParseCache()
        self.checkpoint_bytes = checkpoint_bytes
        self.checkpoints: list[Checkpoint] = []
        self._since_checkpoint = 0

    # ------------------------------------------------------------------ seeking
    def seek(self, t: float) -> Store:
        """The store at moment `t` (every record with time <= t applied); returns `self.store`."""
        frames = self.recording.frames
        kf = max((i for i, fr in enumerate(frames) if fr.type == KEYFRAME and fr.t0 <= t), default=None)
        cp = max((c for c in self.checkpoints if c.t <= t), key=lambda c: c.next, default=None)
        base = max((kf + 1, 0) if kf is not None else (0, 0), cp.next if cp is not None else (0, 0))
        if t < self.at or base > self._next:  # back in time, or a shortcut ahead of where we are
            self._reset()
            if cp is not None and cp.next >= base:
                self._restore(cp)
            elif kf is not None:
                self._load_keyframe(self.recording.payload(frames[kf]))
                self._next = (kf + 1, 0)
        self._apply_until(t)
        self.at = t
        self._clock.t = t
        return self.store

    def seek_forward(self, t: float) -> Store:
        """Apply the records up to `t` to the same store (no keyframe jump, which would start a new
        store): for one pass from start to end whose subscribers must see every change."""
        self._apply_until(t)
        self.at = max(self.at, t)
        self._clock.t = max(self._clock.t, t)
        return self.store

    @property
    def clock_time(self) -> float:
        """The recorded time of the record being applied (or of the moment sought)."""
        return self._clock.t

    def _reset(self) -> None:
        self._clock.t = self.recording.start
        self.store = Store(clock=self._clock)
        self._next = (0, 0)
        self.at = float("-inf")

    def _apply_until(self, t: float) -> None:
        frames = self.recording.frames
        fi, ri = self._next
        while fi < len(frames):
            fr = frames[fi]
            if fr.type != DATA:
                fi, ri = fi + 1, 0
                continue
            if fr.t0 > t:
                break
            recs = self.recording.payload(fr)
            while ri < len(recs):
                rec = recs[ri]
                rt = float(rec.get("t", 0.0))
                if rt > t:
                    self._next = (fi, ri)
                    return
                self._apply(rec)
                ri += 1
            fi, ri = fi + 1, 0
            if self.checkpoint_bytes:
                self._since_checkpoint += fr.length
                if self._since_checkpoint >= self.checkpoint_bytes and \
                        all(c.next < (fi, 0) for c in self.checkpoints):
                    self._since_checkpoint = 0
                    self.checkpoints.append(self._capture((fi, 0), fr.t1))
        self._next = (fi, ri)

    # ------------------------------------------------------------------ applying records
    def _apply(self, rec: dict[str, Any]) -> None:
        self._clock.t = float(rec.get("t", self._clock.t))
        op = rec.get("op")
        if op == "batch":
            events = [ev for e in rec.get("events") or () if (ev := self._event(e)) is not None]
            if events:
                self.store.apply_batch(events)
        elif op == "gpus":
            self.store.put_gpu_samples(self._samples(rec.get("samples") or ()), float(rec.get("at") or 0.0),
                                       str(rec.get("source") or ""))
        elif op == "source":
            st = _status(rec.get("status"))
            if st is not None:
                self.store.put_source_status(st)

    def _entry(self, kind: str, raw: Any, wire: bool) -> Entry | None:
        if not isinstance(raw, dict):
            return None
        key = object_key(raw)
        if key is None:
            return None
        meta = raw["metadata"]
        uid, rv = str(meta.get("uid") or ""), str(meta.get("resourceVersion") or "")
        if wire or kind in WIRE_KINDS:
            return Entry(key, None, raw, uid, rv)
        try:
            return Entry(key, None, parse_object(raw, self._parse_cache), uid, rv)
        except Exception as e:  # unparseable when recorded too: kept as its wire dict, as live
            return Entry(key, raw, None, uid, rv, error=str(e) or type(e).__name__)

    def _event(self, e: dict[str, Any]) -> StoreEvent | None:
        op, kind, source = e.get("op"), str(e.get("kind") or ""), str(e.get("source") or "")
        wire = bool(e.get("wire"))
        if op == "upsert":
            entry = self._entry(kind, e.get("obj"), wire)
            if entry is None:
                return None
            at = e.get("at")
            return StoreEvent(Op.UPSERT, kind, source, entry=entry, at=float(at) if at is not None else None)
        if op == "delete":
            key = e.get("key") or ("", "")
            return StoreEvent.delete(kind, source, (str(key[0]), str(key[1])))
        if op == "replace":
            entries = [x for raw in e.get("objs") or () if (x := self._entry(kind, raw, wire)) is not None]
            return StoreEvent.replace(kind, source, entries)
        if op == "positions":
            return StoreEvent(Op.POSITIONS, K.POSITIONS, source, key=("", str(e.get("cq") or "")),
                              positions=_positions(str(e.get("cq") or ""), e.get("items") or ()))
        return None

    def _samples(self, rows: Any) -> list[GpuSample]:
        known = set(GpuSample.__dataclass_fields__)
        out = []
        for row in rows:
            kw = {f: v for f, v in zip(self.gpu_fields, row, strict=False) if f in known}
            try:
                out.append(GpuSample(**kw))
            except TypeError:
                continue
        return out

    # ------------------------------------------------------------------ checkpoints
    def _capture(self, next_: tuple[int, int], t: float) -> Checkpoint:
        st = self.store
        statuses = st.sources()
        groups: list[tuple[str, str, bool, tuple[Entry, ...]]] = []
        for kind in OBJECT_KINDS:
            entries, owners = st.entries(kind), st.owners(kind)
            by_source: dict[str, list[Entry]] = {}
            for key, src in owners.items():
                if key in entries:
                    by_source.setdefault(src, []).append(entries[key])
            groups.extend((kind, src, st.has_synced(src), tuple(es)) for src, es in sorted(by_source.items()))
        positions = tuple((k[1], tuple(sorted(st.positions(k[1]).items()))) for k in st.keys(K.CLUSTER_QUEUES))
        gpu_source = next((n for n in sorted(statuses) if n.startswith("gpu/")), "gpu/scrape")
        return Checkpoint(t, next_, tuple(groups), tuple((cq, p) for cq, p in positions if p),
                          gpu_source, tuple(st.gpus().values()), tuple(statuses.values()))

    def _restore(self, cp: Checkpoint) -> None:
        self._clock.t = cp.t
        events: list[StoreEvent] = []
        for kind, source, synced, entries in cp.objects:
            if synced:
                events.append(StoreEvent.replace(kind, source, entries))
            else:
                events.extend(StoreEvent.upsert(kind, source, e) for e in entries)
        events.extend(StoreEvent(Op.POSITIONS, K.POSITIONS, "visibility", key=("", cq), positions=p)
                      for cq, p in cp.positions)
        if events:
            self.store.apply_batch(events)
        if cp.gpus:
            self.store.put_gpu_samples(list(cp.gpus), cp.t, cp.gpu_source)
        for st in cp.sources:
            self.store.put_source_status(st)
        self._next = cp.next

    def _load_keyframe(self, kf: dict[str, Any]) -> None:
        self._clock.t = float(kf.get("t", self._clock.t))
        synced = set(kf.get("synced") or ())
        events: list[StoreEvent] = []
        for kind, source, wire, objs in kf.get("objects") or ():
            entries = [x for raw in objs if (x := self._entry(kind, raw, bool(wire))) is not None]
            if source in synced:
                events.append(StoreEvent.replace(kind, source, entries))
            else:
                events.extend(StoreEvent.upsert(kind, source, x) for x in entries)
        for cq, items in (kf.get("positions") or {}).items():
            events.append(StoreEvent(Op.POSITIONS, K.POSITIONS, "visibility", key=("", cq),
                                     positions=_positions(cq, items)))
        if events:
            self.store.apply_batch(events)
        for source, rows in (kf.get("gpus") or {}).items():
            self.store.put_gpu_samples(self._samples(rows), self._clock.t, source)
        for raw in kf.get("sources") or ():
            st = _status(raw)
            if st is not None:
                self.store.put_source_status(st)


def _positions(cq: str, items: Any) -> tuple[tuple[tuple[str, str], QueuePosition], ...]:
    out = []
    for it in items:
        try:
            ns, name, in_cq, in_lq, lq, prio = it
            out.append(((str(ns), str(name)), QueuePosition(cq, int(in_cq), int(in_lq), str(lq), int(prio))))
        except (TypeError, ValueError):
            continue
    return tuple(out)


def _status(raw: Any) -> SourceStatus | None:
    if not isinstance(raw, dict) or not raw.get("name"):
        return None
    try:
        state = SourceState(raw.get("state"))
    except ValueError:
        state = SourceState.ERROR

    def num(v: Any) -> float | None:
        return float(v) if isinstance(v, (int, float)) else None
    return SourceStatus(str(raw["name"]), state, str(raw.get("message") or ""), num(raw.get("lastOk")),
                        num(raw.get("since")), num(raw.get("staleAfter")), int(raw.get("skipped") or 0))


OBJECT_KINDS = (K.NAMESPACES, K.PRIORITY_CLASSES, K.RESOURCE_FLAVORS, K.COHORTS, K.ADMISSION_CHECKS,
                K.PROVISIONING_CONFIGS, K.CLUSTER_QUEUES, K.LOCAL_QUEUES, K.WORKLOADS, K.PROVISIONING_REQUESTS,
                K.NODES, K.PODS, K.EVENTS)


def sync_store(target: Store, source: Store, gpu_source: str = "gpu/scrape") -> None:
    """Make `target` (the console's store, whose views subscribe to it) hold what `source` (a
    replay's store at some moment) holds: one batch of relists per source, then GPUs and source
    states. Unchanged objects (same uid and resourceVersion) are left alone by the store, so a
    small step is a small change for the views."""
    events: list[StoreEvent] = []
    for kind in OBJECT_KINDS:
        have, want = target.owners(kind), source.owners(kind)
        entries = source.entries(kind)
        by_source: dict[str, list[Entry]] = {s: [] for s in set(have.values()) | set(want.values())}
        for key, src in want.items():
            if key in entries:
                by_source[src].append(entries[key])
        events.extend(StoreEvent.replace(kind, src, es) for src, es in sorted(by_source.items()))
    cqs = {k[1] for k in target.keys(K.CLUSTER_QUEUES)} | {k[1] for k in source.keys(K.CLUSTER_QUEUES)}
    for cq in sorted(cqs):
        want_pos = source.positions(cq)
        if want_pos != target.positions(cq):
            events.append(StoreEvent(Op.POSITIONS, K.POSITIONS, "visibility", key=("", cq),
                                     positions=tuple(sorted(want_pos.items()))))
    if events:
        target.apply_batch(events)
    have_gpus, want_gpus = target.gpus(), source.gpus()
    changed = {s.node for key, s in want_gpus.items() if have_gpus.get(key) != s}
    changed |= {node for (node, gpu) in have_gpus if (node, gpu) not in want_gpus and
                any(k[0] == node for k in want_gpus)}
    if changed:
        samples = [s for s in want_gpus.values() if s.node in changed]
        target.put_gpu_samples(samples, max((s.at for s in samples), default=0.0), gpu_source)
    for st in source.sources().values():
        target.put_source_status(st)
