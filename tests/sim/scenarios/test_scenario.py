"""The scenario format and its loader (kueuetop.sim.scenarios.scenario)."""

import textwrap

import pytest

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.scenarios.scenario import ScenarioAction, ScenarioError, capacity_limit_at, parse_scenario


def parse(text: str, source: str = "test.yaml"):
    return parse_scenario(textwrap.dedent(text), source)


WORKLOAD = """
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: {name}
  namespace: team-a
  annotations: {{kueuetop.io/at: "{at}"}}
spec:
  queueName: lq
  podSets: [{{name: main, count: 1, template: {{spec: {{containers: []}}}}}}]
"""


def test_steps_sorted_by_time_then_document_order():
    text = "---".join([
        WORKLOAD.format(name="late", at="2m"),
        WORKLOAD.format(name="first", at="0s"),
        WORKLOAD.format(name="mid-a", at="30s"),
        WORKLOAD.format(name="mid-b", at="30s"),
    ])
    s = parse(text)
    assert [(st.at, st.obj["metadata"]["name"]) for st in s.steps] == [
        (0.0, "first"), (30.0, "mid-a"), (30.0, "mid-b"), (120.0, "late")]
    assert [st.origin for st in s.steps] == ["test.yaml#doc2", "test.yaml#doc3", "test.yaml#doc4",
                                             "test.yaml#doc1"]
    assert all(st.kind == "apply" and not st.update for st in s.steps)
    assert s.end == 120.0
    assert s.name == "test"


def test_default_time_is_zero_and_namespace_defaults():
    s = parse("""
        apiVersion: batch/v1
        kind: Job
        metadata: {name: j}
        spec: {suspend: true}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: cq, namespace: ignored}
        spec: {}
    """)
    job, cq = (st.obj for st in s.steps)
    assert s.steps[0].at == 0.0
    assert job["metadata"]["namespace"] == "default"
    assert "namespace" not in cq["metadata"]  # cluster-scoped


def test_later_document_for_same_object_is_an_update():
    s = parse("""
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata: {name: wl, namespace: team-a}
        spec: {queueName: lq, podSets: []}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata:
          name: wl
          namespace: team-a
          annotations: {kueuetop.io/at: "10m"}
        spec: {active: false}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        metadata:
          name: wl
          namespace: team-b
          annotations: {kueuetop.io/at: "10m"}
        spec: {queueName: lq, podSets: []}
    """)
    create, update, other_ns = s.steps
    assert (create.update, create.at) == (False, 0.0)
    assert (update.update, update.at) == (True, 600.0)
    assert update.obj["spec"] == {"active": False}  # merged over the live object by the engine
    assert other_ns.update is False  # a different namespace is a different object
    assert len(s.objects("Workload")) == 2


def test_update_document_may_come_first_in_the_file():
    s = parse("""
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: cq, annotations: {kueuetop.io/at: "5m"}}
        spec: {stopPolicy: Hold}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: cq}
        spec: {namespaceSelector: {}}
    """)
    assert [(st.at, st.update, st.origin) for st in s.steps] == [
        (0.0, False, "test.yaml#doc2"), (300.0, True, "test.yaml#doc1")]


