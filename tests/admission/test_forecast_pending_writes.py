"""The forecast's forward run does not write a Pending decision twice into the same version of
a workload, and writes it again once anything else was written into the workload."""

from __future__ import annotations

from kueuetop.admission import status_updates as su
from kueuetop.admission.decisions import Pending
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.forecast import _World
from tests.builders import T0, cluster_queue, fq, group, local_queue, namespace, snapshot, workload

NS = "team-a"
KEY = (NS, "w")


def _world() -> _World:
    snap = snapshot(namespace(NS), cluster_queue("cq", group("cpu", fq("default", cpu=1))),
                    local_queue(NS, "lq", "cq"), workload(NS, "w", "lq", {"cpu": "2"}, created=T0))
    return _World(snap, {}, T0 + 10, EngineCache())


def _apply(world: _World, d: Pending) -> bool:
    wrote = world.write(d.workload, su.apply_decision(world._api(d.workload), d, world.now))
    world.note_pending(d)
    return wrote


def test_the_same_pending_on_the_same_version_is_known_unchanged() -> None:
    world = _world()
    d = Pending(KEY, "Pending", "couldn't assign flavors: 1 more needed", inadmissible=True)
    assert not world.pending_unchanged(d)
    assert _apply(world, d)
    assert world.pending_unchanged(d)
    # What the shortcut stands for: applying it again changes nothing.
    assert not world.write(KEY, su.apply_decision(world._api(KEY), d, world.now + 5))


def test_another_message_or_another_write_makes_it_written_again() -> None:
    world = _world()
    d = Pending(KEY, "Pending", "couldn't assign flavors: 1 more needed", inadmissible=True)
    _apply(world, d)
    assert not world.pending_unchanged(Pending(KEY, "Pending", "couldn't assign flavors: 2 more needed",
                                               inadmissible=True))
    # Something else written into the workload (its condition changed by another writer): the
    # same Pending, told again, has to be written again.
    other = su.unset_quota_reservation(world._api(KEY), world.now, "Pending", "written by someone else")
    assert other is not None and world.write(KEY, other)
    assert not world.pending_unchanged(d)
    assert _apply(world, d)
    assert world.pending_unchanged(d)
