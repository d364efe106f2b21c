"""The engine as a process: real clients (openai, prometheus_client) against it on loopback."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from cockpit_sim.engine import text
from cockpit_sim.engine.calibration import for_lane
from tests.sim_engine.engine_proc import FLASH, SMALL, EngineProc, start

FLASH_ARGS = (
    "--tensor-parallel-size", "4", "--served-model-name", "mimo26-flash",
    "--max-model-len", "524288", "--max-num-seqs", "16", "--max-num-batched-tokens", "8192",
    "--gpu-memory-utilization", "0.85", "--kv-cache-dtype", "bfloat16",
    "--speculative-config", '{"method": "dflash", "num_speculative_tokens": 5}',
    "--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32, 64, 96]}',
    "--enable-prefix-caching", "--trust-remote-code",
)  # fmt: skip


@pytest.fixture
def procs() -> Iterator[list[EngineProc]]:
    started: list[EngineProc] = []
    yield started
    for proc in started:
        proc.stop()


@pytest.fixture
def flash(procs: list[EngineProc], tmp_path: Path) -> EngineProc:
    proc = start(tmp_path / "dgx5", FLASH, *FLASH_ARGS, speed=5000)
    procs.append(proc)
    assert proc.wait_for("Application startup complete.", 60), proc.text()[-3000:]
    return proc


def test_openai_client_streams_a_chat_completion(flash: EngineProc) -> None:
    client = openai.OpenAI(base_url=flash.url + "/v1", api_key="sk-none")
    stream = client.chat.completions.create(
        model="mimo26-flash",
        messages=[{"role": "user", "content": "Tell me about GB10."}],
        max_tokens=40,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert len(text.encode(content)) == 40
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 40
    finish = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finish == ["length"]
    reply = client.chat.completions.create(
        model="mimo26-flash", messages=[{"role": "user", "content": "hi"}]
    )
    assert reply.choices[0].finish_reason == "stop"
    assert reply.usage is not None and reply.usage.completion_tokens == len(
        text.encode(reply.choices[0].message.content or "")
    )


def test_metrics_parse_with_vllm_names(flash: EngineProc) -> None:
    prompt = " hello" * 500
    httpx.post(
        flash.url + "/v1/completions",
        json={"model": "mimo26-flash", "prompt": prompt, "max_tokens": 600},
        timeout=30,
    ).raise_for_status()
    body = httpx.get(flash.url + "/metrics", timeout=10).text
    families = {f.name: f for f in text_string_to_metric_families(body)}
    for name in (
        "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
        "vllm:prompt_tokens", "vllm:generation_tokens", "vllm:time_to_first_token_seconds",
        "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
        "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
        "vllm:request_decode_time_seconds", "vllm:prefix_cache_queries", "vllm:prefix_cache_hits",
        "vllm:num_preemptions", "vllm:cache_config_info", "vllm:request_success",
        "vllm:spec_decode_num_drafts", "vllm:spec_decode_num_accepted_tokens_per_pos",
    ):  # fmt: skip
        assert name in families, name
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in families.values() for s in f.samples}  # fmt: skip
    labels = (("engine", "0"), ("model_name", "mimo26-flash"))
    assert samples[("vllm:generation_tokens_total", labels)] == 600
    assert samples[("vllm:prompt_tokens_total", labels)] == len(text.encode(prompt))
    length = tuple(sorted((*labels, ("finished_reason", "length"))))
    assert samples[("vllm:request_success_total", length)] == 1
    assert samples[("vllm:spec_decode_num_draft_tokens_total", labels)] > 0
    log = flash.text()
    assert "Engine 000: Avg prompt throughput: " in log and "SpecDecoding metrics: " in log
    info = next(s for s in families["vllm:cache_config_info"].samples)
    assert info.labels["block_size"] == "16" and int(info.labels["num_gpu_blocks"]) > 300_000


def test_status_view_errors_and_speed_header(flash: EngineProc) -> None:
    status = httpx.get(flash.url + "/v1/sparkring/status/view", timeout=10)
    view = status.json()
    assert view["phase"] == "serving" and view["lane"] == "flash-tp4"
    assert view["kv_pool"]["tokens"] > 5_000_000 and view["speed"] == 5000
    assert status.headers["X-Sparkring-Sim-Speed"] == "5000.0"
    too_many = httpx.post(
        flash.url + "/v1/completions", json={"prompt": "y", "max_tokens": 600_000}, timeout=10
    )
    assert too_many.status_code == 400 and too_many.json()["error"]["param"] == "max_tokens"
    assert "cannot be greater than max_model_len=524288" in too_many.json()["error"]["message"]
    assert httpx.get(flash.url + "/health", timeout=10).status_code == 200


def _published(node: Path, phase: str, timeout: float = 5.0) -> dict[str, object]:
    """The node's gpu_load.json once it shows `phase` (it is rewritten every 0.25 s)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            load = json.loads((node / "gpu_load.json").read_text())
        except (OSError, ValueError):
            load = {}
        if load.get("phase") == phase or time.monotonic() > deadline:
            return load
        time.sleep(0.05)


