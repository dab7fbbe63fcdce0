"""The real kubernetes Python client against the simulated API server."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from kueuetop.sim.apiserver import ApiServer
from kueuetop.sim.storage.objectstore import ObjectStore

from .conftest import ADMIN_TOKEN, KUEUE, VIEWER_TOKEN, cluster_queue, make_client, workload

V2 = "v1beta2"


def raw(server: ApiServer, method: str, path: str, body: Any = None, content_type: str = "application/json",
        headers: dict[str, str] | None = None, data: bytes | None = None) -> tuple[int, dict[str, str], bytes]:
    payload = data if data is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(server.url + path, data=payload, method=method)
    if payload is not None:
        req.add_header("Content-Type", content_type)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_custom_objects_create_get_list_patch(custom: client.CustomObjectsApi) -> None:
    created = custom.create_cluster_custom_object(KUEUE, V2, "clusterqueues", cluster_queue("cq-a", "co"))
    assert created["metadata"]["uid"]
    assert created["spec"]["queueingStrategy"] == "BestEffortFIFO"  # CRD default
    custom.create_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", workload("w1", "team-a"))
    got = custom.get_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", "w1")
    assert got["spec"]["active"] is True and got["spec"]["podSets"][0]["count"] == 1
    listed = custom.list_cluster_custom_object(KUEUE, V2, "workloads")
    assert [w["metadata"]["name"] for w in listed["items"]] == ["w1"]
    assert listed["kind"] == "WorkloadList"
    patched = custom.patch_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", "w1",
                                                    {"spec": {"active": False}})
    assert patched["spec"]["active"] is False
    assert int(patched["metadata"]["resourceVersion"]) > int(got["metadata"]["resourceVersion"])
    assert patched["metadata"]["generation"] == 2


def test_core_nodes_and_pods(core: client.CoreV1Api, store: ObjectStore) -> None:
    store.create("", "nodes", {"metadata": {"name": "gpu-1", "labels": {"pool": "a100"}},
                               "status": {"capacity": {"nvidia.com/gpu": "8"}}})
    nodes = core.list_node()
    assert [n.metadata.name for n in nodes.items] == ["gpu-1"]
    assert nodes.items[0].status.capacity["nvidia.com/gpu"] == "8"
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="p1", labels={"app": "x"}),
                       spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="busybox")],
                                             node_name="gpu-1"))
    made = core.create_namespaced_pod("team-a", pod)
    assert made.status.phase == "Pending"
    assert made.spec.restart_policy == "Always"
    got = core.read_namespaced_pod("p1", "team-a")
    assert got.spec.node_name == "gpu-1"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("missing-ns", pod)
    assert err.value.status == 404 and 'namespaces \\"missing-ns\\" not found' in err.value.body


def test_stale_update_conflicts(custom: client.CustomObjectsApi) -> None:
    cq = custom.create_cluster_custom_object(KUEUE, V2, "clusterqueues", cluster_queue("cq-a"))
    cq["spec"]["stopPolicy"] = "Hold"
    custom.replace_cluster_custom_object(KUEUE, V2, "clusterqueues", "cq-a", cq)
    cq["spec"]["stopPolicy"] = "HoldAndDrain"
    with pytest.raises(ApiException) as err:
        custom.replace_cluster_custom_object(KUEUE, V2, "clusterqueues", "cq-a", cq)
    assert err.value.status == 409
    body = json.loads(err.value.body)
    assert body["reason"] == "Conflict" and body["kind"] == "Status"
    assert "the object has been modified" in body["message"]


def test_create_existing_is_already_exists(custom: client.CustomObjectsApi) -> None:
    custom.create_cluster_custom_object(KUEUE, V2, "resourceflavors",
                                        {"apiVersion": f"{KUEUE}/{V2}", "kind": "ResourceFlavor",
                                         "metadata": {"name": "rf"}, "spec": {}})
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object(KUEUE, V2, "resourceflavors",
                                            {"apiVersion": f"{KUEUE}/{V2}", "kind": "ResourceFlavor",
                                             "metadata": {"name": "rf"}, "spec": {}})
    body = json.loads(err.value.body)
    assert (err.value.status, body["reason"]) == (409, "AlreadyExists")
    assert body["message"] == 'resourceflavors.kueue.x-k8s.io "rf" already exists'


def test_pagination_with_continue(custom: client.CustomObjectsApi, store: ObjectStore) -> None:
    for i in range(25):
        store.create(KUEUE, "workloads", workload(f"w{i:02d}", "team-a" if i % 2 else "team-b"))
    names: list[str] = []
    token = None
    pages = 0
    remaining = []
    while True:
        page = custom.list_cluster_custom_object(KUEUE, V2, "workloads", limit=10, _continue=token)
        pages += 1
        names += [w["metadata"]["name"] for w in page["items"]]
        token = page["metadata"].get("continue")
        remaining.append(page["metadata"].get("remainingItemCount"))
        if not token:
            break
    assert pages == 3
    assert sorted(names) == [f"w{i:02d}" for i in range(25)] and len(set(names)) == 25
    assert remaining == [15, 5, None]  # as kube-apiserver: what follows the page; none on the last
    # Per namespace, and not at all with a selector (the server would have to filter to know).
    page = custom.list_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", limit=5)
    assert page["metadata"]["remainingItemCount"] == 7
    page = custom.list_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", limit=5,
                                                field_selector="metadata.name!=w00")
    assert "continue" in page["metadata"] and "remainingItemCount" not in page["metadata"]


def test_label_and_field_selectors(custom: client.CustomObjectsApi, core: client.CoreV1Api,
                                   store: ObjectStore) -> None:
    for i, ns in enumerate(["team-a", "team-a", "team-b"]):
        wl = workload(f"w{i}", ns)
        wl["metadata"]["labels"]["tier"] = "gold" if i == 0 else "silver"
        made = store.create(KUEUE, "workloads", wl)
        if i < 2:
            made["status"] = {"admission": {"clusterQueue": f"cq-{i}", "podSetAssignments": [{"name": "main"}]}}
            store.update_status(KUEUE, "workloads", made)

    def names(**kw: Any) -> list[str]:
        return [w["metadata"]["name"] for w in custom.list_cluster_custom_object(KUEUE, V2, "workloads", **kw)["items"]]

    assert names(label_selector="tier=gold") == ["w0"]
    assert names(label_selector="tier!=gold") == ["w1", "w2"]
    assert names(label_selector="tier in (gold,silver),team notin (team-b)") == ["w0", "w1"]
    assert names(label_selector="!tier") == []
    assert names(label_selector="tier") == ["w0", "w1", "w2"]
    assert names(field_selector="status.admission.clusterQueue=cq-1") == ["w1"]
    assert names(field_selector="metadata.namespace=team-b") == ["w2"]
    assert names(field_selector="metadata.name!=w0,metadata.namespace==team-a") == ["w1"]
    containers = [{"name": "c", "image": "busybox"}]
    store.create("", "pods", {"metadata": {"name": "p1", "namespace": "team-a"},
                              "spec": {"nodeName": "n1", "containers": containers}, "status": {"phase": "Running"}})
    store.create("", "pods", {"metadata": {"name": "p2", "namespace": "team-a"},
                              "spec": {"nodeName": "n2", "containers": containers}, "status": {"phase": "Pending"}})
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n2").items] == ["p2"]
    assert [p.metadata.name for p in core.list_namespaced_pod("team-a", field_selector="status.phase=Running").items] == ["p1"]
    store.create("", "events", {"metadata": {"name": "e1", "namespace": "team-a"},
                                "involvedObject": {"kind": "Workload", "name": "w1"}, "reason": "Admitted"})
    evs = core.list_namespaced_event("team-a", field_selector="involvedObject.name=w1")
    assert [e.reason for e in evs.items] == ["Admitted"]
    with pytest.raises(ApiException) as err:
        custom.list_cluster_custom_object(KUEUE, V2, "workloads", field_selector="spec.bogus=1")
    assert err.value.status == 400 and "field label not supported: spec.bogus" in err.value.body


def test_v1beta1_view_and_warning(server: ApiServer, custom: client.CustomObjectsApi, store: ObjectStore) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a", "co"))
    wl = workload("w1", "team-a")
    wl["spec"]["priorityClassRef"] = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}
    store.create(KUEUE, "workloads", wl)
    cq = custom.get_cluster_custom_object(KUEUE, "v1beta1", "clusterqueues", "cq-a")
    assert cq["apiVersion"] == f"{KUEUE}/v1beta1"
    assert cq["spec"]["cohort"] == "co" and "cohortName" not in cq["spec"]
    w = custom.get_namespaced_custom_object(KUEUE, "v1beta1", "team-a", "workloads", "w1")
    assert w["spec"]["priorityClassName"] == "high"
    assert w["spec"]["priorityClassSource"] == "scheduling.k8s.io/priorityclass"
    code, headers, _ = raw(server, "GET", "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq-a")
    assert code == 200
    assert headers["Warning"] == '299 - "This version is deprecated. Use v1beta2 instead."'
    # A v1beta1 write with the old field name and alias is stored in v1beta2 form.
    custom.patch_cluster_custom_object(KUEUE, "v1beta1", "clusterqueues", "cq-a",
                                       {"spec": {"cohort": "other",
                                                 "flavorFungibility": {"whenCanBorrow": "Borrow"}}})
    stored = store.get(KUEUE, "clusterqueues", None, "cq-a")
    assert stored["spec"]["cohortName"] == "other" and "cohort" not in stored["spec"]
    assert stored["spec"]["flavorFungibility"]["whenCanBorrow"] == "MayStopSearch"
    # ... while v1beta2 refuses the deprecated alias.
    with pytest.raises(ApiException) as err:
        custom.patch_cluster_custom_object(KUEUE, V2, "clusterqueues", "cq-a",
                                           {"spec": {"flavorFungibility": {"whenCanBorrow": "Borrow"}}})
    assert err.value.status == 422 and "spec.flavorFungibility.whenCanBorrow" in err.value.body


def test_watch_relists_after_forced_compaction(server: ApiServer, custom: client.CustomObjectsApi,
                                               store: ObjectStore) -> None:
    store.create(KUEUE, "workloads", workload("w1", "team-a"))
    listed = custom.list_namespaced_custom_object(KUEUE, V2, "team-a", "workloads")
    rv = listed["metadata"]["resourceVersion"]
    store.create(KUEUE, "workloads", workload("w2", "team-a"))
    code, _, body = raw(server, "POST", "/kueuetop/v1/faults", {"compactNow": True})
    assert code == 200 and json.loads(body)["compactedAt"] == str(store.resource_version)
    w = watch.Watch()
    with pytest.raises(ApiException) as err:
        for _ in w.stream(custom.list_namespaced_custom_object, KUEUE, V2, "team-a", "workloads",
                          resource_version=rv, timeout_seconds=2):
            pass
    assert err.value.status == 410 and "Expired" in str(err.value.reason)
    # Relist, then watch from the new version sees new changes only.
    relisted = custom.list_namespaced_custom_object(KUEUE, V2, "team-a", "workloads")
    assert sorted(i["metadata"]["name"] for i in relisted["items"]) == ["w1", "w2"]
    threading.Timer(0.3, lambda: store.create(KUEUE, "workloads", workload("w3", "team-a"))).start()
    seen = []
    for ev in watch.Watch().stream(custom.list_namespaced_custom_object, KUEUE, V2, "team-a", "workloads",
                                   resource_version=relisted["metadata"]["resourceVersion"], timeout_seconds=2):
        seen.append((ev["type"], ev["object"]["metadata"]["name"]))
        break
    assert seen == [("ADDED", "w3")]


def test_watch_survives_dropped_streams(server: ApiServer, core: client.CoreV1Api, store: ObjectStore) -> None:
    server.faults.update({"dropWatchesEverySeconds": 0.4})
    start = core.list_node().metadata.resource_version

    def later() -> None:
        for i in range(3):
            time.sleep(0.35)
            store.create("", "nodes", {"metadata": {"name": f"n{i}"}})

    threading.Thread(target=later).start()
    seen: list[str] = []
    rv = start
    deadline = time.monotonic() + 5
    streams = 0
    while len(seen) < 3 and time.monotonic() < deadline:
        streams += 1
        for ev in watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=5):
            seen.append(ev["object"].metadata.name)
            rv = ev["object"].metadata.resource_version
    assert seen == ["n0", "n1", "n2"]
    assert streams >= 2  # the server cut the stream at least once and the client resumed


def test_watch_bookmarks_and_table_events(server: ApiServer, store: ObjectStore) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a", "co"))
    rv = store.resource_version
    # Written before the watch opens: a watch from `rv` replays it from the history, so the test
    # does not depend on a timer firing inside the watch's one second on a loaded machine.
    store.patch(KUEUE, "clusterqueues", None, "cq-a", lambda o: {**o, "spec": {**o["spec"], "cohortName": "co2"}})
    req = urllib.request.Request(server.url + f"/apis/kueue.x-k8s.io/v1beta2/clusterqueues?watch=true"
                                 f"&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1")
    req.add_header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
    with urllib.request.urlopen(req, timeout=5) as resp:
        assert resp.headers["Transfer-Encoding"] == "chunked"
        lines = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
    types = [e["type"] for e in lines]
    assert types[0] == "MODIFIED" and "BOOKMARK" in types
    table = lines[0]["object"]
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:3] == ["Name", "Cohort", "Strategy"]
    assert table["rows"][0]["cells"][:2] == ["cq-a", "co2"]
    assert int(lines[-1]["object"]["metadata"]["resourceVersion"]) >= rv + 1


def test_viewer_token_is_forbidden_to_write(auth_server: ApiServer, store: ObjectStore) -> None:
    store.create(KUEUE, "workloads", workload("w1", "team-a"))
    viewer = client.CustomObjectsApi(make_client(auth_server.url, VIEWER_TOKEN))
    assert viewer.get_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", "w1")["metadata"]["name"] == "w1"
    with pytest.raises(ApiException) as err:
        viewer.patch_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", "w1", {"spec": {"active": False}})
    body = json.loads(err.value.body)
    assert err.value.status == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('workloads.kueue.x-k8s.io "w1" is forbidden: User "bob" cannot patch resource '
                               '"workloads" in API group "kueue.x-k8s.io" in the namespace "team-a"')
    anonymous = client.CustomObjectsApi(make_client(auth_server.url))
    with pytest.raises(ApiException) as err:
        anonymous.list_cluster_custom_object(KUEUE, V2, "workloads")
    assert err.value.status == 401
    admin = client.CustomObjectsApi(make_client(auth_server.url, ADMIN_TOKEN))
    patched = admin.patch_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", "w1", {"spec": {"active": False}})
    assert patched["spec"]["active"] is False
    # Only an admin may set faults.
    code, _, _ = raw(auth_server, "POST", "/kueuetop/v1/faults", {"latencyMs": 1},
                     headers={"Authorization": f"Bearer {VIEWER_TOKEN}"})
    assert code == 403


def test_self_subject_access_review(auth_server: ApiServer) -> None:
    def ask(token: str, verb: str) -> client.V1SelfSubjectAccessReview:
        authz = client.AuthorizationV1Api(make_client(auth_server.url, token))
        body = client.V1SelfSubjectAccessReview(spec=client.V1SelfSubjectAccessReviewSpec(
            resource_attributes=client.V1ResourceAttributes(group=KUEUE, resource="workloads", verb=verb,
                                                            namespace="team-a")))
        return authz.create_self_subject_access_review(body)

    assert ask(VIEWER_TOKEN, "list").status.allowed is True
    assert ask(VIEWER_TOKEN, "patch").status.allowed is False
    admin = ask(ADMIN_TOKEN, "patch").status
    assert admin.allowed is True and 'User "alice"' in admin.reason


def test_visibility_pending_workloads(store: ObjectStore, clock: Any) -> None:
    """The order is a Kueue controller's reading of the store (`paused_hooks`: it never schedules)."""
    from kueuetop.sim.serve import paused_hooks

    srv = ApiServer(store, hooks=paused_hooks(store)).start()
    api = make_client(srv.url)
    try:
        _check_visibility(api, store, clock)
    finally:
        api.close()
        srv.stop()


