"""How closely a simulated replay matches the recorded admissions: order and times.

Order: every pair of workloads admitted in both, counted concordant when both histories admit
them in the same order, discordant when in opposite orders; pairs admitted within `tie`
seconds of each other in either history are ties (the API server writes condition times to the
second). Kendall's tau-b over the pairs, and the share of ordered pairs that agree. Times: the
absolute difference of each workload's admission time (both measured from the scenario's start).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

Key = tuple[str, str]


def fidelity(recorded: Mapping[Key, float], simulated: Mapping[Key, float | None], *,
             window: float | None = None, tie: float = 1.0) -> dict[str, Any]:
    """The fidelity figure; `window`: only admissions recorded up to this scenario time count
    (the simulation may run past the recording's end)."""
    rec = {k: t for k, t in recorded.items() if window is None or t <= window}
    sim = {k: t for k, t in simulated.items() if t is not None}
    both = sorted(k for k in rec if k in sim)
    conc = disc = tie_rec = tie_sim = 0
    for i, a in enumerate(both):
        for b in both[i + 1:]:
            dr, ds = rec[a] - rec[b], sim[a] - sim[b]
            r_tied, s_tied = abs(dr) < tie, abs(ds) < tie
            if r_tied or s_tied:
                tie_rec += r_tied
                tie_sim += s_tied
                continue
            if (dr > 0) == (ds > 0):
                conc += 1
            else:
                disc += 1
    n0 = len(both) * (len(both) - 1) // 2
    denom = math.sqrt(max(0, n0 - tie_rec) * max(0, n0 - tie_sim))
    errors = sorted(abs(sim[k] - rec[k]) for k in both)
    late = [k for k in rec if k not in sim]
    extra = [k for k in sim if k not in rec and (window is None or (sim[k] or 0.0) <= window)]
    return {
        "admittedInBoth": len(both),
        "onlyRecorded": [f"{k[0]}/{k[1]}" for k in sorted(late)],
        "onlySimulated": [f"{k[0]}/{k[1]}" for k in sorted(extra)],
        "pairs": n0, "concordant": conc, "discordant": disc,
        "kendallTauB": round((conc - disc) / denom, 4) if denom else None,
        "orderAgreement": round(conc / (conc + disc), 4) if conc + disc else None,
        "timeErrorSeconds": {
            "mean": round(sum(errors) / len(errors), 3) if errors else None,
            "p50": round(errors[len(errors) // 2], 3) if errors else None,
            "p90": round(errors[min(len(errors) - 1, int(len(errors) * 0.9))], 3) if errors else None,
            "max": round(errors[-1], 3) if errors else None,
        },
    }
