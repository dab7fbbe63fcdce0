"""The import contract: every import inside `kueuetop/` follows the layers table of README.md.

The README's layout table is the single source: a row per package and top-level module of
`kueuetop/` with the parts of kueuetop it "may import" and the third-party packages it "never
imports". This test parses that table, walks every module's imports with `ast` (function-level and
relative ones included) and names each import that breaks it.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "kueuetop"

# Crossings tolerated while a change removes them: (importing module, imported module, issue). An
# entry whose import is gone fails the test, so the list only shrinks. Empty: the tree keeps the table.
KNOWN_CROSSINGS: list[tuple[str, str, int]] = []

STDLIB_ONLY = "anything outside the standard library"


@dataclass(frozen=True)
class Row:
    path: str  # "kueuetop/sim/" for a package, "kueuetop/cli.py" for a module
    may: dict[str, bool]  # path of an importable part -> only lazily (inside a function)
    stdlib_only: bool
    never: frozenset[str]  # third-party top-level names


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    line: int
    target: str  # a resolved module name, kueuetop's or another's
    in_function: bool


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _part_path(root: Path, name: str) -> str:
    """`sim/apiserver` -> "kueuetop/sim/apiserver/", `cli` -> "kueuetop/cli.py"."""
    if (root / PKG / name / "__init__.py").is_file():
        return f"{PKG}/{name}/"
    if (root / PKG / f"{name}.py").is_file():
        return f"{PKG}/{name}.py"
    raise AssertionError(f"README layout table: `{name}` names no package or module of {PKG}/")


def parse_table(root: Path) -> dict[str, Row]:
    lines = (root / "README.md").read_text().splitlines()
    header = next((i for i, ln in enumerate(lines)
                   if ln.startswith("|") and _cells(ln)[:1] == ["path"] and "may import" in _cells(ln)), None)
    assert header is not None, "README.md has no layout table with a 'may import' column"
    cols = _cells(lines[header])
    may_col, never_col = cols.index("may import"), cols.index("never imports")
    rows: dict[str, Row] = {}
    for ln in lines[header + 2:]:
        if not ln.startswith("|"):
            break
        cells = _cells(ln)
        path = cells[0].strip("`")
        if not path.startswith(f"{PKG}/"):
            continue
        may = {_part_path(root, m.group(1)): bool(m.group(2))
               for m in re.finditer(r"`([\w/]+)`( lazily)?", cells[may_col])}
        never = cells[never_col]
        assert path not in rows, f"README layout table: two rows for {path}"
        rows[path] = Row(path, may, never.startswith(STDLIB_ONLY),
                         frozenset(re.findall(r"`(\w+)`", never)))
    return rows


def module_files(root: Path) -> dict[str, Path]:
    """Module name -> file, for every module of the package."""
    out = {}
    for f in sorted((root / PKG).rglob("*.py")):
        parts = f.relative_to(root).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def imports_of(module: str, file: Path, modules: dict[str, Path]) -> list[Import]:
    tree = ast.parse(file.read_text(), str(file))
    is_pkg = file.name == "__init__.py"
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend(Import(module, child.lineno, a.name, in_function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = module.split(".") if is_pkg else module.split(".")[:-1]
                    base = base[:len(base) - child.level + 1]
                    source = ".".join(base + ([child.module] if child.module else []))
                else:
                    source = child.module or ""
                for a in child.names:
                    # `from kueuetop.admission import cq_status` imports the module cq_status.
                    sub = f"{source}.{a.name}"
                    found.append(Import(module, child.lineno, sub if sub in modules else source, in_function))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


def _path_of(module: str, modules: dict[str, Path], root: Path) -> str:
    f = modules[module].relative_to(root).as_posix()
    if module == PKG:
        return f  # the package root's row is its __init__.py, not every module under it
    return f[: -len("__init__.py")] if f.endswith("/__init__.py") else f


def _row_for(path: str, rows: dict[str, Row]) -> Row | None:
    """The row of a module's path: its own, or its nearest enclosing package's."""
    matching = [r for p, r in rows.items() if _under(path, p)]
    return max(matching, key=lambda r: len(r.path), default=None)


def _under(path: str, part: str) -> bool:
    return path == part or (part.endswith("/") and path.startswith(part))


def _target_module(name: str, modules: dict[str, Path]) -> str | None:
    """The kueuetop module an import loads last (`a.b.c` where only `a.b` exists -> `a.b`)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


