"""Workload detail (`enter` on a workload): conditions timeline, admission checks and their
ProvisioningRequests, the `explain` verdict with who is ahead, pods and their GPUs, the
workload's Events, YAML.

Each pod says why it is where it is (`views.pod_evidence`): the cause read from its status and
its flavor's nodes, the scheduler's PodScheduled message, its own recent Events (scheduler,
autoscaler, image pulls); pods that cannot be placed get the free GPUs of their flavor's nodes,
per node pool, against what one pod needs.

Rebuilt from the store whenever the workload, its pods or GPUs change; every string is cleaned
and appended as plain Text. Events are not in the store (nobody watches every Event of a large
cluster): the screen fetches its workload's, and those of its pods that are not running, in a
worker while it is open, as `kubectl describe` does, and polls again some seconds after each
answer is drawn.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from kueuetop.admission.explain import explain
from kueuetop.kueue.actions import WORKLOAD, Target
from kueuetop.kueue.core import Node, Pod
from kueuetop.kueue.event import ObjectEvent
from kueuetop.kueue.flavor import ResourceFlavor
from kueuetop.kueue.meta import Condition
from kueuetop.kueue.provisioning import ProvisioningRequest
from kueuetop.kueue.workload import Workload
from kueuetop.kueue.workload_state import derive_state
from kueuetop.sources.kube_http import ApiError
from kueuetop.sources.object_events import fetch_object_events
from kueuetop.store import events as K
from kueuetop.tui import keymap as KM
from kueuetop.tui.context import ViewContext
from kueuetop.tui.gpu_focus import nodes_of_workloads, report_gpu_focus
from kueuetop.tui.messages import RunAction
from kueuetop.tui.sparkline import sparkline
from kueuetop.tui.views.fleet import pool_of
from kueuetop.tui.yaml_view import fetch_yaml, yaml_text
from kueuetop.views import pod_evidence as PE
from kueuetop.views.eta_text import eta_sentence, forecast_of
from kueuetop.views.explain_text import explain_lines
from kueuetop.views.forecast_report import awaits_checks, checks_text
from kueuetop.views.rows import age
from kueuetop.views.safe_text import clean
from kueuetop.views.workload_rows import QUEUED

Key = tuple[str, str]
SPARK_WIDTH = 32  # GPU utilization history per GPU: the newest 32 samples
EVENTS_SHOWN = 30  # the newest; older ones are counted
POD_EVENT_PODS = 8  # pods whose Events are fetched too (those not running), per poll


def _when(t: float | None) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) if t else "--:--:--"


def _head(text: Text, title: str) -> None:
    text.append(f"\n{title}\n", style="bold underline")


def _prov_requests(ctx: ViewContext, key: Key) -> list[tuple[str, tuple[Condition, ...]]]:
    """ProvisioningRequests Kueue created for this workload (named `<workload>-<check>-<n>`)."""
    out = []
    for (ns, name), pr in sorted(ctx.store.objects(K.PROVISIONING_REQUESTS).items()):
        if ns != key[0] or not name.startswith(key[1] + "-"):
            continue
        out.append((name, pr.conditions if isinstance(pr, ProvisioningRequest) else ()))
    return out


def events_section(t: Text, now: float, events: Sequence[ObjectEvent] | None, error: str = "") -> None:
    """kubectl describe's Events table: type, reason, age (×count), from, message; oldest first."""
    _head(t, "Events")
    if error:
        t.append(f"events unavailable: {clean(error)}" + (" (showing the last ones fetched)" if events else "") + "\n",
                 style="dim")
    if events is None:
        if not error:
            t.append("loading…\n", style="dim")
        return
    if not events:
        t.append("no events\n")
        return
    if len(events) > EVENTS_SHOWN:
        t.append(f"({len(events) - EVENTS_SHOWN} older not shown)\n", style="dim")
    for e in events[-EVENTS_SHOWN:]:
        when = age(now - e.time if e.time is not None else None)
        if e.count > 1:
            when += f" (x{e.count})"
        t.append(f"{clean(e.type):<8} ", style="bold" if e.type == "Warning" else "")
        t.append(f"{clean(e.reason):<22} {when:<12} {clean(e.source):<16} {clean(e.message)}\n")


def _pool_fits(ctx: ViewContext, flavor: ResourceFlavor, need: int) -> tuple[PE.PoolFit, list[PE.PoolFit]]:
    """The flavor's nodes against one pod's GPUs, in all and per node pool (free GPUs from the
    pods the store holds on them: those Kueue manages)."""
    store = ctx.store
    nodes = [n for n in store.objects(K.NODES).values() if isinstance(n, Node) and PE.flavor_matches_node(flavor, n)]
    pods = [p for n in nodes for k in store.pods_on_node(n.name) if isinstance(p := store.get(K.PODS, k), Pod)]
    free = PE.free_gpus(nodes, pods)
    pools: dict[str, list[Node]] = {}
    for n in nodes:
        pools.setdefault(pool_of(n), []).append(n)
    whole = PE.pool_fit(flavor, need, nodes, free)
    if len(pools) <= 1:
        return whole, [whole]
    return whole, [replace(PE.pool_fit(flavor, need, ns, free), flavor=f"{flavor.name} pool {pool}")
                   for pool, ns in sorted(pools.items())]


