"""Events (`:ev`, like k9s): Kueue's, the Job controller's, the scheduler's, the autoscaler's and
the kubelet's Events, and ProvisioningRequest conditions, newest first, filterable with `/`.

Opened from a row (a workload, queue, node or pod), the view follows that object: a workload
brings its own Events, its pods', its Job's (owners) and its ProvisioningRequests' conditions;
a ClusterQueue or LocalQueue its workloads'; a node its pods'. `esc` shows every Event again.
Rows come from the store's Events, which the informer keeps bounded (`EventRetention`), so the
view holds at most that many rows too.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.widgets import Static

from kueuetop.kueue.event import WITHOUT_KUEUE_PENDING, safe_event
from kueuetop.kueue.meta import Meta, OwnerRef
from kueuetop.kueue.provisioning import ProvisioningRequest
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.messages import OpenWorkload
from kueuetop.tui.views.base import TableView
from kueuetop.tui.virtual_table import VirtualTable
from kueuetop.views.rows import Row, age, cell

ObjectRef = tuple[str, str, str]  # (kind, namespace or "", name)
EVENT = "ev"
CONDITION = "cond"
PR_KIND = "ProvisioningRequest"


@dataclass(frozen=True, slots=True)
class Follow:
    """The object the view follows: where it was opened from, and what to call it."""

    view: str
    key: tuple[str, ...]
    label: str


def follow_for(view: str, key: Hashable | None) -> Follow | None:
    """What opening the Events view from `view`'s row `key` follows (None: everything)."""
    if key is None:
        return None
    parts = key if isinstance(key, tuple) else ("", str(key))
    parts = tuple(str(p) for p in parts)
    labels = {"workloads": "workload", "clusterqueues": "ClusterQueue", "localqueues": "LocalQueue",
              "nodes": "node", "flavors": "ResourceFlavor", "cohorts": "cohort"}
    if view not in labels or not parts:
        return None
    return Follow(view, parts, f"{labels[view]} {'/'.join(p for p in parts if p)}")


@dataclass(frozen=True, slots=True)
class Followed:
    """The involvedObjects whose Events belong to the followed object. Pods a Job made and Kueue
    deleted since (an evicted workload's earlier pods) are matched by the Job controller's pod
    names, `<job>-<5 chars>` or `<job>-<index>-<5 chars>`, so their Events stay in view."""

    objects: frozenset[ObjectRef]
    jobs: frozenset[tuple[str, str]] = frozenset()  # (namespace, Job name)

    def __contains__(self, ref: object) -> bool:
        if ref in self.objects:
            return True
        if not (isinstance(ref, tuple) and len(ref) == 3 and ref[0] == "Pod"):
            return False
        _, ns, name = ref
        base, _, suffix = str(name).rpartition("-")
        if len(suffix) != 5:
            return False
        if (ns, base) in self.jobs:
            return True
        job, _, index = base.rpartition("-")
        return index.isdigit() and (ns, job) in self.jobs


def followed_objects(ctx: ViewContext, follow: Follow) -> Followed:
    """Every involvedObject whose Events belong to the followed object."""
    store = ctx.store
    key = follow.key
    name = key[-1]
    ns = key[0] if len(key) > 1 else ""
    out: set[ObjectRef] = set()
    if follow.view == "workloads":
        out |= _workload_objects(ctx, (ns, name))
    elif follow.view == "clusterqueues":
        out.add(("ClusterQueue", "", name))
        for wk in store.workloads_in_cluster_queue(name):
            out.add(("Workload", *wk))
    elif follow.view == "localqueues":
        out.add(("LocalQueue", ns, name))
        for wk in store.workloads_in_local_queue(ns, name):
            out.add(("Workload", *wk))
    elif follow.view == "nodes":
        out.add(("Node", "", name))
        for pk in store.pods_on_node(name):
            out.add(("Pod", *pk))
    elif follow.view == "flavors":
        out.add(("ResourceFlavor", "", name))
    elif follow.view == "cohorts":
        out.add(("Cohort", "", name))
    jobs = frozenset((o[1], o[2]) for o in out if o[0] == "Job")
    return Followed(frozenset(out), jobs)


def _workload_objects(ctx: ViewContext, key: tuple[str, str]) -> set[ObjectRef]:
    store = ctx.store
    ns, name = key
    out: set[ObjectRef] = {("Workload", ns, name)}
    for pk in store.pods_of_workload(key):
        out.add(("Pod", *pk))
    wl = store.get(K.WORKLOADS, key)
    for ref in _owners(wl):
        if ref.kind and ref.name:
            out.add((ref.kind, ns, ref.name))
    for pr_key, pr in store.objects(K.PROVISIONING_REQUESTS).items():
        if pr_key[0] == ns and any(r.kind == "Workload" and r.name == name for r in _owners(pr)):
            out.add((PR_KIND, *pr_key))
    return out


