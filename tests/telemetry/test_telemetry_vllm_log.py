"""vLLM log lines → records and events; the boot progress reducer."""

import pytest

from cockpit.telemetry import vllm_events as ev
from cockpit.telemetry import vllm_log as v
from cockpit.telemetry.boot import BootPhase, BootState, BootTracker, advance

REAL_LOG = "vllm-0.32-cpu/serve.log"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "(APIServer pid=11958) INFO 11-29 19:06:27 [entry.py:140] Starting vLLM server on x",
            v.LogLine(
                "",
                "Starting vLLM server on x",
                "INFO",
                "11-29 19:06:27",
                "entry.py:140",
                "APIServer",
                11958,
            ),
        ),
        (
            "INFO 06-02 11:03:18 [kv_cache_utils.py:637] GPU KV cache size: 1,131,008 tokens",
            v.LogLine(
                "",
                "GPU KV cache size: 1,131,008 tokens",
                "INFO",
                "06-02 11:03:18",
                "kv_cache_utils.py:637",
            ),
        ),
        (
            "INFO 12-19 22:58:41 model_runner.py:1535] Graph capturing finished in 14 secs",
            v.LogLine(
                "",
                "Graph capturing finished in 14 secs",
                "INFO",
                "12-19 22:58:41",
                "model_runner.py:1535",
            ),
        ),
        (
            "\x1b[0;36m(EngineCore_DP0 pid=185)\x1b[0;0m WARNING 10-24 13:22:34 [a.py:1] careful",
            v.LogLine("", "careful", "WARNING", "10-24 13:22:34", "a.py:1", "EngineCore_DP0", 185),
        ),
        (
            "2026-10-03T09:31:42.123456789Z INFO:     Application startup complete.",
            v.LogLine("", "Application startup complete.", "INFO"),
        ),
        (
            "[rank1]:[E1003 17:08:12.418329612 ProcessGroupNCCL.cpp:685] [Rank 1] boom",
            v.LogLine("", "[Rank 1] boom", "ERROR", "1003 17:08:12", "ProcessGroupNCCL.cpp:685"),
        ),
        ("Loading a\rLoading b\r", v.LogLine("", "Loading b")),
        ("", v.LogLine("", "")),
    ],
)
def test_parse_log_line(line, expected):
    got = v.parse_log_line(line)
    assert got.raw == line
    assert got == v.LogLine(line, *list(vars(expected).values())[1:])


def test_real_serve_log_events(fixture_text):
    events = [e for e in map(ev.parse_event, fixture_text(REAL_LOG).splitlines()) if e]
    kinds = [type(e).__name__ for e in events]
    assert kinds[:9] == [
        "WeightsProgress",
        "WeightsProgress",
        "WeightsLoaded",
        "CompileStarted",  # the CPU model runner's torch.compile warm-up: 29 s of this log
        "CompileDone",
        "KvCacheSize",
        "EngineInitDone",
        "ServerStarting",
        "StartupComplete",
    ]
    assert events[5] == ev.KvCacheSize(2_097_152, "CPU", 512.0, 4096)
    assert events[6] == ev.EngineInitDone(31.33)
    assert events[7] == ev.ServerStarting("http://127.0.0.1:18000")
    stats = [e for e in events if isinstance(e, ev.EngineStats)]
    assert len(stats) == 6 and kinds[9:] == ["EngineStats"] * 6
    busy = stats[4]
    assert (busy.prompt_tps, busy.generation_tps, busy.running, busy.waiting) == (44.4, 982.1, 2, 0)
    assert (busy.kv_device, busy.kv_usage_pct, busy.prefix_hit_pct) == ("CPU", 0.2, 38.1)
    # warnings, deprecation notices and leak reports of the real log are not failures
    assert not any(isinstance(e, ev.ErrorLine) for e in events)


