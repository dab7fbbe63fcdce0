"""Simulations and forecasts raise the collector's thresholds while they run and put them back after."""

import gc
import threading

from kueuetop.gc_pacing import YOUNG_THRESHOLD, sparse_collections


def test_thresholds_raised_inside_and_restored_after_nested_runs():
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with sparse_collections():
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD
            with sparse_collections():  # a run inside a run (a test driving run_for from on_step)
                assert gc.get_threshold()[0] == YOUNG_THRESHOLD
            assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the inner exit keeps the outer's
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*saved)


def test_concurrent_runs_share_the_setting_until_the_last_ends():
    saved = gc.get_threshold()
    entered, release = threading.Event(), threading.Event()

    def other_run() -> None:
        with sparse_collections():
            entered.set()
            release.wait(5)

    try:
        gc.set_threshold(700, 10, 10)
        t = threading.Thread(target=other_run)
        t.start()
        assert entered.wait(5)
        with sparse_collections():
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the other run is still going
        release.set()
        t.join(5)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*saved)


def test_a_disabled_young_threshold_stays_disabled():
    saved = gc.get_threshold()
    try:
        gc.set_threshold(0)
        with sparse_collections():
            assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*saved)


def test_a_threshold_changed_by_someone_else_during_a_run_is_theirs_after_it():
    # The console switches Python's full collections off (tui/heap.py IdleCollector) at start,
    # which may fall inside a forecast: the forecast's exit must not switch them back on.
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with sparse_collections():
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, 1_000_000)
        assert gc.get_threshold() == (700, 10, 1_000_000)
    finally:
        gc.set_threshold(*saved)
