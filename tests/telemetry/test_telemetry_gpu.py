"""nvidia-smi CSV (header/noheader, units/nounits, loop mode), compute apps, meminfo, memory view."""

import pytest

from cockpit.telemetry.gpu import (
    GPU_QUERY_FIELDS,
    ComputeApp,
    GpuCsvStream,
    GpuSample,
    MemInfo,
    node_memory_view,
    parse_compute_apps,
    parse_meminfo,
    parse_query_gpu,
)

GB10_BUSY = GpuSample(
    index=0,
    name="NVIDIA GB10",
    utilization_pct=96.0,
    temperature_c=71.0,
    power_w=88.42,
    clock_sm_mhz=2405.0,
    clock_mem_mhz=4266.0,
)
GB10_IDLE = GpuSample(
    index=0,
    name="NVIDIA GB10",
    utilization_pct=0.0,
    temperature_c=35.0,
    power_w=11.17,
    clock_sm_mhz=208.0,
    clock_mem_mhz=4266.0,
)


@pytest.mark.parametrize(
    ("fixture", "fields", "expected"),
    [
        ("smi_gb10_units.csv", None, [GB10_BUSY]),
        ("smi_gb10_nounits_noheader.csv", GPU_QUERY_FIELDS, [GB10_IDLE]),
        (
            "smi_gb10_summary_fields.csv",
            None,
            [GpuSample(utilization_pct=0.0, power_w=11.17, temperature_c=35.0)],
        ),
        # noheader without the caller's field list cannot be read: nothing, not a guess
        ("smi_gb10_nounits_noheader.csv", None, []),
    ],
)
def test_query_gpu_forms(fixture_text, fixture, fields, expected):
    assert parse_query_gpu(fixture_text(fixture), fields) == expected


def test_query_gpu_discrete_has_numeric_memory_and_not_supported(fixture_text):
    first, second = parse_query_gpu(fixture_text("smi_discrete_units.csv"))
    assert first.has_memory and first.memory_used_mib == 74250.0 and first.index == 0
    assert second.utilization_pct is None and second.power_w is None and second.index == 1


def test_gb10_memory_fields_are_none():
    (sample,) = parse_query_gpu(
        "memory.total [MiB], memory.free [MiB], index, name\n[N/A], [N/A], 0, NVIDIA GB10\n"
    )
    assert sample.memory_total_mib is None and sample.memory_free_mib is None
    assert not sample.has_memory


def test_loop_mode_repeated_header_blank_and_garbage_lines(fixture_text):
    stream = GpuCsvStream()
    samples = [
        s for s in map(stream.feed, fixture_text("smi_gb10_loop_lms500.csv").split("\n")) if s
    ]
    assert [s.utilization_pct for s in samples] == [3.0, 88.0, 97.0, 100.0]
    assert samples[-1].power_w == 93.01 and samples[-1].clock_sm_mhz == 2405.0


def test_unknown_fields_are_ignored_not_fatal():
    text = "pstate, index, pci.bus_id, utilization.gpu [%]\nP0, 0, 0000000F:01:00.0, 7 %\n"
    assert parse_query_gpu(text) == [GpuSample(index=0, utilization_pct=7.0)]


def test_loop_mode_header_switch_changes_columns():
    stream = GpuCsvStream(["index", "utilization.gpu"])
    assert stream.feed("0, 5") == GpuSample(index=0, utilization_pct=5.0)
    assert stream.feed("temperature.gpu, index") is None
    assert stream.feed("44, 0") == GpuSample(index=0, temperature_c=44.0)


@pytest.mark.parametrize(
    "garbage",
    ["", "\x00\x01", "0, NVIDIA GB10, abc %, 1, 2, 3, 4, [N/A], [N/A], [N/A]", ",,,,", "[N/A]"],
)
def test_garbage_never_raises(garbage):
    assert parse_query_gpu(garbage, GPU_QUERY_FIELDS) == []


def test_compute_apps(fixture_text):
    assert parse_compute_apps(fixture_text("smi_compute_apps.csv")) == [
        ComputeApp(41870, "VLLM::EngineCore", 97012.0),
        ComputeApp(41911, "/usr/bin/python3", None),
    ]
    assert parse_compute_apps(fixture_text("smi_compute_apps_header_only.csv")) == []
    assert parse_compute_apps("No running processes found\n41870, x, 12\n") == [
        ComputeApp(41870, "x", 12.0)
    ]


def test_meminfo(fixture_text):
    info = parse_meminfo(fixture_text("meminfo_gb10.txt"))
    assert info == MemInfo(125514044 * 1024, 21650128 * 1024, 9873312 * 1024, swap_used_bytes=0)
    assert info.used_bytes == (125514044 - 21650128) * 1024
    assert parse_meminfo("MemTotal: 10 kB\n") is None
    assert parse_meminfo("garbage") is None


def test_memory_view_unified_memory_comes_from_meminfo(fixture_text):
    gpus = parse_query_gpu(fixture_text("smi_gb10_units.csv"))
    apps = parse_compute_apps(fixture_text("smi_compute_apps.csv"))
    view = node_memory_view(gpus, parse_meminfo(fixture_text("meminfo_gb10.txt")), apps)
    assert view is not None and view.source == "meminfo"
    assert view.total_mib == pytest.approx(125514044 / 1024)
    assert view.used_mib == pytest.approx((125514044 - 21650128) / 1024)
    assert view.gpu_apps_mib == 97012.0
    assert 80 < view.used_pct < 85


def test_memory_view_discrete_gpu_prefers_nvidia_smi(fixture_text):
    gpus = parse_query_gpu(fixture_text("smi_discrete_units.csv"))
    view = node_memory_view(gpus, parse_meminfo(fixture_text("meminfo_gb10.txt")))
    assert view is not None and view.source == "nvidia-smi"
    assert view.total_mib == 2 * 81559 and view.used_mib == 74250 + 74248
    assert view.free_mib == 2 * 81559 - (74250 + 74248)


def test_memory_view_without_any_source():
    assert node_memory_view([GB10_IDLE], None) is None
