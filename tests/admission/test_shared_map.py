"""SharedMap: every version reads as the dict it stands for, in the dict's order, and evolving
never changes an older version."""

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kueuetop.admission import shared_map
from kueuetop.admission.shared_map import DELETE, SharedMap

KEYS = st.tuples(st.sampled_from(["ns-a", "ns-b"]), st.integers(0, 40).map(lambda i: f"w{i}"))
CHANGE = st.tuples(KEYS, st.one_of(st.integers(0, 5), st.just(DELETE)))


def _apply(model: dict, changes: dict) -> dict:
    out = dict(model)
    for k, v in changes.items():
        if v is DELETE:
            out.pop(k, None)
        else:
            out[k] = v  # an existing key keeps its place, a new (or re-added) one goes last
    return out


def _same(m: SharedMap, model: dict) -> None:
    assert list(m.items()) == list(model.items())  # the order too
    assert list(m) == list(model) and list(m.values()) == list(model.values())
    assert len(m) == len(model)
    for k in model:
        assert k in m and m[k] == model[k] and m.get(k) == model[k]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(KEYS, st.one_of(st.integers(0, 5), st.just(DELETE)), max_size=12),
                max_size=25),
       st.integers(1, 4))
def test_versions_read_as_their_dicts(batches, chunk):
    m, model = SharedMap.of(chunk=chunk), {}  # tiny chunks: many chunks, moves and compactions
    versions = [(m, model)]
    for changes in batches:
        model = _apply(model, changes)
        m = m.evolve(changes)
        versions.append((m, model))
    for m, model in versions:  # every older version is still what it was
        _same(m, model)
        for k in {k for changes in batches for k in changes} - model.keys():
            assert k not in m and m.get(k, "none") == "none"
            with pytest.raises(KeyError):
                m[k]


def test_a_key_deleted_and_added_again_is_found_in_old_and_new_versions():
    v1 = SharedMap.of({"a": 1, "b": 2, "c": 3}, chunk=2)
    v2 = v1.evolve({"a": DELETE})
    v3 = v2.evolve({"d": 4, "a": 5})  # "a" comes back, last
    assert list(v3.items()) == [("b", 2), ("c", 3), ("d", 4), ("a", 5)]
    assert v1["a"] == 1 and "a" not in v2 and v3["a"] == 5
    assert list(v1.items()) == [("a", 1), ("b", 2), ("c", 3)]


def test_unchanged_chunks_are_shared_and_only_the_newest_evolves():
    base = SharedMap.of({("ns", f"w{i}"): i for i in range(3 * shared_map.CHUNK)})
    nxt = base.evolve({("ns", "w0"): -1})
    assert nxt._chunks[0] is not base._chunks[0]
    assert all(a is b for a, b in zip(nxt._chunks[1:], base._chunks[1:], strict=True))
    assert base[("ns", "w0")] == 0 and nxt[("ns", "w0")] == -1
    assert nxt.evolve({}) is nxt
    # An older version evolves into a lineage of its own; the newer one is untouched.
    other = base.evolve({("ns", "w1"): 7})
    assert other[("ns", "w1")] == 7 and other[("ns", "w0")] == 0
    assert nxt[("ns", "w1")] == 1 and nxt[("ns", "w0")] == -1 and base[("ns", "w1")] == 1
    assert nxt.evolve({("ns", "new"): 1})[("ns", "new")] == 1 and ("ns", "new") not in other


def test_two_threads_evolving_one_version_get_separate_maps():
    """What-if previews replay the queue state on other threads while the scheduler moves on."""
    base = SharedMap.of({i: 0 for i in range(2_000)}, chunk=16)
    results: dict[int, SharedMap] = {}
    start = threading.Barrier(4)

    def grow(n: int) -> None:
        start.wait()
        m = base
        for r in range(50):
            m = m.evolve({n * 10_000 + r: n, r: n, 1_000 + r: DELETE})
        results[n] = m

    threads = [threading.Thread(target=grow, args=(n,)) for n in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for n, m in results.items():
        expect = {i: 0 for i in range(2_000)}
        for r in range(50):
            expect[n * 10_000 + r] = n
            expect[r] = n
            expect.pop(1_000 + r, None)
        assert dict(m.items()) == expect and len(m) == len(expect)
        assert all(m[k] == v for k, v in expect.items())
    assert dict(base.items()) == {i: 0 for i in range(2_000)}


def test_readers_in_another_thread_see_a_whole_version():
    """The API server's threads read a snapshot while the simulation evolves the next one."""
    m = SharedMap.of({i: 0 for i in range(5_000)})
    old = m
    stop, seen = threading.Event(), []

    def read() -> None:
        while not stop.is_set():
            seen.append(sum(old.values()))

    t = threading.Thread(target=read, daemon=True)
    t.start()
    try:
        for round_ in range(1, 200):
            m = m.evolve({i: round_ for i in range(round_ % 50, 5_000, 50)} | {10_000 + round_: 1})
    finally:
        stop.set()
        t.join(10)
    assert seen and set(seen) == {0}
    assert len(m) == 5_000 + 199
