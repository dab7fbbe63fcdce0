"""Run an action plan against a Kubernetes API with the official client.

Each Patch step is a JSON merge patch (`application/merge-patch+json`, the body kueuectl sends)
to a Workload, ClusterQueue or LocalQueue in kueue.x-k8s.io. The patch also carries the
`metadata.resourceVersion` we just read, so a concurrent writer makes the server answer `409`
instead of us acting on a state we never saw (e.g. a workload that finished meanwhile); on 409
we re-read, re-check and retry once (ARCHITECTURE §6). WaitFor steps poll GET until
`plan.wait_satisfied`, bounded by a timeout and cancellable. With dry-run every patch goes out
with `dryRun=All` and waits are skipped, since nothing changed for Kueue to react to.

Each PATCH is sent at most once. When a step fails after a PATCH may have landed (its reply was
lost, a later step timed out or failed), the target is read back, with a bounded retry, and the
result says what landed (`kueuetop.actions.reconcile`) and how to finish or undo what is left.

Nothing here logs or returns request headers or tokens: errors are rebuilt from the Status
body the server sent.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException
from urllib3.exceptions import HTTPError as Urllib3Error

from kueuetop.actions.reconcile import (
    APPLIED,
    NOT_APPLIED,
    UNKNOWN,
    before_state,
    describe_state,
    next_step,
    what_landed,
)
from kueuetop.kueue.actions import (
    CLUSTER_QUEUE,
    DEACTIVATION_SEEN,
    LOCAL_QUEUE,
    WORKLOAD,
    Patch,
    Target,
    WaitFor,
    plan,
    wait_satisfied,
)

GROUP = "kueue.x-k8s.io"
DEFAULT_VERSION = "v1beta2"
FALLBACK_VERSION = "v1beta1"
PLURALS = {WORKLOAD: "workloads", CLUSTER_QUEUE: "clusterqueues", LOCAL_QUEUE: "localqueues"}
MERGE_PATCH = "application/merge-patch+json"
FIELD_MANAGER = "kueuetop"

# Error kinds a caller (CLI exit codes, TUI colours) can branch on.
FORBIDDEN, NOT_FOUND, CONFLICT, PRECONDITION = "forbidden", "not-found", "conflict", "precondition"
TIMEOUT, CANCELLED, NETWORK, INVALID, API = "timeout", "cancelled", "network", "invalid", "api-error"


@dataclass(frozen=True)
class ActionResult:
    ok: bool
    action: str
    target: str
    dry_run: bool
    steps_done: int
    steps_total: int
    message: str
    error: str = ""  # one of the error kinds above, "" when ok
    summary: Mapping[str, Any] = field(default_factory=dict)  # the object afterwards, see summarize()
    landed: str = ""  # applied | not applied | partly applied: held | unknown (see reconcile)
    next: str = ""  # how to finish or undo what is left, "" when nothing is


class ActionError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


def resource_of(target: Target) -> tuple[str, str]:
    """(plural, namespace) of the object an action on `target` writes; namespace "" if cluster-scoped."""
    return PLURALS[target.kind], target.namespace if target.kind != CLUSTER_QUEUE else ""


def _status_body(exc: ApiException) -> dict[str, Any]:
    try:
        body = json.loads(exc.body) if exc.body else {}
    except (TypeError, ValueError):
        return {}
    return body if isinstance(body, dict) else {}


_FORBIDDEN_RE = re.compile(
    r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) resource "(?P<resource>[^"]+)" in API group "(?P<group>[^"]*)"'
    r'(?: in the namespace "(?P<ns>[^"]*)")?')


def forbidden_message(status: Mapping[str, Any], verb: str, resource: str, namespace: str) -> str:
    """Name the missing permission: verb, resource, group and namespace, from the Status body."""
    text = str(status.get("message") or "")
    m = _FORBIDDEN_RE.search(text)
    user = m.group("user") if m else ""
    verb = m.group("verb") if m else verb
    resource = m.group("resource") if m else resource
    group = m.group("group") if m else GROUP
    ns = (m.group("ns") or "") if m else namespace
    who = f'user "{user}"' if user else "you"
    scope = f'in namespace "{ns}"' if ns else "at cluster scope"
    return (f'forbidden: {who} lacks RBAC permission to {verb} "{resource}" in API group "{group}" {scope}'
            + (f" (server: {text})" if text else ""))


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    conds = (obj.get("status") or {}).get("conditions") or []
    return {c.get("type"): c for c in conds if isinstance(c, Mapping)}


def summarize(kind: str, obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """A few fields for messages, the audit log and tests; never the whole object."""
    if obj is None:
        return {"exists": False}
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    out: dict[str, Any] = {"name": meta.get("name", ""), "resourceVersion": meta.get("resourceVersion", "")}
    if meta.get("namespace"):
        out["namespace"] = meta["namespace"]
    out["conditions"] = {t: f"{c.get('status')}/{c.get('reason', '')}" for t, c in _conditions(obj).items() if t}
    if kind == WORKLOAD:
        out["active"] = spec.get("active", True)
        out["clusterQueue"] = ((obj.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
    else:
        out["stopPolicy"] = spec.get("stopPolicy", "None")
    return out


def _fresh(obj: Mapping[str, Any], generation: int) -> Mapping[str, Any]:
    """The object with conditions written before `generation` dropped.

    A workload held and resumed earlier still carries Evicted=True/Deactivated from then; only a
    condition Kueue wrote after seeing our patch (observedGeneration ≥ its generation) counts.
    """
    status = obj.get("status") or {}
    conds = [c for c in status.get("conditions") or []
             if not isinstance(c, Mapping) or int(c.get("observedGeneration") or generation) >= generation]
    return {**obj, "status": {**status, "conditions": conds}}


def _backoff_cleared(obj: Mapping[str, Any]) -> bool:
    """Inactive, holding no quota and with no backoff state left: what a requeue needs before reactivating.

    A workload already evicted for another reason (PodsReadyTimeout backoff, the usual thing to
    requeue) may never get Evicted/Deactivated written: Kueue only drops its `requeueState`.
    """
    qr = _conditions(obj).get("QuotaReserved")
    return ((obj.get("spec") or {}).get("active") is False and not (qr and qr.get("status") == "True")
            and not (obj.get("status") or {}).get("requeueState"))


class Executor:
    """Runs `plan(action, target)` through one `kubernetes.client.ApiClient`."""

    def __init__(self, api_client: client.ApiClient, *, version: str = DEFAULT_VERSION,
                 fallback_version: str | None = FALLBACK_VERSION, poll_interval: float = 0.5,
                 wait_timeout: float | None = None, request_timeout: float = 15.0,
                 optimistic: bool = True, readback_timeout: float = 30.0, settle_seconds: float = 2.0) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.host = api_client.configuration.host
        self.version = version
        self.fallback_version = fallback_version
        self.poll_interval = poll_interval
        self.wait_timeout = wait_timeout  # caps every WaitFor step's own timeout
        self.request_timeout = request_timeout
        self.optimistic = optimistic
        self.readback_timeout = readback_timeout  # bound on reading the target back after a failure
        self.settle_seconds = settle_seconds  # how long a PATCH whose reply was lost may still land
        self._cancel = threading.Event()
        self._in_doubt_rv: str | None = None  # resourceVersion a PATCH in doubt was sent with
        self._before: dict[str, Any] | None = None  # the target before our first PATCH
        self._patches_ok = 0  # PATCHes the server answered with success

    @property
    def may_have_written(self) -> dict[str, Any] | None:
        """After `run`: the target's state before our first PATCH if a PATCH of ours may have
        landed (answered with success, or its reply lost), else None (nothing of ours landed)."""
        if self._before is None or (self._patches_ok == 0 and self._in_doubt_rv is None):
            return None
        return self._before

    # ----------------------------------------------------------------- raw calls
    def _call(self, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except ApiException as exc:
            if exc.status == 0 or exc.status is None:
                if self._cancel.is_set():
                    raise ActionError(CANCELLED, "cancelled during a request") from None
                raise ActionError(NETWORK, f"cannot reach the API server at {self.host}: {exc.reason}") from None
            raise
        except (Urllib3Error, OSError) as exc:
            if self._cancel.is_set():
                raise ActionError(CANCELLED, "cancelled during a request") from None
            raise ActionError(NETWORK, f"cannot reach the API server at {self.host}: "
                                       f"{type(exc).__name__}: {_short(exc)}") from None

    def _versioned(self, fn: Callable[[str], Any], target: Target) -> Any:
        """Call with the preferred version; once, fall back when the server doesn't serve it.

        A missing version answers 404 without `details.name`; a missing object names itself.
        """
        try:
            return self._call(lambda: fn(self.version))
        except ApiException as exc:
            details = _status_body(exc).get("details") or {}
            if (exc.status == 404 and self.fallback_version and self.fallback_version != self.version
                    and details.get("name") != target.name):
                self.version = self.fallback_version
                return self._call(lambda: fn(self.version))
            raise

    def get(self, target: Target) -> dict[str, Any] | None:
        """The object as a dict, None when it does not exist."""
        plural, ns = resource_of(target)

        def fn(v: str) -> Any:
            if ns:
                return self.api.get_namespaced_custom_object(GROUP, v, ns, plural, target.name,
                                                             _request_timeout=self.request_timeout)
            return self.api.get_cluster_custom_object(GROUP, v, plural, target.name,
                                                      _request_timeout=self.request_timeout)
        try:
            return self._versioned(fn, target)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def patch(self, target: Target, body: Mapping[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        plural, ns = resource_of(target)
        # fieldManager names us in the object's managedFields, so `kubectl get --show-managed-fields`
        # tells who set spec.active (the server would otherwise record the client library's name).
        kw: dict[str, Any] = {"_content_type": MERGE_PATCH, "_request_timeout": self.request_timeout,
                              "field_manager": FIELD_MANAGER}
        if dry_run:
            kw["dry_run"] = "All"

        def fn(v: str) -> Any:
            if ns:
                return self.api.patch_namespaced_custom_object(GROUP, v, ns, plural, target.name, dict(body), **kw)
            return self.api.patch_cluster_custom_object(GROUP, v, plural, target.name, dict(body), **kw)
        return self._versioned(fn, target)

    # ----------------------------------------------------------------- steps
    def _patch_step(self, action: str, target: Target, body: Mapping[str, Any], dry_run: bool,
                    on_send: Callable[[Mapping[str, Any]], None] | None = None) -> dict[str, Any]:
        for attempt in (1, 2):
            cur = self.get(target)
            if cur is None:
                raise ActionError(NOT_FOUND, f"{target.kind} {target} not found")
            check_precondition(action, target, cur, body)
            send = dict(body)
            rv = str((cur.get("metadata") or {}).get("resourceVersion") or "")
            if self.optimistic and rv:
                send["metadata"] = {"resourceVersion": rv}
            before = before_state(cur)
            if on_send:
                on_send(before)  # journaled before the request leaves
            if self._before is None and not dry_run:
                self._before = before
            self._in_doubt_rv = rv
            try:
                out = self.patch(target, send, dry_run=dry_run)
                self._in_doubt_rv = None
                self._patches_ok += 1
                return out
            except ApiException as exc:
                self._in_doubt_rv = None  # the server answered: it did not apply this one
                if exc.status == 409 and attempt == 1:
                    continue  # someone wrote between our read and our patch: re-read, re-check, retry once
                raise
        raise AssertionError("unreachable")

    def _wait_step(self, target: Target, step: WaitFor, generation: int, cancel: threading.Event) -> dict | None:
        limit = step.timeout_seconds if self.wait_timeout is None else min(step.timeout_seconds, self.wait_timeout)
        deadline = time.monotonic() + limit
        while True:
            obj = self.get(target)
            if obj is not None and step.condition == DEACTIVATION_SEEN:
                done = wait_satisfied(step.condition, _fresh(obj, generation)) or _backoff_cleared(obj)
            else:
                done = wait_satisfied(step.condition, obj)
            if done:
                return obj
            if time.monotonic() >= deadline:
                raise ActionError(TIMEOUT, f"timed out after {limit:g}s waiting for {step.condition} on {target}")
            if cancel.wait(min(self.poll_interval, max(0.0, deadline - time.monotonic()))):
                raise ActionError(CANCELLED, f"cancelled while waiting for {step.condition} on {target}")

    def run(self, action: str, target: Target, *, dry_run: bool = False, cancel: threading.Event | None = None,
            on_step: Callable[[int, str], None] | None = None,
            on_send: Callable[[int, Mapping[str, Any]], None] | None = None) -> ActionResult:
        """Execute the whole plan; never raises for API, network or policy failures.

        `on_send(step, before)` is called right before each PATCH leaves (the journal's step
        entry); `on_step(-1, "read back")` when a failure is followed by reading the target back.
        """
        cancel = cancel or threading.Event()
        self._cancel = cancel
        self._before = None
        self._in_doubt_rv = None
        self._patches_ok = 0
        try:
            steps = plan(action, target)
        except ValueError as exc:
            return ActionResult(False, action, str(target), dry_run, 0, 0, str(exc), INVALID, landed=NOT_APPLIED)
        done = 0
        last: dict[str, Any] | None = None
        generation = 0
        current = ""
        try:
            for i, step in enumerate(steps):
                if cancel.is_set():
                    raise ActionError(CANCELLED, f"cancelled before step {i + 1} of {len(steps)}")
                if isinstance(step, Patch):
                    current = "patch"
                    if on_step:
                        on_step(i, f"patch {json.dumps(dict(step.body), sort_keys=True)}")
                    send_hook = partial(on_send, i) if on_send else None
                    last = self._patch_step(action, target, step.body, dry_run, send_hook)
                    generation = int((last.get("metadata") or {}).get("generation") or 0)
                elif isinstance(step, WaitFor):
                    if dry_run:
                        continue  # nothing was changed, so Kueue has nothing to react to
                    current = "get"
                    if on_step:
                        on_step(i, f"wait for {step.condition}")
                    last = self._wait_step(target, step, generation, cancel)
                done += 1
            if not dry_run:
                current = "get"
                last = self.get(target)
        except ActionError as exc:
            return self._failed(action, target, dry_run, done, len(steps), exc.message, exc.kind, last, on_step)
        except ApiException as exc:
            kind, message = self._describe(exc, current, target)
            return self._failed(action, target, dry_run, done, len(steps), message, kind, last, on_step)
        what = "dry run accepted by the server" if dry_run else "done"
        return ActionResult(True, action, str(target), dry_run, done, len(steps),
                            f"{action} {target}: {what}", "", summarize(target.kind, last),
                            landed=NOT_APPLIED if dry_run else APPLIED)

    def _failed(self, action: str, target: Target, dry_run: bool, done: int, total: int, message: str,
                kind: str, last: dict[str, Any] | None,
                on_step: Callable[[int, str], None] | None) -> ActionResult:
        """A step failed: say what landed, reading the target back when a PATCH of ours may have."""
        summary = summarize(target.kind, last) if last else {}
        before = self.may_have_written
        if dry_run or before is None:
            # Nothing was written: a dry run, a failure before the first PATCH left, or the server
            # answered the only PATCH sent with an error.
            return ActionResult(False, action, str(target), dry_run, done, total, message, kind, summary,
                                landed=NOT_APPLIED)
        where = f"step {done + 1} of {total}" if done < total else "reading the result"
        cause = _cause(kind, message)
        if self._cancel.is_set():
            # The caller is quitting: it reads back within its own bound, or leaves it for the next start.
            return ActionResult(False, action, str(target), dry_run, done, total,
                                f"{action} {target}: interrupted during {where}", CANCELLED, summary,
                                landed=UNKNOWN, next=next_step(action, target, UNKNOWN))
        if on_step:
            on_step(-1, "read back")
        ok, obj = self.read_back(target, self.readback_timeout)
        if not ok:
            hint = next_step(action, target, UNKNOWN)
            return ActionResult(False, action, str(target), dry_run, done, total,
                                f"{action} {target}: outcome unknown after {cause} during {where}; {hint}",
                                kind, summary, landed=UNKNOWN, next=hint)
        landed = what_landed(action, before, obj)
        hint = next_step(action, target, landed)
        state = describe_state(target, obj)
        if landed == APPLIED:
            return ActionResult(True, action, str(target), dry_run, done, total,
                                f"{action} {target}: done ({state}; read back after {cause} during {where})",
                                "", summarize(target.kind, obj), landed=APPLIED)
        return ActionResult(False, action, str(target), dry_run, done, total,
                            f"{action} {target}: {landed} after {cause} during {where}: {state}"
                            + (f"; {hint}" if hint else ""), kind, summarize(target.kind, obj),
                            landed=landed, next=hint)

    def read_back(self, target: Target, timeout: float) -> tuple[bool, dict[str, Any] | None]:
        """(read, object or None if gone), retrying until `timeout` seconds have passed.

        A PATCH whose reply was lost may still be on its way (buffered by the network). It carries
        the resourceVersion it was built on, so once the object has moved past that version it can
        never land (409); while it has not, read again for `settle_seconds` before trusting it.
        """
        deadline = time.monotonic() + timeout
        settle_until = time.monotonic() + self.settle_seconds
        saved = self.request_timeout
        while True:
            left = deadline - time.monotonic()
            self.request_timeout = max(0.2, min(saved, left))
            try:
                obj = self.get(target)
            except (ActionError, ApiException):
                obj, failed = None, True
            else:
                failed = False
            finally:
                self.request_timeout = saved
            if not failed:
                rv = str(((obj or {}).get("metadata") or {}).get("resourceVersion") or "")
                if not (self._in_doubt_rv is not None and rv == self._in_doubt_rv
                        and time.monotonic() < min(settle_until, deadline)):
                    return True, obj
            if time.monotonic() >= deadline:
                return False, None
            time.sleep(min(self.poll_interval, max(0.0, deadline - time.monotonic())))

    def _describe(self, exc: ApiException, verb: str, target: Target) -> tuple[str, str]:
        status = _status_body(exc)
        plural, ns = resource_of(target)
        text = str(status.get("message") or exc.reason or "")
        if exc.status == 403:
            return FORBIDDEN, forbidden_message(status, verb or "patch", plural, ns)
        if exc.status == 404:
            return NOT_FOUND, f"{target.kind} {target} not found" + (f" ({text})" if text else "")
        if exc.status == 409:
            return CONFLICT, f"conflict: {target} kept changing; gave up after one retry ({text})"
        if exc.status == 401:
            return FORBIDDEN, "unauthorized: the API server rejected the credentials (401)"
        if exc.status in (400, 422):
            return INVALID, f"rejected by the API server ({exc.status}): {text}"
        return API, f"API error {exc.status}: {text}"


def check_precondition(action: str, target: Target, obj: Mapping[str, Any], body: Mapping[str, Any]) -> None:
    """Refuse what would do something else than the action promises.

    Requeue on a workload that holds quota would evict it (reference §5.1), and preempting a
    workload that holds none only requeues it: both mean the operator's view is out of date.
    Checked before the first deactivation only (the reactivation follows our own wait).
    """
    if target.kind != WORKLOAD or (body.get("spec") or {}).get("active") is not False:
        return
    qr = _conditions(obj).get("QuotaReserved")
    holds_quota = qr is not None and qr.get("status") == "True"
    finished = (_conditions(obj).get("Finished") or {}).get("status") == "True"
    if finished and action in ("requeue", "preempt", "preempt-and-hold"):
        raise ActionError(PRECONDITION, f"workload {target} has finished; nothing to {action}")
    if action == "requeue" and holds_quota:
        raise ActionError(PRECONDITION, f"workload {target} holds quota; requeue is for pending workloads "
                                        "(use preempt to evict it and put it back in its queue)")
    if action in ("preempt", "preempt-and-hold") and not holds_quota:
        raise ActionError(PRECONDITION, f"workload {target} holds no quota; nothing to preempt "
                                        "(use requeue or hold)")


def _cause(kind: str, message: str) -> str:
    if kind == NETWORK:
        return "the connection to the API server failed"
    if kind == TIMEOUT:
        return message
    return message.split(": ", 1)[0] if kind == CANCELLED else f"an error ({message})"


def _short(exc: BaseException) -> str:
    text = str(exc)
    # urllib3 reprs can embed the pool object; keep the reason readable and one line.
    return " ".join(text.split())[:300]
