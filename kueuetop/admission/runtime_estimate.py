"""How long each running and pending Workload will run once admitted, with the reason shown.

The forecast needs a runtime for every workload it runs forward; a number without its basis
would be a false exact time, so each estimate is a range (optimistic / expected / pessimistic)
and says where it comes from. In order:

1. **History** of finished runs (`store/run_history.py`, handed in as `RunSamples`), from the
   narrowest of these tiers that knows `min_samples` runs: the same shape from the same
   LocalQueue; the same shape in any queue of the cluster (what a job of these pods takes says
   more than what other shapes take in its own queue, where notebooks, data preparation and
   training run side by side); the same ClusterQueue, any shape. When none knows that many,
   the narrowest that has any finished run; when none has any (a new queue, or one whose first
   jobs still run), the recent runs of the whole cluster, any queue: what this cluster's jobs
   take, rather than a default that knows nothing of it. From the n runtimes: expected = median;
   optimistic/pessimistic = p10/p90 (linear interpolation) pushed out from the median by
   k = 1 + 1/√n, and at least 0.5/√n × the median away from it (p10/p90 of a few runs
   understate the spread: one run gives ±50 %).
   A tier's running workloads (of its scope: shape and LocalQueue, shape, ClusterQueue, or the
   cluster) are runs still going and count as runs known: once one has outlasted a finished
   run it counts as "longer than it has run so far", and the quantiles are Kaplan–Meier's
   (`km_quantiles`); finished runs alone are the short ones early on. When the runs still going
   outlast half of all, or none has finished, the median lies past the data, and the estimate
   is `past_the_data` of the longest run so far L (Gott's "delta t" argument: L, 2L, 10L).
2. **Upper bounds**, which cap the pessimistic end (and the expected value) and, when no run is
   known, are the estimate (expected = pessimistic = bound, optimistic = `bound_low` × bound):
   - the Workload's `spec.maximumExecutionTimeSeconds` less its `accumulatedPastExecutionTime`:
     Kueue deactivates the workload when admitted time reaches it (workload_controller.py);
   - the `kueue.x-k8s.io/max-exec-time-seconds` label of the owner Job (or of the Workload, which
     carries the Job's labels only when configured to copy them) when the spec has none: Kueue's
     jobframework NewWorkload sets spec.maximumExecutionTimeSeconds from it
     (MaximumExecutionTimeSecondsForObject: strconv.ParseInt(value, 10, 32), ignored on error or
     when ≤ 0); a value Kueue would ignore is ignored here too, with a note;
   - the owner Job's `spec.activeDeadlineSeconds`: the Job controller fails the Job that long
     after its startTime, which is reset when a suspended Job resumes (Kubernetes Job docs,
     "Suspending a Job"), i.e. counted from Kueue's admission. The store keeps no Jobs: the caller
     hands their limits in (`JobLimits`, keyed by the Job's namespace/name, `owner_job`). A
     deadline that is not positive is ignored with a note.
3. A stated **default** (1 h unless configured) when nothing is known.

Running workloads: the estimate stays the total runtime from admission (the forecast subtracts
the time already run), conditioned on that time e: only the runs longer than e count (the runtime
distribution given it has lasted e); when no finished run lasted that long but runs still going
did, the longest of those is the expected value; when none did, or the bound/default is already
passed, the workload is taken to end soon: expected = e + 10 % of e or of a typical run (the
median of the runs it outlived), whichever is more, pessimistic the same with 50 %; with no run
known, e + max(60 s, 10 % of e) and e + max(60 s, 50 % of e). The longest of runs none of which
has finished is `past_the_data` of its own e. Every end of the range is at least e, so a
remaining time is never negative.

Bad input never raises: what was ignored is in the estimate's `note`.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
import statistics
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from kueuetop.admission.forecast_result import RuntimeEstimate, WorkloadKey
from kueuetop.kueue.run_times import admitted_at, pods_ready_at
from kueuetop.kueue.snapshot import ClusterSnapshot
from kueuetop.kueue.workload import Workload

MAX_EXEC_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
_INT32_MAX = 2**31 - 1
_GO_INT = re.compile(r"[+-]?[0-9]+")  # what strconv.ParseInt(s, 10, 32) accepts (no spaces, no "_")


@dataclass(frozen=True, slots=True)
class JobLimits:
    """What a Workload's owner Job says about how long it may run (read by the caller: the store
    keeps no Jobs)."""

    active_deadline_seconds: float | None = None  # spec.activeDeadlineSeconds
    max_exec_label: str | None = None  # the raw value of the kueue.x-k8s.io/max-exec-time-seconds label


@dataclass(frozen=True, slots=True)
class EstimateRules:
    default_runtime: float = 3600.0  # when nothing is known
    default_low: float = 0.25  # the default's optimistic end, × default_runtime
    default_high: float = 4.0  # its pessimistic end
    bound_low: float = 0.25  # a bound alone: optimistic = bound × this
    min_samples: int = 3  # runs a history tier needs before the next, wider one is not consulted
    cluster_queue_runs: int = 200  # the most recent runs of a ClusterQueue that count
    shape_runs: int = 200  # the most recent runs of one shape in the whole cluster that count
    cluster_runs: int = 200  # the most recent runs of the cluster that count (the last tier)


class RunSamples(Protocol):
    """The finished runs the estimates read (store/run_history.RunHistory is one)."""

    def shape_of(self, wl: Workload) -> str: ...

    def of_shape(self, namespace: str, local_queue: str, shape: str,
                 cluster_queue: str | None = None) -> Sequence[float]: ...

    def of_shape_anywhere(self, shape: str, limit: int | None = ...) -> Sequence[float]: ...

    def of_cluster_queue(self, cluster_queue: str, limit: int | None = ...) -> Sequence[float]: ...

    def of_cluster(self, limit: int | None = ...) -> Sequence[float]: ...


def owner_job(wl: Workload) -> tuple[str, str] | None:
    """(namespace, name) of the batch/v1 Job that owns the Workload (its controller reference)."""
    o = wl.meta.controller()
    if o is None or o.kind != "Job" or not o.api_version.startswith("batch/"):
        return None
    return (wl.namespace, o.name)


def _dur(seconds: float) -> str:
    """format_duration of the whole seconds, without its checks and milliseconds: every running
    workload's basis names its time so far, 20,000 of them per forecast of `large`."""
    s = max(0, round(seconds))
    if not s:
        return "0s"
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return (f"{h}h" if h else "") + (f"{m}m" if m else "") + (f"{sec}s" if sec else "")


