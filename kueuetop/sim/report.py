"""The `sim run` report: a stable JSON interface (ARCHITECTURE §2.2) and a table for people."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kueuetop.kueue.errors import KueueParseError
from kueuetop.kueue.quantity import format_resource_value, parse_resource_value
from kueuetop.kueue.workload import parse_workload
from kueuetop.kueue.workload_state import derive_state
from kueuetop.sim.recorder import ADMITTED, EVICTED, SimEvent

REPORT_VERSION = 1


def build_report(scenario: str, start: float, now: float, workloads: list[dict], cluster_queues: list[dict],
                 local_queues: list[dict], events: list[SimEvent], errors: list[str] | None = None) -> dict[str, Any]:
    lq_to_cq = {((lq.get("metadata") or {}).get("namespace"), (lq.get("metadata") or {}).get("name")):
                (lq.get("spec") or {}).get("clusterQueue", "") for lq in local_queues}
    admitted_at: dict[tuple[str, str], float] = {}
    evictions: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        key = (e.namespace, e.name)
        if e.type == ADMITTED:
            admitted_at[key] = round(e.time, 3)
        elif e.type == EVICTED:
            evictions[key].append({"time": round(e.time, 3), "reason": e.reason})

    rows = []
    usage: dict[str, dict[str, dict[str, int]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(int)))
    for obj in workloads:
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace", ""), meta.get("name", "")
        owner = next((o.get("name", "") for o in meta.get("ownerReferences") or [] if o.get("controller")), "")
        try:
            wl = parse_workload(obj)
        except KueueParseError as exc:
            rows.append({"namespace": ns, "name": name, "job": owner, "state": "invalid", "error": str(exc)})
            continue
        state = derive_state(wl, now)
        cq = wl.admission.cluster_queue if wl.admission else lq_to_cq.get((ns, wl.queue_name), "")
        flavors: dict[str, str] = {}
        if wl.admission:
            for psa in wl.admission.pod_set_assignments:
                for r, f in psa.flavors.items():
                    flavors.setdefault(r, f)
            if wl.is_admitted and not wl.is_finished:
                for (f, r), v in wl.usage().items():
                    usage[wl.admission.cluster_queue][f][r] += v
        adm = admitted_at.get((ns, name))
        if adm is None and wl.is_admitted:
            c = wl.condition("Admitted")
            adm = round(c.last_transition - start, 3) if c and c.last_transition else None
        rows.append({
            "namespace": ns, "name": name, "job": owner, "state": state.report_state,
            "reason": state.reason, "clusterQueue": cq, "flavors": flavors,
            "admittedAt": adm, "evictions": evictions.get((ns, name), []),
            "priority": wl.priority,
        })
    rows.sort(key=lambda r: (r["namespace"], r["name"]))

    cq_rows = []
    for cq in cluster_queues:
        meta, spec, status = cq.get("metadata") or {}, cq.get("spec") or {}, cq.get("status") or {}
        name = meta.get("name", "")
        nominal: dict[str, dict[str, int]] = defaultdict(dict)
        for g in spec.get("resourceGroups") or []:
            for fq in g.get("flavors") or []:
                for r in fq.get("resources") or []:
                    try:
                        nominal[fq.get("name", "")][r.get("name", "")] = parse_resource_value(
                            r.get("name", ""), r.get("nominalQuota", 0))
                    except ValueError:
                        continue
        flavors_out = {}
        for f, res in sorted(nominal.items()):
            flavors_out[f] = {r: {"used": usage[name][f].get(r, 0), "nominal": q,
                                  "borrowed": max(0, usage[name][f].get(r, 0) - q)}
                              for r, q in sorted(res.items())}
        cq_rows.append({
            "name": name, "cohort": spec.get("cohortName", ""),
            "pendingWorkloads": status.get("pendingWorkloads", 0),
            "reservingWorkloads": status.get("reservingWorkloads", 0),
            "admittedWorkloads": status.get("admittedWorkloads", 0),
            "usage": flavors_out,
        })
    cq_rows.sort(key=lambda r: r["name"])
    counts: dict[str, int] = defaultdict(int)
    for r in rows:
        counts[r["state"]] += 1
    return {
        "version": REPORT_VERSION,
        "scenario": scenario,
        "simulatedSeconds": round(now - start, 3),
        "summary": dict(sorted(counts.items())),
        "workloads": rows,
        "events": [e.to_json() for e in events],
        "clusterQueues": cq_rows,
        "errors": list(errors or []),
    }


def _hms(t: float | None) -> str:
    if t is None:
        return "-"
    t = int(t)
    return f"{t // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*header).rstrip()] + [fmt.format(*r).rstrip() for r in rows]


MAX_TABLE_EVENTS = 400


def render_table(report: dict[str, Any]) -> str:
    out = [f"scenario {report['scenario']}: {_hms(report['simulatedSeconds'])} simulated, "
           f"{len(report['workloads'])} workloads ("
           + ", ".join(f"{v} {k}" for k, v in report["summary"].items()) + ")", ""]
    events = [e for e in report["events"] if e["type"] != "created"]
    out.append("EVENTS" + (f" (first {MAX_TABLE_EVENTS} of {len(events)})" if len(events) > MAX_TABLE_EVENTS else ""))
    out += _table(["TIME", "EVENT", "WORKLOAD", "CLUSTERQUEUE", "REASON"], [
        [_hms(e["time"]), e["type"], f"{e['namespace']}/{e['name']}", e.get("clusterQueue", ""), e.get("reason", "")]
        for e in events[:MAX_TABLE_EVENTS]])
    out += ["", "WORKLOADS"]
    out += _table(["NAMESPACE", "NAME", "STATE", "CLUSTERQUEUE", "FLAVORS", "ADMITTED", "EVICTIONS"], [
        [w["namespace"], w["name"], w["state"], w.get("clusterQueue", ""),
         ",".join(sorted(set((w.get("flavors") or {}).values()))), _hms(w.get("admittedAt")),
         ",".join(e["reason"] for e in w.get("evictions", []))]
        for w in report["workloads"][:MAX_TABLE_EVENTS]])
    out += ["", "CLUSTERQUEUES (admitted usage / nominal)"]
    cq_rows = []
    for cq in report["clusterQueues"]:
        parts = []
        for f, res in cq["usage"].items():
            for r, u in res.items():
                parts.append(f"{f}:{r}={format_resource_value(r, u['used'])}/{format_resource_value(r, u['nominal'])}"
                             + (" (borrowing)" if u["borrowed"] else ""))
        cq_rows.append([cq["name"], cq["cohort"], str(cq["pendingWorkloads"]), str(cq["admittedWorkloads"]),
                        " ".join(parts)])
    out += _table(["NAME", "COHORT", "PENDING", "ADMITTED", "USAGE"], cq_rows)
    if report.get("errors"):
        out += ["", "REFUSED STEPS"] + [f"  {e}" for e in report["errors"]]
    return "\n".join(out) + "\n"
