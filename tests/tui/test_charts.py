from kueuetop.tui.charts import gpus_by_model, line_chart, queue_workloads
from kueuetop.tui.glyphs import ASCII
from kueuetop.tui.themes import load_themes

HISTORY = {"A100": [(i * 60.0, 8 + i % 3) for i in range(30)], "L4": [(i * 60.0, 16 - i % 5) for i in range(30)]}


def _size(text):
    lines = text.plain.split("\n")
    return len(lines), max(len(x) for x in lines)


def test_chart_has_the_requested_size_and_content():
    t = gpus_by_model(HISTORY, 70, 14, theme=load_themes().themes["dark"])
    assert _size(t) == (14, 70)
    assert "A100" in t.plain and "L4" in t.plain and "GPUs by model" in t.plain
    assert any(ch in t.plain for ch in "▀▄▌▐▖▗▘▝▚▞")  # data drawn, not just axes
    assert "\x1b" not in t.plain


def test_small_region_and_ascii():
    t = queue_workloads([(0, 1), (60, 3)], [(0, 2), (60, 2)], "team-a\x1b[2J", 40, 8, glyphs=ASCII)
    assert _size(t)[0] == 8 and _size(t)[1] <= 40
    assert t.plain.isascii() and "\x1b" not in t.plain and "cq/team-a" in t.plain


def test_empty_and_too_small():
    t = line_chart({}, 30, 5, title="GPUs")
    assert t.plain.split("\n")[2].strip() == "GPUs: no data" and len(t.plain.split("\n")) == 5
    t = line_chart({"x": [(0, float("nan"))]}, 30, 5)
    assert "no data" in t.plain
    assert "too small" in line_chart(HISTORY, 10, 3).plain