# ---------------------------------------------------------------------------------------- bounds
def _label_limit(raw: str) -> int | None:
    """jobframework's parse: base-10 int32, > 0; None when Kueue would ignore it."""
    if not _GO_INT.fullmatch(raw):
        return None
    v = int(raw)
    return v if 0 < v <= _INT32_MAX else None


def upper_bound(wl: Workload, job: JobLimits | None = None) -> tuple[float | None, str, str]:
    """(bound in seconds, what it is, what was ignored): the tightest hard limit on this run."""
    found: list[tuple[float, str]] = []
    notes: list[str] = []
    past = max(0, wl.accumulated_execution_seconds)
    limit = wl.maximum_execution_time_seconds
    label = job.max_exec_label if job is not None and job.max_exec_label is not None \
        else wl.meta.labels.get(MAX_EXEC_LABEL)
    if label is not None and _label_limit(label) is None:
        notes.append(f"label {MAX_EXEC_LABEL}={label[:40]!r} is not a positive integer: ignored")
    if limit is None and label is not None and _label_limit(label) is not None:
        limit = _label_limit(label)
        source = f"label {MAX_EXEC_LABEL} {limit}"
    else:
        source = f"maximumExecutionTimeSeconds {limit}"
    if limit is not None:
        if past:
            found.append((max(0.0, float(limit - past)), f"{source} less {_dur(past)} already run"))
        else:
            found.append((float(limit), source))
    deadline = job.active_deadline_seconds if job is not None else None
    if deadline is not None:
        if isinstance(deadline, bool) or not isinstance(deadline, (int, float)) \
                or not math.isfinite(deadline) or deadline <= 0:
            notes.append(f"Job activeDeadlineSeconds {deadline!r} is not positive: ignored")
        else:
            found.append((float(deadline), f"Job activeDeadlineSeconds {deadline:g}"))
    if not found:
        return None, "", "; ".join(notes)
    bound, text = min(found)
    return bound, text, "; ".join(notes)


