"""The recording file and its replay, in process: the store a replay rebuilds at a moment is the
recorded store as it was then; bad files are one-line errors; a torn tail is skipped; the
privacy rule holds in the bytes written."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import pytest

from kueuetop.cli import main
from kueuetop.sources.recording_format import HEAD, KEYFRAME, MAGIC, RecordingError, encode_frame, scan
from kueuetop.sources.replay import Recording, Replay
from kueuetop.store import events as K
from kueuetop.views.replay_time import utc
from tests.builders import T0, workload
from tests.recordings import Live, Wrap, history, pod


@pytest.mark.parametrize(("keyframe_every", "checkpoint_objects"), [(300.0, 0), (5.0, 0), (300.0, 1), (5.0, 2)])
def test_replay_rebuilds_the_recorded_store_at_each_moment(tmp_path: Path, keyframe_every: float,
                                                          checkpoint_objects: int) -> None:
    path = tmp_path / "r.ktrec"
    live = Live(path, keyframe_every)
    seen = history(live)
    live.rec.stop()
    assert live.rec.missing == 0 and len(live.keeper) == 0
    rec = Recording.open(str(path))
    assert rec.header["context"] == "prod" and rec.header["kueueApi"] == "v1beta2" and rec.header["version"] == 1
    assert rec.torn == ""
    if keyframe_every < 10:
        assert sum(f.type == KEYFRAME for f in rec.frames) >= 3
    replay = Replay(rec, checkpoint_objects=checkpoint_objects)
    if checkpoint_objects:
        replay.seek_forward(rec.end_time)  # the console's pass that leaves the checkpoints
        assert len(replay.checkpoints) >= 3
    starts = set()
    for t in (13, 33, 0, 22, 33, 21, 13, 14, 40, 2):  # forward, back, forward again, back
        got = replay.seek(T0 + t)
        starts.add(replay.started_from)
        if t in seen:
            assert Live.state(Wrap(got)) == seen[t], t
    if checkpoint_objects:  # back in time from a checkpoint; the stored states stay as they were
        assert "checkpoint" in starts
        for cp in replay.checkpoints:
            assert Live.state(Wrap(replay.seek(cp.t))) == Live.state(Wrap(Replay(rec).seek(cp.t))), cp.t
    if keyframe_every < 10 and not checkpoint_objects:
        assert "keyframe" in starts
    # Before the first write, the store is empty.
    assert Replay(rec).seek(T0 - 1).count(K.CLUSTER_QUEUES) == 0
    rec.close()


def test_privacy_rule_in_the_bytes_written(tmp_path: Path) -> None:
    path = tmp_path / "r.ktrec"
    live = Live(path)
    live.at(1).replace(K.PODS, "pods/kueue", pod("ns", "p"))
    wl = workload("ns", "w", "lq")
    wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["env"] = [{"name": "T", "value": "SECRET-WL-ENV"}]
    live.at(2).upsert(K.WORKLOADS, K.WORKLOADS, wl)
    live.rec.stop()
    data = path.read_bytes()
    f = open(path, "rb")  # noqa: SIM115
    with f:
        frames = scan(f, "r").frames
    text = "".join(zlib.decompress(data[fr.payload_offset:fr.payload_offset + fr.length]).decode() for fr in frames)
    assert "SECRET" not in text
    assert "managedFields" not in text and "last-applied-configuration" not in text
    # What the console reads is kept: the image, the GPU request, the node.
    assert '"trainer:1"' in text and "nvidia.com/gpu" in text and '"nodeName":"n1"' in text
    rec = Recording.open(str(path))
    p = Replay(rec).seek(T0 + 5).get(K.PODS, ("ns", "p"))
    assert p.gpus == 1 and p.node_name == "n1"
    rec.close()


def _recorded(tmp_path: Path) -> Path:
    path = tmp_path / "r.ktrec"
    live = Live(path)
    history(live)
    live.rec.stop()
    return path


def test_torn_tail_is_skipped_with_a_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recorded(tmp_path)
    data = path.read_bytes()
    rec = Recording.open(str(path))
    last = rec.frames[-1]
    rec.close()
    path.write_bytes(data[: last.offset + HEAD.size + last.length // 2])  # a crash mid-write
    rec = Recording.open(str(path))
    assert "incomplete frame" in rec.torn and rec.frames[-1].offset < last.offset
    rec.close()
    code = main(["snapshot", "--replay", str(path), "--at", "end", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["schema"] == 1
    assert err.count("\n") == 1 and "warning" in err and "cut short" in err


def _one_line_error(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["snapshot", "--replay", str(path), "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.startswith("kueuetop: ") and err.count("\n") == 1, err
    return err


def test_corruption_before_the_end_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recorded(tmp_path)
    rec = Recording.open(str(path))
    middle = rec.frames[len(rec.frames) // 2]
    rec.close()
    data = bytearray(path.read_bytes())
    data[middle.payload_offset + 3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(RecordingError, match=f"corrupt at byte {middle.offset}"):
        Recording.open(str(path))
    assert "checksum" in _one_line_error(path, capsys)


def test_foreign_truncated_and_newer_files_are_one_line_errors(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    foreign = tmp_path / "foreign"
    foreign.write_text("apiVersion: v1\nkind: Pod\n")
    assert "not a kueuetop recording" in _one_line_error(foreign, capsys)
    short = tmp_path / "short"
    short.write_bytes(MAGIC[:5])
    assert "truncated" in _one_line_error(short, capsys)
    headless = tmp_path / "headless"
    headless.write_bytes(MAGIC)
    assert "no complete header" in _one_line_error(headless, capsys)
    newer = tmp_path / "newer"
    header = {"format": "kueuetop-recording", "version": 99, "start": T0}
    newer.write_bytes(MAGIC + encode_frame(ord("H"), T0, T0, json.dumps(header).encode()))
    assert "newer kueuetop" in _one_line_error(newer, capsys)
    assert "cannot read" in _one_line_error(tmp_path / "missing", capsys)


def test_moment_outside_the_recording_is_a_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _recorded(tmp_path)
    code = main(["snapshot", "--replay", str(path), "--at", utc(T0 - 3600), "-o", "json"])
    _, err = capsys.readouterr()
    assert code == 2 and "outside the recording" in err and err.count("\n") == 1
    code = main(["snapshot", "--replay", str(path), "--at", "-10s", "-o", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    # 10 s before the end (t=33): after the admission at 20, before the deletion of w2 at 31.
    assert {w["name"] for w in doc["workloads"]} == {"w0", "w1", "w2"}
    assert next(w for w in doc["workloads"] if w["name"] == "w0")["state"] == "Admitted"
    assert doc["cluster"]["context"] == "prod" and doc["cluster"]["positions"] == "visibility"


def test_a_recording_is_readable_while_it_is_written(tmp_path: Path) -> None:
    path = tmp_path / "r.ktrec"
    live = Live(path)
    live.at(0).replace(K.CLUSTER_QUEUES, K.CLUSTER_QUEUES)
    live.at(1).upsert(K.WORKLOADS, K.WORKLOADS, workload("ns", "w0", "lq"))
    import time

    deadline = time.monotonic() + 5
    rec = None
    while time.monotonic() < deadline:
        try:
            rec = Recording.open(str(path))
        except RecordingError:
            time.sleep(0.02)
            continue
        if Replay(rec).seek(rec.end_time).count(K.WORKLOADS) == 1:
            break
        rec.close()
        rec = None
        time.sleep(0.02)
    assert rec is not None, "the first workload never became readable"
    live.at(2).upsert(K.WORKLOADS, K.WORKLOADS, workload("ns", "w1", "lq"))
    assert _eventually(lambda: rec.refresh() or Replay(rec).seek(T0 + 2).count(K.WORKLOADS) == 2)
    live.rec.stop()
    rec.close()


def _eventually(pred: Any, timeout: float = 5.0) -> bool:
    from tests.waiting import wait_until

    return bool(wait_until(lambda: pred() and pred(), timeout, 0.02))
