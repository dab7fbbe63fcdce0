"""The simulated dcgm-exporter: exposition shape, GPU → pod mapping, value model."""

from __future__ import annotations

import re
import subprocess
from collections import defaultdict
from typing import Any

import pytest

from kueuetop.sim.cloud.gpu_telemetry import (
    FIELDS,
    MODELS,
    gpu_assignments,
    gpu_model_for_node,
    iter_dcgm_fleet,
    node_gpu_devices,
    render_dcgm,
    render_dcgm_fleet,
)
from kueuetop.sources.exposition import ParseStats, Sample, parse_exposition
from tests.binaries import require_binary

T = 1_000_020.0  # a simulated instant, on a 30 s sampling boundary


def node(name: str = "gke-a3-node-1", product: str = "NVIDIA-H100-80GB-HBM3", gpus: int = 8,
         extra: dict | None = None, labels: dict | None = None, annotations: dict | None = None) -> dict:
    alloc: dict[str, str] = {"cpu": "200", "memory": "1800Gi"}
    if gpus:
        alloc["nvidia.com/gpu"] = str(gpus)
    alloc.update(extra or {})
    lbl = {"nvidia.com/gpu.product": product} if product else {}
    lbl.update(labels or {})
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": lbl, "annotations": annotations or {}},
            "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def pod(name: str, gpus: int = 1, util: str | None = None, ns: str = "team-a", phase: str = "Running",
        start: str = "2026-01-01T00:00:00Z", resource: str = "nvidia.com/gpu", container: str = "trainer",
        where: str = "limits") -> dict:
    ann = {"kueuetop.io/gpu-util": util} if util is not None else {}
    res: dict[str, Any] = {"requests": {"cpu": "1"}}
    if gpus:
        res.setdefault(where, {})[resource] = str(gpus)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "uid": f"uid-{ns}-{name}", "annotations": ann},
            "spec": {"nodeName": "x", "containers": [{"name": "sidecar", "resources": {"requests": {"cpu": "1"}}},
                                                     {"name": container, "resources": res}]},
            "status": {"phase": phase, "startTime": start}}


def parse(text: str) -> tuple[list[Sample], ParseStats]:
    stats = ParseStats()
    samples = list(parse_exposition(text, stats))
    assert stats.skipped == 0, stats.errors
    return samples, stats


def series(samples: list[Sample], name: str) -> list[Sample]:
    return [s for s in samples if s.name == name]


def by_gpu(samples: list[Sample], name: str) -> dict[str, Sample]:
    out = {}
    for s in series(samples, name):
        key = s.labels["gpu"] + ("/" + s.labels["GPU_I_ID"] if "GPU_I_ID" in s.labels else "")
        assert key not in out
        out[key] = s
    return out


# --- exposition shape ---------------------------------------------------------------------


def test_round_trip_families_types_and_label_order():
    text = render_dcgm(node(), [pod("train-0", 4, "85")], T)
    samples, stats = parse(text)
    csv_types = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter", "DCGM_FI_DEV_GPU_UTIL": "gauge",
                 "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gauge", "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": "counter"}
    for name, typ in csv_types.items():
        assert stats.types[name] == typ
    assert stats.helps["DCGM_FI_DEV_FB_USED"] == "Framebuffer memory used (in MiB)."
    # Families in default-counters.csv order, each with 8 series (one per GPU).
    names = list(dict.fromkeys(s.name for s in samples))
    assert names == list(FIELDS)
    counts = defaultdict(int)
    for s in samples:
        counts[s.name] += 1
    assert set(counts.values()) == {8}
    util = by_gpu(samples, "DCGM_FI_DEV_GPU_UTIL")
    assert list(util["0"].labels) == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
                                      "DCGM_FI_DRIVER_VERSION", "container", "namespace", "pod"]
    assert list(util["7"].labels) == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname",
                                      "DCGM_FI_DRIVER_VERSION"]
    assert util["3"].labels["device"] == "nvidia3"
    assert util["3"].labels["modelName"] == "NVIDIA H100 80GB HBM3"
    assert util["3"].labels["Hostname"] == "gke-a3-node-1"
    assert util["6"].labels["pci_bus_id"] == "00000000:8A:00.0"
    assert re.fullmatch(r"GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", util["0"].labels["UUID"])
    xid = by_gpu(samples, "DCGM_FI_DEV_XID_ERRORS")
    assert list(xid["0"].labels)[-5:] == ["container", "err_code", "err_msg", "namespace", "pod"]
    assert xid["7"].labels["err_msg"] == "No Error" and xid["7"].value == 0


