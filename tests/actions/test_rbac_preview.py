"""SelfSubjectAccessReview up front, and the engine's preview of each action."""

from __future__ import annotations

from kueuetop.actions.preview import fetch_objects, preview, summary_lines
from kueuetop.actions.rbac import check_access, required_permissions
from kueuetop.kueue.actions import parse_target

from .conftest import CQ, LQ, NS, Kueue


def test_required_permissions() -> None:
    perms = required_permissions("preempt", parse_target("team-a/w"))
    assert [(p.verb, p.resource, p.namespace) for p in perms] == [("get", "workloads", "team-a"),
                                                                   ("patch", "workloads", "team-a")]
    assert [p.namespace for p in required_permissions("drain", parse_target("cq/x"))] == ["", ""]


def test_admin_allowed_viewer_refused_up_front(api, viewer_api) -> None:
    target = parse_target(f"{NS}/some-workload")
    ok = check_access(api, "hold", target)
    assert ok.allowed and ok.known and ok.user == "alice"
    no = check_access(viewer_api, "hold", target)
    assert not no.allowed and no.known
    assert [(p.verb, p.resource) for p in no.denied] == [("patch", "workloads")]
    assert no.reason == ('forbidden: user "bob" may not hold team-a/some-workload: missing RBAC permission to patch '
                         '"workloads" in API group "kueue.x-k8s.io" in namespace "team-a"')
    cq = check_access(viewer_api, "drain", parse_target(f"cq/{CQ}"))
    assert not cq.allowed and 'patch "clusterqueues" in API group "kueue.x-k8s.io" at cluster scope' in cq.reason


def test_unanswered_review_does_not_refuse() -> None:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = "http://127.0.0.1:9"
    cfg.retries = False
    res = check_access(client.ApiClient(cfg), "hold", parse_target("a/b"), timeout=2)
    assert res.allowed and not res.known and "could not check" in res.reason


def test_preview_of_preempt_through_the_api(api, low_running_high_waiting: Kueue) -> None:
    pv = preview("preempt", parse_target(f"{NS}/low"), api_client=api)
    assert pv.ok, pv.lines
    assert pv.admitted == (f"{NS}/high",) and f"{NS}/low" in pv.evicted
    assert f"would admit {NS}/high in {CQ}" in pv.lines
    assert f"would evict {NS}/low (Deactivated)" in pv.lines
    # Nothing was sent: the preview is computed, not applied.
    assert low_running_high_waiting.holds_quota("low")


def test_preview_from_fetched_objects_for_queue_actions(api, low_running_high_waiting: Kueue) -> None:
    objects, server_now, failed = fetch_objects(api)
    assert server_now and not [f for f in failed if f in ("workloads", "clusterqueues", "localqueues")]
    drain = preview("drain", parse_target(f"lq/{NS}/{LQ}"), objects, now=server_now)
    assert drain.ok and f"would evict {NS}/low (LocalQueueStopped)" in drain.lines
    stop = preview("stop", parse_target(f"cq/{CQ}"), objects, now=server_now)
    assert stop.ok and not stop.evicted and not stop.admitted
    hold = preview("preempt-and-hold", parse_target(f"{NS}/low"), objects, now=server_now)
    assert hold.target_state and f"would admit {NS}/high in {CQ}" in hold.lines
    assert summary_lines(hold.result) == list(hold.lines)  # type: ignore[arg-type]


def test_preview_never_raises() -> None:
    pv = preview("hold", parse_target("team-a/missing"), [])
    assert not pv.ok and pv.lines[0].startswith("preview unavailable")
    pv = preview("hold", parse_target("team-a/x"), [{"kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta2",
                                                     "metadata": {"name": "x", "namespace": "team-a"},
                                                     "spec": {"podSets": "garbage"}}])
    assert not pv.ok and pv.lines[0].startswith("preview unavailable")


def test_a_preview_that_could_list_nothing_says_so_not_that_the_target_is_missing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import socket

    from kubernetes import config as kube_config

    from kueuetop.actions.preview import preview
    from kueuetop.sim.apiserver import write_kubeconfig

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends: nothing listens there
    api = kube_config.new_client_from_config(str(write_kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}")))
    api.configuration.retries = 0
    try:
        pv = preview("hold", parse_target("team-a/w"), api_client=api)
    finally:
        api.close()
    assert not pv.ok and pv.lines[0].startswith("preview unavailable: could not list clusterqueues, "), pv.lines
    assert "workloads" in pv.lines[0]
    assert "not found" not in pv.lines[0]
