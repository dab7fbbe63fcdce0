"""Metadata shared by all kinds: object identity, conditions, owner references."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kueuetop.kueue.fields import Fields


@dataclass(frozen=True, slots=True)
class OwnerRef:
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool


@dataclass(frozen=True, slots=True)
class Meta:
    name: str
    namespace: str = ""
    uid: str = ""
    resource_version: str = ""
    generation: int = 0
    creation: float | None = None
    deletion: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    owners: tuple[OwnerRef, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def controller(self) -> OwnerRef | None:
        for o in self.owners:
            if o.controller:
                return o
        return None


_NOTHING: Mapping[str, str] = MappingProxyType({})  # shared by every object without labels


def _or_nothing(values: dict[str, str]) -> Mapping[str, str]:
    # Label keys and most values are already shared (Fields.str_map); most objects have no
    # annotations: one empty mapping for all of them.
    return values or _NOTHING


def parse_meta(f: Fields) -> Meta:
    m = f.sub("metadata", required=True)
    owners = tuple(
        OwnerRef(
            api_version=o.str("apiVersion"), kind=o.str("kind"), name=o.str("name"),
            uid=o.str("uid"), controller=o.bool("controller", False),
        )
        for o in m.items("ownerReferences")
    )
    return Meta(
        name=m.str("name", required=True, unique=True),
        namespace=m.str("namespace"),
        uid=m.str("uid", unique=True),
        resource_version=m.str("resourceVersion", unique=True),
        generation=m.int("generation"),
        creation=m.time("creationTimestamp"),
        deletion=m.time("deletionTimestamp"),
        labels=_or_nothing(m.str_map("labels")),
        annotations=_or_nothing(m.str_map("annotations")),
        owners=owners,
    )


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition: float | None = None
    observed_generation: int | None = None

    @property
    def is_true(self) -> bool:
        return self.status == "True"


def _parse_condition(c: Fields) -> Condition:
    return Condition(
        type=c.str("type", required=True),
        status=c.enum("status", ("True", "False", "Unknown"), "Unknown"),
        reason=c.str("reason"),
        message=c.str("message"),
        last_transition=c.time("lastTransitionTime"),
        observed_generation=c.opt_int("observedGeneration"),
    )


_CONDITION_FIELDS = ("type", "status", "reason", "message", "lastTransitionTime", "observedGeneration")


def parse_conditions(f: Fields, key: str = "conditions") -> tuple[Condition, ...]:
    """The conditions at `key`. With the caller's ParseCache (`f.cache`), a condition already
    parsed (by the values parsing reads: an object's conditions mostly carry over from one version
    to the next, and timestamps are not cheap to parse) is the one kept."""
    cache = f.cache.conditions if f.cache is not None else None
    # Fast path: every condition already kept, read straight from the raw list (no Fields
    # views, no paths). Anything else, malformed data included, takes the checked path below.
    raw_list = f.raw(key)
    if cache is not None and type(raw_list) is list:
        hit = []
        get = cache.get
        for raw in raw_list:
            if type(raw) is not dict:
                break
            try:
                g = raw.get("observedGeneration")
                cond = get((raw.get("type"), raw.get("status"), raw.get("reason"), raw.get("message"),
                            raw.get("lastTransitionTime"), g, type(g)))
            except TypeError:
                break
            if cond is None:
                break
            hit.append(cond)
        else:
            return tuple(hit)
    out = []
    for c in f.items(key):
        if cache is None:
            out.append(_parse_condition(c))
            continue
        raw = c.raw_data()
        # type() of the generation too: True == 1 as a key, but only 1 parses.
        ck = (*(raw.get(k) for k in _CONDITION_FIELDS), type(raw.get("observedGeneration")))
        try:
            cond = cache.get(ck)
        except TypeError:  # unhashable values: malformed, let the parser say why
            ck, cond = None, None
        if cond is None:
            cond = _parse_condition(c)
            if ck is not None:
                f.cache.keep_condition(ck, cond)  # type: ignore[union-attr]
        out.append(cond)
    return tuple(out)


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    for c in conditions:
        if c.type == type_:
            return c
    return None


def condition_true(conditions: tuple[Condition, ...], type_: str) -> bool:
    for c in conditions:  # find_condition, inline: asked hundreds of thousands of times per forecast
        if c.type == type_:
            return c.status == "True"
    return False
