"""Fleet heatmap render time: 5,000 nodes × 8 GPUs fitted into 200×60 cells. Prints JSON.

    python benchmarks/tui_heatmap.py
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import time

from kueuetop.kueue.gpu import GpuSample
from kueuetop.tui.glyphs import ASCII, UNICODE
from kueuetop.tui.heatmap import fleet_heatmap
from kueuetop.tui.themes import load_themes


def main(nodes: int = 5000, gpus: int = 8, width: int = 200, height: int = 60, runs: int = 20) -> None:
    rnd = random.Random(7)
    samples = [GpuSample(node=f"gpu-node-{n}", gpu=str(g), util=rnd.random() * 100,
                         pod="p" if rnd.random() < 0.7 else "", stale=rnd.random() < 0.01)
               for n in range(nodes) for g in range(gpus)]
    pools = {f"gpu-node-{n}": f"pool-{n % 5}" for n in range(nodes)}
    theme = load_themes().themes["dark"]
    gc.freeze()  # a running console has its long-lived objects frozen out of the young GC too
    out = {"nodes": nodes, "gpus": nodes * gpus, "width": width, "height": height}
    for glyphs in (UNICODE, ASCII):
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            hm = fleet_heatmap(samples, width, height, theme=theme, glyphs=glyphs, pool_of=pools)
            times.append((time.perf_counter() - t0) * 1000)
        out[glyphs.name] = {"gpus_per_cell": hm.gpus_per_cell, "min_ms": round(min(times), 1),
                            "median_ms": round(statistics.median(times), 1)}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