def _owners(obj: Any) -> tuple[OwnerRef, ...]:
    meta = getattr(obj, "meta", None)
    return meta.owners if isinstance(meta, Meta) else ()


def involved(raw: Mapping[str, Any]) -> ObjectRef:
    """(kind, namespace, name) of an Event's object (core/v1 `involvedObject`, events.k8s.io `regarding`)."""
    obj = raw.get("involvedObject") or raw.get("regarding") or {}
    if not isinstance(obj, Mapping):
        obj = {}
    return (str(obj.get("kind") or ""), str(obj.get("namespace") or ""), str(obj.get("name") or ""))


def event_row(ctx: ViewContext, key: tuple[str, str], raw: Mapping[str, Any], now: float) -> Row:
    e = safe_event(raw)
    kind, ns, name = involved(raw)
    return _row((EVENT, *key), e.time, e.type, e.reason, kind, ns, name, e.count, e.source, e.message, ctx, now)


def condition_rows(ctx: ViewContext, key: tuple[str, str], pr: Any, now: float) -> Iterable[Row]:
    """A ProvisioningRequest's conditions, as the autoscaler wrote them, one row each."""
    for c in pr.conditions if isinstance(pr, ProvisioningRequest) else ():
        if not c.type:
            continue
        bad = (c.type in ("Failed", "CapacityRevoked", "BookingExpired") and c.is_true) or (
            c.type == "Provisioned" and c.status == "False")
        reason = f"{c.type}={c.status}" + (f" {c.reason}" if c.reason else "")
        yield _row((CONDITION, *key, c.type), c.last_transition, "Warning" if bad else "Normal", reason, PR_KIND,
                   key[0], key[1], 1, "condition", c.message, ctx, now)


def _row(rid: tuple[str, ...], when: float | None, type_: str, reason: str, kind: str, ns: str, name: str,
         count: int, source: str, message: str, ctx: ViewContext, now: float) -> Row:
    warn = type_ == "Warning"
    style = ctx.state_style("evicted") if warn else ""
    obj = (f"{kind}/{ns}/{name}" if ns else f"{kind}/{name}") if kind or name else "-"
    return Row(rid, (
        cell(age(None if when is None else now - when)), cell(type_ or "-", style), cell(reason or "-", style),
        cell(obj), cell(count), cell(source or "-"), cell(message or "-"),
    ), sort={"age": -(when or 0.0), "name": (reason, -(when or 0.0)), "status": (not warn, -(when or 0.0)),
             "namespace": (ns, -(when or 0.0)), "object": obj, "count": -count},
        state=f"{type_.lower()} {kind.lower()}")


