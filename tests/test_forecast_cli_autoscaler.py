"""`kueuetop forecast` on a live cluster reads how far its node pools may grow from
cluster-autoscaler's status ConfigMap (`kube-system/cluster-autoscaler-status`), which the
simulated autoscaler writes as cluster-autoscaler ≥ 1.30 does; the real `kubernetes` client over
loopback. Without it (a 404) and with no Karpenter node the pools are taken as fixed; when it
cannot be read (a 403), pods are taken to run when admitted, and the forecast's source line says why.
The console's forecast worker reads it the same way, so its ETA column agrees with the command."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kueuetop.admission.forecast_result import Forecast
from kueuetop.cli import main
from kueuetop.kueue.pool_growth import AutoscalerRead
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources.autoscaler_status import read_autoscaler_status
from kueuetop.sources.connection import connect
from kueuetop.sources.kube import KubeSources
from kueuetop.store import Store
from kueuetop.tui.forecaster import Forecaster
from kueuetop.views.eta_text import eta_sentence
from kueuetop.views.forecast_report import FIXED_NOTE, POD_NOTE_AUTOSCALER, POD_NOTE_FIXED, POD_NOTE_RUN
from tests.waiting import FAST, wait_until

# One autoscaled pool of 4-GPU nodes: 1 node, up to 2, a new node 10 minutes after a scale-up.
# a-run fills node 1 (for 2 h at most: its max-exec-time label); b-run has quota but its pod waits
# for node 2 (asked for, not there yet); c-wait waits for quota until b-run's run ends, which is
# 1 h (the default, no history) after its pod starts.
SCENARIO = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: kueuetop.io/v1
kind: NodePool
metadata: {name: l4-np}
spec:
  machineType: g2-standard-48
  gpu: {model: "NVIDIA L4", count: 4, memoryMiB: 23034}
  zones: [us-central1-a]
  size: 1
  maxSize: 2
  autoscaling: true
  provisioningDelay: 10m
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: l4}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: l4
      resources: [{name: nvidia.com/gpu, nominalQuota: "8"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq-a}
""" + "".join(f"""---
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  namespace: team-a
  labels: {{kueue.x-k8s.io/queue-name: lq{limit}}}
  annotations: {{kueuetop.io/at: "{at}", kueuetop.io/runtime: "10h"}}
spec:
  suspend: true
  template:
    spec:
      tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
      containers: [{{name: c, image: busybox, resources: {{requests: {{nvidia.com/gpu: "4"}}}}}}]
      restartPolicy: Never
""" for name, at, limit in (("a-run", "0s", ", kueue.x-k8s.io/max-exec-time-seconds: '7200'"), ("b-run", "1s", ""),
                            ("c-wait", "2s", "")))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("forecast-ca")
    (d / "s.yaml").write_text(SCENARIO)
    s = start_served(load_scenario(str(d / "s.yaml")), speed=1, kubeconfig=str(d / "kubeconfig"))

    def settled() -> bool:
        with s.parts.cluster.lock:
            wls = s.parts.kueue.snapshot().workloads
            status = s.parts.cluster.store.try_get("", "configmaps", "kube-system", "cluster-autoscaler-status")
        held = {k[1].rsplit("-", 1)[0].removeprefix("job-") for k, w in wls.items() if w.has_quota_reservation}
        return len(wls) == 3 and held == {"a-run", "b-run"} and status is not None \
            and "cloudProviderTarget: 2" in status["data"]["status"]

    try:
        assert wait_until(settled, 30, 0.1), "the scenario did not reach its steady state"
        yield s
    finally:
        s.stop()


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))  # no history: 1 h defaults
    monkeypatch.delenv("KUEUETOP_STATE_DIR", raising=False)


