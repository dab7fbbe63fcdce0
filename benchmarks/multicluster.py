"""kueuetop across several clusters: `kueuetop clusters --all-contexts` against `sim serve
multikueue-xl` (a MultiKueue manager with 20,000 Jobs arriving over 10 minutes, ten workers of
1,000 GPU nodes each), measured from outside. Prints one JSON document:

- first_screen: whole `kueuetop clusters --all-contexts -o json` processes (the headless form of
  the Clusters view's first screen: one informer set per context, all opened side by side, every
  list synced), three runs each with every context's lists and watches on the one shared watch
  loop (`shared_loop`, the default) and with a thread per watch (`thread_per_watch`,
  KUEUETOP_WATCH_THREADS=1, as before the loop): wall seconds (min / median), the child's peak
  RSS (MB) and its peak thread count (sampled from /proc every 20 ms).
- single: the same for one context at a time (`kueuetop snapshot -o json --context X`), the
  one-cluster console's data path, for the manager and the first worker.
- api_bytes: bytes each cluster's API server sent to one `clusters --all-contexts` run (either
  way), per context (through a counting TCP relay per cluster, headers included), beside what one
  `snapshot --context X` run costs that cluster alone (snapshot also scrapes the GPU exporters
  through the API server's pod proxy, which `clusters` does not).
- heatmap_by_cluster: the console's `:gpu` pane (every worker's GPUs grouped by cluster, drawn at
  200×50) in this process: every GPU of the first worker's nodes (those its budgeted scrape did
  not read drawn stale), given to each worker.

Labelled as measured: the simulated clusters run in the child at --speed (default 1) and share
the machine's cores with the measured process.

Usage (repository root, project virtualenv):

    python benchmarks/multicluster.py                        # multikueue-xl, after 60 s of arrivals
    python benchmarks/multicluster.py --scenario multikueue --settle 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kueuetop.sources.multi_context import WATCH_THREADS_ENV
from tests.byte_counter import ByteCounter


def _threads(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("Threads:")), 0)
    except OSError:
        return 0


Run = tuple[float, float, int, str, int]


def _run(argv: list[str], env: dict[str, str], stdout: list[str] | None = None) -> Run:
    """(wall seconds, this child's own peak RSS MB, exit code, stderr tail, peak thread count) of
    one kueuetop process; its output is appended to `stdout` when given. Threads are sampled from
    /proc every 20 ms (0 where /proc is not there)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "kueuetop", *argv], stdout=out, stderr=err, env=env)
        peak_threads = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)  # this child's rusage, not the largest child's
            if pid:
                break
            peak_threads = max(peak_threads, _threads(proc.pid))
            time.sleep(0.02)
        wall = time.monotonic() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if stdout is not None:
            out.seek(0)
            stdout.append(out.read().decode(errors="replace"))
        err.seek(0)
        return (wall, usage.ru_maxrss / 1024, proc.returncode, err.read().decode(errors="replace")[-500:],
                peak_threads)


def _stats(runs: list[Run]) -> dict[str, Any]:
    walls = [r[0] for r in runs]
    return {"seconds_min": round(min(walls), 3), "seconds_median": round(statistics.median(walls), 3),
            "rss_peak_mb": round(max(r[1] for r in runs), 1), "threads_peak": max(r[4] for r in runs),
            "exit_codes": sorted({r[2] for r in runs}), "stderr": runs[-1][3] or None}