# Pod events worth showing beside a pod (the scheduler's, the autoscaler's, the kubelet's image pulls).
POD_EVENT_REASONS = frozenset({"FailedScheduling", "TriggeredScaleUp", "NotTriggerScaleUp", "Failed", "BackOff",
                               "ErrImagePull", "ImagePullBackOff", "FailedCreatePodSandBox", "Evicted",
                               "Preempted", "Scheduled"})
POD_EVENTS_SHOWN = 4


def pods_section(t: Text, ctx: ViewContext, key: Key, wl: Workload,
                 pod_events: Mapping[str, Sequence[ObjectEvent]]) -> None:
    """Each pod with why it is where it is: the cause read from its status and its pool, the
    scheduler's PodScheduled message, its recent Events; then, for pods that cannot be placed,
    the free GPUs of their flavor's nodes against what one pod needs."""
    store = ctx.store
    _head(t, "Pods and GPUs")
    pods = sorted(store.pods_of_workload(key))
    if not pods:
        t.append("no pods\n")
    flavors = {f.name: f for f in store.objects(K.RESOURCE_FLAVORS).values() if isinstance(f, ResourceFlavor)}
    fits: dict[tuple[str, int], tuple[PE.PoolFit, list[PE.PoolFit]]] = {}
    now = ctx.now()
    for pkey in pods:
        pod = store.get(K.PODS, pkey)
        if not isinstance(pod, Pod):
            continue
        restarts = f"  restarts {pod.restarts}" if pod.restarts else ""
        t.append(f"{clean(pod.name)}  {clean(pod.phase)}  node {clean(pod.node_name) or '-'}  gpus {pod.gpus}{restarts}\n")
        flavor = flavors.get(PE.pod_flavor(wl, pod))
        pool = None
        if flavor is not None and pod.gpus and not pod.node_name:
            fk = (flavor.name, pod.gpus)
            if fk not in fits:
                fits[fk] = _pool_fits(ctx, flavor, pod.gpus)
            pool = fits[fk][0]
        evs = list(pod_events.get(pod.name, ()))
        cause = PE.pod_cause(pod, pool, [(e.reason, e.message) for e in evs])
        if cause.cause != PE.RUNNING:
            style = ctx.state_style("evicted" if cause.cause in PE.NOT_RUNNING else "")
            t.append(f"    why: {cause.cause}", style=style)
            t.append(f": {clean(cause.message)}\n" if cause.message else "\n")
        sched = PE.scheduled_condition(pod)
        if sched is not None and sched[0] != "True" and sched[2] and sched[2] != cause.message:
            t.append(f"    PodScheduled {clean(sched[0])} {clean(sched[1])}: {clean(sched[2])}\n")
        shown = [e for e in evs if e.reason in POD_EVENT_REASONS][-POD_EVENTS_SHOWN:]
        for e in shown:
            when = age(now - e.time if e.time is not None else None) + (f" (x{e.count})" if e.count > 1 else "")
            t.append(f"    {clean(e.reason):<18} {when:<10} {clean(e.message)}\n",
                     style="bold" if e.type == "Warning" else "")
        for g in store.gpus_of_pod(pkey[0], pkey[1]):
            util = "stale" if g.stale or g.util is None else f"{g.util:.0f}%"
            # Sparkline before the long node name, so it stays on the first line at 80 columns.
            t.append(f"    GPU {clean(g.gpu):<3} util {util:>5} ")
            history = [v for _, v in store.gpu_history.get(g.key)]
            t.append(sparkline(history, SPARK_WIDTH, glyphs=ctx.glyphs), style=ctx.state_style("admitted"))
            t.append(f"  {clean(g.model)}  {clean(g.node)}\n")
    if fits:
        _head(t, "Free GPUs on the nodes of each flavor (what one pod needs)")
        for (_, need), (_, parts) in sorted(fits.items()):
            for fit in parts:
                t.append(f"{clean(fit.text())}  (one pod needs {need})\n")


