"""The keymap in config.toml (kueuetop.tui.keymap.load_keymap_file): `[keys]` tables with every
action id, valid and broken keys, as TOML text with characters inserted, cut or repeated, and as
documents with mutated fields. Bad entries are problem lines, the defaults stay for them, the
result never binds one key twice where both could fire, and nothing escapes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kueuetop.kueue.json_copy import clone
from kueuetop.tui.keymap import ACTIONS, clashes, load_keymap_file

from .strategies import FUZZ, as_toml, mutate_text, mutate_tree, one_line, pick

KEYS = ["ctrl+d", "Ctrl-D", "?", "esc", "shift+n", "alt+x", "f5", "space", "enter", "j", "J", "/", "ctrl+alt+k",
        "hyper+q", "", "  ", "ctrl+", "+", "-", "question_mark", "pageup", "ctrl+shift+tab"]
IDS = [a.id for a in ACTIONS]
# A few remaps a file (some of them clash, which the loader undoes one by one).
DOCS = [{"keys": {IDS[(i * 5 + j * 11) % len(IDS)]: KEYS[(i + j * 3) % len(KEYS)] if j % 2 else
                  [KEYS[(i * 2 + j) % len(KEYS)], KEYS[(i + 5) % len(KEYS)]] for j in range(3)}} for i in range(12)]
TEXTS = [as_toml(d) for d in DOCS] + ['[keys]\nquit = "ctrl+x"\nhelp = ["f1", "?"]\n', "theme = \"dark\"\n"]


@st.composite
def config_files(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return mutate_text(draw, TEXTS[pick(draw, len(TEXTS))])
    return as_toml(mutate_tree(draw, clone(DOCS[pick(draw, len(DOCS))])))


@pytest.fixture(scope="module")
def path(scratch: Path) -> Path:
    (scratch / "config").mkdir()
    return scratch / "config" / "config.toml"


@FUZZ
@given(text=config_files())
@example(text="[keys]\nquit = " + "9" * 5000)  # once a ValueError from tomllib: not a TOMLDecodeError
@example(text="[keys]\nquit = " + "[" * 3000)
@example(text='[keys]\n"\\u001b[2J\\n" = "q"')  # once a problem line with the raw id: ESC, newline
def test_keymaps_load_or_are_reported(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    km = load_keymap_file(path)
    assert set(km.keys) == set(IDS) and all(km.keys[i] for i in IDS)
    assert clashes(km.keys) == []
    assert all(isinstance(p, str) and one_line(p) and p.startswith(str(path)) for p in km.problems), km.problems
