"""The status model and its rendering: pure facts in, rows / tables / JSON out."""

from __future__ import annotations

import io
import json
from dataclasses import replace

from rich.console import Console

from cockpit.backoff import Backoff
from cockpit.ops.op_records import OpRecord
from cockpit.redact import remember
from cockpit.ssh.state import NodeState
from cockpit.status.model import Health, Presence, WantedImage, fleet_status, wanted_images
from cockpit.status.probe import GpuLine, NodeFacts, ProbeParser, Section
from cockpit.status.render import status_json, status_renderable
from tests.status.test_probe import GB10_LINE, INSPECT, PS_LINE

MEMINFO = "MemTotal:       128000000 kB\nMemFree:  1000 kB\nMemAvailable:   96000000 kB\n"
NOW = 1000.0
UP = NodeState().connected()
QWEN = WantedImage("vllm/vllm-openai@sha256:3f2a9c41", "sha256:9a1e77c05b3d", ("qwen3-0.6b-2x",))
SPARK = WantedImage("ghcr.io/x/sparkring@sha256:c977a2d2", "sha256:4b7049d1e00f", ("mimo",))


def _facts(at: float = NOW, images: str = INSPECT) -> NodeFacts:
    gpu = ProbeParser().feed(f"gpu\t{GB10_LINE}")
    assert isinstance(gpu, GpuLine)
    facts = NodeFacts().with_frame(gpu, at)
    for frame in [Section("mem", MEMINFO, 0), Section("ps", PS_LINE, 0), Section("img", images, 0)]:
        facts = facts.with_frame(frame, at)
    return facts


def test_healthy_gb10_row_takes_memory_from_the_os() -> None:
    status = fleet_status({"dgx1": UP}, {"dgx1": _facts()}, [QWEN], NOW + 1)
    (row,) = status.rows
    assert (row.health, row.detail) == (Health.OK, "")
    assert (row.util_pct, row.temp_c, row.power_w, row.sm_mhz) == (37, 41, 12.4, 2405)
    assert row.memory is not None and row.memory.source == "meminfo"
    assert round(row.memory.used_mib) == round((128000000 - 96000000) / 1024)
    assert row.containers is not None
    assert [(c.name, c.lane) for c in row.containers] == [("qwen-r0", "qwen3-0.6b-2x")]


def test_unreachable_and_stale_and_connecting() -> None:
    down = NodeState().failed(NOW - 30, 0.0, "no answer from 127.0.0.12:22 within 3 s", Backoff())
    links = {"dgx1": UP, "dgx2": down, "dgx3": NodeState().connecting()}
    facts = {"dgx1": _facts(at=NOW - 20), "dgx2": _facts(at=NOW - 40)}
    rows = {r.node: r for r in fleet_status(links, facts, [], NOW, stale_after=5).rows}
    assert rows["dgx1"].health is Health.STALE and rows["dgx1"].detail == "no data for 20 s"
    assert rows["dgx2"].health is Health.DOWN
    assert rows["dgx2"].detail == "unreachable (30 s): no answer from 127.0.0.12:22 within 3 s"
    assert rows["dgx2"].util_pct == 37  # last known values stay visible
    assert rows["dgx3"].health is Health.CONNECTING and rows["dgx3"].memory is None


def test_a_probe_that_keeps_dying_is_not_shown_as_connecting() -> None:
    facts = NodeFacts(probe_error="probe ended (exit 127): bash: nvidia-smi: command not found")
    (row,) = fleet_status({"dgx1": UP}, {"dgx1": facts}, [], NOW).rows
    assert row.health is Health.STALE
    assert row.detail == "no data: probe ended (exit 127): bash: nvidia-smi: command not found"


def test_image_presence_by_digest_id_only_absent_unknown() -> None:
    loaded = INSPECT.replace('["vllm/vllm-openai@sha256:3f2a9c41d7e85b06aa"]', "[]")
    links = {n: UP for n in ["a", "b", "c", "d"]}
    facts = {"a": _facts(), "b": _facts(images=loaded), "c": _facts(images="[]")}
    status = fleet_status(links, facts, [QWEN, SPARK], NOW)
    qwen, spark = status.images
    assert dict(qwen.presence) == {
        "a": Presence.DIGEST,
        "b": Presence.ID_ONLY,
        "c": Presence.ABSENT,
        "d": Presence.UNKNOWN,
    }
    assert spark.presence["a"] is Presence.ABSENT


class _Image:
    def __init__(self, ref: str, image_id: str) -> None:
        self.ref, self.image_id = ref, image_id


class _Recipe:
    def __init__(self, name: str, ref: str) -> None:
        self.name, self.image = name, _Image(ref, "sha256:" + ref[-4:])


def test_wanted_images_are_distinct_with_their_recipes() -> None:
    recipes = [_Recipe("a2x", "r@sha256:aaaa"), _Recipe("b", "r@sha256:bbbb")]
    recipes.append(_Recipe("a4x", "r@sha256:aaaa"))
    assert wanted_images(recipes) == [
        WantedImage("r@sha256:aaaa", "sha256:aaaa", ("a2x", "a4x")),
        WantedImage("r@sha256:bbbb", "sha256:bbbb", ("b",)),
    ]


