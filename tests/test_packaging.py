"""The wheel ships every package, the built-in scenarios and the themes."""

import ast
import re
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


# Standard-library names by the Python version that added them: what the code imports from here
# proves the floor it needs. Versions above the floor are the ones it must not use; the floor's own
# are the evidence that it cannot be lowered.
NEW_IN: dict[tuple[int, int], set[str]] = {
    (3, 11): {"tomllib", "wsgiref.types", "typing.Self", "typing.LiteralString", "typing.Never",
              "typing.assert_never", "typing.reveal_type", "typing.NotRequired", "typing.Required",
              "typing.dataclass_transform", "typing.assert_type", "enum.StrEnum", "enum.verify",
              "enum.ReprEnum", "datetime.UTC", "asyncio.TaskGroup", "asyncio.timeout", "asyncio.Runner",
              "contextlib.chdir", "hashlib.file_digest", "operator.call", "builtins.ExceptionGroup"},
    (3, 12): {"typing.override", "typing.TypeAliasType", "itertools.batched", "collections.abc.Buffer",
              "calendar.Month", "calendar.Day", "os.path.splitroot", "math.sumprod", "sys.monitoring"},
    (3, 13): {"warnings.deprecated", "typing.ReadOnly", "typing.TypeIs", "typing.NoDefault", "copy.replace",
              "queue.ShutDown", "math.fma", "base64.z85encode"},
    (3, 14): {"annotationlib", "compression", "string.templatelib", "concurrent.interpreters"},
}


def _floor() -> tuple[int, int]:
    spec = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    m = re.fullmatch(r">=\s*3\.(\d+)", spec.strip())
    assert m, f"requires-python {spec!r}: expected a plain floor like '>=3.11'"
    return 3, int(m.group(1))


def _sources() -> list[Path]:
    return sorted(p for d in ("kueuetop", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py"))


def _stdlib_names(tree: ast.AST) -> set[str]:
    """Qualified names a module uses: its imports, and attributes read off imported modules."""
    local: dict[str, str] = {}
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                used.add(a.name)
                local[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            used.add(node.module)
            for a in node.names:
                used.add(f"{node.module}.{a.name}")
                local[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, inner = [node.attr], node.value
            while isinstance(inner, ast.Attribute):
                chain.append(inner.attr)
                inner = inner.value
            if isinstance(inner, ast.Name) and inner.id in local:
                parts = [local[inner.id], *reversed(chain)]
                used.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
        elif isinstance(node, ast.Name) and node.id in ("ExceptionGroup", "BaseExceptionGroup"):
            used.add("builtins.ExceptionGroup")
    return used


def test_python_version_floor():
    floor = _floor()
    assert sys.version_info[:2] >= floor
    ruff = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["target-version"]
    assert ruff == f"py3{floor[1]}", f"ruff's target-version {ruff} disagrees with requires-python {floor}"
    too_new, needs_floor = [], []
    for path in _sources():
        text = path.read_text(encoding="utf-8")
        # Syntax: every module parses with the floor's grammar (a `type X = …` or a PEP 701 f-string
        # fails here even on a newer interpreter).
        tree = ast.parse(text, str(path), feature_version=floor)
        try:
            ast.parse(text, str(path), feature_version=(3, floor[1] - 1))
        except SyntaxError:
            needs_floor.append(f"{path.relative_to(ROOT)}: syntax")
        used = _stdlib_names(tree)
        for version, names in NEW_IN.items():
            hits = sorted(used & names)
            if hits and version > floor:
                too_new.append(f"{path.relative_to(ROOT)}: {', '.join(hits)} (Python {version[0]}.{version[1]})")
            elif hits and version == floor:
                needs_floor.append(f"{path.relative_to(ROOT)}: {', '.join(hits)}")
    assert too_new == [], f"newer than requires-python >={floor[0]}.{floor[1]}: raise the floor or avoid these"
    assert needs_floor, f"nothing needs Python {floor[0]}.{floor[1]}: requires-python could be lowered"