def _check_visibility(api: client.ApiClient, store: ObjectStore, clock: Any) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a"))
    for ns in ("team-a", "team-b"):
        store.create(KUEUE, "localqueues", {"metadata": {"name": "lq", "namespace": ns},
                                            "spec": {"clusterQueue": "cq-a"}})
    for name, ns, prio in (("low", "team-a", 0), ("high", "team-b", 100), ("mid", "team-a", 10)):
        store.create(KUEUE, "workloads", workload(name, ns, priority=prio))
        clock.t += 1
    admitted = store.create(KUEUE, "workloads", workload("running", "team-a", priority=1000))
    admitted["status"] = {"conditions": [{"type": "QuotaReserved", "status": "True"}]}
    store.update_status(KUEUE, "workloads", admitted)
    store.create(KUEUE, "workloads", workload("held", "team-a", priority=500, active=False))

    def call(path: str, **query: Any) -> Any:
        method, url, headers, body, post = api.param_serialize("GET", path, query_params=list(query.items()),
                                                               auth_settings=["BearerToken"])
        resp = api.call_api(method, url, headers, body, post)
        resp.read()
        if resp.status != 200:
            raise ApiException(status=resp.status, reason=resp.reason)
        return json.loads(resp.data)

    summary = call("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-a/pendingworkloads")
    assert summary["kind"] == "PendingWorkloadsSummary"
    got = [(i["metadata"]["name"], i["positionInClusterQueue"], i["positionInLocalQueue"], i["localQueueName"])
           for i in summary["items"]]
    assert got == [("high", 0, 0, "lq"), ("mid", 1, 0, "lq"), ("low", 2, 1, "lq")]
    lq = call("/apis/visibility.kueue.x-k8s.io/v1beta1/namespaces/team-a/localqueues/lq/pendingworkloads",
              limit=1, offset=1)
    assert [(i["metadata"]["name"], i["positionInClusterQueue"]) for i in lq["items"]] == [("low", 2)]
    with pytest.raises(ApiException) as err:
        call("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/nope/pendingworkloads")
    assert err.value.status == 404


