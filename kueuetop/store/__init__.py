"""The one in-memory cluster state kueuetop draws from (see ARCHITECTURE §1)."""

from kueuetop.store.events import Changes, Entry, Key, Op, QueuePosition, StoreEvent
from kueuetop.store.history import QueueCounts, Ring, Series, UtilFrame, util_buckets
from kueuetop.store.sources import SourceState, SourceStatus
from kueuetop.store.state import Store

__all__ = ["Changes", "Entry", "Key", "Op", "QueueCounts", "QueuePosition", "Ring", "Series", "SourceState",
           "SourceStatus", "Store", "StoreEvent", "UtilFrame", "util_buckets"]
