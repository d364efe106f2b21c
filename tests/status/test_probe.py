"""The probe: its bash loop (run for real against stub tools) and the frame parser."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest

from cockpit.ssh.stream import supervised
from cockpit.status.probe import (
    PROBE_NICE,
    Asked,
    GpuEnded,
    GpuLine,
    NodeFacts,
    Pace,
    ProbeParser,
    Section,
    probe_script,
)

GB10_LINE = "0, NVIDIA GB10, 37, 41, 12.40, 2405, 4266, [N/A], [N/A], [N/A]"
PS_LINE = (
    '{"ID":"4f1c","Names":"qwen-r0","Image":"vllm/vllm-openai@sha256:3f2a","State":"running",'
    '"Status":"Up 2 minutes","Labels":"cockpit.lane=qwen3-0.6b-2x,cockpit.rank=0"}'
)
INSPECT = (
    '[{"Id":"sha256:9a1e77c05b3d00","RepoTags":["vllm/vllm-openai:v1"],'
    '"RepoDigests":["vllm/vllm-openai@sha256:3f2a9c41d7e85b06aa"]}]'
)

STUB_NVIDIA_SMI = f"""#!/bin/bash
case "$*" in
  *-lms*) while :; do echo '{GB10_LINE}'; sleep 0.1; done ;;
  *compute-apps*) echo '1234, VLLM::Worker, [N/A]' ;;
esac
"""
STUB_DOCKER = f"""#!/bin/bash
case "$1 $2" in
  "ps -a") echo '{PS_LINE}' ;;
  "images -q") echo 9a1e77c05b3d ;;
  "image inspect") echo '{INSPECT}' | sed 's/^\\[/[\\n/' ;;
  *) exit 1 ;;
esac
"""


def _stub_bin(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in {"nvidia-smi": STUB_NVIDIA_SMI, "docker": STUB_DOCKER}.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir


async def test_probe_script_streams_every_fact_then_dies_with_its_stdin(tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path)}:{os.environ['PATH']}"}
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        supervised(probe_script(Pace(gpu_ms=100, slow_s=0.2, images_every=2))),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        start_new_session=True,  # as an SSH session is: the probe lowers its session's autogroup
    )
    assert proc.stdout and proc.stdin
    parser, facts, tags = ProbeParser(), NodeFacts(), []
    try:
        async with asyncio.timeout(5):
            while len([t for t in tags if t == "img"]) < 2:
                frame = parser.feed((await proc.stdout.readline()).decode().rstrip("\n"))
                if frame is not None:
                    tags.append(frame.tag if isinstance(frame, Section) else "gpu")
                    facts = facts.with_frame(frame, 100.0)
    finally:
        proc.stdin.close()  # what a closed SSH channel looks like to the supervisor
        async with asyncio.timeout(5):
            await proc.wait()
    assert {"gpu", "mem", "ps", "apps", "host", "img"} <= set(tags)
    assert tags.count("ps") > tags.count("img")  # images at a slower pace
    assert facts.complete and not facts.failed
    assert facts.gpus[0].name == "NVIDIA GB10" and facts.gpus[0].memory_total_mib is None
    assert facts.meminfo is not None and facts.meminfo.total_bytes > 0
    assert facts.containers and facts.containers[0].labels["cockpit.lane"] == "qwen3-0.6b-2x"
    assert facts.images and facts.images[0].repo_digests
    assert [a.process_name for a in facts.apps] == ["VLLM::Worker"]
    # this machine's own /proc/stat and /proc/net/dev, twice: CPU and link counters to rate
    assert facts.host is not None and facts.host_before is not None
    assert facts.host.cpu_total and facts.host.cpu_busy is not None
    assert facts.host.cpu_total >= facts.host_before.cpu_total  # type: ignore[operator]


async def test_a_line_on_its_stdin_makes_the_probe_look_again_at_once(tmp_path: Path) -> None:
    """A poke (`LineStream.poke`) starts the next slow cycle now, not after `slow_s`: an
    operation that just started or removed containers sees the nodes' new list in a moment."""
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path)}:{os.environ['PATH']}"}
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c",
        supervised(probe_script(Pace(gpu_ms=100, slow_s=60, images_every=100, stagger=False))),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout and proc.stdin

    async def next_ps() -> list[bytes]:
        """The lines up to the next container list's end."""
        seen = []
        while not (line := await proc.stdout.readline()).startswith(b"ps."):  # type: ignore[union-attr]
            seen.append(line)
        return seen

    try:
        async with asyncio.timeout(10):
            await next_ps()  # the first cycle; the next one is 60 s away
            proc.stdin.write(b"\n")
            await proc.stdin.drain()
            assert not [line for line in await next_ps() if line.startswith(b"ask")]  # at once
            proc.stdin.write(b"7\n8\n")  # numbered asks: the last one is echoed before the look
            await proc.stdin.drain()
            seen = await next_ps()
            asks = [i for i, line in enumerate(seen) if line.startswith(b"ask")]
            assert [seen[i] for i in asks] == [b"ask\t8\n"]
            assert not any(line.startswith(b"mem.") for line in seen[: asks[0]])
            assert ProbeParser().feed("ask\t8") == Asked(8)
    finally:
        proc.stdin.close()
        async with asyncio.timeout(5):
            await proc.wait()


