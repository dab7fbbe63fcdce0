"""`kueuetop forecast --replay FILE --at WHEN` on a real recording (`kueuetop record` against a
served `incident`, which keeps workloads pending): the forecast starts from the state the replay
rebuilds at WHEN (that this state is what a live look saw is test_recording_replay's part)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kueuetop.cli import main
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import start_served
from kueuetop.sources.replay import Recording, Replay
from kueuetop.views.forecast_report import rfc3339


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    d = tmp_path_factory.mktemp("fcreplay")
    served = start_served(load_scenario("incident"), speed=20, kubeconfig=str(d / "kubeconfig"))
    path = d / "incident.ktrec"
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
        p = subprocess.run([sys.executable, "-m", "kueuetop", "record", "--kubeconfig", str(served.kubeconfig),
                            "-o", str(path), "--for", "8s"], env=env, capture_output=True, text=True, timeout=90)
        assert p.returncode == 0, p.stderr
    finally:
        served.stop()
    yield path


def _pending_at(path: Path, when: str) -> tuple[float, set[tuple[str, str]]]:
    from kueuetop.views.replay_time import parse_moment

    rec = Recording.open(str(path))
    try:
        at = parse_moment(when, rec.start, rec.end_time)
        snap = Replay(rec).seek(at).snapshot()
    finally:
        rec.close()
    return at, {k for k, w in snap.workloads.items() if not w.is_finished and not w.has_quota_reservation}


@pytest.mark.parametrize("when", ["end", "+4s"])
def test_forecast_from_a_recorded_moment(recording: Path, when: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["forecast", "--replay", str(recording), "--at", when, "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    at, pending = _pending_at(recording, when)
    assert pending, "incident keeps workloads pending"
    assert doc["at"] == rfc3339(at)
    assert doc["source"]["kind"] == "recording" and doc["source"]["name"] == recording.name
    assert doc["source"]["at"] == rfc3339(at)
    assert {(w["namespace"], w["name"]) for w in doc["workloads"]} == pending
    # Queue positions come from the recorded visibility answers, as the live forecast's do.
    assert any(w["position"] is not None for w in doc["workloads"])


def test_what_ifs_and_errors_on_a_recorded_moment(recording: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, pending = _pending_at(recording, "end")
    ns = sorted(pending)[0][0]
    code = main(["forecast", "--replay", str(recording), "--with", f"hold {ns}/*", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["whatIf"]["changes"] == [f"hold {ns}/*"]
    code = main(["forecast", "--replay", str(recording), "--with", "nodes no-such-pool=+2"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "unknown node pool 'no-such-pool'" in err
    code = main(["forecast", "--replay", str(recording), "--at", "99:99"])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    code = main(["forecast", "--at", "2m"])
    _, err = capsys.readouterr()
    assert code == 2 and "--at needs --scenario or --replay" in err
    code = main(["forecast", "--replay", str(recording), "--scenario", "refarch"])
    _, err = capsys.readouterr()
    assert code == 2 and "not both" in err
