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


# ---------------------------------------------------------------- readable charts (issue 19)
T0 = 1_767_225_600.0
ZEROS = {"NVIDIA-A100-SXM4-40GB": [(T0 + i * 5.0, 0) for i in range(10)], "NVIDIA-L4": [(T0 + i * 5.0, 0) for i in range(10)]}
QUEUE = ([(T0 + i * 15.0, i % 4) for i in range(21)], [(T0 + i * 15.0, 2) for i in range(21)])


def _lines(text):
    return text.plain.split("\n")


def _y_ticks(text):
    """The y axis labels: what stands left of the axis ticks (┤ / +)."""
    return [line.split("┤")[0].strip() for line in _lines(text) if "┤" in line]


def _x_labels(text):
    axis = next(i for i, line in enumerate(_lines(text)) if line.lstrip().startswith("└"))
    return _lines(text)[axis + 1].split()


def test_all_zero_counts_start_at_zero_with_whole_ticks_not_minus_one_to_one():
    for width in (80, 160):
        t = gpus_by_model(ZEROS, width, 14, theme=load_themes().themes["dark"])
        ticks = _y_ticks(t)
        assert ticks == ["1", "0"], ticks
        assert not any("-" in x or "." in x for x in ticks)


def test_count_axis_whole_numbers_from_zero_and_time_axis_before_now():
    for width in (80, 160):
        t = queue_workloads(*QUEUE, "cq-team-a-hp", width, 14)
        ticks = [int(x) for x in _y_ticks(t)]
        assert ticks[-1] == 0 and ticks == sorted(ticks, reverse=True) and ticks[0] >= 3
        labels = _x_labels(t)
        assert labels[-1] == "now" and labels[0] == "-5m", labels
        assert all(x == "now" or (x.startswith("-") and x[-1] in "smhd") for x in labels)
        assert not any("." in x for x in labels)  # never raw (fractional) seconds
    wide, narrow = (len(_x_labels(queue_workloads(*QUEUE, "q", w, 14))) for w in (160, 80))
    assert wide > narrow >= 2  # more ticks where there is room


def test_percent_axis_is_zero_to_hundred():
    t = line_chart({"util": [(T0, 12.0), (T0 + 60, 30.0)]}, 80, 14, title="GPU util", y_kind="percent")
    assert _y_ticks(t) == ["100%", "75%", "50%", "25%", "0%"]


def test_legend_under_the_plot_not_over_the_data_and_caption_never_cut():
    long_cq = "cq-" + "very-long-team-name-" * 5 + "hp"
    for width in (80, 160):
        t = queue_workloads(*QUEUE, long_cq, width, 16, theme=load_themes().themes["dark"])
        lines = _lines(t)
        assert len(lines) == 16 and max(len(x) for x in lines) <= width
        top = next(i for i, line in enumerate(lines) if "┌" in line)
        bottom = max(i for i, line in enumerate(lines) if line.lstrip().startswith("└"))
        outside = "\n".join(lines[:top] + lines[bottom + 2:])
        assert "pending" in outside and "admitted" in outside
        plot = "\n".join(lines[top:bottom + 1])
        assert "pending" not in plot and "admitted" not in plot  # no legend box over the data
        caption = "".join("".join(x.split()) for x in lines[:next(i for i, x in enumerate(lines) if "┌" in x)])
        assert f"cq/{long_cq}(workloads)" in caption, caption  # wrapped onto lines, whole
        assert "…" not in caption
    # At 160 columns the plot uses the width it is given (not a terminal's 80).
    assert max(len(x) for x in _lines(queue_workloads(*QUEUE, "q", 160, 14))) > 150


def test_legend_without_colour_names_each_series_marker_outside_the_plot():
    t = gpus_by_model(HISTORY, 80, 14, glyphs=ASCII)
    outside = [line for line in _lines(t) if line.lstrip()[:1] not in ("+", "|") and "|" not in line]
    assert any("* A100" in line and "o L4" in line for line in outside), _lines(t)


def test_cramped_region_keeps_the_whole_name_and_drops_the_unit_first():
    t = queue_workloads(*QUEUE, "cq-team-a-compact", 26, 8)
    text = t.plain
    assert "cq/cq-team-a-compact" in text and "(workloads)" not in text and "too small" not in text
    assert "pending" in text and "admitted" in text
    small = queue_workloads(*QUEUE, "cq-team-a-compact", 26, 4)
    assert "cq/cq-team-a-compact:" in small.plain.replace("\n", " ") and "…" not in small.plain
