"""What reaches the screen: every cluster string goes through kueuetop.views.safe_text.clean, and
a Workload row (kueuetop.tui.views.workloads.workload_row, cells from kueuetop.views.rows.cell) is
drawn from whatever a Workload holds. Neither ever carries a C0 or C1 control character, hence
no escape sequence (each needs ESC or a C1 introducer)."""

from __future__ import annotations

import re
import time
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

from kueuetop.kueue.errors import KueueParseError, QuantityError
from kueuetop.kueue.json_copy import clone
from kueuetop.kueue.parse import parse_object
from kueuetop.kueue.quantity import parse_quantity
from kueuetop.kueue.workload import Workload
from kueuetop.store import Store
from kueuetop.tui.context import ViewContext
from kueuetop.tui.glyphs import ASCII
from kueuetop.tui.themes import load_themes
from kueuetop.tui.views.workloads import workload_row
from kueuetop.views.safe_text import clean

from .seeds import workloads_v1beta2
from .strategies import FUZZ, insert_controls, mutate_tree, mutated_text, pick, slots

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Cluster strings with escape sequences, cut short or spliced by the mutations; and any text.
SEEDS_TEXT = ["\x1b[31mRED\x1b[0m", "\x1b]0;pwned\x07 team-a", "Pending\x1b[2J", "plain text", "[bold]x[/bold]",
              "quota 8/16 nvidia.com/gpu", "a\tb", "é\u202e", ""]
TEXTS = mutated_text(SEEDS_TEXT, max_mutations=6) | st.text(max_size=24)


@FUZZ
@given(TEXTS, st.none() | st.integers(1, 40))
@example("\x1b]0;title\x07x\x1b[2J\x9b1m\x85", None)
@example("\x1b[31", 3)  # cut inside a sequence
def test_clean_leaves_no_control_character(text: str, limit: int | None) -> None:
    out = clean(text) if limit is None else clean(text, limit)
    assert not CONTROL.search(out), repr(out)
    cap = 4096 if limit is None else limit
    assert len(out) <= cap + 1  # "…" marks a cut
    if text.isprintable() and len(text) <= cap:
        assert out == text  # nothing to remove: untouched
    if len(out) <= cap:
        assert clean(out, cap) == out


SEEDS = list(workloads_v1beta2())
CTX = ViewContext(Store(), load_themes().themes["dark"], ASCII)


# Strings a Workload may hold anything in, as far as parsing goes (names, reasons, messages,
# label and annotation values, flavor names): where hostile text reaches the row. Timestamps,
# quantities and enums with control characters are parse errors, tested in test_kueue_objects.
FREE_TEXT = frozenset({"name", "namespace", "queueName", "clusterQueue", "reason", "message", "cpu", "memory"})


def _free_text(c: Any, k: Any) -> bool:
    """A string under a free-text key, or a label, annotation or flavor (a key with "/" or a
    resource name), that is not itself a quantity."""
    if not (isinstance(k, str) and isinstance(c[k], str) and (k in FREE_TEXT or "/" in k)):
        return False
    try:
        parse_quantity(c[k])
    except QuantityError:
        return True
    return False


@st.composite
def hostile_workloads(draw: st.DrawFn) -> dict:
    """A real Workload with control characters in its free-text strings, then sometimes mutated
    at random as well."""
    wl = clone(SEEDS[pick(draw, len(SEEDS))])
    strings = [(c, k) for c, k in slots(wl) if _free_text(c, k)]
    for _ in range(draw(st.integers(1, 4))):
        c, k = strings[pick(draw, len(strings))]
        c[k] = insert_controls(draw, c[k])
    return mutate_tree(draw, wl, max_mutations=2) if pick(draw, 4) == 0 else wl


@FUZZ
@given(hostile_workloads())
def test_a_workload_row_shows_no_control_character(raw: dict) -> None:
    try:
        wl = parse_object(raw)
    except KueueParseError:
        return  # the informer keeps such an object out of the views
    if not isinstance(wl, Workload):
        return  # its kind was mutated
    row = workload_row(CTX, (wl.namespace, wl.name), wl, time.time())
    for c in row.cells:
        assert not CONTROL.search(c.plain), (c.plain, raw)
