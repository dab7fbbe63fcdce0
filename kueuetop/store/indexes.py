"""Secondary indexes over the stored objects, kept up to date on every apply.

Each index maps a value (a ClusterQueue name, a node, an owner UID…) to the set of object
keys having it. `MultiIndex` remembers what it filed each key under, so an update or a
delete removes exactly the old entries without looking at the old object.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

from kueuetop.kueue.core import Pod
from kueuetop.kueue.local_queue import LocalQueue
from kueuetop.kueue.pod_workload import owner_uids, workload_of_pod
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import Phase, WorkloadState, derive_state
from kueuetop.store.events import Key

_EMPTY: frozenset[Any] = frozenset()


class MultiIndex:
    """value → {keys}; a key may be filed under several values.

    Most values hold one key (a pod's own UID, a job's UID): such a value maps to the key
    itself, and only a second key makes it a set. A set per value would cost 216 bytes each,
    over 10 MB on a cluster of 20,000 Workloads and as many pods. Keys are tuples, never sets."""

    __slots__ = ("_by_key", "_by_value")

    def __init__(self) -> None:
        self._by_key: dict[Key, tuple[Hashable, ...]] = {}
        self._by_value: dict[Hashable, Key | set[Key]] = {}

    def set(self, key: Key, values: Iterable[Hashable]) -> None:
        new = tuple(v for v in dict.fromkeys(values) if v is not None and v != "")
        old = self._by_key.get(key)
        if old == new:
            return
        if old:
            self._drop(key, old)
        if new:
            self._by_key[key] = new
            for v in new:
                self._add(v, key)
        else:
            self._by_key.pop(key, None)

    def set_one(self, key: Key, value: Hashable) -> None:
        """`set(key, (value,))`; returns at once when the key is filed under that value already
        (most of a status update: its namespace, queues and owners stay)."""
        old = self._by_key.get(key)
        if old is not None and len(old) == 1 and old[0] == value:
            return
        self.set(key, (value,))

    def remove(self, key: Key) -> None:
        old = self._by_key.pop(key, None)
        if old:
            self._drop(key, old)

    def _add(self, value: Hashable, key: Key) -> None:
        held = self._by_value.get(value)
        if held is None:
            self._by_value[value] = key
        elif type(held) is set:
            held.add(key)
        elif held != key:
            self._by_value[value] = {held, key}  # type: ignore[arg-type]

    def _drop(self, key: Key, values: tuple[Hashable, ...]) -> None:
        for v in values:
            held = self._by_value.get(v)
            if held is None:
                continue
            if type(held) is set:
                held.discard(key)
                if len(held) == 1:
                    self._by_value[v] = next(iter(held))
                elif not held:
                    del self._by_value[v]
            elif held == key:
                del self._by_value[v]

    def get(self, value: Hashable) -> frozenset[Key] | set[Key]:
        """The keys filed under `value` (do not modify the answer)."""
        held = self._by_value.get(value)
        if held is None:
            return _EMPTY
        return held if type(held) is set else frozenset((held,))  # type: ignore[return-value,arg-type]

    def values_of(self, key: Key) -> tuple[Hashable, ...]:
        return self._by_key.get(key, ())

    def copy(self) -> MultiIndex:
        """An independent copy (keys and values are immutable; only the sets are copied)."""
        out = MultiIndex()
        out._by_key = dict(self._by_key)
        if self._by_value is None:  # compacted: filed again from the keys' values
            for key, values in out._by_key.items():
                for v in values:
                    out._add(v, key)
        else:
            out._by_value = {v: set(ks) if type(ks) is set else ks for v, ks in self._by_value.items()}
        return out

    def compacted(self) -> MultiIndex:
        """This index without its value → keys side (most of its memory), for keeping: only
        `copy()` may be called on the result, which files the keys again. Shares `self`'s keys."""
        out = MultiIndex()
        out._by_key = self._by_key
        out._by_value = None  # type: ignore[assignment]
        return out

    def values(self) -> list[Hashable]:
        return list(self._by_value)

    def counts(self) -> dict[Hashable, int]:
        return {v: len(ks) if type(ks) is set else 1 for v, ks in self._by_value.items()}


