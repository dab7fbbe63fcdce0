"""Overview: the triage board an on-call engineer opens first.

Problems first, ranked (broken, admitted but not running, waiting too long, churn, waste), one
line each with its count and the age of the oldest; `enter` on a line opens the workload's
detail or the view filtered to what the line counts. Beside them (160 columns) or below (80):
every ClusterQueue on one line, most trouble first (GPU quota bar with the borrowed part,
pending, admitted, oldest wait, pending over time), and the fleet's GPU heatmap in miniature.

The problems come from `views.triage.TriageModel`, kept from the store's change sets (the keys
that changed since the last refresh), never by walking every workload; the heatmap is drawn
again only when GPU readings or nodes changed, at most every few seconds. The problem list keeps
its options: a refresh replaces the prompts of lines whose text moved, and fills the list again
only when lines come, go or change places. Its lines are cut for the columns the list draws them
in (scrollbar or not), and built again when those move.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container, Vertical
from textual.geometry import Region
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from kueuetop.kueue.cluster_queue import ClusterQueue
from kueuetop.kueue.config import KueueConfig
from kueuetop.kueue.core import GPU_RESOURCE
from kueuetop.store import Changes
from kueuetop.store import events as K
from kueuetop.tui.context import ViewContext
from kueuetop.tui.heatmap import fleet_heatmap
from kueuetop.tui.messages import JumpTo, OpenWorkload, ShowYaml
from kueuetop.tui.quota_bar import quota_bar
from kueuetop.tui.sparkline import sparkline
from kueuetop.tui.views.base import View
from kueuetop.tui.views.fleet import pools_map
from kueuetop.views.rows import age
from kueuetop.views.safe_text import clean
from kueuetop.views.triage import Problem, QueueLine, Target, TriageModel

SIDE_BY_SIDE = 140  # columns from which problems and queues sit side by side (each keeps 60 or more)
SIDE_WIDTH = 78  # the queues and heatmap column beside the problems (its left padding included)
HEATMAP_EVERY = 5.0  # seconds between two drawings of the heatmap while GPU readings stream in
_MAX_DIRTY = 50_000  # more changed keys than this between refreshes: rebuild the model
CATEGORY_TITLES = {"broken": "Broken", "not running": "Admitted but not running", "waiting": "Waiting too long",
                   "churn": "Churn (last 10 minutes)", "waste": "Waste"}
CATEGORY_STATE = {"broken": "evicted", "not running": "evicted", "waiting": "pending", "churn": "evicted",
                  "waste": "inactive"}
QUEUE_NAME_WIDTH = 22
BAR_WIDTH = 18
SPARK_WIDTH = 12
_WRAP_CONSOLE = Console(file=io.StringIO(), width=200, color_system=None)  # Text.wrap wants one


def gpu_quota(cq: ClusterQueue) -> tuple[float, float, float, float | None] | None:
    """(nominal, usage, reserved, borrowing limit) of the queue's GPUs over all its flavors."""
    nominal = 0.0
    limits: list[int | None] = []
    for g in cq.resource_groups:
        for fq in g.flavors:
            q = fq.resources.get(GPU_RESOURCE)
            if q is not None:
                nominal += q.nominal
                limits.append(q.borrowing_limit)
    if not limits:
        return None
    usage = sum(u.total for u in cq.flavors_usage if u.resource == GPU_RESOURCE)
    reserved = sum(u.total for u in cq.flavors_reservation if u.resource == GPU_RESOURCE)
    borrow = None if any(b is None for b in limits) else float(sum(b or 0 for b in limits))
    return nominal, float(usage), float(max(reserved, usage)), borrow


