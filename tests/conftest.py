"""Session wiring for the `xl` completion run (tests/test_sim_xl.py).

`xl` (5,000 nodes, 100,000 workloads) takes about 20 CPU-minutes to run to its end. With
KUEUETOP_XL=1 (.ci/run sets it) or CI=true it starts in a subprocess as soon as collection ends, so on a
2-core machine it runs beside the rest of the suite, and its test is moved to the end of the
session to read the result. Without it, that one test is skipped and says how to run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

XL_TEST = "test_sim_xl.py::test_xl_runs_to_completion"
XL_ENV = "KUEUETOP_XL"
ROOT = Path(__file__).resolve().parents[1]


class XLRun:
    """The background run: its process and where it writes its JSON."""

    def __init__(self) -> None:
        self.summary = ""  # the test's one-line account of the run, for the terminal summary
        self.started = time.monotonic()
        self.dir = tempfile.TemporaryDirectory(prefix="kueuetop-xl-")
        self.out = Path(self.dir.name) / "xl.json"
        self.log = open(Path(self.dir.name) / "xl.log", "w+b")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.xl_completion_run", str(self.out)],
                                     cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.dir.cleanup()


_RUN: XLRun | None = None


def _xl_items(items: list[pytest.Item]) -> list[pytest.Item]:
    return [i for i in items if i.nodeid.endswith(XL_TEST)]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    xl = _xl_items(items)
    for item in xl:  # last, so the rest of the suite runs while xl does
        items.remove(item)
        items.append(item)


def pytest_collection_finish(session: pytest.Session) -> None:
    global _RUN
    wanted = os.environ.get(XL_ENV) == "1" or os.environ.get("CI") == "true"
    if _xl_items(session.items) and wanted and _RUN is None:
        _RUN = XLRun()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if _RUN is not None and _RUN.summary:
        terminalreporter.write_line(_RUN.summary)


def pytest_unconfigure(config: pytest.Config) -> None:
    global _RUN
    if _RUN is not None:
        _RUN.stop()
        _RUN = None


@pytest.fixture
def xl_run() -> XLRun:
    if _RUN is None:
        pytest.skip(f"xl runs for about 20 CPU-minutes: set {XL_ENV}=1 to run it beside the suite (.ci/run does)")
    return _RUN
