"""Shared fuzz settings and cheap strategies: junk values, control characters, mutated JSON
trees (real objects with wrong types, missing keys, huge numbers, control characters) and
mutated text."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from kueuetop.kueue.json_copy import clone

# 10,000 inputs a run per parser; no example database (each run explores afresh), no deadline
# (a loaded machine is not a slow parser).
FUZZ = settings(max_examples=10_000, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example, HealthCheck.filter_too_much])

# What a hostile string puts in front of a terminal: CSI, OSC, DCS, bells, C0 and C1 controls, and
# the bidi override that makes text read backwards; then every other C0 and C1 control character.
_CONTROL_POOL = [
    "\x1b[31m", "\x1b[0m", "\x1b[2J", "\x1b[H", "\x1b]0;pwned\x07", "\x1b]8;;http://x\x1b\\", "\x1bP+q\x1b\\",
    "\x1b", "\x1bc", "\x9b31m", "\x9d0;x\x9c", "\r\n", "\u2028", "\u202e", "\ufeff",
    *map(chr, range(0x20)), "\x7f", *map(chr, range(0x80, 0xA0)),
]
CONTROLS = st.sampled_from(_CONTROL_POOL)

_NASTY_POOL = [
    "", " ", "-", "/", "a/b/c", "0", "-1", "1e400", "NaN", "Infinity", "-inf", "1.5", "9" * 40, "1Ki", "1ki",
    "1e31", "0x10", "+", ".", "1..2", "true", "null", "None", "[]", "{}", "2026-13-45T99:99:99Z", "1h30m", "-5m",
    "kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2", "v1", "Workload", "ClusterQueue", "ä" * 3, "\U0001f600",
    "x" * 300, "9" * 5000, "[bold]x[/bold]", "[/]", "%s%n", "${HOME}", "\\", '"', "'", "a\u0000b", "é",
]
NASTY_STRINGS = st.sampled_from(_NASTY_POOL) | st.text(max_size=12)

_HUGE_POOL = [
    10**30, -(10**30), 2**63, 2**63 - 1, -(2**63), -(2**63) - 1, 2**64, 10**400, -1, 0, 1e308, -1e308,
    math.inf, -math.inf, math.nan, 5e-324, "1e30", "-1e30", "99999999999999999999Ei", "1" * 60, "-1",
    "0.000000001n", "1e-40",
]
HUGE = st.sampled_from(_HUGE_POOL)

# Junk of every JSON type, from a pool: one cheap draw each (a one_of of strategies costs several).
_JUNK_POOL: list[Any] = [
    None, True, False, 0, 1, -1, 7, 255, 65536, 0.5, -0.0, 1e-9, *_HUGE_POOL, *_NASTY_POOL, *_CONTROL_POOL[:15],
    [], {}, [None], [1, 2], ["a", 1], [[]], {"": 1}, {"a": None}, {"name": 5}, [{"name": []}], {"x": {"y": [1]}},
]
JUNK: st.SearchStrategy[Any] = st.sampled_from(_JUNK_POOL).map(clone)

# Strategies built once: building one inside a draw costs more than the draw.
WORD = st.integers(0, 2**32 - 1)  # one draw, cut into an index and an operation
_COUNTS = {n: st.integers(1, n) for n in range(1, 9)}
_SHORT_TEXT = st.text(max_size=6)
_STRUCTURE = st.sampled_from(['"', "'", "\\", "{", "}", "[", "]", ":", "=", ",", "#", "\n", " ", "---\n", "- ",
                              "&a ", "*a", "!!python/none", "\t",
                              "9" * 5000, "1e308", "-1e308", "0x1p1023", "NaN", "+Inf", ' # {a="b"} 1', "[" * 3000])


def pick(draw: st.DrawFn, n: int) -> int:
    """An index below n (n > 0)."""
    return draw(WORD) % n


def insert_controls(draw: st.DrawFn, text: str) -> str:
    """`text` with a control character or escape sequence inserted somewhere."""
    w = draw(WORD)
    i = w % (len(text) + 1)
    return text[:i] + _CONTROL_POOL[(w >> 16) % len(_CONTROL_POOL)] + text[i:]


def slots(tree: Any) -> list[tuple[Any, Any]]:
    """(container, key-or-index) of every value inside a JSON tree."""
    out: list[tuple[Any, Any]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            out.append((node, k))
            if isinstance(v, (dict, list)):
                stack.append(v)
    return out


def mutate_tree(draw: st.DrawFn, tree: Any, max_mutations: int = 4) -> Any:
    """`tree` (changed in place) with 1..max_mutations of its values replaced by junk, a huge
    number, control characters, the wrong container type, or removed; or an unknown field added."""
    for _ in range(draw(_COUNTS[max_mutations])):
        places = slots(tree)
        if not places:
            break
        w = draw(WORD)
        container, key = places[w % len(places)]
        value = container[key]
        op = (w >> 20) % 10
        if op <= 2:
            container[key] = draw(JUNK)
        elif op == 3:
            del container[key]
        elif op <= 5:
            container[key] = insert_controls(draw, value if isinstance(value, str) else str(value))
        elif op == 6:
            container[key] = draw(HUGE)
        elif op == 7:  # the wrong container type
            container[key] = (list(value.values()) if isinstance(value, dict) else
                              {str(i): v for i, v in enumerate(value)} if isinstance(value, list) else [value])
        elif op == 8 and isinstance(container, dict):
            container[draw(NASTY_STRINGS)] = draw(JUNK)
        elif isinstance(container, list):  # the same value twice
            container.append(clone(value))
        else:  # a sibling's value in its place
            siblings = list(container.values())
            container[key] = clone(siblings[(w >> 8) % len(siblings)])
    return tree


@st.composite
def mutated_tree(draw: st.DrawFn, seeds: list[Any], max_mutations: int = 4) -> Any:
    """A mutated copy of one of `seeds` (see mutate_tree)."""
    return mutate_tree(draw, clone(seeds[pick(draw, len(seeds))]), max_mutations)


def mutate_text(draw: st.DrawFn, text: str, max_mutations: int = 4) -> str:
    """`text` with characters inserted (controls, junk, structure), ranges deleted or duplicated,
    or cut short."""
    for _ in range(draw(_COUNTS[max_mutations])):
        w = draw(WORD)
        i = w % (len(text) + 1)
        j = min(len(text), i + (w >> 16) % 40)
        op = (w >> 24) % 6
        if op == 0:
            text = text[:i] + _CONTROL_POOL[(w >> 8) % len(_CONTROL_POOL)] + text[i:]
        elif op == 1:
            text = text[:i] + draw(_SHORT_TEXT) + text[i:]
        elif op == 2:
            text = text[:i] + draw(_STRUCTURE) + text[i:]
        elif op == 3:
            text = text[:i] + text[j:]
        elif op == 4:
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    return text


@st.composite
def mutated_text(draw: st.DrawFn, seeds: list[str], max_mutations: int = 4) -> str:
    """A mutated copy of one of `seeds` (see mutate_text)."""
    return mutate_text(draw, seeds[pick(draw, len(seeds))], max_mutations)


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(message: str) -> bool:
    """A message fit for one line of a terminal: not empty, no control characters at all."""
    return bool(message.strip()) and not _CONTROL_CHARS.search(message)


def as_json(tree: Any) -> str:
    """JSON (hence YAML) text of a tree; NaN and infinities as YAML spells them."""
    return json.dumps(tree, allow_nan=True).replace("-Infinity", "-.inf").replace("Infinity", ".inf").replace(
        "NaN", ".nan")


def _toml_value(v: Any) -> str | None:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # JSON's escapes are TOML's
    if isinstance(v, list):
        items = [t for t in map(_toml_value, v) if t is not None]
        return "[" + ", ".join(items) + "]"
    if isinstance(v, dict):
        items = [f"{json.dumps(str(k))} = {t}" for k, t in ((k, _toml_value(x)) for k, x in v.items()) if t is not None]
        return "{" + ", ".join(items) + "}"
    return None  # TOML has no null: the key is left out


def as_toml(doc: Any) -> str:
    """TOML text of a tree: top-level scalars, then a [table] per top-level mapping."""
    if not isinstance(doc, dict):
        return f"value = {_toml_value(doc)}\n"
    lines = [f"{json.dumps(str(k))} = {t}" for k, v in doc.items() if not isinstance(v, dict)
             and (t := _toml_value(v)) is not None]
    for k, v in doc.items():
        if isinstance(v, dict):
            lines.append(f"[{json.dumps(str(k))}]")
            lines += [f"{json.dumps(str(k2))} = {t}" for k2, v2 in v.items() if (t := _toml_value(v2)) is not None]
    return "\n".join(lines) + "\n"