def queue_line(ctx: ViewContext, q: QueueLine, cq: Any, width: int,
               points: list[tuple[float, Any]] | None = None) -> Text:
    """`points`: the queue's (time, QueueCounts) history (read from the store when not given)."""
    name = clean(q.name)
    name = name if len(name) <= QUEUE_NAME_WIDTH else name[:QUEUE_NAME_WIDTH - 1] + ctx.glyphs.ellipsis
    t = Text(no_wrap=True, overflow="ellipsis")
    colour = "evicted" if q.status.startswith("Stopped") else "inactive" if q.status.startswith("Inactive") else ""
    t.append(name.ljust(QUEUE_NAME_WIDTH) + " ", style=ctx.state_style(colour) if colour else "")
    quota = gpu_quota(cq) if isinstance(cq, ClusterQueue) else None
    if quota is not None:
        nominal, usage, reserved, borrow = quota
        bar = quota_bar(nominal, usage, BAR_WIDTH, reserved=reserved, borrowing_limit=borrow,
                        glyphs=ctx.glyphs, theme=ctx.theme)
        t.append_text(bar)
        t.append(" " * max(0, BAR_WIDTH - len(bar.plain)))
    else:
        t.append("no GPU quota".ljust(BAR_WIDTH))
    t.append(f" {q.pending:>5} ", style=ctx.state_style("pending") if q.pending else "")
    t.append(f"{q.admitted:>5} ", style=ctx.state_style("admitted") if q.admitted else "")
    t.append(f"{age(q.oldest_wait):>6} ")
    if width - len(t.plain) >= SPARK_WIDTH:
        if points is None:
            points = ctx.store.queue_history.get(q.name)
        history = [float(c.pending) for _, c in points]
        top = max(history, default=0.0)
        t.append(sparkline(history, SPARK_WIDTH, hi=max(1.0, top), glyphs=ctx.glyphs),
                 style=ctx.state_style("pending"))
    if not q.status.startswith("Active") and q.status != "?":
        t.append(f" {clean(q.status)}", style=ctx.state_style(colour))
    return t


def queue_header(width: int) -> Text:
    head = "CLUSTERQUEUE".ljust(QUEUE_NAME_WIDTH) + " " + "GPU QUOTA".ljust(BAR_WIDTH) + "  PEND   ADM   WAIT"
    if width - len(head) >= SPARK_WIDTH + 1:
        head += " " + "PENDING".center(SPARK_WIDTH)
    return Text(head, style="bold", no_wrap=True, overflow="ellipsis")


def problem_prompt(ctx: ViewContext, p: Problem, width: int, lines: int = 1) -> Text:
    """The age of the oldest, then the problem, in at most `lines` lines of `width` (cut with an
    ellipsis: the detail screen has the rest)."""
    t = Text()
    t.append(f"{age(p.oldest) if p.oldest is not None else '':>5} ", style="dim")
    t.append(p.text, style=ctx.state_style(CATEGORY_STATE.get(p.category, "")) if p.severity >= 45 else "")
    t = _wrap_cut(t, width, lines, ctx.glyphs.ellipsis)
    t.no_wrap = lines == 1
    return t


def _wrap_cut(t: Text, width: int, lines: int, ellipsis: str) -> Text:
    """`t` in at most `lines` lines of at most `width` cells, broken at words, the last line cut
    with an ellipsis in its last cell when the text goes on. The lines are joined with newlines:
    the list draws them as they are, it never wraps them again (at another width, or at other
    words than were counted)."""
    if lines <= 1 or len(t.plain) <= width:
        return _cut(t, width, ellipsis)
    wrapped = t.wrap(_WRAP_CONSOLE, width, overflow="fold")
    if len(wrapped) > lines:
        plain, pos = t.plain, 0
        for line in wrapped[:lines - 1]:  # where the last line starts in `t`
            pos = plain.index(line.plain, pos) + len(line.plain)
        while plain[pos:pos + 1].isspace():
            pos += 1
        rest = t[pos:]
        wrapped = [*wrapped[:lines - 1], _cut(rest, width, ellipsis)]
    return Text("\n").join(wrapped)


def _cut(t: Text, room: int, ellipsis: str) -> Text:
    if len(t.plain) > room:
        t.truncate(max(1, room - 1), overflow="crop")
        t.append(ellipsis)
    return t


def prompt_lines(problems: list[Problem], width: int, height: int, most: int = 3) -> int:
    """Lines each problem may take: up to `most` while every problem (and its category's title)
    still fits the height, else one."""
    titles = len({p.category for p in problems}) + 1  # and the summary line
    if titles + len(problems) > height:
        return 1
    # The lines each takes broken at words, as `problem_prompt` breaks them.
    full = [len(Text(f"{'':>5} {p.text}").wrap(_WRAP_CONSOLE, width, overflow="fold")) for p in problems]
    for lines in range(most, 1, -1):
        if titles + sum(min(lines, n) for n in full) <= height:
            return lines
    return 1


def _signature(t: Text) -> tuple[Any, ...]:
    """What a prompt draws: equal signatures, the same line on screen."""
    return t.plain, tuple(t.spans), t.style


