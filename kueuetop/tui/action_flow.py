"""Keyboard actions: preview and RBAC check → confirmation → Executor in a thread → journal.

Nothing is sent without the confirmation modal; the preview is the engine's what-if on the
objects listed from the API server when the action is asked for (the store keeps parsed objects
only, and what-if works on wire dicts); every action is journaled (intent before the first
PATCH, outcome after, with what landed) and refused when the audit log can't be written. Blocking
calls (SelfSubjectAccessReview, PATCH, waits) run in thread workers on a client of their own
(`CancellableClient`); results come back to the UI through `call_from_thread`.

Quitting cancels: `shutdown()` sets the cancel event the executor checks between steps and cuts
the in-flight requests, so the worker ends at once; it reads the target back within
`quit_readback` seconds and journals the action as interrupted with what landed (or `unknown`,
left for the next start, which reports unfinished actions: `check_unfinished`).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from kueuetop.actions.audit import AuditRecord
from kueuetop.actions.cancellable import CancellableClient
from kueuetop.actions.journal import Journal, JournalError
from kueuetop.kueue.actions import DANGEROUS, Target, plan
from kueuetop.tui.context import ViewContext
from kueuetop.tui.screens import Confirmation, ConfirmScreen

MAX_PREVIEWS = 5  # previews are per target; beyond a few the modal lists the rest without one


class ActionHost(Protocol):
    """What the runner needs of the app (the app is one; this module does not import it)."""

    read_only: bool
    ctx: ViewContext
    _thread_id: int

    def notify(self, message: str, *, title: str = ..., severity: Any = ..., timeout: float | None = ...) -> None: ...

    def set_last_action(self, text: str, ok: bool | None) -> None: ...

    def call_from_thread(self, callback: Any, *args: Any, **kwargs: Any) -> Any: ...

    def run_worker(self, work: Any, *args: Any, **kwargs: Any) -> Any: ...

    def push_screen(self, screen: Any, callback: Any = ..., *args: Any, **kwargs: Any) -> Any: ...


@dataclass(frozen=True)
class Identity:
    context: str = ""
    cluster: str = ""
    user: str = ""


class ActionRunner:
    def __init__(self, app: ActionHost, api: Any, *, kueue_version: str = "v1beta2",
                 identity: Identity = Identity(), wait_timeout: float = 300.0, request_timeout: float = 10.0,
                 quit_readback: float = 0.5) -> None:
        self.app = app
        self.api = api
        self.kueue_version = kueue_version
        self.identity = identity
        self.wait_timeout = wait_timeout
        self.request_timeout = request_timeout
        self.quit_readback = quit_readback  # seconds a quitting worker may spend reading back
        self._cancel = threading.Event()  # set once, on quit
        self._lock = threading.Lock()
        self._clients: set[CancellableClient] = set()
        self._busy = 0
        self.idle = threading.Event()  # no action thread is running (tests and shutdown wait on it)
        self.idle.set()

    # ------------------------------------------------------------ lifecycle
    @property
    def quitting(self) -> bool:
        return self._cancel.is_set()

    def shutdown(self) -> None:
        """Quit: stop every action between steps and cut its in-flight requests. Never blocks."""
        self._cancel.set()
        with self._lock:
            clients = list(self._clients)
        for c in clients:
            c.cancel()

    @contextlib.contextmanager
    def session(self) -> Iterator[CancellableClient]:
        """A cancellable client for one worker, counted as busy until it is done."""
        with self._lock:
            self._busy += 1
            self.idle.clear()
            cc = CancellableClient(self.api.configuration)
            self._clients.add(cc)
        if self._cancel.is_set():
            cc.cancel()
        try:
            yield cc
        finally:
            cc.close()
            with self._lock:
                self._clients.discard(cc)
                self._busy -= 1
                if not self._busy:
                    self.idle.set()

    def journal(self) -> Journal:
        host = getattr(getattr(self.api, "configuration", None), "host", "") or ""
        return Journal(self.identity.cluster, self.identity.context, self.identity.user, host)

    # ------------------------------------------------------------ helpers
    def audit(self, action: str, target: Target, result: str, message: str, *, dry_run: bool = False,
              preview: Sequence[str] = (), error: str = "", steps: int = 0) -> None:
        """A one-entry record: a refusal or a cancel before anything was sent."""
        problem = self.journal().record(AuditRecord(action, str(target), result, message, dry_run,
                                                    preview=tuple(preview), error=error, steps_done=steps))
        if problem:
            self._ui(self.app.notify, problem, severity="warning")

    def _ui(self, fn: Any, *args: Any, **kw: Any) -> None:
        """Run `fn` on the UI thread, from whichever thread we are on; nothing once quitting."""
        if self._cancel.is_set():
            return  # the app is going away: its screens may be gone, and it must not wait for us
        if threading.get_ident() == self.app._thread_id:
            fn(*args, **kw)
            return
        with contextlib.suppress(RuntimeError):  # the app stopped meanwhile
            self.app.call_from_thread(fn, *args, **kw)

    # ------------------------------------------------------------ flow
    def start(self, action: str, targets: list[Target]) -> None:
        if self.app.read_only:  # bindings are hidden too; this guards command paths
            self.app.notify("read-only mode: actions are disabled", severity="warning")
            return
        if self.api is None:
            self.app.notify("no cluster connection: actions are unavailable", severity="error")
            return
        if not targets:
            self.app.notify("nothing selected", severity="warning")
            return
        problem = self.journal().probe()
        if problem:
            # Every action is journaled before it is sent: no journal, no action.
            self.app.notify(f"{action} refused, nothing sent: {problem}", title="action refused",
                            severity="error", timeout=15)
            self.app.set_last_action(f"{action}: refused (audit log not writable)", False)
            return
        self.app.set_last_action(f"{action}: preparing preview…", None)
        self.app.run_worker(partial(self._prepare, action, targets), thread=True, group="action",
                            name=f"prepare {action}", exit_on_error=False)

    def _prepare(self, action: str, targets: list[Target]) -> None:  # worker thread
        from kueuetop.actions.preview import fetch_objects, preview
        from kueuetop.actions.rbac import check_access

        lines: list[str] = [f"{action} on {len(targets)} target(s), context {self.identity.context or '-'}:"]
        refused: list[str] = []
        allowed: list[Target] = []
        now = self.app.ctx.now()
        with self.session() as cc:
            checks = []
            for t in targets:
                if self._cancel.is_set():
                    return
                checks.append(check_access(cc.api, action, t, timeout=self.request_timeout))
            objects: list[dict[str, Any]] = []
            if any(c.allowed for c in checks) and not self._cancel.is_set():
                # Listed once for every target's preview; a list of 20,000 Workloads takes seconds.
                objects, _, failed = fetch_objects(cc.api, self.kueue_version,
                                                   timeout=max(30.0, self.request_timeout))
                if failed:
                    lines.append(f"  (preview without {', '.join(failed)}: could not list them)")
        for i, (t, access) in enumerate(zip(targets, checks, strict=True)):
            if not access.allowed:
                refused.append(access.reason)
                self.audit(action, t, "refused", access.reason, error="forbidden")
                continue
            allowed.append(t)
            lines.append(f"• {t}")
            if i < MAX_PREVIEWS:
                pv = preview(action, t, objects, now=now, version=self.kueue_version)
                lines += [f"    {line}" for line in pv.lines]
        if refused:
            self._ui(self.app.notify, "\n".join(refused), title="forbidden", severity="error")
        if not allowed:
            self._ui(self.app.set_last_action, f"{action}: forbidden", False)
            return
        title = f"{action} {allowed[0]}" + (f" and {len(allowed) - 1} more" if len(allowed) > 1 else "") + "?"
        screen = ConfirmScreen(title, lines, evicts=action in DANGEROUS)
        self._ui(self.app.push_screen, screen, partial(self._confirmed, action, allowed, lines))

    def _confirmed(self, action: str, targets: list[Target], lines: list[str], conf: Confirmation | None) -> None:
        if conf is None or not conf.confirmed:
            for t in targets:
                self.audit(action, t, "cancelled", "declined in the confirmation dialog", preview=lines)
            self.app.set_last_action(f"{action}: cancelled, nothing sent", None)
            return
        self.app.set_last_action(f"{action}: sending{' (dry run)' if conf.dry_run else ''}…", None)
        self.app.run_worker(partial(self._execute, action, targets, lines, conf.dry_run), thread=True,
                            group="action", name=f"run {action}", exit_on_error=False)

    def _execute(self, action: str, targets: list[Target], lines: list[str], dry_run: bool) -> None:  # thread
        from kueuetop.actions.executor import CANCELLED, Executor

        journal = self.journal()
        ok, failed, refused = [], [], ""
        with self.session() as cc:
            ex = Executor(cc.api, version=self.kueue_version, wait_timeout=self.wait_timeout,
                          request_timeout=self.request_timeout)
            for t in targets:
                if self._cancel.is_set():
                    break
                try:
                    action_id = journal.intent(action, t, plan(action, t), dry_run=dry_run, preview=lines)
                except JournalError as exc:
                    refused = f"{action} refused, nothing sent to {t}: {exc}"
                    break

                def on_send(step: int, before: Any, action_id: str = action_id, t: Target = t) -> None:
                    journal.step(action_id, action, t, step, before)

                res = ex.run(action, t, dry_run=dry_run, cancel=self._cancel, on_send=on_send)
                if res.error == CANCELLED and self._cancel.is_set():
                    self._interrupted(journal, action_id, action, t, ex, dry_run, lines)
                    return
                journal.outcome(action_id, action, t, "ok" if res.ok else "error", res.message, dry_run=dry_run,
                                preview=lines, error=res.error, steps_done=res.steps_done, landed=res.landed,
                                next_text=res.next)
                (ok if res.ok else failed).append(res)
        dry = " (dry run)" if dry_run else ""
        if refused:
            self._ui(self.app.notify, refused, title="action refused", severity="error", timeout=15)
        if failed:
            msg = f"{action}{dry}: {len(failed)} failed: " + "; ".join(r.message for r in failed[:3])
            self._ui(self.app.notify, msg, title="action failed", severity="error", timeout=20)
        elif ok:
            msg = f"{action}{dry}: " + (ok[0].message if len(ok) == 1 else f"{len(ok)} targets ok")
            self._ui(self.app.notify, msg, title="action done")
        else:
            msg = refused or f"{action}: nothing sent"
        self._ui(self.app.set_last_action, msg, not failed and not refused)

    def _interrupted(self, journal: Journal, action_id: str, action: str, t: Target, ex: Any, dry_run: bool,
                     lines: list[str]) -> None:
        """Quitting mid-action: journal what landed, read back within `quit_readback` seconds if possible."""
        from kueuetop.actions.executor import Executor
        from kueuetop.actions.reconcile import NOT_APPLIED, UNKNOWN, next_step, what_landed

        landed, obj_ok = UNKNOWN, False
        before = ex.may_have_written
        if dry_run or before is None:
            landed = NOT_APPLIED
        else:
            rb = CancellableClient(self.api.configuration, retries=False)  # one try: the quit budget is short
            try:
                reader = Executor(rb.api, version=ex.version, fallback_version=None, poll_interval=0.05,
                                  request_timeout=self.quit_readback, settle_seconds=0.0)
                obj_ok, obj = reader.read_back(t, self.quit_readback)
                if obj_ok:
                    landed = what_landed(action, before, obj)
            finally:
                rb.close()
        hint = next_step(action, t, landed)
        journal.outcome(action_id, action, t, "interrupted", f"{action} {t}: interrupted by quitting: {landed}",
                        dry_run=dry_run, preview=lines, error="cancelled", landed=landed, next_text=hint)

    def check_unfinished(self) -> None:  # worker thread, at start
        """Report actions an earlier kueuetop left unfinished (killed mid-action), once each."""
        from kueuetop.actions.executor import Executor
        from kueuetop.actions.journal import check_unfinished

        if self.api is None:
            return
        with self.session() as cc:
            ex = Executor(cc.api, version=self.kueue_version, request_timeout=self.request_timeout)
            messages = check_unfinished(self.journal(), ex.get)
        for m in messages:
            self._ui(self.app.notify, m, title="unfinished action", severity="warning", timeout=60)
