"""A JSON file in kueuetop's state directory holding something per cluster, kept across runs.

The run history (`run_history.py`) and the node pools seen (`known_pools.py`) are each one such
file: `{"version": N, "clusters": {scope: data}}`, one entry per cluster scope (`cluster_scope`),
so two clusters never mix and a console on one never drops another's entry.

- Written atomically (a temporary file, fsync, rename), mode 0600, under an advisory lock
  (`<name>.lock`) so two consoles on two clusters do not drop each other's entries.
- Read without ever raising on content: a missing file is empty; a file that is not UTF-8, not
  JSON, not of this shape or of another version is kept as `<name>.bad` with a one-line warning,
  and reading starts empty; never a crash, never a silent loss.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

try:  # advisory locking is POSIX; elsewhere the write is still atomic, only not serialized
    import fcntl
except ImportError:  # pragma: no cover - not on the platforms kueuetop runs on
    fcntl = None  # type: ignore[assignment]


T = TypeVar("T")


class Unreadable(OSError):
    """The file is there but cannot be read; str() is the one-line warning."""


def bad_path(path: Path) -> Path:
    return path.with_name(path.name + ".bad")


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold the file's advisory lock (creating its directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fcntl is None:
        yield
        return
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_clusters(path: Path, what: str, version: int) -> tuple[dict[str, Any], str]:
    """The file's clusters mapping, and a one-line warning when the file had to be set aside.
    `what` names the file's kind in warnings ("run history"). Call it holding `locked(path)`.
    Raises Unreadable when the file is there but cannot be read (nothing is set aside then)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}, ""
    except UnicodeDecodeError:
        return set_aside(path, what, "is not UTF-8 text")
    except OSError as exc:  # permissions, a directory in the way: nothing to set aside
        raise Unreadable(f"{what} {path} cannot be read ({exc.strerror or exc}): starting empty") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        return set_aside(path, what, f"is not valid JSON ({exc.msg} at line {exc.lineno})")
    if not isinstance(data, dict) or not isinstance(data.get("clusters"), dict):
        return set_aside(path, what, f"is not a {what} (no clusters mapping)")
    if data.get("version") != version:
        return set_aside(path, what, f"has version {data.get('version')!r}, this kueuetop reads {version}")
    return data["clusters"], ""


def read_cluster(path: Path, what: str, version: int, scope: str) -> tuple[Any, str]:
    """`scope`'s entry (None when it has none) and a one-line warning; never raises: a file that
    cannot be opened or read is no entry, said in the warning."""
    try:
        with locked(path):
            clusters, warning = read_clusters(path, what, version)
    except Unreadable as exc:
        return None, str(exc)
    except OSError as exc:
        return None, f"{what} {path} cannot be opened ({exc.strerror or exc}): starting empty"
    return clusters.get(scope), warning


def read_entries(path: Path, what: str, version: int, scope: str, parse: Callable[[Any], T | None],
                 noun: str) -> tuple[list[T], str]:
    """`scope`'s entry as a list of items, each through `parse` (None: malformed, skipped and
    counted in the warning, as "skipped 2 malformed run(s) of <scope>"); never raises."""
    raw, warning = read_cluster(path, what, version, scope)
    if raw is None:
        return [], warning
    if not isinstance(raw, list):
        return [], f"{what} {path}: the {noun}s of {scope} are not a list: starting empty"
    items = [parse(d) for d in raw]
    out = [i for i in items if i is not None]
    if len(out) < len(items) and not warning:
        warning = f"{what} {path}: skipped {len(items) - len(out)} malformed {noun}(s) of {scope}"
    return out, warning


def set_aside(path: Path, what: str, why: str) -> tuple[dict[str, Any], str]:
    bad = bad_path(path)
    try:
        os.replace(path, bad)
    except OSError as exc:
        return {}, f"{what} {path} {why} and could not be moved aside ({exc.strerror}): starting empty"
    return {}, f"{what} {path} {why}: kept as {bad.name}, starting empty"


def write_cluster(path: Path, what: str, version: int, scope: str, data: Any) -> str:
    """Set `scope`'s entry to `data`, keeping the other clusters' entries; atomic. A one-line
    warning ("" when none): a file found corrupt is kept as `.bad` first. Raises OSError
    (Unreadable included) when the file cannot be read or written; the old file is left as it was."""
    with locked(path):
        clusters, warning = read_clusters(path, what, version)
        clusters = dict(clusters)
        clusters[scope] = data
        write_atomic(path, {"version": version, "clusters": clusters})
    return warning


def write_atomic(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # 0600: which namespaces, queues and pools a user watches is theirs to share
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w", encoding="utf-8") as f:
            json.dump(data, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
