"""The advisor: one-line hints when an engine or a node shows a trouble with a known remedy.

Each rule is a pure function of the views the panes show (and of the lane's recipe, whose current
values it quotes), and each hint names what changes it: a recipe field (`serve.*` in the lane's
recipe file, the flag vLLM gets) or a cockpit key. `Onsets` remembers which hold, so a hint is
shown once when its condition begins, not at every scrape, and again only after it cleared.
"""

from __future__ import annotations

from collections.abc import Sequence

from cockpit.config.models import ServeContract
from cockpit.tui.render import pct
from cockpit.tui.state.views import (
    EngineView,
    Hint,
    NodeHealth,
    NodeView,
    fmt_duration,
    lane_key,
)

TRUNCATED_SHARE = 0.2
"""Finish reason `length` above this share of the window's finished requests is truncation..."""
TRUNCATED_MIN_REQUESTS = 5
"""... once the window holds this many (two requests out of three say little)."""
BACKLOG_S = 30.0
"""More requests waiting than running for this long is a backlog."""
KV_FULL = 0.9
GPU_HOT_C = 85.0
"""A GB10 this hot is near where GPUs lower their clocks to cool down."""


def _now(serve: ServeContract | None, field: str) -> str:
    """`serve.FIELD (V)`: the recipe field, with its value when the recipe is known."""
    value = getattr(serve, field) if serve is not None else None
    return f"serve.{field}" + (f" ({value:g})" if isinstance(value, int | float) else "")


def _count(n: float, noun: str) -> str:
    return f"{n:.0f} {noun}" + ("" if n == 1 else "s")


def engine_hints(
    view: EngineView, serve: ServeContract | None, bench_in_window: bool = False
) -> tuple[Hint, ...]:
    """The hints that hold for a lane's engine now. `bench_in_window`: a bench of the lane ran
    within the window, whose fixed-length requests end by `length` on purpose."""
    key, window = view.lane_key, f"{view.window_s or 0:.0f}s"
    out: list[Hint] = []

    def say(rule: str, title: str, text: str) -> None:
        out.append(Hint(rule, key, title, text))

    if view.preemptions_recent:
        say(
            "kv_preemption",
            "KV pool short",
            f"KV pool short: {_count(view.preemptions_recent, 'preemption')} in {window} — raise "
            f"{_now(serve, 'gpu_memory_utilization')} or lower {_now(serve, 'max_num_seqs')}",
        )
    finished = sum(n for _, n in view.finished)
    length = dict(view.finished).get("length", 0.0)
    if (
        not bench_in_window
        and finished >= TRUNCATED_MIN_REQUESTS
        and length / finished > TRUNCATED_SHARE
    ):
        say(
            "output_truncation",
            "truncation",
            f"truncation: {pct(length / finished)} of {finished:.0f} requests in {window} "
            "ended at their token limit (finish reason length) — raise the clients' "
            f"max_tokens, or {_now(serve, 'max_model_len')} if prompts fill it",
        )
    if view.backlog_s is not None and view.backlog_s >= BACKLOG_S:
        running = view.running or 0.0
        if serve is not None and running >= serve.max_num_seqs:
            remedy = f"raise {_now(serve, 'max_num_seqs')}"
        elif (view.kv_usage or 0.0) >= KV_FULL:
            remedy = (
                f"the KV pool is {pct(view.kv_usage)} full: raise "
                f"{_now(serve, 'gpu_memory_utilization')}"
            )
        else:
            remedy = f"raise {_now(serve, 'max_num_batched_tokens')}"
        say(
            "queue_backlog",
            "queue backlog",
            f"queue backlog: {view.waiting or 0:.0f} waiting vs {running:.0f} running for "
            f"{fmt_duration(view.backlog_s)} — {remedy}",
        )
    if view.prefix_caching is False and not view.prefix_hit_rate:
        say(
            "prefix_caching_off",
            "prefix caching off",
            "prefix caching is off: set serve.enable_prefix_caching = true "
            "(--enable-prefix-caching)",
        )
    return tuple(out)


def node_hints(view: NodeView) -> tuple[Hint, ...]:
    """The hints that hold for a node now (from a fresh sample: a STALE one's figures are old)."""
    gpu = view.gpu
    if view.health is not NodeHealth.LIVE or gpu is None or gpu.temperature_c is None:
        return ()
    if gpu.temperature_c < GPU_HOT_C:
        return ()
    lanes = sorted({lane_key(r.lane, r.cluster) for r in view.ranks if r.running})
    stop = f", or stop {', '.join(lanes)} (s)" if lanes else ""
    return (
        Hint(
            "gpu_thermal",
            view.name,
            "GPU hot",
            f"GPU at {gpu.temperature_c:.0f}°C (≥ {GPU_HOT_C:.0f}°C), it may lower its clocks — "
            f"check the node's cooling{stop}",
        ),
    )


class Onsets:
    """Which rules hold per subject (a lane key, a node): bounded by the inventory's lanes and
    nodes, and a subject that goes (its lane stopped) is forgotten."""

    def __init__(self) -> None:
        self._holding: dict[str, frozenset[str]] = {}

    def update(self, subject: str, hints: Sequence[Hint]) -> list[Hint]:
        """Record what holds for `subject` now; returns the hints whose condition just began."""
        before = self._holding.get(subject, frozenset())
        now = frozenset(h.rule for h in hints)
        if now:
            self._holding[subject] = now
        else:
            self._holding.pop(subject, None)
        return [h for h in hints if h.rule not in before]

    def forget(self, subject: str) -> None:
        self._holding.pop(subject, None)
