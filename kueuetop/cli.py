"""kueuetop command line.

Headless commands (sim, explain, snapshot, forecast, actions) never import Textual: a test enforces it,
so they stay fast and usable on hosts where the console can't run.

Exit codes: 0 success; 1 the command ran but failed (e.g. a workload not found, an action
refused by RBAC or the server, or declined at the prompt, a credential plugin that failed, a
recording that lost its cluster); 2 bad usage or bad input (unknown
scenario, malformed file, bad duration, bad target, unreadable kubeconfig, no --yes without a
terminal). Errors are one line on stderr starting with "kueuetop: ".
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
from typing import Any, NoReturn

from kueuetop import __version__
from kueuetop.live_cli import add_connection_args, cmd_explain_live, cmd_snapshot

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _duration(text: str) -> float:
    from kueuetop.kueue.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_duration(text: str) -> float:
    seconds = _duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}: more than 0 (leave the option out for no limit)")
    return seconds


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid port {text!r}: use a number from 0 to 65535") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"invalid port {port}: use a number from 0 to 65535 (0: a free one)")
    return port


def _speed(text: str) -> float:
    try:
        speed = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid speed {text!r}: use a positive number") from None
    if not (speed > 0 and speed < float("inf")):
        raise argparse.ArgumentTypeError(f"invalid speed {text!r}: use a positive number")
    return speed


class _Parser(argparse.ArgumentParser):
    """argparse with its usage errors on one line: `kueuetop: error: …` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        from kueuetop.redact import one_line

        self.exit(EXIT_USAGE, f"kueuetop: {self.prog}: {one_line(message, 1000)} (see --help)\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="kueuetop", description="A terminal console for Kueue GPU clusters.")
    p.add_argument("--version", action="version", version=f"kueuetop {__version__}")
    from kueuetop.tui.launch import add_console_options  # argparse only; Textual loads in run_console

    add_console_options(p)
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.add_parser("version", help="print the version")

    sim = sub.add_parser("sim", help="the embedded simulated cluster")
    sim.set_defaults(sim_parser=sim)
    simsub = sim.add_subparsers(dest="sim_command", metavar="SIMCOMMAND", parser_class=_Parser)
    simsub.add_parser("list", help="list the built-in scenarios")
    run = simsub.add_parser("run", help="run a scenario headless in virtual time and report")
    run.add_argument("scenario", nargs="?", help="built-in scenario name or a YAML file")
    run.add_argument("--from-recording", metavar="FILE",
                     help="a scenario built from a recording (`kueuetop record`): the same queues, flavors and "
                          "node pools, each workload created when it was and running as long as it ran; the "
                          "report adds how closely the simulated admissions match the recorded ones (fidelity)")
    run.add_argument("--write-scenario", metavar="FILE", help="with --from-recording: also write the scenario here")
    run.add_argument("--with", dest="changes", action="append", default=[], metavar="SPEC",
                     help="with --from-recording: run the history again with this change (repeatable) and "
                          "compare when each workload started: 'nodes POOL=+N' (or =-N), "
                          "'quota CQ [FLAVOR/]RESOURCE=+N' (or =-N, =N), 'hold NS/NAME' (globs allowed)")
    run.add_argument("--for", dest="duration", type=_duration, default=None,
                     help="simulated time to run (e.g. 600s, 2h; default 1h, or the recording's length)")
    run.add_argument("--until-idle", action="store_true", help="stop early once nothing is left to happen")
    run.add_argument("--report", choices=("json", "table"), default="table")
    run.add_argument("-o", "--output", help="write the report to this file instead of stdout")
    serve = simsub.add_parser("serve", help="serve a scenario over a Kubernetes-compatible API on loopback")
    serve.add_argument("scenario", nargs="?", default="refarch")
    serve.add_argument("--port", type=_port, default=0, help="TCP port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--speed", type=_speed, default=1.0, help="simulated seconds per second (default 1)")
    serve.add_argument("--kueue-api", choices=("v1beta2", "v1beta1"), default="v1beta2",
                       help="kueue.x-k8s.io API to serve: v1beta2 (Kueue >= 0.15, also serves the "
                            "deprecated v1beta1) or v1beta1 (Kueue <= 0.14, v1beta1 only)")
    serve.add_argument("--token-file", help="bearer tokens and roles (YAML: token: {user, role}); serves "
                                            "HTTPS with a generated CA, which the kubeconfig trusts")
    serve.add_argument("--kubeconfig", help="where to write the kubeconfig, a new file (default: "
                                            "$XDG_RUNTIME_DIR/kueuetop or a private temporary directory); "
                                            "removed on exit")

    ex = sub.add_parser("explain", help="why a workload waits, with the evidence")
    ex.add_argument("workload", metavar="NAMESPACE/NAME")
    ex.add_argument("--scenario", help="explain on a simulated scenario (built-in or file) instead of "
                                       "the live cluster")
    ex.add_argument("--at", type=_duration, default=None,
                    help="with --scenario: simulated time at which to explain (default 5m)")
    ex.add_argument("-o", "--output", choices=("text", "json"), default="text")
    ex.add_argument("--timeout", type=_duration, default=_duration("30s"),
                    help="live: give up when the cluster has not synced after this long (default 30s)")
    add_connection_args(ex)

    snap = sub.add_parser("snapshot", help="print ClusterQueues, Workloads, Nodes and GPUs once (no console)")
    add_connection_args(snap)
    snap.add_argument("--prometheus", metavar="URL",
                      help="read GPU telemetry from this Prometheus (default: scrape the dcgm-exporter "
                           "pods through the API server)")
    from kueuetop.tui.launch import add_scrape_budget_option  # argparse only

    add_scrape_budget_option(snap)
    snap.add_argument("-o", "--output", choices=("json", "table"), default="table")
    snap.add_argument("--timeout", type=_duration, default=_duration("30s"),
                      help="give up when the cluster has not synced after this long (default 30s)")
    snap.add_argument("--replay", metavar="FILE", help="print what the snapshot was at a moment of this "
                                                       "recording (`kueuetop record`) instead of asking a cluster")
    snap.add_argument("--at", dest="replay_at", metavar="WHEN",
                      help="with --replay: HH:MM (local time), -2h (before the end), +10m (after the start), an "
                           "ISO time, start or end (default: end)")
    _add_record_parser(sub)
    cl = sub.add_parser("clusters", help="several contexts at once: each cluster's state and where MultiKueue "
                                         "placed each manager workload (no console)")
    cl.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    cl.add_argument("--context", dest="contexts", action="append", default=[], metavar="CONTEXT",
                    help="a kubeconfig context to read (repeatable)")
    cl.add_argument("--all-contexts", action="store_true", help="read every context of the kubeconfig")
    cl.add_argument("-o", "--output", choices=("table", "json"), default="table")
    cl.add_argument("--timeout", type=_duration, default=_duration("30s"),
                    help="give up on a cluster that has not synced after this long (default 30s)")
    _add_forecast_parser(sub)
    _add_action_parsers(sub)
    _share_console_options(p)
    return p


# Console options that every command heeds: an action refuses to run under them.
_ANY_COMMAND = frozenset({"read_only", "read_only_context"})
_NOT_OPTIONS = frozenset({"help", "version", "command", "sim_command"})


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sp for a in p._actions if isinstance(a, argparse._SubParsersAction)
            for name, sp in a.choices.items()}


