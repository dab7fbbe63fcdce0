"""A ParseCache belongs to the caller that parses with it: what it keeps is shared between the
objects parsed with that cache, never between callers, and parsing without one parses everything."""

from __future__ import annotations

import copy

import pytest

from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.parse_cache import ParseCache
from tests.builders import condition, workload


def _two_of_one_template() -> tuple[dict, dict]:
    a = workload("team-a", "job-1", "lq", {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"}, count=4)
    b = copy.deepcopy(a)
    b["metadata"]["name"], b["metadata"]["uid"] = "job-2", "uid-2"
    for wl in (a, b):
        wl["status"]["conditions"] = [condition("QuotaReserved", False, "Pending", "waiting for quota")]
    return a, b


def test_objects_parsed_with_one_cache_share_their_parts() -> None:
    a, b = _two_of_one_template()
    cache = ParseCache()
    wa, wb = parse_object(a, cache), parse_object(b, cache)
    assert wa.pod_sets is wb.pod_sets and wa.conditions[0] is wb.conditions[0]
    assert len(cache.pod_sets) == 1 and len(cache.conditions) == 1
    assert cache.resource_values  # the quantity strings, once
    assert wa == parse_object(a) and wb == parse_object(b)  # the same values as parsed alone


def test_without_a_cache_nothing_is_kept_and_two_callers_share_nothing() -> None:
    a, b = _two_of_one_template()
    assert parse_object(a).pod_sets is not parse_object(b).pod_sets
    mine, yours = ParseCache(), ParseCache()
    wa, wb = parse_object(a, mine), parse_object(b, yours)
    assert wa.pod_sets is not wb.pod_sets and wa.pod_sets == wb.pod_sets
    assert len(mine.pod_sets) == len(yours.pod_sets) == 1


def test_errors_are_not_kept_and_name_their_own_object() -> None:
    cache = ParseCache()
    for name in ("bad-1", "bad-2"):
        wl = workload("team-a", name, "lq", {"cpu": "lots"})
        with pytest.raises(KueueParseError, match=f"Workload team-a/{name}: .*cpu"):
            parse_object(wl, cache)
    assert not cache.pod_sets and not cache.resource_values


def test_a_full_cache_starts_over_rather_than_growing() -> None:
    cache = ParseCache(max_pod_sets=2, max_conditions=2, max_resource_values=2)
    for i in range(10):
        wl = workload("team-a", f"job-{i}", "lq", {"cpu": str(i + 1)})
        wl["status"]["conditions"] = [condition("QuotaReserved", False, "Pending", f"message {i}")]
        parse_object(wl, cache)
        assert len(cache.pod_sets) <= 2 and len(cache.conditions) <= 2 and len(cache.resource_values) <= 2
