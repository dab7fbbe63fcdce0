from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueuetop.kueue.errors import QuantityError
from kueuetop.kueue.quantity import (
    format_quantity_for_api,
    format_resource_value,
    parse_quantity,
    parse_resource_value,
)


@pytest.mark.parametrize(("text", "expected"), [
    ("1", Fraction(1)), ("0", Fraction(0)), ("+3", Fraction(3)), ("-2", Fraction(-2)),
    ("500m", Fraction(1, 2)), ("1.5", Fraction(3, 2)), (".5", Fraction(1, 2)), ("2.", Fraction(2)),
    ("100n", Fraction(1, 10**7)), ("3u", Fraction(3, 10**6)),
    ("1k", Fraction(1000)), ("1M", Fraction(10**6)), ("1G", Fraction(10**9)), ("1T", Fraction(10**12)),
    ("1P", Fraction(10**15)), ("1E", Fraction(10**18)),
    ("1Ki", Fraction(1024)), ("1Mi", Fraction(2**20)), ("36Gi", Fraction(36 * 2**30)),
    ("1Ti", Fraction(2**40)), ("1Pi", Fraction(2**50)), ("1Ei", Fraction(2**60)),
    ("1e3", Fraction(1000)), ("1E3", Fraction(1000)), ("12e-1", Fraction(6, 5)), ("2e+2", Fraction(200)),
    ("1.5Gi", Fraction(3 * 2**29)), (7, Fraction(7)), (0.25, Fraction(1, 4)),
])
def test_every_suffix_parses_exactly(text, expected):
    assert parse_quantity(text) == expected


@pytest.mark.parametrize("bad", ["", "abc", "1x", "1KiB", "--1", "1e", "1.2.3", "Gi", None, True, [], "1e99", "nan", "inf"])
def test_bad_quantities_raise(bad):
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_huge_quantities_saturate_like_kubernetes():
    # Seeds write "1000000000Ti" for an unlimited quota; Value() saturates at int64.
    assert parse_resource_value("ephemeral-storage", "1000000000Ti") == 2**63 - 1
    assert parse_resource_value("cpu", "1E") == 2**63 - 1


def test_no_float_drift():
    total = sum(parse_quantity(q) for q in ["0.1", "0.2"])
    assert total == parse_quantity("0.3")
    # Kueue's integer resource values: milli-cpu, others rounded up to whole units
    assert parse_resource_value("cpu", "0.1") + parse_resource_value("cpu", "0.2") == 300
    assert parse_resource_value("memory", "1.5") == 2
    assert parse_resource_value("cpu", "1m") == 1
    assert parse_resource_value("cpu", "0.5m") == 1  # MilliValue rounds up
    assert parse_resource_value("nvidia.com/gpu", "8") == 8


@pytest.mark.parametrize(("resource", "value", "text"), [
    ("cpu", 1500, "1500m"), ("cpu", 2000, "2"), ("memory", 36 * 2**30, "36Gi"), ("memory", 10**9, "1G"),
    ("nvidia.com/gpu", 8, "8"), ("memory", 1000 + 1, "1001"), ("cpu", None, "∞"),
])
def test_format_for_people(resource, value, text):
    assert format_resource_value(resource, value) == text


@given(st.integers(min_value=0, max_value=10**15), st.sampled_from(["cpu", "memory", "nvidia.com/gpu"]))
def test_api_format_round_trips(value, resource):
    assert parse_resource_value(resource, format_quantity_for_api(resource, value)) == value
