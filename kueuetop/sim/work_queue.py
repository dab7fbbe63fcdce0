"""Draining a controller's queue of dirty keys, as controller-runtime's workqueue does: each key
once, in the order it first became dirty; a key made dirty again during its own reconcile comes
back in the same drain. A malformed object is logged and skipped, never the end of the loop."""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

_log = logging.getLogger(__name__)

_MALFORMED = (AttributeError, TypeError, ValueError, KeyError)


def drain(dirty: dict, reconcile: Callable[[Hashable, float], bool], now: float, who: str, what: str) -> bool:
    """Reconcile every key of `dirty` (emptied on the way); True if any reconcile wrote."""
    worked = False
    while dirty:
        key = next(iter(dirty))
        del dirty[key]
        try:
            worked = reconcile(key, now) or worked
        except _MALFORMED as exc:
            _log.warning("%s: skipping malformed %s %s/%s: %r", who, what, *key, exc)
        except Exception:
            _log.exception("%s: %s %s/%s failed", who, what, *key)
    return worked
