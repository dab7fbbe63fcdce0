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
- firstStart: the first expected start on screen (an ETA cell `~5m`);
- ranges: the first start with its range on screen (`~5m (3m–8m)`), the forecast whole.
Each also from `live`. Median over `--runs`, each run listed.

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
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _served import serve
from e2e import Console, open_markers

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


def one_run(kubeconfig: Path, home: Path, cols: int, rows: int, wait: float = WAIT_S,
            extra: tuple[str, ...] = ()) -> dict[str, float | None]:
    console = Console(kubeconfig, cols, rows, home, extra)
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
        console.quit()

    def since(t: float | None, t0: float) -> float | None:
        return round(t - t0, 2) if t is not None else None

    return {"live": since(live, console.started),
            "firstStart": since(first, console.started), "ranges": since(ranged, console.started),
            "firstStartAfterLive": since(first, live), "rangesAfterLive": since(ranged, live)}


def median(runs: list[dict[str, float | None]], key: str) -> float | None:
    xs = [r[key] for r in runs if r[key] is not None]
    return round(statistics.median(xs), 2) if xs else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("live", "firstStart", "ranges", "firstStartAfterLive", "rangesAfterLive")
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
