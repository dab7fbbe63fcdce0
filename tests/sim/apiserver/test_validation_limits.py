"""Quota quantities (Kueue's webhooks) and annotation size (apimachinery ValidateAnnotations)
are refused with 422 Invalid and a field path, and the refused write changes nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kueuetop.sim.apiserver.quantity_text import canonical

from .conftest import KUEUE, cluster_queue, workload

RES0 = "spec.resourceGroups[0].flavors[0].resources[0]"
LIMIT = 256 * 1024


def _invalid(exc: pytest.ExceptionInfo[ApiException]) -> dict[str, Any]:
    assert exc.value.status == 422
    body = json.loads(exc.value.body)
    assert body["reason"] == "Invalid"
    return body


def _create_cq(custom: client.CustomObjectsApi, body: dict[str, Any]) -> dict[str, Any]:
    return custom.create_cluster_custom_object(KUEUE, "v1beta2", "clusterqueues", body)


@pytest.mark.parametrize(("nominal", "shown"), [(-1, "-1"), ("-1", "-1"), (-0.5, "-500m"), ("-1.5", "-1500m")])
def test_negative_nominal_quota_refused_on_create(custom: client.CustomObjectsApi, nominal: Any,
                                                  shown: str) -> None:
    with pytest.raises(ApiException) as exc:
        _create_cq(custom, cluster_queue("cq-neg", nominal=nominal))
    body = _invalid(exc)
    assert body["message"] == (f'ClusterQueue.{KUEUE} "cq-neg" is invalid: {RES0}.nominalQuota: '
                               f'Invalid value: "{shown}": must be greater than or equal to 0')
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": f"{RES0}.nominalQuota",
                                          "message": f'Invalid value: "{shown}": must be greater than or '
                                                     "equal to 0"}]
    with pytest.raises(ApiException) as gone:
        custom.get_cluster_custom_object(KUEUE, "v1beta2", "clusterqueues", "cq-neg")
    assert gone.value.status == 404


def test_negative_zero_is_zero(custom: client.CustomObjectsApi) -> None:
    created = _create_cq(custom, cluster_queue("cq-zero", nominal="-0"))
    assert created["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] == "-0"


def test_negative_limits_refused_on_patch_and_object_unchanged(custom: client.CustomObjectsApi) -> None:
    before = _create_cq(custom, cluster_queue("cq-a", cohort="co"))
    rg = before["spec"]["resourceGroups"]
    for field, value, detail in (
            ("nominalQuota", -3, '"-3": must be greater than or equal to 0'),
            ("borrowingLimit", -2, '"-2": must be greater than or equal to 0'),
            ("lendingLimit", "-1Ki", '"-1Ki": must be greater than or equal to 0'),
            ("lendingLimit", "9", '"9": must be less than or equal to the nominalQuota')):
        bad = json.loads(json.dumps(rg))
        bad[0]["flavors"][0]["resources"][0][field] = value
        with pytest.raises(ApiException) as exc:
            custom.patch_cluster_custom_object(KUEUE, "v1beta2", "clusterqueues", "cq-a",
                                               {"spec": {"resourceGroups": bad}})
        body = _invalid(exc)
        assert body["message"] == (f'ClusterQueue.{KUEUE} "cq-a" is invalid: {RES0}.{field}: '
                                   f"Invalid value: {detail}")
    after = custom.get_cluster_custom_object(KUEUE, "v1beta2", "clusterqueues", "cq-a")
    assert after == before


def test_limits_without_a_parent_and_negative_together(custom: client.CustomObjectsApi) -> None:
    cq = cluster_queue("cq-b")
    cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] = -1
    with pytest.raises(ApiException) as exc:
        _create_cq(custom, cq)
    causes = _invalid(exc)["details"]["causes"]
    # The webhook's order: the missing cohort first, then the sign.
    assert [c["message"] for c in causes] == ['Invalid value: "-1": must be nil when cohort is empty',
                                             'Invalid value: "-1": must be greater than or equal to 0']


def test_cohort_quotas_validated_like_cluster_queues(custom: client.CustomObjectsApi) -> None:
    cohort = {"apiVersion": f"{KUEUE}/v1beta2", "kind": "Cohort", "metadata": {"name": "co"},
              "spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                  {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": -4,
                                                            "lendingLimit": "1"}]}]}]}}
    with pytest.raises(ApiException) as exc:
        custom.create_cluster_custom_object(KUEUE, "v1beta2", "cohorts", cohort)
    assert [(c["field"], c["message"]) for c in _invalid(exc)["details"]["causes"]] == [
        (f"{RES0}.nominalQuota", 'Invalid value: "-4": must be greater than or equal to 0'),
        (f"{RES0}.lendingLimit", 'Invalid value: "1": must be nil when parent is empty')]
    # A Cohort may lend more than its nominal quota (the webhook only enforces that for ClusterQueues).
    res = cohort["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    res["nominalQuota"] = 1
    res["lendingLimit"] = "5"
    cohort["spec"]["parentName"] = "root"
    custom.create_cluster_custom_object(KUEUE, "v1beta2", "cohorts", cohort)


def test_annotations_over_256_kib_refused_on_any_kind(custom: client.CustomObjectsApi,
                                                      core: client.CoreV1Api) -> None:
    key = "example.com/blob"
    at_limit = {key: "x" * (LIMIT - len(key))}
    wl = workload("w1", "team-a")
    wl["metadata"]["annotations"] = at_limit
    custom.create_namespaced_custom_object(KUEUE, "v1beta2", "team-a", "workloads", wl)  # exactly the limit

    big = workload("w2", "team-a")
    big["metadata"]["annotations"] = {key: "x" * (1024 * 1024)}
    with pytest.raises(ApiException) as exc:
        custom.create_namespaced_custom_object(KUEUE, "v1beta2", "team-a", "workloads", big)
    body = _invalid(exc)
    assert body["message"] == (f'Workload.{KUEUE} "w2" is invalid: metadata.annotations: Too long: '
                               f"may not be more than {LIMIT} bytes")
    assert body["details"]["causes"] == [{"reason": "FieldValueTooLong", "field": "metadata.annotations",
                                          "message": f"Too long: may not be more than {LIMIT} bytes"}]

    before = core.read_namespace("team-b")
    with pytest.raises(ApiException) as exc:
        core.patch_namespace("team-b", {"metadata": {"annotations": {"a": "x" * 200_000, "b": "y" * 70_000}}})
    assert _invalid(exc)["message"] == ('Namespace "team-b" is invalid: metadata.annotations: Too long: '
                                        f"may not be more than {LIMIT} bytes")
    assert core.read_namespace("team-b") == before


@pytest.mark.parametrize(("given", "printed"), [
    ("-1", "-1"), (-1, "-1"), ("-1.5", "-1500m"), (-0.5, "-500m"), ("2000", "2k"), ("1500", "1500"),
    ("-2Ki", "-2Ki"), ("-1536Ki", "-1536Ki"), ("-0.5Gi", "-512Mi"), ("-1E", "-1E"), ("-2e3", "-2e3"),
    ("-0", "0")])
def test_quantities_printed_as_quantity_string(given: Any, printed: str) -> None:
    assert canonical(given) == printed
