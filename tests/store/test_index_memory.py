"""The store's indexes: a value with one key holds the key itself, not a set of one."""

from __future__ import annotations

from kueuetop.store.indexes import MultiIndex


def test_single_keys_are_held_without_a_set_and_sets_shrink_back() -> None:
    ix = MultiIndex()
    for i in range(1000):
        ix.set(("ns", f"pod-{i}"), (f"uid-{i}", "job-uid"))
    assert not any(type(v) is set for k, v in ix._by_value.items() if k != "job-uid")
    assert ix.get("uid-7") == {("ns", "pod-7")} and ix.get("missing") == set()
    assert len(ix.get("job-uid")) == 1000 and ix.counts()["uid-3"] == 1 and ix.counts()["job-uid"] == 1000
    ix.set(("ns", "other"), ("uid-7",))  # a second key under one value: a set
    assert ix.get("uid-7") == {("ns", "pod-7"), ("ns", "other")}
    ix.remove(("ns", "pod-7"))
    assert ix.get("uid-7") == {("ns", "other")} and type(ix._by_value["uid-7"]) is not set
    for i in range(1000):
        ix.remove(("ns", f"pod-{i}"))
    assert ix.get("job-uid") == set() and "job-uid" not in ix._by_value
    assert ix.values() == ["uid-7"] and ix.values_of(("ns", "other")) == ("uid-7",)
    ix.set(("ns", "other"), ())
    assert ix.values() == [] and ix.get("uid-7") == set()