def _heatmap(snapshot: str, workers: list[str], repeats: int = 5) -> dict[str, Any]:
    """The Clusters console's `:gpu` pane, in process: every worker's GPU samples grouped by
    cluster (views.clusters.gpus_by_cluster) and drawn at 200×50 (tui.heatmap.fleet_heatmap).
    The samples are one worker's scrape (its `snapshot` document) given to every worker: the
    workers of multikueue-xl have the same shape, and scraping ten fleets is not what this times."""
    from kueuetop.kueue.gpu import GpuSample
    from kueuetop.tui.heatmap import fleet_heatmap
    from kueuetop.tui.themes import load_themes
    from kueuetop.views.clusters import ClusterRead, gpus_by_cluster

    doc = json.loads(snapshot)
    scraped = {(g["node"], g["index"]): g for g in doc.get("gpus") or []}
    samples = []
    # Every GPU of every node: the budgeted scrape reads only some nodes per look; the others are
    # drawn stale, as the console draws them.
    for n in doc.get("nodes") or []:
        for i in range(int(n.get("gpus") or 0)):
            g = scraped.get((n["name"], str(i)))
            samples.append(GpuSample(n["name"], str(i), util=g.get("util"), pod=g.get("pod") or "") if g
                           else GpuSample(n["name"], str(i), stale=True))
    pools = {n["name"]: n.get("pool") or "" for n in doc.get("nodes") or []}
    reads = [ClusterRead(w, gpus=samples, pools=pools) for w in workers]
    theme, _ = load_themes().get(None, no_color=False)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        merged, group = gpus_by_cluster(reads)
        hm = fleet_heatmap(merged, 200, 50, theme=theme, pool_of=group)
        times.append(time.perf_counter() - t0)
    return {"gpus": len(merged), "clusters": len(workers), "gpus_per_cell": hm.gpus_per_cell,
            "seconds_min": round(min(times), 4), "seconds_median": round(statistics.median(times), 4),
            "scraped_gpus_per_worker": len(scraped),
            "samples_from": "one worker's nodes and snapshot scrape, given to every worker"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scenario", default="multikueue-xl")
    ap.add_argument("--speed", type=float, default=1.0)
    ap.add_argument("--settle", type=float, default=60.0, help="wall seconds of arrivals before measuring")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="kueuetop-multicluster-"))
    kubeconfig = work / "kubeconfig"
    t0 = time.monotonic()
    serve = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", args.scenario, "--speed",
                              f"{args.speed:g}", "--kubeconfig", str(kubeconfig)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    relays: dict[str, ByteCounter] = {}
    try:
        while not kubeconfig.exists():
            if serve.poll() is not None:
                raise SystemExit(f"sim serve {args.scenario} failed: {serve.stderr.read()[-2000:] if serve.stderr else ''}")
            time.sleep(0.1)
        startup = time.monotonic() - t0
        time.sleep(args.settle)
        cfg = yaml.safe_load(kubeconfig.read_text())
        contexts = [c["name"] for c in cfg["contexts"]]
        # The same kubeconfig through counting relays: what each cluster's server sends is counted.
        counted = work / "counted.kubeconfig"
        for c in cfg["clusters"]:
            relays[c["name"]] = ByteCounter(c["cluster"]["server"])
            c["cluster"]["server"] = relays[c["name"]].url
        counted.write_text(yaml.safe_dump(cfg))
        env = dict(os.environ)
        common = ["--kubeconfig", str(counted), "-o", "json", "--timeout", "120s"]

        def bytes_out() -> dict[str, int]:
            return {n: r.bytes_out for n, r in relays.items()}

        # The shared watch loop (the default) and, as before it, a thread per watch.
        first_screen: dict[str, Any] = {}
        clusters_bytes: dict[str, dict[str, int]] = {}
        for mode, flag in (("shared_loop", "0"), ("thread_per_watch", "1")):
            runs: list[Run] = []
            for i in range(args.runs):
                b0 = bytes_out()
                runs.append(_run(["clusters", "--all-contexts", *common], {**env, WATCH_THREADS_ENV: flag}))
                if i == 0:
                    clusters_bytes[mode] = {n: v - b0[n] for n, v in bytes_out().items()}
            first_screen[mode] = _stats(runs)
        single: dict[str, Any] = {}
        single_bytes: dict[str, int] = {}
        worker_doc: list[str] = []
        for ctx in (contexts[0], contexts[1]):  # the manager and the first worker
            runs = []
            for i in range(args.runs):
                b0 = bytes_out()
                runs.append(_run(["snapshot", "--context", ctx, *common], env,
                                 worker_doc if ctx == contexts[1] and i == 0 else None))
                if i == 0:
                    single_bytes[ctx] = bytes_out()[ctx] - b0[ctx]
            single[ctx] = _stats(runs)
        doc = {
            "benchmark": "multicluster", "scenario": args.scenario, "speed": args.speed,
            "settle_seconds": args.settle, "serve_startup_seconds": round(startup, 2),
            "contexts": contexts, "cpu_count": os.cpu_count(),
            "first_screen": first_screen,
            "single": single,
            "api_bytes": {"clusters_all_contexts": clusters_bytes, "snapshot_one_context": single_bytes},
            "heatmap_by_cluster": _heatmap(worker_doc[0], contexts[1:]) if worker_doc and worker_doc[0] else None,
        }
        print(json.dumps(doc, indent=2))
        return 0
    finally:
        for r in relays.values():
            r.stop()
        serve.terminate()
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()


if __name__ == "__main__":
    raise SystemExit(main())
