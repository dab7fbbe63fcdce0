"""Headless recording commands: `kueuetop record` and `kueuetop snapshot --replay FILE --at WHEN`.

`record` connects as the console does, runs the same sources (Kueue objects, nodes, the pods
Kueue manages, Events, ProvisioningRequests, queue positions, GPU telemetry at the poll
interval) and writes what the store receives to a recording (sources/recorder.py) until
`--for` has passed or it is interrupted (Ctrl-C, SIGTERM). `snapshot --replay` prints what
`snapshot` printed live at a recorded moment. No Textual here; replaying talks to no cluster.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from typing import Any

from kueuetop.live_cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, _fail, _gpu_use

GPU_SOURCES = ("gpu/scrape", "gpu/prometheus")


def default_output(context: str, now: float) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in context)[:60] or "cluster"
    return f"kueuetop-{safe}-{stamp}.ktrec"


def cmd_record(args: argparse.Namespace) -> int:
    from kueuetop.live_cli import _quiet_logs
    from kueuetop.sources.connection import ConnectionProblem
    from kueuetop.sources.gpu_poller import GpuPoller, gpu_source_for
    from kueuetop.sources.kube import KubeSources
    from kueuetop.sources.recorder import Recorder, WireKeeper
    from kueuetop.sources.session import KubeconfigProblem, connect_checked
    from kueuetop.store import Store

    _quiet_logs()
    try:
        conn = connect_checked(args.kubeconfig, args.context, timeout=min(10.0, args.timeout))
    except KubeconfigProblem as exc:
        return _fail(exc.describe(), EXIT_USAGE)
    except ConnectionProblem as exc:
        return _fail(exc.describe())
    path = args.output or default_output(conn.info.context or "cluster", time.time())
    store = Store()
    keeper = WireKeeper()
    rec = Recorder(path, store, keeper, server=conn.info.server, context=conn.info.context,
                   kueue_api=conn.kueue.version, keyframe_every=args.keyframe_every)
    try:
        rec.start()
    except OSError as exc:
        conn.close()
        return _fail(f"cannot create {path}: {exc.strerror or exc} (hint: the file must not exist yet)", EXIT_USAGE)
    done = threading.Event()
    previous = _on_signals(done)
    sources: Any = None
    poller: Any = None
    started = time.monotonic()
    gaps = _Gaps()
    try:
        sources = KubeSources(conn, store, include_events=True, wire_keeper=keeper,
                              unmanaged_gpu_pods=False).start()
        poller = GpuPoller(store, gpu_source_for(conn, args.prometheus, scrape_budget=args.scrape_budget),
                           args.gpu_interval).start()
        print(f"kueuetop: recording {conn.info.server} to {path}"
              + (f" for {args.duration:g}s" if args.duration else " (Ctrl-C stops)"), file=sys.stderr)
        while not done.wait(0.5):
            if args.duration and time.monotonic() - started >= args.duration:
                break
            if rec.error:
                break
            gaps.see(store, time.monotonic() - started)
    except KeyboardInterrupt:
        pass
    finally:
        _restore_signals(previous)
        if poller is not None:
            poller.stop(timeout=2.0)
        if sources is not None:
            sources.stop(timeout=3.0)
        rec.stop()
        conn.close()
    if rec.error:
        return _fail(rec.error)
    print(f"kueuetop: recorded {time.monotonic() - started:.0f}s to {path} ({rec.bytes / 1e6:.1f} MB, "
          f"{rec.frames} frames)", file=sys.stderr)
    if gaps.seconds >= GAP_SAID:
        # The recording holds the gap as it was (sources stale), but a script must not take it as whole.
        return _fail(f"the cluster did not answer for {gaps.seconds:.0f}s of the recording ({gaps.text()}): "
                     "those moments replay as stale data")
    return EXIT_OK


GAP_SAID = 5.0  # seconds of a recording without an answering cluster that make it incomplete


class _Gaps:
    """When the cluster stopped answering during a recording: the seconds, counted every poll,
    during which a source that had been live was stale or failing."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.spans: list[list[float]] = []  # [start, end] seconds since the recording started
        self._last: float | None = None
        self._live: set[str] = set()

    def see(self, store: Any, at: float) -> None:
        from kueuetop.store import SourceState

        states = {n: s.state for n, s in store.sources().items()}
        self._live |= {n for n, st in states.items() if st is SourceState.LIVE}
        # Not RELISTING: a watch the server ends is relisted in a moment, many times in a long recording.
        down = any(states.get(n) in (SourceState.STALE, SourceState.ERROR)
                   for n in self._live)
        if down and self._last is not None:
            self.seconds += at - self._last
            if self.spans and self.spans[-1][1] == self._last:
                self.spans[-1][1] = at
            else:
                self.spans.append([self._last, at])
        self._last = at

    def text(self) -> str:
        shown = [f"{a:.0f}s–{b:.0f}s" for a, b in self.spans[:3]]
        more = len(self.spans) - len(shown)
        return "from the start: " + ", ".join(shown) + (f" and {more} more" if more > 0 else "")


