"""Pooled quota of a cohort and who borrows from whom (no console: the pure model)."""

from __future__ import annotations

from typing import Any

from kueuetop.kueue.cluster_queue import parse_cluster_queue
from kueuetop.kueue.cohort import parse_cohort
from kueuetop.views.cohort_pool import cohort_pools

GPU = "nvidia.com/gpu"


def cq(name: str, cohort: str, nominal: int, used: int, *, flavor: str = "spot", borrowed: int | None = None,
       lending_limit: int | None = None) -> Any:
    q: dict[str, Any] = {"name": GPU, "nominalQuota": nominal}
    if lending_limit is not None:
        q["lendingLimit"] = lending_limit
    usage: dict[str, Any] = {"name": GPU, "total": str(used)}
    if borrowed is not None:
        usage["borrowed"] = str(borrowed)
    return parse_cluster_queue({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
        "spec": {"cohortName": cohort, "resourceGroups": [
            {"coveredResources": [GPU], "flavors": [{"name": flavor, "resources": [q]}]}]},
        "status": {"flavorsUsage": [{"name": flavor, "resources": [usage]}]},
    })


def test_borrower_and_the_members_whose_unused_quota_it_uses() -> None:
    pools = cohort_pools([cq("a", "ab", 4, 10, borrowed=6), cq("b", "ab", 8, 0), cq("c", "ab", 4, 2, lending_limit=1)],
                         {})
    p = pools["ab"]
    assert sorted(p.members) == ["a", "b", "c"]
    line = p.lines[("spot", GPU)]
    assert (line.nominal, line.usage, line.borrowed, line.lendable) == (16, 12, 6, 9)  # c lends at most 1
    assert len(p.loans) == 1
    loan = p.loans[0]
    assert (loan.borrower, loan.flavor, loan.resource, loan.amount) == ("a", "spot", GPU, 6)
    assert loan.lenders == (("b", 8), ("c", 1))


def test_borrowing_without_kueues_figure_is_usage_beyond_nominal_and_other_flavors_do_not_lend() -> None:
    pools = cohort_pools([cq("a", "ab", 2, 5), cq("b", "ab", 8, 0, flavor="reserved")], {})
    (loan,) = pools["ab"].loans
    assert loan.amount == 3 and loan.lenders == ()  # b's quota is another flavor: not borrowable for spot


def test_hierarchical_cohorts_pool_child_subtrees_and_the_cohorts_own_quota() -> None:
    root = parse_cohort({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "root"},
                         "spec": {"resourceGroups": [{"coveredResources": [GPU], "flavors": [
                             {"name": "spot", "resources": [{"name": GPU, "nominalQuota": 4}]}]}]}})
    child = parse_cohort({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": "child"},
                          "spec": {"parentName": "root"}})
    pools = cohort_pools([cq("a", "child", 2, 6), cq("b", "child", 2, 0), cq("c", "root", 4, 0)],
                         {"root": root, "child": child})
    assert pools["child"].members == ["a", "b"]
    assert pools["root"].members == ["c", "a", "b"]
    assert pools["root"].lines[("spot", GPU)].nominal == 4 + 2 + 2 + 4
    # Inside child: a borrows 4, of which b's 2 unused; the subtree as a whole borrows 2 from root.
    inside = [x for x in pools["child"].loans]
    assert [(x.borrower, x.amount, x.lenders) for x in inside] == [("a", 4, (("b", 2),))]
    up = [x for x in pools["root"].loans if x.borrower == "child"]
    assert [(x.amount, x.lenders) for x in up] == [(2, (("root", 4), ("c", 4)))]


def test_a_cycle_of_parents_does_not_hang() -> None:
    def co(name: str, parent: str) -> Any:
        return parse_cohort({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Cohort", "metadata": {"name": name},
                             "spec": {"parentName": parent}})

    pools = cohort_pools([cq("a", "x", 1, 0)], {"x": co("x", "y"), "y": co("y", "x")})
    assert set(pools) == {"x", "y"}
