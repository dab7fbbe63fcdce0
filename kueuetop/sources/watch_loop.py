"""One thread with one asyncio loop that runs the list+watch of every cluster of a ContextPool
(sources/loop_informer.py): eleven clusters cost one watch thread, not one per resource per
cluster. Nothing on the loop blocks: requests are asyncio streams with bounded connects and
reads (sources/aio_http.py), so a slow or unreachable cluster waits on its own sockets only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

_log = logging.getLogger(__name__)

THREAD_NAME = "kueuetop-watch-loop"
AUTH_NAME = "kueuetop-watch-auth"
AUTH_THREADS = 4


class Job:
    """A coroutine running on the loop: cancel it and wait for it from any thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._task: asyncio.Task[Any] | None = None
        self._done = threading.Event()

    def cancel(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._cancel)
        except RuntimeError:  # the loop is closed: nothing runs any more
            self._done.set()

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def done(self) -> bool:
        return self._done.is_set()


class WatchLoop:
    """Started on the first `spawn`; `stop()` cancels what still runs and ends the thread."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._auth = ThreadPoolExecutor(max_workers=AUTH_THREADS, thread_name_prefix=AUTH_NAME)
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._lock = threading.Lock()
        self._started = self._stopped = False

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        # Credentials refresh hooks (aio_http.Endpoint.headers): a few threads, made as needed.
        self._loop.set_default_executor(self._auth)
        try:
            self._loop.run_forever()
        finally:
            pending = asyncio.all_tasks(self._loop)
            for t in pending:
                t.cancel()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._auth.shutdown(wait=False, cancel_futures=True)  # a hung plugin is not waited for
            self._loop.close()

    def _ensure_started(self) -> None:
        with self._lock:
            if self._stopped:
                raise RuntimeError("the watch loop is stopped")
            if not self._started:
                self._started = True
                self._thread.start()

    def spawn(self, make: Callable[[], Coroutine[Any, Any, Any]]) -> Job:
        """Run `make()` on the loop; the returned Job is done when it ends (or is cancelled)."""
        self._ensure_started()
        job = Job(self._loop)

        def create() -> None:
            job._task = self._loop.create_task(make())
            job._task.add_done_callback(lambda _t: job._done.set())

        self._loop.call_soon_threadsafe(create)
        return job

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run `fn(*args)` on the loop's thread soon (a no-op once the loop is closed)."""
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(fn, *args)

    @property
    def thread(self) -> threading.Thread:
        return self._thread

    def stop(self, timeout: float = 3.0) -> None:
        with self._lock:
            started, self._stopped = self._started, True
        if not started:
            self._loop.close()
            return
        self.call(self._loop.stop)
        self._thread.join(timeout)
