"""Validation of written objects, mirroring Kueue's CRD schemas, CEL rules and webhooks and
the core API's basic checks. Returns field causes; the caller answers 422 Invalid."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Any

from kueuetop.kueue.errors import QuantityError
from kueuetop.kueue.quantity import parse_quantity
from kueuetop.sim.apiserver.quantity_text import canonical
from kueuetop.sim.storage.kinds import KUEUE_GROUP, Kind

Obj = dict[str, Any]
Cause = dict[str, str]

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|([eE][+-]?\d+))?$")

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                 "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
                 "regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
             "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
             "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")

# apimachinery validation.IsNegativeErrorMsg
IS_NEGATIVE_MSG = "must be greater than or equal to 0"
# apimachinery api/validation/objectmeta.go: the sum of every annotation's key and value length.
TOTAL_ANNOTATION_SIZE_LIMIT_B = 256 * (1 << 10)

QUEUEING_STRATEGIES = ("StrictFIFO", "BestEffortFIFO")
STOP_POLICIES = ("None", "Hold", "HoldAndDrain")
WITHIN_CQ = ("Never", "LowerPriority", "LowerOrNewerEqualPriority")
RECLAIM = ("Never", "LowerPriority", "Any")
BORROW_WITHIN = ("Never", "LowerPriority")
FUNGIBILITY_V1BETA2 = ("MayStopSearch", "TryNextFlavor")
FUNGIBILITY_V1BETA1_BORROW = ("Borrow", "MayStopSearch", "TryNextFlavor")
FUNGIBILITY_V1BETA1_PREEMPT = ("Preempt", "MayStopSearch", "TryNextFlavor")
FUNGIBILITY_PREFERENCE = ("BorrowingOverPreemption", "PreemptionOverBorrowing")
SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")


def _fmt(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)


def required(field: str, detail: str = "") -> Cause:
    msg = "Required value" + (f": {detail}" if detail else "")
    return {"reason": "FieldValueRequired", "message": msg, "field": field}


def invalid(field: str, value: Any, detail: str) -> Cause:
    return {"reason": "FieldValueInvalid", "message": f"Invalid value: {_fmt(value)}: {detail}",
            "field": field}


def not_supported(field: str, value: Any, allowed: tuple[str, ...]) -> Cause:
    choices = ", ".join(f'"{a}"' for a in allowed)
    return {"reason": "FieldValueNotSupported",
            "message": f"Unsupported value: {_fmt(value)}: supported values: {choices}", "field": field}


def forbidden(field: str, detail: str) -> Cause:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def is_quantity(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        ok = True
    else:
        ok = isinstance(value, str) and bool(_QUANTITY.match(value.strip())) and value.strip() == value
    if ok:
        try:
            parse_quantity(value)
        except QuantityError:
            return False
    return ok


def _enum(causes: list[Cause], obj: dict[str, Any], key: str, field: str, allowed: tuple[str, ...]) -> None:
    if key in obj and obj[key] is not None and obj[key] not in allowed:
        causes.append(not_supported(field, obj[key], allowed))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _has_condition(obj: Obj | None, ctype: str) -> bool:
    for c in _list(_dict(_dict(obj).get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == ctype and c.get("status") == "True":
            return True
    return False


# ----------------------------------------------------------------- metadata

def validate_metadata(kind: Kind, obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return [required("metadata.name", "name or generateName is required")]
    name = meta.get("name")
    if not name and not meta.get("generateName"):
        causes.append(required("metadata.name", "name or generateName is required"))
    elif name:
        if not isinstance(name, str):
            causes.append(invalid("metadata.name", name, "must be a string"))
        elif kind.plural == "namespaces":
            if len(name) > 63 or not _DNS1123_LABEL.match(name):
                causes.append(invalid("metadata.name", name, LABEL_MSG))
        elif kind.plural != "events" and (len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name)):
            causes.append(invalid("metadata.name", name, SUBDOMAIN_MSG))
    for f in ("labels", "annotations"):
        v = meta.get(f)
        if v is not None and (not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values())):
            causes.append(invalid(f"metadata.{f}", "object", "must be a map of strings"))
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        # apimachinery ValidateAnnotations → ValidateAnnotationsSize (bytes of keys plus values),
        # reported as field.TooLong, whose message omits the value.
        size = sum(len(str(k).encode()) + len(v.encode()) for k, v in annotations.items() if isinstance(v, str))
        if size > TOTAL_ANNOTATION_SIZE_LIMIT_B:
            causes.append({"reason": "FieldValueTooLong",
                           "message": f"Too long: may not be more than {TOTAL_ANNOTATION_SIZE_LIMIT_B} bytes",
                           "field": "metadata.annotations"})
    return causes


# ----------------------------------------------------------------- kueue kinds

def _validate_resource_groups(causes: list[Cause], rgs: Any, base: str, has_parent: bool,
                              parent_word: str, check_lending: bool) -> None:
    if rgs is None:
        return
    if not isinstance(rgs, list):
        causes.append(invalid(base, "object", "must be an array"))
        return
    seen_resources: set[str] = set()
    for i, rg in enumerate(rgs):
        p = f"{base}[{i}]"
        if not isinstance(rg, dict):
            causes.append(invalid(p, rg, "must be an object"))
            continue
        covered = rg.get("coveredResources")
        if not isinstance(covered, list) or not covered:
            causes.append(required(f"{p}.coveredResources"))
            covered = []
        for r in covered:
            if r in seen_resources:
                causes.append({"reason": "FieldValueDuplicate", "message": f"Duplicate value: {_fmt(r)}",
                               "field": f"{p}.coveredResources"})
            seen_resources.add(r)
        flavors = rg.get("flavors")
        if not isinstance(flavors, list) or not flavors:
            causes.append(required(f"{p}.flavors"))
            continue
        for j, fl in enumerate(flavors):
            fp = f"{p}.flavors[{j}]"
            if not isinstance(fl, dict):
                causes.append(invalid(fp, fl, "must be an object"))
                continue
            if not fl.get("name"):
                causes.append(required(f"{fp}.name"))
            resources = fl.get("resources")
            if not isinstance(resources, list) or not resources:
                causes.append(required(f"{fp}.resources"))
                continue
            names = [r.get("name") for r in resources if isinstance(r, dict)]
            if len(resources) != len(covered) or set(names) != set(covered):
                # CEL rule on ResourceGroup plus the webhook's per-name check.
                causes.append(invalid(p, "object",
                                      "flavors must have the same number of resources as the "
                                      "coveredResources"))
            for k, r in enumerate(resources):
                rp = f"{fp}.resources[{k}]"
                if not isinstance(r, dict):
                    causes.append(invalid(rp, r, "must be an object"))
                    continue
                if not r.get("name"):
                    causes.append(required(f"{rp}.name"))
                if "nominalQuota" not in r:
                    causes.append(required(f"{rp}.nominalQuota"))
                causes += _quota_causes(r, rp, has_parent, parent_word, check_lending)


def _quota_causes(r: dict[str, Any], rp: str, has_parent: bool, parent_word: str,
                  check_lending: bool) -> list[Cause]:
    """One ResourceQuota's quantities: the CRD schema's pattern first (a bad string never reaches
    the webhook), then Kueue's webhook (pkg/webhooks/clusterqueue_webhook.go validateFlavorQuotas,
    shared by the Cohort webhook) in its order: nominalQuota non-negative; borrowingLimit nil
    without a parent, non-negative; lendingLimit non-negative, nil without a parent, and for a
    ClusterQueue (enforceNominalGreaterThanLending) at most nominalQuota. Values are reported as
    Quantity.String() prints them."""
    causes: list[Cause] = []
    values: dict[str, Fraction] = {}
    for q in ("nominalQuota", "borrowingLimit", "lendingLimit"):
        if q in r and r[q] is not None:
            if not is_quantity(r[q]):
                causes.append(invalid(f"{rp}.{q}", r[q], "quantities must match the regular expression "
                                                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"))
            else:
                values[q] = parse_quantity(r[q])
    if causes:
        return causes

    def negative(q: str) -> None:
        if values[q] < 0:
            causes.append(invalid(f"{rp}.{q}", canonical(r[q]), IS_NEGATIVE_MSG))

    def without_parent(q: str) -> None:
        if not has_parent:
            causes.append(invalid(f"{rp}.{q}", canonical(r[q]), f"must be nil when {parent_word} is empty"))

    if "nominalQuota" in values:
        negative("nominalQuota")
    if "borrowingLimit" in values:
        without_parent("borrowingLimit")
        negative("borrowingLimit")
    if "lendingLimit" in values:
        negative("lendingLimit")
        without_parent("lendingLimit")
        if check_lending and values["lendingLimit"] > values.get("nominalQuota", Fraction(0)):
            causes.append(invalid(f"{rp}.lendingLimit", canonical(r["lendingLimit"]),
                                  "must be less than or equal to the nominalQuota"))
    return causes


def _validate_namespace_selector(causes: list[Cause], sel: Any, field: str) -> None:
    if sel is None:
        return
    if not isinstance(sel, dict):
        causes.append(invalid(field, sel, "must be an object"))
        return
    ml = sel.get("matchLabels")
    if ml is not None and (not isinstance(ml, dict) or not all(isinstance(v, str) for v in ml.values())):
        causes.append(invalid(f"{field}.matchLabels", "object", "must be a map of strings"))
    exprs = sel.get("matchExpressions")
    if exprs is None:
        return
    if not isinstance(exprs, list):
        causes.append(invalid(f"{field}.matchExpressions", "object", "must be an array"))
        return
    for i, e in enumerate(exprs):
        p = f"{field}.matchExpressions[{i}]"
        if not isinstance(e, dict):
            causes.append(invalid(p, e, "must be an object"))
            continue
        if not e.get("key"):
            causes.append(required(f"{p}.key"))
        op = e.get("operator")
        if op not in SELECTOR_OPS:
            if op is None:
                causes.append(required(f"{p}.operator"))
            else:
                causes.append(invalid(f"{p}.operator", op, "not a valid selector operator"))
            continue
        vals = e.get("values")
        if op in ("In", "NotIn") and not vals:
            causes.append(required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
        if op in ("Exists", "DoesNotExist") and vals:
            causes.append(forbidden(f"{p}.values",
                                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))


def validate_cluster_queue(obj: Obj, version: str) -> list[Cause]:
    causes: list[Cause] = []
    spec = _dict(obj.get("spec"))
    _enum(causes, spec, "queueingStrategy", "spec.queueingStrategy", QUEUEING_STRATEGIES)
    _enum(causes, spec, "stopPolicy", "spec.stopPolicy", STOP_POLICIES)
    # Kueue objects are validated in their stored (v1beta2) shape; v1beta1 aliases were
    # already converted, so only the enums below differ by request version.
    cohort_field = "cohortName"
    cohort = spec.get(cohort_field)
    if cohort and (not isinstance(cohort, str) or not _DNS1123_SUBDOMAIN.match(cohort)):
        causes.append(invalid(f"spec.{cohort_field}", cohort, SUBDOMAIN_MSG))
    _validate_resource_groups(causes, spec.get("resourceGroups"), "spec.resourceGroups", bool(cohort),
                              "cohort", check_lending=True)
    pre = spec.get("preemption")
    if isinstance(pre, dict):
        _enum(causes, pre, "withinClusterQueue", "spec.preemption.withinClusterQueue", WITHIN_CQ)
        _enum(causes, pre, "reclaimWithinCohort", "spec.preemption.reclaimWithinCohort", RECLAIM)
        bwc = pre.get("borrowWithinCohort")
        if isinstance(bwc, dict):
            _enum(causes, bwc, "policy", "spec.preemption.borrowWithinCohort.policy", BORROW_WITHIN)
            if pre.get("reclaimWithinCohort", "Never") == "Never" and bwc.get("policy", "Never") != "Never":
                causes.append(invalid("spec.preemption", "object",
                                      "reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never"))
    ff = spec.get("flavorFungibility")
    if isinstance(ff, dict):
        if version == "v1beta1":
            _enum(causes, ff, "whenCanBorrow", "spec.flavorFungibility.whenCanBorrow",
                  FUNGIBILITY_V1BETA1_BORROW)
            _enum(causes, ff, "whenCanPreempt", "spec.flavorFungibility.whenCanPreempt",
                  FUNGIBILITY_V1BETA1_PREEMPT)
        else:
            _enum(causes, ff, "whenCanBorrow", "spec.flavorFungibility.whenCanBorrow", FUNGIBILITY_V1BETA2)
            _enum(causes, ff, "whenCanPreempt", "spec.flavorFungibility.whenCanPreempt", FUNGIBILITY_V1BETA2)
        _enum(causes, ff, "preference", "spec.flavorFungibility.preference", FUNGIBILITY_PREFERENCE)
        if ff.get("preference") is not None and not (
                ff.get("whenCanBorrow") == "TryNextFlavor" and ff.get("whenCanPreempt") == "TryNextFlavor"):
            causes.append(invalid("spec.flavorFungibility", "object",
                                  "preference can only be set when both whenCanBorrow and whenCanPreempt "
                                  "are TryNextFlavor"))
    _validate_namespace_selector(causes, spec.get("namespaceSelector"), "spec.namespaceSelector")
    fs = spec.get("fairSharing")
    if isinstance(fs, dict) and fs.get("weight") is not None and not is_quantity(fs["weight"]):
        causes.append(invalid("spec.fairSharing.weight", fs["weight"], "must be a quantity"))
    return causes


def validate_cohort(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    spec = _dict(obj.get("spec"))
    parent = spec.get("parentName")
    if parent and (not isinstance(parent, str) or not _DNS1123_SUBDOMAIN.match(parent)):
        causes.append(invalid("spec.parentName", parent, SUBDOMAIN_MSG))
    _validate_resource_groups(causes, spec.get("resourceGroups"), "spec.resourceGroups", bool(parent),
                              "parent", check_lending=False)
    return causes


def validate_local_queue(obj: Obj, old: Obj | None) -> list[Cause]:
    causes: list[Cause] = []
    spec = obj.get("spec")
    cq = _dict(spec).get("clusterQueue")
    if not cq:
        causes.append(required("spec.clusterQueue"))
    elif not isinstance(cq, str) or not _DNS1123_SUBDOMAIN.match(cq):
        causes.append(invalid("spec.clusterQueue", cq, SUBDOMAIN_MSG))
    _enum(causes, _dict(spec), "stopPolicy", "spec.stopPolicy", STOP_POLICIES)
    if old is not None:
        old_cq = _dict(old.get("spec")).get("clusterQueue")
        if cq != old_cq:
            causes.append(invalid("spec.clusterQueue", "string", "field is immutable"))
    return causes


def validate_workload(obj: Obj, old: Obj | None) -> list[Cause]:
    causes: list[Cause] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec")]
    pod_sets = spec.get("podSets")
    if not isinstance(pod_sets, list) or not pod_sets:
        causes.append(required("spec.podSets"))
    else:
        if len(pod_sets) > 18:
            causes.append({"reason": "FieldValueTooMany",
                           "message": f"Too many: {len(pod_sets)}: must have at most 18 items",
                           "field": "spec.podSets"})
        names: set[str] = set()
        for i, ps in enumerate(pod_sets):
            p = f"spec.podSets[{i}]"
            if not isinstance(ps, dict):
                causes.append(invalid(p, ps, "must be an object"))
                continue
            name = ps.get("name")
            if not name:
                causes.append(required(f"{p}.name"))
            elif not isinstance(name, str) or len(name) > 63 or not _DNS1123_LABEL.match(name):
                causes.append(invalid(f"{p}.name", name, LABEL_MSG))
            elif name in names:
                causes.append({"reason": "FieldValueDuplicate", "message": f"Duplicate value: {_fmt(name)}",
                               "field": f"{p}.name"})
            else:
                names.add(name)
            count = ps.get("count", 1)
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                causes.append(invalid(f"{p}.count", count, "should be greater than or equal to 0"))
            mc = ps.get("minCount")
            if mc is not None and (not isinstance(mc, int) or (isinstance(count, int) and mc > count)):
                causes.append(invalid(p, "object", "minCount should be positive and less or equal to count"))
            if "template" in ps and not isinstance(ps["template"], dict):
                causes.append(invalid(f"{p}.template", ps["template"], "must be an object"))
    ref = spec.get("priorityClassRef")
    if isinstance(ref, dict):
        _enum(causes, ref, "group", "spec.priorityClassRef.group", ("kueue.x-k8s.io", "scheduling.k8s.io"))
        _enum(causes, ref, "kind", "spec.priorityClassRef.kind", ("WorkloadPriorityClass", "PriorityClass"))
    if "active" in spec and not isinstance(spec["active"], bool):
        causes.append(invalid("spec.active", spec["active"], "must be a boolean"))
    met = spec.get("maximumExecutionTimeSeconds")
    if met is not None and (not isinstance(met, int) or met < 1):
        causes.append(invalid("spec.maximumExecutionTimeSeconds", met, "should be greater than or equal to 1"))
    if old is not None and _has_condition(old, "QuotaReserved") and _has_condition(obj, "QuotaReserved"):
        if _dict(old.get("spec")).get("queueName") != spec.get("queueName"):
            causes.append(invalid("spec", "object", "queueName is immutable while workload quota reserved"))
        if old.get("spec", {}).get("podSets") != pod_sets:
            causes.append(invalid("spec.podSets", "array", "field is immutable"))
    return causes


def validate_resource_flavor(obj: Obj) -> list[Cause]:
    causes: list[Cause] = []
    spec = _dict(obj.get("spec"))
    for i, t in enumerate(_list(spec.get("nodeTaints"))):
        if isinstance(t, dict) and t.get("effect") not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            causes.append(invalid("spec.nodeTaints", "array",
                                  "supported taint effect values: 'NoSchedule', 'PreferNoSchedule', "
                                  "'NoExecute'"))
            break
        if isinstance(t, dict) and not t.get("key"):
            causes.append(required(f"spec.nodeTaints[{i}].key"))
    if spec.get("topologyName") and not spec.get("nodeLabels"):
        causes.append(invalid("spec", "object", "at least one nodeLabel is required when topology is set"))
    return causes


def validate_admission_check(obj: Obj, old: Obj | None) -> list[Cause]:
    spec = _dict(obj.get("spec"))
    causes: list[Cause] = []
    if not spec.get("controllerName"):
        causes.append(required("spec.controllerName"))
    elif old is not None and _dict(old.get("spec")).get("controllerName") != spec.get("controllerName"):
        causes.append(invalid("spec.controllerName", "string", "field is immutable"))
    return causes


def validate_multikueue_cluster(obj: Obj) -> list[Cause]:
    """The CRD's rules: clusterSource holds exactly one of kubeConfig and clusterProfileRef;
    kubeConfig.location is 1..256 characters, locationType Secret (default) or Path."""
    source = _dict(_dict(obj.get("spec")).get("clusterSource"))
    has_kc, has_cp = "kubeConfig" in source, "clusterProfileRef" in source
    if has_kc == has_cp:
        return [invalid("spec.clusterSource", "object", "exactly one of the fields in [kubeConfig "
                        "clusterProfileRef] must be set")]
    if not has_kc:
        return []
    kc = _dict(source.get("kubeConfig"))
    causes: list[Cause] = []
    loc = kc.get("location")
    if not isinstance(loc, str) or not loc:
        causes.append(required("spec.clusterSource.kubeConfig.location"))
    elif len(loc) > 256:
        causes.append(invalid("spec.clusterSource.kubeConfig.location", loc, "may not be more than 256 bytes"))
    _enum(causes, kc, "locationType", "spec.clusterSource.kubeConfig.locationType", ("Secret", "Path"))
    return causes


def validate_multikueue_config(obj: Obj) -> list[Cause]:
    clusters = _dict(obj.get("spec")).get("clusters")
    if not isinstance(clusters, list) or not clusters:
        return [required("spec.clusters")]
    if len(clusters) > 20:
        return [invalid("spec.clusters", "array", "must have at most 20 items")]
    if len(set(map(str, clusters))) != len(clusters):
        return [invalid("spec.clusters", "array", "duplicate entries")]
    return []


def validate_wpc(obj: Obj) -> list[Cause]:
    v = obj.get("value")
    if v is None:
        return [required("value")]
    if not isinstance(v, int) or isinstance(v, bool):
        return [invalid("value", v, "must be an integer")]
    return []


# ----------------------------------------------------------------- core kinds

def validate_pod(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [required("spec.containers")]
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return [required("spec.containers")]
    causes = []
    for i, c in enumerate(containers):
        if not isinstance(c, dict) or not c.get("name"):
            causes.append(required(f"spec.containers[{i}].name"))
        elif not c.get("image"):
            causes.append(required(f"spec.containers[{i}].image"))
    return causes


def validate_job(obj: Obj) -> list[Cause]:
    spec = obj.get("spec")
    tmpl = _dict(_dict(spec).get("template"))
    if not tmpl.get("spec"):
        return [required("spec.template.spec.containers")]
    causes = [dict(c, field="spec.template." + c["field"]) for c in validate_pod(tmpl)]
    rp = _dict(tmpl.get("spec")).get("restartPolicy")
    if rp not in ("Never", "OnFailure"):
        causes.append(not_supported("spec.template.spec.restartPolicy", rp or "", ("OnFailure", "Never"))
                      if rp else required("spec.template.spec.restartPolicy"))
    return causes


def validate_priority_class(obj: Obj) -> list[Cause]:
    v = obj.get("value")
    if not isinstance(v, int) or isinstance(v, bool):
        return [required("value")]
    return []


def validate(kind: Kind, obj: Obj, old: Obj | None, version: str) -> list[Cause]:
    """All causes for writing obj (in request version `version`, kueue objects already in
    v1beta2 except for the version-specific enums checked here) over old (v1beta2 or None)."""
    causes = validate_metadata(kind, obj)
    if kind.group == KUEUE_GROUP:
        p = kind.plural
        if p == "clusterqueues":
            causes += validate_cluster_queue(obj, version)
        elif p == "localqueues":
            causes += validate_local_queue(obj, old)
        elif p == "workloads":
            causes += validate_workload(obj, old)
        elif p == "cohorts":
            causes += validate_cohort(obj)
        elif p == "resourceflavors":
            causes += validate_resource_flavor(obj)
        elif p == "admissionchecks":
            causes += validate_admission_check(obj, old)
        elif p == "workloadpriorityclasses":
            causes += validate_wpc(obj)
        elif p == "multikueueclusters":
            causes += validate_multikueue_cluster(obj)
        elif p == "multikueueconfigs":
            causes += validate_multikueue_config(obj)
    elif kind.key == ("", "pods") and old is None:
        causes += validate_pod(obj)
    elif kind.key == ("batch", "jobs") and old is None:
        causes += validate_job(obj)
    elif kind.key == ("scheduling.k8s.io", "priorityclasses"):
        causes += validate_priority_class(obj)
    return causes
