"""When a workload's admission checks pass, as far as the forecast can tell.

Kueue admits a workload once its quota is reserved and every admission check on its
ClusterQueue is Ready. For Kueue's ProvisioningRequest check (controller
`kueue.x-k8s.io/provisioning-request`) that is when cluster-autoscaler has the nodes for the
workload's pods: `check-capacity.autoscaling.x-k8s.io` when they fit the free capacity as it is
(it never scales), the other classes (`best-effort-atomic-scale-up…`, GKE's `queued-provisioning…`)
once the pools have grown for them. With node pools the forecast places those pods and passes the
check when the last is placed (`provisioning_waits`); every other check, and every check without
pools, is taken to pass the instant quota is reserved (`CHECKS_ASSUMED`).

Kueue (pkg/controller/admissionchecks/provisioning): a workload that requests none of the
config's `managedResources` needs no ProvisioningRequest and its check is set Ready at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kueuetop.kueue.admission_check import PROVISIONING_CONTROLLER, AdmissionCheck
from kueuetop.kueue.provisioning import CHECK_CAPACITY, ProvisioningRequestConfig
from kueuetop.kueue.workload import Workload

CHECKS_ASSUMED = "admission checks other than ProvisioningRequests' on node pools are taken to pass the instant quota is reserved"
UNKNOWN_CLASS = ""  # a ProvisioningRequest check whose config is not known: taken to scale


@dataclass(frozen=True, slots=True)
class NodeCheck:
    """A ProvisioningRequest admission check: its class, and the resources it provisions (empty: all)."""

    provisioning_class: str = UNKNOWN_CLASS
    managed_resources: tuple[str, ...] = ()

    @property
    def scales(self) -> bool:
        """Whether the autoscaler grows pools for it (check-capacity only looks)."""
        return self.provisioning_class != CHECK_CAPACITY


def node_checks(checks: Mapping[str, AdmissionCheck],
                configs: Iterable[ProvisioningRequestConfig]) -> dict[str, NodeCheck]:
    """The cluster's ProvisioningRequest admission checks by name, each with its config's class."""
    by_name = {c.name: c for c in configs}
    out: dict[str, NodeCheck] = {}
    for name, check in checks.items():
        if check.controller_name != PROVISIONING_CONTROLLER:
            continue
        config = by_name.get(check.parameters_name) if check.parameters_kind in ("", "ProvisioningRequestConfig") else None
        out[name] = NodeCheck(config.provisioning_class, config.managed_resources) if config is not None else NodeCheck()
    return out


def waiting_checks(wl: Workload) -> tuple[str, ...]:
    """The admission checks the workload still waits for (not Ready), by name."""
    return tuple(c.name for c in wl.admission_checks if c.state != "Ready")


def provisioning_waits(wl: Workload, checks: Mapping[str, NodeCheck]) -> tuple[tuple[str, ...], bool] | None:
    """The workload's pending ProvisioningRequest checks that wait for its pods to find nodes, and
    whether the pools may grow for them (False: only check-capacity ones); None: none waits so."""
    names = []
    scales = False
    requested = {r for ps in wl.pod_sets for r, v in ps.requests.items() if v}
    for name in waiting_checks(wl):
        check = checks.get(name)
        if check is None:
            continue
        if check.managed_resources and not requested.intersection(check.managed_resources):
            continue  # no ProvisioningRequest for it: Kueue sets the check Ready at once
        names.append(name)
        scales = scales or check.scales
    return (tuple(names), scales) if names else None
