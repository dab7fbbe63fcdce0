"""Server-side apply as `kubectl apply --server-side` sees it: managedFields per manager, conflicts
with another manager's fields (409 unless --force-conflicts), fields an apply stops sending removed,
and ownership recorded for ordinary patches too."""

from __future__ import annotations

import json

import yaml

from kueuetop.sim.storage.objectstore import ObjectStore

from .conftest import KUEUE, Kubectl, cluster_queue


def cq_doc(**spec: object) -> str:
    doc = cluster_queue("cq-ssa", cohort="pool")
    doc["spec"].update(spec)
    return yaml.safe_dump(doc)


def managed(kubectl: Kubectl) -> dict[str, dict]:
    out = kubectl.run("get", "clusterqueue", "cq-ssa", "-o", "json", "--show-managed-fields").stdout
    return {f"{e['manager']}/{e['operation']}": e["fieldsV1"] for e in json.loads(out)["metadata"]["managedFields"]}


def spec(store: ObjectStore) -> dict:
    return store.get(KUEUE, "clusterqueues", None, "cq-ssa")["spec"]


def test_apply_records_its_fields(kubectl: Kubectl, store: ObjectStore) -> None:
    kubectl.run("apply", "--server-side", "--field-manager=platform", "-f", "-", input=cq_doc())
    fields = managed(kubectl)["platform/Apply"]
    assert "f:resourceGroups" in fields["f:spec"] and "f:cohortName" in fields["f:spec"]
    assert spec(store)["cohortName"] == "pool"


def test_conflict_with_another_manager_unless_forced(kubectl: Kubectl, store: ObjectStore) -> None:
    kubectl.run("apply", "--server-side", "--field-manager=platform", "-f", "-", input=cq_doc(stopPolicy="None"))
    # On-call stops the queue with an apply of its own: it takes the field (same value owned? no: a change).
    oncall = kubectl.run("apply", "--server-side", "--field-manager=oncall", "-f", "-",
                         input=cq_doc(stopPolicy="Hold"), check=False)
    assert oncall.returncode == 1 and 'conflict with "platform"' in oncall.stderr and ".spec.stopPolicy" in oncall.stderr
    assert spec(store)["stopPolicy"] == "None"
    forced = kubectl.run("apply", "--server-side", "--field-manager=oncall", "--force-conflicts", "-f", "-",
                         input=cq_doc(stopPolicy="Hold"))
    assert forced.returncode == 0 and spec(store)["stopPolicy"] == "Hold"
    owners = managed(kubectl)
    assert "f:stopPolicy" in owners["oncall/Apply"]["f:spec"]
    assert "f:stopPolicy" not in owners["platform/Apply"]["f:spec"]  # moved, not shared
    # Now the platform's apply conflicts in turn, naming on-call.
    back = kubectl.run("apply", "--server-side", "--field-manager=platform", "-f", "-",
                       input=cq_doc(stopPolicy="None"), check=False)
    assert back.returncode == 1 and 'conflict with "oncall"' in back.stderr


def test_a_field_no_longer_applied_is_removed(kubectl: Kubectl, store: ObjectStore) -> None:
    kubectl.run("apply", "--server-side", "--field-manager=platform", "-f", "-", input=cq_doc())
    doc = yaml.safe_load(cq_doc())
    del doc["spec"]["cohortName"]
    kubectl.run("apply", "--server-side", "--field-manager=platform", "-f", "-", input=yaml.safe_dump(doc))
    assert "cohortName" not in spec(store)
    assert "f:cohortName" not in managed(kubectl)["platform/Apply"]["f:spec"]


def test_a_merge_patch_is_recorded_as_an_update(kubectl: Kubectl, store: ObjectStore) -> None:
    kubectl.run("apply", "--server-side", "--field-manager=platform", "-f", "-", input=cq_doc())
    kubectl.run("patch", "clusterqueue", "cq-ssa", "--type=merge", "-p", '{"spec":{"stopPolicy":"Hold"}}')
    owners = managed(kubectl)
    assert "f:stopPolicy" in owners["kubectl-patch/Update"]["f:spec"]
    # An apply changing what an update owns conflicts like any other owner's field.
    again = kubectl.run("apply", "--server-side", "--field-manager=platform", "-f", "-",
                        input=cq_doc(stopPolicy="None"), check=False)
    assert again.returncode == 1 and 'conflict with "kubectl-patch"' in again.stderr
