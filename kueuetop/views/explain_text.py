"""`explain` as lines of text: the verdict first, then the evidence behind it."""

from __future__ import annotations

import time

from kueuetop.admission.explain import Explanation
from kueuetop.kueue.quantity import format_resource_value
from kueuetop.views.safe_text import clean


def _requests(reqs: dict[str, int]) -> str:
    return " ".join(f"{r}={format_resource_value(r, v)}" for r, v in sorted(reqs.items()))


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def explain_lines(ex: Explanation, max_ahead: int = 10) -> list[str]:
    ns, name = ex.workload
    out = [f"{clean(ns)}/{clean(name)}: {clean(ex.verdict)}"]
    if ex.state is not None:
        st = ex.state
        detail = f" ({clean(st.reason)})" if st.reason else ""
        out.append(f"  state: {st.phase.value}{detail}" + (f": {clean(st.message)}" if st.message else ""))
    if ex.cluster_queue:
        pos = []
        if ex.position_in_cluster_queue is not None:
            pos.append(f"#{ex.position_in_cluster_queue + 1} in ClusterQueue")
        if ex.position_in_local_queue is not None:
            pos.append(f"#{ex.position_in_local_queue + 1} in LocalQueue")
        out.append(f"  ClusterQueue {clean(ex.cluster_queue)}" + (": " + ", ".join(pos) if pos else ""))
    if ex.backoff_until is not None:
        out.append(f"  backoff until {_when(ex.backoff_until)}")
    for c in ex.checks:
        out.append(f"  admission check {clean(c.name)}: {clean(c.state)}" + (f": {clean(c.message)}" if c.message else ""))
    if ex.attempts:
        out.append("  flavors tried:")
        for pod_set, a in ex.attempts:
            head = f"    {clean(pod_set)} → {clean(a.flavor)}: "
            if a.mismatch:
                out.append(head + f"not eligible ({clean(a.mismatch)})")
                continue
            parts = []
            for rf in a.resources:
                need = rf.earlier + rf.requested
                txt = (f"{rf.resource} {format_resource_value(rf.resource, need)} of "
                       f"{format_resource_value(rf.resource, rf.available)} available")
                if rf.mode != "Fit":
                    short = max(0, need - rf.available)
                    txt += f", {format_resource_value(rf.resource, short)} short"
                    if rf.limited_by:
                        txt += f" (limited by {rf.limited_by})"
                parts.append(txt)
            mode = a.mode + (f"/{a.preemption}" if a.preemption else "")
            out.append(head + f"{mode}; " + "; ".join(parts))
    if ex.ahead:
        out.append(f"  ahead of it ({len(ex.ahead)}):")
        for e in ex.ahead[:max_ahead]:
            out.append(f"    {clean(e.workload[0])}/{clean(e.workload[1])}  priority {e.priority}  {_requests(dict(e.requests))}")
        if len(ex.ahead) > max_ahead:
            out.append(f"    … {len(ex.ahead) - max_ahead} more")
    return out