def detail_text(ctx: ViewContext, key: Key, events: Sequence[ObjectEvent] | None = None,
                events_error: str = "", pod_events: Mapping[str, Sequence[ObjectEvent]] | None = None,
                raw: Mapping[str, Any] | None = None, raw_error: str = "") -> Text:
    """`pod_events`: the Events of the workload's pods not running, by pod name; `raw`: the
    workload as last fetched from the API server (the store keeps none), for the YAML section;
    `raw_error`: why the last fetch failed."""
    store = ctx.store
    wl = store.get(K.WORKLOADS, key)
    t = Text()
    if not isinstance(wl, Workload):
        t.append(f"{clean(key[0])}/{clean(key[1])}: no longer in the store (deleted?)")
        return t
    now = ctx.now()
    st = derive_state(wl, now)
    t.append(f"{clean(wl.namespace)}/{clean(wl.name)}", style="bold")
    t.append(f"  {st.phase.value}", style=ctx.state_style({"Admitted": "admitted", "Inactive": "inactive",
                                                            "Finished": "finished"}.get(st.phase.value, "pending")))
    if st.reason:
        t.append(f" ({clean(st.reason)})")
    t.append("\n")
    if st.message:
        t.append(f"{clean(st.message)}\n")
    lq = wl.queue_name
    cq = wl.admission.cluster_queue if wl.admission else ""
    t.append(f"LocalQueue {clean(lq)}  ClusterQueue {clean(cq) or '-'}  priority {wl.effective_priority}"
             f"  active {str(wl.active).lower()}  age {age(now - wl.meta.creation if wl.meta.creation else None)}\n")

    _head(t, "Why (explain)")
    try:
        ex = explain(store.snapshot(), key, now)
        for line in explain_lines(ex):
            t.append(line + "\n")  # explain_lines cleans every cluster string
    except Exception as e:  # the engine must never take the console down
        t.append(f"explain unavailable: {type(e).__name__}: {clean(str(e))}\n")
    if st.phase in QUEUED:
        # When: the forecast (the engine run forward over estimated runtimes), with its basis.
        forecast, wf = forecast_of(store, key)
        t.append("Forecast: ", style="bold")
        t.append(clean(eta_sentence(wf, forecast, now)) + "\n")
    elif awaits_checks(wl):
        t.append("Forecast: ", style="bold")
        forecast, wf = forecast_of(store, key)
        if wf is not None:
            # Its ProvisioningRequests pass when its pods find nodes on the pools (check_timing).
            t.append(f"holds quota, waits for {checks_text(wl)}; " + clean(eta_sentence(wf, forecast, now)) + "\n")
        else:
            t.append(f"holds quota; admitted when its admission checks pass ({checks_text(wl)}), "
                     "which the forecast does not time (only ProvisioningRequests on known node pools)\n")

    _head(t, "Conditions")
    for c in sorted(wl.conditions, key=lambda c: c.last_transition or 0.0):
        t.append(f"{_when(c.last_transition)}  {clean(c.type):<16} {clean(c.status):<6} {clean(c.reason)}")
        if c.message:
            t.append(f": {clean(c.message)}")
        t.append("\n")

    if wl.admission_checks:
        _head(t, "Admission checks")
        for chk in wl.admission_checks:
            t.append(f"{clean(chk.name)}: {clean(chk.state)}" + (f": {clean(chk.message)}" if chk.message else "") + "\n")
        for name, conds in _prov_requests(ctx, key):
            t.append(f"ProvisioningRequest {clean(name)}\n")
            for c in conds:
                t.append(f"  {clean(c.type)}={clean(c.status)} {clean(c.reason)}"
                         + (f": {clean(c.message)}" if c.message else "") + "\n")

    pods_section(t, ctx, key, wl, pod_events or {})

    events_section(t, now, events, events_error)

    _head(t, "YAML")
    if raw_error:
        t.append(f"YAML unavailable: {clean(raw_error)}" + (" (showing the last one fetched)" if raw else "") + "\n",
                 style="dim")
    if raw is not None:
        t.append_text(yaml_text(raw))
    elif not raw_error:
        t.append("loading…\n", style="dim")
    return t


def _action_bindings() -> list[Binding]:
    # The Workloads view's cluster-changing keys, same binding ids (so user remaps apply here too).
    return [KM.to_binding(a) for a in KM.load_keymap().actions("workloads") if a.dangerous]


