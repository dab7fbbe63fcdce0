"""Two schedulers in one process, and the engine used from several threads at once.

Each scheduler (or preview, or explain) owns an EngineCache; nothing is kept in modules. So:
- two clusters scheduled in turn, each with its cache, decide what each decides alone;
- a thread scheduling cluster A while another explains and previews cluster B (each with its
  own caches), and two threads scheduling the same read-only snapshots with a cache each, give
  the answers of serial runs.
The thread switch interval is made tiny so that threads interleave inside a cycle: state shared
between them (a module-level memo, a kept tree) would be changed under another's feet.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings

from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.explain import explain
from kueuetop.admission.what_if import what_if
from kueuetop.kueue.actions import CLUSTER_QUEUE, WORKLOAD, Target
from tests.admission.engine_runs import ClusterRun, cluster_spec, replay, run_alone
from tests.builders import T0

CYCLES = 5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=cluster_spec, b=cluster_spec)
def test_two_schedulers_interleaved_answer_as_each_alone(a, b):
    alone_a, alone_b = run_alone(a, CYCLES), run_alone(b, CYCLES)
    run_a, run_b = ClusterRun(a, EngineCache()), ClusterRun(b, EngineCache())
    for cycle in range(CYCLES):
        assert run_a.step() == alone_a[cycle], ("a", cycle)
        assert run_b.step() == alone_b[cycle], ("b", cycle)


@contextmanager
def _tiny_switch_interval() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _in_threads(*jobs: Callable[[], object]) -> list[object]:
    results: list[object] = [None] * len(jobs)
    errors: list[BaseException] = []
    start = threading.Barrier(len(jobs))

    def run(i: int, job: Callable[[], object]) -> None:
        try:
            start.wait()
            results[i] = job()
        except BaseException as exc:  # handed to the test thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    with _tiny_switch_interval():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if errors:
        raise errors[0]
    return results


# Clusters busy enough that cycles preempt and admit for several rounds.
_BUSY = {"cqs": [{"nominal": [3, 2], "borrowing": 2, "lending": None, "within": "LowerPriority",
                  "reclaim": "Any", "borrow_within": True, "threshold": None}] * 3,
         "cohorted": True, "fair": False,
         "wls": [{"cq": i % 3, "cpu": 1 + i % 4, "priority": i % 5, "tolerates": i % 2 == 0,
                  "admitted": i % 3 == 0, "spot": i % 4 == 0} for i in range(12)]}
_FAIR = {**_BUSY, "fair": True,
         "wls": [{**w, "priority": (w["priority"] * 3) % 5} for w in _BUSY["wls"]]}


def _explain_and_preview(run: ClusterRun, cache: EngineCache, preview_cache: EngineCache) -> list:
    """Explain every workload of each recorded snapshot, then preview the cluster."""
    out: list = []
    for i, snap in enumerate(run.snapshots):
        for key in sorted(snap.workloads):
            out.append(explain(snap, key, T0 + 100 + i, None, cache))
    for action, target in (("hold", Target(WORKLOAD, "w0", "ns")), ("drain", Target(CLUSTER_QUEUE, "cq1"))):
        preview = what_if(run.objects(), action, target, T0 + 200, config=run.config, cache=preview_cache)
        out.append((preview.admitted, preview.evicted, preview.preempted, preview.outcome.objects))
    return out


def test_scheduling_one_cluster_while_explaining_and_previewing_another():
    b = ClusterRun(_FAIR, EngineCache())
    for _ in range(CYCLES):
        b.step()
    serial_a = run_alone(_BUSY, CYCLES)
    serial_b = _explain_and_preview(b, EngineCache(), EngineCache())
    for _ in range(3):
        threaded_a, threaded_b = _in_threads(lambda: run_alone(_BUSY, CYCLES, EngineCache()),
                                             lambda: _explain_and_preview(b, EngineCache(), EngineCache()))
        assert threaded_a == serial_a
        assert threaded_b == serial_b


def test_two_threads_scheduling_the_same_snapshots_each_with_its_cache():
    for spec in (_BUSY, _FAIR):
        run = ClusterRun(spec, EngineCache())
        serial = [run.step() for _ in range(CYCLES)]
        assert any(o.decisions for o in serial)
        snaps = run.snapshots
        for _ in range(3):
            one, two = _in_threads(lambda snaps=snaps: replay(snaps, EngineCache()),
                                   lambda snaps=snaps: replay(snaps, EngineCache()))
            assert one == serial and two == serial


def test_one_cache_shared_by_two_threads_serves_them_in_turn():
    """A cache is for one caller at a time; two threads handed the same one wait for each
    other (its lock) and still get serial answers."""
    run = ClusterRun(_BUSY, EngineCache())
    serial = [run.step() for _ in range(CYCLES)]
    shared = EngineCache()
    one, two = _in_threads(lambda: replay(run.snapshots, shared), lambda: replay(run.snapshots, shared))
    assert one == serial and two == serial