# ---------------------------------------------------------------------------------------- history
def _quantile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default) of sorted `xs`."""
    pos = (len(xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def spread(samples: Sequence[float]) -> tuple[float, float, float]:
    """(optimistic, expected, pessimistic) from runtimes: median, p10/p90 widened for small n."""
    xs = sorted(samples)
    med = _quantile(xs, 0.5)
    return _widened(_quantile(xs, 0.1), med, _quantile(xs, 0.9), len(xs))


def _widened(p10: float, med: float, p90: float, n: int) -> tuple[float, float, float]:
    """p10/p90 pushed out from the median by k = 1 + 1/√n, and at least 0.5/√n × the median away
    from it: n runs understate the spread (one run gives ±50 %)."""
    k = 1 + 1 / math.sqrt(n)
    floor = med * 0.5 / math.sqrt(n)
    return max(0.0, med - max((med - p10) * k, floor)), med, med + max((p90 - med) * k, floor)


def past_the_data(longest: float) -> tuple[float, float, float]:
    """(optimistic, expected, pessimistic) of a runtime known only to be past `longest`, the
    longest run so far, none or too few of the runs having finished: Gott's "delta t" argument
    (Nature 363, 1993), a run met at a random moment of its life is as likely in its first half
    as in its second, so its total is 2× what it has run as likely as not and 10× at p90."""
    return longest, 2 * longest, 10 * longest


def _censored_spread(samples: Sequence[float], going: Sequence[float]) -> tuple[float, float, float, bool]:
    """(optimistic, expected, pessimistic, median reached) from finished runs and runs still going
    (`km_quantiles`), widened for few finished runs as `spread` is; a p90 past the data is taken
    at the longest run so far, its lower bound. When the runs still going outlast half of all,
    the median is past the data: `past_the_data` of the longest run so far."""
    lo_q, med_q, hi_q = km_quantiles(samples, going, (0.1, 0.5, 0.9))
    longest = max(samples[-1], going[-1])  # both sorted
    if med_q is None:
        _, exp, high = past_the_data(longest)
        return (lo_q if lo_q is not None else min(samples)), exp, high, False  # a p10 in the data stands
    # A p90 past the data is at least the longest run so far: that, widened as a p90 is.
    low, med, high = _widened(lo_q if lo_q is not None else med_q, med_q, hi_q if hi_q is not None else longest,
                              len(samples))
    return low, med, high, True


@dataclass(frozen=True, slots=True)
class _Tier:
    samples: tuple[float, ...]  # sorted
    what: str  # "finished runs of this shape in team-a/lq-a"
    censored: tuple[float, ...] = ()  # sorted: how long the running workloads of its scope have run so far


def km_curve(events: Sequence[float], censored: Sequence[float]) -> tuple[list[float], list[float]]:
    """The Kaplan–Meier distribution of runtimes from finished runs (`events`) and runs still
    going (`censored`: how long they have run), which counts a run still going as "longer than
    that" instead of leaving it out (the bias of finished runs alone: early on, only the short
    ones have finished): (F, t), the share of runs over after each distinct finish time t (F
    rising, t sorted)."""
    times = sorted(events)
    cens = sorted(censored)
    shares: list[float] = []
    at: list[float] = []
    surv = 1.0
    i = j = 0
    n = len(times) + len(cens)
    while i < len(times):
        t = times[i]
        while j < len(cens) and cens[j] < t:  # gone from the risk set before t
            j += 1
            n -= 1
        d = 0
        while i < len(times) and times[i] == t:
            d += 1
            i += 1
        surv *= 1 - d / n
        n -= d
        shares.append(1 - surv)
        at.append(t)
    return shares, at


def km_quantile(curve: tuple[list[float], list[float]], q: float) -> float | None:
    """The q-quantile of a `km_curve`; None when the data do not reach it (too many runs still
    going past the last finish)."""
    shares, at = curve
    k = bisect.bisect_left(shares, q - 1e-12)
    return at[k] if k < len(at) else None


def km_quantiles(events: Sequence[float], censored: Sequence[float], qs: Sequence[float]) -> list[float | None]:
    """Quantiles of the Kaplan–Meier distribution (`km_curve`), None where the data do not reach."""
    curve = km_curve(events, censored)
    return [km_quantile(curve, q) for q in qs]


def _clean(runs: Sequence[float]) -> tuple[float, ...]:
    return tuple(sorted(r for r in runs if isinstance(r, (int, float)) and math.isfinite(r) and r >= 0))


def _counted(t: _Tier) -> int:
    """How many runs a tier knows: its finished ones and its runs still going that count
    (`_estimate`: past its shortest finished run, or all of them when none has finished)."""
    first = t.samples[0] if t.samples else 0.0
    return len(t.samples) + len(t.censored) - bisect.bisect_left(t.censored, first)


def _thin(xs: list[float], share: float) -> tuple[float, ...]:
    """About `share` of sorted `xs`, spread evenly over them, the longest kept."""
    if share >= 1 or len(xs) < 2:
        return tuple(xs)
    n = len(xs)
    k = max(1, round(n * share))
    out = [xs[min(n - 1, int((i + 0.5) * n / k))] for i in range(k)]
    out[-1] = xs[-1]
    return tuple(out)


def _recent_tier(runs: Sequence[float], limit: int | None, what: str, going: Sequence[float]) -> _Tier:
    """The `limit` most recent of `runs` (finished, oldest first) and the scope's runs still going,
    thinned in the same share: Kaplan–Meier weighs the two against each other, and every run
    still going beside a tenth of the finished ones would read as most runs being still going."""
    kept = runs[-limit:] if limit is not None and limit < len(runs) else runs
    share = len(kept) / len(runs) if runs else 1.0
    return _Tier(_clean(kept), what, _thin(sorted(going), share))


def _history_tier(wl: Workload, cluster_queue: str | None, history: RunSamples | None,
                  rules: EstimateRules, shape: str | None,
                  cq_tiers: dict[str, _Tier] | None = None,
                  going: Callable[[str], Sequence[float]] = lambda scope: ()) -> _Tier | None:
    """The narrowest tier with `min_samples` runs, finished or still going (`going`: how long
    the running workloads of a tier's scope, "shape", "shape-anywhere", "cq" or "cluster", have
    run); else the narrowest with any; else the whole cluster's runs."""
    if history is None:
        return None
    tiers: list[_Tier] = []
    if shape is not None:
        runs = history.of_shape(wl.namespace, wl.queue_name, shape, cluster_queue)
        tiers.append(_recent_tier(runs, None, f"of this shape in {wl.namespace}/{wl.queue_name}", going("shape")))
        # What a job of these pods takes elsewhere says more than what other shapes take in its
        # own ClusterQueue: a queue runs notebooks, data preparation and training side by side.
        key = "shape:" + shape
        anywhere = cq_tiers.get(key) if cq_tiers is not None else None
        if anywhere is None:
            anywhere = _recent_tier(history.of_shape_anywhere(shape, None), rules.shape_runs,
                                    "of this shape in the cluster (any queue)", going("shape-anywhere"))
            if cq_tiers is not None:
                cq_tiers[key] = anywhere
        tiers.append(anywhere)
    if cluster_queue:
        cq_tier = cq_tiers.get(cluster_queue) if cq_tiers is not None else None
        if cq_tier is None:
            cq_tier = _recent_tier(history.of_cluster_queue(cluster_queue, None), rules.cluster_queue_runs,
                                   f"in ClusterQueue {cluster_queue} (any shape)", going("cq"))
            if cq_tiers is not None:
                cq_tiers[cluster_queue] = cq_tier
        tiers.append(cq_tier)
    for t in tiers:
        if _counted(t) >= rules.min_samples:
            return t
    found = next((t for t in tiers if t.samples), None)
    if found is None:
        cluster = cq_tiers.get("") if cq_tiers is not None else None  # "": no ClusterQueue is named so
        if cluster is None:
            cluster = _recent_tier(history.of_cluster(None), rules.cluster_runs,
                                   "in this cluster (any queue; none in this one yet)", going("cluster"))
            if cq_tiers is not None:
                cq_tiers[""] = cluster
        found = cluster if cluster.samples else None
    return found


