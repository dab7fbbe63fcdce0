"""`kueuetop forecast` against a served cluster (the real `kubernetes` client over loopback), and on
a scenario: the right workloads, what-ifs that move the right ETAs, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kueuetop.cli import main
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from tests.waiting import wait_until

# Two ClusterQueues of 4 GPUs, each full with a long job. team-a/a-wait waits for cq-a's job;
# team-c/c-wait waits for team-b's job in cq-b; team-a/never-fits asks for more than cq-a has.
SCENARIO = """
apiVersion: v1
kind: Namespace
metadata: {name: team-a}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-c}
---
apiVersion: kueuetop.io/v1
kind: NodePool
metadata: {name: l4-np}
spec:
  machineType: g2-standard-24
  gpu: {model: "NVIDIA L4", count: 4, memoryMiB: 23034}
  zones: [us-central1-a]
  size: 2
  autoscaling: false
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
      resources: [{name: nvidia.com/gpu, nominalQuota: "4"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-b}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: l4
      resources: [{name: nvidia.com/gpu, nominalQuota: "4"}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-a}
spec: {clusterQueue: cq-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-b}
spec: {clusterQueue: cq-b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: team-c}
spec: {clusterQueue: cq-b}
""" + "".join(f"""---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: {name}
  namespace: {ns}
  annotations: {{kueuetop.io/at: "{at}", kueuetop.io/runtime: "10h"}}
spec:
  queueName: lq
  podSets:
  - name: main
    count: 1
    template: {{spec: {{containers: [{{name: c, resources: {{requests: {{nvidia.com/gpu: "{gpus}"}}}}}}]}}}}
""" for ns, name, at, gpus in (("team-a", "a-run", "0s", 4), ("team-b", "b-run", "0s", 4),
                               ("team-a", "a-wait", "1s", 4), ("team-c", "c-wait", "1s", 4),
                               ("team-a", "never-fits", "2s", 64)))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("forecast")
    (d / "s.yaml").write_text(SCENARIO)
    s = start_served(load_scenario(str(d / "s.yaml")), speed=1, kubeconfig=str(d / "kubeconfig"))

    def settled() -> bool:
        with s.parts.cluster.lock:
            wls = s.parts.kueue.snapshot().workloads
        held = {k[1] for k, w in wls.items() if w.has_quota_reservation}
        return len(wls) == 5 and held == {"a-run", "b-run"}

    try:
        assert wait_until(settled, 30, 0.1), "the scenario did not reach its steady state"
        yield s
    finally:
        s.stop()


@pytest.fixture(autouse=True)
def _state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty run history: every runtime is the stated 1 h default.
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("KUEUETOP_STATE_DIR", raising=False)


def _forecast(served: ServedCluster, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["forecast", "--kubeconfig", str(served.kubeconfig), "--timeout", "20s", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _json(served: ServedCluster, capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, err = _forecast(served, capsys, "-o", "json", *args)
    assert code == 0, err
    return json.loads(out)


def test_json_names_the_pending_workloads(served: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(served, capsys)
    assert doc["schema"] == 1 and doc["source"]["kind"] == "cluster" and doc["complete"]
    rows = {(w["namespace"], w["name"]): w for w in doc["workloads"]}
    assert set(rows) == {("team-a", "a-wait"), ("team-c", "c-wait"), ("team-a", "never-fits")}
    a = rows[("team-a", "a-wait")]
    assert a["clusterQueue"] == "cq-a" and a["queue"] == "lq" and a["position"] == 1
    # The running job's runtime is unknown: the 1 h default, counted from its admission.
    assert 3000 < a["eta"]["startInSeconds"] <= 3600
    assert a["eta"]["earliestInSeconds"] < a["eta"]["startInSeconds"] < a["eta"]["latestInSeconds"]
    assert a["after"] == ["team-a/a-run"] and a["preempts"] == []
    assert a["flavors"] == [{"podSet": "main", "flavors": {"nvidia.com/gpu": "l4"}}]
    assert a["basis"] == "default 1h: nothing known" and a["never"] is None
    assert rows[("team-c", "c-wait")]["after"] == ["team-b/b-run"]
    never = rows[("team-a", "never-fits")]
    assert never["eta"]["text"] == "never" and never["eta"]["start"] is None and never["never"]
    assert doc["whatIf"] is None and doc["omitted"] == 0
    # Sorted by start, those that never start last.
    assert doc["workloads"][-1]["name"] == "never-fits"


def test_table_and_filters(served: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _forecast(served, capsys)
    assert code == 0, err
    lines = out.splitlines()
    a = next(line for line in lines if " a-wait " in line)
    assert a.split()[:4] == ["team-a", "a-wait", "cq-a", "#1"] and "team-a/a-run" in a and "~" in a
    assert "Never admitted as the cluster stands (1)" in out
    assert next(line for line in lines if "never-fits" in line).split()[:3] == ["team-a", "never-fits", "cq-a"]
    doc = _json(served, capsys, "-n", "team-c")
    assert [w["name"] for w in doc["workloads"]] == ["c-wait"]
    doc = _json(served, capsys, "team-a/a-wait")
    assert [w["name"] for w in doc["workloads"]] == ["a-wait"]
    doc = _json(served, capsys, "--at-most", "1")
    assert doc["shown"] == 1 and doc["omitted"] == 2


def test_more_quota_starts_the_blocked_workload_now(served: ServedCluster,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(served, capsys, "--with", "quota cq-a nvidia.com/gpu=+4")
    moved = {m["name"]: m for m in doc["whatIf"]["moved"]}
    assert set(moved) == {"a-wait"}  # c-wait, in the other queue, does not move
    m = moved["a-wait"]
    assert m["change"] == "sooner" and m["after"]["text"] == "now" and m["after"]["startInSeconds"] == 0
    assert m["deltaSeconds"] == pytest.approx(-m["before"]["startInSeconds"])
    assert doc["whatIf"]["summary"]["sooner"] == 1 and doc["whatIf"]["summary"]["later"] == 0
    code, out, err = _forecast(served, capsys, "--with", "quota cq-a nvidia.com/gpu=+4")
    assert code == 0, err
    row = next(line for line in out.splitlines() if " a-wait " in line)
    assert "now" in row and "sooner by" in row
    assert "1 workload starts sooner, median" in out and "; 0 later" in out


def test_holding_a_namespace_starts_the_other_queue_now(served: ServedCluster,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    doc = _json(served, capsys, "--with", "hold team-b/*")
    moved = {m["name"]: m for m in doc["whatIf"]["moved"]}
    assert set(moved) == {"c-wait"}
    assert moved["c-wait"]["change"] == "sooner" and moved["c-wait"]["after"]["startInSeconds"] == 0
    after = {w["name"]: w for w in doc["workloads"]}
    assert after["c-wait"]["after"] == ["team-b/b-run"]  # its eviction lets c-wait in
    # --at-most bounds the moved list as it bounds the workloads; the summary still counts all.
    capped = _json(served, capsys, "--with", "hold team-b/*", "--at-most", "0")
    assert capped["whatIf"]["moved"] == [] and capped["whatIf"]["movedOmitted"] == 1
    assert capped["whatIf"]["summary"] == doc["whatIf"]["summary"]
    code, out, _ = _forecast(served, capsys, "--with", "hold team-b/*", "--at-most", "0")
    assert code == 0 and "1 more moved, not shown (--at-most 0)" in out and "No workload's ETA moved" not in out


@pytest.mark.parametrize("spec, message", [
    ("nodes gpu-np=+1", "kueuetop: nodes gpu-np=+1: unknown node pool 'gpu-np' (pools: l4-np)"),
    ("quota cq-z nvidia.com/gpu=+1", "kueuetop: quota cq-z nvidia.com/gpu=+1: unknown ClusterQueue 'cq-z' "
                                     "(ClusterQueues: cq-a, cq-b)"),
    ("quota cq-a cpu=+1", "kueuetop: quota cq-a cpu=+1: ClusterQueue cq-a has no quota for 'cpu' "
                          "(its resources: nvidia.com/gpu)"),
    ("hold team-z/*", "kueuetop: hold team-z/*: no unfinished workload matches team-z/*"),
    ("grow cq-a", "kueuetop: unknown change 'grow' in 'grow cq-a': use 'quota CQ [FLAVOR/]RESOURCE=+N', "
                  "'hold NS/NAME' or 'nodes POOL=+N'"),
])
def test_bad_changes_are_one_line_errors(served: ServedCluster, capsys: pytest.CaptureFixture[str],
                                         spec: str, message: str) -> None:
    code, out, err = _forecast(served, capsys, "--with", spec)
    assert (code, out, err) == (2, "", message + "\n")


def test_unknown_workload(served: ServedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _forecast(served, capsys, "team-a/nope")
    assert code == 1 and out == "" and err.startswith("kueuetop: workload team-a/nope not found")
    code, out, err = _forecast(served, capsys, "team-a/a-run")
    assert code == 1 and "already holds quota" in err and err.count("\n") == 1


def test_on_a_scenario(tmp_path: Path) -> None:
    """`--scenario --at` in its own process: the same workloads, in virtual time."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    res = subprocess.run([sys.executable, "-m", "kueuetop", "forecast", "--scenario", str(path), "--at", "10m",
                          "-o", "json", "--with", "hold team-a/a-run"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["source"] == {"kind": "scenario", "name": "s", "atSeconds": 600.0, "pods": "placed on the node pools"}
    assert doc["at"] == doc["whatIf"]["moved"][0]["after"]["start"]
    assert [(m["name"], m["change"]) for m in doc["whatIf"]["moved"]] == [("a-wait", "sooner")]
    # a-run holds quota since 0s, but its pod is still Pending (it does not tolerate the GPU nodes'
    # taint here): on the scenario's node pools its 1 h default run starts when the forecast places
    # it, now, so a-wait was an hour away.
    assert doc["whatIf"]["moved"][0]["before"]["startInSeconds"] == 3600


def test_workloads_waiting_for_provisioning_are_forecast_on_the_node_pools(capsys: pytest.CaptureFixture[str]) -> None:
    """refarch at 46m: the two DWS fine-tuning jobs hold quota in dws-cluster-queue while their
    ProvisioningRequests (queued provisioning) wait for the DWS pools, asked 3 minutes ago. On
    the scenario's pools the check passes when those nodes are Ready: the a100 pool's 4-minute
    delay, the h100 pool's 5 (the simulator admits them then, `awaitingProvisioningWithPools`
    in benchmarks/forecast.py). Asked about by name, one gets its line."""
    assert main(["forecast", "--scenario", "refarch", "--at", "46m", "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    dws = {w["name"].rsplit("-", 1)[0]: w for w in doc["workloads"] if w["waitsForChecks"]}
    assert set(dws) == {"job-finetune-gemma-2xa100", "job-finetune-gemma-8xh100"}
    assert all(w["waitsForChecks"] == ["dws-prov"] for w in dws.values())
    assert dws["job-finetune-gemma-2xa100"]["eta"]["startInSeconds"] == pytest.approx(60, abs=1)
    assert dws["job-finetune-gemma-8xh100"]["eta"]["startInSeconds"] == pytest.approx(120, abs=1)
    assert doc["awaitingChecks"] == []  # each once: they have their ETA
    one = dws["job-finetune-gemma-2xa100"]["name"]
    assert main(["forecast", "--scenario", "refarch", "--at", "46m", "-o", "json", f"team-a/{one}"]) == 0
    only = json.loads(capsys.readouterr().out)
    assert [w["name"] for w in only["workloads"]] == [one]
    assert main(["forecast", "--scenario", "refarch", "--at", "46m", f"team-a/{one}"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if one in ln)
    assert "~1m" in line and "nodes for dws-prov" in line  # what it waits for: its request's nodes


def test_workloads_waiting_for_checks_without_node_pools_are_listed_with_their_checks(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The same look with the node pools not modelled (a live cluster without an autoscaler's
    status): nothing times the checks, so the DWS jobs get no ETA but are listed with their
    check's state; asked about by name, the one line says so."""
    import argparse
    import dataclasses

    from kueuetop.cli import _forecast_scenario_look
    from kueuetop.live_cli import print_forecast

    args = argparse.Namespace(scenario="refarch", at=46 * 60.0, namespace=None, at_most=None, output="json")
    look, code = _forecast_scenario_look(args)
    assert code == 0
    look = dataclasses.replace(look, pools_known=False)
    assert print_forecast(args, look, [], None) == 0
    doc = json.loads(capsys.readouterr().out)
    waiting = {w["name"].rsplit("-", 1)[0]: w for w in doc["awaitingChecks"]}
    assert set(waiting) == {"job-finetune-gemma-2xa100", "job-finetune-gemma-8xh100"}
    one = waiting["job-finetune-gemma-2xa100"]
    assert one["clusterQueue"] == "dws-cluster-queue" and one["reservedForSeconds"] == 180.0
    assert [(c["name"], c["state"]) for c in one["checks"]] == [("dws-prov", "Pending")]
    assert not {w["name"] for w in doc["workloads"]} & {w["name"] for w in doc["awaitingChecks"]}
    args.output = "table"
    assert print_forecast(args, look, [], None) == 0
    text = capsys.readouterr().out
    assert "Holding quota, waiting for admission checks" in text and "dws-prov Pending" in text
    assert print_forecast(args, look, [], ("team-a", one["name"])) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "waits for its admission checks (dws-prov Pending)" in err
    assert "(node pools not modelled)" in err
