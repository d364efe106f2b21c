"""Shipped tokenizer, launcher args, log formats and NCCL lines (parsed by the cockpit's telemetry)."""

import random
from pathlib import Path

import pytest

from cockpit.telemetry import boot as boot_state
from cockpit.telemetry.vllm_events import EngineStats, SpecDecodeStats, parse_event
from cockpit_sim.engine import logs, nccl, text
from cockpit_sim.engine.args import parse, vllm_flags
from cockpit_sim.engine.boot import BootPlan, after_nccl
from cockpit_sim.engine.calibration import for_lane
from cockpit_sim.engine.runtime import build_rank, make_plan
from tests.replay import summarize_transport

HERE_ENV = {
    "NCCL_IB_HCA": "rocep1s0f0,roceP2p1s0f0",
    "NCCL_IB_GID_INDEX": "3",
    "NCCL_SOCKET_IFNAME": "enp1s0f0np0",
    "NCCL_MAX_NCHANNELS": "4",
}


def test_fast_encode_equals_the_shipped_tokenizer() -> None:
    rng = random.Random(7)
    alphabet = "abc XYZ\n\t.,!?üéñ中文😀<|>"
    for _ in range(200):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        s = text.render_chat([{"role": "user", "content": s}]) if rng.random() < 0.5 else s
        assert text.encode(s) == text.tokenizer().encode(s, add_special_tokens=False).ids


def test_transformers_loads_the_tokenizer_and_its_chat_template_matches() -> None:
    transformers = pytest.importorskip("transformers")
    tok = transformers.AutoTokenizer.from_pretrained(str(text.TOKENIZER_DIR))
    messages = [{"role": "system", "content": "ctx"}, {"role": "user", "content": "héllo"}]
    rendered = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert rendered == text.render_chat(messages)
    assert tok.encode(rendered, add_special_tokens=False) == text.encode(rendered)


def test_pseudo_text_is_deterministic_and_count_tokens_long() -> None:
    piece = text.pseudo_text(42, 10, 300)
    assert piece == text.pseudo_text(42, 10, 300)
    assert text.encode(piece) == text.pseudo_ids(42, 10, 300)
    assert text.pseudo_ids(42, 0, 310)[10:] == text.pseudo_ids(42, 10, 300)


def test_tokenizer_density_is_a_real_models() -> None:
    """About a token per word (a real model's 700 words → ~705 tokens), not one per byte: the
    engine's own words are one token each, the bench book's 1.4, common English about 1.2."""
    from cockpit.bench.prompts import book_text

    words = text.pseudo_text(3, 0, 2000).split()[:700]
    assert len(text.encode(" ".join(words))) <= 720
    book = " ".join(book_text().split()[:700])
    assert len(text.encode(book)) < 1.6 * 700
    assert len(book) / len(text.encode(book)) > 3.5  # characters per token, as real models
    english = (
        "The quick brown fox jumps over the lazy dog while the people of the city look at "
        "the river and the mountain, and every child wants to know where the water goes."
    )
    assert len(text.encode(english)) < 1.3 * len(english.split())


def test_provisioned_snapshots_carry_the_engine_tokenizer(tmp_path: Path) -> None:
    from cockpit_sim.engine.tokenizer.build import FILES
    from cockpit_sim.fleet.provision import SNAPSHOTS, copy_snapshot

    trees = sorted(p for p in SNAPSHOTS.glob("*/*") if p.is_dir())
    assert len(trees) == 3
    for tree in trees:
        repo, revision = tree.parent.name.replace("--", "/"), tree.name
        copy_snapshot(tmp_path, repo, revision, tree)
        model = tmp_path / "hf-cache" / "hub" / ("models--" + tree.parent.name)
        for name in FILES:
            copied = model / "snapshots" / revision / name
            assert copied.read_bytes() == (text.TOKENIZER_DIR / name).read_bytes()


def test_incremental_decoder_holds_back_a_split_character() -> None:
    ids = text.encode(" café")
    decoder = text.IncrementalDecoder()
    pieces = [decoder.feed([i]) for i in ids]
    assert "".join(pieces) == " café" and "" in pieces
    assert text.pseudo_ids(1, 0, 400, multibyte=True) != text.pseudo_ids(1, 0, 400)


def test_launcher_contract_parses_and_reports_non_default_args() -> None:
    args = parse(
        [
            "serve",
            "/c/models--XiaomiMiMo--MiMo-V2.6-Flash-MOPD/snapshots/5f1c",
            "--tensor-parallel-size", "4", "--nnodes", "4", "--node-rank", "2",
            "--master-addr", "127.0.0.5", "--headless",
            "--speculative-config", '{"method": "dflash", "num_speculative_tokens": 5}',
            "--compilation-config", '{"cudagraph_capture_sizes": [1, 2, 4, 96]}',
            "--hf-overrides", '{"x": 1}', "--no-enable-flashinfer-autotune",
            "--max_num_seqs=16", "--num-gpu-blocks-override", "4096",
        ]
    )  # fmt: skip
    assert (args.tensor_parallel_size, args.node_rank, args.headless) == (4, 2, True)
    assert args.num_spec_tokens == 5 and args.graph_max_tokens == 96
    assert args.spec_method == "dflash" and args.max_num_seqs == 16
    assert args.num_gpu_blocks_override == 4096 and args.kv_cache_memory_bytes is None
    assert args.non_default_args["hf_overrides"] == '{"x": 1}'
    assert args.non_default_args["enable_flashinfer_autotune"] is False
    assert "gpu_memory_utilization" not in args.non_default_args
    dotted = parse(["serve", "/m", "--speculative-config.method", "ngram",
                    "--speculative-config.num_speculative_tokens=3"])  # fmt: skip
    assert (dotted.spec_method, dotted.num_spec_tokens) == ("ngram", 3)


