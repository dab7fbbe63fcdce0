import pytest
from hypothesis import given
from hypothesis import strategies as st

from kueuetop.kueue.durations import DurationError, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("2h", 7200.0),
        ("1.5h", 5400.0),
        ("1m30.5s", 90.5),
        ("0", 0.0),
        ("0s", 0.0),
        ("45", 45.0),
        ("100us", 0.0001),
        ("500ns", 5e-7),
        (" 10s ", 10.0),
        (12, 12.0),
        (2.5, 2.5),
    ],
)
def test_parse(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "bad", ["", "abc", "5x", "m5", "1h 30m", "-5s", "1.2.3s", "s", "30S", "1d", None, True, -1, float("inf"),
            float("nan"), 10**400, "9" * 400, "3000000h", "1" + "0" * 400 + "s", 2**63]
)
def test_parse_rejects(bad):
    with pytest.raises(DurationError):
        parse_duration(bad)


def test_longest_go_duration_is_accepted_and_one_past_is_named():
    # Go's Duration is int64 nanoseconds; 2562047h is within it, 2562048h is past it.
    assert parse_duration("2562047h") == 2562047 * 3600
    with pytest.raises(DurationError, match="maximum") as err:
        parse_duration("2562048h")
    assert len(str(err.value)) < 120


def test_duration_error_is_a_value_error():
    # kueuetop.kueue.config catches ValueError from parse_duration.
    with pytest.raises(ValueError, match='invalid duration "abc"'):
        parse_duration("abc")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.25, "250ms"),
        (30, "30s"),
        (90.5, "1m30.5s"),
        (300, "5m"),
        (5400, "1h30m"),
        (7200, "2h"),
        (3661, "1h1m1s"),
        (0.0004, "0s"),
        (-5, "-5s"),
    ],
)
def test_format(seconds, text):
    assert format_duration(seconds) == text


@given(st.integers(min_value=0, max_value=10**9))
def test_round_trip_milliseconds(ms):
    assert round(parse_duration(format_duration(ms / 1000)) * 1000) == ms
