"""The forecast with node pools is the simulator's future on `refarch`, compact jobs included.

refarch's compact-placement Jobs each select their own A100 pool (a placement group) that node
auto-provisioning makes per job: the pool has no node until the job's pods ask, then one is Ready
3 minutes later. A forecast that ran those pods at admission, or on any pool of the flavor, was
3 minutes early for every compact job after the first, per job in the chain (up to 9 minutes).
With the pools as the autoscaler knows them (`sim.observed.node_pools_of`: empty pools included,
the pods' own nodeSelector honoured, a running job counted from its pods' start) and exact
runtimes, every workload pending at T is admitted within a second of the forecast."""

from __future__ import annotations

import pytest

from kueuetop.admission.forecast import forecast
from kueuetop.sim.clock import SimClock
from kueuetop.sim.observed import admissions, exact_runtimes, node_pools_of, snapshot_of
from kueuetop.sim.runner import VIRTUAL_EPOCH
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.wiring import build_cluster

IDLE = 30 * 24 * 3600.0


@pytest.mark.parametrize("at", [993.0, 1390.0, 1949.0])  # compact jobs pending; their pools scaling; the JobSet wave
def test_every_pending_workload_is_admitted_when_the_forecast_with_pools_says(at: float) -> None:
    parts = build_cluster(load_scenario("refarch"), SimClock(VIRTUAL_EPOCH), record_events=False)
    cluster = parts.cluster
    cluster.run_for(at)
    cluster.drop_later_steps()
    now = cluster.clock.now()
    snap = snapshot_of(cluster.store, parts.kueue.config)
    runtimes = exact_runtimes(cluster.store)
    pools, placements = node_pools_of(cluster.store, parts.extra.get("node-pools"))
    pending = [k for k, w in snap.workloads.items() if not w.has_quota_reservation and not w.is_finished]
    compact = [k for k in pending if "compact" in k[1]]
    assert compact, "the instant has compact jobs waiting"
    mark = len(parts.recorder.events)
    f = forecast(snap, runtimes, now, ranges=False, pools=pools, placements=placements)
    cluster.run_for(IDLE, until_idle=True)
    actual = admissions(parts.recorder.events, cluster.clock.start, mark)
    diffs = [f"{k[1]}: forecast +{f.workloads[k].start - now:.0f}, simulator +{actual[k] - now:.0f}"
             for k in sorted(pending)
             if f.workloads[k].start is None or k not in actual or abs(f.workloads[k].start - actual[k]) > 1]
    assert not diffs, f"{len(diffs)}/{len(pending)} differ:\n" + "\n".join(diffs)
    # The pools mattered: without them the compact jobs after the first come out early.
    plain = forecast(snap, runtimes, now, ranges=False)
    assert any(abs(plain.workloads[k].start - actual[k]) > 60 for k in compact)
