"""kueuetop command line.

Headless commands (sim, explain, snapshot, actions) never import Textual: a test enforces it,
so they stay fast and usable on hosts where the console can't run.

Exit codes: 0 success; 1 the command ran but failed (e.g. a workload not found); 2 bad usage
or bad input (unknown scenario, malformed file, bad duration).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from kueuetop import __version__

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _duration(text: str) -> float:
    from kueuetop.kueue.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kueuetop", description="A terminal console for Kueue GPU clusters.")
    p.add_argument("--version", action="version", version=f"kueuetop {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("version", help="print the version")

    sim = sub.add_parser("sim", help="the embedded simulated cluster")
    simsub = sim.add_subparsers(dest="sim_command", metavar="SIMCOMMAND")
    simsub.add_parser("list", help="list the built-in scenarios")
    run = simsub.add_parser("run", help="run a scenario headless in virtual time and report")
    run.add_argument("scenario", help="built-in scenario name or a YAML file")
    run.add_argument("--for", dest="duration", type=_duration, default=_duration("1h"),
                     help="simulated time to run (e.g. 600s, 2h; default 1h)")
    run.add_argument("--until-idle", action="store_true", help="stop early once nothing is left to happen")
    run.add_argument("--report", choices=("json", "table"), default="table")
    run.add_argument("-o", "--output", help="write the report to this file instead of stdout")
    serve = simsub.add_parser("serve", help="serve a scenario over a Kubernetes-compatible API on loopback")
    serve.add_argument("scenario", nargs="?", default="refarch")
    serve.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: a free one)")
    serve.add_argument("--speed", type=float, default=1.0, help="simulated seconds per second (default 1)")
    serve.add_argument("--kueue-api", choices=("v1beta2", "v1beta1"), default="v1beta2")
    serve.add_argument("--token-file", help="bearer tokens and roles (YAML: token: {user, role})")
    serve.add_argument("--kubeconfig", help="where to write the kubeconfig (default: runtime dir)")

    ex = sub.add_parser("explain", help="why a workload waits, with the evidence")
    ex.add_argument("workload", metavar="NAMESPACE/NAME")
    ex.add_argument("--scenario", required=True,
                    help="explain on a simulated scenario (built-in or file)")
    ex.add_argument("--at", type=_duration, default=_duration("5m"),
                    help="simulated time at which to explain (default 5m)")
    ex.add_argument("-o", "--output", choices=("text", "json"), default="text")
    return p


def _load(name: str) -> Any:
    from kueuetop.sim.scenario import ScenarioError, load_scenario

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

    scenario = _load(args.scenario)
    if scenario is None:
        return EXIT_USAGE
    report, stats = run_scenario(scenario, args.duration, until_idle=args.until_idle)
    report["run"] = stats
    text = json.dumps(report, indent=2) + "\n" if args.report == "json" else render_table(report)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    return EXIT_OK


def cmd_sim_serve(args: argparse.Namespace) -> int:
    from kueuetop.sim.serve import serve_forever, start_served

    if args.kueue_api != "v1beta2":
        print("kueuetop: --kueue-api v1beta1 is not supported yet; both versions are served", file=sys.stderr)
        return EXIT_USAGE
    scenario = _load(args.scenario)
    if scenario is None:
        return EXIT_USAGE
    try:
        served = start_served(scenario, port=args.port, speed=args.speed, token_file=args.token_file,
                              kubeconfig=args.kubeconfig)
    except (OSError, ValueError) as exc:
        print(f"kueuetop: cannot start the simulated cluster: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"kueuetop: serving scenario {scenario.name} at {served.url}", flush=True)
    print(f"kueuetop: kubeconfig written to {served.kubeconfig}", flush=True)
    print(f"kueuetop: try  kubectl --kubeconfig {served.kubeconfig} get clusterqueues", flush=True)
    serve_forever(served)
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    from kueuetop.admission.explain import explain
    from kueuetop.sim.clock import SimClock
    from kueuetop.sim.runner import VIRTUAL_EPOCH, build_cluster
    from kueuetop.views.explain_text import explain_lines

    if args.workload.count("/") != 1 or not all(args.workload.split("/")):
        print(f"kueuetop: bad workload {args.workload!r}: use NAMESPACE/NAME", file=sys.stderr)
        return EXIT_USAGE
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "version":
        print(f"kueuetop {__version__}")
        return EXIT_OK
    if args.command == "sim":
        handlers = {"run": cmd_sim_run, "serve": cmd_sim_serve}
        if args.sim_command == "list":
            from kueuetop.sim.scenario import list_builtins

            print("\n".join(list_builtins()))
            return EXIT_OK
        if args.sim_command in handlers:
            return handlers[args.sim_command](args)
        parser.parse_args(["sim", "--help"])
    if args.command == "explain":
        return cmd_explain(args)
    parser.print_help(sys.stderr)
    return EXIT_USAGE
