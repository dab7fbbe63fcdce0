"""A forecast run in a child process forked from the console: the engine gets a core of its own.

In the console's process a forecast shares one interpreter with the UI: measured from outside on
`large` (benchmarks/forecast_console.py --compare), its starts with their ranges reached the screen
6.3 s after `kube:live` against 2.9 s from a child, and the UI's own updates waited for it too. A
child forked when a forecast starts holds everything the forecast thread prepared (the snapshot,
the run history, the pools: copy-on-write, nothing serialized on the way in), runs the pure engine
and sends each result back as soon as it is known, from a thread of its own (`_Sender`: the engine
never waits for the console to read); the forecast thread publishes them as before and only reads
a pipe meanwhile.

Forking a process that runs threads is safe only for what the child then does, so the child:
- runs nothing but the job it was given: pure computation on objects the forking thread owns;
  locks another thread might hold at the fork are held by the forking thread across it
  (`locks`), and the few module-level ones are re-created in the child (`os.register_at_fork`);
- never writes to the terminal (fds 0–2 go to /dev/null) and closes every other inherited fd
  (the console's sockets, its event loop) but its pipe; never logs; leaves with `os._exit`, so
  no exit handler of the console's runs twice;
- ignores the terminal's resize signal, drops the UI's signal wakeup fd, dies with its parent
  (`PR_SET_PDEATHSIG`), and runs at a lower priority than the console (`NICE`), so on a busy
  machine the UI gets the CPU first; a job the user is waiting on may start at the console's
  own priority (`start(..., nice=0)`) and take the lower one once it sent what was awaited
  (`lower_priority`);
- reports every half second (`HEARTBEAT`): a child silent for `SILENT_LIMIT` seconds (stuck) is
  killed and the forecast says so.

Linux only: elsewhere (macOS's system libraries are not safe across a fork of a threaded
process) the forecast runs on its thread as before (`can_fork`).
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import pickle
import queue
import select
import signal
import struct
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass

# Python ≥ 3.12 warns on any fork of a threaded process; this one is made safe as above.
warnings.filterwarnings("ignore", message=r".*multi-threaded, use of fork\(\) may lead to deadlocks",
                        category=DeprecationWarning)

Send = Callable[[object], None]

NICE = 5  # the child's priority below the console's
HEARTBEAT = 0.5  # seconds between the child's "still working" at most
SILENT_LIMIT = 60.0  # seconds without a word from the child before it is taken as stuck
PIPE_SIZE = 1 << 20  # bytes the pipe holds (Linux's pipe-max-size for a user by default)
_PR_SET_PDEATHSIG = 1
_HEADER = struct.Struct("!Q")
_started_at: int | None = None  # in a child of `start`: the priority of the process that forked it
_ALIVE = ("alive",)


class ChildFailed(Exception):
    """The child ended without its answer: its job raised (`raised`, the message says what), or
    it was killed, or it went silent."""

    def __init__(self, message: str, *, raised: bool = False) -> None:
        super().__init__(message)
        self.raised = raised


def can_fork() -> bool:
    return sys.platform.startswith("linux") and hasattr(os, "fork")


@dataclass
class ForkedJob:
    """A job running in a child process: its messages, in order, until it is done."""

    pid: int
    fd: int  # the read end of the child's pipe
    _reaped: bool = False

    def messages(self, stop: threading.Event, silent_limit: float = SILENT_LIMIT,
                 on_word: Callable[[], None] | None = None, raw: bool = False) -> Iterator[object]:
        """Each message the child sent, until it ended; ends early (nothing raised) when `stop`
        is set. Raises ChildFailed when the child ended without finishing or went silent.
        `on_word`: called on every word from the child, heartbeats included (a child waiting for
        its own helper passes the helper's on to its parent). `raw`: each message comes with
        its pickled form, (message, Pickled), for a child that passes it on as it is."""
        buf = bytearray()
        heard = time.monotonic()
        while not stop.is_set():
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if not ready:
                if time.monotonic() - heard > silent_limit:
                    self.close()
                    raise ChildFailed(f"the forecast process said nothing for {silent_limit:.0f} s and was stopped")
                continue
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                raise ChildFailed(f"the forecast process ended without its answer ({self._ended()})")
            heard = time.monotonic()
            buf += chunk
            while len(buf) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(buf)
                if len(buf) < _HEADER.size + size:
                    break
                data = bytes(buf[_HEADER.size:_HEADER.size + size])
                msg = pickle.loads(data)
                del buf[:_HEADER.size + size]
                if msg == ("done",):
                    return
                if isinstance(msg, tuple) and msg[:1] == ("failed",):
                    raise ChildFailed(str(msg[1]), raised=True)
                if on_word is not None:
                    on_word()
                if msg != _ALIVE:
                    yield (msg, Pickled(data)) if raw else msg

    def _ended(self) -> str:
        with contextlib.suppress(ChildProcessError):
            _, status = os.waitpid(self.pid, 0)
            self._reaped = True
            if os.WIFSIGNALED(status):
                return f"killed by signal {os.WTERMSIG(status)}"
            return f"exit status {os.WEXITSTATUS(status)}"
        return "ended"

    def close(self) -> None:
        """Stop the child if it still runs, and reap it."""
        with contextlib.suppress(OSError):
            os.close(self.fd)
        if self._reaped:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)
        self._reaped = True


def start(job: Callable[[Send], None], locks: Iterable[AbstractContextManager] = (), nice: int = NICE) -> ForkedJob:
    """Fork a child that runs `job(send)`: each object it sends (picklable) comes out of the
    returned ForkedJob's `messages`. `locks` are held across the fork (see the module docstring).
    `nice`: the child's priority below the forking process's."""
    r, w = os.pipe()
    with contextlib.suppress(OSError, AttributeError, ImportError):
        import fcntl

        # A bigger pipe (Linux's default is 64 KiB): a result of megabytes crosses in a few reads.
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
    try:
        with contextlib.ExitStack() as held:
            for lock in locks:
                held.enter_context(lock)
            pid = os.fork()
    except BaseException:
        os.close(r)
        os.close(w)
        raise
    if pid == 0:  # the child: never returns
        _child(job, w, nice)
    os.close(w)
    return ForkedJob(pid, r)


def _child(job: Callable[[Send], None], fd: int, nice: int) -> None:
    code = 1
    try:
        _detach(fd, nice)
        send = _Sender(fd)
        try:
            job(send)
            send(("done",))
            code = 0
        except BaseException as exc:
            send(("failed", f"{type(exc).__name__}: {exc}"[:300]))
        send.close()
    finally:
        os._exit(code)


def _detach(keep: int, nice: int) -> None:
    """Let go of the console: its terminal, fds, signals; die with it; yield the CPU to it."""
    with contextlib.suppress(OSError, AttributeError, TypeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != keep:
            with contextlib.suppress(OSError):
                os.close(fd)
    # print() and warnings go through sys.stdout/stderr, which the console may have replaced
    # with objects writing to its screen or to fds just closed.
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the child's until it exits
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):
            signal.signal(sig, signal.SIG_DFL)
    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGWINCH, signal.SIG_IGN)
    global _started_at
    with contextlib.suppress(OSError):
        _started_at = os.getpriority(os.PRIO_PROCESS, 0)  # the forking process's
        if nice:
            os.nice(nice)
    # The console's objects stay where they are: a collection over the console's heap would copy
    # every page of it. And the child collects nothing at all: it lives for one forecast, whose
    # objects reference counting frees (a forward run leaves only its quota structure's
    # parent/child links in reference cycles: tests/admission/test_forecast.py), while its young
    # collections walked every object the run kept, a seventh of the run's time. What the
    # child leaves goes with it at its exit.
    gc.freeze()
    gc.disable()
    if os.getppid() == 1:  # the console ended before the death signal was armed
        os._exit(1)


def lower_priority() -> None:
    """In a child started at the console's priority: from now on, NICE below it (a child
    already below it stays where it is)."""
    if _started_at is None:
        return  # not a child of `start`
    with contextlib.suppress(OSError):
        if os.getpriority(os.PRIO_PROCESS, 0) <= _started_at:
            os.nice(NICE)


def cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass(frozen=True)
class Pickled:
    """A message already pickled (one received from a helper): sent on as it is."""

    data: bytes


class _Sender:
    """Frames pickled messages onto the pipe, in order, from a thread of their own: the job never
    waits for the console to read (on `large` the runtime estimates are 3 MB, read by a console
    thread that shares the interpreter with a busy UI: written in line, they held the engine a
    third of a second). `alive()` is the heartbeat, sent at most every HEARTBEAT; `close()`
    returns once everything sent is written."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.said = time.monotonic()
        self._frames: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_all, name="forecast-send", daemon=True)
        self._writer.start()

    def __call__(self, msg: object) -> None:
        data = msg.data if isinstance(msg, Pickled) else pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        self._frames.put(_HEADER.pack(len(data)) + data)
        self.said = time.monotonic()

    def alive(self) -> None:
        if time.monotonic() - self.said >= HEARTBEAT:
            self(_ALIVE)

    def close(self) -> None:
        self._frames.put(None)
        self._writer.join()

    def _write_all(self) -> None:
        while (frame := self._frames.get()) is not None:
            view = memoryview(frame)
            try:
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError:
                os._exit(1)  # the console stopped listening: nothing left to do


def heartbeat(send: Send) -> Callable[[], None]:
    """A function the child's job calls often (between the engine's rounds): it keeps the parent
    from taking the child as stuck. A no-op for a sender that is not a child's pipe."""
    return send.alive if isinstance(send, _Sender) else (lambda: None)
