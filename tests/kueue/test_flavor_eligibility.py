"""Flavor eligibility (Kueue flavorassigner: flavorSelector + untolerated taints)."""

import pytest

from kueuetop.kueue.parse import parse_object
from tests.builders import flavor, pod_set, workload

SPOT = flavor("spot", {"cloud.google.com/gke-spot": "true", "pool": "spot"},
              taints=[{"key": "spot", "value": "true", "effect": "NoSchedule"}])
RESERVED = flavor("reserved", {"pool": "reserved"})
KEYS = frozenset({"cloud.google.com/gke-spot", "pool"})
TOL = [{"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]


def mismatch(fl, **ps_kw):
    from kueuetop.kueue.flavor import flavor_mismatch
    wl = parse_object(workload("ns", "w", "lq", pod_sets=[pod_set(**ps_kw)]))
    return flavor_mismatch(parse_object(fl), wl.pod_sets[0].shape, KEYS)


@pytest.mark.parametrize(("fl", "kw", "ok"), [
    (SPOT, {}, False),  # untolerated NoSchedule taint
    (SPOT, {"tolerations": TOL}, True),
    (SPOT, {"tolerations": [{"operator": "Exists"}]}, True),  # empty key + Exists tolerates everything
    (SPOT, {"tolerations": [{"key": "spot", "operator": "Equal", "value": "false"}]}, False),
    (RESERVED, {"node_selector": {"pool": "reserved"}}, True),
    (RESERVED, {"node_selector": {"pool": "spot"}}, False),
    # a key the group's flavors don't define is left to kube-scheduler
    (RESERVED, {"node_selector": {"zone": "us-central1-a"}}, True),
    # a key another flavor of the group defines, absent here, does not match (group label keys)
    (RESERVED, {"node_selector": {"cloud.google.com/gke-spot": "true"}}, False),
    (RESERVED, {"affinity_terms": [[{"key": "pool", "operator": "In", "values": ["reserved", "x"]}]]}, True),
    (RESERVED, {"affinity_terms": [[{"key": "pool", "operator": "NotIn", "values": ["reserved"]}]]}, False),
    # terms are ORed; a term emptied by the key filter matches any flavor
    (RESERVED, {"affinity_terms": [[{"key": "pool", "operator": "In", "values": ["spot"]}],
                                   [{"key": "zone", "operator": "In", "values": ["a"]}]]}, True),
    (SPOT, {"tolerations": TOL, "affinity_terms": [[{"key": "cloud.google.com/gke-spot", "operator": "Exists"}]]},
     True),
])
def test_flavor_eligibility(fl, kw, ok):
    assert (mismatch(fl, **kw) is None) is ok


def test_flavor_tolerations_count_too():
    fl = flavor("spot", {"pool": "spot"}, taints=[{"key": "spot", "value": "true", "effect": "NoExecute"}],
                tolerations=[{"key": "spot", "operator": "Exists"}])
    assert mismatch(fl) is None


def test_prefer_no_schedule_taint_is_ignored():
    fl = flavor("soft", {"pool": "x"}, taints=[{"key": "k", "value": "v", "effect": "PreferNoSchedule"}])
    assert mismatch(fl) is None
