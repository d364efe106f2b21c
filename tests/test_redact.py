"""The redactor (by name, by shape, by remembered value) and the escaping of control characters,
on the lines the cockpit really prints; and that events pass through it."""

from __future__ import annotations

import pytest

from cockpit.events import Notice, Severity, StepFinished
from cockpit.printable import printable
from cockpit.redact import REDACTED, is_secret_name, redact, redact_argv, remember, shown
from cockpit_sim.tools.envfile import EnvFileError, read_env_file

SK = "sk-proj-" + "A1b2C3d4" * 4
HF = "hf_" + "x9Y8z7W6" * 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HF_TOKEN=abc123", "HF_TOKEN=<redacted>"),
        ('VLLM_API_KEY="a b" NEXT=1', 'VLLM_API_KEY="<redacted>" NEXT=1'),
        ("--api-key tok123 --port 8000", "--api-key <redacted> --port 8000"),
        ("--api-key=tok123", "--api-key=<redacted>"),
        ("--hf-token --port 1", "--hf-token --port 1"),  # a bare flag: nothing to hide
        (
            "non-default args: {'model': '/m', 'api_key': 'tok123', 'port': 30000}",
            "non-default args: {'model': '/m', 'api_key': '<redacted>', 'port': 30000}",
        ),
        ("'api_key': ['k1', 'k2']", "'api_key': ['<redacted>', '<redacted>']"),
        ('{"token": "t0k"}', '{"token": "<redacted>"}'),
        (f"echo {SK} and {HF}", "echo <redacted> and <redacted>"),
        ("Authorization: Bearer abcdefgh12345", "Authorization: Bearer <redacted>"),
        ("https://user:pa55word@registry.lan/v2/", "https://user:<redacted>@registry.lan/v2/"),
        ("AKIAABCDEFGHIJKLMNOP", "<redacted>"),
    ],
)
def test_secrets_are_found_by_name_and_by_shape(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "(APIServer pid=1) INFO 02-08 05:50:42 [loggers.py:257] Engine 000: Avg prompt throughput:"
        " 5698.1 tokens/s, Avg generation throughput: 19.9 tokens/s, Running: 1 reqs, Waiting: 0"
        " reqs, GPU KV cache usage: 2.2%, Prefix cache hit rate: 0.0%",
        "INFO 06-02 11:03:18 [kv_cache_utils.py:637] GPU KV cache size: 1,131,008 tokens",
        "--max-num-batched-tokens 8192 --num-speculative-tokens 5 --tokenizer /t --kv-cache-dtype"
        " bfloat16",
        "node17-2:36754:36754 [6] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE; OOB ens5f0np0:1.2.3.4<0>",
        'docker run --env-file "$COCKPIT_ENV_FILE" --label cockpit.lane=x img',
        "keymap theme = f5",
    ],
)
def test_ordinary_lines_stay_as_they_are(text: str) -> None:
    assert redact(text) == text


def test_secret_names() -> None:
    for name in ("HF_TOKEN", "--api-key", "apiKey", "AWS_SECRET_ACCESS_KEY", "db.password",
                 "HUGGING_FACE_HUB_TOKEN", "accessToken"):  # fmt: skip
        assert is_secret_name(name), name
    for name in ("max_num_batched_tokens", "num_speculative_tokens", "tokenizer", "keymap",
                 "NCCL_IB_HCA", "kv-cache-dtype", "monkey"):  # fmt: skip
        assert not is_secret_name(name), name


def test_a_remembered_value_is_redacted_wherever_it_appears() -> None:
    odd = "plain-looking-but-secret-42"
    assert redact(f"the engine said {odd}.") == f"the engine said {odd}."
    remember([odd, "short"])  # shorter than MIN_KNOWN_LEN: redacted by name only
    assert redact(f"the engine said {odd}.") == f"the engine said {REDACTED}."
    assert redact("short and sweet") == "short and sweet"


def test_argv_redaction_keeps_the_shape() -> None:
    argv = ("docker", "run", "-e", "HF_TOKEN=x", "--api-key", "v", "--no-x", "--secret=4", "img")
    assert redact_argv(argv) == (
        "docker", "run", "-e", "HF_TOKEN=<redacted>", "--api-key", REDACTED, "--no-x",
        "--secret=<redacted>", "img",
    )  # fmt: skip


def test_control_and_bidi_characters_are_escaped() -> None:
    assert printable("a\x1b[2Jb\x00c\u202ed\te\nf\x9b\ufeff") == (
        "a\\x1b[2Jb\\x00c\\u202ed\\te\\nf\\x9b\\ufeff"
    )
    assert printable("plain ünïcödé ✓") == "plain ünïcödé ✓"
    assert shown(f"\x1b]0;{SK}\x07") == "\\x1b]0;<redacted>\\x07"


def test_every_event_text_is_redacted_and_escaped() -> None:
    notice = Notice(op="launch", severity=Severity.ERROR, message="rank 0 failed\x1b[31m",
                    line=f"ValueError: bad key {SK}", node="dgx1")  # fmt: skip
    assert notice.message == "rank 0 failed\\x1b[31m"
    assert notice.line == "ValueError: bad key <redacted>"
    step = StepFinished(op="launch", step="start", detail=f"--api-key {HF}")
    assert step.detail == "--api-key <redacted>"


def test_the_simulated_docker_reads_an_env_file_as_docker_does(tmp_path) -> None:
    path = tmp_path / "env"
    path.write_bytes(b"\xef\xbb\xbfA=1\n  # a comment\n\nBARE\nUNSET\nC= spaced value \nD=x=y\r\n")
    assert read_env_file(str(path), {"BARE": "from caller"}) == [
        "A=1", "BARE=from caller", "C= spaced value ", "D=x=y",
    ]  # fmt: skip
    path.write_text("BAD KEY=1\n")
    with pytest.raises(EnvFileError, match="variable 'BAD KEY' contains whitespaces"):
        read_env_file(str(path), {})
    with pytest.raises(EnvFileError, match="no such file or directory"):
        read_env_file(str(tmp_path / "missing"), {})
