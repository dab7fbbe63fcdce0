"""kueuetop as a user's cluster feels it: the real `kueuetop` process, measured from outside.

Everything here is measured end to end, with nothing inside the console's process:

* the cluster is `kueuetop sim serve <scenario>` *live* (the simulation runs: pods start and
  finish, 1,000 dcgm-exporters on `large`), in its own process, which counts every byte it
  writes per request category (`_served.py`, `serve(..., live=True)`);
* the console is the installed `kueuetop --kubeconfig …` started in a pseudo-terminal of a set
  size (default 160×48), exactly as a user starts it: GPU poller, RBAC checks, liveness probe,
  queue-position polls all on. This process reads its output continuously (as a terminal
  would) and strips escape sequences to see what reached the screen.

Prints one JSON document:

- first_screen: from the console's process start until the status bar first says `kube:live`
  (every watched kind listed and in the store, drawn), three runs, min/median; against `kubectl
  get workloads -A -o json` from the same server (warm discovery cache), three runs; `ratio` =
  console / kubectl; budget ≤ 0.5. Timed on the scenario with every workload present (served
  paused: a live scale scenario's workloads arrive over its first hour); the same right after a
  live start is `first_screen_live_start`.
- memory_every_workload_present: the last first-screen console, left open 30 s more on that
  paused cluster: its RSS with every object of the scenario in the store, and the server's counts.
- steady: over `--minutes` (default 10) of the open console on the Overview: its RSS (VmRSS of
  the process, sampled every 10 s: after 60 s, max, slope MB/min over the second half) and CPU
  (user + system ticks of the process / wall time, % of one core), and the bytes the server wrote
  to everyone (only the console is connected) per category (watch, list_get, pod_proxy,
  visibility, probe) scaled to a minute. With each RSS sample, the objects the server holds
  (Workloads, Pods, Events, Nodes): a live scale scenario is still filling up in that window, so
  `rss_mb_per_1000_workloads` (least squares over the samples) tells growth that follows the
  cluster's data from growth that does not.
- seeds_loops: what the seeds' way of watching costs the same server per minute: the three
  `watch kubectl get …` terminals (`clusterqueues -o wide`, `jobs -A`, `nodes`; `watch`'s default
  2 s), the same three with `-o json`, and a dcgm scrape loop fetching every exporter through
  the API server's pod proxy every 30 s (dcgm-exporter's default collection interval). Each is
  run once with a warm discovery cache, its bytes counted at the server, scaled by its rate.
  `api_percent` = console bytes per minute / (json loops + scrape loop) × 100; budget ≤ 2 %.
- keys: key press to frame, from the write of the key into the terminal to the first output
  that carries the repainted row: on the Workloads view filtered to 40 inert marker Workloads
  (`spec.active: false`, so nothing else redraws them), `down`/`up` through them; each frame
  re-emits the row that gains the cursor, so its name in the output marks that frame. p50 / p99 /
  max; budget p99 < 17 ms (one 60 Hz frame).
- changes: from the server's write to the screen, under a steady stream of `--churn` Workload
  status writes per second (default 100) from the server: a new marker Workload is created on
  the server (its write time taken there) and the time its name appears in the filtered view
  is taken here; p50 / p99; budget p99 < 100 ms.

The clocks of both processes are the same machine's wall clock (time.time()).

Usage (repository root, project virtualenv with kueuetop installed, kubectl on PATH):

    python benchmarks/e2e.py                       # large, 10 minutes of steady state
    python benchmarks/e2e.py --minutes 2           # shorter steady window
    python benchmarks/e2e.py --scenario xl --minutes 10
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from _served import Server, get_json, sent, serve, set_churn

BENCH = "/_bench/"
FIRST_SCREEN_BUDGET = 0.5
KEY_P99_BUDGET_MS = 1000 / 60
CHANGE_P99_BUDGET_MS = 100.0
API_PERCENT_BUDGET = 2.0
RSS_GOAL_MB = {"large": 300.0, "xl": 1200.0}
SETTLE_S = 30.0  # after the first screen on the paused cluster, before its memory is read
CPU_GOAL_PERCENT = {"large": 10.0, "xl": 25.0}
SEED_WATCHES = (("clusterqueues", "-o", "wide"), ("jobs", "-A"), ("nodes",))
WATCH_PER_MINUTE = 30  # `watch` runs its command every 2 s by default
SCRAPE_PER_MINUTE = 2  # dcgm-exporter collects every 30 s (DCGM_EXPORTER_INTERVAL=30000)
CLK_TCK = os.sysconf("SC_CLK_TCK")
EXPORTER_APP = "nvidia-dcgm-exporter"  # the GPU Operator's label, as the simulator's exporters carry

_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1bP[^\x1b]*\x1b\\|\x1b[()][0-9A-Za-z]"
                      rb"|\x1b[=>78cDEHMNOZ]")
KEYS = {"down": b"\x1b[B", "up": b"\x1b[A", "home": b"\x1b[H", "enter": b"\r", "escape": b"\x1b",
        "ctrl+q": b"\x11"}


# ===================================================================== the console in a pty
class Console:
    """The real `kueuetop` in a pseudo-terminal; the output is read all the time and kept as
    (time, visible text) chunks with escape sequences removed."""

    def __init__(self, kubeconfig: Path, cols: int, rows: int, home: Path, extra: tuple[str, ...] = ()) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor", "HOME": str(home),
               "XDG_CONFIG_HOME": str(home / "config"), "XDG_STATE_HOME": str(home / "state"),
               "XDG_RUNTIME_DIR": str(home / "run"), "COLUMNS": str(cols), "LINES": str(rows)}
        (home / "run").mkdir(mode=0o700, parents=True, exist_ok=True)
        self.started = time.time()
        self.proc = subprocess.Popen([shutil.which("kueuetop") or "kueuetop", "--kubeconfig", str(kubeconfig), *extra],
                                     stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
                                     close_fds=True)
        os.close(slave)
        self.master = master
        self.lock = threading.Condition()
        self.chunks: list[tuple[float, str]] = []
        self.raw_bytes = 0
        self._tail = b""
        self.reader = threading.Thread(target=self._read, name="pty-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:
                break
            if not data:
                break
            now = time.time()
            # An escape sequence may be split across reads: keep an unfinished one for the next.
            data = self._tail + data
            cut = data.rfind(b"\x1b")
            if cut != -1 and len(data) - cut < 64 and not _ESCAPES.match(data, cut):
                data, self._tail = data[:cut], data[cut:]
            else:
                self._tail = b""
            text = _ESCAPES.sub(b"", data).decode("utf-8", "replace")
            with self.lock:
                self.raw_bytes += len(data)
                self.chunks.append((now, text))
                if len(self.chunks) > 20_000:  # keep the reader's memory bounded on long runs
                    del self.chunks[:10_000]
                self.lock.notify_all()

    def wait_for(self, pattern: str | re.Pattern[str], since: float, timeout: float) -> float | None:
        """Wall time of the first chunk written at or after `since` that matches, or None."""
        rx = re.compile(re.escape(pattern)) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        checked = 0
        with self.lock:
            while True:
                for i in range(checked, len(self.chunks)):
                    t, text = self.chunks[i]
                    if t >= since and rx.search(text):
                        return t
                checked = len(self.chunks)
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self.lock.wait(min(left, 0.5))

    def press(self, key: str) -> float:
        data = KEYS.get(key, key.encode())
        t = time.time()
        os.write(self.master, data)
        return t

    def type(self, text: str) -> None:
        for ch in text:
            self.press(ch)
            time.sleep(0.02)

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return -1.0

    def quit(self) -> float:
        """ctrl+q; seconds until the process exited (killed after 10 s)."""
        t0 = time.monotonic()
        if self.proc.poll() is None:
            self.press("ctrl+q")
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        took = time.monotonic() - t0
        os.close(self.master)
        return took


# ===================================================================== helpers
def stats(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"n": len(values), "min": round(ordered[0], 2), "median": round(statistics.median(ordered), 2),
            "p99": round(p99, 2), "max": round(ordered[-1], 2)}


def kubectl_env(server: Server, home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(server.kubeconfig),
            "KUBECACHEDIR": str(home / "kcache")}


def kubectl(env: dict[str, str], *args: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(["kubectl", *args], env=env, capture_output=True, timeout=600, check=True)
    return time.perf_counter() - t0


def counted(server: Server) -> dict[str, int]:
    return {k: v for k, v in sent(server)["bytes"].items() if k != "bench"}


def counted_by_resource(server: Server) -> dict[str, int]:
    return {k: v for k, v in sent(server).get("by_resource", {}).items() if not k.startswith("bench")}


def requests_by_resource(server: Server) -> dict[str, int]:
    return {k: v for k, v in sent(server).get("requests_by_resource", {}).items() if not k.startswith("bench")}


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}


def mark(server: Server, name: str) -> float:
    return float(get_json(f"{server.url}{BENCH}mark?name={name}")["written_at"])


# ===================================================================== the measurements
def counts(server: Server) -> dict[str, int]:
    """The objects the server holds per kind the console mirrors ({} from a server that does not
    count: the paused one serves every workload of the scenario)."""
    try:
        return dict(get_json(f"{server.url}{BENCH}counts").get("counts", {}))
    except OSError:  # urllib's HTTPError and URLError are OSErrors
        return {}


def first_screens(server: Server, work: Path, cols: int, rows: int, runs: int,
                  settled: dict[str, Any] | None = None) -> list[float]:
    """Seconds to `kube:live`, per run. With `settled`, the last run's console is left open for
    SETTLE_S more and its RSS then is filed there with the server's object counts: the memory
    the console needs for every object of the scenario at once."""
    out = []
    for i in range(runs):
        console = Console(server.kubeconfig, cols, rows, work / f"home-first-{i}")
        try:
            t = console.wait_for("kube:live", console.started, 600)
            if t is None:
                raise RuntimeError("the console never said kube:live")
            out.append(t - console.started)
            if settled is not None and i == runs - 1:
                time.sleep(SETTLE_S)
                settled.update({"seconds_after_live": SETTLE_S, "rss_mb": round(console.rss_mb(), 1),
                                "objects": counts(server)})
        finally:
            console.quit()
    return out


def rss_per_workloads(samples: list[tuple[float, float, dict[str, int]]]) -> float | None:
    """Least-squares MB of RSS per 1,000 Workloads the server holds, over `samples`."""
    pts = [(c.get("workloads", 0) / 1000, rss) for _t, rss, c in samples if c]
    if len(pts) < 2:
        return None
    mx, my = statistics.mean(p[0] for p in pts), statistics.mean(p[1] for p in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return round(sum((x - mx) * (y - my) for x, y in pts) / den, 2) if den else None


def kubectl_lists(server: Server, work: Path, runs: int) -> list[float]:
    env = kubectl_env(server, work / "kubectl-home")
    kubectl(env, "api-resources")  # fills the discovery cache, as on any workstation
    return [kubectl(env, "get", "workloads", "-A", "-o", "json") for _ in range(runs)]


def seeds_loops(server: Server, work: Path) -> dict[str, Any]:
    env = kubectl_env(server, work / "kubectl-home")
    per_run: dict[str, int] = {}
    for args in [*SEED_WATCHES, *[(a[0], *([a[1]] if a[1:2] == ("-A",) else []), "-o", "json")
                                  for a in SEED_WATCHES]]:
        before = counted(server)
        kubectl(env, "get", *args)
        per_run["kubectl get " + " ".join(args)] = sum(delta(counted(server), before).values())
    # The dcgm scrape loop: every exporter's /metrics through the API server's pod proxy.
    # (A loop of `curl`s through `kubectl proxy` in the seeds' style; the bytes are the same from
    # here, fetched 8 at a time so a round of 1,000 does not take minutes.)
    pods = get_json(f"{server.url}/api/v1/pods?labelSelector=app%3D{EXPORTER_APP}")["items"]
    before = counted(server)

    def fetch(pod: dict[str, Any]) -> int:
        meta = pod["metadata"]
        url = f"{server.url}/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}:9400/proxy/metrics"
        try:
            with urllib.request.urlopen(url, timeout=30) as resp:
                return len(resp.read())
        except OSError:
            return 0

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(fetch, pods))
    scrape = sum(delta(counted(server), before).values())
    table = sum(v for k, v in per_run.items() if "json" not in k) * WATCH_PER_MINUTE
    as_json = sum(v for k, v in per_run.items() if "json" in k) * WATCH_PER_MINUTE
    return {"bytes_per_run": per_run, "exporters": len(pods), "scrape_bytes_per_round": scrape,
            "watch_tables_per_minute": table, "watch_json_per_minute": as_json,
            "scrape_loop_per_minute": scrape * SCRAPE_PER_MINUTE,
            "bytes_per_minute": as_json + scrape * SCRAPE_PER_MINUTE}


def steady(server: Server, console: Console, minutes: float) -> dict[str, Any]:
    """RSS and CPU of the console, bytes at the server, over `minutes` on the Overview."""
    samples: list[tuple[float, float, dict[str, int]]] = []
    t0, cpu0, bytes0 = time.time(), console.cpu_seconds(), counted(server)
    res0, req0 = counted_by_resource(server), requests_by_resource(server)
    end = t0 + minutes * 60
    while time.time() < end and console.proc.poll() is None:
        samples.append((time.time() - t0, console.rss_mb(), counts(server)))
        time.sleep(min(10.0, max(0.0, end - time.time())))
    t1, cpu1, bytes1 = time.time(), console.cpu_seconds(), counted(server)
    by_res = delta(counted_by_resource(server), res0)
    by_req = delta(requests_by_resource(server), req0)
    samples.append((t1 - t0, console.rss_mb(), counts(server)))
    by_cat = delta(bytes1, bytes0)
    half = [s for s in samples if s[0] >= (t1 - t0) / 2]
    slope = 0.0
    if len(half) >= 2:
        xs, ys = [s[0] / 60 for s in half], [s[1] for s in half]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        den = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den if den else 0.0
    return {"seconds": round(t1 - t0, 1),
            "rss_mb": {"first": round(samples[0][1], 1), "max": round(max(s[1] for s in samples), 1),
                       "end": round(samples[-1][1], 1), "slope_mb_per_min": round(slope, 2)},
            # What the cluster held meanwhile: a live scale scenario's workloads still arrive, and
            # the memory a console needs follows them (the RSS per 1,000 Workloads over the run).
            "objects": {"first": samples[0][2], "end": samples[-1][2],
                        "workloads_per_minute": round((samples[-1][2].get("workloads", 0)
                                                       - samples[0][2].get("workloads", 0)) * 60 / (t1 - t0), 1)},
            "rss_mb_per_1000_workloads": rss_per_workloads(samples),
            "samples": [{"s": round(t, 1), "rss_mb": round(r, 1), **c} for t, r, c in samples],
            "cpu_percent": round((cpu1 - cpu0) / (t1 - t0) * 100, 1),
            "api_bytes_by_category_per_minute": {k: round(v * 60 / (t1 - t0)) for k, v in by_cat.items()},
            "api_bytes_by_resource_per_minute": {k: round(v * 60 / (t1 - t0))
                                                 for k, v in sorted(by_res.items(), key=lambda kv: -kv[1]) if v},
            # Requests over the window per resource; "list_start" are lists begun (a relist shows
            # there: an informer whose watch fell too far behind lists the whole resource again).
            "api_requests_by_resource": dict(sorted(by_req.items(), key=lambda kv: -kv[1])),
            "api_bytes_per_minute": round(sum(by_cat.values()) * 60 / (t1 - t0))}


def open_markers(console: Console, prefix: str) -> None:
    """The Workloads view, filtered to the marker rows. The filter is typed once the prompt shows
    (its placeholder, or the footer of an input: a busy console opens it later than a letter or
    two typed after `/`, and those would land on the table as commands), and it counts once the
    view's title shows it; else Escape and again."""
    prompt = re.compile(r"/filter  regex|\^q Quit\s*$", re.M)
    for _ in range(3):
        console.press("2")
        time.sleep(1.5)
        t = console.press("/")
        console.wait_for(prompt, t, 5.0)
        time.sleep(0.5)
        console.type(prefix)
        if console.wait_for(f"filter: {prefix}", t, 10.0) is not None:
            console.press("enter")
            time.sleep(1.0)
            return
        for _ in range(3):
            console.press("escape")
            time.sleep(0.3)
    raise RuntimeError(f"the Workloads view never showed the filter {prefix!r}")