def _runs(n: int) -> str:
    return f"{n} finished run{'s' if n != 1 else ''}"


# ---------------------------------------------------------------------------------------- estimate
def _conditioned(tier: _Tier, e: float) -> tuple[int, int]:
    """Where a run that has lasted `e` seconds stands among its tier's runs: (i, j), its
    distribution being that of the finished runs from i on (those longer than e) and the runs
    still going from j on. Runs still going count only once they have outlasted a finished one
    (before that they change nothing: Kaplan–Meier drops them from the risk set first)."""
    i = bisect.bisect_right(tier.samples, e) if e else 0
    j = bisect.bisect_right(tier.censored, e)
    if i < len(tier.samples):
        j = max(j, bisect.bisect_left(tier.censored, tier.samples[i]))
    return i, j


PAST_DATA_PLACES = 3  # places peers past the data are spread over (`_spread_over_peers`)


def _most_still_run(tier: _Tier, memo: dict | None) -> bool:
    """Kaplan–Meier over all of the tier's runs, finished and still going, does not reach their
    median: most of its runs are still going, longer than every finished one."""
    key = ("most", id(tier))
    found = memo.get(key) if memo is not None else None
    if found is None:
        found = bool(tier.censored) and km_quantiles(tier.samples, tier.censored, (0.5,))[0] is None
        if memo is not None:
            memo[key] = found
    return found