def _share_console_options(top: argparse.ArgumentParser) -> None:
    """A console option given before the command applies to it (`kueuetop --context prod hold …`),
    as kubectl's global flags do wherever they stand. argparse would let the command's own default
    overwrite it (the command would act on the current context, not on prod); with no default of
    their own, the command's copies only set the value when they are given (the later one wins)."""
    shared = {a.dest for a in top._actions} - _NOT_OPTIONS

    def walk(p: argparse.ArgumentParser) -> None:
        for sp in _subparsers(p).values():
            for a in sp._actions:
                if a.dest in shared:
                    a.default = argparse.SUPPRESS
            walk(sp)

    walk(top)


def _command_options(top: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """Settle the console options given with a command; a usage error, or "".

    An option of the console the command has no use for (`--theme`, `--demo`, …) is an error
    rather than silently dropped; `--context` given once before a one-cluster command is its
    context; before `clusters`, each is one more context to read."""
    command = _subparsers(top).get(args.command)
    if command is None:
        return ""
    own = {a.dest for a in command._actions}
    nested = _subparsers(command).get(getattr(args, "sim_command", None) or "")
    if nested is not None:
        own |= {a.dest for a in nested._actions}
    name = " ".join(n for n in (args.command, getattr(args, "sim_command", None)) if n)
    given = getattr(args, "context", None)
    if args.command == "clusters" and given:
        args.contexts = [*given, *args.contexts]
        args.context = None
    stray = [max(a.option_strings, key=len) for a in top._actions
             if a.option_strings and a.dest not in own | _ANY_COMMAND | _NOT_OPTIONS
             and getattr(args, a.dest, a.default) != a.default]
    if stray:
        return (f"{', '.join(stray)} {'applies' if len(stray) == 1 else 'apply'} to the console, "
                f"not to `kueuetop {name}`")
    given = getattr(args, "context", None)
    if isinstance(given, list):
        if len(given) > 1:
            return (f"`kueuetop {name}` reads one cluster: give one --context (several at once: "
                    "`kueuetop clusters` or the console)")
        args.context = given[0] if given else None
    return ""


def _add_record_parser(sub: Any) -> None:
    rec = sub.add_parser("record", help="record the cluster's history to a file (no console)")
    add_connection_args(rec)
    rec.add_argument("-o", "--output", metavar="FILE",
                     help="the recording to create (default: kueuetop-CONTEXT-TIME.ktrec here)")
    rec.add_argument("--for", dest="duration", type=_positive_duration, default=0.0,
                     help="stop after this long (e.g. 10m, 2h; default: until Ctrl-C or SIGTERM)")
    rec.add_argument("--prometheus", metavar="URL",
                     help="read GPU telemetry from this Prometheus (default: scrape the dcgm-exporter pods)")
    rec.add_argument("--gpu-interval", type=_duration, default=_duration("5s"),
                     help="seconds between GPU polls (default 5s)")
    from kueuetop.tui.launch import add_scrape_budget_option  # argparse only

    add_scrape_budget_option(rec)
    rec.add_argument("--keyframe-every", type=_duration, default=_duration("5m"), help=argparse.SUPPRESS)
    rec.add_argument("--timeout", type=_duration, default=_duration("30s"),
                     help="give up connecting after this long (default 30s)")


def _add_forecast_parser(sub: Any) -> None:
    fc = sub.add_parser("forecast", help="when each pending workload starts; what-ifs with --with")
    fc.add_argument("workload", nargs="?", metavar="NAMESPACE/NAME", help="only this workload")
    fc.add_argument("-n", "--namespace", help="only the workloads of this namespace")
    fc.add_argument("-o", "--output", choices=("table", "json"), default="table")
    fc.add_argument("--with", dest="changes", action="append", default=[], metavar="SPEC",
                    help="a what-if change (repeatable): 'quota CQ [FLAVOR/]RESOURCE=+N' (or =-N, =N), "
                         "'hold NS/NAME' (globs allowed), 'nodes POOL=+N' (or =-N)")
    fc.add_argument("--at-most", type=_count, metavar="N", help="list at most N workloads")
    fc.add_argument("--scenario", help="forecast a simulated scenario (built-in or file) instead of the "
                                       "live cluster")
    fc.add_argument("--replay", metavar="FILE", help="forecast from a moment of this recording (`kueuetop record`): "
                                                     "the state the replay rebuilds there")
    fc.add_argument("--at", metavar="WHEN",
                    help="with --scenario: the simulated time to forecast from (default 5m); with --replay: "
                         "the recorded moment, as `snapshot --replay --at` (default: end)")
    fc.add_argument("--timeout", type=_duration, default=_duration("30s"),
                    help="give up when the cluster has not synced after this long (default 30s)")
    add_connection_args(fc)


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"invalid count {text!r}: use a whole number >= 0")
    return n


