"""A controller's dirty keys are drained in order; a bad object costs a log line, not the loop."""

import logging

from kueuetop.sim.work_queue import drain


def test_drain_reconciles_in_order_skips_failures_and_takes_keys_made_dirty_meanwhile(caplog) -> None:
    dirty = {("ns", "a"): None, ("ns", "bad"): None, ("ns", "boom"): None, ("ns", "b"): None}
    seen = []

    def reconcile(key, now):
        seen.append(key[1])
        if key[1] == "bad":
            raise KeyError("spec")
        if key[1] == "boom":
            raise RuntimeError("bug")
        if key[1] == "a":
            dirty[("ns", "again")] = None  # made dirty by its own write
        return key[1] == "b"

    with caplog.at_level(logging.WARNING, logger="kueuetop.sim.work_queue"):
        assert drain(dirty, reconcile, 1.0, "test controller", "thing") is True
    assert seen == ["a", "bad", "boom", "b", "again"] and dirty == {}
    assert "test controller: skipping malformed thing ns/bad: KeyError('spec')" in caplog.text
    assert "test controller: thing ns/boom failed" in caplog.text
    assert drain({}, reconcile, 1.0, "t", "x") is False
