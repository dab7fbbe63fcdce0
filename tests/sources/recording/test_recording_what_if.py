"""`kueuetop sim run --from-recording FILE --with SPEC` on a real recording: `kueuetop record`
against a served refarch, then the recorded history run as recorded and with the changes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kueuetop.cli import main
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import start_served
from kueuetop.views.forecast_report import MOVED_WITHIN


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("whatif")
    # Held still from its first instant until the recorder runs: the recorded history then begins
    # at the scenario's start however long the cluster and the recorder took to start (on a loaded
    # machine, seconds, which at 20x were minutes: the spot scale-ups were over before it began).
    served = start_served(load_scenario("refarch"), speed=20, kubeconfig=str(d / "kubeconfig"), paused=True)
    clock = served.parts.cluster.clock
    path = d / "refarch.ktrec"
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
        proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "record", "--kubeconfig", str(served.kubeconfig),
                                 "-o", str(path)], env=env, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        first = proc.stderr.readline()  # "kueuetop: recording <server> to <path> (Ctrl-C stops)", sources running
        time.sleep(1.0)  # their first lists
        start = clock.now()
        clock.resume()
        # Four simulated minutes, however fast the loaded machine runs the simulation.
        deadline = time.monotonic() + 120
        while clock.now() - start < 240 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.0)  # the recorder's last frames
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 0, first + err
    finally:
        clock.resume()
        served.stop()
    yield path


def _what_if(capsys: pytest.CaptureFixture[str], path: Path, *changes: str) -> dict[str, Any]:
    args = ["sim", "run", "--from-recording", str(path), "--report", "json"]
    for c in changes:
        args += ["--with", c]
    code = main(args)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_more_spot_nodes_start_some_workloads_sooner(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _what_if(capsys, recording, "nodes spot-np=+8")
    rows = doc["workloads"]
    # The recorded workloads that waited for spot-np's autoscaler start as soon as admitted.
    # (Not "none later": earlier starts finish earlier, and Kueue may then pick another flavor
    # for a later workload, one whose nodes are busy; the wait saved in all is what must grow.)
    assert doc["summary"]["sooner"] >= 1 and doc["summary"]["noLongerStarts"] == 0
    assert all(r["deltaSeconds"] is not None for r in rows)
    assert doc["summary"]["sooner"] > doc["summary"]["later"]
    assert doc["summary"]["savedTotalSeconds"] > MOVED_WITHIN
    sooner = [r for r in rows if r["change"] == "sooner"]
    assert all(r["after"]["waitSeconds"] < r["before"]["waitSeconds"] for r in sooner)
    assert doc["summary"]["savedTotalSeconds"] == pytest.approx(-sum(r["deltaSeconds"] for r in rows), abs=0.01)
    assert doc["errors"] == []


def test_holding_a_namespace_removes_its_workloads_from_the_second_run(
        recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _what_if(capsys, recording, "hold team-b/*")
    team_b = [r for r in doc["workloads"] if r["namespace"] == "team-b"]
    assert team_b, "team-b's workloads started as recorded"
    assert all(r["before"] is not None and r["after"] is None and r["change"] == "noLongerStarts" for r in team_b)
    others = [r for r in doc["workloads"] if r["namespace"] != "team-b"]
    assert others and all(r["after"] is not None for r in others)
    by_ns = {g["namespace"]: g for g in doc["byNamespace"]}
    assert by_ns["team-b"]["noLongerStarts"] == len(team_b) and by_ns["team-b"]["savedMedianSeconds"] is None
    assert doc["summary"]["noLongerStarts"] == len(team_b)


def test_an_unknown_pool_is_a_one_line_error_naming_it(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "run", "--from-recording", str(recording), "--with", "nodes gpu-pool=+8"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "unknown node pool 'gpu-pool'" in err and "spot-np" in err
    code = main(["sim", "run", "--from-recording", str(recording), "--with", "hold team-z/*"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "no workload matches team-z/*" in err


def test_json_shape_and_table(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = _what_if(capsys, recording, "nodes spot-np=+8", "quota cq-team-a-lp gpu-l4-spot/nvidia.com/gpu=+4")
    assert set(doc) == {"schema", "recording", "simulatedSeconds", "changes", "workloads", "byNamespace",
                        "byClusterQueue", "summary", "errors"}
    assert doc["schema"] == 1 and doc["recording"]["name"] == recording.name
    assert doc["changes"] == ["nodes spot-np=+8", "quota cq-team-a-lp gpu-l4-spot/nvidia.com/gpu=+4"]
    row = doc["workloads"][0]
    assert set(row) == {"namespace", "name", "clusterQueue", "createdSeconds", "before", "after", "change",
                        "deltaSeconds"}
    assert set(row["before"]) == {"startSeconds", "waitSeconds"}
    counts = {"workloads", "sooner", "later", "unchanged", "starts", "noLongerStarts", "savedMedianSeconds",
              "savedTotalSeconds"}
    assert set(doc["byClusterQueue"][0]) == counts | {"clusterQueue"}
    assert set(doc["byNamespace"][0]) == counts | {"namespace"}
    assert sum(g["workloads"] for g in doc["byClusterQueue"]) == len(doc["workloads"]) == doc["summary"]["workloads"]
    assert set(doc["summary"]) == counts | {"text"}
    code = main(["sim", "run", "--from-recording", str(recording), "--with", "nodes spot-np=+8"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "with nodes spot-np=+8" in out and "WAIT AS RECORDED" in out and "By ClusterQueue" in out
    assert doc["summary"]["text"].split(";")[0].split(",")[0] in out  # "N started sooner"


def test_with_needs_a_recording(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sim", "run", "refarch", "--with", "nodes spot-np=+8"])
    _, err = capsys.readouterr()
    assert code == 2 and "--with needs --from-recording" in err
