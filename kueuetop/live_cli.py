"""Headless commands against a live cluster: `kueuetop snapshot`, `kueuetop explain NS/NAME` and `kueuetop forecast`.

Each connects as kubectl would, syncs the store once (bounded by `--timeout`), takes one look
and stops (`forecast` then runs the engine forward from that look; its scenario variant and its
arguments are in cli.py). Errors are one line on stderr starting with "kueuetop: ", with a hint, never a traceback:
exit 2 for bad input (missing or broken kubeconfig, unknown context, bad arguments), exit 1 when
the cluster is unreachable, refuses us, has no Kueue, does not sync in time, or the workload
does not exist. No Textual here.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kueuetop.admission.check_timing import NodeCheck
    from kueuetop.admission.forecast_changes import Change
    from kueuetop.admission.forecast_result import PoolCapacity
    from kueuetop.kueue.snapshot import ClusterSnapshot
    from kueuetop.sources.gpu_join import WorkloadGpuUse
    from kueuetop.sources.gpu_poller import GpuPoller
    from kueuetop.sources.session import LiveSession
    from kueuetop.store import Store
    from kueuetop.store.run_history import RunHistory

Key = tuple[str, str]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _fail(message: str, code: int = EXIT_FAILED) -> int:
    from kueuetop.redact import one_line

    print("kueuetop: " + one_line(str(message), 1000), file=sys.stderr)
    return code


def add_connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    p.add_argument("--context", help="kubeconfig context (default: the current context)")


def _quiet_logs() -> None:
    # Informer retries and urllib3 warnings would interleave with the one-line error contract.
    logging.getLogger("kueuetop").setLevel(logging.CRITICAL)
    logging.getLogger("urllib3").setLevel(logging.CRITICAL)


def _hard_deadline(seconds: float, what: str) -> threading.Timer:
    """`--timeout` bounds the whole command by the wall clock, whatever is slow (discovery, lists,
    queue positions, GPU scrapes, each with its own timeout that would otherwise add up): when it
    passes, one line and exit 1. Cancelled before the output is written, so output is never cut."""
    def expire() -> None:
        _fail(f"{what}: timed out after {seconds:g}s (--timeout) (hint: the API server may be slow or "
              "overloaded; try a longer --timeout)")
        sys.stderr.flush()
        os._exit(EXIT_FAILED)  # worker threads may be blocked in a request: nothing to wait for

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def _open(args: argparse.Namespace, alongside: Callable[[LiveSession], object] | None = None,
          ) -> tuple[LiveSession | None, int]:
    from kueuetop.sources.connection import ConnectionProblem
    from kueuetop.sources.session import KubeconfigProblem, SyncTimeout, open_session

    _quiet_logs()
    try:
        return open_session(args.kubeconfig, args.context, timeout=args.timeout, alongside=alongside), EXIT_OK
    except KubeconfigProblem as exc:
        return None, _fail(exc.describe(), EXIT_USAGE)
    except ConnectionProblem as exc:
        return None, _fail(exc.describe())
    except SyncTimeout as exc:
        return None, _fail(f"{exc} (hint: the API server may be overloaded; try a longer --timeout)")
    except KeyboardInterrupt:
        return None, _fail("interrupted")


def cmd_snapshot(args: argparse.Namespace) -> int:
    guard = _hard_deadline(args.timeout, "snapshot")
    try:
        return _snapshot(args, guard)
    finally:
        guard.cancel()


def _gpu_use(store: Store) -> Callable[[ClusterSnapshot, float], Mapping[tuple[str, str], WorkloadGpuUse]]:
    """Each admitted workload's GPU use at the cluster's `now` (sources/gpu_join.py), from the
    store's pods, workloads and GPU samples."""
    from kueuetop.kueue.core import Pod
    from kueuetop.kueue.meta import Condition, Meta
    from kueuetop.sources.gpu_join import workload_gpu_use
    from kueuetop.store import events as K

    def rfc3339(t: float) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))

    def join_dict(meta: Meta, conditions: Iterable[Condition] = ()) -> dict[str, Any]:
        # The few fields `gpu_join` reads of a pod or Workload (identity, labels, owners,
        # conditions), rebuilt from the parsed object: the store keeps no wire dicts.
        return {
            "metadata": {"namespace": meta.namespace, "name": meta.name, "uid": meta.uid, "labels": meta.labels,
                         "ownerReferences": [{"apiVersion": o.api_version, "kind": o.kind, "name": o.name,
                                              "uid": o.uid, "controller": o.controller} for o in meta.owners]},
            "status": {"conditions": [{"type": c.type, "status": c.status,
                                       "lastTransitionTime": None if c.last_transition is None
                                       else rfc3339(c.last_transition)} for c in conditions]},
        }

    def use(snap: ClusterSnapshot, now: float) -> Mapping[tuple[str, str], WorkloadGpuUse]:
        pods = [join_dict(p.meta) for p in store.objects(K.PODS).values() if isinstance(p, Pod)]
        wls = [join_dict(w.meta, w.conditions) for w in snap.workloads.values()]
        return workload_gpu_use(store.gpus().values(), pods, wls, now=now, since_admission=False)
    return use


