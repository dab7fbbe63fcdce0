"""Scenario files: multi-document YAML of ordinary Kubernetes/Kueue objects, on a timeline.

A scenario is what users `kubectl apply`, plus a few annotations (ARCHITECTURE §2.2):

* `kueuetop.io/at: "30s"` on any object: apply it at that simulated time (default 0).
  A later document for an object that already exists (same group/kind/namespace/name) is an
  update at its own `at`: the simulator merges it over the live object (JSON merge patch, as
  `kubectl apply` of a partial document would), so `spec: {active: false}` is enough to
  deactivate a Workload at 10m.
* `kueuetop.io/runtime: "120s"` on a Job, Pod or Workload: its pods run that long once
  admitted, then succeed.
* `kueuetop.io/gpu-util: "85"` (mean % busy) or `"idle"` on a Job, Pod or Workload: a hint
  for the GPU telemetry generator.
* `kueuetop.io/fault: ImagePullBackOff` or `CrashLoopBackOff` on a Job, Pod or Workload: its
  pods' first container fails as the kubelet reports it (`sim.kube.pod_faults`).

and three kinds of `apiVersion: kueuetop.io/v1`:

* `Action`: `spec: {at, action, target}`, a scheduled console action (see `ACTIONS`); the
  target is `NS/NAME` (Workload), `job/NS/NAME` or `pod/NS/NAME` (the Workload of that Job or
  Pod), `cq/NAME` or `lq/NS/NAME`. `metadata.name` is optional. The node faults of
  `NODE_ACTIONS` (`gpu-xid` and `gpu-ecc` with `spec.value: "GPU=CODE[,…]"`, `node-not-ready`,
  `cordon`) target `node/NAME` or `nodepool/POOL[/INDEX]` (the pool's nodes by name, first
  by default) and are played by `sim.kube.node_faults`.
* `NodePool`: nodes the simulator creates (see `scenarios.nodes.expand_node_pool`):
  `spec: {machineType, gpu: {model, count, memoryMiB?, accelerator?}, capacity?, nodeLabels?,
  nodeTaints?, zones?, size, minSize?, maxSize?, autoscaling?, provisioningDelay?, spot?,
  queuedProvisioning?, capacityLimit?}`. `capacityLimit` caps how many nodes the cloud can
  hand out: a number, or a list of windows `[{from: "0s", until: "3m", nodes: 0}]` (outside
  every window the pool may grow to maxSize); `capacity_limit_at` evaluates it.
* `SimConfig` (at most one): `spec: {clusterName, speed, fairSharing, waitForPodsReady,
  featureGates, …}`; the Kueue Configuration fragments are checked with the engine's parser.

kueue.x-k8s.io v1beta1 (and v1alpha1 Cohort) documents are converted to v1beta2. Namespaced
kinds without a namespace get `default`. Errors name the file, the 1-based document and the
field: `refarch.yaml: document 7 (Workload team-a/wl-1): metadata.annotations["kueuetop.io/at"]:
invalid duration "abc"`.

Scenarios by name (the built-ins) or by path: `scenarios.loader.load_scenario`.

Objects in `Scenario.steps` are shared, read-only data (generated scenarios reuse nested
dicts between objects to stay small): copy before mutating.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kueuetop.kueue.api_versions import is_kueue_api_version, to_v1beta2
from kueuetop.kueue.durations import format_duration, parse_duration
from kueuetop.sim.scenarios.nodes import DEFAULT_CLUSTER, expand_node_pool

__all__ = [
    "ACTIONS",
    "ANN_AT",
    "ANN_GPU_UTIL",
    "ANN_RUNTIME",
    "KUEUETOP_API_VERSION",
    "NODE_ACTIONS",
    "LazySteps",
    "Scenario",
    "ScenarioAction",
    "ScenarioError",
    "ScenarioStep",
    "capacity_limit_at",
    "expand_node_pool",
    "object_key",
    "parse_action_target",
    "parse_scenario",
    "split_first_instant",
    "staged_steps_from_objects",
    "steps_from_objects",
]

ANN_AT = "kueuetop.io/at"
ANN_RUNTIME = "kueuetop.io/runtime"
ANN_GPU_UTIL = "kueuetop.io/gpu-util"
KUEUETOP_API_VERSION = "kueuetop.io/v1"

# Workload actions and queue actions (ARCHITECTURE §3): stop = stopPolicy Hold,
# drain = HoldAndDrain, resume-queue = None.
WORKLOAD_ACTIONS = ("hold", "resume", "requeue", "preempt", "preempt-and-hold")
QUEUE_ACTIONS = ("stop", "drain", "resume-queue")
ACTIONS = WORKLOAD_ACTIONS + QUEUE_ACTIONS
# What happens to hardware, not what an operator does: played by sim.kube.node_faults.
NODE_ACTIONS = ("gpu-xid", "gpu-ecc", "node-not-ready", "cordon")
_VALUE_ACTIONS = ("gpu-xid", "gpu-ecc")
_GPU_VALUE = re.compile(r"\d+=\d+(,\d+=\d+)*")

# (group, kind) → (accepted versions, namespaced). The kinds of ARCHITECTURE §2.1.
_KUEUE_VERSIONS = ("v1beta2", "v1beta1", "v1alpha1")
KINDS: dict[tuple[str, str], tuple[tuple[str, ...], bool]] = {
    ("", "Namespace"): (("v1",), False),
    ("", "Node"): (("v1",), False),
    ("", "Pod"): (("v1",), True),
    ("", "Event"): (("v1",), True),
    ("batch", "Job"): (("v1",), True),
    ("scheduling.k8s.io", "PriorityClass"): (("v1",), False),
    ("kueue.x-k8s.io", "ClusterQueue"): (_KUEUE_VERSIONS, False),
    ("kueue.x-k8s.io", "LocalQueue"): (_KUEUE_VERSIONS, True),
    ("kueue.x-k8s.io", "Workload"): (_KUEUE_VERSIONS, True),
    ("kueue.x-k8s.io", "ResourceFlavor"): (_KUEUE_VERSIONS, False),
    ("kueue.x-k8s.io", "Cohort"): (_KUEUE_VERSIONS, False),
    ("kueue.x-k8s.io", "AdmissionCheck"): (_KUEUE_VERSIONS, False),
    ("kueue.x-k8s.io", "WorkloadPriorityClass"): (_KUEUE_VERSIONS, False),
    ("kueue.x-k8s.io", "ProvisioningRequestConfig"): (_KUEUE_VERSIONS, False),
    ("kueue.x-k8s.io", "MultiKueueCluster"): (_KUEUE_VERSIONS, False),
    ("kueue.x-k8s.io", "MultiKueueConfig"): (_KUEUE_VERSIONS, False),
    ("", "Secret"): (("v1",), True),
    ("autoscaling.x-k8s.io", "ProvisioningRequest"): (("v1",), True),
    ("kueuetop.io", "Action"): (("v1",), False),
    ("kueuetop.io", "NodePool"): (("v1",), False),
    ("kueuetop.io", "SimConfig"): (("v1",), False),
}
_RUNTIME_KINDS = {("", "Pod"), ("batch", "Job"), ("kueue.x-k8s.io", "Workload")}
_NAMELESS_KINDS = {("kueuetop.io", "Action"), ("kueuetop.io", "SimConfig")}
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_NAME = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?")

SIM_CONFIG_DEFAULTS: dict[str, Any] = {"clusterName": DEFAULT_CLUSTER, "speed": 1.0}


class ScenarioError(ValueError):
    """A scenario that cannot be loaded; the message names file, document and field."""

    def __init__(self, source: str, message: str, *, document: int | None = None,
                 describe: str = "", field: str = "", line: int | None = None) -> None:
        self.source = source
        self.document = document
        self.field = field
        self.line = line
        where = source
        if document is not None:
            where += f": document {document}"
            if describe:
                where += f" ({describe})"
        if line is not None:
            where += f" (line {line})" if document is not None else f": line {line}"
        super().__init__(f"{where}: {field + ': ' if field else ''}{message}")


@dataclass(frozen=True)
class ScenarioAction:
    """A scheduled console action; `target_kind` is workload, job, pod, clusterqueue or
    localqueue (job and pod name the object whose Workload is meant)."""

    action: str
    target: str
    target_kind: str
    name: str
    namespace: str | None = None
    value: str = ""  # gpu-xid / gpu-ecc: "GPU=CODE[,GPU=CODE…]"


@dataclass(frozen=True)
class ScenarioStep:
    """One thing to do at `at` seconds: apply `obj` (create, or merge over the live object
    when `update` is true), or run `action`. `origin` is "file#docN"."""

    at: float
    kind: str
    obj: dict[str, Any] | None
    action: ScenarioAction | None
    origin: str
    update: bool = False


class LazySteps(Sequence[ScenarioStep]):
    """A timeline whose later part is built on first use. `head` holds the steps due at t=0
    and is there at once; `rest()` builds every later step (for generated scenarios that is
    tens of thousands of Workloads, which `sim serve` builds after it started listening).
    Used as a sequence, it is the whole timeline, exactly as if built in one go."""

    def __init__(self, head: tuple[ScenarioStep, ...], build_rest: Callable[[], tuple[ScenarioStep, ...]]) -> None:
        self.head = head
        self._build_rest = build_rest
        self._rest: tuple[ScenarioStep, ...] | None = None
        self._lock = threading.Lock()

    def rest(self) -> tuple[ScenarioStep, ...]:
        with self._lock:
            if self._rest is None:
                self._rest = self._build_rest()
            return self._rest

    def _all(self) -> tuple[ScenarioStep, ...]:
        return self.head + self.rest()

    def __len__(self) -> int:
        return len(self.head) + len(self.rest())

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __iter__(self) -> Iterator[ScenarioStep]:
        yield from self.head
        yield from self.rest()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return self._all() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to tuples, so not hashable like them

    def __repr__(self) -> str:
        built = "built" if self._rest is not None else "not built yet"
        return f"LazySteps({len(self.head)} at start, rest {built})"


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario. `node_pools` holds each NodePool's creating document (they are in
    `steps` too, so an engine applies pools like any object); `config` is SimConfig.spec with
    defaults. `steps` is a tuple, or `LazySteps` for generated scenarios."""

    name: str
    source: str
    config: dict[str, Any]
    node_pools: tuple[dict[str, Any], ...]
    steps: Sequence[ScenarioStep]
    meta: dict[str, Any] = field(default_factory=dict, compare=False)

    def objects(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Objects created by apply steps (updates excluded), optionally of one kind."""
        return [s.obj for s in self.steps
                if s.kind == "apply" and not s.update and s.obj is not None
                and (kind is None or s.obj.get("kind") == kind)]

    def actions(self) -> list[ScenarioStep]:
        return [s for s in self.steps if s.kind == "action"]

    @property
    def end(self) -> float:
        """Time of the last step (0 for an empty scenario)."""
        return self.steps[-1].at if self.steps else 0.0


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name): what makes two documents the same object."""
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    meta = obj.get("metadata") or {}
    return (group, str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def capacity_limit_at(pool_doc: Mapping[str, Any], at: float) -> int | None:
    """How many nodes the cloud can give the pool at time `at` (None = up to maxSize)."""
    limit = (pool_doc.get("spec") or {}).get("capacityLimit")
    if limit is None:
        return None
    if isinstance(limit, int) and not isinstance(limit, bool):
        return limit
    for window in limit:
        start = parse_duration(window.get("from", 0))
        until = window.get("until")
        if start <= at and (until is None or at < parse_duration(until)):
            return int(window.get("nodes", 0))
    return None


# --------------------------------------------------------------------------------------
# Parsing


class _Doc:
    """Error reporting context for one document."""

    def __init__(self, source: str, number: int) -> None:
        self.source = source
        self.number = number
        self.describe = ""

    def error(self, field: str, message: str) -> ScenarioError:
        return ScenarioError(self.source, message, document=self.number, describe=self.describe,
                             field=field)


def _ann_field(key: str) -> str:
    return f'metadata.annotations["{key}"]'


def _duration(ctx: _Doc, field: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ctx.error(field, f"invalid duration {value!r} (write it like \"30s\", \"5m\", \"1h30m\")")
    try:
        return parse_duration(value)
    except ValueError:
        raise ctx.error(field, f'invalid duration "{value}"') from None


def _yaml_documents(text: str, source: str) -> list[Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return list(yaml.load_all(text, Loader=loader))  # a safe loader (C or pure Python)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if mark is None:
            raise ScenarioError(source, f"invalid YAML: {problem}") from None
        line = mark.line + 1
        raise ScenarioError(source, f"invalid YAML: {problem}",
                            document=_document_at_line(text, mark.line), line=line) from None
    except (ValueError, OverflowError, RecursionError) as exc:
        # Scalars the YAML resolver accepts but Python cannot build: a 13th month (a timestamp),
        # an integer of thousands of digits (int() refuses), nesting deeper than the stack.
        raise ScenarioError(source, f"invalid YAML: a value cannot be read ({type(exc).__name__}: {str(exc)[:100]})") from None


def _document_at_line(text: str, line_index: int) -> int:
    """1-based number of the document containing 0-based line `line_index`."""
    number = 1
    seen_content = False
    for i, line in enumerate(text.splitlines()):
        if i >= line_index:
            break
        if line.startswith("---"):
            if seen_content:
                number += 1
                seen_content = False
        elif line.strip() and not line.lstrip().startswith("#"):
            seen_content = True
    return number


def _check_header(ctx: _Doc, doc: dict[str, Any]) -> tuple[str, str, bool]:
    api_version = doc.get("apiVersion")
    kind = doc.get("kind")
    if not isinstance(api_version, str) or not api_version:
        raise ctx.error("apiVersion", "missing (every document needs apiVersion and kind)")
    if not isinstance(kind, str) or not kind:
        raise ctx.error("kind", "missing (every document needs apiVersion and kind)")
    group, _, version = api_version.rpartition("/")
    entry = KINDS.get((group, kind))
    if entry is None:
        raise ctx.error("kind", f'unsupported kind "{kind}" in {api_version} '
                        "(a scenario holds the kinds the simulated cluster serves, plus "
                        "kueuetop.io/v1 Action, NodePool and SimConfig)")
    versions, namespaced = entry
    ctx.describe = kind
    if version not in versions:
        raise ctx.error("apiVersion", f'unsupported version "{api_version}" for {kind} '
                        f"(accepted: {', '.join(group + '/' + v if group else v for v in versions)})")
    meta = doc.get("metadata")
    if meta is None:
        meta = doc["metadata"] = {}
    if not isinstance(meta, dict):
        raise ctx.error("metadata", "expected a mapping")
    name = meta.get("name")
    optional = (group, kind) in _NAMELESS_KINDS and name is None
    if not optional and (not isinstance(name, str) or not name):
        raise ctx.error("metadata.name", "missing")
    ns = meta.get("namespace")
    if ns is not None and not isinstance(ns, str):
        raise ctx.error("metadata.namespace", "expected a string")
    if namespaced:
        ns = ns or "default"
        meta["namespace"] = ns
    else:
        meta.pop("namespace", None)  # ignored for cluster-scoped objects, as by the API server
        ns = None
    if name:
        ctx.describe = f"{kind} {ns}/{name}" if ns else f"{kind} {name}"
    return group, kind, namespaced


def _check_annotations(ctx: _Doc, doc: dict[str, Any], group: str, kind: str) -> float:
    meta = doc["metadata"]
    ann = meta.get("annotations")
    if ann is None:
        return 0.0
    if not isinstance(ann, dict):
        raise ctx.error("metadata.annotations", "expected a mapping")
    at = 0.0
    for key in (ANN_AT, ANN_RUNTIME, ANN_GPU_UTIL):
        if key not in ann:
            continue
        value = ann[key]
        if not isinstance(value, str):
            # The API server only takes string annotations; keep files kubectl-applicable.
            raise ctx.error(_ann_field(key), f"expected a string, got {value!r} (quote it)")
        if key != ANN_AT and (group, kind) not in _RUNTIME_KINDS:
            raise ctx.error(_ann_field(key), "only valid on a Job, Pod or Workload")
        if key == ANN_GPU_UTIL:
            _check_gpu_util(ctx, value)
            continue
        seconds = _duration(ctx, _ann_field(key), value)
        if key == ANN_AT:
            at = seconds
    return at


def _check_gpu_util(ctx: _Doc, value: str) -> None:
    if value == "idle":
        return
    try:
        pct = float(value)
    except ValueError:
        pct = -1.0
    if not 0.0 <= pct <= 100.0:
        raise ctx.error(_ann_field(ANN_GPU_UTIL),
                        f'invalid value "{value}" (a percentage 0-100 or "idle")')


def parse_action_target(target: str) -> tuple[str, str, str | None] | None:
    """(target kind, name, namespace) or None if malformed; kinds: workload ("NS/NAME"),
    job ("job/NS/NAME") and pod ("pod/NS/NAME") for the Workload of that Job or Pod,
    clusterqueue ("cq/NAME"), localqueue ("lq/NS/NAME")."""
    parts = target.split("/")
    if not all(_DNS_NAME.fullmatch(p) for p in parts):
        return None
    if len(parts) == 2 and parts[0] == "cq" and parts[1]:
        return ("clusterqueue", parts[1], None)
    if len(parts) == 3 and parts[0] == "lq" and parts[1] and parts[2]:
        return ("localqueue", parts[2], parts[1])
    if len(parts) == 3 and parts[0] in ("job", "pod") and parts[1] and parts[2]:
        return (parts[0], parts[2], parts[1])
    if len(parts) == 2 and parts[0] == "node" and parts[1]:
        return ("node", parts[1], None)
    if len(parts) in (2, 3) and parts[0] == "nodepool" and parts[1] and (len(parts) == 2 or parts[2].isdigit()):
        return ("nodepool", parts[1], parts[2] if len(parts) == 3 else "0")
    if len(parts) == 2 and parts[0] not in ("cq", "lq", "job", "pod", "node", "nodepool") and parts[0] and parts[1]:
        return ("workload", parts[1], parts[0])
    return None


def _check_action(ctx: _Doc, doc: dict[str, Any], ann_at: float) -> tuple[float, ScenarioAction]:
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise ctx.error("spec", "expected a mapping with at, action and target")
    at = _duration(ctx, "spec.at", spec["at"]) if "at" in spec else ann_at
    action = spec.get("action")
    if action not in ACTIONS and action not in NODE_ACTIONS:
        raise ctx.error("spec.action", f"unknown action {action!r} (one of: {', '.join(ACTIONS + NODE_ACTIONS)})")
    target = spec.get("target")
    if action in NODE_ACTIONS:
        return at, _node_action(ctx, doc, spec, action, target)
    parsed = parse_action_target(target) if isinstance(target, str) else None
    if parsed is None:
        raise ctx.error("spec.target", f"invalid target {target!r} "
                        '(write "NS/NAME", "job/NS/NAME" or "pod/NS/NAME" for a workload, '
                        '"cq/NAME" or "lq/NS/NAME" for a queue)')
    target_kind, name, namespace = parsed
    if not doc["metadata"].get("name"):
        ctx.describe = f"Action {action} {target}"
    is_queue = target_kind in ("clusterqueue", "localqueue")
    if is_queue != (action in QUEUE_ACTIONS):
        wanted = "a queue (cq/NAME or lq/NS/NAME)" if action in QUEUE_ACTIONS else "a workload (NS/NAME)"
        raise ctx.error("spec.target", f"action {action!r} needs {wanted}, got {target!r}")
    return at, ScenarioAction(action=action, target=target, target_kind=target_kind, name=name,
                              namespace=namespace)


def _node_action(ctx: _Doc, doc: dict[str, Any], spec: dict[str, Any], action: str, target: Any) -> ScenarioAction:
    parsed = parse_action_target(target) if isinstance(target, str) else None
    if parsed is None or parsed[0] not in ("node", "nodepool"):
        raise ctx.error("spec.target", f"action {action!r} needs a node (node/NAME or nodepool/POOL[/INDEX]), "
                        f"got {target!r}")
    value = spec.get("value", "")
    if action in _VALUE_ACTIONS and not (isinstance(value, str) and _GPU_VALUE.fullmatch(value)):
        raise ctx.error("spec.value", f'action {action!r} needs value "GPU=CODE[,GPU=CODE…]", got {value!r}')
    if not doc["metadata"].get("name"):
        ctx.describe = f"Action {action} {target}"
    target_kind, name, namespace = parsed
    return ScenarioAction(action=action, target=str(target), target_kind=target_kind, name=name,
                          namespace=namespace, value=str(value) if action in _VALUE_ACTIONS else "")


def _nonneg_int(ctx: _Doc, spec: dict[str, Any], key: str) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ctx.error(f"spec.{key}", f"expected a non-negative integer, got {value!r}")
    return value


def _check_node_pool(ctx: _Doc, doc: dict[str, Any]) -> None:
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise ctx.error("spec", "expected a mapping")
    size = _nonneg_int(ctx, spec, "size")
    lo = _nonneg_int(ctx, spec, "minSize")
    hi = _nonneg_int(ctx, spec, "maxSize")
    if lo is not None and hi is not None and lo > hi:
        raise ctx.error("spec.minSize", f"minSize {lo} is above maxSize {hi}")
    if size is not None and hi is not None and size > hi:
        raise ctx.error("spec.size", f"size {size} is above maxSize {hi}")
    for key in ("autoscaling", "spot", "queuedProvisioning"):
        if key in spec and not isinstance(spec[key], bool):
            raise ctx.error(f"spec.{key}", f"expected true or false, got {spec[key]!r}")
    if "provisioningDelay" in spec:
        _duration(ctx, "spec.provisioningDelay", spec["provisioningDelay"])
    gpu = spec.get("gpu")
    if gpu is not None:
        if not isinstance(gpu, dict):
            raise ctx.error("spec.gpu", "expected a mapping {model, count}")
        _nonneg_int(ctx, {"gpu.count": gpu.get("count")}, "gpu.count")  # reports spec.gpu.count
        if "model" in gpu and not isinstance(gpu["model"], str):
            raise ctx.error("spec.gpu.model", "expected a string")
    for key in ("nodeLabels", "capacity"):
        if key in spec and not isinstance(spec[key], dict):
            raise ctx.error(f"spec.{key}", "expected a mapping")
    if "nodeTaints" in spec and not (isinstance(spec["nodeTaints"], list)
                                     and all(isinstance(t, dict) for t in spec["nodeTaints"])):
        raise ctx.error("spec.nodeTaints", "expected a list of taints")
    if "zones" in spec and not (isinstance(spec["zones"], list) and spec["zones"]
                                and all(isinstance(z, str) for z in spec["zones"])):
        raise ctx.error("spec.zones", "expected a non-empty list of zone names")
    _check_capacity_limit(ctx, spec.get("capacityLimit"))


def _check_capacity_limit(ctx: _Doc, limit: Any) -> None:
    if limit is None or (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0):
        return
    if not isinstance(limit, list):
        raise ctx.error("spec.capacityLimit", "expected a node count or a list of {from, until, nodes}")
    for i, window in enumerate(limit):
        where = f"spec.capacityLimit[{i}]"
        if not isinstance(window, dict):
            raise ctx.error(where, "expected a mapping {from, until, nodes}")
        start = _duration(ctx, where + ".from", window.get("from", 0))
        if window.get("until") is not None:
            until = _duration(ctx, where + ".until", window["until"])
            if until <= start:
                raise ctx.error(where + ".until", "must be later than from")
        nodes = window.get("nodes", 0)
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 0:
            raise ctx.error(where + ".nodes", f"expected a non-negative integer, got {nodes!r}")


def _check_sim_config(ctx: _Doc, doc: dict[str, Any]) -> dict[str, Any]:
    spec = doc.get("spec") or {}
    if not isinstance(spec, dict):
        raise ctx.error("spec", "expected a mapping")
    speed = spec.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, int | float) or speed <= 0:
        raise ctx.error("spec.speed", f"expected a positive number, got {speed!r}")
    cluster = spec.get("clusterName", DEFAULT_CLUSTER)
    if not isinstance(cluster, str) or not _DNS_LABEL.fullmatch(cluster):
        raise ctx.error("spec.clusterName", f"expected a DNS label, got {cluster!r}")
    # Kueue Configuration fragments: check them with the parser the engine uses.
    from kueuetop.kueue.config import parse_kueue_config

    fragment = {k: spec[k] for k in ("fairSharing", "waitForPodsReady", "featureGates") if k in spec}
    try:
        parse_kueue_config(fragment)
    except ValueError as exc:
        raise ctx.error("spec", str(exc)) from None
    return {**SIM_CONFIG_DEFAULTS, **spec}


@dataclass
class _Pending:
    at: float
    number: int
    obj: dict[str, Any] | None = None
    action: ScenarioAction | None = None
    describe: str = ""


def parse_scenario(text: str, source: str, *, name: str | None = None) -> Scenario:
    """Parse scenario YAML; `source` names the file in errors and step origins."""
    documents = _yaml_documents(text, source)
    origin_base = Path(source).name or source
    config: dict[str, Any] | None = None
    pending: list[_Pending] = []
    for number, raw in enumerate(documents, start=1):
        if raw is None:
            continue  # empty document ("---" twice, or only comments)
        ctx = _Doc(source, number)
        if not isinstance(raw, dict):
            raise ctx.error("", f"expected a mapping (a Kubernetes object), got {type(raw).__name__}")
        doc = to_v1beta2(raw) if is_kueue_api_version(raw.get("apiVersion")) else copy.deepcopy(raw)
        group, kind, _ = _check_header(ctx, doc)
        at = _check_annotations(ctx, doc, group, kind)
        if (group, kind) == ("kueuetop.io", "SimConfig"):
            if config is not None:
                raise ctx.error("kind", "a scenario may hold only one SimConfig")
            config = _check_sim_config(ctx, doc)
        elif (group, kind) == ("kueuetop.io", "Action"):
            at, action = _check_action(ctx, doc, at)
            pending.append(_Pending(at, number, action=action, describe=ctx.describe))
        else:
            if (group, kind) == ("kueuetop.io", "NodePool"):
                _check_node_pool(ctx, doc)
            pending.append(_Pending(at, number, obj=doc, describe=ctx.describe))
    config = config or dict(SIM_CONFIG_DEFAULTS)
    steps, pools = _timeline(pending, source, origin_base, config)
    stem = name or Path(source).stem
    return Scenario(name=stem, source=source, config=config, node_pools=tuple(pools), steps=tuple(steps))


def _timeline(pending: list[_Pending], source: str, origin_base: str,
              config: dict[str, Any]) -> tuple[list[ScenarioStep], list[dict[str, Any]]]:
    pending.sort(key=lambda p: (p.at, p.number))
    first: dict[tuple[str, str, str, str], _Pending] = {}
    last_at: dict[tuple[str, str, str, str], _Pending] = {}
    steps: list[ScenarioStep] = []
    pools: list[dict[str, Any]] = []
    for p in pending:
        origin = f"{origin_base}#doc{p.number}"
        if p.action is not None:
            steps.append(ScenarioStep(p.at, "action", None, p.action, origin))
            continue
        assert p.obj is not None
        key = object_key(p.obj)
        previous = last_at.get(key)
        if previous is not None and previous.at == p.at:
            ctx = _Doc(source, p.number)
            ctx.describe = p.describe
            verb = "created" if first[key] is previous else "updated"
            raise ctx.error(_ann_field(ANN_AT),
                            f"{p.describe} is already {verb} at {format_duration(p.at)} by document "
                            f"{previous.number}; give one of them a different {ANN_AT}")
        update = key in first
        first.setdefault(key, p)
        last_at[key] = p
        if key[:2] == ("kueuetop.io", "NodePool") and not update:
            p.obj.setdefault("spec", {}).setdefault("clusterName", config["clusterName"])
            pools.append(p.obj)
        steps.append(ScenarioStep(p.at, "apply", p.obj, None, origin, update=update))
    return steps, pools


def split_first_instant(scenario: Scenario) -> tuple[Scenario, Callable[[], Sequence[ScenarioStep]]]:
    """The scenario cut after the steps due at t=0, and a function that builds the later steps.

    `sim serve` loads the first part into the store before it listens and hands the rest to
    the simulation afterwards; for a generated scenario the rest is not built until asked."""
    steps = scenario.steps
    if isinstance(steps, LazySteps):
        return dataclasses.replace(scenario, steps=steps.head), steps.rest
    cut = 0
    while cut < len(steps) and steps[cut].at <= 0:
        cut += 1
    later = tuple(steps[cut:])
    return dataclasses.replace(scenario, steps=tuple(steps[:cut])), lambda: later


def steps_from_objects(name: str, objects: Iterable[tuple[float, dict[str, Any]]],
                       config: Mapping[str, Any] | None = None,
                       actions: Iterable[tuple[float, ScenarioAction]] = (),
                       meta: Mapping[str, Any] | None = None) -> Scenario:
    """A Scenario from already-valid objects (used by generated built-ins; no re-validation,
    so generating 100,000 workloads stays fast). Objects must be v1beta2 and namespaced."""
    cfg = {**SIM_CONFIG_DEFAULTS, **(config or {})}
    items: list[tuple[float, int, ScenarioStep]] = []
    pools: list[dict[str, Any]] = []
    for n, (at, obj) in enumerate(objects, start=1):
        if obj["kind"] == "NodePool":
            obj["spec"].setdefault("clusterName", cfg["clusterName"])
            pools.append(obj)
        items.append((at, n, ScenarioStep(at, "apply", obj, None, f"{name}#doc{n}")))
    base = len(items)
    for n, (at, action) in enumerate(actions, start=base + 1):
        items.append((at, n, ScenarioStep(at, "action", None, action, f"{name}#doc{n}")))
    items.sort(key=lambda item: (item[0], item[1]))
    return Scenario(name=name, source=f"<generated:{name}>", config=cfg, node_pools=tuple(pools),
                    steps=tuple(step for _, _, step in items), meta=dict(meta or {}))


NumberedObjects = Iterable[tuple[int, float, dict[str, Any]]]


def staged_steps_from_objects(name: str, first: NumberedObjects, later: Callable[[], NumberedObjects],
                              config: Mapping[str, Any] | None = None,
                              meta: Mapping[str, Any] | None = None) -> Scenario:
    """Like `steps_from_objects`, for objects given as (document number, at, object): `first`
    holds every object due at t=0 and every NodePool, `later()` the rest, all due after t=0;
    it runs only when the later steps are first needed (see `LazySteps`). The timeline is the
    one `steps_from_objects` would build from all of them in number order."""
    cfg = {**SIM_CONFIG_DEFAULTS, **(config or {})}
    pools: list[dict[str, Any]] = []
    head: list[tuple[float, int, ScenarioStep]] = []
    for n, at, obj in first:
        if at > 0:
            raise ValueError(f"{name}#doc{n}: a first-instant object is due at {at}")
        if obj["kind"] == "NodePool":
            obj["spec"].setdefault("clusterName", cfg["clusterName"])
            pools.append(obj)
        head.append((at, n, ScenarioStep(at, "apply", obj, None, f"{name}#doc{n}")))
    head.sort(key=lambda item: (item[0], item[1]))

    def build_rest() -> tuple[ScenarioStep, ...]:
        items = [(at, n, obj) for n, at, obj in later()]
        items.sort(key=lambda item: (item[0], item[1]))
        if items and items[0][0] <= 0:
            raise ValueError(f"{name}#doc{items[0][1]}: a later object is due at t=0")
        pools_later = [n for _, n, obj in items if obj.get("kind") == "NodePool"]
        if pools_later:  # Scenario.node_pools is known before the later steps are built
            raise ValueError(f"{name}#doc{pools_later[0]}: a NodePool must be in the first instant")
        return tuple(ScenarioStep(at, "apply", obj, None, f"{name}#doc{n}") for at, n, obj in items)

    return Scenario(name=name, source=f"<generated:{name}>", config=cfg, node_pools=tuple(pools),
                    steps=LazySteps(tuple(step for _, _, step in head), build_rest), meta=dict(meta or {}))