@functools.cache
def violations(root: Path) -> tuple[list[str], set[tuple[str, str]]]:
    """Each import that breaks the table, as a message, and the (importer, imported) pairs."""
    rows = parse_table(root)
    modules = module_files(root)
    messages: list[str] = []
    pairs: set[tuple[str, str]] = set()
    for module, file in modules.items():
        path = _path_of(module, modules, root)
        row = _row_for(path, rows)
        if row is None:
            messages.append(f"{path}: no row in the README layout table")
            continue
        for imp in imports_of(module, file, modules):
            where = f"{file.relative_to(root)}:{imp.line} imports {imp.target}"
            top = imp.target.split(".")[0]
            if top != PKG:
                if top in sys.stdlib_module_names:
                    continue
                if row.stdlib_only or top in row.never:
                    messages.append(f"{where}: {row.path} never imports it (README layout table)")
                continue
            target = _target_module(imp.target, modules)
            if target is None or target == PKG:
                continue  # the package root holds only the version
            tpath = _path_of(target, modules, root)
            if _under(tpath, row.path):  # itself and its own subpackages
                continue
            allowed = [lazy for part, lazy in row.may.items() if _under(tpath, part)]
            if allowed and (imp.in_function or not all(allowed)):
                continue
            pairs.add((module, target))
            if any(module == a and target == b for a, b, _ in KNOWN_CROSSINGS):
                continue
            rule = "only lazily" if allowed else "may import " + (
                ", ".join(p.removeprefix(f"{PKG}/").removesuffix("/").removesuffix(".py") for p in row.may) or
                "nothing of kueuetop")
            messages.append(f"{where}: {row.path} {rule} (README layout table)")
    return messages, pairs


def required_rows(root: Path) -> set[str]:
    """Every package and top-level module of kueuetop needs a row."""
    top = root / PKG
    return ({f"{PKG}/{d.name}/" for d in top.iterdir() if (d / "__init__.py").is_file()}
            | {f"{PKG}/{f.name}" for f in top.glob("*.py")})


def stale_rows(root: Path) -> set[str]:
    return {p for p in parse_table(root)
            if not ((root / p / "__init__.py").is_file() if p.endswith("/") else (root / p).is_file())}


def test_table_has_a_row_for_every_package_and_top_level_module():
    missing = required_rows(ROOT) - set(parse_table(ROOT))
    assert not missing, f"add rows to README's layout table for: {sorted(missing)}"


def test_table_rows_name_existing_packages_and_modules():
    assert not stale_rows(ROOT), f"README's layout table has rows for what is gone: {sorted(stale_rows(ROOT))}"


def test_imports_follow_the_layers_table():
    messages, _ = violations(ROOT)
    assert not messages, "imports that break the layers:\n" + "\n".join(messages)


def test_known_crossings_still_exist():
    _, pairs = violations(ROOT)
    gone = [(a, b, n) for a, b, n in KNOWN_CROSSINGS if (a, b) not in pairs]
    assert not gone, f"these crossings are gone (or allowed now): remove them from KNOWN_CROSSINGS: {gone}"


# The checker itself, on a small tree of its own: it must catch what it is for.

README = """# x

| path | what it holds | may import | never imports |
|---|---|---|---|
| `kueuetop/__init__.py` | v | — | anything outside the standard library |
| `kueuetop/low/` | base | — | anything outside the standard library |
| `kueuetop/mid/` | middle | `low` | `textual` |
| `kueuetop/top.py` | entry | `low`, `mid` lazily | `textual` |
| `themes/` | not a module | | |
"""


def _tree(tmp: Path, files: dict[str, str], readme: str = README) -> Path:
    (tmp / "README.md").write_text(readme)
    for name, text in {"kueuetop/__init__.py": "", "kueuetop/low/__init__.py": "",
                       "kueuetop/mid/__init__.py": "", "kueuetop/top.py": "", **files}.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    return tmp


def test_checker_names_each_import_against_the_layers(tmp_path):
    root = _tree(tmp_path, {
        "kueuetop/low/a.py": "import json\nfrom kueuetop import __version__\n",
        "kueuetop/low/b.py": "def f():\n    from ..mid import c\n",  # relative, in a function
        "kueuetop/low/d.py": "import yaml\n",  # third party in a stdlib-only layer
        "kueuetop/mid/__init__.py": "from . import c\n",
        "kueuetop/mid/c.py": "from kueuetop.low import a\nimport textual.app\n",
        "kueuetop/mid/sub/__init__.py": "from kueuetop import top\n",  # inherits mid's row
        "kueuetop/top.py": "from kueuetop.mid import c\n\ndef g():\n    from kueuetop.mid import c\n",
    })
    messages, _ = violations(root)
    assert sorted(m.split(" imports ")[0] for m in messages) == [
        "kueuetop/low/b.py:2", "kueuetop/low/d.py:1", "kueuetop/mid/c.py:2", "kueuetop/mid/sub/__init__.py:1",
        "kueuetop/top.py:1",
    ], messages
    assert any("kueuetop/low/b.py:2 imports kueuetop.mid.c: kueuetop/low/ may import nothing" in m for m in messages)
    assert any("kueuetop/top.py:1 imports kueuetop.mid.c: kueuetop/top.py only lazily" in m for m in messages)


def test_checker_finds_missing_and_stale_rows(tmp_path):
    root = _tree(tmp_path, {"kueuetop/extra.py": "", "kueuetop/newpkg/__init__.py": ""},
                 README.replace("| `themes/`", "| `kueuetop/gone/` | | | |\n| `themes/`"))
    assert required_rows(root) - set(parse_table(root)) == {"kueuetop/extra.py", "kueuetop/newpkg/"}
    assert stale_rows(root) == {"kueuetop/gone/"}
