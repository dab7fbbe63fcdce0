"""The console at scale, headless (Textual `run_test`): the §5 budgets that need the screen.

The scenario (`large`: 20,000 Workloads, 2,000 LocalQueues, 500 ClusterQueues, 1,000 nodes;
`xl`: 100,000 Workloads, 5,000 nodes) is served *paused* from a child process (`_served.py`),
as in `live.py`. This process runs kueuetop as `kueuetop` starts it — `connect()`,
`KubeSources`, `Store`, `KueuetopApp` — in a 200×60 headless terminal, on the workloads view.
No GPU poller runs (the paused cluster runs no pods). Prints one JSON document:

- first_screen: seconds from `connect()` (before the app exists) until every Kubernetes source
  has synced *and* a frame was painted whose workloads view holds every Workload of the store
  with its first row on screen; against `kubectl get <the kinds kueuetop lists> -A -o json` from
  the same server (the lists of `live.py`: one run for the six kinds plus the two pod label
  selectors, with kubectl's discovery cache warm). `ratio` = console / kubectl; budget ≤ 0.5 (§5).
- keys: key press to repainted frame, on the workloads view: cursor keys (down, up, pagedown,
  pageup, end, home), sort keys (N, A, S, R, P, Q: each re-sorts every row), and typing a filter
  (`/`, characters, backspace, escape). *Repainted* means: the Screen's compositor has rendered
  a frame (its `_compositor_refresh`, which renders every dirty line of every widget and hands
  the update to the driver; the headless driver then writes nothing) **and** at that frame the
  state the key asks for holds (cursor moved, sort or filter in place, rows re-filtered): the
  time is taken from just before `Pilot.press` posts the key to the end of the first such frame.
  It includes Textual's frame pacing (screen updates run at most MAX_FPS=60 a second). Keys come
  at most KEY_RATE a second, a keyboard's fastest autorepeat: a key pressed within a frame of the
  previous one waits for the next 60 Hz frame whatever the console does, so pressing them
  back-to-back would time the frame clock, not the console. p50/p99/max over all presses and per
  group; budget p99 < 17 ms (§5: one 60 Hz frame).
- changes: 1,000 Workloads of the store change status at once (`store.apply_batch` of 1,000
  events as the informer builds them from watch lines; rounds alternate admitted / pending, so
  each row's STATE changes), including the rows on screen: time from the start of
  `apply_batch` (on a worker thread, like the informers' applier) to the end of the first frame
  whose visible rows show the new states. Each round is an isolated burst: it starts ≥ 0.3 s
  after the previous one (the app's coalescing, ≤ 4 refreshes a second) and once the app's
  refresh pacing has a refresh to spend (the app spaces store-driven refreshes so that they take
  at most a quarter of a core: on `xl`, where a board refresh costs ~75–100 ms, that is 0.3–0.4 s
  apart). The extra wait is reported per round (`paced_wait_ms`); a steady stream of changes is
  `e2e.py`'s figure, not this one. Budget < 100 ms.
- overview: the triage board at the same scale: `down`/`up` on its problem list (key to the frame
  whose highlighted line moved; budget p99 < 17 ms as for keys), and bursts of 1,000 Workloads
  changing state (from `apply_batch` to the first frame whose summary line shows the new admitted
  count; isolated bursts as for changes, the pacing's wait in each round; budget < 100 ms).
- memory: this process's VmRSS after the first screen and at the end; budget 300 MB (large),
  1.2 GB (xl). With each, `heap`: what the allocators hold in use and free (`_served.heap_mb`).
  The end figure comes after the changes' bursts, which list every object again as JSON in this
  process (`wire_objects`, the peak): much of what RSS keeps after them is free memory inside
  pymalloc's arenas and malloc's heap, laid out differently from run to run. So the end also
  says what is live (`after_collect`: the allocators after a full collection of the whole heap,
  the objects the console froze included, see tui/heap.py; `garbage_objects`, of which
  `frozen_garbage_objects` were frozen) and the RSS once malloc gives its free heap back
  (`rss_after_trim_mb`); all taken after `rss_mb`, which stays the budgeted figure.
- idle_cpu: CPU seconds (user + system) this process uses over IDLE_SECONDS with the console
  open and nothing changing in the cluster (watches open, queue positions polled for the
  ClusterQueues on screen, the 2 s status tick), as percent of one core. ARCHITECTURE gives no
  figure; near-idle is taken as < 5 %.

Usage (repository root, project virtualenv, kubectl on PATH):

    python benchmarks/tui.py                    # large: about 2 minutes on 2 cores
    python benchmarks/tui.py --scenario xl      # 100,000 Workloads: about 6 minutes
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _served import heap_mb, memory_mb, serve, trimmed_rss_mb
from live import changed_status, kubectl, kubectl_env, kubectl_snapshot, wire_objects

from kueuetop.sources.connection import connect
from kueuetop.sources.informer import Informer
from kueuetop.sources.kube import KubeSources, resource_specs
from kueuetop.store import Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.tui.app import KueuetopApp
from kueuetop.tui.keymap import load_keymap
from kueuetop.tui.themes import load_themes
from kueuetop.tui.views.base import TableView
from kueuetop.views.table_model import row_id

SIZE = (200, 60)
# ARCHITECTURE §5 (its budgets are for the console measured from outside, benchmarks/e2e.py;
# here the same figures in-process, labelled so)
RATIO_BUDGET = 0.5
KEY_BUDGET_MS = 1000 / 60  # one 60 Hz frame
CHANGES_BUDGET_MS = 100.0
RSS_BUDGET_MB = {"large": 300.0, "xl": 1200.0}
IDLE_BUDGET_PERCENT = 5.0
IDLE_SECONDS = 10.0
BATCH = 1000
CHANGE_ROUNDS = 10
KEY_ROUNDS = 3
RUNNING: KubeSources | None = None  # the console's sources while it runs
KEY_RATE = 30.0  # keys a second at most: the fastest keyboard autorepeat (X11 default 25, macOS ~30)
FRAME_TIMEOUT = 10.0


def stats(values: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"n": len(values), "p50": round(statistics.median(values), 1), "p99": round(qs[98], 1),
            "max": round(max(values), 1)}


class Frames:
    """Every frame the screen paints, timed, with what `probe()` returned right after it.

    The app runs on one thread: state a key handler set before a frame started is in that frame
    (the handler marks the widget dirty; the frame renders the dirty widgets)."""

    def __init__(self, app: KueuetopApp) -> None:
        self.app = app
        self._probe: Callable[[], object] | None = None
        self._seen: list[tuple[float, object]] = []
        self._hooked: set[int] = set()

    def _hook(self) -> None:
        screen = self.app.screen
        if id(screen) in self._hooked:
            return
        original = screen._compositor_refresh

        def refresh() -> None:
            original()
            if self._probe is not None:
                self._seen.append((time.perf_counter(), self._probe()))

        screen._compositor_refresh = refresh  # type: ignore[method-assign]
        self._hooked.add(id(screen))

    @property
    def count(self) -> int:
        """Frames seen since the last `expect`."""
        return len(self._seen)

    def expect(self, probe: Callable[[], object]) -> None:
        """Start recording frames (call just before the action)."""
        self._hook()
        self._probe, self._seen = probe, []

    async def first(self, want: Callable[[object], bool], timeout: float = FRAME_TIMEOUT) -> float:
        """End time of the first recorded frame whose probe value satisfies `want`."""
        deadline = time.perf_counter() + timeout
        while True:
            for t, value in self._seen:
                if want(value):
                    self._probe = None
                    return t
            if time.perf_counter() > deadline:
                self._probe = None
                raise TimeoutError("no frame showed the expected state")
            await asyncio.sleep(0.001)


def workloads_view(app: KueuetopApp) -> TableView:
    return app.main.query_one("#workloads", TableView)


# ===================================================================== keys
def key_plan(tv: TableView) -> list[tuple[str, str, Callable[[], object]]]:
    """(group, key, state the key asks for): evaluated after the press to build the predicate."""
    t = tv.table
    plan: list[tuple[str, str, Callable[[], object]]] = []
    for key in ["down"] * 20 + ["up"] * 10 + ["pagedown"] * 5 + ["pageup"] * 3 + ["end", "home"]:
        plan.append(("cursor", key, lambda: (t.cursor_row, int(t.scroll_y))))
    for key in ("N", "N", "A", "S", "R", "P", "Q", "N"):
        plan.append(("sort", key, lambda: (tv.model.sort_name, tv.model.sort_reverse, tuple(tv.model.order[:3]))))
    first = tv.model.rows[tv.model.order[0]].sort.get("name", "x")
    typed = str(first)[:6]
    plan.append(("filter", "slash", lambda: None))
    plan += [("filter", ch, lambda: (tv.model.filter.text, len(tv.model.order))) for ch in typed]
    plan += [("filter", "backspace", lambda: (tv.model.filter.text, len(tv.model.order)))] * 2
    plan += [("filter", "escape", lambda: None), ("filter", "escape", lambda: (tv.model.filter.text, len(tv.model.order)))]
    return plan


async def paced(last: float) -> None:
    """Wait until 1/KEY_RATE seconds after the previous press (`last`, perf_counter)."""
    wait = last + 1 / KEY_RATE - time.perf_counter()
    if wait > 0:
        await asyncio.sleep(wait)


async def isolated(pilot: Any, app: KueuetopApp, longest: float = 3.0) -> float:
    """Wait out the app's refresh coalescing (0.3 s) and then its cost-based pacing, so that the
    next change is shown by a refresh the app may spend at once; returns the pacing's part (ms)."""
    await pilot.pause(0.3)
    t0 = time.perf_counter()
    while app._refill() < 1 and time.perf_counter() - t0 < longest:
        await pilot.pause(0.01)
    return round((time.perf_counter() - t0) * 1000, 1)


