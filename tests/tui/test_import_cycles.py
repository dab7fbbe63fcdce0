"""No import cycle inside the console: views post messages up, the app imports the views.

The graph is read from the source with `ast` (every import statement, those under
`TYPE_CHECKING` and inside functions included: a cycle of type hints still ties the modules
together), so a cycle is named without importing anything.
"""

import ast
from pathlib import Path

import kueuetop

PACKAGE = "kueuetop.tui"


def module_files(package: str) -> dict[str, Path]:
    root = Path(kueuetop.__file__).parent.parent
    out = {}
    for path in sorted((root / package.replace(".", "/")).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The module of the package an imported name lives in (a module, or a name in one)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph(package: str) -> dict[str, set[str]]:
    """module → modules of `package` it imports (a package's `__init__` counts only when named)."""
    modules = module_files(package)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for mod, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package, up `level - 1` more
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join([*pkg, base] if base else pkg)
                names = [f"{base}.{a.name}" for a in node.names]
            else:
                continue
            for name in names:
                target = _resolve(name, modules)
                if target is not None and target != mod:
                    graph[mod].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path that ends where it starts, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_find_cycle_names_a_cycle_and_passes_a_tree() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_sees_every_kind_of_import() -> None:
    graph = import_graph(PACKAGE)
    assert "kueuetop.tui.views.workloads" in graph["kueuetop.tui.app"]  # from-import of a name
    assert "kueuetop.tui.keymap" in graph["kueuetop.tui.views.base"]  # `from pkg import module`
    assert "kueuetop.tui.app" in graph["kueuetop.tui.launch"]  # inside a function


def test_no_import_cycle_in_the_console() -> None:
    graph = import_graph(PACKAGE)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])
    # Views post messages up; none of them reaches for the app.
    assert not [m for m in graph if m.startswith("kueuetop.tui.views") and "kueuetop.tui.app" in graph[m]]