def _soon(elapsed: float, typical: float | None = None) -> tuple[float, float, float]:
    """A run past what was expected of it ends soon: within a tenth (expected) or a half
    (pessimistic) of what it has run, or of a typical run (`typical`: the median of the runs it
    outlived) when that is more — so 1-second jobs are not given a minute; with no run known,
    at least a minute."""
    floor_exp, floor_high = (60.0, 60.0) if typical is None else (0.1 * typical, 0.5 * typical)
    return elapsed, elapsed + max(floor_exp, 0.1 * elapsed), elapsed + max(floor_high, 0.5 * elapsed)


def _estimate(tier: _Tier | None, bound: float | None, bound_text: str, note: str, elapsed: float | None,
              rules: EstimateRules, memo: dict | None = None) -> RuntimeEstimate:
    e = elapsed if elapsed is not None and elapsed > 0 else 0.0
    if tier is not None:
        i, j = _conditioned(tier, e)
        samples, going = tier.samples[i:], tier.censored[j:]
        n_all = len(tier.samples)
        if going and not n_all:
            # None of its scope's runs has finished yet: all that is known is that they take
            # longer than the longest has run so far (Kaplan–Meier reaches no quantile).
            longest = going[-1]  # sorted
            low, exp, high = past_the_data(longest)
            basis = (f"none of {len(going)} runs {tier.what} has finished yet; the longest has run "
                     f"{_dur(longest)}: twice that expected")
        elif not samples and n_all and _most_still_run(tier, memo):
            # Past every finished run while most runs of its kind still run (Kaplan–Meier does
            # not reach their median): those that finished are the short ones, and nothing is
            # known of the rest — as when none has finished (on a young cluster, its long jobs).
            longest = max(e, going[-1]) if going else e  # sorted
            low, exp, high = past_the_data(longest)
            basis = (f"already ran {_dur(e)}, longer than all {_runs(n_all)} {tier.what}, but most runs "
                     f"still go on ({len(tier.censored)}): twice {_dur(longest)} expected")
        elif going and not samples:
            # It outlasted every finished run, but others have run longer still: it is no
            # outlier, and the longest of them is the least it is likely to take (runs started
            # together are a second apart: then it ends no sooner than one past all runs would).
            longest = going[-1]  # sorted
            low, exp, high = _soon(e, statistics.median(tier.samples))
            exp, high = max(exp, longest), max(high, 2 * longest)
            basis = (f"already ran {_dur(e)}, longer than all {_runs(n_all)} {tier.what}, and "
                     f"{len(going)} still running ran longer: at least {_dur(longest)}")
        elif samples and going:
            # Running workloads of one tier share these inputs by the thousand: one computation
            # per place of their elapsed time among the tier's runs.
            mkey = (id(tier), i, j)
            found = memo.get(mkey) if memo is not None else None
            if found is None:
                found = _censored_spread(samples, going)
                if memo is not None:
                    memo[mkey] = found
            low, exp, high, reached = found
            basis = (f"{_runs(n_all)} {tier.what}" if len(samples) == n_all else
                     f"{len(samples)} of {_runs(n_all)} {tier.what} that ran longer than its {_dur(e)} so far")
            basis += f" and {len(going)} still running"
            if not reached:
                basis += f": most still run, the longest {_dur(exp / 2)} so far, twice that expected"
        elif samples:
            low, exp, high = spread(samples)
            if len(samples) < n_all:
                basis = (f"{len(samples)} of {_runs(n_all)} {tier.what} that ran longer than its "
                         f"{_dur(e)} so far")
            else:
                basis = f"{_runs(n_all)} {tier.what}"
        else:
            if n_all:
                low, exp, high = _soon(e, statistics.median(tier.samples))
                basis = f"already ran {_dur(e)}, longer than all {_runs(n_all)} {tier.what}: expected to end soon"
            else:  # the longest of runs none of which has finished
                low, exp, high = past_the_data(e)
                basis = f"already ran {_dur(e)}, the longest of runs {tier.what}, none finished: twice that expected"
        if bound is not None and high > max(bound, e):
            basis += f"; capped at {bound_text}"
    elif bound is not None:
        low, exp, high = bound * rules.bound_low, bound, bound
        basis = f"{bound_text} (upper bound; no finished runs known)"
    else:
        d = rules.default_runtime
        low, exp, high = d * rules.default_low, d, d * rules.default_high
        basis = f"default {_dur(d)}: nothing known"
    if e and tier is None and exp <= e:
        # a bound or the default already passed while running: take it to end soon
        low, exp, high = _soon(e)
        basis += f"; already ran {_dur(e)}: expected to end soon"
    if bound is not None:
        cap = max(bound, e)  # past its bound, Kueue/the Job controller ends it now
        high = min(high, cap)
        exp = min(exp, cap)
    low = min(max(low, e), exp)
    high = max(high, exp)
    return RuntimeEstimate(expected=exp, optimistic=low, pessimistic=high, basis=basis,
                           upper_bound=bound, note=note)


