"""A deep copy for JSON-shaped data (dicts, lists, scalars), several times faster than
`copy.deepcopy`, for copying scenario documents in bulk when a cluster starts."""

from __future__ import annotations

from typing import Any


def json_copy(value: Any) -> Any:
    """A copy sharing no dict or list with `value`; other values (str, int, float, bool, None)
    are immutable and kept. Tuples become lists, as a JSON round trip would make them."""
    if isinstance(value, dict):
        return {k: json_copy(v) if isinstance(v, dict | list | tuple) else v for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_copy(v) if isinstance(v, dict | list | tuple) else v for v in value]
    return value
