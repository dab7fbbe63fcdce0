"""The Overview as a triage board, driven by Pilot over a store built from objects: each problem
class is on screen with its count, `enter` on a line opens the matching detail or filtered view,
and store changes reach the board through the change sets (no rebuild)."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot

from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.store.sources import SourceState
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.detail import WorkloadDetailScreen
from kueuetop.tui.views.overview import OverviewView, ProblemList
from tests.builders import cluster_queue, condition, fq, group, workload
from tests.tui.screen_text import screen_text
from tests.tui.test_app import column, make_app, run, table_cells, until
from tests.views.cluster import GPU, NOW, admitted, base_objects, gpu, node, pod, put

UNSCHED = (False, "Unschedulable", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.")


def incident_store() -> Store:
    """One of each problem class: fragmentation, an image pull failing, three workloads pending
    for an hour in cq-spot, two preemptions, idle GPUs, a NotReady node, a stopped queue."""
    store = Store(clock=lambda: NOW)
    evicted = []
    for i in range(2):
        wl = workload("team-a", f"victim-{i}", "lq", {GPU: "1"}, created=NOW - 200)
        wl["status"]["conditions"] = [condition("Evicted", True, "Preempted", "preempted", NOW - 60),
                                      condition("Preempted", True, "InClusterQueue", "prio", NOW - 60)]
        evicted.append(wl)
    put(store, *base_objects(),
        *[node(f"spot-{i}", 4, {"pool": "spot"}) for i in range(3)], node("spot-9", 4, {"pool": "spot"}, ready=False),
        admitted("team-a", "busy", "cq-spot", "gpu-l4-spot", 2, count=3),
        *[pod("team-a", f"busy-{i}", "busy", 2, node_name=f"spot-{i}", phase="Running") for i in range(3)],
        admitted("team-a", "big", "cq-spot", "gpu-l4-spot", 4), pod("team-a", "big-0", "big", 4, scheduled=UNSCHED),
        admitted("team-a", "img", "cq-spot", "gpu-l4-spot", 0),
        pod("team-a", "img-0", "img", 0, node_name="spot-0", waiting="ImagePullBackOff"),
        *[workload("team-a", f"late-{i}", "lq", {GPU: "32"}, created=NOW - 3600 + i) for i in range(3)],
        *evicted,
        cluster_queue("cq-held", group([GPU], fq("gpu-a100", **{GPU: 8})), stop_policy="Hold"))
    store.put_gpu_samples([gpu(f"spot-{i}", j, util=1.0, pod=("team-a", f"busy-{i}")) for i in range(3)
                           for j in range(2)], NOW, "gpu/scrape")
    store.set_source_state("kube", SourceState.LIVE, ok=True)
    return store


def board(app: KueuetopApp) -> OverviewView:
    return app.main.query_one(OverviewView)


def by_kind(app: KueuetopApp) -> dict[str, object]:
    return {p.kind: p for p in board(app).problems}


async def enter_on(pilot: Pilot[int], app: KueuetopApp, kind: str) -> None:
    lst = app.main.query_one(ProblemList)
    view = board(app)
    oid = next(oid for oid in view._targets if oid.split("-", 1)[1].startswith(kind))
    lst.highlighted = lst.get_option_index(oid)
    await pilot.press("enter")


def test_each_problem_class_is_on_the_board_with_its_count() -> None:
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        got = {p.kind: p.count for p in board(app).problems}
        assert got == {"nodes": 1, "queue": 1, "fragmentation": 1, "image-pull": 1, "waiting": 3,
                       "preempted": 2, "idle": 1}, got
        text = screen_text(app)
        for title in ("Broken (2)", "Admitted but not running (2)", "Waiting too long (1)",
                      "Churn (last 10 minutes) (1)", "Waste (1)"):
            assert title in text, (title, text)
        for p in board(app).problems:  # every line on screen, ranked as the model ranks them
            assert p.text[:40] in text, (p.text, text)
        assert text.index("Broken") < text.index("Admitted but not") < text.index("Waiting too long") \
            < text.index("Churn") < text.index("Waste")
        assert "no node in gpu-l4-spot has 4 free GPUs: 3 nodes have 2" in " ".join(text.split())
        # The waiting line's explain headline is computed off the UI thread, then shown.
        assert await until(pilot, lambda: "oldest 1h: " in by_kind(app)["waiting"].text)  # type: ignore[attr-defined]
        # Beside the problems: every ClusterQueue, the stopped one first, and the GPU fleet.
        assert "CLUSTERQUEUE" in text and text.index("cq-held ") < text.index("cq-spot ")
        assert "GPU fleet (6 GPUs" in text

    run(app, body)


def test_enter_opens_the_detail_or_the_filtered_view_of_a_line() -> None:
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        await enter_on(pilot, app, "fragmentation")
        assert await until(pilot, lambda: isinstance(app.screen, WorkloadDetailScreen))
        assert app.screen.key == ("team-a", "big")  # type: ignore[attr-defined]
        await pilot.press("escape")
        assert await until(pilot, lambda: not isinstance(app.screen, WorkloadDetailScreen))
        await enter_on(pilot, app, "waiting")
        assert await until(pilot, lambda: app.switcher.current == "workloads")
        assert await until(pilot, lambda: len(table_cells(app, "workloads")) == 3)
        assert sorted(c.strip() for c in column(app, "workloads", "NAME")) == ["late-0", "late-1", "late-2"]
        await pilot.press("1")
        assert await until(pilot, lambda: app.switcher.current == "overview")
        await enter_on(pilot, app, "preempted")
        assert await until(pilot, lambda: sorted(c.strip() for c in column(app, "workloads", "NAME"))
                           == ["victim-0", "victim-1"])
        await pilot.press("1")
        await enter_on(pilot, app, "nodes")
        assert await until(pilot, lambda: app.switcher.current == "nodes"
                           and [c.strip() for c in column(app, "nodes", "NAME")] == ["spot-9"])

    run(app, body)


def test_a_long_filter_of_names_is_cut_on_the_title_line_not_wrapped_out_of_sight() -> None:
    from kueuetop.views.triage import name_filter

    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        app.jump_to("workloads", name_filter([("team-a", f"late-{i}") for i in range(3)]
                                             + [("team-a", f"a-much-longer-workload-name-{i}") for i in range(20)]))
        assert await until(pilot, lambda: "Workloads (3/" in screen_text(app).splitlines()[0]), screen_text(app)
        title = screen_text(app).splitlines()[0]
        assert "filter: ^team-a" in title, title

    run(app, body)


def test_store_changes_reach_the_board_without_a_rebuild() -> None:
    store = incident_store()
    app = make_app(store, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: "image-pull" in by_kind(app))
        put(store, pod("team-a", "img-0", "img", 0, node_name="spot-0", phase="Running"))
        assert await until(pilot, lambda: "image-pull" not in by_kind(app))
        put(store, pod("team-a", "big-0", "big", 4, scheduled=UNSCHED, waiting=""),
            node("spot-9", 4, {"pool": "spot"}))  # the NotReady node comes back, empty: `big` fits there
        assert await until(pilot, lambda: "nodes" not in by_kind(app) and "fragmentation" not in by_kind(app))
        assert board(app).model.rebuilds == 1

    run(app, body)


def test_at_80_columns_problems_come_first_one_line_each() -> None:
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        lines = screen_text(app).splitlines()
        assert lines[1].startswith("Broken (2)")
        starts = [i for i, line in enumerate(lines) if line.startswith("CLUSTERQUEUE")]
        problems = [line for line in lines[:starts[0]] if line.startswith("  ") or line[:5].strip().endswith(("s", "m", "h"))]
        assert len(problems) >= len(board(app).problems)  # one line each, above the queues
        assert all(len(line.rstrip()) <= 80 for line in lines)

    run(app, body, size=(80, 24))


def test_an_empty_cluster_says_so() -> None:
    store = Store(clock=lambda: NOW)
    put(store, *base_objects())
    app = make_app(store, clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: "Nothing wrong right now." in screen_text(app))
        assert "no GPU metrics" in screen_text(app) and "cq-spot" in screen_text(app)

    run(app, body)


def test_kinds_the_board_follows() -> None:
    assert {K.PODS, K.NODES, K.GPUS, K.PROVISIONING_REQUESTS, K.ADMISSION_CHECKS} <= OverviewView.KINDS


def test_moving_the_cursor_repaints_the_line_it_leaves_and_the_line_it_reaches() -> None:
    """The list repaints only the two lines a cursor move concerns: the line left behind loses
    the highlight on screen, the line reached gains it, and no other line is painted so."""
    from textual.geometry import Region

    app = make_app(incident_store(), clock=lambda: NOW)

    def painted(lst: ProblemList) -> set[int]:
        """Options whose lines carry the highlight's background in what the screen would paint
        (the widget's line cache: lines not marked dirty come from there)."""
        bg = lst.get_visual_style("option-list--option", "option-list--option-highlighted").rich_style.bgcolor
        strips = lst.render_lines(Region(0, 0, lst.size.width, lst.size.height))
        lines = lst._lines
        out = set()
        for y, strip in enumerate(strips):
            line = lst.scroll_offset.y + y
            if line < len(lines) and any(seg.style is not None and seg.style.bgcolor == bg for seg in strip):
                out.add(lines[line][0])
        return out

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: board(app).problems)
        lst = app.main.query_one(ProblemList)
        lst.focus()
        await pilot.pause()
        assert lst.highlighted is not None and painted(lst) == {lst.highlighted}
        for key in ("down", "down", "up", "down", "down"):
            before = lst.highlighted
            await pilot.press(key)
            await pilot.pause()
            assert lst.highlighted != before, key
            assert painted(lst) == {lst.highlighted}, (key, before, lst.highlighted)

    run(app, body)


