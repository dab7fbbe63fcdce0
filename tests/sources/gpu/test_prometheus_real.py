"""PrometheusSource against a real Prometheus scraping the simulated refarch fleet.

One module-scoped cluster and Prometheus; the steps run in order, as a console would live them:
data for every GPU node, pod attribution, history, Prometheus dying and coming back, and the
idle-GPU join. Every wait is bounded.
"""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.gpu_join import BUSY, IDLE, workload_gpu_use
from kueuetop.sources.prom import PromConfig, PrometheusSource

from .conftest import PrometheusProcess, gpu_nodes, raw_list, running_gpu_pods, wait_for

pytestmark = pytest.mark.needs_binary


@pytest.fixture(scope="module")
def source(prometheus: PrometheusProcess) -> PrometheusSource:
    return PrometheusSource(PromConfig(url=prometheus.url, timeout=3.0, scrape_interval=1.0, stale_after=15.0))


def test_every_gpu_node_has_samples(source: PrometheusSource, api: client.ApiClient) -> None:
    def complete():
        reading = source.gpus()
        nodes = gpu_nodes(api)
        seen = {s.node for s in reading.samples if not s.stale}
        return reading if nodes and seen == nodes else None

    reading = wait_for("samples for every GPU node", complete, timeout=25)
    assert source.status.ok and not reading.stale
    assert all(s.model == "NVIDIA L4" and s.mem_total_mib and s.temp_c and s.power_w for s in reading.samples)
    assert all(s.gpu in ("0", "1") for s in reading.samples)


def test_allocated_gpus_carry_workload_pods(source: PrometheusSource, api: client.ApiClient) -> None:
    def attributed():
        running = running_gpu_pods(api)
        reading = source.gpus()
        pods = {(s.namespace, s.pod) for s in reading.samples if s.allocated}
        return (reading, running) if running and running <= pods else None

    reading, running = wait_for("pod labels on allocated GPUs", attributed, timeout=20)
    # exported_pod won over the exporter's own pod label; free GPUs are unassigned, not the exporter's
    assert not any(s.pod.startswith("nvidia-dcgm-exporter") for s in reading.samples)
    busy = [s for s in reading.samples if (s.namespace, s.pod) in running]
    assert busy and all(s.util is not None and s.util > 30 for s in busy)


def test_history_and_distribution(source: PrometheusSource) -> None:
    hist = wait_for("5 points of history", lambda: (h := source.util_history(10, step=1)) and
                    h.series and max(len(p) for p in h.series.values()) >= 5 and h, timeout=15)
    assert not hist.stale and all(k[1] in ("0", "1") for k in hist.series)
    per_node = source.util_history(10, step=1, per="node")
    assert per_node.series and all(k[1] == "" for k in per_node.series)
    dist = source.util_distribution(10, step=1)
    assert dist.buckets == list(range(0, 100, 10)) and len(dist.times) >= 10
    totals = [sum(col) for col in zip(*dist.counts, strict=True)]
    gpus = len([s for s in source.gpus().samples if not s.stale])
    assert max(totals) <= gpus + 8 and totals[-1] > 0  # + nodes that scaled in during the window
    assert sum(sum(row) for row in dist.counts[6:]) > 0  # the 65-85 % jobs land in the top buckets
    nodes = source.nodes()
    assert nodes.nodes and all(n.gpus == 2 and n.mem_total_mib for n in nodes.nodes)
    assert {n.node for n in nodes.nodes} == {s.node for s in source.gpus().samples if not s.stale}


def test_prometheus_down_keeps_last_data_stale_then_recovers(source: PrometheusSource,
                                                             prometheus: PrometheusProcess) -> None:
    # Waits for data of its own: the tests of this module may run on several workers, each with
    # its own Prometheus, and this one may be the first to ask it.
    before = wait_for("samples before the kill", lambda: (r := source.gpus()) and r.samples and not r.stale and r,
                      timeout=25)
    assert before.samples and not before.stale
    prometheus.kill()
    down = source.gpus()
    assert down.stale and not source.status.ok
    assert "connection refused" in source.status.message and "showing data from" in source.status.message
    assert [s.key for s in down.samples] == [s.key for s in before.samples]
    assert all(s.stale for s in down.samples)
    assert [s.util for s in down.samples] == [s.util for s in before.samples]  # kept, not zeroed
    time.sleep(1.2)
    again = source.gpus()
    age = again.status.age()
    assert age is not None and age >= 1.0
    assert source.util_history(10, step=1).stale  # every view falls back to its last data
    prometheus.start()
    fresh = wait_for("fresh data after restart",
                     lambda: (r := source.gpus()) and not r.stale and r.samples and
                     not any(s.stale for s in r.samples if s.node in {x.node for x in before.samples}) and r,
                     timeout=20)
    assert source.status.ok and source.status.age() is not None and source.status.age() < 5
    assert fresh.samples


