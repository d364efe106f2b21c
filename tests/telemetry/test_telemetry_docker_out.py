"""docker ps / inspect output → records; digest presence and lane labels."""

import pytest

from cockpit.telemetry.docker_out import (
    LaneLabel,
    image_with_digest,
    image_with_id,
    lane_of,
    parse_container_inspect,
    parse_image_inspect,
    parse_ps,
)

DIGEST = "sha256:c977a2d2e1b4f5a6978877665544332211000ffeeddccbbaa99887766554433"
REPO = "ghcr.io/fujitsupolycom/sparkring"


def test_ps_rows_and_labels(fixture_text):
    lane, monitor = parse_ps(fixture_text("docker_ps.jsonl"))
    assert lane.id == "3f2a1b9c8d7e" and lane.state == "running" and lane.status == "Up 2 hours"
    assert lane.names == "cockpit-mimo26-flash-mopd-2x-sparkring-r0"
    assert lane.image == f"{REPO}@{DIGEST}"
    assert lane.labels["cockpit.rank"] == "0"
    assert lane.labels["com.example.note"] == "a,b"  # a comma inside a value survives
    assert lane_of(lane.labels) == LaneLabel("mimo26-flash-mopd-2x-sparkring", 0, "2nodes-dac")
    assert monitor.labels == {} and lane_of(monitor.labels) is None and monitor.state == "exited"


def test_image_inspect_and_digest_lookup(fixture_text):
    synced, loaded = parse_image_inspect(fixture_text("docker_image_inspect.json"))
    assert synced.repo_digests == (f"{REPO}@{DIGEST}",) and synced.size == 31675432960
    assert synced.labels["org.opencontainers.image.source"].endswith("sparkring")
    assert loaded.repo_digests == () and loaded.labels == {}
    images = [synced, loaded]
    for ref in (
        f"{REPO}@{DIGEST}",
        DIGEST,
        "c977a2d2",
        "sha256:c977a2d2…",
        f"{REPO}@sha256:c977a2d2",
    ):
        assert image_with_digest(images, ref) is synced, ref
    # after save/load only the id survives: present by id, absent by digest (the seed's lesson)
    assert image_with_digest([loaded], DIGEST) is None
    assert image_with_id([loaded], "b01442df") is loaded
    assert image_with_id(images, "sha256:4b7049d1e00f") is synced


@pytest.mark.parametrize(
    "ref",
    [
        "c977",  # too short a prefix to mean anything
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
    assert info.name == "cockpit-mimo26-flash-mopd-2x-sparkring-r1"
    assert info.image_id.startswith("sha256:4b7049d1e00f") and info.image == f"{REPO}@{DIGEST}"
    assert info.state.status == "exited" and info.state.exit_code == 1
    assert not info.state.running and not info.state.oom_killed and info.state.error is None
    assert lane_of(info.labels) == LaneLabel("mimo26-flash-mopd-2x-sparkring", 1, "2nodes-dac")


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