_ACTION_HELP = {
    "hold": "deactivate a workload (spec.active=false)",
    "resume": "reactivate a workload (spec.active=true)",
    "requeue": "deactivate then reactivate a pending workload (resets its backoff)",
    "preempt": "evict an admitted workload and put it back in its queue",
    "preempt-and-hold": "evict an admitted workload and keep it inactive",
    "stop": "stop a queue: no new admissions, running workloads keep running (stopPolicy=Hold)",
    "drain": "stop a queue and evict its admitted workloads (stopPolicy=HoldAndDrain)",
    "resume-queue": "resume a stopped queue (stopPolicy=None)",
}


def _add_action_parsers(sub: Any) -> None:
    for name, text in _ACTION_HELP.items():
        a = sub.add_parser(name, help=text, description=text)
        queue = name in ("stop", "drain", "resume-queue")
        a.add_argument("target", metavar="cq/NAME|lq/NS/NAME" if queue else "NS/WORKLOAD")
        a.add_argument("--dry-run", action="store_true", help="server-side dry run (dryRun=All); changes nothing")
        a.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")
        a.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
        a.add_argument("--context", help="kubeconfig context (default: the current context)")
        a.add_argument("--wait-timeout", type=_duration, default=_duration("5m"),
                       help="give up waiting for Kueue after this long (default 5m)")
        a.add_argument("--no-access-check", action="store_true",
                       help="skip the SelfSubjectAccessReview and let the server decide")
        a.add_argument("--no-preview", action="store_true", help="do not compute the admission preview")
        a.add_argument("--request-timeout", type=_duration, default=_duration("15s"),
                       help="give up on one API request after this long (default 15s)")
        a.set_defaults(action=name)


def _load(name: str) -> Any:
    from kueuetop.sim.scenarios.loader import load_scenario
    from kueuetop.sim.scenarios.multicluster import is_multicluster
    from kueuetop.sim.scenarios.scenario import ScenarioError

    if is_multicluster(name):
        print(f"kueuetop: {name} holds several clusters: serve it with `kueuetop sim serve {name}` "
              "(sim run, explain and forecast take one cluster)", file=sys.stderr)
        return None
    try:
        return load_scenario(name)
    except ScenarioError as exc:
        print(f"kueuetop: {exc}", file=sys.stderr)
        return None
    except OSError as exc:
        print(f"kueuetop: cannot read scenario {name!r}: {exc.strerror or exc}", file=sys.stderr)
        return None