async def press_keys(pilot: Any, app: KueuetopApp, frames: Frames) -> dict[str, Any]:
    tv = workloads_view(app)
    times: dict[str, list[float]] = {}
    t0 = 0.0
    for _ in range(KEY_ROUNDS):
        for group, key, state in key_plan(tv):
            await paced(t0)
            frames.expect(state)
            t0 = time.perf_counter()
            await pilot.press(key)
            final = state()  # what the key produced; the first frame showing it counts
            done = await frames.first(lambda v, f=final: v == f)
            times.setdefault(group, []).append((done - t0) * 1000)
    everything = [v for vs in times.values() for v in vs]
    return {"all": stats(everything), **{g: stats(v) for g, v in times.items()}, "keys_per_second_at_most": KEY_RATE,
            "budget_p99_ms": KEY_BUDGET_MS, "ok": stats(everything)["p99"] < KEY_BUDGET_MS}


# ===================================================================== changes
def change_events(conn: Any, store: Store, keys: list[tuple[str, str]], admitted: bool, round_: int,
                  wire: dict[Any, dict[str, Any]]) -> list[StoreEvent]:
    """The store events the workloads informer makes from 1,000 MODIFIED watch lines (`wire`:
    `live.wire_objects`, the objects as listed; the store keeps parsed objects only)."""
    # The console's own informer spec when it runs: its parse shares the console's ParseCache, as
    # the real watch lines do (a separate parse would keep 1,000 private copies of each part).
    specs = [i.spec for i in RUNNING.informers] if RUNNING is not None else resource_specs(conn)
    spec = next(s for s in specs if s.source == K.WORKLOADS)
    events: list[StoreEvent] = []
    informer = Informer(conn.api, spec, store, events.append)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for i, key in enumerate(keys):
        wl = changed_status(wire.get((K.WORKLOADS, key)) or {}, wire, admitted, stamp)
        wl["metadata"]["resourceVersion"] = str(2 * 10**9 + round_ * BATCH + i)
        informer._handle(json.loads(json.dumps({"type": "MODIFIED", "object": wl})))
    return events


