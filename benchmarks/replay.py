"""Recording and replay at scale: what `kueuetop record` costs and how fast a replay seeks.

For each scenario asked for (default: `large` for one simulated hour at `--speed 10`, i.e. six
minutes of wall time), this starts `kueuetop sim serve SCENARIO --speed S` live in its own
process, then `kueuetop record --for WALL` against it in another, exactly as a user runs them,
and measures from outside:

- recorder: CPU (user + system time of the record process from its rusage / its wall time, % of
  one core) and memory (VmRSS sampled every 2 s: max and at the end; peak RSS from rusage);
- file: bytes written, per simulated hour and per wall hour, and split by frame type (header,
  data, keyframes), data further split by record type (objects, GPU samples, source states)
  in proportion to their uncompressed JSON;
- seek, cold: open the finished recording and rebuild the store at `--cold` moments spread over
  it, its end included (each from a fresh reader: the keyframe before it or the start, whichever
  has less to read, then the records after it), min / p50 / max seconds;
- seek, warm: the console's way — one pass forward (as its background reader does), keeping a
  whole store state every `--checkpoint-objects` objects parsed (time and RSS it costs), then
  jumps in random order to random moments and to moments just before a checkpoint (the most
  records to apply after one): the replay's seek, the swap of its state into a console store
  (`sync_store`) and both; min / p50 / max seconds. Budget: any jump on a one-hour `large`
  recording within 1 s. The views' redraw after a jump is not in these figures (benchmarks/tui.py
  measures redraws). Warm figures run under the console's collector regime (tui/heap.py).

Prints one JSON document. Usage (repository root, project virtualenv):

    python benchmarks/replay.py                                   # large, 1 simulated hour at 10x
    python benchmarks/replay.py --scenario xl --sim-minutes 10    # xl for ten simulated minutes
    python benchmarks/replay.py --scenario refarch --sim-minutes 5 --speed 20   # a quick look
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kueuetop.sources.recording_format import DATA, HEADER, KEYFRAME, scan  # noqa: E402
from kueuetop.sources.replay import Recording, Replay, sync_store  # noqa: E402
from kueuetop.store import Store  # noqa: E402
from kueuetop.tui.heap import FULL_THRESHOLD_OFF  # noqa: E402
from kueuetop.tui.replay_history import CHECKPOINT_OBJECTS  # noqa: E402


def _proc_mem(pid: int) -> dict[str, float]:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def _wait_file(path: Path, proc: subprocess.Popen[bytes], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"sim serve did not write {path} (exit {proc.poll()})")
        time.sleep(0.2)


def record(scenario: str, speed: float, sim_seconds: float, work: Path) -> tuple[Path, dict[str, Any]]:
    kubeconfig, rec = work / "kubeconfig", work / f"{scenario}.ktrec"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBECONFIG")}
    py = [sys.executable, "-m", "kueuetop"]
    t0 = time.monotonic()
    serve = subprocess.Popen([*py, "sim", "serve", scenario, "--speed", f"{speed:g}", "--kubeconfig", str(kubeconfig)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_file(kubeconfig, serve, 600)
        serve_ready = time.monotonic() - t0
        wall = sim_seconds / speed
        recorder = subprocess.Popen([*py, "record", "--kubeconfig", str(kubeconfig), "-o", str(rec),
                                     "--for", f"{wall:g}s", "--timeout", "120s"], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        started = time.monotonic()
        rss: list[float] = []
        while True:
            # wait4: the child's own CPU and peak RSS when it ends (rusage), sampled RSS meanwhile.
            pid, status, usage = os.wait4(recorder.pid, os.WNOHANG)
            if pid:
                break
            with contextlib.suppress(OSError, IndexError, ValueError):
                rss.append(_proc_mem(recorder.pid).get("VmRSS", 0.0))
            time.sleep(2.0)
        elapsed = time.monotonic() - started
        cpu, hwm = usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024
        code = os.waitstatus_to_exitcode(status)
        recorder.returncode = code
        err = recorder.stderr.read().decode() if recorder.stderr else ""
        if code != 0:
            raise SystemExit(f"record failed ({code}): {err.strip()}")
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(30)
        except subprocess.TimeoutExpired:
            serve.kill()
    return rec, {
        "scenario": scenario, "speed": speed, "simulatedSeconds": sim_seconds, "wallSeconds": round(elapsed, 1),
        "serveReadySeconds": round(serve_ready, 1),
        "recorderCpuPercentOfOneCore": round(100 * cpu / elapsed, 1) if elapsed else None,
        "recorderRssMB": {"max": round(max(rss), 1) if rss else None, "end": round(rss[-1], 1) if rss else None,
                          "hwm": round(hwm, 1)},
    }


def file_figures(path: Path, sim_seconds: float, wall_seconds: float) -> dict[str, Any]:
    size = path.stat().st_size
    by_frame = {"header": 0, "data": 0, "keyframe": 0}
    raw_by_record: dict[str, int] = {}
    names = {HEADER: "header", DATA: "data", KEYFRAME: "keyframe"}
    with open(path, "rb") as f:
        frames = scan(f, path.name).frames
        for fr in frames:
            by_frame[names[fr.type]] += fr.length + 29
            if fr.type == DATA:
                f.seek(fr.payload_offset)
                for rec in json.loads(zlib.decompress(f.read(fr.length))):
                    op = rec.get("op")
                    kind = "objects" if op == "batch" else "gpus" if op == "gpus" else "sources"
                    raw_by_record[kind] = raw_by_record.get(kind, 0) + len(json.dumps(rec, separators=(",", ":")))
    raw_total = sum(raw_by_record.values()) or 1
    data_split = {k: round(by_frame["data"] * v / raw_total) for k, v in raw_by_record.items()}
    return {
        "bytes": size, "frames": len(frames), "keyframes": sum(fr.type == KEYFRAME for fr in frames),
        "MBPerSimulatedHour": round(size / 1e6 * 3600 / sim_seconds, 2),
        "MBPerWallHour": round(size / 1e6 * 3600 / wall_seconds, 2),
        "bytesByFrame": by_frame, "dataBytesByRecord": data_split,
    }


def _stats(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"min": None, "p50": None, "max": None}
    return {"min": round(min(xs), 3), "p50": round(statistics.median(xs), 3), "max": round(max(xs), 3)}


def _rss_mb() -> float:
    return _proc_mem(os.getpid()).get("VmRSS", 0.0)


def seeks(path: Path, count: int, seed: int = 7, checkpoint_objects: int = CHECKPOINT_OBJECTS,
          cold_count: int | None = None) -> dict[str, Any]:
    rec = Recording.open(str(path))
    start, end = rec.start, rec.end_time
    rec.close()
    rnd = random.Random(seed)
    moments = sorted([end, *(start + (end - start) * rnd.random() for _ in range(count - 1))])
    # The console's way: one pass forward when the recording opens (in the background), keeping
    # checkpoints in memory; then every jump starts from the nearest one.
    # The console's collector regime (tui/heap.py): no full collections started by Python while
    # it runs (they happen when nobody types), and the checkpoints frozen out of them once built.
    saved = gc.get_threshold()
    gc.set_threshold(saved[0], saved[1], FULL_THRESHOLD_OFF)
    r = Recording.open(str(path))
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    replay = Replay(r, checkpoint_objects=checkpoint_objects)
    replay.seek_forward(end)
    index_s = time.perf_counter() - t0
    gc.collect()
    gc.freeze()
    rss1 = _rss_mb()
    # The worst moments for a jump: just before a checkpoint (the most records to apply after
    # the previous one), besides random ones; in random order (back and forth).
    cps = replay.checkpoints
    worst = [cps[i].t - 1e-6 for i in rnd.sample(range(1, len(cps)), min(count, len(cps) - 1))] if len(cps) > 1 else []
    targets = rnd.sample(moments, len(moments)) + worst
    rnd.shuffle(targets)
    console = Store()  # what the console's store goes through: the replayed state synced into it
    warm, sync, jump = [], [], []
    for t in targets:
        t0 = time.perf_counter()
        src = replay.seek(t)
        t1 = time.perf_counter()
        sync_store(console, src)
        t2 = time.perf_counter()
        warm.append(t1 - t0)
        sync.append(t2 - t1)
        jump.append(t2 - t0)
    replay.seek(start + (end - start) / 2)
    forward = []
    step = (end - start) / 200
    for i in range(10):
        t0 = time.perf_counter()
        replay.seek(start + (end - start) / 2 + step * (i + 1))
        forward.append(time.perf_counter() - t0)
    workloads = replay.store.count("workloads")
    r.close()
    gc.set_threshold(*saved)
    n_checkpoints = len(cps)
    del replay, console, src, cps
    gc.unfreeze()
    gc.collect()
    # Cold last, so the memory figures above are the pass's own.
    cold = []
    n_cold = count if cold_count is None else min(cold_count, count)
    spread = sorted({round(i * (len(moments) - 1) / max(1, n_cold - 1)) for i in range(n_cold)})
    for t in (moments[i] for i in spread):  # spread over the recording, the end (furthest from a keyframe) included
        t0 = time.perf_counter()
        r = Recording.open(str(path))
        Replay(r).seek(t)
        cold.append(time.perf_counter() - t0)
        r.close()
    return {"moments": len(targets),
            "coldSeconds": {**_stats(cold), "count": len(cold),
                            "note": "a fresh reader each time: the nearest keyframe in the file (or the start), "
                                    "then the records after it"},
            "index": {"seconds": round(index_s, 1), "checkpoints": n_checkpoints, "checkpointObjects": checkpoint_objects,
                      "rssMBBefore": round(rss0), "rssMBAfter": round(rss1),
                      "checkpointsMB": round(rss1 - rss0),
                      "note": "one pass forward keeping whole store states in memory, as the replay console does "
                              "in the background when it opens a recording (RSS includes the replayed store); "
                              "the console's collector regime: no full collections by Python, a freeze after"},
            "warmSeconds": {**_stats(warm), "note": "Replay.seek: random moments and moments just before a checkpoint"},
            "syncSeconds": {**_stats(sync), "note": "sync_store of the replayed state into the console's store "
                                                     "(the views' redraw after it is not counted)"},
            "jumpSeconds": {**_stats(jump), "note": "seek + sync"},
            "stepForwardSeconds": _stats(forward),
            "workloadsAtMiddle": workloads, "budgetSeconds": 1.0, "warmWithinBudget": max(warm) <= 1.0,
            "jumpWithinBudget": max(jump) <= 1.0}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenario", default="large")
    p.add_argument("--speed", type=float, default=10.0)
    p.add_argument("--sim-minutes", type=float, default=60.0)
    p.add_argument("--seeks", type=int, default=10)
    p.add_argument("--keep", help="keep the recording at this path")
    p.add_argument("--from", dest="existing", help="measure the file and seeks of this recording (no recording)")
    p.add_argument("--checkpoint-objects", type=int, default=CHECKPOINT_OBJECTS)
    p.add_argument("--cold", type=int, help="cold seeks to time (default: --seeks)")
    args = p.parse_args(argv)
    if args.existing:
        path = Path(args.existing)
        rec = Recording.open(str(path))
        wall = rec.end_time - rec.start
        rec.close()
        out = {"benchmark": "replay", "recording": str(path),
               "file": file_figures(path, args.sim_minutes * 60, wall),
               "seek": seeks(path, args.seeks, checkpoint_objects=args.checkpoint_objects,
                             cold_count=args.cold)}
        print(json.dumps(out, indent=2))
        return 0
    with tempfile.TemporaryDirectory(prefix="kueuetop-replay-bench-") as d:
        path, rec = record(args.scenario, args.speed, args.sim_minutes * 60, Path(d))
        out = {"benchmark": "replay", "record": rec,
               "file": file_figures(path, args.sim_minutes * 60, rec["wallSeconds"]),
               "seek": seeks(path, args.seeks, checkpoint_objects=args.checkpoint_objects,
                             cold_count=args.cold)}
        if args.keep:
            os.replace(path, args.keep)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
