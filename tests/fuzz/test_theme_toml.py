"""Theme files (kueuetop.tui.themes.load_themes): the shipped themes, as TOML text with characters
inserted, cut or repeated, and as documents with mutated fields. A bad user theme is a problem
line naming its file, the other themes still load, and nothing escapes (the console starts with
the default theme and says why)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from kueuetop.kueue.json_copy import clone
from kueuetop.tui.themes import DEFAULT, load_themes

from .strategies import FUZZ, as_toml, mutate_text, mutate_tree, one_line, pick

THEMES = Path(__file__).resolve().parents[2] / "themes"
TEXTS = [p.read_text(encoding="utf-8") for p in sorted(THEMES.glob("*.toml"))]
DOCS = [tomllib.loads(t) for t in TEXTS]


@st.composite
def theme_files(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return mutate_text(draw, TEXTS[pick(draw, len(TEXTS))])
    doc = mutate_tree(draw, clone(DOCS[pick(draw, len(DOCS))]))
    if draw(st.booleans()):
        doc["extends"] = draw(st.sampled_from(["dark", "light", "nope", "fuzz", ""]))
    return as_toml(doc)


@pytest.fixture(scope="module")
def dirs(scratch: Path) -> tuple[Path, Path]:
    shipped, user = scratch / "shipped", scratch / "user"
    shipped.mkdir()
    user.mkdir()
    (shipped / "dark.toml").write_text(TEXTS[[d["name"] for d in DOCS].index(DEFAULT)], encoding="utf-8")
    return shipped, user


@FUZZ
@given(text=theme_files())
@example(text='name = "x"\nvalue = ' + "9" * 5000)  # once a ValueError from tomllib: not a TOMLDecodeError
@example(text="name = " + "[" * 3000)
@example(text='name = "x"\nscale = ["#440154"\r, "#FDE725"]')  # a lone CR: a line break to the loader
@example(text='name = "x"\n"\\u001b[2J\\n" = 1')  # once a problem line with the raw field name
def test_theme_files_load_or_are_reported(dirs: tuple[Path, Path], text: str) -> None:
    shipped, user = dirs
    (user / "fuzz.toml").write_text(text, encoding="utf-8", errors="surrogatepass")
    themes = load_themes(user=user, shipped=shipped)
    assert DEFAULT in themes.themes
    assert all(isinstance(p, str) and one_line(p) and "fuzz.toml" in p for p in themes.problems), themes.problems
    if not themes.problems:  # nothing said: then the theme the file names is there (the file
        # read back as the loader reads it: text mode, so a lone CR is a line break)
        written = (user / "fuzz.toml").read_text(encoding="utf-8", errors="surrogatepass")
        assert tomllib.loads(written)["name"] in themes.themes
