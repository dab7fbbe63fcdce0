"""Shared by the benchmarks: a scale scenario served *paused* from its own process.

The child builds the scenario's cluster once (nodes, queues), settles it, creates every
Workload at once, still pending, and serves that frozen store with no simulation thread, so
the numbers measure the server and its clients rather than the admission engine. It runs in
its own process so its memory and CPU are its own.

With `count_bytes=True` the child also counts every byte its HTTP handlers write (status
line, headers and body, per request category) and answers two extra paths that only the
benchmarks use:

    GET /_bench/sent              → {"bytes": {category: n}, "requests": {category: n}}
    GET /_bench/churn?rate=R      → start (or change, 0 stops) R Workload status writes per second
    GET /_bench/mark?name=N       → create a pending Workload named N (a copy of an existing one's
                                    spec) and answer the wall-clock time of the write
    GET /_bench/counts            → {"counts": {kind: n}}: the objects the server holds of each
                                    kind a console mirrors (what its memory should follow)

`serve(..., live=True)` serves the scenario *live* instead (`kueuetop sim serve`'s simulation
running, pods, dcgm-exporters and all), with the same counting, for the end-to-end benchmark.

Run directly, this file is that child (see `serve`).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

KUEUE = "kueue.x-k8s.io"
VERSION = "v1beta2"
READY_TIMEOUT = 60.0
BENCH_PATH = "/_bench/"
# The kinds whose numbers a console's memory follows (the rest are a few hundred objects).
COUNTED = ((KUEUE, "workloads"), ("", "pods"), ("", "events"), ("", "nodes"))


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    url: str
    kubeconfig: Path
    startup_s: float
    first_items: int = 0  # ClusterQueues in the first answered list
    ready_s: float | None = None  # `sim serve`: process start → its first instant served


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listed(url: str) -> int | None:
    """How many items a list answered with, or None while nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=30) as resp:
            body = resp.read()
            return len(json.loads(body)["items"]) if resp.status == 200 else None
    except (urllib.error.URLError, OSError, ValueError, KeyError):
        return None


def get_json(url: str, timeout: float = 30.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read())