def test_value_formats_match_the_exporter():
    text = render_dcgm(node(), [pod("p", 8, "60")], T)
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name, value = line.split("{", 1)[0], line.rsplit(" ", 1)[1]
        if name == "DCGM_FI_DEV_POWER_USAGE" or (name.startswith("DCGM_FI_PROF_") and "BYTES" not in name):
            assert re.fullmatch(r"\d+\.\d{6}", value), line  # DCGM doubles print as %f
        else:
            assert re.fullmatch(r"\d+", value), line  # int64 fields print as %d


def test_promtool_accepts_single_node_and_fleet_output():
    promtool = _promtool()
    mig = node("a100-mig", "NVIDIA-A100-SXM4-80GB", 0,
               extra={"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"})
    l4 = node("g2-l4", "NVIDIA-L4", 2, annotations={"kueuetop.io/gpu-xid": "1=79"})
    texts = [
        render_dcgm(node(), [pod("a", 4, "85"), pod("b", 2, "idle")], T),
        render_dcgm_fleet([node(), mig, l4], {"gke-a3-node-1": [pod("a", 8)],
                                               "a100-mig": [pod("inf", 1, "50", resource="nvidia.com/mig-1g.10gb")],
                                               "g2-l4": [pod("c", 1)]}, T),
    ]
    # Lint findings inherent to dcgm-exporter's own names (present on real exporters too).
    inherent = ('counter metrics should have "_total" suffix',
                "label names should be written in 'snake_case' not 'camelCase'",
                "metric name should not include type 'counter'")
    for text in texts:
        proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True,
                              timeout=60)
        out = (proc.stdout + proc.stderr).strip()
        assert proc.returncode in (0, 3), out  # 1 = parse error
        unexpected = [ln for ln in out.splitlines() if ln and not ln.endswith(inherent)]
        assert not unexpected, unexpected


def _promtool() -> str:
    return require_binary("promtool")


def test_hostname_label_spelling_follows_the_exporter_version():
    new, _ = parse(render_dcgm(node(), [], T, hostname_label="hostname"))
    assert "hostname" in new[0].labels and "Hostname" not in new[0].labels
    none, _ = parse(render_dcgm(node(), [], T, hostname_label=""))
    assert "hostname" not in none[0].labels and "Hostname" not in none[0].labels


def test_driver_version_from_node_labels():
    n = node(labels={"nvidia.com/cuda.driver-version.full": "560.35.03"})
    samples, _ = parse(render_dcgm(n, [], T))
    assert {s.labels["DCGM_FI_DRIVER_VERSION"] for s in samples} == {"560.35.03"}


# --- GPU → pod mapping ---------------------------------------------------------------------


def test_pod_labels_only_on_allocated_gpus():
    pods = [
        pod("first", 4, "85", start="2026-01-01T00:00:00Z"),
        pod("second", 2, "idle", ns="team-b", start="2026-01-01T00:05:00Z", where="requests"),
        pod("pending", 2, phase="Pending"),
        pod("finished", 2, phase="Succeeded"),
        pod("cpu-only", 0),
    ]
    samples, _ = parse(render_dcgm(node(), pods, T))
    util = by_gpu(samples, "DCGM_FI_DEV_GPU_UTIL")
    owners = {g: (s.labels.get("namespace"), s.labels.get("pod"), s.labels.get("container")) for g, s in util.items()}
    assert owners == {
        "0": ("team-a", "first", "trainer"), "1": ("team-a", "first", "trainer"),
        "2": ("team-a", "first", "trainer"), "3": ("team-a", "first", "trainer"),
        "4": ("team-b", "second", "trainer"), "5": ("team-b", "second", "trainer"),
        "6": (None, None, None), "7": (None, None, None),
    }
    # Every family carries the same join labels for a GPU.
    for s in samples:
        assert s.labels.get("pod") == owners[s.labels["gpu"]][1]


