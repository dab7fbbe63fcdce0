"""kueuetop against a live (simulated) API server at scale: the §5 budgets that need a cluster.

The scenario (`large`: 1,000 nodes × 8 GPUs, 500 ClusterQueues, 2,000 LocalQueues, 20,000
Workloads; `xl`: 5,000 nodes, 100,000 Workloads) is served *paused* from a child process
(`_served.py`: every Workload created at once, pending, no simulation thread), which also counts
the bytes it writes. This process is the console's data layer: `connect()` + `KubeSources` +
`Store`, exactly as `kueuetop` starts them (no TUI). Prints one JSON document:

- headless_snapshot: whole `kueuetop snapshot -o json` processes against `kubectl get workloads
  -A -o json`, timed from outside, three runs each (min / median); budget ≤ 0.5× (§5). The
  server is paused here; the same command against a live `sim serve large` is in the notes.
- first_snapshot: `seconds` from `connect()` until `KubeSources.synced()` (every informer has
  listed and its list is in the store), against `kubectl_seconds`, the sum of
  `kubectl get clusterqueues,localqueues,workloads,resourceflavors,cohorts,nodes -A -o json`
  and the two pod lists kueuetop makes (`-l kueue.x-k8s.io/podset`,
  `-l kueue.x-k8s.io/managed=true,!kueue.x-k8s.io/podset`), run one after the other with
  kubectl's discovery cache already filled (so kubectl pays for the lists only, while kueuetop's
  time includes its discovery). `ratio` = seconds / kubectl_seconds; budget ≤ 1.5.
- store_apply: 20 rounds, each 1,000 different Workloads of the synced store changing status
  (even rounds: admitted, with QuotaReserved/Admitted conditions and an admission; odd rounds:
  a new QuotaReserved=False message). `parse_ms`: what the informer thread does for them —
  `json.loads` of each watch line and the informer's own handling (parse into model objects,
  build the store event); `apply_ms`: one `Store.apply_batch` of the 1,000 events (store lock
  held, indexes updated, subscribers notified); `snapshot_ms`: rebuilding the engine snapshot the
  screen and previews read after that batch. Median and p99 of each; budget: apply (+ the
  screen's share, not measured here: kueuetop has no table model yet) < 100 ms.
- memory: this process's VmRSS right after sync (`rss_mb`) and its peak (`rss_peak_mb`, the
  transient of decoding list pages); budget 400 MB on large, 2 GB on xl.
- traffic (skipped with --skip-traffic): bytes the server wrote to kueuetop's connections (watch
  streams, visibility polls, any relists; HTTP headers included) during TRAFFIC_SECONDS of
  steady state, while the child makes `--churn` Workload status writes per second (default 10,
  a pending-queue trickle; `--churn 0` measures the idle floor: bookmarks and queue-position
  polls), scaled to a minute; queue positions are polled, as the console does, only for the
  ClusterQueues of one screen of the workloads view (`position_focus_cluster_queues`); against the seeds' way of watching: three terminals running
  `watch -n 2 kubectl get …` (`clusterqueues -o wide`, `jobs -A`, `nodes`), each command run
  once here with a warm discovery cache, its response bytes counted the same way, ×30 per
  minute. `percent` = kueuetop / kubectl × 100; budget < 2 %.

Usage (repository root, project virtualenv, kubectl on PATH):

    python benchmarks/live.py                          # large: about 1.5 minutes on 2 cores
    python benchmarks/live.py --skip-traffic           # without the 60 s traffic window (~45 s)
    python benchmarks/live.py --churn 0                # traffic of an idle cluster
    python benchmarks/live.py --scenario xl            # 100,000 Workloads: about 4 minutes
                                                       # (2.5 with --skip-traffic), ~2 GB RAM
                                                       # free for the server child and kubectl
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _served import Server, memory_mb, sent, serve, set_churn

from kueuetop.sources.connection import connect
from kueuetop.sources.informer import Informer, object_key
from kueuetop.sources.kube import MANAGED_LABEL, PODSET_LABEL, KubeSources, resource_specs
from kueuetop.sources.kube_http import request
from kueuetop.store import Store, StoreEvent
from kueuetop.store import events as K

SNAPSHOT_KINDS = "clusterqueues,localqueues,workloads,resourceflavors,cohorts,nodes"
POD_SELECTORS = (PODSET_LABEL, f"{MANAGED_LABEL}=true,!{PODSET_LABEL}")
SEED_WATCHES = (("clusterqueues", "-o", "wide"), ("jobs", "-A"), ("nodes",))
WATCH_PER_MINUTE = 30  # `watch -n 2`
TRAFFIC_SECONDS = 60.0
BATCH = 1000
ROUNDS = 20
# ARCHITECTURE §5
RATIO_BUDGET = 1.5
APPLY_BUDGET_MS = 100.0
TRAFFIC_BUDGET_PERCENT = 2.0
RSS_BUDGET_MB = {"large": 400.0, "xl": 2048.0}


# ===================================================================== helpers
def kubectl_env(server: Server, home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "KUBECONFIG": str(server.kubeconfig),
            "KUBECACHEDIR": str(home / "cache")}


def kubectl(env: dict[str, str], *args: str, timeout: float = 600) -> tuple[float, bytes]:
    """Seconds and stdout of one kubectl run (fails loudly: a broken run must not become a number)."""
    t0 = time.perf_counter()
    out = subprocess.run(["kubectl", *args], env=env, capture_output=True, timeout=timeout, check=True)
    return time.perf_counter() - t0, out.stdout


def server_bytes(server: Server) -> dict[str, int]:
    return counters(server)[0]


def counters(server: Server) -> tuple[dict[str, int], dict[str, int]]:
    """Bytes and requests per category, without the benchmark's own control requests."""
    doc = sent(server)
    return ({k: v for k, v in doc["bytes"].items() if k != "bench"},
            {k: v for k, v in doc["requests"].items() if k != "bench"})