def cmd_sim_run(args: argparse.Namespace) -> int:
    from kueuetop.sim.report import render_table
    from kueuetop.sim.runner import run_scenario

    if args.from_recording:
        if args.scenario:
            return _fail("give a scenario or --from-recording FILE, not both", EXIT_USAGE)
        from kueuetop.recording_cli import cmd_sim_from_recording

        return cmd_sim_from_recording(args)
    if args.changes:
        return _fail("sim run: --with needs --from-recording FILE", EXIT_USAGE)
    if not args.scenario:
        return _fail("sim run: give a scenario (`kueuetop sim list`) or --from-recording FILE", EXIT_USAGE)
    if args.duration is None:
        args.duration = _duration("1h")
    scenario = _load(args.scenario)
    if scenario is None:
        return EXIT_USAGE
    import logging

    # A refused step is in the report and in the one error line below, not logged a second time.
    logging.getLogger("kueuetop.sim.cluster").setLevel(logging.ERROR)
    report, stats = run_scenario(scenario, args.duration, until_idle=args.until_idle)
    report["run"] = stats
    text = json.dumps(report, indent=2) + "\n" if args.report == "json" else render_table(report)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    errors = report.get("errors") or []
    if errors:
        more = f" (and {len(errors) - 1} more, listed in the report)" if len(errors) > 1 else ""
        return _fail(f"scenario {scenario.name}: step refused: {errors[0]}{more}")
    return EXIT_OK


def cmd_sim_serve_world(args: argparse.Namespace) -> int:
    """Several clusters (a MultiKueue manager and its workers), one kubeconfig of contexts."""
    from kueuetop.sim.scenarios.multicluster import load_multicluster
    from kueuetop.sim.scenarios.scenario import ScenarioError
    from kueuetop.sim.serve import serve_forever, stop_on_signals
    from kueuetop.sim.serve_world import start_served_world

    done = stop_on_signals()
    try:
        scenario = load_multicluster(args.scenario)
    except ScenarioError as exc:
        return _fail(str(exc), EXIT_USAGE)
    try:
        served = start_served_world(scenario, speed=args.speed, port=args.port, kubeconfig=args.kubeconfig)
    except ValueError as exc:
        return _fail(f"cannot start the simulated clusters: {exc}", EXIT_USAGE)
    except OSError as exc:
        return _fail(f"cannot start the simulated clusters: {exc.strerror if exc.strerror and exc.filename is None else exc}")
    for decl in scenario.clusters:
        print(f"kueuetop: cluster {decl.name} ({decl.role}) at {served.url(decl.name)} "
              f"(kueue.x-k8s.io/{decl.kueue_api}, context {decl.name})", flush=True)
    print(f"kueuetop: kubeconfig written to {served.kubeconfig}", flush=True)
    print(f"kueuetop: try  kubectl --kubeconfig {served.kubeconfig} --context {scenario.workers[0] if scenario.workers else scenario.manager} "
          "get workloads -A", flush=True)
    serve_forever(served, done)
    return EXIT_OK


