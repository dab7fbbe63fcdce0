"""Full garbage collections are off while a replay seeks, and come back as they were after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kueuetop.sources.gc_quiet import FULL_OFF, full_collections_off


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield gc.get_threshold()
    gc.set_threshold(*saved)


def test_nested_seeks_keep_full_collections_off_until_the_last_ends(thresholds: tuple[int, int, int]) -> None:
    with full_collections_off():
        assert gc.get_threshold() == (700, 10, FULL_OFF)
        with full_collections_off():
            assert gc.get_threshold()[2] == FULL_OFF
        assert gc.get_threshold()[2] == FULL_OFF
    assert gc.get_threshold() == thresholds


def test_a_threshold_someone_set_meanwhile_is_left_alone(thresholds: tuple[int, int, int]) -> None:
    with full_collections_off():
        gc.set_threshold(700, 10, 500)  # e.g. the console's idle collector starting
    assert gc.get_threshold() == (700, 10, 500)