def diff(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def ms(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "p99": round(p99(values), 2),
            "max": round(max(values), 2)}


# ===================================================================== 0. headless snapshot
HEADLESS_BUDGET_RATIO = 0.5  # ARCHITECTURE §5: `snapshot -o json` ≤ 0.5× the same kubectl list


def headless_snapshot(server: Server, env: dict[str, str], runs: int = 3) -> dict[str, Any]:
    """Whole processes, timed from outside: `kueuetop snapshot -o json` (into a pipe, as a script
    runs it) against `kubectl get workloads -A -o json`, `runs` of each, alternating."""
    kt, ct = [], []
    kenv = {**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    for _ in range(runs):
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, "-m", "kueuetop", "snapshot", "-o", "json", "--timeout", "600s"],
                           env=kenv, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:  # a broken run must not become a number
            raise RuntimeError(f"kueuetop snapshot failed: {p.stderr.strip()}")
        kt.append(time.perf_counter() - t0)
        ct.append(kubectl(env, "get", "workloads", "-A", "-o", "json")[0])
    ratio = statistics.median(kt) / statistics.median(ct)
    return {"kueuetop_s": {"min": round(min(kt), 2), "median": round(statistics.median(kt), 2)},
            "kubectl_s": {"min": round(min(ct), 2), "median": round(statistics.median(ct), 2)},
            "ratio": round(ratio, 2), "budget_ratio": HEADLESS_BUDGET_RATIO, "ok": ratio <= HEADLESS_BUDGET_RATIO}


# ===================================================================== 1. first snapshot
def kueuetop_sync(server: Server, timeout: float) -> tuple[float, Any, Store, KubeSources]:
    t0 = time.perf_counter()
    conn = connect(kubeconfig=str(server.kubeconfig))
    store = Store()
    sources = KubeSources(conn, store).start()
    deadline = t0 + timeout
    while not sources.synced():
        if time.perf_counter() > deadline:
            sources.stop()
            raise RuntimeError(f"kueuetop did not sync within {timeout:.0f}s: "
                               f"{ {k: v.state.value for k, v in store.sources().items()} }")
        time.sleep(0.005)  # the console polls its first frame no faster than this
    return time.perf_counter() - t0, conn, store, sources


def kubectl_snapshot(env: dict[str, str]) -> dict[str, Any]:
    seconds, out = kubectl(env, "get", SNAPSHOT_KINDS, "-A", "-o", "json")
    items, nbytes = len(json.loads(out)["items"]), len(out)
    del out
    runs = [round(seconds, 3)]
    for selector in POD_SELECTORS:
        s, pods = kubectl(env, "get", "pods", "-A", "-l", selector, "-o", "json")
        runs.append(round(s, 3))
        items += len(json.loads(pods)["items"])
        nbytes += len(pods)
    return {"seconds": round(sum(runs), 3), "runs_s": runs, "items": items, "stdout_bytes": nbytes}


# ===================================================================== 2. store apply
def wire_objects(conn: Any, sources: tuple[str, ...] = (K.WORKLOADS, K.LOCAL_QUEUES, K.CLUSTER_QUEUES),
                 ) -> dict[tuple[str, tuple[str, str]], dict[str, Any]]:
    """(kind, key) → the object as the server sends it, listed once: the console's store keeps
    parsed objects only, and the benchmark builds its watch lines from wire objects."""
    out: dict[tuple[str, tuple[str, str]], dict[str, Any]] = {}
    for spec in resource_specs(conn):
        if spec.source not in sources:
            continue
        for item in (request(conn.api, spec.path, timeout=120.0) or {}).get("items") or ():
            key = object_key(item)
            if key is not None:
                item.setdefault("apiVersion", spec.api_version)
                item.setdefault("kind", spec.api_kind)
                out[(spec.kind, key)] = item
    return out


def changed_status(raw: dict[str, Any], wire: Mapping[tuple[str, tuple[str, str]], dict[str, Any]],
                   admitted: bool, stamp: str) -> dict[str, Any]:
    """The Workload as the next watch event would carry it: only its status differs."""
    wl = copy.deepcopy(raw)
    meta, spec = wl["metadata"], wl.get("spec") or {}
    if not admitted:
        wl["status"] = {"conditions": [{
            "type": "QuotaReserved", "status": "False", "reason": "Pending", "lastTransitionTime": stamp,
            "message": "couldn't assign flavors to pod set main: insufficient unused quota for "
                       "nvidia.com/gpu in flavor h100, 8 more needed"}]}
        return wl
    lq = wire.get((K.LOCAL_QUEUES, (meta["namespace"], spec.get("queueName", "")))) or {}
    cq = (lq.get("spec") or {}).get("clusterQueue", "")
    cq_raw = wire.get((K.CLUSTER_QUEUES, ("", cq))) or {}
    groups = (cq_raw.get("spec") or {}).get("resourceGroups") or [{}]
    flavor = ((groups[0].get("flavors") or [{}])[0]).get("name", "default")
    assignments = []
    for ps in spec.get("podSets") or ():
        requests: dict[str, str] = {}
        for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or ():
            requests.update((c.get("resources") or {}).get("requests") or {})
        assignments.append({"name": ps.get("name", "main"), "count": ps.get("count", 1),
                            "flavors": dict.fromkeys(requests, flavor), "resourceUsage": requests})
    cond = {"status": "True", "lastTransitionTime": stamp, "message": f"Quota reserved in ClusterQueue {cq}"}
    wl["status"] = {"admission": {"clusterQueue": cq, "podSetAssignments": assignments},
                    "conditions": [{"type": "QuotaReserved", "reason": "QuotaReserved", **cond},
                                   {"type": "Admitted", "reason": "Admitted", **cond}]}
    return wl


def store_apply(conn: Any, store: Store) -> dict[str, Any]:
    spec = next(s for s in resource_specs(conn) if s.source == K.WORKLOADS)
    keys = sorted(store.keys(K.WORKLOADS))
    events: list[StoreEvent] = []
    # The informer's own event handling, fed from bytes, is the parse cost the console pays.
    informer = Informer(conn.api, spec, store, events.append)
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    wire = wire_objects(conn)
    parse_ms, apply_ms, snapshot_ms, changed = [], [], [], []
    store.snapshot()  # warm: the screen keeps one
    for r in range(ROUNDS):
        chunk = [keys[(r * BATCH + i) % len(keys)] for i in range(BATCH)]
        lines = []
        for i, key in enumerate(chunk):
            wl = changed_status(wire.get((K.WORKLOADS, key)) or {}, wire, r % 2 == 0, stamp)
            wl["metadata"]["resourceVersion"] = str(10**9 + r * BATCH + i)
            lines.append(json.dumps({"type": "MODIFIED", "object": wl}).encode())
        events.clear()
        t0 = time.perf_counter()
        for line in lines:
            informer._handle(json.loads(line))
        t1 = time.perf_counter()
        result = store.apply_batch(events)
        t2 = time.perf_counter()
        store.snapshot()
        t3 = time.perf_counter()
        parse_ms.append((t1 - t0) * 1000)
        apply_ms.append((t2 - t1) * 1000)
        snapshot_ms.append((t3 - t2) * 1000)
        changed.append(len(result.get(K.WORKLOADS)))
    return {"batch": BATCH, "rounds": ROUNDS, "store_workloads": store.count(K.WORKLOADS),
            "changed_per_batch_min": min(changed), "parse_ms": ms(parse_ms), "apply_ms": ms(apply_ms),
            "snapshot_ms": ms(snapshot_ms),
            "apply_plus_snapshot_ms_p99": round(p99([a + s for a, s in zip(apply_ms, snapshot_ms, strict=True)]),
                                                2)}


# ===================================================================== 4. traffic
def wait_for_position_sweep(sources: Any, timeout: float = 300.0) -> float:
    """Steady state starts once every ClusterQueue's queue positions have been read once: the
    initial sweep (bounded to a few ClusterQueues per poll) is start-up cost, like the lists."""
    t0 = time.perf_counter()
    poller = getattr(sources, "visibility", None)
    while poller is not None and not poller.swept() and time.perf_counter() - t0 < timeout:
        time.sleep(0.5)
    return time.perf_counter() - t0


SCREEN_ROWS = 48  # a 200×60 terminal's workloads view


def console_focus(store: Any) -> set[str]:
    """What the console asks positions for: the ClusterQueues of one screen of the workloads view
    (default sort: name), as WorkloadsView.position_focus computes it."""
    wls = sorted(store.objects(K.WORKLOADS).items(), key=lambda kv: (kv[1].name, kv[1].namespace))
    cqs: set[str] = set()
    for _key, wl in wls[: 3 * SCREEN_ROWS]:
        lq = store.get(K.LOCAL_QUEUES, (wl.namespace, wl.queue_name))
        if lq is not None:
            cqs.add(lq.cluster_queue)
    return cqs


def kueuetop_traffic(server: Server, churn: float, sources: Any, store: Any) -> dict[str, Any]:
    focus = console_focus(store)
    store.set_position_focus(focus)
    sweep_s = wait_for_position_sweep(sources)
    set_churn(server, churn)
    time.sleep(2.0)  # let the first churn events and any pending poll finish before counting
    (before, req0), c0 = counters(server), time.perf_counter()
    time.sleep(TRAFFIC_SECONDS)
    (after, req1), c1 = counters(server), time.perf_counter()
    state = set_churn(server, 0)
    by_kind = diff(after, before)
    per_minute = sum(by_kind.values()) * 60.0 / (c1 - c0)
    return {"seconds": round(c1 - c0, 1), "position_sweep_s": round(sweep_s, 1),
            "position_focus_cluster_queues": len(focus), "churn_writes_per_s": churn, "churn_writes": state["churn"]["writes"],
            "bytes_by_category": by_kind, "requests_by_category": diff(req1, req0),
            "bytes_per_minute": round(per_minute)}


def kubectl_traffic(server: Server, env: dict[str, str]) -> dict[str, Any]:
    per_command = {}
    for args in SEED_WATCHES:
        kubectl(env, "get", *args)  # a terminal under `watch` has discovery cached after its first run
        before = server_bytes(server)
        kubectl(env, "get", *args)
        per_command[f"kubectl get {' '.join(args)}"] = sum(diff(server_bytes(server), before).values())
    per_minute = sum(per_command.values()) * WATCH_PER_MINUTE
    return {"bytes_per_run": per_command, "runs_per_minute": WATCH_PER_MINUTE, "bytes_per_minute": per_minute}


# ===================================================================== main
def run(scenario: str, skip_traffic: bool, churn: float) -> dict[str, Any]:
    result: dict[str, Any] = {"scenario": scenario, "paused": True}
    rss_budget = RSS_BUDGET_MB[scenario]
    sync_timeout = 600.0 if scenario == "xl" else 180.0
    with tempfile.TemporaryDirectory(prefix="kueuetop-bench-") as tmp, \
            serve(scenario, Path(tmp), paused=True, count_bytes=True) as server:
        result["server_startup_s"] = round(server.startup_s, 1)
        env = kubectl_env(server, Path(tmp))
        kubectl(env, "get", "clusterqueues", "-o", "name")  # fill kubectl's discovery cache
        result["headless_snapshot"] = headless_snapshot(server, env)

        gc.collect()
        seconds, conn, store, sources = kueuetop_sync(server, sync_timeout)
        mem = memory_mb("self")
        result["memory"] = {**mem, "budget_mb": rss_budget, "ok": mem["rss_mb"] < rss_budget}
        counts = {k: store.count(k) for k in (K.CLUSTER_QUEUES, K.LOCAL_QUEUES, K.WORKLOADS, K.NODES, K.PODS)}
        snap = kubectl_snapshot(env)
        ratio = seconds / snap["seconds"]
        result["first_snapshot"] = {"seconds": round(seconds, 3), "objects": counts, "kubectl_seconds": snap["seconds"],
                                    "kubectl": snap, "ratio": round(ratio, 2),
                                    "budget_ratio": RATIO_BUDGET, "ok": ratio <= RATIO_BUDGET}
        try:
            if not skip_traffic:
                kt = kueuetop_traffic(server, churn, sources, store)
        finally:
            sources.stop()
        if not skip_traffic:
            kc = kubectl_traffic(server, env)
            pct = 100.0 * kt["bytes_per_minute"] / kc["bytes_per_minute"]
            result["traffic"] = {"kueuetop": kt, "kubectl_watch": kc, "percent": round(pct, 2),
                                 "budget_percent": TRAFFIC_BUDGET_PERCENT, "ok": pct < TRAFFIC_BUDGET_PERCENT}
    # The server is gone: the store-apply rounds have the machine to themselves.
    sa = store_apply(conn, store)
    sa["budget_ms"] = APPLY_BUDGET_MS
    sa["ok"] = sa["apply_ms"]["p99"] < APPLY_BUDGET_MS
    result["store_apply"] = sa
    conn.close()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="large", choices=("large", "xl"))
    p.add_argument("--skip-traffic", action="store_true", help=f"skip the {TRAFFIC_SECONDS:.0f} s traffic window")
    p.add_argument("--churn", type=float, default=10.0,
                   help="Workload status writes per second during the traffic window (0: idle cluster)")
    args = p.parse_args(argv)
    if shutil.which("kubectl") is None:
        p.error("kubectl must be on PATH")
    t0 = time.monotonic()
    result = run(args.scenario, args.skip_traffic, args.churn)
    result["wall_s"] = round(time.monotonic() - t0, 1)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