@pytest.mark.parametrize(
    ("line", "event"),
    [
        (
            "(APIServer pid=1) INFO 02-08 05:50:42 [loggers.py:257] Engine 000: Avg prompt "
            "throughput: 5698.1 tokens/s, Avg generation throughput: 19.9 tokens/s, Running: 1 reqs,"
            " Waiting: 0 reqs, GPU KV cache usage: 2.2%, Prefix cache hit rate: 0.0%",
            ev.EngineStats(0, None, 5698.1, 19.9, 1, 0, None, None, "GPU", 2.2, 0.0, None, None),
        ),
        (
            "Engine 001: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 52.1 "
            "tokens/s, Running: 2 reqs, Waiting: 0 reqs, Deferred: 3 reqs, Preemptions: 4, GPU KV "
            "cache usage: 10.4%, Prefix cache hit rate: 49.8%, External prefix cache hit rate: "
            "1.5%, MM cache hit rate: 7.0%",
            ev.EngineStats(1, None, 0.0, 52.1, 2, 0, 3, 4, "GPU", 10.4, 49.8, 1.5, 7.0),
        ),
        (
            "2 Engines Aggregated: Avg prompt throughput: 8192.0 tokens/s, Avg generation "
            "throughput: 88.4 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: "
            "12.0%, Prefix cache hit rate: 51.2%",
            ev.EngineStats(None, 2, 8192.0, 88.4, 3, 0, None, None, "GPU", 12.0, 51.2, None, None),
        ),
        (
            "SpecDecoding metrics: Mean acceptance length: 2.85, Accepted throughput: 41.30 "
            "tokens/s, Drafted throughput: 112.50 tokens/s, Accepted: 413 tokens, Drafted: 1125 "
            "tokens, Per-position acceptance rate: 0.791, 0.524, 0.311, Avg Draft acceptance rate:"
            " 36.7%",
            ev.SpecDecodeStats(2.85, 41.3, 112.5, 413, 1125, (0.791, 0.524, 0.311), 36.7),
        ),
        (
            "Loading safetensors checkpoint shards:  42% Completed | 5/12 [00:41<00:57,  8.21s/it]",
            ev.WeightsProgress(42.0, 5, 12),
        ),
        ("Loading weights took 97.71 seconds", ev.WeightsLoaded(97.71)),
        (
            "Model loading took 87.1243 GiB memory and 100.412733 seconds",
            ev.ModelLoaded(87.1243, 100.412733),
        ),
        ("Model loading took 87.1243 GiB and 100.4 seconds", ev.ModelLoaded(87.1243, 100.4)),
        ("Available KV cache memory: 26.76 GiB", ev.KvCacheMemory(26.76)),
        ("GPU KV cache size: 3,570,000 tokens", ev.KvCacheSize(3_570_000, "GPU")),
        (
            "GPU KV cache size: 654,336 tokens, Maximum concurrency for 524,288 tokens per "
            "request: 1.25x",
            ev.KvCacheSize(654_336, "GPU", 1.25, 524_288),
        ),
        (
            "Maximum concurrency for 524,288 tokens per request: 1.25x",
            ev.MaxConcurrency(524_288, 1.25),
        ),
        (
            "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  51%|█████     | 34/67 "
            "[00:07<00:06,  4.87it/s]",
            ev.GraphCaptureProgress("mixed prefill-decode, PIECEWISE", 51.0, 34, 67),
        ),
        (
            "Capturing CUDA graph shapes: 100%|██████████| 35/35 [00:13<00:00,  2.51it/s]",
            ev.GraphCaptureProgress(None, 100.0, 35, 35),
        ),
        ("Graph capturing finished in 22 secs, took 1.12 GiB", ev.GraphCaptureDone(22.0, 1.12)),
        (
            "init engine (profile, create kv cache, warmup model) took 1132.52 seconds",
            ev.EngineInitDone(1132.52),
        ),
        (
            "Starting vLLM API server 0 on http://0.0.0.0:30000",
            ev.ServerStarting("http://0.0.0.0:30000"),
        ),
        (
            "Starting vLLM API server on http://0.0.0.0:8000",
            ev.ServerStarting("http://0.0.0.0:8000"),
        ),
        ("INFO:     Application startup complete.", ev.StartupComplete()),
        (
            "[b12x] autotune: candidate 17/394 (mxfp4 moe_gemm tile=128x256x128)",
            ev.AutotuneProgress(17, 394, "mxfp4 moe_gemm tile=128x256x128"),
        ),
        ("[b12x] autotune: candidate 3/394", ev.AutotuneProgress(3, 394, None)),
        ("[b12x] autotune: done, 394 candidates in 912.4 s", ev.AutotuneDone(394, 912.4, False)),
        (
            "[b12x] autotune: selection cache hit, 394 candidates skipped",
            ev.AutotuneDone(394, None, True),
        ),
        (
            "No available shared memory broadcast block found in 60 seconds. This typically ...",
            ev.HangHint(
                60,
                "No available shared memory broadcast block found in 60 seconds. "
                "This typically ...",
            ),
        ),
        (
            "Traceback (most recent call last):",
            ev.ErrorLine("traceback", "Traceback (most recent call last):"),
        ),
        ("ValueError: bad flag", ev.ErrorLine("exception", "ValueError: bad flag")),
        (
            "torch.OutOfMemoryError: CUDA out of memory.",
            ev.ErrorLine("exception", "torch.OutOfMemoryError: CUDA out of memory."),
        ),
        (
            "ERROR 10-03 09:31:15 [core.py:708] EngineCore failed to start.",
            ev.ErrorLine("error", "EngineCore failed to start."),
        ),
        ('ERROR 10-03 09:31:15 [core.py:708]   File "x.py", line 3, in f', None),
        ("WARNING 11-29 19:05:30 [s.py:1] OSError: [Errno 24] hint only", None),
        ("/srv/x.py:24: DeprecationWarning: old", None),
        ("Route: /metrics, Methods: GET", None),
        ("Engine 000: Avg prompt throughput: garbage", None),
        ("\x00\x01\x02", None),
    ],
)
def test_parse_event(line, event):
    assert ev.parse_event(line) == event


