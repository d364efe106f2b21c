"""The Engine throughput pane in the app (Pilot): latency quantiles, finish reasons and goodput
from a real vLLM 0.32's captures in 40 columns, more when maximised, and an advisor's hint as
one notice at its onset."""

from __future__ import annotations

import io
from collections.abc import Callable

from rich.console import Console
from textual.widgets import Static

from cockpit.tui.app import CockpitApp
from cockpit.tui.messages import EngineScraped
from cockpit.tui.widgets.engine import ThroughputPane
from tests.tui import scene


def shown(app: CockpitApp) -> list[str]:
    pane = app.screen.query_one(ThroughputPane)
    body = pane.query_one("#throughput-body", Static)
    console = Console(width=pane.size.width, record=True, file=io.StringIO())
    console.print(body.content)
    return [line.rstrip() for line in console.export_text().splitlines()]


def notices(app: CockpitApp) -> list[str]:
    return [n.message for n in app._notifications]  # type: ignore[attr-defined]


async def test_the_pane_shows_quantiles_finish_reasons_goodput_and_advice(
    make_app: Callable[..., CockpitApp],
) -> None:
    app = make_app(with_scene=False)
    app.store.apply_all(scene.node_samples(app.store.inventory))
    t = scene.T0
    app.store.apply_all(scene.real_engine(t, prefix_caching=False))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(0.3)
        pane = app.screen.query_one(ThroughputPane)
        lines = shown(app)
        assert pane.size.width == 40 and max(map(len, lines)) <= 40  # the right column
        assert lines[1].startswith("generation 1283.9 tok/s") and lines[2].startswith("prompt")
        assert lines[3:] == [
            "TTFT    12ms/58ms TPOT   ≤10ms",
            "ITL     ≤10ms     queue  ≤300ms",
            "prefill ≤300ms    decode ≤300ms",
            "finish  length 98%  stop 2%",
            "goodput 100%  TTFT≤2.5s TPOT≤100ms",
        ]
        assert pane.border_subtitle == "p50/p95 server-side, last 10s"
        # the capture's load asked for fewer tokens than its answers: 102 of 104 truncated
        assert pane.border_title == "Engine throughput ⚑ truncation · prefix caching off"
        lane = f"{scene.LANE}@{scene.CLUSTER}"
        assert sorted(n for n in notices(app) if n.startswith(lane)) == [
            f"{lane}: prefix caching is off: set serve.enable_prefix_caching = true "
            "(--enable-prefix-caching)",
            f"{lane}: truncation: 98% of 104 requests in 10s ended at their token limit (finish "
            "reason length) — raise the clients' max_tokens, or serve.max_model_len (524288) if "
            "prompts fill it",
        ]
        later = scene.real_engine(t + 2, prefix_caching=False)[-1]  # a scrape 2 s later
        app.post_message(EngineScraped(later))
        await pilot.pause(0.3)
        assert len([n for n in notices(app) if n.startswith(lane)]) == 2  # once per onset

        pane.query_one("#throughput-body").focus()
        await pilot.press("m")
        await pilot.pause(0.3)
        full = "\n".join(shown(app))
        assert "n   mean     p50     p90     p95     p99" in full
        assert "TTFT       106   16ms    12ms    20ms    58ms    99ms" in full
        assert "finish       length 102 (98%)  stop 2 (2%), 8.67 req/s" in full
        assert "TTFT≤2.5s  100% of 106  on a bucket bound: exact" in full
        assert "⚑ prefix caching is off: set serve.enable_prefix_caching = true" in full
        assert pane.border_subtitle == "server-side, last 12s"
