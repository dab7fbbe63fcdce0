"""Keyboard actions: preview and RBAC check → confirmation → Executor in a thread → journal.

Nothing is sent without the confirmation modal; the preview is the engine's what-if on the
store's own objects (no extra API traffic); every action is journaled (intent before the first
request, outcome after, actions/journal.py) and refused if the journal cannot be written. Blocking
calls (SelfSubjectAccessReview, PATCH, waits) run in daemon threads, not Textual thread workers:
quitting sets the cancel event and leaves at once instead of waiting for a request to time out;
an action cut off that way keeps its intent without an outcome, and the next start reads its
target back and reports what landed. Results come back to the UI through `call_from_thread`.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

from kueuetop.actions.journal import Identity, Journal, JournalError
from kueuetop.actions.plan import DANGEROUS, Target
from kueuetop.store import events as K
from kueuetop.tui.screens import Confirmation, ConfirmScreen

if TYPE_CHECKING:
    from kueuetop.tui.app import KueuetopApp

# Store kind → the kind name what-if expects on each raw object (list items may omit it).
_PREVIEW_KINDS = {
    K.CLUSTER_QUEUES: ("kueue.x-k8s.io", "ClusterQueue"), K.LOCAL_QUEUES: ("kueue.x-k8s.io", "LocalQueue"),
    K.WORKLOADS: ("kueue.x-k8s.io", "Workload"), K.RESOURCE_FLAVORS: ("kueue.x-k8s.io", "ResourceFlavor"),
    K.COHORTS: ("kueue.x-k8s.io", "Cohort"), K.ADMISSION_CHECKS: ("kueue.x-k8s.io", "AdmissionCheck"),
    K.NAMESPACES: ("", "Namespace"), K.PRIORITY_CLASSES: ("scheduling.k8s.io", "PriorityClass"),
}
MAX_PREVIEWS = 5  # previews are per target; beyond a few the modal lists the rest without one



class ActionRunner:
    def __init__(self, app: KueuetopApp, api: Any, *, kueue_version: str = "v1beta2",
                 identity: Identity | None = None, wait_timeout: float = 300.0) -> None:
        self.app = app
        self.api = api
        self.kueue_version = kueue_version
        self.identity = identity or Identity()
        self.journal = Journal(self.identity)
        self.wait_timeout = wait_timeout
        self.cancel = threading.Event()  # set when the console quits: waits end, no new step is sent
        self.threads: list[threading.Thread] = []

    # ------------------------------------------------------------ helpers
    def store_objects(self) -> list[dict[str, Any]]:
        out = []
        for kind, (group, kname) in _PREVIEW_KINDS.items():
            api_version = f"{group}/{self.kueue_version}" if group == "kueue.x-k8s.io" else (
                f"{group}/v1" if group else "v1")
            for e in self.app.ctx.store.entries(kind).values():
                if isinstance(e.raw, dict):
                    # Shallow copy: the store's dict is shared and must not be modified.
                    out.append({**e.raw, "apiVersion": e.raw.get("apiVersion") or api_version,
                                "kind": e.raw.get("kind") or kname})
        return out

    def spawn(self, name: str, fn: Any, *args: Any) -> None:
        t = threading.Thread(target=fn, args=args, name=f"kueuetop-action:{name}", daemon=True)
        self.threads = [x for x in self.threads if x.is_alive()] + [t]
        t.start()

    def shutdown(self) -> None:
        """The console is quitting: stop waiting, send nothing more, never block the exit."""
        self.cancel.set()

    @property
    def busy(self) -> bool:
        return any(t.is_alive() for t in self.threads)

    def report_interrupted(self) -> None:  # thread
        """Actions an earlier run left without an outcome: read back, record, and tell the user."""
        from kueuetop.actions.executor import Executor

        intents = self.journal.interrupted()
        if not intents or self.api is None:
            return
        ex = Executor(self.api, version=self.kueue_version)
        lines = [self.journal.reconcile(i, ex.read_back) for i in intents]
        self._ui(self.app.notify, "\n".join(lines), title="interrupted action", severity="warning", timeout=20)

    def _ui(self, fn: Any, *args: Any, **kw: Any) -> None:
        """Run `fn` on the UI thread, from whichever thread we are on; nothing once it has quit."""
        if threading.get_ident() == self.app._thread_id:
            fn(*args, **kw)
            return
        if self.cancel.is_set():
            return
        with contextlib.suppress(RuntimeError):  # the app's loop is gone (it quit while we worked)
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
        self.app.set_last_action(f"{action}: preparing preview…", None)
        self.spawn(f"prepare {action}", self._prepare, action, targets)

    def _prepare(self, action: str, targets: list[Target]) -> None:  # worker thread
        from kueuetop.actions.preview import preview
        from kueuetop.actions.rbac import check_access

        lines: list[str] = [f"{action} on {len(targets)} target(s), context {self.identity.context or '-'}:"]
        refused: list[str] = []
        allowed: list[Target] = []
        objects = self.store_objects()
        now = self.app.ctx.now()
        for i, t in enumerate(targets):
            access = check_access(self.api, action, t)
            if not access.allowed:
                refused.append(access.reason)
                self.journal.refused(action, t, access.reason)
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
        self._ui(self.app.push_screen, screen, lambda conf: self._confirmed(action, allowed, lines, conf))

    def _confirmed(self, action: str, targets: list[Target], lines: list[str], conf: Confirmation | None) -> None:
        if conf is None or not conf.confirmed:
            for t in targets:
                self.journal.refused(action, t, "declined in the confirmation dialog", error="", result="cancelled")
            self.app.set_last_action(f"{action}: cancelled, nothing sent", None)
            return
        self.app.set_last_action(f"{action}: sending{' (dry run)' if conf.dry_run else ''}…", None)
        self.spawn(f"run {action}", self._execute, action, targets, lines, conf.dry_run)

    def _execute(self, action: str, targets: list[Target], lines: list[str], dry_run: bool) -> None:  # thread
        from kueuetop.actions.executor import Executor

        ex = Executor(self.api, version=self.kueue_version, wait_timeout=self.wait_timeout)
        ok, failed, notes = [], [], []
        for t in targets:
            if self.cancel.is_set():
                break
            try:
                action_id = self.journal.begin(action, t, dry_run=dry_run, preview=lines)
            except JournalError as exc:
                failed.append(f"{action} {t}: {exc}")
                break  # the journal is unwritable: nothing more is sent
            res = ex.run(action, t, dry_run=dry_run, cancel=self.cancel,
                         before_send=self.journal.before_send(action_id, action, t))
            problem = self.journal.finish(action_id, action, t, "ok" if res.ok else "error", res.message,
                                          dry_run=dry_run, preview=lines, error=res.error,
                                          steps=res.steps_done, landed=res.landed)
            if problem:
                notes.append(problem)
            if res.ok:
                ok.append(res.message)
            else:
                failed.append(f"[{res.landed}] {res.message}" if res.landed else res.message)
        dry = " (dry run)" if dry_run else ""
        if failed:
            msg = f"{action}{dry}: {len(failed)} failed: " + "; ".join(failed[:3])
            self._ui(self.app.notify, msg, title="action failed", severity="error", timeout=15)
        else:
            msg = f"{action}{dry}: " + (ok[0] if len(ok) == 1 else f"{len(ok)} targets ok")
            self._ui(self.app.notify, msg, title="action done")
        for n in notes:
            self._ui(self.app.notify, n, severity="warning")
        self._ui(self.app.set_last_action, msg, not failed)
