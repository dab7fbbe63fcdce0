"""No module of `kueue/` or `admission/` keeps state at module level: every speed-up lives in a
cache its caller owns (EngineCache, ParseCache), so two schedulers in one process, or the engine
on two threads, can never answer from each other's memos. Lookup tables are read-only mappings."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from types import ModuleType

import kueuetop.admission
import kueuetop.kueue

MUTABLE = (dict, list, set, bytearray)


def _modules() -> list[ModuleType]:
    out = []
    for pkg in (kueuetop.kueue, kueuetop.admission):
        out += [importlib.import_module(f"{pkg.__name__}.{m.name}") for m in pkgutil.iter_modules(pkg.__path__)]
    return out


def module_state(mod: ModuleType) -> list[str]:
    """Module-level names of `mod` holding something that can change: containers, memoized
    functions (functools caches)."""
    found = []
    for name, value in vars(mod).items():
        if name.startswith("__"):
            continue  # __all__, __path__ …: the module system's
        if isinstance(value, MUTABLE):
            found.append(f"{mod.__name__}.{name} ({type(value).__name__})")
        elif isinstance(value, functools._lru_cache_wrapper) and getattr(value, "__module__", "") == mod.__name__:
            found.append(f"{mod.__name__}.{name} (a memoized function)")
    return found


def test_no_module_of_kueue_or_admission_keeps_state() -> None:
    mods = _modules()
    assert len(mods) > 30  # the packages were walked
    found = [s for mod in mods for s in module_state(mod)]
    assert not found, "module-level state (move it into the caller's EngineCache or ParseCache):\n" + "\n".join(found)


def test_the_check_sees_a_memo_and_a_table() -> None:
    mod = ModuleType("kueuetop.kueue.scratch")
    exec("import functools\n_MEMO = {}\n@functools.lru_cache\ndef f(x):\n    return x\n", mod.__dict__)
    assert module_state(mod) == ["kueuetop.kueue.scratch._MEMO (dict)", "kueuetop.kueue.scratch.f (a memoized function)"]
