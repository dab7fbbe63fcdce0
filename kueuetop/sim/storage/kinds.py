"""Registry of the API kinds the simulated cluster serves.

Each kind is described once; discovery documents, routing, tables and the store all read
this registry. Kueue kinds are stored as v1beta2 and also served as the deprecated v1beta1.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KUEUE_GROUP = "kueue.x-k8s.io"
VISIBILITY_GROUP = "visibility.kueue.x-k8s.io"
KUEUE_DEPRECATION = "This version is deprecated. Use v1beta2 instead."

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
STATUS_VERBS = ["get", "patch", "update"]


@dataclass(frozen=True)
class PrinterColumn:
    """A CRD additionalPrinterColumn (name is the display name, json_path a JSONPath)."""

    name: str
    json_path: str
    type: str = "string"
    priority: int = 0
    description: str = ""
    format: str = ""


@dataclass(frozen=True)
class Kind:
    group: str
    versions: tuple[str, ...]          # served versions, preferred first
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    status_subresource: bool = False
    crd: bool = False                  # columns come from printer_columns, not a core printer
    printer_columns: tuple[PrinterColumn, ...] = ()
    verbs: tuple[str, ...] = tuple(ALL_VERBS)
    deprecated_versions: dict[str, str] = field(default_factory=dict)
    selectable_fields: tuple[str, ...] = ()
    # REST default when DeleteOptions has no propagationPolicy (batch/v1 Job orphans pods).
    default_propagation: str = "Background"

    @property
    def storage_version(self) -> str:
        return self.versions[0]

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    def api_version(self, version: str | None = None) -> str:
        v = version or self.storage_version
        return f"{self.group}/{v}" if self.group else v

    @property
    def list_kind(self) -> str:
        return self.kind + "List"

    @property
    def qualified(self) -> str:
        """`plural.group` as used in API error messages (`workloads.kueue.x-k8s.io`)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _kueue(kind: str, plural: str, singular: str, namespaced: bool, short: tuple[str, ...],
           status: bool, columns: tuple[PrinterColumn, ...] = (),
           selectable: tuple[str, ...] = ()) -> Kind:
    return Kind(group=KUEUE_GROUP, versions=("v1beta2", "v1beta1"), kind=kind, plural=plural,
                singular=singular, namespaced=namespaced, short_names=short,
                status_subresource=status, crd=True, printer_columns=columns,
                deprecated_versions={"v1beta1": KUEUE_DEPRECATION}, selectable_fields=selectable)


# Columns as declared in Kueue's CRDs (config/components/crd/bases); a CRD that declares
# columns gets no automatic Age column, one that declares none gets Age only.
_CQ_COLUMNS = (
    PrinterColumn("Cohort", ".spec.cohortName", description="Cohort that this ClusterQueue belongs to"),
    PrinterColumn("Strategy", ".spec.queueingStrategy", priority=1,
                  description="The queueing strategy used to prioritize workloads"),
    PrinterColumn("Pending Workloads", ".status.pendingWorkloads", "integer",
                  description="Number of pending workloads"),
    PrinterColumn("Admitted Workloads", ".status.admittedWorkloads", "integer", priority=1,
                  description="Number of admitted workloads that haven't finished yet"),
)
_CQ_COLUMNS_V1BETA1 = (PrinterColumn("Cohort", ".spec.cohort",
                                     description="Cohort that this ClusterQueue belongs to"),
                       *_CQ_COLUMNS[1:])
_LQ_COLUMNS = (
    PrinterColumn("ClusterQueue", ".spec.clusterQueue", description="Backing ClusterQueue"),
    PrinterColumn("Pending Workloads", ".status.pendingWorkloads", "integer",
                  description="Number of pending workloads"),
    PrinterColumn("Admitted Workloads", ".status.admittedWorkloads", "integer",
                  description="Number of admitted workloads that haven't finished yet."),
)
_WL_COLUMNS = (
    PrinterColumn("Queue", ".spec.queueName", description="Name of the queue this workload was submitted to"),
    PrinterColumn("Reserved in", ".status.admission.clusterQueue",
                  description="Name of the ClusterQueue where the workload is reserving quota"),
    PrinterColumn("Admitted", ".status.conditions[?(@.type=='Admitted')].status",
                  description="Admission status"),
    PrinterColumn("Finished", ".status.conditions[?(@.type=='Finished')].status",
                  description="Workload finished"),
    PrinterColumn("Age", ".metadata.creationTimestamp", "date", description="Time this workload was created"),
)
# MultiKueueCluster declares these (apis/kueue/v1beta2/multikueue_types.go); MultiKueueConfig none.
_MKC_COLUMNS = (
    PrinterColumn("Connected", ".status.conditions[?(@.type=='Active')].status",
                  description="MultiKueueCluster is connected"),
    PrinterColumn("Age", ".metadata.creationTimestamp", "date", description="Time this workload was created"),
)
_WPC_COLUMNS = (PrinterColumn("Value", ".value", "integer",
                              description="Value of workloadPriorityClass's Priority"),)
