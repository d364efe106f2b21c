"""`--bench-host NODE`: the driver runs on another host, its events come back over SSH.

The seed moved its bench client to a wired host because a WiFi laptop skewed TTFT. The remote
side runs `cockpit bench --events-jsonl ...` (the driver alone, one JSON event per line); the
cockpit side parses the lines back into the same events, so the live view and the report are
built exactly as for a local run. Closing the stream stops the remote client. A lane's API key
goes to the remote side as the first line of its stdin (`--api-key-stdin`), never in its argv.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from cockpit.bench.events import parse_event_line
from cockpit.bench.models import PointSpec
from cockpit.events import OpEvent
from cockpit.ssh import SshPool


def _csv(values: Sequence[int]) -> str:
    return ",".join(str(v) for v in values)


def remote_argv(
    cockpit: Sequence[str],
    endpoint: str,
    model: str,
    scale: float,
    points: Sequence[PointSpec],
    runs: int,
    warmup: bool,
    driver: str,
    hang_timeout_s: float,
    lane: str,
    cluster: str,
    tokenizer: str,
    adapt_prompt: bool = True,
    api_key_stdin: bool = False,
) -> list[str]:
    """The command the bench host runs: the same points, the driver's events on stdout."""
    first = points[0]
    argv = [
        *cockpit,
        "bench",
        "--events-jsonl",
        "--endpoint", endpoint,
        "--model", model,
        "--time-scale", repr(scale),
        "--lane", lane,
        "--cluster", cluster,
        "--label", "remote",
        "--depths", _csv(sorted({p.depth for p in points})),
        "--concurrency", _csv(sorted({p.concurrency for p in points})),
        "--pp", str(first.pp),
        "--tg", str(first.tg),
        "--runs", str(runs),
        "--driver", driver,
        "--hang-timeout", repr(hang_timeout_s),
        "--tokenizer", tokenizer,
    ]  # fmt: skip
    if not adapt_prompt:
        argv.append("--no-adapt-prompt")
    if first.cold:
        argv.append("--cold")
    if not warmup:
        argv.append("--no-warmup")
    if api_key_stdin:
        argv.append("--api-key-stdin")
    return argv


async def remote_events(
    pool: SshPool, node: str, argv: Sequence[str], api_key: str | None = None
) -> AsyncIterator[OpEvent]:
    """Events of a driver running on `node` (given `api_key` on its stdin: `argv` must hold
    `--api-key-stdin`); lines that are not events are skipped."""
    async with pool.stream(node, list(argv)) as lines:
        if api_key:
            lines.poke(api_key)
        async for line in lines:
            event = parse_event_line(line)
            if event is not None:
                yield event
