"""Server-side apply: who owns which field (`metadata.managedFields`), and conflicts between owners.

A faithful subset of kube-apiserver's structured-merge-diff (sigs.k8s.io/structured-merge-diff,
k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager):

- An apply (`application/apply-patch+yaml`, `fieldManager=M`) owns every leaf field of the
  configuration it sends, recorded as an `Apply` entry of M in FieldsV1 (`{"f:spec":
  {"f:stopPolicy": {}}}`). Maps (objects, labels, annotations) merge field by field; lists are
  atomic (owned and replaced whole, as `x-kubernetes-list-type: atomic`): map-lists keyed by name
  are not split per item here.
- A field the config sets to a value other than the live one, owned by another manager, is a
  conflict: 409 Conflict, "Apply failed with N conflict(s): conflict with "OTHER" using
  APIVERSION: .spec.field", causes of reason FieldManagerConflict; with `force=true` the fields
  move to M instead. Setting a field to the value it already has shares its ownership.
- A field M owned by an earlier apply and no longer sends is removed, unless another manager
  owns it too.
- Other writes (update, merge or JSON patch) record an `Update` entry for the fields they
  changed, under `fieldManager` or the client's user-agent name, as the apiserver does; they take
  those fields from other owners without a conflict (only apply checks conflicts).
"""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

Obj = dict[str, Any]
Path = tuple[str, ...]