def test_an_option_vllm_lacks_is_refused_like_the_real_cli(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`vllm serve M --bogus-flag 1` on vLLM 0.32.0: the top-level usage, then argparse's error
    naming every left-over word, exit status 2 (checked against the real CPU build)."""
    with pytest.raises(SystemExit) as exited:
        parse(["serve", "/m", "--max-model-len", "4096", "--bogus-flag", "1"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "usage: vllm [-h] [-v]",
        "            {chat,complete,serve,launch,bench,collect-env,download-kernels,preload,"
        "run-batch,snapshot}",
        "            ...",
        "vllm: error: unrecognized arguments: --bogus-flag 1",
    ]
    # every option of the real CLI is known, abbreviations included (argparse's allow_abbrev)
    assert len(vllm_flags()) > 400
    assert (
        parse(["serve", "/m", "--max-model-le", "100", "--kernel-config", "{}"]).max_model_len
        == 100
    )


def test_stats_and_spec_lines_parse_as_vllm_lines() -> None:
    msg = logs.stats_message(6759.5, 0.8, 1, 1, 0.012, 0.0)
    event = parse_event(logs.line("APIServer", 1, "INFO", "loggers.py:257", msg, 0.0))
    assert isinstance(event, EngineStats)
    assert (event.prompt_tps, event.generation_tps, event.waiting) == (6759.5, 0.8, 1)
    spec = parse_event(logs.spec_message(10, 50, 22, [9, 7, 4, 2, 0], 10.0))
    assert isinstance(spec, SpecDecodeStats)
    assert spec.mean_acceptance_length == 3.2 and spec.drafted == 50


def test_boot_lines_walk_the_telemetry_boot_reducer_to_capture() -> None:
    args = parse(["serve", "/m/models--XiaomiMiMo--MiMo-V2.6-Flash-MOPD/snapshots/r"])
    cal = for_lane("flash", 4)
    gib, tokens = cal.kv_pool(0.85)
    plan = BootPlan(args, cal, "MiMoV2ForCausalLM", gib, tokens, autotune_cached=False, rank=0)
    state = boot_state.BootState()
    seen = set()
    for event in after_nccl(plan, "Initializing model took 0.41 seconds"):
        line = (
            event.msg
            if event.proc is None
            else logs.line(event.proc, 7, event.level, event.src, event.msg, 0.0)
        )
        state = boot_state.advance(state, line)
        seen.add(state.phase)
    assert boot_state.BootPhase.AUTOTUNE in seen
    assert state.autotune_total == 394 and state.kv_pool_tokens == tokens


def test_nccl_roce_on_configured_hcas_and_socket_fallback_on_a_missing_one() -> None:
    good = nccl.init_lines("dgx5", 9, 1, 4, HERE_ENV, nccl.DEFAULT_HCAS, "127.0.0.6", "m:1")
    assert "NET/IB : Using [0]rocep1s0f0:1/RoCE [1]roceP2p1s0f0:1/RoCE" in "\n".join(good)
    (summary,) = summarize_transport(good)
    assert summary.network == "IB"
    wrong = HERE_ENV | {"NCCL_IB_HCA": "mlx5_9"}
    bad = nccl.init_lines("dgx5", 9, 1, 4, wrong, nccl.DEFAULT_HCAS, "127.0.0.6", "m:1")
    assert any(ln.endswith("NET/IB : No device found.") for ln in bad)
    assert any(ln.endswith("Using network Socket") for ln in bad)
    (summary,) = summarize_transport(bad)
    assert summary.network == "Socket"


def test_plan_reads_the_snapshot_config(tmp_path: Path) -> None:
    snap = tmp_path / "models--XiaomiMiMo--MiMo-V2.6-Pro-MOPD" / "snapshots" / "adea8e2c5373"
    snap.mkdir(parents=True)
    snap.joinpath("config.json").write_text(
        '{"architectures": ["MiMoV2ForCausalLM"], "num_attention_heads": 96, '
        '"num_key_value_heads": 8, "max_position_embeddings": 131072}'
    )
    args = parse(["serve", str(snap), "--tensor-parallel-size", "8"])
    rank = build_rank(args, {"COCKPIT_SIM_NODE_DIR": str(tmp_path / "node")})
    plan = make_plan(rank)
    assert plan.cal.key == "pro-tp8" and plan.cal.num_attention_heads == 96
    assert plan.max_model_len == 131072 and plan.architecture == "MiMoV2ForCausalLM"
    assert not plan.autotune_cached