def test_rendering_shows_rows_reasons_and_images() -> None:
    down = NodeState().failed(NOW, 0.0, "host key of 127.0.0.12 port 22 CHANGED", Backoff())
    status = fleet_status({"dgx1": UP, "dgx2": down}, {"dgx1": _facts()}, [QWEN], NOW)
    out = io.StringIO()
    Console(file=out, width=160, color_system=None).print(status_renderable(status))
    text = out.getvalue()
    assert "dgx1" in text and "37 %" in text and "41 °C" in text and "GiB*" in text
    assert "qwen-r0 [qwen3-0.6b-2x]" in text
    assert "DOWN" in text and "host key of 127.0.0.12 port 22 CHANGED" in text
    assert "vllm-openai@3f2a9c41" in text and "✓" in text and "?" in text
    data = json.loads(json.dumps(status_json(status)))
    assert [n["health"] for n in data["nodes"]] == ["ok", "down"]
    assert data["images"][0]["presence"] == {"dgx1": "digest", "dgx2": "unknown"}
    assert data["nodes"][0]["memory"]["source"] == "meminfo"


def _printed(status: object) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(status_renderable(status))  # type: ignore[arg-type]
    return out.getvalue()


EXITED_LINE = (
    '{"ID":"9b2d","Names":"qwen-r1","Image":"vllm/vllm-openai@sha256:3f2a","State":"exited",'
    '"Status":"Exited (1) 3 seconds ago","Labels":"cockpit.lane=qwen3-0.6b-2x,cockpit.rank=1"}'
)


def test_an_exited_lane_container_is_listed_with_its_code_and_the_stop_that_removes_it() -> None:
    """Issue 19: a rank left exited on dgx3 read "failed: rank 2 on dgx3 exited (1)" in the TUI
    while `cockpit status` showed nothing there (it listed running containers only)."""
    facts = _facts().with_frame(Section("ps", f"{PS_LINE}\n{EXITED_LINE}", 0), NOW)
    status = fleet_status({"dgx1": UP}, {"dgx1": facts}, [QWEN], NOW + 1)
    (row,) = status.rows
    assert row.containers is not None
    assert [(c.name, c.state, c.exit_code) for c in row.containers] == [
        ("qwen-r0", "running", None),
        ("qwen-r1", "exited", 1),
    ]
    (problem,) = status.problems
    assert (problem.node, problem.fix) == ("dgx1", "cockpit stop --lane qwen3-0.6b-2x")
    assert problem.message == "qwen-r1 of lane qwen3-0.6b-2x exited (code 1)"
    text = _printed(status)
    assert "qwen-r1 [qwen3-0.6b-2x] EXITED (1)" in text
    assert "fix: cockpit stop --lane qwen3-0.6b-2x" in text
    data = status_json(status)
    assert data["nodes"][0]["containers"][1]["state"] == "exited"
    assert data["nodes"][0]["containers"][1]["exit_code"] == 1


def _stop_record(age_s: int) -> str:
    """The `ops` section of dgx1 holding another cockpit's stop of the lane, written `age_s` ago."""
    record = OpRecord(
        "b1", "alice", "ops-laptop", 4242, "stop", "qwen3-0.6b-2x", "2nodes-dac", NOW - 5
    )
    return f"{record.file_name('dgx1')}\t{age_s}\t{record.dumps()}\n"


def test_an_exited_rank_gets_no_stop_while_another_cockpits_operation_on_its_lane_runs() -> None:
    """Issue 31: no stop offered from a moment of another cockpit's work (its stop leaves the
    ranks exited until it removes them); once its record is stale, the stop is offered again."""
    exited = _facts().with_frame(Section("ps", f"{PS_LINE}\n{EXITED_LINE}", 0), NOW)
    running = exited.with_frame(Section("ops", _stop_record(3), 0), NOW)
    (problem,) = fleet_status({"dgx1": UP}, {"dgx1": running}, [QWEN], NOW + 1).problems
    assert "cockpit stop" not in problem.fix
    assert "stop qwen3-0.6b-2x @ 2nodes-dac by alice@ops-laptop is in flight" in problem.fix
    gone = exited.with_frame(Section("ops", _stop_record(600), 0), NOW)
    (problem,) = fleet_status({"dgx1": UP}, {"dgx1": gone}, [QWEN], NOW + 1).problems
    assert problem.fix == "cockpit stop --lane qwen3-0.6b-2x"


SECRET = "sk-status0123456789abcdefXYZ"
KNOWN = "s3cr3t-remembered-value"  # an inventory's secret value, redacted wherever it appears


def test_status_output_passes_every_node_text_through_the_redactor() -> None:
    """Issue 19 (truth-files' report): `cockpit status` printed containers' names, error lines
    and reasons as the nodes gave them; the table and the JSON go through `redact.shown`."""
    remember([KNOWN])
    ps = (
        PS_LINE.replace('"qwen-r0"', f'"leak-{SECRET}"')
        + "\n"
        + EXITED_LINE.replace('"qwen-r1"', f'"x-{KNOWN}\\u202e"')
    )
    facts = _facts().with_frame(Section("ps", ps, 0), NOW)
    error = f"probe ended (exit 1): curl -H 'Authorization: Bearer {SECRET}' --api-key {KNOWN}"
    stale = replace(facts, probe_error=error)
    status = fleet_status({"dgx1": UP, "dgx2": UP}, {"dgx1": facts, "dgx2": stale}, [QWEN], NOW + 9)
    assert any(SECRET in (c.name or "") for r in status.rows for c in r.containers or ())
    for output in (_printed(status), json.dumps(status_json(status))):
        assert SECRET not in output and KNOWN not in output, output
        assert "<redacted>" in output and "\u202e" not in output
    assert "\\u202e" in _printed(status)  # a bidi override is shown escaped, never raw
