"""reparse_workload: a new version of a Workload parses to exactly what parse_workload gives,
whatever it shares with the previous version, and bad data still fails with the same error."""

from __future__ import annotations

import random

import pytest

from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.workload import parse_workload, reparse_workload
from tests.builders import admit, condition, workload


def _base() -> dict:
    return admit(workload("team-a", "job-1", "lq", {"nvidia.com/gpu": "2", "cpu": "4"}), "cq",
                 {"nvidia.com/gpu": "a100", "cpu": "default"})


def _status_edits(rng: random.Random, status: dict) -> dict:
    """A new status that keeps some parts of `status` as the same objects and replaces others,
    as controllers' status writes do."""
    new = dict(status)
    for _ in range(rng.randint(1, 4)):
        what = rng.choice(["conditions", "admission", "checks", "requeue", "stats", "reclaim",
                           "accumulated", "drop"])
        if what == "conditions":
            new["conditions"] = [*new.get("conditions", []),
                                 condition(rng.choice(["Evicted", "PodsReady", "Requeued"]), rng.random() < 0.5,
                                           "Reason", f"message {rng.random()}", at=rng.randint(0, 10**6))]
        elif what == "admission" and "admission" in new:
            adm = dict(new["admission"])
            adm["clusterQueue"] = rng.choice(["cq", "cq-2"])
            new["admission"] = adm
        elif what == "checks":
            new["admissionChecks"] = [{"name": "prov", "state": rng.choice(["Pending", "Ready", "Retry"]),
                                       "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}]
        elif what == "requeue":
            new["requeueState"] = {"count": rng.randint(0, 5), "requeueAt": "2026-01-01T00:01:00Z"}
        elif what == "stats":
            new["schedulingStats"] = {"evictions": [{"reason": "Preempted", "underlyingCause": "",
                                                     "count": rng.randint(1, 9)}]}
        elif what == "reclaim":
            new["reclaimablePods"] = [{"name": "main", "count": rng.randint(0, 1)}]
        elif what == "accumulated":
            new["accumulatedPastExecutionTimeSeconds"] = rng.randint(0, 100)
        else:
            new.pop(rng.choice(list(new) or ["admission"]), None)
    return new


def test_status_versions_parse_as_a_full_parse() -> None:
    rng = random.Random(7)
    prev_data = _base()
    prev = parse_workload(prev_data)
    for i in range(300):
        meta = dict(prev_data["metadata"], resourceVersion=str(i + 2))
        data = {**prev_data, "metadata": meta, "status": _status_edits(rng, prev_data["status"])}
        got = reparse_workload(prev, prev_data, data)
        assert got == parse_workload(data), i
        prev, prev_data = got, data


def test_spec_or_metadata_changes_are_not_taken_from_the_previous_version() -> None:
    prev_data = _base()
    prev = parse_workload(prev_data)
    spec = {**prev_data["spec"], "priority": 100, "active": False}
    data = {**prev_data, "spec": spec}
    assert reparse_workload(prev, prev_data, data).priority == 100
    assert reparse_workload(prev, prev_data, data) == parse_workload(data)
    # An equal but new spec object, and a label change, also parse in full.
    labelled = {**prev_data, "spec": dict(prev_data["spec"]),
                "metadata": {**prev_data["metadata"], "labels": {"team": "a"}}}
    assert reparse_workload(prev, prev_data, labelled).meta.labels == {"team": "a"}


def test_a_broken_status_fails_as_a_full_parse_does() -> None:
    prev_data = _base()
    prev = parse_workload(prev_data)
    data = {**prev_data, "status": {**prev_data["status"], "requeueState": {"count": "many"}}}
    with pytest.raises(KueueParseError) as full:
        parse_workload(data)
    with pytest.raises(KueueParseError) as partial:
        reparse_workload(prev, prev_data, data)
    assert str(partial.value) == str(full.value)
    data = {**prev_data, "metadata": {**prev_data["metadata"], "resourceVersion": 12}}
    with pytest.raises(KueueParseError):
        reparse_workload(prev, prev_data, data)
