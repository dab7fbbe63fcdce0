"""Values derived from immutable objects, kept per object.

Parsed API objects and the quota tree's nodes never change once built, so what is derived from
one can be kept for as long as that very object is in use. Kept by identity (the objects need
not be hashable, and hashing them would cost what the memo saves), holding the object so its
id is not reused while the entry lives.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class ObjectMemo(Generic[K, V]):
    __slots__ = ("_kept", "_limit")

    def __init__(self, limit: int = 10_000) -> None:
        self._kept: dict[int, tuple[K, V]] = {}
        self._limit = limit

    def get(self, obj: K, compute: Callable[[K], V]) -> V:
        hit = self._kept.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        value = compute(obj)
        if len(self._kept) >= self._limit:
            self._kept.clear()
        self._kept[id(obj)] = (obj, value)
        return value
