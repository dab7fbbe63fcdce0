"""kueuetop command line.

Headless commands (sim, snapshot, explain, actions) never import Textual: a test enforces it,
so they stay fast and usable on hosts where the console can't run.
"""

from __future__ import annotations

import argparse
import sys

from kueuetop import __version__


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kueuetop", description="A terminal console for Kueue GPU clusters.")
    p.add_argument("--version", action="version", version=f"kueuetop {__version__}")
    sub = p.add_subparsers(dest="command")
    sub.add_parser("version", help="print the version")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "version":
        print(f"kueuetop {__version__}")
        return 0
    build_parser().print_help(sys.stderr)
    return 2