def test_bad_query_is_a_status_not_an_exception(source: PrometheusSource) -> None:
    broken = PrometheusSource(PromConfig(url=source.config.url, selector='cluster=~"('))
    r = broken.gpus()
    assert r.stale and r.samples == [] and "HTTP 400" in broken.status.message


def test_idle_refarch_jobs_are_admitted_but_idle(source: PrometheusSource, api: client.ApiClient,
                                                  served: ServedCluster) -> None:
    idle_for = 4.0

    def idle_pods_running():
        pods = raw_list(api, "/api/v1/namespaces/team-c/pods")
        run = [p for p in pods if p["metadata"]["name"].startswith("team-c-high-priority-job-0")
               and (p.get("status") or {}).get("phase") == "Running"]
        return len(run) == 2 and time.time()

    started = wait_for("team-c-high-priority-job-0 running", idle_pods_running, timeout=45, interval=0.5)

    def judged():
        now = time.time()
        reading = source.gpus()
        # History only since the idle pods started: before, those GPUs were free (also 0 %).
        hist = source.util_history(max(1.0, now - started), step=1, end=now)
        pods = raw_list(api, "/api/v1/pods")
        wls = raw_list(api, "/apis/kueue.x-k8s.io/v1beta2/workloads")
        jobs = raw_list(api, "/apis/batch/v1/jobs")
        # The simulator's clock runs 20× faster than Prometheus' wall clock: don't mix them.
        use = workload_gpu_use(reading.samples, pods, wls, owners=jobs, sharers=reading.sharers,
                               history=hist.series, now=now, idle_for=idle_for, since_admission=False)
        mine = [u for u in use.values() if u.namespace == "team-c" and "high-priority-job-0" in u.name]
        return use if mine and mine[0].state == IDLE else None

    use = wait_for("team-c-high-priority-job-0 judged idle", judged, timeout=25, interval=1.0)
    idle = {k for k, u in use.items() if u.admitted_but_idle}
    assert all("high-priority-job-0" in k[1] or "high-priority-job-1" in k[1] for k in idle)
    tc = next(u for u in use.values() if u.namespace == "team-c" and "high-priority-job-0" in u.name)
    assert len(tc.pods) == 2 and len(tc.gpus) == 4  # 2 pods × 2 L4 each
    assert tc.util_max is not None and tc.util_max < 5
    assert any(u.state == BUSY for u in use.values())
    # team-d-high-priority-job-1, the other "idle" job, must never read as busy
    td = [u for u in use.values() if u.namespace == "team-d" and "high-priority-job-1" in u.name]
    assert all(u.state != BUSY for u in td)


def test_xid_and_ecc_errors_reach_the_samples(source: PrometheusSource, api: client.ApiClient) -> None:
    """A GPU fault, as dcgm-exporter reports it (the last XID's code; double-bit ECC errors),
    arrives through Prometheus on the right device, and nowhere else."""
    node = sorted(gpu_nodes(api))[0]
    core = client.CoreV1Api(api)
    core.patch_node(node, {"metadata": {"annotations": {"kueuetop.io/gpu-xid": "1=79",
                                                        "kueuetop.io/gpu-ecc-dbe": "1=3"}}})
    try:
        def faulty():
            reading = source.gpus()
            hit = [s for s in reading.samples if s.node == node and s.gpu == "1" and not s.stale]
            return (reading, hit[0]) if hit and hit[0].xid == 79 and hit[0].ecc_dbe == 3 else None

        reading, sample = wait_for("XID 79 and 3 ECC errors on GPU 1", faulty, timeout=20)
        assert sample.faulty
        assert not any(s.xid or s.ecc_dbe for s in reading.samples if (s.node, s.gpu) != (node, "1"))
    finally:
        core.patch_node(node, {"metadata": {"annotations": {"kueuetop.io/gpu-xid": None,
                                                            "kueuetop.io/gpu-ecc-dbe": None}}})
