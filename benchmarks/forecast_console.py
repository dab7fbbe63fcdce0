"""When a user sees start times: the real `kueuetop` console on a cluster at an instant, measured from outside.

`benchmarks/forecast.py` times the forecast worker inside the benchmark's own process. This one
times what a user waits for:

* the cluster is the scenario run to `--at` seconds and stopped there (`_served.store_at`: every
  timestamp moved so that the instant is now), served from its own process;
* the console is the installed `kueuetop --kubeconfig …` in a pseudo-terminal, exactly as a user
  starts it (GPU poller, RBAC checks, forecast worker on, a fresh state directory: its runtime
  history is the finished Workloads the cluster still holds). It opens the Workloads view
  filtered to the workloads with an expected start (`/~`) and sorted by ETA (`E`: soonest
  first), and this process reads what reaches the screen.

Per run, from the console's process start:
- live: the status bar first says `kube:live` (every watched kind listed);
- firstStart: the first expected start on screen (an ETA cell `~5m`): bounded by this benchmark's
  own keys, which open the filtered, sorted view after `kube:live` (about 2 s of them);
- ranges: the first start with its range on screen (`~5m (3m–8m)`), the forecast whole.
Each also from `live`. And, read from the process table (`ProcessWatch`; only where the forecast
runs in a child process): forecastStart, when the first forecast's child was forked (the lists
were in); expectedDone, when that child forked its range helper, which it does once its expected
run's result is sent; forecastDone, when it ended (the ranges sent). Median over `--runs`, each run
listed.

The console forecasts in a child process (`tui/forecast_process.py`); `--compare` alternates
each run with one of `kueuetop --forecast-in-process` (the forecast on a thread of the console's
own process), reported apart as `inProcess`.

Usage (repository root, project virtualenv with kueuetop installed):

    python benchmarks/forecast_console.py                      # large at 900 s, three runs
    python benchmarks/forecast_console.py --scenario xl --runs 1
    python benchmarks/forecast_console.py --kubeconfig ~/.kube/config   # a cluster of your own
    python benchmarks/forecast_console.py --compare             # child process against in-process
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _served import serve
from e2e import Console, open_markers

POLL_S = 0.02  # seconds between looks at the console's processes

FIRST_START = re.compile(r"~(?:now|\d+[smhd])")
WITH_RANGE = re.compile(r"~(?:now|\d+[smhd]\w*) \((?:now|\d+[smhd])")
WAIT_S = 180.0  # seconds a run waits for each sight at most (None in the output: never seen)


def sort_by_eta(console: Console) -> None:
    """The Workloads view (open: `open_markers`) sorted by ETA, soonest first, its title saying
    so: a key pressed while the console is still busy with its first lists may be dropped, so
    each press is checked."""
    for _ in range(5):
        t = console.press("E")
        seen = console.wait_for(re.compile("sort: eta[↑↓]"), t, 10.0)
        if seen is None:
            continue
        if console.wait_for("sort: eta↑", t, 1.0) is not None:
            return
        t = console.press("E")  # descending: once more
        if console.wait_for("sort: eta↑", t, 10.0) is not None:
            return
    raise RuntimeError("the Workloads view never showed its sort by ETA")


class ProcessWatch:
    """The console's descendant processes as they come and go (from /proc, every POLL_S): when
    each was first and last seen, and its parent."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, list[float]] = {}  # pid → [first seen, last seen]
        self.parent: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="process-watch", daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            now = time.time()
            parents: dict[int, int] = {}
            for name in os.listdir("/proc"):
                if name.isdigit():
                    try:
                        with open(f"/proc/{name}/stat") as f:
                            parents[int(name)] = int(f.read().rsplit(")", 1)[1].split()[1])
                    except (OSError, ValueError, IndexError):
                        continue
            mine, frontier = set(), {self.root}
            while frontier:
                frontier = {p for p, pp in parents.items() if pp in frontier and p not in mine}
                mine |= frontier
            for pid in mine:
                span = self.seen.setdefault(pid, [now, now])
                span[1] = now
                self.parent.setdefault(pid, parents[pid])
            self._stop.wait(POLL_S)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def first_forecast(self) -> tuple[float | None, float | None, float | None]:
        """(forked, range helper forked, ended) of the console's first child: the forecast's
        first child forks its estimate helper first and its range helper once the expected
        result is sent."""
        children = sorted((span[0], pid) for pid, span in self.seen.items() if self.parent[pid] == self.root)
        if not children:
            return None, None, None
        forked, pid = children[0]
        helpers = sorted(span[0] for p, span in self.seen.items() if self.parent[p] == pid)
        return forked, (helpers[1] if len(helpers) > 1 else None), self.seen[pid][1]


