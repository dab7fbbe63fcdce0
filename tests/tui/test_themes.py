from pathlib import Path

import pytest
from textual.color import Color
from textual.theme import Theme

from kueuetop.tui import themes as T

VALID = """
name = "{name}"
dark = true
[ui]
primary = "#112233"
secondary = "#223344"
accent = "#334455"
foreground = "#eeeeee"
background = "#000000"
surface = "#111111"
panel = "#222222"
warning = "#ffaa00"
error = "#ff0000"
success = "#00ff00"
[heatmap]
scale = ["#000010", "#0000ff"]
idle = "#ff00ff"
[states]
pending = "#ffaa00"
admitted = "#00ff00"
evicted = "#ff0000"
inactive = "#888888"
finished = "#444444"
stale = "#666666"
"""


def _shipped() -> T.ThemeSet:
    return T.load_themes(user=Path("/nonexistent"))


def test_all_shipped_themes_valid():
    ts = _shipped()
    assert ts.problems == []
    assert {"dark", "light", "high-contrast", "mono"} <= set(ts.themes)
    for t in ts.themes.values():
        assert isinstance(t.textual, Theme)
        assert len(t.heatmap_scale) >= 2
        assert set(t.states) == set(T.STATES)
        assert t.source.endswith(f"{t.name}.toml")
        assert t.textual.variables["state-pending"] == t.states["pending"]


def test_default_is_dark_and_colour_scale_is_sequential_by_luminance():
    ts = _shipped()
    theme, notes = ts.get(None)
    assert theme.name == "dark" and notes == []
    # Colour-blind-safe scales are monotonic in lightness: check the shipped colour themes.
    for name in ("dark", "light", "high-contrast"):
        lum = [Color.parse(c).brightness for c in ts.themes[name].heatmap_scale]
        assert lum == sorted(lum), name


def test_mono_is_shaded_and_no_color_selects_it():
    ts = _shipped()
    assert ts.themes["mono"].shaded
    theme, _ = ts.get("light", no_color=True)
    assert theme.name == "mono"
    assert T.no_color({"NO_COLOR": "1"}) and not T.no_color({"NO_COLOR": ""}) and not T.no_color({})


def test_broken_user_theme_reports_file_field_problem_and_falls_back(tmp_path):
    bad = tmp_path / "broken.toml"
    bad.write_text(VALID.format(name="broken").replace('primary = "#112233"', 'primary = "not-a-colour"'))
    ts = T.load_themes(user=tmp_path)
    assert "broken" not in ts.themes
    assert len(ts.problems) == 1
    msg = ts.problems[0]
    assert str(bad) in msg and "ui.primary" in msg and "not-a-colour" in msg
    theme, notes = ts.get("broken")
    assert theme.name == "dark" and "not found" in notes[0]


@pytest.mark.parametrize("mutate, field", [
    (lambda s: s.replace('scale = ["#000010", "#0000ff"]', 'scale = ["#000010"]'), "heatmap.scale"),
    (lambda s: s.replace('stale = "#666666"\n', ""), "states.stale"),
    (lambda s: s.replace("dark = true", 'dark = "yes"'), "dark"),
    (lambda s: "bogus = 1\n" + s, "bogus"),
    (lambda s: s.replace("[ui]", "[ui]\nprimry = '#000000'"), "ui.primry"),
    (lambda s: s.replace("name = ", "name = [") + "]", "(file)"),  # not TOML
])
def test_each_bad_field_is_named(tmp_path, mutate, field):
    (tmp_path / "t.toml").write_text(mutate(VALID.format(name="t")))
    ts = T.load_themes(user=tmp_path)
    assert "t" not in ts.themes
    assert any(f": {field}:" in p for p in ts.problems), ts.problems


def test_user_theme_overrides_shipped_default(tmp_path):
    (tmp_path / "mine.toml").write_text(VALID.format(name="dark"))
    ts = T.load_themes(user=tmp_path)
    assert ts.problems == []
    theme, _ = ts.get(None)
    assert theme.textual.primary == "#112233"
    assert theme.source == str(tmp_path / "mine.toml")


def test_extends_overrides_only_given_fields(tmp_path):
    (tmp_path / "x.toml").write_text('name = "dark-pink"\nextends = "dark"\n[heatmap]\nidle = "#ff00aa"\n')
    ts = T.load_themes(user=tmp_path)
    t = ts.themes["dark-pink"]
    assert t.idle == "#FF00AA"
    assert t.heatmap_scale == ts.themes["dark"].heatmap_scale


def test_user_dir_from_xdg(tmp_path):
    assert T.user_dir({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "kueuetop" / "themes"
    # A relative XDG path is invalid per the spec and ignored.
    assert T.user_dir({"XDG_CONFIG_HOME": "rel"}).parts[-3:] == (".config", "kueuetop", "themes")


def test_missing_shipped_dir_still_gives_a_default(tmp_path):
    empty = tmp_path / "none"
    empty.mkdir()
    ts = T.load_themes(user=tmp_path / "nouser", shipped=empty)
    theme, _ = ts.get(None)
    assert theme.name == "dark"


def test_shipped_dir_found_as_package_data(tmp_path, monkeypatch):
    # An installed wheel has kueuetop/themes/*.toml; the loader must prefer it to a checkout path.
    pkg = tmp_path / "kueuetop"
    (pkg / "themes").mkdir(parents=True)
    (pkg / "themes" / "dark.toml").write_text(VALID.format(name="dark"))
    monkeypatch.setattr(T.resources, "files", lambda name: pkg)
    found = T.shipped_dir()
    assert found is not None and Path(str(found)) == pkg / "themes"
    assert T.load_themes(user=tmp_path / "nouser").themes["dark"].textual.primary == "#112233"