def _run(lines) -> BootState:
    tracker = BootTracker()
    for line in lines:
        tracker.feed(line)
    return tracker.state


def test_boot_first_spark_boot_phases_in_order(fixture_text):
    state, phases = BootState(), []
    for line in fixture_text("vllm_boot_spark_first.log").splitlines():
        state = advance(state, line)
        if not phases or phases[-1] != state.phase:
            phases.append(state.phase)
    assert phases == [
        BootPhase.STARTING,
        BootPhase.LOADING_WEIGHTS,
        BootPhase.PROFILING,
        BootPhase.AUTOTUNE,
        BootPhase.PROFILING,
        BootPhase.CAPTURING_GRAPHS,
        BootPhase.PROFILING,
        BootPhase.STARTING_SERVER,
        BootPhase.READY,
    ]
    assert state.ready and not state.failed
    assert (state.autotune_done, state.autotune_total, state.autotune_cached) == (394, 394, False)
    assert state.kv_pool_tokens == 654_336 and state.kv_cache_gib == 12.48
    assert state.max_concurrency == 1.25 and state.model_gib == 87.1243
    assert state.graph_seconds == 22 and state.init_seconds == 1132.52
    assert state.server_url == "http://0.0.0.0:30000"


def test_boot_progress_percentages(fixture_text):
    lines = fixture_text("vllm_boot_spark_first.log").splitlines()
    states = {}
    state = BootState()
    for line in lines:
        state = advance(state, line)
        states[line] = state
    weights = next(s for text, s in states.items() if "5/12" in text)
    assert weights.phase is BootPhase.LOADING_WEIGHTS and weights.percent == 42.0
    autotune = next(s for text, s in states.items() if "candidate 197/394" in text)
    assert autotune.phase is BootPhase.AUTOTUNE and autotune.percent == pytest.approx(50.0)
    graphs = next(s for text, s in states.items() if "8/35" in text)
    assert graphs.graph_label == "decode, FULL" and graphs.percent == 23.0


def test_second_boot_skips_autotune(fixture_text):
    state = _run(fixture_text("vllm_boot_spark_second.log").splitlines())
    assert state.ready and state.autotune_cached and state.autotune_done == 394
    assert state.kv_pool_tokens == 654_336 and state.max_concurrency == 1.25
    assert state.server_url == "http://0.0.0.0:8000"


def test_real_cpu_boot_reaches_ready(fixture_text):
    state = _run(fixture_text(REAL_LOG).splitlines())
    assert state.ready and state.kv_pool_tokens == 2_097_152 and state.failed_line is None


