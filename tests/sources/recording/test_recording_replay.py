"""`kueuetop record` against a served refarch, then `snapshot --replay` at moments where a live
`snapshot -o json` was taken: the replayed document must be the live one.

The simulated clock is held still (SimClock.pause) around each live snapshot, so the cluster,
its GPU telemetry and the recorder agree on one state; what must differ between a live look and
a replayed one is normalised: the sources' data ages (and the sources the snapshot session does
not run, e.g. the recorder's Events), and generatedAt, checked against the chosen moment instead.
"""

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
import yaml

from kueuetop.cli import main
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import ServedCluster, start_served
from kueuetop.sources.recording_format import RecordingError
from kueuetop.sources.replay import Recording, Replay
from kueuetop.views.replay_time import utc
from kueuetop.views.snapshot import _rfc3339
from tests.sources.live.conftest import KINDS, server_versions
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def served_rec(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCluster]:
    d = tmp_path_factory.mktemp("rec")
    s = start_served(load_scenario("refarch"), speed=20, kubeconfig=str(d / "kubeconfig"))
    yield s
    s.parts.cluster.clock.resume()
    s.stop()


def _recorded_store(path: Path) -> Any:
    try:
        rec = Recording.open(str(path))
    except RecordingError:
        return None  # the header frame is not written yet
    try:
        return Replay(rec).seek(rec.end_time)
    finally:
        rec.close()


def _caught_up(served: ServedCluster, path: Path, since: float) -> bool:
    """The recording holds exactly the server's objects, and a GPU poll and a visibility cycle
    that both finished after `since`."""
    store = _recorded_store(path)
    if store is None:
        return False
    if any(server_versions(served, kind) != store.versions(kind) for kind in KINDS):
        return False
    gpu, vis = store.source("gpu/scrape"), store.source("visibility")
    return bool(gpu and gpu.last_ok and gpu.last_ok > since and vis and vis.last_ok and vis.last_ok > since)


def _normalised(doc: dict[str, Any], names: set[str]) -> dict[str, Any]:
    out = {k: v for k, v in doc.items() if k not in ("generatedAt", "sources", "replay")}
    out["sources"] = {s["name"]: (s["state"], s["message"], s["stale"]) for s in doc["sources"] if s["name"] in names}
    return out


def test_replayed_snapshots_equal_the_live_ones(served_rec: ServedCluster, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "refarch.ktrec"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
    clock = served_rec.parts.cluster.clock
    moments: list[tuple[float, dict[str, Any]]] = []
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "record", "--kubeconfig", str(served_rec.kubeconfig),
                             "-o", str(path), "--gpu-interval", "0.5s",
                             # every exporter on every poll, as the one-shot snapshot reads them
                             "--scrape-budget", "0"], env=env, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)  # some history before the first look
        for _ in range(3):
            for _attempt in range(3):
                clock.pause()
                paused = time.time()
                before = {k: server_versions(served_rec, k) for k in KINDS}
                # Two visibility cycles after everything the controllers wrote is recorded.
                assert wait_until(lambda p=paused: _caught_up(served_rec, path, p), 30, 0.3), "never caught up"
                settled = time.time()
                assert wait_until(lambda s=settled: _caught_up(served_rec, path, s + 3.5), 15, 0.3)
                code = main(["snapshot", "--kubeconfig", str(served_rec.kubeconfig), "-o", "json", "--timeout", "20s",
                             "--scrape-budget", "0"])
                out, err = capsys.readouterr()
                assert code == 0, err
                t = time.time()
                after = {k: server_versions(served_rec, k) for k in KINDS}
                clock.resume()
                if before == after:  # (a controller still settling would have moved something)
                    moments.append((t, json.loads(out)))
                    break
            time.sleep(4)  # 80 simulated seconds: admissions, finishes, new jobs
    finally:
        clock.resume()
        proc.send_signal(signal.SIGTERM)
        _, rec_err = proc.communicate(timeout=30)
    assert proc.returncode == 0, rec_err
    assert len(moments) == 3
    # The moments differ: the history moved between them.
    assert len({json.dumps(doc["workloads"]) for _, doc in moments}) == 3
    for t, live in moments:
        code = main(["snapshot", "--replay", str(path), "--at", utc(t), "-o", "json"])
        out, err = capsys.readouterr()
        assert code == 0, err
        replayed = json.loads(out)
        assert replayed["generatedAt"] == _rfc3339(t)
        # Said to be a replay, where from and of which span; a live snapshot says nothing of the kind.
        assert replayed["replay"]["recording"] == path.name and replayed["replay"]["at"] == _rfc3339(t)
        assert "replay" not in live
        names = {s["name"] for s in live["sources"]}
        assert names <= {s["name"] for s in replayed["sources"]}
        if os.environ.get("KT_DUMP"):
            Path(os.environ["KT_DUMP"] + f"-{t}-live.json").write_text(json.dumps(_normalised(live, names), indent=1))
            Path(os.environ["KT_DUMP"] + f"-{t}-replay.json").write_text(json.dumps(_normalised(replayed, names), indent=1))
        assert _normalised(replayed, names) == _normalised(live, names)


def test_a_recording_becomes_a_scenario_that_admits_in_the_recorded_order(
        served_rec: ServedCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, scenario, report = tmp_path / "r.ktrec", tmp_path / "r.yaml", tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
    p = subprocess.run([sys.executable, "-m", "kueuetop", "record", "--kubeconfig", str(served_rec.kubeconfig),
                        "-o", str(path), "--for", "12s"], env=env, capture_output=True, text=True, timeout=90)
    assert p.returncode == 0, p.stderr
    code = main(["sim", "run", "--from-recording", str(path), "--write-scenario", str(scenario), "--report", "json",
                 "-o", str(report)])
    _, err = capsys.readouterr()
    assert code == 0, err
    kinds = [d["kind"] for d in yaml.safe_load_all(scenario.read_text())]
    assert kinds.count("ClusterQueue") == 12 and kinds.count("NodePool") >= 2 and kinds.count("Workload") >= 16
    doc = json.loads(report.read_text())
    assert doc["errors"] == []
    f = doc["fidelity"]
    # The queues run the same history: every recorded admission happens in the simulation, in
    # the recorded order (pairs the API server timed within the same second are ties).
    assert f["admittedInBoth"] >= 16 and f["onlyRecorded"] == []
    assert f["discordant"] == 0 and f["orderAgreement"] == 1.0
    assert f["timeErrorSeconds"]["max"] <= 2.0