def cmd_sim_serve(args: argparse.Namespace) -> int:
    from kueuetop.sim.scenarios.multicluster import is_multicluster
    from kueuetop.sim.serve import serve_forever, start_served, stop_on_signals

    if is_multicluster(args.scenario):
        return cmd_sim_serve_world(args)
    done = stop_on_signals()
    scenario = _load(args.scenario)
    if scenario is None:
        return EXIT_USAGE
    try:
        served = start_served(scenario, port=args.port, speed=args.speed, token_file=args.token_file,
                              kubeconfig=args.kubeconfig, kueue_api=args.kueue_api, tls=bool(args.token_file))
    except ValueError as exc:  # a bad token file or option: bad input
        return _fail(f"cannot start the simulated cluster: {exc}", EXIT_USAGE)
    except OSError as exc:
        return _fail(f"cannot start the simulated cluster: {exc.strerror if exc.strerror and exc.filename is None else exc}")
    print(f"kueuetop: serving scenario {scenario.name} at {served.url} (kueue.x-k8s.io/{args.kueue_api})",
          flush=True)
    print(f"kueuetop: kubeconfig written to {served.kubeconfig}", flush=True)
    print(f"kueuetop: try  kubectl --kubeconfig {served.kubeconfig} get clusterqueues", flush=True)

    def say_when_caught_up() -> None:
        # The server answers from the start; this says when the first instant (its workloads
        # included) is settled and served, which is what a start-up time should count to.
        if served.caught_up.wait() and not done.is_set():
            n = len(served.parts.cluster.store.list("kueue.x-k8s.io", "workloads", copy=False)[0])
            print(f"kueuetop: first instant served ({n} workloads)", flush=True)

    threading.Thread(target=say_when_caught_up, name="kueuetop-caught-up", daemon=True).start()
    serve_forever(served, done)
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from kueuetop.admission.explain import explain
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.runner import VIRTUAL_EPOCH
    from kueuetop.sim.wiring import build_cluster
    from kueuetop.views.explain_text import explain_lines

    if args.workload.count("/") != 1 or not all(args.workload.split("/")):
        print(f"kueuetop: bad workload {args.workload!r}: use NAMESPACE/NAME", file=sys.stderr)
        return EXIT_USAGE
    if args.scenario is None:
        if args.at is not None:
            return _fail("explain: --at needs --scenario (a live cluster is explained as it is now)", EXIT_USAGE)
        return cmd_explain_live(args, *args.workload.split("/"))
    unused = _unused_with(args, "--scenario", "kubeconfig", "context")
    if unused:
        return _fail(unused, EXIT_USAGE)
    args.at = _duration("5m") if args.at is None else args.at
    scenario = _load(args.scenario)
    if scenario is None:
        return EXIT_USAGE
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(scenario, clock)
    parts.cluster.run_for(args.at)
    ns, name = args.workload.split("/")
    with parts.cluster.lock:
        snap = parts.kueue.snapshot()
        if (ns, name) not in snap.workloads:
            print(f"kueuetop: workload {ns}/{name} not found at {args.at:g}s in {scenario.name}", file=sys.stderr)
            return EXIT_FAILED
        ex = explain(snap, (ns, name), clock.now(), parts.kueue.state)
    if args.output == "json":
        print(json.dumps({"workload": f"{ns}/{name}", "verdict": ex.verdict, "blocker": ex.blocker,
                          "lines": explain_lines(ex)}, indent=2))
    else:
        print("\n".join(explain_lines(ex)))
    return EXIT_OK


def _unused_with(args: argparse.Namespace, source: str, *names: str) -> str:
    """A usage error naming the options given that `source` (a scenario, a recording) has no use
    for, or "": an option silently ignored would let a user believe it took effect."""
    given = [f"--{n.replace('_', '-')}" for n in names if getattr(args, n, None)]
    if not given:
        return ""
    return f"{', '.join(given)} {'applies' if len(given) == 1 else 'apply'} to a live cluster, not to {source}"


def cmd_forecast(args: argparse.Namespace) -> int:
    """`kueuetop forecast` (live_cli.print_forecast): the changes are checked before anything
    connects or simulates, so a typo costs nothing."""
    from kueuetop.admission.forecast_changes import parse_changes
    from kueuetop.live_cli import forecast_live_look, print_forecast

    target: tuple[str, str] | None = None
    if args.workload is not None:
        if args.workload.count("/") != 1 or not all(args.workload.split("/")):
            return _fail(f"bad workload {args.workload!r}: use NAMESPACE/NAME", EXIT_USAGE)
        ns, name = args.workload.split("/")
        target = (ns, name)
        if args.namespace is not None and args.namespace != ns:
            return _fail(f"workload {args.workload} is not in namespace {args.namespace} (-n)", EXIT_USAGE)
    try:
        changes = parse_changes(args.changes)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if args.scenario is not None and args.replay is not None:
        return _fail("forecast: give --scenario or --replay, not both", EXIT_USAGE)
    if args.scenario is not None or args.replay is not None:
        unused = _unused_with(args, "--scenario" if args.scenario is not None else "--replay", "kubeconfig", "context")
        if unused:
            return _fail(unused, EXIT_USAGE)
    if args.scenario is not None:
        try:
            args.at = _duration(args.at or "5m")
        except argparse.ArgumentTypeError as exc:
            return _fail(f"--at: {exc}", EXIT_USAGE)
        look, code = _forecast_scenario_look(args)
    elif args.replay is not None:
        from kueuetop.recording_cli import forecast_replay_look

        look, code = forecast_replay_look(args.replay, args.at)
    elif args.at is not None:
        return _fail("forecast: --at needs --scenario or --replay FILE", EXIT_USAGE)
    else:
        from kueuetop.store.run_history import FILE_NAME
        from kueuetop.xdg import state_dir

        look, code = forecast_live_look(args, state_dir() / FILE_NAME)
    if look is None:
        return code
    try:
        return print_forecast(args, look, changes, target)
    except KeyboardInterrupt:
        return _fail("interrupted")


