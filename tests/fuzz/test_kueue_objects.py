"""API objects (kueuetop.kueue.parse.parse_object), v1beta1 and v1beta2: real objects of every
kind the console reads, from a simulated cluster, with fields of the wrong type, missing,
huge, or full of control characters. Each parses or raises KueueParseError naming the object
and the field; nothing else escapes (the sim's controllers and the informers catch only that)."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given

from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.parse import parse_object

from .seeds import kueue_objects_v1beta1, objects_v1beta2
from .strategies import FUZZ, mutated_tree

# Kueue's objects as v1beta1 clients read them, and every kind as v1beta2 clients do.
SEEDS = list(kueue_objects_v1beta1()) + list(objects_v1beta2())

_CQ_V1BETA1 = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue", "metadata": {"name": "cq"},
               "spec": {"namespaceSelector": {}, "resourceGroups": []}}


@FUZZ
@given(mutated_tree(SEEDS))
# Found by this fuzz: the v1beta1 → v1beta2 conversion hashed whatever it found.
@example({**_CQ_V1BETA1, "spec": {**_CQ_V1BETA1["spec"], "flavorFungibility": {"whenCanBorrow": []}}})
@example({**_CQ_V1BETA1, "spec": {**_CQ_V1BETA1["spec"], "admissionChecks": [["a"]]}})
@example({**_CQ_V1BETA1, "spec": {**_CQ_V1BETA1["spec"], "admissionChecks": ["a"], "admissionChecksStrategy": 5}})
# An empty kind: once an error naming no object ("": kind: unsupported kind  in v1).
@example({"apiVersion": "v1", "kind": "", "metadata": {"name": "x"}})
def test_objects_parse_or_name_the_bad_field(obj: Any) -> None:
    try:
        parse_object(obj)
    except KueueParseError as exc:
        assert exc.obj and str(exc).startswith(exc.obj), repr(exc)
