"""Scenario YAML (kueuetop.sim.scenarios.scenario.parse_scenario): documents of the shipped scenarios, as
text with characters inserted, cut or repeated, and as objects with mutated fields. Each loads
or raises ScenarioError naming the file; nothing else escapes (`kueuetop sim run` turns that
into its one-line error)."""

from __future__ import annotations

import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from kueuetop.kueue.json_copy import clone
from kueuetop.sim.scenarios.scenario import ScenarioError, parse_scenario

from .seeds import scenario_documents
from .strategies import FUZZ, WORD, as_json, mutate_text, mutate_tree

TEXTS = list(scenario_documents())
TREES = [d for d in (yaml.safe_load(t) for t in TEXTS) if isinstance(d, dict)]


@st.composite
def scenario_files(draw: st.DrawFn) -> str:
    docs = []
    for _ in range(draw(st.integers(1, 3))):
        w = draw(WORD)
        if w % 2:
            docs.append(mutate_text(draw, TEXTS[(w >> 1) % len(TEXTS)]))
        else:  # JSON is YAML: the mutated object on one line
            docs.append(as_json(mutate_tree(draw, clone(TREES[(w >> 1) % len(TREES)]))))
    return "\n---\n".join(docs)


@FUZZ
@given(scenario_files())
# Found by this fuzz: scalars PyYAML resolves but Python cannot build escaped as ValueError.
@example("apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\nx: " + "9" * 5000)
@example("apiVersion: v1\nkind: Namespace\nmetadata: {name: a, creationTimestamp: 2026-13-45}")
def test_scenario_text_loads_or_names_the_file(text: str) -> None:
    try:
        parse_scenario(text, "fuzz.yaml")
    except ScenarioError as exc:
        assert str(exc).startswith("fuzz.yaml"), str(exc)
