"""The wheel ships every package, the built-in scenarios and the themes."""

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_listed_for_the_wheel():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "kueuetop").rglob("__init__.py")}
    assert found - listed == set(), "add these packages to [tool.setuptools] packages"
    assert cfg["package-dir"]["kueuetop.themes"] == "themes"
    assert {"dark.toml", "light.toml", "high-contrast.toml", "mono.toml"} <= {p.name for p in (ROOT / "themes").iterdir()}


def test_python_version_floor():
    assert sys.version_info >= (3, 11)
