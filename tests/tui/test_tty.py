"""`kueuetop --demo` on a real pseudo-terminal: when the terminal goes away, everything exits.

Two ways a terminal vanishes: with it as the controlling terminal (an ssh drop: the kernel sends
SIGHUP), and without (only reads and writes fail with EIO). Either way the console exits with
129 (128 + SIGHUP; a crash would be 1), its `sim serve` child is gone, and the demo's temp dir
was cleaned up, which shows the normal shutdown ran. Waits are bounded.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from kueuetop.tui.tty import EXIT_HANGUP
from tests.waiting import wait_until

START_TIMEOUT = 60.0


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _read_until(fd: int, needle: bytes, timeout: float) -> bytes:
    buf = b""
    deadline = time.monotonic() + timeout
    while needle not in buf and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                buf += os.read(fd, 65536)
            except OSError:
                break
    return buf


def _controlling_tty() -> None:  # in the child: own session, the pty as its controlling terminal
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.parametrize("controlling", [True, False], ids=["sighup", "eio"])
def test_console_and_demo_child_exit_when_the_terminal_goes_away(controlling: bool, tmp_path: Path) -> None:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    env = dict(os.environ, TERM="xterm-256color", TMPDIR=str(tmp_path))
    env.pop("NO_COLOR", None)
    env.pop("XDG_RUNTIME_DIR", None)  # the demo's files go to the private directory under TMPDIR
    proc = subprocess.Popen([sys.executable, "-m", "kueuetop", "--demo", "--no-mouse"], stdin=slave, stdout=slave,
                            stderr=slave, env=env, cwd=tmp_path, close_fds=True,
                            preexec_fn=_controlling_tty if controlling else os.setsid)
    os.close(slave)
    children: list[int] = []
    try:
        out = _read_until(master, b"Overview", START_TIMEOUT)
        assert b"Overview" in out, out[-2000:]
        children = _children(proc.pid)
        assert children, "no sim serve child"
        assert list(tmp_path.glob("kueuetop-*/demo-*")), "demo temp dir missing"
        os.close(master)
        master = -1
        assert wait_until(lambda: proc.poll() is not None, 20), "console still running after the terminal closed"
        assert proc.returncode == EXIT_HANGUP
        assert wait_until(lambda: not any(_alive(c) for c in children), 15), "sim serve child still running"
        assert not list(tmp_path.glob("kueuetop-*/demo-*")), "shutdown did not clean up"
    finally:
        if master >= 0:
            os.close(master)
        for pid in (proc.pid, *children):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        proc.wait(5)
