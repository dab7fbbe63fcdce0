"""The fleet heatmap says how old a pool's samples are when a budgeted scrape reads nodes in turn."""

from pathlib import Path

from kueuetop.kueue.gpu import GpuSample
from kueuetop.tui import heatmap as H
from kueuetop.tui.glyphs import ASCII
from kueuetop.tui.themes import load_themes

DARK = load_themes(user=Path("/nonexistent")).themes["dark"]
NOW = 1_000_000.0


def header(samples, **kw):
    return H.fleet_heatmap(samples, 120, 10, theme=DARK, now=NOW, **kw).text.plain.split("\n")[0]


def test_pool_header_shows_the_age_range_of_its_samples():
    samples = [GpuSample(node="n1", gpu="0", util=50.0, at=NOW - 4), GpuSample(node="n2", gpu="0", util=50.0, at=NOW - 360)]
    assert header(samples).endswith("read 4s–6m ago")
    assert header(samples, glyphs=ASCII).endswith("read 4s-6m ago")


def test_fresh_samples_say_nothing_and_stale_ones_are_counted_not_aged():
    fresh = [GpuSample(node="n1", gpu="0", util=50.0, at=NOW - 10), GpuSample(node="n2", gpu="0", util=5.0, at=NOW - 20)]
    assert "read" not in header(fresh)
    stale = [*fresh, GpuSample(node="n3", gpu="0", util=50.0, at=NOW - 900, stale=True)]
    assert "read" not in header(stale) and "1 stale" in header(stale)
    # Without a clock (tests, screenshots) the header is as before.
    old = [GpuSample(node="n1", gpu="0", util=50.0, at=NOW - 600)]
    assert "read" not in H.fleet_heatmap(old, 120, 10, theme=DARK).text.plain