def estimate_runtime(wl: Workload, *, cluster_queue: str | None = None, history: RunSamples | None = None,
                     job: JobLimits | None = None, elapsed: float | None = None,
                     rules: EstimateRules | None = None) -> RuntimeEstimate:
    """One workload's runtime (seconds from admission to finish). `elapsed`: seconds it has run
    in its current admission (None or 0 for a pending workload)."""
    rules = rules or EstimateRules()
    bound, bound_text, note = upper_bound(wl, job)
    shape = history.shape_of(wl) if history is not None else None
    tier = _history_tier(wl, cluster_queue, history, rules, shape)
    return _estimate(tier, bound, bound_text, note, elapsed, rules)


def _scopes(tkey: tuple[str, str, str, str | None]) -> dict[str, tuple[str, ...]]:
    """The keys of a workload's running peers per tier scope (what `_history_tier` asks `going` for), from its
    (namespace, LocalQueue, shape, ClusterQueue)."""
    return {"shape": ("shape", tkey[0], tkey[1], tkey[2], tkey[3] or ""), "shape-anywhere": ("shape-anywhere", tkey[2]),
            "cq": ("cq", tkey[3] or ""), "cluster": ("cluster",)}


def estimate_runtimes(snapshot: ClusterSnapshot, history: RunSamples | None, now: float, *,
                      jobs: Mapping[tuple[str, str], JobLimits] | None = None,
                      rules: EstimateRules | None = None) -> dict[WorkloadKey, RuntimeEstimate]:
    """A runtime estimate for every running (quota reserved) and pending Workload of the snapshot
    (finished ones are left out). `jobs`: limits of owner Jobs by (namespace, name), see owner_job.
    A `history` whose runs are measured from their pods' start (`RunHistory.from_pods()`, for a
    forecast that places pods on node pools) measures running workloads so too: one whose pods
    are not all ready yet is estimated as a pending one."""
    rules = rules or EstimateRules()
    from_pods = getattr(history, "measured_from_pods", False) is True
    out: dict[WorkloadKey, RuntimeEstimate] = {}
    shapes: dict[int, str] = {}  # id(pod sets) → shape: workloads of one template share their pod sets
    tiers: dict[tuple[str, str, str, str | None], _Tier | None] = {}
    cq_tiers: dict[str, _Tier] = {}  # one read of each ClusterQueue's runs
    pending: dict[tuple[int, float | None, str, str], RuntimeEstimate] = {}  # equal inputs, one estimate
    spreads: dict = {}  # Kaplan–Meier spreads per (tier, place of the elapsed time among its runs)
    # Per tier, its running and its pending workloads: the peers a forward run spreads (`in_run`).
    peers: dict[tuple[int, bool], list[tuple[WorkloadKey, _Tier, float, float | None]]] = {}
    # First how long each running workload has run: those of a tier's scope are its runs still
    # going (censored runs, `km_quantiles`).
    rows: list[tuple[WorkloadKey, Workload, tuple[str, str, str, str | None], float | None]] = []
    going: dict[tuple[str, ...], list[float]] = {}
    for key, wl in snapshot.workloads.items():
        if wl.is_finished:
            continue
        cq = snapshot.cluster_queue_of(wl)
        shape = None
        if history is not None:
            shape = shapes.get(id(wl.pod_sets))
            if shape is None:
                shape = shapes[id(wl.pod_sets)] = history.shape_of(wl)
        tkey = (wl.namespace, wl.queue_name, shape or "", cq)
        elapsed = None
        if wl.has_quota_reservation:
            start = admitted_at(wl)
            if start is not None and from_pods:
                # Runs measured from their pods' start: so is this one, whose pods may still wait.
                start = pods_ready_at(wl, start)
            elapsed = max(0.0, now - start) if start is not None else None
            if elapsed is not None:
                for scope in _scopes(tkey).values():
                    going.setdefault(scope, []).append(elapsed)
        rows.append((key, wl, tkey, elapsed))
    for key, wl, tkey, elapsed in rows:
        cq = tkey[3]
        if tkey in tiers:
            tier = tiers[tkey]
        else:
            scopes = _scopes(tkey)
            tier = tiers[tkey] = _history_tier(wl, cq, history, rules, tkey[2] if history is not None else None,
                                               cq_tiers, lambda name: going.get(scopes[name], ()))  # noqa: B023 (called at once)
        job_key = owner_job(wl) if jobs else None
        job = jobs.get(job_key) if jobs and job_key is not None else None
        bound, bound_text, note = upper_bound(wl, job)
        if elapsed is None:
            pkey = (id(tier), bound, bound_text, note)
            est = pending.get(pkey)
            if est is None:
                est = pending[pkey] = _estimate(tier, bound, bound_text, note, None, rules, spreads)
            out[key] = est
        else:
            out[key] = _estimate(tier, bound, bound_text, note, elapsed, rules, spreads)
        if tier is not None:
            peers.setdefault((id(tier), elapsed is None), []).append((key, tier, elapsed or 0.0, bound))
    for group in peers.values():
        _spread_over_peers(group, out, spreads)
    return out


