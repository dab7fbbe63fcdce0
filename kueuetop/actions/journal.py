"""The action journal on top of the audit log: write-ahead entries, and unfinished actions found later.

An action writes `intent` before its first request (refused if that write fails: an action that
can't be journaled is not sent), `step` before each PATCH (with the state the PATCH is built on),
`outcome` after. A process killed mid-action leaves an intent with no outcome (or an outcome whose
landing is `unknown`); the next action command or console start finds it in the log's tail, reads
the target back, says what is left and how to finish it, and writes `reconciled` so it is said once.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kueuetop.actions.audit import AuditRecord, audit_path, probe_audit, write_audit
from kueuetop.actions.reconcile import UNKNOWN, describe_state, next_step, what_landed
from kueuetop.kueue.actions import Patch, Step, Target, WaitFor, parse_target

TAIL_BYTES = 1 << 20  # unfinished actions are looked for in the last MiB of the log


class JournalError(Exception):
    """The journal can't be written: the action must not be sent."""


def server_key(host: str) -> str:
    """scheme://host:port of an API server URL, without credentials or path."""
    u = urlsplit(host or "")
    netloc = (u.hostname or "") + (f":{u.port}" if u.port else "")
    return f"{u.scheme}://{netloc}" if u.scheme else netloc


def _proc_start(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]  # field 22: start time in clock ticks
    except (OSError, IndexError):
        return ""


def proc_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_proc_start(os.getpid())}"


def _running(proc: str) -> bool:
    """Is the process that wrote this intent still running (so its action is in progress, not lost)?"""
    host, _, rest = proc.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return not start or _proc_start(pid) == start  # a reused pid is another process


def plan_lines(steps: Iterable[Step]) -> tuple[str, ...]:
    out = []
    for s in steps:
        if isinstance(s, Patch):
            out.append("patch " + json.dumps(dict(s.body), sort_keys=True))
        elif isinstance(s, WaitFor):
            out.append(f"wait for {s.condition}")
    return tuple(out)


@dataclass
class Journal:
    """Writes one action's entries with the identity of the connection it runs on."""

    cluster: str = ""
    context: str = ""
    user: str = ""
    server: str = ""
    path: Path | None = None
    secrets: list[str] = field(default_factory=list)

    def _write(self, rec: AuditRecord) -> str | None:
        rec = replace(rec, cluster=self.cluster, context=self.context, user=rec.user or self.user,
                      server=server_key(self.server))
        return write_audit(rec, self.path, secrets=self.secrets)

    def probe(self) -> str | None:
        return probe_audit(self.path)

    def record(self, rec: AuditRecord) -> str | None:
        """A one-entry record (refusal, cancel): returns the problem writing it, if any."""
        return self._write(replace(rec, id=rec.id or uuid.uuid4().hex))

    def intent(self, action: str, target: Target, steps: Iterable[Step], *, dry_run: bool = False,
               preview: Iterable[str] = ()) -> str:
        """Write the intent; returns the action id. Raises JournalError when it can't be written."""
        action_id = uuid.uuid4().hex
        problem = self._write(AuditRecord(action, str(target), "started", "", dry_run, preview=tuple(preview),
                                          id=action_id, entry="intent", plan=plan_lines(steps), proc=proc_id()))
        if problem:
            raise JournalError(problem)
        return action_id

    def step(self, action_id: str, action: str, target: Target, index: int, before: Mapping[str, Any]) -> str | None:
        return self._write(AuditRecord(action, str(target), "sending", "", id=action_id, entry="step", step=index,
                                       before=before))

    def outcome(self, action_id: str, action: str, target: Target, result: str, message: str, *,
                dry_run: bool = False, preview: Iterable[str] = (), error: str = "", steps_done: int = 0,
                landed: str = "", next_text: str = "") -> str | None:
        return self._write(AuditRecord(action, str(target), result, message, dry_run, preview=tuple(preview),
                                       error=error, steps_done=steps_done, id=action_id, entry="outcome",
                                       landed=landed, next=next_text))


@dataclass(frozen=True)
class Unfinished:
    id: str
    action: str
    target: str
    time: str
    context: str
    server: str
    before: Mapping[str, Any] | None  # the state the first PATCH was built on; None: no PATCH was sent


def _tail(path: Path) -> list[dict[str, Any]]:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    lines = data.split(b"\n")
    if size > TAIL_BYTES:
        lines = lines[1:]  # the first line is cut
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            continue  # a torn line after a crash
        if isinstance(rec, dict):
            out.append(rec)
    return out


def unfinished(path: Path | None = None) -> list[Unfinished]:
    """Actions with an intent and no known outcome, whose process is gone, not yet reconciled."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for rec in _tail(path or audit_path()):
        if rec.get("id"):
            by_id.setdefault(str(rec["id"]), []).append(rec)
    out = []
    for action_id, recs in by_id.items():
        intent = next((r for r in recs if r.get("entry") == "intent"), None)
        if intent is None or intent.get("dryRun"):
            continue  # a dry run changes nothing
        if any(r.get("entry") == "reconciled" for r in recs):
            continue
        outcomes = [r for r in recs if r.get("entry") == "outcome"]
        if outcomes and outcomes[-1].get("landed") != UNKNOWN:
            continue
        if not outcomes and _running(str(intent.get("proc") or "")):
            continue  # still in progress in another kueuetop
        first_step = next((r for r in recs if r.get("entry") == "step"), None)
        out.append(Unfinished(action_id, str(intent.get("action") or ""), str(intent.get("target") or ""),
                              str(intent.get("time") or ""), str(intent.get("context") or ""),
                              str(intent.get("server") or ""),
                              (first_step or {}).get("before") if first_step else None))
    return out


def check_unfinished(journal: Journal, read: Callable[[Target], Mapping[str, Any] | None]) -> list[str]:
    """Report each unfinished action of this journal's API server, after reading its target back.

    `read` returns the target (None if it no longer exists) or raises when it can't be read; then
    the action stays unfinished, to be checked next time. Returns one message per action found;
    only one process at a time checks (the others skip rather than report twice).
    """
    path = journal.path or audit_path()
    if not path.exists():
        return []
    messages: list[str] = []
    try:
        lock = open(path, "ab")  # noqa: SIM115 - held for the whole check
    except OSError:
        return []
    with lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return []  # another kueuetop is checking right now
        for u in unfinished(path):
            what = f"{u.action} {u.target} (started {u.time}, action {u.id[:8]})"
            if u.server and u.server != server_key(journal.server):
                messages.append(f"unfinished action {what} on another API server ({u.server}, context "
                                f"{u.context or '-'}): not checked; run a kueuetop action command against it")
                continue
            try:
                target = parse_target(u.target)
            except ValueError:
                continue
            try:
                obj = read(target)
            except Exception as exc:  # any failure to read leaves it for next time
                messages.append(f"unfinished action {what}: could not read {target} back "
                                f"({type(exc).__name__}); will check again next time")
                continue
            landed = what_landed(u.action, u.before, obj)
            hint = next_step(u.action, target, landed)
            text = (f"interrupted action {what}: {landed} (read back now: {describe_state(target, obj)})"
                    + (f"; {hint}" if hint else ""))
            messages.append(text)
            with contextlib.suppress(Exception):
                journal._write(AuditRecord(u.action, u.target, "reconciled", text, id=u.id, entry="reconciled",
                                           landed=landed, next=hint))
    return messages
