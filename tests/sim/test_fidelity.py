"""The fidelity figure of a simulated replay against recorded admissions."""

from __future__ import annotations

from kueuetop.sim.fidelity import fidelity


def k(name: str) -> tuple[str, str]:
    return ("ns", name)


def test_same_order_and_times_is_perfect() -> None:
    rec = {k("a"): 0.0, k("b"): 10.0, k("c"): 20.0}
    f = fidelity(rec, {k("a"): 0.0, k("b"): 10.0, k("c"): 20.0})
    assert f["kendallTauB"] == 1.0 and f["orderAgreement"] == 1.0 and f["discordant"] == 0
    assert f["timeErrorSeconds"]["max"] == 0.0 and f["admittedInBoth"] == 3


def test_a_swap_is_discordant_and_time_errors_are_measured() -> None:
    rec = {k("a"): 0.0, k("b"): 10.0, k("c"): 20.0}
    f = fidelity(rec, {k("a"): 0.0, k("b"): 25.0, k("c"): 20.0})
    assert (f["concordant"], f["discordant"]) == (2, 1)
    assert f["kendallTauB"] == round(1 / 3, 4) and f["orderAgreement"] == round(2 / 3, 4)
    assert f["timeErrorSeconds"]["max"] == 15.0 and f["timeErrorSeconds"]["mean"] == 5.0


def test_ties_within_a_second_and_admissions_on_one_side_only() -> None:
    rec = {k("a"): 0.0, k("b"): 0.4, k("c"): 5.0, k("late"): 50.0}
    sim = {k("a"): 0.3, k("b"): 0.0, k("c"): 5.0, k("extra"): 7.0, k("after"): 99.0}
    f = fidelity(rec, sim, window=60.0)
    assert f["discordant"] == 0 and f["concordant"] == 2  # a/b tied on the recorded side
    assert f["onlyRecorded"] == ["ns/late"] and f["onlySimulated"] == ["ns/extra"]
