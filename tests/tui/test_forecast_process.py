"""The forecast's child process: messages in order, failures told apart, a stuck child stopped,
and nothing of the console's (terminal, fds, locks held by other threads) reaching the child."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

from kueuetop.admission.engine_cache import EngineCache
from kueuetop.admission.finish_grid import RESOLUTION
from kueuetop.admission.forecast import OPTIMISTIC, PESSIMISTIC, forecast, with_ranges
from kueuetop.admission.forecast_result import Forecast
from kueuetop.admission.runtime_estimate import estimate_runtimes
from kueuetop.kueue.pool_growth import AutoscalerRead
from kueuetop.store import events as K
from kueuetop.store.run_history import RunHistory
from kueuetop.tui import forecast_process as FP
from kueuetop.tui import forecaster
from kueuetop.tui.forecaster import Forecaster
from tests.tui.test_forecast_views import NOW
from tests.tui.test_forecast_views import _store as forecast_store
from tests.views.test_what_if import _with_nodes as nodes_store

pytestmark = pytest.mark.skipif(not FP.can_fork(), reason="the child process is Linux-only (elsewhere: the thread)")


def _all(child: FP.ForkedJob, stop: threading.Event | None = None, silent: float = 30.0) -> list[object]:
    try:
        return list(child.messages(stop or threading.Event(), silent))
    finally:
        child.close()


def _gone(pid: int) -> bool:
    """Not running: no such process, or a zombie (ended, not yet reaped by whoever adopted it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_messages_come_in_order_and_a_big_one_whole() -> None:
    big = list(range(300_000))  # several pipe buffers' worth: framing across reads

    def job(send: FP.Send) -> None:
        send(("first", 1))
        send(("big", big))
        send(("last", os.getpid()))

    child = FP.start(job)
    got = _all(child)
    assert [m[0] for m in got] == ["first", "big", "last"]  # type: ignore[index]
    assert got[1] == ("big", big)
    assert got[2][1] == child.pid != os.getpid()  # type: ignore[index]
    assert _gone(child.pid)


def test_the_child_collects_nothing_and_leaves_the_consoles_objects_where_they_are() -> None:
    import gc

    assert gc.isenabled()
    frozen_here = gc.get_freeze_count()
    kept = [[i] for i in range(10_000)]  # tracked objects of the console's, not frozen here

    def job(send: FP.Send) -> None:
        send((gc.isenabled(), gc.get_freeze_count(), len(kept)))

    got = _all(FP.start(job))
    enabled, frozen, n = got[0]  # type: ignore[misc]
    assert not enabled and n == len(kept)
    assert frozen >= frozen_here + len(kept)  # the console's heap is out of any collection's walk
    assert gc.isenabled() and gc.get_freeze_count() == frozen_here  # the console's own is untouched


def test_a_child_runs_below_the_console_unless_started_at_its_priority_until_it_lowers_it() -> None:
    here = os.getpriority(os.PRIO_PROCESS, 0)

    def job(send: FP.Send) -> None:
        send(os.getpriority(os.PRIO_PROCESS, 0))
        FP.lower_priority()
        send(os.getpriority(os.PRIO_PROCESS, 0))

    below = min(19, here + FP.NICE)
    assert _all(FP.start(job)) == [below, below]  # started below: lowering again does nothing
    assert _all(FP.start(job, nice=0)) == [here, below]
    FP.lower_priority()  # not a child: nothing
    assert os.getpriority(os.PRIO_PROCESS, 0) == here


def test_only_the_first_forecasts_child_on_two_cores_starts_at_the_consoles_priority(
        monkeypatch: pytest.MonkeyPatch) -> None:
    niced: list[int] = []
    start = FP.start

    def started(job, locks=(), nice=FP.NICE):  # type: ignore[no-untyped-def]
        niced.append(nice)
        return start(job, locks, nice)

    monkeypatch.setattr(forecaster.forecast_process, "start", started)
    monkeypatch.setattr(forecaster.forecast_process, "cores", lambda: 2)
    store = forecast_store()
    worker = Forecaster(store, clock=lambda: NOW, isolate=True)
    assert worker.run_once() is not None  # the first: nothing on screen
    assert niced == [0]  # its child (the helpers it forks start from the child, at the default)
    assert store.forecast() is not None
    worker.now()  # asked again: a later forecast, with starts on screen
    count = len(niced)
    assert worker.run_once() is not None
    assert niced[count:] == [FP.NICE]
    monkeypatch.setattr(forecaster.forecast_process, "cores", lambda: 1)
    store.set_forecast(None, set())  # nothing on screen again, but one core: the UI goes first
    worker.now()
    count = len(niced)
    assert worker.run_once() is not None
    assert niced[count:] == [FP.NICE]


def test_a_job_that_raises_says_what_and_one_that_dies_says_how() -> None:
    def raises(send: FP.Send) -> None:
        send(("partial",))
        raise KeyError("team-a/train-3")

    child = FP.start(raises)
    seen: list[object] = []
    with pytest.raises(FP.ChildFailed) as err:
        for m in child.messages(threading.Event()):
            seen.append(m)
    child.close()
    assert seen == [("partial",)]
    assert err.value.raised and "KeyError" in str(err.value) and "team-a/train-3" in str(err.value)

    child = FP.start(lambda send: os._exit(3))
    with pytest.raises(FP.ChildFailed) as err:
        _all(child)
    assert not err.value.raised and "exit status 3" in str(err.value)

    child = FP.start(lambda send: os.kill(os.getpid(), 9))
    with pytest.raises(FP.ChildFailed) as err:
        _all(child)
    assert not err.value.raised and "signal 9" in str(err.value)


def test_a_silent_child_is_stopped_and_a_heartbeat_keeps_a_slow_one_going() -> None:
    child = FP.start(lambda send: time.sleep(60))
    t0 = time.monotonic()
    with pytest.raises(FP.ChildFailed) as err:
        _all(child, silent=0.5)
    assert "said nothing" in str(err.value) and time.monotonic() - t0 < 10
    assert _gone(child.pid)

    def slow(send: FP.Send) -> None:  # 1.5 s of work, never silent for 0.5 s
        alive = FP.heartbeat(send)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            time.sleep(0.05)
            alive()
        send(("finished",))

    assert _all(FP.start(slow), silent=0.75) == [("finished",)]


def test_stop_ends_the_wait_and_close_kills_the_child() -> None:
    child = FP.start(lambda send: time.sleep(60))
    stop = threading.Event()
    threading.Timer(0.3, stop.set).start()
    assert list(child.messages(stop)) == []
    assert not _gone(child.pid)  # still running until closed
    child.close()
    assert _gone(child.pid)


def test_the_child_writes_nothing_to_the_terminal_and_keeps_no_fd_of_the_console(capfd: pytest.CaptureFixture[str],
                                                                                 tmp_path: object) -> None:
    kept = open(os.devnull)  # noqa: SIM115 - an fd of "the console" the child must not hold
    kept_fd = kept.fileno()

    def job(send: FP.Send) -> None:
        print("to stdout", flush=True)
        print("to stderr", file=sys.stderr, flush=True)
        os.write(1, b"raw to fd 1\n")
        fds = {int(n) for n in os.listdir("/proc/self/fd")}
        # What the child opened itself: its pipe, /dev/null for print(), and listdir's own fd.
        own = {send.fd, sys.stdout.fileno()}  # type: ignore[attr-defined]
        send(("inherited", sorted(fds - own - {0, 1, 2}), sorted(os.readlink(f"/proc/self/fd/{i}") for i in (0, 1, 2))))

    try:
        child = FP.start(job)
        (msg,) = _all(child)
    finally:
        kept.close()
    out, err = capfd.readouterr()
    assert "to stdout" not in out and "raw to fd 1" not in out and "to stderr" not in err
    _, inherited, std = msg  # type: ignore[misc]
    assert len(inherited) <= 1 and kept_fd not in inherited  # at most listdir's, gone once read
    assert std == [os.devnull] * 3


def test_a_lock_held_by_another_thread_at_the_fork_is_free_in_the_child() -> None:
    lock = threading.Lock()
    holding = threading.Event()

    def holder() -> None:
        with lock:
            holding.set()
            time.sleep(0.3)

    t = threading.Thread(target=holder)
    t.start()
    holding.wait()

    def job(send: FP.Send) -> None:
        send(("took it", lock.acquire(timeout=2)))

    child = FP.start(job, locks=[lock])  # waits for the holder, forks with the lock held by us
    t.join()
    assert _all(child) == [("took it", True)]
    assert lock.acquire(timeout=1)  # and the console's copy is free again
    lock.release()


# ------------------------------------------------------------------ the console's forecast worker
def _children() -> set[int]:
    out = set()
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                out.add(int(name))
    return out


def _published(isolate: bool, pools: bool = False) -> tuple[list[Forecast], Forecaster]:
    store = nodes_store() if pools else forecast_store()
    shown: list[Forecast] = []
    store.subscribe(lambda changes: K.FORECAST in changes and shown.append(store.forecast()))
    # No autoscaler status and no Karpenter node: pods are placed on the pools as they are.
    limits = (lambda: AutoscalerRead(None, "no configmap", absent=True)) if pools else None
    worker = Forecaster(store, clock=lambda: NOW, isolate=isolate, pool_limits=limits)
    assert worker.run_once() is not None
    return shown, worker


@pytest.mark.parametrize("pools", [False, True])
def test_a_forecast_in_the_child_is_the_one_the_thread_makes(pools: bool) -> None:
    forked, worker = _published(True, pools)
    here, thread = _published(False, pools)
    assert [f.ranged for f in forked] == [False, True]
    assert forked == here  # every start, range, flavor and runtime estimate (sent once, put back on each)
    assert forked[1].runtimes and worker.isolate and worker.first_seconds > 0 and worker._rounds > 0
    # The pools the child read from its copy of the store are the ones kept for the what-if panel.
    assert worker.latest is not None and thread.latest is not None
    assert forked[1].pods_placed is pools and worker.latest[2] == thread.latest[2]
    assert (worker.latest[2] is not None) is pools and worker.pods == thread.pods


def test_a_child_that_dies_is_reported_and_the_next_forecasts_run_on_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    console = os.getpid()
    real = forecaster._compute

    def dies_in_child(*args: object, **kwargs: object) -> None:
        if os.getpid() != console:
            os._exit(7)
        real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(forecaster, "_compute", dies_in_child)
    store = forecast_store()
    worker = Forecaster(store, clock=lambda: NOW)
    assert worker.isolate
    with pytest.raises(FP.ChildFailed, match="exit status 7"):
        worker.run_once()
    assert not worker.isolate and store.forecast() is None
    store.apply_batch([])  # a new version: the next forecast is due
    worker.now()
    assert worker.run_once() is not None and isinstance(store.forecast(), Forecast)


def test_an_engine_error_in_the_child_is_the_forecasts_error_and_the_child_stays_in_use(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def engine_bug(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("quota of 0 GPUs")

    monkeypatch.setattr(forecaster, "_compute", engine_bug)
    worker = Forecaster(forecast_store(), clock=lambda: NOW, interval=0.05).start()
    try:
        deadline = time.monotonic() + 20
        while not worker.error and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.stop()
    assert "ZeroDivisionError: quota of 0 GPUs" in worker.error and worker.isolate


def test_stopping_the_console_stops_the_forecast_child(monkeypatch: pytest.MonkeyPatch) -> None:
    console = os.getpid()
    started = threading.Event()
    real_start = FP.start

    def slow(*args: object, **kwargs: object) -> None:
        if os.getpid() != console:
            time.sleep(120)

    def start(*args: object, **kwargs: object) -> FP.ForkedJob:
        child = real_start(*args, **kwargs)  # type: ignore[arg-type]
        started.set()
        return child

    monkeypatch.setattr(forecaster, "_compute", slow)
    monkeypatch.setattr(FP, "start", start)
    before = _children()
    worker = Forecaster(forecast_store(), clock=lambda: NOW).start()
    assert started.wait(20)
    assert _children() - before  # the child runs
    worker.stop()
    assert not _children() - before


def test_the_child_dies_with_the_console() -> None:
    import subprocess

    code = ("import os, sys, time\n"
            "from kueuetop.tui import forecast_process as FP\n"
            "child = FP.start(lambda send: time.sleep(120))\n"
            "print(child.pid, flush=True)\n"
            "time.sleep(1)\n"  # the child is settled in its job
            "os._exit(0)\n")  # the console killed: nothing of it closes the child
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid)


@pytest.mark.parametrize("helper_dies", [False, True])
def test_range_runs_side_by_side_give_the_ranges_one_after_the_other_do(monkeypatch: pytest.MonkeyPatch,
                                                                        helper_dies: bool) -> None:
    here = os.getpid()
    real = forecaster._range_run
    ends: list[str] = []

    def range_run(job: object, expected: object, end: str, *args: object) -> object:
        if os.getpid() != here and helper_dies:
            os._exit(9)
        if os.getpid() == here:
            ends.append(end)
        return real(job, expected, end, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(forecaster, "_range_run", range_run)
    store = forecast_store()
    job = forecaster._Job(snap=store.snapshot(), now=NOW, history=RunHistory("test"), pools=None, placements=None,
                          checks=None, max_steps=1000, pods_note="", started=time.monotonic(), early=False)
    runtimes = estimate_runtimes(job.snap, job.history, NOW)
    expected = forecast(job.snap, runtimes, NOW, ranges=False, resolution=RESOLUTION)
    assert not expected.ranged
    one_after_the_other = with_ranges(expected, job.snap, resolution=RESOLUTION, max_steps=1000)
    heard: list[float] = []
    side = forecaster._side_by_side(job, expected, EngineCache(), lambda: None, lambda: heard.append(time.monotonic()))
    assert side == one_after_the_other and side.ranged
    a = side.workloads[("team-a", "a")]
    assert a.earliest is not None and a.latest is not None and a.earliest < a.latest  # the ranges are there
    # The optimistic run here, the pessimistic one in the helper; done here when the helper died.
    assert ends == ([OPTIMISTIC, PESSIMISTIC] if helper_dies else [OPTIMISTIC])
    assert helper_dies or heard  # the helper's words were passed on (its answer at least)


@pytest.mark.parametrize("helper_dies", [False, True])
def test_runtimes_worked_out_beside_the_run_are_the_ones_worked_out_first_and_sent_once(
        monkeypatch: pytest.MonkeyPatch, helper_dies: bool) -> None:
    import pickle

    here = os.getpid()
    real = forecaster.estimate_runtimes
    where: list[int] = []

    def estimate(*args: object, **kwargs: object) -> object:
        if os.getpid() != here and helper_dies:
            os._exit(9)
        if os.getpid() == here:
            where.append(here)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(forecaster, "estimate_runtimes", estimate)
    store = forecast_store()
    job = forecaster._Job(snap=store.snapshot(), now=NOW, history=RunHistory("test"), pools=None, placements=None,
                          checks=None, max_steps=1000, pods_note="", started=time.monotonic(), early=False)
    sent: list[object] = []
    runtimes = forecaster._estimated_beside(job, sent.append, lambda: None)
    got = runtimes()
    assert got == real(job.snap, job.history, NOW) and got
    # Sent on once: as the helper pickled it, or worked out here when the helper died.
    assert len(sent) == 1
    msg = pickle.loads(sent[0].data) if isinstance(sent[0], FP.Pickled) else sent[0]
    assert msg == ("runtimes", got)
    assert isinstance(sent[0], FP.Pickled) is not helper_dies
    assert where == ([here] if helper_dies else [])


def test_a_big_message_does_not_hold_the_job_while_the_console_is_slow_to_read() -> None:
    # Several pipes' worth: written in line, the job would wait until this process read it.
    big = b"x" * (4 << 20)

    def job(send: FP.Send) -> None:
        send(("big", big))
        send(("after", time.monotonic()))

    child = FP.start(job)
    time.sleep(1.0)  # a console busy elsewhere: nothing read yet
    read_from = time.monotonic()
    got = _all(child)
    assert got[0] == ("big", big)
    assert got[1][1] < read_from  # type: ignore[index]  # the job went on while nobody read


def test_runtimes_are_worked_out_in_the_child_when_no_helper_can_be_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_process(*args: object, **kwargs: object) -> FP.ForkedJob:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(FP, "start", no_process)
    store = forecast_store()
    job = forecaster._Job(snap=store.snapshot(), now=NOW, history=RunHistory("test"), pools=None, placements=None,
                          checks=None, max_steps=1000, pods_note="", started=time.monotonic(), early=False)
    sent: list[object] = []
    got = forecaster._estimated_beside(job, sent.append, lambda: None)()
    assert got and got == estimate_runtimes(job.snap, job.history, NOW)
    assert sent == [("runtimes", got)]