def memory_mb(pid: int | str) -> dict[str, float]:
    """VmRSS / VmHWM of a process (`"self"` for this one), in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return {"rss_mb": fields.get("VmRSS", -1.0), "rss_peak_mb": fields.get("VmHWM", -1.0)}


def heap_mb() -> dict[str, float]:
    """This process's memory as its allocators see it, in MiB: what live (or not yet collected)
    objects hold — pymalloc's blocks in use, malloc's bytes in use — and what the allocators hold
    free (pymalloc: free blocks and empty pools inside arenas that still hold a live block; malloc:
    free chunks of its heap). RSS counts both, so an RSS figure taken after a burst of short-lived
    allocations mostly measures how they were laid out; these tell the two apart. Empty when the
    allocators cannot be asked (another libc, a Python without pymalloc's statistics)."""
    import ctypes
    import os
    import re
    import tempfile

    out: dict[str, float] = {}
    # pymalloc reports only through sys._debugmallocstats, on the C stderr: borrow fd 2 briefly.
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        try:
            sys.stderr.flush()
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        text = tmp.read().decode(errors="replace")

    def field(pattern: str) -> int | None:
        m = re.search(pattern, text, re.M)
        return int(m.group(1).replace(",", "")) if m else None

    used, free = field(r"^# bytes in allocated blocks\s*=\s*([\d,]+)"), field(r"^# bytes in available blocks\s*=\s*([\d,]+)")
    pools, arenas = field(r"^(\d+) unused pools \*"), field(r"^(\d+) arenas \*")
    pool_size = field(r"unused pools \* (\d+) bytes")
    if used is not None and free is not None:
        out["pymalloc_in_use_mb"] = round(used / 2**20, 1)
        out["pymalloc_free_mb"] = round((free + (pools or 0) * (pool_size or 0)) / 2**20, 1)
    if arenas is not None:
        out["pymalloc_arenas"] = arenas
    try:
        libc = ctypes.CDLL("libc.so.6")

        class MallInfo2(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                                         "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

        libc.mallinfo2.restype = MallInfo2
        mi = libc.mallinfo2()
        out["malloc_in_use_mb"] = round((mi.uordblks + mi.hblkhd) / 2**20, 1)
        out["malloc_free_mb"] = round(mi.fordblks / 2**20, 1)
    except (OSError, AttributeError):  # not glibc, or a glibc before 2.33
        pass
    return out


def trimmed_rss_mb() -> float | None:
    """VmRSS after malloc gives its free heap back to the system (glibc malloc_trim), in MiB."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return None
    return memory_mb("self")["rss_mb"]


def paused_store(name: str) -> Any:
    """The scenario's cluster after its first instant, plus all its Workloads, pending."""
    import dataclasses
    import gc

    from kueuetop.kueue.json_copy import clone
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.wiring import build_cluster

    scenario = load_scenario(name)
    workloads = [s.obj for s in scenario.steps if s.obj is not None and s.obj.get("kind") == "Workload"]
    rest = tuple(s for s in scenario.steps if s.obj is None or s.obj.get("kind") != "Workload")
    parts = build_cluster(dataclasses.replace(scenario, steps=rest), SimClock(time.time(), 1.0))
    parts.cluster.settle()
    # Created an hour ago, as a busy cluster's backlog is: the triage board then has queues
    # waiting too long to show (later writes are stamped with the real time).
    store = _fresh_store(parts.cluster.store, clone, created=time.time() - 3600,
                         more=[(KUEUE, "workloads", clone(wl)) for wl in workloads])
    del parts, scenario, workloads, rest
    gc.collect()
    return store


def _fresh_store(src: Any, copy: Any, created: float, more: Sequence[tuple[str, str, Any]] = ()) -> Any:
    """A fresh store of `copy(obj)` for every object of `src` (status included), plus `more`:
    nothing subscribes to it, nothing reacts. One bulk insert, stamped `created`; later writes
    get the real time."""
    from kueuetop.sim.storage.kinds import KINDS, VIRTUAL_PLURALS
    from kueuetop.sim.storage.objectstore import ObjectStore

    store = ObjectStore(now=lambda: created)
    items = [(kind.group, kind.plural, copy(obj)) for kind in KINDS if kind.key not in VIRTUAL_PLURALS
             for obj in src.list(kind.group, kind.plural, copy=False)[0]]
    refused = [r for r in store.create_many([*items, *more]) if r is not None]
    if refused:
        raise RuntimeError(f"{len(refused)} objects not stored, first: {refused[0].message}")
    store.now = time.time
    return store


_RFC3339 = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z")


def _shifted(obj: Any, move: Any) -> Any:
    """`obj` (JSON data) with every RFC 3339 timestamp string `t` replaced by `move(t)`."""
    if isinstance(obj, dict):
        return {k: _shifted(v, move) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_shifted(v, move) for v in obj]
    if isinstance(obj, str) and _RFC3339.fullmatch(obj):
        return move(obj)
    return obj


def store_at(name: str, at: float) -> Any:
    """The scenario's cluster as its simulation left it `at` seconds in, stopped there: a fresh
    store of its objects, each timestamp moved so that the stopped instant is now (the run to it
    takes a while): what a console started on it sees is a cluster at that instant, running."""
    import gc

    from kueuetop.kueue.fields import parse_time
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.storage.objectstore import rfc3339
    from kueuetop.sim.wiring import build_cluster

    parts = build_cluster(load_scenario(name), SimClock(time.time() - at), record_events=False)
    parts.cluster.run_for(at - parts.cluster.sim_time)
    shift = time.time() - parts.cluster.clock.now()
    store = _fresh_store(parts.cluster.store, lambda obj: _shifted(obj, lambda t: rfc3339(parse_time(t) + shift)),
                         created=time.time())
    del parts
    gc.collect()
    return store


# ===================================================================== byte counting (child side)
def _category(path: str) -> str:
    if path.startswith(BENCH_PATH):
        return "bench"
    if "/proxy/" in path:
        return "pod_proxy"  # the direct dcgm-exporter scrape
    if path.startswith("/version"):
        return "probe"
    if "watch=true" in path or "watch=1" in path:
        return "watch"
    if "/pendingworkloads" in path:
        return "visibility"
    return "list_get"


def _resource(path: str) -> str:
    """The resource a request reads: `/api/v1/namespaces/x/pods?…` → `pods`; `…/pods/p/proxy/…` → `pods/proxy`."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if "proxy" in parts:
        return "pods/proxy"
    # /api/v1/… or /apis/<group>/<version>/…, then namespaces/<ns>/ for a namespaced resource.
    rest = parts[2:] if parts[:1] == ["api"] else parts[3:] if parts[:1] == ["apis"] else parts
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]
    return rest[0] if rest else (parts[-1] if parts else "")


class _Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.bytes: dict[str, int] = defaultdict(int)
        self.requests: dict[str, int] = defaultdict(int)
        self.by_resource: dict[str, int] = defaultdict(int)  # "watch pods", "list_get workloads", …
        # Requests per "category resource"; "list_start …" counts lists begun (no continue token):
        # a client relisting shows there, whatever its page size.
        self.requests_by_resource: dict[str, int] = defaultdict(int)

    def add(self, category: str, n: int, resource: str = "") -> None:
        with self.lock:
            self.bytes[category] += n
            if resource:
                self.by_resource[f"{category} {resource}"] += n

    def request(self, category: str, path: str = "") -> None:
        with self.lock:
            self.requests[category] += 1
            if path:
                resource = _resource(path)
                self.requests_by_resource[f"{category} {resource}"] += 1
                if category == "list_get" and "continue=" not in path and "limit=" in path:
                    self.requests_by_resource[f"list_start {resource}"] += 1

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"bytes": dict(self.bytes), "requests": dict(self.requests),
                    "by_resource": dict(self.by_resource), "requests_by_resource": dict(self.requests_by_resource)}


class _CountingWriter:
    """Wraps a handler's wfile; the category is read at write time because one keep-alive
    connection carries many requests."""

    def __init__(self, raw: Any, handler: Any, counter: _Counter) -> None:
        self._raw, self._h, self._counter = raw, handler, counter

    def write(self, data: bytes) -> int:
        n = self._raw.write(data)
        path = getattr(self._h, "path", "") or ""
        self._counter.add(_category(path), len(data), _resource(path))
        return n

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


class _Churn:
    """Status writes to random Workloads, as Kueue makes when it re-evaluates pending ones
    (a new QuotaReserved=False message), so watches carry a steady trickle of MODIFIED events."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.rate = 0.0
        self.writes = 0
        self._keys: list[tuple[str, str]] = []
        self._keys_at = 0.0  # a live cluster's workloads come and go: the keys are re-read every 2 s
        self._rng = random.Random(7)
        self._thread: threading.Thread | None = None

    def set_rate(self, rate: float) -> None:
        self.rate = max(0.0, rate)
        if self.rate and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="bench-churn", daemon=True)
            self._thread.start()

    def _flip(self, wl: dict[str, Any]) -> dict[str, Any]:
        needed = self._rng.randint(1, 64)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        wl.setdefault("status", {})["conditions"] = [{
            "type": "QuotaReserved", "status": "False", "reason": "Pending", "lastTransitionTime": stamp,
            "message": (f"couldn't assign flavors to pod set main: insufficient unused quota for "
                        f"nvidia.com/gpu in flavor h100, {needed} more needed")}]
        return wl

    def _run(self) -> None:
        next_at = time.monotonic()
        while True:
            if not self.rate:
                time.sleep(0.1)
                next_at = time.monotonic()
                continue
            next_at += 1.0 / self.rate
            time.sleep(max(0.0, next_at - time.monotonic()))
            if time.monotonic() - self._keys_at > 2.0 or not self._keys:
                self._keys = [(w["metadata"]["namespace"], w["metadata"]["name"])
                              for w in self.store.list(KUEUE, "workloads", copy=False)[0]]
                self._keys_at = time.monotonic()
                if not self._keys:
                    time.sleep(0.1)
                    continue
            ns, name = self._rng.choice(self._keys)
            try:
                self.store.patch(KUEUE, "workloads", ns, name, self._flip, status=True, copy=False)
            except Exception:  # a live cluster deleted it meanwhile: pick another next time
                continue
            self.writes += 1


def _mark(store: Any, name: str) -> float:
    """A new pending Workload named `name`, shaped like an existing one; the write's wall time."""
    from kueuetop.kueue.json_copy import clone

    template = next(iter(store.list(KUEUE, "workloads", copy=False)[0]))
    meta = template["metadata"]
    obj = {"apiVersion": f"{KUEUE}/{VERSION}", "kind": "Workload",
           "metadata": {"name": name, "namespace": meta["namespace"], "labels": dict(meta.get("labels") or {})},
           "spec": clone(template["spec"])}
    obj["spec"]["active"] = False  # stays put: nothing admits, runs or deletes it
    store.create(KUEUE, "workloads", obj)
    return time.time()


def _instrument(server: Any, store: Any, ready: Any = None) -> None:
    """Count bytes written by every handler, and answer the /_bench/ paths."""
    from kueuetop.sim.apiserver import server as server_module
    from kueuetop.sim.apiserver.resources import Reply

    counter = _Counter()
    churn = _Churn(store)
    handler_cls = server_module._Handler
    original_setup = handler_cls.setup

    def setup(h: Any) -> None:
        original_setup(h)
        h.wfile = _CountingWriter(h.wfile, h, counter)

    handler_cls.setup = setup  # type: ignore[method-assign]
    original_handle = server.handle

    def handle(h: Any, method: str) -> None:
        category = _category(h.path)
        counter.request(category, h.path)
        if category != "bench":
            original_handle(h, method)
            return
        url = urlsplit(h.path)
        query = parse_qs(url.query)
        extra: dict[str, Any] = {"ready": ready() if ready else True}
        if url.path == BENCH_PATH + "churn":
            churn.set_rate(float(query.get("rate", ["0"])[0]))
        elif url.path == BENCH_PATH + "mark":
            extra["written_at"] = _mark(store, query["name"][0])
        elif url.path == BENCH_PATH + "counts":
            extra["counts"] = {plural: store.count(group, plural) for group, plural in COUNTED
                               if store.serves(group, plural)}
        h.send_reply(Reply(200, {**counter.snapshot(), "churn": {"rate": churn.rate, "writes": churn.writes},
                                 **extra}))

    server.handle = handle  # the handler looks it up on the instance


def serve_paused_child(name: str, port: int, kubeconfig: str, count_bytes: bool = False,
                       at: float | None = None) -> int:
    """The paused backlog (`paused_store`), or with `at` the scenario stopped that many seconds
    in (`store_at`), served with no simulation."""
    from kueuetop.sim.apiserver import ApiServer, write_kubeconfig
    from kueuetop.sim.serve import paused_hooks, serve_forever, stop_on_signals

    done = stop_on_signals()
    store = paused_store(name) if at is None else store_at(name, at)
    server = ApiServer(store, port=port, hooks=paused_hooks(store))
    if count_bytes:
        _instrument(server, store)
    server.start()
    write_kubeconfig(kubeconfig, server.url)
    serve_forever(server, done)
    return 0


def serve_live_child(name: str, port: int, kubeconfig: str) -> int:
    """`kueuetop sim serve NAME` with byte counting: the simulation runs, pods and exporters too."""
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.serve import serve_forever, start_served, stop_on_signals

    done = stop_on_signals()
    served = start_served(load_scenario(name), port=port, kubeconfig=kubeconfig)
    _instrument(served.server, served.parts.cluster.store, ready=served.caught_up.is_set)
    serve_forever(served, done)
    return 0


# ===================================================================== parent side
@contextmanager
def serve(scenario: str, workdir: Path, paused: bool = False, count_bytes: bool = False,
          live: bool = False, at: float | None = None) -> Iterator[Server]:
    """A server in a child process (`kueuetop sim serve`, or the paused one); yields once it
    has answered its first request, a list of every ClusterQueue (`startup_s` is the time from
    starting the process to that answer). count_bytes needs paused, or live: the live counting
    child, which yields once the scenario's first instant is settled and served (`startup_s`).
    `at`: the scenario stopped that many seconds in (`store_at`), served paused."""
    port = free_port()
    kubeconfig = workdir / f"{scenario}-{port}.kubeconfig"  # one per server: kubeconfigs are never overwritten
    url = f"http://127.0.0.1:{port}"
    if at is not None:
        cmd = [sys.executable, __file__, scenario, str(port), str(kubeconfig), "--at", str(at)]
    elif live:
        cmd = [sys.executable, __file__, scenario, str(port), str(kubeconfig), "--live"]
    elif paused:
        cmd = [sys.executable, __file__, scenario, str(port), str(kubeconfig)]
        if count_bytes:
            cmd.append("--count-bytes")
    else:
        cmd = [sys.executable, "-m", "kueuetop", "sim", "serve", scenario, "--port", str(port),
               "--kubeconfig", str(kubeconfig)]
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    ready: list[float] = []

    def read_stdout() -> None:  # `sim serve` says when its first instant is served
        assert proc.stdout is not None
        for line in proc.stdout:
            if b"first instant served" in line and not ready:
                ready.append(time.monotonic() - t0)

    threading.Thread(target=read_stdout, name="served-stdout", daemon=True).start()
    try:
        probe = f"{url}/apis/{KUEUE}/{VERSION}/clusterqueues"
        # A scenario run to `at` first takes minutes (xl: tens of them).
        limit = READY_TIMEOUT * (5 if scenario == "xl" else 1) * (10 if at is not None else 1)
        while (first_items := _listed(probe)) is None:
            if proc.poll() is not None or time.monotonic() - t0 > limit:
                raise RuntimeError(f"sim serve {scenario} did not start: {proc.stderr.read().decode()[-2000:]}"
                                   if proc.stderr and proc.poll() is not None
                                   else f"sim serve {scenario} did not start")
            time.sleep(0.01)
        if live:  # the first instant's objects (workloads included) are settled and served
            while not get_json(f"{url}{BENCH_PATH}sent").get("ready"):
                if proc.poll() is not None or time.monotonic() - t0 > READY_TIMEOUT * 10:
                    raise RuntimeError(f"sim serve {scenario} did not catch up")
                time.sleep(0.05)
        startup = time.monotonic() - t0
        if not paused and not live and at is None:  # `sim serve` itself: until its first instant is served
            while not ready and proc.poll() is None and time.monotonic() - t0 < READY_TIMEOUT * 10:
                time.sleep(0.01)
        yield Server(proc, url, kubeconfig, startup, first_items, ready[0] if ready else None)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def sent(server: Server) -> dict[str, Any]:
    """The counting child's byte and request counters (needs count_bytes)."""
    return get_json(f"{server.url}{BENCH_PATH}sent")


def set_churn(server: Server, rate: float) -> dict[str, Any]:
    return get_json(f"{server.url}{BENCH_PATH}churn?rate={rate}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="serve a scenario paused (the benchmarks' child process)")
    p.add_argument("scenario")
    p.add_argument("port", type=int)
    p.add_argument("kubeconfig")
    p.add_argument("--count-bytes", action="store_true")
    p.add_argument("--live", action="store_true", help="serve the scenario live, counting bytes")
    p.add_argument("--at", type=float, help="serve the scenario stopped this many seconds in")
    args = p.parse_args(argv)
    if args.live:
        return serve_live_child(args.scenario, args.port, args.kubeconfig)
    return serve_paused_child(args.scenario, args.port, args.kubeconfig, args.count_bytes, args.at)


if __name__ == "__main__":
    sys.exit(main())
