"""The simulated API server under the `large` scenario (1,000 nodes, 20,000 Workloads).

Serves the scenario from its own process (so its memory is its own) *paused* (`_served.py`):
the cluster is built and settled once (nodes, queues), every Workload of the scenario is then
created at once, still pending, and the API server answers over that frozen store with no
simulation thread, so the numbers measure the server rather than the admission engine.
(Letting the engine admit 20,000 Workloads in one go takes minutes; `kueuetop sim serve large`
instead lets them arrive over the scenario's first hour.) Then it prints one JSON document:

- startup_s: `kueuetop sim serve NAME` from process start to its first answered request, a list
  of every ClusterQueue, for refarch, dws, skypilot, large and xl (median of --repeat starts,
  each start in `startup_runs_s`, and how many ClusterQueues that first answer held);
- ready_s: from process start until `sim serve` says its first instant — the scenario's
  first-instant workloads included — is settled and served (what a user waits for);
- paused_startup_s: the same for the paused server (it creates every Workload before listening);
- rss_mb / rss_peak_mb: the server's VmRSS / VmHWM from /proc/PID/status after loading;
- kubectl_get_workloads: seconds for `kubectl get workloads -A -o json` (real kubectl, with the
  kubeconfig the server wrote, discovery already cached) and the bytes it printed;
- paginated_list: seconds to list every Workload through the `kubernetes` client with
  `limit=500`, continue tokens and `_preload_content=False`;
- watch: one watch on Workloads while a writer thread merge-patches labels of Workloads as fast as
  it can for WATCH_SECONDS; events per second delivered during the window, patches per second,
  and how long the stream took to catch up after the writer stopped.

Usage (from the repository root, in the project's virtualenv; needs kubectl on PATH):

    python benchmarks/apiserver.py                 # all measurements, about a minute
    python benchmarks/apiserver.py --scenario xl   # the 5,000-node, 100,000-workload scenario
    python benchmarks/apiserver.py --no-builtins   # skip the `sim serve` startup times
    python benchmarks/apiserver.py --repeat 5      # five starts per scenario (default 3)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from _served import KUEUE, VERSION, Server, memory_mb, serve
from kubernetes import client

PAGE = 500
WATCH_SECONDS = 5.0
STARTUP_SCENARIOS = ("refarch", "dws", "skypilot", "large", "xl")


def kubectl_get_workloads(server: Server, home: Path) -> dict[str, Any]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return {"skipped": "kubectl not on PATH"}
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(server.kubeconfig),
           "KUBECACHEDIR": str(home / "cache")}
    # Fill kubectl's discovery cache first: the number should be the list, not discovery.
    subprocess.run([kubectl, "get", "clusterqueues"], env=env, capture_output=True, timeout=60, check=True)
    t0 = time.perf_counter()
    out = subprocess.run([kubectl, "get", "workloads", "-A", "-o", "json"], env=env, capture_output=True,
                         timeout=120, check=True)
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 3), "bytes": len(out.stdout),
            "items": len(json.loads(out.stdout)["items"])}


def api_client(url: str) -> client.ApiClient:
    cfg = client.Configuration()
    cfg.host = url
    cfg.connection_pool_maxsize = 4
    return client.ApiClient(cfg)


def paginated_list(custom: client.CustomObjectsApi) -> tuple[dict[str, Any], list[tuple[str, str]], str]:
    """Every Workload in pages of PAGE; returns the figures, (namespace, name) keys, and the
    resourceVersion of the list (where a watch can start)."""
    keys: list[tuple[str, str]] = []
    token, pages, rv = "", 0, ""
    t0 = time.perf_counter()
    while True:
        kwargs: dict[str, Any] = {"limit": PAGE, "_preload_content": False}
        if token:
            kwargs["_continue"] = token
        resp = custom.list_cluster_custom_object(KUEUE, VERSION, "workloads", **kwargs)
        doc = json.loads(resp.data)
        pages += 1
        rv = rv or doc["metadata"]["resourceVersion"]
        keys.extend((i["metadata"]["namespace"], i["metadata"]["name"]) for i in doc["items"])
        token = doc["metadata"].get("continue") or ""
        if not token:
            break
    seconds = time.perf_counter() - t0
    return {"seconds": round(seconds, 3), "pages": pages, "items": len(keys)}, keys, rv


class WatchCounter(threading.Thread):
    """Reads one watch stream line by line and timestamps every event."""

    def __init__(self, url: str, resource_version: str) -> None:
        super().__init__(name="watch", daemon=True)
        self.url = (f"{url}/apis/{KUEUE}/{VERSION}/workloads?watch=true&resourceVersion={resource_version}"
                    f"&timeoutSeconds=120")
        self.stamps: list[float] = []
        self.ready = threading.Event()
        self.error: str = ""

    def run(self) -> None:
        try:
            with urllib.request.urlopen(self.url, timeout=30) as resp:
                self.ready.set()
                for line in resp:
                    if line.strip():
                        self.stamps.append(time.perf_counter())
        except Exception as exc:  # the measurement reports it instead of dying
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.ready.set()


def patch_labels(custom: client.CustomObjectsApi, keys: list[tuple[str, str]], until: float,
                 counter: list[int]) -> None:
    i = 0
    while time.perf_counter() < until:
        ns, name = keys[i % len(keys)]
        custom.patch_namespaced_custom_object(KUEUE, VERSION, ns, "workloads", name,
                                              {"metadata": {"labels": {"kueuetop.io/bench": str(i)}}},
                                              _content_type="application/merge-patch+json",
                                              _preload_content=False)
        i += 1
    counter.append(i)


def watch_throughput(url: str, custom: client.CustomObjectsApi, keys: list[tuple[str, str]],
                     resource_version: str) -> dict[str, Any]:
    watcher = WatchCounter(url, resource_version)
    watcher.start()
    watcher.ready.wait(10)
    time.sleep(0.2)  # let the stream settle on the server side
    skipped = len(watcher.stamps)  # events from the simulation before the writer starts
    counter: list[int] = []
    t0 = time.perf_counter()
    writer = threading.Thread(target=patch_labels, args=(custom, keys, t0 + WATCH_SECONDS, counter))
    writer.start()
    writer.join(WATCH_SECONDS + 30)
    t_end = time.perf_counter()
    patches = counter[0] if counter else 0
    # Give the stream a bounded time to deliver what was written.
    deadline = time.perf_counter() + 10
    while len(watcher.stamps) - skipped < patches and time.perf_counter() < deadline:
        time.sleep(0.01)
    stamps = watcher.stamps[skipped:]
    in_window = sum(1 for s in stamps if s <= t_end)
    caught_up = (stamps[patches - 1] - t_end) if patches and len(stamps) >= patches else None
    return {"seconds": round(t_end - t0, 3), "patches": patches,
            "patches_per_s": round(patches / (t_end - t0), 1),
            "events": len(stamps), "events_per_s": round(in_window / (t_end - t0), 1),
            "catch_up_s": None if caught_up is None else round(max(0.0, caught_up), 3),
            "error": watcher.error or None}


def serve_startups(workdir: Path, repeat: int) -> dict[str, Any]:
    """`kueuetop sim serve` start → first answered list, per scenario, `repeat` times."""
    runs: dict[str, list[float]] = {}
    ready: dict[str, list[float | None]] = {}
    first: dict[str, int] = {}
    for name in STARTUP_SCENARIOS:
        for _ in range(repeat):
            with serve(name, workdir) as s:
                runs.setdefault(name, []).append(round(s.startup_s, 3))
                ready.setdefault(name, []).append(None if s.ready_s is None else round(s.ready_s, 3))
                first[name] = s.first_items
    return {"startup_s": {n: round(statistics.median(r), 3) for n, r in runs.items()},
            "ready_s": {n: round(statistics.median(r), 3) if None not in r else None for n, r in ready.items()},
            "startup_runs_s": runs, "ready_runs_s": ready, "startup_first_answer_clusterqueues": first}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="large")
    p.add_argument("--no-builtins", action="store_true", help="skip the `sim serve` startup times")
    p.add_argument("--repeat", type=int, default=3, help="starts per scenario for startup_s (default 3)")
    args = p.parse_args(argv)
    result: dict[str, Any] = {"scenario": args.scenario, "paused": True}
    with tempfile.TemporaryDirectory(prefix="kueuetop-bench-") as tmp:
        workdir = Path(tmp)
        if not args.no_builtins:
            result.update(serve_startups(workdir, max(1, args.repeat)))
        with serve(args.scenario, workdir, paused=True) as server:
            result["paused_startup_s"] = round(server.startup_s, 3)
            result.update(memory_mb(server.proc.pid))
            result["kubectl_get_workloads"] = kubectl_get_workloads(server, workdir)
            api = api_client(server.url)
            try:
                custom = client.CustomObjectsApi(api)
                result["paginated_list"], keys, rv = paginated_list(custom)
                result["watch"] = watch_throughput(server.url, custom, keys, rv)
            finally:
                api.close()
            result.update({f"after_{k}": v for k, v in memory_mb(server.proc.pid).items()})
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