class WorkloadDetailScreen(Screen[None]):
    BINDINGS: ClassVar = [Binding("escape,q", "back", "Back"), *_action_bindings()]
    DEFAULT_CSS = """
    WorkloadDetailScreen > .page-title { height: 1; background: $panel; padding: 0 1; }
    WorkloadDetailScreen > VerticalScroll { padding: 0 1; }
    """
    KINDS = frozenset({K.WORKLOADS, K.PODS, K.GPUS, K.PROVISIONING_REQUESTS, K.POSITIONS, K.NODES, K.FORECAST})
    EVENTS_EVERY = 5.0  # seconds between the drawing of one answer and the next request

    class EventsFetched(Message):
        """A worker's answer: the workload's Events, or why there are none."""

        def __init__(self, events: list[ObjectEvent] | None, error: str = "",
                     pod_events: dict[str, list[ObjectEvent]] | None = None) -> None:
            super().__init__()
            self.events, self.error, self.pod_events = events, error, pod_events or {}

    class ObjectFetched(Message):
        """A worker's answer: the workload as the API server has it, or why not (its YAML)."""

        def __init__(self, obj: dict[str, Any] | None, error: str = "") -> None:
            super().__init__()
            self.obj, self.error = obj, error

    def __init__(self, ctx: ViewContext, key: Key, api: Any = None, kueue_version: str = "v1beta2") -> None:
        super().__init__()
        self.ctx = ctx
        self.key = key
        self.api = api
        self.kueue_version = kueue_version
        self.events: list[ObjectEvent] | None = None
        self.pod_events: dict[str, list[ObjectEvent]] = {}
        self.events_error = "" if api is not None else "no connection to an API server"
        self.raw: dict[str, Any] | None = None  # the last fetched copy, for the YAML section
        self.raw_error = "" if api is not None else "no connection to an API server"

    def compose(self) -> ComposeResult:
        yield Static(Text(f"Workload {clean(self.key[0])}/{clean(self.key[1])}   esc: back"), classes="page-title")
        with VerticalScroll():
            yield Static(self._text(), id="detail-body")
        yield Footer(compact=True, show_command_palette=False)

    def on_mount(self) -> None:
        report_gpu_focus(self.ctx, "detail", nodes_of_workloads(self.ctx.store, [self.key]))
        self._request_events()

    def _request_events(self) -> None:
        if self.api is not None and self.is_attached:
            self.run_worker(partial(self._fetch_events, self.api), thread=True, group="events", exclusive=True,
                            exit_on_error=False)

    def _fetch_events(self, api: Any) -> None:  # worker thread
        ns, name = self.key
        # The YAML comes with each poll too: the store keeps no wire dicts (one small GET).
        obj, error = fetch_yaml(api, "workloads", self.key, self.kueue_version)
        self.post_message(self.ObjectFetched(obj, error))
        try:
            events = fetch_object_events(api, ns, "Workload", name)
            pods: dict[str, list[ObjectEvent]] = {}
            for pod in self._pods_to_ask():  # the scheduler's and autoscaler's word on pods not running
                pods[pod] = fetch_object_events(api, ns, "Pod", pod)
            answer = self.EventsFetched(events, pod_events=pods)
        except ApiError as e:
            why = f"forbidden: needs 'list events' in {ns} ({e.message})" if e.status == 403 else str(e)
            answer = self.EventsFetched(None, why)
        except Exception as e:  # unreachable server, bad answer: said on screen, never raised
            answer = self.EventsFetched(None, f"{type(e).__name__}: {e}")
        self.post_message(answer)

    def _pods_to_ask(self) -> list[str]:
        """Pods of the workload not Running (those whose Events say why), a few at most."""
        store = self.ctx.store
        out = []
        for pkey in sorted(store.pods_of_workload(self.key)):
            pod = store.get(K.PODS, pkey)
            if isinstance(pod, Pod) and PE.pod_cause(pod).cause in PE.NOT_RUNNING:
                out.append(pkey[1])
        return out[:POD_EVENT_PODS]

    def on_workload_detail_screen_events_fetched(self, message: EventsFetched) -> None:
        if message.events is not None:
            self.events = message.events
            self.pod_events = message.pod_events
        self.events_error = message.error  # the last events fetched stay shown after an error
        self.refresh_view()
        self.set_timer(self.EVENTS_EVERY, self._request_events)

    def on_workload_detail_screen_object_fetched(self, message: ObjectFetched) -> None:
        if message.obj is not None:
            self.raw = message.obj
        self.raw_error = message.error  # the last copy fetched stays shown after an error
        self.refresh_view()

    def _text(self) -> Text:
        return detail_text(self.ctx, self.key, self.events, self.events_error, self.pod_events, self.raw,
                           self.raw_error)

    def refresh_view(self) -> None:
        self.query_one("#detail-body", Static).update(self._text())
        # The workload's GPUs are on screen: a budgeted scrape reads their nodes first.
        report_gpu_focus(self.ctx, "detail", nodes_of_workloads(self.ctx.store, [self.key]))

    def on_unmount(self) -> None:
        report_gpu_focus(self.ctx, "detail", ())

    def action_back(self) -> None:
        self.app.pop_screen()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Read-only hides the keys, RBAC greys them: the app decides, as for the views.
        return self.ctx.check_binding(action, parameters)

    def action_workload_action(self, action: str) -> None:
        """hold / resume / requeue / preempt on the workload shown: the same preview, confirmation
        and dry-run flow as from the Workloads view."""
        self.post_message(RunAction(action, [Target(WORKLOAD, self.key[1], self.key[0])]))
