"""What informers hand to the store: already-parsed entries, grouped into events.

Parsing happens in the informer's thread, outside the store lock, so applying a batch is
only dictionary work and readers (the UI) are never blocked by JSON decoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

Key = tuple[str, str]  # (namespace or "", name)

# Kinds the store holds; the names are the API plurals so logs and the wire agree.
CLUSTER_QUEUES = "clusterqueues"
LOCAL_QUEUES = "localqueues"
WORKLOADS = "workloads"
RESOURCE_FLAVORS = "resourceflavors"
COHORTS = "cohorts"
ADMISSION_CHECKS = "admissionchecks"
PROVISIONING_REQUESTS = "provisioningrequests"
PROVISIONING_CONFIGS = "provisioningrequestconfigs"
PRIORITY_CLASSES = "priorityclasses"
NAMESPACES = "namespaces"
NODES = "nodes"
PODS = "pods"
EVENTS = "events"

# Pseudo-kinds that appear in change notifications next to the object kinds.
POSITIONS = "positions"  # queue positions from the visibility API
GPUS = "gpus"
SOURCES = "sources"
FORECAST = "forecast"  # the latest forecast's ETAs (keys: the workloads whose forecast moved)


class Op(StrEnum):
    UPSERT = "upsert"
    DELETE = "delete"
    REPLACE = "replace"  # a full relist: everything this source holds for the kind
    POSITIONS = "positions"  # visibility API answer for one ClusterQueue


@dataclass(frozen=True, slots=True)
class Entry:
    """One object as stored: the parsed object, or, when it failed to parse, the wire dict and why.

    A parsed object's wire dict is not kept: it is most of an object's memory (three quarters of
    the console's heap on a 20,000-Workload cluster) and only the YAML view needs it, which asks
    the API server for the object when it is opened. Kinds that have no parser keep the wire
    dict as their object."""

    key: Key
    raw: dict[str, Any] | None  # only when obj is None (unparseable), so it can still be shown
    obj: Any
    uid: str = ""
    resource_version: str = ""
    error: str = ""  # why obj is None

    @property
    def wire(self) -> dict[str, Any] | None:
        """The wire dict kept for this object: a kind kept unparsed (Events), or an object that
        could not be parsed; None for parsed objects."""
        return self.raw if self.raw is not None else self.obj if isinstance(self.obj, dict) else None


@dataclass(frozen=True, slots=True)
class QueuePosition:
    cluster_queue: str
    in_cluster_queue: int
    in_local_queue: int
    local_queue: str = ""
    priority: int = 0


@dataclass(frozen=True, slots=True)
class StoreEvent:
    op: Op
    kind: str
    source: str
    entry: Entry | None = None  # UPSERT
    key: Key | None = None  # DELETE
    entries: tuple[Entry, ...] = ()  # REPLACE
    # POSITIONS: the ClusterQueue (in `key[1]`) and its pending workloads in order.
    positions: tuple[tuple[Key, QueuePosition], ...] = ()
    at: float | None = None  # when the source observed it (defaults to apply time)

    @staticmethod
    def upsert(kind: str, source: str, entry: Entry) -> StoreEvent:
        return StoreEvent(Op.UPSERT, kind, source, entry=entry)

    @staticmethod
    def delete(kind: str, source: str, key: Key) -> StoreEvent:
        return StoreEvent(Op.DELETE, kind, source, key=key)

    @staticmethod
    def replace(kind: str, source: str, entries: tuple[Entry, ...] | list[Entry]) -> StoreEvent:
        return StoreEvent(Op.REPLACE, kind, source, entries=tuple(entries))


@dataclass(frozen=True)
class Changes:
    """What one applied batch changed: keys per kind (object kinds and pseudo-kinds)."""

    keys: dict[str, frozenset[Any]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return any(self.keys.values())

    def __contains__(self, kind: object) -> bool:
        return bool(self.keys.get(kind))  # type: ignore[arg-type]

    def get(self, kind: str) -> frozenset[Any]:
        return self.keys.get(kind, frozenset())