def one_run(kubeconfig: Path, home: Path, cols: int, rows: int, wait: float = WAIT_S,
            extra: tuple[str, ...] = ()) -> dict[str, float | None]:
    console = Console(kubeconfig, cols, rows, home, extra)
    watch = ProcessWatch(console.proc.pid)
    try:
        live = console.wait_for("kube:live", console.started, wait)
        if live is None:
            raise RuntimeError("the console never said kube:live")
        # Only the workloads with an expected start (`/~`), soonest first: the cursor keeps its row
        # when rows move, so on the unfiltered view it follows a row with no start down the list.
        open_markers(console, "~")
        sort_by_eta(console)
        first = console.wait_for(FIRST_START, console.started, wait)
        ranged = console.wait_for(WITH_RANGE, console.started, wait)
    finally:
        watch.stop()
        console.quit()
    forked, expected, done = watch.first_forecast()

    def since(t: float | None, t0: float | None) -> float | None:
        return round(t - t0, 2) if t is not None and t0 is not None else None

    return {"live": since(live, console.started),
            "firstStart": since(first, console.started), "ranges": since(ranged, console.started),
            "firstStartAfterLive": since(first, live), "rangesAfterLive": since(ranged, live),
            "forecastStartAfterLive": since(forked, live),
            "expectedDoneAfterForecastStart": since(expected, forked),
            "forecastDoneAfterForecastStart": since(done, forked)}


def median(runs: list[dict[str, float | None]], key: str) -> float | None:
    xs = [r[key] for r in runs if r[key] is not None]
    return round(statistics.median(xs), 2) if xs else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("live", "firstStart", "ranges", "firstStartAfterLive", "rangesAfterLive", "forecastStartAfterLive",
            "expectedDoneAfterForecastStart", "forecastDoneAfterForecastStart")
    out: dict[str, Any] = {"terminal": f"{args.cols}x{args.rows}"}
    with tempfile.TemporaryDirectory(prefix="kueuetop-fc-console-") as tmp:
        work = Path(tmp)

        def runs_on(kubeconfig: Path) -> dict[str, list[dict[str, float | None]]]:
            modes: dict[str, tuple[str, ...]] = {"child": ()}
            if args.compare:
                modes["inProcess"] = ("--forecast-in-process",)
            got: dict[str, list[dict[str, float | None]]] = {m: [] for m in modes}
            for i in range(args.runs):  # alternated: a drift of the machine touches both alike
                for mode, extra in modes.items():
                    got[mode].append(one_run(kubeconfig, work / f"home-{mode}-{i}", args.cols, args.rows, args.wait,
                                             extra))
            return got

        if args.kubeconfig:
            out["kubeconfig"] = args.kubeconfig
            runs = runs_on(Path(args.kubeconfig))
        else:
            t0 = time.monotonic()
            with serve(args.scenario, work, at=args.at) as server:
                out.update(scenario=args.scenario, at=args.at, serverReadySeconds=round(time.monotonic() - t0, 1))
                runs = runs_on(server.kubeconfig)
    out |= {"median": {k: median(runs["child"], k) for k in keys}, "runs": runs["child"]}
    if "inProcess" in runs:
        out["inProcess"] = {"median": {k: median(runs["inProcess"], k) for k in keys}, "runs": runs["inProcess"]}
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="large")
    p.add_argument("--at", type=float, default=900.0, help="seconds into the scenario (default 900)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--cols", type=int, default=160)
    p.add_argument("--rows", type=int, default=48)
    p.add_argument("--wait", type=float, default=WAIT_S, help=f"seconds to wait for each sight (default {WAIT_S:g})")
    p.add_argument("--kubeconfig", help="a cluster already served (or a real one) instead of the scenario")
    p.add_argument("--compare", action="store_true",
                   help="alternate each run with one of the forecast in the console's own process")
    args = p.parse_args(argv)
    json.dump(run(args), sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