def test_boot_log_and_second_boot_skips_the_autotune(
    procs: list[EngineProc], tmp_path: Path
) -> None:
    node = tmp_path / "dgx6"
    first = start(node, FLASH, *FLASH_ARGS, speed=20000)
    procs.append(first)
    assert first.wait_for("Application startup complete.", 60)
    log = first.text()
    assert "[b12x] autotune: candidate 394/394" in log
    assert "[backbone] Dynamo bytecode transform time: " in log  # torch.compile warm-up
    assert "[backbone] saved AOT compiled function to ~/.cache/vllm/torch_compile_cache/" in log
    assert "GPU KV cache size: " in log and "tokens, Maximum concurrency for 524,288" in log
    assert "GPU KV cache size: " in log and "Graph capturing finished" in log
    load = _published(node, "idle")
    assert load["util"] == 0 and load["mem_used_mib"] > 90_000 and load["power_w"] < 20
    first.stop()
    assert first.proc.returncode == 0
    assert not (node / "gpu_load.json").exists()
    second = start(node, FLASH, *FLASH_ARGS, speed=20000)
    procs.append(second)
    assert second.wait_for("Application startup complete.", 60)
    log = second.text()
    assert "[b12x] autotune: selection cache hit, 394 candidates skipped" in log
    assert "autotune: candidate" not in log
    assert "[backbone] Directly load AOT compilation from path" in log
    assert "Dynamo bytecode transform time" not in log


def test_two_ranks_rendezvous_follow_the_head_and_fall_back_to_socket(
    procs: list[EngineProc], tmp_path: Path
) -> None:
    from tests.sim_engine.engine_proc import free_address

    head_host, port = free_address()
    _, master_port = free_address(head_host)
    common = ("--tensor-parallel-size", "2", "--nnodes", "2", "--master-addr", head_host,
              "--master-port", str(master_port))  # fmt: skip
    worker = start(
        tmp_path / "dgx2", SMALL, *common, "--node-rank", "1", "--headless", speed=200,
        env={"NCCL_IB_HCA": "rocep1s0f1"}, node={"hcas": ["rocep1s0f0", "roceP2p1s0f0"]},
    )  # fmt: skip
    procs.append(worker)
    head = start(tmp_path / "dgx1", SMALL, *common, speed=200, host_port=(head_host, port))
    procs.append(head)
    assert head.wait_for("Application startup complete.", 30), head.text()[-2000:]
    assert "Using network IB" in head.text()
    assert worker.wait_for("Graph capturing finished", 30)
    wlog = worker.text()
    assert "NET/IB : No device found." in wlog and "Using network Socket" in wlog
    assert "(Worker_TP1 pid=" in wlog and "APIServer" not in wlog
    assert (tmp_path / "dgx2" / "gpu_load.json").exists()
    head.proc.kill()
    assert worker.wait_exit(20) == 1
    assert "Connection closed by peer" in worker.text()


@pytest.mark.parametrize(
    ("fault", "needle"),
    [
        ("weights_crash", "safetensors_rust.SafetensorError"),
        ("kv_oom", "torch.OutOfMemoryError: CUDA out of memory"),
        ("nccl_timeout", "Watchdog caught collective operation timeout"),
    ],
)
def test_boot_faults_print_the_real_failure_and_exit_1(
    procs: list[EngineProc], tmp_path: Path, fault: str, needle: str
) -> None:
    proc = start(tmp_path / "dgx3", SMALL, speed=500, node={"faults": {fault: True}})
    procs.append(proc)
    assert proc.wait_exit(30) == 1
    assert needle in proc.text()
    assert "Application startup complete." not in proc.text()


