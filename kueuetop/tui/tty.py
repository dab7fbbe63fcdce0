"""Leave quietly when the terminal goes away (ssh drop, closed terminal window).

Textual's Linux driver, when its terminal vanishes, either hangs (the output thread dies on EIO,
then the app blocks on the full output queue) or panics with a traceback (the input thread's
read fails). `HangupSafeDriver` turns all three signs of a lost terminal — SIGHUP, EIO/EPIPE on
write, an error reading input — into one quiet `app.exit(EXIT_HANGUP)`; writes after that are
dropped. The console's normal shutdown then runs: informers stop and the `--demo` cluster child
is terminated (launch.py).
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from typing import IO, Any

from textual.drivers.linux_driver import LinuxDriver

EXIT_HANGUP = 129  # 128 + SIGHUP, as a shell reports a hung-up process


class _TerminalOut:
    """The driver's output file; an OSError on write means the terminal is gone."""

    def __init__(self, file: IO[str], lost: Any) -> None:
        self._file = file
        self._lost = lost
        self.gone = False

    def write(self, text: str) -> int:
        if self.gone:
            return len(text)
        try:
            return self._file.write(text)
        except OSError:  # EIO (pty closed), EPIPE, EBADF
            self._lost("write")
            return len(text)

    def flush(self) -> None:
        if self.gone:
            return
        try:
            self._file.flush()
        except OSError:
            self._lost("flush")

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return True


class HangupSafeDriver(LinuxDriver):
    def __init__(self, app: Any, **kw: Any) -> None:
        super().__init__(app, **kw)
        self._out = _TerminalOut(self._file, self._terminal_lost)  # type: ignore[arg-type]
        self._file = self._out  # type: ignore[assignment]  # the writer thread writes here
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lost_once = threading.Lock()
        self.hung_up = False

    def start_application_mode(self) -> None:
        self._loop = asyncio.get_running_loop()
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGHUP, lambda *_: self._terminal_lost("SIGHUP"))
        super().start_application_mode()

    def run_input_thread(self) -> None:
        try:
            super().run_input_thread()
        except OSError:  # EIO reading a closed pty: not a bug worth a traceback
            self._terminal_lost("read")

    def _terminal_lost(self, why: str) -> None:
        """From any thread or a signal handler: stop writing, ask the app to exit, once."""
        self._out.gone = True
        if not self._lost_once.acquire(blocking=False):
            return
        self.hung_up = True
        self.exit_event.set()  # the input thread stops reading the dead terminal
        app, loop = self._app, self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(lambda: app.exit(EXIT_HANGUP))


def silence_std_streams() -> None:
    """After a hangup: nothing may write to the dead terminal (a late print would raise EIO)."""
    import os

    devnull = open(os.devnull, "w")  # noqa: SIM115 - kept open until the process ends
    sys.stdout = sys.stderr = devnull
