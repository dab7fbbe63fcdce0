import pytest

from kueuetop.tui.glyphs import ASCII, UNICODE
from kueuetop.tui.quota_bar import quota_bar
from kueuetop.tui.themes import load_themes


@pytest.mark.parametrize("kw, uni, asc", [
    (dict(nominal=8, usage=6), "████████████···· 6/8", "############.... 6/8"),
    (dict(nominal=8, usage=6, reserved=7), "████████████▓▓·· 6/8", "############==.. 6/8"),
    (dict(nominal=8, usage=10, borrowing_limit=4), "████████▒▒ ┃ 10/8 +2", "########++ ] 10/8 +2"),
    (dict(nominal=8, usage=4, lending_limit=2, borrowing_limit=8), "████·┆··       ┃ 4/8",
     "####.|..       ] 4/8"),
    (dict(nominal=8, usage=11), "█████████▒▒▒ 11/8 +3", "#########+++ 11/8 +3"),
    (dict(nominal=0, usage=0), "················ 0/0", "................ 0/0"),
])
def test_exact_bars(kw, uni, asc):
    assert quota_bar(width=20, glyphs=UNICODE, **kw).plain == uni
    assert quota_bar(width=20, glyphs=ASCII, **kw).plain == asc


def test_fits_width_and_drops_numbers_when_narrow():
    for w in range(1, 40):
        assert len(quota_bar(8, 10, w, borrowing_limit=4).plain) == w
    assert quota_bar(8, 6, 5).plain == "████·"
    assert quota_bar(8, 6, 0).plain == ""


def test_fractional_amounts_and_custom_format():
    assert quota_bar(1.5, 0.75, 14, glyphs=ASCII).plain == "##... 0.75/1.5"
    assert quota_bar(64, 32, 14, glyphs=ASCII, fmt=lambda v: f"{v:g}Gi").plain == "##.. 32Gi/64Gi"


def test_borrowed_part_is_coloured_with_warning():
    theme = load_themes().themes["dark"]
    t = quota_bar(8, 10, 20, borrowing_limit=4, theme=theme)
    i = t.plain.index("▒")
    styles = [s.style for s in t.spans if s.start <= i < s.end]
    assert styles and styles[0].color.name.lower() == theme.textual.warning.lower()