def _on_signals(done: threading.Event) -> Any:
    def stop(signum: int, frame: Any) -> None:
        done.set()
    try:
        return signal.signal(signal.SIGTERM, stop), signal.signal(signal.SIGINT, stop)
    except ValueError:  # not the main thread (a test calling main()): no signals to catch
        return None


def _restore_signals(previous: Any) -> None:
    if previous is not None:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])


def open_replay(path: str) -> tuple[Any, int]:
    """The opened Recording, or (None, exit code) after a one-line error; warns of a torn tail."""
    from kueuetop.sources.recording_format import RecordingError
    from kueuetop.sources.replay import Recording

    try:
        recording = Recording.open(path)
    except RecordingError as exc:
        return None, _fail(str(exc), EXIT_USAGE)
    if recording.torn:
        print(f"kueuetop: warning: {recording.name} ends with {recording.torn} (a recording cut short): "
              "replaying the part before it", file=sys.stderr)
    return recording, EXIT_OK


def positions_from(store: Any) -> str:
    """Where the replayed queue positions came from, as the live snapshot says it."""
    from kueuetop.store import SourceState
    from kueuetop.store import events as K

    vis = store.source("visibility")
    if vis is None or vis.state is SourceState.UNAVAILABLE:
        return "engine"
    wanted = [k[1] for k in store.keys(K.CLUSTER_QUEUES) if store.queue_counts(k[1]).pending]
    answered = sum(1 for cq in wanted if store.positions(cq))
    if answered == len(wanted):
        return "visibility"
    return "visibility+engine" if answered else "engine"


def replay_snapshot_doc(recording: Any, at: float) -> dict[str, Any]:
    """`snapshot -o json`'s document for the recorded moment `at`."""
    from kueuetop.sources.replay import Replay
    from kueuetop.views.safe_text import clean
    from kueuetop.views.snapshot import _rfc3339, build_snapshot

    store = Replay(recording).seek(at)
    h = recording.header
    gpu_source = next((s for s in GPU_SOURCES if store.source(s) is not None), None)
    doc = build_snapshot(store, now=at, context=str(h.get("context") or ""), server=str(h.get("server") or ""),
                         kueue_api=str(h.get("kueueApi") or ""), positions=positions_from(store),
                         gpu_source=gpu_source, gpu_use=_gpu_use(store))
    # Said in the document itself, so a replayed moment is never read as the cluster now.
    doc["replay"] = {"recording": clean(recording.name) or None,
                     "at": _rfc3339(at), "start": _rfc3339(recording.start), "end": _rfc3339(recording.end_time)}
    return doc


