"""What-if changes for a forecast (`kueuetop forecast --with SPEC`): parsed, then applied to a snapshot.

    quota CQ [FLAVOR/]RESOURCE=+N | =-N | =N   change a nominalQuota (N a Kubernetes quantity:
                                               4, 500m, 64Gi); FLAVOR when several cover RESOURCE
    hold NS/NAME                               deactivate the matching unfinished workloads (shell
                                               globs on either part), as the `hold` action does
    nodes POOL=+N | =-N                        N more (fewer) Ready nodes in a node pool

Applying never changes its inputs: the snapshot, its ClusterQueues and Workloads are frozen and
are replaced (`dataclasses.replace`), with new mappings so the engine's caches, kept by identity,
see new objects. A held workload that holds quota is only marked inactive here: the forecast's
workload controller evicts it, as Kueue's does.

Every mistake is a ValueError whose message is one line naming what is wrong.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from kueuetop.admission.check_timing import NodeCheck
from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.finish_grid import RESOLUTION
from kueuetop.admission.forecast import forecast
from kueuetop.admission.forecast_result import Forecast, PoolCapacity, RuntimeEstimate, WorkloadKey
from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.errors import QuantityError
from kueuetop.kueue.quantity import format_resource_value, parse_quantity, resource_value
from kueuetop.kueue.quota import FlavorQuotas, ResourceGroup
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload

_LIST_AT_MOST = 8  # names listed in an error before "…"


@dataclass(frozen=True, slots=True)
class QuotaChange:
    cluster_queue: str
    target: str  # "RESOURCE" or "FLAVOR/RESOURCE", told apart against the ClusterQueue when applied
    op: str  # "+", "-" or "=" (absolute)
    quantity: Fraction  # ≥ 0
    spec: str = ""


@dataclass(frozen=True, slots=True)
class HoldChange:
    namespace: str  # shell-style globs
    name: str
    spec: str = ""


@dataclass(frozen=True, slots=True)
class NodesChange:
    pool: str
    delta: int  # nodes added (> 0) or removed (< 0)
    spec: str = ""


Change = QuotaChange | HoldChange | NodesChange

_USAGE = "use 'quota CQ [FLAVOR/]RESOURCE=+N', 'hold NS/NAME' or 'nodes POOL=+N'"
_ASSIGN = re.compile(r"^([^=\s]+)=([+-]?)(\S+)$")


def name_list(names: Iterable[str]) -> str:
    """Names for an error message: sorted, the first few, then how many in all."""
    return _names(names)


def _names(names: Iterable[str]) -> str:
    ns = sorted(names)
    shown = ", ".join(ns[:_LIST_AT_MOST])
    return shown + (f", … ({len(ns)} in all)" if len(ns) > _LIST_AT_MOST else "") if ns else "none"


def parse_change(spec: str) -> Change:
    """One `--with` spec (see the module docstring)."""
    words = spec.split()
    if not words:
        raise ValueError(f"empty change: {_USAGE}")
    verb, args = words[0], words[1:]
    if verb == "quota":
        return _parse_quota(spec, args)
    if verb == "hold":
        if len(args) != 1 or args[0].count("/") != 1 or not all(args[0].split("/")):
            raise ValueError(f"bad change {spec!r}: use 'hold NAMESPACE/NAME' (globs allowed: 'hold team-b/*')")
        ns, name = args[0].split("/")
        return HoldChange(ns, name, spec)
    if verb == "nodes":
        m = _ASSIGN.match(args[0]) if len(args) == 1 else None
        if m is None or not m.group(2) or not m.group(3).isdigit():
            raise ValueError(f"bad change {spec!r}: use 'nodes POOL=+N' or 'nodes POOL=-N' (N a whole number)")
        n = int(m.group(3))
        return NodesChange(m.group(1), n if m.group(2) == "+" else -n, spec)
    raise ValueError(f"unknown change {verb!r} in {spec!r}: {_USAGE}")


def _parse_quota(spec: str, args: Sequence[str]) -> QuotaChange:
    m = _ASSIGN.match(args[1]) if len(args) == 2 else None
    if m is None:
        raise ValueError(f"bad change {spec!r}: use 'quota CQ [FLAVOR/]RESOURCE=+N' (or =-N, or =N to set it)")
    target, sign, amount = m.groups()
    if amount[0] in "+-":
        raise ValueError(f"bad change {spec!r}: write the sign once, before the quantity")
    try:
        q = parse_quantity(amount)
    except QuantityError as exc:
        raise ValueError(f"bad change {spec!r}: {exc}") from None
    return QuotaChange(args[0], target, sign or "=", q, spec)


def parse_changes(specs: Iterable[str]) -> list[Change]:
    return [parse_change(s) for s in specs]


# ---------------------------------------------------------------------------------------- applying
def apply_changes(snapshot: ClusterSnapshot, pools: Mapping[str, PoolCapacity],
                  changes: Iterable[Change]) -> tuple[ClusterSnapshot, dict[str, PoolCapacity]]:
    """The snapshot and node pools with every change made, in order (the inputs are unchanged)."""
    cqs: dict[str, ClusterQueue] | None = None
    wls: dict[WorkloadKey, Workload] | None = None
    out_pools = dict(pools)
    for ch in changes:
        if isinstance(ch, QuotaChange):
            cqs = cqs if cqs is not None else dict(snapshot.cluster_queues)
            cqs[ch.cluster_queue] = _quota(cqs, ch)
        elif isinstance(ch, HoldChange):
            wls = wls if wls is not None else dict(snapshot.workloads)
            _hold(wls, ch)
        elif isinstance(ch, NodesChange):
            out_pools[ch.pool] = _nodes(out_pools, ch)
        else:  # pragma: no cover - the union is closed
            raise ValueError(f"unknown change {ch!r}")
    fields: dict[str, object] = {}
    if cqs is not None:
        fields["cluster_queues"] = cqs
    if wls is not None:
        fields["workloads"] = wls
        fields["workload_delta"] = None  # which workloads changed is not known to the engine: rescan
    return (dataclasses.replace(snapshot, **fields) if fields else snapshot), out_pools


def with_quota_change(cqs: Mapping[str, ClusterQueue], ch: QuotaChange) -> ClusterQueue:
    """The ClusterQueue `ch` names, with its nominal quota changed (ValueError naming what is unknown)."""
    return _quota(cqs, ch)


def _quota(cqs: Mapping[str, ClusterQueue], ch: QuotaChange) -> ClusterQueue:
    cq = cqs.get(ch.cluster_queue)
    if cq is None:
        raise ValueError(f"{ch.spec}: unknown ClusterQueue {ch.cluster_queue!r} (ClusterQueues: {_names(cqs)})")
    covered = {r for g in cq.resource_groups for r in g.covered}
    # Resource names may carry a domain ("nvidia.com/gpu"), so a "/" does not always end a
    # flavor's name: a covered resource wins, else the part before the first "/" is the flavor.
    flavor, resource = (None, ch.target) if ch.target in covered or "/" not in ch.target \
        else ch.target.split("/", 1)
    group = cq.group_for(resource)
    if group is None:
        raise ValueError(f"{ch.spec}: ClusterQueue {cq.name} has no quota for {resource!r} "
                         f"(its resources: {_names(covered)})")
    flavors = [f.name for f in group.flavors]
    if flavor is None:
        if len(flavors) != 1:
            raise ValueError(f"{ch.spec}: {resource} in ClusterQueue {cq.name} has several flavors "
                             f"({', '.join(flavors)}): name one, as FLAVOR/{resource}")
        flavor = flavors[0]
    elif flavor not in flavors:
        raise ValueError(f"{ch.spec}: ClusterQueue {cq.name} has no flavor {flavor!r} for {resource} "
                         f"(its flavors: {', '.join(flavors) or 'none'})")
    new_groups = tuple(_group_with(g, flavor, resource, ch, cq.name) if g is group else g
                       for g in cq.resource_groups)
    return dataclasses.replace(cq, resource_groups=new_groups)


def _group_with(group: ResourceGroup, flavor: str, resource: str, ch: QuotaChange, cq: str) -> ResourceGroup:
    amount = resource_value(resource, ch.quantity)  # Kueue's integers: milli-cpu, whole units else
    fqs: list[FlavorQuotas] = []
    for fq in group.flavors:
        if fq.name == flavor:
            rq = fq.resources[resource]
            nominal = rq.nominal + amount if ch.op == "+" else rq.nominal - amount if ch.op == "-" else amount
            if nominal < 0:
                raise ValueError(f"{ch.spec}: the nominalQuota of {flavor}/{resource} in ClusterQueue {cq} is "
                                 f"{format_resource_value(resource, rq.nominal)}; it cannot go below 0")
            fq = dataclasses.replace(fq, resources={**fq.resources, resource: dataclasses.replace(rq, nominal=nominal)})
        fqs.append(fq)
    return dataclasses.replace(group, flavors=tuple(fqs))


def _hold(wls: dict[WorkloadKey, Workload], ch: HoldChange) -> None:
    hits = [k for k, wl in wls.items() if fnmatch.fnmatchcase(k[0], ch.namespace)
            and fnmatch.fnmatchcase(k[1], ch.name) and not wl.is_finished]
    if not hits:
        raise ValueError(f"{ch.spec}: no unfinished workload matches {ch.namespace}/{ch.name}")
    for k in hits:
        if wls[k].active:
            wls[k] = dataclasses.replace(wls[k], active=False)


def _nodes(pools: Mapping[str, PoolCapacity], ch: NodesChange) -> PoolCapacity:
    pool = pools.get(ch.pool)
    if pool is None:
        raise ValueError(f"{ch.spec}: unknown node pool {ch.pool!r} (pools: {_names(pools)})")
    if ch.delta >= 0:
        return dataclasses.replace(pool, free_gpus=pool.free_gpus + (pool.gpus_per_node,) * ch.delta,
                                   max_nodes=pool.max_nodes + ch.delta)
    drop = -ch.delta
    if drop > len(pool.free_gpus):
        raise ValueError(f"{ch.spec}: node pool {pool.name} has {len(pool.free_gpus)} Ready node(s); "
                         f"cannot remove {drop}")
    # The emptiest nodes go (most free GPUs): what a scale-down would pick, and what frees the
    # fewest running pods. Kept in their order otherwise.
    order = sorted(range(len(pool.free_gpus)), key=lambda i: (-pool.free_gpus[i], i))
    gone = set(order[:drop])
    kept = tuple(f for i, f in enumerate(pool.free_gpus) if i not in gone)
    return dataclasses.replace(pool, free_gpus=kept, max_nodes=max(len(kept), pool.max_nodes - drop))


# ---------------------------------------------------------------------------------------- running
def run_forecast(snapshot: ClusterSnapshot, pools: Mapping[str, PoolCapacity] | None,
                 runtimes: Mapping[WorkloadKey, RuntimeEstimate], now: float,
                 cache: EngineCache | None = None,
                 placements: Mapping[WorkloadKey, tuple[tuple[str, int, int, float | None], ...]] | None = None,
                 pause: Callable[[], bool | None] | None = None, resolution: float = RESOLUTION,
                 checks: Mapping[str, NodeCheck] | None = None) -> Forecast:
    """The forecast of `snapshot` with `pools` as its node capacity (None: pods run the instant
    their workload is admitted) and `placements`, the GPUs running workloads hold on them.
    `pause`: as `forecast`'s (a caller on a thread beside a UI lets it go first, or stops).
    `resolution`: the runtimes are estimates, so finishes are rounded to a grid (`finish_grid`).
    `checks`: the ProvisioningRequest checks with their classes (`check_timing`), read with pools."""
    return forecast(snapshot, runtimes, now, cache=cache, pools=pools, placements=placements if pools else None,
                    pause=pause, resolution=resolution, checks=checks)
