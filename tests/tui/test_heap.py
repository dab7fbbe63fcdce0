"""When the console moves the store's objects out of the collector's way."""

from __future__ import annotations

import gc

from kueuetop.tui.heap import FULL_THRESHOLD_OFF, MIN_OBJECTS, BurstHold, HeapFreezer, IdleCollector


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


def test_full_collections_wait_for_a_quiet_moment_but_not_for_ever() -> None:
    now = [0.0]
    count = [(0, 0, 0)]
    collected: list[int] = []
    idle = IdleCollector(quiet=1.0, longest=30.0, clock=lambda: now[0], collect=collected.append,
                         get_count=lambda: count[0])
    before = gc.get_threshold()
    idle.start()
    try:
        assert gc.get_threshold() == (before[0], before[1], FULL_THRESHOLD_OFF)  # Python's own are off
        now[0] = 5.0
        assert not idle.poll()  # quiet, but too few younger collections for a full one to be due
        count[0] = (0, 0, idle.due_after)
        idle.activity()  # a key press just now
        now[0] = 5.5
        assert not idle.poll() and collected == []
        now[0] = 6.2  # no key for 1.2 s
        assert idle.poll() and collected == [2]
        # Typing for ever still gets a collection once `longest` has passed.
        for t in range(7, 40):
            now[0] = float(t)
            idle.activity()
            idle.poll()
        assert collected == [2, 2] and idle.collections == 2
    finally:
        idle.stop()
    assert gc.get_threshold() == before  # restored when the console ends


def test_no_collection_while_a_change_is_on_its_way_to_the_screen() -> None:
    now = [0.0]
    busy = [True]
    collected: list[int] = []
    idle = IdleCollector(quiet=1.0, longest=30.0, clock=lambda: now[0], collect=collected.append,
                         get_count=lambda: (0, 0, 10), busy=lambda: busy[0])
    now[0] = 100.0  # quiet and long overdue, but a store write is not on screen yet
    assert not idle.poll() and not idle.is_quiet() and collected == []
    busy[0] = False
    assert idle.is_quiet() and idle.poll() and collected == [2]


def test_a_freeze_that_needs_a_full_collection_waits_for_a_quiet_moment() -> None:
    churn = [0]
    collected: list[int] = []
    freezes: list[int] = []
    heap = HeapFreezer(lambda: MIN_OBJECTS * 4, churn=lambda: churn[0],
                       freeze=lambda: freezes.append(churn[0]), collect=collected.append)
    assert heap.maybe_freeze(quiet=False) and collected == [1]  # the first one only needs young garbage out
    churn[0] = MIN_OBJECTS
    assert not heap.maybe_freeze(quiet=False) and collected == [1]  # busy: later
    assert heap.maybe_freeze(quiet=False, collected=True)  # a full collection just ran: freeze only
    assert collected == [1] and freezes == [0, MIN_OBJECTS]


class _Gc:
    def __init__(self) -> None:
        self.enabled = True
        self.calls: list[str] = []

    def disable(self) -> None:
        self.enabled = False
        self.calls.append("off")

    def enable(self) -> None:
        self.enabled = True
        self.calls.append("on")


def _hold(now: list[float], g: _Gc) -> BurstHold:
    return BurstHold(longest=2.0, rest=1.0, clock=lambda: now[0], disable=g.disable, enable=g.enable,
                     is_enabled=lambda: g.enabled)


def test_a_burst_holds_collections_until_it_is_on_screen() -> None:
    now, g = [0.0], _Gc()
    hold = _hold(now, g)
    hold.hold()
    hold.hold()  # a second batch of the same burst: still one hold
    assert g.calls == ["off"] and hold.held
    assert not hold.release(in_flight=True)  # written, not shown yet
    assert not g.enabled
    now[0] = 0.3
    assert hold.release(in_flight=False) and g.enabled and g.calls == ["off", "on"]
    assert not hold.release()  # nothing held


def test_a_hold_ends_after_the_longest_and_rests_before_the_next() -> None:
    now, g = [0.0], _Gc()
    hold = _hold(now, g)
    hold.hold()
    now[0] = 2.5  # changes kept coming: overdue, collections come back anyway
    assert hold.release(in_flight=True) and g.enabled
    now[0] = 3.0
    hold.hold()  # resting: a cluster that never stops changing still gets collected
    assert g.enabled and not hold.held
    now[0] = 3.6
    hold.hold()
    assert not g.enabled and hold.held


def test_a_hold_leaves_collections_someone_else_switched_off_alone() -> None:
    now, g = [0.0], _Gc()
    g.enabled = False
    hold = _hold(now, g)
    hold.hold()
    assert not hold.held and g.calls == []
    assert not hold.release() and not g.enabled


def test_the_store_announces_bursts_only() -> None:
    from kueuetop.store import Store, StoreEvent

    store = Store()
    bursts: list[int] = []
    store.on_burst = lambda: bursts.append(1)
    store.apply_batch([StoreEvent.replace("nodes", "nodes", [])])
    assert bursts == []
    store.apply_batch([StoreEvent.replace("nodes", "nodes", [])] * store.burst_size)
    assert bursts == [1]
