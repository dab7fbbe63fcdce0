"""AdmissionCheck, WorkloadPriorityClass and PriorityClass: small cluster-scoped kinds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kueuetop.kueue.api_versions import to_v1beta2
from kueuetop.kueue.fields import object_fields
from kueuetop.kueue.meta import Condition, Meta, condition_true, parse_conditions, parse_meta

if TYPE_CHECKING:
    from kueuetop.kueue.parse_cache import ParseCache

PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"


@dataclass(frozen=True, slots=True)
class AdmissionCheck:
    meta: Meta
    controller_name: str
    parameters_kind: str = ""
    parameters_name: str = ""
    conditions: tuple[Condition, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def active(self) -> bool:
        # A check without status yet is treated as active so a fresh object doesn't block a queue;
        # Kueue's own check controllers set Active=True almost immediately.
        if not self.conditions:
            return True
        return condition_true(self.conditions, "Active")


def parse_admission_check(data: Mapping, cache: ParseCache | None = None) -> AdmissionCheck:
    f, _, _ = object_fields(to_v1beta2(data), "AdmissionCheck", cache)
    spec = f.sub("spec")
    params = spec.sub("parameters")
    return AdmissionCheck(
        meta=parse_meta(f),
        controller_name=spec.str("controllerName", required=True),
        parameters_kind=params.str("kind"),
        parameters_name=params.str("name"),
        conditions=parse_conditions(f.sub("status")),
    )


@dataclass(frozen=True, slots=True)
class PriorityClass:
    """A WorkloadPriorityClass (kueue) or a scheduling.k8s.io PriorityClass."""

    meta: Meta
    value: int
    kueue: bool
    description: str = ""
    global_default: bool = False

    @property
    def name(self) -> str:
        return self.meta.name


def parse_workload_priority_class(data: Mapping, cache: ParseCache | None = None) -> PriorityClass:
    f, _, _ = object_fields(to_v1beta2(data), "WorkloadPriorityClass", cache)
    return PriorityClass(parse_meta(f), f.int("value"), True, f.str("description"))


def parse_priority_class(data: Mapping, cache: ParseCache | None = None) -> PriorityClass:
    f, _, _ = object_fields(data, "PriorityClass", cache)
    return PriorityClass(parse_meta(f), f.int("value"), False, f.str("description"),
                         f.bool("globalDefault", False))
