"""One pass over a recording for the replay console: the triage board's worst problem at each
slice of the timeline, and when each workload changed (the "next event" key). No Textual here:
it runs in a worker thread and hands plain data to the console.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field

from kueuetop.sources.replay import Checkpoint, Recording, Replay
from kueuetop.store import Changes
from kueuetop.store import events as K
from kueuetop.views.timeline import bucket_times, mark_of
from kueuetop.views.triage import TriageModel

Key = tuple[str, str]


@dataclass
class ReplayHistory:
    marks: list[str] = field(default_factory=list)  # one per slice (views/timeline.py)
    changes: dict[Key, list[float]] = field(default_factory=dict)  # workload → times it changed
    checkpoints: list[Checkpoint] = field(default_factory=list)  # for the console's seeks

    def next_change(self, key: Key, after: float) -> float | None:
        """The first time after `after` the workload changed (created, admitted, evicted, …)."""
        times = self.changes.get(key) or []
        i = bisect.bisect_right(times, after + 1e-6)
        return times[i] if i < len(times) else None


CHECKPOINT_OBJECTS = 6000  # objects parsed between two in-memory checkpoints (~0.5 s of applying)


def scan_history(recording: Recording, slices: int = 240, cancelled: Callable[[], bool] = lambda: False,
                 checkpoint_objects: int = CHECKPOINT_OBJECTS) -> ReplayHistory:
    """Replay the whole recording once, forward (a fresh reader: the console's stays put); the
    checkpoints it leaves let the console jump anywhere without reading from a keyframe."""
    rec = Recording.open(recording.path)
    try:
        replay = Replay(rec, checkpoint_objects=checkpoint_objects)
        out = ReplayHistory()
        store = replay.store
        triage = TriageModel(store)
        pending: dict[str, set[object]] = {}

        def note(changes: Changes) -> None:
            t = replay.clock_time
            for key in changes.get(K.WORKLOADS):
                times = out.changes.setdefault(key, [])
                if not times or times[-1] != t:
                    times.append(t)
            for kind, keys in changes.keys.items():
                pending.setdefault(kind, set()).update(keys)

        store.subscribe(note)
        first = True
        for t in bucket_times(recording.start, recording.end_time, slices):
            if cancelled():
                break
            replay.seek_forward(t)
            triage.update(None if first else dict(pending), now=t)
            first = False
            pending.clear()
            problems = triage.problems(t)
            out.marks.append(mark_of(max((p.severity for p in problems), default=None)))
        replay.seek_forward(recording.end_time)
        out.checkpoints = replay.checkpoints
        return out
    finally:
        rec.close()
