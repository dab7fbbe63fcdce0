"""A forecast's answer as people read it: "~14m (9m–22m)", "never: …", and the sentence behind it.

One wording for the Workloads and LocalQueues columns, the detail screen and `kueuetop forecast`:
a range rather than a false exact time (the runtimes behind it are estimates), the time relative
to now, and what the range rests on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kueuetop.admission.forecast_result import Forecast, RuntimeEstimate, WorkloadForecast
from kueuetop.kueue.workload import Workload
from kueuetop.store import Store
from kueuetop.store import events as K
from kueuetop.views.ages import age_text

Key = tuple[str, str]

NOW_WITHIN = 5.0  # seconds: a start this close is "now" (one scheduling instant, give or take)


def _in(seconds: float) -> str:
    return "now" if seconds < NOW_WITHIN else age_text(seconds)


def eta_range(wf: WorkloadForecast, now: float) -> tuple[float, float, float] | None:
    """(earliest, expected, latest) seconds from `now`, each ≥ 0; None when it has no start."""
    if wf.start is None:
        return None
    exp = max(0.0, wf.start - now)
    lo = max(0.0, (wf.earliest if wf.earliest is not None else wf.start) - now)
    hi = max(0.0, (wf.latest if wf.latest is not None else wf.start) - now)
    return min(lo, exp), exp, max(hi, exp)


def eta_cell(wf: WorkloadForecast | None, now: float, *, complete: bool = True, horizon: float | None = None) -> str:
    """The ETA column: "~14m (9m–22m)", "now", "never", ">45m" (not placed before the forecast's
    `horizon`, where an incomplete run stopped), "beyond" (the same, horizon unknown) or "-"."""
    if wf is None:
        return "-"
    r = eta_range(wf, now)
    if r is None:
        if wf.never:
            return "never"
        if complete:
            return "-"
        return f">{age_text(horizon - now)}" if horizon is not None and horizon > now else "beyond"
    lo, exp, hi = r
    if hi < NOW_WITHIN:
        return "now"
    if age_text(lo) == age_text(hi):
        return f"~{_in(exp)}"
    return f"~{_in(exp)} ({_in(lo)}–{_in(hi)})"


def eta_sort(wf: WorkloadForecast | None, now: float) -> float | None:
    """Sort value: seconds to the expected start; never after every time; None: no forecast."""
    if wf is None:
        return None
    if wf.start is None:
        return float("inf")
    return max(0.0, wf.start - now)


def _names(keys: Sequence[Key], limit: int = 3) -> str:
    shown = [f"{ns}/{name}" for ns, name in keys[:limit]]
    more = len(keys) - len(shown)
    text = " and ".join(shown) if len(shown) <= 2 else ", ".join(shown[:-1]) + " and " + shown[-1]
    return f"{text} and {more} more" if more > 0 else text


POD_WAIT_SHOWN = 30.0  # seconds: a shorter wait for nodes is not worth a word


def eta_sentence(wf: WorkloadForecast | None, forecast: Forecast | None, now: float) -> str:
    """The detail screen's line: "expected to start in ~14m (9m–22m) when team-a/train-3 and
    team-b/eval-1 finish; basis: 12 finished runs of this shape in team-a/lq-a; forecast 8s old"."""
    if forecast is None:
        return "no forecast yet"
    age = f"forecast {age_text(now - forecast.at)} old"
    if wf is None:
        return f"not in the forecast (not pending when it ran); {age}"
    if wf.start is None:
        if wf.never:
            return f"never starts as the cluster stands: {wf.never}; {age}"
        return f"not admitted within the forecast's horizon ({age_text(forecast.horizon - forecast.at)}); {age}"
    cell = eta_cell(wf, now)
    head = "expected to start now" if cell == "now" else f"expected to start in {cell}"
    parts = [head]
    if wf.after:
        parts[0] += f" when {_names(list(wf.after))} finish"
    if wf.preempts:
        parts.append(f"by preempting {_names(list(wf.preempts))}")
    if forecast.pods_placed and wf.pods_start is not None and wf.pods_start - wf.start >= POD_WAIT_SHOWN:
        parts.append(f"its pods wait {age_text(wf.pods_start - wf.start)} more for nodes")
    bases = eta_basis(wf, forecast)
    if bases:
        parts.append("basis: " + bases)
    parts.append(age)
    if forecast.pods_note:
        parts.append(forecast.pods_note)  # whether the pods were taken to wait for nodes, and why not
    return "; ".join(parts)


def eta_basis(wf: WorkloadForecast, forecast: Forecast) -> str:
    """What the ETA rests on: the runtime bases of the workloads it waits for, else its own."""
    return _bases(forecast.runtimes, list(wf.after) or [wf.key])


def _bases(runtimes: Mapping[Key, RuntimeEstimate], keys: Sequence[Key]) -> str:
    """The runtime bases of the workloads it waits for, each once."""
    seen: list[str] = []
    for k in keys:
        est = runtimes.get(k)
        if est is not None and est.basis and est.basis not in seen:
            seen.append(est.basis)
    return "; ".join(seen[:2])


def forecast_of(store: Store, key: Key) -> tuple[Forecast | None, WorkloadForecast | None]:
    """The store's latest forecast and this workload's line in it."""
    f = store.forecast()
    if not isinstance(f, Forecast):
        return None, None
    return f, f.workloads.get(key)


def next_admissions(store: Store) -> dict[Key, WorkloadForecast]:
    """Per LocalQueue (namespace, name): its pending workload the store's latest forecast admits first."""
    out: dict[Key, WorkloadForecast] = {}
    forecast = store.forecast()
    if not isinstance(forecast, Forecast):
        return out
    for key, wf in forecast.workloads.items():
        if wf.start is None:
            continue
        wl = store.get(K.WORKLOADS, key)
        if not isinstance(wl, Workload):
            continue
        lq = (wl.namespace, wl.queue_name)
        best = out.get(lq)
        if best is None or (best.start is not None and wf.start < best.start):
            out[lq] = wf
    return out
