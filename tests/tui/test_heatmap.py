import re
from pathlib import Path

import pytest
from rich.console import Console
from rich.style import Style

from kueuetop.kueue.gpu import GpuSample
from kueuetop.tui import heatmap as H
from kueuetop.tui.glyphs import ASCII, UNICODE
from kueuetop.tui.themes import load_themes

THEMES = load_themes(user=Path("/nonexistent")).themes
DARK = THEMES["dark"]
BLOCKS = re.compile("[\u2580-\u259f\u2500-\u257f]")


def gpu(node, i, util=50.0, **kw):
    return GpuSample(node=node, gpu=str(i), util=util, **kw)


def style_at(text, index):
    """The style Rich applies at one character (spans merged)."""
    st = Style()
    for sp in text.spans:
        if sp.start <= index < sp.end:
            st += sp.style
    return st


def test_cell_colours_follow_the_scale():
    samples = [gpu("n1", 0, 0.0), gpu("n1", 1, 100.0)]
    hm = H.fleet_heatmap(samples, 20, 5, theme=DARK)
    line1 = hm.text.plain.split("\n")[1]
    assert line1 == "▀▀"
    start = hm.text.plain.index("▀▀")
    assert style_at(hm.text, start).color.name.lower() == DARK.heatmap_scale[0].lower()
    assert style_at(hm.text, start + 1).color.name.lower() == DARK.heatmap_scale[-1].lower()
    assert H.level_colour(DARK, 0.0).lower() == DARK.heatmap_scale[0].lower()


def test_half_block_packs_two_rows_per_line():
    # Two 2-GPU nodes, width 2: one node per pixel row → node 0 on top (fg), node 1 below (bg).
    samples = [gpu("a", 0, 0.0), gpu("a", 1, 0.0), gpu("b", 0, 100.0), gpu("b", 1, 100.0)]
    hm = H.fleet_heatmap(samples, 2, 5, theme=DARK)
    assert hm.rows_per_line == 2 and hm.gpus_per_cell == 1
    lines = hm.text.plain.split("\n")
    assert lines[1] == "▀▀" and len(lines) == 3  # header, one pixel line, legend
    st = style_at(hm.text, hm.text.plain.index("▀▀"))
    assert st.color.name.lower() == DARK.heatmap_scale[0].lower()
    assert st.bgcolor.name.lower() == DARK.heatmap_scale[-1].lower()
    assert hm.gpus_at(0, 1) == (("a", "0"), ("b", "0"))


def test_nodes_separated_by_a_gap_when_everything_fits():
    samples = [gpu(f"n{n}", g) for n in range(3) for g in range(4)]
    hm = H.fleet_heatmap(samples, 40, 6, theme=DARK)
    assert hm.text.plain.split("\n")[1] == "▀▀▀▀ ▀▀▀▀ ▀▀▀▀"


def test_aggregates_when_the_fleet_does_not_fit_and_says_how():
    samples = [gpu(f"n{n:03d}", g, util=float(g * 10)) for n in range(200) for g in range(8)]
    for agg in ("mean", "max"):
        hm = H.fleet_heatmap(samples, 40, 10, theme=DARK, aggregate=agg)
        assert hm.gpus_per_cell > 1
        lines = hm.text.plain.split("\n")
        assert len(lines) <= 10 and all(len(x) <= 40 for x in lines)
        assert f"{hm.gpus_per_cell} GPUs/cell {agg}" in lines[-1]  # terse legend at 40 columns
        wide = H.fleet_heatmap(samples, 100, 10, theme=DARK, aggregate=agg)
        assert f"1 cell = {wide.gpus_per_cell} GPUs ({agg})" in wide.text.plain.split("\n")[-1]
        assert not hm.clipped
    # 8 GPUs per cell = one node per cell: mean of 0..70 = 35 %, max = 70 %.
    mean = H.fleet_heatmap(samples, 40, 7, theme=DARK, glyphs=ASCII, aggregate="mean")
    mx = H.fleet_heatmap(samples, 40, 7, theme=DARK, glyphs=ASCII, aggregate="max")
    assert mean.gpus_per_cell == mx.gpus_per_cell == 8
    i = mean.text.plain.split("\n", 1)[0].__len__() + 1
    assert style_at(mean.text, i).color.name.lower() == H.level_colour(DARK, 0.35).lower()
    assert style_at(mx.text, i).color.name.lower() == H.level_colour(DARK, 0.70).lower()


def test_idle_and_stale_are_marked_never_zero():
    samples = [gpu("n", 0, 1.0, pod="train-0"),  # allocated, idle
               gpu("n", 1, 1.0),  # not allocated: just low
               gpu("n", 2, None),  # N/A
               gpu("n", 3, 80.0, stale=True)]  # stale
    hm = H.fleet_heatmap(samples, 60, 6, theme=DARK, glyphs=ASCII)
    assert hm.text.plain.split("\n")[1] == "!.??"
    colours = [style_at(hm.text, hm.text.plain.index("!.??") + k).color.name.lower() for k in range(4)]
    assert colours[0] == DARK.idle.lower()
    assert colours[1] == DARK.heatmap_scale[0].lower()
    assert colours[2] == colours[3] == DARK.states["stale"].lower()
    header = hm.text.plain.split("\n")[0]
    assert "1 idle" in header and "2 stale" in header
    uni = H.fleet_heatmap(samples, 20, 6, theme=DARK, glyphs=UNICODE)
    first = uni.text.plain.index("▀")
    assert style_at(uni.text, first + 2).color.name.lower() == DARK.states["stale"].lower()