def _snapshot(args: argparse.Namespace, guard: threading.Timer) -> int:
    from kueuetop.views.snapshot import build_snapshot, render_text

    polled: list[GpuPoller] = []
    # One look: the scrape may spend a whole minute's budget at once (--scrape-budget).
    budget = getattr(args, "scrape_budget", None)
    session, code = _open(args, alongside=lambda s: polled.append(
        s.gpu_poll(args.prometheus, timeout=min(10.0, args.timeout), scrape_budget=budget)))
    if session is None:
        return code
    try:
        poller = polled[0] if polled else session.gpu_poll(args.prometheus, timeout=min(10.0, args.timeout),
                                                           scrape_budget=budget)
        doc = build_snapshot(session.store, now=time.time(), context=session.conn.info.context,
                             server=session.conn.info.server, kueue_api=session.conn.kueue.version,
                             positions=session.positions_from, gpu_source=poller.name,
                             gpu_use=_gpu_use(session.store))
    except KeyboardInterrupt:
        return _fail("interrupted")
    finally:
        session.close()
    guard.cancel()
    if args.output == "json":
        # Indented for a person at a terminal; compact into a pipe, where the C encoder writes the
        # 14 MB of a 20,000-workload cluster ten times faster (`jq .` re-indents it).
        indent = 2 if sys.stdout.isatty() else None
        text = json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"
    else:
        text = render_text(doc)
    sys.stdout.write(text)
    return EXIT_OK


def cmd_explain_live(args: argparse.Namespace, ns: str, name: str) -> int:
    guard = _hard_deadline(args.timeout, f"explain {ns}/{name}")
    try:
        return _explain_live(args, ns, name, guard)
    finally:
        guard.cancel()


def _explain_live(args: argparse.Namespace, ns: str, name: str, guard: threading.Timer) -> int:
    from kueuetop.admission.explain import explain
    from kueuetop.views.explain_text import explain_lines
    from kueuetop.views.safe_text import clean
    from kueuetop.views.snapshot import observed_now

    session, code = _open(args)
    if session is None:
        return code
    try:
        store = session.store
        snap = store.snapshot()
        if (ns, name) not in snap.workloads:
            return _fail(f"workload {ns}/{name} not found on {session.conn.info.server} "
                         f"(hint: `kubectl get workloads -n {ns}` lists them; the name is the Workload's, "
                         "not the Job's)")
        ex = explain(snap, (ns, name), observed_now(snap, time.time()))
        # Kueue's own answer (visibility API) wins over the engine's reconstruction of the order.
        pos = store.position((ns, name))
        if pos is not None and pos.in_cluster_queue >= 0 and ex.position_in_cluster_queue is not None:
            ex = replace(ex, position_in_cluster_queue=pos.in_cluster_queue,
                         position_in_local_queue=pos.in_local_queue if pos.in_local_queue >= 0
                         else ex.position_in_local_queue)
    except KeyboardInterrupt:
        return _fail("interrupted")
    finally:
        session.close()
    guard.cancel()
    lines = explain_lines(ex)
    if args.output == "json":
        print(json.dumps({"workload": f"{ns}/{name}", "verdict": clean(ex.verdict),
                          "blocker": ex.blocker, "lines": lines}, indent=2, ensure_ascii=False))
    else:
        print("\n".join(lines))
    return EXIT_OK


# ====================================================================== forecast
@dataclass
class ForecastLook:
    """One look at a cluster or a scenario: what `kueuetop forecast` starts from."""

    snapshot: ClusterSnapshot
    pools: dict[str, PoolCapacity]
    placements: dict[Key, tuple[tuple[str, int, int, float | None], ...]]
    pools_known: bool  # True: pods wait for nodes (a scenario's NodePools; cluster-autoscaler's limits; fixed pools)
    history: RunHistory
    now: float
    source: dict[str, Any]
    position_of: Callable[[Key], tuple[int, int] | None] | None = None
    warnings: list[str] = field(default_factory=list)
    pools_note: str = ""  # where the pools' limits come from, when not a scenario's NodePools
    pools_why: str = ""  # why they are not known (a live cluster whose autoscaler status is unreadable)
    checks: dict[str, NodeCheck] | None = None  # ProvisioningRequest checks and their classes (check_timing)