def keys(server: Server, console: Console, rounds: int) -> dict[str, Any]:
    names = [f"bmk{i:03d}" for i in range(40)]
    for n in names:
        mark(server, n)
    open_markers(console, "bmk")
    if console.wait_for("bmk039", time.time() - 5, 30) is None:
        raise RuntimeError("the marker rows never reached the screen")
    time.sleep(3.0)  # let the markers' own first status updates settle
    console.press("home")
    time.sleep(0.5)
    lat: list[float] = []
    missed = 0
    rx = re.compile(r"bmk\d{3}")
    for r in range(rounds):
        key = "down" if (r // 39) % 2 == 0 else "up"
        t = console.press(key)
        seen = console.wait_for(rx, t, 2.0)
        if seen is None:
            missed += 1
        else:
            lat.append((seen - t) * 1000)
        time.sleep(0.1)
    console.press("escape")
    return {"presses": rounds, "missed": missed, "ms": stats(lat)}


def changes(server: Server, console: Console, churn: float, count: int) -> dict[str, Any]:
    open_markers(console, "bch")
    set_churn(server, churn)
    time.sleep(3.0)
    lat: list[float] = []
    missed = 0
    for i in range(count):
        name = f"bch{i:03d}"
        written = mark(server, name)
        seen = console.wait_for(name, written - 1.0, 10.0)
        if seen is None:
            missed += 1
        else:
            lat.append(max(0.0, seen - written) * 1000)
        time.sleep(0.5)
    state = set_churn(server, 0)
    return {"churn_writes_per_s": churn, "churn_writes": state["churn"]["writes"], "marks": count,
            "missed": missed, "ms": stats(lat)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="kueuetop-e2e-"))
    result: dict[str, Any] = {"scenario": args.scenario, "terminal": f"{args.cols}x{args.rows}", "live": True,
                              "console_args": list(args.console_arg)}
    try:
        # A live scale scenario starts nearly empty (its workloads arrive over the first hour), so
        # the first screen is timed where every workload already exists: the same scenario served
        # with all of them created (paused), from outside the console's process all the same.
        with serve(args.scenario, work, paused=True) as server:
            kube = kubectl_lists(server, work, args.runs)
            full: dict[str, Any] = {}
            firsts = first_screens(server, work, args.cols, args.rows, args.runs, settled=full)
            result["first_screen"] = {"cluster": "every workload present (served paused)",
                                      "console_s": stats(firsts), "kubectl_list_s": stats(kube),
                                      "ratio_median": round(statistics.median(firsts) / statistics.median(kube), 2),
                                      "budget": FIRST_SCREEN_BUDGET}
            result["memory_every_workload_present"] = {**full, "rss_goal_mb": RSS_GOAL_MB.get(args.scenario)}
        with serve(args.scenario, work, live=True) as server:
            result["sim_serve_startup_s"] = round(server.startup_s, 1)
            kube = kubectl_lists(server, work, args.runs)
            firsts = first_screens(server, work, args.cols, args.rows, args.runs)
            result["first_screen_live_start"] = {
                "cluster": "live, just started (its first instant)", "console_s": stats(firsts),
                "kubectl_list_s": stats(kube)}
            loops = seeds_loops(server, work)
            result["seeds_loops"] = loops
            console = Console(server.kubeconfig, args.cols, args.rows, work / "home-main", tuple(args.console_arg))
            try:
                if console.wait_for("kube:live", console.started, 600) is None:
                    raise RuntimeError("the console never said kube:live")
                time.sleep(10.0)  # the first GPU poll and position sweep are start-up, not steady state
                st = steady(server, console, args.minutes)
                st["api_percent_of_seeds_loops"] = round(st["api_bytes_per_minute"] / loops["bytes_per_minute"] * 100, 2)
                st["rss_goal_mb"] = RSS_GOAL_MB.get(args.scenario)
                st["cpu_goal_percent"] = CPU_GOAL_PERCENT.get(args.scenario)
                result["steady"] = st
                # A phase that fails is reported as such; the figures already taken are kept.
                try:
                    k = keys(server, console, args.key_presses)
                    k["budget_p99_ms"] = round(KEY_P99_BUDGET_MS, 1)
                    result["keys"] = k
                except RuntimeError as exc:
                    result["keys"] = {"error": str(exc)}
                try:
                    c = changes(server, console, args.churn, args.marks)
                    c["budget_p99_ms"] = CHANGE_P99_BUDGET_MS
                    result["changes"] = c
                except RuntimeError as exc:
                    result["changes"] = {"error": str(exc)}
            finally:
                result["quit_s"] = round(console.quit(), 2)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", default="large")
    p.add_argument("--minutes", type=float, default=10.0, help="steady-state window (default 10)")
    p.add_argument("--runs", type=int, default=3, help="first-screen and kubectl runs (default 3)")
    p.add_argument("--cols", type=int, default=160)
    p.add_argument("--rows", type=int, default=48)
    p.add_argument("--key-presses", type=int, default=200)
    p.add_argument("--churn", type=float, default=100.0, help="server-side Workload writes per second")
    p.add_argument("--marks", type=int, default=30)
    p.add_argument("--console-arg", action="append", default=[], metavar="ARG",
                   help="an extra argument for the measured console, e.g. --console-arg=--no-forecast (repeatable)")
    args = p.parse_args(argv)
    print(json.dumps(run(args), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
