"""Hooks through which the simulator feeds the server: metrics, GPU telemetry, queue order
and write admission. Kueue's metrics and the visibility API come from the simulated Kueue
controller only (`sim.serve`): a server without those hooks has no Kueue behind it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kueuetop.sim.storage.kinds import Kind

Obj = dict[str, Any]
QueueRef = str | tuple[str, str]  # ClusterQueue name, or (namespace, LocalQueue name)


@dataclass
class WriteRequest:
    """A write about to be stored. A hook may change `obj` (v1beta2 shape) or raise
    `ApiError` to refuse it, like an admission webhook."""

    verb: str                 # create | update | patch | delete
    kind: Kind
    subresource: str          # "" or "status"
    namespace: str
    name: str
    obj: Obj | None           # new state (None for delete)
    old: Obj | None           # current state (None for create)
    user: str
    dry_run: bool


@dataclass
class ServerHooks:
    metrics_text: Callable[[], str] | None = None
    dcgm_text: Callable[[str | None], str] | None = None
    pending_workloads: Callable[[QueueRef, int, int], list[Obj]] | None = None
    on_write: Callable[[WriteRequest], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
