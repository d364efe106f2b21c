"""`cockpit bench` on a lane uses the lane's own tokenizer, read from its snapshot on the node
over SSH: on a simulated MiMo lane, no `--tokenizer`, and its depths are in that tokenizer's
tokens (the engine's usage agrees with the intended count)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from cockpit.bench.artifacts import load_report
from cockpit.bench.models import FlagKind
from cockpit_sim.engine.text import TOKENIZER_DIR
from cockpit_sim.fleet import SimFleet
from tests.real_vllm import cockpit

pytestmark = pytest.mark.slow
LANE, CLUSTER = "mimo26-flash-mopd-2x-sparkring", "dgx56-switch"
SPEED = 10.0


def test_bench_reads_the_lane_tokenizer_from_its_snapshot(
    fleet_factory: Callable[..., SimFleet], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a cold tokenizer cache
    monkeypatch.setenv("COCKPIT_TIME_SCALE", repr(SPEED))  # the fleet's launcher says its speed
    fleet = fleet_factory(6, speed=SPEED)
    launched = cockpit(fleet.inventory_dir, "launch", "--recipe", LANE, "--cluster", CLUSTER)
    assert launched.returncode == 0, launched.stdout + launched.stderr
    done = cockpit(
        fleet.inventory_dir,
        "bench", "--recipe", LANE, "--cluster", CLUSTER, "--label", "tok",
        "--depths", "0,4K", "--concurrency", "1", "--pp", "512", "--tg", "8", "--runs", "1",
        "--no-warmup", "--reports", str(tmp_path / "reports"),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [path] = (tmp_path / "reports").glob("*_tok.json")
    report = load_report(path)
    assert report.environment.tokenizer == (
        "XiaomiMiMo/MiMo-V2.6-Flash-MOPD@5f1c0de2a7b4 (lane snapshot)"
    )
    [fetched] = (tmp_path / "cache" / "cockpit" / "tokenizers").glob("*/tokenizer.json")
    assert fetched.read_bytes() == (TOKENIZER_DIR / "tokenizer.json").read_bytes()
    for point in report.points:
        assert FlagKind.TOKEN_MISMATCH not in {f.kind for f in point.flags}
        intended = point.spec.depth + point.spec.pp
        assert point.usage_prompt_tokens is not None
        assert abs(point.usage_prompt_tokens - intended) <= 0.05 * intended, point
