"""`kueuetop forecast -o json`: when a workload's pods run, given only when pods were placed on pools."""

from __future__ import annotations

from kueuetop.admission.forecast_result import Forecast, WorkloadForecast
from kueuetop.views.forecast_report import workload_rows
from tests.builders import T0, cluster_queue, flavor, fq, group, local_queue, snapshot, workload

GPU = "nvidia.com/gpu"


def test_the_pods_start_is_told_when_the_pools_were_modelled_and_null_otherwise() -> None:
    snap = snapshot(flavor("l4"), cluster_queue("cq", group(GPU, fq("l4", **{GPU: 4}))),
                    local_queue("team-a", "lq", "cq"), workload("team-a", "w", "lq", {GPU: "4"}, created=T0))
    key = ("team-a", "w")
    wf = WorkloadForecast(key, "cq", T0 + 600, T0 + 600, T0 + 600, pods_start=T0 + 780)
    placed = Forecast(at=T0, horizon=T0 + 86400, workloads={key: wf}, pods_placed=True)
    (row,) = workload_rows(snap, placed, [key])
    assert row["eta"]["startInSeconds"] == 600
    assert row["podsStartInSeconds"] == 780 and row["podsStart"] == "2023-11-14T22:26:20Z"
    unplaced = Forecast(at=T0, horizon=T0 + 86400, workloads={key: wf})
    (row,) = workload_rows(snap, unplaced, [key])
    assert row["podsStart"] is None and row["podsStartInSeconds"] is None
