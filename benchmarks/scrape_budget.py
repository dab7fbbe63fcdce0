"""Bytes the direct GPU scrape pulls through the API server on a live `sim serve` (large by default).

Starts `python -m kueuetop sim serve SCENARIO` in its own process, puts a byte-counting relay
(tests/byte_counter.py) between it and the scrape, runs the console's GPU poller (ScrapeSource,
a poll every 5 s after the previous one ends) for `--seconds`, and prints JSON: bytes both ways
as the relay counted them (what the API server served), bytes the source counted, per minute,
exporter reads, nodes with samples and the source's status message. Run once with `--budget 0`
(every exporter on every poll, the scrape before budgets) and once with the default.

    python benchmarks/scrape_budget.py --budget 0 --seconds 60
    python benchmarks/scrape_budget.py --seconds 60          # default budget (auto)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml
from kubernetes import config

from kueuetop.sim.apiserver import write_kubeconfig
from kueuetop.sources.gpu_poller import GpuPoller
from kueuetop.sources.scrape import ScrapeSource
from kueuetop.sources.scrape_budget import DEFAULT_BUDGET, parse_budget
from kueuetop.store import Store
from tests.byte_counter import ByteCounter


def _serve(scenario: str, kubeconfig: Path, timeout: float = 600.0) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", scenario, "--port", "0",
                             "--kubeconfig", str(kubeconfig)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    ready = threading.Event()

    def drain() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            if b"kubeconfig written to" in line:
                ready.set()
        ready.set()

    threading.Thread(target=drain, daemon=True).start()
    if not ready.wait(timeout) or proc.poll() is not None:
        proc.kill()
        raise SystemExit(f"sim serve {scenario} did not start")
    return proc


def _settled_exporters(api: object, timeout: float = 300.0) -> int:
    """Wait until the served cluster has all its exporter pods (their count holds for 5 s)."""
    src = ScrapeSource(api)  # type: ignore[arg-type]
    last, since, deadline = -1, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        n = len(src.list_exporters())
        if n != last:
            last, since = n, time.monotonic()
        elif n and time.monotonic() - since >= 5.0:
            return n
        time.sleep(1.0)
    return last


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenario", default="large")
    ap.add_argument("--budget", type=parse_budget, default=DEFAULT_BUDGET)
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--interval", type=float, default=5.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        kc = Path(d) / "kubeconfig"
        t0 = time.monotonic()
        proc = _serve(args.scenario, kc)
        started = time.monotonic() - t0
        try:
            direct = config.new_client_from_config(str(kc))
            exporters = _settled_exporters(direct)  # not through the relay: not counted
            direct.close()
            server = yaml.safe_load(kc.read_text())["clusters"][0]["cluster"]["server"]
            relay = ByteCounter(server)
            api = config.new_client_from_config(str(write_kubeconfig(Path(d) / "relayed", relay.url)))
            store = Store()
            src = ScrapeSource(api, budget=args.budget)
            poller = GpuPoller(store, src, interval=args.interval).start()
            t1 = time.monotonic()
            time.sleep(args.seconds)
            poller.stop(timeout=10)
            elapsed = time.monotonic() - t1
            per_min = 60.0 / elapsed
            out = {
                "scenario": args.scenario, "exporters": exporters, "budget_bytes_per_min": args.budget, "seconds": round(elapsed, 1),
                "server_startup_s": round(started, 1), "polls": poller.polls,
                "relay_bytes": relay.total, "relay_bytes_per_min": round(relay.total * per_min),
                "relay_max_bytes_any_60s": relay.max_in_window(60.0),
                "source_bytes": src.bytes_fetched, "source_bytes_per_min": round(src.bytes_fetched * per_min),
                "exporter_reads": sum(src.scraped.values()), "nodes_read": len(src.scraped),
                "nodes_with_samples": len({n for n, _ in store.gpus()}),
                "status": src.status.message[:300],
            }
            print(json.dumps(out, indent=2))
            api.close()
            relay.stop()
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    main()
