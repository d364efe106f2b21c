"""docker ps / inspect output → records; digest presence and lane labels.

The fixtures are a real daemon's output (`tests/fixtures/telemetry/capture_docker.py`)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from cockpit.telemetry.docker_out import (
    LaneLabel,
    docker_error,
    follow_logs_command,
    image_with_digest,
    image_with_id,
    lane_of,
    parse_container_inspect,
    parse_image_inspect,
    parse_ps,
    split_time,
)

DIGEST = "sha256:ed9f9813e61781e1ea04124af5bf9bfa7e8f5754022ab741b0ef0a4670166572"
REPO = "127.0.0.1:5000/fujitsupolycom/sparkring"
IMAGE_ID = "sha256:08e1a9aebc6d"
LANE = "mimo26-flash-mopd-2x-sparkring"


def test_ps_rows_and_labels(fixture_text):
    monitor, worker, head = parse_ps(fixture_text("docker_ps.jsonl"))
    assert head.state == "running" and head.status.startswith("Up ")
    assert head.names == f"cockpit-{LANE}-r0" and len(head.id) == 12
    assert head.image == REPO  # run by digest: `docker ps` shows the repository only
    assert head.labels["cockpit.rank"] == "0"
    assert head.labels["com.example.note"] == "a,b"  # a comma inside a value survives
    assert head.labels["org.opencontainers.image.source"].endswith("/sparkring")  # the image's
    assert lane_of(head.labels) == LaneLabel(LANE, 0, "2nodes-dac")
    assert lane_of(worker.labels) == LaneLabel(LANE, 1, "2nodes-dac")
    assert worker.state == "exited" and worker.status.startswith("Exited (1) ")
    assert monitor.labels == {} and lane_of(monitor.labels) is None and monitor.state == "exited"


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("a=1,b=x=y", {"a": "1", "b": "x=y"}),  # an equals sign inside a value
        ("a=1,2,3,b=", {"a": "1,2,3", "b": ""}),  # commas inside a value, an empty value
        ("note=hello, world=x", {"note": "hello, world=x"}),  # a space: no key starts there
        ("note=a,b=c", {"note": "a", "b": "c"}),  # ambiguous in Docker's string: two labels
    ],
)
def test_ps_label_strings(text, labels):
    (row,) = parse_ps(json.dumps({"ID": "x", "Labels": text}))
    assert dict(row.labels) == labels


def test_image_inspect_and_digest_lookup(fixture_text):
    synced, loaded = parse_image_inspect(fixture_text("docker_image_inspect.json"))
    assert synced.repo_digests == (f"{REPO}@{DIGEST}",) and synced.size == 1982326
    assert synced.labels["org.opencontainers.image.source"].endswith("sparkring")
    assert loaded.repo_digests == () and loaded.labels == {}  # Labels: null
    images = [synced, loaded]
    for ref in (
        f"{REPO}@{DIGEST}",
        DIGEST,
        "ed9f9813",
        "sha256:ed9f9813…",
        f"{REPO}@sha256:ed9f9813",
    ):
        assert image_with_digest(images, ref) is synced, ref
    # after save/load only the id survives: present by id, absent by digest (the seed's lesson)
    assert image_with_digest([loaded], DIGEST) is None
    assert image_with_id([loaded], loaded.id[7:15]) is loaded
    assert image_with_id(images, IMAGE_ID) is synced


@pytest.mark.parametrize(
    "ref",
    [
        "ed9f",  # too short a prefix to mean anything
        "other/repo@" + DIGEST,
        "sha256:deadbeefdeadbeef",
        "",
    ],
)
def test_digest_lookup_refuses(fixture_text, ref):
    assert (
        image_with_digest(parse_image_inspect(fixture_text("docker_image_inspect.json")), ref)
        is None
    )


def test_repo_match_ignores_default_registry_and_tag():
    (image,) = parse_image_inspect(
        '[{"Id": "sha256:aa", "RepoDigests": ["nginx@sha256:0123456789abcdef"]}]'
    )
    assert image_with_digest([image], "docker.io/library/nginx@sha256:0123456789") is image
    assert image_with_digest([image], "nginx:1.27@sha256:0123456789") is image
    (ported,) = parse_image_inspect(
        '[{"Id": "sha256:bb", "RepoDigests": ["reg:5000/x@sha256:0123456789abcdef"]}]'
    )
    assert image_with_digest([ported], "reg:5000/x:tag@sha256:0123456789abcdef") is ported
    assert image_with_digest([ported], "reg:5001/x@sha256:0123456789abcdef") is None


def test_container_inspect(fixture_text):
    (info,) = parse_container_inspect(fixture_text("docker_container_inspect.json"))
    assert info.name == f"cockpit-{LANE}-r1"
    assert info.image_id.startswith(IMAGE_ID) and info.image == f"{REPO}@{DIGEST}"
    assert info.state.status == "exited" and info.state.exit_code == 1
    assert not info.state.running and not info.state.oom_killed and info.state.error is None
    assert info.state.started_at < info.state.finished_at
    assert lane_of(info.labels) == LaneLabel(LANE, 1, "2nodes-dac")


@pytest.mark.parametrize(
    "text", ["", "[]", "null", '{"no": "id"}', "[1, 2]", "Error: No such object: x", "{"]
)
def test_garbage_inspect(text, fixture_text):
    assert parse_image_inspect(text) == [] and parse_container_inspect(text) == []
    assert parse_image_inspect(fixture_text("docker_no_such_image.txt")) == []
    assert parse_ps(text) == []


def test_lane_label_without_rank():
    assert lane_of({"cockpit.lane": "x", "cockpit.rank": "head"}) == LaneLabel("x", None, None)
    assert lane_of({"cockpit.lane": ""}) is None


@pytest.mark.parametrize(
    ("stderr", "reason"),
    [
        (  # a daemon error of `docker run`: the help hint comes last
            'docker: Error response from daemon: Conflict. The container name "/x" is already '
            "in use by container \"abc\".\nSee 'docker run --help'.\n",
            'Conflict. The container name "/x" is already in use by container "abc"',
        ),
        (  # an implicit pull's progress, then its failure
            "Unable to find image 'r/x@sha256:ab' locally\ndocker: Error response from daemon: "
            'Get "http://127.0.0.1:5000/v2/": dial tcp 127.0.0.1:5000: connect: connection '
            "refused.\nSee 'docker run --help'.\n",
            'Get "http://127.0.0.1:5000/v2/": dial tcp 127.0.0.1:5000: connect: connection refused',
        ),
        (  # a foreground run: the client may log its own wait after the daemon's reason
            'docker: Error response from daemon: could not select device driver "" with '
            'capabilities: [[gpu]].\ntime="2026-12-02T05:01:39Z" level=error msg="error waiting '
            'for container: context canceled"\n',
            'could not select device driver "" with capabilities: [[gpu]]',
        ),
        ("Error: No such container: x\n", "Error: No such container: x"),
        ("\n", "docker run failed"),
    ],
)
def test_docker_error_is_the_daemons_reason(stderr, reason):
    assert docker_error(stderr, "docker run failed") == reason


def test_followed_logs_carry_what_the_container_wrote_to_stderr(tmp_path: Path) -> None:
    """Docker replays a container's stderr on its own stderr: tracebacks must reach the Log pane
    and the launch's boot tracker as lines, in the order written."""
    fake = tmp_path / "docker"
    fake.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$*"\necho "INFO started"\n'
        'echo "Traceback (most recent call last):" >&2\necho "RuntimeError: NCCL error" >&2\n'
    )
    fake.chmod(0o755)
    command = follow_logs_command("lane-r0; touch hacked", tail=5, timestamps=True)
    done = subprocess.run(
        ["bash", "-c", command],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
        cwd=tmp_path,
        check=True,
    )
    assert done.stdout.splitlines() == [
        "logs -f --timestamps --tail 5 -- lane-r0; touch hacked",  # one quoted argument
        "INFO started",
        "Traceback (most recent call last):",
        "RuntimeError: NCCL error",
    ]
    assert not (tmp_path / "hacked").exists()


def test_a_log_read_once_since_a_time_quotes_every_word() -> None:
    """`cockpit logs` without -f: no follow; --since as given, one quoted word."""
    command = follow_logs_command("lane-r1", follow=False, since="10m; reboot", timestamps=True)
    assert command == "docker logs --timestamps --since '10m; reboot' -- lane-r1 2>&1"
    assert follow_logs_command("lane-r0") == "docker logs -f -- lane-r0 2>&1"


@pytest.mark.parametrize(
    ("line", "split"),
    [
        (
            "2026-10-02T19:06:27.123456789Z INFO:     started",
            ("2026-10-02T19:06:27.123456789Z", "INFO:     started"),
        ),
        ("2026-10-02T19:06:27Z ", ("2026-10-02T19:06:27Z", "")),  # an empty line, stamped
        (
            "INFO 10-02 19:06:27 [x.py:1] no docker time",
            ("", "INFO 10-02 19:06:27 [x.py:1] no docker time"),
        ),
        ("2026 was a year", ("", "2026 was a year")),
        ("", ("", "")),
    ],
)
def test_split_time(line: str, split: tuple[str, str]) -> None:
    assert split_time(line) == split
