"""A cohort's pooled quota and who borrows from whom, from ClusterQueue and Cohort objects.

Kueue pools quota over a cohort's subtree: every member ClusterQueue's nominal quota, the
Cohort object's own `resourceGroups`, and (hierarchical cohorts) the subtrees of child cohorts.
A ClusterQueue using more than its nominal quota of a flavor × resource borrows the difference
from that pool (Kueue writes it as `status.flavorsUsage[].resources[].borrowed`); what it can
lend is its unused nominal quota, capped by `lendingLimit` (KEP-1224).

Kueue does not record which queue's quota a borrower uses: the pool is shared. "From whom" is
therefore the members that have unused, lendable quota of the same flavor and resource — the
quota the borrowed amount necessarily comes out of (or the cohort's own quota).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.cohort import Cohort
from kueuetop.kueue.quota import ResourceGroup

FlavorResource = tuple[str, str]


@dataclass(slots=True)
class QuotaLine:
    """One flavor × resource of a queue or a pool."""
    nominal: int = 0
    usage: int = 0
    borrowed: int = 0
    lendable: int = 0  # unused nominal quota others may borrow (capped by lendingLimit)

    def add(self, other: QuotaLine) -> None:
        self.nominal += other.nominal
        self.usage += other.usage
        self.borrowed += other.borrowed
        self.lendable += other.lendable


def total_of(lines: Mapping[FlavorResource, QuotaLine], resource: str) -> QuotaLine:
    """All flavors of one resource added up."""
    out = QuotaLine()
    for (_, res), q in lines.items():
        if res == resource:
            out.add(q)
    return out


@dataclass(frozen=True, slots=True)
class Loan:
    """`borrower` uses `amount` of `flavor`/`resource` beyond its nominal quota; `lenders` are the
    members with unused lendable quota of it, with how much (cohort names stand for their own quota)."""
    borrower: str
    flavor: str
    resource: str
    amount: int
    lenders: tuple[tuple[str, int], ...]


@dataclass(slots=True)
class CohortPool:
    name: str
    members: list[str] = field(default_factory=list)  # ClusterQueues in the subtree
    lines: dict[FlavorResource, QuotaLine] = field(default_factory=dict)
    loans: list[Loan] = field(default_factory=list)

    def total(self, resource: str) -> QuotaLine:
        """All flavors of one resource added up."""
        return total_of(self.lines, resource)


def queue_lines(cq: ClusterQueue) -> dict[FlavorResource, QuotaLine]:
    """A ClusterQueue's quota per flavor × resource with its usage, borrowing and lendable part."""
    usage = {(u.flavor, u.resource): u for u in cq.flavors_usage}
    out: dict[FlavorResource, QuotaLine] = {}
    for g in cq.resource_groups:
        for fq in g.flavors:
            for res, q in fq.resources.items():
                u = usage.get((fq.name, res))
                total = u.total if u is not None else 0
                # Kueue's own figure when it wrote one; usage beyond nominal otherwise.
                borrowed = u.borrowed if u is not None and u.borrowed else max(0, total - q.nominal)
                unused = max(0, q.nominal - total)
                lendable = unused if q.lending_limit is None else min(unused, q.lending_limit)
                out[(fq.name, res)] = QuotaLine(q.nominal, total, borrowed, lendable)
    return out


def _own_lines(groups: Iterable[ResourceGroup]) -> dict[FlavorResource, QuotaLine]:
    # A Cohort's own quota is only there to be borrowed: all of it is lendable.
    return {(fq.name, res): QuotaLine(q.nominal, 0, 0, q.nominal)
            for g in groups for fq in g.flavors for res, q in fq.resources.items()}


def cohort_pools(cluster_queues: Iterable[ClusterQueue], cohorts: Mapping[str, Cohort]) -> dict[str, CohortPool]:
    """Every cohort (named by a ClusterQueue or existing as an object) → its subtree's pool."""
    members: dict[str, list[ClusterQueue]] = {}
    for cq in cluster_queues:
        if cq.cohort:
            members.setdefault(cq.cohort, []).append(cq)
    parents = {name: co.parent for name, co in cohorts.items()}
    for name in members:
        parents.setdefault(name, "")
    children: dict[str, list[str]] = {}
    for name, parent in parents.items():
        if parent:
            children.setdefault(parent, []).append(name)

    pools: dict[str, CohortPool] = {}

    def build(name: str, path: frozenset[str]) -> CohortPool:
        if name in pools:
            return pools[name]
        pool = CohortPool(name)
        contributions: list[tuple[str, dict[FlavorResource, QuotaLine]]] = []
        co = cohorts.get(name)
        if co is not None and co.resource_groups:
            contributions.append((name, _own_lines(co.resource_groups)))
        for cq in sorted(members.get(name, []), key=lambda c: c.name):
            pool.members.append(cq.name)
            contributions.append((cq.name, queue_lines(cq)))
        for child in sorted(children.get(name, [])):
            if child in path:  # a cycle in user objects: stop rather than recurse forever
                continue
            sub = build(child, path | {name})
            pool.members.extend(sub.members)
            pool.loans.extend(sub.loans)
            # Seen from this cohort, a child cohort is one member: it borrows what its subtree
            # uses beyond its subtree's quota and lends what the subtree leaves unused.
            contributions.append((child, {fr: QuotaLine(q.nominal, q.usage, max(0, q.usage - q.nominal),
                                                        max(0, q.nominal - q.usage))
                                          for fr, q in sub.lines.items()}))
        for _, lines in contributions:
            for fr, q in lines.items():
                pool.lines.setdefault(fr, QuotaLine()).add(q)
        for who, lines in contributions:
            for (flavor, res), q in lines.items():
                if q.borrowed <= 0:
                    continue
                lenders = tuple((other, ol[(flavor, res)].lendable) for other, ol in contributions
                                if other != who and (flavor, res) in ol and ol[(flavor, res)].lendable > 0)
                pool.loans.append(Loan(who, flavor, res, q.borrowed, lenders))
        pools[name] = pool
        return pool

    for name in sorted(parents):
        build(name, frozenset())
    return pools