def test_hang_after_start_accepts_but_never_answers(
    procs: list[EngineProc], tmp_path: Path
) -> None:
    proc = start(tmp_path / "dgx4", SMALL, speed=500, node={"faults": {"hang_after_start": True}})
    procs.append(proc)
    assert proc.wait_for("Application startup complete.", 30)
    assert httpx.get(proc.url + "/health", timeout=5).status_code == 200
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            proc.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 4}, timeout=1.0
        )
    assert proc.wait_for("No available shared memory broadcast block found", 10)
    assert httpx.get(proc.url + "/v1/sparkring/status/view", timeout=5).json()["phase"] == "hung"


def test_exit_traceback_kills_the_engine_on_its_first_request(
    procs: list[EngineProc], tmp_path: Path
) -> None:
    proc = start(tmp_path / "dgx7", SMALL, speed=500, node={"faults": {"exit_traceback": True}})
    procs.append(proc)
    assert proc.wait_for("Application startup complete.", 30)
    with pytest.raises(httpx.HTTPError):
        httpx.post(
            proc.url + "/v1/completions", json={"prompt": "hi", "max_tokens": 400}, timeout=10
        )
    assert proc.wait_exit(10) == 1
    assert "EngineDeadError" in proc.text() and "illegal memory access" in proc.text()


def test_pro_at_tp6_is_not_buildable(procs: list[EngineProc], tmp_path: Path) -> None:
    """Seed §4: 128 q-heads do not split over 6 ranks; vLLM's divide() rejects it at build."""
    pro = "/hf/models--XiaomiMiMo--MiMo-V2.6-Pro-MOPD/snapshots/adea8e2c5373"
    proc = start(tmp_path / "dgx8", pro, "--tensor-parallel-size", "6", speed=500)
    procs.append(proc)
    assert proc.wait_exit(30) == 1
    assert (
        "Total number of attention heads (128) must be divisible by tensor parallel size (6)"
        in (proc.text())
    )


def test_boot_speed_scales_only_the_boot(procs: list[EngineProc], tmp_path: Path) -> None:
    """A first flash boot is minutes of engine time (weights, 394-candidate autotune, capture): at
    boot speed 20000 it takes about a second of wall time, logs engine seconds, then serves at 5."""
    began = time.monotonic()
    proc = start(tmp_path / "dgx9", FLASH, *FLASH_ARGS, speed=5, boot_speed=20000)
    procs.append(proc)
    assert proc.wait_for("Application startup complete.", 60), proc.text()[-3000:]
    cal = for_lane("flash", 4)
    at_serving_speed = (cal.weights_load_s + cal.autotune_s) / 5  # over 5 minutes
    boot_wall = time.monotonic() - began
    assert boot_wall < min(20.0, at_serving_speed / 10), boot_wall
    log = proc.text()
    assert f"Loading weights took {cal.weights_load_s:.2f} seconds" in log
    assert f"autotune: done, 394 candidates in {cal.autotune_s:.1f} s" in log
    view = httpx.get(proc.url + "/v1/sparkring/status/view", timeout=10).json()
    assert view["speed"] == 5


def test_num_gpu_blocks_override_sizes_the_pool(procs: list[EngineProc], tmp_path: Path) -> None:
    proc = start(tmp_path / "dgx10", SMALL, "--num-gpu-blocks-override", "512",
                 "--max-model-len", "4096", speed=500)  # fmt: skip
    procs.append(proc)
    assert proc.wait_for("Application startup complete.", 30), proc.text()[-2000:]
    assert "with num_gpu_blocks_override=512" in proc.text()
    assert "GPU KV cache size: 8,192 tokens" in proc.text()
    view = httpx.get(proc.url + "/v1/sparkring/status/view", timeout=10).json()
    assert view["kv_pool"]["num_blocks"] == 512 and view["kv_pool"]["tokens"] == 8192
    body = httpx.get(proc.url + "/metrics", timeout=10).text
    info = next(s for f in text_string_to_metric_families(body) for s in f.samples
                if s.name == "vllm:cache_config_info")  # fmt: skip
    assert info.labels["num_gpu_blocks"] == "512"
    assert info.labels["num_gpu_blocks_override"] == "512"
    assert info.labels["kv_cache_memory_bytes"] == "None"


def test_an_unknown_flag_ends_the_engine_as_vllm_serve_does(tmp_path: Path) -> None:
    proc = start(tmp_path / "dgx11", SMALL, "--enable-warp-drive", speed=500)
    assert proc.wait_exit(30) == 2
    assert proc.text().endswith("vllm: error: unrecognized arguments: --enable-warp-drive\n")