def _spread_over_peers(group: list[tuple[WorkloadKey, _Tier, float, float | None]],
                       out: dict[WorkloadKey, RuntimeEstimate], memo: dict | None = None) -> None:
    """Give each of `group` (the running, or the pending, workloads of one history tier) the
    runtime its forward run uses (`in_run`): its own distribution's quantile at its place among
    them, the places spread evenly over (0, 1) in an order that says nothing of their queue.
    One forward run with every runtime at its median has peers that in truth finish one after
    the other all finish at once, at their median: the first finish, which the first workload
    waiting for them needs, comes far later than it will (on `large`, knowing every class's true
    distribution, the median error of the starts was 3,786 s with medians and 930 s spread).
    Past every finished run, while none has finished or most runs of the tier still go on, the
    places are taken on `past_the_data`'s distribution (Gott's: the total L/(1−q), L the longest
    run so far), a third of the peers ending together; past every finished run as an outlier,
    the estimate's own rule stands (ending soon)."""
    group.sort(key=lambda row: (zlib.crc32(f"{row[0][0]}/{row[0][1]}".encode()), row[0]))
    n = len(group)
    curves: dict[tuple[int, int], tuple[list[float], list[float]]] = {}
    for rank, (key, tier, e, bound) in enumerate(group):
        est = out[key]
        i, j = _conditioned(tier, e)
        samples, going = tier.samples[i:], tier.censored[j:]
        q = (rank + 0.5) / n
        if not samples:
            if not (going or e) or (tier.samples and not _most_still_run(tier, memo)):
                continue  # past every finished run, an outlier: the estimate's own rule stands
            # Past the data, nothing known beyond: Gott's argument (`past_the_data`) as a
            # distribution, the total being L/(1−q) at its quantile q, L the longest run so far;
            # q taken at the middle of its third (`PAST_DATA_PLACES`: early, halfway, late),
            # each third of the peers ending together: finishes the data do not place cost the
            # forward run an instant each (on `large` at 3,816 s the console's first forecast
            # took 5.1 s with tenths, 3.2 s with thirds, side by side; spread one by one, a
            # forecast of 400 rounds placed half the starts it places in tenths; the error moved
            # within ±70 s either way).
            longest = max(e, going[-1]) if going else e
            value = longest / (1 - (int(q * PAST_DATA_PLACES) + 0.5) / PAST_DATA_PLACES)
            if bound is not None:
                value = min(value, max(bound, e))
            value = max(value, e)
            if value != est.expected:
                out[key] = dataclasses.replace(est, in_run=value)
            continue
        if going:
            curve = curves.get((i, j))
            if curve is None:
                curve = curves[(i, j)] = km_curve(samples, going)
            value = km_quantile(curve, q)
            if value is None:
                # Past the data at this place: at least the longest run so far. The estimate's
                # far end where its median is known; its expected value where that is past the
                # data too (twice the longest so far, `past_the_data`).
                value = est.pessimistic if km_quantile(curve, 0.5) is not None else est.expected
        else:
            value = _quantile(samples, q)
        if bound is not None:
            value = min(value, max(bound, e))
        value = max(value, e)
        if value != est.expected:
            out[key] = dataclasses.replace(est, in_run=value)