# cluster-autoscaler's CRD (apis/config/crd/autoscaling.x-k8s.io_provisioningrequests.yaml)
# declares one column, Age, without a description.
_PROVREQ_COLUMNS = (PrinterColumn("Age", ".metadata.creationTimestamp", "date"),)
# What apiextensions serves for a CRD version that declares no columns.
CREATION_TIMESTAMP_DESC = (
    "CreationTimestamp is a timestamp representing the server time when this object was created. It "
    "is not guaranteed to be set in happens-before order across separate operations. Clients may not "
    "set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. "
    "Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata")
AGE_COLUMN = PrinterColumn("Age", ".metadata.creationTimestamp", "date", description=CREATION_TIMESTAMP_DESC)

# v1beta1 printer columns that differ from v1beta2 (only the CQ cohort path was renamed).
V1BETA1_COLUMNS: dict[str, tuple[PrinterColumn, ...]] = {"clusterqueues": _CQ_COLUMNS_V1BETA1}

KINDS: tuple[Kind, ...] = (
    Kind("", ("v1",), "Namespace", "namespaces", "namespace", False, ("ns",), status_subresource=True,
         verbs=("create", "delete", "get", "list", "patch", "update", "watch")),
    Kind("", ("v1",), "Node", "nodes", "node", False, ("no",), status_subresource=True),
    Kind("", ("v1",), "Pod", "pods", "pod", True, ("po",), ("all",), status_subresource=True),
    Kind("", ("v1",), "Event", "events", "event", True, ("ev",)),
    Kind("", ("v1",), "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    # MultiKueue reads a worker's kubeconfig from a Secret in Kueue's namespace.
    Kind("", ("v1",), "Secret", "secrets", "secret", True),
    Kind("batch", ("v1",), "Job", "jobs", "job", True, (), ("all",), status_subresource=True,
         default_propagation="Orphan"),
    Kind("scheduling.k8s.io", ("v1",), "PriorityClass", "priorityclasses", "priorityclass", False, ("pc",)),
    _kueue("ClusterQueue", "clusterqueues", "clusterqueue", False, ("cq",), True, _CQ_COLUMNS),
    _kueue("LocalQueue", "localqueues", "localqueue", True, ("queue", "queues", "lq"), True, _LQ_COLUMNS),
    _kueue("Workload", "workloads", "workload", True, ("kwl", "kueueworkload", "kueueworkloads"), True,
           _WL_COLUMNS, selectable=("status.admission.clusterQueue",)),
    _kueue("ResourceFlavor", "resourceflavors", "resourceflavor", False, ("flavor", "flavors", "rf"), False),
    _kueue("Cohort", "cohorts", "cohort", False, ("co",), True),
    _kueue("AdmissionCheck", "admissionchecks", "admissioncheck", False, ("ac",), True),
    _kueue("WorkloadPriorityClass", "workloadpriorityclasses", "workloadpriorityclass", False, ("wpc",),
           False, _WPC_COLUMNS),
    _kueue("ProvisioningRequestConfig", "provisioningrequestconfigs", "provisioningrequestconfig", False,
           ("prc",), False),
    _kueue("MultiKueueCluster", "multikueueclusters", "multikueuecluster", False, ("mkc",), True, _MKC_COLUMNS),
    _kueue("MultiKueueConfig", "multikueueconfigs", "multikueueconfig", False, ("mkconf",), False),
    Kind("autoscaling.x-k8s.io", ("v1",), "ProvisioningRequest", "provisioningrequests",
         "provisioningrequest", True, ("provreq", "provreqs"), status_subresource=True, crd=True,
         printer_columns=_PROVREQ_COLUMNS),
    Kind("authorization.k8s.io", ("v1",), "SelfSubjectAccessReview", "selfsubjectaccessreviews",
         "selfsubjectaccessreview", False, verbs=("create",)),
)

# Kinds that are never stored (answered by the server itself).
VIRTUAL_PLURALS = {("authorization.k8s.io", "selfsubjectaccessreviews")}

VISIBILITY_VERSIONS = ("v1beta2", "v1beta1")

_BY_KEY: dict[tuple[str, str], Kind] = {k.key: k for k in KINDS}


def get_kind(group: str, plural: str) -> Kind | None:
    return _BY_KEY.get((group, plural))


def find_kind(group: str, version: str, plural: str) -> Kind | None:
    """The kind served at GROUP/VERSION/PLURAL, or None."""
    k = _BY_KEY.get((group, plural))
    if k is None or version not in k.versions:
        return None
    return k


def kind_for_object(obj: dict[str, Any]) -> Kind | None:
    """Look a kind up by an object's apiVersion and kind fields."""
    api_version = str(obj.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    for k in KINDS:
        if k.group == group and k.kind == obj.get("kind") and version in k.versions:
            return k
    return None


def groups() -> dict[str, tuple[str, ...]]:
    """Served API groups (excluding core) → versions, preferred first; includes visibility."""
    out: dict[str, tuple[str, ...]] = {}
    for k in KINDS:
        if k.group:
            out.setdefault(k.group, k.versions)
    out[VISIBILITY_GROUP] = VISIBILITY_VERSIONS
    return out


def kinds_in(group: str, version: str) -> list[Kind]:
    return [k for k in KINDS if k.group == group and version in k.versions]


def printer_columns(kind: Kind, version: str) -> tuple[PrinterColumn, ...]:
    if version == "v1beta1" and kind.plural in V1BETA1_COLUMNS:
        return V1BETA1_COLUMNS[kind.plural]
    return kind.printer_columns or (AGE_COLUMN,)
