"""`kueuetop --record FILE` and `kueuetop --replay FILE` as a user starts them, on a pseudo-terminal:
the console records the served cluster while it runs; the recording opens in the replay console."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from kueuetop.sim.serve import ServedCluster
from kueuetop.sources.replay import Recording, Replay
from kueuetop.store import events as K

START_TIMEOUT = 60.0
_ESCAPES = re.compile(rb"\x1b(\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07]*\x07|[@-Z\\-_])")


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    """What the terminal showed (escape sequences removed) until `needle` appears or `timeout`."""
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in _ESCAPES.sub(b"", buf) and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
    return _ESCAPES.sub(b"", buf)


def _console(*args: str) -> tuple[subprocess.Popen[bytes], int]:
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
    env.update(TERM="xterm-256color", COLUMNS="160", LINES="40")
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", *args], stdin=follower, stdout=follower,
                            stderr=follower, env=env, close_fds=True)
    os.close(follower)
    return proc, leader


def _quit(proc: subprocess.Popen[bytes], fd: int) -> int:
    os.write(fd, b"\x11")  # ctrl+q
    deadline = time.monotonic() + 20
    while proc.poll() is None and time.monotonic() < deadline:
        _read_until(fd, b"\x00", 0.2)  # keep the terminal drained while it shuts down
    if proc.poll() is None:
        proc.kill()
    os.close(fd)
    return proc.wait(5)


def test_console_records_while_it_runs_and_replays_it(served: ServedCluster, tmp_path: Path) -> None:
    path = tmp_path / "console.ktrec"
    proc, fd = _console("--kubeconfig", str(served.kubeconfig), "--record", str(path), "--no-mouse")
    out = _read_until(fd, b"kube:live", START_TIMEOUT)
    assert b"kube:live" in out, out[-2000:]
    time.sleep(2)  # a frame or two of changes after the first lists
    assert _quit(proc, fd) == 0
    rec = Recording.open(str(path))
    try:
        assert rec.torn == "" and rec.header["server"] == served.url
        store = Replay(rec).seek(rec.end_time)
        # What the console had: every ClusterQueue, the workloads, nodes and Events.
        assert store.count(K.CLUSTER_QUEUES) >= 12 and store.count(K.WORKLOADS) >= 16
        assert store.count(K.NODES) > 0 and store.count(K.EVENTS) > 0
    finally:
        rec.close()
    # The recording, in the replay console: no cluster needed.
    proc, fd = _console("--replay", str(path), "--no-mouse")
    out = _read_until(fd, b"REPLAY", START_TIMEOUT)
    assert b"REPLAY" in out, out[-2000:]
    assert _quit(proc, fd) == 0


def test_replay_of_a_file_that_is_no_recording_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("what happened at 03:12\n")
    p = subprocess.run([sys.executable, "-m", "kueuetop", "--replay", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("kueuetop: ") and "not a kueuetop recording" in p.stderr and p.stderr.count("\n") == 1
