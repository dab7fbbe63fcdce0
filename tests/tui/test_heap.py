"""When the console moves the store's objects out of the collector's way."""

from __future__ import annotations

from kueuetop.tui.heap import MIN_OBJECTS, HeapFreezer


def test_freezes_once_big_then_only_after_growing_by_half() -> None:
    size = [100]
    freezes: list[int] = []
    heap = HeapFreezer(lambda: size[0], freeze=lambda: freezes.append(size[0]))
    assert not heap.maybe_freeze() and freezes == []  # a small cluster: the collector is cheap
    size[0] = MIN_OBJECTS * 2
    assert heap.maybe_freeze() and freezes == [MIN_OBJECTS * 2]
    assert not heap.maybe_freeze()  # nothing new since
    size[0] = MIN_OBJECTS * 2 + MIN_OBJECTS // 2  # grown by a quarter: not yet
    assert not heap.maybe_freeze()
    size[0] = MIN_OBJECTS * 3
    assert heap.maybe_freeze() and freezes == [MIN_OBJECTS * 2, MIN_OBJECTS * 3]
