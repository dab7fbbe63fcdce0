"""Resident memory of the real console against a live cluster, measured from outside.

Starts `kueuetop sim serve <scenario>` (live: the simulation runs, pods and GPU data included),
then the console itself (`kueuetop --kubeconfig …`) in a pseudo-terminal of 200×60 whose output
is read continuously (a console that cannot write would stall, and stall its memory with it),
and samples the console process's VmRSS from /proc/<pid>/status every `--interval` seconds for
`--minutes`. Prints JSON: the samples, the figure after 60 s, the maximum, and the slope in
MB/min (least squares over the last half of the run, where start-up is over).

    python benchmarks/memory_live.py large --minutes 10
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

COLUMNS, ROWS = 200, 60
READY_TIMEOUT = 300.0  # `xl` takes a while to build before it serves


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mb(pid: int) -> float | None:
    """VmRSS of a live process, in MB (10^6 bytes), or None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    except (OSError, ValueError, IndexError):
        return None
    return None


def slope_per_minute(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (seconds, MB) points, in MB per minute."""
    if len(points) < 2:
        return None
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    den = sum((t - mx) ** 2 for t, _ in points)
    if den == 0:
        return None
    return sum((t - mx) * (v - my) for t, v in points) / den * 60.0


def summarize(samples: list[tuple[float, float]]) -> dict[str, Any]:
    """The report's figures from (seconds since the console started, RSS MB) samples."""
    after_60 = next((v for t, v in samples if t >= 60.0), None)
    half = samples[len(samples) // 2:]
    slope = slope_per_minute(half)
    return {
        "rss_mb": [[round(t, 1), round(v, 1)] for t, v in samples],
        "rss_after_60s_mb": None if after_60 is None else round(after_60, 1),
        "rss_max_mb": round(max(v for _, v in samples), 1) if samples else None,
        "slope_mb_per_min_last_half": None if slope is None else round(slope, 2),
    }


def wait_served(url: str, proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Until the server answers a list of ClusterQueues (the scenario is built)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"sim serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/apis/kueue.x-k8s.io/v1beta2/clusterqueues", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("sim serve did not answer in time")


def drain(fd: int, stop: threading.Event) -> None:
    """Read the console's terminal output and throw it away, so its writes never block."""
    while not stop.is_set():
        try:
            if not os.read(fd, 65536):
                return
        except OSError:
            return


def _controlling_tty() -> None:  # in the console's child: own session, the pty as its terminal
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=15)


def measure(scenario: str, minutes: float, interval: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="kueuetop-memory-") as tmp:
        work = Path(tmp)
        kubeconfig = work / "kubeconfig"
        port = free_port()
        env = dict(os.environ, HOME=str(work))
        with open(work / "serve.log", "wb") as serve_log:
            server = subprocess.Popen([sys.executable, "-m", "kueuetop", "sim", "serve", scenario, "--port", str(port),
                                       "--kubeconfig", str(kubeconfig)],
                                      stdout=serve_log, stderr=subprocess.STDOUT, env=env)
        console: subprocess.Popen[bytes] | None = None
        master = -1
        stop = threading.Event()
        try:
            wait_served(f"http://127.0.0.1:{port}", server, READY_TIMEOUT)
            master, slave = os.openpty()
            fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLUMNS, 0, 0))
            cenv = dict(env, TERM="xterm-256color", COLUMNS=str(COLUMNS), LINES=str(ROWS))
            console = subprocess.Popen([sys.executable, "-m", "kueuetop", "--kubeconfig", str(kubeconfig)],
                                       stdin=slave, stdout=slave, stderr=slave, env=cenv, cwd=work,
                                       close_fds=True, preexec_fn=_controlling_tty)
            os.close(slave)
            t0 = time.monotonic()
            threading.Thread(target=drain, args=(master, stop), daemon=True).start()
            samples: list[tuple[float, float]] = []
            end = t0 + minutes * 60.0
            next_at = t0 + interval
            while True:
                time.sleep(max(0.0, next_at - time.monotonic()))
                mb = rss_mb(console.pid)
                if mb is None or console.poll() is not None:
                    raise RuntimeError(f"the console exited with {console.returncode}")
                samples.append((time.monotonic() - t0, mb))
                print(f"{samples[-1][0]:6.0f}s {mb:8.1f} MB", file=sys.stderr, flush=True)
                next_at += interval
                if next_at > end + 1e-6:
                    break
            return {"scenario": scenario, "minutes": minutes, "interval_s": interval,
                    "terminal": f"{COLUMNS}x{ROWS}", **summarize(samples)}
        finally:
            stop.set()
            if console is not None:
                stop_process(console)
            if master >= 0:
                os.close(master)
            stop_process(server)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="the console's resident memory on a live simulated cluster")
    p.add_argument("scenario", nargs="?", default="large")
    p.add_argument("--minutes", type=float, default=10.0)
    p.add_argument("--interval", type=float, default=10.0, help="seconds between samples")
    args = p.parse_args(argv)
    if args.minutes <= 0 or args.interval <= 0:
        p.error("--minutes and --interval must be positive")
    try:
        report = measure(args.scenario, args.minutes, args.interval)
    except RuntimeError as e:
        print(f"memory_live: {e}", file=sys.stderr)
        return 1
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
