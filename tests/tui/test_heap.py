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


def test_freezes_again_once_a_quarter_of_the_store_was_replaced() -> None:
    churn = [0]
    freezes: list[int] = []
    collected: list[int] = []
    heap = HeapFreezer(lambda: MIN_OBJECTS * 4, churn=lambda: churn[0],
                       freeze=lambda: freezes.append(churn[0]), collect=collected.append)
    assert heap.maybe_freeze() and collected == [1]  # first freeze: young garbage out only
    churn[0] = MIN_OBJECTS // 2  # an eighth replaced: not yet
    assert not heap.maybe_freeze()
    churn[0] = MIN_OBJECTS  # a quarter: what replaced objects left behind is frozen too
    assert heap.maybe_freeze() and freezes == [0, MIN_OBJECTS]
    assert collected == [1, 2]  # after a full collection, so replaced garbage is not frozen
    assert not heap.maybe_freeze()
