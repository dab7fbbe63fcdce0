"""The README's screenshot, generated from the console itself: `python -m kueuetop.tui.screenshot`.

A scenario (incident for the README, refarch for the SVG snapshots) runs in virtual time from a fixed epoch to a fixed moment, then is served
*frozen* on a loopback port (no simulation thread), so every object, name, GPU reading and age is
the same on every run. The console reaches it through the real path (kubeconfig, informers, GPU
scrape), runs headless with its clock pinned to that moment and the default themes and keys (no
user config), and the screen is exported as plain text.

The README has two blocks, each between its own markers: the triage board (incident), and the
forecast (`forecast`: refarch's pending workloads by ETA). The forecast worker runs in these
renders too, and every frame waits until its first forecast is in the store, so the ETAs are as
fixed as the rest.

`--check README.md` exits 1 when a README block differs from a fresh rendering (tests run
it too); `--write README.md` replaces the blocks between the README's markers; `--svg DIR` writes
the main views at 80×24 and 160×48 as SVG into DIR (tests/tui/snapshots, which a test compares
with fresh renderings). The caller names every file written.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from kueuetop.sim.scenarios.loader import load_scenario
from kueuetop.sim.serve import serve_frozen

EPOCH = 1_767_225_600.0  # 2026-01-01T00:00:00Z: object timestamps never depend on today
AT = 17 * 60.0  # after the high-priority and compact-placement waves: queues, preemptions, idle GPUs
SIZE = (120, 32)
README_VIEWS = (("overview", ""),)  # (view, filter)
BEGIN, END = "<!-- screenshot:begin (python -m kueuetop.tui.screenshot --write README.md) -->", "<!-- screenshot:end -->"


# The README shows the triage board where it has most to say: the incident scenario, every
# problem class under way eight minutes in.
README_SCENARIO, README_AT = "incident", 8 * 60.0


# The README's forecast: the Workloads view of the demo (refarch) with its queues full, the
# pending workloads only, soonest ETA first.
FORECAST_SCENARIO, FORECAST_AT = "refarch", AT
FORECAST_VIEWS = (("workloads", "state:pending"),)
FORECAST_SIZE = (120, 22)  # its sixteen pending workloads, without a screenful of blank rows
FORECAST_SORT = "eta"
FORECAST_BLOCK = "forecast"
FORECAST_WAIT = 60.0  # seconds the first forecast may take at most before the frame is taken anyway


def render(scenario: str = README_SCENARIO, at: float = README_AT, size: tuple[int, int] = SIZE,
           views: tuple[tuple[str, str], ...] = README_VIEWS, sort: str = "") -> str:
    """The console's screens (one per view) as text, from the scenario frozen at `at` seconds."""
    return "\n\n".join(_render(scenario, at, (size,), views, svg=False, sort=sort))


def render_forecast() -> str:
    """The README's forecast block: refarch's pending workloads with their ETAs."""
    return render(FORECAST_SCENARIO, FORECAST_AT, FORECAST_SIZE, FORECAST_VIEWS, sort=FORECAST_SORT)


def render_block(name: str = "") -> str:
    """A README block's text by name ("" the triage board, "forecast")."""
    if name == FORECAST_BLOCK:
        return render_forecast()
    if name:
        raise ValueError(f"unknown screenshot block {name!r}")
    return render()


BLOCK_NAMES = ("", FORECAST_BLOCK)


# The main views as SVG: what layout changes do to them shows in review.
SNAPSHOT_VIEWS = (("overview", ""), ("workloads", ""), ("clusterqueues", ""), ("cohorts", ""), ("nodes", ""),
                  ("gpus", ""))
SNAPSHOT_SIZES = ((80, 24), (160, 48))


def render_svgs(sizes: tuple[tuple[int, int], ...] = SNAPSHOT_SIZES,
                views: tuple[tuple[str, str], ...] = SNAPSHOT_VIEWS) -> dict[str, str]:
    """`{view}-{w}x{h}.svg` → the SVG Textual exports, from the same frozen cluster as `render`."""
    shots = _render("refarch", AT, sizes, views, svg=True)
    names = [f"{v}-{w}x{h}.svg" for w, h in sizes for v, _ in views]
    return dict(zip(names, shots, strict=True))