def cmd_snapshot_replay(args: argparse.Namespace) -> int:
    from kueuetop.sources.recording_format import RecordingError
    from kueuetop.views.replay_time import MomentError, parse_moment
    from kueuetop.views.snapshot import render_text

    recording, code = open_replay(args.replay)
    if recording is None:
        return code
    try:
        at = parse_moment(args.replay_at or "end", recording.start, recording.end_time)
        doc = replay_snapshot_doc(recording, at)
    except MomentError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except RecordingError as exc:
        return _fail(str(exc), EXIT_USAGE)
    finally:
        recording.close()
    if args.output == "json":
        indent = 2 if sys.stdout.isatty() else None
        sys.stdout.write(json.dumps(doc, indent=indent, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return EXIT_OK


def forecast_replay_look(path: str, when: str | None) -> tuple[Any, int]:
    """`kueuetop forecast --replay FILE --at WHEN`: the forecast's look at the state the replay
    rebuilds at WHEN, as the live forecast takes it from a synced store: the snapshot, the node
    pools at their size then, Kueue's queue positions then, and the finished Workloads still in
    the store as the run history."""
    from kueuetop.live_cli import ForecastLook
    from kueuetop.sources.recording_format import RecordingError
    from kueuetop.sources.replay import Replay
    from kueuetop.store import events as K
    from kueuetop.store.events import Changes
    from kueuetop.store.run_history import RunHistory, record_changes
    from kueuetop.views.forecast_report import checks_from_store, pools_from_store, rfc3339
    from kueuetop.views.replay_time import MomentError, parse_moment
    from kueuetop.views.workload_rows import store_position

    recording, code = open_replay(path)
    if recording is None:
        return None, code
    try:
        at = parse_moment(when or "end", recording.start, recording.end_time)
        store = Replay(recording).seek(at)
    except (MomentError, RecordingError) as exc:
        return None, _fail(str(exc), EXIT_USAGE)
    finally:
        recording.close()
    history = RunHistory(f"recording:{recording.name}")
    record_changes(store, history, Changes({K.WORKLOADS: frozenset(store.keys(K.WORKLOADS))}))
    pools, placements = pools_from_store(store)
    h = recording.header
    source = {"kind": "recording", "name": recording.name, "at": rfc3339(at),
              "server": str(h.get("server") or ""), "context": str(h.get("context") or "")}
    snap = store.snapshot()
    return ForecastLook(snap, pools, placements, False, history, at, source,
                        store_position(store), checks=checks_from_store(store, snap)), EXIT_OK


def recorded_objects(recording: Any) -> Any:
    """(t, "object", kind, wire dict) and (t, "delete", kind, key) in recorded order: what
    sim/scenarios/from_history.py gathers."""
    for _, rec in recording.records():
        if rec.get("op") != "batch":
            continue
        t = float(rec.get("t") or 0.0)
        for e in rec.get("events") or ():
            op, kind = e.get("op"), str(e.get("kind") or "")
            if op == "upsert":
                yield t, "object", kind, e.get("obj")
            elif op == "replace":
                for obj in e.get("objs") or ():
                    yield t, "object", kind, obj
            elif op == "delete":
                key = e.get("key") or ("", "")
                yield t, "delete", kind, (str(key[0]), str(key[1]))


def cmd_sim_from_recording(args: argparse.Namespace) -> int:
    import logging

    from kueuetop.admission.forecast_changes import parse_changes
    from kueuetop.sim.fidelity import fidelity
    from kueuetop.sim.report import render_table
    from kueuetop.sim.runner import run_scenario
    from kueuetop.sim.scenarios.from_history import build, gather
    from kueuetop.sim.scenarios.scenario import ScenarioError, parse_scenario
    from kueuetop.sources.recording_format import RecordingError

    try:  # checked before the recording is read, so a typo costs nothing
        changes = parse_changes(getattr(args, "changes", None) or ())
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    recording, code = open_replay(args.from_recording)
    if recording is None:
        return code
    try:
        built = build(gather(recorded_objects(recording)), cluster_name=str(recording.header.get("context") or ""))
    except RecordingError as exc:
        return _fail(str(exc), EXIT_USAGE)
    finally:
        recording.close()
    text = built.yaml()
    if args.write_scenario:
        try:
            with open(args.write_scenario, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            return _fail(f"cannot write {args.write_scenario}: {exc.strerror or exc}", EXIT_USAGE)
    try:
        scenario = parse_scenario(text, f"{recording.name}.yaml", name=recording.name)
    except ScenarioError as exc:
        return _fail(f"the scenario built from {recording.name} is not valid: {exc}")
    logging.getLogger("kueuetop.sim.cluster").setLevel(logging.ERROR)
    duration = args.duration if args.duration is not None else max(1.0, built.end + 1.0)
    if changes:
        return _what_if(args, recording.name, built, scenario, changes, duration)
    report, stats = run_scenario(scenario, duration, until_idle=args.until_idle)
    report["run"] = stats
    # First admissions on both sides: a later eviction and readmission is a different question.
    simulated: dict[tuple[str, str], float] = {}
    for e in report.get("events") or ():
        if e.get("type") == "admitted":
            simulated.setdefault((e["namespace"], e["name"]), float(e["time"]))
    report["fidelity"] = {"recording": recording.name, "recordedSeconds": round(built.end, 3),
                          **fidelity(built.recorded_admissions, simulated, window=built.end)}
    if args.report == "json":
        out = json.dumps(report, indent=2) + "\n"
    else:
        f = report["fidelity"]
        out = render_table(report) + (
            f"\nfidelity against {f['recording']} ({f['recordedSeconds']:.0f}s recorded): "
            f"{f['admittedInBoth']} admissions in both, order agreement {f['orderAgreement']}, "
            f"Kendall tau-b {f['kendallTauB']}, admission time error mean {f['timeErrorSeconds']['mean']}s "
            f"max {f['timeErrorSeconds']['max']}s; only recorded {len(f['onlyRecorded'])}, "
            f"only simulated {len(f['onlySimulated'])}\n")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(out)
    else:
        sys.stdout.write(out)
    return EXIT_OK


def _what_if(args: argparse.Namespace, name: str, built: Any, scenario: Any, changes: list[Any],
             duration: float) -> int:
    """The recorded history run as recorded and with `changes`, compared (views/replay_what_if.py)."""
    from kueuetop.sim.scenario_changes import apply_to_documents
    from kueuetop.sim.scenarios.scenario import ScenarioError, parse_scenario
    from kueuetop.sim.start_times import run_starts
    from kueuetop.views.replay_what_if import compare_starts, render_text, what_if_doc

    try:
        changed_docs = apply_to_documents(built.documents, changes)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    text = yaml_dump(changed_docs)
    try:
        changed = parse_scenario(text, f"{name}-with.yaml", name=f"{name} with changes")
    except ScenarioError as exc:
        return _fail(f"the changed scenario is not valid: {exc}", EXIT_USAGE)
    before = run_starts(scenario, duration)
    after = run_starts(changed, duration)
    cqs = {**before.cluster_queue, **after.cluster_queue}
    rows = compare_starts(before.created, before.started, after.started, cqs)
    errors = [f"as recorded: {e}" for e in before.report.get("errors") or ()]
    errors += [f"with the changes: {e}" for e in after.report.get("errors") or ()]
    doc = what_if_doc(name, built.end, duration, [c.spec for c in changes], rows, errors)
    out = json.dumps(doc, indent=2) + "\n" if args.report == "json" else render_text(doc)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(out)
    else:
        sys.stdout.write(out)
    return EXIT_OK


def yaml_dump(documents: list[dict[str, Any]]) -> str:
    import yaml

    return yaml.safe_dump_all(documents, sort_keys=False)


__all__ = ["EXIT_FAILED", "cmd_record", "cmd_sim_from_recording", "cmd_snapshot_replay", "replay_snapshot_doc"]