class EventsView(TableView):
    VIEW = "events"
    TITLE = "Events"
    KINDS = frozenset({K.EVENTS, K.PROVISIONING_REQUESTS, K.PODS, K.WORKLOADS})
    COLUMNS = ("LAST", "TYPE", "REASON", "OBJECT", "COUNT", "SOURCE", "MESSAGE")
    PRIORITIES = (0, 3, 0, 1, 4, 2, 0)
    DEFAULT_SORT = "age"
    SORT_KEYS = ("age", "name", "status", "namespace")
    # The selected Event in full under the table: messages (the scheduler's, the autoscaler's)
    # are longer than any terminal's MESSAGE column.
    DEFAULT_CSS = """
    EventsView > #event-detail { height: 4; border-top: solid $panel; padding: 0 1; }
    """

    def __init__(self, ctx: ViewContext, **kw: Any) -> None:
        super().__init__(ctx, **kw)
        self.following: Follow | None = None
        self._objects: Followed | None = None  # followed involvedObjects, None: all

    def compose(self) -> ComposeResult:
        yield from super().compose()
        yield Static("", id="event-detail")

    def after_refresh(self) -> None:
        row = self.cursor_row()
        pane = self.query_one("#event-detail", Static)
        if row is None:
            pane.update("")
            return
        obj, source, message = row.cells[3].plain, row.cells[5].plain, row.cells[6].plain
        head = Text(f"{row.cells[2].plain}  {obj}  ({source}, {row.cells[0].plain} ago, x{row.cells[4].plain})",
                    style="bold")
        pane.update(Text("\n").join([head, Text(message)]))

    def on_virtual_table_row_highlighted(self, event: VirtualTable.RowHighlighted) -> None:
        self.after_refresh()

    # ------------------------------------------------------------ following
    def follow(self, target: Follow | None) -> None:
        """Show only the Events of `target` (None: all); the next refresh rebuilds every row."""
        if target == self.following:
            return
        self.following = target
        self.model.rebuild_all_next()
        if self.is_mounted:
            self.table.reset_widths()
            if self.display:
                self.refresh_view()

    def unfollow(self) -> bool:
        """`esc`: back to every Event; False when the view was not following anything."""
        if self.following is None:
            return False
        self.follow(None)
        return True

    def title_extra(self) -> list[str]:
        if self.following is None:
            if self.ctx.extra.get("events_selector") == WITHOUT_KUEUE_PENDING:
                return ["(Kueue's Pending Events: in each workload's detail; --all-events watches them)"]
            return []
        return [f"of {self.following.label} ({self.ctx.key_label('back')}: all)"]

    # ------------------------------------------------------------ rows
    def _wanted(self) -> Followed | None:
        if self.following is None:
            return None
        return followed_objects(self.ctx, self.following)

    def build_rows(self) -> list[Row]:
        self._objects = objects = self._wanted()
        now = self.ctx.now()
        ns_only = self.ctx.namespace
        rows = []
        for key, entry in self.ctx.store.entries(K.EVENTS).items():
            raw = entry.wire  # Events are kept as wire dicts
            if not isinstance(raw, Mapping):
                continue
            ref = involved(raw)
            if objects is not None and ref not in objects:
                continue
            if ns_only and key[0] != ns_only:
                continue
            rows.append(event_row(self.ctx, key, raw, now))
        for key, pr in self.ctx.store.objects(K.PROVISIONING_REQUESTS).items():
            if (objects is not None and (PR_KIND, *key) not in objects) or (ns_only and key[0] != ns_only):
                continue
            rows.extend(condition_rows(self.ctx, key, pr, now))
        return rows

    def build_row(self, key: Hashable) -> Row | None:
        if not isinstance(key, tuple) or not key or key[0] != EVENT:
            raise NotImplementedError  # conditions: rebuilt with all rows
        skey = (str(key[1]), str(key[2]))
        raw = self.ctx.store.wire(K.EVENTS, skey)
        if not isinstance(raw, Mapping):
            return None
        if self._objects is not None and involved(raw) not in self._objects:
            return None
        if self.ctx.namespace and skey[0] != self.ctx.namespace:
            return None
        return event_row(self.ctx, skey, raw, self.ctx.now())

    def row_keys_for(self, changes: Mapping[str, set[Any]]) -> set[Hashable] | None:
        if changes.get(K.PROVISIONING_REQUESTS):
            return None
        if self.following is not None and (changes.get(K.PODS) or changes.get(K.WORKLOADS)):
            objects = self._wanted()
            if objects != self._objects:
                return None  # a pod came or went: which Events belong changed
        return {(EVENT, *k) for k in changes.get(K.EVENTS, ())}

    # ------------------------------------------------------------ drill down / yaml
    def drill(self, row: Row) -> None:
        """`enter`: a workload's detail screen for its Events (and its pods'), else the Event's YAML."""
        kind, ns, name = self._object_of(row)
        if kind == "Workload":
            self.post_message(OpenWorkload((ns, name)))
            return
        if kind == "Pod":
            wl = self.ctx.store.workload_of_pod((ns, name))
            if wl is not None:
                self.post_message(OpenWorkload(wl))
                return
        super().drill(row)

    def _object_of(self, row: Row) -> ObjectRef:
        key = row.key
        if isinstance(key, tuple) and key and key[0] == EVENT:
            raw = self.ctx.store.wire(K.EVENTS, (str(key[1]), str(key[2])))
            return involved(raw) if isinstance(raw, Mapping) else ("", "", "")
        if isinstance(key, tuple) and len(key) >= 3:
            return (PR_KIND, str(key[1]), str(key[2]))
        return ("", "", "")

    def yaml_target(self, row: Row) -> tuple[str, Hashable]:
        key = row.key
        if isinstance(key, tuple) and key and key[0] == EVENT:
            return K.EVENTS, (str(key[1]), str(key[2]))
        if isinstance(key, tuple) and len(key) >= 3:
            return K.PROVISIONING_REQUESTS, (str(key[1]), str(key[2]))
        return "", key
