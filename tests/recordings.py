"""A small recorded history, fed to a store as the informers feed it, for the recording tests."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kueuetop.kueue.gpu import GpuSample
from kueuetop.kueue.parse import parse_object
from kueuetop.sources.recorder import Recorder, WireKeeper
from kueuetop.store import Entry, SourceState, Store, StoreEvent
from kueuetop.store import events as K
from kueuetop.store.events import Op, QueuePosition
from tests.builders import T0, admit, cluster_queue, fq, group, local_queue, workload


class Clock:
    def __init__(self) -> None:
        self.t = T0

    def __call__(self) -> float:
        return self.t


def pod(ns: str, name: str, node: str = "n1", rv: str = "1") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": ns, "name": name, "uid": f"uid-{name}", "resourceVersion": rv,
                         "labels": {"kueue.x-k8s.io/podset": "main"},
                         "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{SECRET-APPLIED}"},
                         "managedFields": [{"manager": "kubectl"}]},
            "spec": {"nodeName": node, "volumes": [{"name": "creds", "secret": {"secretName": "SECRET-VOLUME"}}],
                     "containers": [{"name": "main", "image": "trainer:1", "command": ["SECRET-COMMAND"],
                                     "args": ["--token=SECRET-ARG"], "env": [{"name": "K", "value": "SECRET-ENV"}],
                                     "envFrom": [{"secretRef": {"name": "SECRET-ENVFROM"}}],
                                     "resources": {"requests": {"nvidia.com/gpu": "1"}}}]},
            "status": {"phase": "Running"}}


class Live:
    """A store fed as the informers feed it (parse through the keeper, apply batches), recorded."""

    def __init__(self, path: Path, keyframe_every: float = 300.0) -> None:
        self.clock = Clock()
        self.store = Store(clock=self.clock)
        self.keeper = WireKeeper()
        self.parse = self.keeper.wrap(parse_object)
        self.rec = Recorder(str(path), self.store, self.keeper, server="https://k8s.example", context="prod",
                            kueue_api="v1beta2", flush_every=0.01, keyframe_every=keyframe_every,
                            clock=self.clock).start()

    def entry(self, raw: dict[str, Any]) -> Entry:
        raw = copy.deepcopy(raw)
        meta = raw["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        uid, rv = meta.get("uid", ""), str(meta.get("resourceVersion", ""))
        try:  # as the informer does (sources/informer.py `_entry`)
            return Entry(key, None, self.parse(raw), uid, rv)
        except Exception as e:
            return Entry(key, raw, None, uid, rv, error=str(e))

    def at(self, t: float) -> Live:
        self.clock.t = T0 + t
        return self

    def replace(self, kind: str, source: str, *raws: dict[str, Any]) -> None:
        self.store.apply_batch([StoreEvent.replace(kind, source, [self.entry(r) for r in raws])])

    def upsert(self, kind: str, source: str, raw: dict[str, Any]) -> None:
        self.store.apply_batch([StoreEvent.upsert(kind, source, self.entry(raw))])

    def state(self) -> dict[str, Any]:
        s = self.store
        return {"objects": {k: s.objects(k) for k in (K.CLUSTER_QUEUES, K.LOCAL_QUEUES, K.WORKLOADS, K.PODS, K.EVENTS)},
                "unparsed": s.unparsed(K.WORKLOADS), "gpus": s.gpus(), "sources": s.sources(),
                "positions": s.positions("cq"), "versions": s.versions(K.WORKLOADS)}


def history(live: Live) -> dict[float, dict[str, Any]]:
    """A small history; returns the recorded store's state after each step, by time."""
    seen: dict[float, dict[str, Any]] = {}
    cq = cluster_queue("cq", group(["cpu", "nvidia.com/gpu"], fq("f", cpu=8, **{"nvidia.com/gpu": 4})))
    live.at(0).replace(K.CLUSTER_QUEUES, K.CLUSTER_QUEUES, cq)
    live.at(0).replace(K.LOCAL_QUEUES, K.LOCAL_QUEUES, local_queue("ns", "lq", "cq"))
    live.at(0).replace(K.WORKLOADS, K.WORKLOADS)
    live.store.set_source_state(K.WORKLOADS, SourceState.LIVE, ok=True)
    live.store.set_source_state("visibility", SourceState.LIVE, ok=True)
    seen[0] = live.state()
    wls = [workload("ns", f"w{i}", "lq", {"cpu": "1"}, created=T0 + i) for i in range(3)]
    for i, wl in enumerate(wls):
        live.at(10 + i).upsert(K.WORKLOADS, K.WORKLOADS, wl)
    live.at(13).store.apply_batch([StoreEvent(Op.POSITIONS, K.POSITIONS, "visibility", key=("", "cq"), positions=(
        (("ns", "w1"), QueuePosition("cq", 0, 0, "lq", 0)), (("ns", "w2"), QueuePosition("cq", 1, 1, "lq", 0))))])
    seen[13] = live.state()
    admitted = admit(wls[0], "cq", {"cpu": "f"}, at=T0 + 20)
    admitted["metadata"]["resourceVersion"] = "2"
    live.at(20).upsert(K.WORKLOADS, K.WORKLOADS, admitted)
    clean = pod("ns", "w0-pod")
    del clean["metadata"]["annotations"]  # (the privacy rule drops that one: tested below)
    live.at(21).replace(K.PODS, "pods/kueue", clean)
    live.at(22).store.put_gpu_samples([GpuSample("n1", "0", model="L4", util=87.5, namespace="ns", pod="w0-pod",
                                                 at=T0 + 22)], T0 + 22, "gpu/scrape")
    seen[22] = live.state()
    broken = workload("ns", "bad", "lq")
    broken["spec"]["podSets"] = "not a list"
    live.at(30).upsert(K.WORKLOADS, K.WORKLOADS, broken)
    live.at(31).store.apply_batch([StoreEvent.delete(K.WORKLOADS, K.WORKLOADS, ("ns", "w2"))])
    live.at(32).store.apply_batch([StoreEvent.delete(K.NODES, K.NODES, ("", "n1"))])  # its GPUs go
    live.at(33).store.set_source_state("gpu/scrape", SourceState.ERROR, "scrape failed")
    seen[33] = live.state()
    return seen


class Wrap:
    """A store in the shape `Live.state` reads."""

    def __init__(self, store: Store) -> None:
        self.store = store


def record_history(path: Path, keyframe_every: float = 300.0) -> dict[float, dict[str, Any]]:
    live = Live(path, keyframe_every)
    seen = history(live)
    live.rec.stop()
    return seen
