"""ARCHITECTURE §5 `xl` (5,000 8-GPU nodes, 1,000 ClusterQueues, 100,000 Jobs' Workloads) runs to
its end: every active workload finishes, the 1 % created inactive stay so, no quota is held at
the end, no instant spins and the quota invariants hold at every check (tests/xl_completion_run.py,
started by tests/conftest.py at the beginning of the session)."""

import json
import subprocess
import time

import pytest

from tests.xl_completion_run import XL_WORKLOADS

TIMEOUT = 26 * 60  # seconds from the run's start: CI must end within 30 minutes


def test_xl_runs_to_completion(xl_run):
    try:
        code = xl_run.proc.wait(timeout=max(1.0, TIMEOUT - (time.monotonic() - xl_run.started)))
    except subprocess.TimeoutExpired:
        pytest.fail(f"xl did not complete within {TIMEOUT} s")
    xl_run.log.seek(0)
    log = xl_run.log.read().decode(errors="replace")[-4000:]
    assert xl_run.out.exists(), f"xl run wrote no result (exit {code}):\n{log}"
    result = json.loads(xl_run.out.read_text())
    assert "error" not in result, result.get("error")
    assert code == 0, log
    assert result["idle"] and result["errors"] == [] and result["broken"] == {}
    assert result["workloads"] == XL_WORKLOADS
    assert result["unfinishedActive"] == []
    assert 0 < result["inactive"] <= XL_WORKLOADS // 100 and result["inactiveHoldingQuota"] == 0
    assert result["finished"] + result["inactive"] == XL_WORKLOADS
    assert result["clusterQueues"] == 1_000 and result["reservingClusterQueues"] == []
    # Every workload's pods ran and ended: none waits or runs on a node any more.
    assert result["workloadPodsByPhase"].get("Succeeded", 0) > 0
    assert not {"Pending", "Running"} & result["workloadPodsByPhase"].keys()
    assert result["invariantChecks"] > 10 and result["steps"] > 0
    xl_run.summary = "xl ran to completion: " + ", ".join(f"{k} {result[k]}" for k in (
        "cpuSeconds", "wallSeconds", "simulatedSeconds", "cycles", "steps", "invariantChecks"))
