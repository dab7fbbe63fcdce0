"""README's screenshot is the console's own rendering, and it cannot go stale.

The generator freezes the refarch scenario at a fixed virtual moment from a fixed epoch, serves
it without a simulation thread and pins the console's clock, so the text is fully deterministic:
the README block must equal a fresh rendering exactly. When the console's look changes on
purpose, `python -m kueuetop.tui.screenshot --write` updates the README.
"""

from __future__ import annotations

from kueuetop.tui import screenshot


def test_readme_screenshot_matches_a_fresh_rendering() -> None:
    readme = screenshot.README.read_text(encoding="utf-8")
    block = screenshot.current_block(readme)
    assert block is not None, "README has no screenshot markers"
    fresh = screenshot.readme_block(screenshot.render())
    assert block == fresh, "README screenshot is stale: run python -m kueuetop.tui.screenshot --write"
    # And it is a screenshot of the console, not of an error page.
    for text in ("Overview", "GPUs by model and node pool", "Workloads (12/48)", "DEMO", "kube:live", "? Help"):
        assert text in block, text