class ProblemList(OptionList):
    """The ranked problems; `enter` opens a line's evidence.

    `on_width` is called with the columns a line has (`line_width`) whenever they change: on a
    resize, and when the vertical scrollbar appears or goes (which is no resize). The prompts are
    cut for those columns, so they are built again then."""

    DEFAULT_CSS = """
    ProblemList { border: none; padding: 0; background: $surface; }
    ProblemList:focus { border: none; }
    """

    # A cursor move repaints the two lines it concerns, not the whole board: OptionList repaints
    # the widget (and so every line of the screen region under it) on each change of `highlighted`,
    # which on a tall terminal cost a key more than a 60 Hz frame.
    highlighted: reactive[int | None] = reactive(None, repaint=False)

    def __init__(self, *args: Any, on_width: Callable[[int], None] | None = None, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.on_width = on_width
        self._drawn_width = 0

    @property
    def line_width(self) -> int:
        """Columns a line is drawn in: the content region, less the scrollbar while it shows
        (0 before the first layout)."""
        return self.scrollable_content_region.width

    def settle(self) -> None:
        """Measure the lines now (OptionList does it when it paints): a scrollbar the new lines
        bring appears here, while the caller can still build them again for the narrower list."""
        self._update_lines()

    def watch_highlighted(self, old: int | None, new: int | None) -> None:
        scroll_y = self.scroll_offset.y
        super().watch_highlighted(new)  # scrolls to it (a scroll repaints everything) and posts the event
        if self.scroll_offset.y != scroll_y:
            return
        try:
            first_line, heights = self._index_to_line, self._heights  # OptionList's line layout
            regions = [Region(0, first_line[i] - scroll_y, self.size.width, heights[i])
                       for i in (old, new) if i is not None and i in first_line]
        except (AttributeError, KeyError):  # another Textual's internals: repaint it all
            regions = []
        self.refresh(*regions) if regions else self.refresh()

    def watch_show_vertical_scrollbar(self) -> None:
        self._width_moved()

    def _size_updated(self, size: Any, virtual_size: Any, container_size: Any, layout: bool = True) -> bool:
        # Called by the layout, before the frame is painted: lines built again here are the
        # ones painted (a Resize event would come after a frame at the old width).
        resized = super()._size_updated(size, virtual_size, container_size, layout)
        self._width_moved()
        return resized

    def _width_moved(self) -> None:
        width = self.line_width
        if not width or width == self._drawn_width:
            return
        self._drawn_width = width
        # OptionList keeps each option's lines and heights whatever the width: a scrollbar that
        # appears (no resize) would leave lines wrapped for the wider region.
        self._clear_caches()
        if self.on_width is not None:
            self.on_width(width)


class OverviewView(View):
    VIEW = "overview"
    TITLE = "Overview"
    KINDS = frozenset({K.NODES, K.PODS, K.GPUS, K.WORKLOADS, K.CLUSTER_QUEUES, K.LOCAL_QUEUES, K.SOURCES,
                       K.RESOURCE_FLAVORS, K.ADMISSION_CHECKS, K.PROVISIONING_REQUESTS, K.EVENTS})
    DEFAULT_CSS = """
    OverviewView > #ov-body { layout: vertical; height: 1fr; overflow-y: auto; }
    OverviewView > #ov-body > ProblemList { height: auto; max-height: 60%; }
    OverviewView > #ov-body > #ov-side { height: auto; }
    OverviewView.-wide > #ov-body { layout: horizontal; overflow-y: hidden; }
    OverviewView.-wide > #ov-body > ProblemList { width: 1fr; height: 1fr; max-height: 100%; }
    OverviewView.-wide > #ov-body > #ov-side { width: 78; height: 1fr; padding: 0 0 0 1; }
    OverviewView #ov-queues { height: auto; }
    OverviewView #ov-heatmap { height: auto; margin: 1 0 0 0; }
    """
    can_focus = True  # the app focuses the view; the view hands focus to its problem list

    def __init__(self, ctx: ViewContext, **kw: Any) -> None:
        super().__init__(ctx, **kw)
        config = ctx.extra.get("kueue_config")
        # Explain runs off the UI thread (`_explain_ahead`): on a big cluster one costs a pass
        # over every workload's usage.
        self.model = TriageModel(ctx.store, config=config if isinstance(config, KueueConfig) else None,
                                 idle_below=ctx.idle_below, explain_budget=0)
        self._explaining = False
        self.problems: list[Problem] = []
        self._targets: dict[str, Target] = {}
        self._lock = threading.Lock()
        self._dirty: dict[str, set[Any]] = {}
        self._full = True
        self._unsubscribe: Any = None
        self._heatmap_at = 0.0
        self._heatmap_dirty = True
        self._heatmap_size = (0, 0)
        self._queue_lines = 0
        self._queue_texts: dict[str, tuple[tuple[Any, ...], Text]] = {}
        self._queue_shown: tuple[Any, ...] = ()  # what the queue panel shows (text and styles)
        self._stale_shown: tuple[tuple[str, str, str], ...] | None = None  # stale sources on the board
        self._prompt_width = 0  # columns the problem lines on the list were cut for
        self._laid_out_wide: bool | None = None  # the layout the list's size was measured in
        self._drawing = False  # the problem list is being filled (its width may move meanwhile)
        self._width_moved_while_drawing = False
        self._problems_shown: list[tuple[str, tuple[Any, ...]]] = []  # (option id, text and styles) on the list
        self.problem_rebuilds = 0  # times the problem list was emptied and filled again

    def set_config(self, config: KueueConfig | None) -> None:
        """Kueue's configuration arrived (read after start): PodsReady timeouts can be told."""
        self.model.config = config
        if self.is_mounted:
            self.ctx.defer(("config", self.VIEW), self._refresh_if_shown)

    def compose(self) -> ComposeResult:
        yield Static(self.TITLE, classes="view-title")
        with Container(id="ov-body"):
            yield ProblemList(id="ov-problems", on_width=self._problem_width_moved)
            with Vertical(id="ov-side"):
                yield Static("", id="ov-queues")
                yield Static("", id="ov-heatmap")

    def on_mount(self) -> None:
        # Stage -1: the keys are recorded before the app is told to redraw.
        self._unsubscribe = self.ctx.store.subscribe(self._record, stage=-1)

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _record(self, changes: Changes) -> None:  # writer threads
        with self._lock:
            if self._full:
                return
            for kind, keys in changes.keys.items():
                if kind in self.KINDS:
                    self._dirty.setdefault(kind, set()).update(keys)
            if sum(len(v) for v in self._dirty.values()) > _MAX_DIRTY:
                self._full, self._dirty = True, {}

    def _take(self) -> tuple[bool, dict[str, set[Any]]]:
        with self._lock:
            full, dirty = self._full, self._dirty
            self._full, self._dirty = False, {}
        return full, dirty

    def on_focus(self) -> None:
        # Reached by tab too: the keys belong to the problem list.
        self.query_one(ProblemList).focus()

    def focus(self, scroll_visible: bool = True) -> OverviewView:
        if self.is_mounted:
            self.query_one(ProblemList).focus(scroll_visible)
        return self

    # ------------------------------------------------------------ refresh
    def refresh_view(self) -> None:
        super().refresh_view()
        if not self.is_mounted:
            return
        now = self.ctx.now()
        full, dirty = self._take()
        stale = self._stale_sources(now)
        if not full and dirty and dirty.keys() <= {K.SOURCES} and stale == self._stale_shown:
            # A poll or a bookmark stamped a source's freshness (every few seconds): the status bar
            # shows that; the board changes only when a source turns stale or recovers.
            return
        self._stale_shown = stale
        self.model.update(None if full else dirty, now)
        if full or dirty.get(K.GPUS) or dirty.get(K.NODES):
            self._heatmap_dirty = True
        wide = self.size.width >= SIDE_BY_SIDE
        self.set_class(wide, "-wide")
        self.problems = self.model.problems(now)
        self._explain_ahead(now)
        self._show_problems(wide)
        self._show_queues(now, wide)
        self._show_heatmap(wide)

    def _stale_sources(self, now: float) -> tuple[tuple[str, str, str], ...]:
        return tuple((name, st.state.value, st.message) for name, st in sorted(self.ctx.store.sources().items())
                     if st.stale(now))

    def _show_problems(self, wide: bool) -> None:
        lst = self.query_one(ProblemList)
        relaid = wide != self._laid_out_wide  # the list's size is still the other layout's
        self._laid_out_wide = wide
        width = lst.line_width
        if relaid or not width:
            # Until the next layout: the list's width without a scrollbar; the layout corrects it
            # (`on_width`) before the frame is painted.
            width = self.size.width - SIDE_WIDTH if wide else self.size.width
        self._drawing = True
        try:
            for _ in range(3):  # a scrollbar appears or goes at most once each way
                self._width_moved_while_drawing = False
                self._fill_problems(lst, wide, max(20, width))
                lst.settle()
                if not self._width_moved_while_drawing or lst.line_width in (0, width):
                    break
                width = lst.line_width
        finally:
            self._drawing = False

    def _problem_width_moved(self, width: int) -> None:
        if self._drawing:
            self._width_moved_while_drawing = True
        elif self.is_mounted and width != self._prompt_width and self._laid_out_wide is not None:
            self._show_problems(self._laid_out_wide)

    def _fill_problems(self, lst: ProblemList, wide: bool, width: int) -> None:
        """The problem lines, cut for `width` columns. Lines already on the list stay: a line whose
        text moved gets its new prompt in place, and the list is filled again only when lines
        come, go or change places (which moves the highlight to the same problem's line)."""
        self._prompt_width = width
        # Wide, the problems have the height to themselves: long ones may take a few lines.
        lines = prompt_lines(self.problems, width, self.size.height - 1) if wide else 1
        wanted: list[tuple[str, Text, bool]] = []  # (option id, prompt, disabled)
        self._targets = {}
        category = None
        for p in self.problems:
            if p.category != category:
                category = p.category
                n = sum(1 for q in self.problems if q.category == category)
                wanted.append((f"c-{category}", Text(f"{CATEGORY_TITLES.get(category, category)} ({n})", style="bold"),
                               True))
            # Named after the problem, not its rank: its line keeps the highlight when others move.
            oid = base = f"p-{p.kind}-{p.cluster_queue}"
            k = 1
            while oid in self._targets:
                k += 1
                oid = f"{base}-{k}"
            self._targets[oid] = p.target
            wanted.append((oid, problem_prompt(self.ctx, p, width, lines), False))
        if not self.problems:
            wanted.append(("nothing", Text("Nothing wrong right now.", style=self.ctx.state_style("admitted")), True))
        wanted.append(("summary", _cut(self._summary(), width, self.ctx.glyphs.ellipsis), True))
        shown = [(oid, _signature(prompt)) for oid, prompt, _ in wanted]
        if [oid for oid, _ in shown] == [oid for oid, _ in self._problems_shown] and lst.option_count == len(shown):
            relayout = False
            for i, ((_, sig), (_, old)) in enumerate(zip(shown, self._problems_shown, strict=True)):
                if sig != old:
                    relayout |= sig[0].count("\n") != old[0].count("\n")
                    lst.replace_option_prompt_at_index(i, wanted[i][1])
            if relayout:  # a line took more or fewer rows: the list's height may follow
                lst.refresh(layout=True)
            self._problems_shown = shown
            return
        self.problem_rebuilds += 1
        highlighted = lst.highlighted_option.id if lst.highlighted_option is not None else None
        options = [Option(prompt, id=oid, disabled=disabled) for oid, prompt, disabled in wanted]
        lst.clear_options()
        lst.add_options(options)
        self._problems_shown = shown
        index = None
        if highlighted is not None:
            index = next((i for i, o in enumerate(options) if o.id == highlighted), None)
        if index is None:
            index = next((i for i, o in enumerate(options) if not o.disabled), None)
        lst.highlighted = index

    def _summary(self) -> Text:
        pending, admitted, requested, total = self.model.summary()
        t = Text(no_wrap=True, overflow="ellipsis")
        t.append("Workloads ", style="bold")
        t.append(f"{pending} waiting", style=self.ctx.state_style("pending"))
        t.append(", ")
        t.append(f"{admitted} admitted", style=self.ctx.state_style("admitted"))
        t.append(f", GPUs {requested}/{total} requested by placed pods")
        return t

    def _show_queues(self, now: float, wide: bool) -> None:
        body = self.query_one("#ov-queues", Static)
        width = 76 if wide else max(40, self.size.width - 2)
        lines = self.model.queue_lines(now)
        if not lines:
            body.update(Text("no ClusterQueues seen", style="dim"))
            self._queue_shown, self._queue_lines = (), 1
            return
        # Wide: as many as the side's height leaves above a heatmap of at least 8 lines.
        room = max(3, (self.size.height - 12) if wide else max(len(lines), 3))
        store = self.ctx.store
        out = [queue_header(width)]
        kept: dict[str, tuple[tuple[Any, ...], Text]] = {}
        for q in lines[:room]:
            cq = store.get(K.CLUSTER_QUEUES, ("", q.name))
            # A line is drawn again only when its queue, its counts or its history moved.
            points = store.queue_history.get(q.name)
            sig = (q.pending, q.admitted, age(q.oldest_wait), q.status, width,
                   getattr(getattr(cq, "meta", None), "resource_version", None),
                   len(points), points[-1][0] if points else None)
            old = self._queue_texts.get(q.name)
            text = old[1] if old is not None and old[0] == sig else queue_line(self.ctx, q, cq, width, points)
            kept[q.name] = (sig, text)
            out.append(text)
        self._queue_texts = kept
        if len(lines) > room:
            out.append(Text(f"{self.ctx.glyphs.ellipsis} {len(lines) - room} more ClusterQueues (3: all)", style="dim"))
        shown = tuple((t.plain, tuple(t.spans), t.style) for t in out)
        if shown == self._queue_shown:
            return  # nothing on the panel moved
        # The same number of lines keeps the panel's height: no layout, only a repaint.
        same_height = len(out) == self._queue_lines
        self._queue_lines = len(out)
        self._queue_shown = shown
        body.update(Text("\n", no_wrap=True, overflow="ellipsis").join(out), layout=not same_height)

    def _show_heatmap(self, wide: bool) -> None:
        body = self.query_one("#ov-heatmap", Static)
        width = 76 if wide else max(20, self.size.width - 2)
        # Wide: the side's height under the queues (title line, margin, heatmap title).
        height = max(4, self.size.height - 1 - self._queue_lines - 2) if wide else 8
        size = (width, height)
        if size == self._heatmap_size and not (
                self._heatmap_dirty and time.monotonic() - self._heatmap_at >= HEATMAP_EVERY):
            return
        self._heatmap_dirty = False
        self._heatmap_at = time.monotonic()
        self._heatmap_size = size
        samples = list(self.ctx.store.gpus().values())
        head = Text(f"GPU fleet ({len(samples)} GPUs, utilization; 8: heatmap)", style="bold")
        if not samples:
            body.update(Text("\n").join([head, Text("no GPU metrics (no GPU source)", style="dim")]))
            return
        hm = fleet_heatmap(samples, width, height, theme=self.ctx.theme, glyphs=self.ctx.glyphs,
                           pool_of=pools_map(self.ctx), idle_below=self.ctx.idle_below)
        body.update(Text("\n", no_wrap=True).join([head, hm.text]))

    # ------------------------------------------------------------ explain, off the UI thread
    class ExplainsReady(Message):
        """The headlines the last refresh wanted are computed."""

    def _explain_ahead(self, now: float) -> None:
        keys = self.model.wanted_explains()
        if not keys or self._explaining:
            return
        self._explaining = True
        self.run_worker(lambda: self._explain(keys, now), thread=True, group="triage-explain", exit_on_error=False)

    def _explain(self, keys: list[tuple[str, str]], now: float) -> None:  # worker thread
        try:
            for key in keys:
                if not self.display:
                    # Switched away: the rest are wanted again when the board is next shown, and
                    # the CPU goes to what is on screen (and to the forecast's process).
                    break
                deadline = time.monotonic() + 1.0
                # A change on its way to the screen, or keys, first: this thread would take the
                # interpreter from them.
                while (self.ctx.busy() or self.ctx.keys_active()) and time.monotonic() < deadline:
                    time.sleep(0.005)
                self.model.explain_now(key, now)
        finally:
            self.post_message(self.ExplainsReady())

    def on_overview_view_explains_ready(self, message: ExplainsReady) -> None:
        message.stop()
        self._explaining = False
        # Input first: the headlines wait while keys come (a redraw here would hold the next key).
        self.ctx.defer(("explains", self.VIEW), self._refresh_if_shown)

    def _refresh_if_shown(self) -> None:
        if not self.is_mounted:
            return
        if self.display:
            self.refresh_view()
        else:
            self.dirty = True  # shown again: the switch refreshes it

    # ------------------------------------------------------------ enter
    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        target = self._targets.get(event.option.id or "")
        if target is not None:
            self.open_target(target)

    def open_target(self, target: Target) -> None:
        if target.workload is not None:
            self.post_message(OpenWorkload(target.workload))
        elif target.view:
            self.post_message(JumpTo(target.view, target.filter))
        elif target.kind and target.key is not None:
            self.post_message(ShowYaml(target.kind, target.key))
