"""What of an object goes into a recording: the fields kueuetop reads, never credentials.

A recording is a file people hand around after an incident, so it keeps what the console,
explain and the engine read and leaves out what may carry secrets:

* Secrets are never recorded (kueuetop does not watch them; `keep_kind` refuses them anyway);
* containers keep only `name`, `image`, `resources`, `ports` and `restartPolicy` (a sidecar):
  no `env`, `envFrom`, `command`, `args`, probes, lifecycle hooks or mounts;
* pod specs lose `volumes` (secret and projected volume sources name credentials);
* metadata loses `managedFields` and the `kubectl.kubernetes.io/last-applied-configuration`
  annotation (a copy of the whole object as applied, env included).

Pure functions on wire dicts; the input is never modified.
"""

from __future__ import annotations

from typing import Any

CONTAINER_FIELDS = ("name", "image", "resources", "ports", "restartPolicy")
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
DROPPED_POD_SPEC = ("volumes",)
DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
NEVER_RECORDED = frozenset({"secrets"})


def keep_kind(kind: str) -> bool:
    """Whether objects of this store kind may be recorded at all."""
    return kind not in NEVER_RECORDED


def _pod_spec(spec: Any) -> Any:
    if not isinstance(spec, dict):
        return spec
    out = {k: v for k, v in spec.items() if k not in DROPPED_POD_SPEC}
    for key in CONTAINER_LISTS:
        cs = out.get(key)
        if isinstance(cs, list):
            out[key] = [{f: c[f] for f in CONTAINER_FIELDS if f in c} if isinstance(c, dict) else c for c in cs]
    return out


def _template(tpl: Any) -> Any:
    if not isinstance(tpl, dict):
        return tpl
    out = dict(tpl)
    if "spec" in out:
        out["spec"] = _pod_spec(out["spec"])
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = _meta(out["metadata"])
    return out


def _meta(meta: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in meta.items() if k != "managedFields"}
    ann = out.get("annotations")
    if isinstance(ann, dict) and any(a in ann for a in DROPPED_ANNOTATIONS):
        out["annotations"] = {k: v for k, v in ann.items() if k not in DROPPED_ANNOTATIONS}
    return out


def prune(raw: dict[str, Any]) -> dict[str, Any]:
    """The recordable copy of one API object (shallow copies along the pruned paths only)."""
    out = dict(raw)
    if isinstance(out.get("metadata"), dict):
        out["metadata"] = _meta(out["metadata"])
    spec = out.get("spec")
    if not isinstance(spec, dict):
        return out
    kind = out.get("kind")
    if kind == "Pod":
        out["spec"] = _pod_spec(spec)
    elif kind == "Workload":
        sets = spec.get("podSets")
        if isinstance(sets, list):
            out["spec"] = {**spec, "podSets": [{**ps, "template": _template(ps.get("template"))}
                                               if isinstance(ps, dict) else ps for ps in sets]}
    elif kind == "Job" and isinstance(spec.get("template"), dict):
        out["spec"] = {**spec, "template": _template(spec["template"])}
    return out
