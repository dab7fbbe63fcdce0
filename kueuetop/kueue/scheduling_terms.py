"""Label selectors, node selector terms, taints and tolerations, with Kubernetes' matching rules."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kueuetop.kueue.fields import Fields

SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
NODE_SELECTOR_OPS = (*SELECTOR_OPS, "Gt", "Lt")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        if op in ("Gt", "Lt"):
            if self.key not in labels or len(self.values) != 1:
                return False
            try:
                have, want = int(labels[self.key]), int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """metav1.LabelSelector: matchLabels AND matchExpressions. An empty selector matches all."""

    match_labels: Mapping[str, str]
    expressions: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        for k, v in self.match_labels.items():
            if labels.get(k) != v:
                return False
        return all(r.matches(labels) for r in self.expressions)


def parse_label_selector(f: Fields) -> LabelSelector:
    exprs = tuple(
        Requirement(e.str("key", required=True), e.enum("operator", SELECTOR_OPS, "In"), e.str_list("values"))
        for e in f.items("matchExpressions")
    )
    return LabelSelector(f.str_map("matchLabels"), exprs)


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One term of requiredDuringSchedulingIgnoredDuringExecution (terms are ORed)."""

    expressions: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.expressions)


def parse_required_affinity(spec: Fields) -> tuple[NodeSelectorTerm, ...]:
    """spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms."""
    req = spec.sub("affinity").sub("nodeAffinity").sub("requiredDuringSchedulingIgnoredDuringExecution")
    terms = []
    for t in req.items("nodeSelectorTerms"):
        exprs = tuple(
            Requirement(e.str("key", required=True), e.enum("operator", NODE_SELECTOR_OPS, "In"),
                        e.str_list("values"))
            for e in t.items("matchExpressions")
        )
        terms.append(NodeSelectorTerm(exprs))
    return tuple(terms)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str  # "Equal" | "Exists"
    value: str
    effect: str  # "" = all effects

    def tolerates(self, taint: Taint) -> bool:
        """corev1 Toleration.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        # Empty key with Equal is invalid in the API; treat as no match.
        return bool(self.key) and self.value == taint.value


def parse_taints(f: Fields, key: str) -> tuple[Taint, ...]:
    return tuple(
        Taint(t.str("key", required=True), t.str("value"), t.enum("effect", TAINT_EFFECTS, "NoSchedule"))
        for t in f.items(key)
    )


def parse_tolerations(f: Fields, key: str = "tolerations") -> tuple[Toleration, ...]:
    out = []
    for t in f.items(key):
        eff = t.str("effect")
        if eff and eff not in TAINT_EFFECTS:
            raise t.error("effect", f"unsupported value {eff!r}")
        out.append(Toleration(t.str("key"), t.enum("operator", ("Equal", "Exists"), "Equal"),
                              t.str("value"), eff))
    return tuple(out)


def tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    return any(t.tolerates(taint) for t in tolerations)
