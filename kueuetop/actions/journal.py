"""The action journal: every action is written down before its first request and closed after.

Lines go to the audit log (actions/audit.py), tied by one id per action:

- `intent` (before anything is sent: action, target, the plan's steps, this process);
- `step` (just before each PATCH leaves, with the target's generation as read before it);
- `outcome` (the result and what `landed`, read back when the outcome was unknown);
- `reconciled` (a later run found the action without an outcome, read its target back and
  reported what the cluster was left with).

If the intent or a step cannot be written the action is refused or stops before that step: an
action nobody can account for later is worse than one not taken. The outcome line is best
effort (the action has happened; the caller shows the write problem instead).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kueuetop.actions.audit import AuditRecord, audit_path, read_audit, write_audit
from kueuetop.actions.landed import UNKNOWN, advice, what_landed
from kueuetop.actions.plan import Patch, Target, WaitFor, parse_target, plan


class JournalError(Exception):
    """The journal could not be written: the action must not go ahead."""


def plan_lines(action: str, target: Target) -> tuple[str, ...]:
    out = []
    for s in plan(action, target):
        if isinstance(s, Patch):
            out.append(f"patch {dict(s.body)}")
        elif isinstance(s, WaitFor):
            out.append(f"wait for {s.condition}")
    return tuple(out)


@dataclass(frozen=True)
class Identity:
    """Whose action on which cluster: names from the kubeconfig and the server, never credentials."""

    context: str = ""
    cluster: str = ""
    user: str = ""


class Journal:
    def __init__(self, identity: Identity, *, path: Path | None = None, secrets: Iterable[str] = ()) -> None:
        self.identity = identity
        self.path = path or audit_path()
        self.secrets = list(secrets)

    def _record(self, action: str, target: Target, result: str, **kw: Any) -> AuditRecord:
        return AuditRecord(action, str(target), result, cluster=self.identity.cluster,
                           context=self.identity.context, user=self.identity.user, **kw)

    def _write(self, rec: AuditRecord) -> str | None:
        return write_audit(rec, self.path, self.secrets)

    def begin(self, action: str, target: Target, *, dry_run: bool = False,
              preview: Sequence[str] = ()) -> str:
        """Write the intent; its id, or JournalError when it could not be written."""
        action_id = uuid.uuid4().hex[:16]
        rec = self._record(action, target, "started", id=action_id, phase="intent", dry_run=dry_run,
                           preview=tuple(preview), plan=plan_lines(action, target), pid=os.getpid(),
                           host=socket.gethostname())
        problem = self._write(rec)
        if problem:
            raise JournalError(f"{problem}; refusing to act without a record of it")
        return action_id

    def before_send(self, action_id: str, action: str, target: Target) -> Callable[[int, str, int | None], None]:
        """The executor's hook: a `step` line before each PATCH, raising when it can't be written."""
        def hook(step: int, what: str, generation: int | None) -> None:
            problem = self._write(self._record(action, target, "sending", id=action_id, phase="step",
                                               message=what, step=step, generation=generation))
            if problem:
                raise JournalError(problem)
        return hook

    def finish(self, action_id: str, action: str, target: Target, result: str, message: str, *,
               dry_run: bool = False, preview: Sequence[str] = (), error: str = "", steps: int = 0,
               landed: str = "") -> str | None:
        return self._write(self._record(action, target, result, id=action_id, phase="outcome", message=message,
                                        dry_run=dry_run, preview=tuple(preview), error=error, steps_done=steps,
                                        landed=landed))

    def refused(self, action: str, target: Target, message: str, *, error: str = "forbidden",
                result: str = "refused") -> str | None:
        """An action refused or declined before its intent: one plain audit line, nothing was sent."""
        return self._write(self._record(action, target, result, message=message, error=error))

    # ------------------------------------------------------------ interrupted actions
    def interrupted(self, records: list[Mapping[str, Any]] | None = None) -> list[Mapping[str, Any]]:
        """Intents of this cluster and context that never got an outcome, from processes that are gone."""
        records = read_audit(self.path) if records is None else records
        closed = {r.get("id") for r in records if r.get("phase") in ("outcome", "reconciled")}
        out = []
        for r in records:
            if r.get("phase") != "intent" or not r.get("id") or r["id"] in closed or r.get("dryRun"):
                continue
            if (r.get("cluster"), r.get("context")) != (self.identity.cluster, self.identity.context):
                continue
            if r.get("host") == socket.gethostname() and _alive(r.get("pid")):
                continue  # still running in another console
            out.append(r)
        return out

    def reconcile(self, intent: Mapping[str, Any], read: Callable[[Target], tuple[dict | None, bool]],
                  records: list[Mapping[str, Any]] | None = None) -> str:
        """Read an interrupted action's target back, record what landed; one line for the user."""
        records = read_audit(self.path) if records is None else records
        action, target = str(intent.get("action")), parse_target(str(intent.get("target")))
        steps = [r for r in records if r.get("id") == intent.get("id") and r.get("phase") == "step"]
        generation = next((r.get("generation") for r in steps if isinstance(r.get("generation"), int)), None)
        obj, readable = read(target)
        landed = what_landed(action, target, obj, sent=len(steps), generation_before=generation) \
            if readable else UNKNOWN
        when = str(intent.get("time") or "?")
        line = (f"an earlier {action} of {target} (started {when}) was interrupted: {landed}; "
                f"{advice(action, target, landed)}")
        if readable:
            self._write(self._record(action, target, "interrupted", id=str(intent["id"]), phase="reconciled",
                                     message=line, landed=landed, steps_done=len(steps)))
        return line


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