def test_dry_run_validation_and_error_bodies(server: ApiServer, custom: client.CustomObjectsApi,
                                             store: ObjectStore) -> None:
    lq = {"apiVersion": f"{KUEUE}/{V2}", "kind": "LocalQueue", "metadata": {"name": "lq", "namespace": "team-a"},
          "spec": {"clusterQueue": "cq-a"}}
    dry = custom.create_namespaced_custom_object(KUEUE, V2, "team-a", "localqueues", lq, dry_run="All")
    assert dry["metadata"]["name"] == "lq"
    assert store.try_get(KUEUE, "localqueues", "team-a", "lq") is None
    custom.create_namespaced_custom_object(KUEUE, V2, "team-a", "localqueues", lq)
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(KUEUE, V2, "team-a", "localqueues", "lq",
                                              {"spec": {"clusterQueue": "cq-b"}})
    body = json.loads(err.value.body)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.clusterQueue",
                                          "message": 'Invalid value: "string": field is immutable'}]
    bad_wl = workload("bad", "team-a")
    bad_wl["spec"]["podSets"] = []
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", bad_wl)
    assert err.value.status == 422 and '"field":"spec.podSets"' in err.value.body.replace(" ", "")
    bad_cq = cluster_queue("cq-x")
    bad_cq["spec"]["queueingStrategy"] = "Random"
    bad_cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = "1"
    bad_cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"].pop(1)
    with pytest.raises(ApiException) as err:
        custom.create_cluster_custom_object(KUEUE, V2, "clusterqueues", bad_cq)
    causes = {c["field"] for c in json.loads(err.value.body)["details"]["causes"]}
    assert causes == {"spec.queueingStrategy", "spec.resourceGroups[0]",
                      "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit"}
    # Malformed JSON, wrong media types, unknown paths, oversized bodies.
    code, _, body_b = raw(server, "POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", data=b"{not json")
    assert code == 400 and json.loads(body_b)["reason"] == "BadRequest"
    code, _, body_b = raw(server, "PATCH", "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/lq",
                          {"spec": {}}, content_type="text/plain")
    assert code == 415 and json.loads(body_b)["reason"] == "UnsupportedMediaType"
    code, _, body_b = raw(server, "GET", "/apis/kueue.x-k8s.io/v1beta2/nonsense")
    assert code == 404 and json.loads(body_b)["kind"] == "Status"
    code, _, body_b = raw(server, "PUT", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", {})
    assert code == 405 and json.loads(body_b)["reason"] == "MethodNotAllowed"
    code, _, body_b = raw(server, "POST", "/apis/kueue.x-k8s.io/v1beta2/clusterqueues", data=b" " * (3 * 1024 * 1024 + 10))
    assert code == 413 and json.loads(body_b)["reason"] == "RequestEntityTooLarge"


def test_json_patch_with_test_op(custom: client.CustomObjectsApi, store: ObjectStore) -> None:
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a", "co"))
    out = custom.patch_cluster_custom_object(KUEUE, V2, "clusterqueues", "cq-a", [
        {"op": "test", "path": "/spec/cohortName", "value": "co"},
        {"op": "replace", "path": "/spec/cohortName", "value": "co2"}],
        _content_type="application/json-patch+json")
    assert out["spec"]["cohortName"] == "co2"
    with pytest.raises(ApiException) as err:
        custom.patch_cluster_custom_object(KUEUE, V2, "clusterqueues", "cq-a", [
            {"op": "test", "path": "/spec/cohortName", "value": "co"},
            {"op": "replace", "path": "/spec/cohortName", "value": "co3"}],
            _content_type="application/json-patch+json")
    assert err.value.status == 422
    assert store.get(KUEUE, "clusterqueues", None, "cq-a")["spec"]["cohortName"] == "co2"


def test_status_subresource_over_http(custom: client.CustomObjectsApi, store: ObjectStore) -> None:
    store.create(KUEUE, "workloads", workload("w1", "team-a"))
    out = custom.patch_namespaced_custom_object_status(
        KUEUE, V2, "team-a", "workloads", "w1",
        {"status": {"conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
                                    "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
         "spec": {"queueName": "ignored"}})
    assert out["status"]["conditions"][0]["type"] == "QuotaReserved"
    assert out["spec"]["queueName"] == "lq"
    # queueName is immutable while quota is reserved.
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", "w1", {"spec": {"queueName": "x"}})
    assert err.value.status == 422 and "queueName is immutable while workload quota reserved" in err.value.body
    # The main resource ignores status changes.
    out = custom.patch_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", "w1",
                                                {"status": {"conditions": []}})
    assert out["status"]["conditions"][0]["type"] == "QuotaReserved"


def test_injected_errors_and_recovery(server: ApiServer) -> None:
    server.faults.update({"errorRate": 1.0, "errorCode": 429, "retryAfterSeconds": 2, "seed": 3})
    code, headers, body = raw(server, "GET", "/api/v1/nodes")
    assert code == 429 and headers["Retry-After"] == "2"
    assert json.loads(body)["reason"] == "TooManyRequests"
    # The faults endpoint itself always answers.
    code, _, body = raw(server, "POST", "/kueuetop/v1/faults", {"errorRate": 0.5, "errorCode": 500})
    assert code == 200
    codes = [raw(server, "GET", "/api/v1/nodes")[0] for _ in range(40)]
    assert set(codes) == {200, 500}
    raw(server, "POST", "/kueuetop/v1/faults", {"errorRate": 0})
    assert raw(server, "GET", "/api/v1/nodes")[0] == 200


def test_metrics_and_dcgm_proxy(store: ObjectStore) -> None:
    from kueuetop.sim.apiserver import ServerHooks

    calls: list[str | None] = []

    def dcgm(node: str | None) -> str:
        calls.append(node)
        return f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="{node or "all"}"}} 42\n'

    srv = ApiServer(store, hooks=ServerHooks(dcgm_text=dcgm)).start()
    try:
        store.create(KUEUE, "clusterqueues", cluster_queue("cq-a"))
        cq = store.get(KUEUE, "clusterqueues", None, "cq-a")
        cq["status"] = {"pendingWorkloads": 4, "conditions": [{"type": "Active", "status": "True"}]}
        store.update_status(KUEUE, "clusterqueues", cq)
        code, headers, body = raw(srv, "GET", "/metrics")
        # No Kueue behind this server: an exposition without Kueue's series.
        assert code == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        assert body == b""
        store.create("", "pods", {"metadata": {"name": "dcgm-x", "namespace": "team-a",
                                               "labels": {"app": "nvidia-dcgm-exporter"}},
                                  "spec": {"nodeName": "gpu-7"}})
        code, _, body = raw(srv, "GET", "/api/v1/namespaces/team-a/pods/dcgm-x:9400/proxy/metrics")
        assert code == 200 and 'Hostname="gpu-7"' in body.decode()
        code, _, body = raw(srv, "GET", "/kueuetop/v1/dcgm/metrics")
        assert code == 200 and 'Hostname="all"' in body.decode()
        assert calls == ["gpu-7", None]
        code, _, _ = raw(srv, "GET", "/api/v1/namespaces/team-a/pods/missing:9400/proxy/metrics")
        assert code == 404
    finally:
        srv.stop()