def test_legend_names_metric_range_idle_stale():
    hm = H.fleet_heatmap([gpu("n", 0, temp_c=60.0)], 120, 4, theme=DARK, metric="temp")
    legend = hm.text.plain.split("\n")[-1]
    assert legend.startswith("GPU temp 30°C") and "90°C" in legend
    assert "idle" in legend and "stale" in legend and "1 cell = 1 GPU" in legend


def test_ascii_mode_has_no_block_or_box_glyphs():
    samples = [gpu(f"n{n}", g, util=g * 12.0, pod="p") for n in range(50) for g in range(8)]
    for w, h in ((80, 20), (30, 6)):
        hm = H.fleet_heatmap(samples, w, h, theme=DARK, glyphs=ASCII)
        assert not BLOCKS.search(hm.text.plain)
        assert hm.text.plain.isascii(), hm.text.plain
    dist = H.distribution_heatmap([(0.0, [1, 2, 3]), (60.0, [0, 0, 5])], 40, 8, theme=DARK, glyphs=ASCII)
    assert not BLOCKS.search(dist.plain)


def test_mono_theme_carries_values_in_glyphs():
    hm = H.fleet_heatmap([gpu("n", 0, 0.0), gpu("n", 1, 100.0)], 20, 4, theme=THEMES["mono"])
    assert hm.text.plain.split("\n")[1] == UNICODE.shades[0] + UNICODE.shades[-1]


def test_malicious_names_render_inert():
    evil_node = "node-1\x1b]52;c;ZXZpbA==\x07\x1b[2J"
    evil_pool = "[bold red]pool\x1b[31m\x9b"
    hm = H.fleet_heatmap([gpu(evil_node, 0)], 60, 5, theme=DARK, pool_of={evil_node: evil_pool})
    plain = hm.text.plain
    assert "\x1b" not in plain and "\x07" not in plain and "\x9b" not in plain
    out = Console(width=80, color_system="truecolor", force_terminal=True, record=True)
    with out.capture() as cap:
        out.print(hm.text)
    rendered = cap.get()
    assert "]52;" not in rendered and "\x1b[2J" not in rendered
    assert "[bold red]pool" in plain  # shown literally, not parsed as markup


def test_deterministic():
    samples = [gpu(f"n{n}", g, util=(n * 7 + g * 13) % 100) for n in range(300) for g in range(8)]
    a = H.fleet_heatmap(samples, 100, 30, theme=DARK)
    b = H.fleet_heatmap(list(reversed(samples)), 100, 30, theme=DARK)
    assert a.text.plain == b.text.plain and a.text.spans == b.text.spans


def test_tiny_window_clips_and_says_so():
    samples = [gpu(f"n{n}", 0) for n in range(10)]
    pools = {f"n{n}": f"p{n}" for n in range(10)}
    hm = H.fleet_heatmap(samples, 10, 4, theme=DARK, pool_of=pools)
    assert hm.clipped and len(hm.text.plain.split("\n")) <= 4


def test_distribution_over_time():
    counts, na = H.bucketize([0.0, 5.0, 55.0, 100.0, None, float("nan")], buckets=10)
    assert counts == [2, 0, 0, 0, 0, 1, 0, 0, 0, 1] and na == 2
    frames = [(t * 60.0, counts) for t in range(10)] + [(600.0, [0] * 10)]
    text = H.distribution_heatmap(frames, 30, 8, theme=DARK, glyphs=ASCII)
    lines = text.plain.split("\n")
    # The caption is wrapped over the last lines, never cut; the plot gives up the lines it takes.
    assert len(lines) == 8 and max(len(x) for x in lines) <= 30
    assert " ".join(lines[-2:]) == "GPU util: colour = GPUs per bucket (max 2); ? = no samples"
    plot = lines[:-3]
    # 10 buckets on 5 plot lines: neighbours merged (never dropped) into 5 rows of 20 %.
    assert len(plot) == 5 and plot[0].startswith("100%") and plot[-1].startswith("  0%")
    assert plot[0].rstrip("?").endswith("*" * 10) and plot[1].strip() == "?"
    # Newest column (no samples) is drawn stale; the 0–20 % row is the busiest.
    assert plot[-1].endswith("?") and plot[-1][-2] == ASCII.shades[-1]
    assert "-10m" in lines[-3] and lines[-3].endswith("now")
    wide = H.distribution_heatmap(frames, 80, 8, theme=DARK, glyphs=ASCII).plain.split("\n")
    assert wide[-1] == "GPU util: colour = GPUs per bucket (max 2); ? = no samples"
    assert H.distribution_heatmap([], 30, 8, theme=DARK).plain == "GPU util: no data"


@pytest.mark.parametrize("metric", sorted(H.METRICS))
def test_each_metric_normalises(metric):
    s = GpuSample("n", "0", util=50.0, mem_used_mib=40.0, mem_total_mib=80.0, temp_c=60.0, power_w=350.0)
    assert H.normalise(s, H.METRICS[metric]) == pytest.approx(0.5)
    assert H.normalise(GpuSample("n", "0", util=float("inf")), H.METRICS["util"]) is None


def test_one_gpu_per_cell_without_node_gaps_still_marks_stale_and_idle():
    # 4 nodes × 8 GPUs, ASCII, 16×5: gapped rows need 4 lines, the flat packing only 2.
    samples = [gpu(f"n{n}", g, util=50.0) for n in range(4) for g in range(8)]
    samples[3] = gpu("n0", 3, None)
    samples[9] = gpu("n1", 1, 0.0, pod="p")
    hm = H.fleet_heatmap(samples, 16, 5, theme=DARK, glyphs=ASCII)
    assert hm.gpus_per_cell == 1 and not hm.pools[0].node_gap
    rows = hm.text.plain.split("\n")[1:3]
    assert rows[0][3] == "?" and rows[0][9] == "!" and len(rows[0]) == 16
    assert hm.gpus_at(9, 1) == (("n1", "1"),)