def _doc(served: ServedCluster, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    code = main(["forecast", "--kubeconfig", str(served.kubeconfig), "--timeout", "20s", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out), err


def test_the_autoscalers_limits_place_the_pods_and_say_so(served: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    doc, err = _doc(served, capsys)
    assert "cluster-autoscaler's limits" in doc["source"]["pods"] and "120s" in doc["source"]["pods"]
    assert "autoscaler limits" not in err
    (c,) = [w for w in doc["workloads"] if w["name"].startswith("job-c-wait")]
    # b-run's pod starts when the node asked for is Ready (taken as 120 s from now), and its 1 h
    # runs from then: c-wait gets its quota about 3,720 s from now, not 3,600 s from b-run's admission.
    assert 3700 <= c["eta"]["startInSeconds"] <= 3720
    assert c["podsStartInSeconds"] == c["eta"]["startInSeconds"]  # b-run's node is there by then: no wait


def test_without_the_status_the_pools_are_taken_as_fixed_and_the_forecast_says_so(
        served: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    store = served.parts.cluster.store
    with served.parts.cluster.lock:
        saved = store.get("", "configmaps", "kube-system", "cluster-autoscaler-status")
        store.delete("", "configmaps", "kube-system", "cluster-autoscaler-status")
    try:
        doc, err = _doc(served, capsys)
    finally:  # put it back as it was for the other tests (the simulated autoscaler writes it on changes only)
        with served.parts.cluster.lock:
            saved["metadata"].pop("resourceVersion", None)
            store.create("", "configmaps", saved)
    # No status and no Karpenter node: nothing grows the pools, the one node is all there is.
    assert doc["source"]["pods"] == f"placed on the node pools {FIXED_NOTE}"
    assert err == ""
    (b,) = [w for w in doc["workloads"] if w["name"].startswith("job-b-run")] or [None]
    assert b is None  # b-run holds quota: not pending, not answered
    (c,) = [w for w in doc["workloads"] if w["name"].startswith("job-c-wait")]
    # a-run ends at its 2 h limit (from admission at ~0 s) and gives c-wait its quota; the node it
    # leaves goes to b-run's pod, waiting since admission, and c-wait's pod has a node only when
    # b-run's 1 h run ends. With the autoscaler's new node: admitted at ~1 h 2 m, pods at once.
    assert 7_100 <= c["eta"]["startInSeconds"] <= 7_200
    assert c["podsStartInSeconds"] == pytest.approx(c["eta"]["startInSeconds"] + 3600, abs=1)


@contextlib.contextmanager
def console_store(served: ServedCluster) -> Iterator[tuple[Store, Any]]:
    """A console's store synced from the served cluster, and the API client it reads with."""
    conn = connect(str(served.kubeconfig))
    store = Store()
    sources = KubeSources(conn, store, config=FAST).start()
    try:
        assert wait_until(sources.synced, 10), store.sources()
        yield store, conn.api
    finally:
        sources.stop(timeout=2.0)
        conn.close()


def test_the_consoles_forecast_places_the_pods_as_the_command_does(served: ServedCluster) -> None:
    with console_store(served) as (store, api):
        # As the console wires it (tui/app.py): the status read on the worker's thread.
        worker = Forecaster(store, pool_limits=lambda: read_autoscaler_status(api))
        fc = worker.run_once()
        blind = Forecaster(store).run_once()  # no API to read the status with: pods run when admitted
    assert isinstance(fc, Forecast) and isinstance(blind, Forecast)
    assert worker.pods == POD_NOTE_AUTOSCALER and fc.pods_placed and not blind.pods_placed
    (c,) = [w for k, w in fc.workloads.items() if k[1].startswith("job-c-wait")]
    (c_blind,) = [w for k, w in blind.workloads.items() if k[1].startswith("job-c-wait")]
    # The same answer as `kueuetop forecast`: b-run's 1 h counts from its pod's start, ~120 s on.
    assert c.start is not None and 3700 <= c.start - fc.at <= 3720
    assert c_blind.start is not None and 3500 <= c_blind.start - blind.at <= 3600
    # b-run is running, so c-wait's own pod has a node the instant it is admitted: no wait to tell.
    assert c.pods_start == c.start and "wait" not in eta_sentence(c, fc, fc.at)


def test_the_console_takes_the_pools_as_fixed_without_a_status_as_the_command_does(served: ServedCluster) -> None:
    absent = AutoscalerRead(None, "autoscaler limits: no configmap kube-system/cluster-autoscaler-status", absent=True)
    with console_store(served) as (store, _):
        worker = Forecaster(store, pool_limits=lambda: absent)
        fc = worker.run_once()
    assert isinstance(fc, Forecast) and fc.pods_placed
    assert worker.pods == POD_NOTE_FIXED and fc.pods_note == POD_NOTE_FIXED
    (c,) = [w for k, w in fc.workloads.items() if k[1].startswith("job-c-wait")]
    assert c.start is not None and c.pods_start is not None
    assert 7_100 <= c.start - fc.at <= 7_200 and c.pods_start - c.start == pytest.approx(3600, abs=1)
    assert "its pods wait 1h more for nodes" in eta_sentence(c, fc, fc.at)
    assert eta_sentence(c, fc, fc.at).endswith(POD_NOTE_FIXED)


def test_an_unreadable_status_leaves_the_pods_running_at_admission_and_says_why(served: ServedCluster) -> None:
    calls = []

    def unreadable() -> AutoscalerRead:
        calls.append(1)
        return AutoscalerRead(None, "autoscaler limits: forbidden: get configmaps in kube-system")

    with console_store(served) as (store, _):
        worker = Forecaster(store, pool_limits=unreadable)
        fc = worker.run_once()
        worker.now()
        worker.run_once()  # a second forecast within the minute reads nothing again
    assert isinstance(fc, Forecast) and not fc.pods_placed
    assert worker.pods == "pods run when admitted (node pools not modelled: autoscaler limits: forbidden: get " \
                          "configmaps in kube-system)" and worker.pods.startswith(POD_NOTE_RUN[:-1])
    assert calls == [1]
