"""Typed reads from API JSON with errors that name the object and the field.

Every parser in this package reads through a `Fields` view, so a wrong type or a bad quantity
deep inside a pod template is reported as e.g.
`Workload team-a/job-x: spec.podSets[0].template.spec.containers[1].resources.requests.cpu: ...`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from kueuetop.kueue.errors import KueueParseError, QuantityError
from kueuetop.kueue.quantity import parse_resource_value

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache

_MISSING = object()
# Strings read from objects are interned up to this length: flavor, queue, node and resource
# names, reasons, label keys repeat across thousands of parsed objects, which would otherwise
# each keep their own copy from their JSON (the console keeps parsed objects for the session).
SHARED_MAX = 64


def shared(text: str) -> str:
    """One copy of a short string however many objects hold it (`sys.intern`; interned strings
    are freed once nothing holds them)."""
    return sys.intern(text) if len(text) <= SHARED_MAX and type(text) is str else text


def parse_time(value: str) -> float:
    """RFC 3339 timestamp → epoch seconds (UTC)."""
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    dt = datetime.fromisoformat(value)
    if dt.tzinfo is None:
        raise ValueError("timestamp without a time zone")
    return dt.timestamp()


def parse_time_or_none(value: object) -> float | None:
    """`parse_time` for values that may be missing or malformed: None instead of an error."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


class Fields:
    """A read-only view of one JSON object at a path inside an API object."""

    __slots__ = ("_data", "cache", "obj", "path")

    def __init__(self, data: Mapping[str, Any], obj: str, path: str = "", cache: ParseCache | None = None) -> None:
        self._data = data
        self.obj = obj
        self.path = path
        self.cache = cache  # the caller's, for parts many objects share (None: parse everything)

    def _p(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, key: str, problem: str) -> KueueParseError:
        return KueueParseError(self.obj, self._p(key) if key else self.path, problem)

    def raw(self, key: str, default: Any = None) -> Any:
        v = self._data.get(key, default)
        return default if v is None else v

    def raw_data(self) -> Mapping[str, Any]:
        """The viewed object itself (read-only)."""
        return self._data

    def has(self, key: str) -> bool:
        return self._data.get(key) is not None

    def str(self, key: str, default: str = "", required: bool = False, unique: bool = False) -> str:
        """`unique`: a value no other object holds (a name, a UID): not worth interning."""
        v = self._data.get(key)
        if v is None:
            if required:
                raise self.error(key, "required field is missing")
            return default
        if not isinstance(v, str):
            raise self.error(key, f"expected a string, got {type(v).__name__}")
        if required and not v:
            raise self.error(key, "required field is empty")
        return v if unique else shared(v)

    def int(self, key: str, default: int = 0, minimum: int | None = None) -> int:
        v = self._data.get(key)
        if v is None:
            return default
        return self._check_int(key, v, minimum)

    def opt_int(self, key: str, minimum: int | None = None) -> int | None:
        v = self._data.get(key)
        if v is None:
            return None
        return self._check_int(key, v, minimum)

    def _check_int(self, key: str, v: Any, minimum: int | None) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise self.error(key, f"expected an integer, got {v!r}"[:200])
        if minimum is not None and v < minimum:
            raise self.error(key, f"must be >= {minimum}, got {v}")
        return v

    def bool(self, key: str, default: bool) -> bool:
        v = self._data.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise self.error(key, f"expected a boolean, got {v!r}"[:200])
        return v

    def enum(self, key: str, allowed: tuple[str, ...], default: str) -> str:
        v = self.str(key, default)
        if v == "":
            return default
        if v not in allowed:
            raise self.error(key, f"unsupported value {v!r}: supported values are {', '.join(allowed)}")
        return v

    def time(self, key: str) -> float | None:
        v = self._data.get(key)
        if v is None or v == "":
            return None
        if not isinstance(v, str):
            raise self.error(key, f"expected an RFC 3339 timestamp, got {v!r}"[:200])
        try:
            return parse_time(v)
        except ValueError:
            raise self.error(key, f"invalid RFC 3339 timestamp {v!r}"[:200]) from None

    def str_map(self, key: str) -> dict[str, str]:
        v = self._data.get(key)
        if v is None:
            return {}
        if not isinstance(v, Mapping):
            raise self.error(key, f"expected a map, got {type(v).__name__}")
        out: dict[str, str] = {}
        for k, val in v.items():
            if not isinstance(k, str) or not isinstance(val, str):
                raise self.error(f"{key}[{k!r}]", "expected string keys and values")
            out[shared(k)] = shared(val)
        return out

    def resources(self, key: str) -> dict[str, int]:
        """A ResourceList (name → Quantity) as Kueue resource values."""
        v = self._data.get(key)
        if v is None:
            return {}
        if not isinstance(v, Mapping):
            raise self.error(key, f"expected a map of quantities, got {type(v).__name__}")
        out: dict[str, int] = {}
        for name, q in v.items():
            try:
                out[shared(str(name))] = self._resource_value(str(name), q)
            except QuantityError as exc:
                raise self.error(f"{key}.{name}", str(exc)) from None
        return out

    def quantity(self, key: str, resource: str, required: bool = False) -> int | None:
        v = self._data.get(key)
        if v is None:
            if required:
                raise self.error(key, "required field is missing")
            return None
        try:
            return self._resource_value(resource, v)
        except QuantityError as exc:
            raise self.error(key, str(exc)) from None

    def _resource_value(self, resource: str, value: object) -> int:
        return self.cache.resource_value(resource, value) if self.cache is not None else parse_resource_value(resource, value)

    def sub(self, key: str, required: bool = False) -> Fields:
        v = self._data.get(key)
        if v is None:
            if required:
                raise self.error(key, "required field is missing")
            return Fields({}, self.obj, self._p(key), self.cache)
        if not isinstance(v, Mapping):
            raise self.error(key, f"expected an object, got {type(v).__name__}")
        return Fields(v, self.obj, self._p(key), self.cache)

    def items(self, key: str, required: bool = False) -> Iterator[Fields]:
        """Iterate a list of objects; a missing list is empty (v1beta2 omits empty lists)."""
        v = self._data.get(key)
        if v is None:
            if required:
                raise self.error(key, "required field is missing")
            return
        if not isinstance(v, list):
            raise self.error(key, f"expected a list, got {type(v).__name__}")
        for i, item in enumerate(v):
            if not isinstance(item, Mapping):
                raise self.error(f"{key}[{i}]", f"expected an object, got {type(item).__name__}")
            yield Fields(item, self.obj, f"{self._p(key)}[{i}]", self.cache)

    def str_list(self, key: str) -> tuple[str, ...]:
        v = self._data.get(key)
        if v is None:
            return ()
        if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
            raise self.error(key, "expected a list of strings")
        return tuple(v)


def object_fields(data: Any, kind: str, cache: ParseCache | None = None) -> tuple[Fields, str, str]:
    """Top-level view of an API object: (fields, namespace, name), validating metadata; `cache`:
    the caller's ParseCache, carried by every view under it."""
    if not isinstance(data, Mapping):
        raise KueueParseError(kind, "", f"expected a JSON object, got {type(data).__name__}")
    meta = data.get("metadata")
    name = meta.get("name") if isinstance(meta, Mapping) else None
    ns = meta.get("namespace") if isinstance(meta, Mapping) else None
    label = f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    f = Fields(data, label, cache=cache)
    m = f.sub("metadata", required=True)
    m.str("name", required=True)
    return f, (ns if isinstance(ns, str) else ""), name
