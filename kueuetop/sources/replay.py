"""Replay a recording: a store rebuilt as the recorded one was at a chosen moment.

`Recording.open(path)` reads the header and indexes the frames (their heads only, plus a CRC
check); `Replay(recording).seek(t)` loads the last keyframe at or before `t` into a fresh store
and applies the records after it up to `t`, through the same store methods the live path used
(objects are parsed by the same parsers, the store's clock reads the recorded times). Moving
forward applies only the records in between; moving back starts again from a keyframe.

Nothing here talks to a cluster: a replay never writes anywhere.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.parse_cache import ParseCache
from kueuetop.sources.gc_quiet import full_collections_off
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
from kueuetop.store import Changes, Entry, QueuePosition, SourceState, SourceStatus, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.events import Op
from kueuetop.store.state import StoreState

WIRE_KINDS = frozenset({K.EVENTS})  # kinds the live path keeps unparsed (sources/kube.py)
# A checkpoint's swap copies its mappings: about as long per object held as applying half a byte
# of data frames (large: 46k objects in 0.05 s; 192 KB of data frames in 0.5 s).
RESTORE_COST_PER_OBJECT = 0.5
DECODED_FRAMES = 2  # data frames kept decoded
_STARTS = ("start", "here", "checkpoint", "keyframe")


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
    """A replayed store's whole state kept in memory (its mappings copied, the parsed entries
    shared with the store): seeking from it swaps the state in, nothing is parsed or indexed."""

    t: float  # the last record applied
    next: tuple[int, int]  # (frame, record) to apply next
    state: StoreState
    objects: int  # how many it holds (the cost of swapping it in)


class _Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


class Replay:
    """A store as the recorded one was at `self.at` (after `seek`)."""

    def __init__(self, recording: Recording, *, checkpoint_objects: int = 0) -> None:
        """`checkpoint_objects`: while moving forward, keep the store's whole state in memory
        after every this many objects parsed (0: none), so later seeks start from the nearest
        one (swapped in: no decoding, parsing or indexing) instead of a keyframe in the file."""
        self.recording = recording
        self.gpu_fields = [str(f) for f in recording.header.get("gpuFields") or ()]
        self._clock = _Clock(recording.start)
        self.store = Store(clock=self._clock)
        self.at = float("-inf")
        self._next = (0, 0)  # (frame index, record index) of the next record to apply
        self._parse_cache = ParseCache()
        self.checkpoint_objects = checkpoint_objects
        self.checkpoints: list[Checkpoint] = []  # in file order (of `next`)
        self._since_checkpoint = 0
        self._decoded: dict[int, list[Any]] = {}  # the last data frames decoded (a seek often rereads one)
        self._data_before: list[int] = [0]  # data bytes in frames before frame i (seek planning)
        self._frame_records: dict[int, int] = {}  # records in each data frame decoded so far (seek planning)
        self.started_from = ""  # where the last seek started: "start", "here", "checkpoint" or "keyframe"

    # ------------------------------------------------------------------ seeking
    def seek(self, t: float) -> Store:
        """The store at moment `t` (every record with time <= t applied); returns `self.store`.

        Starts from whichever is cheapest: where the store is (moving forward), the latest
        checkpoint at or before `t`, the last keyframe at or before `t`, or the file's start;
        the cost of each is the data bytes left to apply plus, for a keyframe, its own bytes
        (its objects are parsed too) and, for a checkpoint, the copy of its mappings."""
        frames = self.recording.frames
        end = self._frame_at(t)
        plans: list[tuple[float, int, Any]] = []  # (cost, how, what): the first of the cheapest wins
        if t >= self.at:
            plans.append((self._bytes_between(self._next, end), 1, None))
        i = bisect.bisect_right(self.checkpoints, t, key=lambda c: c.t) - 1
        if i >= 0:
            cp = self.checkpoints[i]
            plans.append((RESTORE_COST_PER_OBJECT * cp.objects + self._bytes_between(cp.next, end), 2, cp))
        kf = max((i for i, fr in enumerate(frames) if fr.type == KEYFRAME and fr.t0 <= t), default=None)
        if kf is not None:
            plans.append((frames[kf].length + self._bytes_between((kf + 1, 0), end), 3, kf))
        plans.append((self._bytes_between((0, 0), end), 0, None))
        _, how, arg = min(plans, key=lambda p: p[0])
        self.started_from = _STARTS[how]
        with full_collections_off():
            self._start(how, arg)
            self._apply_until(t)
        self.at = t
        self._clock.t = t
        return self.store

    def _start(self, how: int, arg: Any) -> None:
        frames = self.recording.frames
        if how == 0:
            self._reset()
        elif how == 2:
            self._reset()
            self._clock.t = arg.t
            self.store.thaw(arg.state)
            self._next = arg.next
        elif how == 3:
            self._reset()
            self._load_keyframe(self.recording.payload(frames[arg]))
            self._next = (arg + 1, 0)

    def seek_forward(self, t: float) -> Store:
        """Apply the records up to `t` to the same store (no keyframe jump, which would start a new
        store): for one pass from start to end whose subscribers must see every change."""
        with full_collections_off():
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

    def _frame_at(self, t: float) -> tuple[int, int]:
        """The first data frame starting after `t` (where a seek to `t` stops at the latest)."""
        frames = self.recording.frames
        i = len(frames)
        while i > 0 and (frames[i - 1].type != DATA or frames[i - 1].t0 > t):
            i -= 1
        return (i, 0)

    def _bytes_between(self, a: tuple[int, int], b: tuple[int, int]) -> float:
        """Data bytes from position `a` to `b` (a frame part-applied counts by its records)."""
        return max(0.0, self._data_at(b) - self._data_at(a))

    def _data_at(self, pos: tuple[int, int]) -> float:
        frames, before = self.recording.frames, self._data_before
        while len(before) <= len(frames):
            fr = frames[len(before) - 1]
            before.append(before[-1] + (fr.length if fr.type == DATA else 0))
        fi, ri = pos
        n = self._frame_records.get(fi)
        return before[fi] + (frames[fi].length * ri / n if ri and n else 0.0)

    def _records(self, fi: int) -> list[Any]:
        recs = self._decoded.get(fi)
        if recs is None:
            recs = self.recording.payload(self.recording.frames[fi])
            if not isinstance(recs, list):
                raise RecordingError(f"{self.recording.name} is corrupt at byte {self.recording.frames[fi].offset} "
                                     "(a data frame that is not a list)")
            self._frame_records[fi] = len(recs)
            if len(self._decoded) >= DECODED_FRAMES:
                del self._decoded[next(iter(self._decoded))]
            self._decoded[fi] = recs
        return recs

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
            recs = self._records(fi)
            while ri < len(recs):
                rec = recs[ri]
                rt = float(rec.get("t", 0.0))
                if rt > t:
                    self._next = (fi, ri)
                    return
                parsed = self._apply(rec)
                ri += 1
                if self.checkpoint_objects:
                    self._since_checkpoint += parsed
                    if self._since_checkpoint >= self.checkpoint_objects:
                        self._since_checkpoint = 0
                        self._checkpoint((fi, ri), rt)
            fi, ri = fi + 1, 0
        self._next = (fi, ri)

    def _checkpoint(self, next_: tuple[int, int], t: float) -> None:
        cps = self.checkpoints
        if cps and cps[-1].next >= next_:  # a pass over a stretch that has them already
            return
        state = self.store.freeze().compacted()
        cps.append(Checkpoint(t, next_, state, sum(map(len, state.objects.values()))))

    # ------------------------------------------------------------------ applying records
    def _apply(self, rec: dict[str, Any]) -> int:
        """Apply one record; returns how many objects it parsed (the work a checkpoint saves)."""
        self._clock.t = float(rec.get("t", self._clock.t))
        op = rec.get("op")
        if op == "batch":
            events = [ev for e in rec.get("events") or () if (ev := self._event(e)) is not None]
            if events:
                self.store.apply_batch(events)
            return sum(len(ev.entries) if ev.op is Op.REPLACE else 1 for ev in events)
        elif op == "gpus":
            self.store.put_gpu_samples(self._samples(rec.get("samples") or ()), float(rec.get("at") or 0.0),
                                       str(rec.get("source") or ""))
        elif op == "source":
            st = _status(rec.get("status"))
            if st is not None:
                self.store.put_source_status(st)
        return 0

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


def sync_store(target: Store, source: Store) -> Changes:
    """Make `target` (the console's store, whose views subscribe to it) hold what `source` (a
    replay's store at some moment) holds: a copy of its whole state swapped in, and one
    notification of what differs (entries the two share are the same objects, so a small step
    is a small change for the views, and a jump re-indexes nothing)."""
    return target.adopt(source.freeze())
