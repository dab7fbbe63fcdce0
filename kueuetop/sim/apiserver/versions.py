"""Which API versions a server offers: all of the registry, or Kueue's as an older release had them.

Kueue ≤ 0.14 served kueue.x-k8s.io (and its visibility API) as v1beta1 only, with v1beta1 as the
storage version and no deprecation warning. A server built with `kueue=("v1beta1",)` behaves
like that: discovery lists only v1beta1, v1beta2 paths answer 404, objects go out in v1beta1
field names. The object store keeps v1beta2 either way.
"""

from __future__ import annotations

from dataclasses import dataclass

from kueuetop.sim.storage import kinds as K
from kueuetop.sim.storage.kinds import Kind

KUEUE_VERSIONS = ("v1beta2", "v1beta1")
_KUEUE_GROUPS = (K.KUEUE_GROUP, K.VISIBILITY_GROUP)

# Short names as Kueue ≤ 0.14 declared them (config/components/crd/bases at v0.14.0, unchanged
# since "Add shortnames to kueue APIs", 2022): Workload had `wl` (0.15.3 added kwl/kueueworkload,
# 0.16 dropped wl); Cohort, AdmissionCheck, WorkloadPriorityClass and ProvisioningRequestConfig
# had none until 0.18. The registry in kinds.py holds the current (0.18+) names.
V1BETA1_SHORT_NAMES: dict[str, tuple[str, ...]] = {
    "workloads": ("wl",),
    "clusterqueues": ("cq",),
    "localqueues": ("queue", "queues", "lq"),
    "resourceflavors": ("flavor", "flavors", "rf"),
}


@dataclass(frozen=True)
class ServedVersions:
    kueue: tuple[str, ...] = KUEUE_VERSIONS   # preferred first

    def __post_init__(self) -> None:
        if not self.kueue or any(v not in KUEUE_VERSIONS for v in self.kueue):
            raise ValueError(f"kueue versions must be a non-empty subset of {KUEUE_VERSIONS}, "
                             f"not {self.kueue}")

    def versions(self, group: str) -> tuple[str, ...]:
        """Served versions of a group, preferred first (empty when the group is not served)."""
        if group in _KUEUE_GROUPS:
            return self.kueue
        return K.groups().get(group, ())

    def groups(self) -> dict[str, tuple[str, ...]]:
        """Served API groups (excluding core) → versions, preferred first."""
        return {g: self.versions(g) for g in K.groups()}

    def serves(self, group: str, version: str) -> bool:
        return version in (("v1",) if group == "" else self.versions(group))

    def kinds_in(self, group: str, version: str) -> list[Kind]:
        return K.kinds_in(group, version) if self.serves(group, version) else []

    def find_kind(self, group: str, version: str, plural: str) -> Kind | None:
        return K.find_kind(group, version, plural) if self.serves(group, version) else None

    def short_names(self, kind: Kind) -> tuple[str, ...]:
        """The short names discovery offers for a kind, as the emulated Kueue release declared them."""
        if kind.group == K.KUEUE_GROUP and "v1beta2" not in self.kueue:
            return V1BETA1_SHORT_NAMES.get(kind.plural, ())
        return kind.short_names

    def deprecation(self, kind: Kind, version: str) -> str | None:
        """The Warning text for a request at this version; none for the preferred version, since a
        server that prefers v1beta1 (Kueue ≤ 0.14) has not deprecated it."""
        if version in self.versions(kind.group)[:1]:
            return None
        return kind.deprecated_versions.get(version)


ALL_VERSIONS = ServedVersions()