@pytest.mark.parametrize(
    ("fixture", "decisive"),
    [
        (
            "vllm_boot_conflicting_flags.log",
            "ValueError: --no-enable-flashinfer-autotune and --kernel-config "
            "enable_flashinfer_autotune are mutually exclusive",
        ),
        (
            "vllm_boot_kv_oom.log",
            "ValueError: No available memory for the cache blocks. Try increasing "
            "`gpu_memory_utilization` when initializing the engine.",
        ),
        ("vllm_boot_nccl_timeout.log", "[Rank 1] Watchdog caught collective operation timeout"),
    ],
)
def test_boot_failure_keeps_the_decisive_line(fixture_text, fixture, decisive):
    state = _run(fixture_text(fixture).splitlines())
    assert state.failed and state.phase is BootPhase.FAILED
    assert state.failed_line.startswith(decisive)


def test_after_ready_errors_and_hang_hints_are_recorded_not_fatal(fixture_text):
    state = _run(fixture_text("vllm_hang_after_ready.log").splitlines())
    assert state.ready
    assert state.hang_hint.startswith("No available shared memory broadcast block found")
    assert "Watchdog caught collective operation timeout" in state.last_error


def test_garbage_leaves_boot_state_unchanged():
    state = BootState()
    for junk in ["", "\x1b[2K", "%%%", "Engine 000:", "Capturing CUDA graphs: x%"]:
        assert advance(state, junk) == state


def test_the_real_logs_access_lines_are_routine_and_nothing_else_is(fixture_text):
    """vLLM 0.32's own log: 120 access lines (health, models, version, metrics, chat and text
    completions), folded; the stats, route list and startup lines around them are not."""
    lines = fixture_text(REAL_LOG).splitlines()
    routine = [line for line in lines if v.routine_access(line)]
    assert len(routine) == sum(' HTTP/1.1" 200 OK' in line for line in lines) == 120
    assert {line.split('"')[1].split()[1] for line in routine} == {
        "/health", "/v1/models", "/version", "/metrics", "/v1/chat/completions", "/v1/completions",
    }  # fmt: skip
    kept = [line for line in lines if not v.routine_access(line)]
    assert sum("Engine 000: Avg prompt throughput" in line for line in kept) == 6
    assert any("Route: /v1/completions, Methods: POST" in line for line in kept)
    assert "INFO:     Application startup complete." in kept


@pytest.mark.parametrize(
    ("line", "routine"),
    [
        # the shapes a container log gives: vLLM's process tag, docker's timestamp, colours
        ('(APIServer pid=1) INFO:     172.18.0.3:46876 - "GET /v1/models HTTP/1.1" 200 OK', True),
        (
            '2026-10-02T19:06:27.123456789Z INFO:     127.0.0.1:1 - "GET /metrics HTTP/1.1" 200 OK',
            True,
        ),
        (
            '\x1b[32mINFO\x1b[0m:     127.0.0.1:5 - "\x1b[1mPOST /v1/completions HTTP/1.1\x1b[0m" '
            "\x1b[32m200 OK\x1b[0m",
            True,
        ),
        ('INFO:     ::1:40000 - "GET /health HTTP/1.1" 204 No Content', True),
        ('INFO:     - "GET /metrics HTTP/1.1" 200 OK', True),  # no client address
        ('INFO:     127.0.0.1:9 - "GET /ping HTTP/1.0" 307 Temporary Redirect', True),
        # a failed request stays in view
        ('INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request', False),
        (
            'INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server '
            "Error",
            False,
        ),
        # lines that only mention a request
        (
            '(APIServer pid=1) WARNING 11-29 19:06:27 [serving.py:1] client "GET /x HTTP/1.1" 200',
            False,
        ),
        (
            "(APIServer pid=1) INFO 11-29 19:06:27 [launcher.py:195] Route: /metrics, Methods: GET",
            False,
        ),
        ("INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)", False),
        ('127.0.0.1 - - [02/Oct/2026:19:06:27 +0000] "GET /metrics HTTP/1.1" 200 12', False),
        ("", False),
    ],
)
def test_routine_access_lines(line, routine):
    assert v.routine_access(line) is routine
