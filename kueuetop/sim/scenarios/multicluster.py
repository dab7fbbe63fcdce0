"""Scenarios of several clusters: one YAML stream whose documents are addressed to a cluster.

* `apiVersion: kueuetop.io/v1, kind: Cluster, metadata: {name}, spec: {role: manager|worker,
  kueueAPI?: v1beta2|v1beta1, region?}` declares a cluster (exactly one manager).
* Any other document goes to the cluster named by its annotation `kueuetop.io/cluster`, or to
  the manager without one; each cluster's documents form an ordinary scenario (§2.2).
* `kind: Action` with `spec.action: cluster-down` / `cluster-up` and `spec.target:
  cluster/NAME` takes a worker's API away (its watches end, connections are refused) or brings
  it back, at `spec.at`.

Built-ins live in `scenarios/multicluster/` (files) and `MULTI_GENERATORS` (generated).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kueuetop.kueue.durations import parse_duration
from kueuetop.sim.scenarios.scenario import Scenario, ScenarioError, parse_scenario

ANN_CLUSTER = "kueuetop.io/cluster"
CLUSTER_ACTIONS = ("cluster-down", "cluster-up")
ROLES = ("manager", "worker")
MULTI_DIR = Path(__file__).parent / "multicluster"


@dataclass(frozen=True)
class ClusterFault:
    at: float
    action: str  # cluster-down | cluster-up
    cluster: str


@dataclass
class ClusterDecl:
    name: str
    role: str
    kueue_api: str = "v1beta2"
    region: str = ""


@dataclass
class MultiClusterScenario:
    name: str
    clusters: list[ClusterDecl]
    scenarios: dict[str, Scenario]
    faults: list[ClusterFault] = field(default_factory=list)

    @property
    def manager(self) -> str:
        return next(c.name for c in self.clusters if c.role == "manager")

    @property
    def workers(self) -> list[str]:
        return [c.name for c in self.clusters if c.role == "worker"]

    def decl(self, name: str) -> ClusterDecl:
        return next(c for c in self.clusters if c.name == name)


def _err(source: str, number: int, msg: str) -> ScenarioError:
    return ScenarioError(source, msg, document=number)


def parse_multicluster(text: str, source: str, *, name: str | None = None) -> MultiClusterScenario:
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        raise ScenarioError(source, f"invalid YAML: {str(exc).splitlines()[0]}") from None
    clusters: list[ClusterDecl] = []
    addressed: list[tuple[str | None, int, dict[str, Any]]] = []
    faults: list[ClusterFault] = []
    for number, doc in enumerate(docs, start=1):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise _err(source, number, "expected a mapping (a Kubernetes object)")
        kind, api = doc.get("kind"), doc.get("apiVersion")
        spec = doc.get("spec") if isinstance(doc.get("spec"), dict) else {}
        if api == "kueuetop.io/v1" and kind == "Cluster":
            cname = (doc.get("metadata") or {}).get("name")
            role = spec.get("role", "worker")
            if not isinstance(cname, str) or not cname:
                raise _err(source, number, "Cluster: metadata.name: missing")
            if role not in ROLES:
                raise _err(source, number, f"Cluster {cname}: spec.role: expected one of {', '.join(ROLES)}")
            api_version = spec.get("kueueAPI", "v1beta2")
            if api_version not in ("v1beta2", "v1beta1"):
                raise _err(source, number, f"Cluster {cname}: spec.kueueAPI: expected v1beta2 or v1beta1")
            if any(c.name == cname for c in clusters):
                raise _err(source, number, f"Cluster {cname}: declared twice")
            clusters.append(ClusterDecl(cname, role, api_version, str(spec.get("region", ""))))
            continue
        if api == "kueuetop.io/v1" and kind == "Action" and spec.get("action") in CLUSTER_ACTIONS:
            target = str(spec.get("target", ""))
            if not target.startswith("cluster/"):
                raise _err(source, number, f"Action {spec.get('action')}: spec.target: expected cluster/NAME")
            try:
                at = parse_duration(str(spec.get("at", "0s")))
            except ValueError as exc:
                raise _err(source, number, f"Action: spec.at: {exc}") from None
            faults.append(ClusterFault(at, str(spec["action"]), target.split("/", 1)[1]))
            continue
        ann = ((doc.get("metadata") or {}).get("annotations") or {}) if isinstance(doc.get("metadata"), dict) else {}
        addressed.append((ann.get(ANN_CLUSTER) if isinstance(ann, dict) else None, number, doc))
    managers = [c for c in clusters if c.role == "manager"]
    if len(managers) != 1:
        raise ScenarioError(source, f"a multi-cluster scenario declares exactly one Cluster with role manager "
                            f"(found {len(managers)})")
    names = {c.name for c in clusters}
    per: dict[str, list[dict[str, Any]]] = {c.name: [] for c in clusters}
    for target, number, doc in addressed:
        target = target or managers[0].name
        if target not in names:
            raise _err(source, number, f'metadata.annotations["{ANN_CLUSTER}"]: no Cluster named {target!r} '
                       f"(declared: {', '.join(sorted(names))})")
        per[target].append(doc)
    for f in faults:
        if f.cluster not in names or f.cluster == managers[0].name:
            raise ScenarioError(source, f"Action {f.action}: cluster/{f.cluster} is not a worker of this scenario")
    stem = name or Path(source).stem
    scenarios = {c: parse_scenario(yaml.safe_dump_all(d, sort_keys=False), f"{source} [cluster {c}]",
                                   name=f"{stem}/{c}") for c, d in per.items()}
    return MultiClusterScenario(stem, clusters, scenarios, sorted(faults, key=lambda f: f.at))


def _file_builtins() -> dict[str, Path]:
    return {p.stem: p for p in sorted(MULTI_DIR.glob("*.yaml"))}


def multicluster_builtins() -> list[str]:
    from kueuetop.sim.scenarios.multicluster_gen import MULTI_GENERATORS

    return sorted(set(_file_builtins()) | set(MULTI_GENERATORS))


def load_multicluster(name_or_path: str) -> MultiClusterScenario:
    """A built-in multi-cluster scenario by name (`multikueue`, `multikueue-xl`) or a file."""
    from kueuetop.sim.scenarios.multicluster_gen import MULTI_GENERATORS

    gen: Callable[[], MultiClusterScenario] | None = MULTI_GENERATORS.get(name_or_path)
    if gen is not None:
        return gen()
    files = _file_builtins()
    path = files.get(name_or_path) or Path(name_or_path)
    if not path.is_file():
        raise ScenarioError(name_or_path, "no such multi-cluster scenario file or built-in "
                            f"(built-ins: {', '.join(multicluster_builtins())})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(name_or_path, f"cannot read: {exc}") from None
    return parse_multicluster(text, path.name, name=name_or_path if name_or_path in files else None)


def is_multicluster(name_or_path: str) -> bool:
    """Whether `sim serve NAME` means several clusters: a multi-cluster built-in, or a file
    that declares a kueuetop.io/v1 Cluster."""
    from kueuetop.sim.scenarios.multicluster_gen import MULTI_GENERATORS

    if name_or_path in MULTI_GENERATORS or name_or_path in _file_builtins():
        return True
    path = Path(name_or_path)
    if not path.is_file():
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    # A document of kind Cluster (not ClusterQueue, which every scenario has).
    return "kueuetop.io/v1" in text and re.search(r"^kind:\s*[\"']?Cluster[\"']?\s*$", text, re.M) is not None