# The Events view, on the incident scenario six minutes in (every component has spoken by then).
EVENTS_SCENARIO, EVENTS_AT = "incident", 6 * 60.0


def render_event_svgs(sizes: tuple[tuple[int, int], ...] = SNAPSHOT_SIZES) -> dict[str, str]:
    """`events-{w}x{h}.svg` → the Events view's SVG, from the incident scenario frozen at 6 minutes."""
    shots = _render(EVENTS_SCENARIO, EVENTS_AT, sizes, (("events", ""),), svg=True, include_events=True)
    return {f"events-{w}x{h}.svg": shot for (w, h), shot in zip(sizes, shots, strict=True)}


def _render(scenario: str, at: float, sizes: tuple[tuple[int, int], ...], views: tuple[tuple[str, str], ...],
            svg: bool, include_events: bool = False, sort: str = "") -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kueuetop-shot-") as d:
        frozen = serve_frozen(load_scenario(scenario), at=at, epoch=EPOCH, kubeconfig=Path(d) / "kubeconfig")
        try:
            return _console_shots(frozen.kubeconfig, frozen.now, sizes, views, svg, demo=scenario,
                                  include_events=include_events, sort=sort)
        finally:
            frozen.stop()


def _console_shots(kubeconfig: Path, now: float, sizes: tuple[tuple[int, int], ...],
                   views: tuple[tuple[str, str], ...], svg: bool, demo: str = "refarch",
                   include_events: bool = False, sort: str = "") -> list[str]:
    from kueuetop.sources.connection import connect
    from kueuetop.sources.gpu_poller import GpuPoller, gpu_source_for
    from kueuetop.sources.kube import KubeSources
    from kueuetop.sources.kueue_config import read_kueue_config
    from kueuetop.store import Store
    from kueuetop.tui.app import KueuetopApp
    from kueuetop.tui.keymap import load_keymap
    from kueuetop.tui.themes import load_themes

    def fixed() -> float:
        return now

    conn = connect(str(kubeconfig))
    store = Store(clock=fixed)
    sources = KubeSources(conn, store, include_events=include_events).start()
    # One look at a frozen in-process cluster: no control plane to spare, every exporter read.
    poller = GpuPoller(store, gpu_source_for(conn, scrape_budget=0), interval=3600.0, clock=fixed)
    try:
        deadline = time.monotonic() + 30
        while not sources.synced() and time.monotonic() < deadline:
            time.sleep(0.05)
        poller.poll_once()  # one GPU reading; no thread, so nothing changes while drawing
        # Queue positions of every ClusterQueue before drawing: the views only ask for those on
        # screen, and an answer arriving between two captures would make them differ.
        store.set_position_focus(None)
        while sources.visibility is not None and not sources.visibility.swept() and time.monotonic() < deadline:
            time.sleep(0.05)
        _wait_positions(store, deadline)
        # One history sample, of the complete store: samples taken while the informers were still
        # listing depend on timing.
        store.queue_history.clear()
        store.record_queue_history(now)
        config, _ = read_kueue_config(conn.api)  # as the console reads it at start
        shots = []
        for size in sizes:
            # The forecast worker as the console runs it (ETAs), its run history this render's only.
            app = KueuetopApp(store, api=None, context=conn.info.context, read_only=False, demo=demo,
                              themes=load_themes(user=Path("/nonexistent")), keymap=load_keymap(), clock=fixed,
                              check_rbac=False, initial_view=views[0][0], forecast=True)
            app.ctx.extra["kueue_config"] = config
            app.ctx.extra["events_selector"] = sources.events_selector
            shots += _capture(app, size, views, svg, sort)  # informers stay live: the frozen cluster sends nothing new
        return shots
    finally:
        sources.stop(timeout=2.0)
        conn.close()


def _wait_positions(store: object, deadline: float) -> None:
    # Queue positions come from the visibility API on its own poll; wait until they stop changing.
    last = -1
    while time.monotonic() < deadline:
        version = getattr(store, "_version", 0)
        if version == last:
            return
        last = version
        time.sleep(1.0)


