"""The simulator's workload-side controllers: Job and Pod integrations, provisioning, node pools, kubelet."""

from kueuetop.sim.cloud.provisioning import build_core_controllers as build

__all__ = ["build"]