class Indexes:
    """All indexes of the store. Not thread-safe by itself: the store's lock guards it."""

    def __init__(self) -> None:
        self.wl_by_cq = MultiIndex()
        self.wl_by_lq = MultiIndex()
        self.wl_by_phase = MultiIndex()
        self.wl_by_owner_uid = MultiIndex()  # owner UIDs + job-uid label → workload
        self.wl_state: dict[Key, WorkloadState] = {}
        self.lq_cq: dict[Key, str] = {}  # LocalQueue → its ClusterQueue
        self.pods_by_node = MultiIndex()
        self.pods_by_uid = MultiIndex()  # owner UIDs and the pod's own UID → pod
        self._workloads: dict[Key, Workload] = {}
        # (pending, admitted, quota reserved) per ClusterQueue, kept as workloads change: queue
        # counts are read per ClusterQueue in loops (queue history, the visibility poller).
        self._counts: dict[str, list[int]] = {}
        self._counted: dict[Key, tuple[str, int]] = {}  # workload → (its ClusterQueue, slot in counts)

    def copy(self) -> Indexes:
        """An independent copy: the indexed objects and derived states are immutable, shared."""
        out = Indexes.__new__(Indexes)
        for name, value in vars(self).items():
            if isinstance(value, MultiIndex):
                setattr(out, name, value.copy())
            elif name == "_counts":
                out._counts = {cq: list(c) for cq, c in value.items()}
            else:
                setattr(out, name, dict(value))
        return out

    def compacted(self) -> Indexes:
        """These indexes with each MultiIndex compacted (see `MultiIndex.compacted`); shares the rest."""
        out = Indexes.__new__(Indexes)
        for name, value in vars(self).items():
            setattr(out, name, value.compacted() if isinstance(value, MultiIndex) else value)
        return out

    # ----------------------------------------------------------------- workloads
    def put_workload(self, key: Key, wl: Workload | None, now: float) -> None:
        if wl is None:  # unparseable: it has no place in any index
            self.remove_workload(key)
            return
        self._workloads[key] = wl
        self.wl_by_lq.set_one(key, (wl.namespace, wl.queue_name) if wl.queue_name else None)
        self.wl_by_cq.set_one(key, self._cq_of(wl))
        state = derive_state(wl, now)
        self.wl_state[key] = state
        self.wl_by_phase.set_one(key, state.phase)
        self.wl_by_owner_uid.set(key, owner_uids(wl))
        self._count(key)

    def remove_workload(self, key: Key) -> None:
        self._workloads.pop(key, None)
        self.wl_state.pop(key, None)
        for ix in (self.wl_by_lq, self.wl_by_cq, self.wl_by_phase, self.wl_by_owner_uid):
            ix.remove(key)
        self._count(key)

    def _count(self, key: Key) -> None:
        """Move the workload's count to its ClusterQueue and slot now (after its indexes)."""
        cqs = self.wl_by_cq.values_of(key)
        state = self.wl_state.get(key)
        slot = _count_slot(state) if state is not None and cqs else None
        now = (cqs[0], slot) if slot is not None else None  # type: ignore[index]
        old = self._counted.get(key)
        if old == now:
            return
        if old is not None:
            self._counts[old[0]][old[1]] -= 1
            del self._counted[key]
        if now is not None:
            self._counts.setdefault(now[0], [0, 0, 0])[now[1]] += 1  # type: ignore[index]
            self._counted[key] = now  # type: ignore[assignment]

    def _cq_of(self, wl: Workload) -> str:
        # The admission names the CQ that holds quota; a pending workload belongs to its LQ's CQ.
        if wl.admission is not None and wl.admission.cluster_queue:
            return wl.admission.cluster_queue
        return self.lq_cq.get((wl.namespace, wl.queue_name), "")

    # ----------------------------------------------------------------- local queues
    def put_local_queue(self, key: Key, lq: LocalQueue | None) -> set[Key]:
        """File the LQ; returns workloads whose ClusterQueue changed as a result."""
        old = self.lq_cq.get(key)
        new = lq.cluster_queue if lq is not None else None
        if new:
            self.lq_cq[key] = new
        else:
            self.lq_cq.pop(key, None)
        if old == new:
            return set()
        moved = set()
        for wkey in list(self.wl_by_lq.get(key)):
            wl = self._workloads.get(wkey)
            if wl is not None:
                self.wl_by_cq.set(wkey, (self._cq_of(wl),))
                self._count(wkey)
                moved.add(wkey)
        return moved

    # ----------------------------------------------------------------- pods
    def put_pod(self, key: Key, pod: Pod | None) -> None:
        if pod is None:
            self.remove_pod(key)
            return
        self.pods_by_node.set(key, (pod.node_name,))
        self.pods_by_uid.set(key, (pod.meta.uid, *(o.uid for o in pod.meta.owners)))

    def remove_pod(self, key: Key) -> None:
        self.pods_by_node.remove(key)
        self.pods_by_uid.remove(key)

    def workload_of_pod(self, pod: Pod) -> Key | None:
        return workload_of_pod(pod, self.wl_by_owner_uid.get)

    def pods_of_workload(self, key: Key) -> set[Key]:
        wl = self._workloads.get(key)
        if wl is None:
            return set()
        out: set[Key] = set()
        for uid in (wl.uid, *self.wl_by_owner_uid.values_of(key)):
            for pkey in self.pods_by_uid.get(uid):  # type: ignore[arg-type]
                if pkey[0] == key[0]:
                    out.add(pkey)
        return out

    # ----------------------------------------------------------------- counts
    def queue_counts(self, cq: str) -> tuple[int, int, int]:
        """(pending, admitted, quota reserved) workloads of a ClusterQueue, from derived states."""
        counts = self._counts.get(cq)
        return (counts[0], counts[1], counts[2]) if counts is not None else (0, 0, 0)

    def count_queue(self, cq: str) -> tuple[int, int, int]:
        """`queue_counts` by looking at every workload of the ClusterQueue (what the kept counts
        must always equal)."""
        counts = [0, 0, 0]
        for wkey in self.wl_by_cq.get(cq):
            state = self.wl_state.get(wkey)
            slot = _count_slot(state) if state is not None else None
            if slot is not None:
                counts[slot] += 1
        return counts[0], counts[1], counts[2]


def _count_slot(state: WorkloadState) -> int | None:
    """Which of (pending, admitted, quota reserved) a workload in this state counts as, if any."""
    if state.phase in (Phase.ADMITTED, Phase.EVICTING) and state.kueue_status == "admitted":
        return 1
    if state.kueue_status == "quotaReserved":
        return 2
    if state.kueue_status == "pending" and state.phase is not Phase.INACTIVE:
        return 0
    return None
