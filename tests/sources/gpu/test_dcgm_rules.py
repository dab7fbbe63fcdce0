"""Label rules of reference/gpu-telemetry.md applied to exposition text (dcgm.build_samples)."""

from __future__ import annotations

import pytest

from kueuetop.sources.dcgm import read_exposition

NOW = 1_800_000_000.0
H100 = 'gpu="3",UUID="GPU-6f2a",pci_bus_id="00000000:8A:00.0",device="nvidia3",modelName="NVIDIA H100 80GB HBM3"'


def one(text: str, **kw):
    reading, _ = read_exposition(text, now=NOW, **kw)
    assert len(reading.samples) == 1, reading.samples
    return reading.samples[0]


@pytest.mark.parametrize("host_label", ["Hostname", "hostname"])
def test_node_from_either_hostname_label(host_label: str) -> None:
    s = one(f'DCGM_FI_DEV_GPU_UTIL{{{H100},{host_label}="node-a"}} 97\n')
    assert (s.node, s.gpu, s.util, s.uuid, s.model) == ("node-a", "3", 97, "GPU-6f2a", "NVIDIA H100 80GB HBM3")


def test_no_hostname_uses_fallback_or_skips() -> None:
    text = f"DCGM_FI_DEV_GPU_UTIL{{{H100}}} 5\n"
    assert one(text, default_node="from-pod-spec").node == "from-pod-spec"
    reading, _ = read_exposition(text, now=NOW)
    assert reading.samples == [] and reading.skipped == 1


@pytest.mark.parametrize(("labels", "expected"), [
    # raw exporter output: pod labels are the workload's (§1.2)
    ('container="trainer",namespace="team-a",pod="llama-0"', ("team-a", "llama-0", "trainer")),
    # Prometheus with honor_labels=false: exported_* win over the exporter's own pod (§1.3, sample C)
    ('container="nvidia-dcgm-exporter",exported_container="worker",exported_namespace="team-c",'
     'exported_pod="sweep-41-0",namespace="gpu-operator",pod="nvidia-dcgm-exporter-7xk2p"',
     ("team-c", "sweep-41-0", "worker")),
    # free GPU scraped by a ServiceMonitor: pod is the exporter → unassigned
    ('container="nvidia-dcgm-exporter",namespace="gpu-operator",pod="nvidia-dcgm-exporter-7xk2p"', ("", "", "")),
    ('namespace="gke-managed-system",pod="dcgm-exporter-abcde"', ("", "", "")),
    # --use-old-namespace (1.x compatibility)
    ('container_name="c",pod_name="p-0",pod_namespace="ns"', ("ns", "p-0", "c")),
    # very old exporters print empty pod labels for free GPUs (issue #150)
    ('container="",namespace="",pod=""', ("", "", "")),
])
def test_pod_attribution(labels: str, expected: tuple[str, str, str]) -> None:
    s = one(f'DCGM_FI_DEV_GPU_UTIL{{{H100},Hostname="n",{labels}}} 50\n')
    assert (s.namespace, s.pod, s.container) == expected
    assert s.allocated == bool(expected[1])


def test_mig_instances_are_separate_and_use_gr_engine_active() -> None:
    base = 'gpu="0",UUID="GPU-a810",modelName="NVIDIA A100-SXM4-80GB",hostname="a100-node-3"'
    text = (
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{base},GPU_I_PROFILE="1g.10gb",GPU_I_ID="11",namespace="team-b",pod="emb"}} 0.734512\n'
        f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{base},GPU_I_PROFILE="3g.40gb",GPU_I_ID="2"}} 0.100000\n'
        # some exporters emit GPU_UTIL=0 for MIG instances (issue #216): must not win
        f'DCGM_FI_DEV_GPU_UTIL{{{base},GPU_I_PROFILE="1g.10gb",GPU_I_ID="11"}} 0\n'
        f'DCGM_FI_DEV_FB_USED{{{base},GPU_I_PROFILE="1g.10gb",GPU_I_ID="11"}} 4000\n'
        f'DCGM_FI_DEV_FB_FREE{{{base},GPU_I_PROFILE="1g.10gb",GPU_I_ID="11"}} 5728\n'
    )
    reading, _ = read_exposition(text, now=NOW)
    by_gpu = {s.gpu: s for s in reading.samples}
    assert set(by_gpu) == {"0/11", "0/2"}
    a, b = by_gpu["0/11"], by_gpu["0/2"]
    assert a.util == pytest.approx(73.4512) and a.mig_profile == "1g.10gb" and a.pod == "emb"
    assert a.mem_used_mib == 4000 and a.mem_total_mib == 9728
    assert b.util == pytest.approx(10.0) and b.mig_profile == "3g.40gb" and not b.allocated


def test_mig_instance_without_gr_engine_has_no_util() -> None:
    s = one('DCGM_FI_DEV_GPU_UTIL{gpu="0",GPU_I_ID="7",GPU_I_PROFILE="1g.10gb",Hostname="n"} 0\n')
    assert s.util is None


def test_gr_engine_preferred_on_whole_gpu_too() -> None:
    s = one(f'DCGM_FI_DEV_GPU_UTIL{{{H100},Hostname="n"}} 100\n'
            f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{H100},Hostname="n"}} 0.250000\n')
    assert s.util == pytest.approx(25.0)


