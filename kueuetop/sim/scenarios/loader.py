"""Scenarios by name or path: the built-in files shipped here, the generated ones
(`scenarios.generators`), or a scenario file."""

from __future__ import annotations

from pathlib import Path

from kueuetop.sim.scenarios.generators import GENERATORS
from kueuetop.sim.scenarios.scenario import Scenario, ScenarioError, parse_scenario

# Shipped as package data (pyproject: "kueuetop.sim.scenarios" = ["*.yaml"]).
SCENARIO_DIR = Path(__file__).parent


def _file_builtins() -> dict[str, Path]:
    return {path.stem: path for path in sorted(SCENARIO_DIR.glob("*.yaml"))}


def list_builtins() -> list[str]:
    """Names `load_scenario` accepts besides file paths."""
    return sorted(set(_file_builtins()) | set(GENERATORS))


def load_scenario(name_or_path: str) -> Scenario:
    """A built-in scenario by name (`refarch`, `large`, …) or a scenario file by path."""
    if name_or_path in GENERATORS:
        return GENERATORS[name_or_path]()
    files = _file_builtins()
    if name_or_path in files:
        path = files[name_or_path]
        return parse_scenario(path.read_text(encoding="utf-8"), path.name, name=name_or_path)
    path = Path(name_or_path)
    if not path.is_file():
        raise ScenarioError(name_or_path, "no such scenario file or built-in scenario "
                            f"(built-ins: {', '.join(list_builtins())})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(name_or_path, f"cannot read: {exc}") from None
    return parse_scenario(text, name_or_path)
