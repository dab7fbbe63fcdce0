"""Label and field selectors, parsed from query strings as the API server does."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kueuetop.sim.apiserver.status import bad_request
from kueuetop.sim.storage.kinds import Kind

Obj = dict[str, Any]

_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                     r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        has = self.key in labels
        v = labels.get(self.key)
        if self.op == "=":
            return has and v == self.values[0]
        if self.op == "!=":
            return not has or v != self.values[0]
        if self.op == "in":
            return has and v in self.values
        if self.op == "notin":
            return not has or v not in self.values
        if self.op == "exists":
            return has
        if self.op == "!":
            return not has
        try:
            n = int(v) if v is not None else None
        except ValueError:
            return False
        if n is None:
            return False
        return n > int(self.values[0]) if self.op == "gt" else n < int(self.values[0])


def _split_top(s: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _check_key(key: str, raw: str) -> None:
    if not _KEY_RE.match(key) or len(key.split("/")[-1]) > 63:
        raise bad_request(f'unable to parse requirement: invalid label key "{key}": '
                          f"name part must consist of alphanumeric characters, '-', '_' or '.'"
                          f" (selector {raw!r})")


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE_RE.match(value):
        raise bad_request(f'unable to parse requirement: values[0][{value}]: Invalid value: "{value}": '
                          "a valid label must be an empty string or consist of alphanumeric characters")


def parse_label_selector(raw: str | None) -> list[Requirement]:
    if not raw or not raw.strip():
        return []
    out: list[Requirement] = []
    for part in _split_top(raw):
        p = part.strip()
        if not p:
            raise bad_request(f"found '', expected: identifier (selector {raw!r})")
        m = re.match(r"^(\S+)\s+(in|notin)\s*\((.*)\)$", p)
        if m:
            key, op, vals = m.group(1), m.group(2), m.group(3)
            _check_key(key, raw)
            values = tuple(v.strip() for v in vals.split(",")) if vals.strip() else ()
            for v in values:
                _check_value(v)
            out.append(Requirement(key, op, values))
            continue
        m = re.match(r"^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(.*)$", p)
        if m:
            key, op, value = m.group(1), m.group(2), m.group(3).strip()
            _check_key(key, raw)
            if op in (">", "<"):
                if not re.match(r"^-?\d+$", value):
                    raise bad_request(f"unable to parse requirement: for 'Gt', 'Lt' operators, "
                                      f"the value must be an integer (selector {raw!r})")
                out.append(Requirement(key, "gt" if op == ">" else "lt", (value,)))
                continue
            _check_value(value)
            out.append(Requirement(key, "!=" if op == "!=" else "=", (value,)))
            continue
        if p.startswith("!"):
            key = p[1:].strip()
            _check_key(key, raw)
            out.append(Requirement(key, "!"))
            continue
        _check_key(p, raw)
        out.append(Requirement(p, "exists"))
    return out


def labels_match(reqs: list[Requirement], obj: Obj) -> bool:
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return all(r.matches(labels) for r in reqs)


# ----------------------------------------------------------------- fields

def _path(*keys: str) -> Callable[[Obj], Any]:
    def get(o: Obj) -> Any:
        cur: Any = o
        for k in keys:
            if not isinstance(cur, dict):
                return None
            cur = cur.get(k)
        return cur
    return get


_COMMON_FIELDS = {"metadata.name": _path("metadata", "name"),
                  "metadata.namespace": _path("metadata", "namespace")}

FIELDS: dict[tuple[str, str], dict[str, Callable[[Obj], Any]]] = {
    ("", "pods"): {
        "spec.nodeName": _path("spec", "nodeName"),
        "spec.restartPolicy": _path("spec", "restartPolicy"),
        "spec.schedulerName": _path("spec", "schedulerName"),
        "spec.serviceAccountName": _path("spec", "serviceAccountName"),
        "spec.hostNetwork": lambda o: bool(_path("spec", "hostNetwork")(o)),
        "status.phase": _path("status", "phase"),
        "status.podIP": _path("status", "podIP"),
        "status.nominatedNodeName": _path("status", "nominatedNodeName"),
    },
    ("", "events"): {
        "involvedObject.kind": _path("involvedObject", "kind"),
        "involvedObject.namespace": _path("involvedObject", "namespace"),
        "involvedObject.name": _path("involvedObject", "name"),
        "involvedObject.uid": _path("involvedObject", "uid"),
        "involvedObject.apiVersion": _path("involvedObject", "apiVersion"),
        "involvedObject.resourceVersion": _path("involvedObject", "resourceVersion"),
        "involvedObject.fieldPath": _path("involvedObject", "fieldPath"),
        "reason": _path("reason"),
        "reportingComponent": _path("reportingComponent"),
        "source": _path("source", "component"),
        "type": _path("type"),
    },
    ("", "nodes"): {"spec.unschedulable": lambda o: bool(_path("spec", "unschedulable")(o))},
    ("", "namespaces"): {"status.phase": _path("status", "phase")},
    ("batch", "jobs"): {"status.successful": lambda o: _path("status", "succeeded")(o) or 0},
    ("kueue.x-k8s.io", "workloads"): {
        "status.admission.clusterQueue": _path("status", "admission", "clusterQueue")},
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    op: str  # "=" or "!="
    value: str
    getter: Callable[[Obj], Any]

    def matches(self, obj: Obj) -> bool:
        v = self.getter(obj)
        if isinstance(v, bool):
            s = "true" if v else "false"
        elif v is None:
            s = ""
        else:
            s = str(v)
        return (s == self.value) if self.op == "=" else (s != self.value)


def parse_field_selector(raw: str | None, kind: Kind) -> list[FieldRequirement]:
    if not raw or not raw.strip():
        return []
    allowed = dict(_COMMON_FIELDS)
    allowed.update(FIELDS.get(kind.key, {}))
    out = []
    for part in raw.split(","):
        p = part.strip()
        m = re.match(r"^([^=!]+?)\s*(==|=|!=)\s*(.*)$", p)
        if not m:
            raise bad_request(f"invalid selector: '{raw}'; can't understand '{p}'")
        field, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        getter = allowed.get(field)
        if getter is None:
            raise bad_request(f'field label not supported: {field}')
        out.append(FieldRequirement(field, "!=" if op == "!=" else "=", value, getter))
    return out


def fields_match(reqs: list[FieldRequirement], obj: Obj) -> bool:
    return all(r.matches(obj) for r in reqs)