def _forecast_scenario_look(args: argparse.Namespace) -> tuple[Any, int]:
    """The scenario simulated to --at: its snapshot, node pools (with the limits and scale-ups in
    flight the simulator's cloud knows), and its finished runs as the history."""
    from kueuetop.live_cli import ForecastLook
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.observed import node_checks_of, node_pools_of
    from kueuetop.sim.runner import VIRTUAL_EPOCH
    from kueuetop.sim.wiring import build_cluster
    from kueuetop.store.run_history import RunHistory

    scenario = _load(args.scenario)
    if scenario is None:
        return None, EXIT_USAGE
    clock = SimClock(VIRTUAL_EPOCH)
    parts = build_cluster(scenario, clock)
    parts.cluster.run_for(args.at)
    with parts.cluster.lock:
        snap = parts.kueue.snapshot()
        pools, placements = node_pools_of(parts.cluster.store, parts.extra.get("node-pools"))
        checks = node_checks_of(parts.cluster.store, snap)
        now = clock.now()
    history = RunHistory(f"scenario:{scenario.name}")
    history.record_all(snap.workloads.values())
    return ForecastLook(snap, pools, placements, True, history, now,
                        {"kind": "scenario", "name": scenario.name, "atSeconds": args.at}, checks=checks), EXIT_OK


def _kube_identity(kubeconfig: str | None, context: str | None) -> tuple[str, str, str]:
    """(context, cluster, user) names for the audit log and the read-only check; never credentials.
    Resolved as kubectl and the client resolve them: with several files in KUBECONFIG, the first
    current-context wins (the kubernetes library's own loader would take the last one's)."""
    from kueuetop.sources.connection import context_identity

    return context_identity(kubeconfig, context)


def _fail(message: str, code: int = EXIT_FAILED) -> int:
    from kueuetop.redact import one_line

    print("kueuetop: " + one_line(message, 1000), file=sys.stderr)
    return code


