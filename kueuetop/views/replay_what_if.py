"""`kueuetop sim run --from-recording FILE --with SPEC`: a recorded history run as recorded and
with the changes, compared workload by workload. A JSON document and its text; no Textual.

The conventions are `kueuetop forecast --with`'s (views/forecast_report.py): a start that moved
less than `MOVED_WITHIN` did not move; change is sooner | later | unchanged | starts (only with
the changes) | noLongerStarts (only as recorded); deltaSeconds = after − before (negative:
sooner), null unless both started. Every string from the recording goes through `safe_text.clean`.

JSON document (`--report json`), stable within `schema`:

    schema           1
    recording        {name, recordedSeconds}
    simulatedSeconds how long each run went
    changes          [spec]
    workloads        [{namespace, name, clusterQueue, createdSeconds,
                       before: {startSeconds, waitSeconds} | null, after: … | null,
                       change, deltaSeconds}]
                     every workload that started in either run, most sooner first
    byNamespace      [{namespace, workloads, sooner, later, unchanged, starts, noLongerStarts,
                       savedMedianSeconds, savedTotalSeconds}]  (saved: −deltaSeconds over the
                       workloads that started in both runs; null when none did)
    byClusterQueue   the same, keyed by clusterQueue
    summary          the same over all, and text
    errors           the steps either run refused
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kueuetop.views.ages import age_text
from kueuetop.views.forecast_report import MOVED_WITHIN
from kueuetop.views.safe_text import clean
from kueuetop.views.snapshot import _table

SCHEMA = 1
Key = tuple[str, str]
CHANGES = ("sooner", "later", "unchanged", "starts", "noLongerStarts")


def _side(created: float | None, start: float | None) -> dict[str, float] | None:
    if start is None:
        return None
    return {"startSeconds": round(start, 3),
            "waitSeconds": None if created is None else round(max(0.0, start - created), 3)}


def compare_starts(created: Mapping[Key, float], before: Mapping[Key, float], after: Mapping[Key, float],
                   cluster_queue: Mapping[Key, str]) -> list[dict[str, Any]]:
    """One row per workload that started in either run (see the module docstring)."""
    rows = []
    for key in sorted(before.keys() | after.keys()):
        b, a = before.get(key), after.get(key)
        delta = None if a is None or b is None else round(a - b, 3)
        if delta is not None:
            change = "unchanged" if abs(delta) < MOVED_WITHIN else "sooner" if delta < 0 else "later"
        else:
            change = "starts" if b is None else "noLongerStarts"
        rows.append({"namespace": clean(key[0]), "name": clean(key[1]),
                     "clusterQueue": clean(cluster_queue.get(key, "")) or None,
                     "createdSeconds": None if key not in created else round(created[key], 3),
                     "before": _side(created.get(key), b), "after": _side(created.get(key), a),
                     "change": change, "deltaSeconds": delta})
    rows.sort(key=lambda r: (r["deltaSeconds"] is None, r["deltaSeconds"] or 0.0, r["namespace"], r["name"]))
    return rows


def tally(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    rows = list(rows)
    saved = [-r["deltaSeconds"] for r in rows if r["deltaSeconds"] is not None]
    out: dict[str, Any] = {"workloads": len(rows)}
    out.update({c: sum(1 for r in rows if r["change"] == c) for c in CHANGES})
    out["savedMedianSeconds"] = round(statistics.median(saved), 3) if saved else None
    out["savedTotalSeconds"] = round(sum(saved), 3) if saved else None
    return out


def _grouped(rows: Sequence[Mapping[str, Any]], field: str) -> list[dict[str, Any]]:
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r[field] or "", []).append(r)
    return [{field: name or None, **tally(rs)} for name, rs in sorted(groups.items())]


def _signed(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return ("-" if seconds < 0 else "") + age_text(abs(seconds))


def summary_text(t: Mapping[str, Any]) -> str:
    text = (f"{t['sooner']} started sooner, {t['later']} later, {t['unchanged']} unchanged")
    if t["starts"]:
        text += f", {t['starts']} started only with the changes"
    if t["noLongerStarts"]:
        text += f", {t['noLongerStarts']} did not start in the run with the changes"
    if t["savedMedianSeconds"] is not None:
        text += (f"; wait saved: median {_signed(t['savedMedianSeconds'])}, "
                 f"total {_signed(t['savedTotalSeconds'])}")
    return text


def what_if_doc(recording: str, recorded_seconds: float, simulated_seconds: float, changes: Sequence[str],
                rows: list[dict[str, Any]], errors: Sequence[str] = ()) -> dict[str, Any]:
    summary = tally(rows)
    summary["text"] = summary_text(summary)
    return {"schema": SCHEMA, "recording": {"name": clean(recording), "recordedSeconds": round(recorded_seconds, 3)},
            "simulatedSeconds": round(simulated_seconds, 3), "changes": [clean(c) for c in changes],
            "workloads": rows, "byNamespace": _grouped(rows, "namespace"),
            "byClusterQueue": _grouped(rows, "clusterQueue"), "summary": summary,
            "errors": [clean(e) for e in errors]}


def _change_cell(r: Mapping[str, Any]) -> str:
    d = r["deltaSeconds"]
    if r["change"] == "sooner":
        return f"sooner by {age_text(-d)}"
    if r["change"] == "later":
        return f"later by {age_text(d)}"
    return {"unchanged": "unchanged", "starts": "starts (not before)",
            "noLongerStarts": "never starts"}[r["change"]]


def _wait_cell(side: Mapping[str, Any] | None) -> str:
    return "never" if side is None else age_text(side["waitSeconds"])


def _group_rows(groups: Sequence[Mapping[str, Any]], field: str) -> list[list[Any]]:
    return [[g[field] or "-", g["workloads"], g["sooner"], g["later"], g["unchanged"],
             g["noLongerStarts"], _signed(g["savedMedianSeconds"]), _signed(g["savedTotalSeconds"])] for g in groups]


def render_text(doc: Mapping[str, Any]) -> str:
    """The same document as aligned text (`--report table`)."""
    rec = doc["recording"]
    lines = [f"what-if on recording {rec['name']} ({age_text(rec['recordedSeconds'])} recorded, "
             f"each run {age_text(doc['simulatedSeconds'])} simulated)",
             "with " + "; ".join(doc["changes"]), ""]
    rows = [[r["namespace"], r["name"], r["clusterQueue"], _wait_cell(r["before"]), _wait_cell(r["after"]), _change_cell(r)]
            for r in doc["workloads"]]
    if not rows:
        lines += ["No workload started in either run.", ""]
    else:
        lines += _table("Workloads (wait from creation to the first pod running)",
                        ["NAMESPACE", "NAME", "CLUSTERQUEUE", "WAIT AS RECORDED", "WAIT WITH CHANGES", "CHANGE"],
                        rows)
    heads = ["WORKLOADS", "SOONER", "LATER", "UNCHANGED", "NEVER", "SAVED MEDIAN", "SAVED TOTAL"]
    lines += _table("By namespace", ["NAMESPACE", *heads], _group_rows(doc["byNamespace"], "namespace"))
    lines += _table("By ClusterQueue", ["CLUSTERQUEUE", *heads], _group_rows(doc["byClusterQueue"], "clusterQueue"))
    lines.append(doc["summary"]["text"])
    for e in doc["errors"]:
        lines.append(f"refused step: {e}")
    return "\n".join(lines) + "\n"
