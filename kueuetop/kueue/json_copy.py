"""Fast deep copies of JSON-shaped data (dicts, lists and scalars).

API objects in the simulator are plain JSON data, so a copy needs none of `copy.deepcopy`'s
machinery (memo of shared references, `__deepcopy__` lookups, reductions): this one is several
times faster, which matters because the object store copies on every private read and write.
Anything that is not a dict, list or JSON scalar falls back to `copy.deepcopy`.
"""

from __future__ import annotations

import copy
from typing import Any

_SCALARS = frozenset((str, int, float, bool, type(None)))


def clone(obj: Any) -> Any:
    """A deep copy of JSON-shaped `obj` (shared sub-objects come out as separate copies)."""
    t = type(obj)
    if t is dict:
        return {k: (v if type(v) in _SCALARS else clone(v)) for k, v in obj.items()}
    if t is list or t is tuple:  # tuples come out as lists, as a JSON round trip makes them
        return [(v if type(v) in _SCALARS else clone(v)) for v in obj]
    if t in _SCALARS:
        return obj
    return copy.deepcopy(obj)


def clone_except(obj: dict[str, Any], private: str) -> dict[str, Any]:
    """A copy of an API object in which only `metadata` (shallow) and `private` (deep) are new;
    every other top-level value is shared with `obj` and must be treated as read-only."""
    out = dict(obj)
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        out["metadata"] = dict(meta)
    if private in obj:
        out[private] = clone(obj[private])
    return out