@pytest.mark.parametrize("value", ["9223372036854775794", "9.0e18", "NaN", "+Inf"])
def test_sentinels_are_not_applicable(value: str) -> None:
    s = one(f'DCGM_FI_DEV_GPU_TEMP{{{H100},Hostname="n"}} {value}\n'
            f'DCGM_FI_DEV_POWER_USAGE{{{H100},Hostname="n"}} 612.453000\n')
    assert s.temp_c is None and s.power_w == pytest.approx(612.453)


def test_memory_total_with_and_without_reserved_and_fb_total() -> None:
    lbl = f'{H100},Hostname="n"'
    s = one(f"DCGM_FI_DEV_FB_USED{{{lbl}}} 1000\nDCGM_FI_DEV_FB_FREE{{{lbl}}} 79969\n"
            f"DCGM_FI_DEV_FB_RESERVED{{{lbl}}} 590\n")
    assert (s.mem_used_mib, s.mem_total_mib) == (1000, 81559)
    s = one(f"DCGM_FI_DEV_FB_USED{{{lbl}}} 1000\nDCGM_FI_DEV_FB_FREE{{{lbl}}} 79969\n")
    assert s.mem_total_mib == 80969
    s = one(f"DCGM_FI_DEV_FB_USED{{{lbl}}} 1000\nDCGM_FI_DEV_FB_TOTAL{{{lbl}}} 81559\n")  # GKE managed
    assert s.mem_total_mib == 81559
    s = one(f"DCGM_FI_DEV_FB_USED{{{lbl}}} 1000\n")
    assert s.mem_total_mib is None


def test_shared_gpu_is_one_sample_with_max_and_all_sharers() -> None:
    lbl = f'{H100},Hostname="n"'
    text = (f'DCGM_FI_DEV_GPU_UTIL{{{lbl},namespace="b",pod="p2",vgpu="1"}} 40\n'
            f'DCGM_FI_DEV_GPU_UTIL{{{lbl},namespace="a",pod="p1",vgpu="0"}} 45\n'
            f'DCGM_FI_DEV_FB_USED{{{lbl},namespace="a",pod="p1",vgpu="0"}} 100\n'
            f'DCGM_FI_DEV_FB_USED{{{lbl},namespace="b",pod="p2",vgpu="1"}} 120\n')
    reading, _ = read_exposition(text, now=NOW)
    assert len(reading.samples) == 1
    s = reading.samples[0]
    assert s.util == 45 and s.mem_used_mib == 120 and (s.namespace, s.pod) == ("a", "p1")
    assert [(h.namespace, h.pod) for h in reading.sharers[s.key]] == [("a", "p1"), ("b", "p2")]


def test_staleness_from_sample_timestamps() -> None:
    lbl = f'{H100},Hostname="n"'
    fresh_ms, old_ms = int((NOW - 10) * 1000), int((NOW - 600) * 1000)
    text = (f'DCGM_FI_DEV_GPU_UTIL{{{lbl}}} 0 {old_ms}\n'
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="4",Hostname="n"}} 0 {fresh_ms}\n'
            f'DCGM_FI_DEV_GPU_UTIL{{gpu="5",Hostname="n"}} 0\n')
    reading, _ = read_exposition(text, now=NOW, stale_after=90)
    by_gpu = {s.gpu: s for s in reading.samples}
    assert by_gpu["3"].stale and by_gpu["3"].at == NOW - 600
    assert by_gpu["3"].util == 0  # the value is kept; the view draws it as stale, not as 0 %
    assert not by_gpu["4"].stale and not by_gpu["5"].stale and by_gpu["5"].at == NOW


def test_malformed_lines_are_skipped_and_counted() -> None:
    text = (f'DCGM_FI_DEV_GPU_UTIL{{{H100},Hostname="n"}} 12\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="4",Hostname="n" 12\n'
            'garbage line with spaces\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="5",Hostname="n"} not-a-number\n'
            '\x00\x1b[31m\n'
            'DCGM_FI_DEV_XID_ERRORS{gpu="3",Hostname="n",err_code="79",err_msg="GPU has fallen off the bus"} 79\n')
    reading, stats = read_exposition(text, now=NOW)
    assert [s.gpu for s in reading.samples] == ["3"]
    assert stats.skipped == 4


def test_renamed_temperature_field_of_exporter_4_9() -> None:
    s = one(f'DCGM_FI_DEV_GPU_TEMP_CELSIUS{{{H100},Hostname="n"}} 61\n')
    assert s.temp_c == 61


def test_simulated_exporter_round_trip() -> None:
    """The simulator's own dcgm text (exporter 4.5.x shape) reads back per device."""
    from kueuetop.sim.cloud.gpu_telemetry import render_dcgm

    node = {"metadata": {"name": "gpu-1", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
            "status": {"allocatable": {"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "2"}}}
    pod = {"metadata": {"name": "train-0", "namespace": "team-a", "uid": "u1",
                        "annotations": {"kueuetop.io/gpu-util": "idle"}},
           "spec": {"nodeName": "gpu-1", "containers": [
               {"name": "main", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
           "status": {"phase": "Running"}}
    text = render_dcgm(node, [pod], 1000.0)
    reading, stats = read_exposition(text, now=NOW)
    assert stats.skipped == 0
    by_gpu = {s.gpu: s for s in reading.samples}
    assert set(by_gpu) == {"0", "1", "2/7", "2/8"}
    assert by_gpu["0"].pod == "train-0" and by_gpu["0"].util is not None and by_gpu["0"].util < 5
    assert by_gpu["2/7"].mig_profile == "1g.10gb" and by_gpu["2/7"].util is not None
    assert all(s.mem_total_mib and s.temp_c and s.power_w for s in reading.samples)
