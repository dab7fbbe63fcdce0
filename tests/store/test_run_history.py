"""The history of finished runs: what counts as a run, bounds, dedupe, the file, cluster scoping."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.workload import Workload
from kueuetop.store import Entry, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.run_history import (
    RunHistory,
    RunRecord,
    cluster_scope,
    follow_store,
    load_run_history,
    run_of,
    save_run_history,
    shape_key,
)
from tests.builders import T0, admit, condition, local_queue, workload

CLUSTER = "https://10.0.0.1:6443 ctx-a"


def finished(name: str, runtime: float, *, start: float = T0, ns: str = "team-a", lq: str = "lq-a",
             cq: str = "cq-a", gpus: int = 8, count: int = 1, uid: str | None = None,
             admitted: bool = True) -> dict[str, Any]:
    wl = admit(workload(ns, name, lq, requests={"nvidia.com/gpu": gpus}, count=count, uid=uid),
               cq, {"nvidia.com/gpu": "a100"}, at=start, admitted=admitted)
    wl["status"]["conditions"].append(condition("Finished", True, "Succeeded", at=start + runtime))
    return wl


def parsed(d: dict[str, Any]) -> Workload:
    wl = parse_object(d)
    assert isinstance(wl, Workload)
    return wl


# ---------------------------------------------------------------------------------------- runs
def test_runtime_is_finished_minus_admitted() -> None:
    rec = run_of(parsed(finished("a", 1234)))
    assert rec is not None
    assert rec.runtime == 1234
    assert (rec.cluster_queue, rec.namespace, rec.local_queue) == ("cq-a", "team-a", "lq-a")
    assert rec.shape == "main:1x{nvidia.com/gpu=8}"


def with_pods_ready(wl: dict[str, Any], at: float) -> dict[str, Any]:
    wl["status"]["conditions"].append(condition("PodsReady", True, "Started", at=at))
    return wl


def test_a_run_keeps_when_its_pods_started_and_can_be_measured_from_there(tmp_path: Path) -> None:
    rec = run_of(parsed(with_pods_ready(finished("a", 900), T0 + 180)))  # 3 minutes waiting for a node
    assert rec is not None and rec.started_at == T0 + 180
    assert (rec.runtime, rec.pods_runtime) == (900, 720)
    no_pods = run_of(parsed(finished("b", 900)))
    assert no_pods is not None and no_pods.started_at is None and no_pods.pods_runtime == 900
    # A PodsReady of an earlier admission (before this one began) is not this run's start.
    old = run_of(parsed(with_pods_ready(finished("c", 900), T0 - 50)))
    assert old is not None and old.started_at is None
    h = RunHistory(CLUSTER)
    for name in ("a", "b"):
        h.record(parsed(with_pods_ready(finished(name, 900), T0 + 180) if name == "a" else finished(name, 900)))
    shape = h.shape_of(parsed(finished("x", 1)))
    assert h.of_shape("team-a", "lq-a", shape) == [900, 900]
    pods = h.from_pods()
    assert pods.of_shape("team-a", "lq-a", shape) == [720, 900]
    assert pods.of_cluster_queue("cq-a") == [720, 900] and pods.of_cluster() == [720, 900]
    # Kept across runs; a file without it (an older kueuetop) or with a start outside the run reads as not known.
    path = tmp_path / "h.json"
    assert save_run_history(path, h) == ""
    back, _ = load_run_history(path, CLUSTER)
    assert sorted(r.started_at or 0 for r in back.records()) == [0, T0 + 180]
    doc = json.loads(path.read_text())
    for run in doc["clusters"][CLUSTER]:
        run["started"] = "soon" if run.get("started") else T0 - 1
    path.write_text(json.dumps(doc))
    back, warning = load_run_history(path, CLUSTER)
    assert warning == "" and len(back) == 2 and all(r.started_at is None for r in back.records())


def test_quota_reserved_stands_in_for_admitted() -> None:
    rec = run_of(parsed(finished("a", 300, admitted=False)))
    assert rec is not None and rec.runtime == 300


def test_unfinished_or_unadmitted_workloads_are_not_runs() -> None:
    running = admit(workload("team-a", "r", "lq-a"), "cq-a", {"cpu": "default"})
    assert run_of(parsed(running)) is None
    never_admitted = workload("team-a", "n", "lq-a")
    never_admitted["status"]["conditions"] = [condition("Finished", True, "Failed")]
    assert run_of(parsed(never_admitted)) is None


def test_shape_key_tells_counts_and_requests_apart() -> None:
    a = parsed(finished("a", 1, gpus=8, count=1)).pod_sets
    b = parsed(finished("b", 1, gpus=8, count=2)).pod_sets
    c = parsed(finished("c", 1, gpus=4, count=1)).pod_sets
    assert len({shape_key(a), shape_key(b), shape_key(c)}) == 3
    assert shape_key(a) == shape_key(parsed(finished("d", 99, gpus=8)).pod_sets)


# ---------------------------------------------------------------------------------------- bounds
def test_a_run_is_counted_once_by_uid() -> None:
    h = RunHistory(CLUSTER)
    wl = parsed(finished("a", 100))
    assert h.record(wl) is True
    assert h.record(wl) is False
    assert len(h) == 1


def test_record_all_counts_only_new_finished_runs() -> None:
    h = RunHistory(CLUSTER)
    wls = [parsed(finished("a", 10)), parsed(finished("b", 20)), parsed(workload("team-a", "p", "lq-a"))]
    assert h.record_all(wls) == 2
    assert h.record_all(wls) == 0


def test_per_key_bound_keeps_the_newest() -> None:
    h = RunHistory(CLUSTER, per_key=3)
    for i in range(5):  # runtimes 10, 11, ... finishing in order
        h.record(parsed(finished(f"w{i}", 10 + i, start=T0 + 1000 * i)))
    shape = shape_key(parsed(finished("x", 1)).pod_sets)
    assert h.of_shape("team-a", "lq-a", shape) == [12, 13, 14]
    # an old run listed again after it fell off does not come back
    assert h.record(parsed(finished("w0", 10))) is False
    assert h.of_shape("team-a", "lq-a", shape) == [12, 13, 14]


def test_total_bound_drops_the_oldest_run_overall() -> None:
    h = RunHistory(CLUSTER, per_key=10, max_runs=3)
    for i, lq in enumerate(["lq-a", "lq-b", "lq-c", "lq-d"]):
        h.record(parsed(finished(f"w{i}", 50, start=T0 + 100 * i, lq=lq)))
    assert len(h) == 3
    assert sorted(r.local_queue for r in h.records()) == ["lq-b", "lq-c", "lq-d"]


def test_cluster_queue_runs_mix_shapes_and_local_queues() -> None:
    h = RunHistory(CLUSTER)
    h.record(parsed(finished("a", 10, gpus=8)))
    h.record(parsed(finished("b", 20, gpus=4, lq="lq-b", start=T0 + 5)))
    h.record(parsed(finished("c", 30, cq="cq-other", lq="lq-c")))
    assert h.of_cluster_queue("cq-a") == [10, 20]


def test_runs_by_queue_and_by_shape_follow_keys_that_come_and_go() -> None:
    h = RunHistory(CLUSTER, max_runs=3)
    h.record(parsed(finished("a", 10, gpus=8)))
    h.record(parsed(finished("b", 20, gpus=4, lq="lq-b", cq="cq-b", start=T0 + 5)))
    eight = shape_key(parsed(finished("x", 1, gpus=8)).pod_sets)
    assert h.of_cluster_queue("cq-a") == [10] and h.of_shape_anywhere(eight) == [10]
    # A new key after the first read (another LocalQueue, the same shape) is found too.
    h.record(parsed(finished("c", 30, gpus=8, lq="lq-c", cq="cq-b", start=T0 + 10)))
    assert h.of_cluster_queue("cq-b") == [20, 30] and h.of_shape_anywhere(eight) == [10, 30]
    # The oldest run goes (max_runs) and its key with it.
    h.record(parsed(finished("d", 40, gpus=4, lq="lq-b", cq="cq-b", start=T0 + 20)))
    assert h.of_cluster_queue("cq-a") == [] and h.of_shape_anywhere(eight) == [30]
    assert h.of_shape_anywhere(eight, limit=None) == [30] and h.from_pods().of_shape_anywhere(eight) == [30]


# ---------------------------------------------------------------------------------------- the file
def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    path = tmp_path / "kueuetop" / "run-history.json"  # the directory is created on save
    h = RunHistory(CLUSTER)
    for i in range(3):
        h.record(parsed(finished(f"w{i}", 100 + i, start=T0 + i)))
    assert h.unsaved == 3
    assert save_run_history(path, h) == ""
    assert h.unsaved == 0
    back, warning = load_run_history(path, CLUSTER)
    assert warning == ""
    assert back.records() == h.records()
    assert back.unsaved == 0
    assert not list(tmp_path.glob("kueuetop/.*.tmp"))  # the temporary file is gone


def test_restart_does_not_count_a_run_twice(tmp_path: Path) -> None:
    path = tmp_path / "run-history.json"
    wl = parsed(finished("a", 100))
    h = RunHistory(CLUSTER)
    h.record(wl)
    save_run_history(path, h)
    again, _ = load_run_history(path, CLUSTER)
    assert again.record(wl) is False  # the new console lists the same finished Workload
    assert len(again) == 1


def test_clusters_do_not_mix(tmp_path: Path) -> None:
    path = tmp_path / "run-history.json"
    a = RunHistory("cluster-a")
    a.record(parsed(finished("a", 100)))
    b = RunHistory("cluster-b")
    b.record(parsed(finished("b", 200)))
    b.record(parsed(finished("c", 300)))
    save_run_history(path, a)
    save_run_history(path, b)  # keeps cluster-a's runs
    la, _ = load_run_history(path, "cluster-a")
    lb, _ = load_run_history(path, "cluster-b")
    assert [r.runtime for r in la.records()] == [100]
    assert [r.runtime for r in lb.records()] == [200, 300]
    none, warning = load_run_history(path, "cluster-c")
    assert len(none) == 0 and warning == ""


def test_cluster_scope_is_the_server_else_the_context() -> None:
    assert cluster_scope("https://10.0.0.1:6443/", "admin@a") == cluster_scope("https://10.0.0.1:6443", "ro@a")
    assert cluster_scope("https://10.0.0.2:6443", "x") != cluster_scope("https://10.0.0.1:6443", "x")
    assert cluster_scope("", "kind-a") == "context:kind-a"


def test_corrupt_file_is_kept_as_bad_and_history_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "run-history.json"
    path.write_text('{"version": 1, "clusters": {"x": [{"uid": "a"')  # cut short mid-write
    h, warning = load_run_history(path, CLUSTER)
    assert len(h) == 0
    assert "not valid JSON" in warning and "run-history.json.bad" in warning
    assert "\n" not in warning
    assert (tmp_path / "run-history.json.bad").read_text().startswith('{"version": 1')
    assert not path.exists()
    h.record(parsed(finished("a", 5)))
    assert save_run_history(path, h) == ""
    assert len(load_run_history(path, CLUSTER)[0]) == 1


def test_wrong_kind_of_json_is_set_aside_too(tmp_path: Path) -> None:
    path = tmp_path / "run-history.json"
    path.write_text("[1, 2, 3]")
    h, warning = load_run_history(path, CLUSTER)
    assert len(h) == 0 and "kept as run-history.json.bad" in warning
    assert (tmp_path / "run-history.json.bad").exists()


def test_malformed_runs_are_skipped_and_counted(tmp_path: Path) -> None:
    path = tmp_path / "run-history.json"
    good = RunRecord("u1", "team-a", "lq-a", "cq-a", "s", T0, T0 + 60).to_json()
    bad = [{"uid": "u2"}, {**good, "uid": "u3", "finished": "soon"}, {**good, "uid": "u4", "finished": T0 - 5},
           {**good, "uid": "u5", "admitted": float("nan")}, "junk"]
    path.write_text(json.dumps({"version": 1, "clusters": {CLUSTER: [good, *bad]}}))
    h, warning = load_run_history(path, CLUSTER)
    assert [r.uid for r in h.records()] == ["u1"]
    assert "skipped 5 malformed" in warning
    assert path.exists()  # a readable file is not set aside


def test_an_unreadable_place_is_reported_not_raised_nor_moved(tmp_path: Path) -> None:
    path = tmp_path / "run-history.json"
    path.mkdir()  # something in the way that is not a file
    h, warning = load_run_history(path, CLUSTER)
    assert len(h) == 0 and "cannot be read" in warning and "\n" not in warning
    assert path.is_dir() and not (tmp_path / "run-history.json.bad").exists()
    h.record(parsed(finished("a", 5)))
    assert "could not be saved" in save_run_history(path, h)
    assert h.unsaved == 1  # still to be saved


def test_a_failed_write_leaves_the_old_file_and_reports(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    h = RunHistory(CLUSTER)
    h.record(parsed(finished("a", 5)))
    warning = save_run_history(blocker / "run-history.json", h)
    assert warning.startswith(f"run history {blocker / 'run-history.json'} could not be saved")
    assert blocker.read_text() == "x"


def test_the_file_is_private(tmp_path: Path) -> None:
    path = tmp_path / "run-history.json"
    h = RunHistory(CLUSTER)
    h.record(parsed(finished("a", 5)))
    save_run_history(path, h)
    assert path.stat().st_mode & 0o077 == 0


# ---------------------------------------------------------------------------------------- from the store
def _entry(d: dict[str, Any]) -> Entry:
    m = d["metadata"]
    return Entry((m.get("namespace", ""), m["name"]), None, parse_object(d), m.get("uid", ""),
                 m.get("resourceVersion", ""))


def test_follow_store_records_workloads_as_they_finish() -> None:
    store = Store()
    h = RunHistory(CLUSTER)
    stop = follow_store(store, h)
    running = admit(workload("team-a", "a", "lq-a", requests={"nvidia.com/gpu": 8}), "cq-a",
                    {"nvidia.com/gpu": "a100"}, at=T0)
    store.apply(StoreEvent.upsert(K.WORKLOADS, "wl", _entry(running)))
    assert len(h) == 0
    done = finished("a", 700)
    done["metadata"]["resourceVersion"] = "2"
    store.apply(StoreEvent.upsert(K.WORKLOADS, "wl", _entry(done)))
    assert [r.runtime for r in h.records()] == [700]
    stop()
    other = finished("b", 5)
    store.apply(StoreEvent.upsert(K.WORKLOADS, "wl", _entry(other)))
    assert len(h) == 1  # unsubscribed


def test_follow_store_uses_the_local_queue_when_the_admission_is_gone() -> None:
    store = Store()
    h = RunHistory(CLUSTER)
    follow_store(store, h)
    store.apply(StoreEvent.upsert(K.LOCAL_QUEUES, "lq", _entry(local_queue("team-a", "lq-a", "cq-z"))))
    done = finished("a", 42)
    del done["status"]["admission"]
    store.apply(StoreEvent.upsert(K.WORKLOADS, "wl", _entry(done)))
    assert [(r.cluster_queue, r.runtime) for r in h.records()] == [("cq-z", 42)]