def _capture(app: object, size: tuple[int, int], views: tuple[tuple[str, str], ...], svg: bool,
             sort: str = "") -> list[str]:
    import asyncio

    from kueuetop.tui.app import KueuetopApp

    assert isinstance(app, KueuetopApp)
    shots: list[str] = []

    async def main() -> None:
        async with app.run_test(size=size) as pilot:
            await _forecast_in(pilot, app)
            for view, filter_text in views:
                app.jump_to(view, filter_text)
                tv = app.table_view()
                if sort and tv is not None:
                    tv.sort_by(sort)
                app.refresh_all()
                app._focus_view()  # the table's key hints in the footer, as after a real switch
                text = await _settled(pilot, app)
                shots.append(app.export_screenshot() if svg else text)

    asyncio.run(main())
    return shots


async def _forecast_in(pilot: object, app: object, timeout: float = FORECAST_WAIT) -> None:
    """Until this console's forecast worker has handed its first forecast to the store (bounded):
    a frame taken before would show no ETAs, or some, depending on the machine's speed."""
    from kueuetop.tui.app import KueuetopApp

    assert isinstance(app, KueuetopApp)
    worker = app.forecaster
    deadline = time.monotonic() + timeout
    while worker is not None and time.monotonic() < deadline:
        if (worker.runs >= 1 and app.ctx.store.forecast() is not None) or worker.error:
            return
        await pilot.pause(0.1)  # type: ignore[attr-defined]


async def _settled(pilot: object, app: object, timeout: float = 20.0) -> str:
    """The screen once three renderings in a row agree: column widths, scrollbars and the
    footer follow the first refreshes, later on a loaded machine than on an idle one."""
    from kueuetop.tui.app import KueuetopApp

    assert isinstance(app, KueuetopApp)
    last, same = "", 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.2)  # type: ignore[attr-defined]
        # The composed screen, line by line, as the tests read it (plain text, no styles).
        strips = app.screen._compositor.render_strips()
        text = "\n".join("".join(s.text for s in strip).rstrip() for strip in strips)
        same = same + 1 if text == last else 0
        last = text
        if same >= 2:
            break
    return last


def markers(name: str = "") -> tuple[str, str]:
    """A README block's begin and end markers; "" is the first block's (unnamed, as it always was)."""
    if not name:
        return BEGIN, END
    return (f"<!-- screenshot:begin {name} (python -m kueuetop.tui.screenshot --write README.md) -->",
            f"<!-- screenshot:end {name} -->")


def readme_block(text: str, name: str = "") -> str:
    begin, end = markers(name)
    return f"{begin}\n```text\n{text}\n```\n{end}"


def current_block(readme: str, name: str = "") -> str | None:
    begin, end_marker = markers(name)
    start = readme.find(begin)
    end = readme.find(end_marker, start) if start >= 0 else -1
    return readme[start:end + len(end_marker)] if start >= 0 and end > start else None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kueuetop.tui.screenshot", description=__doc__.splitlines()[0])
    g = p.add_mutually_exclusive_group()
    g.add_argument("--write", metavar="README", type=Path, help="replace the screenshot block of this file")
    g.add_argument("--check", metavar="README", type=Path, help="exit 1 if this file's screenshot block is stale")
    g.add_argument("--svg", metavar="DIR", type=Path, help="write the main views' SVG snapshots into DIR")
    args = p.parse_args(argv)
    if args.svg:
        args.svg.mkdir(parents=True, exist_ok=True)
        for name, svg in {**render_svgs(), **render_event_svgs()}.items():
            (args.svg / name).write_text(svg, encoding="utf-8")
        return 0
    readme_path = args.write or args.check
    if readme_path is None:
        print(readme_block(render()))
        return 0
    try:
        readme = readme_path.read_text(encoding="utf-8")
    except OSError as e:
        print(f"{readme_path}: {e.strerror or e}", file=sys.stderr)
        return 1
    stale = False
    for name in BLOCK_NAMES:
        old = current_block(readme, name)
        if old is None:
            begin, end = markers(name)
            print(f"{readme_path}: no screenshot markers ({begin!r} … {end!r})", file=sys.stderr)
            return 1
        block = readme_block(render_block(name), name)
        if old != block:
            stale = True
            readme = readme.replace(old, block)
    if args.check:
        if stale:
            print(f"{readme_path}: screenshot is stale: run python -m kueuetop.tui.screenshot --write {readme_path}",
                  file=sys.stderr)
            return 1
        return 0
    readme_path.write_text(readme, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