# Fields the server owns itself and never records as anyone's.
_SERVER_META = frozenset({"name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                          "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields", "selfLink"})


class ApplyConflict(Exception):
    def __init__(self, conflicts: list[tuple[str, str, Path]]) -> None:
        self.conflicts = conflicts  # (manager, its apiVersion, path)
        super().__init__(self.message)

    @property
    def message(self) -> str:
        n = len(self.conflicts)
        by: dict[tuple[str, str], list[str]] = {}
        for manager, api_version, path in self.conflicts:
            by.setdefault((manager, api_version), []).append(dotted(path))
        parts = []
        for (manager, api_version), paths in by.items():
            using = f" using {api_version}" if api_version else ""
            if len(paths) == 1:
                parts.append(f'conflict with "{manager}"{using}: {paths[0]}')
            else:
                parts.append(f'conflicts with "{manager}"{using}:\n' + "\n".join(f"- {p}" for p in paths))
        return f"Apply failed with {n} conflict{'s' if n != 1 else ''}: " + "\n".join(parts)

    def causes(self) -> list[Obj]:
        return [{"reason": "FieldManagerConflict", "message": f'conflict with "{m}"' + (f" using {v}" if v else ""),
                 "field": dotted(p)} for m, v, p in self.conflicts]


def dotted(path: Path) -> str:
    return "".join(f".{p}" for p in path)


def leaves(obj: Any, prefix: Path = ()) -> set[Path]:
    """The leaf fields a configuration sets: scalars and lists (atomic), through nested maps."""
    out: set[Path] = set()
    if not isinstance(obj, dict):
        return {prefix} if prefix else out
    for k, v in obj.items():
        if not prefix and k in ("apiVersion", "kind", "status"):
            continue
        if prefix == ("metadata",) and k in _SERVER_META:
            continue
        if isinstance(v, dict) and v:
            out |= leaves(v, (*prefix, k))
        else:
            out.add((*prefix, k))
    return out


def _get(obj: Any, path: Path) -> tuple[bool, Any]:
    for p in path:
        if not isinstance(obj, dict) or p not in obj:
            return False, None
        obj = obj[p]
    return True, obj


def _set(obj: Obj, path: Path, value: Any) -> None:
    for p in path[:-1]:
        nxt = obj.get(p)
        if not isinstance(nxt, dict):
            nxt = obj[p] = {}
        obj = nxt
    obj[path[-1]] = copy.deepcopy(value)


def _delete(obj: Obj, path: Path) -> None:
    parents = []
    cur: Any = obj
    for p in path[:-1]:
        if not isinstance(cur, dict) or p not in cur:
            return
        parents.append((cur, p))
        cur = cur[p]
    if isinstance(cur, dict):
        cur.pop(path[-1], None)
    for parent, key in reversed(parents):  # drop maps the removal left empty
        if parent[key] == {}:
            del parent[key]
        else:
            break


def to_fields_v1(paths: set[Path]) -> Obj:
    out: Obj = {}
    for path in sorted(paths):
        node = out
        for p in path:
            node = node.setdefault(f"f:{p}", {})
    return out


def from_fields_v1(fields: Any, prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    if not isinstance(fields, dict):
        return out
    for k, v in fields.items():
        if not isinstance(k, str) or not k.startswith("f:"):
            continue  # k:/v:/i: item keys: lists are atomic in this subset
        path = (*prefix, k[2:])
        sub = from_fields_v1(v, path)
        out |= sub if sub else {path}
    return out


def _overlaps(a: Path, b: Path) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _entries(obj: Obj) -> list[Obj]:
    mf = (obj.get("metadata") or {}).get("managedFields")
    return [e for e in mf if isinstance(e, dict)] if isinstance(mf, list) else []


def _entry(manager: str, operation: str, api_version: str, paths: set[Path], now: float) -> Obj:
    return {"manager": manager, "operation": operation, "apiVersion": api_version,
            "time": dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "fieldsType": "FieldsV1", "fieldsV1": to_fields_v1(paths)}


def _owners(obj: Obj) -> list[tuple[str, str, str, set[Path]]]:
    return [(str(e.get("manager") or ""), str(e.get("operation") or ""), str(e.get("apiVersion") or ""),
             from_fields_v1(e.get("fieldsV1"))) for e in _entries(obj)]


def _rebuild(owners: list[tuple[str, str, str, set[Path]]], now: float, keep_times: dict[tuple[str, str], str],
             ) -> list[Obj]:
    out = []
    for manager, op, api_version, paths in owners:
        if not paths:
            continue  # an owner of nothing is dropped, as the apiserver does
        e = _entry(manager, op, api_version, paths, now)
        if (manager, op) in keep_times:
            e["time"] = keep_times[(manager, op)]
        out.append(e)
    return out


def apply(live: Obj, config: Obj, manager: str, api_version: str, *, force: bool, now: float) -> Obj:
    """The object after `manager` applies `config` to `live` (both in the request's version)."""
    applied = leaves(config)
    owners = _owners(live)
    times = {(str(e.get("manager")), str(e.get("operation"))): str(e.get("time")) for e in _entries(live)}
    conflicts: list[tuple[str, str, Path]] = []
    for m, op, v, paths in owners:
        if m == manager and op == "Apply":
            continue
        for path in applied:
            for owned in paths:
                if _overlaps(path, owned) and _get(live, owned) != _get(config, owned):
                    conflicts.append((m, v, owned))
    if conflicts and not force:
        # One line per owned field, in a stable order.
        raise ApplyConflict(sorted(set(conflicts), key=lambda c: (c[0], c[2])))
    result = copy.deepcopy(live)
    previous = next((paths for m, op, _, paths in owners if m == manager and op == "Apply"), set())
    others = set().union(*(paths for m, op, _, paths in owners if not (m == manager and op == "Apply")))
    for path in previous - applied:
        if not any(_overlaps(path, o) for o in others):
            _delete(result, path)  # no longer applied by anyone: removed
    for path in applied:
        found, value = _get(config, path)
        if found:
            _set(result, path, value)
    new_owners = []
    moved = {c[2] for c in conflicts}
    for m, op, v, paths in owners:
        if m == manager and op == "Apply":
            continue
        if force:
            paths = {p for p in paths if not any(_overlaps(p, q) for q in moved)}
        new_owners.append((m, op, v, paths))
    new_owners.append((manager, "Apply", api_version, applied))
    times.pop((manager, "Apply"), None)
    result.setdefault("metadata", {})["managedFields"] = _rebuild(new_owners, now, times)
    return result


def apply_entry(manager: str, api_version: str, config: Obj, now: float) -> Obj:
    """The managedFields entry of an apply that creates the object."""
    return _entry(manager, "Apply", api_version, leaves(config), now)


def record_update(old: Obj | None, new: Obj, manager: str, api_version: str, *, now: float) -> None:
    """After a non-apply write: `manager` owns (operation Update) the leaf fields it changed."""
    before = old or {}
    changed = {p for p in leaves(new) if _get(before, p) != _get(new, p)}
    owners = _owners(before) if old is not None else []
    times = {(str(e.get("manager")), str(e.get("operation"))): str(e.get("time")) for e in _entries(before)}
    if not changed and owners:
        new.setdefault("metadata", {})["managedFields"] = _rebuild(owners, now, times)
        return
    kept = []
    mine: set[Path] = set()
    for m, op, v, paths in owners:
        if m == manager and op == "Update":
            mine = paths
            continue
        kept.append((m, op, v, {p for p in paths if not any(_overlaps(p, c) for c in changed)}))
    live_leaves = leaves(new)
    mine = {p for p in mine | changed if any(_overlaps(p, q) for q in live_leaves)}
    kept.append((manager, "Update", api_version, mine))
    times.pop((manager, "Update"), None)
    new.setdefault("metadata", {})["managedFields"] = _rebuild(kept, now, times)


def manager_from(query: dict[str, str], user_agent: str) -> str:
    """The field manager of a non-apply write: `fieldManager`, else the user agent's program name,
    as the apiserver derives it (`kubectl-edit`, `kueuetop`, `python-requests`...)."""
    explicit = query.get("fieldManager")
    if explicit:
        return explicit
    name = (user_agent or "unknown").split("/", 1)[0].strip()
    return name[:128] or "unknown"