def test_v1beta1_documents_are_converted():
    s = parse("""
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ClusterQueue
        metadata: {name: cq}
        spec:
          cohort: team-a-b
          admissionChecks: [dws-prov]
          resourceGroups: []
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: Workload
        metadata: {name: wl}
        spec: {priorityClassName: high, priorityClassSource: kueue.x-k8s.io/workloadpriorityclass}
        ---
        apiVersion: kueue.x-k8s.io/v1alpha1
        kind: Cohort
        metadata: {name: root}
        spec: {parent: org}
    """)
    cq, wl, cohort = (st.obj for st in s.steps)
    assert cq["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert cq["spec"]["cohortName"] == "team-a-b" and "cohort" not in cq["spec"]
    assert cq["spec"]["admissionChecksStrategy"] == {"admissionChecks": [{"name": "dws-prov"}]}
    assert wl["spec"]["priorityClassRef"] == {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass",
                                              "name": "high"}
    assert wl["metadata"]["namespace"] == "default"
    assert cohort["spec"] == {"parentName": "org"}


def test_v1beta1_and_v1beta2_documents_are_the_same_object():
    with pytest.raises(ScenarioError, match="document 2"):
        parse("""
            apiVersion: kueue.x-k8s.io/v1beta1
            kind: LocalQueue
            metadata: {name: lq, namespace: a}
            spec: {clusterQueue: cq}
            ---
            apiVersion: kueue.x-k8s.io/v1beta2
            kind: LocalQueue
            metadata: {name: lq, namespace: a}
            spec: {clusterQueue: cq}
        """)


def test_empty_documents_are_skipped_but_still_counted():
    s = parse("""
        ---
        # only a comment
        ---
        ---
        apiVersion: v1
        kind: Namespace
        metadata: {name: team-a}
    """)
    assert len(s.steps) == 1
    assert s.steps[0].origin == "test.yaml#doc3"


def test_actions():
    s = parse("""
        apiVersion: kueuetop.io/v1
        kind: Action
        spec: {at: "90s", action: hold, target: team-a/wl-1}
        ---
        apiVersion: kueuetop.io/v1
        kind: Action
        metadata: {name: drain}
        spec: {at: "2m", action: drain, target: cq/cq-team-a-lp}
        ---
        apiVersion: kueuetop.io/v1
        kind: Action
        spec: {action: resume-queue, target: lq/team-a/lq-team-a-hp}
        ---
        apiVersion: kueuetop.io/v1
        kind: Action
        spec: {at: "3m", action: preempt-and-hold, target: job/team-b/train}
        ---
        apiVersion: kueuetop.io/v1
        kind: Action
        spec: {at: "4m", action: requeue, target: pod/team1/sky-head}
    """)
    got = [(st.at, st.kind, st.action) for st in s.steps]
    assert got == [
        (0.0, "action", ScenarioAction("resume-queue", "lq/team-a/lq-team-a-hp", "localqueue", "lq-team-a-hp",
                                       "team-a")),
        (90.0, "action", ScenarioAction("hold", "team-a/wl-1", "workload", "wl-1", "team-a")),
        (120.0, "action", ScenarioAction("drain", "cq/cq-team-a-lp", "clusterqueue", "cq-team-a-lp", None)),
        (180.0, "action", ScenarioAction("preempt-and-hold", "job/team-b/train", "job", "train", "team-b")),
        (240.0, "action", ScenarioAction("requeue", "pod/team1/sky-head", "pod", "sky-head", "team1")),
    ]
    assert all(st.obj is None for st in s.steps)
    assert len(s.actions()) == 5


def test_sim_config_and_defaults():
    s = parse("""
        apiVersion: kueuetop.io/v1
        kind: SimConfig
        metadata: {name: cfg}
        spec:
          clusterName: batch-dev
          speed: 10
          fairSharing: {preemptionStrategies: [LessThanOrEqualToFinalShare]}
          waitForPodsReady: {timeout: 5m}
          featureGates: {PartialAdmission: false}
    """)
    assert s.config["clusterName"] == "batch-dev"
    assert s.config["speed"] == 10
    assert s.config["waitForPodsReady"] == {"timeout": "5m"}
    assert s.steps == ()
    assert parse("").config == {"clusterName": "kueuetop-sim", "speed": 1.0}


def test_node_pools_listed_and_in_steps_with_cluster_name():
    s = parse("""
        apiVersion: kueuetop.io/v1
        kind: NodePool
        metadata: {name: spot-np}
        spec:
          machineType: g2-standard-24
          gpu: {model: "NVIDIA L4", count: 2}
          spot: true
          size: 0
          maxSize: 36
          autoscaling: true
          provisioningDelay: "75s"
          capacityLimit: [{from: "0s", until: "3m", nodes: 0}, {from: "3m", nodes: 5}]
        ---
        apiVersion: kueuetop.io/v1
        kind: NodePool
        metadata: {name: spot-np, annotations: {kueuetop.io/at: "1h"}}
        spec: {maxSize: 10}
        ---
        apiVersion: kueuetop.io/v1
        kind: SimConfig
        spec: {clusterName: gke-batch-refarch}
    """)
    assert [p["metadata"]["name"] for p in s.node_pools] == ["spot-np"]
    assert s.node_pools[0]["spec"]["clusterName"] == "gke-batch-refarch"
    assert [(st.at, st.update) for st in s.steps] == [(0.0, False), (3600.0, True)]
    pool = s.node_pools[0]
    assert capacity_limit_at(pool, 0) == 0
    assert capacity_limit_at(pool, 179.9) == 0
    assert capacity_limit_at(pool, 180) == 5
    assert capacity_limit_at({"spec": {}}, 0) is None
    assert capacity_limit_at({"spec": {"capacityLimit": 0}}, 1e6) == 0


def test_annotations_are_kept_on_the_object():
    s = parse(WORKLOAD.format(name="wl", at="1m30s").replace(
        'annotations: {kueuetop.io/at: "1m30s"}',
        'annotations: {kueuetop.io/at: "1m30s", kueuetop.io/runtime: "2h", kueuetop.io/gpu-util: "idle"}'))
    ann = s.steps[0].obj["metadata"]["annotations"]
    assert ann == {"kueuetop.io/at": "1m30s", "kueuetop.io/runtime": "2h", "kueuetop.io/gpu-util": "idle"}
    assert s.steps[0].at == 90.0


def test_load_scenario_from_path(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text(WORKLOAD.format(name="wl", at="5s"))
    s = load_scenario(str(path))
    assert s.name == "mine"
    assert s.source == str(path)
    assert s.steps[0].origin == "mine.yaml#doc1"


def test_load_scenario_unknown_name():
    with pytest.raises(ScenarioError, match="no such scenario file or built-in scenario"):
        load_scenario("does-not-exist")


def test_input_is_not_mutated_and_objects_are_independent():
    s = parse(WORKLOAD.format(name="a", at="0s"))
    obj = s.steps[0].obj
    obj["spec"]["queueName"] = "changed"
    assert parse(WORKLOAD.format(name="a", at="0s")).steps[0].obj["spec"]["queueName"] == "lq"


# --------------------------------------------------------------------------------------
# Errors: each names the file, the 1-based document and the field.

NS = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n"

BAD = [
    pytest.param(
        NS + "---\napiVersion: v1\nkind: Namespace\nmetadata: name: x\n",
        "bad.yaml: document 2 (line 7): invalid YAML: mapping values are not allowed", id="yaml-syntax"),
    pytest.param(
        NS + "---\n- just\n- a list\n",
        "bad.yaml: document 2: expected a mapping (a Kubernetes object), got list", id="not-a-mapping"),
    pytest.param(
        NS + "---\nkind: Namespace\nmetadata: {name: x}\n",
        "bad.yaml: document 2: apiVersion: missing", id="missing-apiVersion"),
    pytest.param(
        NS + "---\napiVersion: v1\nmetadata: {name: x}\n",
        "bad.yaml: document 2: kind: missing", id="missing-kind"),
    pytest.param(
        NS + "---\napiVersion: v1\nkind: Namespace\nmetadata: {labels: {}}\n",
        "bad.yaml: document 2 (Namespace): metadata.name: missing", id="missing-name"),
    pytest.param(
        "apiVersion: v1\nkind: Namespace\n",
        "bad.yaml: document 1 (Namespace): metadata.name: missing", id="missing-metadata"),
    pytest.param(
        NS + "---\napiVersion: v1\nkind: Service\nmetadata: {name: svc}\n",
        'bad.yaml: document 2: kind: unsupported kind "Service" in v1', id="unknown-kind"),
    pytest.param(
        NS + "---\napiVersion: batch/v2\nkind: Job\nmetadata: {name: j}\n",
        'bad.yaml: document 2 (Job): apiVersion: unsupported version "batch/v2" for Job', id="unknown-version"),
    pytest.param(
        NS + "---\n" + WORKLOAD.format(name="wl-1", at="abc"),
        'bad.yaml: document 2 (Workload team-a/wl-1): metadata.annotations["kueuetop.io/at"]: '
        'invalid duration "abc"', id="bad-at"),
    pytest.param(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  annotations: {kueuetop.io/runtime: 10 minutes}\n",
        'bad.yaml: document 1 (Job default/j): metadata.annotations["kueuetop.io/runtime"]: '
        'invalid duration "10 minutes"', id="bad-runtime"),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {kueuetop.io/at: 30}\n",
        'bad.yaml: document 1 (Pod default/p): metadata.annotations["kueuetop.io/at"]: expected a string',
        id="unquoted-at"),
    pytest.param(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n\n  annotations: {kueuetop.io/runtime: 5m}\n",
        'bad.yaml: document 1 (Namespace n): metadata.annotations["kueuetop.io/runtime"]: '
        "only valid on a Job, Pod or Workload", id="runtime-on-wrong-kind"),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  annotations: {kueuetop.io/gpu-util: '120'}\n",
        'bad.yaml: document 1 (Pod default/p): metadata.annotations["kueuetop.io/gpu-util"]: invalid value "120"',
        id="bad-gpu-util"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: Action\nspec: {at: 1m, action: explode, target: a/b}\n",
        "bad.yaml: document 1 (Action): spec.action: unknown action 'explode'", id="bad-action"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: Action\nspec: {at: 1m, action: hold, target: just-a-name}\n",
        "bad.yaml: document 1 (Action): spec.target: invalid target 'just-a-name'", id="bad-target"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: Action\nspec: {at: 1m, action: hold, target: cq/cq-a}\n",
        "bad.yaml: document 1 (Action hold cq/cq-a): spec.target: action 'hold' needs a workload",
        id="workload-action-on-queue"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: Action\nspec: {at: 1m, action: stop, target: team-a/wl}\n",
        "bad.yaml: document 1 (Action stop team-a/wl): spec.target: action 'stop' needs a queue",
        id="queue-action-on-workload"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: Action\nmetadata: {name: a}\nspec: {at: soon, action: hold, target: a/b}\n",
        'bad.yaml: document 1 (Action a): spec.at: invalid duration "soon"', id="bad-action-at"),
    pytest.param(
        NS + "---\n" + NS,
        'bad.yaml: document 2 (Namespace team-a): metadata.annotations["kueuetop.io/at"]: '
        "Namespace team-a is already created at 0s by document 1", id="duplicate-creation"),
    pytest.param(
        NS + "---\n" + WORKLOAD.format(name="w", at="1m") + "---\n" + WORKLOAD.format(name="w", at="5m")
        + "---\n" + WORKLOAD.format(name="w", at="5m"),
        "bad.yaml: document 4 (Workload team-a/w): metadata.annotations[\"kueuetop.io/at\"]: "
        "Workload team-a/w is already updated at 5m by document 3", id="duplicate-update"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {size: 1, provisioningDelay: later}\n",
        'bad.yaml: document 1 (NodePool p): spec.provisioningDelay: invalid duration "later"', id="pool-delay"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {size: -1}\n",
        "bad.yaml: document 1 (NodePool p): spec.size: expected a non-negative integer", id="pool-size"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {minSize: 3, maxSize: 2}\n",
        "bad.yaml: document 1 (NodePool p): spec.minSize: minSize 3 is above maxSize 2", id="pool-bounds"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: NodePool\nmetadata: {name: p}\n"
        "spec: {capacityLimit: [{from: 5m, until: 1m}]}\n",
        "bad.yaml: document 1 (NodePool p): spec.capacityLimit[0].until: must be later than from",
        id="pool-capacity-window"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: NodePool\nmetadata: {name: p}\nspec: {gpu: {model: L4, count: two}}\n",
        "bad.yaml: document 1 (NodePool p): spec.gpu.count: expected a non-negative integer", id="pool-gpu"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: SimConfig\nspec: {speed: 0}\n",
        "bad.yaml: document 1 (SimConfig): spec.speed: expected a positive number", id="config-speed"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: SimConfig\nspec: {waitForPodsReady: {timeout: forever}}\n",
        "bad.yaml: document 1 (SimConfig): spec: ", id="config-kueue-fragment"),
    pytest.param(
        "apiVersion: kueuetop.io/v1\nkind: SimConfig\n---\napiVersion: kueuetop.io/v1\nkind: SimConfig\n",
        "bad.yaml: document 2 (SimConfig): kind: a scenario may hold only one SimConfig", id="config-twice"),
    pytest.param(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, annotations: [a]}\n",
        "bad.yaml: document 1 (Pod default/p): metadata.annotations: expected a mapping", id="annotations-list"),
]


@pytest.mark.parametrize(("text", "message"), BAD)
def test_bad_scenarios(text, message):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "bad.yaml")
    assert str(info.value).startswith(message), str(info.value)
    assert info.value.source == "bad.yaml"


def test_error_carries_document_and_field():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(NS + "---\n" + WORKLOAD.format(name="wl-1", at="abc"), "refarch.yaml")
    assert info.value.document == 2
    assert info.value.field == 'metadata.annotations["kueuetop.io/at"]'
    assert str(info.value) == ('refarch.yaml: document 2 (Workload team-a/wl-1): '
                               'metadata.annotations["kueuetop.io/at"]: invalid duration "abc"')


def test_yaml_error_reports_line():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(NS + "---\n" + NS + "---\n# comment\nkey: {a: b}: c\n", "x.yaml")
    assert info.value.line == 10
    assert info.value.document == 3
