"""Kubernetes-compatible REST API of the simulated cluster."""

from kueuetop.sim.apiserver.faults import Faults
from kueuetop.sim.apiserver.hooks import ServerHooks, WriteRequest
from kueuetop.sim.apiserver.kubeconfig import write_kubeconfig
from kueuetop.sim.apiserver.server import ApiServer
from kueuetop.sim.apiserver.status import ApiError

__all__ = ["ApiError", "ApiServer", "Faults", "ServerHooks", "WriteRequest", "write_kubeconfig"]
