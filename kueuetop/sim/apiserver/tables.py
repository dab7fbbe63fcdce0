"""`Table` (meta.k8s.io/v1) rendering for `kubectl get`: CRD printer columns for custom
resources and the core API server's printers for built-in kinds. Cells for wide
(priority 1) columns are always produced; kubectl hides them unless `-o wide`."""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Callable
from typing import Any

from kueuetop.sim.storage.kinds import Kind, PrinterColumn, printer_columns

Obj = dict[str, Any]

_NAME_DESC = ("Name must be unique within a namespace. Is required when creating resources, although "
              "some resources may allow a client to request the generation of an appropriate name "
              "automatically. Name is primarily intended for creation idempotence and configuration "
              "definition. Cannot be updated. More info: "
              "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")
_AGE_DESC = ("CreationTimestamp is a timestamp representing the server time when this object was "
             "created.")


def parse_time(value: Any) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    m = re.match(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$", value)
    if not m:
        return None
    t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
    frac = float(m.group(2)) if m.group(2) else 0.0
    tz = m.group(3)
    if tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        t -= sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    return t + frac


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rem = s % 60
        return f"{minutes}m" if rem == 0 else f"{minutes}m{rem}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(value: Any, now: float) -> str:
    t = parse_time(value)
    if t is None:
        return "<unknown>"
    return human_duration(now - t)


# ----------------------------------------------------------------- JSONPath subset

_TOKEN = re.compile(r"\.([A-Za-z0-9_\-]+)|\[\?\(@\.([A-Za-z0-9_.\-]+)\s*==\s*['\"]([^'\"]*)['\"]\)\]|\[(\d+)\]")


def jsonpath(obj: Any, path: str) -> list[Any]:
    """Evaluate the simple JSONPath forms CRD printer columns use; returns all matches."""
    current = [obj]
    pos = 0
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if not m:
            return []
        pos = m.end()
        nxt: list[Any] = []
        for cur in current:
            if m.group(1) is not None:
                if isinstance(cur, dict) and m.group(1) in cur:
                    nxt.append(cur[m.group(1)])
            elif m.group(2) is not None:
                if isinstance(cur, list):
                    for item in cur:
                        v: Any = item
                        for part in m.group(2).split("."):
                            v = v.get(part) if isinstance(v, dict) else None
                        if v is not None and str(v) == m.group(3):
                            nxt.append(item)
            else:
                i = int(m.group(4))
                if isinstance(cur, list) and i < len(cur):
                    nxt.append(cur[i])
        current = nxt
    return current


# ----------------------------------------------------------------- columns

def _col(name: str, type_: str = "string", priority: int = 0, description: str = "",
         fmt: str = "") -> dict[str, Any]:
    return {"name": name, "type": type_, "format": fmt, "description": description, "priority": priority}


NAME_COLUMN = _col("Name", fmt="name", description=_NAME_DESC)

CORE_COLUMNS: dict[tuple[str, str], list[dict[str, Any]]] = {
    ("", "pods"): [
        NAME_COLUMN,
        _col("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
        _col("Status", description="The aggregate status of the containers in this pod."),
        _col("Restarts", description="The number of times the containers in this pod have been restarted "
                                     "and when the last container in this pod has restarted."),
        _col("Age", description=_AGE_DESC),
        _col("IP", priority=1, description="podIP address allocated to the pod."),
        _col("Node", priority=1, description="NodeName indicates in which node this pod is scheduled."),
        _col("Nominated Node", priority=1, description="nominatedNodeName is set when this pod preempts "
                                                       "other pods on the node."),
        _col("Readiness Gates", priority=1, description="If specified, all readiness gates will be "
                                                        "evaluated for pod readiness."),
    ],
    ("", "nodes"): [
        NAME_COLUMN,
        _col("Status", description="The status of the node"),
        _col("Roles", description="The roles of the node"),
        _col("Age", description=_AGE_DESC),
        _col("Version", description="Kubelet Version reported by the node."),
        _col("Internal-IP", priority=1, description="List of addresses reachable to the node."),
        _col("External-IP", priority=1, description="List of addresses reachable to the node."),
        _col("OS-Image", priority=1, description="OS Image reported by the node."),
        _col("Kernel-Version", priority=1, description="Kernel Version reported by the node."),
        _col("Container-Runtime", priority=1, description="ContainerRuntime Version reported by the node."),
    ],
    ("", "namespaces"): [
        NAME_COLUMN,
        _col("Status", description="The status of the namespace"),
        _col("Age", description=_AGE_DESC),
    ],
    ("", "events"): [
        _col("Last Seen", description="The time at which the most recent occurrence of this event was "
                                      "recorded."),
        _col("Type", description="Type of this event (Normal, Warning), new types could be added in the "
                                 "future"),
        _col("Reason", description="This should be a short, machine understandable string that gives the "
                                   "reason for the transition into the object's current status."),
        _col("Object", description="The object that this event is about."),
        _col("Subobject", priority=1, description="If referring to a piece of an object instead of an "
                                                  "entire object, this string should contain a valid "
                                                  "JSON/Go field access statement."),
        _col("Source", priority=1, description="The component reporting this event."),
        _col("Message", description="A human-readable description of the status of this operation."),
        _col("First Seen", priority=1, description="The time at which the event was first recorded."),
        _col("Count", priority=1, description="The number of times this event has occurred."),
        _col("Name", priority=1, fmt="name", description=_NAME_DESC),
    ],
    ("batch", "jobs"): [
        NAME_COLUMN,
        _col("Status", description="Status of the job."),
        _col("Completions", description="The number of pods which reached phase Succeeded."),
        _col("Duration", description="Time required to complete the job."),
        _col("Age", description=_AGE_DESC),
        _col("Containers", priority=1, description="Names of each container in the template."),
        _col("Images", priority=1, description="Images referenced by each container in the template."),
        _col("Selector", priority=1, description="A label query over pods that should match the pod count."),
    ],
    ("", "secrets"): [
        NAME_COLUMN,
        _col("Type", description="The type of the secret."),
        _col("Data", "integer", description="The number of entries in the secret."),
        _col("Age", description=_AGE_DESC),
    ],
    ("scheduling.k8s.io", "priorityclasses"): [
        NAME_COLUMN,
        _col("Value", "integer", description="value represents the integer value of this priority class."),
        _col("Global-Default", "boolean", description="globalDefault specifies whether this PriorityClass "
                                                      "should be considered as the default priority for "
                                                      "pods that do not have any priority class."),
        _col("Age", description=_AGE_DESC),
        _col("PreemptionPolicy", description="preemptionPolicy is the Policy for preempting pods with "
                                             "lower priority."),
    ],
}


def _d(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _l(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _meta(o: Obj) -> dict[str, Any]:
    return _d(o.get("metadata"))


def _cond_true(obj: Obj, ctype: str) -> bool:
    return any(isinstance(c, dict) and c.get("type") == ctype and c.get("status") == "True"
               for c in _l(_d(obj.get("status")).get("conditions")))


def _pod_cells(o: Obj, now: float) -> list[Any]:
    spec, status, meta = _d(o.get("spec")), _d(o.get("status")), _meta(o)
    total = len(_l(spec.get("containers")))
    ready = 0
    restarts = 0
    last_restart: float | None = None
    reason = status.get("phase") or ""
    if status.get("reason"):
        reason = status["reason"]
    for c in _l(status.get("conditions")):
        if isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"
    has_running = False
    for cs in reversed(_l(status.get("containerStatuses"))):
        cs = _d(cs)
        restarts += int(cs.get("restartCount") or 0)
        term_last = _d(_d(cs.get("lastState")).get("terminated"))
        if term_last.get("finishedAt"):
            t = parse_time(term_last["finishedAt"])
            if t is not None and (last_restart is None or t > last_restart):
                last_restart = t
        state = _d(cs.get("state"))
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if isinstance(waiting, dict) and waiting.get("reason"):
            reason = waiting["reason"]
        elif isinstance(terminated, dict) and terminated.get("reason"):
            reason = terminated["reason"]
        elif isinstance(terminated, dict):
            reason = (f"Signal:{terminated['signal']}" if terminated.get("signal")
                      else f"ExitCode:{terminated.get('exitCode', 0)}")
        elif cs.get("ready") and isinstance(state.get("running"), dict):
            has_running = True
            ready += 1
    if reason == "Completed" and has_running:
        reason = "Running" if any(_d(c).get("type") == "Ready" for c in _l(status.get("conditions"))) \
            else "NotReady"
    if meta.get("deletionTimestamp") and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif meta.get("deletionTimestamp") and status.get("phase") not in ("Succeeded", "Failed"):
        reason = "Terminating"
    restarts_s = str(restarts)
    if restarts and last_restart is not None:
        restarts_s = f"{restarts} ({human_duration(now - last_restart)} ago)"
    ips = _l(status.get("podIPs"))
    ip = _d(ips[0]).get("ip") if ips else status.get("podIP")
    gates = _l(spec.get("readinessGates"))
    gate_s = "<none>"
    if gates:
        true_types = {_d(c).get("type") for c in _l(status.get("conditions")) if _d(c).get("status") == "True"}
        gate_s = f"{sum(1 for g in gates if _d(g).get('conditionType') in true_types)}/{len(gates)}"
    return [meta.get("name"), f"{ready}/{total}", reason, restarts_s, since(meta.get("creationTimestamp"), now),
            ip or "<none>", spec.get("nodeName") or "<none>", status.get("nominatedNodeName") or "<none>",
            gate_s]


def _node_cells(o: Obj, now: float) -> list[Any]:
    spec, status, meta = _d(o.get("spec")), _d(o.get("status")), _meta(o)
    states = []
    for c in _l(status.get("conditions")):
        if _d(c).get("type") == "Ready":
            states = ["Ready" if c.get("status") == "True" else "NotReady"]
    if not states:
        states = ["Unknown"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for k, v in _d(meta.get("labels")).items():
        if k.startswith("node-role.kubernetes.io/"):
            roles.add(k[len("node-role.kubernetes.io/"):])
        elif k == "kubernetes.io/role":
            roles.add(v)
    info = _d(status.get("nodeInfo"))

    def addr(kind: str) -> str:
        for a in _l(status.get("addresses")):
            if _d(a).get("type") == kind:
                return str(a.get("address"))
        return "<none>"

    return [meta.get("name"), ",".join(states), ",".join(sorted(r for r in roles if r)) or "<none>",
            since(meta.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
            addr("InternalIP"), addr("ExternalIP"), info.get("osImage") or "<unknown>",
            info.get("kernelVersion") or "<unknown>", info.get("containerRuntimeVersion") or "<unknown>"]


def _namespace_cells(o: Obj, now: float) -> list[Any]:
    meta = _meta(o)
    return [meta.get("name"), _d(o.get("status")).get("phase", ""), since(meta.get("creationTimestamp"), now)]


def _event_cells(o: Obj, now: float) -> list[Any]:
    meta = _meta(o)
    first = since(o.get("firstTimestamp"), now) if o.get("firstTimestamp") else since(o.get("eventTime"), now)
    last = since(o.get("lastTimestamp"), now) if o.get("lastTimestamp") else first
    count = o.get("count") or 0
    series = o.get("series")
    if isinstance(series, dict):
        last = since(series.get("lastObservedTime"), now)
        count = series.get("count") or 0
    elif not count:
        count = 1
    inv = _d(o.get("involvedObject"))
    kind = str(inv.get("kind") or "").lower()
    target = f"{kind}/{inv['name']}" if inv.get("name") else kind
    src = _d(o.get("source"))
    component = src.get("component") or o.get("reportingComponent") or o.get("reportingController") or ""
    host = src.get("host") or o.get("reportingInstance") or ""
    source = f"{component}, {host}" if host else component
    return [last, o.get("type", ""), o.get("reason", ""), target, inv.get("fieldPath", ""), source,
            str(o.get("message") or "").strip(), first, int(count), meta.get("name")]


def _format_selector(sel: Any) -> str:
    if not isinstance(sel, dict) or (not sel.get("matchLabels") and not sel.get("matchExpressions")):
        return "<none>"
    parts = [f"{k}={v}" for k, v in sorted(_d(sel.get("matchLabels")).items())]
    for e in _l(sel.get("matchExpressions")):
        e = _d(e)
        op = e.get("operator")
        vals = ",".join(_l(e.get("values")))
        if op == "In":
            parts.append(f"{e.get('key')} in ({vals})")
        elif op == "NotIn":
            parts.append(f"{e.get('key')} notin ({vals})")
        elif op == "Exists":
            parts.append(str(e.get("key")))
        elif op == "DoesNotExist":
            parts.append(f"!{e.get('key')}")
    return ",".join(parts)


def _job_cells(o: Obj, now: float) -> list[Any]:
    spec, status, meta = _d(o.get("spec")), _d(o.get("status")), _meta(o)
    if _cond_true(o, "Complete"):
        state = "Complete"
    elif _cond_true(o, "Failed"):
        state = "Failed"
    elif meta.get("deletionTimestamp"):
        state = "Terminating"
    elif _cond_true(o, "Suspended"):
        state = "Suspended"
    elif _cond_true(o, "FailureTarget"):
        state = "FailureTarget"
    elif _cond_true(o, "SuccessCriteriaMet"):
        state = "SuccessCriteriaMet"
    else:
        state = "Running"
    succeeded = int(status.get("succeeded") or 0)
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{spec['completions']}"
    elif spec.get("parallelism") is None or int(spec["parallelism"]) <= 1:
        completions = f"{succeeded}/1"
    else:
        completions = f"{succeeded}/1 of {spec['parallelism']}"
    start = parse_time(status.get("startTime"))
    end = parse_time(status.get("completionTime"))
    duration = "" if start is None else human_duration((end if end is not None else now) - start)
    containers = _l(_d(_d(spec.get("template")).get("spec")).get("containers"))
    return [meta.get("name"), state, completions, duration, since(meta.get("creationTimestamp"), now),
            ",".join(str(_d(c).get("name", "")) for c in containers),
            ",".join(str(_d(c).get("image", "")) for c in containers),
            _format_selector(spec.get("selector"))]


def _priority_class_cells(o: Obj, now: float) -> list[Any]:
    meta = _meta(o)
    return [meta.get("name"), o.get("value", 0), bool(o.get("globalDefault", False)),
            since(meta.get("creationTimestamp"), now), o.get("preemptionPolicy") or "PreemptLowerPriority"]


def _secret_cells(o: Obj, now: float) -> list[Any]:
    # Never the values: kubectl's printer shows how many keys a Secret holds, not what.
    data = _d(o.get("data"))
    return [_meta(o).get("name"), o.get("type") or "Opaque", len(data),
            since(_meta(o).get("creationTimestamp"), now)]


CORE_PRINTERS: dict[tuple[str, str], Callable[[Obj, float], list[Any]]] = {
    ("", "secrets"): _secret_cells,
    ("", "pods"): _pod_cells,
    ("", "nodes"): _node_cells,
    ("", "namespaces"): _namespace_cells,
    ("", "events"): _event_cells,
    ("batch", "jobs"): _job_cells,
    ("scheduling.k8s.io", "priorityclasses"): _priority_class_cells,
}


def _crd_cell(col: PrinterColumn, obj: Obj, now: float) -> Any:
    found = jsonpath(obj, col.json_path)
    if not found or found[0] is None:
        return None
    v = found[0]
    if col.type == "date":
        return since(v, now)
    if col.type == "integer":
        return v if isinstance(v, int) else None
    if col.type == "number":
        return v if isinstance(v, int | float) else None
    if col.type == "boolean":
        return v if isinstance(v, bool) else None
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict | list):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def column_definitions(kind: Kind, version: str) -> list[dict[str, Any]]:
    if kind.key in CORE_COLUMNS:
        return CORE_COLUMNS[kind.key]
    cols = [NAME_COLUMN]
    for c in printer_columns(kind, version):
        # apiextensions' table convertor describes a column the CRD left undescribed by its path.
        desc = c.description or f"Custom resource definition column (in JSONPath format): {c.json_path}"
        cols.append(_col(c.name, c.type, c.priority, desc, c.format))
    return cols


def row_cells(kind: Kind, version: str, obj: Obj, now: float) -> list[Any]:
    printer = CORE_PRINTERS.get(kind.key)
    if printer is not None:
        return printer(obj, now)
    return [_meta(obj).get("name")] + [_crd_cell(c, obj, now) for c in printer_columns(kind, version)]


def row_object(obj: Obj, include: str) -> dict[str, Any] | None:
    if include == "None":
        return None
    if include == "Object":
        return obj
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": _meta(obj)}


def table(kind: Kind, version: str, objs: list[Obj], now: float, *, resource_version: str = "",
          continue_token: str = "", include_object: str = "Metadata", headers: bool = True) -> Obj:
    """A meta.k8s.io/v1 Table for objs (already converted to `version`)."""
    meta: dict[str, Any] = {}
    if resource_version:
        meta["resourceVersion"] = resource_version
    if continue_token:
        meta["continue"] = continue_token
    rows = []
    for o in objs:
        row: dict[str, Any] = {"cells": row_cells(kind, version, o, now)}
        ro = row_object(o, include_object)
        if ro is not None:
            row["object"] = ro
        rows.append(row)
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": column_definitions(kind, version) if headers else [], "rows": rows}