def cmd_action(args: argparse.Namespace) -> int:
    """hold / resume / requeue / preempt / preempt-and-hold / stop / drain / resume-queue.

    Journaled (kueuetop.actions.journal): refused when the audit log can't be written; an intent
    entry before the first PATCH, a step entry before each, the outcome after; unfinished actions
    of earlier runs are reported first. After a lost connection the target is read back and the
    line says what landed and how to finish or undo it.
    """
    from kueuetop.actions.audit import AuditRecord
    from kueuetop.actions.journal import Journal, JournalError, check_unfinished
    from kueuetop.kueue.actions import DANGEROUS, parse_target, plan

    action: str = args.action
    try:
        target = parse_target(args.target)
        steps = plan(action, target)
    except ValueError as exc:
        return _fail(str(exc), EXIT_USAGE)
    if not args.yes and not args.dry_run and not sys.stdin.isatty():
        return _fail(f"refusing to {action} {target} without confirmation: stdin is not a terminal "
                     "(pass --yes to confirm)", EXIT_USAGE)
    journal = Journal()
    problem = journal.probe()
    if problem and not args.dry_run:
        return _fail(f"refusing to {action} {target}: {problem} (every action is journaled there first; "
                     "set XDG_STATE_HOME or KUEUETOP_STATE_DIR to a writable directory)")

    from kueuetop.sources.connection import ConnectionProblem, ExecPluginFailed, load_client

    try:
        # The client every other command and the console use: the context kubectl would use
        # (the kubernetes library's loader lets the last KUBECONFIG file's current-context win).
        api_client, info = load_client(args.kubeconfig, args.context)
    except ConnectionProblem as exc:
        return _fail(f"{action} {target}: {exc.describe()}",
                     EXIT_FAILED if isinstance(exc, ExecPluginFailed) else EXIT_USAGE)

    from kueuetop.actions.executor import Executor
    from kueuetop.actions.preview import preview
    from kueuetop.actions.rbac import check_access, whoami
    from kueuetop.views.safe_text import clean

    ctx_name, cluster, kube_user = _kube_identity(args.kubeconfig, args.context)
    secrets = [str(v) for v in (api_client.configuration.api_key or {}).values()]
    secrets += [v.split(" ", 1)[-1] for v in secrets]  # the bare token, without "Bearer "
    journal = Journal(cluster, ctx_name, kube_user, api_client.configuration.host, secrets=secrets)
    preview_lines: tuple[str, ...] = ()

    def audit(result: str, message: str, error: str = "") -> None:
        problem = journal.record(AuditRecord(action, str(target), result, message, args.dry_run,
                                             preview=preview_lines, error=error))
        if problem:
            print(f"kueuetop: warning: {problem}", file=sys.stderr)

    def executor(**kw: Any) -> Executor:
        return Executor(api_client, wait_timeout=args.wait_timeout, request_timeout=args.request_timeout,
                        readback_timeout=max(args.request_timeout, 10.0), **kw)

    with api_client:
        # Actions an earlier kueuetop left unfinished (killed mid-action) come first.
        for line in check_unfinished(journal, executor().get):
            print(f"kueuetop: {' '.join(line.split())}", file=sys.stderr)
        user = whoami(api_client) or ""
        journal.user = user or kube_user
        if not args.no_access_check:
            access = check_access(api_client, action, target)
            journal.user = user or access.user or kube_user
            if not access.allowed:
                audit("refused", access.reason, "forbidden")
                return _fail(access.reason)
            if not access.known:
                print(f"kueuetop: warning: {access.reason}", file=sys.stderr)
        current = _read_target(executor().get, target)
        if current is not None:
            # What the executor checks before its first write, checked before the preview and the
            # prompt too: a preview of an action that will be refused would mislead.
            from kueuetop.actions.executor import ActionError, check_precondition
            from kueuetop.kueue.actions import Patch

            first = next((st.body for st in steps if isinstance(st, Patch)), {})
            try:
                check_precondition(action, target, current, first)
            except ActionError as exc:
                audit("refused", exc.message, exc.kind)
                return _fail(f"{action} {target}: {exc.message}")
        copy_of = _multikueue_origin(current)
        if copy_of:
            # The manager's Kueue owns this copy: what happens to it there is the manager's to decide.
            print(f"kueuetop: warning: {target} is a MultiKueue copy of a workload of manager {clean(copy_of)!r}; "
                  "act on the manager's workload instead (its context)", file=sys.stderr)
        if not args.no_preview:
            pv = preview(action, target, api_client=api_client)
            preview_lines = pv.lines
            print(f"{action} {target} on {clean(ctx_name or '-')} ({clean(info.server)})"
                  + (" (dry run)" if args.dry_run else "") + ":")
            for line in pv.lines:
                print(f"  {line}")
            sys.stdout.flush()
        if not args.yes and not args.dry_run:
            warn = " This evicts running work." if action in DANGEROUS else ""
            try:
                answer = input(f"Proceed with {action} {target} on {clean(ctx_name or info.server)}?{warn} [y/N] ")
            except (EOFError, KeyboardInterrupt):
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                audit("cancelled", "declined at the prompt")
                return _fail(f"{action} {target}: not confirmed; nothing sent")
        try:
            action_id = journal.intent(action, target, steps, dry_run=args.dry_run, preview=preview_lines)
        except JournalError as exc:
            if not args.dry_run:
                return _fail(f"refusing to {action} {target}: {exc}; nothing sent")
            action_id = ""

        def on_send(step: int, before: Any) -> None:
            if action_id:
                journal.step(action_id, action, target, step, before)

        ex = executor()
        try:
            res = ex.run(action, target, dry_run=args.dry_run, on_send=on_send)
        except KeyboardInterrupt:
            from kueuetop.actions.reconcile import describe_state, next_step, what_landed

            before = None if args.dry_run else ex.may_have_written
            ok, obj = ex.read_back(target, 2.0) if before is not None else (True, None)
            landed = (what_landed(action, before, obj) if ok else "unknown") if before else "not applied"
            hint = next_step(action, target, landed)
            msg = f"{action} {target}: interrupted: {landed}" + (
                f" ({describe_state(target, obj)})" if ok and before else "") + (f"; {hint}" if hint else "")
            if action_id:
                journal.outcome(action_id, action, target, "interrupted", msg, dry_run=args.dry_run,
                                preview=preview_lines, error="cancelled", landed=landed, next_text=hint)
            return _fail(msg)
    result = "ok" if res.ok else "error"
    if action_id:
        problem = journal.outcome(action_id, action, target, result, res.message, dry_run=args.dry_run,
                                  preview=preview_lines, error=res.error, steps_done=res.steps_done,
                                  landed=res.landed, next_text=res.next)
        if problem:
            print(f"kueuetop: warning: {problem}", file=sys.stderr)
    if not res.ok:
        return _fail(res.message if res.message.startswith(f"{action} {target}") else f"{action} {target}: "
                     f"{res.message}")
    state = ", ".join(f"{k}={v}" for k, v in (res.summary.get("conditions") or {}).items())
    print(f"kueuetop: {res.message}" + (f" ({state})" if state else ""))
    return EXIT_OK


def _run_action(args: argparse.Namespace) -> int:
    """An action command, after checking that the credentials work and the server is a Kubernetes
    API server (an HTML login page or a failing exec plugin is one line, not a traceback from deep
    in the client); anything the action lets escape is one line too."""
    from kueuetop.redact import one_line
    from kueuetop.sources.connection import ConnectionProblem, check_api_server

    why = _read_only_why(args)
    if why and not args.dry_run:  # a server-side dry run changes nothing: allowed, as in the console's preview
        return _fail(f"refusing to {args.action} {args.target}: {why}")
    try:
        check_api_server(args.kubeconfig, args.context)
    except ConnectionProblem as exc:
        return _fail(f"{args.action} {args.target}: {exc.describe()}")
    try:
        return cmd_action(args)
    except Exception as exc:  # the server answered something no Kubernetes API server sends
        return _fail(f"{args.action} {args.target}: failed: {type(exc).__name__}: {one_line(str(exc), 300)}")