async def apply_changes(pilot: Any, app: KueuetopApp, conn: Any, frames: Frames) -> dict[str, Any]:
    tv = workloads_view(app)
    store = app.ctx.store
    state_col = tv.COLUMNS.index("STATE")
    totals, applies = [], []
    waits: list[float] = []
    timeouts = 0
    wire = wire_objects(conn)
    for r in range(CHANGE_ROUNDS):
        admitted = r % 2 == 0
        want = "Admitted" if admitted else "Pending"
        top = int(tv.table.scroll_y)
        on_screen = [tv.model.rows[rid].key for rid in tv.model.order[top: top + SIZE[1]]]
        rest = [k for k in store.keys(K.WORKLOADS) if k not in set(on_screen)]
        keys = (on_screen + rest[r * BATCH:])[:BATCH]
        events = change_events(conn, store, keys, admitted, r, wire)
        visible = [row_id(k) for k in on_screen[:20]]

        def shown(v: list[str] = visible, w: str = want) -> bool:
            rows = tv.model.rows
            return all(rid in rows and rows[rid].cells[state_col].plain == w for rid in v)

        waits.append(await isolated(pilot, app))
        frames.expect(shown)
        t0 = time.perf_counter()
        applied: list[float] = []

        def apply(ev: list[StoreEvent] = events, out: list[float] = applied) -> None:
            store.apply_batch(ev)
            out.append(time.perf_counter())

        threading.Thread(target=apply, name="bench-apply").start()
        try:
            done = await frames.first(bool)
        except TimeoutError:  # counted, not hidden: a round whose rows never showed the change
            timeouts += 1
            continue
        totals.append((done - t0) * 1000)
        applies.append((applied[0] - t0) * 1000 if applied else float("nan"))
    return {"batch": BATCH, "rounds": CHANGE_ROUNDS, "timeouts": timeouts,
            "store_and_screen_ms": stats(totals) if totals else None,
            "store_apply_ms": stats(applies) if applies else None, "paced_wait_ms": waits,
            "budget_ms": CHANGES_BUDGET_MS,
            "ok": bool(totals) and not timeouts and stats(totals)["p99"] < CHANGES_BUDGET_MS}


