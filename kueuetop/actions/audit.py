"""The append-only audit log and action journal (ARCHITECTURE §6).

Each action is journaled under one id: an `intent` entry (target, plan) before its first request,
a `step` entry before each PATCH (the object it is built on), an `outcome` entry after (what
landed), and, for an action found unfinished on a later start, a `reconciled` entry. A refusal
or a cancel before anything is sent is one `outcome` entry. See `kueuetop.actions.journal`.

`$XDG_STATE_HOME/kueuetop/audit.jsonl` (see `kueuetop.xdg`), created 0600 in a 0700 directory.
A record is built from an allow-list of fields, so a token, header or kubeconfig secret can't
reach the file by accident. Writing never raises: the action has already happened (or been
refused), and losing an audit line must not hide that outcome; the caller gets the error text to
show instead.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kueuetop import xdg
from kueuetop.redact import redact

AUDIT_FILE = "audit.jsonl"


def audit_path() -> Path:
    return xdg.state_dir() / AUDIT_FILE


@dataclass(frozen=True)
class AuditRecord:
    action: str
    target: str
    result: str  # started | sending | ok | error | refused | cancelled | interrupted | reconciled
    message: str = ""
    dry_run: bool = False
    cluster: str = ""
    context: str = ""
    user: str = ""
    preview: tuple[str, ...] = ()
    error: str = ""  # the executor's error kind
    steps_done: int = 0
    time: float = field(default_factory=time.time)
    id: str = ""  # the action's id, shared by its intent, step, outcome and reconciled entries
    entry: str = "outcome"  # intent | step | outcome | reconciled
    server: str = ""  # the API server, scheme://host:port (no credentials)
    plan: tuple[str, ...] = ()
    landed: str = ""  # applied | not applied | partly applied: held | unknown
    next: str = ""  # how to finish or undo what is left
    step: int = -1  # step entries: the index of the PATCH about to be sent
    before: Mapping[str, Any] | None = None  # step entries: the state the PATCH is built on
    proc: str = ""  # intent entries: host:pid:start of the process running the action

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.time)),
            "id": self.id, "entry": self.entry,
            "cluster": self.cluster, "context": self.context, "server": self.server, "user": self.user,
            "action": self.action, "target": self.target, "dryRun": self.dry_run,
            "preview": list(self.preview), "result": self.result, "error": self.error,
            "stepsDone": self.steps_done, "message": self.message,
        }
        if self.plan:
            out["plan"] = list(self.plan)
        if self.landed:
            out["landed"] = self.landed
        if self.next:
            out["next"] = self.next
        if self.step >= 0:
            out["step"] = self.step
        if self.before is not None:
            out["before"] = dict(self.before)
        if self.proc:
            out["proc"] = self.proc
        return out


def _scrub(text: str, secrets: Iterable[str]) -> str:
    # Belt and braces: server messages never carry credentials, but if one ever echoes a secret
    # the caller knows about, it is masked before it reaches disk.
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return redact(text)


def write_audit(record: AuditRecord, path: Path | None = None, secrets: Iterable[str] = ()) -> str | None:
    """Append one line; returns None on success, else a one-line reason (never raises)."""
    path = path or audit_path()
    try:
        line = json.dumps(record.to_json(), sort_keys=False, ensure_ascii=False)
        line = _scrub(line, list(secrets))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
        finally:
            os.close(fd)
    except (OSError, TypeError, ValueError) as exc:
        return f"audit log {path} not written: {getattr(exc, 'strerror', None) or exc}"
    return None


def probe_audit(path: Path | None = None) -> str | None:
    """Can the log be appended to? None if so, else a one-line reason. Creates it (0600) if missing."""
    path = path or audit_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        os.close(fd)
    except OSError as exc:
        return f"audit log {path} not writable: {exc.strerror or exc}"
    return None


def read_audit(path: Path | None = None) -> list[Mapping[str, Any]]:
    """All records, skipping lines that don't parse (a torn last line after a crash)."""
    out = []
    try:
        text = (path or audit_path()).read_text(encoding="utf-8")
    except OSError:
        return []
    for line in text.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    return out