def _read_target(get: Any, target: Any) -> dict[str, Any] | None:
    """The target as it is now, None when missing or unreadable (the action's own reads report
    that in their own words)."""
    try:
        obj = get(target)
    except Exception:  # a courtesy read before the preview
        return None
    return obj if isinstance(obj, dict) else None


def _multikueue_origin(obj: dict[str, Any] | None) -> str:
    """The MultiKueue origin a Workload is a worker's copy for, "" when it is none."""
    from kueuetop.kueue.workload import MULTIKUEUE_ORIGIN_LABEL

    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    origin = labels.get(MULTIKUEUE_ORIGIN_LABEL) if isinstance(labels, dict) else None
    return str(origin) if origin else ""


def _read_only_why(args: argparse.Namespace) -> str:
    """Why the console's read-only options forbid an action here, or "" (k9s --readonly: no
    command that changes the cluster). The context is the one the action would use: --context,
    else the kubeconfig's current one."""
    if getattr(args, "read_only", False):
        return "read-only (--read-only)"
    guarded = set(getattr(args, "read_only_context", None) or ())
    if guarded:
        context = _kube_identity(args.kubeconfig, args.context)[0]
        if context in guarded:
            return f"context {context} is read-only (--read-only-context)"
    return ""


def _join_relative_moments(argv: list[str]) -> list[str]:
    """`--at -2h` as `--at=-2h`: argparse would take `-2h` for an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--at" and i + 1 < len(argv) and argv[i + 1].startswith("-") and argv[i + 1][1:2].isdigit():
            out.append(f"--at={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # `kueuetop forecast | head`: the reader left; no traceback, and none from the final
        # flush either (stdout is pointed at /dev/null). 141 = 128 + SIGPIPE, as a shell reports.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def _main(argv: list[str] | None) -> int:
    from kueuetop.redact import install_log_redaction

    install_log_redaction()
    import logging

    # urllib3 logs every retry as a warning; the command's own error line says what failed.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    parser = build_parser()
    args = parser.parse_args(_join_relative_moments(sys.argv[1:] if argv is None else argv))
    problem = _command_options(parser, args)
    if problem:
        return _fail(problem, EXIT_USAGE)
    if args.command is None and args.demo in _subparsers(parser):
        # `kueuetop --demo forecast`: argparse took the command for --demo's scenario.
        return _fail(f"--demo {args.demo}: `{args.demo}` is a command, not a scenario; --demo opens the "
                     f"console on a simulated cluster (a command on one: `kueuetop sim serve`, then "
                     f"`kueuetop {args.demo} --kubeconfig FILE`)", EXIT_USAGE)
    if args.command == "version":
        print(f"kueuetop {__version__}")
        return EXIT_OK
    if args.command == "sim":
        handlers = {"run": cmd_sim_run, "serve": cmd_sim_serve}
        if args.sim_command == "list":
            from kueuetop.sim.scenarios.loader import list_builtins
            from kueuetop.sim.scenarios.multicluster import multicluster_builtins

            print("\n".join(list_builtins()))
            # Several clusters each: `sim serve` only (a manager and its MultiKueue workers).
            print("\n".join(f"{n}  (several clusters: sim serve)" for n in multicluster_builtins()))
            return EXIT_OK
        if args.sim_command in handlers:
            return handlers[args.sim_command](args)
        args.sim_parser.print_help(sys.stderr)  # no subcommand is bad usage, as argparse's own errors
        return EXIT_USAGE
    if args.command == "explain":
        return cmd_explain(args)
    if args.command == "snapshot":
        if args.replay:
            from kueuetop.recording_cli import cmd_snapshot_replay

            unused = _unused_with(args, "--replay", "kubeconfig", "context", "prometheus")
            if unused:
                return _fail(unused, EXIT_USAGE)

            return cmd_snapshot_replay(args)
        if args.replay_at:
            parser.error("--at needs --replay FILE")
        return cmd_snapshot(args)
    if args.command == "record":
        from kueuetop.recording_cli import cmd_record

        return cmd_record(args)
    if args.command == "clusters":
        from kueuetop.live_cli import cmd_clusters

        return cmd_clusters(args)
    if args.command == "forecast":
        return cmd_forecast(args)
    if getattr(args, "action", None):
        return _run_action(args)
    if args.command is None:
        from kueuetop.tui.launch import run_console

        return run_console(args)
    parser.print_help(sys.stderr)
    return EXIT_USAGE
