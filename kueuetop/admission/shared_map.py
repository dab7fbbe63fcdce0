"""An immutable mapping whose next version shares every part the change did not touch.

The simulator hands the admission engine a snapshot of every Workload at each scheduling
cycle, and keeps the previous one: the engine compares the two to requeue parked workloads
(Kueue's QueueInadmissibleWorkloads). A plain dict copied per snapshot cost 100,000 entries on
`xl`, copied and freed several times per simulated instant, for the few workloads that changed.

Here the entries live in chunks of at most CHUNK keys, in insertion order (a new key goes into
the last chunk), so iterating gives exactly the order a dict would: a changed value keeps its
place, a key deleted and added again goes to the end. `evolve(changes)` copies the list of
chunks and each chunk it writes to; older versions keep theirs, untouched, for whoever still
holds them (another thread included).

Lookups go through one index shared by all versions of a lineage, key → chunk where the key was
put last. A key never deleted lives in one chunk for its whole life, so that answer holds for
every version. A key deleted and added again may sit in another chunk in an older version:
such keys are remembered, and an older version looks for them in every chunk.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

CHUNK = 256  # keys per chunk: a change copies one chunk of this size and the list of chunks
DELETE = object()  # a value in `evolve`'s changes: drop the key


class _Lineage:
    """What all versions grown from one `SharedMap.of` share. Written only by `evolve` on the
    newest version; read by every version (a dict read beside a write is safe in CPython)."""

    __slots__ = ("chunk", "lock", "moved", "newest", "where")

    def __init__(self, chunk: int) -> None:
        self.chunk = chunk
        self.lock = threading.Lock()  # one evolve at a time claims the newest version
        self.where: dict[Any, int] = {}  # key → chunk it was put in last
        self.moved: set[Any] = set()  # keys put in another chunk after a delete
        # The newest version, weakly: a strong reference would make a cycle (each version holds
        # its lineage), and a forecast's forward run, dropped at its end, would then wait for a
        # garbage collection with every workload of its last instant (20 MB on `large`).
        self.newest: weakref.ref[SharedMap] | None = None


class SharedMap(Mapping):
    __slots__ = ("__weakref__", "_chunks", "_len", "_lineage")

    def __init__(self, chunks: list[dict], length: int, lineage: _Lineage) -> None:
        self._chunks, self._len, self._lineage = chunks, length, lineage

    @classmethod
    def of(cls, items: Mapping | None = None, chunk: int = CHUNK) -> SharedMap:
        """A new lineage holding `items`, in their order."""
        lineage = _Lineage(chunk)
        chunks: list[dict] = []
        where = lineage.where
        for k, v in (items or {}).items():
            if not chunks or len(chunks[-1]) >= chunk:
                chunks.append({})
            chunks[-1][k] = v
            where[k] = len(chunks) - 1
        m = cls(chunks, sum(len(c) for c in chunks), lineage)
        lineage.newest = weakref.ref(m)
        return m

    # ------------------------------------------------------------------ reads
    def _find(self, key: Any) -> Any:
        lineage = self._lineage
        i = lineage.where.get(key)
        if i is None:
            return DELETE
        chunks = self._chunks
        if i < len(chunks):
            v = chunks[i].get(key, DELETE)
            if v is not DELETE:
                return v
        if key in lineage.moved:  # an older version may hold it where it was first put
            for chunk in chunks:
                v = chunk.get(key, DELETE)
                if v is not DELETE:
                    return v
        return DELETE

    def __getitem__(self, key: Any) -> Any:
        v = self._find(key)
        if v is DELETE:
            raise KeyError(key)
        return v

    def get(self, key: Any, default: Any = None) -> Any:
        v = self._find(key)
        return default if v is DELETE else v

    def __contains__(self, key: object) -> bool:
        return self._find(key) is not DELETE

    def __iter__(self) -> Iterator:
        for chunk in self._chunks:
            yield from chunk

    def __len__(self) -> int:
        return self._len

    def values(self) -> Iterator:  # type: ignore[override]
        for chunk in self._chunks:
            yield from chunk.values()

    def items(self) -> Iterator:  # type: ignore[override]
        for chunk in self._chunks:
            yield from chunk.items()

    def __repr__(self) -> str:
        return f"SharedMap({self._len} entries in {len(self._chunks)} chunks)"

    # ------------------------------------------------------------------ writes
    def evolve(self, changes: Mapping) -> SharedMap:
        """The next version: `changes` maps keys to new values, or to DELETE. The newest
        version of a lineage grows it; an older one (a what-if replaying an earlier queue
        state, say) starts a lineage of its own from a copy. A map that lost most of its keys
        to deletes starts a new, compact lineage."""
        if not changes:
            return self
        lineage = self._lineage
        with lineage.lock:
            if lineage.newest is not None and lineage.newest() is self:
                m = self._grow(changes)
                lineage.newest = weakref.ref(m)
                return m
        return SharedMap.of(self, lineage.chunk).evolve(changes)

    def _grow(self, changes: Mapping) -> SharedMap:
        lineage = self._lineage
        chunks = list(self._chunks)
        owned: set[int] = set()
        where, moved, chunk = lineage.where, lineage.moved, lineage.chunk
        length = self._len

        def own(i: int) -> dict:
            if i not in owned:
                chunks[i] = dict(chunks[i])
                owned.add(i)
            return chunks[i]

        for k, v in changes.items():
            i = where.get(k)
            present = i is not None and i < len(chunks) and k in chunks[i]
            if v is DELETE:
                if present:
                    del own(i)[k]  # type: ignore[arg-type]
                    length -= 1
                continue
            if present:
                own(i)[k] = v  # type: ignore[arg-type]
                continue
            if i is not None:
                moved.add(k)  # before `where` moves, so a reader never misses it
            if not chunks or len(chunks[-1]) >= chunk:
                chunks.append({})
                owned.add(len(chunks) - 1)
            own(len(chunks) - 1)[k] = v
            where[k] = len(chunks) - 1
            length += 1
        if len(chunks) > 8 and length < len(chunks) * chunk // 4:
            return SharedMap.of(SharedMap(chunks, length, lineage), chunk)  # mostly holes: compact
        return SharedMap(chunks, length, lineage)