# ===================================================================== the Overview
async def overview(pilot: Any, app: KueuetopApp, conn: Any, frames: Frames) -> dict[str, Any]:
    """The triage board at scale: `down`/`up` on its problem list (key to repainted frame, the
    highlighted line moved), then bursts of 1,000 workloads changing state (from the start of
    `apply_batch` to the first frame whose summary line shows the new admitted count)."""
    from kueuetop.tui.views.overview import OverviewView, ProblemList

    await pilot.press("1")
    ov = app.main.query_one(OverviewView)
    lst = ov.query_one(ProblemList)
    lst.focus()  # the board hands focus to its list; make sure the keys reach it
    await pilot.pause(1.0)
    keys: list[float] = []
    moved = 0
    t0 = 0.0
    for _ in range(KEY_ROUNDS):
        for key in ["down"] * 10 + ["up"] * 10:
            await paced(t0)
            frames.expect(lambda: lst.highlighted)
            t0 = time.perf_counter()
            before = lst.highlighted
            await pilot.press(key)
            final = lst.highlighted
            moved += final != before
            done = await frames.first(lambda v, f=final: v == f)
            keys.append((done - t0) * 1000)
    store = app.ctx.store
    wire = wire_objects(conn)
    everyone = sorted(store.keys(K.WORKLOADS))
    bursts: list[float] = []
    rounds: list[dict[str, Any]] = []
    timeouts = 0
    for r in range(CHANGE_ROUNDS):
        admitted = r % 2 == 0
        batch = everyone[(r // 2) * BATCH:(r // 2 + 1) * BATCH]
        events = change_events(conn, store, batch, admitted, 100 + r, wire)
        # The rounds before (the Workloads view's changes) may have admitted some of the batch
        # already: the count moves by those whose state the round really changes.
        held = sum(1 for k in batch if k in ov.model._admitted)
        want = ov.model.summary()[1] + ((len(batch) - held) if admitted else -held)

        def shown(w: int = want) -> bool:
            # The whole number: "0 admitted" is also the tail of "1000 admitted".
            text = str(lst.get_option_at_index(lst.option_count - 1).prompt)
            return re.search(rf"(?<![\d,]){w} admitted", text) is not None

        paced_wait = await isolated(pilot, app)
        frames.expect(shown)
        t0 = time.perf_counter()
        threading.Thread(target=store.apply_batch, args=(events,), name="bench-apply").start()
        try:
            done = await frames.first(bool)
        except TimeoutError:
            timeouts += 1
            rounds.append({"admitted": admitted, "want": want, "ms": None,
                           "model": ov.model.summary()[1], "frames": frames.count,
                           "shown": str(lst.get_option_at_index(lst.option_count - 1).prompt)[:80]})
            continue
        bursts.append((done - t0) * 1000)
        rounds.append({"admitted": admitted, "want": want, "ms": round(bursts[-1], 1), "paced_wait_ms": paced_wait})
    # A board with no problem lines has no cursor to move: no key figure then, said so.
    key_stats = stats(keys) if moved else None
    bursts_ok = bool(bursts) and not timeouts and stats(bursts)["p99"] < CHANGES_BUDGET_MS
    return {"keys_ms": key_stats, "keys_moved_cursor": moved, "keys_per_second_at_most": KEY_RATE,
            "keys_budget_p99_ms": KEY_BUDGET_MS,
            "burst_1000_changes_ms": stats(bursts) if bursts else None, "burst_timeouts": timeouts,
            "burst_rounds": rounds,
            "burst_budget_ms": CHANGES_BUDGET_MS,
            "ok": bursts_ok and (key_stats is None or key_stats["p99"] < KEY_BUDGET_MS)}


# ===================================================================== idle CPU
async def idle_cpu(pilot: Any) -> dict[str, Any]:
    c0, t0 = os.times(), time.perf_counter()
    await asyncio.sleep(IDLE_SECONDS)
    c1, t1 = os.times(), time.perf_counter()
    cpu = (c1.user - c0.user) + (c1.system - c0.system)
    pct = 100.0 * cpu / (t1 - t0)
    return {"seconds": round(t1 - t0, 1), "cpu_seconds": round(cpu, 2), "percent_of_one_core": round(pct, 1),
            "budget_percent": IDLE_BUDGET_PERCENT, "ok": pct < IDLE_BUDGET_PERCENT}


# ===================================================================== main
async def console(server: Any, scenario: str, result: dict[str, Any], skip: set[str]) -> None:
    gc.collect()
    t0 = time.perf_counter()
    conn = connect(kubeconfig=str(server.kubeconfig))
    store = Store()
    sources = KubeSources(conn, store).start()
    global RUNNING
    RUNNING = sources
    app = KueuetopApp(store, api=conn.api, context="bench", initial_view="workloads", check_rbac=False,
                      themes=load_themes(user=Path("/nonexistent-kueuetop-themes")), keymap=load_keymap())
    try:
        async with app.run_test(size=SIZE) as pilot:
            frames = Frames(app)
            tv = workloads_view(app)
            # Every source synced and the view holds every Workload, its first page handed to the table.
            frames.expect(lambda: sources.synced() and tv.table.row_count > 0
                          and tv.model.total == store.count(K.WORKLOADS))
            done = await frames.first(bool, timeout=600.0 if scenario == "xl" else 180.0)
            result["first_screen"] = {"seconds": round(done - t0, 3), "workloads": store.count(K.WORKLOADS),
                                      "rows": tv.model.total}
            result["memory"] = {"after_first_screen": {**memory_mb("self"), "heap": heap_mb()}}
            await pilot.pause(3.0)  # start-up work settles: position polls of the screen's queues
            if "idle" not in skip:
                result["idle_cpu"] = await idle_cpu(pilot)
            if "keys" not in skip:
                result["keys"] = await press_keys(pilot, app, frames)
            if "changes" not in skip:
                result["changes"] = await apply_changes(pilot, app, conn, frames)
            if "overview" not in skip:
                result["overview"] = await overview(pilot, app, conn, frames)
            end = result["memory"]["end"] = {**memory_mb("self"), "heap": heap_mb()}
            young = gc.collect()
            gc.unfreeze()  # frozen objects that died since (in cycles) are only found this way
            frozen_garbage = gc.collect()
            gc.freeze()
            end.update(garbage_objects=young + frozen_garbage, frozen_garbage_objects=frozen_garbage)
            end["after_collect"] = heap_mb()
            end["rss_after_trim_mb"] = trimmed_rss_mb()
    finally:
        sources.stop()
        conn.close()


def run(scenario: str, skip: set[str]) -> dict[str, Any]:
    result: dict[str, Any] = {"scenario": scenario, "paused": True, "terminal": f"{SIZE[0]}x{SIZE[1]}"}
    with tempfile.TemporaryDirectory(prefix="kueuetop-bench-") as tmp, \
            serve(scenario, Path(tmp), paused=True) as server:
        result["server_startup_s"] = round(server.startup_s, 1)
        asyncio.run(console(server, scenario, result, skip))
        if "kubectl" not in skip:
            env = kubectl_env(server, Path(tmp))
            kubectl(env, "get", "clusterqueues", "-o", "name")  # fill kubectl's discovery cache
            snap = kubectl_snapshot(env)
            ratio = result["first_screen"]["seconds"] / snap["seconds"]
            result["first_screen"].update({"kubectl_seconds": snap["seconds"], "kubectl": snap,
                                           "ratio": round(ratio, 2), "budget_ratio": RATIO_BUDGET,
                                           "ok": ratio <= RATIO_BUDGET})
    budget = RSS_BUDGET_MB[scenario]
    peak = max(result["memory"]["after_first_screen"]["rss_mb"], result["memory"].get("end", {}).get("rss_mb", 0))
    result["memory"].update({"budget_mb": budget, "ok": peak < budget})
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="large", choices=("large", "xl"))
    p.add_argument("--skip", default="", help="comma-separated parts to skip: idle,keys,changes,overview,kubectl")
    args = p.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if "kubectl" not in skip and shutil.which("kubectl") is None:
        p.error("kubectl must be on PATH (or --skip kubectl)")
    t0 = time.monotonic()
    result = run(args.scenario, skip)
    result["wall_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