def test_a_freshness_stamp_does_not_redraw_the_board_but_a_stale_source_does() -> None:
    """Every poll and bookmark stamps its source (every few seconds): the status bar shows that,
    the board is redrawn only when a source turns stale (or recovers)."""
    store = incident_store()
    app = make_app(store, clock=lambda: NOW)
    drawn: list[int] = []

    async def body(pilot: Pilot[int]) -> None:
        view = board(app)
        assert await until(pilot, lambda: view.problems)
        original = view._show_problems
        view._show_problems = lambda wide: (drawn.append(1), original(wide))  # type: ignore[method-assign]
        t = [NOW]
        store._clock = lambda: t[0]  # each stamp a second later: a real freshness change
        for _ in range(3):
            t[0] += 1.0
            store.set_source_state("kube", SourceState.LIVE, ok=True)
            await pilot.pause(0.2)
        assert drawn == [], "a freshness stamp redrew the board"
        store.set_source_state("kube", SourceState.ERROR, "connection refused")
        assert await until(pilot, lambda: "source" in by_kind(app))
        assert "data source kube is error" in by_kind(app)["source"].text  # type: ignore[attr-defined]
        assert drawn

    run(app, body)


def test_the_boards_explains_stop_when_another_view_is_shown_and_are_wanted_again_on_return(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from kueuetop.views.triage import TriageModel

    keys = [("team-a", f"late-{i}") for i in range(3)]
    gate = threading.Event()
    asked: list[tuple[str, str]] = []
    real_wanted, real_explain = TriageModel.wanted_explains, TriageModel.explain_now

    def wanted(self: TriageModel) -> list[tuple[str, str]]:
        real_wanted(self)
        return [k for k in keys if k not in asked]

    def explain_now(self: TriageModel, key: tuple[str, str], now: float) -> str:
        asked.append(key)
        gate.wait(10)  # the user switches views while this one is explained
        return real_explain(self, key, now)

    monkeypatch.setattr(TriageModel, "wanted_explains", wanted)
    monkeypatch.setattr(TriageModel, "explain_now", explain_now)
    app = make_app(incident_store(), clock=lambda: NOW)

    async def body(pilot: Pilot[int]) -> None:
        assert await until(pilot, lambda: asked)
        await pilot.press("2")
        assert await until(pilot, lambda: app.switcher.current != "overview")
        gate.set()
        assert await until(pilot, lambda: not board(app)._explaining)
        assert asked == keys[:1]  # the rest were left for when the board is back
        await pilot.press("1")
        assert await until(pilot, lambda: asked == keys)

    run(app, body)
