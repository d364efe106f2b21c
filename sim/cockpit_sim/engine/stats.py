"""The 10-second logging window of vLLM's LoggingStatLogger, fed with scheduler step results.

Prompt tokens count when a request's prefill completes (vLLM V1 counts a prompt's whole length in
the iteration that produces its first token): one 67,595-token cold prompt finishing inside a
10-second window reads "Avg prompt throughput: 6759.5 tokens/s" — the monolith the seed saw.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cockpit_sim.engine import logs
from cockpit_sim.engine.scheduler import StepResult

LOG_INTERVAL_S = 10.0


@dataclass
class _Window:
    start: float
    prompt_tokens: int = 0
    generation_tokens: int = 0
    preemptions: int = 0
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_pos: list[int] = field(default_factory=list)


class StatsLog:
    """Counters since the last log line plus lifetime prefix-cache totals (engine seconds)."""

    def __init__(self, start: float) -> None:
        self.window = _Window(start)
        self.queries = 0
        self.hits = 0

    def record(self, result: StepResult) -> None:
        w = self.window
        w.prompt_tokens += result.prompt_tokens
        w.generation_tokens += result.generation_tokens
        w.preemptions += result.preemptions
        self.queries += result.prefix_queries
        self.hits += result.prefix_hits
        spec = result.spec
        w.drafts += spec.drafts
        w.draft_tokens += spec.draft_tokens
        w.accepted += spec.accepted
        w.per_pos += [0] * (len(spec.accepted_per_pos) - len(w.per_pos))
        for pos, n in enumerate(spec.accepted_per_pos):
            w.per_pos[pos] += n

    def flush(self, now: float, running: int, waiting: int, kv_usage: float) -> list[str]:
        """The messages vLLM logs at INFO for this window (none when idle); starts a new window.

        The prefix cache hit rate is hits / queries over the engine's lifetime (vLLM uses a
        window of recent requests; the same figure once the bench has run a while).
        """
        w = self.window
        seconds = max(now - w.start, 1e-9)
        self.window = _Window(now)
        if not (w.prompt_tokens or w.generation_tokens or running or waiting):
            return []
        rate = self.hits / self.queries if self.queries else 0.0
        messages = [
            logs.stats_message(
                w.prompt_tokens / seconds,
                w.generation_tokens / seconds,
                running,
                waiting,
                kv_usage,
                rate,
                w.preemptions,
            )
        ]
        if w.drafts:
            messages.append(
                logs.spec_message(w.drafts, w.draft_tokens, w.accepted, w.per_pos, seconds)
            )
        return messages