def print_forecast(args: argparse.Namespace, look: ForecastLook, changes: Sequence[Change], target: Key | None) -> int:
    """`kueuetop forecast`'s output from one look (live or scenario): the forecast, or with
    `changes` the forecasts before and after them and what moved. Exit 2 when a change does not
    apply (an unknown queue, flavor, resource or pool), 1 when the workload asked about is not pending."""
    from kueuetop.admission.engine_cache import EngineCache
    from kueuetop.admission.forecast import pending_workloads, timed_checks
    from kueuetop.admission.forecast_changes import NodesChange, apply_changes, run_forecast
    from kueuetop.admission.runtime_estimate import estimate_runtimes
    from kueuetop.views.forecast_report import awaits_checks, checks_text, forecast_doc, render_text

    for w in look.warnings:
        print(f"kueuetop: warning: {w}", file=sys.stderr)

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
    # Pods wait for nodes only where the pools are known: a scenario's NodePools, a live cluster's
    # cluster-autoscaler status, or pools taken at their current size because a `nodes` change
    # asks about them. Otherwise pods run when their workload is admitted.
    model = look.pools_known or any(isinstance(c, NodesChange) for c in changes)
    # Those holding quota while ProvisioningRequests wait are answered with the pools (check_timing).
    answered = pending_workloads(snap, timed_checks(snap, look.pools if model else None, look.checks))
    if target is not None:
        if awaits_checks(wl) and target not in answered:
            why = "node pools not modelled" if not model else "not a ProvisioningRequest's"
            return _fail(f"workload {target[0]}/{target[1]} holds quota and waits for its admission checks "
                         f"({checks_text(wl)}): it is admitted when they pass, which is not forecast ({why})")
        if wl.is_finished or (wl.has_quota_reservation and target not in answered):
            state = "finished" if wl.is_finished else "already holds quota"
            return _fail(f"workload {target[0]}/{target[1]} {state}: only pending workloads have an ETA")
    asked = [k for k in snap.workloads if args.namespace is None or k[0] == args.namespace] \
        if target is None else [target]
    keys = sorted(k for k in asked if k in answered)
    # One set of runtimes for both forecasts: a what-if moves admissions, not how long jobs run.
    # With pools the forecast adds each wait for nodes itself: the runs count from their pods' start.
    runtimes = estimate_runtimes(snap, look.history.from_pods() if model else look.history, look.now)
    cache = EngineCache()
    source = {**look.source, "pods": ("placed on the node pools" + (look.pools_note if look.pools_known
                                                                     else " at their current size"))
              if model else "run when admitted (node pools not modelled" + (f": {look.pools_why}" if look.pools_why else "") + ")"}
    result = run_forecast(snap, look.pools if model else None, runtimes, look.now, cache, look.placements,
                          checks=look.checks)
    before = None
    if changed is not None:
        before = result
        result = run_forecast(changed[0], changed[1] if model else None, runtimes, look.now, cache, look.placements,
                              checks=look.checks)
    doc = forecast_doc(snap, result, keys, source=source, position_of=look.position_of,
                       at_most=args.at_most, before=before, changes=[c.spec for c in changes],
                       awaiting=[k for k in asked if k not in answered],
                       namespace=args.namespace)
    if args.output == "json":
        indent = 2 if sys.stdout.isatty() else None
        sys.stdout.write(json.dumps(doc, indent=indent, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(render_text(doc))
    return EXIT_OK


def forecast_live_look(args: argparse.Namespace, history_path: Path) -> tuple[ForecastLook | None, int]:
    """Connect and sync as `snapshot` does (bounded by --timeout) and take what the forecast needs:
    the snapshot, the node pools, the run history at `history_path` with the finished Workloads
    still in the cluster added (and saved back), the cluster's now and Kueue's queue positions."""
    guard = _hard_deadline(args.timeout, "forecast")
    try:
        return _forecast_live(args, history_path)
    finally:
        guard.cancel()  # the cluster part is bounded; the forecast itself is not cut off mid-output


def _forecast_live(args: argparse.Namespace, path: Path) -> tuple[ForecastLook | None, int]:
    from kueuetop.kueue.core import Node
    from kueuetop.kueue.pool_growth import AUTOSCALER
    from kueuetop.sources.autoscaler_status import read_autoscaler_status
    from kueuetop.store import events as K
    from kueuetop.store import known_pools as KP
    from kueuetop.store.events import Changes
    from kueuetop.store.run_history import cluster_scope, load_run_history, record_changes, save_run_history
    from kueuetop.views.forecast_report import (
        FIXED_NOTE,
        NODE_DELAY_ASSUMED,
        checks_from_store,
        pools_from_store,
        store_pool_growth,
    )
    from kueuetop.views.snapshot import observed_now
    from kueuetop.views.workload_rows import store_position

    session, code = _open(args)
    if session is None:
        return None, code
    try:
        store = session.store
        info = session.conn.info
        scope = cluster_scope(info.server, info.context)
        history, warning = load_run_history(path, scope)
        known, known_warning = KP.load_known_pools(path.with_name(KP.FILE_NAME), scope)
        # The finished Workloads still in the cluster are runs too (what follow_store feeds from
        # the initial list; the store has synced already, so they are fed here at once).
        record_changes(store, history, Changes({K.WORKLOADS: frozenset(store.keys(K.WORKLOADS))}))
        snap = store.snapshot()
        now = observed_now(snap, time.time())
        # How far each pool may grow: cluster-autoscaler's status, when it can be read; none and
        # no Karpenter node: the pools are fixed; else unknown (kueue/pool_growth.py).
        growth = store_pool_growth(store, read_autoscaler_status(session.conn.api))
        # What each pool's nodes carry, remembered for when it has scaled to zero.
        known.learn_nodes((n for n in store.objects(K.NODES).values() if isinstance(n, Node)), now)
        pools, placements = pools_from_store(store, growth.groups, now, known=known)
        checks = checks_from_store(store, snap)
    except KeyboardInterrupt:
        return None, _fail("interrupted")
    finally:
        session.close()
    warnings = [w for w in (warning, known_warning) if w]
    if history.unsaved:
        saved = save_run_history(path, history)
        if saved:
            warnings.append(saved)
    if known.unsaved:
        saved = KP.save_known_pools(path.with_name(KP.FILE_NAME), known)
        if saved:
            warnings.append(saved)
    source = {"kind": "cluster", "server": info.server, "context": info.context}
    note = (f" (cluster-autoscaler's limits; a new node taken to be Ready {NODE_DELAY_ASSUMED:.0f}s after a scale-up)"
            if growth.basis == AUTOSCALER else f" {FIXED_NOTE}")
    return ForecastLook(snap, pools, placements, growth.placed, history, now, source, store_position(store), warnings,
                        pools_note=note, pools_why=growth.why, checks=checks), EXIT_OK


def cmd_clusters(args: argparse.Namespace) -> int:
    """`kueuetop clusters --context A --context B` / `--all-contexts`: each cluster's row (a
    cluster that cannot be read gets its one-line error; the others are read all the same) and,
    for a MultiKueue manager, where each workload went and why. Exit 1 only when no cluster
    could be read."""
    from kueuetop.sources.connection import ConnectionProblem, list_contexts
    from kueuetop.sources.multi_context import ContextPool
    from kueuetop.views.clusters import (
        cluster_reads,
        cluster_rows,
        explain_placement,
        placements,
        render_text,
    )

    _quiet_logs()
    try:
        known, current = list_contexts(args.kubeconfig)
    except ConnectionProblem as exc:
        return _fail(exc.describe(), EXIT_USAGE)
    if args.all_contexts and args.contexts:
        return _fail("give --context or --all-contexts, not both", EXIT_USAGE)
    contexts = list(known) if args.all_contexts else list(dict.fromkeys(args.contexts)) or [current]
    if not contexts or contexts == [""]:
        return _fail("no context to read (hint: pass --context or --all-contexts)", EXIT_USAGE)
    pool = ContextPool(args.kubeconfig, contexts, args.timeout)
    try:
        reads = cluster_reads(pool.refresh())
    finally:
        pool.close()
    rows, places = cluster_rows(reads), placements(reads)
    if args.output == "json":
        doc_out = {"clusters": rows, "workloads": [
            {"manager": p.manager, "namespace": p.namespace, "name": p.name, "state": p.state,
             "cluster": p.cluster or None, "nominated": p.nominated, "check": p.check, "copies": p.copies,
             "explain": explain_placement(p)} for p in places]}
        sys.stdout.write(json.dumps(doc_out, indent=2 if sys.stdout.isatty() else None) + "\n")
    else:
        sys.stdout.write(render_text(rows, places))
    return EXIT_OK if any(r["reachable"] for r in rows) else EXIT_FAILED
