"""Keyboard actions: preview and RBAC check → confirmation → Executor in a thread → audit.

Nothing is sent without the confirmation modal; the preview is the engine's what-if on the
store's own objects (no extra API traffic); every outcome, including cancel and refusal, is
one audit line. Blocking calls (SelfSubjectAccessReview, PATCH, waits) run in thread workers;
results come back to the UI through `call_from_thread`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from kueuetop.actions.audit import AuditRecord, write_audit
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


@dataclass(frozen=True)
class Identity:
    context: str = ""
    cluster: str = ""
    user: str = ""


class ActionRunner:
    def __init__(self, app: KueuetopApp, api: Any, *, kueue_version: str = "v1beta2",
                 identity: Identity = Identity(), wait_timeout: float = 300.0) -> None:
        self.app = app
        self.api = api
        self.kueue_version = kueue_version
        self.identity = identity
        self.wait_timeout = wait_timeout

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

    def audit(self, action: str, target: Target, result: str, message: str, *, dry_run: bool = False,
              preview: Sequence[str] = (), error: str = "", steps: int = 0) -> None:
        rec = AuditRecord(action, str(target), result, message, dry_run, self.identity.cluster,
                          self.identity.context, self.identity.user, tuple(preview), error, steps)
        problem = write_audit(rec)
        if problem:
            self._ui(self.app.notify, problem, severity="warning")

    def _ui(self, fn: Any, *args: Any, **kw: Any) -> None:
        """Run `fn` on the UI thread, from whichever thread we are on."""
        if threading.get_ident() == self.app._thread_id:
            fn(*args, **kw)
        else:
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
        self.app.run_worker(partial(self._prepare, action, targets), thread=True, group="action",
                            name=f"prepare {action}", exit_on_error=False)

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
                self.audit(action, t, "refused", access.reason, error="forbidden")
                continue
            allowed.append(t)
            lines.append(f"• {t}")
            if i < MAX_PREVIEWS:
                pv = preview(action, t, objects, now=now, version=self.kueue_version)
                lines += [f"    {line}" for line in pv.lines]
        if refused:
            self.app.call_from_thread(self.app.notify, "\n".join(refused), title="forbidden", severity="error")
        if not allowed:
            self.app.call_from_thread(self.app.set_last_action, f"{action}: forbidden", False)
            return
        title = f"{action} {allowed[0]}" + (f" and {len(allowed) - 1} more" if len(allowed) > 1 else "") + "?"
        screen = ConfirmScreen(title, lines, evicts=action in DANGEROUS)
        self.app.call_from_thread(self.app.push_screen, screen, partial(self._confirmed, action, allowed, lines))

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
        from kueuetop.actions.executor import Executor

        ex = Executor(self.api, version=self.kueue_version, wait_timeout=self.wait_timeout)
        ok, failed = [], []
        for t in targets:
            res = ex.run(action, t, dry_run=dry_run)
            self.audit(action, t, "ok" if res.ok else "error", res.message, dry_run=dry_run, preview=lines,
                       error=res.error, steps=res.steps_done)
            (ok if res.ok else failed).append(res)
        dry = " (dry run)" if dry_run else ""
        if failed:
            msg = f"{action}{dry}: {len(failed)} failed: " + "; ".join(r.message for r in failed[:3])
            self.app.call_from_thread(self.app.notify, msg, title="action failed", severity="error", timeout=10)
        else:
            msg = f"{action}{dry}: " + (ok[0].message if len(ok) == 1 else f"{len(ok)} targets ok")
            self.app.call_from_thread(self.app.notify, msg, title="action done")
        self.app.call_from_thread(self.app.set_last_action, msg, not failed)
