"""What landed, from the state before our first PATCH and the target read back."""

from __future__ import annotations

import pytest

from kueuetop.actions.reconcile import APPLIED, HELD, NOT_APPLIED, before_state, next_step, what_landed
from kueuetop.kueue.actions import parse_target


def wl(active: bool, generation: int) -> dict:
    return {"metadata": {"generation": generation, "resourceVersion": str(generation)}, "spec": {"active": active}}


@pytest.mark.parametrize("action,before,after,landed", [
    ("preempt", wl(True, 1), wl(False, 2), HELD),  # deactivation landed, reactivation not
    ("preempt", wl(True, 1), wl(True, 3), APPLIED),  # both landed
    ("preempt", wl(True, 1), wl(True, 1), NOT_APPLIED),  # no spec write of ours landed
    ("requeue", wl(False, 4), wl(False, 4), NOT_APPLIED),  # held before us, still held
    ("requeue", wl(True, 1), wl(False, 2), HELD),
    ("hold", wl(True, 1), wl(False, 2), APPLIED),
    ("hold", wl(True, 1), wl(True, 1), NOT_APPLIED),
    ("preempt-and-hold", wl(True, 1), wl(False, 2), APPLIED),
    ("resume", wl(False, 2), wl(True, 3), APPLIED),
    ("resume", wl(False, 2), wl(False, 2), NOT_APPLIED),
    ("preempt", None, wl(False, 2), NOT_APPLIED),  # no PATCH ever left: someone else held it
    ("hold", wl(True, 1), None, NOT_APPLIED),  # deleted meanwhile
])
def test_what_landed(action: str, before: dict | None, after: dict | None, landed: str) -> None:
    assert what_landed(action, before_state(before) if before else None, after) == landed


def test_queue_actions_and_hints() -> None:
    cq = {"metadata": {"generation": 2}, "spec": {"stopPolicy": "HoldAndDrain"}}
    assert what_landed("drain", before_state({"metadata": {"generation": 1}, "spec": {}}), cq) == APPLIED
    assert what_landed("resume-queue", before_state(cq), cq) == NOT_APPLIED
    t = parse_target("team-a/w")
    assert next_step("preempt", t, HELD) == ("team-a/w is held (spec.active=false): run `kueuetop resume team-a/w` "
                                             "to put it back in its queue, or leave it held")
    assert next_step("hold", t, APPLIED) == ""
    assert "kueuetop hold team-a/w" in next_step("hold", t, NOT_APPLIED)
