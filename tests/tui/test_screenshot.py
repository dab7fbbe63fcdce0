"""README's screenshot is the console's own rendering, and it cannot go stale.

The generator freezes a scenario (incident for the README) at a fixed virtual moment from a fixed epoch, serves
it without a simulation thread and pins the console's clock, so the text is fully deterministic:
the README block must equal a fresh rendering exactly. When the console's look changes on
purpose, `python -m kueuetop.tui.screenshot --write README.md` updates the README.
"""

from __future__ import annotations

from pathlib import Path

from kueuetop.tui import screenshot

README = Path(__file__).resolve().parents[2] / "README.md"
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"


def test_readme_screenshot_matches_a_fresh_rendering() -> None:
    readme = README.read_text(encoding="utf-8")
    block = screenshot.current_block(readme)
    assert block is not None, "README has no screenshot markers"
    fresh = screenshot.readme_block(screenshot.render())
    assert block == fresh, "README screenshot is stale: run python -m kueuetop.tui.screenshot --write README.md"
    # And it is a screenshot of the console, not of an error page.
    # The triage board on the incident scenario: each problem class it stages is on the first screen.
    for text in ("Overview", "Broken", "Admitted but not running", "Waiting too long", "quota is free, but no node",
                 "ImagePullBackOff", "XID/ECC errors", "PodsReady timeout in", "CLUSTERQUEUE", "GPU fleet", "DEMO", "kube:live", "? Help"):
        assert text in block, text


def test_readme_forecast_screenshot_matches_a_fresh_rendering() -> None:
    """The second block: refarch's pending workloads sorted by ETA, drawn once the console's
    forecast worker has handed its forecast to the store (so every ETA is in, on any machine)."""
    readme = README.read_text(encoding="utf-8")
    block = screenshot.current_block(readme, screenshot.FORECAST_BLOCK)
    assert block is not None, "README has no forecast screenshot markers"
    assert block != screenshot.current_block(readme)  # its own block, not the first one again
    fresh = screenshot.readme_block(screenshot.render_block(screenshot.FORECAST_BLOCK), screenshot.FORECAST_BLOCK)
    assert block == fresh, "README forecast screenshot is stale: run python -m kueuetop.tui.screenshot --write README.md"
    for text in ("Workloads", "filter: state:pending", "sort: eta", "ETA", "Pending", "DEMO"):
        assert text in block, text
    etas = [line for line in block.splitlines() if "Pending" in line and "~" in line]
    assert len(etas) >= 5, block  # several pending workloads, each with its ETA range


def test_svg_snapshots_of_the_main_views_match_fresh_renderings(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Overview, workloads, ClusterQueues, cohorts, nodes and GPUs at 80×24 and 160×48, from the
    frozen cluster: a layout change shows up here (and in review) as a changed SVG."""
    fresh = screenshot.render_svgs()
    assert len(fresh) == len(screenshot.SNAPSHOT_VIEWS) * len(screenshot.SNAPSHOT_SIZES)
    stale = []
    for name, svg in fresh.items():
        assert svg.startswith("<svg"), name
        stored = SNAPSHOTS / name
        if not stored.exists() or stored.read_text(encoding="utf-8") != svg:
            (tmp_path / name).write_text(svg, encoding="utf-8")
            stale.append(name)
    assert not stale, (f"SVG snapshots differ: {stale} (fresh ones in {tmp_path}); if the change is intended, "
                       "run python -m kueuetop.tui.screenshot --svg tests/tui/snapshots")
    # Each is the view it is named after, drawn from the scenario's objects.
    for name, words in {"overview-80x24.svg": ("Overview", "Waiting", "cq-team-c-hp"),
                        "overview-160x48.svg": ("not", "running", "GPU", "fleet", "spot-np"), "workloads-160x48.svg": ("STATE", "team-a"),
                        "clusterqueues-160x48.svg": ("cq-team-a-hp", "quota"),
                        "cohorts-160x48.svg": ("team-a-b", "pooled"), "nodes-160x48.svg": ("reserved-np", "spot"),
                        "gpus-160x48.svg": ("GPU", "util")}.items():
        for w in words:
            assert w in fresh[name], (name, w)