def test_assignment_follows_start_order_not_list_order():
    later = pod("later", 2, start="2026-01-02T00:00:00Z")
    earlier = pod("earlier", 2, start="2026-01-01T00:00:00Z")
    holders = gpu_assignments(node(gpus=4), [later, earlier])
    assert [h.pod if h else None for h in holders] == ["earlier", "earlier", "later", "later"]


def test_exporter_pod_and_overcommitted_requests():
    exporter = pod("nvidia-dcgm-exporter-7xk2p", 1, ns="gpu-operator", start="2025-01-01T00:00:00Z")
    big = pod("big", 16)
    holders = gpu_assignments(node(gpus=8), [exporter, big], exporter_pod="nvidia-dcgm-exporter-7xk2p")
    assert [h.pod for h in holders] == ["big"] * 8  # takes what is left, never more devices than exist


def test_malformed_objects_do_not_crash():
    weird_pods: list[Any] = [None, {}, {"status": {"phase": "Running"}}, {"metadata": "x", "status": {}},
                             {"metadata": {"name": "p"}, "status": {"phase": "Running"}, "spec": {"containers": "x"}},
                             {"metadata": {"name": "q"}, "status": {"phase": "Running"},
                              "spec": {"containers": [{"resources": {"limits": {"nvidia.com/gpu": "lots"}}}]}}]
    text = render_dcgm(node(gpus=2), weird_pods, T)
    samples, _ = parse(text)
    assert all("pod" not in s.labels for s in samples)
    assert render_dcgm({"metadata": {"name": "cpu-node"}}, [], T) == ""
    assert render_dcgm({"metadata": {"name": "n"}, "status": {"allocatable": {"nvidia.com/gpu": "x"}}}, [], T) == ""
    assert render_dcgm({}, [], float("nan")) == ""


# --- value model ----------------------------------------------------------------------------


def _util_samples(util: str, times: range, seed: int = 0) -> list[float]:
    out = []
    for t in times:
        samples, _ = parse(render_dcgm(node(gpus=1), [pod("p", 1, util)], float(t), seed=seed))
        out.append(series(samples, "DCGM_FI_DEV_GPU_UTIL")[0].value)
    return out


def test_idle_pods_stay_near_zero():
    values = _util_samples("idle", range(0, 6000, 60))
    assert max(values) <= 2 and min(values) >= 0


def test_annotated_mean_is_respected_and_bounded():
    values = _util_samples("85", range(0, 12000, 60))
    assert all(0 <= v <= 100 for v in values)
    assert 80 <= sum(values) / len(values) <= 90
    assert max(values) - min(values) >= 5  # it moves
    default = _util_samples("", range(0, 12000, 120))  # no annotation → ~70 %
    assert 64 <= sum(default) / len(default) <= 76


