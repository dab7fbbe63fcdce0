"""`kueuetop forecast`: when each pending workload starts, and what a what-if change would move.

On a live cluster it connects and syncs as `kueuetop snapshot` does (the same flags, the same
`--timeout` bound on the cluster part), reads the run history kept in kueuetop's state directory
(`$XDG_STATE_HOME/kueuetop/run-history.json`) plus the finished Workloads still in the cluster,
estimates every runtime, and runs the admission engine forward. `--scenario NAME --at 5m` does
the same on a simulated scenario at that instant (its finished runs are the history).

`--with SPEC` (repeatable, admission/forecast_changes.py): the forecast runs before and after the
changes, with the same runtimes, and the output is what moved. Errors are one line starting with
"kueuetop: "; exit 2 for bad input (a bad spec, an unknown queue, flavor, resource or pool), 1
when the cluster or the workload cannot be read. No Textual here.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kueuetop.admission.forecast_result import PoolCapacity
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.live_cli import EXIT_OK, EXIT_USAGE, _fail, _hard_deadline, _open
from kueuetop.store.run_history import RunHistory

Key = tuple[str, str]


@dataclass
class _Look:
    """One look at a cluster or a scenario: what the forecast starts from."""

    snapshot: ClusterSnapshot
    pools: dict[str, PoolCapacity]
    history: RunHistory
    now: float
    source: dict[str, Any]
    position_of: Callable[[Key], tuple[int, int] | None] | None = None
    warnings: list[str] = field(default_factory=list)


def add_forecast_parser(sub: Any, duration: Callable[[str], float], add_connection: Callable[..., None]) -> None:
    fc = sub.add_parser("forecast", help="when each pending workload starts; what-ifs with --with")
    fc.add_argument("workload", nargs="?", metavar="NAMESPACE/NAME", help="only this workload")
    fc.add_argument("-n", "--namespace", help="only the workloads of this namespace")
    fc.add_argument("-o", "--output", choices=("table", "json"), default="table")
    fc.add_argument("--with", dest="changes", action="append", default=[], metavar="SPEC",
                    help="a what-if change (repeatable): 'quota CQ [FLAVOR/]RESOURCE=+N' (or =-N, =N), "
                         "'hold NS/NAME' (globs allowed), 'nodes POOL=+N' (or =-N)")
    fc.add_argument("--at-most", type=_count, metavar="N", help="list at most N workloads")
    fc.add_argument("--scenario", help="forecast a simulated scenario (built-in or file) instead of the live cluster")
    fc.add_argument("--at", type=duration, default=duration("5m"),
                    help="with --scenario: the simulated time to forecast from (default 5m)")
    fc.add_argument("--timeout", type=duration, default=duration("30s"),
                    help="give up when the cluster has not synced after this long (default 30s)")
    add_connection(fc)


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: use a whole number ≥ 0")
    return n


def cmd_forecast(args: argparse.Namespace) -> int:
    from kueuetop.admission.forecast_changes import parse_changes

    target: Key | None = None
    if args.workload is not None:
        if args.workload.count("/") != 1 or not all(args.workload.split("/")):
            return _fail(f"bad workload {args.workload!r}: use NAMESPACE/NAME", EXIT_USAGE)
        ns, name = args.workload.split("/")
        target = (ns, name)
    try:
        changes = parse_changes(args.changes)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    look, code = _scenario_look(args) if args.scenario is not None else _live_look(args)
    if look is None:
        return code
    for w in look.warnings:
        print(f"kueuetop: warning: {w}", file=sys.stderr)
    try:
        return _forecast(args, look, changes, target)
    except KeyboardInterrupt:
        return _fail("interrupted")


def _forecast(args: argparse.Namespace, look: _Look, changes: list, target: Key | None) -> int:
    from kueuetop.admission.engine_cache import EngineCache
    from kueuetop.admission.forecast_changes import apply_changes, run_forecast
    from kueuetop.admission.runtime_estimate import estimate_runtimes
    from kueuetop.views.forecast_report import forecast_doc, render_text

    snap = look.snapshot
    try:
        changed = apply_changes(snap, look.pools, changes) if changes else None
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if target is not None:
        wl = snap.workloads.get(target)
        if wl is None:
            return _fail(f"workload {target[0]}/{target[1]} not found (hint: `kubectl get workloads -n {target[0]}` "
                         "lists them; the name is the Workload's, not the Job's)")
        if wl.is_finished or wl.has_quota_reservation:
            state = "finished" if wl.is_finished else "already holds quota"
            return _fail(f"workload {target[0]}/{target[1]} {state}: only pending workloads have an ETA")
    keys = [target] if target is not None else sorted(
        k for k, w in snap.workloads.items() if not w.is_finished and not w.has_quota_reservation
        and (args.namespace is None or k[0] == args.namespace))
    # One set of runtimes for both forecasts: a what-if moves admissions, not how long jobs run.
    runtimes = estimate_runtimes(snap, look.history, look.now)
    cache = EngineCache()
    result = run_forecast(snap, look.pools, runtimes, look.now, cache)
    before = None
    if changed is not None:
        before = result
        result = run_forecast(changed[0], changed[1], runtimes, look.now, cache)
    doc = forecast_doc(snap, result, keys, source=look.source, position_of=look.position_of,
                       at_most=args.at_most, before=before, changes=[c.spec for c in changes])
    if args.output == "json":
        indent = 2 if sys.stdout.isatty() else None
        sys.stdout.write(json.dumps(doc, indent=indent, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return EXIT_OK


# ---------------------------------------------------------------------------------------- sources
def _live_look(args: argparse.Namespace) -> tuple[_Look | None, int]:
    guard = _hard_deadline(args.timeout, "forecast")
    try:
        return _live(args)
    finally:
        guard.cancel()  # the cluster part is bounded; the forecast itself is not cut off mid-output


def _live(args: argparse.Namespace) -> tuple[_Look | None, int]:
    from kueuetop.kueue.core import Node, Pod
    from kueuetop.store import events as K
    from kueuetop.store.events import Changes
    from kueuetop.store.run_history import (
        FILE_NAME,
        cluster_scope,
        load_run_history,
        record_changes,
        save_run_history,
    )
    from kueuetop.views.node_pools import pool_capacities
    from kueuetop.views.snapshot import observed_now
    from kueuetop.views.workload_rows import store_position
    from kueuetop.xdg import state_dir

    session, code = _open(args)
    if session is None:
        return None, code
    try:
        store = session.store
        info = session.conn.info
        path = state_dir() / FILE_NAME
        history, warning = load_run_history(path, cluster_scope(info.server, info.context))
        # The finished Workloads still in the cluster are runs too (what follow_store feeds from
        # the initial list; the store has synced already, so they are fed here at once).
        record_changes(store, history, Changes({K.WORKLOADS: frozenset(store.keys(K.WORKLOADS))}))
        snap = store.snapshot()
        pools = pool_capacities(_of(store.objects(K.NODES).values(), Node), _of(store.objects(K.PODS).values(), Pod))
        now = observed_now(snap, time.time())
    except KeyboardInterrupt:
        return None, _fail("interrupted")
    finally:
        session.close()
    warnings = [warning] if warning else []
    if history.unsaved:
        saved = save_run_history(path, history)
        if saved:
            warnings.append(saved)
    return _Look(snap, pools, history, now, {"kind": "cluster", "server": info.server, "context": info.context},
                 store_position(store), warnings), EXIT_OK


def _of(objs: Iterable[object], kind: type) -> list:
    return [o for o in objs if isinstance(o, kind)]


def _scenario_look(args: argparse.Namespace) -> tuple[_Look | None, int]:
    from kueuetop.cli import _load
    from kueuetop.kueue.core import parse_node, parse_pod
    from kueuetop.kueue.errors import KueueParseError
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.runner import VIRTUAL_EPOCH
    from kueuetop.sim.wiring import build_cluster
    from kueuetop.views.node_pools import pool_capacities

    scenario = _load(args.scenario)
    if scenario is None:
        return None, EXIT_USAGE
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(scenario, clock)
    parts.cluster.run_for(args.at)
    with parts.cluster.lock:
        snap = parts.kueue.snapshot()
        store = parts.cluster.store
        nodes, pods = [], []
        for raw, parse, out in ((store.list("", "nodes", copy=False)[0], parse_node, nodes),
                                (store.list("", "pods", copy=False)[0], parse_pod, pods)):
            for o in raw:
                try:
                    out.append(parse(o))
                except KueueParseError:
                    continue  # a malformed object is left out, as the store leaves it out
        now = clock.now()
    history = RunHistory(f"scenario:{scenario.name}")
    history.record_all(snap.workloads.values())
    return _Look(snap, pool_capacities(nodes, pods), history, now,
                 {"kind": "scenario", "name": scenario.name, "atSeconds": args.at}), EXIT_OK

