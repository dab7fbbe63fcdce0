"""`kueuetop record` whose cluster stops answering part-way: the recording is kept, but the
command says for how long it was blind and exits 1, so a script does not take it as whole. And a
replayed snapshot says it is one."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kueuetop.cli import main
from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import start_served
from tests.test_forecast_cli import SCENARIO


def _record(kubeconfig: Path, out: Path, seconds: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
    return subprocess.Popen([sys.executable, "-m", "kueuetop", "record", "--kubeconfig", str(kubeconfig),
                             "-o", str(out), "--for", seconds, "--gpu-interval", "1s"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_a_recording_that_lost_its_cluster_says_so_and_exits_1(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    served = start_served(load_scenario(str(tmp_path / "s.yaml")), speed=1, kubeconfig=str(tmp_path / "kc"))
    out = tmp_path / "r.ktrec"
    proc = _record(tmp_path / "kc", out, "25s")
    try:
        time.sleep(6)
    finally:
        served.stop()  # the API server goes away 6 s in (its sources read stale ~2 s later)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("kueuetop: the cluster did not answer for ") and "replay as stale" in last, err
    assert out.exists() and out.stat().st_size > 0  # what was recorded is kept


def test_a_whole_recording_exits_0(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    served = start_served(load_scenario(str(tmp_path / "s.yaml")), speed=1, kubeconfig=str(tmp_path / "kc"))
    try:
        proc = _record(tmp_path / "kc", tmp_path / "r.ktrec", "8s")
        _, err = proc.communicate(timeout=120)
    finally:
        served.stop()
    assert proc.returncode == 0, err
    assert "did not answer" not in err


def test_a_replayed_snapshot_says_it_is_one_and_when_nothing_was_read_yet(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.yaml").write_text(SCENARIO)
    served = start_served(load_scenario(str(tmp_path / "s.yaml")), speed=1, kubeconfig=str(tmp_path / "kc"))
    out = tmp_path / "r.ktrec"
    try:
        proc = _record(tmp_path / "kc", out, "4s")
        _, err = proc.communicate(timeout=120)
    finally:
        served.stop()
    assert proc.returncode == 0, err
    assert main(["snapshot", "--replay", str(out)]) == 0
    head = capsys.readouterr().out.splitlines()[0]
    assert head.startswith("replayed from recording r.ktrec (") and "cluster kueuetop-sim (" in head
    assert main(["snapshot", "--replay", str(out), "--at", "start"]) == 0
    text = capsys.readouterr().out
    assert "nothing had been read yet at this moment of the recording: try a later --at" in text
