"""`kueuetop` with no subcommand: connect (or start the demo cluster), then run the console.

The connection is checked *before* Textual starts, so "no cluster" is one clear message with a
hint and exit code 1, never a traceback or a blank screen. `--demo [SCENARIO]` runs
`python -m kueuetop sim serve SCENARIO` as its own process on a free loopback port with a
kubeconfig in a private temp dir, connects through that kubeconfig exactly as to a real
cluster, and stops the process when the console exits (or dies: Linux parent-death signal).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
DEMO_DEFAULT = "refarch"
DEMO_START_TIMEOUT = 60.0


def scrape_budget_arg(text: str) -> int:
    """argparse type of `--scrape-budget`: bytes a minute (10MB, 20MiB, 500k; auto; 0 = unlimited)."""
    from kueuetop.sources.scrape_budget import parse_budget

    try:
        return parse_budget(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_scrape_budget_option(p: Any) -> None:
    from kueuetop.sources.scrape_budget import DEFAULT_BUDGET, budget_text

    p.add_argument("--scrape-budget", type=scrape_budget_arg, default=DEFAULT_BUDGET, metavar="BYTES",
                   help="without --prometheus: bytes a minute the dcgm-exporter scrape may pull through "
                        f"the API server, e.g. 10MB, 20MiB, 0 = unlimited (default {budget_text(DEFAULT_BUDGET)}: "
                        "2%% of reading every exporter every 30 s, at least 2MB; "
                        "nodes on screen are read first, the rest in turn)")


def add_console_options(p: argparse.ArgumentParser) -> None:
    """Top-level options of the console (`kueuetop [OPTIONS]`)."""
    g = p.add_argument_group("console")
    g.add_argument("--context", action="append", metavar="CONTEXT",
                   help="kubeconfig context (default: the current context); give it again for a console "
                        "across several clusters (a MultiKueue manager and its workers)")
    g.add_argument("--all-contexts", action="store_true",
                   help="a console across every context of the kubeconfig")
    g.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    g.add_argument("-n", "--namespace", help="show only this namespace's workloads and LocalQueues")
    g.add_argument("--prometheus", metavar="URL",
                   help="Prometheus for GPU metrics (default: scrape dcgm-exporter through the API server)")
    add_scrape_budget_option(g)
    g.add_argument("--read-only", action="store_true", help="hide every action that changes the cluster")
    g.add_argument("--read-only-context", action="append", default=[], metavar="CONTEXT",
                   help="across several contexts: no action on this context's cluster (repeatable)")
    g.add_argument("--theme", help="theme name (shipped: dark, light, high-contrast, mono; or your own)")
    g.add_argument("--demo", nargs="?", const=DEMO_DEFAULT, metavar="SCENARIO",
                   help=f"run against a simulated cluster started for you (default scenario: {DEMO_DEFAULT})")
    g.add_argument("--demo-speed", type=float, default=1.0, help=argparse.SUPPRESS)
    g.add_argument("--ascii", action="store_true", help="ASCII glyphs only (LANG=C sessions, poor fonts)")
    g.add_argument("--no-mouse", action="store_true", help="do not enable mouse reporting")
    g.add_argument("--record", metavar="FILE",
                   help="record what the console reads to this new file while it runs (replay: --replay)")
    g.add_argument("--replay", metavar="FILE",
                   help="open the console on a recording (`kueuetop record`, --record) instead of a cluster")
    g.add_argument("--all-events", action="store_true",
                   help="watch Kueue's Pending Events too (on a big cluster most of the Event traffic;"
                        " a workload's own are in its detail either way)")
    g.add_argument("--no-forecast", action="store_true",
                   help="do not forecast start times (the ETA columns stay empty; saves CPU on huge clusters)")
    g.add_argument("--forecast-in-process", action="store_true",
                   help="forecast on a thread of the console's own process, not in a child process of it"
                        " (less memory; the screen then shares a core with the forecast)")


@dataclass
class DemoCluster:
    proc: subprocess.Popen[bytes]
    kubeconfig: Path
    tmpdir: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.tmpdir, ignore_errors=True)


class DemoProblem(Exception):
    pass


def _die_with_parent() -> None:  # runs in the child before exec
    # If the console is killed (ssh drop, SIGKILL), the simulated cluster must not linger.
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def start_demo(scenario: str, speed: float = 1.0, timeout: float = DEMO_START_TIMEOUT) -> DemoCluster:
    from kueuetop.xdg import private_dir

    # mkdtemp creates it 0700 with a name nobody could have pre-created, inside the per-user
    # private directory; the child writes its kubeconfig (admin token) there exclusively.
    tmpdir = Path(tempfile.mkdtemp(prefix="demo-", dir=private_dir()))
    proc: subprocess.Popen[bytes] | None = None
    try:
        kubeconfig = tmpdir / "kubeconfig"
        log = open(tmpdir / "sim.log", "wb")  # noqa: SIM115 - lives as long as the child
        cmd = [sys.executable, "-m", "kueuetop", "sim", "serve", scenario, "--port", "0", "--speed", f"{speed:g}",
               "--kubeconfig", str(kubeconfig)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL,
                                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None)
        demo = DemoCluster(proc, kubeconfig, tmpdir)
        ready = threading.Event()

        def drain() -> None:
            # Read the announcement lines, then keep the pipe empty so the child never blocks on it.
            assert proc is not None and proc.stdout is not None
            for line in proc.stdout:
                if b"kubeconfig written to" in line:
                    ready.set()
            ready.set()

        threading.Thread(target=drain, name="kueuetop-demo-stdout", daemon=True).start()
        deadline = time.monotonic() + timeout
        while not ready.wait(0.1):
            if proc.poll() is not None or time.monotonic() > deadline:
                break
        if proc.poll() is None and kubeconfig.exists():
            return demo
        err = ""
        with contextlib.suppress(OSError, IndexError):
            err = (tmpdir / "sim.log").read_text(errors="replace").strip().splitlines()[-1]
        raise DemoProblem(f"the simulated cluster did not start ({err or 'no output'})")
    except BaseException:  # failed, or interrupted (SIGTERM, Ctrl-C) while starting: nothing left behind
        if proc is not None:
            DemoCluster(proc, tmpdir / "kubeconfig", tmpdir).stop()
        shutil.rmtree(tmpdir, ignore_errors=True)
        raise


def _say(message: str, hint: str = "") -> None:
    from kueuetop.redact import one_line

    print(f"kueuetop: {one_line(message, 1000)}", file=sys.stderr)
    if hint:
        print(f"  hint: {one_line(hint, 1000)}", file=sys.stderr)


def _state_dir() -> Path:
    from kueuetop.xdg import state_dir

    return state_dir()


def run_replay_console(args: argparse.Namespace) -> int:
    """`kueuetop --replay FILE`: the console on a recording; no cluster is contacted."""
    from kueuetop.sources.recording_format import RecordingError
    from kueuetop.sources.replay import Recording

    try:
        recording = Recording.open(args.replay)
    except RecordingError as exc:
        _say(str(exc))
        return EXIT_USAGE
    if recording.torn:
        _say(f"warning: {recording.name} ends with {recording.torn} (a recording cut short): "
             "replaying the part before it")
    from kueuetop.tui.replay_app import ReplayApp

    try:
        app = ReplayApp(recording, theme_name=getattr(args, "theme", None),
                        ascii_only=bool(getattr(args, "ascii", False)), namespace=getattr(args, "namespace", None))
        code = app.run(mouse=not getattr(args, "no_mouse", False))
        return int(code or 0) if app.return_code is None else int(app.return_code or code or 0)
    except KeyboardInterrupt:
        return EXIT_FAILED
    finally:
        recording.close()


def run_console(args: argparse.Namespace) -> int:
    from kueuetop.sources.connection import ConnectionProblem, connect

    if getattr(args, "replay", None):
        if getattr(args, "record", None) or getattr(args, "demo", None):
            _say("--replay shows a recording: it cannot be combined with --record or --demo")
            return EXIT_USAGE
        return run_replay_console(args)
    from kueuetop.sources.kube import WITHOUT_KUEUE_PENDING, KubeSources
    from kueuetop.store import Store

    demo: DemoCluster | None = None
    conn = None
    sources: Any = None
    poller: Any = None
    recorder: Any = None
    previous_term = _exit_on_sigterm()
    try:
        kubeconfig = getattr(args, "kubeconfig", None)
        given = getattr(args, "context", None)
        contexts = [given] if isinstance(given, str) else list(given or [])
        context = contexts[0] if len(contexts) == 1 else None
        every = bool(getattr(args, "all_contexts", False))
        if getattr(args, "demo", None):
            try:
                demo = start_demo(args.demo, getattr(args, "demo_speed", 1.0) or 1.0)
            except (DemoProblem, OSError) as exc:
                _say(str(exc), "run `kueuetop sim list` for scenarios; `kueuetop sim serve` shows the error")
                return EXIT_FAILED
            kubeconfig, context = str(demo.kubeconfig), None
            from kueuetop.sim.scenarios.multicluster import is_multicluster  # a name check only

            every, contexts = is_multicluster(args.demo), []
        if every or len(contexts) > 1:
            return _run_across_contexts(kubeconfig, contexts, every, args)
        try:
            conn = connect(kubeconfig, context)
        except ConnectionProblem as exc:
            hint = exc.hint
            if not demo and "--demo" not in hint:
                hint = (hint + "; " if hint else "") + "or try the simulated cluster: `kueuetop --demo`"
            _say(exc.message, hint)
            return EXIT_FAILED
        store = Store()
        keeper = None
        if getattr(args, "record", None):
            from kueuetop.sources.recorder import Recorder, WireKeeper

            keeper = WireKeeper()
            try:
                recorder = Recorder(args.record, store, keeper, server=conn.info.server, context=conn.info.context,
                                    kueue_api=conn.kueue.version).start()
            except OSError as exc:
                _say(f"cannot create {args.record}: {exc.strerror or exc}", "the file must not exist yet")
                return EXIT_FAILED
        sources = KubeSources(conn, store, include_events=True,  # the Events view (`:ev`)
                              events_selector="" if getattr(args, "all_events", False) else WITHOUT_KUEUE_PENDING,
                              wire_keeper=keeper).start()
        poller = _start_gpu_poller(conn, store, getattr(args, "prometheus", None),
                                   getattr(args, "scrape_budget", None))
        deadline = time.monotonic() + 3.0  # a full first screen when the cluster answers quickly
        while not sources.synced() and time.monotonic() < deadline:
            time.sleep(0.02)

        from kueuetop.tui.app import KueuetopApp

        app = KueuetopApp(store, api=conn.api, kueue_version=conn.kueue.version,
                          context=conn.info.context or conn.info.server, server=conn.info.server,
                          user=conn.info.user,
                          read_only=bool(getattr(args, "read_only", False))
                          or conn.info.context in set(getattr(args, "read_only_context", None) or ()),
                          demo=args.demo if demo else None, theme_name=getattr(args, "theme", None),
                          ascii_only=bool(getattr(args, "ascii", False)),
                          namespace=getattr(args, "namespace", None),
                          forecast=not getattr(args, "no_forecast", False),
                          # A demo cluster is new each run: its finished runs are not worth keeping.
                          history_dir=None if demo else _state_dir(), synced=sources.synced,
                          forecast_in_process=bool(getattr(args, "forecast_in_process", False)))
        app.ctx.extra["events_selector"] = sources.events_selector  # the Events view says what it leaves out
        if poller is not None:  # the nodes on screen are read first by a budgeted GPU scrape
            from kueuetop.tui.gpu_focus import wire_gpu_focus

            wire_gpu_focus(app.ctx, poller.set_priority_nodes)
        code = app.run(mouse=not getattr(args, "no_mouse", False))
        from kueuetop.tui.tty import EXIT_HANGUP, silence_std_streams

        if app.return_code == EXIT_HANGUP:
            silence_std_streams()  # the terminal is gone; the cleanup below must not write to it
        return int(code or 0) if app.return_code is None else int(app.return_code or code or 0)
    except (KeyboardInterrupt, _Terminated):
        return EXIT_FAILED
    finally:
        with contextlib.suppress(ValueError, TypeError):
            signal.signal(signal.SIGTERM, previous_term)
        # The console is gone: tell the readers to stop, but do not wait on a request a held or
        # dead network keeps open (their threads are daemons); quitting takes well under a second.
        if poller is not None:
            poller.stop(timeout=0.2)
        if sources is not None:
            sources.stop(timeout=0.3)
        if recorder is not None:
            recorder.stop()
        if conn is not None:
            conn.close()
        if demo is not None:
            demo.stop()


def _run_across_contexts(kubeconfig: str | None, contexts: list[str], every: bool, args: argparse.Namespace) -> int:
    from kueuetop.sources.connection import ConnectionProblem, list_contexts
    from kueuetop.tui.clusters_app import run_clusters_console

    if every:
        try:
            contexts = list_contexts(kubeconfig)[0]
        except ConnectionProblem as exc:
            _say(exc.message, exc.hint)
            return EXIT_FAILED
    if not contexts:
        _say("the kubeconfig has no context", "pass --kubeconfig")
        return EXIT_FAILED
    read_only = bool(getattr(args, "read_only", False))
    read_only_contexts = set(getattr(args, "read_only_context", None) or [])

    def open_single(ctx: str) -> int:
        one = argparse.Namespace(**{**vars(args), "context": [ctx], "all_contexts": False, "demo": None,
                                    "kubeconfig": kubeconfig, "read_only": read_only or ctx in read_only_contexts})
        return run_console(one)

    return run_clusters_console(kubeconfig, list(dict.fromkeys(contexts)), mouse=not getattr(args, "no_mouse", False),
                                title=f"{len(contexts)} clusters", open_single=open_single, read_only=read_only,
                                read_only_contexts=read_only_contexts)


class _Terminated(BaseException):
    """SIGTERM, raised in the main thread so the cleanup runs (demo cluster stopped, its
    private directory with the kubeconfig removed) instead of the process just vanishing."""


def _exit_on_sigterm() -> Any:
    def _term(signum: int, frame: Any) -> None:
        raise _Terminated

    try:
        return signal.signal(signal.SIGTERM, _term)
    except ValueError:  # not the main thread (embedded): leave signals alone
        return signal.SIG_DFL


def _start_gpu_poller(conn: Any, store: Any, prometheus: str | None, scrape_budget: int | None = None) -> Any:
    """GPU telemetry into the store (Prometheus or the exporter scrape), or None if unavailable."""
    try:
        from kueuetop.sources.gpu_poller import GpuPoller, gpu_source_for
        from kueuetop.sources.scrape_budget import DEFAULT_BUDGET
    except ImportError:  # an install without the GPU sources still runs the console
        return None
    try:
        budget = DEFAULT_BUDGET if scrape_budget is None else scrape_budget
        return GpuPoller(store, gpu_source_for(conn, prometheus, scrape_budget=budget), interval=5.0).start()
    except Exception as exc:  # a bad URL must not stop the console; the status bar shows gpu:none
        _say(f"GPU metrics unavailable: {type(exc).__name__}: {exc}")  # redacted: the URL may hold a password
        return None
