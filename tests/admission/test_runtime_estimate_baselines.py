"""The naive ETA baselines the forecast is compared with: position × mean interval, EMA throughput."""

from __future__ import annotations

import pytest

from kueuetop.admission.eta_baselines import (
    afs_alpha,
    ema_throughput,
    ema_throughput_eta,
    mean_interval,
    mean_interval_eta,
    observed_admissions,
)
from kueuetop.kueue.parse import parse_object
from tests.builders import T0, admit, ts, workload

AT = T0 + 3600


def test_mean_interval_counts_only_admissions_before_the_instant() -> None:
    times = [AT - 600, AT - 500, AT - 400, AT, AT + 50]  # the last two are not known yet at AT
    assert mean_interval(times, AT) == 100
    assert mean_interval([AT - 10], AT) is None
    assert mean_interval([AT - 900, *times], AT, window=650) == 100  # AT-900 is out of the window


def test_position_times_mean_interval() -> None:
    adm = {"cq-a": [AT - 600, AT - 300, AT - 0.5], "cq-b": [AT - 5]}
    got = mean_interval_eta(adm, {("ns", "head"): ("cq-a", 0), ("ns", "fifth"): ("cq-a", 4),
                                  ("ns", "b"): ("cq-b", 0), ("ns", "c"): ("cq-c", 0)}, AT)
    gap = (600 - 0.5) / 2
    assert got[("ns", "head")] - AT == pytest.approx(gap)  # its own turn: one interval
    assert got[("ns", "fifth")] - AT == pytest.approx(5 * gap)
    assert got[("ns", "b")] is None and got[("ns", "c")] is None  # one admission, or none: no rate


def test_afs_alpha_is_kueues_half_life_rate() -> None:
    assert afs_alpha(600, 600) == 0.5
    assert afs_alpha(60, 0) == 0.0
    assert afs_alpha(300, 600) == pytest.approx(1 - 0.5 ** 0.5)


def test_ema_of_a_steady_queue_is_its_rate() -> None:
    times = [AT - 3600 + 30 * i for i in range(120)]  # 2 a minute for an hour
    assert ema_throughput(times, AT) == pytest.approx(2 / 60)


def test_ema_follows_a_recent_change_more_than_the_mean_does() -> None:
    # 1 a minute for 50 minutes, then 6 a minute for the last 10: the EMA (half-life 10 m) leans
    # to the new rate; the mean interval over the hour does not.
    times = [AT - 3600 + 60 * i for i in range(50)] + [AT - 600 + 10 * i for i in range(60)]
    ema = ema_throughput(times, AT)
    assert ema == pytest.approx(3.5 / 60)  # one half-life into the new rate: half way from 1 to 6 a minute
    mean = mean_interval(times, AT)
    assert mean is not None and 1 / mean < 2 / 60


def test_ema_eta_and_an_idle_queue() -> None:
    adm = {"cq-a": [AT - 3600 + 60 * i for i in range(60)], "cq-empty": []}
    got = ema_throughput_eta(adm, {("ns", "w"): ("cq-a", 2), ("ns", "e"): ("cq-empty", 0)}, AT)
    assert got[("ns", "w")] - AT == pytest.approx(3 * 60)
    assert got[("ns", "e")] is None


def test_ema_decays_toward_zero_after_admissions_stop() -> None:
    busy = [AT - 7200 + 60 * i for i in range(60)]  # admitted 1 a minute, then nothing for an hour
    ema = ema_throughput(busy, AT)
    assert ema is not None and ema < (1 / 60) * 0.5 ** 5  # six half-lives of silence, less the last bin


def test_observed_admissions_read_quota_reservation_times() -> None:
    raw = [admit(workload("ns", f"w{i}", "lq"), "cq-a", {"cpu": "default"}, at=T0 + i * 10) for i in range(3)]
    for d in raw:  # Admitted came later (admission checks): the scheduler decided at the reservation
        d["status"]["conditions"][1]["lastTransitionTime"] = ts(T0 + 1000)
    wls = [parse_object(d) for d in raw]
    wls.append(parse_object(workload("ns", "pending", "lq")))
    assert observed_admissions(wls) == {"cq-a": [T0, T0 + 10, T0 + 20]}