def test_unallocated_gpus_are_idle():
    samples, _ = parse(render_dcgm(node(), [pod("p", 2, "90")], T))
    util = by_gpu(samples, "DCGM_FI_DEV_GPU_UTIL")
    used = by_gpu(samples, "DCGM_FI_DEV_FB_USED")
    gr = by_gpu(samples, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    for g in "234567":
        assert util[g].value == 0 and used[g].value == 0 and gr[g].value == 0
    assert util["0"].value > 50 and used["0"].value > 0


def test_deterministic_for_a_seed_and_varying_over_time():
    pods = [pod("a", 4, "75"), pod("b", 4, "40")]
    a = render_dcgm(node(), pods, T, seed=7)
    assert a == render_dcgm(node(), pods, T, seed=7)
    assert a != render_dcgm(node(), pods, T, seed=8)
    # Values change at DCGM's 30 s sampling, not in between.
    assert a == render_dcgm(node(), pods, T + 29.0, seed=7)
    later = [render_dcgm(node(), pods, T + 30.0 * k, seed=7) for k in range(1, 6)]
    assert all(x != a for x in later)


def test_memory_power_temperature_are_consistent():
    samples, _ = parse(render_dcgm(node(), [pod("busy", 4, "95"), pod("idle", 4, "idle")], T))
    used = by_gpu(samples, "DCGM_FI_DEV_FB_USED")
    free = by_gpu(samples, "DCGM_FI_DEV_FB_FREE")
    reserved = by_gpu(samples, "DCGM_FI_DEV_FB_RESERVED")
    power = by_gpu(samples, "DCGM_FI_DEV_POWER_USAGE")
    temp = by_gpu(samples, "DCGM_FI_DEV_GPU_TEMP")
    h100 = MODELS["h100"]
    for g in map(str, range(8)):
        assert used[g].value + free[g].value + reserved[g].value == h100.fb_total_mib
        assert h100.idle_w * 0.95 <= power[g].value <= h100.max_w
        assert 20 <= temp[g].value <= 90
    for busy_gpu, idle_gpu in (("0", "4"), ("1", "5"), ("3", "7")):
        assert power[busy_gpu].value > power[idle_gpu].value + 300
        assert temp[busy_gpu].value > temp[idle_gpu].value
        assert used[busy_gpu].value > used[idle_gpu].value
    # HBM boards report memory temperature; GDDR boards (L4) leave it blank, so the series is absent.
    assert series(samples, "DCGM_FI_DEV_MEMORY_TEMP")
    l4, _ = parse(render_dcgm(node("g2", "NVIDIA-L4", 1), [pod("p", 1)], T))
    assert not series(l4, "DCGM_FI_DEV_MEMORY_TEMP") and not series(l4, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
    l4_power = series(l4, "DCGM_FI_DEV_POWER_USAGE")[0].value
    assert MODELS["l4"].idle_w < l4_power <= 72.0


def test_energy_counter_never_decreases_even_when_pods_change():
    previous = None
    for k, pods in enumerate([[], [pod("a", 8, "95")], [pod("b", 8, "idle")], [], [pod("c", 8)]] * 4):
        samples, _ = parse(render_dcgm(node(gpus=8), pods, T + 30.0 * k))
        energy = {s.labels["gpu"]: s.value for s in series(samples, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")}
        if previous is not None:
            assert all(energy[g] > previous[g] for g in energy)
        previous = energy


def test_uuids_are_stable_per_node_and_index():
    a1, _ = parse(render_dcgm(node("n1"), [], T))
    a2, _ = parse(render_dcgm(node("n1"), [pod("p", 8)], T + 600))
    b, _ = parse(render_dcgm(node("n2"), [], T))
    uuids = lambda s: [x.labels["UUID"] for x in series(s, "DCGM_FI_DEV_GPU_TEMP")]  # noqa: E731
    assert uuids(a1) == uuids(a2)
    assert len(set(uuids(a1))) == 8 and not set(uuids(a1)) & set(uuids(b))


def test_xid_fault_injection():
    n = node(annotations={"kueuetop.io/gpu-xid": "3=79,5=48"})
    samples, _ = parse(render_dcgm(n, [pod("p", 8)], T))
    xid = by_gpu(samples, "DCGM_FI_DEV_XID_ERRORS")
    assert xid["3"].value == 79 and xid["3"].labels["err_code"] == "79"
    assert xid["3"].labels["err_msg"] == "GPU has fallen off the bus"
    assert xid["5"].labels["err_msg"] == "Double Bit ECC Error"
    assert xid["0"].value == 0 and xid["0"].labels["pod"] == "p"


def test_ecc_counter_only_on_nodes_that_report_it():
    n = node(annotations={"kueuetop.io/gpu-ecc-dbe": "2=3"})
    samples, stats = parse(render_dcgm(n, [pod("p", 8)], T))
    ecc = by_gpu(samples, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")
    assert ecc["2"].value == 3 and ecc["0"].value == 0 and len(ecc) == 8
    assert stats.types["DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"] == "counter"
    plain, _ = parse(render_dcgm(node(), [], T))
    assert not series(plain, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")


@pytest.mark.parametrize(("labels", "expected"), [
    ({"nvidia.com/gpu.product": "NVIDIA-L4"}, "NVIDIA L4"),
    ({"cloud.google.com/gke-accelerator": "nvidia-l4"}, "NVIDIA L4"),
    ({"cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}, "NVIDIA A100-SXM4-40GB"),
    ({"cloud.google.com/gke-accelerator": "nvidia-a100-80gb"}, "NVIDIA A100-SXM4-80GB"),
    ({"cloud.google.com/gke-accelerator": "nvidia-h100-mega-80gb"}, "NVIDIA H100 80GB HBM3"),
    ({"nvidia.com/gpu.product": "Tesla-T4"}, "Tesla T4"),
    ({"nvidia.com/gpu.product": "NVIDIA-L40S"}, "NVIDIA L40S"),
    ({"nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb"}, "NVIDIA A100-SXM4-40GB"),
    ({"nvidia.com/gpu.product": "NVIDIA-B200", "nvidia.com/gpu.memory": "183359"}, "NVIDIA B200"),
])
def test_model_from_node_labels(labels, expected):
    n = {"metadata": {"name": "n", "labels": labels}}
    assert gpu_model_for_node(n).name == expected
    if expected == "NVIDIA B200":
        assert gpu_model_for_node(n).fb_total_mib == 183359


# --- MIG ------------------------------------------------------------------------------------


def mig_node() -> dict:
    return node("a100-mig", "NVIDIA-A100-SXM4-80GB", 0,
                extra={"nvidia.com/mig-1g.10gb": "7", "nvidia.com/mig-3g.40gb": "2"})


def test_mig_instances_are_series_with_profile_and_instance_id():
    devices = node_gpu_devices(mig_node())
    assert len(devices) == 9
    pods = [pod("infer", 1, "60", resource="nvidia.com/mig-1g.10gb"),
            pod("train", 1, "90", resource="nvidia.com/mig-3g.40gb", ns="team-b")]
    samples, _ = parse(render_dcgm(mig_node(), pods, T))
    gr = series(samples, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    assert len(gr) == 9
    assert all({"GPU_I_PROFILE", "GPU_I_ID"} <= set(s.labels) for s in gr)
    assert list(gr[0].labels)[:8] == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE",
                                      "GPU_I_ID", "Hostname"]
    # Instances of one physical GPU share its UUID and index; (UUID, GPU_I_ID) is unique.
    keys = {(s.labels["UUID"], s.labels["GPU_I_ID"]) for s in gr}
    assert len(keys) == 9
    per_gpu = defaultdict(set)
    for s in gr:
        per_gpu[s.labels["gpu"]].add(s.labels["UUID"])
    assert all(len(u) == 1 for u in per_gpu.values())
    # GPU_UTIL / MEM_COPY_UTIL are not produced for MIG instances.
    assert not series(samples, "DCGM_FI_DEV_GPU_UTIL") and not series(samples, "DCGM_FI_DEV_MEM_COPY_UTIL")
    # Pod labels sit on exactly the instances of the requested profile.
    held = [(s.labels["GPU_I_PROFILE"], s.labels["pod"]) for s in gr if "pod" in s.labels]
    assert sorted(held) == [("1g.10gb", "infer"), ("3g.40gb", "train")]
    busy = [s.value for s in gr if "pod" in s.labels]
    idle = [s.value for s in gr if "pod" not in s.labels]
    assert min(busy) > 0.3 and max(idle) == 0
    # Memory is per instance: a 1g.10gb slice has ~10 GB.
    used = {s.labels["GPU_I_ID"] + s.labels["gpu"]: s.value for s in series(samples, "DCGM_FI_DEV_FB_USED")}
    free = {s.labels["GPU_I_ID"] + s.labels["gpu"]: s.value for s in series(samples, "DCGM_FI_DEV_FB_FREE")}
    totals = {used[k] + free[k] for k in used}
    assert totals == {9728, 38912}


def test_mig_single_strategy():
    n = node("a100-single", "A100-SXM4-40GB-MIG-1g.5gb", 14, labels={"nvidia.com/mig.strategy": "single"})
    devices = node_gpu_devices(n)
    assert len(devices) == 14 and {d.mig_profile for d in devices} == {"1g.5gb"}
    assert len({d.index for d in devices}) == 2
    samples, _ = parse(render_dcgm(n, [pod("p", 3)], T))
    assert sum(1 for s in series(samples, "DCGM_FI_PROF_GR_ENGINE_ACTIVE") if "pod" in s.labels) == 3


# --- fleet ----------------------------------------------------------------------------------


def test_fleet_has_each_family_once_and_every_node_under_its_hostname():
    nodes = [node(f"node-{i}", gpus=8 if i % 2 else 4) for i in range(6)] + [node("cpu-only", "", 0)]
    pods = {"node-1": [pod("a", 8, "80")], "node-2": [pod("b", 2)]}
    text = render_dcgm_fleet(nodes, pods, T)
    assert all(text.count(f"# TYPE {f} ") == 1 for f in FIELDS)
    samples, _ = parse(text)
    temps = series(samples, "DCGM_FI_DEV_GPU_TEMP")
    per_host = defaultdict(int)
    for s in temps:
        per_host[s.labels["Hostname"]] += 1
    assert dict(per_host) == {f"node-{i}": (8 if i % 2 else 4) for i in range(6)}
    keys = [(s.name, tuple(sorted(s.labels.items()))) for s in samples]
    assert len(keys) == len(set(keys))  # no duplicate series
    held = {(s.labels["Hostname"], s.labels.get("pod")) for s in temps if "pod" in s.labels}
    assert held == {("node-1", "a"), ("node-2", "b")}
    # The fleet view of a node equals that node's own exporter, line for line.
    own = render_dcgm(nodes[2], pods["node-2"], T)
    own_lines = {ln for ln in own.splitlines() if not ln.startswith("#")}
    fleet_lines = {ln for ln in text.splitlines() if 'Hostname="node-2"' in ln}
    assert own_lines == fleet_lines


def test_fleet_node_changes_are_picked_up():
    # The per-node label cache must not serve stale devices after the node object changes.
    n = node("changing", gpus=2)
    assert render_dcgm_fleet([n], {}, T).count("DCGM_FI_DEV_GPU_TEMP{") == 2
    n = node("changing", gpus=4)
    assert render_dcgm_fleet([n], {}, T).count("DCGM_FI_DEV_GPU_TEMP{") == 4
    n = node("changing", "NVIDIA-L4", 4)
    assert 'modelName="NVIDIA L4"' in render_dcgm_fleet([n], {}, T)


def test_streamed_fleet_equals_the_rendered_text():
    nodes = [node(f"node-{i}") for i in range(3)] + [node("g2", "NVIDIA-L4", 1)]
    pods = {"node-0": [pod("a", 3, "55")], "g2": [pod("b", 1, "idle")]}
    chunks = list(iter_dcgm_fleet(nodes, pods, T, seed=3))
    assert len(chunks) == len(FIELDS)  # one per family (MEMORY_TEMP present: H100 nodes)
    assert all(c.startswith("# HELP ") for c in chunks)
    assert "".join(chunks) == render_dcgm_fleet(nodes, pods, T, seed=3)


def test_faults_reach_the_direct_scrape_samples():
    """The exporter text, read as the direct scrape reads it: the faulty GPUs carry their XID
    code and ECC count, the healthy ones neither."""
    from kueuetop.sources.dcgm import read_exposition

    n = node(annotations={"kueuetop.io/gpu-xid": "3=79", "kueuetop.io/gpu-ecc-dbe": "2=3"})
    reading, _ = read_exposition(render_dcgm(n, [pod("p", 8)], T), now=T)
    faulty = {s.gpu: (s.xid, s.ecc_dbe) for s in reading.samples if s.faulty}
    assert faulty == {"3": (79, 0), "2": (None, 3)}
