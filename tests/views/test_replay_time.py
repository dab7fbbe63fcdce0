"""Moments typed for a replay: time of day, relative to the ends, ISO, and the errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from kueuetop.views.replay_time import MomentError, parse_moment, utc

TZ = timezone(timedelta(hours=2))
# A recording from 22:30 one day to 04:00 the next (local time, UTC+2).
START = datetime(2026, 3, 9, 22, 30, tzinfo=TZ).timestamp()
END = datetime(2026, 3, 10, 4, 0, tzinfo=TZ).timestamp()


def at(text: str) -> float:
    return parse_moment(text, START, END, TZ)


def test_time_of_day_is_its_first_occurrence_within_the_recording() -> None:
    assert at("03:12") == datetime(2026, 3, 10, 3, 12, tzinfo=TZ).timestamp()  # the next day
    assert at("23:05:30") == datetime(2026, 3, 9, 23, 5, 30, tzinfo=TZ).timestamp()


def test_relative_moments_and_the_ends() -> None:
    assert at("-2h") == END - 7200
    assert at("+10m") == START + 600
    assert at("-90s") == END - 90
    assert at("start") == START and at("end") == END


def test_iso_times_with_and_without_an_offset() -> None:
    assert at("2026-03-10T01:00:00Z") == datetime(2026, 3, 10, 1, 0, tzinfo=UTC).timestamp()
    assert at("2026-03-10T02:00:00") == datetime(2026, 3, 10, 2, 0, tzinfo=TZ).timestamp()
    exact = START + 12.345678
    assert at(utc(exact)) == pytest.approx(exact, abs=1e-6)


@pytest.mark.parametrize(("text", "why"), [("12:00", "not within"), ("-7h", "outside"), ("+1d", "invalid"),
                                           ("25:00", "invalid time"), ("yesterday", "invalid moment"),
                                           ("2026-03-11T00:00:00Z", "outside")])
def test_bad_moments_are_one_line_errors(text: str, why: str) -> None:
    with pytest.raises(MomentError, match=why) as exc:
        at(text)
    assert "\n" not in str(exc.value)