@pytest.mark.timing
async def test_probes_started_together_look_at_different_moments_from_their_second_cycle(
    tmp_path: Path,
) -> None:
    """Every node's probe starts with the TUI; the second look of each comes at a random point
    within `slow_s` (never later: a fact is no older than before), and the cycles after it keep
    that phase, so the nodes' sections reach the cockpit spread over the cycle."""
    env = {**os.environ, "PATH": f"{_stub_bin(tmp_path)}:{os.environ['PATH']}"}
    pace = Pace(gpu_ms=1000, slow_s=1.0, images_every=100)

    async def looks(count: int) -> list[float]:
        """The monotonic times of the first `count` container listings of one probe."""
        proc = await asyncio.create_subprocess_exec(
            "bash", "-c", supervised(probe_script(pace)),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, start_new_session=True,
        )  # fmt: skip
        assert proc.stdout and proc.stdin
        seen: list[float] = []
        try:
            async with asyncio.timeout(10):
                while len(seen) < count:
                    if (await proc.stdout.readline()).startswith(b"ps."):
                        seen.append(asyncio.get_running_loop().time())
        finally:
            proc.stdin.close()
            async with asyncio.timeout(5):
                await proc.wait()
        return seen

    probes = await asyncio.gather(*(looks(3) for _ in range(8)))
    seconds = [second - first for first, second, _ in probes]
    assert all(0 < s <= pace.slow_s + 0.3 for s in seconds), seconds
    assert max(seconds) - min(seconds) > 0.1, seconds  # 8 uniform draws within 0.1 s: ~1e-6
    assert all(third - second > 0.8 * pace.slow_s for _, second, third in probes)


async def test_probe_lowers_its_priority_and_its_sessions(tmp_path: Path) -> None:
    """Telemetry never competes with the engine: the tools run at PROBE_NICE, and so does the
    session's autogroup where the kernel has them (groups share the CPU whatever their nice)."""
    bin_dir = _stub_bin(tmp_path)
    seen = tmp_path / "seen"
    (bin_dir / "nvidia-smi").write_text(
        f"#!/bin/bash\nread -r -a stat </proc/$$/stat\necho ${{stat[18]}} >{seen}\n"
        f"cat /proc/$$/autogroup >>{seen} 2>/dev/null\necho '{GB10_LINE}'\nsleep 5\n"
    )
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        supervised(probe_script(Pace(gpu_ms=100, slow_s=0.2))),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
        start_new_session=True,
    )
    assert proc.stdout and proc.stdin
    try:
        async with asyncio.timeout(5):
            while not (await proc.stdout.readline()).startswith(b"gpu\t"):
                pass
    finally:
        proc.stdin.close()
        async with asyncio.timeout(5):
            await proc.wait()
    nice, *autogroup = seen.read_text().splitlines()
    assert int(nice) == PROBE_NICE
    if Path("/proc/self/autogroup").exists():
        assert autogroup and autogroup[0].endswith(f"nice {PROBE_NICE}")


def test_parser_keeps_sections_whole_when_gpu_lines_interleave() -> None:
    parser = ProbeParser()
    lines = ["mem\tMemTotal: 10 kB", f"gpu\t{GB10_LINE}", "mem\tMemAvailable: 4 kB", "mem.\t0"]
    frames = [parser.feed(line) for line in lines]
    assert frames[0] is None and isinstance(frames[1], GpuLine) and frames[2] is None
    assert frames[3] == Section("mem", "MemTotal: 10 kB\nMemAvailable: 4 kB", 0)


def test_failed_tools_are_recorded_and_cleared() -> None:
    parser = ProbeParser()
    facts = NodeFacts()
    for line in ["ps.\t127", "gpu.\t9"]:
        frame = parser.feed(line)
        assert frame is not None
        facts = facts.with_frame(frame, 1.0)
    assert facts.failed == {"ps": 127, "gpu": 9}
    assert isinstance(ProbeParser().feed("gpu.\t9"), GpuEnded)
    facts = facts.with_frame(Section("ps", PS_LINE, 0), 2.0)
    assert facts.failed == {"gpu": 9} and facts.containers_at == 2.0


def test_garbage_lines_are_ignored() -> None:
    parser = ProbeParser()
    assert parser.feed("no tab here") is None
    assert parser.feed("gpu\tnot,a,sample") is None