def test_on_write_hook_can_reject_and_mutate(store: ObjectStore) -> None:
    from kueuetop.sim.apiserver import ApiError, ServerHooks, WriteRequest

    def webhook(req: WriteRequest) -> None:
        if req.kind.plural == "workloads" and req.verb == "create" and req.obj is not None:
            if req.obj["metadata"]["name"].startswith("deny"):
                raise ApiError(403, "admission webhook denied the request", "Forbidden")
            req.obj["metadata"].setdefault("labels", {})["mutated"] = "yes"

    srv = ApiServer(store, hooks=ServerHooks(on_write=webhook)).start()
    try:
        custom = client.CustomObjectsApi(make_client(srv.url))
        made = custom.create_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", workload("ok", "team-a"))
        assert made["metadata"]["labels"]["mutated"] == "yes"
        with pytest.raises(ApiException) as err:
            custom.create_namespaced_custom_object(KUEUE, V2, "team-a", "workloads", workload("deny-1", "team-a"))
        assert err.value.status == 403
    finally:
        srv.stop()


def test_server_survives_handler_bugs_and_stops_cleanly(store: ObjectStore) -> None:
    from kueuetop.sim.apiserver import ServerHooks

    def broken(target: Any, limit: int, offset: int) -> list[dict[str, Any]]:
        raise RuntimeError("boom")

    srv = ApiServer(store, hooks=ServerHooks(pending_workloads=broken)).start()
    store.create(KUEUE, "clusterqueues", cluster_queue("cq-a"))
    code, _, body = raw(srv, "GET", "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq-a/pendingworkloads")
    assert code == 500 and json.loads(body)["reason"] == "InternalError"
    assert raw(srv, "GET", "/version")[0] == 200
    # An open watch ends when the server stops.
    req = urllib.request.Request(srv.url + "/api/v1/nodes?watch=true")
    resp = urllib.request.urlopen(req, timeout=5)
    done = threading.Event()

    def drain() -> None:
        try:
            resp.read()
        finally:
            done.set()

    threading.Thread(target=drain, daemon=True).start()
    time.sleep(0.1)
    srv.stop()
    assert done.wait(3)
